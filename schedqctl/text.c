/*-------------------------------------------------------------------------
 * schedqctl/text.c
 *	  Payload arguments, array literals, and JSON in and out.
 *
 *	  The text handling schedqctl needs around its queries.  Arrays
 *	  (text[], jsonb[]) travel as parameters in their text form, made by
 *	  fe_utils' appendPGArray, which quotes an element exactly when
 *	  array_in needs it.
 *
 *	  Whether a program's output is JSON is decided by common/jsonapi.h,
 *	  the parser jsonb's input runs on, after two checks the server makes
 *	  and the frontend parser does not: the text must be valid UTF-8
 *	  without NULs (mb/pg_wchar.h's verifier), and nested at most
 *	  JSON_MAX_DEPTH deep, since the frontend parser recurses without the
 *	  backend's stack depth check.  The escapes are decoded as jsonb's input
 *	  decodes them (need_escapes), which is what refuses \u0000 and lone
 *	  surrogates.  Anything else is not JSON: the worker wraps it as a
 *	  string.
 *
 *	  JSON strings are written here (the frontend libraries have no JSON
 *	  writer): invalid UTF-8 and NULs become '?', and a string can be cut
 *	  at a length of its escaped text, for results and log lines with a
 *	  limit.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "common/jsonapi.h"
#include "common/logging.h"
#include "fe_utils/string_utils.h"
#include "mb/pg_wchar.h"
#include "schedqctl.h"

/* Deeper JSON is not taken for JSON (jsonb's own limit is the stack's). */
#define JSON_MAX_DEPTH 1000

/*
 * A lexer context of jsonapi for a whole UTF-8 text, and its release: the
 * one version test of schedqctl.  PostgreSQL 17 made the caller able to
 * supply the context (NULL: allocated), made the length a size_t and added
 * freeJsonLexContext; 15 and 16 allocate the context, and its string buffer
 * (need_escapes), which the caller frees.
 */
#if PG_VERSION_NUM >= 170000
#define json_lexer(s, len, need_escapes)                                       \
	makeJsonLexContextCstringLen(NULL, (s), (len), PG_UTF8, (need_escapes))
#define json_lexer_free(lex) freeJsonLexContext(lex)
#else
#define json_lexer(s, len, need_escapes)                                       \
	makeJsonLexContextCstringLen(unconstify(char *, (s)), (int) (len),         \
								 PG_UTF8, (need_escapes))
#define json_lexer_free(lex)                                                   \
	do                                                                         \
	{                                                                          \
		if ((lex)->strval != NULL)                                             \
		{                                                                      \
			pfree((lex)->strval->data);                                        \
			pfree((lex)->strval);                                              \
		}                                                                      \
		pfree(lex);                                                            \
	} while (0)
#endif

/* Exit as the allocation functions do when a buffer could not grow. */
void
ctl_text_check(PQExpBuffer buf)
{
	if (PQExpBufferBroken(buf))
		pg_fatal("out of memory");
}

/*
 * A payload argument: JSON text, "@file" (the file's contents) or "-"
 * (standard input), into out.  Returns false, having said why, if it cannot
 * be read.
 */
bool
ctl_text_read_payload(const char *arg, PQExpBuffer out)
{
	int		fd;
	char	chunk[8192];
	ssize_t n;

	resetPQExpBuffer(out);
	if (strcmp(arg, "-") == 0)
		fd = STDIN_FILENO;
	else if (arg[0] == '@')
	{
		fd = open(arg + 1, O_RDONLY);
		if (fd < 0)
		{
			pg_log_error("could not open payload file \"%s\": %m", arg + 1);
			return false;
		}
	}
	else
	{
		appendPQExpBufferStr(out, arg);
		ctl_text_check(out);
		return true;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) != 0)
	{
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			pg_log_error("could not read payload: %m");
			if (fd != STDIN_FILENO)
				close(fd);
			return false;
		}
		appendBinaryPQExpBuffer(out, chunk, n);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	ctl_text_check(out);
	return true;
}

/*
 * Add an element to the array literal being built in array (which holds
 * "{" and the elements so far); NULL adds a NULL element.
 */
