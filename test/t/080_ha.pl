#-------------------------------------------------------------------------
# test/t/080_ha.pl
#	  schedq under a real failover manager: a pg_auto_failover monitor and
#	  two nodes on 127.0.0.1 (test/t/HaCluster.pm), synchronous
#	  replication (pg_auto_failover's default with two nodes), schedq
#	  preloaded on both, failover timeouts lowered to seconds.  Under load
#	  (schedqctl workers and a submitter connected through the formation's
#	  multi-host URI with target_session_attrs=read-write, a schedule every
#	  2 s and its consumer, SQL tasks), two failovers:
#	  (1) pg_autoctl perform switchover;
#	  (2) a crash of the primary (its keeper and every process of its
#	      Postgres killed at once: pg_autoctl stop --immediate would stop
#	      Postgres in fast mode, sending the standby everything).
#	  Each with grants held across it (programs still running, a token the
#	  test holds), claims cut off (tokens nobody will report), sessions
#	  blocked in claim(wait => ...) and await_task, and a workflow in
#	  flight.  After each: no acknowledged submit is missing; every
#	  acknowledged complete is done; no task completed twice; attempts > 1
#	  exactly for the claims cut off, each once, with 'lease expired';
#	  held grants complete on the new primary; the old tokens of reaped
#	  attempts are refused and fresh ones accepted; blocked waiters get an
#	  error and the workers reconnect and drain; each periodic due time
#	  fired once; the workflow finishes; and no schedq WARNING and no SQL
#	  executor restart while the promoted node is still read-only
#	  (pg_auto_failover keeps it so until the old primary is known to be
#	  down).  The takeover times are printed: out of recovery, writable,
#	  the scheduler's first pass, the first completion on the new primary,
#	  and completes per second in the 10 s before and after.
#
#	  Skips when pg_autoctl or the pgautofailover extension for this
#	  server is missing.  make check-ha runs it alone.  Run by
#	  test/check.sh (make check) with prove; see the header of check.sh for
#	  the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SchedqTest;
use HaCluster;

my $missing = HaCluster::missing();
plan skip_all => $missing if $missing;

my $ha = HaCluster->new(node_conf => qq{
max_worker_processes = 16
schedq.reaper_interval = '200ms'
schedq.default_lease = 5
schedq.sql_workers = 2
});
my (@workers, $submitter);
my $dir = $ha->{dir};
# A test stopped by a signal still stops what it started (END).
$SIG{$_} = sub { exit 1 } for qw(INT TERM HUP);
END
{
	local $?;
	if ($ha)
	{
		$_->kill_kill(grace => 2) for grep { $_ } @workers, $submitter;
		$ha->teardown;
	}
}

my $t = time;
my $settled = $ha->create;
ok(defined $settled, 'a monitor, a primary and a secondary');
BAIL_OUT('the formation did not come up: ' . $ha->states) unless defined $settled;
diag sprintf('formation up in %.1f s', time - $t);

my $primary = $ha->conn('node1');
$primary->safe_psql('', 'CREATE EXTENSION schedq');
doc_roles($primary);
is( $ha->{monitor}->safe_psql('', 'SELECT number_sync_standbys FROM pgautofailover.formation'),
	'0', 'number_sync_standbys is 0 (the default with two nodes)');
like($primary->safe_psql('', 'SHOW synchronous_standby_names'),
	qr/pgautofailover_standby/, 'the standby is synchronous');
ok( defined poll_until(
		$primary, '',
		"SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')",
		'1', 30),
	'pg_stat_replication: one synchronous standby');
my $dboid = $primary->safe_psql('', "SELECT oid FROM pg_database WHERE datname = 'postgres'");

my $uri = $ha->formation_uri;
like($uri, qr/target_session_attrs=read-write/, "pg_autoctl show uri: $uri");
my $sep = $uri =~ /\?/ ? '&' : '?';
sub uri_for { return "$uri${sep}user=$_[0]&connect_timeout=2" }
my $any = HaConn->new(uri_for('postgres'));    # the primary, whichever it is
my $app = HaConn->new(uri_for('app'));

