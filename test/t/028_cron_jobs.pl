#-------------------------------------------------------------------------
# test/t/028_cron_jobs.pl
#	  schedq_cron's jobs through the live scheduler and SQL executor:
#
#	  (a) a '1 seconds' job of a LOGIN role runs as that role, every
#	      second: its tasks' ticks (run_at) are consecutive whole seconds,
#	      none twice; job_run_details shows them succeeded, as the role.
#	  (b) never twice at once: a job that runs 2.5 s on a '1 seconds'
#	      schedule never overlaps itself (the executor's own record of
#	      runs shows no two at a time), its skipped ticks are counted;
#	      run_job while it runs is a tick skipped like the others.
#	  (c) a failing job is 'failed' in job_run_details with the error;
#	      job_health says failed; with max_attempts 3 (set_job_options) a
#	      job whose command raises an error is tried three times.
#	  (d) run_job runs a job now, its '@yearly' tick stays next.
#	  (e) '@reboot' runs once after each start of the server, not before
#	      and not twice.
#	  (f) '$': the last day of the month, computed for the job.
#	  (g) bounded history: a job keeping 3 runs shows at most 4 (the newest
#	      kept, and the one just ended) after many; one keeping errors only
#	      shows no succeeded run but the last, and keeps its failures; the
#	      option needs the job's user to have USAGE on schema cron.
#	  (i) a job's search_path is a value, never SQL: a database-level
#	      search_path holding ';' and a statement runs no statement, an
#	      empty one breaks no job; job_run_details shows the job's command.
#	  (j) only a job's own runs prune its history: another role's job, or
#	      its session, calling cron._prune on it deletes nothing.
#	  (h) pg_dump and pg_restore into a database of another name: the
#	      jobs, their options and their schedules (as dumped) come back,
#	      the jobs' database is the new one; nothing else fails.
#	  (k) a job of another database (schedule_in_database) runs there, as
#	      its user with that user's settings there; job_run_details shows
#	      its database, command and rows; its error is the run's; its
#	      timeout ends the run and the worker with it; a user that lost
#	      CONNECT gets a failed run that says so; no session and no other
#	      job can make it run.
#	  (l) a role that may not call schedule_in_database or alter_job
#	      cannot write a row naming another database; a job of a database
#	      of another encoding gets its command, and gives back its error,
#	      each in the right encoding; a run whose worker ignores its
#	      termination ends only when the worker has exited.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use SchedqTest;

my $node = schedq_node('cron_jobs', extension => 'postgres',
	conf => "schedq.sql_workers = 4\nmax_worker_processes = 16\n");
