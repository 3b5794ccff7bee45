/*-------------------------------------------------------------------------
 * shared/token.c
 *	  Tokens: signing and checking what claim hands out and what
 *	  heartbeat, complete and fail require.
 *
 * A token names a task, the attempt it was claimed for, the lease that
 * claim gave and the claim's nonce, and is signed with HMAC-SHA-256 under
 * a secret of the database:
 *
 *		<kid>.<task id>.<attempt>.<lease expiry, us since 2000>.<nonce>.<64 hex>
 *
 * The nonce is drawn by each claim and stored in the task row with the
 * attempt (claim_nonce); every write a token allows checks it.  It fences
 * claims that roll back: such a claim's attempt number is handed out
 * again by the next claim, but never its nonce.
 *
 * The signed message also holds the database OID, so a token of one
 * database is worthless in another.  On a Citus cluster (schedq.distribute
 * makes schedq.grant_key a reference table: one set of keys on every node)
 * it holds the database's name instead, the same on every node, so that a
 * token signed on the node of a queue's shard (claim_queue runs there)
 * verifies on any other.  Secrets live in schedq.grant_key,
 * which only superusers can read; the newest key signs, the previous one
 * still verifies, so rotate_grant_key() does not break tokens in flight.
 *
 * Each backend caches the keys.  A rotation bumps the key generation
 * (shared/commit.h) around its commit; a backend whose cached generation
 * differs reloads.  The generation is read before the keys are, so a
 * reload that races a rotation at worst reloads once more.  A generation
 * is one server's: on a cluster, a rotation reaches the other nodes'
 * backends when their cached keys are a second old, and a token with a
 * key id a backend does not know makes it read the keys at once.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "commands/dbcommands.h"
#include "common/cryptohash.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "shared/citus.h"
#include "shared/token.h"
#include "shared/plan.h"
#include "shared/commit.h"

#define TOKEN_MAX_KEYS	 8
#define TOKEN_SECRET_LEN 32

/* On a Citus cluster, how old a node's cached keys may be (token_load_keys) */
#define TOKEN_CLUSTER_KEYS_USECS ((int64) 1000000)

typedef struct TokenKey
{
	int32 kid;
	uint8 secret[TOKEN_SECRET_LEN];
} TokenKey;

/* The cache: keys[0] is the newest, the one that signs. */
static TokenKey	   token_keys[TOKEN_MAX_KEYS];
static int		   token_nkeys = 0;
static uint64	   token_generation = 0;	  /* 0: nothing cached */
static TimestampTz token_loaded_at = 0;		  /* when the keys were read */
static bool		   token_distributed = false; /* keys of a Citus cluster */
static char		  *token_dbname = NULL;		  /* signed, when they are */

