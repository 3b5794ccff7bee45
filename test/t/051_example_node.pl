#-------------------------------------------------------------------------
# test/t/051_example_node.pl
#	  examples/node/worker.js (node-postgres) against a throwaway server:
#	  a batch with a retried and a permanently failed task, a lost
#	  connection, heartbeats, SIGTERM while working and while waiting
#	  (see ExampleWorker.pm).  Skipped without Node.js or without the
#	  example's packages, which `make check` installs with npm ci from
#	  examples/node/package-lock.json.
#-------------------------------------------------------------------------
use strict;
use warnings;

use Test::More;
use ExampleWorker;

my $dir = "$ENV{SCHEDQ_SRCDIR}/examples/node";

my $version = `node --version 2>/dev/null` // '';
plan skip_all => 'no Node.js (node) on PATH' unless $version =~ /^v(\d+)/;
plan skip_all => "Node.js $version is too old (18 or later)" if $1 < 18;
plan skip_all =>
  'the example\'s packages are not installed (cd examples/node && npm ci)'
  unless -f "$dir/node_modules/pg/package.json";
chomp $version;
note "node $version";

run_example_tests('node', [ 'node', "$dir/worker.js" ]);
done_testing();
