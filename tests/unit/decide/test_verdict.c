/* Proposal verdicts on synthetic samples: the rules of MEASUREMENT.md "How
 * ppbench decides" as docs/STATISTICS.md states them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict.h"

#define PPB_VERDICT_TEST_BUF (64 * 1024)
#include "stats_sim.h"

#define MAX_CASES 16
#define MAX_SAMPLES 128

/* A synthetic proposal: each case gets lognormal baseline and candidate times. */
typedef struct proposal {
    int n;
    ppb_verdict_case cases[MAX_CASES];
    char keys[MAX_CASES][64];
    double base[MAX_CASES][MAX_SAMPLES], cand[MAX_CASES][MAX_SAMPLES];
    sim_rng rng;
} proposal;

/* Adds a correct, feasible case: candidate time = ratio x baseline, both with
 * log-sd `noise`, `samples` per side. Returns its index. */
static int add_case(proposal *p, double ratio, double noise, int samples, double weight)
{
    int i = p->n++;
    assert_true(i < MAX_CASES && samples <= MAX_SAMPLES);
    snprintf(p->keys[i], sizeof p->keys[i], "kernel=test;case=%d", i);
    double level = 0.1 * (i + 1);   /* cases of different lengths: ratios must not care */
    sim_lognormal(&p->rng, level, noise, p->base[i], samples);
    sim_lognormal(&p->rng, level * ratio, noise, p->cand[i], samples);
    p->cases[i] = (ppb_verdict_case){
        .key = p->keys[i], .weight = weight,
        .baseline = p->base[i], .n_baseline = samples, .candidate = p->cand[i], .n_candidate = samples,
        .baseline_correct = 1, .candidate_correct = 1, .baseline_feasible = 1, .candidate_feasible = 1,
    };
    return i;
}

static void proposal_init(proposal *p, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->rng.state = seed;
}

static int has_reason(const ppb_verdict_report *r, const char *a, const char *b)
{
    for (int i = 0; i < r->n_reasons; i++)
        if (strstr(r->reasons[i], a) && (!b || strstr(r->reasons[i], b)))
            return 1;
    return 0;
}

static void print_reasons(const ppb_verdict_report *r)
{
    for (int i = 0; i < r->n_reasons; i++)
        print_message("  %s\n", r->reasons[i]);
}

static int decide(const proposal *p, const ppb_verdict_rules *rules, ppb_verdict_report *r)
{
    ppb_err err;
    int rc = ppb_verdict_decide(p->cases, p->n, rules, r, &err);
    if (rc)
        print_message("verdict failed: %s\n", err.msg);
    return rc;
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(ppb_verdict_name(PPB_VERDICT_ACCEPT), "ACCEPT");
    assert_string_equal(ppb_verdict_name(PPB_VERDICT_REJECT), "REJECT");
    assert_string_equal(ppb_verdict_name(PPB_VERDICT_INCONCLUSIVE), "INCONCLUSIVE");
    assert_string_equal(ppb_case_state_name(PPB_CASE_INFEASIBLE), "infeasible");
    ppb_verdict_rules r;
    ppb_verdict_rules_default(&r);
    assert_true(r.min_gain == 0.02 && r.max_regression == 0.05 && r.threshold == 0.01 && r.alpha == 0.05);
    assert_int_equal(r.require_correct, 1);
}

/* The limits judged against (and drawn by the report) never go below the
 * practical threshold: a 0 min_gain still needs a gain beyond it. */
static void test_limits_floor_at_threshold(void **state)
{
    (void)state;
    ppb_verdict_rules r;
    ppb_verdict_rules_default(&r);
    assert_true(ppb_verdict_tolerance(&r) == 0.05 && ppb_verdict_gain_needed(&r) == 0.02);
    r.min_gain = 0;
    r.max_regression = 0.005;
    assert_true(ppb_verdict_tolerance(&r) == 0.01 && ppb_verdict_gain_needed(&r) == 0.01);
}

