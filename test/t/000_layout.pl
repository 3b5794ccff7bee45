#-------------------------------------------------------------------------
# 000_layout.pl
#	  The source tree is its architecture: src/ holds one directory per
#	  layer, in the order SRC_LAYERS of the Makefile names them (top
#	  first), and
#	  - every C file and header is in one of those directories;
#	  - a file includes schedq headers only of its own layer or of layers
#	    below it, and the modules form no include cycle;
#	  - a header declares only what its own .c file defines;
#	  - every function a .c file exports carries its module's prefix
#	    (schedq_<file name>_...), but SQL-callable functions (named for
#	    their SQL function) and background worker entry points;
#	  - no SQL text outside src/store/ names schedq.task (a string with
#	    FROM, INTO, UPDATE, JOIN or TABLE before it);
#	  - no header has the name of a PostgreSQL header;
#	  - no C file has more than 800 lines.
#	  Reads the tree; starts no server.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Basename qw(basename dirname);
use Test::More;

my $top = $ENV{SCHEDQ_SRCDIR} // '.';

# A check that a list of offenders is empty, naming them all when not.
sub none
{
	my ($list, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok(!@$list, $name) or diag join("\n", @$list);
}

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

my ($layers) = slurp("$top/Makefile") =~ /^SRC_LAYERS\s*=\s*(.+)$/m
  or BAIL_OUT('the Makefile has no SRC_LAYERS');
my @layers = split ' ', $layers;
my %rank = map { $layers[$_] => $_ } 0 .. $#layers;
ok(@layers >= 5, "the layers, top first: @layers");

opendir(my $dh, "$top/src") or die "cannot list src: $!";
my @entries = grep { !/^\./ } readdir $dh;
closedir $dh;
is_deeply([ grep { !-d "$top/src/$_" && !/\.md$/ } sort @entries ],
	[], 'src/ holds only the layer directories (and their README)');
is_deeply([ sort grep { -d "$top/src/$_" } @entries ], [ sort @layers ],
	'every directory of src/ is a layer the Makefile names, and each exists');

my (@files, %module_of);
for my $layer (@layers)
{
	opendir(my $ldh, "$top/src/$layer") or next;
	for my $f (sort grep { /\.[ch]$/ } readdir $ldh)
	{
		push @files, "$layer/$f";
	}
	closedir $ldh;
}
ok(@files > 40, scalar(@files) . ' source files');

# Includes point down the layers, and modules form no cycle.
my (@upward, @unknown, %edges);
# A module is a .c file with its header; X_int.h, the private header of a
# module split over several files, belongs to module X.
sub module_of
{
	my ($path) = @_;
	(my $module = $path) =~ s/\.[ch]$//;
	$module =~ s/_int$//;
	return $module;
}

for my $f (@files)
{
	my $module = module_of($f);
	my ($layer) = $f =~ m{^(\w+)/};
	my $text = slurp("$top/src/$f");
	while ($text =~ /^#include "([\w\/]+)\.h"/mg)
	{
		my $to = $1;
		my ($to_layer) = $to =~ m{^(\w+)/};
		next unless defined $to_layer && exists $rank{$to_layer};
		next if module_of("$to.h") eq $module;
		push @unknown, "$f -> $to.h" unless -e "$top/src/$to.h";
		push @upward, "$f -> $to.h" if $rank{$to_layer} < $rank{$layer};
		$edges{$module}{ module_of("$to.h") } = 1;
	}
	push @unknown, "$f: a schedq header included without its directory"
	  if $text =~ /^#include "(\w+)\.h"/m && -e "$top/src/$layers[-1]/$1.h";
}
none(\@upward, 'no file includes a header of a higher layer');
none(\@unknown, 'every schedq header is included by its path');

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
visit($_) for sort keys %edges;
is("@cycle", '', 'the includes between modules have no cycle');

# Headers declare only their own module's functions; exported functions
# carry the module's prefix.
my (@foreign, @unprefixed);
for my $h (grep { /\.h$/ } @files)
{
	my $module = module_of($h);
	my $text = slurp("$top/src/$h");
	# the module's files: X.c, or X.c and X_*.c behind X_int.h
	my $code = join '', map { slurp($_) } grep { -e $_ } "$top/src/$module.c",
	  ($h =~ /_int\.h$/ ? glob("$top/src/${module}_*.c") : ());
	while ($text =~ /^extern\s+(?:PGDLLEXPORT\s+)?[^;(]*?\b(\w+)\s*\(/mg)
	{
		my $function = $1;
		push @foreign, "$h: $function"
		  unless $code =~ /^\w[^\n;]*\n?\Q$function\E\(/m;
	}
}
none(\@foreign, 'each header declares only what its own .c defines');

for my $c (grep { /\.c$/ } @files)
{
	my $prefix = 'schedq_' . basename($c, '.c') . '_';
	my $text = slurp("$top/src/$c");
	my %sql_callable = map { $_ => 1 } $text =~ /PG_FUNCTION_INFO_V1\((\w+)\)/g;
	# a definition: a line starting with the name, after a line with the
	# return type that is not static
	while ($text =~ /^((?:[\w ]+\*?)[ \t]*)\n(\w+)\(/mg)
	{
		my ($type, $function) = ($1, $2);
		next if $type =~ /\bstatic\b/ || $type =~ /^\s*$/;
		next if $sql_callable{$function} || $function eq '_PG_init';
		next if $function =~ /_main$/ && $text =~ /PGDLLEXPORT void $function/;
		push @unprefixed, "$c: $function"
		  unless index($function, $prefix) == 0
		  || $function eq 'schedq_' . basename($c, '.c');
	}
}
none(\@unprefixed, 'every exported function carries its module\'s prefix (schedq_<file>_)');

# Only store/ knows the task table.
my @knows_task;
for my $f (grep { $_ !~ m{^store/} } @files)
{
	my $text = slurp("$top/src/$f");
	$text =~ s{/\*.*?\*/}{}gs;	   # comments are prose
	push @knows_task, $f
	  if $text =~ /"[^"\n]*\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+schedq\.task\b/i;
}
none(\@knows_task, 'no SQL outside src/store/ names schedq.task');

# No header shadows a PostgreSQL header: no basename PostgreSQL's include
# tree has anywhere.
my $pg_include = `pg_config --includedir-server 2>/dev/null`;
chomp $pg_include;
SKIP:
{
	skip 'pg_config not found', 1 unless $pg_include && -d $pg_include;
	my %pg_headers;
	for my $path (split /\n/, `find '$pg_include' -name '*.h'`)
	{
		$pg_headers{ basename($path) } = $path;
	}
	my @shadow = map { "$_ (like $pg_headers{basename($_)})" }
	  grep { $pg_headers{ basename($_) } } grep { /\.h$/ } @files;
	none(\@shadow, 'no schedq header has the name of a PostgreSQL header');
}

my @long;
for my $f (grep { /\.c$/ } @files)
{
	my $lines = () = slurp("$top/src/$f") =~ /\n/g;
	push @long, "$f ($lines lines)" if $lines > 800;
}
opendir(my $cdh, "$top/schedqctl") or die "cannot list schedqctl: $!";
for my $f (sort grep { /\.c$/ } readdir $cdh)
{
	my $lines = () = slurp("$top/schedqctl/$f") =~ /\n/g;
	push @long, "schedqctl/$f ($lines lines)" if $lines > 800;
}
closedir $cdh;
none(\@long, 'no C file has more than 800 lines');

done_testing();
