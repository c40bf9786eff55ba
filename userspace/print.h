/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One print path for text and JSON output.
 *
 * A command describes its output once, as nested objects and arrays of
 * key/value fields; the printer renders it either as JSON or as text in
 * the style of iproute2's rdma tool:
 *
 *   - a field is "key value", fields of a line separated by one space;
 *   - every object starts a new line, indented four columns per enclosing
 *     object (the root object, if any, does not count); a named object
 *     prints its key as the first word of that line ("caps max_qp ...");
 *   - arrays are invisible in text: their elements are objects, each on
 *     its own line;
 *   - pr_nl() continues the current object on a new, further indented line.
 *
 * JSON keys inside arrays are ignored.  Numbers are JSON numbers; bit masks
 * (pr_mask) are strings "0x...", and values of the whole 64 bits (pr_u64_str)
 * decimal strings, because they may not survive a double.
 */
#ifndef KRDMACTL_PRINT_H
#define KRDMACTL_PRINT_H

#include <stdbool.h>
#include <stdint.h>

void pr_set_json(bool json);
void pr_set_pretty(bool pretty);	/* implies JSON */
bool pr_is_json(void);

void pr_obj_begin(const char *key);	/* key NULL: root or array element */
void pr_obj_end(void);
void pr_arr_begin(const char *key);
void pr_arr_end(void);

/* text "key 42"                 JSON "key": 42 */
void pr_u64(const char *key, uint64_t val);
/* text "key 42"                 JSON "key": "42" (a 64-bit value) */
void pr_u64_str(const char *key, uint64_t val);
/* text "key 0x2a"               JSON "key": 42 */
void pr_hex(const char *key, uint64_t val);
/* text "key 0x2a"               JSON "key": "0x2a" */
void pr_mask(const char *key, uint64_t val);
/* text "key val"                JSON "key": "val" */
void pr_str(const char *key, const char *val);
/* text "key a,b" or "key none"  JSON "key": ["a", "b"]; unknown bits "bitN" */
void pr_bits(const char *key, uint64_t bits, const char *const *names,
	     unsigned int nr_names);

/* Headings and bare values: text without the key. */
/* text "label 42:" (or "42:" if label is NULL)   JSON "key": 42 */
void pr_label_u64(const char *key, const char *label, uint64_t val);
/* text "val:"                   JSON "key": "val" */
void pr_label_str(const char *key, const char *val);
/* text "val"                    JSON "key": "val" */
void pr_value_str(const char *key, const char *val);

/*
 * Numbers with their words around them: text prints @fmt applied to @val
 * as it is ("%.2f seconds"), JSON the bare number (a double that is not
 * finite is null).  A NULL @key prints in text only, for a figure that a
 * line repeats.
 */
/* text "1000 iters"             JSON "key": 1000 */
void pr_fmt_u64(const char *key, const char *fmt, uint64_t val);
/* text "in 0.25 seconds"        JSON "key": 0.25 */
void pr_fmt_double(const char *key, const char *fmt, double val);

/* Text only: continue the current object on a new line. */
void pr_nl(void);

/* Ends the output and flushes stdout: 0, or -errno on a write error. */
int pr_finish(void);

#endif /* KRDMACTL_PRINT_H */
