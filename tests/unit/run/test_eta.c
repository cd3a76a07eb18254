/* The run's ETA model (harness/run/eta.h) on synthetic case sequences: the old
 * estimator (mean time x cases left) is ~2x low when cheap cases come first,
 * the model is close; each rule of the fit (refused cases out of it, slope and
 * intercept never negative, the mean without two works) changes a figure
 * here; and bad or extreme input still gives a finite, non-negative ETA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "eta.h"

#define TOL 1e-9

static void assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want) + 1e-12))
        fail_msg("got %.17g, want %.17g (rel %.3g)", got, want, rel);
}

static void assert_valid(double eta)
{
    assert_true(isfinite(eta));
    assert_true(eta >= 0 && eta <= PPB_ETA_MAX_S);
}

/* A model of n cases, all planned, with these works. */
static void plan(ppb_eta *e, const double *works, int n)
{
    ppb_err err;
    assert_int_equal(ppb_eta_init(e, n, &err), PPB_OK);
    for (int i = 0; i < n; i++)
        ppb_eta_plan(e, i, works[i]);
}

/* A suite as ppbench expands it: NSHAPES shapes from small to large, each
 * under NCONFIGS configs of the same work; work doubles per shape. A case
 * costs a fixed 0.3 s plus 4e-12 s/FLOP, with +-10% deterministic noise,
 * except that the target refuses config 5 of every shape, in ~5 ms. */
#define NSHAPES 6
#define NCONFIGS 8
#define NCASES (NSHAPES * NCONFIGS)

typedef struct synth {
    double work[NCASES], seconds[NCASES];
    int timed[NCASES];
} synth;

static void make_suite(synth *s)
{
    for (int i = 0; i < NCASES; i++) {
        s->work[i] = 1e10 * pow(2, i / NCONFIGS);
        s->timed[i] = i % NCONFIGS != 5;
        s->seconds[i] = s->timed[i] ? (0.3 + 4e-12 * s->work[i]) * (1 + 0.1 * sin(2.3 * i)) : 0.005;
    }
}

/* The model after the first k cases of s finished. */
static double eta_after(const synth *s, int k)
{
    ppb_eta e;
    plan(&e, s->work, NCASES);
    for (int i = 0; i < k; i++)
        ppb_eta_finish(&e, i, s->timed[i], s->seconds[i]);
    double eta = ppb_eta_remaining_s(&e);
    ppb_eta_free(&e);
    return eta;
}

static void test_cheap_cases_first(void **state)
{
    (void)state;
    synth s;
    make_suite(&s);
    /* From the second shape on (two works to fit) while a shape is left (a
     * few cases left are a few draws of the refusals and the noise). */
    for (int k = NCONFIGS + 2; k <= NCASES - NCONFIGS; k++) {
        double elapsed = 0, left = 0;
        for (int i = 0; i < NCASES; i++)
            *(i < k ? &elapsed : &left) += s.seconds[i];
        double old = elapsed / k * (NCASES - k), eta = eta_after(&s, k);
        if (k <= NCASES / 2 && !(old < 0.6 * left))
            fail_msg("after %d cases the old ETA %.1f s is not ~2x low against %.1f s", k, old, left);
        if (getenv("PPB_ETA_TRACE"))
            print_message("k=%d old/true %.2f new/true %.2f\n", k, old / left, eta / left);
        if (!(fabs(eta - left) <= 0.2 * left))
            fail_msg("after %d cases ETA %.1f s, the cases left take %.1f s", k, eta, left);
    }
}

/* Noise-free timed cases on seconds = 2 + 3e-9 * work and a refused case of
 * the same work as the one left: the line comes from the timed cases only;
 * the case left is refused with the share seen (1 in 4), at its 10 ms. */
static void test_refused_cases_stay_out_of_the_fit(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {1e9, 2e9, 3e9, 3e9, 3e9};
    plan(&e, works, 5);
    for (int i = 0; i < 3; i++)
        ppb_eta_finish(&e, i, 1, 2 + 3e-9 * works[i]);
    ppb_eta_finish(&e, 3, 0, 0.01);
    assert_close(ppb_eta_remaining_s(&e), 0.25 * 0.01 + 0.75 * (2 + 3e-9 * 3e9), TOL);
    ppb_eta_free(&e);
}

/* Refusals that grow with work (the CPU backend's limit, device memory): once
 * a case heavier than every timed one is refused, the cases left above it are
 * expected refused too, not timed on the line. */
static void test_refusals_above_a_limit(void **state)
{
    (void)state;
    ppb_eta e;
    double works[40];
    for (int i = 0; i < 40; i++)
        works[i] = 1e9 * pow(1.25, i);
    plan(&e, works, 40);
    /* 20 cases timed at 0.1 s + 1e-10 s/FLOP (the 20 left: ~3000 s on the line) */
    for (int i = 0; i < 20; i++)
        ppb_eta_finish(&e, i, 1, 0.1 + 1e-10 * works[i]);
    assert_true(ppb_eta_remaining_s(&e) > 1000);
    /* then refused in 5 ms */
    ppb_eta_finish(&e, 20, 0, 0.005);
    assert_close(ppb_eta_remaining_s(&e), 19 * 0.005, TOL);
    /* A timed case above the "limit" disproves it. */
    ppb_eta_finish(&e, 21, 1, 0.1 + 1e-10 * works[21]);
    assert_true(ppb_eta_remaining_s(&e) > 1000);
    ppb_eta_free(&e);
}