void
ctl_text_array_add(PQExpBuffer array, const char *item)
{
	if (item != NULL)
		appendPGArray(array, item);
	else
	{
		if (array->data[array->len - 1] != '{')
			appendPQExpBufferChar(array, ',');
		appendPQExpBufferStr(array, "NULL");
	}
}

/*
 * An array literal (text[], jsonb[]) of n strings, a NULL item as NULL,
 * in a new allocation: a parameter's value, never SQL.
 */
char *
ctl_text_array(char *const *items, int n)
{
	PQExpBufferData array;

	initPQExpBuffer(&array);
	appendPQExpBufferChar(&array, '{');
	for (int i = 0; i < n; i++)
		ctl_text_array_add(&array, items[i]);
	appendPQExpBufferChar(&array, '}');
	ctl_text_check(&array);
	return array.data;
}

/*
 * "a,b,c" (--caps) as a text[] literal, in a new allocation.  Elements are
 * split at every comma and kept as given, empty ones too: the server
 * decides whether they mean anything.  An empty list is the empty array.
 */
char *
ctl_text_list_array(const char *list)
{
	PQExpBufferData array;
	char		   *copy = pg_strdup(list);
	char		   *item = copy;
	char		   *comma;

	initPQExpBuffer(&array);
	appendPQExpBufferChar(&array, '{');
	if (copy[0] != '\0')
	{
		while ((comma = strchr(item, ',')) != NULL)
		{
			*comma = '\0';
			ctl_text_array_add(&array, item);
			item = comma + 1;
		}
		ctl_text_array_add(&array, item);
	}
	appendPQExpBufferChar(&array, '}');
	ctl_text_check(&array);
	pg_free(copy);
	return array.data;
}

/*
 * Length of the valid UTF-8 character at s (at most len bytes), or 0 for
 * an invalid one or a NUL.
 */
static size_t
utf8_char_len(const char *s, size_t len)
{
	int n = pg_encoding_verifymbchar(PG_UTF8, s, len > 4 ? 4 : (int) len);

	return n > 0 ? (size_t) n : 0;
}

/*
 * Replace bytes that are not valid UTF-8, and NULs, by '?', so that any
 * output of a program can go into a text value.
 */
void
ctl_text_sanitize(char *s, size_t len)
{
	size_t i = 0;

	while (i < len)
	{
		size_t n = utf8_char_len(s + i, len - i);

		if (n == 0)
		{
			s[i] = '?';
			n = 1;
		}
		i += n;
	}
}

/*
 * Append s (len bytes) as a JSON string (with its quotes), invalid UTF-8
 * and NULs replaced, stopping before the escaped text would pass max_out
 * bytes.  *consumed, if given, is set to how many input bytes went in.
 */
void
ctl_text_json_string(PQExpBuffer buf, const char *s, size_t len, size_t max_out,
					 size_t *consumed)
{
	size_t i = 0;
	size_t out = 2;

	appendPQExpBufferChar(buf, '"');
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
			n = utf8_char_len(s + i, len - i);
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
		appendBinaryPQExpBuffer(buf, piece, plen);
		out += plen;
		i += n;
	}
	appendPQExpBufferChar(buf, '"');
	ctl_text_check(buf);
	if (consumed)
		*consumed = i;
}

/*
 * Whether jsonapi's lexer finds s to be tokens nested at most
 * JSON_MAX_DEPTH deep.
 */
static bool
json_depth_ok(const char *s, size_t len)
{
	JsonLexContext	  *lex = json_lexer(s, len, false);
	JsonParseErrorType rc;
	int				   depth = 0;

	while ((rc = json_lex(lex)) == JSON_SUCCESS &&
		   lex->token_type != JSON_TOKEN_END)
	{
		if (lex->token_type == JSON_TOKEN_OBJECT_START ||
			lex->token_type == JSON_TOKEN_ARRAY_START)
		{
			if (++depth > JSON_MAX_DEPTH)
				break;
		}
		else if (lex->token_type == JSON_TOKEN_OBJECT_END ||
				 lex->token_type == JSON_TOKEN_ARRAY_END)
			depth--;
	}
	json_lexer_free(lex);
	return rc == JSON_SUCCESS && depth <= JSON_MAX_DEPTH;
}

