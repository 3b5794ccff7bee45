-- Claiming: order, queue filters, capabilities, batches, leases, paused
-- queues.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

-- Claim order: higher priority first, then earlier run_at, then lower id.
SELECT schedq.submit('p0-late', run_at => now() - interval '1 minute');
SELECT schedq.submit('p0-early', run_at => now() - interval '2 minutes');
SELECT schedq.submit('p5', priority => 5);
SELECT schedq.submit('p0-early-too', run_at => now() - interval '2 minutes');
SELECT schedq.submit('p-1', priority => -1);
SELECT id, kind, attempt, priority FROM schedq.claim('w1', n => 10);

-- A claimed task is running under a lease, claimed by the worker.
SELECT id, status, attempts, claimed_by, lease = interval '30 seconds' AS default_lease,
	   lease_expires_at = started_at + interval '30 seconds' AS expires_ok,
	   started_at > created_at AS started
  FROM schedq.task ORDER BY id;
-- Nothing is left to claim.
SELECT count(*) FROM schedq.claim('w1');

-- n bounds the batch; the lease argument sets the lease.
SELECT schedq.submit('batch') FROM generate_series(1, 5);
SELECT count(*) FROM schedq.claim('w2', n => 3, lease => '10 minutes');
SELECT count(*) FILTER (WHERE status = 'running') AS running,
	   count(*) FILTER (WHERE status = 'available') AS available,
	   count(*) FILTER (WHERE lease = '10 minutes') AS long_lease
  FROM schedq.task WHERE kind = 'batch';
SELECT count(*) FROM schedq.claim('w2', n => 3);

-- Queue filters: one queue, several queues, none.
SELECT schedq.submit('in-a', queue => 'a');
SELECT schedq.submit('in-b', queue => 'b');
SELECT schedq.submit('in-c', queue => 'c');
SELECT kind FROM schedq.claim('w3', queues => '{b}');
SELECT kind FROM schedq.claim('w3', queues => '{}');
SELECT kind FROM schedq.claim('w3', queues => '{c,a,zzz}', n => 5) ORDER BY kind;

-- Capabilities: a task's required_caps must be a subset of the worker's.
SELECT schedq.submit('gpu', required_caps => '{gpu}');
SELECT schedq.submit('gpu-big', required_caps => '{gpu,bigmem}');
SELECT kind FROM schedq.claim('w4');
SELECT kind FROM schedq.claim('w4', caps => '{bigmem}');
SELECT kind FROM schedq.claim('w4', caps => '{gpu}');
SELECT kind FROM schedq.claim('w4', caps => '{bigmem,gpu,ssd}');

-- Paused queues are never claimed from; resuming frees them.
SELECT schedq.submit('mail', queue => 'mail');
SELECT schedq.pause_queue('mail');
SELECT count(*) FROM schedq.claim('w5');
SELECT count(*) FROM schedq.claim('w5', queues => '{mail}');
SELECT name, paused FROM schedq.queue;
SELECT schedq.resume_queue('mail');
SELECT kind FROM schedq.claim('w5', queues => '{mail}');
-- A change of the queues cannot be prepared for two-phase commit (its
-- commit would not tell the claims of other sessions to look again); the
-- queue stays active.
BEGIN;
SELECT schedq.pause_queue('mail');
PREPARE TRANSACTION 'pause-mail';
SELECT name, paused FROM schedq.queue;

-- Pending tasks are never claimed.
SELECT schedq.submit('future', run_at => now() + interval '1 day');
SELECT count(*) FROM schedq.claim('w6');

-- The grant column is a signed token, one per task.
SELECT schedq.submit('tok');
SELECT token ~ '^[0-9]+\.[0-9]+\.1\.-?[0-9]+\.-?[0-9]+\.[0-9a-f]{64}$' AS token_shape,
	   schedq.verify_grant(token)
  FROM schedq.claim('w7');
