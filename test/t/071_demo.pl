#-------------------------------------------------------------------------
# test/t/071_demo.pl
#	  make demo's tour (test/demo.sh) runs to the end against the schedq
#	  installed in the server under test (make check installed it), and
#	  shows what it says it shows: the SQL tour, then schedqctl with the
#	  roles of docs/security.md#roles -- the roles made, a task submitted
#	  by the submitter and run by `schedqctl worker` as the worker, its
#	  result, and `schedqctl status`.  And make demo says what it installs
#	  where before it installs (make -n: nothing is installed here).
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run qw(run timeout);
use Test::More;

my $top = $ENV{SCHEDQ_SRCDIR} // '.';
my $pg_config;
for my $dir (split /:/, $ENV{PATH} // '')
{
	if (-x "$dir/pg_config") { $pg_config = "$dir/pg_config"; last; }
}
plan skip_all => 'no pg_config on PATH' unless $pg_config;

#
# make demo, dry: it announces the install.
#
my ($out, $err) = ('', '');
{
	delete local $ENV{MAKEFLAGS};
	delete local $ENV{MAKELEVEL};
	run [ 'make', '-n', '-C', $top, '--no-print-directory', "PG_CONFIG=$pg_config", 'demo' ],
	  '<', \undef, '>', \$out, '2>', \$err;
}
my $pkglibdir = `$pg_config --pkglibdir`;
chomp $pkglibdir;
like($out, qr/make demo: installing schedq into the PostgreSQL of \Q$pg_config\E/,
	'make demo says it installs, and into which PostgreSQL');
like($out, qr/the library: +\Q$pkglibdir\E\/schedq\.so/, '... where the library goes');
like($out, qr/schedqctl: +\S+\/schedqctl/, '... and schedqctl');
like($out, qr/installing schedq.*\n(?:.*\n)*?\S*make --no-print-directory install/,
	'... before it installs');

#
# The tour itself.
#
($out, $err) = ('', '');
my $ok;
{
	local $ENV{PG_CONFIG} = $pg_config;
	$ok = run [ 'bash', "$top/test/demo.sh" ], '<', \undef, '>', \$out, '2>', \$err,
	  timeout(300);
}
ok($ok, 'test/demo.sh exits 0') or diag "stderr:\n$err\nstdout (end):\n" . substr($out, -3000);
like($out, qr/== 17\. A rate-limited queue ==/, 'the SQL tour runs to its last step');
like($out, qr/== 18\. schedqctl, with the roles of docs\/security\.md ==/,
	'then schedqctl, with the roles');
like($out, qr/CREATE ROLE app LOGIN;.*CREATE ROLE worker LOGIN;.*schedq\.grant_work\('worker', 'app'\)/s,
	'the roles of docs/security.md are shown');
# The demo's roles are the page's: every statement of DEMO_ROLES is in it.
{
	my ($roles) = do { local $/; open my $f, '<', "$top/test/demo.sh" or die; <$f> } =~
	  /^DEMO_ROLES=\$\(cat <<'SQL'\n(.*?)^SQL$/ms;
	my $page = do { local $/; open my $f, '<', "$top/docs/security.md" or die; <$f> };
	(my $flat_page = $page) =~ s/\s+/ /g;
	my @missing = grep {
		(my $st = $_) =~ s/\s+/ /g;
		$st =~ s/^ | $//g;
		$st ne '' && index($flat_page, $st) < 0
	} split /;/, ($roles // '') =~ s/--[^\n]*//gr;
	ok(defined $roles, 'test/demo.sh has DEMO_ROLES');
	is_deeply(\@missing, [], 'every statement of the demo\'s roles is one of docs/security.md');
}
like($out, qr/\$ schedqctl submit thumbnail .*\n\s+(\d+)\n/, 'schedqctl submit prints the task id');
like($out, qr/task \d+ kind=thumbnail attempt=1 queue=images .*outcome=done/,
	'schedqctl worker runs the program and logs the task done');
like($out, qr/\| thumbnail \| done\s+\| demo-worker \| \{"thumbnail": "cat-small.png"\}/,
	'the task is done, claimed by the worker, with the program\'s output as its result');
like($out, qr/\$ schedqctl status.*\n(?:.*\n)*?\s+Schedulers\n(?:.*\n)*?\s+demo\s+\d+\s+idle/,
	'schedqctl status shows the queues and the scheduler');
like($out, qr/Demo finished; stopping the server/, 'the demo ends and cleans up');

done_testing();
