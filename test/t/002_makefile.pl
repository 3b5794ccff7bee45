#-------------------------------------------------------------------------
# test/t/002_makefile.pl
#	  The Makefile's targets as a user types them print no warning of
#	  make's own: PGXS defines a check target of its own, and a second
#	  recipe for it makes GNU make say "overriding recipe for target
#	  'check'" at every make, make install and make check.  Each goal is
#	  run with make -n (nothing is built or installed; recursive makes run
#	  dry too) in the copy of the tree check.sh gives the tests, against
#	  the pg_config on PATH (the server under test):
#	  (a) make, make install, make check, make clean check, make demo:
#	      no "warning:" on stderr, and make exits 0;
#	  (b) make check still builds with warnings as errors, installs, and
#	      runs test/check.sh with the suites' lists; make clean check
#	      cleans first; make still builds schedq.so and schedqctl.
#	  (c) make install says where schedqctl and its manual page went, how
#	      to put schedqctl on PATH when its directory is not, and which
#	      MANDIR to give when man does not look where the page went; and
#	      says nothing more when both are reached.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Temp qw(tempdir);
use IPC::Run qw(run);
use Test::More;

my $top = $ENV{SCHEDQ_SRCDIR} // '.';
my $pg_config;
for my $dir (split /:/, $ENV{PATH} // '')
{
	if (-x "$dir/pg_config") { $pg_config = "$dir/pg_config"; last; }
}
plan skip_all => 'no pg_config on PATH' unless $pg_config;

# make -n GOALS in the tree: (exit status, stdout, stderr).
sub dry_make
{
	my @goals = @_;
	my ($out, $err) = ('', '');
	local $ENV{MAKEFLAGS};
	delete $ENV{MAKEFLAGS};
	delete local $ENV{MAKELEVEL};
	run [ 'make', '-n', '-C', $top, '--no-print-directory', "PG_CONFIG=$pg_config", @goals ],
	  '<', \undef, '>', \$out, '2>', \$err;
	return ($? >> 8, $out, $err);
}

my %out;
for my $goals ('', 'install', 'check', 'clean check', 'demo')
{
	my $name = $goals eq '' ? 'make' : "make $goals";
	my ($rc, $out, $err) = dry_make(split ' ', $goals);
	is($rc, 0, "(a) $name -n exits 0") or diag $err;
	is(join("\n", grep { /warning:/ } split /\n/, $err),
		'', "(a) $name prints no warning of make's");
	$out{$goals} = $out;
}

like($out{check}, qr/^\S*make .*PG_CONFIG="\Q$pg_config\E" WERROR=1 all install$/m,
	'(b) make check builds with warnings as errors and installs');
like($out{check}, qr/REGRESS="install [^"]*" ISOLATION="claim_skip_locked [^"]*".*\n\s*bash test\/check\.sh/,
	'(b) ... then runs test/check.sh with the suites\' lists');
unlike($out{check}, qr/is not supported/, '(b) ... not PGXS\'s check');
like($out{'clean check'}, qr/rm -f schedq\.so.*\n(?:.*\n)*\S*make .*WERROR=1 all install/,
	'(b) make clean check cleans, then builds and installs');
like($out{''}, qr/-o schedq\.so /, '(b) make builds schedq.so');
like($out{''}, qr/make -C schedqctl .* all/, '(b) ... and schedqctl');

#
# (c) make install says where schedqctl and its manual page went, and how
# to reach them when PATH or man's path does not lead there.  Run for
# real on schedqctl's install-notes (which installs the page into MANDIR, a
# scratch directory here; the program was installed by make check).
#
my $bindir = `$pg_config --bindir`;
chomp $bindir;
my $mandir = tempdir('002_makefile.XXXXXX', TMPDIR => 1, CLEANUP => 1);
sub notes
{
	my (%env) = @_;
	my ($out, $err) = ('', '');
	local @ENV{ keys %env } = values %env;
	delete local $ENV{MAKEFLAGS};
	delete local $ENV{MAKELEVEL};
	delete local $ENV{MANPATH} unless exists $env{MANPATH};
	run [ 'make', '-s', '-C', "$top/schedqctl", "PG_CONFIG=$pg_config", "MANDIR=$mandir",
		'install-notes' ], '<', \undef, '>', \$out, '2>', \$err;
	return ($? >> 8, $out . $err);
}
my ($rc, $notes) = notes(PATH => '/usr/bin:/bin');
is($rc, 0, '(c) install-notes (and the page) with a PATH without the bindir');
ok(-f "$mandir/man1/schedqctl.1", '(c) the page is installed into MANDIR/man1');
like($notes, qr{^schedqctl: installed \Q$bindir\E/schedqctl and \Q$mandir\E/man1/schedqctl\.1$}m,
	'(c) it says where schedqctl and its page went');
like($notes, qr{\Q$bindir\E is not on PATH; to run it as schedqctl:\n +ln -s '\Q$bindir\E/schedqctl' /usr/local/bin/schedqctl},
	'(c) ... that the bindir is not on PATH, and how to link it');
like($notes, qr{man does not look in \Q$mandir\E; to read the page as man schedqctl:\n +make install MANDIR=/usr/local/share/man},
	'(c) ... that man does not look there, and the MANDIR to give');
($rc, $notes) = notes(PATH => "$bindir:/usr/bin:/bin", MANPATH => $mandir);
is($notes, "schedqctl: installed $bindir/schedqctl and $mandir/man1/schedqctl.1\n",
	'(c) with the bindir on PATH and MANDIR on man\'s path: only where they went');

done_testing();
