/*-------------------------------------------------------------------------
 * schedqctl/many.c
 *	  submit-many: tasks from JSON lines, all or none.
 *
 *	  Each line of the input (a file, or standard input) is one task: a
 *	  JSON object whose keys are schedq.submit's argument names, as
 *	  schedq.submit_many takes them ({"kind": "email.send", "payload":
 *	  {...}, "queue": "mail"}); blank lines are skipped.  Every line is
 *	  checked to be a JSON object first, and a bad one is a usage error
 *	  naming its line.  The tasks go to schedq.submit_many, 100000 at a
 *	  time (its limit), in one transaction: all are submitted, or none.
 *	  Their ids are printed one a line, in input order.  An error the
 *	  server reports for an element names its line.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/logging.h"
#include "getopt_long.h"
#include "schedqctl.h"

#define MANY_CHUNK 100000

/* The input's tasks: the JSON array of each chunk, and their lines. */
typedef struct ManyInput
{
	PQExpBufferData *chunks;
	int				 nchunks;
	long			*lines; /* input line of each task, in order */
	long			 ntasks;
} ManyInput;

/* Whether a line is blank. */
static bool
many_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/*
 * Split the text into chunks of at most MANY_CHUNK tasks, each checked to
 * be a JSON object.  Returns false, having named the line, if one is not.
 */
static bool
many_split(const char *text, size_t len, ManyInput *in)
{
	size_t pos = 0;
	long   lineno = 0;
	size_t cap = 16;

	in->lines = pg_malloc(sizeof(long) * cap);
	while (pos < len)
	{
		size_t		n = strcspn(text + pos, "\n");
		const char *line = text + pos;
		char	   *why;
		size_t		skip = 0;

		lineno++;
		pos += n + (pos + n < len ? 1 : 0);
		if (many_blank(line, n))
			continue;
		while (line[skip] == ' ' || line[skip] == '\t')
			skip++;
		why = line[skip] == '{' ? ctl_text_json_error(line, n) :
								  pg_strdup("it is not a JSON object");
		if (why != NULL)
		{
			pg_log_error("submit-many: line %ld is not a JSON object of "
						 "submit's arguments: %s",
						 lineno, why);
			pg_free(why);
			return false;
		}
		if ((size_t) in->ntasks == cap)
		{
			cap *= 2;
			in->lines = pg_realloc(in->lines, sizeof(long) * cap);
		}
		if (in->ntasks % MANY_CHUNK == 0)
		{
			in->chunks = pg_realloc(in->chunks, sizeof(PQExpBufferData) *
													(in->nchunks + 1));
			initPQExpBuffer(&in->chunks[in->nchunks++]);
			appendPQExpBufferChar(&in->chunks[in->nchunks - 1], '[');
		}
		else
			appendPQExpBufferChar(&in->chunks[in->nchunks - 1], ',');
		appendBinaryPQExpBuffer(&in->chunks[in->nchunks - 1], line, n);
		in->lines[in->ntasks++] = lineno;
	}
	for (int i = 0; i < in->nchunks; i++)
	{
		appendPQExpBufferChar(&in->chunks[i], ']');
		ctl_text_check(&in->chunks[i]);
	}
	return true;
}

/*
 * Report an error of chunk c; an element the server names ("element N of
 * tasks ...") is named by its input line.  Returns the exit code.
 */
static int
many_report(PGconn *conn, PGresult *res, const ManyInput *in, int c)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	long		elem;
	int			used = 0;
	CtlNeeds	needs = ctl_privs_function(CTL_ROLE_SUBMITTER, "f:submit_many");

	if (msg != NULL && sscanf(msg, "element %ld %n", &elem, &used) == 1 &&
		used > 0 && elem >= 1 && (long) c * MANY_CHUNK + elem - 1 < in->ntasks)
	{
		const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

		pg_log_error("submit-many: line %ld: %s",
					 in->lines[(long) c * MANY_CHUNK + elem - 1], msg + used);
		if (hint)
			pg_log_error_hint("%s", hint);
		return ctl_conn_refusal_is_value(res) ? EXIT_USAGE : EXIT_ERROR;
	}
	return ctl_conn_check(conn, res, &needs, "submit-many");
}

/* Submit the chunks in one transaction; print the ids.  The exit code. */
static int
many_submit(PGconn *conn, const ManyInput *in)
{
	PQExpBufferData ids;
	PGresult	   *res;
	int				rc = EXIT_OK;
	CtlNeeds needs = ctl_privs_function(CTL_ROLE_SUBMITTER, "f:submit_many");

	initPQExpBuffer(&ids);
	res = PQexec(conn, "BEGIN");
	rc = ctl_conn_check(conn, res, &needs, "submit-many");
	PQclear(res);
	for (int c = 0; rc == EXIT_OK && c < in->nchunks; c++)
	{
		const char *values[1] = { in->chunks[c].data };

		res = PQexecParams(conn, "SELECT schedq.submit_many($1::jsonb)", 1,
						   NULL, values, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			rc = many_report(conn, res, in, c);
		for (int r = 0; rc == EXIT_OK && r < PQntuples(res); r++)
			appendPQExpBuffer(&ids, "%s\n", PQgetvalue(res, r, 0));
		PQclear(res);
	}
	if (rc == EXIT_OK)
	{
		res = PQexec(conn, "COMMIT");
		rc = ctl_conn_check(conn, res, &needs, "submit-many");
		PQclear(res);
	}
	ctl_text_check(&ids);
	/* Printed once committed: ids of tasks that exist. */
	if (rc == EXIT_OK)
		fputs(ids.data, stdout);
	termPQExpBuffer(&ids);
	return rc;
}

static const struct option many_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 }
};

/* schedqctl submit-many [FILE | -]: submit the tasks of JSON lines. */
int
ctl_many_command(int argc, char **argv)
{
	const char	   *conninfo = NULL;
	int				c;
	PQExpBufferData text;
	ManyInput		in;
	PGconn		   *conn;
	int				rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", many_options, NULL)) != -1)
	{
		if (c == 'd')
			conninfo = optarg;
		else if (c == 'H')
		{
			ctl_main_usage("submit-many", false);
			return EXIT_OK;
		}
		else
			return ctl_main_usage_error("submit-many", NULL);
	}
	if (argc - optind > 1)
		return ctl_main_usage_error("submit-many", "at most one FILE expected");

	initPQExpBuffer(&text);
	if (argc - optind == 1 && strcmp(argv[optind], "-") != 0)
	{
		/* A file: read as a payload's @FILE is. */
		char *at = psprintf("@%s", argv[optind]);
		bool  ok = ctl_text_read_payload(at, &text);

		pg_free(at);
		if (!ok)
			return EXIT_ERROR;
	}
	else if (!ctl_text_read_payload("-", &text))
		return EXIT_ERROR;

	memset(&in, 0, sizeof(in));
	if (!many_split(text.data, text.len, &in))
		rc = EXIT_USAGE;
	else if (in.ntasks == 0)
	{
		pg_log_error("submit-many: no task in the input (one JSON object a "
					 "line)");
		rc = EXIT_USAGE;
	}
	else if ((conn = ctl_conn_connect(conninfo, false)) == NULL)
		rc = EXIT_CONNECT;
	else
	{
		rc = many_submit(conn, &in);
		PQfinish(conn);
	}
	for (int i = 0; i < in.nchunks; i++)
		termPQExpBuffer(&in.chunks[i]);
	pg_free(in.chunks);
	pg_free(in.lines);
	termPQExpBuffer(&text);
	return rc;
}
