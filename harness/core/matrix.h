/* From a suite to the list of cases it stands for: expand the axis sets,
 * filter (--filter) and shard (--shard K/N). Every stage is deterministic, so
 * the same suite and options give the same cases in the same order anywhere. */
#ifndef PPB_MATRIX_H
#define PPB_MATRIX_H

#include "case.h"
#include "ppb_error.h"
#include "suite.h"

/* A suite that expands past this many cases is refused: it would not run in
 * any sensible time, and is almost surely a typo in an axis. */
#define PPB_MATRIX_MAX_CASES 200000

typedef struct ppb_case_list {
    ppb_case *items;
    int n, cap;
} ppb_case_list;

/* Expand a suite into `out` (initialised here; free it with ppb_case_list_free,
 * also after an error). For each shape set x each config set: the Cartesian
 * product of the given values, in field order with the last field varying
 * fastest; a field neither set gives takes its default (ppb_case_init), and a
 * required field with no default is an error. A case matching an exclusion is
 * dropped, the first matching weight rule sets its weight, the rest get 1.0.
 * A product that makes an invalid case (num_heads 4 with num_kv_heads 8) is an
 * error naming the values and the suite lines: the user asked for it, so it is
 * not dropped silently; an exclusion can remove it. Identical keys keep the
 * first occurrence. */
int ppb_matrix_expand(const ppb_suite *s, ppb_case_list *out, ppb_err *err);

/* Keep the cases that satisfy every comma-separated term of `expr`:
 * "field=v1|v2", "field!=v1|v2", "field<v", "field<=v", "field>v", "field>=v".
 * Field names and enum values as in the case field table (dtype=bf16). A bad
 * expression is PPB_EINPUT naming the term, and leaves the list unchanged. */
int ppb_matrix_filter(ppb_case_list *list, const char *expr, ppb_err *err);

/* Set one config field to the same value in every case (run --impl NAME: the
 * whole suite on another implementation), then drop cases whose key became a
 * duplicate. `text` is parsed like a suite value. PPB_EINPUT naming the field
 * leaves the list unchanged. */
int ppb_matrix_override(ppb_case_list *list, const char *field, const char *text, ppb_err *err);

/* Parse "K/N" (1 <= K <= N). */
int ppb_matrix_parse_shard(const char *text, int *k, int *n, ppb_err *err);
/* Keep the cases of shard K of N: a case belongs to shard
 * (FNV-1a 64 of its key) % N + 1, so it lands in the same shard whatever the
 * suite's order, across runs and commits. Order is kept. K and N as
 * ppb_matrix_parse_shard accepts them; other values leave the list alone. */
void ppb_matrix_shard(ppb_case_list *list, int k, int n);

/* Reorder so the cases of one shape (ppb_case_shape_key) are adjacent: shapes
 * in the order they first appear, each shape's cases in their order. The
 * cases of a shape share one input set and its reference rows, which a runner
 * builds once while the shape lasts. PPB_ENOMEM leaves the list unchanged. */
int ppb_matrix_group_by_shape(ppb_case_list *list, ppb_err *err);

/* Append a copy; PPB_ENOMEM when the list cannot grow. */
int ppb_case_list_push(ppb_case_list *l, const ppb_case *c);
void ppb_case_list_free(ppb_case_list *l);

#endif
