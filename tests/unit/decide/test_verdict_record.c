/* A verdict as the store keeps it (verdict_record): the proposal row's
 * verdict, geometric mean and reasons and each case's row, filled from the
 * report and stored in one go, the same for propose and compare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verdict_record.h"

#include "stats_sim.h"

#define N_CASES 3
#define SAMPLES 40

typedef struct fixture {
    double base[N_CASES][SAMPLES], cand[N_CASES][SAMPLES];
    ppb_verdict_case cases[N_CASES];
    ppb_proposal_case pcs[N_CASES];
    ppb_proposal_record rec;
    ppb_verdict_report rep;
    char db[128];
} fixture;

/* Case 0: the candidate 20% faster; case 1: the candidate cannot run on the
 * target; case 2: the same times on both sides. Keys set as a caller would. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    sim_rng rng = {42};
    static const char *const keys[N_CASES] = {"kernel=t;case=0", "kernel=t;case=1", "kernel=t;case=2"};
    static const double ratio[N_CASES] = {0.8, 1.0, 1.0};
    for (int i = 0; i < N_CASES; i++) {
        sim_lognormal(&rng, 1.0 + i, 0.01, f->base[i], SAMPLES);
        sim_lognormal(&rng, (1.0 + i) * ratio[i], 0.01, f->cand[i], SAMPLES);
        f->cases[i] = (ppb_verdict_case){
            .key = keys[i], .weight = 0.5 + i,
            .baseline = f->base[i], .n_baseline = SAMPLES, .candidate = f->cand[i], .n_candidate = SAMPLES,
            .baseline_correct = 1, .candidate_correct = 1, .baseline_feasible = 1, .candidate_feasible = 1,
        };
        snprintf(f->pcs[i].baseline_key, sizeof f->pcs[i].baseline_key, "base %s", keys[i]);
        snprintf(f->pcs[i].candidate_key, sizeof f->pcs[i].candidate_key, "cand %s", keys[i]);
    }
    f->cases[1].candidate_feasible = 0;
    f->cases[1].candidate = NULL;
    f->cases[1].n_candidate = 0;
    f->cases[1].candidate_reason = "needs 200 KiB of shared memory";
    snprintf(f->rec.name, sizeof f->rec.name, "unit");
    snprintf(f->rec.kind, sizeof f->rec.kind, "compare");
    /* a fresh path: the store creates only what does not exist yet */
    snprintf(f->db, sizeof f->db, "/tmp/ppb-vrec-XXXXXX.db");
    int fd = mkstemps(f->db, 3);
    if (fd < 0) {
        free(f);
        return -1;
    }
    close(fd);
    unlink(f->db);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ppb_verdict_report_free(&f->rep);
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s%s", f->db, suffix[i]);
        unlink(path);
    }
    free(f);
    return 0;
}

