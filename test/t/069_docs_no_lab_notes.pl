#-------------------------------------------------------------------------
# test/t/069_docs_no_lab_notes.pl
#	  The user's documentation says what is, not how the project got
#	  there: history goes to CHANGELOG.md, nowhere else.
#
#	  Files: README.md, SECURITY.md, CONTRIBUTING.md, every tracked file
#	  under docs/ and examples/ (but for examples/node's lockfile and
#	  node_modules; images are not text), the client libraries' READMEs
#	  (clients/*/README.md), test/README.md, test/bench/README.md, and
#	  schedqctl/schedqctl.1.  Not CHANGELOG.md.
#
#	  What it looks for, case-insensitively:
#	  - issue numbers: "issue 14", "issue #14", "issues 14", and "#14"
#	    where # stands after a space, an opening bracket or the start of
#	    a line and the digits end the word (a link's "#anchor" is
#	    preceded by a path or "(" right after "]", and never ends after
#	    its digits: "#1-installing" is an anchor, not an issue);
#	  - a work session or round: "this session", "last session",
#	    "previous session", "next session", "this round", "last round",
#	    "previous round", "next round", "this round's", and "the brief"
#	    (a "psql session", "session-level" locks or a "round trip" are
#	    not lab notes, and are not matched);
#	  - dates in prose: 20YY-MM-DD outside code (fenced blocks and
#	    `spans` of Markdown are code; in the manual page, the .TH line,
#	    which dates the page by convention, and example blocks between
#	    .EX/.EE or .nf/.fi are).
#	  And README.md stays at most 350 lines long.
#	  Reads the tree; starts no server.
#-------------------------------------------------------------------------
use strict;
use warnings;

use Test::More;
use DocBlocks;

my $top = doc_top();
my @files = sort grep {
	my $f = $_;
	(        $f eq 'README.md'
		  || $f eq 'SECURITY.md'
		  || $f eq 'CONTRIBUTING.md'
		  || $f eq 'test/README.md'
		  || $f eq 'test/bench/README.md'
		  || $f eq 'schedqctl/schedqctl.1'
		  || $f =~ m{^docs/}
		  || $f =~ m{^clients/[^/]+/README\.md$}
		  || $f =~ m{^examples/})
	  && $f !~ m{(^|/)node_modules/}
	  && $f !~ m{package-lock\.json$}
	  && $f !~ m{\.png$}
} tracked_files();
ok(scalar(grep { $_ eq 'README.md' } @files), 'README.md is checked');
ok(scalar(grep { m{^docs/guide/} } @files) >= 5, 'the guide is checked');

my $issue = qr{\bissues?\s*#?\s*\d+\b|(?:^|(?<=[\s(\[]))(?<!\]\()#\d+(?![\w-])}i;
my $session = qr{\b(?:this|last|previous|next)\s+(?:session|round)\b|\bthis\s+round's\b|\bthe\s+brief\b}i;
my $date = qr{\b20\d\d-\d\d-\d\d\b};

# The prose of a file: its lines, code blanked out.
sub prose
{
	my ($f, $text) = @_;
	return strip_code($text, 1) if $f =~ /\.md$/;
	return $text unless $f =~ /\.1$/;
	my @lines = split /\n/, $text, -1;
	my $example = 0;
	for my $l (@lines)
	{
		if ($l =~ /^\.(EX|nf)\b/) { $example = 1; next; }
		if ($l =~ /^\.(EE|fi)\b/) { $example = 0; next; }
		$l = '' if $example || $l =~ /^\.TH\b/;
	}
	return join "\n", @lines;
}

my @found;
for my $f (@files)
{
	next unless -f "$top/$f";
	my $text = doc_slurp("$top/$f");
	my $prose = prose($f, $text);
	my @all = split /\n/, $text, -1;
	my @pl = split /\n/, $prose, -1;
	for my $i (0 .. $#all)
	{
		my $n = $i + 1;
		push @found, "$f:$n: issue number: $&" if $all[$i] =~ $issue;
		push @found, "$f:$n: work session: $&" if $all[$i] =~ $session;
		push @found, "$f:$n: date in prose: $&"
		  if defined $pl[$i] && $pl[$i] =~ $date;
	}
}
is(scalar(@found), 0, 'no issue numbers, work sessions or dated notes')
  or diag join("\n", @found) . "\nhistory goes to CHANGELOG.md";

# The README is the front door: it stays short, the rest is in docs/.
my $readme_lines = () = doc_slurp("$top/README.md") =~ /\n/g;
cmp_ok($readme_lines, '<=', 350, "README.md has at most 350 lines ($readme_lines)");

done_testing();