sub script
{
	my ($name, $body) = @_;
	open(my $fh, '>', "$dir/$name") or die "cannot write $dir/$name: $!";
	print $fh "#!/bin/sh\n$body";
	close $fh;
	chmod 0755, "$dir/$name";
	return "$dir/$name";
}


# The worker's program: records the attempt when it starts and when it
# ends, sleeping the payload's "sleep" seconds in between.
my $job = script('job.sh', <<"EOF");
payload=\$(cat)
echo "\$SCHEDQ_TASK_ID \$SCHEDQ_ATTEMPT" >> $dir/started
s=\$(printf '%s' "\$payload" | sed -n 's/.*"sleep": *\\([0-9.]*\\).*/\\1/p')
[ -n "\$s" ] && sleep "\$s"
echo "\$SCHEDQ_TASK_ID \$SCHEDQ_ATTEMPT" >> $dir/finished
exit 0
EOF
# The submitter: one psql per submit; the id is written once psql has it,
# that is once the commit was acknowledged.
my $submit = script('submit.sh', <<"EOF");
i=0
while [ ! -e $dir/stop ]; do
	i=\$((i + 1))
	id=\$(psql -X -A -t -q -d "\$1" -c "SELECT schedq.submit('job', jsonb_build_object('i', \$i), queue => 'jobs')" 2>/dev/null) &&
		[ -n "\$id" ] && echo "\$id" >> $dir/acked || sleep 0.05
done
EOF

sub start_worker
{
	my ($name, @opts) = @_;
	my $log = "$dir/$name.log";
	push @workers, IPC::Run::start(
		[ 'schedqctl', 'worker', '-d', uri_for('worker'), "--name=$name", @opts, '--', $job ],
		'<', '/dev/null', '>', "$log.out", '2>', $log);
	return;
}

# A schedule every 2 s and its consumer; two workers on the jobs; one on
# queue drain, idle (waiting in await_task) until a failover is over.
$app->safe_psql('',
	"SELECT schedq.schedule('beat', '\@every 2s', 'beat', queue => 'beat')");
start_worker('w1', '--queue=jobs', '--concurrency=4', '--lease=15s');
start_worker('w2', '--queue=jobs', '--concurrency=4', '--lease=15s');
start_worker('beat', '--queue=beat', '--lease=15s');
start_worker('drain', '--queue=drain', '--concurrency=2', '--lease=15s');
$submitter = IPC::Run::start([ 'sh', $submit, uri_for('app') ],
	'<', '/dev/null', '>', "$dir/submit.out", '2>', "$dir/submit.err");

ok( defined poll_until(
		$any, '', "SELECT count(*) >= 50 FROM schedq.task WHERE queue = 'jobs' AND status = 'done'",
		't', 60),
	'under load: jobs submitted and done through the URI');
ok( defined poll_until(
		$any, '', "SELECT count(*) >= 2 FROM schedq.task WHERE periodic = 'beat' AND status = 'done'",
		't', 30),
	'the schedule fires and its consumer works');

# Lines "id attempt" of a file, as a hash of "id attempt" => count.
sub attempts_in
{
	my %n;
	$n{$_}++ for grep { /^\d+ \d+$/ } split /\n/, slurp($_[0]);
	return \%n;
}

# Every worker log line of a finished task: [id, attempt, outcome].
sub worker_outcomes
{
	my @out;
	for my $f (glob("$dir/*.log"))
	{
		my $text = slurp($f);
		push @out, [ $1, $2, $3 ]
		  while $text =~ /task (\d+) kind=\S+ attempt=(\d+) queue=\S+ duration=\S+ outcome=(\w+)/g;
	}
	return @out;
}

sub ids_list { return '{' . join(',', @_) . '}' }

my %expected_cut;    # task id => the scenario that cut its claim off
my %done_by_test;    # task id => 1: completes the test had acknowledged

