#-------------------------------------------------------------------------
# test/t/067_docs_examples.pl
#	  The examples of the documentation run, and show what they print.
#
#	  Pages: every tracked Markdown file, but for docs/reference.md (the
#	  contract: its sql blocks are signatures, which 066_reference.pl
#	  checks against the catalog) and CHANGELOG.md (history).
#
#	  The conventions (CONTRIBUTING.md, "Examples that run"):
#	  - A fenced block's info string names its language; its other words
#	    are flags.  Runnable languages: sql (run by psql) and sh (run by
#	    bash).  A runnable block flagged "norun" is not run (it installs
#	    packages, needs another machine, or runs for ever).  Every other
#	    block must be of a language that is never run: output, ini
#	    (postgresql.conf lines and other configuration), text (plans, log
#	    lines, diagrams), json, yaml, c, diff, js (the Node.js library's
#	    examples: its tests, t/091_client_node.pl, type-check them with
#	    tsc against clients/node/index.d.ts), go (the Go library's, tested
#	    by its own tests).  A block without a language,
#	    or of another one (bash, shell, console, psql, ...), fails: it
#	    would be an example that nobody runs.
#	  - Fences start at the beginning of their line (not inside a list).
#	  - The runnable blocks of a page run in page order, against one
#	    database of a node of its own with schedq preloaded
#	    (shared_preload_libraries = 'schedq', nothing else), as its
#	    bootstrap superuser.  The sql blocks of a page share one psql
#	    session (psql -X, not quiet: command tags show, as they do for a
#	    reader), so \gset variables carry from block to block.  The sh
#	    blocks run with bash -e in a scratch directory, with PGHOST,
#	    PGPORT and PGDATABASE naming the page's database and the server's
#	    bindir (psql, schedqctl) first on PATH, and PYTHONPATH naming
#	    clients/python (the Python library, as if installed).
#	  - A runnable block followed (after blank lines only) by an output
#	    block must print exactly that: psql's output and messages (the
#	    "psql:<stdin>:N: " prefix of an error dropped), or the shell's
#	    stdout and stderr together; trailing blanks of each line and blank
#	    lines at either end are ignored.  A line "..." alone in an output
#	    block stands for any number of lines, and "..." inside a line for
#	    any text.
#	  - A block flagged "wait" shows something that happens in the
#	    background (a SQL executor, the scheduler): it is run again, every
#	    0.2 s for up to 60 s, until it prints what its output block shows.
#	    Such a block must only read.
#	  - A sql block may raise an error only if its output block shows it
#	    (an "ERROR:" line); an sh block must exit 0.
#	  - A sql block ends its last statement (";" or a backslash command).
#	  - Per-page preamble, run by this test before the page (on top of the
#	    node and its database): the database "docs" is created and schedq
#	    is installed in it, except for README.md, whose own blocks run
#	    CREATE EXTENSION.  Roles and other objects a page needs are made by
#	    the page itself, where the reader sees them.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Temp qw(tempdir);
use Time::HiRes qw(time usleep);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use DocBlocks;

my $top = doc_top();
my %runnable = map { $_ => 1 } qw(sql sh);
my %inert = map { $_ => 1 } qw(output ini text json yaml c diff js go);
my %skip_page = (
	'docs/reference.md' => 'the contract; 066_reference.pl checks it',
	'CHANGELOG.md' => 'history',);

# Pages whose runnable blocks need the extension not yet installed.
my %no_extension = ('README.md' => 1);

my @pages = sort grep { /\.md$/ && !$skip_page{$_} && !m{(^|/)node_modules/} }
  tracked_files();
ok(scalar(grep { $_ eq 'README.md' } @pages), 'README.md is among the pages');
ok(scalar(grep { m{^docs/guide/} } @pages) >= 5, 'the guide pages are among them')
  or diag join ' ', @pages;

