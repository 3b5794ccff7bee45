#-------------------------------------------------------------------------
# test/t/012_standby.pl
#	  On a hot standby no schedq worker acts: neither the launcher nor a
#	  scheduler runs there.  After promotion, a scheduler starts
#	  by itself on the new primary and promotes due tasks: both one that was
#	  submitted on the old primary and replayed, and one submitted after
#	  the promotion.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time usleep);

my $workers = "SELECT count(*) FROM pg_stat_activity"
  . " WHERE backend_type IN ('schedq launcher', 'schedq scheduler')";
my $scheduler_here = "SELECT count(*) FROM pg_stat_activity"
  . " WHERE backend_type = 'schedq scheduler' AND datname = 'postgres'";

my $primary = schedq_node(
	'primary',
	init => { allows_streaming => 1 },
	extension => 'postgres',
	conf => qq{
max_worker_processes = 32
});
ok(defined poll_until($primary, 'postgres', $scheduler_here, '1', 5),
	'the primary runs a scheduler');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# Tasks submitted on the primary, replayed on the standby: one due in a
# second (the primary's scheduler promotes it), one ready now.
my $due = $primary->safe_psql('postgres',
	"SELECT schedq.submit('due', run_at => now() + interval '1 second')");
my $ready = $primary->safe_psql('postgres', "SELECT schedq.submit('ready')");
ok( defined poll_until(
		$primary, 'postgres', "SELECT status FROM schedq.task WHERE id = $due",
		'available', 5),
	'the primary promotes its due task');
# A task due long after the standby is promoted, to be made due by hand.
my $later = $primary->safe_psql('postgres',
	"SELECT schedq.submit('later', run_at => now() + interval '1 hour')");
$primary->wait_for_catchup($standby);

is( $standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'the standby is in recovery');
is( $standby->safe_psql('postgres',
		"SELECT string_agg(kind || ':' || status, ',' ORDER BY id) FROM schedq.task"),
	'due:available,ready:available,later:pending',
	'the standby has replayed the tasks');
is($standby->safe_psql('postgres', $workers),
	'0', 'no schedq launcher or scheduler runs on the standby');
is(stays($standby, 'postgres', $workers, '0', 3),
	undef, 'none appears on the standby over 3 s');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM schedq.scheduler_status()'),
	'0', 'scheduler_status() on the standby lists no scheduler');

# The old primary goes away for good; the standby takes over.
$primary->stop;
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	'f', 'the standby is promoted');
my $took = poll_until($standby, 'postgres', $scheduler_here, '1', 10);
ok(defined $took, 'a scheduler starts on the new primary within 10 s');
note sprintf('scheduler after %.2f s', $took // -1);
is( $standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq launcher'"),
	'1', 'one launcher runs on the new primary');
ok( defined poll_until(
		$standby, 'postgres',
		"SELECT datname || ':' || (state <> 'stopped') FROM schedq.scheduler_status()",
		'postgres:true', 5),
	'scheduler_status() on the new primary shows it');

# A task submitted now, due in a second, becomes available by itself.
my $new = $standby->safe_psql('postgres',
	"SELECT schedq.submit('new', run_at => now() + interval '1 second')");
$took = poll_until($standby, 'postgres',
	"SELECT status FROM schedq.task WHERE id = $new", 'available', 10);
ok(defined $took, 'a task due in 1 s becomes available on the new primary');
note sprintf('available after %.2f s', $took // -1);
is( $standby->safe_psql('postgres',
		"SELECT count(*) FROM schedq.task WHERE id = $new AND run_at <= now()"),
	'1', 'not before its run_at');

# The task replayed from the old primary is promoted once it is due.
$standby->safe_psql('postgres',
	"UPDATE schedq.task SET run_at = now() + interval '1 second' WHERE id = $later");
ok( defined poll_until(
		$standby, 'postgres', "SELECT status FROM schedq.task WHERE id = $later",
		'available', 10),
	'a task submitted on the old primary is promoted by the new one');

# And the queue works end to end on the new primary.
is( $standby->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE schedq.complete(token))
	  FROM schedq.claim('w', n => 10)}),
	'4',
	'all four tasks are claimed and completed on the new primary');

$standby->stop;

done_testing();
