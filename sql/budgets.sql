-- Budgets: claim-time admission, costs, several budgets per task, and
-- periods that refill (rate limits).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

SELECT schedq.set_budget('api', 3);
SELECT name, hard_limit, period, used FROM schedq.budget;

-- Cost 1 each: three fit, the fourth waits; tasks without budgets are not
-- held up behind it.
SELECT schedq.submit('call', budgets => '{api}') FROM generate_series(1, 4);
SELECT schedq.submit('free', priority => -1);
-- (each claimed task is completed at once: completing does not refund)
SELECT id, kind, schedq.complete(token) FROM schedq.claim('w', n => 10);
SELECT used FROM schedq.budget WHERE name = 'api';
SELECT count(*) FROM schedq.claim('w', n => 10);
-- Raising the limit makes room; what was used stays used.
SELECT schedq.set_budget('api', 4);
SELECT id FROM schedq.claim('w');
SELECT used FROM schedq.budget WHERE name = 'api';

-- cost: a task costing more than the room left waits, a cheaper one passes.
SELECT schedq.set_budget('gpu', 10);
SELECT schedq.submit('big', budgets => '{gpu}', cost => 8, priority => 2);
SELECT schedq.submit('big2', budgets => '{gpu}', cost => 8, priority => 1);
SELECT schedq.submit('small', budgets => '{gpu}', cost => 1.5);
SELECT kind FROM schedq.claim('w', n => 10);
SELECT used FROM schedq.budget WHERE name = 'gpu';

-- Several budgets: all must have room, and all are charged.
SELECT schedq.set_budget('a', 1);
SELECT schedq.set_budget('b', 5);
SELECT schedq.submit('ab', budgets => '{a,b}');
SELECT schedq.submit('ab2', budgets => '{b,a}');
SELECT schedq.submit('b-only', budgets => '{b}');
SELECT kind FROM schedq.claim('w', n => 10) ORDER BY kind;
SELECT name, used FROM schedq.budget WHERE name IN ('a', 'b') ORDER BY name;

-- A budget with a period refills at each boundary: a rate limit.
BEGIN;	-- one now(), so no minute boundary falls between the statements
SELECT schedq.set_budget('per-minute', 2, '1 minute');
SELECT period_start = date_bin('1 minute', now(), '2000-01-01 00:00:00+00') AS aligned
  FROM schedq.budget WHERE name = 'per-minute';
COMMIT;
SELECT schedq.submit('rate', budgets => '{per-minute}') FROM generate_series(1, 3);
SELECT count(*) FROM schedq.claim('w', n => 10);
SELECT count(*) FROM schedq.claim('w', n => 10);
-- Pretend the period began two minutes ago: the next claim refills first.
UPDATE schedq.budget SET period_start = period_start - interval '2 minutes'
 WHERE name = 'per-minute';
BEGIN;
SELECT count(*) FROM schedq.claim('w', n => 10);
SELECT used, period_start = date_bin('1 minute', now(), '2000-01-01 00:00:00+00') AS new_period
  FROM schedq.budget WHERE name = 'per-minute';
COMMIT;

-- A task naming a budget deleted since its submit has no room: it is
-- passed over, and the tasks behind it in its queue are claimed, by one
-- claim at a time too; once the budget exists again, it is claimed.
SELECT schedq.set_budget('deleted', 5);
SELECT schedq.submit('names-deleted', queue => 'del', budgets => '{deleted}') > 0 AS submitted;
SELECT schedq.submit('behind-1', queue => 'del') > 0 AS submitted;
SELECT schedq.submit('behind-2', queue => 'del', budgets => '{b}') > 0 AS submitted;
DELETE FROM schedq.budget WHERE name = 'deleted';
SELECT kind FROM schedq.claim('w', queues => '{del}');
SELECT kind FROM schedq.claim('w', queues => '{del}');
SELECT kind FROM schedq.claim('w', queues => '{del}');
SELECT schedq.set_budget('deleted', 5);
SELECT kind FROM schedq.claim('w', queues => '{del}');
SELECT used FROM schedq.budget WHERE name = 'deleted';

-- Unknown budgets are refused at submit.
SELECT schedq.submit('x', budgets => '{no-such-budget}');

-- A transaction that changes a budget cannot be prepared for two-phase
-- commit (its commit, from another session, would not tell the claims of
-- other sessions to look again); nothing changes.
BEGIN;
SELECT schedq.set_budget('prepared', 1);
PREPARE TRANSACTION 'set-budget';
SELECT count(*) FROM schedq.budget WHERE name = 'prepared';

-- Budgets deleted by a DELETE: this session's claims see them gone only
-- once a budget changes through set_budget (they cache whether any
-- exists); meanwhile its waiting looks agree with its claims, and find
-- nothing to wake for in a task naming a deleted budget.
SELECT schedq.submit('names-deleted-2', queue => 'del2', budgets => '{deleted}') > 0 AS submitted;
SELECT kind FROM schedq.claim('w', queues => '{none}');
DELETE FROM schedq.budget;
SELECT kind FROM schedq.claim('w', queues => '{del2}');
CALL schedq.await_task(queues => '{del2}', wait => '0.5 s');
-- Once a budget changes through set_budget, this session's claims see
-- that none is left: budgets are not checked, and the task is claimed
-- uncharged.
SELECT schedq.set_budget('again', 1);
DELETE FROM schedq.budget;
SELECT kind FROM schedq.claim('w', queues => '{del2}');
