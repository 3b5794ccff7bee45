/*-------------------------------------------------------------------------
 * schedqctl/webact.c
 *	  schedqctl web: the actions (POST /api/action/NAME).
 *
 *	  Each action is one call of a schedq function, made as the signed-in
 *	  role: the database's privileges decide, and a refusal is answered
 *	  with the database's own message and SQLSTATE (403 for a missing
 *	  privilege, 400 otherwise).  web.c has checked the CSRF token and
 *	  that the console is not read-only before any of them runs.
 *
 *	  retry, cancel		schedq.retry(id), schedq.cancel(id)
 *	  pause, resume		schedq.pause_queue(queue), schedq.resume_queue(queue)
 *	  limit				schedq.set_concurrency_limit(key, max), an empty max
 *						removes the limit
 *	  enable, disable	schedq.schedule(...) again with the schedule's own
 *						template and enabled set (schedq has no function that
 *						only enables one): as the role, which must see the
 *						schedule and own it (schedule() would make another
 *						role's schedule the caller's: refused, 403)
 *
 *	  schedq has no function that fires a schedule now: the console offers
 *	  no such action.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "schedqctl.h"
#include "web.h"

/*
 * The schedule's own template, enabled as $2, when the role owns it;
 * schedq.schedule() makes its caller the owner, so for a schedule of
 * another role it is not called (CASE evaluates only the branch taken),
 * and the first two columns say so.
 */
static const char *const enable_sql =
	"SELECT p.owner::oid = r.oid, p.owner::text, CASE WHEN p.owner::oid = "
	"r.oid THEN pg_catalog.json_build_object('ok', true, 'changed', "
	"schedq.schedule(name => p.name, schedule => p.schedule, kind => p.kind, "
	"payload => p.payload, timezone => p.timezone, enabled => $2::boolean, "
	"queue => p.queue, priority => p.priority, max_attempts => "
	"p.max_attempts, timeout => p.timeout, lock_key => p.lock_key, "
	"concurrency_key => p.concurrency_key, required_caps => p.required_caps, "
	"budgets => p.budgets, cost => p.cost) IS NOT NULL) END "
	"FROM schedq.periodic p, pg_catalog.pg_roles r "
	"WHERE p.name = $1 AND r.rolname = current_user";

typedef struct WebAction
{
	const char *name;
	const char *sql;	 /* one row, one JSON column */
	const char *args[2]; /* the form fields of $1 and $2 */
	const char *fixed2;	 /* $2 when it is not a field */
	bool		id;		 /* $1 is a task id */
} WebAction;

static const WebAction actions[] = {
	{ "retry",
	  "SELECT pg_catalog.json_build_object('ok', true, 'changed', "
	  "schedq.retry($1::bigint))",
	  { "id", NULL },
	  NULL,
	  true },
	{ "cancel",
	  "SELECT pg_catalog.json_build_object('ok', true, 'changed', "
	  "schedq.cancel($1::bigint))",
	  { "id", NULL },
	  NULL,
	  true },
	{ "pause",
	  "SELECT pg_catalog.json_build_object('ok', true, 'changed', true) "
	  "FROM schedq.pause_queue($1)",
	  { "queue", NULL },
	  NULL,
	  false },
	{ "resume",
	  "SELECT pg_catalog.json_build_object('ok', true, 'changed', true) "
	  "FROM schedq.resume_queue($1)",
	  { "queue", NULL },
	  NULL,
	  false },
	{ "limit",
	  "SELECT pg_catalog.json_build_object('ok', true, 'changed', true) "
	  "FROM schedq.set_concurrency_limit($1, $2::integer)",
	  { "key", "max" },
	  NULL,
	  false },
	{ "enable", enable_sql, { "name", NULL }, "true", false },
	{ "disable", enable_sql, { "name", NULL }, "false", false },
};

static void
run_action(const WebAction *a, WebCall *call)
{
	const char *values[2] = { NULL, NULL };
	int			n = 1;

	values[0] = call->arg(call, a->args[0]);
	if (values[0] == NULL)
	{
		char *msg = psprintf("\"%s\" is needed", a->args[0]);

		ctl_web_json_error(call, 400, msg, "22004");
		pg_free(msg);
		return;
	}
	if (a->id && (strlen(values[0]) > 19 ||
				  strspn(values[0], "0123456789") != strlen(values[0])))
	{
		ctl_web_json_error(call, 400, "\"id\" must be a task id (digits)",
						   "22023");
		return;
	}
	if (a->args[1] != NULL)
	{
		values[1] = call->arg(call, a->args[1]);
		n = 2;
	}
	else if (a->fixed2 != NULL)
	{
		values[1] = a->fixed2;
		n = 2;
	}
	if (a->sql == enable_sql)
	{
		PGresult *res =
			PQexecParams(call->conn, a->sql, n, NULL, values, NULL, NULL, 0);

		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			ctl_web_json_result_error(call, call->conn, res);
		else if (PQntuples(res) == 0)
			ctl_web_json_error(call, 404,
							   "no such schedule (or not one this role may see "
							   "in schedq.periodic)",
							   NULL);
		else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		{
			char *msg = psprintf(
				"schedule \"%s\" belongs to role %s: enabling or disabling it "
				"here would make it this role's; do it as %s",
				values[0], PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 1));

			ctl_web_json_error(call, 403, msg, "42501");
			pg_free(msg);
		}
		else
		{
			resetPQExpBuffer(call->out);
			appendPQExpBufferStr(call->out, PQgetvalue(res, 0, 2));
			call->status = 200;
		}
		PQclear(res);
		return;
	}
	ctl_web_query_json(call, a->sql, n, values);
}

/* Run the action NAME; false when there is none. */
bool
ctl_webact_dispatch(const char *name, WebCall *call)
{
	for (size_t i = 0; i < lengthof(actions); i++)
		if (strcmp(actions[i].name, name) == 0)
		{
			run_action(&actions[i], call);
			return true;
		}
	return false;
}