static void test_clear_win_accepts(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 1);
    for (int i = 0; i < 6; i++)
        add_case(&p, 0.90, 0.01, 30, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_ACCEPT);
    assert_true(strncmp(r.reasons[0], "ACCEPT: ", 8) == 0);
    assert_int_equal(r.n_compared, 6);
    assert_int_equal(r.family_size, 7);
    assert_true(fabs(r.interval_alpha - 0.05 / 7) < 1e-15);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(r.cases[i].state, PPB_CASE_COMPARED);
        assert_int_equal(r.cases[i].cls, PPB_AB_FASTER);
        assert_true(fabs(r.cases[i].interval.level - (1 - 0.05 / 7)) < 1e-15);
        assert_true(r.cases[i].p_holm >= r.cases[i].test.p);
        assert_true(r.cases[i].p_bh >= r.cases[i].test.p && r.cases[i].p_bh <= r.cases[i].p_holm);
    }
    assert_true(r.have_geomean);
    assert_true(fabs(r.geomean.ratio - 0.90) < 0.005);
    assert_true(r.geomean.ratio_lo < r.geomean.ratio && r.geomean.ratio < r.geomean.ratio_hi);
    ppb_verdict_report_free(&r);

    /* The bootstrap method reaches the same verdict. */
    rules.method = PPB_METHOD_BOOTSTRAP;
    rules.bootstrap_reps = 500;   /* raised to what alpha / 7 needs */
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_int_equal(r.verdict, PPB_VERDICT_ACCEPT);
    assert_true(fabs(r.geomean.ratio - 0.90) < 0.005);
    ppb_verdict_report_free(&r);
}

static void test_clear_loss_rejects(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 2);
    for (int i = 0; i < 4; i++)
        add_case(&p, 1.10, 0.01, 30, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r.cases[i].cls, PPB_AB_SLOWER);
        char want[96];
        snprintf(want, sizeof want, "REJECT: case '%s' is ", p.keys[i]);
        assert_true(has_reason(&r, want, "% slower [") && has_reason(&r, want, "above the 5% tolerated regression"));
    }
    assert_true(has_reason(&r, "REJECT: the weighted geometric mean over 4 cases is ", "slower overall"));
    ppb_verdict_report_free(&r);
}

/* Intervals of astronomical width (a few samples of wildly noisy times) still
 * read as short reasons that end where they should: the bounds once printed
 * with %.1f ran to hundreds of digits and cut the reason before its "%]". */
static void test_huge_intervals_keep_reasons_short(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 5);
    add_case(&p, 1.0, 150.0, 8, 1.0);
    add_case(&p, 1.0, 150.0, 8, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    int with_interval = 0;
    for (int i = 0; i < r.n_reasons; i++) {
        assert_true(strlen(r.reasons[i]) < 400);
        const char *open = strstr(r.reasons[i], "% slower [");
        if (!open)
            open = strstr(r.reasons[i], "% faster [");
        if (open) {
            with_interval++;
            assert_non_null(strstr(open, "%]"));
        }
    }
    assert_true(with_interval > 0);
    ppb_verdict_report_free(&r);
}

/* A/A: with min_gain 0 (calibration) the verdict must be neither ACCEPT nor
 * REJECT, over many seeded proposals. */
static void test_aa_is_inconclusive(void **state)
{
    (void)state;
    static proposal p;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.min_gain = 0;
    int same = 0, total = 0;
    for (uint64_t seed = 100; seed < 130; seed++) {
        proposal_init(&p, seed);
        for (int i = 0; i < 10; i++)
            add_case(&p, 1.0, 0.002 + 0.004 * (i % 5), 40, 1.0 + i % 3);
        ppb_verdict_report r;
        assert_int_equal(decide(&p, &rules, &r), 0);
        if (r.verdict != PPB_VERDICT_INCONCLUSIVE)
            print_reasons(&r);
        assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
        assert_true(strncmp(r.reasons[0], "INCONCLUSIVE: ", 14) == 0);
        for (int i = 0; i < p.n; i++) {
            assert_true(r.cases[i].cls == PPB_AB_SAME || r.cases[i].cls == PPB_AB_UNRESOLVED);
            same += r.cases[i].cls == PPB_AB_SAME;
            total++;
        }
        ppb_verdict_report_free(&r);
    }
    assert_true(same > total / 2);   /* quiet cases with 40 samples are mostly resolved as SAME */

    /* The same A/A data under a 2% minimum gain: the candidate demonstrably
     * does not deliver 2%, and that is a correct REJECT, not a false alarm. */
    rules.min_gain = 0.02;
    proposal_init(&p, 100);
    for (int i = 0; i < 10; i++)
        add_case(&p, 1.0, 0.002, 40, 1.0);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_true(has_reason(&r, "no meaningful gain", "below the 2% minimum"));
    assert_false(has_reason(&r, "tolerated regression", NULL));
    ppb_verdict_report_free(&r);
}

static void test_mixed_rejects_on_the_regression(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 3);
    add_case(&p, 0.80, 0.01, 30, 1.0);
    int slow = add_case(&p, 1.10, 0.01, 30, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_int_equal(r.cases[0].cls, PPB_AB_FASTER);
    assert_int_equal(r.cases[slow].cls, PPB_AB_SLOWER);
    /* The geometric mean is a clear gain; the regression alone rejects. */
    assert_true(r.geomean.ratio_hi < 1 / 1.02);
    assert_int_equal(r.n_reasons, 2); /* the regression, then what the run could see */
    assert_true(has_reason(&r, "note: this run could see a change of the weighted mean of ", "% or more (80% power"));
    char want[96];
    snprintf(want, sizeof want, "REJECT: case '%s' is ", p.keys[slow]);
    assert_true(has_reason(&r, want, "% slower ["));
    assert_true(has_reason(&r, want, "above the 5% tolerated regression"));
    ppb_verdict_report_free(&r);
}

