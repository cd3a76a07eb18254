/* Float64 reference attention, and the check of a backend's output against it.
 *
 * Reads the context through the block table in vLLM's paged layouts, applies
 * the causal mask (bottom-right aligned), GQA and the sliding window. Small
 * cases are checked on every output row; large ones on a seeded random sample
 * of (sequence, head, row) that always includes each sequence's first and last
 * row. Work is spread over the available cores. */
#ifndef PPB_REFERENCE_H
#define PPB_REFERENCE_H

#include <stdint.h>

#include "result.h"
#include "suite.h"
#include "workload.h"

/* One output row (D values) of query token `token` (decode: sequence index), head `head`. */
void ppb_reference_row(const ppb_workload *w, int token, int head, double *out_row);

/* Check `out` (storage dtype, same layout as q) and fill res. */
int ppb_reference_check(const ppb_workload *w, const uint16_t *out, const ppb_check_settings *cs,
                        uint64_t seed, ppb_check_result *res, ppb_err *err);

/* Poison value written into outputs before a checked launch (a NaN pattern). */
#define PPB_POISON_BITS 0x7E7Eu

#endif
