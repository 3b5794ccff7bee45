#-------------------------------------------------------------------------
# test/t/062_pg_upgrade.pl
#	  pg_upgrade of a cluster using schedq into a new cluster with schedq
#	  preloaded.  Only PostgreSQL 15 is installed here, so this is a 15 to
#	  15 upgrade: it checks pg_upgrade's mechanics with schedq (the library
#	  in both clusters, regrole columns, the extension's member objects and
#	  config tables, database OIDs), not a change of major version.
#	  Every row comes back; grants issued before the upgrade still verify
#	  and complete (the keys are in the copied files and the database OID
#	  is kept); the scheduler starts and promotes; and no schedq scheduler
#	  ran while pg_upgrade's servers were up (binary-upgrade mode).
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Find;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use SchedqState;

my $conf = qq{
max_worker_processes = 32
schedq.sql_workers = 1
};

my $old = schedq_node('old', conf => $conf . "schedq.reaper_interval = '1h'\n");
$old->safe_psql('postgres', 'CREATE DATABASE app');
$old->safe_psql('app',      'CREATE EXTENSION schedq');
my $state = fill_state($old, 'app', '1 hour');
ok(settle($old, 'app'), 'the old cluster\'s scheduler has settled the gates');
my $due = $old->safe_psql('app',
	q{SELECT schedq.submit('due', queue => 'due', run_at => now() + interval '1 day')});
my $rows = rows_of($old, 'app', task => 'unparked');
my $dboid = $old->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'app'");
$old->stop;

my $new = schedq_node('new', conf => $conf, start => 0);

my $bindir = $new->config_data('--bindir');
my $work = PostgreSQL::Test::Utils::tempdir();
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'--retain',   '-d',
		$old->data_dir, '-D',
		$new->data_dir, '-b',
		$bindir,        '-B',
		$bindir,        '-s',
		$new->host,     '-p',
		$old->port,     '-P',
		$new->port
	],
	'pg_upgrade of a cluster with schedq');

# pg_upgrade's servers (binary-upgrade mode) must not have run schedq's
# workers: the server logs it kept say which processes connected.
my $upgrade_logs = '';
find(
	sub {
		$upgrade_logs .= slurp_file($_) if /^pg_upgrade_server\.log$/;
	},
	$new->data_dir . '/pg_upgrade_output.d');
ok(length $upgrade_logs > 0, 'pg_upgrade kept its server logs');
PostgreSQL::Test::Utils::append_to_file(
	"$PostgreSQL::Test::Utils::log_path/062_pg_upgrade_servers.log",
	$upgrade_logs);
is_deeply([ grep { /schedq (scheduler|launcher|SQL executor)/ } split /\n/, $upgrade_logs ],
	[], 'no schedq worker ran in binary-upgrade mode');

$new->start;
same_text(rows_of($new, 'app', task => 'unparked'),
	$rows, 'every row and sequence is back', [ 'old', 'upgraded' ]);
is($new->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'app'"),
	$dboid, 'the database keeps its OID');
ok( defined poll_until(
		$new, 'app',
		"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = 'app' AND pid IS NOT NULL",
		'1', 30),
	'the scheduler starts in the upgraded cluster');

my ($t1, $t2) = map { $state->{running}{$_} } sort keys %{ $state->{running} };
is( $new->safe_psql(
		'app', qq{SELECT schedq.verify_grant('$t1') || ':' || schedq.complete('$t1')}),
	'valid:true', 'a grant issued before pg_upgrade verifies and completes its task');
is( $new->safe_psql(
		'app', q{SELECT string_agg(kind, ',') FROM schedq.claim('w', queues => '{q}', n => 10)}),
	'a1,a2,a3', 'available tasks are claimed');
$new->safe_psql('app',
	"UPDATE schedq.task SET run_at = now() + interval '1 second' WHERE id = $due");
ok( defined poll_until(
		$new, 'app', "SELECT status FROM schedq.task WHERE id = $due",
		'available', 30),
	'the scheduler promotes a due task');

done_testing();