static void test_regression_within_tolerance_accepts(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 4);
    add_case(&p, 0.88, 0.01, 30, 1.0);
    add_case(&p, 0.90, 0.01, 30, 1.0);
    add_case(&p, 1.03, 0.005, 30, 1.0);   /* 3% slower: under the 5% tolerance */
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.cases[2].cls, PPB_AB_SLOWER);
    assert_int_equal(r.verdict, PPB_VERDICT_ACCEPT);
    ppb_verdict_report_free(&r);

    /* Tighten the tolerance to 2%: the same case now rejects. */
    rules.max_regression = 0.02;
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_true(has_reason(&r, "case 'kernel=test;case=2'", "above the 2% tolerated regression"));
    ppb_verdict_report_free(&r);
}

static void test_weights_decide_the_mean(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 5);
    add_case(&p, 0.90, 0.005, 30, 1.0);
    add_case(&p, 1.03, 0.005, 30, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_int_equal(r.verdict, PPB_VERDICT_ACCEPT);   /* (0.90 * 1.03)^(1/2) = 0.963 */
    assert_true(fabs(r.geomean.ratio - sqrt(0.90 * 1.03)) < 0.005);
    ppb_verdict_report_free(&r);
    /* The slower shape is what serving mostly runs: the mean is slower. */
    p.cases[1].weight = 9.0;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_true(fabs(r.geomean.ratio - exp((log(0.90) + 9 * log(1.03)) / 10)) < 0.005);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_true(has_reason(&r, "REJECT: the weighted geometric mean over 2 cases is 1.", "slower overall"));
    ppb_verdict_report_free(&r);
    /* With no minimum gain, "slower overall" still rejects. */
    rules.min_gain = 0;
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_true(has_reason(&r, "REJECT: the weighted geometric mean", "slower overall"));
    ppb_verdict_report_free(&r);
}

static void test_correctness_failures_reject(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 6);
    for (int i = 0; i < 3; i++)
        add_case(&p, 0.85, 0.01, 30, 1.0);
    p.cases[1].candidate_correct = 0;
    p.cases[1].candidate_reason = "rel_l2_err 3.1e-02 > rtol 1.0e-02";
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_int_equal(r.cases[1].state, PPB_CASE_WRONG);
    assert_true(has_reason(&r, "REJECT: case 'kernel=test;case=1': the candidate's output is wrong",
                           "rel_l2_err 3.1e-02"));
    assert_int_equal(r.n_compared, 2);
    ppb_verdict_report_free(&r);

    /* A wrong baseline rejects too. */
    p.cases[1].candidate_correct = 1;
    p.cases[2].baseline_correct = 0;
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_true(has_reason(&r, "case 'kernel=test;case=2': the baseline's output is wrong", NULL));
    ppb_verdict_report_free(&r);

    /* Not required: the timing decides, and a note keeps the failure visible. */
    rules.require_correct = 0;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_ACCEPT);
    assert_true(has_reason(&r, "note: case 'kernel=test;case=2'", "correctness not required"));
    assert_true(has_reason(&r, "ACCEPT:", "correctness was not required"));
    ppb_verdict_report_free(&r);
}

static void test_infeasible_candidate_rejects_first(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 7);
    add_case(&p, 1.10, 0.01, 30, 1.0);   /* also a regression: listed after feasibility */
    add_case(&p, 0.80, 0.01, 30, 1.0);
    const char *why = "needs 64 KiB shared memory (BLOCK_N 128 x head_dim 128 x 2 B x 2 tiles) > 48 KiB per block";
    p.cases[1].candidate_feasible = 0;
    p.cases[1].candidate_reason = why;
    p.cases[1].n_candidate = 0;   /* never timed */
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
    assert_int_equal(r.cases[1].state, PPB_CASE_INFEASIBLE);
    assert_non_null(strstr(r.reasons[0], "REJECT: case 'kernel=test;case=1': the candidate cannot run on the target"));
    assert_non_null(strstr(r.reasons[0], why));
    assert_true(has_reason(&r, "REJECT: case 'kernel=test;case=0' is ", "tolerated regression"));
    ppb_verdict_report_free(&r);

    /* A baseline the target cannot run leaves its case out, with a note; the
     * rest decides. */
    proposal_init(&p, 17);
    add_case(&p, 0.80, 0.01, 30, 1.0);
    add_case(&p, 0.80, 0.01, 30, 1.0);
    p.cases[1].baseline_feasible = 0;
    p.cases[1].baseline_reason = "1056 threads > 1024 per block";
    p.cases[1].n_baseline = 0;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_ACCEPT);
    assert_int_equal(r.cases[1].state, PPB_CASE_EXCLUDED);
    assert_int_equal(r.n_compared, 1);
    assert_true(has_reason(&r, "ACCEPT: the weighted geometric mean over 1 case is ", NULL));
    assert_true(has_reason(&r, "note: case 'kernel=test;case=1' is left out", "1056 threads"));
    ppb_verdict_report_free(&r);
}

