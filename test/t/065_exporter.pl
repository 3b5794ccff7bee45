#-------------------------------------------------------------------------
# test/t/065_exporter.pl
#	  The monitoring of docs/operations.md#monitoring, end to end: the real
#	  prometheus-postgres-exporter, with its default collectors, run with
#	  exactly the DATA_SOURCE_NAME and ARGS of the page's ini block (its
#	  server, port, queries file and list of databases put in; a free port
#	  to listen on), the queries of monitoring/postgres_exporter/queries.yaml
#	  and the least-privilege role the page grants, is read over HTTP until
#	  its figures are the ones submitted; the cluster also has databases
#	  without schedq (postgres, plain):
#	  (a) every scrape answers HTTP 200, with no "collected before" error
#	      and no failed query; the exporter's own collectors report once;
#	      queue depths, failures, oldest available age and the scheduler of
#	      each database with schedq (the grants suffice), and the
#	      monitoring role still cannot read a payload;
#	  (b) metrics() counters are per database: completions in one database
#	      move its counter and not another's;
#	  (c) monitoring/grafana/schedq.json parses, has the datasource,
#	      database and queue variables, and every schedq_* name its panels
#	      use is a series this exporter exposed.
#	  Skipped when the exporter is not installed (.ci/run installs it).
#	  The exporter is stopped at the end, also when the test dies.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time usleep);

my $top = $ENV{SCHEDQ_SRCDIR} // '.';
my $exporter_bin = $ENV{SCHEDQ_POSTGRES_EXPORTER};
if (!defined $exporter_bin)
{
	for my $dir ((split /:/, $ENV{PATH} // ''), '/usr/bin', '/usr/sbin')
	{
		if (-x "$dir/prometheus-postgres-exporter")
		{
			$exporter_bin = "$dir/prometheus-postgres-exporter";
			last;
		}
	}
}
plan skip_all =>
  'prometheus-postgres-exporter is not installed (apt-get install prometheus-postgres-exporter; .ci/run does)'
  unless defined $exporter_bin && -x $exporter_bin;

my $queries = "$top/monitoring/postgres_exporter/queries.yaml";
my $dashboard = "$top/monitoring/grafana/schedq.json";

ok(-r $queries, 'the queries file is in the tree') or BAIL_OUT("no $queries");

my $node = schedq_node('exporter', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.sql_workers = 2
});

# The monitoring role: the grants of docs/operations.md#monitoring, in
# each database.
my ($grants) = slurp_file("$top/docs/operations.md") =~
  /```sql\nCREATE ROLE schedq_monitor LOGIN;\n(GRANT USAGE ON SCHEMA schedq TO schedq_monitor;.*?)```/s;
ok(defined $grants, 'docs/operations.md has the monitoring role\'s grants')
  or BAIL_OUT('no grants block');
$node->safe_psql('postgres', 'CREATE ROLE schedq_monitor LOGIN');
for my $db (qw(app1 app2 plain))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
}
$node->safe_psql('app1', "CREATE EXTENSION schedq; $grants");
$node->safe_psql('app2', "CREATE EXTENSION schedq; $grants");

# app1: 3 available in mail, 2 completed in reports, 1 failed in bad, a
# paused queue; app2: 5 available in mail.
$node->safe_psql(
	'app1', q{
SELECT schedq.submit('{}', queue => 'mail') FROM generate_series(1, 3);
SELECT schedq.submit('{"secret": 1}', queue => 'reports') FROM generate_series(1, 2);
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{reports}', n => 2);
SELECT schedq.submit('{}', queue => 'bad', max_attempts => 1);
SELECT schedq.fail(token, 'broken') FROM schedq.claim('w', queues => '{bad}');
SELECT schedq.pause_queue('held');
});
$node->safe_psql('app2',
	q{SELECT schedq.submit('{}', queue => 'mail') FROM generate_series(1, 5)});
is( $node->safe_psql(
		'app1',
		"SELECT string_agg(queue || ':' || available || '/' || done || '/' || failed, ',' ORDER BY queue)"
		  . " FROM schedq.queue_stats"),
	'bad:0/0/1,held:0/0/0,mail:3/0/0,reports:0/2/0',
	'app1 holds the tasks the test submitted');

