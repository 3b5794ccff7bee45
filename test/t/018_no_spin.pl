#-------------------------------------------------------------------------
# test/t/018_no_spin.pl
#	  The scheduler does not spin when what is due cannot be done.
#
#	  An idle transaction holds the row of a due schedule (FOR UPDATE): the
#	  periodic pass skips it (SKIP LOCKED) and, before the fix, counted its
#	  past next_run as the next thing due, so the scheduler slept 1 ms
#	  again and again (a core, or what a loaded machine left of one).  Over
#	  3 s the scheduler's CPU time (utime + stime of /proc/PID/stat) must
#	  stay under 5 % of the wall time (an idle scheduler uses a fraction
#	  of 1 %), and it must run a few iterations, not thousands; other
#	  tasks are still promoted meanwhile; and once the row is released the
#	  schedule fires.
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

plan skip_all => 'needs /proc' unless -r "/proc/$$/stat";

my $node = schedq_node('no_spin', extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.sql_workers = 0
});
ok( defined poll_until(
		$node, 'postgres',
		"SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'idle', 10),
	'the scheduler of postgres is up');
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM schedq.scheduler_status() WHERE datname = 'postgres'");

# CPU seconds (user + system) a process has used so far.
my $ticks = `getconf CLK_TCK` || 100;
chomp $ticks;

sub cpu_seconds
{
	my ($p) = @_;
	open(my $fh, '<', "/proc/$p/stat") or die "cannot read /proc/$p/stat: $!";
	my $stat = <$fh>;
	close $fh;
	# the command name, in parentheses, may contain spaces
	$stat =~ s/^.*\)\s+//;
	my @f = split /\s+/, $stat;
	# fields 14 and 15 of stat(5); @f starts at field 3
	return ($f[11] + $f[12]) / $ticks;
}

# A schedule due hourly, moved to be due in 2 s.
$node->safe_psql('postgres',
	"SELECT schedq.schedule('locked', '\@hourly', 'locked')");
$node->safe_psql('postgres',
	"UPDATE schedq.periodic SET next_run = now() + interval '2 s'"
	  . " WHERE name = 'locked'");
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe(
	"SELECT FROM schedq.periodic WHERE name = 'locked' FOR UPDATE");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT next_run < now() - interval '200 ms' FROM schedq.periodic"
		  . " WHERE name = 'locked'",
		't', 10),
	'the locked schedule is due');

# Measure over 3 s of quiet: the scheduler's CPU time, and its
# transactions (one per iteration; the database's commits, of which this
# test adds only its two reads of the counter).
my $commits = "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'";
my ($cpu0, $x0, $t0) =
  (cpu_seconds($pid), $node->safe_psql('postgres', $commits), time);
usleep(100_000) while time - $t0 < 3;
my ($cpu1, $x1, $t1) =
  (cpu_seconds($pid), $node->safe_psql('postgres', $commits), time);
my $share = ($cpu1 - $cpu0) / ($t1 - $t0);
note sprintf('scheduler CPU: %.3f s in %.3f s (%.1f %%); %d commits',
	$cpu1 - $cpu0, $t1 - $t0, 100 * $share, $x1 - $x0);
ok($share < 0.05,
	'the scheduler uses under 5 % of a core while the due schedule is locked')
  or diag sprintf('it used %.1f %%', 100 * $share);
# Stats are flushed at most once a second: allow for one more flush.
ok($x1 - $x0 < 30,
	'the scheduler ran a few iterations in 3 s, not thousands')
  or diag 'commits in 3 s: ' . ($x1 - $x0);

my $id = $node->safe_psql('postgres',
	"SELECT schedq.submit('t', run_at => now() + interval '500 ms')");
ok( defined poll_until(
		$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $id",
		'available', 10),
	'another task is promoted meanwhile');
is($node->safe_psql('postgres',
		"SELECT fired FROM schedq.periodic WHERE name = 'locked'"),
	'0', 'the locked schedule has not fired');

$holder->query_safe('COMMIT');
ok( defined poll_until(
		$node, 'postgres',
		"SELECT fired FROM schedq.periodic WHERE name = 'locked'",
		'1', 10),
	'once the row is released, the schedule fires');
is( $node->safe_psql('postgres',
		"SELECT pid FROM schedq.scheduler_status() WHERE datname = 'postgres'"),
	$pid, 'the scheduler is the same process');

$holder->quit;
$node->stop;

done_testing();
