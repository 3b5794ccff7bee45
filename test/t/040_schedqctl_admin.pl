#-------------------------------------------------------------------------
# test/t/040_schedqctl_admin.pl
#	  schedqctl's one-call commands, end to end through the installed
#	  binary: help and exit codes; submit with every option (payload as
#	  text, @file and stdin; dedup returns the first id; values that look
#	  like SQL are stored as given; a value refused, by schedqctl or by
#	  the server, is exit 2); cancel, retry (5 when nothing changed);
#	  pause and resume; schedule and unschedule; connecting by conninfo,
#	  URI, PG* variables and a service file; and the messages for a
#	  missing privilege (exit 4, naming exactly the GRANTs the command
#	  needs), a database without schedq, or one whose extension was
#	  dropped and its schema left (exit 4, CREATE EXTENSION) and no server
#	  (exit 3).  (The checks of values: t/044_schedqctl_values.pl.)
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqCtl;

my $node = ctl_node('ctl_admin', "schedq.enabled = off\n");

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

#
# Help and usage.
#
my ($rc, $out, $err) = ctl($node, 'app', 'help', 'submit', { nod => 1 });
is($rc, 0, 'help submit: exit 0');
like($out, qr/usage: schedqctl submit KIND/, 'help submit: the usage');
like($out, qr/Exit status: 0 done/, 'help submit: the exit codes');
my $help2;
($rc, $help2, $err) = ctl($node, 'app', 'submit', '--help', { nod => 1 });
is($help2, $out, 'submit --help prints the same as help submit');
($rc, $out, $err) = ctl($node, 'app', 'help', { nod => 1 });
like($out, qr/worker\s+run a program for each task/, 'help lists the commands');
($rc, $out, $err) = ctl($node, 'app', 'bogus', { nod => 1 });
is($rc, 2, 'an unknown command: exit 2');
($rc, $out, $err) = ctl($node, 'app', 'submit');
is($rc, 2, 'submit without KIND: exit 2');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--nonsense');
is($rc, 2, 'an unknown option: exit 2');
for my $c (qw(submit submit-sql submit-many show list wait cancel retry pause resume
	schedule unschedule schedules runs worker status top))
{
	($rc, $out, $err) = ctl($node, 'app', $c, '--help', { nod => 1 });
	ok($rc == 0 && $out =~ /^usage: schedqctl \Q$c\E/, "$c --help");
}

($rc, $out, $err) = ctl($node, 'app', '--version', { nod => 1 });
is( $out,
	'schedqctl (schedq) '
	  . q1("SELECT default_version FROM pg_available_extensions WHERE name = 'schedq'"),
	'--version: the version of the extension it ships with');

#
# The manual page: make install put it into pg_config --mandir/man1; it
# renders without a warning; it has a section for every command that
# help lists, every option of every command's help, and every exit code.
#
{
	my $mandir = `pg_config --mandir`;
	chomp $mandir;
	my $man = "$mandir/man1/schedqctl.1";
	ok(-f $man, 'make install put schedqctl.1 into pg_config --mandir/man1');
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'groff', '-man', '-Tutf8', '-ww', '-z', $man ],
		'<', '/dev/null', '>', \$o, '2>', \$e);
	is($? >> 8, 0, 'groff renders the manual page');
	is($e, '', 'without a warning (groff -ww)');
	my $page = PostgreSQL::Test::Utils::slurp_file($man);
	($rc, $out, $err) = ctl($node, 'app', 'help', { nod => 1 });
	my @commands = $out =~ /^  ([a-z-]+) {2,}\S/mg;
	is(scalar @commands, 19, 'help lists nineteen commands');
	my (@nosection, @nooption);
	for my $c (@commands)
	{
		(my $roff_c = $c) =~ s/-/\\-/g;
		push @nosection, $c unless $page =~ /^\.SS \Q$roff_c\E$/m;
		next if $c eq 'help';
		my ($r, $help) = ctl($node, 'app', 'help', $c, { nod => 1 });
		for my $opt ($help =~ /(--[a-z][a-z-]*)/g)
		{
			(my $roff = $opt) =~ s/-/\\-/g;
			push @nooption, "$c $opt" unless index($page, $roff) >= 0;
		}
	}
	is_deeply(\@nosection, [], 'the manual page has a section for every command');
	is_deeply(\@nooption, [], 'and every option of every command\'s help');
	my ($status) = $page =~ /^\.SH EXIT STATUS\n(.*?)^\.SH /ms;
	is(join(',', ($status // '') =~ /^\.B (\d)$/mg), '0,1,2,3,4,5,6,7,8,9',
		'and every exit code');
	like($page, qr/^\.B PGPASSFILE$/m, 'and the password file');
	like($page, qr/PGSERVICEFILE/, 'and service files');
}

#
# submit.
#
($rc, $out, $err) = ctl(
	$node, 'app', 'submit', 'email.send',
	'--payload' => '{"to": "ann@example.com"}',
	'--queue' => 'mail',
	'--priority' => '5',
	'--max-attempts' => '3',
	'--timeout' => '5 minutes',
	'--run-at' => '2100-01-01 00:00:00+00',
	'--lock-key' => 'L',
	'--concurrency-key' => 'C',
	'--caps' => 'smtp,eu',
	'--dedup-key' => 'k1');
is($rc, 0, 'submit with every option: exit 0') or diag $err;
like($out, qr/^\d+$/, 'submit prints the id');
my $id = $out;
is( q1(
		"SELECT kind, payload->>'to', queue, priority, max_attempts, timeout, run_at, lock_key, concurrency_key, required_caps, dedup_key, owner FROM schedq.task WHERE id = $id"
	),
	'email.send|ann@example.com|mail|5|3|00:05:00|2100-01-01 00:00:00+00|L|C|{smtp,eu}|k1|app',
	'every option reached the task');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'email.send', '--dedup-key' => 'k1');
