#-------------------------------------------------------------------------
# test/t/062_pg_upgrade.pl
#	  pg_upgrade of a cluster using schedq, in two databases, into a new
#	  cluster with schedq preloaded.  The old cluster is of the server
#	  this suite runs against (same major), or, when SCHEDQ_UPGRADE_FROM
#	  names the bindir of an older major with schedq installed (the version
#	  matrix sets it to PostgreSQL 15's for the later servers), of that
#	  major: an upgrade across majors, 15 to 18 in CI.
#	  Tasks in every status, runs, schedules and outstanding grants are
#	  made in both databases; after the upgrade every row is back, grants
#	  issued before it still verify and complete (the keys are in the
#	  copied files and the database OID is kept), available tasks are
#	  claimed, the scheduler starts and promotes, a schedule fires; and no
#	  schedq worker ran while pg_upgrade's servers were up (binary-upgrade
#	  mode).
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Find;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use SchedqState;

my $conf = qq{
max_worker_processes = 32
schedq.sql_workers = 1
};

# The old cluster's installation: another major's, or this one.
my ($old_install, $old_bindir);
if (my $from = $ENV{SCHEDQ_UPGRADE_FROM})
{
	my $libdir = `$from/pg_config --pkglibdir`;
	chomp $libdir;
	plan skip_all => "no schedq installed in the server of $from"
	  unless -f "$libdir/schedq.so";
	($old_bindir, $old_install) = ($from, dirname($from));
}

my $new = schedq_node('new', conf => $conf, start => 0);
my $new_version = $new->pg_version;
my $old = schedq_node(
	'old',
	conf => $conf . "schedq.reaper_interval = '1h'\n",
	start => 0,
	($old_install ? (install_path => $old_install) : ()),
	# pg_upgrade needs the same checksum setting; initdb turns them on by
	# default from 18
	init => { extra => ($new_version >= 18 ? ['--data-checksums'] : []) });
$old->start;
my $old_version = $old->pg_version;
note "pg_upgrade from PostgreSQL $old_version to $new_version";
$old_bindir //= $old->config_data('--bindir');

# Two databases with schedq, each with state of every kind, and a
# schedule that fires every two seconds.
my (%state, %rows, %due, %dboid);
for my $db (qw(app app2))
{
	$old->safe_psql('postgres', "CREATE DATABASE $db");
	$old->safe_psql($db, 'CREATE EXTENSION schedq');
	$state{$db} = fill_state($old, $db, '1 hour');
	ok(settle($old, $db), "$db: the old cluster's scheduler has settled the gates");
	$due{$db} = $old->safe_psql($db,
		q{SELECT schedq.submit('due', queue => 'due', run_at => now() + interval '1 day')});
	$old->safe_psql($db,
		q{SELECT schedq.schedule('tick', '@every 2s', 'tick', queue => 'tick')});
	$dboid{$db} = $old->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$db'");
}
# The rows as the old cluster leaves them: read with its scheduler off,
# as the new cluster's are below.
$old->stop;
$old->append_conf('postgresql.conf', "schedq.enabled = off\n");
$old->start;
$rows{$_} = rows_of($old, $_, unparked => 1) for qw(app app2);
$old->stop;

my $bindir = $new->config_data('--bindir');
my $work = PostgreSQL::Test::Utils::tempdir();
my $upgraded = run_log(
	[
		"$bindir/pg_upgrade", '--no-sync',
		'--retain',   '-d',
		$old->data_dir, '-D',
		$new->data_dir, '-b',
		$old_bindir,    '-B',
		$bindir,        '-s',
		$new->host,     '-p',
		$old->port,     '-P',
		$new->port
	]);
ok($upgraded, "pg_upgrade of a cluster with schedq from $old_version to $new_version")
  or do
{
	# what pg_upgrade's own logs say, then no more checks
	find(
		sub {
			return unless /\.log$/;
			my @lines = split /\n/, slurp_file($_);
			my ($at) = grep { $lines[$_] =~ /ERROR|FATAL/ } 0 .. $#lines;
			$at //= @lines - 1;
			my $from = $at < 20 ? 0 : $at - 20;
			diag "$File::Find::name:\n" . join("\n", @lines[ $from .. $at ]);
		},
		$new->data_dir . '/pg_upgrade_output.d');
	done_testing();
	exit;
};

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

$new->append_conf('postgresql.conf', "schedq.enabled = off\n");
$new->start;
same_text(rows_of($new, $_, unparked => 1),
	$rows{$_}, "$_: every row and sequence is back", [ 'old', 'upgraded' ])
  for qw(app app2);
$new->append_conf('postgresql.conf', "schedq.enabled = on\n");
$new->reload;
for my $db (qw(app app2))
{
	is($new->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$db'"),
		$dboid{$db}, "$db: the database keeps its OID");
	ok( defined poll_until(
			$new, $db,
			"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = '$db' AND pid IS NOT NULL",
			'1', 30),
		"$db: the scheduler starts in the upgraded cluster");

	my ($t1, $t2) = map { $state{$db}{running}{$_} } sort keys %{ $state{$db}{running} };
	is( $new->safe_psql(
			$db, qq{SELECT schedq.verify_grant('$t1') || ':' || schedq.complete('$t1')}),
		'valid:true', "$db: a grant issued before pg_upgrade verifies and completes its task");
	is( $new->safe_psql(
			$db, qq{SELECT schedq.fail('$t2', 'after the upgrade')}),
		'pending', "$db: another fails with its grant (and will be retried)");
	is( $new->safe_psql(
			$db, q{SELECT string_agg(kind, ',') FROM schedq.claim('w', queues => '{q}', n => 10)}),
		'a1,a2,a3', "$db: available tasks are claimed");
	$new->safe_psql($db,
		"UPDATE schedq.task SET run_at = now() + interval '1 second' WHERE id = $due{$db}");
	ok( defined poll_until(
			$new, $db, "SELECT status FROM schedq.task WHERE id = $due{$db}",
			'available', 30),
		"$db: the scheduler promotes a due task");

	# a tick does not fire while the last one's task is unfinished
	my $fired = $new->safe_psql($db, q{SELECT fired FROM schedq.periodic WHERE name = 'tick'});
	$new->safe_psql($db,
		q{SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{tick}', n => 10)});
	ok( defined poll_until(
			$new, $db, "SELECT fired > $fired FROM schedq.periodic WHERE name = 'tick'",
			't', 30),
		"$db: a schedule fires in the upgraded cluster");
}

done_testing();
