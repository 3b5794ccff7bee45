#-------------------------------------------------------------------------
# 070_package.pl
#	  The release packages.  What is packaged is HEAD of the source tree's
#	  git repository ($SCHEDQ_REPO, which check.sh passes; uncommitted
#	  changes are not in the packages and not tested here):
#	  1. META.json is valid against the PGXN Meta Spec 1.0.0 (checked here
#	     with JSON::PP: no validator is reachable) and its version agrees
#	     with schedq.control's default_version and debian/changelog;
#	  2. `make dist` makes schedq-VERSION.zip with one top directory holding
#	     the whole source, and the unpacked archive builds (make with the
#	     pg_config first in PATH: the server check.sh tests);
#	  3. as root only, on Debian's own server of the major under test
#	     (PostgreSQL 15 on bookworm, 17 in the matrix's trixie root; a
#	     server built elsewhere skips this part): `make deb` makes
#	     postgresql-NN-schedq_VERSION-1_ARCH.deb; the files `make install`
#	     put into the system PostgreSQL NN are saved and removed, the .deb
#	     is installed with dpkg, a throwaway server of the SYSTEM
#	     PostgreSQL NN runs CREATE EXTENSION schedq and
#	     a smoke test (submit, claim, complete; promotion of a run_at task;
#	     the packaged schedqctl submits); schedqctl is on PATH (command -v
#	     schedqctl: /usr/bin/schedqctl, an alternative leading to the
#	     package's) and man finds its page (man -w schedqctl:
#	     /usr/share/man/man1/schedqctl.1.gz, an alternative leading to the
#	     package's gzipped page); then the package is purged (the
#	     alternatives go with it) and the
#	     saved files are put back byte for byte, also when the test fails
#	     or is interrupted (END block).
# check.sh: run as root
#-------------------------------------------------------------------------
use strict;
use warnings;

use Cwd qw(abs_path);
use Digest::SHA;
use File::Basename qw(dirname);
use File::Path qw(make_path remove_tree);
use File::Spec;
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);

my $repo = $ENV{SCHEDQ_REPO} // abs_path(dirname(__FILE__) . '/../..');
plan skip_all => "no git repository at $repo (set SCHEDQ_REPO)"
  unless -e "$repo/.git" && -f "$repo/Makefile";

# git refuses a repository owned by another user; this test only reads it.
$ENV{GIT_CONFIG_COUNT} = 1;
$ENV{GIT_CONFIG_KEY_0} = 'safe.directory';
$ENV{GIT_CONFIG_VALUE_0} = '*';
# Nothing of a calling make may reach the makes run here.
delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL)};

my $base = $ENV{TESTDIR} ? "$ENV{TESTDIR}/tmp_check" : undef;
make_path($base) if $base;
my $tmp = tempdir('070_package.XXXXXX', DIR => $base // File::Spec->tmpdir,
	CLEANUP => 1);
chmod 0755, $tmp;

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# Run a command; its output goes to a log file.  Returns (ok, output).
sub run_logged
{
	my ($name, @cmd) = @_;
	my $log = "$tmp/$name.log";
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		open(STDOUT, '>', $log) or die;
		open(STDERR, '>&', \*STDOUT) or die;
		open(STDIN, '<', '/dev/null') or die;
		exec(@cmd) or die "exec $cmd[0]: $!";
	}
	waitpid($pid, 0);
	my $ok = $? == 0;
	my $out = -e $log ? slurp($log) : '';
	diag("$name failed (@cmd):\n" . tail($out)) unless $ok;
	return ($ok, $out);
}