my $db = 'postgres';
$node->safe_psql($db, q{
	CREATE EXTENSION schedq_cron;
	CREATE ROLE jobber LOGIN;
	GRANT USAGE ON SCHEMA cron TO jobber;
	CREATE TABLE ticks (job text, who text, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT, SELECT ON ticks TO jobber;
	CREATE TABLE spans (job text, started timestamptz, ended timestamptz);
	GRANT INSERT ON spans TO jobber;
});

sub sql { return $node->safe_psql($db, $_[0]) }

# (a)
sql(q{SET ROLE jobber; SELECT cron.schedule('every second', '1 seconds',
	$$INSERT INTO ticks (job, who) VALUES ('sec', current_user)$$)});
my $sec = sql(q{SELECT jobid FROM cron.job WHERE jobname = 'every second'});
ok(defined poll_until($node, $db, q{SELECT count(*) >= 6 FROM ticks WHERE job = 'sec'}, 't', 30),
	'(a) the every-second job runs');
sql(qq{SELECT cron.alter_job($sec, active => false)});
is(sql(q{SELECT DISTINCT who FROM ticks WHERE job = 'sec'}), 'jobber', '(a) as its role');
my $ticks = sql(qq{SELECT count(*), count(DISTINCT run_at),
		extract(epoch FROM max(run_at) - min(run_at))::int + 1,
		bool_and(run_at = date_trunc('second', run_at))
	FROM schedq.task WHERE periodic = 'cron.job.$sec'});
my ($n, $distinct, $span, $whole) = split /\|/, $ticks;
ok($n >= 6, "(a) $n ticks");
is($distinct, $n, '(a) no tick twice');
is($span, $n, '(a) consecutive seconds, none missed');
is($whole, 't', '(a) on whole seconds');
ok(defined poll_until($node, $db,
	qq{SELECT bool_and(status = 'succeeded') AND bool_and(username = 'jobber')
		 FROM cron.job_run_details WHERE jobid = $sec}, 't', 10),
	'(a) job_run_details: succeeded, as the role');

# (b)
my $slow = sql(q{SET ROLE jobber; SELECT cron.schedule('slow', '1 seconds',
	$$INSERT INTO spans SELECT 'slow', clock_timestamp(), clock_timestamp() + interval '2.5 s' FROM pg_sleep(2.5)$$)});
ok(defined poll_until($node, $db, q{SELECT count(*) >= 3 FROM spans}, 't', 40),
	'(b) the slow job ran three times');
sql(qq{SELECT cron.run_job($slow)});
ok(defined poll_until($node, $db, q{SELECT count(*) >= 5 FROM spans}, 't', 40),
	'(b) and more, with a run now');
sql(qq{SELECT cron.alter_job($slow, active => false)});
ok(defined poll_until($node, $db,
	qq{SELECT count(*) = 0 FROM schedq.task WHERE lock_key = 'cron.job.$slow' AND status IN ('pending', 'available', 'running')}, 't', 20),
	'(b) its last run ends');
# the executor's own record: started_at and finished_at of each run
is(sql(qq{SELECT count(*) FROM schedq.task a JOIN schedq.task b
	ON a.lock_key = b.lock_key AND a.id < b.id
	AND a.started_at < b.finished_at AND b.started_at < a.finished_at
	WHERE a.lock_key = 'cron.job.$slow'}), '0', '(b) no two runs at once');
ok(sql(qq{SELECT skipped FROM schedq.periodic WHERE name = 'cron.job.$slow'}) > 0,
	'(b) overlapping ticks were skipped');

# (c)
my $bad = sql(q{SET ROLE jobber; SELECT cron.schedule('bad', '@yearly', 'SELECT 1/0')});
my $next = sql(qq{SELECT next_run FROM schedq.periodic WHERE name = 'cron.job.$bad'});
sql(qq{SET ROLE jobber; SELECT cron.run_job($bad)});
ok(defined poll_until($node, $db,
	qq{SELECT status || ' ' || return_message FROM cron.job_run_details WHERE jobid = $bad},
	sub { $_[0] =~ /^failed .*division by zero/ }, 30),
	'(c) failed, with the error');
is(sql(qq{SELECT failed, last_status FROM cron.job_health WHERE jobid = $bad}), 't|failed',
	'(c) job_health says failed');
sql(q{SET ROLE jobber; SELECT cron.schedule('bad2', '@yearly', 'SELECT 1/0')});
my $bad2 = sql(q{SELECT jobid FROM cron.job WHERE jobname = 'bad2'});
sql(qq{SELECT cron.set_job_options($bad2, max_attempts => 3)});
# a division by zero is for good at once (the executor's rule); an error
# the command raises itself is retried
sql(qq{SELECT cron.alter_job($bad2, command => \$c\$DO \$d\$BEGIN RAISE EXCEPTION 'try again'; END \$d\$\$c\$)});
sql(qq{SELECT cron.run_job($bad2)});
ok(defined poll_until($node, $db,
	qq{SELECT attempts, status FROM schedq.task WHERE lock_key = 'cron.job.$bad2'},
	sub { $_[0] eq '3|failed' }, 90),
	'(c) with max_attempts 3, three attempts');

# (d)
is(sql(qq{SELECT next_run FROM schedq.periodic WHERE name = 'cron.job.$bad'}), $next,
	'(d) run_job leaves the next tick');

# (e)
my $boot = sql(q{SET ROLE jobber; SELECT cron.schedule('boot', '@reboot',
	$$INSERT INTO ticks (job) VALUES ('boot')$$)});
is(stays($node, $db, q{SELECT count(*) FROM ticks WHERE job = 'boot'}, '0', 3), undef,
	'(e) @reboot does not run when scheduled');
$node->restart;
ok(defined poll_until($node, $db, q{SELECT count(*) FROM ticks WHERE job = 'boot'}, '1', 30),
	'(e) it runs after the restart');
is(stays($node, $db, q{SELECT count(*) FROM ticks WHERE job = 'boot'}, '1', 3), undef,
	'(e) once');
$node->restart;
ok(defined poll_until($node, $db, q{SELECT count(*) FROM ticks WHERE job = 'boot'}, '2', 30),
	'(e) and once more after the next');

# (f)
my $last = sql(q{SET ROLE jobber; SELECT cron.schedule('last', '0 11 $ * *', 'SELECT 1')});
is(sql(qq{SELECT extract(day FROM (next_run AT TIME ZONE 'GMT') + interval '1 day') = 1
		AND to_char(next_run AT TIME ZONE 'GMT', 'HH24:MI:SS') = '11:00:00'
		AND next_run > now() AND next_run < now() + interval '32 days'
	FROM schedq.periodic WHERE name = 'cron.job.$last'}), 't',
	'(f) $ is the last day of the month');

# (g)
my $kept = sql(q{SET ROLE jobber; SELECT cron.schedule('kept', '1 seconds',
	$$INSERT INTO ticks (job) VALUES ('kept')$$)});
sql(qq{SET ROLE jobber; SELECT cron.set_job_options($kept, keep_runs => 3)});
sql(q{CREATE SEQUENCE errs_seq; GRANT USAGE ON SEQUENCE errs_seq TO jobber});
my $errs = sql(q{SET ROLE jobber; SELECT cron.schedule('errs', '1 seconds',
	$$SELECT 1 / (nextval('errs_seq') % 2)::int$$)});
sql(qq{SET ROLE jobber; SELECT cron.set_job_options($errs, errors_only => true, max_attempts => 1)});
ok(defined poll_until($node, $db, q{SELECT count(*) >= 8 FROM ticks WHERE job = 'kept'}, 't', 30),
	'(g) the job keeping 3 runs ran 8 times');
ok(defined poll_until($node, $db, q{SELECT last_value >= 8 FROM errs_seq}, 't', 30),
	'(g) the errors-only job ran 8 times');
sql(qq{SELECT cron.alter_job($kept, active => false); SELECT cron.alter_job($errs, active => false)});
ok(sql(qq{SELECT count(*) FROM cron.job_run_details WHERE jobid = $kept}) <= 4,
	'(g) at most 4 runs of the job keeping 3');
my ($ok_runs, $failed_runs) = split /\|/, sql(qq{SELECT count(*) FILTER (WHERE status = 'succeeded'),
	count(*) FILTER (WHERE status = 'failed') FROM cron.job_run_details WHERE jobid = $errs});
ok($ok_runs <= 1, "(g) errors only: $ok_runs succeeded run shown");
ok($failed_runs >= 3, "(g) and its $failed_runs failures, every other run");
sql(q{CREATE ROLE nocron LOGIN});
my $other = sql(q{SELECT cron.schedule_in_database('other', '@daily', 'SELECT 1', current_database(), 'nocron')});
my ($rc, $o, $e) = $node->psql($db, qq{SELECT cron.set_job_options($other, keep_runs => 1)});
like($e, qr/has no USAGE on schema cron/, '(g) the option needs the job\'s user to have USAGE on schema cron');

# (i)
# (SET ... FROM CURRENT stores the value unquoted, as set_config took it)
my $evil = 'public;insert/**/into/**/public.ticks(job)values($$injected$$)';
sql(qq{SELECT set_config('search_path', '$evil', false); ALTER DATABASE postgres SET search_path FROM CURRENT});
my $cmd = q{INSERT INTO public.ticks (job, who) VALUES ('path', current_setting('search_path'))};
my $path = sql(qq{SET ROLE jobber; SELECT cron.schedule('path', '\@yearly', \$c\$$cmd\$c\$)});
sql(q{CREATE ROLE emptypath LOGIN; GRANT USAGE ON SCHEMA cron TO emptypath;
	GRANT INSERT ON public.ticks TO emptypath;
	ALTER ROLE emptypath IN DATABASE postgres SET search_path = ''});
my $empty = sql(q{SET ROLE emptypath; SELECT cron.schedule('empty', '@yearly',
	$$INSERT INTO public.ticks (job, who) VALUES ('empty', current_setting('search_path'))$$)});
sql(qq{SET ROLE jobber; SELECT cron.run_job($path); SET ROLE emptypath; SELECT cron.run_job($empty)});
ok(defined poll_until($node, $db,
	qq{SELECT string_agg(status, ' ' ORDER BY jobid) FROM cron.job_run_details WHERE jobid IN ($path, $empty)},
	'succeeded succeeded', 30),
	'(i) the jobs ran and succeeded');
sql(q{ALTER DATABASE postgres RESET search_path});
is(sql(q{SELECT count(*) FROM ticks WHERE job = 'injected'}), '0',
	'(i) the statement in the search_path did not run');
is(sql(q{SELECT who FROM ticks WHERE job = 'path'}), $evil,
	'(i) it was the search_path, a schema\'s name');
is(sql(q{SELECT who FROM ticks WHERE job = 'empty'}), '""', '(i) an empty search_path is one');
is(sql(qq{SELECT command FROM cron.job_run_details WHERE jobid = $path}), $cmd,
	'(i) job_run_details shows the job\'s command');
sql(qq{SELECT cron.unschedule($path); SELECT cron.unschedule($empty)});

# (j)
my $kept_runs = sql(qq{SELECT count(*) FROM cron.job_run_details WHERE jobid = $kept});
ok($kept_runs > 0, "(j) the job keeping runs has $kept_runs");
sql(qq{SELECT cron.set_job_options($kept, keep_runs => 0)});
my $pry = sql(qq{SET ROLE emptypath; SELECT cron.schedule('pry', '\@yearly', 'SELECT cron._prune($kept)')});
sql(qq{SET ROLE emptypath; SELECT cron.run_job($pry)});
ok(defined poll_until($node, $db,
	qq{SELECT status FROM cron.job_run_details WHERE jobid = $pry}, 'succeeded', 30),
	'(j) another role\'s job called cron._prune on it');
sql(qq{SET ROLE emptypath; SELECT cron._prune($kept)});
is(sql(qq{SELECT count(*) FROM cron.job_run_details WHERE jobid = $kept}), $kept_runs,
	'(j) its history is whole');
sql(qq{SELECT cron.unschedule($pry)});

# (h)
my $dump = PostgreSQL::Test::Utils::tempdir . '/cron.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr($db) ], '(h) pg_dump');
sql(q{CREATE DATABASE restored});
my $log_offset = -s $node->logfile;
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump ],
	'(h) pg_restore into another database, without an error');