/*
 * Whether s (len bytes) is one JSON value that jsonb's input takes
 * (surrounded by white space at most).  Numbers are not checked against
 * numeric's range: the server refuses such a result, as it always has.
 */
bool
ctl_text_json_valid(const char *s, size_t len)
{
	JsonLexContext	  *lex;
	JsonParseErrorType rc;

	if (len > INT_MAX ||
		pg_encoding_verifymbstr(PG_UTF8, s, (int) len) != (int) len)
		return false;
	if (!json_depth_ok(s, len))
		return false;
	/* With the escapes decoded: \u0000 and lone surrogates are refused. */
	lex = json_lexer(s, len, true);
	rc = pg_parse_json(lex, &nullSemAction);
	json_lexer_free(lex);
	return rc == JSON_SUCCESS;
}

/*
 * What a JSON parse error means, in words (the frontend libraries of some
 * versions lack json_errdetail).
 */
static const char *
json_what(JsonParseErrorType rc)
{
	switch (rc)
	{
		case JSON_ESCAPING_INVALID:
		case JSON_UNICODE_ESCAPE_FORMAT:
			return "an invalid escape sequence";
		case JSON_ESCAPING_REQUIRED:
			return "a control character that must be escaped";
		case JSON_EXPECTED_END:
			return "more after the end of the value";
		case JSON_EXPECTED_MORE:
			return "the end of the text before the value ended";
		case JSON_EXPECTED_COLON:
			return "no ':' after a key";
		case JSON_EXPECTED_STRING:
			return "a key that is not a string";
		case JSON_EXPECTED_ARRAY_NEXT:
		case JSON_EXPECTED_OBJECT_NEXT:
			return "no ',' or closing bracket where expected";
		case JSON_UNICODE_CODE_POINT_ZERO:
			return "\\u0000, which jsonb cannot hold";
		case JSON_UNICODE_HIGH_SURROGATE:
		case JSON_UNICODE_LOW_SURROGATE:
		case JSON_UNICODE_HIGH_ESCAPE:
			return "an invalid Unicode escape";
		default:
			return "an invalid token";
	}
}

/*
 * Why s (len bytes) is not one JSON value jsonb's input takes, in a new
 * allocation; NULL when it is.  The checks of ctl_text_json_valid, with
 * where the parser stopped.
 */
char *
ctl_text_json_error(const char *s, size_t len)
{
	JsonLexContext	  *lex;
	JsonParseErrorType rc;
	char			  *why = NULL;

	if (len > INT_MAX)
		return pg_strdup("it is too long");
	if (pg_encoding_verifymbstr(PG_UTF8, s, (int) len) != (int) len)
		return pg_strdup("it is not valid UTF-8, or holds a NUL byte");
	/* The tokens alone first: the parser recurses, the lexer does not. */
	lex = json_lexer(s, len, false);
	{
		int depth = 0;

		while ((rc = json_lex(lex)) == JSON_SUCCESS &&
			   lex->token_type != JSON_TOKEN_END && depth <= JSON_MAX_DEPTH)
		{
			if (lex->token_type == JSON_TOKEN_OBJECT_START ||
				lex->token_type == JSON_TOKEN_ARRAY_START)
				depth++;
			else if (lex->token_type == JSON_TOKEN_OBJECT_END ||
					 lex->token_type == JSON_TOKEN_ARRAY_END)
				depth--;
		}
		if (rc == JSON_SUCCESS && depth > JSON_MAX_DEPTH)
			why = psprintf("it is nested more than %d deep", JSON_MAX_DEPTH);
	}
	json_lexer_free(lex);
	if (why == NULL)
	{
		/* Then the grammar, with the escapes decoded as jsonb does. */
		lex = json_lexer(s, len, true);
		rc = pg_parse_json(lex, &nullSemAction);
		if (rc != JSON_SUCCESS)
		{
			const char *at = lex->token_start ? lex->token_start : lex->input;

			why = psprintf("%s at character %d", json_what(rc),
						   (int) (at - lex->input) + 1);
		}
		json_lexer_free(lex);
	}
	return why;
}