# The full path of a program in PATH, or undef.
sub which
{
	my ($prog) = @_;
	for my $dir (split /:/, $ENV{PATH} // '')
	{
		return "$dir/$prog" if length $dir && -f "$dir/$prog" && -x _;
	}
	return undef;
}

sub tail
{
	my @l = split /\n/, $_[0];
	splice(@l, 0, @l - 40) if @l > 40;
	return join("\n", @l);
}

#
# 1. META.json against the PGXN Meta Spec 1.0.0 (https://pgxn.org/meta/spec.txt).
#
my $semver = qr/^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)
	(?:-?[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/x;
my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1
  artistic_2 bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1
  lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl perl_5 postgresql qpl_1_0
  ssleay sun zlib open_source restricted unrestricted unknown);
my $term = qr/^[^\/\\\s\p{Cntrl}]{2,}$/;
my $tag = qr/^[^\/\\\p{Cntrl}]{2,255}$/;
my $uri = qr/^[a-z][a-z0-9+.-]*:\S+$/i;

sub str { defined $_[0] && !ref $_[0] && length $_[0] }

# The spec's rules, as a list of errors (empty: valid).  $tree: where the
# files named by provides must exist.
sub validate_meta
{
	my ($m, $tree) = @_;
	my @e;
	return ('not a JSON object') unless ref $m eq 'HASH';
	my %known = map { $_ => 1 } qw(name abstract description version
	  maintainer license provides prereqs release_status resources tags
	  generated_by no_index meta-spec);
	push @e, "unknown key $_" for grep { !$known{$_} && !/^x_/i } sort keys %$m;

	push @e, 'name: a term of 2+ characters, no slash, backslash or space'
	  unless str($m->{name}) && $m->{name} =~ $term;
	push @e, 'abstract: a non-empty string' unless str($m->{abstract});
	push @e, 'description: a string'
	  if exists $m->{description} && !str($m->{description});
	push @e, 'version: a semantic version'
	  unless str($m->{version}) && $m->{version} =~ $semver;

	my $mt = $m->{maintainer};
	push @e, 'maintainer: a string or a non-empty list of strings'
	  unless str($mt)
	  || (ref $mt eq 'ARRAY' && @$mt && !grep { !str($_) } @$mt);

	my $l = $m->{license};
	push @e, 'license: a spec license string, a list of them, or {name: URI}'
	  unless (str($l) && $licenses{$l})
	  || (ref $l eq 'ARRAY' && @$l && !grep { !str($_) || !$licenses{$_} } @$l)
	  || (ref $l eq 'HASH' && %$l && !grep { !str($_) || $_ !~ $uri } values %$l);

	my $p = $m->{provides};
	if (ref $p ne 'HASH' || !%$p)
	{
		push @e, 'provides: a non-empty object';
	}
	else
	{
		for my $ext (sort keys %$p)
		{
			my $x = $p->{$ext};
			if (ref $x ne 'HASH') { push @e, "provides.$ext: an object"; next; }
			push @e, "provides.$ext: a term" unless $ext =~ $term;
			push @e, "provides.$ext.file: a path to an existing file"
			  unless str($x->{file}) && -f "$tree/$x->{file}";
			push @e, "provides.$ext.version: a semantic version"
			  unless str($x->{version}) && $x->{version} =~ $semver;
			push @e, "provides.$ext.docfile: an existing file"
			  if exists $x->{docfile}
			  && !(str($x->{docfile}) && -f "$tree/$x->{docfile}");
			for my $k (sort keys %$x)
			{
				push @e, "provides.$ext: unknown key $k"
				  unless $k =~ /^(file|version|abstract|docfile)$/ || $k =~ /^x_/i;
			}
		}
	}

	if (exists $m->{prereqs})
	{
		my $pr = $m->{prereqs};
		if (ref $pr ne 'HASH') { push @e, 'prereqs: an object'; }
		else
		{
			for my $phase (sort keys %$pr)
			{
				push @e, "prereqs.$phase: not a phase"
				  unless $phase =~ /^(configure|build|test|runtime|develop)$/;
				my $rels = $pr->{$phase};
				if (ref $rels ne 'HASH') { push @e, "prereqs.$phase: an object"; next; }
				for my $rel (sort keys %$rels)
				{
					push @e, "prereqs.$phase.$rel: not a relationship"
					  unless $rel =~ /^(requires|recommends|suggests|conflicts)$/;
					my $deps = $rels->{$rel};
					if (ref $deps ne 'HASH') { push @e, "prereqs.$phase.$rel: an object"; next; }
					for my $d (sort keys %$deps)
					{
						my $v = $deps->{$d};
						push @e, "prereqs.$phase.$rel.$d: 0, a semantic version or a range"
						  unless str($v)
						  && ($v eq '0' || $v =~ $semver
							|| !grep { !/^\s*(?:[<>]=?|[!=]=)\s*\S+\s*$/ || !(/(\S+)\s*$/ && $1 =~ $semver) }
							split /,/, $v);
					}
				}
			}
		}
	}
	push @e, 'release_status: stable, testing or unstable'
	  if exists $m->{release_status}
	  && !(str($m->{release_status}) && $m->{release_status} =~ /^(stable|testing|unstable)$/);
	if (exists $m->{resources})
	{
		my $r = $m->{resources};
		if (ref $r ne 'HASH') { push @e, 'resources: an object'; }
		else
		{
			for my $k (sort keys %$r)
			{
				push @e, "resources: unknown key $k"
				  unless $k =~ /^(homepage|bugtracker|repository)$/ || $k =~ /^x_/i;
			}
			push @e, 'resources.homepage: a URI'
			  if exists $r->{homepage} && !(str($r->{homepage}) && $r->{homepage} =~ $uri);
			for my $k (qw(bugtracker repository))
			{
				next unless exists $r->{$k};
				push @e, "resources.$k: an object" unless ref $r->{$k} eq 'HASH';
			}
		}
	}
	push @e, 'tags: a non-empty list of tags (2 to 255 characters, no slash or backslash)'
	  if exists $m->{tags}
	  && !(ref $m->{tags} eq 'ARRAY' && @{ $m->{tags} }
		&& !grep { !str($_) || $_ !~ $tag } @{ $m->{tags} });
	push @e, 'generated_by: a string'
	  if exists $m->{generated_by} && !str($m->{generated_by});
	my $ms = $m->{'meta-spec'};
	push @e, 'meta-spec: {version: "1.0.0", url}'
	  unless ref $ms eq 'HASH' && str($ms->{version}) && $ms->{version} =~ $semver
	  && $ms->{version} =~ /^1\./
	  && (!exists $ms->{url} || (str($ms->{url}) && $ms->{url} =~ $uri));
	return @e;
}

# Everything below looks at HEAD as `make dist` packs it.
my ($ok, $out) = run_logged('dist', 'make', '-C', $repo, '--no-print-directory',
	"DIST_DIR=$tmp/dist", 'dist');
ok($ok, 'make dist');
my ($zip) = glob("$tmp/dist/schedq-*.zip");
BAIL_OUT('make dist made no schedq-*.zip') unless $zip;

my @entries = grep { length } split /\n/, `unzip -Z1 '$zip'`;
ok(@entries > 10, 'unzip lists the archive') or diag("unzip -Z1 $zip failed");
my %top = map { (m{^([^/]+)})[0] => 1 } @entries;
my ($topdir) = keys %top;
is(scalar(keys %top), 1, 'the archive has a single top directory');
my %in = map { $_ => 1 } @entries;
my @missing = grep { !$in{"$topdir/$_"} } qw(META.json Makefile schedq.control
  LICENSE README.md src/ sql/ schedqctl/ debian/ debian/control debian/rules);
is_deeply(\@missing, [], 'the archive holds META.json, Makefile, schedq.control, src/, sql/, schedqctl/, debian/');

system('unzip', '-q', $zip, '-d', "$tmp/unpacked") == 0 or BAIL_OUT("unzip $zip failed");
my $tree = "$tmp/unpacked/$topdir";

my $meta = eval { JSON::PP->new->decode(slurp("$tree/META.json")) };
ok($meta, 'META.json is JSON') or diag($@);
my @errors = validate_meta($meta, $tree);
is_deeply(\@errors, [], 'META.json is valid against the PGXN Meta Spec 1.0.0');

# The validator finds what it is there to find.
my %broken = (
	'license not in the spec list' => sub { $_[0]{license} = 'PostgreSQL License' },
	'version not semantic' => sub { $_[0]{version} = '1.1' },
	'provides without file' => sub { delete $_[0]{provides}{schedq}{file} },
	'provides with a missing file' => sub { $_[0]{provides}{schedq}{file} = 'sql/nope.sql' },
	'schedq_cron provides a missing file' => sub { $_[0]{provides}{schedq_cron}{file} = 'sql/nope.sql' },
	'no meta-spec' => sub { delete $_[0]{'meta-spec'} },
	'no maintainer' => sub { delete $_[0]{maintainer} },
	'bad release_status' => sub { $_[0]{release_status} = 'final' },
	'bad prereq version' => sub { $_[0]{prereqs}{runtime}{requires}{PostgreSQL} = '15' },
	'unknown key' => sub { $_[0]{homepage} = 'https://example.org' },
);
my @unnoticed;
for my $what (sort keys %broken)
{
	my $copy = JSON::PP->new->decode(JSON::PP->new->encode($meta // {}));
	$broken{$what}->($copy);
	push @unnoticed, $what unless validate_meta($copy, $tree);
}
is_deeply(\@unnoticed, [], 'the META.json validator rejects broken copies');

my $version = $meta->{version} // '';
my ($default) = slurp("$tree/schedq.control") =~ /^default_version\s*=\s*'([^']+)'/m;
is("$default.0", $version, "META.json version is schedq.control's default_version ($default)");
is($meta->{provides}{schedq}{version}, $version, 'provides.schedq.version is the same');
is($meta->{provides}{schedq}{file}, "sql/schedq--$default.sql",
	"provides.schedq.file is the fresh-install script of $default");
my ($cron_default) = slurp("$tree/schedq_cron.control") =~ /^default_version\s*=\s*'([^']+)'/m;
is($meta->{provides}{schedq_cron}{file}, "sql/schedq_cron--$cron_default.sql",
	"provides.schedq_cron.file is its install script of $cron_default");
