#-------------------------------------------------------------------------
# 000_layout.pl
#	  The source layout is what the README's "Layout" map says: every file
#	  is on the map and nothing else is; a header declares only functions
#	  its own .c file defines; a file includes only headers of its own
#	  layer or of lower ones; and the includes between modules have no
#	  cycle.  Reads the tree; starts no server.
#-------------------------------------------------------------------------
use strict;
use warnings;

use Test::More;

my $top = $ENV{SCHEDQ_SRCDIR} // '.';

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# The map: "N. Heading" lines open layer N; "src/NAME.c/.h", "src/NAME.c"
# and "src/NAME.h" lines put NAME in it.
my $readme = slurp("$top/README.md");
my ($map) = $readme =~ /^## Layout\n.*?^```\n(.*?)^```/ms
  or BAIL_OUT('README.md has no Layout map');
my (%layer, %mapped, $current);
for my $line (split /\n/, $map)
{
	if ($line =~ /^(\d+)\. /) { $current = $1; next; }
	next unless $line =~ m{^src/(\w+)\.(c/\.h|c|h)\s};
	my ($module, $kinds) = ($1, $2);
	$layer{$module} = $current;
	$mapped{"$module.c"} = 1 if $kinds =~ /^c/;
	$mapped{"$module.h"} = 1 if $kinds =~ /h$/;
}

opendir(my $dh, "$top/src") or die "cannot list src: $!";
my @files = sort grep { /\.[ch]$/ } readdir $dh;
closedir $dh;

my @unmapped = grep { !$mapped{$_} } @files;
my @missing = grep { my $f = $_; !grep { $_ eq $f } @files } sort keys %mapped;
is_deeply(\@unmapped, [], 'every source file is on the README map');
is_deeply(\@missing, [], 'every file on the README map exists');

# Headers declare only their own module's functions.
my @foreign;
for my $h (grep { /\.h$/ } @files)
{
	(my $module = $h) =~ s/\.h$//;
	my $text = slurp("$top/src/$h");
	my $c = -e "$top/src/$module.c" ? slurp("$top/src/$module.c") : '';
	while ($text =~ /^extern\s+(?:PGDLLEXPORT\s+)?[^;(]*?\b(\w+)\s*\(/mg)
	{
		my $function = $1;
		push @foreign, "$h: $function"
		  unless $c =~ /^\w[^\n;]*\n?\Q$function\E\(/m;
	}
}
is_deeply(\@foreign, [], 'each header declares only what its own .c defines');

# Includes point down the layers, and modules form no cycle.
my (@upward, %edges);
for my $f (@files)
{
	(my $module = $f) =~ s/\.[ch]$//;
	my $text = slurp("$top/src/$f");
	while ($text =~ /^#include "(\w+)\.h"/mg)
	{
		my $to = $1;
		next if $to eq $module || !defined $layer{$to};
		push @upward, "$f -> $to.h"
		  if defined $layer{$module} && $layer{$to} < $layer{$module};
		$edges{$module}{$to} = 1;
	}
}
is_deeply(\@upward, [], 'no file includes a header of a higher layer');

my (%state, @cycle);
sub visit
{
	my ($module, @path) = @_;
	return if @cycle;
	if (($state{$module} // '') eq 'open')
	{
		@cycle = (@path, $module);
		return;
	}
	return if ($state{$module} // '') eq 'done';
	$state{$module} = 'open';
	visit($_, @path, $module) for sort keys %{ $edges{$module} // {} };
	$state{$module} = 'done';
}
visit($_) for sort keys %layer;
is("@cycle", '', 'the includes between modules have no cycle');

done_testing();
