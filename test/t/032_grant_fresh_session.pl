#-------------------------------------------------------------------------
# test/t/032_grant_fresh_session.pl
#	  A worker role (the README's grants: EXECUTE, no table privilege)
#	  reports an attempt from a session that did not claim it: a worker
#	  that reconnected, or that heartbeats on another connection.  The
#	  session's first schedq call is then heartbeat, complete,
#	  complete_many or fail, and it must verify the grant without reading
#	  schedq.grant_key as the caller (which only superusers may read):
#	  the key cache is loaded as the tables' owner, whatever the first
#	  call.  Each psql call below is a fresh session.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node('grant_fresh', conf => q{
schedq.enabled = off
schedq.sql_workers = 0
});
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION schedq;
CREATE ROLE worker LOGIN;
GRANT USAGE ON SCHEMA schedq TO worker;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, schedq.complete,
      schedq.complete_many, schedq.fail, schedq.verify_grant,
      schedq.submit TO worker;
});

# Run $sql as worker in a session of its own; (exit code, stdout, stderr).
sub as_worker
{
	my ($sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', $sql, extra_params => [ '-U', 'worker' ]);
	return ($ret, $out, $err);
}

sub claim_token
{
	as_worker("SELECT schedq.submit('k')");
	my ($ret, $out, $err) =
	  as_worker("SELECT token FROM schedq.claim('w', lease => '1 hour')");
	die "claim failed: $err" if $ret != 0 || $out eq '';
	return $out;
}

my $token = claim_token();
my ($ret, $out, $err) =
  as_worker("SELECT schedq.heartbeat('$token') IS NOT NULL");
is("$ret|$out", '0|t', 'heartbeat as the first call of a session') or diag $err;
($ret, $out, $err) = as_worker("SELECT schedq.complete('$token')");
is("$ret|$out", '0|t', 'complete as the first call of a session') or diag $err;

$token = claim_token();
($ret, $out, $err) = as_worker("SELECT schedq.fail('$token', 'e')");
is("$ret|$out", '0|pending', 'fail as the first call of a session') or diag $err;

$token = claim_token();
($ret, $out, $err) =
  as_worker("SELECT schedq.complete_many(ARRAY['$token'])");
is("$ret|$out", '0|{t}', 'complete_many as the first call of a session')
  or diag $err;

# After a rotation, a session that loaded the keys before must load them
# again, in the first call that needs them, still as the tables' owner.
$token = claim_token();
my $t2 = claim_token();
($ret, $out, $err) = $node->psql(
	'postgres', qq{
SET ROLE worker;
SELECT schedq.complete('$token');
RESET ROLE;
SELECT schedq.rotate_grant_key() > 0;
SET ROLE worker;
SELECT schedq.complete('$t2');
});
is("$ret|$out", "0|t\nt\nt", 'complete after a rotation in the same session')
  or diag $err;

$node->stop;
done_testing();