my ($deb_version) = slurp("$tree/debian/changelog") =~ /^schedq \(([^)]+)\)/;
is($deb_version, "$version-1", "debian/changelog's first entry is $version-1");
is($meta->{prereqs}{runtime}{requires}{PostgreSQL}, '>= 15.0.0, < 20.0.0',
	'requires PostgreSQL 15 to 19');
like($zip, qr{/schedq-\Q$version\E\.zip$}, 'the archive is named after the version');
is($topdir, "schedq-$version", "its top directory is schedq-$version");

# The unpacked release archive builds on its own.
my $pg_config = which('pg_config') // '/usr/lib/postgresql/15/bin/pg_config';
($ok) = run_logged('build_dist', 'make', '-C', $tree, "PG_CONFIG=$pg_config",
	'WERROR=1', 'all');
ok($ok && -f "$tree/schedq.so" && -x "$tree/schedqctl/schedqctl",
	"the unpacked archive builds (make PG_CONFIG=$pg_config)");
remove_tree("$tmp/unpacked");

#
# 3. The Debian package, installed on this machine.
#
my ($major) = `$pg_config --version` =~ /PostgreSQL (\d+)/;
$major //= 15;
my $sysbin = "/usr/lib/postgresql/$major/bin";
my $why_not =
	$> != 0 ? 'not root: installing a .deb needs root (check.sh runs this file as root when it runs as root)'
  : !which('dpkg-buildpackage') ? 'dpkg-buildpackage missing (apt-get install devscripts debhelper)'
  : !which('pg_buildext') ? 'pg_buildext missing (apt-get install postgresql-server-dev-all)'
  : !-x "$sysbin/postgres" ? "no system PostgreSQL $major ($sysbin/postgres)"
  : $pg_config ne "$sysbin/pg_config" ? "the server under test ($pg_config) is not Debian's PostgreSQL $major"
  : undef;