is($out, $id, 'the same dedup key: the live task\'s id');

my $evil = q{x'); DROP TABLE schedq.task; --};
($rc, $out, $err) = ctl($node, 'app', 'submit', $evil, '--queue' => q{q"},
	'--caps' => q{a"b,c\\d});
is($rc, 0, 'a kind that looks like SQL is accepted');
is(q1("SELECT kind || '|' || queue || '|' || required_caps::text FROM schedq.task WHERE id = $out"),
	qq{$evil|q"|{"a\\"b","c\\\\d"}}, 'and stored as given (quotes in caps too)');

my $file = PostgreSQL::Test::Utils::tempdir() . '/payload.json';
open(my $fh, '>', $file) or die;
print $fh '{"from": "file", "n": [1, 2, 3]}';
close $fh;
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--payload' => "\@$file");
is(q1("SELECT payload->>'from' FROM schedq.task WHERE id = $out"), 'file', '--payload @file');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--payload' => '-',
	{ stdin => '{"from": "stdin"}' });
is(q1("SELECT payload->>'from' FROM schedq.task WHERE id = $out"), 'stdin', '--payload -');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--payload' => '@/nonexistent/x');
is($rc, 1, 'a missing payload file: exit 1');

($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--payload' => '{not json');
is($rc, 2, 'invalid JSON: exit 2');
like($err, qr/--payload is not valid JSON/, 'saying so');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--priority' => 'high');
is($rc, 2, 'a priority that is no integer: exit 2');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k', '--timeout' => '-1 day');
is($rc, 2, 'a negative timeout, refused by the server: exit 2');
like($err, qr/timeout must be positive/, 'the server says which argument');
unlike($err, qr/CONTEXT|ERROR:/, 'in its words alone');

#
# cancel and retry.
#
($rc, $out, $err) = ctl($node, 'app', 'submit', 'k');
my $t = $out;
($rc, $out, $err) = ctl($node, 'app', 'cancel', $t);
is($rc, 0, 'cancel: exit 0');
is(q1("SELECT status FROM schedq.task WHERE id = $t"), 'canceled', 'the task is canceled');
($rc, $out, $err) = ctl($node, 'app', 'cancel', $t);
is($rc, 5, 'cancel of a finished task: exit 5');
like($err, qr/was not canceled/, 'saying so');
($rc, $out, $err) = ctl($node, 'app', 'retry', $t);
is($rc, 0, 'retry of a canceled task: exit 0');
is(q1("SELECT status FROM schedq.task WHERE id = $t"), 'available', 'it is available again');
($rc, $out, $err) = ctl($node, 'app', 'retry', $t);
is($rc, 5, 'retry of a live task: exit 5');
($rc, $out, $err) = ctl($node, 'app', 'cancel', 'abc');
is($rc, 2, 'cancel of a non-number: exit 2');

#
# pause and resume: an admin's; a submitter lacks the privilege.
#
($rc, $out, $err) = ctl($node, 'ops', 'pause', 'mail');
is($rc, 0, 'pause as admin: exit 0') or diag $err;
is(q1("SELECT paused FROM schedq.queue WHERE name = 'mail'"), 't', 'the queue is paused');
($rc, $out, $err) = ctl($node, 'ops', 'resume', 'mail');
is(q1("SELECT paused FROM schedq.queue WHERE name = 'mail'"), 'f', 'resume: not paused');
($rc, $out, $err) = ctl($node, 'app', 'pause', 'mail');
is($rc, 4, 'pause as a submitter: exit 4');
like($err, qr/permission denied for function pause_queue/, 'the server\'s message');
like($err, qr/GRANT EXECUTE ON FUNCTION schedq\.pause_queue\(text\) TO app;/,
	'the GRANT pause needs');
unlike($err, qr/\bALL\b|USAGE/, 'and no other: not ON ALL FUNCTIONS, not USAGE it has');

#
# A role without any grant, a database without schedq, no server.
#
($rc, $out, $err) = ctl($node, 'nobody', 'submit', 'k');
is($rc, 4, 'submit without privileges: exit 4');
like($err, qr/GRANT USAGE ON SCHEMA schedq TO nobody;/, 'names GRANT USAGE');
like($err, qr/GRANT EXECUTE ON FUNCTION schedq\.submit.* TO nobody;/, 'names GRANT EXECUTE on submit');
like($err, qr/a privilege a submitter needs \(docs\/security\.md#roles\)/,
	'names the submitter role and its page of the documentation');
$node->safe_psql('postgres', 'CREATE DATABASE plain');
{
	my @cmd = ('schedqctl', 'submit', 'k', '-d', $node->connstr('plain'));
	my ($o, $e) = ('', '');
	IPC::Run::run(\@cmd, '>', \$o, '2>', \$e);
	is($? >> 8, 4, 'a database without schedq: exit 4');
	like($e, qr/CREATE EXTENSION schedq/, 'saying how to install it');
	# Dropped, its schema left (CREATE EXTENSION made it): the same.
	$node->safe_psql('plain', 'CREATE EXTENSION schedq; DROP EXTENSION schedq');
	IPC::Run::run(\@cmd, '>', \$o, '2>', \$e);
	is($? >> 8, 4, 'a database whose schedq was dropped: exit 4');
	like($e, qr/schedq is not installed in database "plain".*CREATE EXTENSION schedq/s,
		'saying how to install it');
}
{
	my @cmd = ('schedqctl', 'submit', 'k', '-d', 'host=/nonexistent port=1');
	my ($o, $e) = ('', '');
	IPC::Run::run(\@cmd, '>', \$o, '2>', \$e);
	is($? >> 8, 3, 'no server: exit 3');
	like($e, qr/could not connect/, 'saying so');
}

#
# Connecting the libpq ways: a URI, PG* variables, a service file.
#
my $host = $node->host;
my $port = $node->port;
{
	my @cmd = ('schedqctl', 'submit', 'uri', '-d',
		"postgresql:///postgres?host=$host&port=$port&user=app");
	my ($o, $e) = ('', '');
	IPC::Run::run(\@cmd, '>', \$o, '2>', \$e);
	ok($? == 0 && $o =~ /^\d+$/, 'a URI') or diag $e;
}
($rc, $out, $err) = ctl($node, 'app', 'submit', 'env',
	{ nod => 1, env => { PGHOST => $host, PGPORT => $port, PGUSER => 'app', PGDATABASE => 'postgres' } });
ok($rc == 0 && $out =~ /^\d+$/, 'PG* variables') or diag $err;
is(q1("SELECT owner FROM schedq.task WHERE id = $out"), 'app', 'as the role PGUSER names');
my $svc = PostgreSQL::Test::Utils::tempdir() . '/pg_service.conf';
open($fh, '>', $svc) or die;
print $fh "[schedq]\nhost=$host\nport=$port\ndbname=postgres\nuser=ops\n";
close $fh;
($rc, $out, $err) = ctl($node, 'app', 'submit', 'svc', '-d', 'service=schedq',
	{ nod => 1, env => { PGSERVICEFILE => $svc } });
ok($rc == 0 && $out =~ /^\d+$/, 'a service file') or diag $err;
is(q1("SELECT owner FROM schedq.task WHERE id = $out"), 'ops', 'as the service\'s role');

#
# schedule and unschedule.
#
($rc, $out, $err) = ctl(
	$node, 'app', 'schedule', 'nightly', '0 2 * * *', 'build_report',
	'--payload' => '{"scope": "all"}',
	'--timezone' => 'Europe/Berlin',
	'--queue' => 'reports',
	'--max-attempts' => '2');
is($rc, 0, 'schedule: exit 0') or diag $err;
is($out, 'nightly', 'schedule prints the name');
is( q1(
		"SELECT schedule, kind, payload->>'scope', timezone, queue, max_attempts, owner FROM schedq.periodic WHERE name = 'nightly'"
	),
	'0 2 * * *|build_report|all|Europe/Berlin|reports|2|app',
	'the schedule as given');
($rc, $out, $err) = ctl($node, 'app', 'schedule', 'bad', 'not a schedule', 'k');
is($rc, 2, 'a bad schedule, refused by the server: exit 2');
($rc, $out, $err) = ctl($node, 'app', 'unschedule', 'nightly');
is($rc, 0, 'unschedule: exit 0');
is(q1("SELECT count(*) FROM schedq.periodic"), '0', 'the schedule is gone');
($rc, $out, $err) = ctl($node, 'app', 'unschedule', 'nightly');
is($rc, 5, 'unschedule of nothing: exit 5');

is(q1("SELECT count(*) FROM pg_tables WHERE schemaname = 'schedq' AND tablename = 'task'"),
	'1', 'schedq.task is still there');

$node->stop;
done_testing();
