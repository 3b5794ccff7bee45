#-------------------------------------------------------------------------
# test/t/027_task_columns.pl
#	  Adding a column to schedq.task, as an update script would
#	  (CONTRIBUTING.md, "Adding a column"), and what breaks when a place is
#	  missed:
#	  (a) a column that store/task.h's TASK_COLUMNS does not list: the
#	      direct writes decline ('columns', counted in metrics() and logged
#	      at DEBUG1), so the missed place is visible, and the statements
#	      still write right rows (the new column gets its default);
#	  (b) the row added to TASK_COLUMNS is what brings the direct writes
#	      back: dropping the column again does;
#	  (c) a NOT NULL column without a default: every submit fails with
#	      23502 naming it (an INSERT names only the options, status and
#	      owner), which is why an update script gives a new column a
#	      default;
#	  (d) a column of TASK_COLUMNS retyped: declined ('columns') as well.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node('columns', extension => 'postgres',
	conf => "schedq.enabled = off\n");

sub q1 { return $node->safe_psql('postgres', $_[0]); }

sub cycle
{
	my ($q) = @_;
	return q1(qq{SELECT schedq.submit('$q', queue => '$q') IS NOT NULL;
		SELECT schedq.complete(token, result => '{"ok": 1}')
		  FROM schedq.claim('w', queues => '{$q}')});
}

my $declined = sub { metric($node, 'direct_declined_columns') };

#
# (a) A column TASK_COLUMNS does not know.
#
my $before = $declined->();
is(cycle('plain'), "t\nt", 'a submit, claim and complete');
is($declined->(), $before, 'the direct writes did them');

q1(q{BEGIN;
	 ALTER TABLE schedq.task ADD COLUMN note text DEFAULT 'none';
	 COMMIT;});
my ($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT schedq.submit('noted', queue => 'noted') IS NOT NULL;
	SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{noted}');
});
is($out, "t\nt", '(a) with a new column: submit, claim and complete still work');
is($declined->(), $before + 3, '(a) through the statements: each direct write declined (columns)');
like($err, qr/direct write declined \(columns\)/, '(a) and the first decline is logged at DEBUG1');
is(q1(q{SELECT note || ' ' || status FROM schedq.task WHERE kind = 'noted'}),
	'none done', '(a) the new column has its default, the row is right');

#
# (b) What the row in TASK_COLUMNS would do: without the column, the direct
# writes are back.
#
q1(q{ALTER TABLE schedq.task DROP COLUMN note});
$before = $declined->();
is(cycle('back'), "t\nt", '(b) without the column');
is($declined->(), $before, '(b) the direct writes are back');

#
# (c) NOT NULL without a default.
#
q1(q{ALTER TABLE schedq.task ADD COLUMN must text NOT NULL DEFAULT 'x';
	 ALTER TABLE schedq.task ALTER must DROP DEFAULT});
($rc, $out, $err) = $node->psql('postgres', q{SELECT schedq.submit('must')});
like($err, qr/null value in column "must" of relation "task" violates not-null constraint/,
	'(c) a NOT NULL column without a default: every submit fails, naming it');
q1(q{ALTER TABLE schedq.task DROP COLUMN must});

#
# (d) A known column of another type.
#
q1(q{ALTER TABLE schedq.task ALTER dedup_key TYPE varchar});
$before = $declined->();
is(cycle('retyped'), "t\nt", '(d) dedup_key retyped: the calls work');
is($declined->(), $before + 3, '(d) through the statements (columns)');
q1(q{ALTER TABLE schedq.task ALTER dedup_key TYPE text});
$before = $declined->();
is(cycle('text-again'), "t\nt", '(d) its type back');
is($declined->(), $before, '(d) the direct writes are back');

done_testing();
