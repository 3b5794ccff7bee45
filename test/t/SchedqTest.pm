#-------------------------------------------------------------------------
# test/t/SchedqTest.pm
#	  Helpers the TAP tests share: a node with schedq preloaded, the
#	  README's submitter and worker roles, waiting on a condition with a
#	  deadline (never sleep-and-hope), checking that something stays as it
#	  is, and reading a counter of schedq.metrics().
#-------------------------------------------------------------------------
package SchedqTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes qw(time usleep);
use DocBlocks;

our @EXPORT = qw(schedq_node doc_roles poll_until poll_value wait_for slurp stays metric);

# A new node $name with schedq in shared_preload_libraries.  Options:
#   init      => { ... }  passed to $node->init (allows_streaming => 1)
#   conf      => '...'    lines appended to postgresql.conf after
#                         shared_preload_libraries = 'schedq' (a later line
#                         wins, so they may also name more libraries)
#   start     => 0        leave it stopped (default: started)
#   extension => DB       then CREATE EXTENSION schedq in database DB
#   install_path => DIR   a node of the PostgreSQL installed in DIR
sub schedq_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		($opts{install_path} ? (install_path => $opts{install_path}) : ()));
	my $conf = $opts{conf} // '';

	$conf =~ s/^\n//;
	$node->init(%{ $opts{init} // {} });
	$node->append_conf('postgresql.conf',
		"\nshared_preload_libraries = 'schedq'\n" . $conf);
	return $node if defined $opts{start} && !$opts{start};
	$node->start;
	$node->safe_psql($opts{extension}, 'CREATE EXTENSION schedq')
	  if defined $opts{extension};
	return $node;
}

# The roles of docs/security.md#roles in database postgres (schedq
# installed), made by the page's own recipe blocks (each a sql block that
# opens with CREATE ROLE): app (submitter), worker (a work grant of app),
# oncall (monitor) and ops (admin), all LOGIN.
sub doc_roles
{
	my ($node) = @_;
	my $page = DocBlocks::doc_slurp(DocBlocks::doc_top() . '/docs/security.md');
	my @recipes = grep { $_->{lang} eq 'sql' && $_->{body} =~ /\ACREATE ROLE \w+ LOGIN\b/ }
	  DocBlocks::fenced_blocks($page);
	die "docs/security.md: no role recipes" unless @recipes >= 4;
	$node->safe_psql('postgres', $_->{body}) for @recipes;
	return;
}

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


# Wait until $cond->() returns true, at most $timeout seconds; says what it
# waited for ($what, optional) when it times out.  Returns 1 or 0.
sub wait_for
{
	my ($cond, $timeout, $what) = @_;
	my $start = time;

	while (time - $start < $timeout)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	diag "timed out after ${timeout}s waiting for $what" if defined $what;
	return 0;
}

# The contents of a file, or '' while it does not exist yet.
sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return '';
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t // '';
}

1;
