-- Grants: signed tokens, verify_grant's verdicts, forged and malformed
-- tokens, expired leases, and key rotation.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup

SELECT schedq.submit('t') FROM generate_series(1, 3);
SELECT token AS t FROM schedq.claim('w') \gset
-- The token names the key, the task and the attempt.
SELECT split_part(:'t', '.', 1) AS kid, split_part(:'t', '.', 2) AS task,
	   split_part(:'t', '.', 3) AS attempt, schedq.verify_grant(:'t');

-- Forged: another signature, or the same signature on another task or
-- attempt.  verify_grant says so; complete, fail and heartbeat raise 28000.
SELECT left(:'t', -1) || CASE right(:'t', 1) WHEN '0' THEN '1' ELSE '0' END AS forged \gset
SELECT schedq.verify_grant(:'forged');
SELECT pg_temp.err(format('SELECT schedq.complete(%L)', :'forged'));
SELECT pg_temp.err(format('SELECT schedq.fail(%L, %L)', :'forged', 'x'));
SELECT pg_temp.err(format('SELECT schedq.heartbeat(%L)', :'forged'));
SELECT schedq.verify_grant(regexp_replace(:'t', '^1\.1\.', '1.2.'));
SELECT schedq.verify_grant(regexp_replace(:'t', '^1\.1\.1\.', '1.1.2.'));
SELECT schedq.verify_grant(regexp_replace(:'t', '^1\.', '7.'));
SELECT status FROM schedq.task WHERE id = 1;

-- Malformed: verify_grant says so; the others raise 22P02.
SELECT t AS token, schedq.verify_grant(t)
  FROM unnest(ARRAY['', 'garbage', '1.1.1.1', '1.1.1.1.abc',
					'1.1.1.1.' || repeat('A', 64), 'x.1.1.1.' || repeat('a', 64),
					'1.1.1.1.' || repeat('a', 65), '1.-1.1.1.' || repeat('a', 64),
					'1.99999999999999999999.1.1.' || repeat('a', 64)]) t;
SELECT pg_temp.err($$SELECT schedq.complete('garbage')$$);
SELECT pg_temp.err($$SELECT schedq.fail('garbage', 'x')$$);
SELECT pg_temp.err($$SELECT schedq.heartbeat('1.1.1.1')$$);

-- An expired lease that the reaper has not taken back yet: the grant
-- says 'expired' but is still accepted.
UPDATE schedq.task SET lease_expires_at = now() - interval '1 second' WHERE id = 1;
SELECT schedq.verify_grant(:'t');
SELECT schedq.complete(:'t');
SELECT schedq.verify_grant(:'t');

-- Rotation: new grants use the new key; grants in flight keep working
-- under the previous key; two rotations later they are no longer signed
-- by a current key.
SELECT token AS before FROM schedq.claim('w') \gset
SELECT schedq.rotate_grant_key();
SELECT token AS after FROM schedq.claim('w') \gset
SELECT split_part(:'before', '.', 1) AS before_kid, split_part(:'after', '.', 1) AS after_kid;
SELECT schedq.verify_grant(:'before'), schedq.verify_grant(:'after');
SELECT schedq.rotate_grant_key();
SELECT schedq.verify_grant(:'before'), schedq.verify_grant(:'after');
SELECT kid FROM schedq.grant_key ORDER BY kid;
SELECT schedq.complete(:'after');
SELECT pg_temp.err(format('SELECT schedq.complete(%L)', :'before'));
-- A rotation that rolls back changes nothing.
BEGIN;
SELECT schedq.rotate_grant_key();
ROLLBACK;
SELECT kid FROM schedq.grant_key ORDER BY kid;
SELECT schedq.submit('t2');
SELECT split_part(token, '.', 1) AS kid FROM schedq.claim('w');

-- Nor can a key rotation be prepared: other sessions would keep signing
-- with the old key.
BEGIN;
SELECT schedq.rotate_grant_key() > 0 AS rotated;
PREPARE TRANSACTION 'rotate';
SELECT count(*) FROM schedq.grant_key;
