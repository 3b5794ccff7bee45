#-------------------------------------------------------------------------
# test/t/066_reference.pl
#	  docs/reference.md is the contract, so it must be the extensions'
#	  (schedq's, and schedq_cron's in schema cron):
#	  - every function and procedure of the extensions has its heading
#	    ("### Function schedq.NAME", "### Function cron.NAME" or
#	    "### Procedure schedq.NAME") and, in the first sql block under
#	    it, exactly the catalog's signature (pg_get_function_arguments,
#	    and RETURNS pg_get_function_result for a function; whitespace is
#	    free; an overloaded name has each signature, in the order of their
#	    arguments); and every such heading names a function of them;
#	  - every table, view and composite type has its heading ("### Table
#	    schedq.NAME", "### View cron.NAME", ...) with a table row
#	    "| `column` |" for each of its columns, and every such heading
#	    names one;
#	  - every schedq.* setting has its heading ("### Setting NAME") whose
#	    section states its type, default, range and context as pg_settings
#	    has them, and every such heading names a setting;
#	  - every counter schedq.metrics() returns has its row "| `name` |"
#	    under "## Metrics", and every such row names one;
#	  - every state scheduler_status() can show (read from the source) is
#	    named in its section, and the exporter's state query
#	    (monitoring/postgres_exporter/queries.yaml) lists exactly those;
#	  - the README says docs/reference.md is the reference;
#	  - no file of the repository refers to a file outside it.
#
#	  Run by test/check.sh, which copies the tracked files and writes
#	  their list to .tracked-files in the copy.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Find;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $top = $ENV{SCHEDQ_SRCDIR} // '.';

sub read_doc
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

sub squash
{
	my ($s) = @_;
	$s =~ s/\s+/ /g;
	$s =~ s/\( /(/g;
	$s =~ s/ \)/)/g;
	$s =~ s/^ | $//g;
	return $s;
}

my $ref = read_doc("$top/docs/reference.md");

