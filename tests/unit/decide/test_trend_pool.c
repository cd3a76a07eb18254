/* The pooled trend (harness/decide/trend_pool.h): a suite's cases pooled per
 * night. Simulated suites of 24 cases whose nights are noisy one by one (20%:
 * a loaded CPU runner) raise no pooled alert over plain nights (normal,
 * bimodal and drifting noise, and a slower night common to every case); a
 * sustained suite-wide 10% step over 10% noise per case alerts by its second
 * night and names its first run, where the cases alone almost never see it. The derived threshold, the
 * nights too few cases ran, a group too small to pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_sim.h"
#include "trend.h"
#include "trend_pool.h"

#define CASES 24
#define NIGHTS 22

enum { NOISE_NORMAL, NOISE_BIMODAL, NOISE_AR1, NOISE_COMMON, NOISE_COMMON_DRIFT, NOISE_HIT, NOISE_KINDS };

typedef struct suite_nights {
    char ids[NIGHTS][24];
    char when[NIGHTS][32];
    const char *when_p[NIGHTS];
    ppb_trend_point p[CASES][NIGHTS];
} suite_nights;

/* `n` nights of CASES cases, each case at its own level with relative noise
 * `noise` per night, independent from case to case (bimodal: each night at
 * -noise or +noise at random; AR1: a case's nights drift, rho 0.5), or
 * NOISE_COMMON: normal per case plus a common factor of the same size shared
 * by every case of the night (NOISE_COMMON_DRIFT: a common factor that
 * drifts, rho 0.5, a quarter of the size: a runner slower for days;
 * NOISE_HIT: normal, and each case on each night twice as slow with
 * probability 0.15: a busy neighbour); from night `at` on, every case is
 * `step` slower. */
static void make_suite(suite_nights *s, int n, double noise, int kind, int at, double step, uint64_t seed)
{
    sim_rng rng = {seed};
    for (int i = 0; i < n; i++) {
        snprintf(s->ids[i], sizeof s->ids[i], "%d", 100 + i);
        snprintf(s->when[i], sizeof s->when[i], "2026-11-%02dT02:00:00Z", 1 + i);
        s->when_p[i] = s->when[i];
    }
    double common[NIGHTS], drift = 0;
    for (int i = 0; i < n; i++) {
        double e = sim_normal(&rng);
        drift = 0.5 * drift + 0.8660254037844386 * e;
        common[i] = kind == NOISE_COMMON ? noise * e : kind == NOISE_COMMON_DRIFT ? noise / 4 * drift : 0;
    }
    for (int c = 0; c < CASES; c++) {
        double level = 0.1 * (1 + c), ar = 0;
        for (int i = 0; i < n; i++) {
            double e = sim_normal(&rng);
            if (kind == NOISE_BIMODAL)
                e = (sim_uniform(&rng) < 0.5 ? -1 : 1) + 0.1 * e;
            if (kind == NOISE_AR1)
                e = ar = 0.5 * ar + 0.8660254037844386 * e;
            double hit = kind == NOISE_HIT && sim_uniform(&rng) < 0.15 ? 2 : 1;
            s->p[c][i].run_id = s->ids[i];
            s->p[c][i].value = level * hit * exp(noise * e + common[i]) * (i >= at ? 1 + step : 1);
        }
    }
}

/* The pooled series of the first `cases` cases over the first n nights, judged. */
static ppb_trend_result pooled(const suite_nights *s, int n, int cases, int *n_series)
{
    ppb_trend_options base;
    ppb_trend_options_default(&base);
    ppb_trend_pool pool;
    ppb_trend_pool_init(&pool, "prefix_prefill", base.window);
    ppb_err err = {{0}};
    for (int c = 0; c < cases; c++)
        assert_int_equal(ppb_trend_pool_add(&pool, s->p[c], s->when_p, n, base.min_change, &err), PPB_OK);
    ppb_trend_pooled out;
    assert_int_equal(ppb_trend_pool_judge(&pool, &base, &out, &err), PPB_OK);
    *n_series = out.n;
    ppb_trend_result r = out.result;
    ppb_trend_pooled_free(&out);
    ppb_trend_pool_free(&pool);
    return r;
}

static int alert(const ppb_trend_result *r)
{
    return r->status == PPB_TREND_REGRESSION || r->status == PPB_TREND_IMPROVEMENT;
}

/* 3 x 100 plain suites of 22 nights, 20% noise per case and night: at most 1%
 * of pooled series alert. Mutations caught: the threshold not widened for the
 * reference, the alert rate taken per night without the sustain, a median
 * replaced by the mean (bimodal nights), a case not normalised by its level. */
