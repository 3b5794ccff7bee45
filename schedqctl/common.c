/*-------------------------------------------------------------------------
 * common.c
 *	  The connection, queries and error messages every schedqctl command
 *	  shares, and the little text handling it needs (buffers, text[]
 *	  literals, JSON strings and a JSON syntax check).
 *
 *	  Connecting is libpq's business: the -d string goes to PQconnectdbParams
 *	  as dbname with expand_dbname, so it may be a conninfo string, a URI
 *	  or a database name, and PG* variables, ~/.pgpass and service files
 *	  apply as for psql.
 *
 *	  A missing privilege is reported with the server's message and the
 *	  GRANTs of the README's roles (section "Privileges") that the command
 *	  needs, so that an operator can copy them.
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schedqctl.h"

const char *ctl_progname = "schedqctl";

void *
ctl_malloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "%s: out of memory\n", ctl_progname);
		exit(EXIT_ERROR);
	}
	return p;
}

char *
ctl_strdup(const char *s)
{
	size_t len = strlen(s);
	char  *p = ctl_malloc(len + 1);

	memcpy(p, s, len + 1);
	return p;
}

void
ctl_buf_init(CtlBuf *buf)
{
	buf->cap = 256;
	buf->data = ctl_malloc(buf->cap);
	buf->len = 0;
	buf->data[0] = '\0';
}

void
ctl_buf_append(CtlBuf *buf, const char *data, size_t len)
{
	if (buf->len + len + 1 > buf->cap)
	{
		size_t cap = buf->cap;
		char  *p;

		while (buf->len + len + 1 > cap)
			cap *= 2;
		p = realloc(buf->data, cap);
		if (p == NULL)
		{
			fprintf(stderr, "%s: out of memory\n", ctl_progname);
			exit(EXIT_ERROR);
		}
		buf->data = p;
		buf->cap = cap;
	}
	memcpy(buf->data + buf->len, data, len);
	buf->len += len;
	buf->data[buf->len] = '\0';
}

void
ctl_buf_appends(CtlBuf *buf, const char *s)
{
	ctl_buf_append(buf, s, strlen(s));
}

void
ctl_buf_printf(CtlBuf *buf, const char *fmt, ...)
{
	va_list ap;
	char	small[512];
	int		n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n < sizeof(small))
	{
		ctl_buf_append(buf, small, n);
		return;
	}
	{
		char *big = ctl_malloc(n + 1);

		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		ctl_buf_append(buf, big, n);
		free(big);
	}
}

void
ctl_buf_reset(CtlBuf *buf)
{
	buf->len = 0;
	buf->data[0] = '\0';
}

void
ctl_buf_free(CtlBuf *buf)
{
	free(buf->data);
	buf->data = NULL;
	buf->len = buf->cap = 0;
}

/* Print "schedqctl: message" on stderr. */
void
ctl_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ctl_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Connect with the -d string (NULL: libpq's defaults alone).  Returns NULL,
 * having said why unless quiet, when the connection failed.
 */
PGconn *
ctl_connect(const char *conninfo, bool quiet)
{
	const char *keys[3];
	const char *values[3];
	int			n = 0;
	PGconn	   *conn;

	if (conninfo != NULL)
	{
		keys[n] = "dbname";
		values[n++] = conninfo;
	}
	keys[n] = "fallback_application_name";
	values[n++] = "schedqctl";
	keys[n] = NULL;
	values[n] = NULL;

	conn = PQconnectdbParams(keys, values, 1);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		if (!quiet)
		{
			const char *msg = conn ? PQerrorMessage(conn) : "out of memory";

			ctl_error("could not connect: %s", msg);
			if (conn && PQconnectionNeedsPassword(conn))
				fprintf(stderr,
						"hint: the server asks for a password: put it in "
						"~/.pgpass (or the file PGPASSFILE names, mode "
						"0600), or use PGPASSWORD or a service file "
						"(schedqctl(1), ENVIRONMENT)\n");
		}
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* Run a fixed query with text parameters; the caller checks the result. */
PGresult *
ctl_exec(PGconn *conn, const char *sql, int nparams, const char *const *values)
{
	return PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);
}

/* The GRANTs of the README's roles, by what a command does. */
static void
ctl_privilege_hint(CtlRole role, const char *user)
{
	const char *name;
	const char *grants;

	switch (role)
	{
		case CTL_ROLE_SUBMITTER:
			name = "submitter";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON FUNCTION schedq.submit, schedq.cancel, "
				"schedq.retry, schedq.schedule, schedq.unschedule TO %s;\n";
			break;
		case CTL_ROLE_WORKER:
			name = "worker";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, "
				"schedq.complete, schedq.complete_many, "
				"schedq.complete_and_claim, schedq.fail, schedq.verify_grant "
				"TO %s;\n"
				"  GRANT EXECUTE ON PROCEDURE schedq.await_task TO %s;\n"
				"  GRANT <submitting role> TO %s;   -- to work on its tasks\n";
			break;
		case CTL_ROLE_ADMIN:
			name = "admin";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA schedq TO %s;\n"
				"  (pause and resume need schedq.pause_queue and "
				"schedq.resume_queue, which %s may not have)\n";
			break;
		case CTL_ROLE_READER:
		default:
			name = "admin";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT SELECT ON ALL TABLES IN SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON FUNCTION schedq.scheduler_status TO %s;\n"
				"  REVOKE SELECT ON schedq.grant_key FROM %s;\n";
			break;
	}
	fprintf(stderr,
			"hint: role \"%s\" lacks a privilege of the README's %s role "
			"(section \"Privileges\"); a superuser can run:\n  ",
			user, name);
	fprintf(stderr, grants, user, user, user, user);
}

/*
 * Check a result.  Returns EXIT_OK when it succeeded, else reports the
 * error (with the GRANTs to run when a privilege is missing, or CREATE
 * EXTENSION when schedq is not installed) and returns the exit code.
 * Clears nothing: the caller owns res.
 */
int
ctl_result_status(PGconn *conn, PGresult *res, CtlRole role, const char *what)
{
	const char *state;

	if (res != NULL && (PQresultStatus(res) == PGRES_TUPLES_OK ||
						PQresultStatus(res) == PGRES_COMMAND_OK))
		return EXIT_OK;

	if (PQstatus(conn) != CONNECTION_OK)
	{
		ctl_error("%s: connection lost: %s", what, PQerrorMessage(conn));
		return EXIT_CONNECT;
	}
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	ctl_error("%s: %s", what,
			  res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	if (state != NULL && strcmp(state, "3F000") == 0)
	{
		fprintf(stderr,
				"hint: schedq is not installed in database \"%s\"; a "
				"superuser can run CREATE EXTENSION schedq there\n",
				PQdb(conn));
		return EXIT_PRIVILEGE;
	}
	if (state != NULL && strcmp(state, "42501") == 0)
	{
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		/*
		 * schedq itself raises 42501 for a task of another role: no GRANT
		 * helps with that, and the server's message says so.
		 */
		if (msg == NULL || strstr(msg, "another role") == NULL)
			ctl_privilege_hint(role, PQuser(conn));
		return EXIT_PRIVILEGE;
	}
	return EXIT_ERROR;
}

/*
 * An array literal (text[], jsonb[]) of the given strings, each element
 * double-quoted with backslash escapes, a NULL item as NULL: it is passed
 * as a parameter's value, never as SQL.
 */
char *
ctl_text_array(char **items, int n)
{
	CtlBuf buf;

	ctl_buf_init(&buf);
	ctl_buf_appends(&buf, "{");
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			ctl_buf_appends(&buf, ",");
		if (items[i] == NULL)
		{
			ctl_buf_appends(&buf, "NULL");
			continue;
		}
		ctl_buf_appends(&buf, "\"");
		for (const char *p = items[i]; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				ctl_buf_appends(&buf, "\\");
			ctl_buf_append(&buf, p, 1);
		}
		ctl_buf_appends(&buf, "\"");
	}
	ctl_buf_appends(&buf, "}");
	return buf.data;
}

/*
 * Split "a,b,c" at commas into *items (pointers into the returned copy,
 * which the caller frees).  Empty elements are kept: the server decides
 * whether they mean anything.
 */
char *
ctl_split_list(const char *list, int *n, char ***items)
{
	char *copy = ctl_strdup(list);
	int	  count = 1;
	char *p;

	for (p = copy; *p; p++)
		if (*p == ',')
			count++;
	*items = ctl_malloc(sizeof(char *) * count);
	*n = 0;
	(*items)[(*n)++] = copy;
	for (p = copy; *p; p++)
		if (*p == ',')
		{
			*p = '\0';
			(*items)[(*n)++] = p + 1;
		}
	return copy;
}

/* Length of the valid UTF-8 sequence at s (at most len bytes), or 0. */
static size_t
utf8_seq_len(const unsigned char *s, size_t len)
{
	size_t	 n;
	uint32_t cp;

	if (s[0] < 0x80)
		return s[0] == 0 ? 0 : 1;
	if ((s[0] & 0xE0) == 0xC0)
		n = 2, cp = s[0] & 0x1F;
	else if ((s[0] & 0xF0) == 0xE0)
		n = 3, cp = s[0] & 0x0F;
	else if ((s[0] & 0xF8) == 0xF0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > len)
		return 0;
	for (size_t i = 1; i < n; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		(n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
		(cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/*
 * Replace bytes that are not valid UTF-8, and NULs, by '?', so that any
 * output of a program can go into a text value.
 */
void
ctl_sanitize_text(char *s, size_t len)
{
	size_t i = 0;

	while (i < len)
	{
		size_t n = utf8_seq_len((unsigned char *) s + i, len - i);

		if (n == 0)
		{
			s[i] = '?';
			n = 1;
		}
		i += n;
	}
}

/*
 * Append s as a JSON string (with its quotes), invalid UTF-8 and NULs
 * replaced, stopping before the escaped text would pass max_out bytes.
 * *consumed is set to how many input bytes went in.
 */
void
ctl_json_string(CtlBuf *buf, const char *s, size_t len, size_t max_out,
				size_t *consumed)
{
	size_t i = 0;
	size_t out = 2;

	ctl_buf_appends(buf, "\"");
	while (i < len)
	{
		unsigned char c = (unsigned char) s[i];
		char		  esc[8];
		const char	 *piece = esc;
		size_t		  plen;
		size_t		  n = 1;

		if (c == '"' || c == '\\')
		{
			esc[0] = '\\';
			esc[1] = (char) c;
			plen = 2;
		}
		else if (c == '\n')
			piece = "\\n", plen = 2;
		else if (c == '\t')
			piece = "\\t", plen = 2;
		else if (c == '\r')
			piece = "\\r", plen = 2;
		else if (c < 0x20 && c != 0)
		{
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			plen = 6;
		}
		else
		{
			n = utf8_seq_len((const unsigned char *) s + i, len - i);
			if (n == 0)
			{
				piece = "?";
				plen = 1;
				n = 1;
			}
			else
			{
				piece = s + i;
				plen = n;
			}
		}
		if (out + plen > max_out)
			break;
		ctl_buf_append(buf, piece, plen);
		out += plen;
		i += n;
	}
	ctl_buf_appends(buf, "\"");
	if (consumed)
		*consumed = i;
}

/* A recursive-descent JSON syntax check, as strict as jsonb's input. */
typedef struct JsonScan
{
	const char *s;
	size_t		len;
	size_t		pos;
	int			depth;
} JsonScan;

static bool json_value(JsonScan *js);

static void
json_ws(JsonScan *js)
{
	while (js->pos < js->len &&
		   (js->s[js->pos] == ' ' || js->s[js->pos] == '\t' ||
			js->s[js->pos] == '\n' || js->s[js->pos] == '\r'))
		js->pos++;
}

static bool
json_string(JsonScan *js)
{
	js->pos++; /* the opening quote */
	while (js->pos < js->len)
	{
		unsigned char c = (unsigned char) js->s[js->pos];

		if (c == '"')
		{
			js->pos++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\')
		{
			if (++js->pos >= js->len)
				return false;
			c = (unsigned char) js->s[js->pos];
			if (c == 'u')
			{
				unsigned v = 0;

				if (js->pos + 4 >= js->len)
					return false;
				for (int i = 1; i <= 4; i++)
				{
					char h = js->s[js->pos + i];

					v <<= 4;
					if (h >= '0' && h <= '9')
						v |= h - '0';
					else if (h >= 'a' && h <= 'f')
						v |= h - 'a' + 10;
					else if (h >= 'A' && h <= 'F')
						v |= h - 'A' + 10;
					else
						return false;
				}
				/* jsonb refuses \u0000 and lone surrogates: so do we. */
				if (v == 0 || (v >= 0xD800 && v <= 0xDFFF))
					return false;
				js->pos += 5;
				continue;
			}
			if (strchr("\"\\/bfnrt", c) == NULL || c == '\0')
				return false;
			js->pos++;
			continue;
		}
		{
			size_t n = utf8_seq_len((const unsigned char *) js->s + js->pos,
									js->len - js->pos);

			if (n == 0)
				return false;
			js->pos += n;
		}
	}
	return false;
}

static bool
json_number(JsonScan *js)
{
	size_t start;

	if (js->s[js->pos] == '-')
		js->pos++;
	start = js->pos;
	if (js->pos < js->len && js->s[js->pos] == '0')
		js->pos++;
	else
		while (js->pos < js->len && js->s[js->pos] >= '0' &&
			   js->s[js->pos] <= '9')
			js->pos++;
	if (js->pos == start)
		return false;
	if (js->pos < js->len && js->s[js->pos] == '.')
	{
		start = ++js->pos;
		while (js->pos < js->len && js->s[js->pos] >= '0' &&
			   js->s[js->pos] <= '9')
			js->pos++;
		if (js->pos == start)
			return false;
	}
	if (js->pos < js->len && (js->s[js->pos] == 'e' || js->s[js->pos] == 'E'))
	{
		js->pos++;
		if (js->pos < js->len &&
			(js->s[js->pos] == '+' || js->s[js->pos] == '-'))
			js->pos++;
		start = js->pos;
		while (js->pos < js->len && js->s[js->pos] >= '0' &&
			   js->s[js->pos] <= '9')
			js->pos++;
		if (js->pos == start)
			return false;
	}
	return true;
}

static bool
json_literal(JsonScan *js, const char *word)
{
	size_t n = strlen(word);

	if (js->len - js->pos < n || memcmp(js->s + js->pos, word, n) != 0)
		return false;
	js->pos += n;
	return true;
}

static bool
json_container(JsonScan *js, char close)
{
	bool object = (close == '}');

	if (++js->depth > 1000)
		return false;
	js->pos++;
	json_ws(js);
	if (js->pos < js->len && js->s[js->pos] == close)
	{
		js->pos++;
		js->depth--;
		return true;
	}
	for (;;)
	{
		json_ws(js);
		if (object)
		{
			if (js->pos >= js->len || js->s[js->pos] != '"' || !json_string(js))
				return false;
			json_ws(js);
			if (js->pos >= js->len || js->s[js->pos] != ':')
				return false;
			js->pos++;
		}
		if (!json_value(js))
			return false;
		json_ws(js);
		if (js->pos >= js->len)
			return false;
		if (js->s[js->pos] == ',')
		{
			js->pos++;
			continue;
		}
		if (js->s[js->pos] != close)
			return false;
		js->pos++;
		js->depth--;
		return true;
	}
}

static bool
json_value(JsonScan *js)
{
	json_ws(js);
	if (js->pos >= js->len)
		return false;
	switch (js->s[js->pos])
	{
		case '{':
			return json_container(js, '}');
		case '[':
			return json_container(js, ']');
		case '"':
			return json_string(js);
		case 't':
			return json_literal(js, "true");
		case 'f':
			return json_literal(js, "false");
		case 'n':
			return json_literal(js, "null");
		default:
			return json_number(js);
	}
}

/* Whether s is one JSON value (surrounded by white space at most). */
bool
ctl_json_valid(const char *s, size_t len)
{
	JsonScan js = { s, len, 0, 0 };

	if (!json_value(&js))
		return false;
	json_ws(&js);
	return js.pos == len;
}

/*
 * A payload argument: JSON text, "@file" (the file's contents) or "-"
 * (standard input).  Returns false, having said why, if it cannot be read.
 */
bool
ctl_read_payload(const char *arg, CtlBuf *out)
{
	int		fd;
	char	chunk[8192];
	ssize_t n;

	ctl_buf_reset(out);
	if (strcmp(arg, "-") == 0)
		fd = STDIN_FILENO;
	else if (arg[0] == '@')
	{
		fd = open(arg + 1, O_RDONLY);
		if (fd < 0)
		{
			ctl_error("could not open payload file \"%s\": %s", arg + 1,
					  strerror(errno));
			return false;
		}
	}
	else
	{
		ctl_buf_appends(out, arg);
		return true;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) != 0)
	{
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			ctl_error("could not read payload: %s", strerror(errno));
			if (fd != STDIN_FILENO)
				close(fd);
			return false;
		}
		ctl_buf_append(out, chunk, n);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return true;
}