/* A case that settles a REJECT alone (propose then cuts the later pairs
 * short) must make the verdict REJECT whatever the other cases are: over
 * proposals with that case first and random others, at cases_most = the
 * proposal's case count. Fewer cases only narrow the interval: settled at many
 * is settled at few, and some case near the tolerance is settled at few and
 * not at many. Correctness and feasibility settle too; a left-out baseline,
 * a case within the tolerance, or no room for a case settle nothing. */
static void test_a_case_that_settles_reject_rejects_the_verdict(void **state)
{
    (void)state;
    static proposal p;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    int settled = 0, not_settled = 0, stricter_at_many = 0;
    for (int trial = 0; trial < 300; trial++) {
        proposal_init(&p, 1000 + (uint64_t)trial);
        double ratio = 1.04 + 0.0005 * (trial % 160); /* around the 5% tolerance and past it */
        add_case(&p, ratio, 0.02, 12 + trial % 20, 1.0);
        int others = 1 + trial % 4;
        for (int k = 0; k < others; k++)
            add_case(&p, 0.7 + 0.15 * (double)((trial + k) % 5), 0.02, 20, 1.0);
        int at_few = ppb_verdict_case_settles_reject(&p.cases[0], &rules, p.n);
        int at_many = ppb_verdict_case_settles_reject(&p.cases[0], &rules, 50);
        if (at_many && !at_few)
            fail_msg("trial %d: settled among 50 cases, not among %d", trial, p.n);
        stricter_at_many += at_few && !at_many;
        if (!at_few) {
            not_settled++;
            continue;
        }
        settled++;
        ppb_verdict_report r;
        assert_int_equal(decide(&p, &rules, &r), 0);
        if (r.verdict != PPB_VERDICT_REJECT)
            fail_msg("trial %d: case 0 (x%.4f) settled a REJECT, the verdict is %s", trial, ratio,
                     ppb_verdict_name(r.verdict));
        assert_true(has_reason(&r, "REJECT: case 'kernel=test;case=0' is ", "tolerated regression"));
        ppb_verdict_report_free(&r);
    }
    assert_true(settled > 20 && not_settled > 20 && stricter_at_many > 0);

    proposal_init(&p, 5);
    add_case(&p, 1.0, 0.01, 30, 1.0);
    assert_int_equal(ppb_verdict_case_settles_reject(&p.cases[0], &rules, 3), 0);   /* within the tolerance */
    assert_int_equal(ppb_verdict_case_settles_reject(&p.cases[0], &rules, 0), 0);   /* no room for a case */
    p.cases[0].candidate_correct = 0;
    assert_int_equal(ppb_verdict_case_settles_reject(&p.cases[0], &rules, 3), 1);   /* wrong, correctness required */
    rules.require_correct = 0;
    assert_int_equal(ppb_verdict_case_settles_reject(&p.cases[0], &rules, 3), 0);
    rules.require_correct = 1;
    p.cases[0].candidate_correct = 1;
    p.cases[0].candidate_feasible = 0, p.cases[0].n_candidate = 0;
    assert_int_equal(ppb_verdict_case_settles_reject(&p.cases[0], &rules, 3), 1);   /* cannot run on the target */
    p.cases[0].candidate_feasible = 1, p.cases[0].n_candidate = 30;
    p.cases[0].baseline_feasible = 0, p.cases[0].n_baseline = 0;
    assert_int_equal(ppb_verdict_case_settles_reject(&p.cases[0], &rules, 3), 0);   /* left out: decides nothing */
}

