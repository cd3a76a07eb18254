/* calibrate's arithmetic (harness/run/calibrate.h): the share of flagged
 * pairs (A/A: either direction; a known effect: SLOWER only), the Wilson upper
 * bound it is reported with, and the minimum detectable effect. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "calibrate.h"

static void test_flag_rate_counts_the_right_direction(void **state)
{
    (void)state;
    ppb_calibrate_tally aa = {.effect = 0, .pairs = 200, .faster = 3, .slower = 1, .long_pairs = 100,
                              .long_faster = 2, .long_slower = 1};
    assert_true(fabs(ppb_calibrate_flag_rate(&aa, 0) - 4.0 / 200) < 1e-15);   /* A/A: both directions */
    assert_true(fabs(ppb_calibrate_flag_rate(&aa, 1) - 3.0 / 100) < 1e-15);   /* long pairs, both directions */
    ppb_calibrate_tally known = {.effect = 0.02, .pairs = 50, .faster = 5, .slower = 40, .long_pairs = 40,
                                 .long_slower = 38};
    assert_true(fabs(ppb_calibrate_flag_rate(&known, 0) - 40.0 / 50) < 1e-15);   /* SLOWER only */
    assert_true(fabs(ppb_calibrate_flag_rate(&known, 1) - 38.0 / 40) < 1e-15);
    ppb_calibrate_tally none = {.effect = 0.01};
    assert_true(isnan(ppb_calibrate_flag_rate(&none, 0)));
}

/* One-sided 95% Wilson bounds: statsmodels proportion_confint(k, n, 0.10, "wilson")'s upper end. */
static void test_wilson_upper(void **state)
{
    (void)state;
    assert_true(fabs(ppb_wilson_upper(0, 500) - 0.00538196) < 1e-7);
    assert_true(fabs(ppb_wilson_upper(5, 100) - 0.09916109) < 1e-7);
    assert_true(ppb_wilson_upper(0, 0) == 1);
    assert_true(ppb_wilson_upper(3, 300) > 0.01);   /* 1% observed is not "under 1%" */
}

/* The smallest effect flagged in at least the share of long pairs, whatever the order given. */
static void test_mde_is_the_smallest_effect_found(void **state)
{
    (void)state;
    ppb_calibration c = {.n_effects = 3};
    c.effect[0] = (ppb_calibrate_tally){.effect = 0.05, .long_pairs = 10, .long_slower = 10};
    c.effect[1] = (ppb_calibrate_tally){.effect = 0.01, .long_pairs = 10, .long_slower = 5};
    c.effect[2] = (ppb_calibrate_tally){.effect = 0.02, .long_pairs = 10, .long_slower = 9};
    assert_true(ppb_calibrate_mde(&c, 0.90) == 0.02);
    assert_true(ppb_calibrate_mde(&c, 0.95) == 0.05);
    c.effect[0].long_slower = 8;
    c.effect[2].long_slower = 8;
    assert_true(isnan(ppb_calibrate_mde(&c, 0.90)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flag_rate_counts_the_right_direction),
        cmocka_unit_test(test_wilson_upper),
        cmocka_unit_test(test_mde_is_the_smallest_effect_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
