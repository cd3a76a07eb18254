/* Nightly trend: flat noise, sustained steps, single outliers, short history. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trend.h"
#include "stats_sim.h"

#define MAX_RUNS 64

typedef struct history {
    int n;
    ppb_trend_point p[MAX_RUNS];
    char ids[MAX_RUNS][32];
} history;

/* n nightly medians around `level` with relative noise `noise` (normal). */
static void make_history(history *h, int n, double level, double noise, uint64_t seed)
{
    sim_rng rng = { seed };
    assert_true(n <= MAX_RUNS);
    h->n = n;
    for (int i = 0; i < n; i++) {
        snprintf(h->ids[i], sizeof h->ids[i], "r%02d", i);
        h->p[i].run_id = h->ids[i];
        h->p[i].value = level * (1 + noise * sim_normal(&rng));
    }
}

static ppb_trend_result analyse(const history *h)
{
    ppb_trend_result r;
    ppb_err err;
    int rc = ppb_trend_analyse(h->p, h->n, NULL, &r, &err);
    if (rc)
        fail_msg("trend failed: %s", err.msg);
    print_message("  %s\n", r.reason);
    return r;
}

static void test_names_and_defaults(void **state)
{
    (void)state;
    assert_string_equal(ppb_trend_status_name(PPB_TREND_REGRESSION), "regression");
    assert_string_equal(ppb_trend_status_name(PPB_TREND_OUTLIER), "outlier");
    assert_string_equal(ppb_trend_status_name(PPB_TREND_INSUFFICIENT_HISTORY), "insufficient-history");
    ppb_trend_options o;
    ppb_trend_options_default(&o);
    assert_int_equal(o.window, 10);
    assert_int_equal(o.sustain, 2);
    assert_true(o.min_change == 0.05 && o.min_score == 5.0);
}

/* Flat histories with 1% noise never alert, over many seeds. */
static void test_flat_noisy_history_is_ok(void **state)
{
    (void)state;
    history h;
    int not_ok = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        make_history(&h, 30, 2.5, 0.01, seed);
        ppb_trend_result r;
        ppb_err err;
        assert_int_equal(ppb_trend_analyse(h.p, h.n, NULL, &r, &err), 0);
        not_ok += r.status != PPB_TREND_OK;
        assert_int_equal(r.step_index, -1);
    }
    assert_int_equal(not_ok, 0);
    make_history(&h, 30, 2.5, 0.01, 7);
    ppb_trend_result r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_OK);
    assert_int_equal(r.n_reference, 10);
    assert_true(fabs(r.reference - 2.5) < 0.05);
    assert_true(strncmp(r.reason, "OK: latest run 'r29'", 20) == 0);
}

/* A +10% step sustained over the last 3 runs names its first run. */
static void test_sustained_step_is_a_regression(void **state)
{
    (void)state;
    history h;
    make_history(&h, 25, 1.0, 0.01, 11);
    for (int i = 22; i < 25; i++)
        h.p[i].value *= 1.10;
    ppb_trend_result r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_REGRESSION);
    assert_int_equal(r.step_index, 22);
    assert_string_equal(r.step_run_id, "r22");
    assert_int_equal(r.step_runs, 3);
    assert_true(fabs(r.rel_change - 0.10) < 0.03);
    assert_true(r.score >= 5);
    assert_non_null(strstr(r.reason, "began at run 'r22'"));

    /* Two runs are enough to call it; the step start is still right. */
    make_history(&h, 20, 1.0, 0.01, 12);
    h.p[18].value *= 1.10;
    h.p[19].value *= 1.10;
    r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_REGRESSION);
    assert_int_equal(r.step_index, 18);
    assert_string_equal(r.step_run_id, "r18");

    /* Still the same step, named by the same first run, until it has held
     * for a whole window; after that it is the new normal. */
    for (int n = 16; n <= 30; n++) {
        make_history(&h, n, 1.0, 0.01, 14);
        for (int i = 14; i < n; i++)
            h.p[i].value *= 1.10;
        ppb_trend_result q;
        ppb_err err;
        assert_int_equal(ppb_trend_analyse(h.p, h.n, NULL, &q, &err), 0);
        if (n - 14 <= 10) {
            assert_int_equal(q.status, PPB_TREND_REGRESSION);
            assert_int_equal(q.step_index, 14);
        } else {
            assert_int_equal(q.status, PPB_TREND_OK);
        }
    }

    /* Across seeds, the first run of the step is found every time. */
    for (uint64_t seed = 100; seed < 150; seed++) {
        make_history(&h, 24, 3.0, 0.01, seed);
        for (int i = 20; i < 24; i++)
            h.p[i].value *= 1.10;
        ppb_trend_result q;
        ppb_err err;
        assert_int_equal(ppb_trend_analyse(h.p, h.n, NULL, &q, &err), 0);
        assert_int_equal(q.status, PPB_TREND_REGRESSION);
        assert_int_equal(q.step_index, 20);
    }
}