/* Is schedq.grant_key a Citus reference table (schedq.distribute)? */
static bool
token_keys_distributed(void)
{
	Oid nsp;

	if (!OidIsValid(
			get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	nsp = get_namespace_oid("schedq", true);
	return OidIsValid(nsp) &&
		   schedq_citus_table(get_relname_relid("grant_key", nsp));
}

static SchedqQuery q_load_keys =
	SCHEDQ_QUERY0("SELECT kid, secret FROM schedq.grant_key"
				  " ORDER BY kid DESC LIMIT " CppAsString2(TOKEN_MAX_KEYS));
/*
 * A rotation, under the table's EXCLUSIVE lock: the next key id, the new
 * key ($1 its id, $2 its secret), then every key older than the previous
 * one goes ($1 the previous key's id).  Three plain statements, which
 * Citus also runs on a reference table.
 */
static SchedqQuery q_next_kid =
	SCHEDQ_QUERY0("SELECT COALESCE(max(kid), 0) + 1 FROM schedq.grant_key");
static SchedqQuery q_add_key =
	SCHEDQ_QUERY("INSERT INTO schedq.grant_key (kid, secret) VALUES ($1, $2)",
				 INT4OID, BYTEAOID);
static SchedqQuery q_retire_keys =
	SCHEDQ_QUERY("DELETE FROM schedq.grant_key WHERE kid < $1", INT4OID);
/*
 * Make sure the key cache is current.  Runs its query in a bracket of its
 * own (a nested SPI connection, as the tables' owner), so it may be called
 * from anywhere: heartbeat, complete and fail check their token before
 * their own bracket, and in a session that has not claimed (a worker that
 * reconnected) or after a rotation they are the first to need the keys.
 * Only superusers may read schedq.grant_key.
 */
static void
token_load_keys(bool force)
{
	uint64	   generation = schedq_commit_generation(GENERATION_GRANT_KEYS);
	bool	   distributed = token_keys_distributed();
	SchedqCall call;
	int		   n;

	/*
	 * On a cluster a rotation bumps only its own node's generation: the
	 * other nodes read the keys again when theirs are a second old.
	 */
	if (!force && token_generation == generation && token_nkeys > 0 &&
		distributed == token_distributed &&
		(!distributed ||
		 GetCurrentTimestamp() - token_loaded_at < TOKEN_CLUSTER_KEYS_USECS))
		return;

	schedq_call_begin(&call);
	n = schedq_plan_run(&q_load_keys, NULL, NULL, 0, SPI_OK_SELECT);
	token_nkeys = 0;
	for (int i = 0; i < n; i++)
	{
		HeapTuple tuple = SPI_tuptable->vals[i];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool	  isnull;
		int32	  kid = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
		bytea *secret = DatumGetByteaPP(SPI_getbinval(tuple, desc, 2, &isnull));

		if (VARSIZE_ANY_EXHDR(secret) != TOKEN_SECRET_LEN)
			elog(ERROR, "token signing key %d has the wrong length", kid);
		token_keys[token_nkeys].kid = kid;
		memcpy(token_keys[token_nkeys].secret, VARDATA_ANY(secret),
			   TOKEN_SECRET_LEN);
		token_nkeys++;
	}
	schedq_call_end(&call);

	if (token_nkeys == 0)
		ereport(
			ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg("schedq has no token signing key in this database"),
			errhint(
				"A superuser can create one with schedq.rotate_grant_key()."));
	token_generation = generation;
	token_distributed = distributed;
	token_loaded_at = GetCurrentTimestamp();
	if (distributed && token_dbname == NULL)
		token_dbname = MemoryContextStrdup(TopMemoryContext,
										   get_database_name(MyDatabaseId));
}

/*
 * HMAC-SHA-256 of a token's fields under one key.
 */
static void
token_mac(const TokenKey *key, const SchedqToken *token, uint8 *mac)
{
	char		 msg[160 + NAMEDATALEN];
	int			 len;
	pg_hmac_ctx *ctx;

	if (token_distributed)
		len = snprintf(msg, sizeof(msg),
					   "schedq:2c:%zu:%s:%d:" INT64_FORMAT ":%d:" INT64_FORMAT
					   ":" INT64_FORMAT,
					   strlen(token_dbname), token_dbname, key->kid,
					   token->task_id, token->attempt,
					   (int64) token->lease_expires, token->nonce);
	else
		len = snprintf(msg, sizeof(msg),
					   "schedq:2:%u:%d:" INT64_FORMAT ":%d:" INT64_FORMAT
					   ":" INT64_FORMAT,
					   MyDatabaseId, key->kid, token->task_id, token->attempt,
					   (int64) token->lease_expires, token->nonce);
	ctx = pg_hmac_create(PG_SHA256);
	if (ctx == NULL)
		elog(ERROR, "out of memory");
	if (pg_hmac_init(ctx, key->secret, TOKEN_SECRET_LEN) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) msg, len) < 0 ||
		pg_hmac_final(ctx, mac, PG_SHA256_DIGEST_LENGTH) < 0)
	{
		const char *reason = pg_hmac_error(ctx);

		pg_hmac_free(ctx);
		elog(ERROR, "could not compute token signature: %s", reason);
	}
	pg_hmac_free(ctx);
}

/*
 * Sign a token with the newest key.  The result is palloc'd.
 */
char *
schedq_token_sign(const SchedqToken *token)
{
	uint8 mac[PG_SHA256_DIGEST_LENGTH];
	char  hex[PG_SHA256_DIGEST_LENGTH * 2 + 1];

	token_load_keys(false);
	token_mac(&token_keys[0], token, mac);
	hex[hex_encode((const char *) mac, sizeof(mac), hex)] = '\0';
	return psprintf("%d." INT64_FORMAT ".%d." INT64_FORMAT "." INT64_FORMAT
					".%s",
					token_keys[0].kid, token->task_id, token->attempt,
					(int64) token->lease_expires, token->nonce, hex);
}

/*
 * Read one decimal field of a token ending at the next '.' (or at the end
 * of the string when last is true).  Returns false on anything else.
 */
static bool
token_parse_field(const char **p, bool last, int64 min, int64 max, int64 *out)
{
	const char *s = *p;
	bool		neg = false;
	uint64		v = 0;
	int			digits = 0;

	if (*s == '-')
	{
		neg = true;
		s++;
	}
	while (*s >= '0' && *s <= '9')
	{
		if (++digits > 19)
			return false;
		v = v * 10 + (*s - '0');
		s++;
	}
	if (digits == 0 || v > (uint64) PG_INT64_MAX)
		return false;
	if (last ? *s != '\0' : *s != '.')
		return false;
	*out = neg ? -(int64) v : (int64) v;
	if (*out < min || *out > max)
		return false;
	*p = last ? s : s + 1;
	return true;
}