static void test_plain_nights_do_not_alert(void **state)
{
    (void)state;
    static suite_nights s;
    int alerts[NOISE_KINDS] = {0}, runs = 100, n_series = 0;
    for (int kind = 0; kind < NOISE_KINDS; kind++)
        for (uint64_t seed = 1; seed <= (uint64_t)runs; seed++) {
            make_suite(&s, NIGHTS, 0.2, kind, NIGHTS, 0, seed * 7919 + (uint64_t)kind);
            ppb_trend_result r = pooled(&s, NIGHTS, CASES, &n_series);
            assert_int_equal(n_series, NIGHTS);
            alerts[kind] += alert(&r);
        }
    print_message("  plain nights, pooled alerts of %d: normal %d, bimodal %d, drifting %d, common %d, common "
                  "drifting %d, hit %d\n", runs, alerts[0], alerts[1], alerts[2], alerts[3], alerts[4], alerts[5]);
    for (int kind = 0; kind < NOISE_KINDS; kind++)
        assert_true(alerts[kind] <= runs / 100);
}

/* A sustained 10% step in every case, the last 2 nights, 10% noise per case
 * and night: the pooled series is a REGRESSION in >= 90% of 100 suites, at the
 * step's first run in >= 85 (else a night early: the night before was high),
 * where each case alone (default rules) alerts in under 10% of its series;
 * one night of it is rarely an alert (<= 2). */
static void test_suite_wide_step_alerts_pooled(void **state)
{
    (void)state;
    static suite_nights s;
    int pooled_alerts = 0, named = 0, first_night = 0, case_alerts = 0, case_series = 0, n_series = 0;
    ppb_err err = {{0}};
    for (uint64_t seed = 1; seed <= 100; seed++) {
        make_suite(&s, NIGHTS, 0.1, NOISE_NORMAL, NIGHTS - 2, 0.10, seed);
        ppb_trend_result r = pooled(&s, NIGHTS, CASES, &n_series);
        pooled_alerts += r.status == PPB_TREND_REGRESSION;
        named += r.status == PPB_TREND_REGRESSION && strcmp(r.step_run_id, s.ids[NIGHTS - 2]) == 0;
        ppb_trend_result one = pooled(&s, NIGHTS - 1, CASES, &n_series);
        first_night += alert(&one);
        for (int c = 0; c < CASES; c++) {
            ppb_trend_result cr;
            assert_int_equal(ppb_trend_analyse(s.p[c], NIGHTS, NULL, &cr, &err), PPB_OK);
            case_alerts += cr.status == PPB_TREND_REGRESSION;
            case_series++;
        }
    }
    print_message("  10%% suite-wide step, 10%% noise per case: pooled %d of 100 (%d name the first run), "
                  "one night %d; cases alone %d of %d\n",
                  pooled_alerts, named, first_night, case_alerts, case_series);
    assert_true(pooled_alerts >= 90);
    assert_true(named >= 85);
    assert_true(first_night <= 2);
    assert_true(case_alerts < case_series / 10);

    /* 5% noise, and on each night about 4 of the 24 cases twice as slow (a busy
     * neighbour): the trimmed mean leaves the hits out, so the step still shows
     * (a plain mean's nights would swing by the number of hits). */
    int hit_alerts = 0;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        make_suite(&s, NIGHTS, 0.05, NOISE_HIT, NIGHTS - 2, 0.10, seed);
        ppb_trend_result r = pooled(&s, NIGHTS, CASES, &n_series);
        hit_alerts += r.status == PPB_TREND_REGRESSION;
    }
    print_message("  10%% step, 5%% noise and 15%% of cases hit x2 each night: pooled %d of 100\n", hit_alerts);
    assert_true(hit_alerts >= 90);
}

/* The threshold: z at (rate / 2)^(1 / sustain) widened by sqrt(1 + pi / 2 /
 * window) on nights that do not drift; higher where they do (fewer
 * independent nights) and with a sustain of 1; the score test uses the same
 * figure; the other options stay. */
static void test_derived_threshold(void **state)
{
    (void)state;
    ppb_trend_options base, opt, drifting;
    ppb_trend_options_default(&base);
    ppb_trend_pool_options(&base, 0, NAN, &opt);
    /* sustain 2, window 10: z(1 - 0.0005^0.5) = 2.0072, x 1.0757 */
    assert_true(fabs(opt.noise_multiplier - 2.0072 * sqrt(1 + M_PI / 20)) < 2e-3);
    assert_true(opt.min_score == opt.noise_multiplier);
    assert_int_equal(opt.window, base.window);
    assert_int_equal(opt.sustain, base.sustain);
    assert_true(opt.min_change == base.min_change);
    assert_true(opt.noise_floor == base.noise_floor);
    /* rho 0.5: 4/3 independent nights, 10/3 in the reference */
    ppb_trend_pool_options(&base, 0.5, NAN, &drifting);
    assert_true(fabs(drifting.noise_multiplier - 2.7120 * sqrt(1 + M_PI / 2 / (10.0 / 3))) < 5e-3);
    ppb_trend_pool_options(&base, -0.3, NAN, &drifting);   /* anti-correlation counts as none */
    assert_true(drifting.noise_multiplier == opt.noise_multiplier);
    /* the cases' spread floors both tests */
    ppb_trend_pool_options(&base, 0, 0.03, &drifting);
    assert_true(fabs(drifting.min_change - opt.noise_multiplier * 0.03) < 1e-12);
    assert_true(drifting.noise_floor == 0.03);
    ppb_trend_pool_options(&base, 0, 0.001, &drifting);   /* below the practical floor: the floor */
    assert_true(drifting.min_change == base.min_change);
    base.sustain = 1; /* one night must carry the whole rate: a higher bar */
    ppb_trend_options one;
    ppb_trend_pool_options(&base, 0, NAN, &one);
    assert_true(fabs(one.noise_multiplier - 3.2905 * sqrt(1 + M_PI / 20)) < 2e-3);
}