like(slurp_file($node->logfile, $log_offset),
	qr/WARNING:  job \d+ names database "postgres": it runs in "restored", where it is/,
	'(h) a WARNING says where each job now runs (the server log keeps it)');
my $jobs_q = q{SELECT string_agg(format('%s %s %s %s %s', jobid, jobname, schedule, username, active), ', ' ORDER BY jobid) FROM cron.job};
my $sched_q = q{SELECT string_agg(format('%s %s %s %s %s', name, schedule, timezone, owner, enabled), ', ' ORDER BY name)
	FROM schedq.periodic WHERE name LIKE 'cron.job.%'};
is($node->safe_psql('restored', $jobs_q), sql($jobs_q), '(h) the jobs come back');
is($node->safe_psql('restored', $sched_q), sql($sched_q), '(h) their schedules too');
is($node->safe_psql('restored', q{SELECT count(*) FROM cron.job_options}),
	sql(q{SELECT count(*) FROM cron.job_options}), '(h) their options too');
is($node->safe_psql('restored', q{SELECT DISTINCT database FROM cron.job}), 'restored',
	'(h) in the new database');

# (k)
sql(q{CREATE DATABASE other});
$node->safe_psql('other', q{
	CREATE SCHEMA jobs;
	CREATE TABLE jobs.seen (n int, who text DEFAULT current_user,
		db text DEFAULT current_database(), app text DEFAULT current_setting('application_name'));
	GRANT USAGE ON SCHEMA jobs TO jobber;
	GRANT INSERT, SELECT ON jobs.seen TO jobber;
	ALTER ROLE jobber IN DATABASE other SET search_path = jobs;
});
my $far = sql(q{SELECT cron.schedule_in_database('far', '1 seconds',
	'INSERT INTO seen (n) SELECT generate_series(1, 3)', 'other', 'jobber')});