static void test_unresolved_cases_are_inconclusive(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 8);
    add_case(&p, 0.85, 0.01, 30, 1.0);
    add_case(&p, 1.04, 0.08, 12, 1.0);   /* noisy and few: could be beyond 5% */
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_int_equal(r.cases[1].cls, PPB_AB_UNRESOLVED);
    assert_true(r.cases[1].more_samples > 0);
    assert_true(has_reason(&r, "INCONCLUSIVE: case 'kernel=test;case=1' is ", "more samples per side"));
    ppb_verdict_report_free(&r);

    /* Too few samples for any interval at the family level. */
    p.cases[1].n_baseline = p.cases[1].n_candidate = 3;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_int_equal(r.cases[1].interval.bounded, 0);
    assert_true(has_reason(&r, "case 'kernel=test;case=1': 3 + 3 samples are too few", NULL));
    assert_true(has_reason(&r, "weighted geometric mean", "too few samples"));
    ppb_verdict_report_free(&r);

    /* No samples at all on one side. */
    p.cases[1].n_candidate = 0;
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_int_equal(r.cases[1].state, PPB_CASE_NO_SAMPLES);
    assert_true(has_reason(&r, "has 3 baseline and 0 candidate samples", NULL));
    ppb_verdict_report_free(&r);
}

/* Cases untimed for one reason are one line (compare: every case short of
 * history); another reason is its own line. */
static void test_untimed_alike_are_one_line(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 9);
    for (int i = 0; i < 5; i++) {
        add_case(&p, 1.0, 0.01, 10, 1.0);
        p.cases[i].n_baseline = p.cases[i].n_candidate = 0;
        p.cases[i].untimed = i == 3 ? "was not timed in either run" : "has too little history";
    }
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_true(has_reason(&r, "INCONCLUSIVE: 4 cases (the first: 'kernel=test;case=0') each has too little history",
                           NULL));
    assert_true(has_reason(&r, "INCONCLUSIVE: case 'kernel=test;case=3' was not timed in either run", NULL));
    int alike = 0;
    for (int i = 0; i < r.n_reasons; i++)
        alike += strstr(r.reasons[i], "too little history") != NULL;
    assert_int_equal(alike, 1);
    assert_int_equal(r.cases[1].state, PPB_CASE_NO_SAMPLES);
    assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
    ppb_verdict_report_free(&r);
}

/* A case left untimed because another had settled a REJECT (in_family) still
 * counts in the family of intervals, so the timed cases keep the level their
 * sampling stopped at; an untimed case without it does not count. */
static void test_untimed_in_family_keeps_the_family(void **state)
{
    (void)state;
    static proposal p;
    for (int in_family = 0; in_family <= 1; in_family++) {
        proposal_init(&p, 21);
        add_case(&p, 1.5, 0.01, 30, 1.0);   /* settles the REJECT */
        for (int i = 0; i < 3; i++) {
            add_case(&p, 1.0, 0.01, 30, 1.0);
            p.cases[p.n - 1].n_baseline = p.cases[p.n - 1].n_candidate = 0;
            p.cases[p.n - 1].untimed = "was checked but not timed";
            p.cases[p.n - 1].in_family = in_family;
        }
        ppb_verdict_rules rules;
        ppb_verdict_rules_default(&rules);
        ppb_verdict_report r;
        assert_int_equal(decide(&p, &rules, &r), 0);
        assert_int_equal(r.n_compared, 1);
        assert_int_equal(r.family_size, in_family ? 5 : 2);
        assert_true(fabs(r.interval_alpha - rules.alpha / r.family_size) < 1e-15);
        assert_int_equal(r.cases[2].state, PPB_CASE_NO_SAMPLES);
        assert_int_equal(r.verdict, PPB_VERDICT_REJECT);
        ppb_verdict_report_free(&r);
    }
}

static void test_bad_input(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 9);
    add_case(&p, 1.0, 0.01, 10, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    ppb_err err;
    rules.alpha = 0;
    assert_int_equal(ppb_verdict_decide(p.cases, p.n, &rules, &r, &err), PPB_EINPUT);
    ppb_verdict_report_free(&r);
    ppb_verdict_rules_default(&rules);
    rules.max_regression = -0.1;
    assert_int_equal(ppb_verdict_decide(p.cases, p.n, &rules, &r, &err), PPB_EINPUT);
    ppb_verdict_report_free(&r);
    ppb_verdict_rules_default(&rules);
    p.cases[0].weight = -1;
    assert_int_equal(ppb_verdict_decide(p.cases, p.n, &rules, &r, &err), PPB_EINPUT);
    ppb_verdict_report_free(&r);
    p.cases[0].weight = 1;
    p.base[0][3] = -1.0;   /* a negative time */
    assert_int_equal(ppb_verdict_decide(p.cases, p.n, &rules, &r, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "case 'kernel=test;case=0': baseline sample 3"));
    ppb_verdict_report_free(&r);
    assert_int_equal(ppb_verdict_decide(p.cases, 0, &rules, &r, &err), PPB_EINPUT);
    ppb_verdict_report_free(&r);
}

/* Reasons are stored whole or refused, never cut (a long list used to lose the
 * verdict line past 8 KB). */