/* Nights that fewer than half the cases ran are left out; fewer than
 * PPB_TREND_POOL_MIN_CASES cases: no series. The floor is the largest of the
 * cases' own. */
static void test_partial_nights_and_small_groups(void **state)
{
    (void)state;
    static suite_nights s;
    make_suite(&s, NIGHTS, 0.01, NOISE_NORMAL, NIGHTS, 0, 3);
    ppb_trend_options base;
    ppb_trend_options_default(&base);
    ppb_trend_pool pool;
    ppb_trend_pool_init(&pool, "paged_attention", base.window);
    ppb_err err = {{0}};
    for (int c = 0; c < 8; c++) /* every night, 1% noise */
        assert_int_equal(ppb_trend_pool_add(&pool, s.p[c], s.when_p, NIGHTS, base.min_change, &err), PPB_OK);
    ppb_trend_pooled out;
    assert_int_equal(ppb_trend_pool_judge(&pool, &base, &out, &err), PPB_OK);
    assert_int_equal(out.n, NIGHTS);
    for (int i = 0; i < out.n; i++)
        assert_true(fabs(out.points[i].value - 1) < 0.03);   /* each case over its own level */
    assert_string_equal(out.points[0].run_id, s.ids[0]);
    assert_string_equal(out.points[out.n - 1].run_id, s.ids[NIGHTS - 1]);
    /* 1% per case over 8 cases: about 0.4% per night */
    assert_true(out.case_noise > 0.002 && out.case_noise < 0.007);
    assert_int_equal(out.result.status, PPB_TREND_OK);
    assert_true(out.options.min_change == base.min_change);
    ppb_trend_pooled_free(&out);
    ppb_trend_pool_free(&pool);

    /* the cases' own floors (their suite's trend: settings): the largest holds */
    ppb_trend_pool_init(&pool, "paged_attention", base.window);
    for (int c = 0; c < 8; c++)
        assert_int_equal(ppb_trend_pool_add(&pool, s.p[c], s.when_p, NIGHTS, c == 3 ? 0.05 : 0.01, &err), PPB_OK);
    assert_int_equal(ppb_trend_pool_judge(&pool, &base, &out, &err), PPB_OK);
    assert_true(out.options.min_change == 0.05);
    assert_true(out.result.threshold >= 0.05);
    ppb_trend_pooled_free(&out);
    ppb_trend_pool_free(&pool);

    ppb_trend_pool_init(&pool, "paged_attention", base.window);
    for (int c = 0; c < 8; c++) {
        ppb_trend_point h[NIGHTS];
        const char *when[NIGHTS];
        int m = 0;
        for (int i = 0; i < NIGHTS; i++)
            if (!(c < 5 && i == 4)) /* 5 of 8 cases missed night 4: 3 ran it, under half */
                h[m] = s.p[c][i], when[m++] = s.when_p[i];
        assert_int_equal(ppb_trend_pool_add(&pool, h, when, m, base.min_change, &err), PPB_OK);
    }
    assert_int_equal(ppb_trend_pool_judge(&pool, &base, &out, &err), PPB_OK);
    assert_int_equal(out.n, NIGHTS - 1);
    for (int i = 0; i < out.n; i++)
        assert_string_not_equal(out.points[i].run_id, s.ids[4]);
    ppb_trend_pooled_free(&out);
    ppb_trend_pool_free(&pool);

    ppb_trend_pool_init(&pool, "paged_attention", base.window);
    for (int c = 0; c < PPB_TREND_POOL_MIN_CASES - 1; c++)
        assert_int_equal(ppb_trend_pool_add(&pool, s.p[c], s.when_p, NIGHTS, base.min_change, &err), PPB_OK);
    assert_int_equal(ppb_trend_pool_judge(&pool, &base, &out, &err), PPB_OK);
    assert_null(out.points);
    assert_int_equal(out.n, 0);
    assert_int_equal(out.result.status, PPB_TREND_INSUFFICIENT_HISTORY);
    ppb_trend_pool_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_nights_do_not_alert),
        cmocka_unit_test(test_suite_wide_step_alerts_pooled),
        cmocka_unit_test(test_derived_threshold),
        cmocka_unit_test(test_partial_nights_and_small_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
