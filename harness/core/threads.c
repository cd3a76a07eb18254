#include "threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

int ppb_thread_count(void)
{
    const char *env = getenv("PPBENCH_THREADS");
    if (env && *env) {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (end != env && *end == '\0' && v > 0)
            return v > PPB_THREADS_MAX ? PPB_THREADS_MAX : (int)v;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > PPB_THREADS_MAX ? PPB_THREADS_MAX : (int)n;
}

typedef struct parallel_job {
    ppb_parallel_fn fn;
    void *ctx;
    long n_items;
    atomic_long next;
} parallel_job;

typedef struct worker_arg {
    parallel_job *job;
    int worker;
} worker_arg;

/* The worker index of this thread while it runs items (-1 outside): a nested
 * parallel-for runs inline and passes the same index on, so per-worker scratch
 * indexed by it is never shared between two running threads. */
static _Thread_local int current_worker = -1;
static _Thread_local int thread_limit; /* ppb_parallel_limit_this_thread; 0: none */

int ppb_parallel_limit_this_thread(int max_threads)
{
    int before = thread_limit;
    thread_limit = max_threads > 0 ? max_threads : 0;
    return before;
}

static void drain(parallel_job *job, int worker)
{
    for (;;) {
        long item = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (item >= job->n_items)
            break;
        job->fn(job->ctx, item, worker);
    }
}

static void *worker_main(void *p)
{
    worker_arg *a = p;
    current_worker = a->worker;
    drain(a->job, a->worker);
    return NULL;
}

void ppb_parallel_for(long n_items, ppb_parallel_fn fn, void *ctx)
{
    if (n_items <= 0)
        return;
    if (current_worker >= 0) {
        for (long i = 0; i < n_items; i++)
            fn(ctx, i, current_worker);
        return;
    }
    int n_threads = ppb_thread_count();
    if (thread_limit > 0 && n_threads > thread_limit)
        n_threads = thread_limit;
    if (n_threads > n_items)
        n_threads = (int)n_items;
    if (n_threads <= 1) {
        current_worker = 0;
        for (long i = 0; i < n_items; i++)
            fn(ctx, i, 0);
        current_worker = -1;
        return;
    }
    parallel_job job = {.fn = fn, .ctx = ctx, .n_items = n_items};
    atomic_init(&job.next, 0);
    pthread_t tids[PPB_THREADS_MAX];
    worker_arg args[PPB_THREADS_MAX];
    int started = 0;
    /* worker 0 is the caller; workers 1.. are new threads */
    for (int t = 1; t < n_threads; t++) {
        args[started + 1] = (worker_arg){.job = &job, .worker = started + 1};
        if (pthread_create(&tids[started], NULL, worker_main, &args[started + 1]) != 0)
            break;
        started++;
    }
    current_worker = 0;
    drain(&job, 0);
    current_worker = -1;
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
}
