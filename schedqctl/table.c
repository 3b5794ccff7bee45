/*-------------------------------------------------------------------------
 * schedqctl/table.c
 *	  Results as tables: psql's aligned tables, or tables fitted to a width.
 *
 *	  ctl_table_render prints a result as psql does (fe_utils' printQuery,
 *	  aligned, without a border or a row count: numbers right-aligned by
 *	  their type, control characters shown escaped), "(none)" for no rows,
 *	  without the spaces that pad the last column; under a title, indented
 *	  by two spaces (status), or alone (list, schedules, runs).
 *
 *	  ctl_table_fit lays a result out for a screen of a given width (top):
 *	  two spaces between columns, one if that is too wide; then the widest
 *	  text column is cut (its cells end in '~') down to its header's width;
 *	  then columns are left out from the right, and a last line says how
 *	  many.  So the columns are ordered by importance by the queries.
 *	  Control characters and invalid UTF-8 show as '?'.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "fe_utils/print.h"
#include "mb/pg_wchar.h"
#include "schedqctl.h"

#define MAX_COLUMNS 32

/*
 * Render a result as a table into out, under its title if not NULL (see
 * the header).
 */
void
ctl_table_render(PQExpBuffer out, PGresult *res, const char *title,
				 int encoding)
{
	printQueryOpt opt;
	FILE		 *f;
	char		 *text = NULL;
	size_t		  size = 0;

	if (title)
		appendPQExpBuffer(out, "%s\n", title);
	if (PQntuples(res) == 0)
	{
		appendPQExpBufferStr(out, title ? "  (none)\n\n" : "(none)\n");
		return;
	}
	memset(&opt, 0, sizeof(opt));
	opt.topt.format = PRINT_ALIGNED;
	opt.topt.border = 0;
	opt.topt.start_table = true;
	opt.topt.stop_table = true;
	opt.topt.default_footer = false;
	opt.topt.encoding = encoding;
	f = open_memstream(&text, &size);
	if (f == NULL)
		pg_fatal("could not open a memory stream: %m");
	printQuery(res, &opt, f, false, NULL);
	if (fclose(f) != 0)
		pg_fatal("could not write a table: %m");
	for (const char *p = text; *p;)
	{
		size_t line = strcspn(p, "\n");
		size_t n = line;

		/* Without the spaces that pad the last column. */
		while (n > 0 && p[n - 1] == ' ')
			n--;
		if (n > 0 && title)
			appendPQExpBufferStr(out, "  ");
		appendBinaryPQExpBuffer(out, p, n);
		p += line;
		if (*p == '\n')
		{
			appendPQExpBufferChar(out, '\n');
			p++;
		}
	}
	/* Alone, without the blank line psql ends a table with. */
	if (!title && out->len >= 2 && out->data[out->len - 1] == '\n' &&
		out->data[out->len - 2] == '\n')
		out->data[--out->len] = '\0';
	ctl_text_check(out);
	free(text);
}

/* Whether a column's type is a number (right-aligned). */
static bool
table_numeric(Oid type)
{
	/* int8, int2, int4, float4, float8, numeric */
	return type == 20 || type == 21 || type == 23 || type == 700 ||
		   type == 701 || type == 1700;
}

/*
 * The display width of s, each control character or invalid byte counting
 * as one (shown as '?').
 */
static int
table_width(const char *s)
{
	int w = 0;

	while (*s)
	{
		int len = pg_encoding_verifymbchar(PG_UTF8, s, (int) strnlen(s, 4));
		int d;

		if (len <= 0 || (unsigned char) *s < 0x20 || *s == 0x7f)
		{
			w++;
			s++;
			continue;
		}
		d = pg_encoding_dsplen(PG_UTF8, s);
		w += d > 0 ? d : 1;
		s += len;
	}
	return w;
}

/*
 * Append s in a cell of width w, aligned right or left; cut to w, ending
 * in '~', if it is wider.
 */
