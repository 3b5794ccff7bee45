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
 *	  enable, disable	schedq.set_schedule_enabled(name, enabled), which
 *						keeps the schedule's owner
 *	  run				schedq.run_schedule_now(name): the schedule's next
 *						tick now; 'task' is the id its task takes
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "schedqctl.h"
#include "web.h"

/* Enable or disable a schedule, keeping its owner; false: no such one. */
static const char *const enable_sql =
	"SELECT pg_catalog.json_build_object('ok', true, 'changed', "
	"schedq.set_schedule_enabled($1, $2::boolean))";

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
	{ "run",
	  "SELECT pg_catalog.json_build_object('ok', true, 'changed', true, "
	  "'task', schedq.run_schedule_now($1))",
	  { "name", NULL },
	  NULL,
	  false },
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
	if (ctl_web_query_json(call, a->sql, n, values) && a->sql == enable_sql &&
		strstr(call->out->data, "false") != NULL)
		ctl_web_json_error(call, 404,
						   "no such schedule (or not one this role may see)",
						   NULL);
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