#
# The exporter, as docs/operations.md sets it up: the DATA_SOURCE_NAME and
# ARGS of its ini block, with this server's socket and port, the queries
# file of the tree and this cluster's databases with schedq put in, and a
# free port to listen on.
#
my ($ini) = slurp_file("$top/docs/operations.md") =~ /```ini\n(DATA_SOURCE_NAME=.*?)```/s;
ok(defined $ini, 'docs/operations.md has the exporter\'s ini block') or BAIL_OUT('no ini block');
my ($doc_dsn) = $ini =~ /^DATA_SOURCE_NAME='([^']*)'$/m;
my ($doc_args) = $ini =~ /^ARGS='([^']*)'$/m;
like($doc_dsn, qr{^postgresql://schedq_monitor\@:5432/app1\?host=/run/postgresql&sslmode=disable$},
	'the documented DSN names one database with schedq, app1');
is( $doc_args,
	'--auto-discover-databases --include-databases=app1,app2 '
	  . '--extend.query-path=/etc/prometheus/schedq-queries.yaml',
	'the documented ARGS discover the databases, keep those with schedq, add the queries');
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $host = $node->host;
my $pgport = $node->port;
(my $dsn = $doc_dsn // '') =~ s{:5432/}{:$pgport/};
$dsn =~ s{host=/run/postgresql}{host=$host};
my @args = split ' ', ($doc_args // '');
s{^--extend\.query-path=/etc/prometheus/schedq-queries\.yaml$}{--extend.query-path=$queries}
  for @args;
# From PostgreSQL 17, as the page says, without the bgwriter collector.
my $major = $node->safe_psql('postgres', 'SHOW server_version_num') / 10000;
my ($no_bgwriter) = slurp_file("$top/docs/operations.md") =~ /PostgreSQL 17 and later, add `(--no-collector\.bgwriter)`/;
is($no_bgwriter, '--no-collector.bgwriter', 'the page says what to add from PostgreSQL 17 on');
push @args, $no_bgwriter if $major >= 17;
my $log = "${PostgreSQL::Test::Utils::log_path}/exporter.log";
my $exporter;
{
	local $ENV{DATA_SOURCE_NAME} = $dsn;
	$exporter = IPC::Run::start(
		[ $exporter_bin, "--web.listen-address=127.0.0.1:$port", @args ],
		'<', \undef, '>', $log, '2>&1');
}
my $exporter_pid = $exporter->{KIDS}[0]{PID};

sub stop_exporter
{
	return unless $exporter;
	eval { $exporter->kill_kill(grace => 5); };    # TERM, then KILL; reaps it
	undef $exporter;
}

END
{
	local $?;
	stop_exporter();
}
$SIG{INT} = $SIG{TERM} = sub { stop_exporter(); die "killed\n"; };

my $http = HTTP::Tiny->new(timeout => 10);

# Every answer of the exporter: its HTTP status, and the "collected
# before" errors of the body (duplicate series fail a whole scrape).
my (@statuses, $collected_before);
$collected_before = 0;

# One scrape: { series text => value } and the set of metric names.
sub scrape
{
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	return undef if $res->{status} == 599;    # not listening yet
	push @statuses, $res->{status};
	my @dup = ($res->{content} // '') =~ /was collected before/g;
	$collected_before += @dup;
	diag 'HTTP ' . $res->{status} . ': ' . substr($res->{content} // '', 0, 600)
	  unless $res->{success};
	return undef unless $res->{success};
	my (%series, %names);
	for my $line (split /\n/, $res->{content})
	{
		next if $line =~ /^#/ || $line !~ /\S/;
		my ($name, $labels, $value) =
		  $line =~ /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/
		  or next;
		my %l = ($labels // '') =~ /(\w+)="((?:[^"\\]|\\.)*)"/g;
		delete $l{server};
		my $key = $name . '{'
		  . join(',', map { "$_=$l{$_}" } sort keys %l) . '}';
		$series{$key} = $value;
		$names{$name} = 1;
	}
	return { series => \%series, names => \%names };
}

# The value of one series (labels as "k=v,k=v" sorted), or undef.
sub value
{
	my ($scrape, $name, $labels) = @_;
	return $scrape->{series}{"$name\{$labels}"};
}

# The last $n lines of $text.
sub tail_lines
{
	my ($text, $n) = @_;
	my @lines = split /\n/, $text;
	splice(@lines, 0, @lines - $n) if @lines > $n;
	return join("\n", @lines);
}

# Scrape until $cond->($scrape) holds or $timeout seconds pass; returns the
# last scrape (undef if the exporter never answered).
sub scrape_until
{
	my ($cond, $timeout, $what) = @_;
	my $start = time;
	my $s;
	for (;;)
	{
		$s = scrape();
		return $s if $s && $cond->($s);
		last if time - $start > $timeout;
		usleep(200_000);
	}
	diag "after ${timeout}s, not yet: $what\n"
	  . ($s ? join("\n", map { "$_ $s->{series}{$_}" } sort grep { /^(schedq|pg_)/ } keys %{ $s->{series} })
		: 'no answer from the exporter')
	  . "\nexporter log:\n"
	  . (-e $log ? tail_lines(slurp_file($log), 20) : '');
	return $s;
}

#
# (a) Depths, failures, age, scheduler; no scrape error.
#
my $s = scrape_until(
	sub {
		my $s = shift;
		defined value($s, 'schedq_queue_available', 'datname=app2,queue=mail')
		  && defined value($s, 'schedq_scheduler_running', 'datname=app1')
		  && value($s, 'schedq_scheduler_running', 'datname=app1') == 1
		  && value($s, 'schedq_scheduler_running', 'datname=app2') == 1;
	},
	60,
	'schedq series of app1 and app2 with their schedulers running');
ok($s, 'the exporter answers on its port') or BAIL_OUT('no exporter');
is(value($s, 'pg_up', ''), 1, 'pg_up is 1');
is(value($s, 'pg_exporter_last_scrape_error', ''),
	0, 'no query of the queries file failed in any database (the grants suffice)');
is( scalar(grep { /^pg_exporter_user_queries_load_error\{.*\}$/ && $s->{series}{$_} == 0 } keys %{ $s->{series} }),
	1, 'the queries file loaded without error');
is(value($s, 'schedq_queue_available', 'datname=app1,queue=mail'),
	3, 'app1 mail: 3 available, as submitted');
is(value($s, 'schedq_queue_available', 'datname=app2,queue=mail'),
	5, 'app2 mail: 5 available, its own figure');
is(value($s, 'schedq_queue_done', 'datname=app1,queue=reports'),
	2, 'app1 reports: 2 done');
is(value($s, 'schedq_queue_failed', 'datname=app1,queue=bad'),
	1, 'app1 bad: 1 failed');
is(value($s, 'schedq_queue_paused', 'datname=app1,queue=held'),
	1, 'app1 held: paused');
is(value($s, 'schedq_queue_paused', 'datname=app1,queue=mail'),
	0, 'app1 mail: not paused');
is(value($s, 'schedq_tasks_completed_total', 'datname=app1'),
	2, 'app1 completion counter: 2');
is(value($s, 'schedq_tasks_failed_total', 'datname=app1'),
	1, 'app1 failure counter: 1');
is(value($s, 'schedq_tasks_submitted_total', 'datname=app1'),
	6, 'app1 submission counter: 6');
is(value($s, 'schedq_tasks_submitted_total', 'datname=app2'),
	5, 'app2 submission counter: 5');
is(value($s, 'schedq_tasks_completed_total', 'datname=app2'),
	0, 'app2 completion counter: 0');
my $age_after = $node->safe_psql('app1',
	"SELECT EXTRACT(epoch FROM now() - min(run_at)) FROM schedq.task WHERE queue = 'mail' AND status = 'available'"
);
my $age = value($s, 'schedq_queue_oldest_available_age_seconds',
	'datname=app1,queue=mail');
ok( defined $age && $age > 0 && $age <= $age_after,
	"app1 mail: oldest available age $age s, within (0, $age_after]");
is(value($s, 'schedq_queue_oldest_available_age_seconds', 'datname=app1,queue=reports'),
	0, 'app1 reports: no available task, age 0');
is(value($s, 'schedq_scheduler_sql_workers_wanted', 'datname=app1'),
	0, 'app1: no SQL executor wanted (no SQL task)');
is(scalar(grep { /^schedq_\w+\{.*datname=(postgres|plain)\b/ } keys %{ $s->{series} }),
	0, 'no schedq series for the databases without schedq');

# The exporter's own collectors, once: the server's settings, its
# databases, the background writer.
is(value($s, 'pg_settings_max_worker_processes', ''),
	32, "the exporter's default collectors report the server's settings");
ok(defined value($s, 'pg_database_size_bytes', 'datname=plain'),
	'... the size of every database, those without schedq too');
ok(defined value($s, 'pg_stat_database_xact_commit', 'datid=' . $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = 'app2'") . ',datname=app2'),
	'... pg_stat_database of each database');
if ($major < 17)
{
	ok(defined value($s, 'pg_stat_bgwriter_buffers_alloc_total', ''),
		'... and the background writer');
}
else
{
	ok(!defined value($s, 'pg_stat_bgwriter_buffers_alloc_total', ''),
		'... and not the background writer, from PostgreSQL 17');
}

# Several scrapes in a row: each one whole.
for (1 .. 5)
{
	ok(scrape(), "scrape $_ more: HTTP 200");
}
is_deeply([ grep { $_ != 200 } @statuses ], [], 'every scrape answered HTTP 200');
is($collected_before, 0, 'no scrape reported a series "collected before"');
is(join("\n", grep { /level=error/ } split /\n/, slurp_file($log)),
	'', 'the exporter logged no error');
my $states = 0;
$states += value($s, 'schedq_scheduler_state_current', "datname=app1,state=$_") // 0
  for ('stopped', 'starting', 'idle', 'promoting', 'reaping', 'disabled', 'read-only',
	'no worker slot');
is($states, 1, 'app1: the scheduler is in exactly one state');
ok(defined value($s, 'schedq_scheduler_lag_seconds', 'datname=app1'),
	'app1: scheduler lag exposed');

# Every counter of metrics() has its series.
my @counters = split /\n/,
  $node->safe_psql('app1',
	"SELECT name FROM schedq.metrics() WHERE name <> 'scheduler_lag_ms' ORDER BY name");
is_deeply(
	[
		grep {
			/^direct_declined_(\w+)$/ ?
			  !defined value($s, 'schedq_direct_declined_total', "datname=app1,reason=$1") :
			  !defined value($s, "schedq_${_}_total", 'datname=app1')
		} @counters
	],
	[],
	'every counter of metrics() is exposed as schedq_<name>_total '
	  . '(direct_declined_<reason> as schedq_direct_declined_total{reason})');

my ($ret, $out, $err) = $node->psql('app1', 'SELECT payload FROM schedq.task',
	extra_params => [ '-U', 'schedq_monitor' ]);
like($err, qr/permission denied/, 'the monitoring role cannot read a payload');
($ret, $out, $err) = $node->psql('app1', "SELECT schedq.submit('{}')",
	extra_params => [ '-U', 'schedq_monitor' ]);
like($err, qr/permission denied/, 'the monitoring role cannot submit');

#
# (b) Completions in app2 move app2's counter, not app1's.
#
$node->safe_psql('app2',
	q{SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{mail}', n => 4)});
$s = scrape_until(
	sub {
		my $v = value(shift, 'schedq_tasks_completed_total', 'datname=app2');
		defined $v && $v == 4;
	},
	30,
	'app2 completion counter 4');
is(value($s, 'schedq_tasks_completed_total', 'datname=app2'),
	4, 'app2 completion counter: 4 after 4 completions there');
is(value($s, 'schedq_tasks_completed_total', 'datname=app1'),
	2, 'app1 completion counter did not move');
is(value($s, 'schedq_queue_available', 'datname=app2,queue=mail'),
	1, 'app2 mail: 1 available left');
is(value($s, 'schedq_queue_available', 'datname=app1,queue=mail'),
	3, 'app1 mail: still 3 available');
is($node->safe_psql('app1', "SELECT value FROM schedq.metrics() WHERE name = 'tasks_completed'"),
	'2', 'metrics() in app1: 2 completions');

#
# (c) The dashboard: valid JSON, its variables, and only exposed names.
#
my %exposed = %{ $s->{names} };
my $json = eval { decode_json(slurp_file($dashboard)) };
ok($json, 'the dashboard is valid JSON') or diag $@;
$json //= {};
cmp_ok($json->{schemaVersion} // 0, '>=', 36, 'schemaVersion 36 or later');
my %vars = map { $_->{name} => $_ } @{ $json->{templating}{list} // [] };
is($vars{datasource}{type} // '', 'datasource', 'a datasource variable');
is($vars{datasource}{query} // '', 'prometheus', '... of Prometheus');
ok($vars{datname} && $vars{datname}{type} eq 'query', 'a database variable');
ok($vars{queue} && $vars{queue}{type} eq 'query', 'a queue variable');

my (@panels, @queue);
@queue = @{ $json->{panels} // [] };
while (my $p = shift @queue)
{
	push @queue, @{ $p->{panels} } if $p->{panels};
	push @panels, $p if $p->{targets};
}
my %used;
for my $expr ((map { $_->{expr} // '' } map { @{ $_->{targets} } } @panels),
	(map { ref $_->{query} ? $_->{query}{query} // '' : $_->{query} // '' } values %vars))
{
	$used{$1} = 1 while $expr =~ /\b(schedq_\w+)/g;
}
for my $title ('Throughput', 'Queue depth', 'Oldest available', 'Scheduler lag',
	'Executor', 'Failures', 'set aside')
{
	ok((grep { ($_->{title} // '') =~ /\Q$title\E/i } @panels),
		"a panel on $title");
}
cmp_ok(scalar(keys %used), '>=', 8, 'the panels use schedq metrics');
is_deeply([ grep { !$exposed{$_} } sort keys %used ],
	[], 'every schedq_* name the dashboard uses is exposed by the exporter');
is_deeply(
	[
		map { $_->{title} }
		  grep { !grep { ($_->{datasource}{uid} // '') eq '${datasource}' } $_ }
		  @panels
	],
	[],
	'every panel queries the datasource variable');

stop_exporter();
ok(!kill(0, $exporter_pid), "the exporter (pid $exporter_pid) is stopped");
$node->stop;
done_testing();
