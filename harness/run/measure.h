/* Timing one prepared case (MEASUREMENT.md "How ppbench measures one case"):
 * warm up by time, batch very short launches, then sample until the robust
 * noise (q3-q1)/median is under the suite's target and the minimum count and
 * time are reached, or the per-case budget runs out (then the case is NOISY). */
#ifndef PPB_MEASURE_H
#define PPB_MEASURE_H

#include <signal.h>

#include "backend.h"
#include "suite.h"

/* Launches shorter than this are timed in batches (launch overhead and event
 * resolution would otherwise dominate). */
#define PPB_MIN_SAMPLE_MS 0.02

/* Warm up by time: launches until the case has run for m->warmup_ms, counting
 * `done_ms` already run just before (the checked launch), and at least
 * `min_launches` (the first launch of a prepared case pays for JIT, allocation
 * and cold instruction caches, so it is never the only one before sampling);
 * then choose how many launches one sample times (from the shortest launch,
 * done_ms included). */
int ppb_measure_warmup(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m, double done_ms,
                       int min_launches, volatile sig_atomic_t *stop, int *launches, ppb_err *err);

/* The warm-up a case still owes: warmup_ms less the device's timed work that
 * ended idle_ms ago, when that is under PPB_WARM_GAP_MS (the case before, in
 * the same run: the card is still warm; measured on the H200, a case's first
 * sample after it is no outlier, docs/BENCHMARKS.md). busy_ms 0: none. */
#define PPB_WARM_GAP_MS 100.0
double ppb_measure_warmup_owed(double warmup_ms, double busy_ms, double idle_ms);

/* Cold-L2 samples: what a flush writes before each, on a device with l2_bytes of L2
 * (twice the L2 + 1 MB, so that even a cache replacing lines at random keeps only
 * ~e^-2 of what came before), and whether case c needs it. A sample that reads at
 * least a flush's worth more than the L2 holds is its own flush: what the previous
 * sample left in L2 is what it read last, and this sample reads all the rest first.
 * Reads are ppb_case_min_bytes (K and V once), so a sliding window always flushes.
 * Why skip it: the memset leaves the L2 full of dirty lines that the timed kernel
 * writes back; on the H200 that made decode 1-6% slower (docs/BENCHMARKS.md). */
size_t ppb_l2_flush_bytes(long long l2_bytes);
int ppb_cold_sample_needs_flush(const ppb_case *c, long long l2_bytes);

/* Time a case after its checked launch. The warm-up counts that launch: with
 * its time known (res->checked_launch_ms) a kernel that ran for warmup_ms in it
 * needs no further warm-up launch (a whole launch of a long kernel saved);
 * unknown, 1 launch at least. Fills res->samples_ms,
 * n_samples, batch_launches; sets res->status to PPB_STATUS_NOISY when the
 * noise target was not met. `stop` (may be NULL) is
 * polled between samples: when it becomes non-zero, returns PPB_EINTR. */
int ppb_measure_case(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m,
                     volatile sig_atomic_t *stop, ppb_result *res, ppb_err *err);

#endif
