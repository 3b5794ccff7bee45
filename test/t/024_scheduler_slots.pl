#-------------------------------------------------------------------------
# test/t/024_scheduler_slots.pl
#	  Each database with a scheduler takes one of 64 shared-memory slots;
#	  a dropped database's slot must come free.  Databases are made, get
#	  schedq (the launcher starts their scheduler), and are dropped (the
#	  utility hook stops the scheduler and holds the slot while the drop
#	  runs), more times than there are slots; and databases that get
#	  schedq while they are templates (the launcher never scans them) are
#	  dropped too.  Afterwards:
#	  (a) a database that gets schedq still gets its scheduler, and the
#	      launcher never said "at most 64 databases";
#	  (b) the database that lived through it all still has its scheduler.
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

# More than SCHEDQ_MAX_DATABASES (64), in all.
my $rounds = 60;
my $template_rounds = 10;

my $node = schedq_node('scheduler_slots', conf => q{
max_worker_processes = 16
schedq.sql_workers = 0
});

sub scheduler_of
{
	my ($db) = @_;
	return "SELECT count(*) FROM pg_stat_activity"
	  . " WHERE backend_type = 'schedq scheduler' AND datname = '$db'";
}

$node->safe_psql('postgres', 'CREATE DATABASE keep STRATEGY FILE_COPY');
$node->safe_psql('keep', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', scheduler_of('keep'), '1', 30),
	'keep has its scheduler');
my $keep_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'"
	  . " AND datname = 'keep'");

# Made, given schedq and a running scheduler, dropped.
my @missed;
for my $i (1 .. $rounds)
{
	$node->safe_psql('postgres', "CREATE DATABASE d_$i STRATEGY FILE_COPY");
	$node->safe_psql("d_$i", 'CREATE EXTENSION schedq');
	push @missed, "d_$i"
	  unless defined poll_until($node, 'postgres', scheduler_of("d_$i"), '1',
		30);
	$node->safe_psql('postgres', "DROP DATABASE d_$i");
}
is_deeply(\@missed, [], "each of $rounds databases got its scheduler");

# Given schedq while a template (the launcher does not scan templates),
# then dropped.
for my $i (1 .. $template_rounds)
{
	$node->safe_psql('postgres',
		"CREATE DATABASE t_$i IS_TEMPLATE true STRATEGY FILE_COPY");
	$node->safe_psql("t_$i", 'CREATE EXTENSION schedq');
	$node->safe_psql('postgres',
		"ALTER DATABASE t_$i IS_TEMPLATE false ALLOW_CONNECTIONS false;\n"
		  . "DROP DATABASE t_$i;");
}

# (a) A database that gets schedq now.
$node->safe_psql('postgres', 'CREATE DATABASE fresh STRATEGY FILE_COPY');
$node->safe_psql('fresh', 'CREATE EXTENSION schedq');
ok( defined poll_until(
		$node, 'fresh',
		"SELECT count(*) FROM schedq.scheduler_status()"
		  . " WHERE datname = 'fresh' AND pid IS NOT NULL AND state = 'idle'",
		'1', 30),
	'(a) a database given schedq afterwards gets its scheduler');
ok( slurp_file($node->logfile) !~ /schedq supports at most \d+ databases/,
	'(a) the scheduler never ran out of database slots');

# (b) The database that stayed kept the same scheduler.
is( $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'"
		  . " AND datname = 'keep'"),
	$keep_pid,
	'(b) keep still has the same scheduler');

$node->stop;
done_testing();
