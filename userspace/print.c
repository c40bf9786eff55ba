// SPDX-License-Identifier: GPL-2.0
/*
 * Text and JSON printer; see print.h for the rules.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "print.h"

#define PR_MAX_DEPTH	16
#define PR_INDENT	4

struct pr_container {
	bool is_obj;		/* object, else array */
	bool has_items;		/* JSON: a comma goes before the next */
};

static struct {
	bool json;
	bool pretty;
	int depth;		/* open containers */
	struct pr_container stack[PR_MAX_DEPTH];
	/* text state */
	int text_objs;		/* open objects, not counting the root */
	bool line_open;		/* the current line has text */
	int line_indent;	/* indent of the next line */
} pr;

void pr_set_json(bool json)
{
	pr.json = json;
}

void pr_set_pretty(bool pretty)
{
	pr.pretty = pretty;
	if (pretty)
		pr.json = true;
}

bool pr_is_json(void)
{
	return pr.json;
}

static void put_indent(int cols)
{
	printf("%*s", cols, "");
}

static bool in_object(void)
{
	return pr.depth > 0 && pr.stack[pr.depth - 1].is_obj;
}

/*
 * Bytes of the UTF-8 sequence at @p, 0 if it is not one (a stray or
 * overlong byte, a surrogate, past U+10FFFF).  Strings can come from a
 * peer (a file name, a note): what is printed must stay JSON, and text
 * must not reach a terminal as escape sequences.
 */