static void test_reasons_text_whole_or_refused(void **state)
{
    (void)state;
    enum { N = 300 };
    char *lines[N];
    char line[128];
    for (int i = 0; i < N; i++) {
        snprintf(line, sizeof line, "REJECT: case %03d is 9.9%% slower [9.0%%, 10.8%%], above the tolerated regression", i);
        lines[i] = strdup(line);
    }
    ppb_verdict_report rep;
    memset(&rep, 0, sizeof rep);
    rep.n_reasons = N;
    rep.reasons = lines;
    char *buf = malloc(PPB_VERDICT_TEST_BUF);
    ppb_err err;
    assert_int_equal(ppb_verdict_reasons_text(&rep, buf, PPB_VERDICT_TEST_BUF, &err), PPB_OK);
    assert_true(strlen(buf) > 8192);                         /* past the old buffer */
    assert_non_null(strstr(buf, "case 000 is"));
    assert_non_null(strstr(buf, "case 299 is 9.9% slower [9.0%, 10.8%], above the tolerated regression\n"));
    int count = 0;
    for (const char *p = buf; *p; p++)
        count += *p == '\n';
    assert_int_equal(count, N);
    /* too little room: an error naming the need, nothing half-written passed on */
    assert_int_equal(ppb_verdict_reasons_text(&rep, buf, 8192, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "300 reasons need more than 8192 bytes"));
    free(buf);
    for (int i = 0; i < N; i++)
        free(lines[i]);
}

/* The sampling's design reaches the verdict: a case's interval spends the
 * share of the family alpha its stopping look spent, is widened by its between-session spread, and a case
 * measured in one session says so. */
static void test_looks_and_sessions_shape_the_case_interval(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 11);
    add_case(&p, 1.03, 0.01, 60, 1.0);
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.max_regression = 0.10;
    ppb_verdict_report plain, looked, widened;
    assert_int_equal(decide(&p, &rules, &plain), 0);
    assert_true(fabs(plain.cases[0].interval.level - (1 - 0.05 / 2)) < 1e-12);
    assert_int_equal(plain.cases[0].cls, PPB_AB_SLOWER);
    p.cases[0].look_share = 0.2;
    assert_int_equal(decide(&p, &rules, &looked), 0);
    assert_true(fabs(looked.cases[0].interval.level - (1 - 0.05 / 2 * 0.2)) < 1e-12);
    assert_true(looked.cases[0].interval.ratio_lo < plain.cases[0].interval.ratio_lo);
    /* a between-session spread of 1.5% (log) leaves a 3% effect unresolved at a 1% threshold */
    p.cases[0].between_sd = 0.015;
    p.cases[0].sessions = 3;
    assert_int_equal(decide(&p, &rules, &widened), 0);
    assert_int_equal(widened.cases[0].cls, PPB_AB_UNRESOLVED);
    assert_true(widened.cases[0].interval.ratio_lo < 1.01);
    assert_false(has_reason(&widened, "one session", NULL));
    ppb_verdict_report_free(&widened);
    p.cases[0].between_sd = 0;
    p.cases[0].sessions = 1;
    assert_int_equal(decide(&p, &rules, &widened), 0);
    assert_true(has_reason(&widened, "note: case", "one session per side"));
    ppb_verdict_report_free(&plain);
    ppb_verdict_report_free(&looked);
    ppb_verdict_report_free(&widened);
}

/* ACCEPT needs the mean's whole interval past the threshold: its upper end
 * below 1 / (1 + t), not just its lower end. With min_gain 0 a mean of [0.94,
 * 0.995] (up to 6% faster, perhaps only 0.5%) is INCONCLUSIVE at t = 1%; moved
 * to [0.94, 0.985] it ACCEPTs. */
static void test_accept_needs_the_whole_mean_past_the_threshold(void **state)
{
    (void)state;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.min_gain = 0;
    ppb_ab_interval iv;
    memset(&iv, 0, sizeof iv);
    iv.level = iv.level_achieved = 1 - 0.05 / 2;   /* one case and the mean */
    iv.bounded = 1;
    ppb_verdict_case c = {.key = "kernel=test;case=0", .weight = 1, .baseline_correct = 1, .candidate_correct = 1,
                          .baseline_feasible = 1, .candidate_feasible = 1, .interval = &iv, .basis = "given"};
    static const double hi[2] = {0.995, 0.985};
    static const int verdict[2] = {PPB_VERDICT_INCONCLUSIVE, PPB_VERDICT_ACCEPT};
    for (int k = 0; k < 2; k++) {
        iv.ratio_lo = 0.94, iv.ratio_hi = hi[k];
        iv.ratio = sqrt(iv.ratio_lo * iv.ratio_hi);
        iv.shift = log(iv.ratio), iv.shift_lo = log(iv.ratio_lo), iv.shift_hi = log(iv.ratio_hi);
        ppb_verdict_report r;
        ppb_err err;
        assert_int_equal(ppb_verdict_decide(&c, 1, &rules, &r, &err), 0);
        assert_true(fabs(r.geomean.ratio_hi - hi[k]) < 1e-9);
        if (r.verdict != verdict[k]) {
            print_reasons(&r);
            fail_msg("mean [0.94, %g]: %s, want %s", hi[k], ppb_verdict_name(r.verdict),
                     ppb_verdict_name(verdict[k]));
        }
        ppb_verdict_report_free(&r);
    }
}

