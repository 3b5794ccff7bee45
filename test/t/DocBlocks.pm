#-------------------------------------------------------------------------
# test/t/DocBlocks.pm
#	  Reading the repository's Markdown for the documentation tests
#	  (067_docs_examples.pl, 068_docs_links.pl, 069_docs_no_lab_notes.pl):
#	  the tracked files, their fenced code blocks, their headings and
#	  GitHub's anchors for them.
#
#	  The conventions the fenced blocks follow are CONTRIBUTING.md's
#	  "Examples that run"; 067_docs_examples.pl enforces them.
#-------------------------------------------------------------------------
package DocBlocks;

use strict;
use warnings;

use Exporter 'import';
use File::Find;

our @EXPORT =
  qw(doc_top doc_slurp tracked_files fenced_blocks strip_code heading_anchors);

# The tree under test: the copy test/check.sh made, or the current directory.
sub doc_top
{
	return $ENV{SCHEDQ_SRCDIR} // '.';
}

sub doc_slurp
{
	my ($path) = @_;
	open(my $fh, '<:encoding(UTF-8)', $path) or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# The files git tracks, relative to doc_top(): .tracked-files, which
# test/check.sh writes into its copy, or git ls-files, or (outside git) a
# walk of the tree.
sub tracked_files
{
	my $top = doc_top();
	if (-e "$top/.tracked-files")
	{
		return grep { $_ ne '' } split /\n/, doc_slurp("$top/.tracked-files");
	}
	my @files = grep { $_ ne '' } split /\n/,
	  (qx{git -C '$top' ls-files 2>/dev/null} // '');
	return @files if @files;
	find(
		{
			no_chdir => 1,
			wanted => sub {
				$File::Find::prune = 1
				  if m{/(?:\.git|tmp_check|node_modules|results)$};
				push @files, substr($_, length($top) + 1) if -f $_;
			}
		},
		$top);
	return @files;
}

# The fenced code blocks of a Markdown text, in order: hashes with
#   line   line number of the opening fence (1-based)
#   info   the info string: its first word is the language ("sql"), the
#          other words are flags ("norun")
#   lang, flags (array), body (text, ending in a newline unless empty)
#   indent the opening fence's indentation (in spaces)
#   end    line number of the closing fence
#   closed false if the file ended inside the block
# Fences are ``` or longer runs of backticks (or ~~~), indented by up to
# three spaces, or more inside a list: any indentation is accepted here,
# and 067 requires none.
sub fenced_blocks
{
	my ($text) = @_;
	my @lines = split /\n/, $text, -1;
	my (@blocks, $open);
	for my $i (0 .. $#lines)
	{
		my $l = $lines[$i];
		if (!$open)
		{
			if ($l =~ /^( *)(`{3,}|~{3,})\s*([^`]*?)\s*$/)
			{
				my ($indent, $fence, $info) = (length $1, $2, $3);
				my ($lang, @flags) = split ' ', $info;
				$open = {
					line => $i + 1,
					info => $info,
					lang => $lang // '',
					flags => \@flags,
					indent => $indent,
					fence => $fence,
					body => '',
					closed => 0,
				};
			}
			next;
		}
		my $f = substr($open->{fence}, 0, 1);
		if ($l =~ /^ *(\Q$f\E{3,})\s*$/ && length($1) >= length($open->{fence}))
		{
			$open->{closed} = 1;
			$open->{end} = $i + 1;
			push @blocks, $open;
			undef $open;
			next;
		}
		my $body_line = $l;
		for (1 .. $open->{indent})
		{
			last unless $body_line =~ s/^ //;
		}
		$open->{body} .= "$body_line\n";
	}
	push @blocks, $open if $open;
	return @blocks;
}

# The text with fenced blocks blanked out (their lines kept, empty, so
# that line numbers stay right) and, if $spans, inline code spans too.
sub strip_code
{
	my ($text, $spans) = @_;
	my @lines = split /\n/, $text, -1;
	my $fence;
	for my $l (@lines)
	{
		if (!defined $fence)
		{
			if ($l =~ /^ *(`{3,}|~{3,})/)
			{
				$fence = $1;
				$l = '';
			}
			elsif ($spans)
			{
				$l =~ s/(`+)(?:(?!\1).)+?\1//g;
			}
			next;
		}
		my $f = substr($fence, 0, 1);
		undef $fence
		  if $l =~ /^ *(\Q$f\E{3,})\s*$/ && length($1) >= length($fence);
		$l = '';
	}
	return join "\n", @lines;
}

# The anchors GitHub makes for a Markdown text's headings: the heading's
# text without its Markdown (code spans keep their text, links their
# label), lower case, every character but letters, digits, '_', '-' and
# spaces dropped, spaces turned into hyphens; a heading met again gets
# -1, -2, ...  Explicit <a name="..."> and <a id="..."> count as well.
# Headings inside fenced blocks are not headings.
sub heading_anchors
{
	my ($text) = @_;
	my (%anchor, %seen);
	my $prose = strip_code($text, 0);
	for my $h ($prose =~ /^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/mg)
	{
		$h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;    # links: their label
		$h =~ s/<[^>]+>//g;                    # HTML tags
		my $slug = lc $h;
		$slug =~ s/[^\p{L}\p{N}_\- ]//g;
		$slug =~ s/ /-/g;
		my $n = $seen{$slug}++;
		$anchor{ $n ? "$slug-$n" : $slug } = 1;
	}
	$anchor{$1} = 1 while $prose =~ /<a\s+(?:name|id)="([^"]+)"/g;
	return \%anchor;
}

1;