static int utf8_len(const unsigned char *p)
{
	uint32_t cp;
	int n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	cp = p[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* A C0 or C1 control, or DEL: a terminal would act on it. */
static bool is_control(const unsigned char *p, int len)
{
	return (len == 1 && (p[0] < 0x20 || p[0] == 0x7f)) ||
	       (len == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

/*
 * Text: controls and bytes that are not UTF-8 as \xNN, the rest as it is.
 */
static void text_put_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int len, i;

	while (*p) {
		len = utf8_len(p);
		if (!len || is_control(p, len)) {
			for (i = 0; i < (len ? len : 1); i++)
				printf("\\x%02x", p[i]);
			p += len ? len : 1;
			continue;
		}
		fwrite(p, 1, len, stdout);
		p += len;
	}
}

/* ---- JSON ---- */

/*
 * A byte that is not UTF-8 goes out as the code point of its value; controls
 * (C1 too) escaped.
 */
static void json_put_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int len;

	putchar('"');
	while (*p) {
		len = utf8_len(p);
		if (len == 2 && is_control(p, len)) {	/* C1 */
			printf("\\u%04x", (p[0] & 0x1f) << 6 | (p[1] & 0x3f));
			p += len;
			continue;
		}
		if (len > 1) {
			fwrite(p, 1, len, stdout);
			p += len;
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", stdout);
			break;
		case '\\':
			fputs("\\\\", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		case '\t':
			fputs("\\t", stdout);
			break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
		p++;
	}
	putchar('"');
}

/* Separator, newline and indent before a member, then its key if any. */
static void json_member(const char *key)
{
	struct pr_container *parent;

	if (pr.depth == 0)
		return;
	parent = &pr.stack[pr.depth - 1];
	if (parent->has_items)
		putchar(',');
	parent->has_items = true;
	if (pr.pretty) {
		putchar('\n');
		put_indent(pr.depth * PR_INDENT);
	}
	if (parent->is_obj) {
		json_put_string(key ? key : "");
		fputs(pr.pretty ? ": " : ":", stdout);
	}
}

static void json_open(const char *key, bool is_obj)
{
	json_member(key);
	putchar(is_obj ? '{' : '[');
}

static void json_close(const struct pr_container *c)
{
	if (pr.pretty && c->has_items) {
		putchar('\n');
		put_indent(pr.depth * PR_INDENT);
	}
	putchar(c->is_obj ? '}' : ']');
	if (pr.depth == 0)
		putchar('\n');
}

/* ---- text ---- */

static void text_end_line(void)
{
	if (pr.line_open)
		putchar('\n');
	pr.line_open = false;
}

/* Space before a word, or the indent when it starts a line. */
static void text_word(void)
{
	if (pr.line_open) {
		putchar(' ');
	} else {
		put_indent(pr.line_indent);
		pr.line_open = true;
	}
}

static void text_obj_begin(const char *key)
{
	bool is_root = pr.depth == 0;

	if (is_root)
		return;
	text_end_line();
	pr.line_indent = pr.text_objs * PR_INDENT;
	pr.text_objs++;
	if (key && in_object()) {
		text_word();
		fputs(key, stdout);
	}
}

static void text_obj_end(void)
{
	bool is_root = pr.depth == 0;

	if (is_root)
		return;
	text_end_line();
	pr.text_objs--;
	pr.line_indent = pr.text_objs * PR_INDENT;
}

/* ---- containers ---- */

static void pr_push(const char *key, bool is_obj)
{
	if (pr.json)
		json_open(key, is_obj);
	else if (is_obj)
		text_obj_begin(key);
	if (pr.depth < PR_MAX_DEPTH) {
		pr.stack[pr.depth].is_obj = is_obj;
		pr.stack[pr.depth].has_items = false;
	}
	pr.depth++;
}

static void pr_pop(void)
{
	struct pr_container c = { 0 };

	if (pr.depth == 0)
		return;
	pr.depth--;
	if (pr.depth < PR_MAX_DEPTH)
		c = pr.stack[pr.depth];
	if (pr.json)
		json_close(&c);
	else if (c.is_obj)
		text_obj_end();
}

void pr_obj_begin(const char *key)
{
	pr_push(key, true);
}

void pr_obj_end(void)
{
	pr_pop();
}

void pr_arr_begin(const char *key)
{
	pr_push(key, false);
}

void pr_arr_end(void)
{
	pr_pop();
}

/* ---- fields ---- */

/*
 * Starts a field: @key as the member's name in JSON, the space or indent
 * before it in text (where each field prints its own words).  Returns
 * whether the output is JSON.
 */
static bool field_begin(const char *key)
{
	if (pr.json)
		json_member(key);
	else
		text_word();
	return pr.json;
}

/* A number: as @json_fmt in JSON, as @text_fmt of @key and @val in text. */
static void field_u64(const char *key, uint64_t val, const char *json_fmt,
		      const char *text_fmt)
{
	if (field_begin(key))
		printf(json_fmt, val);
	else
		printf(text_fmt, key, val);
}

void pr_u64(const char *key, uint64_t val)
{
	field_u64(key, val, "%" PRIu64, "%s %" PRIu64);
}

void pr_u64_str(const char *key, uint64_t val)
{
	field_u64(key, val, "\"%" PRIu64 "\"", "%s %" PRIu64);
}

void pr_hex(const char *key, uint64_t val)
{
	field_u64(key, val, "%" PRIu64, "%s 0x%" PRIx64);
}

void pr_mask(const char *key, uint64_t val)
{
	field_u64(key, val, "\"0x%" PRIx64 "\"", "%s 0x%" PRIx64);
}

void pr_str(const char *key, const char *val)
{
	if (field_begin(key)) {
		json_put_string(val);
	} else {
		printf("%s ", key);
		text_put_string(val);
	}
}

static void put_bit_name(unsigned int bit, const char *const *names,
			 unsigned int nr_names)
{
	char unknown[16];
	const char *name = bit < nr_names ? names[bit] : NULL;

	if (!name) {
		snprintf(unknown, sizeof(unknown), "bit%u", bit);
		name = unknown;
	}
	if (pr.json)
		json_put_string(name);
	else
		fputs(name, stdout);
}

void pr_bits(const char *key, uint64_t bits, const char *const *names,
	     unsigned int nr_names)
{
	unsigned int bit;
	bool first = true;

	if (field_begin(key)) {
		putchar('[');
	} else {
		printf("%s ", key);
		if (!bits)
			fputs("none", stdout);
	}
	for (bit = 0; bit < 64; bit++) {
		if (!(bits & (UINT64_C(1) << bit)))
			continue;
		if (!first)
			fputs(pr.json && pr.pretty ? ", " : ",", stdout);
		first = false;
		put_bit_name(bit, names, nr_names);
	}
	if (pr.json)
		putchar(']');
}

void pr_label_u64(const char *key, const char *label, uint64_t val)
{
	if (field_begin(key)) {
		printf("%" PRIu64, val);
	} else {
		if (label)
			printf("%s ", label);
		printf("%" PRIu64 ":", val);
	}
}

void pr_label_str(const char *key, const char *val)
{
	if (field_begin(key)) {
		json_put_string(val);
	} else {
		text_put_string(val);
		putchar(':');
	}
}

void pr_value_str(const char *key, const char *val)
{
	if (field_begin(key))
		json_put_string(val);
	else
		text_put_string(val);
}

void pr_fmt_u64(const char *key, const char *fmt, uint64_t val)
{
	if (pr.json && !key)
		return;
	if (field_begin(key))
		printf("%" PRIu64, val);
	else
		printf(fmt, val);
}

void pr_fmt_double(const char *key, const char *fmt, double val)
{
	if (pr.json && !key)
		return;
	if (!field_begin(key))
		printf(fmt, val);
	else if (isfinite(val))
		printf("%.10g", val);
	else
		fputs("null", stdout);
}

void pr_nl(void)
{
	if (pr.json)
		return;
	text_end_line();
	pr.line_indent = pr.text_objs * PR_INDENT;
}

int pr_finish(void)
{
	while (pr.depth > 0)
		pr_pop();
	if (!pr.json)
		text_end_line();
	errno = 0;
	if (fflush(stdout) || ferror(stdout))
		return errno ? -errno : -EIO;
	return 0;
}
