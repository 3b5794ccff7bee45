#-------------------------------------------------------------------------
# test/t/ExampleWorker.pm
#	  What the tests of the example workers in examples/ (t/05x_example_*.pl)
#	  share: one run of an example worker program against a throwaway
#	  server, with the README's worker and submitter grants, checked from
#	  the task table and from the worker's log.
#
#	  run_example_tests($label, \@command) runs, in order:
#	  (a) a batch of 200 tasks: 198 'add' tasks, each done once (attempt 1)
#	      with the right sum; one 'flaky' task, failed once and done on its
#	      second attempt; one 'add' with bad input, failed permanently on
#	      its first attempt;
#	  (b) connection loss: the worker's session is terminated while it
#	      waits in await_task; it reconnects and does the next tasks;
#	  (c) heartbeats and SIGTERM: a task that runs 8 s under a 3 s lease is
#	      done on its first attempt (its lease was extended); SIGTERM while
#	      it runs lets it finish, the worker claims nothing more (a task
#	      submitted after the signal stays available) and exits 0;
#	  (d) a new worker, with a 10 s lease, does the task left behind; its
#	      sessions are terminated while a task runs: it reconnects and
#	      reports the task from the new session (done, attempt 1); SIGTERM
#	      while it waits in await_task (wait 30 s): it exits 0 within 10 s
#	      and leaves no session behind;
#	  and over all of it, from the log the worker writes (one line per
#	  attempt: the side effect a real handler would have): every task's
#	  handler ran once per attempt, and exactly once to done; and, from
#	  pg_stat_user_functions (track_functions = all), the successes were
#	  completed by complete_and_claim, in fewer calls than tasks, never by
#	  complete.
#-------------------------------------------------------------------------
package ExampleWorker;

use strict;
use warnings;

use Exporter 'import';
use POSIX ':sys_wait_h';
use PostgreSQL::Test::Utils;
use SchedqTest;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(run_example_tests);

my $lease = 3;      # seconds: heartbeats every second
my $wait = 30;      # seconds: longest await_task
my $deadline = 180; # seconds for anything to happen
my @pids;           # worker processes still running

END
{
	kill 'KILL', @pids if @pids;
}

# Start the worker, its output appended to $log.
sub start_worker
{
	my ($node, $label, $command, $log, $worker_lease) = @_;
	my $pid = fork;
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null') or die;
		open(STDOUT, '>>', $log) or die "cannot open $log: $!";
		open(STDERR, '>&', \*STDOUT) or die;
		$ENV{PGHOST} = $node->host;
		$ENV{PGPORT} = $node->port;
		$ENV{PGUSER} = 'worker';
		$ENV{PGDATABASE} = 'postgres';
		$ENV{SCHEDQ_WORKER} = "example-$label";
		$ENV{SCHEDQ_QUEUES} = 'default';
		$ENV{SCHEDQ_BATCH} = 10;
		$ENV{SCHEDQ_LEASE} = $worker_lease // $lease;
		$ENV{SCHEDQ_WAIT} = $wait;
		exec(@$command);
		print STDERR "exec @$command: $!\n";
		POSIX::_exit(127);
	}
	push @pids, $pid;
	return $pid;
}

# Wait up to $timeout seconds for $pid to exit; its wait status, or undef.
sub wait_exit
{
	my ($pid, $timeout) = @_;
	my $start = time;
	while (time - $start < $timeout)
	{
		if (waitpid($pid, WNOHANG) == $pid)
		{
			my $status = $?;
			@pids = grep { $_ != $pid } @pids;
			return $status;
		}
		usleep(50_000);
	}
	return undef;
}


# The query that finds the worker's session waiting in await_task.
my $waiting = q{
	SELECT count(*) > 0 FROM pg_stat_activity
	 WHERE usename = 'worker' AND state = 'active'
	   AND query LIKE 'CALL schedq.await_task%'};