static void record_fills_row_and_cases(void **state)
{
    fixture *f = *state;
    ppb_err err = {{0}};
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.min_gain = 0;
    assert_int_equal(ppb_verdict_decide(f->cases, N_CASES, &rules, &f->rep, &err), PPB_OK);
    assert_int_equal(ppb_verdict_record(&f->rep, f->cases, N_CASES, &rules, &f->rec, f->pcs, &err), PPB_OK);

    assert_string_equal(f->rec.verdict, ppb_verdict_name(f->rep.verdict));
    assert_true(f->rep.have_geomean);
    assert_true(f->rec.geomean_ratio == f->rep.geomean.ratio);
    assert_true(f->rec.geomean_lo == f->rep.geomean.ratio_lo && f->rec.geomean_hi == f->rep.geomean.ratio_hi);
    /* every reason, one per line, the verdict's own first */
    assert_non_null(strstr(f->rec.reasons, f->rep.reasons[0]));
    assert_int_equal(strncmp(f->rec.reasons, f->rep.reasons[0], strlen(f->rep.reasons[0])), 0);
    /* the rules it was decided under, for the report to draw */
    assert_true(f->rec.min_gain == 0 && f->rec.max_regression == rules.max_regression &&
                f->rec.threshold == rules.threshold);
    /* what the caller set stays */
    assert_string_equal(f->rec.name, "unit");
    assert_string_equal(f->rec.kind, "compare");

    for (int i = 0; i < N_CASES; i++) {
        const ppb_verdict_outcome *oc = &f->rep.cases[i];
        const ppb_proposal_case *pc = &f->pcs[i];
        assert_true(pc->weight == f->cases[i].weight);
        assert_string_equal(pc->state, ppb_case_state_name(oc->state));
        assert_non_null(strstr(pc->baseline_key, "base ") == pc->baseline_key ? pc->baseline_key : NULL);
        assert_non_null(strstr(pc->candidate_key, "cand ") == pc->candidate_key ? pc->candidate_key : NULL);
        if (oc->state == PPB_CASE_COMPARED) {
            assert_string_equal(pc->cls, ppb_ab_class_name(oc->cls));
            assert_true(pc->ratio == oc->interval.ratio && pc->p_holm == oc->p_holm);
            assert_true(pc->ratio_lo == oc->interval.ratio_lo && pc->ratio_hi == oc->interval.ratio_hi);
        } else {
            assert_string_equal(pc->cls, "");
            assert_true(isnan(pc->ratio) && isnan(pc->ratio_lo) && isnan(pc->ratio_hi) && isnan(pc->p_holm));
        }
    }
    assert_int_equal(f->rep.cases[0].state, PPB_CASE_COMPARED);
    assert_string_equal(f->pcs[0].cls, "faster");
    assert_int_equal(f->rep.cases[1].state, PPB_CASE_INFEASIBLE);
    assert_string_equal(f->pcs[1].state, "infeasible");
}

typedef struct seen_cases {
    int n;
    char state[N_CASES][16], key[N_CASES][64];
} seen_cases;

static int see_case(void *ctx, const ppb_proposal_case *c)
{
    seen_cases *s = ctx;
    if (s->n < N_CASES) {
        snprintf(s->state[s->n], sizeof s->state[s->n], "%s", c->state);
        snprintf(s->key[s->n], sizeof s->key[s->n], "%s", c->baseline_key);
    }
    s->n++;
    return 0;
}

static void store_round_trip(void **state)
{
    fixture *f = *state;
    ppb_err err = {{0}};
    ppb_store *s = NULL;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.max_regression = 0.125;
    rules.min_gain = 0.03;
    rules.threshold = 0.015;
    assert_int_equal(ppb_store_open(&s, f->db, &err), PPB_OK);
    assert_int_equal(ppb_verdict_store(s, f->cases, N_CASES, &rules, &f->rec, f->pcs, &f->rep, &err), PPB_OK);
    assert_true(f->rec.id > 0);

    ppb_proposal_record *back = calloc(1, sizeof *back);
    assert_non_null(back);
    assert_int_equal(ppb_store_get_proposal(s, f->rec.id, back, &err), PPB_OK);
    assert_string_equal(back->verdict, f->rec.verdict);
    assert_string_equal(back->reasons, f->rec.reasons);
    assert_string_equal(back->name, "unit");
    assert_true(back->min_gain == 0.03 && back->max_regression == 0.125 && back->threshold == 0.015);
    seen_cases seen = {0};
    assert_int_equal(ppb_store_each_proposal_case(s, f->rec.id, see_case, &seen, &err), PPB_OK);
    assert_int_equal(seen.n, N_CASES);
    for (int i = 0; i < N_CASES; i++) {
        assert_string_equal(seen.state[i], f->pcs[i].state);
        assert_string_equal(seen.key[i], f->pcs[i].baseline_key);
    }
    free(back);
    ppb_store_close(s);
}

/* A bad rule is the decision's error: nothing is stored. */
static void store_refuses_bad_rules(void **state)
{
    fixture *f = *state;
    ppb_err err = {{0}};
    ppb_store *s = NULL;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.alpha = 2;
    assert_int_equal(ppb_store_open(&s, f->db, &err), PPB_OK);
    assert_int_equal(ppb_verdict_store(s, f->cases, N_CASES, &rules, &f->rec, f->pcs, &f->rep, &err), PPB_EINPUT);
    assert_int_equal(f->rec.id, 0);
    assert_true(ppb_store_latest_proposal(s) <= 0);
    ppb_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(record_fills_row_and_cases, setup, teardown),
        cmocka_unit_test_setup_teardown(store_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(store_refuses_bad_rules, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