if ($why_not)
{
	diag("skipping the Debian package: $why_not");
	done_testing();
	exit 0;
}

my $user = $ENV{SCHEDQ_CHECK_USER} // 'postgres';
my ($uid, $gid) = (getpwnam($user))[ 2, 3 ];
BAIL_OUT("OS user $user does not exist") unless defined $uid;

($ok) = run_logged('make_deb', 'make', '-C', $repo, '--no-print-directory',
	"DEB_DIR=$tmp/deb", 'deb');
chomp(my $arch = `dpkg --print-architecture`);
my $deb = "$tmp/deb/postgresql-$major-schedq_$version-1_$arch.deb";
ok($ok && -f $deb, "make deb makes postgresql-$major-schedq_$version-1_$arch.deb");
BAIL_OUT('no .deb to install') unless -f $deb;

my $pkg = "postgresql-$major-schedq";
sub installed
{
	my $s = `dpkg-query -W -f='\${Status}' $pkg 2>/dev/null`;
	return $s =~ /\S/ && $s !~ /not-installed$/;
}
BAIL_OUT("$pkg is already installed: dpkg --purge $pkg first (this test will not touch it)")
  if installed();

# dpkg waits for no one: retry while another engineer's apt or dpkg holds
# the lock.
sub dpkg
{
	my ($name, @args) = @_;
	my $deadline = time + 300;
	while (1)
	{
		my ($ok, $out) = run_logged($name, 'dpkg', @args);
		return ($ok, $out) if $ok || $out !~ /lock/i || time > $deadline;
		sleep 2;
	}
}