static void
table_cell(PQExpBuffer out, const char *s, int w, bool right)
{
	int sw = table_width(s);
	int used = 0;

	if (right && sw < w)
		for (int i = sw; i < w; i++)
			appendPQExpBufferChar(out, ' ');
	while (*s)
	{
		int	 len = pg_encoding_verifymbchar(PG_UTF8, s, (int) strnlen(s, 4));
		bool bad = len <= 0 || (unsigned char) *s < 0x20 || *s == 0x7f;
		int	 d = bad ? 1 : pg_encoding_dsplen(PG_UTF8, s);

		if (d < 1)
			d = 1;
		if (sw > w && used + d > w - 1)
		{
			appendPQExpBufferChar(out, '~');
			used++;
			break;
		}
		if (used + d > w)
			break;
		if (bad)
			appendPQExpBufferChar(out, '?');
		else
			appendBinaryPQExpBuffer(out, s, len);
		used += d;
		s += bad ? 1 : len;
	}
	if (!right)
		for (; used < w; used++)
			appendPQExpBufferChar(out, ' ');
}

/*
 * Render a result under its title into out, fitted to width columns (see
 * the header).  Lines end without padding.
 */
void
ctl_table_fit(PQExpBuffer out, PGresult *res, const char *title, int width)
{
	int	 ncols = PQnfields(res);
	int	 nrows = PQntuples(res);
	int	 w[MAX_COLUMNS];
	int	 head[MAX_COLUMNS];
	bool right[MAX_COLUMNS];
	int	 shown;
	int	 gap = 2;
	int	 total;

	if (title)
		appendPQExpBuffer(out, "%s\n", title);
	if (nrows == 0)
	{
		appendPQExpBufferStr(out, "  (none)\n\n");
		return;
	}
	if (ncols > MAX_COLUMNS)
		ncols = MAX_COLUMNS;
	memset(w, 0, sizeof(w));
	for (int c = 0; c < ncols; c++)
	{
		head[c] = w[c] = table_width(PQfname(res, c));
		right[c] = table_numeric(PQftype(res, c));
		for (int r = 0; r < nrows; r++)
			w[c] = Max(w[c], table_width(PQgetvalue(res, r, c)));
	}

	/* Fit: a narrower gap, then cut text columns, then leave some out. */
	shown = ncols;
	for (;;)
	{
		int widest = -1;

		total = 2;
		for (int c = 0; c < shown; c++)
			total += w[c] + (c > 0 ? gap : 0);
		if (total <= width || shown <= 1)
			break;
		if (gap == 2)
		{
			gap = 1;
			continue;
		}
		for (int c = 0; c < shown; c++)
			if (!right[c] && w[c] > Max(head[c], 6) &&
				(widest < 0 || w[c] > w[widest]))
				widest = c;
		if (widest >= 0)
			w[widest] -= Min(total - width, w[widest] - Max(head[widest], 6));
		else
			shown--;
	}

	for (int r = -1; r < nrows; r++)
	{
		int start = out->len;

		appendPQExpBufferStr(out, "  ");
		for (int c = 0; c < shown; c++)
		{
			if (c > 0)
				appendPQExpBuffer(out, "%*s", gap, "");
			table_cell(out, r < 0 ? PQfname(res, c) : PQgetvalue(res, r, c),
					   w[c], right[c]);
		}
		/* Without the spaces that pad the last column. */
		while (out->len > start && out->data[out->len - 1] == ' ')
			out->data[--out->len] = '\0';
		appendPQExpBufferChar(out, '\n');
	}
	if (shown < ncols)
		appendPQExpBuffer(out,
						  "  (%d more column%s: a wider terminal shows "
						  "them)\n",
						  ncols - shown, ncols - shown == 1 ? "" : "s");
	appendPQExpBufferChar(out, '\n');
	ctl_text_check(out);
}