/*
 * Parse and check a token.  On TOKEN_OK, *token holds what it names.
 * Never raises an error for a bad token.
 */
SchedqTokenCheck
schedq_token_parse(const char *text, SchedqToken *token)
{
	const char	   *p = text;
	int64			kid, task_id, attempt, lease, nonce;
	SchedqToken		parsed;
	uint8			given[PG_SHA256_DIGEST_LENGTH];
	uint8			expected[PG_SHA256_DIGEST_LENGTH];
	const TokenKey *key = NULL;
	uint8			diff = 0;
	const char	   *sig;

	if (!token_parse_field(&p, false, 1, PG_INT32_MAX, &kid) ||
		!token_parse_field(&p, false, 1, PG_INT64_MAX, &task_id) ||
		!token_parse_field(&p, false, 1, PG_INT32_MAX, &attempt) ||
		!token_parse_field(&p, false, PG_INT64_MIN, PG_INT64_MAX, &lease) ||
		!token_parse_field(&p, false, PG_INT64_MIN, PG_INT64_MAX, &nonce))
		return TOKEN_MALFORMED;
	sig = p;
	if (strlen(sig) != PG_SHA256_DIGEST_LENGTH * 2 ||
		strspn(sig, "0123456789abcdef") != PG_SHA256_DIGEST_LENGTH * 2)
		return TOKEN_MALFORMED;
	hex_decode(sig, PG_SHA256_DIGEST_LENGTH * 2, (char *) given);

	token_load_keys(false);
	for (int pass = 0; pass < 2 && key == NULL; pass++)
	{
		if (pass == 1)
			token_load_keys(true); /* maybe rotated since we cached */
		for (int i = 0; i < token_nkeys; i++)
			if (token_keys[i].kid == kid)
				key = &token_keys[i];
	}
	if (key == NULL)
		return TOKEN_BAD_SIGNATURE;

	parsed.task_id = task_id;
	parsed.attempt = (int32) attempt;
	parsed.lease_expires = (TimestampTz) lease;
	parsed.nonce = nonce;
	token_mac(key, &parsed, expected);
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
		diff |= given[i] ^ expected[i];
	if (diff != 0)
		return TOKEN_BAD_SIGNATURE;

	*token = parsed;
	return TOKEN_OK;
}

/*
 * Parse a token, raising an error for a malformed or forged one.
 */
void
schedq_token_require(const char *text, SchedqToken *token)
{
	switch (schedq_token_parse(text, token))
	{
		case TOKEN_OK:
			return;
		case TOKEN_MALFORMED:
			ereport(ERROR, errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					errmsg("malformed token"));
			break;
		case TOKEN_BAD_SIGNATURE:
			ereport(
				ERROR, errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				errmsg("invalid token signature"),
				errdetail(
					"The token was not signed by a current key of this database."));
			break;
	}
}

/*
 * Add a new signing key and drop every key but it and the one before,
 * which keeps verifying tokens in flight.  Returns the new key's id.
 * Inside a call bracket.
 */
int32
schedq_token_rotate_key(void)
{
	uint8  secret[TOKEN_SECRET_LEN];
	bytea *secret_datum;
	Datum  values[2];
	bool   isnull;
	int32  kid;

	if (!pg_strong_random(secret, sizeof(secret)))
		ereport(ERROR, errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("could not generate a random token signing key"));
	secret_datum = palloc(VARHDRSZ + sizeof(secret));
	SET_VARSIZE(secret_datum, VARHDRSZ + sizeof(secret));
	memcpy(VARDATA(secret_datum), secret, sizeof(secret));

	if (SPI_execute("LOCK TABLE schedq.grant_key IN EXCLUSIVE MODE", false,
					0) != SPI_OK_UTILITY)
		elog(ERROR, "could not lock schedq.grant_key");
	schedq_plan_run(&q_next_kid, NULL, NULL, 0, SPI_OK_SELECT);
	kid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	values[0] = Int32GetDatum(kid);
	values[1] = PointerGetDatum(secret_datum);
	schedq_plan_run(&q_add_key, values, NULL, 0, SPI_OK_INSERT);
	values[0] = Int32GetDatum(kid - 1);
	schedq_plan_run(&q_retire_keys, values, NULL, 0, SPI_OK_DELETE);

	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(VARDATA(secret_datum), sizeof(secret));

	/* every backend reloads after the end, this one already now */
	schedq_commit_generation_bump(GENERATION_GRANT_KEYS);
	token_generation = 0;
	return kid;
}
