#-------------------------------------------------------------------------
# test/t/025_metrics_slots.pl
#	  metrics() counts per database in one of 64 shared-memory slots; the
#	  slot of a dropped database must come free, whatever the launcher saw
#	  of that database.  Databases are made from a template that has
#	  schedq, used as a template, counted in (a submit), then made an
#	  ordinary database that takes no connections and dropped: the
#	  launcher, which watches only connectable non-template databases,
#	  never had them in its scan.  More of them than there are slots are
#	  made and dropped one after the other, and:
#	  (a) each of them still has counters of its own (its submit shows in
#	      its metrics());
#	  (b) a database made afterwards has counters of its own;
#	  (c) a database that lives through it all keeps its counters;
#	  (d) the gauge scheduler_lag_ms is per database too: each database's
#	      metrics() shows the lag of its own last promotion.
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

# More than SCHEDQ_MAX_DATABASES (64).
my $rounds = 70;

my $node = schedq_node('metrics_slots', conf => q{
max_worker_processes = 16
schedq.sql_workers = 0
});

my $submitted =
  "SELECT value FROM schedq.metrics() WHERE name = 'tasks_submitted'";

# The template: schedq installed, never connectable and non-template at
# once, so the launcher never scans it.
$node->safe_psql('postgres', 'CREATE DATABASE tpl IS_TEMPLATE true');
$node->safe_psql('tpl', 'CREATE EXTENSION schedq');

# (c) A database that stays: 3 submits.
$node->safe_psql('postgres',
	'CREATE DATABASE keep TEMPLATE tpl STRATEGY FILE_COPY');
$node->safe_psql('keep',
	"SELECT schedq.submit('k') FROM generate_series(1, 3)");
is($node->safe_psql('keep', $submitted), '3', '(c) keep counts its submits');

# (a) Made, counted in, dropped, more times than there are slots.
my @missed;
for my $i (1 .. $rounds)
{
	$node->safe_psql('postgres',
		"CREATE DATABASE gone_$i TEMPLATE tpl IS_TEMPLATE true STRATEGY FILE_COPY"
	);
	my $count = $node->safe_psql("gone_$i",
		"SELECT count(*) FROM schedq.submit_many('[{\"kind\": \"k\"}]');\n"
		  . $submitted);
	push @missed, "gone_$i: " . join(' ', split /\n/, $count)
	  unless $count eq "1\n1";
	$node->safe_psql('postgres',
		"ALTER DATABASE gone_$i IS_TEMPLATE false ALLOW_CONNECTIONS false;\n"
		  . "DROP DATABASE gone_$i;");
}
is_deeply(\@missed, [],
	"(a) each of $rounds databases made and dropped counted in a slot of its own"
);

# (b) A database made afterwards.
$node->safe_psql('postgres',
	'CREATE DATABASE fresh TEMPLATE tpl STRATEGY FILE_COPY');
$node->safe_psql('fresh', "SELECT schedq.submit('k')");
is($node->safe_psql('fresh', $submitted),
	'1', '(b) a database made afterwards has counters of its own');

# (c) The database that stayed kept its counters.
is($node->safe_psql('keep', $submitted),
	'3', '(c) keep still has its 3 submits');

# (d) Promotions an hour late in keep, five seconds late in fresh.
my $lag = "SELECT value FROM schedq.metrics() WHERE name = 'scheduler_lag_ms'";
$node->safe_psql('keep',
	"SELECT schedq.submit('late', run_at => now() + interval '1 hour');\n"
	  . "SELECT schedq._promote_once(now() + interval '2 hours');");
$node->safe_psql('fresh',
	"SELECT schedq.submit('late', run_at => now() + interval '1 second');\n"
	  . "SELECT schedq._promote_once(now() + interval '6 seconds');");
cmp_ok($node->safe_psql('keep', $lag),
	'>=', 3_500_000, '(d) keep shows the lag of its own promotion');
cmp_ok($node->safe_psql('fresh', $lag),
	'<', 60_000, '(d) fresh shows the lag of its own promotion');

$node->stop;
done_testing();