/* Suites in config-major order (a shape set's values under one config, then
 * the next config) on the CPU backend: the heaviest shape of every config is
 * over the limit. After the first config, the model knows all of it. */
static void test_limit_in_config_major_order(void **state)
{
    (void)state;
    enum { SHAPES = 8, CONFIGS = 3, N = SHAPES * CONFIGS };
    double works[N], seconds[N];
    for (int i = 0; i < N; i++) {
        works[i] = 1e8 * pow(2, i % SHAPES);
        seconds[i] = i % SHAPES == SHAPES - 1 ? 0.005 : 0.2 + 1e-8 * works[i];
    }
    ppb_eta e;
    plan(&e, works, N);
    double left = 0;
    for (int i = 0; i < N; i++) {
        if (i >= SHAPES)
            left += seconds[i];
        if (i < SHAPES)
            ppb_eta_finish(&e, i, i % SHAPES != SHAPES - 1, seconds[i]);
    }
    assert_close(ppb_eta_remaining_s(&e), left, 1e-6);
    ppb_eta_free(&e);
}

/* Times that fall as work grows (noise, a warm cache): the slope is 0, every
 * case left costs the timed mean. */
static void test_slope_never_negative(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {1e9, 2e9, 3e9, 4e9, 5e9, 6e9};
    plan(&e, works, 6);
    for (int i = 0; i < 4; i++)
        ppb_eta_finish(&e, i, 1, 5.0 - i);
    assert_close(ppb_eta_remaining_s(&e), 2 * 3.5, TOL);
    ppb_eta_free(&e);
}

/* (2e9, 1 s) and (4e9, 3 s): the line has intercept -1 s. A case of 1e9 left
 * would take 0 s on it; through the origin it takes 1e9 x 4 s / 6e9. */
static void test_intercept_never_negative(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {2e9, 4e9, 1e9};
    plan(&e, works, 3);
    ppb_eta_finish(&e, 0, 1, 1);
    ppb_eta_finish(&e, 1, 1, 3);
    assert_close(ppb_eta_remaining_s(&e), 1e9 * 4 / 6e9, TOL);
    ppb_eta_free(&e);
}

/* One timed case says nothing about how time grows with work: the cases left
 * take its time each, however large they are. */
static void test_one_timed_case_is_the_mean(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {1e9, 1e12, 1e12, 1e12};
    plan(&e, works, 4);
    ppb_eta_finish(&e, 0, 1, 5);
    assert_close(ppb_eta_remaining_s(&e), 15, TOL);
    ppb_eta_free(&e);
}

/* Two works a rounding apart are one work: no line through them. */
static void test_no_line_through_one_work(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {1e9, 1e9 + 1, 1e12};
    plan(&e, works, 3);
    ppb_eta_finish(&e, 0, 1, 1);
    ppb_eta_finish(&e, 1, 1, 2);
    assert_close(ppb_eta_remaining_s(&e), 1.5, TOL);
    ppb_eta_free(&e);
}

/* A NaN work or time counts as 0 instead of turning the whole ETA into NaN. */
static void test_one_bad_figure(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {1e9, 2e9, NAN, 3e9};
    plan(&e, works, 4);
    ppb_eta_finish(&e, 0, 1, 1 + 1e-9 * 1e9);
    ppb_eta_finish(&e, 1, 1, 1 + 1e-9 * 2e9);
    assert_close(ppb_eta_remaining_s(&e), 1 + (1 + 1e-9 * 3e9), TOL);
    ppb_eta_free(&e);
    const double same[] = {1e9, 1e9, 1e9, 1e9};
    plan(&e, same, 4);
    ppb_eta_finish(&e, 0, 1, 2);
    ppb_eta_finish(&e, 1, 1, NAN);
    ppb_eta_finish(&e, 2, 1, 4);
    assert_close(ppb_eta_remaining_s(&e), 2, TOL);
    ppb_eta_free(&e);
}

/* Only planned cases count, each finished once; bad indices are ignored. */
static void test_planned_cases_only(void **state)
{
    (void)state;
    ppb_eta e;
    ppb_err err;
    assert_int_equal(ppb_eta_init(&e, 4, &err), PPB_OK);
    assert_true(ppb_eta_remaining_s(&e) == 0);
    ppb_eta_plan(&e, 1, 1e12);
    ppb_eta_plan(&e, 3, 1e12);
    ppb_eta_plan(&e, -1, 1e12);
    ppb_eta_plan(&e, 4, 1e12);
    assert_true(ppb_eta_remaining_s(&e) == 0); /* nothing finished: nothing to go on */
    ppb_eta_finish(&e, 0, 1, 100);             /* not planned (resumed: stored already) */
    ppb_eta_finish(&e, 4, 1, 100);
    ppb_eta_finish(&e, 1, 1, 3);
    ppb_eta_finish(&e, 1, 1, 100);             /* twice */
    assert_close(ppb_eta_remaining_s(&e), 3, TOL);
    ppb_eta_finish(&e, 3, 1, 3);
    assert_true(ppb_eta_remaining_s(&e) == 0);
    ppb_eta_free(&e);
    ppb_eta_free(&e); /* idempotent */
    assert_int_equal(ppb_eta_init(&e, 0, &err), PPB_OK);
    assert_true(ppb_eta_remaining_s(&e) == 0);
    ppb_eta_free(&e);
}

