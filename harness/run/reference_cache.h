/* Reference rows kept on disk between runs.
 *
 * The float64 rows a check compares against are a pure function of the inputs
 * (the seed and the case's shape: lengths, block table and tensors follow from
 * them), of the check settings that choose the rows, and of the code that
 * generates the inputs and computes the reference. A nightly checks the same
 * shapes every night, and at 32K contexts those rows cost seconds of CPU per
 * shape, more than the kernels' timing: they are computed once and read back.
 *
 * The key names everything the rows depend on; the code by a hash of its
 * source files taken at build time (PPB_REFERENCE_SOURCES_HASH), so an edit to
 * the reference or to the inputs' definition is a miss, never stale rows. The
 * files share the kernel cache's folder and its keyed store (kernel_cache.h):
 * written atomically, checksummed; a damaged or foreign file reads as a miss. */
#ifndef PPB_REFERENCE_CACHE_H
#define PPB_REFERENCE_CACHE_H

#include <stdint.h>
#include <stdio.h>

#include "reference.h"

/* Off with PPBENCH_REFERENCE_CACHE=off. */
#define PPB_REFERENCE_CACHE_ENV "PPBENCH_REFERENCE_CACHE"

/* The folder (the kernel cache's, ppb_kernel_cache_dir) into buf, or "" when
 * the cache is off or no folder can be named. */
void ppb_reference_cache_dir(char *buf, size_t len);

/* The key text of (w, cs, seed), one line: the inputs' seed (w->seed) and
 * shape, the rows' seed, the check settings, the lengths and block table. */
void ppb_reference_cache_key(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, char *buf,
                             size_t len);

/* 1: the rows for (w, cs, seed) read from `dir` into out (the workload needs
 * no tensors for that); 0: not there, or not usable (out empty). */
int ppb_reference_rows_load(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, const char *dir,
                            ppb_reference_rows *out);

/* The rows for (w, cs, seed): read from `dir` when there, else computed
 * (ppb_reference_rows_compute) and written there. dir "" or NULL: computed,
 * nothing read or written. *from_cache says which. A write that fails is said
 * once per process on `log` (may be NULL); the computed rows are still used. */
int ppb_reference_rows_get(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, const char *dir,
                           FILE *log, ppb_reference_rows *out, int *from_cache, ppb_err *err);

#endif
