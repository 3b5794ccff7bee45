#-------------------------------------------------------------------------
# test/t/029_cron_import.pl
#	  Moving from a live pg_cron to schedq_cron, as docs/pg_cron.md says,
#	  against the real pg_cron (its files installed next to this server's;
#	  skipped with the reason when they are not):
#
#	  - pg_cron keeps its jobs in database pgcron (cron.database_name) and
#	    runs them in database app; schedq and schedq_cron are installed in
#	    app (both own a schema cron: they cannot share a database);
#	  - pg_cron runs an every-minute job at least once; then, well inside
#	    a minute, the cut-over: copy pg_cron's cron.job into app (dblink),
#	    deactivate pg_cron's jobs of app, note the moment, import with
#	    start_after => that moment;
#	  - every job of app is imported with its id, name, schedule, command,
#	    user and active flag; the job of another database is left out, with
#	    a NOTICE;
#	  - across the next minute boundary: the every-minute job's minute
#	    before the cut-over ran once (pg_cron), the minute after once
#	    (schedq_cron, its tick), none twice; the every-second job's ticks
#	    run from the second after the cut-over, consecutive, across the
#	    boundary, none twice or missed;
#	  - the reverse export: the statements docs/pg_cron.md makes from
#	    cron.job give pg_cron the same jobs again.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time);

my $probe = PostgreSQL::Test::Cluster->new('cron_probe');
my $libdir = $probe->config_data('--pkglibdir');
my $sharedir = $probe->config_data('--sharedir');
plan skip_all => "pg_cron is not installed for this server ($libdir/pg_cron.so, "
  . "$sharedir/extension/pg_cron.control; Debian: postgresql-15-cron)"
  unless -e "$libdir/pg_cron.so" && -e "$sharedir/extension/pg_cron.control";
plan skip_all => "dblink is not installed for this server ($libdir/dblink.so)"
  unless -e "$libdir/dblink.so";

my $node = schedq_node('cron_import', conf => qq{
shared_preload_libraries = 'schedq,pg_cron'
cron.database_name = 'pgcron'
cron.use_background_workers = on
max_worker_processes = 40
});

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q) }