/* All refused so far: the cases left take the refused cases' mean. */
static void test_all_refused(void **state)
{
    (void)state;
    ppb_eta e;
    double works[10];
    for (int i = 0; i < 10; i++)
        works[i] = 1e12 * (i + 1);
    plan(&e, works, 10);
    for (int i = 0; i < 4; i++)
        ppb_eta_finish(&e, i, 0, 0.01 * (i + 1));
    assert_close(ppb_eta_remaining_s(&e), 6 * 0.025, TOL);
    ppb_eta_free(&e);
}

/* Cases of no work (or all of one work): the mean of the timed cases. */
static void test_zero_work(void **state)
{
    (void)state;
    ppb_eta e;
    const double works[] = {0, 0, 0, 0, 0};
    plan(&e, works, 5);
    for (int i = 0; i < 3; i++)
        ppb_eta_finish(&e, i, 1, i + 1.0);
    assert_close(ppb_eta_remaining_s(&e), 2 * 2.0, TOL);
    ppb_eta_free(&e);
}

/* Huge, infinite, NaN and negative inputs: still finite, in [0, max]. */
static void test_extreme_input(void **state)
{
    (void)state;
    const double bad[] = {1e300, INFINITY, -INFINITY, NAN, -5, 0, 1e-300, 1e-320};
    enum { N = sizeof bad / sizeof bad[0] };
    double works[3 * N];
    for (int i = 0; i < 3 * N; i++)
        works[i] = bad[i % N];
    ppb_eta e;
    plan(&e, works, 3 * N);
    for (int i = 0; i < 2 * N; i++) {
        /* every work against every kind of time, timed and not */
        ppb_eta_finish(&e, i, i % 3 != 0, bad[(i * 3 + 1) % N]);
        assert_valid(ppb_eta_remaining_s(&e));
    }
    ppb_eta_free(&e);
    /* Valid but enormous: the ETA is capped, not overflowed. */
    const double big[] = {1e29, 2e29, 3e29, 4e29};
    plan(&e, big, 4);
    ppb_eta_finish(&e, 0, 1, 1e8);
    ppb_eta_finish(&e, 1, 1, 2e8);
    assert_true(ppb_eta_remaining_s(&e) == PPB_ETA_MAX_S);
    ppb_eta_free(&e);
    /* Tiny works with a spread the fit must not blow up on. */
    const double tiny[] = {1e-300, 2e-300, 3e-300, 1e30};
    plan(&e, tiny, 4);
    for (int i = 0; i < 3; i++)
        ppb_eta_finish(&e, i, 1, i == 1 ? 1e9 : 0);
    assert_valid(ppb_eta_remaining_s(&e));
    ppb_eta_free(&e);
}

static void test_case_work(void **state)
{
    (void)state;
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = 1;
    c.shape.query_len = 512;
    c.shape.context_len = 1024;
    c.shape.num_heads = 32;
    c.shape.num_kv_heads = 8;
    double small = ppb_eta_case_work(&c);
    assert_true(small >= ppb_case_flops(&c) && small > ppb_case_min_bytes(&c));
    c.shape.context_len = 16384;
    assert_true(ppb_eta_case_work(&c) > small);
    /* Decode: a little arithmetic per byte, so the bytes carry the work. */
    ppb_case d;
    ppb_case_init(&d, PPB_PAGED_ATTENTION);
    d.shape.batch = 8;
    d.shape.seq_len = 4096;
    d.shape.num_heads = 32;
    d.shape.num_kv_heads = 8;
    assert_true(ppb_eta_case_work(&d) > 8 * ppb_case_flops(&d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cheap_cases_first),
        cmocka_unit_test(test_refused_cases_stay_out_of_the_fit),
        cmocka_unit_test(test_refusals_above_a_limit),
        cmocka_unit_test(test_limit_in_config_major_order),
        cmocka_unit_test(test_slope_never_negative),
        cmocka_unit_test(test_intercept_never_negative),
        cmocka_unit_test(test_one_timed_case_is_the_mean),
        cmocka_unit_test(test_no_line_through_one_work),
        cmocka_unit_test(test_one_bad_figure),
        cmocka_unit_test(test_planned_cases_only),
        cmocka_unit_test(test_all_refused),
        cmocka_unit_test(test_zero_work),
        cmocka_unit_test(test_extreme_input),
        cmocka_unit_test(test_case_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