static void test_sustained_drop_is_an_improvement(void **state)
{
    (void)state;
    history h;
    make_history(&h, 16, 1.0, 0.005, 13);
    for (int i = 12; i < 16; i++)
        h.p[i].value *= 0.85;
    ppb_trend_result r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_IMPROVEMENT);
    assert_int_equal(r.step_index, 12);
    assert_true(fabs(r.rel_change + 0.15) < 0.02);
    assert_true(r.score <= -5);
}

/* One bad night: OUTLIER, never a regression; the night after it is OK. */
static void test_single_outlier_night(void **state)
{
    (void)state;
    history h;
    make_history(&h, 20, 1.0, 0.01, 21);
    h.p[19].value *= 1.25;
    ppb_trend_result r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_OUTLIER);
    assert_int_equal(r.step_index, -1);
    assert_true(r.rel_change > 0.2);
    assert_non_null(strstr(r.reason, "outlier, not a step"));

    /* The next night is back to normal: the outlier did not become the norm. */
    make_history(&h, 21, 1.0, 0.01, 21);
    h.p[19].value *= 1.25;
    r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_OK);

    /* Two outliers in opposite directions are not a step either. */
    make_history(&h, 20, 1.0, 0.01, 22);
    h.p[18].value *= 0.75;
    h.p[19].value *= 1.25;
    r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_OUTLIER);
}

/* Both thresholds must hold: a 3% shift on a quiet case (score > 5) and a 6%
 * wobble on a 3%-noise case (score < 5) are not alerts. */
static void test_both_thresholds_are_needed(void **state)
{
    (void)state;
    history h;
    make_history(&h, 20, 1.0, 0.002, 31);
    for (int i = 16; i < 20; i++)
        h.p[i].value *= 1.03;
    ppb_trend_result r = analyse(&h);
    assert_true(r.score > 5);
    assert_int_equal(r.status, PPB_TREND_OK);

    make_history(&h, 20, 1.0, 0.03, 32);
    for (int i = 17; i < 20; i++)
        h.p[i].value = 1.06 * (1 + 0.001 * i);
    r = analyse(&h);
    assert_true(fabs(r.score) < 5);
    assert_int_equal(r.status, PPB_TREND_OK);
}

static void test_short_history(void **state)
{
    (void)state;
    history h;
    make_history(&h, 5, 1.0, 0.01, 41);
    h.p[4].value *= 2;
    ppb_trend_result r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_INSUFFICIENT_HISTORY);
    assert_non_null(strstr(r.reason, "5 runs, at least 6 needed"));
    ppb_err err;
    assert_int_equal(ppb_trend_analyse(NULL, 0, NULL, &r, &err), 0);
    assert_int_equal(r.status, PPB_TREND_INSUFFICIENT_HISTORY);
    /* Just enough: a doubling on the 6th run is an outlier (not yet a step). */
    make_history(&h, 6, 1.0, 0.01, 41);
    h.p[5].value *= 2;
    r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_OUTLIER);
}

/* A perfectly flat history (quantised timer): MAD 0, the noise floor keeps the
 * score finite and the 5% rule still decides. */
static void test_zero_mad_history(void **state)
{
    (void)state;
    history h;
    make_history(&h, 12, 1.0, 0.0, 51);
    h.p[10].value = h.p[11].value = 1.02;
    ppb_trend_result r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_OK);
    assert_true(isfinite(r.score));
    h.p[10].value = h.p[11].value = 1.08;
    r = analyse(&h);
    assert_int_equal(r.status, PPB_TREND_REGRESSION);
    assert_int_equal(r.step_index, 10);
}

static void test_bad_input(void **state)
{
    (void)state;
    history h;
    make_history(&h, 10, 1.0, 0.01, 61);
    h.p[3].value = 0;
    ppb_trend_result r;
    ppb_err err;
    assert_int_equal(ppb_trend_analyse(h.p, h.n, NULL, &r, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "trend point 3"));
    h.p[3].value = 1;
    ppb_trend_options o;
    ppb_trend_options_default(&o);
    o.min_segment = 1;
    assert_int_equal(ppb_trend_analyse(h.p, h.n, &o, &r, &err), PPB_EINPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_defaults),
        cmocka_unit_test(test_flat_noisy_history_is_ok),
        cmocka_unit_test(test_sustained_step_is_a_regression),
        cmocka_unit_test(test_sustained_drop_is_an_improvement),
        cmocka_unit_test(test_single_outlier_night),
        cmocka_unit_test(test_both_thresholds_are_needed),
        cmocka_unit_test(test_short_history),
        cmocka_unit_test(test_zero_mad_history),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
