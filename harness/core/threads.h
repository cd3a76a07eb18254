/* A tiny parallel-for over the machine's cores (pthreads).
 *
 * Used by the input generation, the reference check and the CPU backend. Work
 * items are handed out one at a time from a shared counter, so uneven items
 * (ragged sequences, sampled rows of different lengths) balance themselves.
 * A parallel-for called from inside a worker runs inline in that worker: no
 * nested thread explosion. */
#ifndef PPB_THREADS_H
#define PPB_THREADS_H

/* fn(ctx, item, worker): worker is in [0, ppb_thread_count()) and unique among
 * the threads running at the same time, so callers can index per-worker scratch. */
typedef void (*ppb_parallel_fn)(void *ctx, long item, int worker);

/* Threads a parallel-for uses: the online cores (sysconf), or env PPBENCH_THREADS
 * when set to a positive integer; capped at PPB_THREADS_MAX. */
#define PPB_THREADS_MAX 256
int ppb_thread_count(void);

/* Parallel-fors started from the calling thread use at most max_threads (0:
 * ppb_thread_count()): work in the background leaves cores to a thread that
 * must stay responsive (the one launching timed kernels), and a timed CPU
 * kernel keeps to the threads its backend was told to use. Returns the limit
 * it replaces, for the caller to put back. */
int ppb_parallel_limit_this_thread(int max_threads);

/* Run fn for every item in [0, n_items) and return when all are done. If a
 * thread cannot be started the remaining workers (at least the caller) do its
 * share: the result is the same, only slower. */
void ppb_parallel_for(long n_items, ppb_parallel_fn fn, void *ctx);

#endif
