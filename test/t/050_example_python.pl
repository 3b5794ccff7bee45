#-------------------------------------------------------------------------
# test/t/050_example_python.pl
#	  examples/python/worker.py (psycopg 3) against a throwaway server:
#	  a batch with a retried and a permanently failed task, a lost
#	  connection, heartbeats, SIGTERM while working and while waiting
#	  (see ExampleWorker.pm).  Skipped when no python3 can import psycopg
#	  (Debian: python3-psycopg, which .ci/run installs).
#-------------------------------------------------------------------------
use strict;
use warnings;

use Test::More;
use ExampleWorker;

my $worker = "$ENV{SCHEDQ_SRCDIR}/examples/python/worker.py";

# The first python3 on PATH may be one without Debian's packages.
my ($python) = grep {
	system("$_ -c 'import psycopg' >/dev/null 2>&1") == 0
} ('python3', '/usr/bin/python3');
plan skip_all => 'no python3 that imports psycopg 3 (apt-get install python3-psycopg)'
  unless $python;
note "$python: psycopg "
  . `$python -c 'import psycopg; print(psycopg.__version__)'`;

run_example_tests('python', [ $python, $worker ]);
done_testing();
