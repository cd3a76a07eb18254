/* The two rules that carry a proposal's design into its verdict
 * (harness/decide/abrun.c): the stopping rule runs at the verdict's own
 * simultaneous level, alpha / (pairs + 1), and a case's interval is widened for
 * the looks the design planned, not those it took. Either, changed, passed
 * every other decide test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "abrun.h"

static void test_the_stopping_rule_runs_at_the_verdicts_level(void **state)
{
    (void)state;
    ppb_proposal p;
    memset(&p, 0, sizeof p);
    ppb_verdict_rules_default(&p.rules);
    ppb_sampling_default(&p.sampling);
    p.rules.alpha = 0.05;
    p.rules.threshold = 0.01;
    p.sampling.min_rounds = 3, p.sampling.max_rounds = 20, p.sampling.samples_per_round = 5;
    p.sampling.budget_ms = 1500;
    ppb_seq_design d = ppb_ab_pair_design(&p, 10, 2, 77);
    assert_true(fabs(d.alpha - 0.05 / 11) < 1e-15); /* 10 pairs and the weighted mean */
    assert_true(fabs(ppb_ab_pair_design(&p, 1, 1, 0).alpha - 0.05 / 2) < 1e-15);
    assert_true(fabs(d.threshold - 0.01) < 1e-15);
    assert_int_equal(d.min_rounds, 3);
    assert_int_equal(d.max_rounds, 20);
    assert_int_equal(d.samples_per_round, 5);
    assert_int_equal(d.sessions, 2);
    assert_true(d.budget_ms == 1500);
    assert_true(d.seed == 77);
}

static void test_intervals_allow_for_the_looks_planned(void **state)
{
    (void)state;
    ppb_seq_result r;
    memset(&r, 0, sizeof r);
    r.looks_planned = 5;
    r.looks_taken = 2; /* stopped early: the interval must still pay for every planned look */
    assert_int_equal(ppb_ab_case_looks(&r), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_stopping_rule_runs_at_the_verdicts_level),
        cmocka_unit_test(test_intervals_allow_for_the_looks_planned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