sql('postgres', 'CREATE DATABASE pgcron');
sql('postgres', 'CREATE DATABASE app');
sql('app', q{
	CREATE ROLE appuser LOGIN;
	CREATE TABLE ticks (job text, minute timestamptz, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT, SELECT ON ticks TO appuser;
	CREATE EXTENSION schedq;
});
sql('pgcron', 'CREATE EXTENSION pg_cron');
my $pgcron_version = sql('pgcron', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'});
note "pg_cron $pgcron_version";

# pg_cron's jobs: an every-minute job in app, an inactive one, one of
# database pgcron itself; an every-second job (pg_cron 1.5's form; older
# pg_cron keeps it in cron.job but does not run it).
sql('pgcron', q{
	SELECT cron.schedule_in_database('minute', '* * * * *',
		$$INSERT INTO ticks (job, minute) VALUES ('minute', date_trunc('minute', now()))$$,
		'app', 'appuser');
	SELECT cron.schedule_in_database('paused', '0 3 * * *', 'SELECT 1', 'app', 'appuser', false);
	SELECT cron.schedule('0 4 * * *', 'SELECT 2');
	INSERT INTO cron.job (schedule, command, nodename, nodeport, database, username, jobname)
	VALUES ('1 seconds', $$INSERT INTO ticks (job) VALUES ('second')$$, 'localhost', 5432,
			'app', 'appuser', 'second');
});

ok(defined poll_until($node, 'app', q{SELECT count(*) > 0 FROM ticks WHERE job = 'minute'}, 't', 80),
	'pg_cron runs the every-minute job in app');

# Well inside a minute: the cut-over has at least 15 s before the next tick.
ok(defined poll_until($node, 'app',
	q{SELECT extract(second FROM clock_timestamp()) BETWEEN 3 AND 40}, 't', 60),
	'inside a minute');

# The cut-over of docs/pg_cron.md.
my $conn = 'host=' . $node->host . ' port=' . $node->port . ' dbname=pgcron';
sql('app', qq{
	CREATE EXTENSION schedq_cron;
	CREATE EXTENSION dblink;
	CREATE TABLE pg_cron_job AS
	SELECT * FROM dblink('$conn',
		'SELECT jobid, schedule, command, nodename, nodeport, database, username, active, jobname FROM cron.job')
	  AS j(jobid bigint, schedule text, command text, nodename text, nodeport integer,
		   database text, username text, active boolean, jobname text);
});
my $cutover = sql('pgcron', q{UPDATE cron.job SET active = false WHERE database = 'app';
	SELECT clock_timestamp()});
my ($ret, $out, $err) = $node->psql('app',
	"SELECT cron.import_pg_cron('pg_cron_job', start_after => '$cutover')");
is($out, '3', 'the three jobs of app are imported');
like($err, qr/1 jobs of other databases were left out/, 'the other database\'s is left out');
my $minute = sql('app', qq{SELECT date_trunc('minute', '$cutover'::timestamptz)});
my $next_minute = sql('app', qq{SELECT date_trunc('minute', '$cutover'::timestamptz) + interval '1 minute'});

is(sql('app', q{SELECT string_agg(format('%s|%s|%s|%s|%s', j.jobname, j.schedule, j.username, j.active,
		j.command = p.command), ' ' ORDER BY j.jobid)
	FROM cron.job j JOIN pg_cron_job p USING (jobid)}),
	'minute|* * * * *|appuser|t|t paused|0 3 * * *|appuser|f|t second|1 seconds|appuser|t|t',
	'ids, names, schedules, users, active flags and commands are pg_cron\'s');

# Across the minute boundary.
ok(defined poll_until($node, 'app',
	qq{SELECT count(*) > 0 FROM ticks WHERE job = 'minute' AND minute = '$next_minute'}, 't', 75),
	'the minute after the cut-over runs');
ok(defined poll_until($node, 'app',
	qq{SELECT count(*) >= 3 FROM schedq.task t JOIN cron.job j ON t.periodic = 'cron.job.' || j.jobid
	   WHERE j.jobname = 'second' AND t.run_at > '$next_minute' AND t.status = 'done'}, 't', 20),
	'the every-second job runs past the boundary');
is(stays($node, 'app', qq{SELECT count(*) FROM ticks WHERE job = 'minute' AND minute = '$next_minute'}, '1', 3),
	undef, 'that minute once, not twice');
is(sql('app', qq{SELECT count(*) FROM ticks WHERE job = 'minute' AND minute = '$minute'}), '1',
	'the minute of the cut-over ran once (pg_cron)');
is(sql('app', qq{SELECT t.run_at = '$next_minute' AND t.status = 'done' FROM schedq.task t
	JOIN cron.job j ON t.periodic = 'cron.job.' || j.jobid WHERE j.jobname = 'minute'}), 't',
	'the minute after ran by schedq_cron, at its tick');
my ($n, $distinct, $span, $first) = split /\|/, sql('app', qq{
	SELECT count(*), count(DISTINCT t.run_at), extract(epoch FROM max(t.run_at) - min(t.run_at))::int + 1,
		   min(t.run_at) = date_trunc('second', '$cutover'::timestamptz) + interval '1 s'
	  FROM schedq.task t JOIN cron.job j ON t.periodic = 'cron.job.' || j.jobid
	 WHERE j.jobname = 'second'});
is($first, 't', 'the every-second job\'s first tick is the second after the cut-over');
is($distinct, $n, "its $n ticks, none twice");
is($span, $n, 'consecutive, none missed, across the boundary');
is(sql('app', qq{SELECT count(*) FROM ticks WHERE job = 'second'}),
	sql('app', qq{SELECT count(*) FROM schedq.task t JOIN cron.job j ON t.periodic = 'cron.job.' || j.jobid
		WHERE j.jobname = 'second' AND t.status = 'done'}),
	'one run of the command per tick');

# The reverse export (docs/pg_cron.md): statements for pg_cron.
sql('app', q{UPDATE cron.job SET active = false});
my $export = sql('app', q{
	SELECT format('SELECT cron.schedule_in_database(%L, %L, %L, %L, %L, %L);',
				  coalesce(jobname, 'job ' || jobid), schedule, command, database, username, active)
	  FROM cron.job WHERE schedule !~* 'second' ORDER BY jobid});
sql('pgcron', q{DELETE FROM cron.job WHERE database = 'app'});
sql('pgcron', $export);
is(sql('pgcron', q{SELECT string_agg(format('%s|%s|%s|%s', jobname, schedule, username, active), ' ' ORDER BY jobid)
	FROM cron.job WHERE database = 'app'}),
	'minute|* * * * *|appuser|f paused|0 3 * * *|appuser|f',
	'pg_cron takes the exported jobs back');

$node->stop;
done_testing();
