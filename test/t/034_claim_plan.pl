#-------------------------------------------------------------------------
# test/t/034_claim_plan.pl
#	  A claim walks task_available_idx in claim order and stops at its
#	  first candidates also where its statement checks budgets or paused
#	  queues: with 20,000 tasks of one queue available, the kept generic
#	  plans of its statements (as auto_explain logs them) scan the index
#	  and sort nothing, for one queue, several and every queue, while
#	  budgets exist, and while another queue is paused.  The server's
#	  random_page_cost is high, so a plan that does not expect to stop
#	  early (for one queue, the anti-join with the paused queues was
#	  estimated to keep a single row) reads and sorts the whole available
#	  set instead: about 40 to 70 ms a claim here, against a fraction of a
#	  millisecond.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node('claim_plan', extension => 'postgres', conf => q{
schedq.enabled = off
schedq.sql_workers = 0
autovacuum = off
random_page_cost = 40
});

# The plans of the claims of @$claims, each "n queues" (queues a literal
# array or NULL), in one session, whose Query Text matches $statement.
sub claim_plans
{
	my ($statement, @claims) = @_;
	my $log_offset = -s $node->logfile;
	my $sql = q{
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
};
	$sql .= "SELECT count(schedq.complete(token)) FROM schedq.claim('w',"
	  . " n => $_->[0], queues => $_->[1]);\n"
	  for @claims;
	my $claimed = $node->safe_psql('postgres', $sql);
	my @plans = grep { /Query Text: \Q$statement\E/ }
	  split /LOG:  duration: /, slurp_file($node->logfile, $log_offset);
	return ($claimed, @plans);
}

# Each plan of @plans walks task_available_idx and sorts nothing.
sub walks_index
{
	my ($what, $expected, @plans) = @_;
	is(scalar(@plans), $expected, "$what: auto_explain logged each claim");
	is(scalar(grep { /Index Scan using task_available_idx/ && !/\bSort\b/ }
		  @plans),
		$expected, "$what: each walks task_available_idx and sorts nothing")
	  or diag join("\n", @plans);
}

$node->safe_psql(
	'postgres', q{
SELECT schedq.set_budget('big', 1e9);
SELECT count(schedq.submit('b', queue => 'bq', budgets => '{big}'))
  FROM generate_series(1, 20000);
VACUUM ANALYZE schedq.task;
});
my @claims = ([ 1, "'{bq}'" ], [ 10, "'{bq}'" ], [ 1, "'{bq,other}'" ],
	[ 1, 'NULL' ]);
my ($claimed, @plans) =
  claim_plans('SELECT t.id, t.budgets, t.cost FROM schedq.task t', @claims);
is($claimed, "1\n10\n1\n1", 'budgets: the claims took their tasks');
walks_index('budgets', 4, @plans);

$node->safe_psql(
	'postgres', q{
DELETE FROM schedq.budget;
SELECT schedq.pause_queue('other');
});
($claimed, @plans) = claim_plans('WITH c AS (SELECT', @claims);
is($claimed, "1\n10\n1\n1", 'a paused queue: the claims took their tasks');
walks_index('a paused queue', 4, @plans);

done_testing();
