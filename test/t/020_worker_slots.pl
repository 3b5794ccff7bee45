#-------------------------------------------------------------------------
# test/t/020_worker_slots.pl
#	  Too few background worker slots (max_worker_processes) for schedq's
#	  workers is said, in the log and in scheduler_status(), not silent.
#
#	  With max_worker_processes = 2 (and no logical replication launcher),
#	  the launcher and the scheduler of postgres take both slots:
#	  (a) postgres' two SQL executors cannot start: scheduler_status()
#	      shows sql_workers 0 of sql_workers_wanted 2, and the log one
#	      WARNING naming max_worker_processes -- once, not every second;
#	  (b) a second database with schedq gets no scheduler: its row in
#	      scheduler_status() says 'no worker slot', and the log says so
#	      once;
#	  (c) after a restart with room enough, both databases have their
#	      scheduler and executors, and scheduler_status() shows 2 of 2.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time usleep);

my $node = schedq_node('worker_slots', conf => qq{
max_worker_processes = 2
max_logical_replication_workers = 0
schedq.enabled = on
schedq.sql_workers = 2
});

my $status = "SELECT string_agg(datname || ':' || state || ':'"
  . " || coalesce(sql_workers::text, '-') || '/'"
  . " || coalesce(sql_workers_wanted::text, '-'), ',' ORDER BY datname)"
  . " FROM schedq.scheduler_status()";

sub count_in_log
{
	my ($re, $offset) = @_;
	my @hits = slurp_file($node->logfile, $offset) =~ /$re/g;
	return scalar @hits;
}

#
# (a) The scheduler of postgres runs; its executors find no slot.
#
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', $status, 'postgres:idle:0/2', 10),
	'(a) scheduler_status() shows 0 of 2 SQL executors running');
my $executors_warning =
  qr/WARNING:  could not start a schedq SQL executor for database "postgres"/;
ok( defined poll_until(
		$node, 'postgres', 'SELECT 1', sub { count_in_log($executors_warning, $log_offset) >= 1 },
		10),
	'(a) the log says the executors could not start');
like(
	slurp_file($node->logfile, $log_offset),
	qr/$executors_warning[^\n]*\n(?:[^\n]*\n)*?[^\n]*HINT:  [^\n]*max_worker_processes/,
	'(a) with a hint naming max_worker_processes');
usleep(100_000) for 1 .. 30;	# 3 s, in which it retried every second
is(count_in_log($executors_warning, $log_offset),
	1, '(a) said once, not at every retry');

#
# (b) A second database with schedq: no slot for its scheduler.
#
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION schedq');
ok( defined poll_until(
		$node, 'postgres', $status,
		'other:no worker slot:-/-,postgres:idle:0/2', 10),
	"(b) scheduler_status() shows 'no worker slot' for the second database");
my $scheduler_warning =
  qr/WARNING:  could not start the schedq scheduler of database "other"/;
like(
	slurp_file($node->logfile, $log_offset),
	qr/$scheduler_warning[^\n]*\n(?:[^\n]*\n)*?[^\n]*HINT:  [^\n]*max_worker_processes/,
	'(b) the log says so, with a hint naming max_worker_processes');
usleep(100_000) for 1 .. 30;
is(count_in_log($scheduler_warning, $log_offset),
	1, '(b) said once, not at every retry');

#
# (c) Room enough after a restart.
#
$node->append_conf('postgresql.conf', 'max_worker_processes = 16');
$node->restart;
ok( defined poll_until(
		$node, 'postgres', $status,
		'other:idle:2/2,postgres:idle:2/2', 15),
	'(c) with room enough, both schedulers run with 2 of 2 SQL executors');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"),
	'4', '(c) four executors in all');

$node->stop;

done_testing();