ok(defined poll_until($node, 'other', q{SELECT count(*) >= 6 FROM jobs.seen}, 't', 30),
	'(k) a job of another database runs there');
is($node->safe_psql('other', q{SELECT DISTINCT format('%s %s %s', who, db, app) FROM jobs.seen}),
	"jobber other schedq cron job $far",
	'(k) as its user, with that user\'s search_path there, in a worker named for the job');
is(sql(qq{SELECT DISTINCT format('%s|%s|%s|%s', database, command, status, return_message)
	FROM cron.job_run_details WHERE jobid = $far AND status <> 'running'}),
	'other|INSERT INTO seen (n) SELECT generate_series(1, 3)|succeeded|3 rows',
	'(k) job_run_details: its database, its command, the rows of its command');

sql(qq{SELECT cron.alter_job($far, schedule => '\@yearly', command => 'INSERT INTO nosuch VALUES (1)')});
sql(qq{SELECT cron.run_job($far)});
ok(defined poll_until($node, $db, qq{SELECT return_message FROM cron.job_run_details
	WHERE jobid = $far ORDER BY runid DESC LIMIT 1}, 'relation "nosuch" does not exist', 30),
	'(k) its error is the run\'s');

sql(qq{SELECT cron.alter_job($far, command => 'SELECT pg_sleep(60)');
	SELECT cron.set_job_options($far, timeout => '1 second')});
