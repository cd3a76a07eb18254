/* The parallel-for: every item once, worker indices safe for per-worker scratch,
 * nested calls inline, PPBENCH_THREADS honoured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>

#include "threads.h"

typedef struct count_ctx {
    atomic_int *hits;
    atomic_int busy[PPB_THREADS_MAX]; /* 1 while a worker index is in use */
    atomic_int clashes, bad_worker, nested_items;
    int n_threads;
    int nest;
} count_ctx;

static void nested_item(void *p, long item, int worker)
{
    (void)item;
    count_ctx *c = p;
    atomic_fetch_add(&c->nested_items, 1);
    /* inline: same worker index as the caller, which is marked busy */
    if (worker < 0 || worker >= c->n_threads || atomic_load(&c->busy[worker]) != 1)
        atomic_fetch_add(&c->bad_worker, 1);
}

static void count_item(void *p, long item, int worker)
{
    count_ctx *c = p;
    if (worker < 0 || worker >= c->n_threads) {
        atomic_fetch_add(&c->bad_worker, 1);
        return;
    }
    if (atomic_exchange(&c->busy[worker], 1) != 0)
        atomic_fetch_add(&c->clashes, 1);
    atomic_fetch_add(&c->hits[item], 1);
    volatile double x = 0; /* a little work so items overlap */
    for (int i = 0; i < 2000; i++)
        x += i;
    if (c->nest)
        ppb_parallel_for(3, nested_item, c);
    atomic_store(&c->busy[worker], 0);
}

static void run_and_check(long n, int nest)
{
    count_ctx *c = calloc(1, sizeof *c);
    c->hits = calloc((size_t)n, sizeof(atomic_int));
    c->n_threads = ppb_thread_count();
    c->nest = nest;
    ppb_parallel_for(n, count_item, c);
    for (long i = 0; i < n; i++)
        assert_int_equal(atomic_load(&c->hits[i]), 1);
    assert_int_equal(atomic_load(&c->clashes), 0);
    assert_int_equal(atomic_load(&c->bad_worker), 0);
    assert_int_equal(atomic_load(&c->nested_items), nest ? 3 * n : 0);
    free(c->hits);
    free(c);
}

static void test_every_item_once(void **state)
{
    (void)state;
    run_and_check(1, 0);
    run_and_check(1000, 0);
    run_and_check(200, 1);
    ppb_parallel_for(0, count_item, NULL); /* nothing to do: fn never called */
}

static void test_thread_count_override(void **state)
{
    (void)state;
    setenv("PPBENCH_THREADS", "5", 1);
    assert_int_equal(ppb_thread_count(), 5);
    run_and_check(500, 1); /* more threads than cores still works */
    setenv("PPBENCH_THREADS", "1", 1);
    assert_int_equal(ppb_thread_count(), 1);
    run_and_check(50, 1);
    setenv("PPBENCH_THREADS", "100000", 1);
    assert_int_equal(ppb_thread_count(), PPB_THREADS_MAX);
    setenv("PPBENCH_THREADS", "zero", 1); /* not a number: the core count */
    int cores = ppb_thread_count();
    unsetenv("PPBENCH_THREADS");
    assert_int_equal(cores, ppb_thread_count());
    assert_true(cores >= 1);
}

static void max_worker(void *p, long item, int worker)
{
    (void)item;
    atomic_int *most = p;
    int seen = atomic_load(most);
    while (worker > seen && !atomic_compare_exchange_weak(most, &seen, worker))
        ;
    volatile double x = 0;
    for (int i = 0; i < 20000; i++)
        x += i;
}

/* A limit on this thread caps the workers (indices below it), and only here. */
static void test_limit_this_thread(void **state)
{
    (void)state;
    setenv("PPBENCH_THREADS", "8", 1);
    atomic_int most = 0;
    assert_int_equal(ppb_parallel_limit_this_thread(3), 0); /* none before */
    ppb_parallel_for(400, max_worker, &most);
    assert_true(atomic_load(&most) <= 2);
    assert_int_equal(ppb_parallel_limit_this_thread(1), 3); /* the limit replaced, to put back */
    atomic_store(&most, 0);
    ppb_parallel_for(400, max_worker, &most);
    assert_int_equal(atomic_load(&most), 0); /* one thread: the caller alone */
    assert_int_equal(ppb_parallel_limit_this_thread(0), 1);
    atomic_store(&most, 0);
    for (int tries = 0; tries < 100 && atomic_load(&most) <= 2; tries++) /* the workers race: some get items */
        ppb_parallel_for(400, max_worker, &most);
    assert_true(atomic_load(&most) > 2);
    run_and_check(100, 1);
    unsetenv("PPBENCH_THREADS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_once),
        cmocka_unit_test(test_thread_count_override),
        cmocka_unit_test(test_limit_this_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