/* The weighted mean is looked at with its cases, so its level is the
 * strictest case's: a case whose stopping look spent a quarter of its alpha
 * puts the mean at 1 - alpha / M / 4, whatever the other case's level. */
static void test_the_mean_takes_the_strictest_case_level(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 5);
    add_case(&p, 0.9, 0.01, 40, 1.0);
    add_case(&p, 0.9, 0.01, 40, 1.0);
    p.cases[0].look_share = 0.25;
    p.cases[1].look_share = 1;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    assert_true(fabs(r.interval_alpha - 0.05 / 3) < 1e-15);
    assert_true(fabs(r.cases[0].alpha - 0.05 / 3 / 4) < 1e-15);
    assert_true(fabs(r.cases[1].alpha - 0.05 / 3) < 1e-15);
    if (fabs(r.geomean.level - (1 - 0.05 / 3 / 4)) > 1e-12)
        fail_msg("the mean's level is %.12g, want %.12g", r.geomean.level, 1 - 0.05 / 3 / 4);
    ppb_verdict_report_free(&r);
}

/* The detectable change: (z_level + z_power) standard errors of the wider
 * side. Symmetric case by hand: level 95% (z 1.959964), power 80% (z
 * 0.841621), se 0.01 -> exp(0.0280159) - 1. */
static void test_detectable_change_formula(void **state)
{
    (void)state;
    double se = 0.01, z = 1.959963985;
    double lo = exp(-z * se), hi = exp(z * se);
    double want = exp((z + 0.841621234) * se) - 1;
    assert_true(fabs(ppb_detectable_change(1.0, lo, hi, 0.95, 0.8) - want) < 1e-9);
    /* The wider side decides, whichever it is. */
    double wide = exp(3 * z * se);
    double want_wide = exp((z + 0.841621234) * 3 * se) - 1;
    assert_true(fabs(ppb_detectable_change(1.0, lo, wide, 0.95, 0.8) - want_wide) < 1e-9);
    assert_true(fabs(ppb_detectable_change(1.0, 1 / wide, hi, 0.95, 0.8) - want_wide) < 1e-9);
    /* More power, a stricter level: a larger change is needed. */
    assert_true(ppb_detectable_change(1.0, lo, hi, 0.95, 0.9) > want);
    assert_true(ppb_detectable_change(1.0, lo, hi, 0.99, 0.8) < want); /* same interval at a higher level: smaller se */
    /* No interval, no figure. */
    assert_true(ppb_detectable_change(1.0, 0.0, INFINITY, 0.95, 0.8) == 0);
    assert_true(ppb_detectable_change(1.0, 1.0, 1.0, 0.95, 0.8) == 0);
}

/* Every verdict says what it could see; an INCONCLUSIVE mean straddling the
 * gain boundary says about how many times the samples would settle it, and
 * that factor shrinks as the estimate moves away from the boundary. */