my $runs = sql(qq{SELECT count(*) FROM cron.job_run_details WHERE jobid = $far});
sql(qq{SELECT cron.run_job($far)});
ok(defined poll_until($node, $db, qq{SELECT count(*) > $runs AND bool_and(status <> 'running')
	FROM cron.job_run_details WHERE jobid = $far}, 't', 30),
	'(k) a run past its timeout ends');
is(sql(qq{SELECT return_message FROM cron.job_run_details WHERE jobid = $far ORDER BY runid DESC LIMIT 1}),
	'timeout', '(k) as a timeout');
is(sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq cron job'}), '0',
	'(k) its worker was gone before the run ended');

sql(qq{SELECT cron.set_job_options($far, timeout => '1 minute');
	SELECT cron.alter_job($far, command => 'SELECT 1');
	REVOKE CONNECT ON DATABASE other FROM PUBLIC});
sql(qq{SELECT cron.run_job($far)});
ok(defined poll_until($node, $db, qq{SELECT return_message FROM cron.job_run_details
	WHERE jobid = $far ORDER BY runid DESC LIMIT 1}, 'User jobber does not have CONNECT privilege on other', 30),
	'(k) a user that lost CONNECT on the database: its run fails, and says why');
sql(q{GRANT CONNECT ON DATABASE other TO PUBLIC});

# only a job's own run runs it elsewhere
my ($ret, $out, $err) = $node->psql($db, qq{SET ROLE jobber; SELECT cron._run_elsewhere($far)});
like($err, qr/runs only in a run of that job/, '(k) a session cannot run a job elsewhere');
($ret, $out, $err) = $node->psql($db, q{SET ROLE jobber; SELECT cron._run_in_database('other', 'jobber', 'SELECT 1', 1)});
like($err, qr/permission denied for function _run_in_database/, '(k) nor run a command there');
my $pry2 = sql(qq{SET ROLE emptypath; SELECT cron.schedule('pry2', '\@yearly', 'SELECT cron._run_elsewhere($far)')});
sql(qq{SET ROLE emptypath; SELECT cron.run_job($pry2)});
ok(defined poll_until($node, $db, qq{SELECT return_message FROM cron.job_run_details WHERE jobid = $pry2},
	"cron._run_elsewhere($far) runs only in a run of that job", 30),
	'(k) nor another role\'s job');
sql(qq{SELECT cron.unschedule($far); SELECT cron.unschedule($pry2)});

# (l)
# a row naming another database, written directly by a role with USAGE on
# schema cron and CONNECT there (PUBLIC's), but neither
# schedule_in_database nor alter_job: refused, nothing written
($ret, $out, $err) = $node->psql($db, q{SET ROLE jobber;
	INSERT INTO cron.job (schedule, command, database) VALUES ('@yearly', 'SELECT 1', 'other')});
like($err, qr/permission denied to place job \d+ in database "other"/,
	'(l) USAGE on schema cron does not place a job in another database');
my $mine = sql(q{SET ROLE jobber; SELECT cron.schedule('mine', '@yearly', 'SELECT 1')});
($ret, $out, $err) = $node->psql($db, qq{SET ROLE jobber;
	UPDATE cron.job SET database = 'other' WHERE jobid = $mine});
like($err, qr/permission denied to place job $mine in database "other"/,
	'(l) nor moves one there');
is(sql(q{SELECT count(*) FROM cron.job WHERE database <> current_database()}), '0',
	'(l) nothing written');
sql(qq{GRANT EXECUTE ON FUNCTION cron.schedule_in_database TO jobber;
	SET ROLE jobber; UPDATE cron.job SET database = 'other' WHERE jobid = $mine;
	RESET ROLE; REVOKE EXECUTE ON FUNCTION cron.schedule_in_database FROM jobber});
