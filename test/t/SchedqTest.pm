#-------------------------------------------------------------------------
# test/t/SchedqTest.pm
#	  Helpers the TAP tests share: waiting on a condition with a deadline
#	  (never sleep-and-hope), checking that something stays as it is, and
#	  reading a counter of schedq.metrics().
#-------------------------------------------------------------------------
package SchedqTest;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(poll_until poll_value stays metric);

# Poll $query on database $db until its output is $expected (a string) or
# satisfies $expected (a code ref).  Returns [seconds it took, output], or
# undef (with a diagnostic) after $timeout seconds.  Connection errors
# (the server is restarting) count as "not yet".
sub poll_value
{
	my ($node, $db, $query, $expected, $timeout) = @_;
	my $start = time;
	my ($ret, $out, $err);

	for (;;)
	{
		($ret, $out, $err) = $node->psql($db, $query);
		if ($ret == 0
			&& (ref $expected ? $expected->($out) : $out eq $expected))
		{
			return [ time - $start, $out ];
		}
		last if time - $start > $timeout;
		usleep(50_000);
	}
	diag "after ${timeout}s, query: $query\n"
	  . (ref $expected ? '' : "expected: $expected\n")
	  . "got: $out\nstderr: $err";
	return undef;
}

# As poll_value, returning only the seconds it took (or undef).
sub poll_until
{
	my $r = poll_value(@_);
	return $r ? $r->[0] : undef;
}

# Check for $seconds that $query keeps returning $expected.  Returns undef
# if it did, else the first other output.
sub stays
{
	my ($node, $db, $query, $expected, $seconds) = @_;
	my $start = time;

	while (time - $start < $seconds)
	{
		my $out = $node->safe_psql($db, $query);
		return $out if $out ne $expected;
		usleep(50_000);
	}
	return undef;
}

# The value of one counter of schedq.metrics().
sub metric
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT value FROM schedq.metrics() WHERE name = '$name'");
}

1;