sub run_example_tests
{
	my ($label, $command) = @_;

	my $node = schedq_node("example_$label", extension => 'postgres', conf => qq{
max_worker_processes = 16
schedq.sql_workers = 0
track_functions = 'all'
});
	doc_roles($node);
	my $as_app = sub {
		return $node->safe_psql('postgres', $_[0],
			extra_params => [ '-U', 'app' ]);
	};
	my $log = "$PostgreSQL::Test::Utils::log_path/worker_$label.log";

	#
	# (a) A batch of 200 tasks.
	#
	$as_app->(
		q{SELECT count(*) FROM schedq.submit_many(
			(SELECT jsonb_agg(jsonb_build_object('kind', 'add', 'payload',
			                  jsonb_build_object('numbers', jsonb_build_array(i, 2 * i, 1)))
			                  ORDER BY i)
			   FROM generate_series(1, 198) AS i)
			|| '[{"kind": "flaky"}, {"kind": "add", "payload": {"numbers": "x"}}]')});
	my $pid = start_worker($node, $label, $command, $log);
	ok( poll_until(
			$node, 'postgres',
			"SELECT count(*) FROM schedq.task WHERE status IN ('done', 'failed')",
			'200', $deadline),
		"(a) $label: the 200 tasks are finished")
	  or diag slurp($log);
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM schedq.task
 WHERE kind = 'add' AND status = 'done' AND attempts = 1
   AND (result->>'sum')::numeric = 3 * (payload->'numbers'->>0)::numeric + 1}),
		'198',
		"(a) $label: each 'add' task done on its first attempt, with its sum");
	is( $node->safe_psql(
			'postgres',
			"SELECT status, attempts, result->>'attempt' FROM schedq.task WHERE kind = 'flaky'"),
		'done|2|2',
		"(a) $label: the flaky task failed once, then was done on its second attempt");
	like(
		$node->safe_psql(
			'postgres',
			"SELECT status || ' ' || attempts || ' ' || last_error FROM schedq.task"
			  . " WHERE payload->>'numbers' = 'x'"),
		qr/^failed 1 bad input/,
		"(a) $label: bad input failed permanently, on its first attempt");

	#
	# (b) The worker's session is terminated while it waits: it reconnects.
	#
	ok(poll_until($node, 'postgres', $waiting, 't', $deadline),
		"(b) $label: the idle worker waits in await_task");
	$node->safe_psql(
		'postgres', q{
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE usename = 'worker' AND query LIKE 'CALL schedq.await_task%'});
	$as_app->(
		q{SELECT count(*) FROM schedq.submit_many(
			(SELECT jsonb_agg(jsonb_build_object('kind', 'add', 'payload',
			                  jsonb_build_object('numbers', jsonb_build_array(i, 2 * i, 1))))
			   FROM generate_series(1001, 1010) AS i))});
	ok( poll_until(
			$node, 'postgres',
			"SELECT count(*) FROM schedq.task WHERE status = 'done' AND attempts = 1"
			  . " AND (payload->'numbers'->>0)::int > 1000",
			'10', $deadline),
		"(b) $label: after the session was terminated, the worker reconnects and does new tasks"
	) or diag slurp($log);
	like(slurp($log), qr/connection lost/,
		"(b) $label: the worker logged the lost connection");

	#
	# (c) Heartbeats, and SIGTERM while a task runs.
	#
	my $sleeper = $as_app->(
		q{SELECT schedq.submit('sleep', payload => '{"seconds": 8}')});
	ok( poll_until(
			$node, 'postgres',
			"SELECT status FROM schedq.task WHERE id = $sleeper",
			'running', $deadline),
		"(c) $label: the 8 s task runs");
	kill 'TERM', $pid;
	my $after = $as_app->(
		q{SELECT schedq.submit('add', payload => '{"numbers": [1, 2]}')});
	my $status = wait_exit($pid, $deadline);
	is($status, 0, "(c) $label: after SIGTERM the worker exits with status 0")
	  or diag slurp($log);
	is( $node->safe_psql(
			'postgres',
			"SELECT status, attempts, last_error IS NULL FROM schedq.task WHERE id = $sleeper"
		),
		'done|1|t',
		"(c) $label: the task in hand was finished, on its first attempt: heartbeats kept its ${lease} s lease"
	);
	is( $node->safe_psql(
			'postgres', "SELECT status FROM schedq.task WHERE id = $after"),
		'available',
		"(c) $label: after SIGTERM the worker claimed nothing more");

	#
	# (d) A new worker, with a 10 s lease: a lost connection while a task
	# runs, then SIGTERM while it waits.
	#
	$pid = start_worker($node, $label, $command, $log, 10);
	ok( poll_until(
			$node, 'postgres',
			"SELECT status FROM schedq.task WHERE id = $after",
			'done', $deadline),
		"(d) $label: a new worker does the task left behind");
	my $cut = $as_app->(
		q{SELECT schedq.submit('sleep', payload => '{"seconds": 2}')});
	ok( poll_until(
			$node, 'postgres',
			"SELECT status FROM schedq.task WHERE id = $cut",
			'running', $deadline),
		"(d) $label: a 2 s task runs");
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'worker'"
	);
	ok( poll_until(
			$node, 'postgres',
			"SELECT status || ' ' || attempts FROM schedq.task WHERE id = $cut",
			'done 1', $deadline),
		"(d) $label: its connection cut while it ran, the task is reported from a new session: done on its first attempt"
	) or diag slurp($log);
	ok(poll_until($node, 'postgres', $waiting, 't', $deadline),
		"(d) $label: then waits in await_task");
	my $t0 = time;
	kill 'TERM', $pid;
	$status = wait_exit($pid, $deadline);
	my $took = time - $t0;
	is($status, 0, "(d) $label: SIGTERM while waiting: exit status 0")
	  or diag slurp($log);
	cmp_ok($took, '<', 10,
		"(d) $label: ... within 10 s, not the ${wait} s of the wait");
	ok( poll_until(
			$node, 'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'",
			'0', $deadline),
		"(d) $label: no session of the worker is left");

	#
	# Over everything: one log line per attempt, one 'done' per done task.
	#
	my (%lines, %done);
	for my $line (split /\n/, slurp($log))
	{
		next unless $line =~ /^task=(\d+) kind=\S+ attempt=(\d+) outcome=(\S+)/;
		$lines{$1}++;
		$done{$1}++ if $3 eq 'done';
	}
	my @wrong;
	for my $row (split /\n/,
		$node->safe_psql('postgres', 'SELECT id, status, attempts FROM schedq.task'))
	{
		my ($id, $state, $attempts) = split /\|/, $row;
		my $want_done = $state eq 'done' ? 1 : 0;
		push @wrong, "task $id ($state, $attempts attempts): "
		  . ($lines{$id} // 0) . " runs, " . ($done{$id} // 0) . " done"
		  if ($lines{$id} // 0) != $attempts || ($done{$id} // 0) != $want_done;
	}
	my $ntasks = $node->safe_psql('postgres', 'SELECT count(*) FROM schedq.task');
	is_deeply(\@wrong, [],
		"$label: every task's handler ran once per attempt, and exactly once to done ($ntasks tasks)"
	) or diag slurp($log);

	# The workers' sessions are gone, so their function counts are in.
	my ($cac, $complete) = split /\|/, $node->safe_psql(
		'postgres', q{
SELECT coalesce(sum(calls) FILTER (WHERE funcname = 'complete_and_claim'), 0),
       coalesce(sum(calls) FILTER (WHERE funcname = 'complete'), 0)
  FROM pg_stat_user_functions WHERE schemaname = 'schedq'});
	note "$label: $cac complete_and_claim calls, $complete complete calls, $ntasks tasks";
	cmp_ok($cac, '>', 0, "$label: successes are completed by complete_and_claim");
	cmp_ok($cac, '<', $ntasks, "$label: ... in fewer calls than tasks (a batch per call)");
	is($complete, 0, "$label: no task is completed on its own");

	$node->stop;
	return;
}

1;
