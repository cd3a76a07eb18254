/* Float64 reference attention, and the check of a backend's output against it.
 *
 * Reads the context through the block table in vLLM's paged layouts, applies
 * the causal mask (bottom-right aligned), GQA and the sliding window. Small
 * cases are checked on every output row; large ones on a seeded random sample
 * of (sequence, head, row) that always includes each sequence's first and last
 * row (decode: random rows in whole GQA groups, and the first and last
 * sequence). Work is spread over the available cores. */
#ifndef PPB_REFERENCE_H
#define PPB_REFERENCE_H

#include <stdint.h>

#include "result.h"
#include "suite.h"
#include "workload.h"

/* One output row (D values) of query token `token` (decode: sequence index), head `head`. */
void ppb_reference_row(const ppb_workload *w, int token, int head, double *out_row);

/* The rows a check compares (all, or the seeded sample) and their float64
 * values: what one input set costs to check, whatever config produced the
 * output, so a runner computes them once per input set. */
typedef struct ppb_reference_rows {
    const ppb_workload *w;   /* the inputs they were computed from */
    long n;
    long *rows;              /* row id = token * num_heads + head, ascending */
    double *values;          /* [n][head_dim] */
} ppb_reference_rows;

int ppb_reference_rows_compute(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed,
                               ppb_reference_rows *out, ppb_err *err);
void ppb_reference_rows_free(ppb_reference_rows *r);
/* Fill the host tensors the rows of a workload created without them will read:
 * the queries and new tokens, and the paged cache only where the rows read its
 * elements more than once on average (prefill: the sampled queries of a sequence
 * share its context). Else the rows generate the cache elements they read
 * (reference_row.h): decode's gigabytes of cache never touch the host. */
int ppb_reference_fill_inputs(ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, ppb_err *err);
/* Check `out` (storage dtype, same layout as q) against the rows; fill res. */
int ppb_reference_compare(const ppb_reference_rows *ref, const uint16_t *out, const ppb_check_settings *cs,
                          ppb_check_result *res, ppb_err *err);

/* Both in one: check `out` and fill res. */
int ppb_reference_check(const ppb_workload *w, const uint16_t *out, const ppb_check_settings *cs,
                        uint64_t seed, ppb_check_result *res, ppb_err *err);

/* Poison value written into outputs before a checked launch (a NaN pattern). */
#define PPB_POISON_BITS 0x7E7Eu

#endif