is(sql(qq{SELECT database FROM cron.job WHERE jobid = $mine}), 'other',
	'(l) a role granted schedule_in_database does');
sql(qq{SELECT cron.unschedule($mine)});

# a database of another encoding: the command arrives in its encoding, the
# error comes back in this one's
sql(q{CREATE DATABASE lat TEMPLATE template0 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C'});
$node->safe_psql('lat', q{CREATE TABLE seen (t text); GRANT INSERT ON seen TO jobber});
my $enc = sql(q{SELECT cron.schedule_in_database('enc', '@yearly',
	$c$INSERT INTO public.seen VALUES ('café'); DO $d$BEGIN RAISE 'bad %', chr(233); END$d$$c$,
	'lat', 'jobber')});
sql(qq{SELECT cron.run_job($enc)});
ok(defined poll_until($node, $db, qq{SELECT count(*) FROM cron.job_run_details
	WHERE jobid = $enc AND status <> 'running'}, '1', 30), '(l) a job of a LATIN1 database ran');
is(sql(qq{SELECT convert_from(convert_to(return_message, 'UTF8'), 'UTF8')
	FROM cron.job_run_details WHERE jobid = $enc}), 'bad é',
	'(l) its error, in this database\'s encoding');
sql(qq{SELECT cron.alter_job($enc, command => \$c\$INSERT INTO public.seen VALUES ('café')\$c\$)});
sql(qq{SELECT cron.run_job($enc)});
ok(defined poll_until($node, 'lat', q{SELECT count(*) FROM seen}, '1', 30), '(l) its command ran');
is($node->safe_psql('lat', q{SELECT convert_to(t, 'LATIN1') FROM seen}), '\x636166e9',
	'(l) in that database\'s encoding');
sql(qq{SELECT cron.unschedule($enc)});

# its worker terminated (DROP DATABASE ... WITH (FORCE), say): the run
# says so, not that it could not connect
my $cut = sql(q{SELECT cron.schedule_in_database('cut', '@yearly', 'SELECT pg_sleep(60)', 'lat', 'jobber')});
sql(qq{SELECT cron.run_job($cut)});
ok(defined poll_until($node, $db, q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedq cron job' AND query = 'SELECT pg_sleep(60)'}, '1', 30), '(l) a worker runs');
sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'schedq cron job'});
ok(defined poll_until($node, $db, qq{SELECT return_message FROM cron.job_run_details WHERE jobid = $cut},
	"job $cut did not finish: its background worker exited before its command ended", 30),
	'(l) its run says the worker exited');
sql(qq{SELECT cron.unschedule($cut)});

# a worker that does not heed its termination (blocked reading a FIFO): the
# run past its timeout waits for it to exit, however long, and the next
# run starts only then (never twice at once)
my $fifo = $node->basedir . '/fifo';
POSIX::mkfifo($fifo, 0600) or die "mkfifo $fifo: $!";
my $stuck = sql(qq{SELECT cron.schedule_in_database('stuck', '\@yearly',
	\$c\$SELECT pg_read_file('$fifo')\$c\$, 'other')});
my $log = -s $node->logfile;
sql(qq{SELECT cron.set_job_options($stuck, timeout => '1 second'); SELECT cron.run_job($stuck)});
ok(defined poll_until($node, $db, q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedq cron job'}, '1', 30), '(l) a worker blocked in a read');
$node->wait_for_log(qr/has not exited 1\d{4} ms after it was terminated/, $log);
is(stays($node, $db, qq{SELECT string_agg(status, ',') FROM cron.job_run_details WHERE jobid = $stuck},
	'running', 3), undef, '(l) its run waits for it, past 10 s');
sql(qq{SELECT cron.run_job($stuck)});
is(sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq cron job'}), '1',
	'(l) and no second run starts beside it');
open(my $fh, '>', $fifo) or die "open $fifo: $!";
close($fh);
ok(defined poll_until($node, $db, qq{SELECT string_agg(status || ' ' || return_message, ',')
	FROM cron.job_run_details WHERE jobid = $stuck}, 'failed timeout', 30),
	'(l) once it has exited, the run ends, as a timeout');
is(sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq cron job'}), '0',
	'(l) its worker gone');
sql(qq{SELECT cron.unschedule($stuck)});

$node->stop;
done_testing();