# Compare an output with the expected text, "..." as wildcards.  Returns
# undef if they match, else a description of the difference.
sub normalise
{
	my ($text) = @_;
	my @l = map { s/\s+$//r } split /\n/, $text, -1;
	shift @l while @l && $l[0] eq '';
	pop @l while @l && $l[-1] eq '';
	return @l;
}

sub line_matches
{
	my ($want, $got) = @_;
	return $want eq $got unless index($want, '...') >= 0;
	my $re = join '.*', map { quotemeta } split /\.\.\./, $want, -1;
	return $got =~ /^$re$/;
}

sub lines_match
{
	my ($w, $g) = @_;
	return !@$g if !@$w;
	my ($first, @rest) = @$w;
	if ($first eq '...')
	{
		for my $k (0 .. scalar @$g)
		{
			return 1 if lines_match(\@rest, [ @$g[ $k .. $#$g ] ]);
		}
		return 0;
	}
	return 0 unless @$g && line_matches($first, $g->[0]);
	return lines_match(\@rest, [ @$g[ 1 .. $#$g ] ]);
}

sub compare_output
{
	my ($want, $got) = @_;
	my @w = normalise($want);
	my @g = normalise($got);
	return undef if lines_match(\@w, \@g);
	return "expected:\n" . join("\n", @w) . "\ngot:\n" . join("\n", @g);
}

# One psql session per page, driven block by block: each block is
# followed by an \echo of a marker, and its output is what psql printed
# before the marker.
my $marker_n = 0;

sub psql_block
{
	my ($session, $sql) = @_;
	my $marker = '@@docs-block-' . ++$marker_n . '@@';
	${ $session->{in} } .= $sql . "\n\\echo $marker\n";
	my $out = $session->{out};
	eval {
		$session->{h}->pump until $$out =~ /^\Q$marker\E$/m;
		1;
	} or return (undef, "psql: $@" . "output so far:\n$$out");
	$$out =~ s/^(.*?)^\Q$marker\E\n//ms;
	my $text = $1;
	$text =~ s/^psql:<stdin>:\d+: //mg;
	return ($text, undef);
}

# Run a sql block in the page's psql session: (output, undef), or (output,
# problem).
sub run_sql
{
	my ($session, $b) = @_;
	my ($got, $err) = psql_block($session, $b->{body});
	return (undef, $err) if defined $err;
	my $shows_error = defined $b->{expect} && $b->{expect} =~ /^ERROR:/m;
	return ($got, "an error the page does not show:\n$got")
	  if !$shows_error && $got =~ /^(ERROR|FATAL|PANIC):/m;
	return ($got, undef);
}

# Run an sh block with bash -e in the page's scratch directory.
sub run_sh
{
	my ($node, $scratch, $b) = @_;
	my $out = '';
	my $ok = eval {
		IPC::Run::run(
			[ 'bash', '-e', '-c', $b->{body} ],
			'<', \undef, '>&', \$out,
			init => sub {
				chdir $scratch or die "chdir $scratch: $!";
				$ENV{PGHOST} = $node->host;
				$ENV{PGPORT} = $node->port;
				$ENV{PGDATABASE} = 'docs';
				delete $ENV{PGUSER};
				# The Python client library, as after pip install ./clients/python.
				$ENV{PYTHONPATH} = "$top/clients/python";
			},
			IPC::Run::timeout(120));
	};
	return ($out, undef) if $ok;
	return ($out, "exit status " . ($? >> 8) . ($@ ? ", $@" : '') . ", printed:\n$out");
}

my (%ran, @notrun);
for my $page (@pages)
{
	my $text = doc_slurp("$top/$page");
	my @blocks = fenced_blocks($text);
	my @bad;
	for my $i (0 .. $#blocks)
	{
		my $b = $blocks[$i];
		my $where = "$page:$b->{line}";
		push @bad, "$where: the block is not closed" unless $b->{closed};
		push @bad, "$where: indented fence (start fences at column 0)"
		  if $b->{indent};
		if ($runnable{ $b->{lang} })
		{
			my @unknown = grep { !/^(norun|wait)$/ } @{ $b->{flags} };
			push @bad, "$where: unknown flag(s) @unknown" if @unknown;
			$b->{run} = !grep { $_ eq 'norun' } @{ $b->{flags} };
			# The output block that follows, if any.
			my $next = $blocks[ $i + 1 ];
			if ($next && $next->{lang} eq 'output')
			{
				my @lines = split /\n/, $text, -1;
				my $gap = join "\n", @lines[ $b->{end} .. $next->{line} - 2 ];
				if ($gap =~ /^\s*$/)
				{
					$b->{expect} = $next->{body};
					$next->{owned} = 1;
				}
			}
			push @bad,
			  "$where: a norun block cannot have an output block to match"
			  if !$b->{run} && defined $b->{expect};
			$b->{wait} = grep { $_ eq 'wait' } @{ $b->{flags} };
			push @bad, "$where: a wait block needs an output block"
			  if $b->{wait} && !defined $b->{expect};
		}
		elsif (!$inert{ $b->{lang} })
		{
			push @bad,
			  "$where: block of language '$b->{lang}' (runnable: sql, sh; "
			  . "never run: " . join(', ', sort keys %inert) . ')';
		}
	}
	for my $b (grep { $_->{lang} eq 'output' && !$_->{owned} } @blocks)
	{
		push @bad, "$page:$b->{line}: an output block that follows no runnable block";
	}
	is_deeply(\@bad, [], "$page: every fenced block follows the conventions");

	my @torun = grep { $_->{run} } @blocks;
	next unless @torun;

	(my $name = $page) =~ s/[^A-Za-z0-9]+/_/g;
	my $node = schedq_node(lc "docs_$name");
	$node->safe_psql('postgres', 'CREATE DATABASE docs');
	$node->safe_psql('docs', 'CREATE EXTENSION schedq')
	  unless $no_extension{$page};
	my $scratch = tempdir("docs_$name.XXXX", DIR => $PostgreSQL::Test::Utils::tmp_check, CLEANUP => 1);

	my ($in, $out) = ('', '');
	my $timer = IPC::Run::timeout(120);
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('docs'), '-P', 'pager=off' ],
		'<', \$in, '>&', \$out, $timer);
	my $session = { h => $h, in => \$in, out => \$out };

	for my $b (@torun)
	{
		my $where = "$page:$b->{line}";
		if ($b->{lang} eq 'sql')
		{
			my $last = (grep { !/^\s*(--.*)?$/ } split /\n/, $b->{body})[-1] // '';
			if ($last !~ /;\s*(--.*)?$/ && $last !~ /^\s*\\|\\g\w*(\s.*)?$/)
			{
				fail("$where runs");
				diag "$where: the block's last statement has no ';'";
				next;
			}
		}
		my $deadline = time + ($b->{wait} ? 60 : 0);
		my ($got, $problem, $diff);
		for (;;)
		{
			$timer->start(120);
			($got, $problem) =
			  $b->{lang} eq 'sql'
			  ? run_sql($session, $b)
			  : run_sh($node, $scratch, $b);
			last if defined $problem;
			$diff = defined $b->{expect} ? compare_output($b->{expect}, $got) : undef;
			last if !defined $diff || time > $deadline;
			usleep(200_000);
		}
		if (defined $problem)
		{
			fail("$where runs");
			diag "$where:\n$b->{body}\n$problem";
			last if $problem =~ /^psql:/;
			next;
		}
		$ran{$page}++;
		if (defined $b->{expect})
		{
			ok(!defined $diff, "$where prints what the page shows")
			  or diag "$where:\n$b->{body}\n$diff";
		}
		else
		{
			pass("$where runs");
		}
	}
	$in .= "\\q\n";
	eval { $h->finish; 1 } or $h->kill_kill;
	$node->stop('fast');
}

ok($ran{'README.md'}, 'the README\'s examples ran');
ok(scalar(grep { m{^docs/guide/} && $ran{$_} } keys %ran) >= 5,
	'every guide page\'s examples ran')
  or diag explain \%ran;

done_testing();