sub scenario
{
	my ($label, $from, $to, $how, $read_only) = @_;
	my $old_w = $ha->conn($from, 'worker');
	my $old_app = $ha->conn($from, 'app');
	my $new = $ha->conn($to);
	my %time;

	is($ha->conn($to)->safe_psql('', "SELECT oid FROM pg_database WHERE datname = 'postgres'"),
		$dboid, "$label: the database has the same OID on the standby (physical replication)");

	# Grants held across the failover: programs that run 8 s, a workflow
	# whose first step runs 3 s, and a token the test holds.
	my @slow = split /\n/, $old_app->safe_psql('',
		"SELECT schedq.submit('slow', '{\"sleep\": 8}', queue => 'jobs', priority => 10)"
		  . ' FROM generate_series(1, 4)');
	my ($run, @steps) = split /\|/, $old_app->safe_psql('', q{
		SELECT r, a, b, c
		  FROM (SELECT schedq.create_run('wf') r) x,
		       LATERAL (SELECT schedq.submit('step', '{"sleep": 3}', queue => 'jobs', priority => 10, run_id => r) a) y,
		       LATERAL (SELECT schedq.submit('step', '{"sleep": 1}', queue => 'jobs', priority => 10, run_id => r, depends_on => ARRAY[a]) b) z,
		       LATERAL (SELECT schedq.submit('step', '{"sleep": 1}', queue => 'jobs', priority => 10, run_id => r, depends_on => ARRAY[b]) c) w});
	my $held_id = $old_app->safe_psql('', "SELECT schedq.submit('held', queue => 'held')");
	my $held_token = $old_w->safe_psql('',
		"SELECT token FROM schedq.claim('test-held', queues => '{held}', lease => '60s')");
	ok( HaCluster->wait_until(
			sub {
				my $s = attempts_in("$dir/started");
				!grep { !$s->{"$_ 1"} } @slow, $steps[0];
			},
			30),
		"$label: the slow programs and the workflow's first step run");

	# Sessions blocked in a wait, on the old primary.
	my @blocked;
	for my $q (
		"SELECT count(*) FROM schedq.claim('blocked', queues => '{nothing}', wait => '60s')",
		"CALL schedq.await_task(queues => '{nothing}', wait => '60s')")
	{
		my ($out, $err) = ('', '');
		push @blocked, [
			IPC::Run::start(
				[ 'psql', '-X', '-d', $old_w->{conn} . ' application_name=blocked', '-c', $q ],
				'<', '/dev/null', '>', \$out, '2>', \$err),
			\$out, \$err ];
	}
	ok( defined poll_until(
			$ha->conn($from), '',
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'blocked' AND state = 'active'",
			'2', 30),
		"$label: two sessions wait in claim(wait => ...) and await_task");

	# SQL tasks queued (about 5 s of work for the two executors), and
	# claims cut off: three claims whose tokens nobody will report.
	$old_app->safe_psql('',
		"SELECT count(schedq.submit_sql('SELECT pg_sleep(0.1)', queue => 'sql')) FROM generate_series(1, 100)");
	$old_app->safe_psql('', "SELECT schedq.submit('cut', queue => 'cut') FROM generate_series(1, 3)");
	my %cut_tokens = map { split / /, $_, 2 } split /\n/, $old_w->safe_psql('',
		"SELECT id || ' ' || token FROM schedq.claim('test-cut', queues => '{cut}', n => 3, lease => '5s')");
	is(scalar keys %cut_tokens, 3, "$label: three claims to be cut off");
	my $log_offset = length $ha->server_log($to);

	# The failover.
	$time{start} = time;
	my $switch = $how->();
	my ($snapshot, $ro_state, $ro_seen);
	my $deadline = time + 90;
	while (time < $deadline)
	{
		my ($rc, $out) = $new->psql('',
			q{SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only'),
			         (SELECT coalesce(string_agg(state || ' ' || coalesce(extract(epoch FROM last_tick)::text, ''), ','), '')
			            FROM schedq.scheduler_status())}, timeout => 5);
		my $now = time;
		if ($rc == 0)
		{
			my ($rec, $ro, $sched) = split /\|/, $out, 3;
			if ($rec eq 'f' && !defined $time{out_of_recovery})
			{
				$time{out_of_recovery} = $now;
				# What was running at the promotion: while the node is
				# read-only nothing is claimed there (the old primary may
				# still have claimed after the start of the failover); past
				# that, what was claimed before the failover began.
				$snapshot = $new->safe_psql('',
					"SELECT string_agg(id || ' ' || attempts, E'\\n') FROM schedq.task WHERE status = 'running'"
					  . ($ro eq 'on' ? '' : " AND started_at < to_timestamp($time{start})"));
				note "$label: the first look at $to out of recovery found it writable already"
				  unless $ro eq 'on';
			}
			if ($rec eq 'f' && $ro eq 'on')
			{
				$ro_state //= $sched if $sched ne '';
				$ro_seen = $now;
			}
			$time{writable} //= $now if $rec eq 'f' && $ro eq 'off';
			# The end of a pass after the node was last seen read-only.
			if ($ro eq 'off' && $sched =~ /^(idle|promoting|reaping) (\d+(?:\.\d+)?)/
				&& $2 > ($ro_seen // $time{start}))
			{
				$time{first_pass} = $2;
			}
			last if defined $time{first_pass};
		}
		usleep(50_000);
	}
	ok(defined $time{out_of_recovery}, "$label: $to is out of recovery");
	ok(defined $time{writable}, "$label: $to takes writes");
	ok(defined $time{first_pass}, "$label: its scheduler runs a pass");
	if ($switch)
	{
		$switch->finish;
		is($switch->result(0), 0, "$label: pg_autoctl perform switchover succeeds");
	}

	# Blocked waiters error out, long before their wait would end.
	for my $b (@blocked)
	{
		my ($h, $out, $err) = @$b;
		my $ok = eval { $h->finish; 1 };
		ok($ok && $h->result(0) != 0 && time - $time{start} < 45,
			"$label: a blocked waiter gets an error: " . ($$err =~ s/\s+/ /gr));
	}

	# The grant the test held completes on the new primary.
	is(HaConn->new(uri_for('worker'))->safe_psql('', "SELECT schedq.complete('$held_token')"),
		't', "$label: a token claimed on the old primary completes on the new one");
	$done_by_test{$held_id} = 1;

	# The cut-off claims come back after their lease, judged by the new
	# primary: their old tokens are refused, fresh ones accepted.
	my $w = HaConn->new(uri_for('worker'));
	my $cut_ids = ids_list(sort keys %cut_tokens);
	ok( defined poll_until(
			$any, '',
			"SELECT count(*) FROM schedq.task WHERE id = ANY('$cut_ids')"
			  . " AND status <> 'running' AND last_error = 'lease expired'",
			'3', 30),
		"$label: the cut-off claims are taken back ('lease expired')");
	is( $w->safe_psql('',
			join(' UNION ALL ', map { "SELECT schedq.complete('$cut_tokens{$_}')" } sort keys %cut_tokens)),
		"f\nf\nf", "$label: their old tokens are refused");
	my %fresh;
	HaCluster->wait_until(
		sub {
			my $got = $w->safe_psql('',
				"SELECT string_agg(id || ' ' || attempt || ' ' || token, E'\\n')"
				  . " FROM schedq.claim('test-cut', queues => '{cut}', n => 3)");
			for (split /\n/, $got)
			{
				my ($id, $attempt, $token) = split / /;
				$fresh{$id} = [ $attempt, $token ];
			}
			keys %fresh == 3;
		},
		30);
	is(join(',', map { $fresh{$_}[0] } sort keys %fresh), '2,2,2',
		"$label: claimed again, as attempt 2");
	is( $w->safe_psql('',
			join(' UNION ALL ', map { "SELECT schedq.complete('$fresh{$_}[1]')" } sort keys %fresh)),
		"t\nt\nt", "$label: the fresh tokens are accepted");
	$done_by_test{$_} = 1 for keys %fresh;
	$expected_cut{$_} = $label for keys %cut_tokens;

	# The idle worker reconnects and drains its queue.
	my $drain = ids_list(split /\n/, $app->safe_psql('',
		"SELECT schedq.submit('drain', queue => 'drain') FROM generate_series(1, 20)"));
	ok( defined poll_until(
			$any, '', "SELECT count(*) FROM schedq.task WHERE id = ANY('$drain') AND status = 'done'",
			'20', 60),
		"$label: the worker that was waiting reconnects and drains its queue");

	ok( defined poll_until(
			$any, '', "SELECT status FROM schedq.run WHERE id = $run", 'done', 60),
		"$label: the workflow finishes");
	my $slow = ids_list(@slow);
	ok( defined poll_until(
			$any, '', "SELECT count(*) FROM schedq.task WHERE id = ANY('$slow') AND status = 'done'",
			'4', 60),
		"$label: the held grants complete");
	is( $any->safe_psql('',
			"SELECT count(*) FROM schedq.task WHERE id = ANY('$slow') AND attempts = 1"
			  . " AND finished_at >= to_timestamp($time{out_of_recovery})"),
		'4', "$label: on the new primary, in their first attempt");
	ok( defined poll_until(
			$any, '', "SELECT count(*) FROM schedq.task WHERE queue = 'sql' AND status <> 'done'",
			'0', 90),
		"$label: every SQL task is done");

	# The claims of the workers and the SQL executors cut off by the
	# failover: running at the promotion, never started by a program.
	my $started = attempts_in("$dir/started");
	for (split /\n/, $snapshot // '')
	{
		my ($id, $attempt) = split / /;
		next if $started->{"$id $attempt"} || $id == $held_id;
		$expected_cut{$id} //= $label;
	}

	# Takeover times, and completes per second before and after.
	usleep(100_000) while time < $time{writable} + 10;
	my ($first, $before, $after) = split /\|/, $any->safe_psql('', qq{
		SELECT extract(epoch FROM min(finished_at) FILTER (WHERE finished_at >= to_timestamp($time{out_of_recovery}))),
		       count(*) FILTER (WHERE finished_at >= to_timestamp($time{start} - 10) AND finished_at < to_timestamp($time{start})),
		       count(*) FILTER (WHERE finished_at >= to_timestamp($time{writable}) AND finished_at < to_timestamp($time{writable} + 10))
		  FROM schedq.task});
	diag sprintf(
		"%s: out of recovery after %.2f s, writable after %.2f s, scheduler's first pass after %.2f s,"
		  . " first completion on the new primary after %.2f s; completes/s %.1f before, %.1f after%s",
		$label,
		map({ ($time{$_} // $time{start}) - $time{start} } qw(out_of_recovery writable first_pass)),
		($first || $time{start}) - $time{start},
		$before / 10, $after / 10,
		defined $ro_state ? "; scheduler_status() while read-only: $ro_state" : '');

	# While the promoted node was read-only (pg_auto_failover's
	# stop_replication state, until the old primary is known to be down),
	# and after: no schedq WARNING, no SQL executor that died and was
	# started again.
	if ($read_only)
	{
		like($ro_state // '', qr/^read-only/,
			"$label: meanwhile scheduler_status() says read-only");
		cmp_ok(metric($new, 'read_only_ms'), '>', 0, "$label: and read_only_ms counts the time");
	}
	my $log = substr($ha->server_log($to), $log_offset);
	my @warnings = $log =~ /^.*WARNING:.*schedq.*$/mg;
	my @restarts = $log =~ /^.*background worker "schedq sql executor".*exited with exit code [1-9].*$/mg;
	is(scalar @warnings, 0, "$label: no schedq WARNING on the new primary")
	  or diag join("\n", @warnings[ 0 .. ($#warnings < 4 ? $#warnings : 4) ]);
	is(scalar @restarts, 0, "$label: no SQL executor restart while it was read-only")
	  or diag join("\n", @restarts[ 0 .. ($#restarts < 4 ? $#restarts : 4) ]);
	return;
}

# The checks that hold after every failover, over everything so far.
sub check_all
{
	my ($label) = @_;
	my @acked = grep { /^\d+$/ } split /\n/, slurp("$dir/acked");
	my $acked = ids_list(@acked);
	is($any->safe_psql('', "SELECT count(*) FROM schedq.task WHERE id = ANY('$acked')"),
		scalar @acked, "$label: 0 acknowledged submits missing (of " . scalar(@acked) . ')');

	my @outcomes = worker_outcomes();
	my %done_once;
	$done_once{ $_->[0] }++ for grep { $_->[2] eq 'done' } @outcomes;
	my $completed = ids_list(keys %done_once, keys %done_by_test);
	is( $any->safe_psql('',
			"SELECT count(*) FROM unnest('$completed'::bigint[]) i"
			  . " WHERE NOT EXISTS (SELECT 1 FROM schedq.task t WHERE t.id = i AND t.status = 'done')"),
		'0', "$label: 0 acknowledged completes not done (of " . scalar(keys %done_once) . ' by the workers)');
	is(join(',', grep { $done_once{$_} > 1 } sort keys %done_once), '',
		"$label: no task reported done twice");
	my %finished;
	my $fin = slurp("$dir/finished");
	$finished{$1}++ while $fin =~ /^(\d+) \d+$/mg;
	is(join(',', grep { $finished{$_} > 1 } sort keys %finished), '',
		"$label: no program ran to its end twice for a task");

	# A worker's claim cut off comes back after its lease (15 s).
	my $cut = ids_list(keys %expected_cut);
	ok( defined poll_until(
			$any, '', "SELECT count(*) FROM schedq.task WHERE id = ANY('$cut') AND status = 'done'",
			scalar(keys %expected_cut), 60),
		"$label: the claims cut off ran again, and are done");
	my $again = $any->safe_psql('',
		"SELECT coalesce(string_agg(id || ' ' || attempts || ' ' || coalesce(last_error, '-'), E'\\n' ORDER BY id), '')"
		  . ' FROM schedq.task WHERE attempts > 1');
	is($again, join("\n", map { "$_ 2 lease expired" } sort { $a <=> $b } keys %expected_cut),
		"$label: attempts > 1 exactly for the claims cut off (each once, 'lease expired'): "
		  . join(',', map { "$_ ($expected_cut{$_})" } sort { $a <=> $b } keys %expected_cut));

	is( $any->safe_psql('',
			"SELECT count(*) FROM (SELECT run_at FROM schedq.task WHERE periodic = 'beat'"
			  . ' GROUP BY run_at HAVING count(*) > 1) d'),
		'0', "$label: each periodic due time fired once");
	is( $any->safe_psql('',
			"SELECT fired = (SELECT count(*) FROM schedq.task WHERE periodic = 'beat') FROM schedq.periodic WHERE name = 'beat'"),
		't', "$label: the schedule's fired count is its tasks'");
	ok( defined poll_until(
			$any, '',
			"SELECT count(*) FROM schedq.task WHERE periodic = 'beat' AND status <> 'done' AND run_at < now() - interval '5 s'",
			'0', 30),
		"$label: the consumer took every tick");
	return;
}

#
# (1) Switchover: node1 drains, node2 is promoted, node1 follows it.
#
scenario(
	'(1) switchover', 'node1', 'node2',
	sub {
		return IPC::Run::start(
			[ 'pg_autoctl', 'perform', 'switchover', '--pgdata', $ha->pgdata('node1'),
			  '--formation', 'default', '--group', '0' ],
			'<', '/dev/null', '>', "$dir/switchover.log", '2>&1');
	});
ok(defined $ha->wait_stable('node2', 120), '(1) node2 primary, node1 its secondary again');
check_all('(1) switchover');

#
# (2) The primary crashes: node2's keeper and every process of its
# Postgres are killed at once; the monitor promotes node1, read-only
# until node2's demote timeout has passed.
#
ok( defined poll_until(
		$ha->conn('node2'), '',
		"SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')",
		'1', 60),
	'(2) node1 is node2\'s synchronous standby');
scenario(
	'(2) crash', 'node2', 'node1',
	sub {
		note '(2) crash: ' . $ha->crash('node2') . ' processes of node2 killed';
		return undef;
	},
	1);
check_all('(2) crash');

# Stop: the workers drain, the submitter ends.
{ open(my $fh, ">", "$dir/stop") or die "cannot write $dir/stop: $!"; close $fh; }
$submitter->finish;
for my $w (@workers)
{
	$w->signal('TERM');
	$w->finish;
	is($w->result(0), 0, 'a worker stops cleanly');
}
@workers = ();
$submitter = undef;

done_testing();
