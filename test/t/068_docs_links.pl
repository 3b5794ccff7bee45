#-------------------------------------------------------------------------
# test/t/068_docs_links.pl
#	  The documentation's links lead somewhere, and so do the code's hints.
#
#	  (a) Every relative link of every tracked Markdown file, inline
#	      ([text](target), ![alt](target)) or by reference
#	      ([name]: target), resolves to a file or directory of the tree,
#	      relative to the linking file; and its #anchor, if any, is a
#	      heading of the Markdown file it leads to (GitHub's anchors:
#	      lower case, punctuation dropped, spaces to hyphens; -1, -2 for
#	      repeated headings; <a name> and <a id> count too).  Links with
#	      a scheme (https:, mailto:) are not followed.  Links inside code
#	      (fenced blocks, `spans`) are not links.
#	  (b) Every page the code names in a message, a hint or a comment:
#	      each "docs/PAGE.md" or "docs/PAGE.md#anchor" in the C files and
#	      headers under src/ and schedqctl/, in schedqctl/schedqctl.1, and
#	      in the scripts of test/ and test/citus/ (make demo and make
#	      check-citus print them) is a tracked page, and the anchor a
#	      heading of it.
#	  Reads the tree; starts no server.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Spec;
use Test::More;
use DocBlocks;

my $top = doc_top();
my @files = tracked_files();
my %tracked = map { $_ => 1 } @files;
my %dir;
for my $f (@files)
{
	my $d = $f;
	$dir{$d} = 1 while ($d =~ s{/[^/]*$}{}) && $d ne '';
}
my @md = sort grep { /\.md$/ && !m{(^|/)node_modules/} } @files;
ok(scalar(@md) >= 15, 'the tracked Markdown files are found') or diag "@md";

my %anchors_of;

sub anchors_of
{
	my ($path) = @_;
	$anchors_of{$path} //= heading_anchors(doc_slurp("$top/$path"));
	return $anchors_of{$path};
}

# A path relative to the tree's top, with . and .. resolved; undef if it
# leaves the tree.
sub resolve
{
	my ($from_dir, $target) = @_;
	my @parts;
	for my $p (split m{/}, ($from_dir eq '' ? $target : "$from_dir/$target"))
	{
		next if $p eq '' || $p eq '.';
		if ($p eq '..')
		{
			return undef unless @parts;
			pop @parts;
			next;
		}
		push @parts, $p;
	}
	return join '/', @parts;
}

# (a) Links.
my (@broken, $links);
for my $page (@md)
{
	my $text = strip_code(doc_slurp("$top/$page"), 1);
	my $here = $page =~ m{/} ? dirname($page) : '';
	my @targets;
	push @targets, $1 while $text =~ /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
	push @targets, $1 while $text =~ /^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$/mg;
	for my $t (@targets)
	{
		next if $t =~ /^[a-z][a-z0-9+.-]*:/i;    # https:, mailto:, ...
		$links++;
		my ($path, $anchor) = $t =~ /^([^#]*)(?:#(.*))?$/;
		my $dest = $path eq '' ? $page : resolve($here, $path);
		if (!defined $dest || !($tracked{$dest} || $dir{$dest} || ($path ne '' && -e "$top/$dest")))
		{
			push @broken, "$page: ($t): no such file";
			next;
		}
		next unless defined $anchor;
		if ($dest !~ /\.md$/ || !-f "$top/$dest")
		{
			push @broken, "$page: ($t): an anchor into a file that is not Markdown";
			next;
		}
		push @broken, "$page: ($t): no heading for #$anchor in $dest"
		  unless anchors_of($dest)->{$anchor};
	}
}
ok($links > 100, 'the Markdown files have links') or diag $links;
is(scalar(@broken), 0, 'every relative link resolves, every anchor is a heading')
  or diag join "\n", @broken;

# (b) Pages named by the code.
my @code = sort grep {
	(        m{^src/.*\.[ch]$}
		  || m{^schedqctl/.*\.[ch]$}
		  || $_ eq 'schedqctl/schedqctl.1'
		  || m{^test/(citus/)?[^/]*\.sh$})
} @files;
ok(scalar(grep { m{^src/} } @code) >= 10, 'the C files are found');
my (@missing, $named);
for my $f (@code)
{
	my $text = doc_slurp("$top/$f");
	# In the manual page a hyphen to copy is written \- (a plain one is
	# typeset as a dash).
	$text =~ s/\\-/-/g if $f =~ /\.1$/;
	while ($text =~ m{(docs/[A-Za-z0-9_/.-]+\.md)(?:#([A-Za-z0-9_-]+))?}g)
	{
		my ($page, $anchor) = ($1, $2);
		$named++;
		if (!$tracked{$page})
		{
			push @missing, "$f: $page: no such page";
			next;
		}
		push @missing, "$f: $page#$anchor: no such heading"
		  if defined $anchor && !anchors_of($page)->{$anchor};
	}
}
ok($named, 'the code names documentation pages');
is(scalar(@missing), 0, 'every page and anchor the code names exists')
  or diag join "\n", @missing;

# The anchors other components rely on (schedqctl's hints).
for my $t ('docs/security.md#roles', 'docs/guide/periodic.md#schedule-syntax',
	'docs/guide/workers.md#schedqctl-worker', 'docs/scale-out.md')
{
	my ($page, $anchor) = split /#/, $t;
	ok($tracked{$page} && (!defined $anchor || anchors_of($page)->{$anchor}),
		"$t exists");
}

done_testing();