static void test_detectable_and_settle_notes(void **state)
{
    (void)state;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules); /* min_gain 2% */
    double factor[2];
    const double ratios[2] = {0.975, 0.97}; /* the same noise, the second further from the 2% boundary */
    for (int k = 0; k < 2; k++) {
        static proposal p;
        proposal_init(&p, 2);
        add_case(&p, ratios[k], 0.05, 8, 1.0);
        ppb_verdict_report r;
        assert_int_equal(decide(&p, &rules, &r), 0);
        print_reasons(&r);
        assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
        assert_true(r.detectable > 0);
        double want = ppb_detectable_change(r.geomean.ratio, r.geomean.ratio_lo, r.geomean.ratio_hi, r.geomean.level,
                                            PPB_DETECT_POWER);
        assert_true(fabs(r.detectable - want) < 1e-12);
        assert_true(has_reason(&r, "note: this run could see a change of the weighted mean of ", "% or more"));
        assert_true(r.settle_factor > 1 && isfinite(r.settle_factor));
        assert_true(has_reason(&r, "note: about ", "x this run's samples would likely settle the weighted mean"));
        /* By hand: the side facing the boundary over the distance to it, squared. */
        double d = log(r.geomean.ratio), b = -log(1.02), side = log(r.geomean.ratio_hi) - d;
        assert_true(fabs(r.settle_factor - (side / (b - d)) * (side / (b - d))) < 1e-9);
        factor[k] = r.settle_factor;
        assert_false(has_reason(&r, "budget_ms", NULL)); /* no budget given: none named */
        ppb_verdict_report_free(&r);
        /* given the pairs' budget, the note names the budget that would likely settle it */
        rules.budget_ms = 20000;
        assert_int_equal(decide(&p, &rules, &r), 0);
        char want_budget[96];
        snprintf(want_budget, sizeof want_budget, "a sampling budget_ms of about %.0f (this run's: 20000)",
                 factor[k] * 20000);
        if (!has_reason(&r, want_budget, NULL))
            fail_msg("no '%s' among the reasons", want_budget);
        rules.budget_ms = 0;
        ppb_verdict_report_free(&r);
    }
    assert_true(factor[1] < factor[0]);

    /* A mean too wide to judge anything: said as such, not as "millions of percent". */
    static proposal wide;
    proposal_init(&wide, 3);
    add_case(&wide, 1.0, 3.0, 12, 1.0);
    ppb_verdict_report r;
    assert_int_equal(decide(&wide, &rules, &r), 0);
    print_reasons(&r);
    assert_true(r.detectable >= 1);
    assert_true(has_reason(&r, "note: this run could not see even a 2x change of the weighted mean", NULL));
    assert_false(has_reason(&r, "note: this run could see a change", NULL));
    ppb_verdict_report_free(&r);
}

/* Many open cases alike: three listed, then one line saying how many more,
 * so the decision is not buried (the compare page once showed 56 bullets). */
static void test_many_open_cases_collapse(void **state)
{
    (void)state;
    static proposal p;
    proposal_init(&p, 7);
    for (int i = 0; i < 10; i++) {
        add_case(&p, 1.0, 0.15, 6, 1.0);
        p.cases[i].sessions = 1;
    }
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.min_gain = 0; /* the cases' lines are the subject, not the mean's gain */
    ppb_verdict_report r;
    assert_int_equal(decide(&p, &rules, &r), 0);
    print_reasons(&r);
    assert_int_equal(r.verdict, PPB_VERDICT_INCONCLUSIVE);
    int listed = 0, summaries = 0, session_notes = 0;
    for (int i = 0; i < r.n_reasons; i++) {
        listed += strncmp(r.reasons[i], "INCONCLUSIVE: case '", 20) == 0;
        summaries += strstr(r.reasons[i], "more cases may be beyond the 5% tolerated regression; more samples") != NULL;
        session_notes += strstr(r.reasons[i], "one session per side") != NULL;
    }
    int open = 0;
    for (int i = 0; i < 10; i++)
        open += r.cases[i].interval.ratio_hi > 1.05 && r.cases[i].interval.ratio_lo <= 1.05;
    assert_true(open > 3);
    assert_int_equal(listed, 3);
    assert_int_equal(summaries, 1);
    char want[64];
    snprintf(want, sizeof want, "INCONCLUSIVE: %d more cases may be beyond", open - 3);
    assert_true(has_reason(&r, want, NULL));
    assert_int_equal(session_notes, 1);
    assert_true(has_reason(&r, "note: 10 cases were measured in one session per side", NULL));
    ppb_verdict_report_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_limits_floor_at_threshold),
        cmocka_unit_test(test_reasons_text_whole_or_refused),
        cmocka_unit_test(test_clear_win_accepts),
        cmocka_unit_test(test_clear_loss_rejects),
        cmocka_unit_test(test_huge_intervals_keep_reasons_short),
        cmocka_unit_test(test_aa_is_inconclusive),
        cmocka_unit_test(test_mixed_rejects_on_the_regression),
        cmocka_unit_test(test_detectable_change_formula),
        cmocka_unit_test(test_many_open_cases_collapse),
        cmocka_unit_test(test_detectable_and_settle_notes),
        cmocka_unit_test(test_regression_within_tolerance_accepts),
        cmocka_unit_test(test_weights_decide_the_mean),
        cmocka_unit_test(test_correctness_failures_reject),
        cmocka_unit_test(test_infeasible_candidate_rejects_first),
        cmocka_unit_test(test_a_case_that_settles_reject_rejects_the_verdict),
        cmocka_unit_test(test_unresolved_cases_are_inconclusive),
        cmocka_unit_test(test_untimed_alike_are_one_line),
        cmocka_unit_test(test_untimed_in_family_keeps_the_family),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_looks_and_sessions_shape_the_case_interval),
        cmocka_unit_test(test_accept_needs_the_whole_mean_past_the_threshold),
        cmocka_unit_test(test_the_mean_takes_the_strictest_case_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