# What make install put into the system PostgreSQL.
my @system_files = grep { -e $_ || -l $_ } (
	"/usr/lib/postgresql/$major/lib/schedq.so",
	"/usr/lib/postgresql/$major/lib/bitcode/schedq.index.bc",
	"/usr/lib/postgresql/$major/lib/bitcode/schedq",
	glob("/usr/share/postgresql/$major/extension/schedq.control"),
	glob("/usr/share/postgresql/$major/extension/schedq--*.sql"),
	glob("/usr/share/postgresql/$major/extension/schedq_cron.control"),
	glob("/usr/share/postgresql/$major/extension/schedq_cron--*.sql"),
	"$sysbin/schedqctl",
	glob("/usr/share/postgresql/$major/man/man1/schedqctl.1*"),
	glob('/usr/share/man/man1/schedqctl.1*'),
	glob('/usr/local/share/man/man1/schedqctl.1*'));
my $save = "$tmp/saved";
make_path($save);

# path -> sha256 of every file saved (and of every file under a directory).
sub digests
{
	my ($root) = @_;
	my %d;
	for my $p (@_ > 1 ? @_[ 1 .. $#_ ] : ())
	{
		my $src = "$root$p";
		if (-d $src && !-l $src)
		{
			for my $f (split /\0/, `find '$src' -type f -print0`)
			{
				(my $rel = $f) =~ s/^\Q$root\E//;
				$d{$rel} = Digest::SHA->new(256)->addfile($f)->hexdigest;
			}
		}
		elsif (-e $src)
		{
			$d{$p} = Digest::SHA->new(256)->addfile($src)->hexdigest;
		}
	}
	return \%d;
}

my $before = digests('', @system_files);
my $saved_ok = 1;
for my $p (@system_files)
{
	make_path(dirname("$save$p"));
	$saved_ok &&= system('cp', '-a', $p, dirname("$save$p")) == 0;
}
my $copies = digests($save, @system_files);
$saved_ok &&= JSON::PP->new->canonical->encode($copies) eq
  JSON::PP->new->canonical->encode($before);
ok($saved_ok, scalar(@system_files) . ' files of make install saved byte for byte')
  or BAIL_OUT("could not save the make install files into $save (nothing was changed)");
# From here on, END puts the saved files back; never before: restoring
# removes the files first.
my $armed = 1;
my $restored = 0;

my ($server_data, $server_started);

sub stop_server
{
	return unless $server_started;
	system('runuser', '-u', $user, '--', "$sysbin/pg_ctl", '-D', $server_data,
		'-m', 'fast', '-w', '-t', '60', 'stop');
	$server_started = 0;
}

# Put things back as they were: no package, the saved files.  Returns
# whether the files are exactly the saved ones again.
sub restore
{
	return 1 if $restored || !$armed;
	stop_server();
	if (installed())
	{
		dpkg('purge_on_restore', '--purge', $pkg);
	}
	for my $p (@system_files)
	{
		my $copy = "$save$p";
		if (!-e $copy && !-l $copy)
		{
			warn "070_package: no saved copy of $p: left as it is\n";
			next;
		}
		system('rm', '-rf', $p) if -e $p || -l $p;
		make_path(dirname($p));
		system('cp', '-a', $copy, dirname($p)) == 0
		  or warn "070_package: could not restore $p from $copy\n";
	}
	my $after = digests('', @system_files);
	$restored = 1;
	return JSON::PP->new->canonical->encode($after) eq
	  JSON::PP->new->canonical->encode($before);
}

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub { die "070_package: killed by a signal\n" };
END
{
	if ($armed && !$restored)
	{
		my $keep = $?;
		my $same = restore();
		print STDERR "# 070_package: files of make install restored"
		  . ($same ? "\n" : " BUT THEY DIFFER; copies in $save\n");
		# The copies must outlive a failed restore.
		if (!$same)
		{
			system('cp', '-a', $save, "/tmp/070_package-saved.$$");
			print STDERR "# copies kept in /tmp/070_package-saved.$$\n";
		}
		$? = $keep || ($same ? 0 : 1);
	}
}

system('rm', '-rf', @system_files);
ok(!grep({ -e $_ } @system_files), 'make install files removed');

my ($installed_ok, $dpkg_out) = dpkg('dpkg_install', '-i', $deb);
ok($installed_ok, "dpkg -i $pkg");

my %listed = map { $_ => 1 } split /\n/, `dpkg -L $pkg`;
my @want = ("/usr/lib/postgresql/$major/lib/schedq.so",
	"/usr/share/postgresql/$major/extension/schedq.control",
	"/usr/share/postgresql/$major/extension/schedq--$default.sql",
	"/usr/share/postgresql/$major/extension/schedq--1.0.sql",
	"/usr/share/postgresql/$major/extension/schedq--1.0--1.1.sql",
	"/usr/share/postgresql/$major/extension/schedq--1.1--1.2.sql",
	"/usr/share/postgresql/$major/extension/schedq_cron.control",
	"/usr/share/postgresql/$major/extension/schedq_cron--1.0.sql",
	"$sysbin/schedqctl");
my @unlisted = grep { !$listed{$_} } @want;
# The man page, gzipped, in PostgreSQL's manual directory (as
# postgresql-client-NN's pages are).
my $man = "/usr/share/postgresql/$major/man/man1/schedqctl.1.gz";
push @want, $man;
@unlisted = grep { !$listed{$_} } @want;
is_deeply(\@unlisted, [], 'dpkg -L lists the library, control files, scripts (schedq_cron\'s too), schedqctl and its gzipped man page');
my @absent = grep { !-e $_ } @want;
is_deeply(\@absent, [], 'and they are on disk');
# What is on PATH and in man's path is no package's file: the
# alternatives link it (postgresql-15-schedq and -17- may be co-installed).
is_deeply([ grep { m{^/usr/bin/|^/usr/share/man/} } sort keys %listed ], [],
	'the package ships nothing in /usr/bin or /usr/share/man (alternatives link them)');
($ok) = run_logged('dpkg_verify', 'dpkg', '--verify', $pkg);
ok($ok, 'dpkg --verify: the installed files are the package\'s');

# schedqctl on PATH and man schedqctl, as a user's shell finds them.
sub shell_out
{
	my ($cmd) = @_;
	my $out = `env -i PATH=/usr/bin:/bin LANG=C.UTF-8 sh -c '$cmd' 2>&1`;
	my $status = $?;
	$out =~ s/\s+\z//;
	return ($status == 0, $out);
}
($ok, $out) = shell_out('command -v schedqctl');
is($out, '/usr/bin/schedqctl', 'command -v schedqctl finds /usr/bin/schedqctl');
is(Cwd::realpath('/usr/bin/schedqctl') // '', "$sysbin/schedqctl",
	"... which leads to $sysbin/schedqctl (update-alternatives)");
($ok, $out) = shell_out('schedqctl --version');
like($out, qr/^schedqctl .*\d/, 'schedqctl --version runs from PATH') or diag($out);
# man -w names the file the link leads to, as for psql.
($ok, $out) = shell_out('man -w schedqctl');
ok($ok && Cwd::realpath($out) eq $man, "man -w schedqctl finds the package's page, $man")
  or diag($out);
is(Cwd::realpath('/usr/share/man/man1/schedqctl.1.gz') // '', $man,
	'... through /usr/share/man/man1/schedqctl.1.gz, where man looks (update-alternatives)');
my $magic = '';
if (open(my $gz, '<:raw', $man)) { read($gz, $magic, 2); close $gz; }
is(unpack('H*', $magic), '1f8b', '... which is gzipped');
($ok, $out) = shell_out('MANWIDTH=80 man schedqctl | head -n 20');
like($out, qr/schedqctl - submit, manage and run schedq tasks/, 'man schedqctl shows the page')
  or diag($out);

# A throwaway server of the system PostgreSQL, as $user.
$server_data = "$tmp/data";
my $sock = "$tmp/sock";
make_path($sock);
chown $uid, $gid, $tmp, $sock;
my $port = 20000 + $$ % 20000;
($ok) = run_logged('initdb', 'runuser', '-u', $user, '--', "$sysbin/initdb",
	'-D', $server_data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8');
ok($ok, "initdb (system PostgreSQL $major)");
open(my $conf, '>>', "$server_data/postgresql.conf") or die;
print $conf "shared_preload_libraries = 'schedq'\nlisten_addresses = ''\n"
  . "unix_socket_directories = '$sock'\nport = $port\nfsync = off\n";
close $conf;
($ok) = run_logged('pg_ctl_start', 'runuser', '-u', $user, '--', "$sysbin/pg_ctl",
	'-D', $server_data, '-l', "$tmp/server.log", '-w', '-t', '120', 'start');
$server_started = $ok;
ok($ok, 'the server starts with shared_preload_libraries = schedq')
  or diag(-e "$tmp/server.log" ? tail(slurp("$tmp/server.log")) : 'no log');

sub psql
{
	my ($sql) = @_;
	my $pid = open(my $fh, '-|') // die "fork: $!";
	if ($pid == 0)
	{
		open(STDERR, '>&', \*STDOUT);
		exec("$sysbin/psql", '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1',
			'-h', $sock, '-p', $port, '-U', 'postgres', '-d', 'postgres', '-c', $sql);
	}
	local $/;
	my $out = <$fh> // '';
	close $fh;
	$out =~ s/\s+\z//;
	return ($? == 0, $out);
}

($ok, $out) = psql('CREATE EXTENSION schedq');
ok($ok, 'CREATE EXTENSION schedq') or diag($out);
($ok, $out) = psql('SELECT extversion FROM pg_extension WHERE extname = \'schedq\'');
is($out, $default, "the extension is at $default");

($ok, my $id) = psql(q{SELECT schedq.submit('smoke', payload => '{"n": 1}')});
like($id, qr/^\d+$/, 'submit') or diag($id);
($ok, $out) = psql(q{SELECT id || ' ' || token FROM schedq.claim('smoke-worker', n => 1)});
my ($claimed, $token) = split / /, $out, 2;
is($claimed, $id, 'claim returns the task') or diag($out);
($ok, $out) = psql(qq{SELECT schedq.complete('$token', result => '{"ok": true}')});
is($out, 't', 'complete');
($ok, $out) = psql("SELECT status FROM schedq.task WHERE id = $id");
is($out, 'done', 'the task is done');

# The scheduler (a background worker of the packaged library) promotes a
# task due in one second.
($ok, my $later) = psql(q{SELECT schedq.submit('smoke.later', run_at => now() + interval '1 second')});
($ok, $out) = psql("SELECT status FROM schedq.task WHERE id = $later");
is($out, 'pending', 'a task due in 1 second is pending');
my $deadline = time + 60;
while (time < $deadline)
{
	($ok, $out) = psql("SELECT status FROM schedq.task WHERE id = $later");
	last if $out eq 'available';
	sleep 0.2;
}
is($out, 'available', 'the scheduler promotes it (within 60 s)');

# The packaged schedqctl submits.
my $ctl_pid = open(my $ctl, '-|') // die "fork: $!";
if ($ctl_pid == 0)
{
	open(STDERR, '>&', \*STDOUT);
	exec("$sysbin/schedqctl", 'submit', 'smoke.ctl', '--payload', '{"via": "schedqctl"}',
		'--queue', 'pkg', '-d', "host=$sock port=$port user=postgres dbname=postgres");
}
my $ctl_out = do { local $/; <$ctl> } // '';
close $ctl;
$ctl_out =~ s/\s+\z//;
like($ctl_out, qr/^\d+$/, 'the packaged schedqctl submits a task') or diag($ctl_out);
($ok, $out) = psql("SELECT queue || ' ' || (payload->>'via') FROM schedq.task WHERE id = "
	  . ($ctl_out =~ /^(\d+)$/ ? $1 : 0));
is($out, 'pkg schedqctl', 'the task schedqctl submitted is in the table');

# The packaged schedq_cron: a pg_cron job.
($ok, $out) = psql(q{CREATE EXTENSION schedq_cron; SELECT cron.schedule('smoke', '@daily', 'SELECT 1')});
is($out, '1', 'CREATE EXTENSION schedq_cron; cron.schedule') or diag($out);
($ok, $out) = psql(q{SELECT schedule FROM schedq.periodic WHERE name = 'cron.job.1'});
is($out, '@daily', 'its job is a schedq periodic task');

stop_server();
($ok) = dpkg('dpkg_purge', '--purge', $pkg);
ok($ok && !installed(), "dpkg --purge $pkg");
ok(!-e '/usr/bin/schedqctl' && !-l '/usr/bin/schedqctl'
	  && !-l '/usr/share/man/man1/schedqctl.1.gz',
	'the purge withdrew /usr/bin/schedqctl and its manual page from the alternatives');
ok(restore(), 'the make install files are back, byte for byte');

done_testing();
