#-------------------------------------------------------------------------
# test/t/044_schedqctl_values.pl
#	  schedqctl checks the values it is given before it changes anything:
#	  a bad one is a usage error (exit 2) that names the option, shows
#	  nothing of the server's internals (no CONTEXT, no "unnamed portal
#	  parameter"), and submits, claims or changes nothing:
#	  (a) intervals need a unit (--timeout 5, --lease 5, --older-than 5
#	      refused with a hint; 30s, 5min, '1 day', 00:05:00 and PT5M
#	      taken, and stored as meant); a syntax only the server can judge
#	      ('abc') and a range it refuses ('-1 day') are exit 2 as well;
#	  (b) timestamps need a date: tomorrow, now, epoch refused; a bad
#	      date refused; ISO 8601 with a zone stored as the instant given;
#	  (c) payloads must be JSON, given as text, @FILE or stdin;
#	  (d) numbers and ids: --priority, --max-attempts, --cost, --run,
#	      --depends-on, a task id of cancel, retry, show, wait;
#	  (e) the worker: --lease without a unit, or one the server cannot
#	      read or refuses, ends it with exit 2 before it claims anything.
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

my $node = ctl_node('ctl_values', "schedq.enabled = off\n");
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

my $tasks = sub { q1('SELECT count(*) FROM schedq.task') };

# A refused command: exit 2, a message matching $re, no internals, and no
# task more than before.
sub refused
{
	my ($what, $re, @args) = @_;
	my $before = $tasks->();
	my ($rc, $out, $err) = ctl($node, 'app', @args);
	is($rc, 2, "$what: exit 2") or diag $err;
	like($err, $re, "$what: says why");
	unlike($err, qr/CONTEXT|unnamed portal|parameter \$\d/, "$what: no server internals");
	is($tasks->(), $before, "$what: nothing submitted");
	return $err;
}

#
# (a) Intervals.
#
my $err = refused('--timeout 5', qr/--timeout: "5" has no unit/, 'submit', 'k', '--timeout', '5');
like($err, qr/hint: .*30s, 5min, 2h/, '--timeout 5: the hint shows the forms taken');
refused('--timeout abc', qr/--timeout: "abc": invalid input syntax for type interval/,
	'submit', 'k', '--timeout', 'abc');
refused('--timeout -1 day', qr/submit: timeout must be positive/,
	'submit', 'k', '--timeout', '-1 day');
refused('schedule --timeout 90', qr/--timeout: "90" has no unit/,
	'schedule', 's', '@daily', 'k', '--timeout', '90');
for my $case ([ '30s', '00:00:30' ], [ '5min', '00:05:00' ], [ '1 day', '1 day' ],
	[ '00:05:00', '00:05:00' ], [ 'PT5M', '00:05:00' ])
{
	my ($rc, $out, $e) = ctl($node, 'app', 'submit', 'k', '--timeout', $case->[0]);
	is($rc, 0, "--timeout '$case->[0]' is taken") or diag $e;
	is(q1("SELECT timeout FROM schedq.task WHERE id = " . ($out =~ /^(\d+)$/ ? $1 : 0)),
		$case->[1], "--timeout '$case->[0]' is $case->[1]");
}
refused('list --older-than 5', qr/--older-than: "5" has no unit/, 'list', '--older-than', '5');

#
# (b) Timestamps.
#
for my $word ('tomorrow', 'now', 'epoch', 'today 10:00')
{
	refused("--run-at '$word'", qr/--run-at: "\Q$word\E" is not a date and time/,
		'submit', 'k', '--run-at', $word);
}
refused('--run-at 2030-13-45', qr/--run-at: "2030-13-45": date\/time field value out of range/,
	'submit', 'k', '--run-at', '2030-13-45');
refused('--run-at 3030-01-01', qr/run_at/, 'submit', 'k', '--run-at', '3030-01-01 00:00Z');
my ($rc, $out) = ctl($node, 'app', 'submit', 'k', '--run-at', '2030-01-31T09:00:00+02:00');
is($rc, 0, '--run-at in ISO 8601 with an offset is taken');
is(q1("SELECT run_at = '2030-01-31 07:00:00+00' FROM schedq.task WHERE id = $out"), 't',
	'and stored as that instant');

#
# (c) Payloads.
#
refused('--payload {not json', qr/--payload is not valid JSON: an invalid token at character 2/,
	'submit', 'k', '--payload', '{not json');
my $bad = "$dir/bad.json";
open(my $fh, '>', $bad) or die;
print $fh qq({"a": [1, 2}\n);
close $fh;
refused('--payload @FILE', qr/--payload is not valid JSON/, 'submit', 'k', '--payload', "\@$bad");
refused('--payload - (stdin)', qr/--payload is not valid JSON/, 'submit', 'k', '--payload', '-',
	{ stdin => '{"a": ' });
refused('--payload with \u0000', qr/--payload is not valid JSON: \\u0000/,
	'submit', 'k', '--payload', '{"a": "\u0000"}');

#
# (d) Numbers and ids.
#
refused('--priority high', qr/invalid value "high" for option --priority/,
	'submit', 'k', '--priority', 'high');
refused('--max-attempts 0', qr/--max-attempts must be in range 1\.\./,
	'submit', 'k', '--max-attempts', '0');
refused('--cost abc', qr/--cost: "abc" is not a number/, 'submit', 'k', '--cost', 'abc');
refused('--cost -1', qr/cost/, 'submit', 'k', '--cost', '-1');
refused('--run abc', qr/--run: "abc" is not a task id/, 'submit', 'k', '--run', 'abc');
refused('--depends-on 1,x', qr/--depends-on: "x" is not a task id/,
	'submit', 'k', '--depends-on', '1,x');
for my $c (qw(cancel retry show wait))
{
	refused("$c abc", qr/$c: "abc" is not a task id \(a positive integer\)/, $c, 'abc');
}
refused('wait --timeout 5', qr/--timeout: "5" has no unit/, 'wait', '1', '--timeout', '5');

#
# (e) The worker's --lease: nothing is claimed.
#
my $t = q1("SET ROLE app; SELECT schedq.submit('k', queue => 'w')");
for my $case ([ '5', qr/--lease: "5" has no unit/ ],
	[ 'abc', qr/--lease: "abc": invalid input syntax for type interval/ ],
	[ '400 days', qr/claim: lease/ ])
{
	($rc, $out, $err) = ctl($node, 'worker', 'worker', '--queue', 'w', '--lease', $case->[0],
		'--', 'true');
	is($rc, 2, "worker --lease '$case->[0]': exit 2") or diag $err;
	like($err, $case->[1], "worker --lease '$case->[0]': says why");
	unlike($err, qr/CONTEXT|unnamed portal/, "worker --lease '$case->[0]': no server internals");
	is(q1("SELECT status, attempts FROM schedq.task WHERE id = $t"), 'available|0',
		"worker --lease '$case->[0]': nothing claimed");
}

$node->stop;
done_testing();