# Sections by heading: "### Kind name" -> the text up to the next heading
# of level 1 to 3.
my (%section, @twice);
while ($ref =~ /^### (Function|Procedure|Table|View|Type|Setting) (\S+)[ \t]*\n(.*?)(?=^#{1,3} |\z)/msg)
{
	my ($kind, $name, $body) = ($1, $2, $3);
	push @twice, "$kind $name" if exists $section{"$kind $name"};
	$section{"$kind $name"} = $body;
}
is_deeply(\@twice, [], 'no heading of the reference appears twice');
ok(scalar(keys %section) > 50, 'the reference has its headings')
  or diag 'found: ' . join(', ', sort keys %section);

my $node = schedq_node('reference', extension => 'postgres');
$node->safe_psql('postgres', 'CREATE EXTENSION schedq_cron');

sub rows
{
	my ($query) = @_;
	my $out = $node->safe_psql('postgres', $query);
	return map { [ split /\|/, $_, -1 ] } grep { $_ ne '' } split /\n/, $out;
}

# Functions and procedures.
my @procs = rows(
	q{SELECT CASE p.prokind WHEN 'p' THEN 'Procedure' ELSE 'Function' END,
			 p.pronamespace::regnamespace || '.' || p.proname,
			 pg_get_function_arguments(p.oid),
			 CASE p.prokind WHEN 'p' THEN ''
				  ELSE ' RETURNS ' || pg_get_function_result(p.oid) END
		FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
	   WHERE d.classid = 'pg_proc'::regclass
		 AND d.refclassid = 'pg_extension'::regclass
		 AND d.refobjid IN (SELECT oid FROM pg_extension
							 WHERE extname IN ('schedq', 'schedq_cron'))
		 AND d.deptype = 'e'
	   ORDER BY 2, 3});
ok(@procs > 30, 'the extensions have their functions');
ok((grep { $_->[1] eq 'cron.schedule' } @procs) == 2,
	'schedq_cron\'s functions are among them');
my (@undocumented, @wrong, %is_proc, %signatures);
for my $p (@procs)
{
	my ($kind, $name, $args, $result) = @$p;
	push @{ $signatures{"$kind $name"} }, squash("$name($args)$result");
}
for my $key (sort keys %signatures)
{
	my ($kind, $name) = split / /, $key;
	$is_proc{$key} = 1;
	my $body = $section{$key};
	if (!defined $body)
	{
		push @undocumented, $key;
		next;
	}
	my $want = join(' ', @{ $signatures{$key} });
	my ($block) = $body =~ /```sql\n(.*?)```/s;
	my $got = squash($block // '');
	push @wrong, "$name:\n  reference: $got\n  catalog:   $want"
	  unless $got eq $want;
}
is_deeply(\@undocumented, [],
	'every function and procedure of the extension is in the reference');
is_deeply(\@wrong, [], 'each signature in the reference is the catalog\'s');
my @stray = grep { /^(Function|Procedure) / && !$is_proc{$_} } sort keys %section;
is_deeply(\@stray, [],
	'every function the reference lists exists in the extension');

# Tables, views and composite types, with their columns.
my %relkind = (r => 'Table', v => 'View', c => 'Type');
my %columns;
for my $r (rows(
		q{SELECT c.relkind, n.nspname || '.' || c.relname, a.attname
			FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
							   AND NOT a.attisdropped
		   WHERE n.nspname IN ('schedq', 'cron') AND c.relkind IN ('r', 'v', 'c')
		   ORDER BY c.relname, a.attnum}))
{
	my ($kind, $name, $column) = @$r;
	push @{ $columns{"$relkind{$kind} $name"} }, $column;
}
ok(exists $columns{'Table schedq.task'}, 'the extension has its tables');
ok(exists $columns{'Table cron.job'}, 'schedq_cron has its tables');
my (@missing_rel, @missing_col);
for my $rel (sort keys %columns)
{
	my $body = $section{$rel};
	if (!defined $body)
	{
		push @missing_rel, $rel;
		next;
	}
	push @missing_col, map { "$rel.$_" }
	  grep { $body !~ /^\| `\Q$_\E` \|/m } @{ $columns{$rel} };
}
is_deeply(\@missing_rel, [],
	'every table, view and type of the extension is in the reference');
is_deeply(\@missing_col, [],
	'every column of each is in its section of the reference');
@stray = grep { /^(Table|View|Type) / && !$columns{$_} } sort keys %section;
is_deeply(\@stray, [],
	'every table, view and type the reference lists exists');

# Settings: type, default, range and context as pg_settings says.
my (@missing_guc, @wrong_guc, %is_guc);
for my $g (rows(
		q{SELECT name, vartype, boot_val, coalesce(min_val, ''),
				 coalesce(max_val, ''), context
			FROM pg_settings WHERE name LIKE 'schedq.%' ORDER BY name}))
{
	my ($name, $type, $boot, $min, $max, $context) = @$g;
	$is_guc{"Setting $name"} = 1;
	my $body = $section{"Setting $name"};
	if (!defined $body)
	{
		push @missing_guc, $name;
		next;
	}
	my @want = ("Type `$type`", "default `$boot`", "context `$context`");
	push @want, "range `$min` to `$max`" if $min ne '';
	my $flat = squash($body);
	push @wrong_guc, map { "$name: no \"$_\"" } grep { index($flat, $_) < 0 } @want;
}
ok(scalar(keys %is_guc) >= 10, 'schedq defines its settings');
is_deeply(\@missing_guc, [], 'every schedq.* setting is in the reference');
is_deeply(\@wrong_guc, [],
	'each setting\'s type, default, range and context are pg_settings\'s');
@stray = grep { /^Setting / && !$is_guc{$_} } sort keys %section;
is_deeply(\@stray, [], 'every setting the reference lists exists');

# Metrics.
my ($metrics) = $ref =~ /^## Metrics\n(.*?)(?=^## |\z)/ms;
$metrics //= '';
my %documented = map { $_ => 1 } $metrics =~ /^\| `(\w+)` \|/mg;
my @names = map { $_->[0] } rows('SELECT name FROM schedq.metrics()');
ok(@names >= 14, 'metrics() returns its counters');
is_deeply([ grep { !$documented{$_} } @names ], [],
	'every metric is in the reference\'s Metrics section');
my %is_metric = map { $_ => 1 } @names;
is_deeply([ grep { !$is_metric{$_} } sort keys %documented ], [],
	'every metric the reference lists is one metrics() returns');

# Scheduler states: every state scheduler_status() can show (the names
# of src/shared/databases.c, and 'no worker slot' of src/api/observe.c) is
# in the reference's section of scheduler_status, and the exporter's
# state query lists exactly those.
my ($state_array) = read_doc("$top/src/shared/databases.c")
  =~ /schedq_databases_state_names\[\]\s*=\s*\{(.*?)\};/s;
my @states = ($state_array // '') =~ /"([^"]+)"/g;
push @states, 'no worker slot'
  if read_doc("$top/src/api/observe.c") =~ /"no worker slot"/;
ok((grep { $_ eq 'read-only' } @states) && (grep { $_ eq 'idle' } @states),
	'the scheduler\'s states are found, read-only among them')
  or diag 'found: ' . join(', ', @states);
my $status_doc = $section{'Function schedq.scheduler_status'} // '';
is_deeply([ grep { index($status_doc, "`$_`") < 0 } @states ], [],
	'every scheduler state is in the reference\'s scheduler_status');
my ($exported) = read_doc("$top/monitoring/postgres_exporter/queries.yaml")
  =~ /FROM \(VALUES (.*?)\) k\(state\)/s;
is_deeply([ sort(($exported // '') =~ /\('([^']+)'\)/g) ], [ sort @states ],
	'the exporter\'s state query lists every scheduler state');

$node->stop;

# The README points at the reference, and every anchor linked, from the
# README or within the reference, is a heading of it (GitHub's slugs:
# lower case, punctuation dropped, spaces to hyphens).
my $readme = read_doc("$top/README.md");
like($readme, qr{\(docs/reference\.md(#[\w-]*)?\)},
	'the README links to docs/reference.md');
my %anchor;
for my $h ($ref =~ /^#+ (.+?)\s*$/mg)
{
	(my $slug = lc $h) =~ s/[^\w\- ]//g;
	$slug =~ s/ /-/g;
	$anchor{$slug} = 1;
}
my @broken = grep { !$anchor{$_} }
  (($readme =~ /\(docs\/reference\.md#([^)\s]+)\)/g),
	($ref =~ /\]\(#([^)\s]+)\)/g));
is_deeply(\@broken, [], 'every link into the reference names one of its headings');

# No file refers outside the repository.  The patterns are built from
# pieces so that this file does not match them.
my @files;
if (-e "$top/.tracked-files")
{
	@files = grep { $_ ne '' } split /\n/, read_doc("$top/.tracked-files");
}
else
{
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
}
ok(@files > 100, 'the repository\'s files are listed') or diag scalar @files;
my @outside = ('..' . '/shared', 'SPEC' . '.md', 'STYLE' . '.md', '/wo' . 'rk/');
my @refers;
for my $f (@files)
{
	next unless -f "$top/$f";
	my $text = read_doc("$top/$f");
	for my $p (@outside)
	{
		push @refers, "$f: $p" if index($text, $p) >= 0;
	}
}
is_deeply(\@refers, [], 'no file refers to a file outside the repository');

done_testing();
