/* A stored verdict re-derived (verdict_recompute): proposals simulated the
 * way abrun measures and decides them (the sequential design of each pair,
 * ab_cases' inputs, ppb_verdict_decide, verdict_record), stored as the store
 * keeps them, then rebuilt and decided again: the same verdict, and each kind
 * of change to what was stored named as the first difference. Also through a
 * real database: tagged samples, the rows of schema 13, and the proposals that
 * cannot be recomputed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab_cases.h"
#include "abrun.h"
#include "run_compare.h"
#include "verdict_record.h"
#include "verdict_recompute.h"

#include "stats_sim.h"

#define MAX_PAIRS 4

/* ---- a simulated pair: session offsets, so the spread is not 0 ------------ */

typedef struct pair_sim {
    sim_rng rng;
    double ratio, sigma;
    double offset[2][PPB_SEQ_MAX_SESSIONS];
} pair_sim;

static int sim_sample(void *ctx, int side, int session, double *ms, double *cost_ms, ppb_err *err)
{
    (void)err;
    pair_sim *p = ctx;
    double l = p->offset[side][session] + p->sigma * sim_normal(&p->rng) + (side ? log(p->ratio) : 0);
    *ms = exp(l);
    *cost_ms = *ms;
    return 0;
}

/* ---- a proposal as abrun would have stored it ----------------------------- */

typedef struct sim_proposal {
    ppb_proposal *p;                       /* rules and sampling */
    ppb_case side[MAX_PAIRS][2];
    ppb_seq_result seq[MAX_PAIRS];         /* as the design sampled each pair */
    ppb_result res[MAX_PAIRS][2];
    char shape_key[MAX_PAIRS][PPB_CASE_KEY_MAX];
    int n_pairs;
    ppb_stored_verdict sv;                 /* what the store would hold */
} sim_proposal;

static ppb_case prefill_case(int i, int side, int context_len)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = 1 + i % 2;
    c.shape.query_len = 17 + 23 * (i / 2);
    c.shape.context_len = context_len;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.shape.dtype = PPB_BF16;
    c.shape.page_size = 16;
    c.config.block_m = side ? 32 : 16;
    c.config.block_n = side ? 16 : 32;
    c.config.num_warps = 4;
    c.weight = 1.0 + i;
    ppb_case_make_key(&c);
    return c;
}

static void sim_rules(ppb_proposal *p)
{
    ppb_verdict_rules_default(&p->rules);
    p->rules.min_gain = 0;
    p->rules.max_regression = 0.05;
    ppb_sampling_default(&p->sampling);
    p->sampling.samples_per_round = 5;
    p->sampling.min_rounds = 2;
    p->sampling.max_rounds = 8;
    p->sampling.sessions = 3;
    p->sampling.budget_ms = 1e12;
    p->rules.budget_ms = p->sampling.budget_ms; /* as abrun decides: the notes may name it */
    snprintf(p->name, sizeof p->name, "sim");
}

/* Sample pair i by the design, as abrun's measure_pair does. */
static void sample_pair(sim_proposal *sp, int i, double ratio, double tau, int n_pairs_of_design)
{
    pair_sim ps;
    memset(&ps, 0, sizeof ps);
    ps.rng.state = 1000 + (uint64_t)i;
    ps.ratio = ratio;
    ps.sigma = 0.02;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < PPB_SEQ_MAX_SESSIONS; k++)
            ps.offset[s][k] = tau * sim_normal(&ps.rng);
    ppb_seq_design d = ppb_ab_pair_design(sp->p, n_pairs_of_design, sp->p->sampling.sessions, 77 + (uint64_t)i);
    ppb_err err;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &ps, &sp->seq[i], &err), PPB_OK);
    for (int s = 0; s < 2; s++) {
        ppb_result_init(&sp->res[i][s]);
        sp->res[i][s].status = PPB_STATUS_OK;
        sp->res[i][s].samples_ms = sp->seq[i].samples[s];
        sp->res[i][s].n_samples = sp->seq[i].n[s];
        ppb_result_summarise(&sp->res[i][s], 1, 1);
    }
}

static ppb_ab_pair_view view_of(sim_proposal *sp, int i, const char *key)
{
    ppb_ab_pair_view v = {.key = key, .weight = sp->side[i][0].weight, .present = {1, 1},
                          .res = {&sp->res[i][0], &sp->res[i][1]}};
    if (sp->seq[i].n[0] > 0) {
        v.sessions = sp->p->sampling.sessions;
        ppb_seq_design d = ppb_ab_pair_design(sp->p, sp->n_pairs, v.sessions, 0);
        v.look_share = ppb_ab_case_look_share(&sp->seq[i], &d);
        v.between_sd = sp->seq[i].between_sd;
        v.looks_taken = sp->seq[i].looks_taken;
        v.looks_planned = sp->seq[i].looks_planned;
        v.stop_alpha = d.alpha;
    }
    return v;
}

/* Decide and record (verdict_record) the n verdict cases, then fill sv with
 * that record and both runs' results with their tags, as the store keeps them. */
static void store_sim(sim_proposal *sp, ppb_verdict_case *vcs, ppb_proposal_case *pcs, int n, const char *kind)
{
    ppb_verdict_report rep;
    ppb_err err = {{0}};
    ppb_stored_verdict *sv = &sp->sv;
    memset(sv, 0, sizeof *sv);
    sv->rec = calloc(1, sizeof *sv->rec);
    assert_non_null(sv->rec);
    assert_int_equal(ppb_verdict_decide(vcs, n, &sp->p->rules, &rep, &err), PPB_OK);
    assert_int_equal(ppb_verdict_record(&rep, vcs, n, &sp->p->rules, sv->rec, pcs, &err), PPB_OK);
    ppb_verdict_report_free(&rep);
    snprintf(sv->rec->name, sizeof sv->rec->name, "%s", sp->p->name);
    snprintf(sv->rec->kind, sizeof sv->rec->kind, "%s", kind);
    sv->rec->id = 1;
    sv->rec->baseline_run = 1, sv->rec->candidate_run = 2;
    const ppb_sampling *s = &sp->p->sampling;
    sv->rec->samples_per_round = s->samples_per_round, sv->rec->min_rounds = s->min_rounds;
    sv->rec->max_rounds = s->max_rounds, sv->rec->sessions = s->sessions, sv->rec->budget_ms = s->budget_ms;
    sv->pcs = calloc((size_t)n, sizeof *sv->pcs);
    assert_non_null(sv->pcs);
    memcpy(sv->pcs, pcs, sizeof *pcs * (size_t)n);
    sv->n_cases = sv->cap_cases = n;
    for (int i = 0; i < sp->n_pairs; i++)
        for (int s2 = 0; s2 < 2; s2++) {
            if (!sp->side[i][s2].key[0])
                continue;
            ppb_sample_tags tags = {sp->seq[i].session[s2], sp->seq[i].round[s2]};
            assert_int_equal(ppb_stored_run_add(&sv->run[s2], &sp->side[i][s2], &sp->res[i][s2],
                                                sp->seq[i].session[s2] ? &tags : NULL),
                             PPB_OK);
        }
}

/* 1: make_kernel_config decides and records as rule version 1 did (each
 * case's interval at alpha / the looks planned, no look share stored). */
static int sim_rule_version_1;

/* kernel_config: n pairs, a pair per case. */
static void make_kernel_config(sim_proposal *sp, int n, const double *ratio, double tau)
{
    memset(sp, 0, sizeof *sp);
    sp->p = calloc(1, sizeof *sp->p);
    assert_non_null(sp->p);
    sim_rules(sp->p);
    sp->n_pairs = n;
    ppb_verdict_case vcs[MAX_PAIRS];
    ppb_proposal_case pcs[MAX_PAIRS];
    ppb_ab_pair_view v[MAX_PAIRS];
    memset(pcs, 0, sizeof pcs);
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < 2; s++)
            sp->side[i][s] = prefill_case(i, s, 37);
        ppb_case_shape_key(&sp->side[i][0], sp->shape_key[i], sizeof sp->shape_key[i]);
        sample_pair(sp, i, ratio[i], tau, n);
        v[i] = view_of(sp, i, sp->shape_key[i]);
        if (sim_rule_version_1)
            v[i].look_share = 1.0 / v[i].looks_planned;
        ppb_ab_pair_case(&v[i], &vcs[i]);
        ppb_ab_case_design(&v[i], 1, &pcs[i]);
        pcs[i].noise = pcs[i].baseline_offset = NAN;
        snprintf(pcs[i].baseline_key, sizeof pcs[i].baseline_key, "%s", sp->side[i][0].key);
        snprintf(pcs[i].candidate_key, sizeof pcs[i].candidate_key, "%s", sp->side[i][1].key);
    }
    store_sim(sp, vcs, pcs, n, "kernel_config");
    if (sim_rule_version_1) {
        sp->sv.rec->rule_version = 1;
        for (int i = 0; i < n; i++)
            sp->sv.pcs[i].look_share = NAN;
    }
}

static void sim_free(sim_proposal *sp)
{
    ppb_stored_verdict_free(&sp->sv);
    for (int i = 0; i < MAX_PAIRS; i++) {
        for (int s = 0; s < 2; s++) {
            sp->res[i][s].samples_ms = NULL; /* the seq result's */
            ppb_result_free(&sp->res[i][s]);
        }
        ppb_seq_result_free(&sp->seq[i]);
    }
    free(sp->p);
}

static ppb_verdict_recheck recheck(const ppb_stored_verdict *sv)
{
    ppb_verdict_recheck out;
    ppb_err err = {{0}};
    int rc = ppb_verdict_recompute(sv, &out, &err);
    if (rc)
        fail_msg("recompute: %s", err.msg);
    return out;
}

static void assert_differs(const ppb_stored_verdict *sv, const char *what)
{
    ppb_verdict_recheck out = recheck(sv);
    if (out.agree || !strstr(out.difference, what))
        fail_msg("expected a difference naming '%s', got agree %d: '%s'", what, out.agree, out.difference);
}

static const double ratios[3] = {0.8, 1.0, 1.3};

/* ---- tests ------------------------------------------------------------------ */

static void test_a_kernel_config_verdict_is_re_derived(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    ppb_verdict_recheck out = recheck(&sp->sv);
    assert_true(out.agree);
    assert_string_equal(out.verdict, sp->sv.rec->verdict);
    assert_int_equal(out.n_cases, 3);
    assert_int_equal(out.n_compared, 3);
    assert_int_equal(out.rule_version, PPB_VERDICT_RULE_VERSION);
    /* what the record keeps of the design: the looks, the stopping alpha, the spread */
    for (int i = 0; i < 3; i++) {
        const ppb_proposal_case *pc = &sp->sv.pcs[i];
        assert_int_equal(pc->looks_planned, 3); /* rounds 2, 4, 8 */
        assert_true(pc->looks_taken >= 1 && pc->looks_taken <= 3);
        assert_int_equal(pc->sessions, 3);
        assert_true(fabs(pc->stop_alpha - 0.05 / 4) < 1e-15);  /* 3 pairs + the mean */
        /* the family's share, times what the stopping look spent of it */
        assert_true(pc->look_share > 0 && pc->look_share <= 1);
        assert_true(fabs(pc->alpha - 0.05 / 4 * pc->look_share) < 1e-15);
        assert_true(pc->between_sd > 0);
    }
    sim_free(sp);
    free(sp);
}

/* A verdict of rule version 1 (Bonferroni over the looks planned, no look
 * share stored) is decided again by its own rule and agrees; read as version
 * 2 it would not. Under version 2 the stored share is what the interval spent:
 * a changed one is a difference. */
static void test_each_rule_version_spends_alpha_its_own_way(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    sim_rule_version_1 = 1;
    make_kernel_config(sp, 3, ratios, 0.02);
    sim_rule_version_1 = 0;
    ppb_verdict_recheck out = recheck(&sp->sv);
    if (!out.agree)
        fail_msg("version 1: %s", out.difference);
    assert_int_equal(out.rule_version, 1);
    sp->sv.rec->rule_version = 2;
    assert_differs(&sp->sv, "alpha its interval spent");
    sim_free(sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[1].look_share *= 0.5;
    assert_differs(&sp->sv, "case 1 (");
    sim_free(sp);
    free(sp);
}

/* What the samples cost (schema 18) re-derives from the samples as stored: the
 * kernel time and the fixed design's; one whose stored figure differs is a
 * difference, named. Not measured (no wall time): not checked. */
static void test_the_samples_cost_is_re_derived(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    ppb_ab_pair_view v[3];
    for (int i = 0; i < 3; i++)
        v[i] = view_of(sp, i, sp->shape_key[i]);
    ppb_ab_cost cost;
    ppb_ab_sampling_cost(v, 3, &cost);
    assert_true(cost.kernel_ms > 0 && cost.fixed_samples > 0);
    sp->sv.rec->cost = (ppb_proposal_cost){.wall_ms = 2 * cost.kernel_ms, .kernel_ms = cost.kernel_ms,
                                           .fixed_kernel_ms = cost.fixed_kernel_ms,
                                           .fixed_samples = cost.fixed_samples};
    ppb_verdict_recheck out = recheck(&sp->sv);
    if (!out.agree)
        fail_msg("%s", out.difference);
    sp->sv.rec->cost.fixed_samples++;
    assert_differs(&sp->sv, "the fixed design's");
    sp->sv.rec->cost.fixed_samples--;
    sp->sv.rec->cost.kernel_ms *= 1.01;
    assert_differs(&sp->sv, "the samples' kernel time");
    sp->sv.rec->cost.wall_ms = NAN; /* not measured: nothing to check */
    assert_true(recheck(&sp->sv).agree);
    sim_free(sp);
    free(sp);
}

static void test_a_changed_sample_is_a_difference(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.run[1].items[1].r.samples_ms[4] *= 1.5;
    assert_differs(&sp->sv, "case 1 (");
    sim_free(sp);
    free(sp);
}

static void test_a_changed_session_changes_the_spread(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    unsigned char *tag = sp->sv.run[0].items[2].session;
    for (int k = 0; k < 6; k++)
        tag[k] = (unsigned char)((tag[k] + 1) % 3);
    assert_differs(&sp->sv, "case 2 (");
    assert_differs(&sp->sv, "between-session sd");
    sim_free(sp);
    free(sp);
}

static void test_the_looks_come_from_the_rounds_and_the_design(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    /* a sample said to come from round 8 means the design looked at rounds 2, 4 and 8 */
    ppb_stored_result *r = &sp->sv.run[0].items[0];
    int taken = sp->sv.pcs[0].looks_taken;
    r->round[r->r.n_samples - 1] = taken == 3 ? 3 : 8;
    assert_differs(&sp->sv, "looks taken");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.rec->max_rounds = 16; /* rounds 2, 4, 8, 16: a fourth look planned */
    assert_differs(&sp->sv, "looks planned");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[1].looks_planned = 1;
    assert_differs(&sp->sv, "case 1 (");
    assert_differs(&sp->sv, "looks planned");
    sim_free(sp);
    free(sp);
}

static void test_stored_outcomes_are_checked(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[0].alpha *= 3;
    assert_differs(&sp->sv, "alpha its interval spent");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[2].stop_alpha = 0.05;
    assert_differs(&sp->sv, "stopping rule's alpha");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[2].ratio_hi *= 1 + 1e-6; /* beyond 1e-9 relative */
    assert_differs(&sp->sv, "case 2 (");
    assert_differs(&sp->sv, "interval's upper end");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[2].ratio_lo *= 1 + 1e-12; /* within it */
    assert_true(recheck(&sp->sv).agree);
    snprintf(sp->sv.pcs[1].cls, sizeof sp->sv.pcs[1].cls, "faster");
    assert_differs(&sp->sv, "class");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.rec->geomean_hi *= 1.01;
    assert_differs(&sp->sv, "weighted mean's upper end");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    snprintf(sp->sv.rec->verdict, sizeof sp->sv.rec->verdict, "%s",
             strcmp(sp->sv.rec->verdict, "ACCEPT") ? "ACCEPT" : "REJECT");
    assert_differs(&sp->sv, "verdict: stored");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    char *nl = strchr(sp->sv.rec->reasons, '\n');
    assert_non_null(nl);
    nl[-1] = nl[-1] == 'x' ? 'y' : 'x';
    assert_differs(&sp->sv, "reasons, line 1");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.pcs[0].weight = 5;
    assert_differs(&sp->sv, "case 0 (");
    assert_differs(&sp->sv, "weight");
    sim_free(sp);
    free(sp);
}

static void test_the_stored_rules_decide_it(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.rec->threshold = 0.3; /* a case 30% slower is now within the threshold */
    assert_false(recheck(&sp->sv).agree);
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    sp->sv.rec->alpha = 0.2;
    assert_differs(&sp->sv, "stopping rule's alpha");
    sim_free(sp);

    make_kernel_config(sp, 3, ratios, 0.02);
    snprintf(sp->sv.rec->method, sizeof sp->sv.rec->method, "bootstrap");
    assert_false(recheck(&sp->sv).agree);
    snprintf(sp->sv.rec->method, sizeof sp->sv.rec->method, "median");
    ppb_verdict_recheck out;
    ppb_err err = {{0}};
    assert_int_equal(ppb_verdict_recompute(&sp->sv, &out, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "unknown interval method 'median'"));
    sim_free(sp);
    free(sp);
}

static void test_a_bootstrap_verdict_is_re_derived(void **state)
{
    (void)state;
    /* a proposal decided by the bootstrap (its seed stored) */
    sim_proposal *sp = calloc(1, sizeof *sp);
    sp->p = calloc(1, sizeof *sp->p);
    sim_rules(sp->p);
    sp->p->rules.method = PPB_METHOD_BOOTSTRAP;
    sp->p->rules.seed = 12345;
    sp->n_pairs = 2;
    ppb_verdict_case vcs[2];
    ppb_proposal_case pcs[2];
    ppb_ab_pair_view v[2];
    memset(pcs, 0, sizeof pcs);
    for (int i = 0; i < 2; i++) {
        for (int s = 0; s < 2; s++)
            sp->side[i][s] = prefill_case(i, s, 37);
        ppb_case_shape_key(&sp->side[i][0], sp->shape_key[i], sizeof sp->shape_key[i]);
        sample_pair(sp, i, ratios[i], 0.02, 2);
        v[i] = view_of(sp, i, sp->shape_key[i]);
        ppb_ab_pair_case(&v[i], &vcs[i]);
        ppb_ab_case_design(&v[i], 1, &pcs[i]);
        pcs[i].noise = pcs[i].baseline_offset = NAN;
        snprintf(pcs[i].baseline_key, sizeof pcs[i].baseline_key, "%s", sp->side[i][0].key);
        snprintf(pcs[i].candidate_key, sizeof pcs[i].candidate_key, "%s", sp->side[i][1].key);
    }
    store_sim(sp, vcs, pcs, 2, "kernel_config");
    assert_string_equal(sp->sv.rec->method, "bootstrap");
    assert_true(recheck(&sp->sv).agree);
    sp->sv.rec->seed = 12346; /* another resample */
    assert_differs(&sp->sv, "case 0 (");
    sim_free(sp);
    free(sp);
}

/* chunked_prefill: chunks of 2 (baseline) and 3 (candidate); the candidate's
 * last chunk has no baseline partner and is timed alone (untagged). */
static void test_a_chunked_verdict_is_re_derived(void **state)
{
    (void)state;
    sim_proposal *sp = calloc(1, sizeof *sp);
    sp->p = calloc(1, sizeof *sp->p);
    sim_rules(sp->p);
    snprintf(sp->p->name, sizeof sp->p->name, "chunky");
    sp->n_pairs = 3;
    ppb_ab_pair_view v[3];
    for (int i = 0; i < 3; i++) {
        for (int s = 0; s < 2; s++)
            if (i < 2 || s == 1)
                sp->side[i][s] = prefill_case(0, s, 100 * i);
        if (i < 2) {
            sample_pair(sp, i, 0.9, 0.02, 3);
        } else { /* timed alone: samples, no design */
            static double alone[12];
            for (int k = 0; k < 12; k++)
                alone[k] = 1.0 + k / 100.0;
            ppb_result_init(&sp->res[i][1]);
            sp->res[i][1].status = PPB_STATUS_OK;
            sp->res[i][1].samples_ms = alone;
            sp->res[i][1].n_samples = 12;
            ppb_result_init(&sp->res[i][0]);
        }
        v[i] = view_of(sp, i, sp->p->name);
        v[i].present[0] = i < 2;
    }
    ppb_verdict_case vc;
    ppb_proposal_case pc;
    memset(&pc, 0, sizeof pc);
    double *totals[2];
    assert_int_equal(ppb_ab_chunked_case(v, 3, sp->p->name, totals, &vc), PPB_OK);
    ppb_ab_case_design(v, 3, &pc);
    pc.noise = pc.baseline_offset = NAN;
    snprintf(pc.baseline_key, sizeof pc.baseline_key, "(all baseline chunks)");
    snprintf(pc.candidate_key, sizeof pc.candidate_key, "(all candidate chunks)");
    store_sim(sp, &vc, &pc, 1, "chunked_prefill");
    free(totals[0]);
    free(totals[1]);
    sp->res[2][1].samples_ms = NULL;
    assert_int_equal(sp->sv.run[0].n, 2);
    assert_int_equal(sp->sv.run[1].n, 3);
    /* reversed in the candidate run: chunk order comes from the context */
    ppb_stored_result first = sp->sv.run[1].items[0];
    sp->sv.run[1].items[0] = sp->sv.run[1].items[2];
    sp->sv.run[1].items[2] = first;
    ppb_verdict_recheck out = recheck(&sp->sv);
    if (!out.agree)
        fail_msg("%s", out.difference);
    assert_int_equal(sp->sv.pcs[0].sessions, 3);
    assert_true(sp->sv.pcs[0].looks_planned == 3);
    /* a chunk's sample is a sample of the prompt's total */
    sp->sv.run[0].items[1].r.samples_ms[0] *= 2;
    assert_differs(&sp->sv, "case 0 (");
    sim_free(sp);
    free(sp);
}

/* A comparison of the n cases' results r[i][0] (baseline) and r[i][1]
 * (candidate) decided and recorded as `compare` stores it, and read back with
 * its two runs' results (sv: free with ppb_stored_verdict_free). */
static void stored_compare(const ppb_run_compare_case *rcs, int n, ppb_case (*c)[2], ppb_result (*r)[2],
                           const ppb_run_compare_rules *rules, ppb_stored_verdict *sv)
{
    ppb_run_compare_report rep;
    ppb_err err = {{0}};
    memset(sv, 0, sizeof *sv);
    sv->rec = calloc(1, sizeof *sv->rec);
    sv->pcs = calloc((size_t)n, sizeof *sv->pcs);
    assert_int_equal(ppb_run_compare_decide(rcs, n, rules, NULL, &rep, &err), PPB_OK);
    assert_int_equal(ppb_run_compare_record(&rep, rcs, n, rules, sv->rec, sv->pcs, &err), PPB_OK);
    ppb_run_compare_report_free(&rep);
    sv->n_cases = sv->cap_cases = n;
    snprintf(sv->rec->kind, sizeof sv->rec->kind, "compare");
    sv->rec->baseline_run = 1, sv->rec->candidate_run = 2;
    for (int i = 0; i < n; i++) {
        snprintf(sv->pcs[i].baseline_key, sizeof sv->pcs[i].baseline_key, "%s", c[i][0].key);
        snprintf(sv->pcs[i].candidate_key, sizeof sv->pcs[i].candidate_key, "%s", c[i][0].key);
        for (int s = 0; s < 2; s++)
            assert_int_equal(ppb_stored_run_add(&sv->run[s], &c[i][s], &r[i][s], NULL), PPB_OK);
    }
}

/* compare: medians from the runs, each case's interval from its stored noise. */
static void test_a_compare_verdict_is_re_derived(void **state)
{
    (void)state;
    enum { N = 3 };
    ppb_run_compare_rules rules;
    ppb_run_compare_rules_default(&rules);
    ppb_case c[N][2];
    ppb_result r[N][2];
    double hist[N][8];
    ppb_run_compare_case rcs[N];
    sim_rng rng = {5};
    for (int i = 0; i < N; i++) {
        for (int s = 0; s < 2; s++) {
            c[i][s] = prefill_case(i, 0, 37);
            ppb_result_init(&r[i][s]);
            r[i][s].status = PPB_STATUS_OK;
            r[i][s].median_ms = (1 + i) * (s ? 1.2 - 0.1 * i : 1.0);
        }
        sim_lognormal(&rng, 1 + i, 0.02, hist[i], 8);
        ppb_run_compare_case_of(&c[i][0], &r[i][0], &r[i][1], &rcs[i]);
        rcs[i].history = hist[i];
        rcs[i].n_history = i == 2 ? 3 : 8; /* case 2: too little history */
    }
    ppb_stored_verdict sv;
    stored_compare(rcs, N, c, r, &rules, &sv);
    assert_int_equal(sv.rec->min_history, 5);
    assert_int_equal(sv.rec->max_history, 20);
    assert_string_equal(sv.pcs[2].state, "no-history");
    assert_true(sv.pcs[0].noise > 0 && sv.pcs[0].history == 8);
    ppb_verdict_recheck out = recheck(&sv);
    if (!out.agree)
        fail_msg("%s", out.difference);
    assert_int_equal(out.n_compared, 2);
    /* the noise is taken as stored: changed, the interval moves */
    sv.pcs[1].noise *= 2;
    assert_differs(&sv, "case 1 (");
    assert_differs(&sv, "interval's lower end");
    sv.pcs[1].noise /= 2;
    assert_true(recheck(&sv).agree);
    sv.run[1].items[0].r.median_ms *= 1.1;
    assert_differs(&sv, "case 0 (");
    assert_differs(&sv, "ratio");
    sv.run[1].items[0].r.median_ms /= 1.1;
    /* a noisy run's own spread (rule 3) is re-derived from its result; a verdict stored under rule 2
     * did not count it and is decided again without it */
    sv.run[1].items[0].r.status = PPB_STATUS_NOISY;
    sv.run[1].items[0].r.rel_noise = 0.25;
    assert_differs(&sv, "case 0 (");
    sv.run[1].items[0].r.status = PPB_STATUS_OK;
    assert_true(recheck(&sv).agree);
    sv.rec->rule_version = 2;
    sv.run[1].items[0].r.status = PPB_STATUS_NOISY;
    assert_true(recheck(&sv).agree);
    sv.run[1].items[0].r.status = PPB_STATUS_OK;
    sv.rec->rule_version = PPB_VERDICT_RULE_VERSION;
    sv.pcs[0].history_split = 7; /* as if two implementations, the second with one run: not judged */
    assert_differs(&sv, "state");
    sv.pcs[0].history_split = 0;
    assert_true(recheck(&sv).agree);
    sv.pcs[0].history = 4; /* below min_history now: not judged on time */
    assert_differs(&sv, "state");
    ppb_stored_verdict_free(&sv);
}

/* A stored comparison of 4 cases, each with 20 plain runs of 0.25% noise
 * about its level (1 + i ms), the baseline's medians at base[i] x that level
 * and the candidate's at it. */
static void stored_off_baseline(uint64_t seed, const double base[4], ppb_stored_verdict *sv)
{
    enum { N = 4, H = 20 };
    ppb_run_compare_rules rules;
    ppb_run_compare_rules_default(&rules);
    ppb_case c[N][2];
    ppb_result r[N][2];
    double hist[N][H];
    ppb_run_compare_case rcs[N];
    sim_rng rng = {seed};
    for (int i = 0; i < N; i++) {
        sim_lognormal(&rng, 1 + i, 0.0025, hist[i], H);
        for (int s = 0; s < 2; s++) {
            c[i][s] = prefill_case(i, 0, 37);
            ppb_result_init(&r[i][s]);
            r[i][s].status = PPB_STATUS_OK;
            r[i][s].median_ms = (1 + i) * (s ? 1.0 : base[i]);
        }
        ppb_run_compare_case_of(&c[i][0], &r[i][0], &r[i][1], &rcs[i]);
        rcs[i].history = hist[i];
        rcs[i].n_history = H;
    }
    stored_compare(rcs, N, c, r, &rules, sv);
}

/* compare with a baseline run off as a whole (rule 4): every case 3% slow
 * against 0.25% noise widened each case and the mean. Recompute has no
 * histories: it takes the shift as stored and agrees; with another stored
 * shift, or decided under rule 3 (nothing widened: the A/A pair ACCEPTs), it
 * differs. */
static void test_a_compare_off_baseline_is_re_derived(void **state)
{
    (void)state;
    ppb_stored_verdict sv;
    stored_off_baseline(11, (const double[4]){1.03, 1.03, 1.03, 1.03}, &sv);
    assert_true(fabs(sv.rec->baseline_shift - log(1.03)) < 0.004);
    assert_true(sv.rec->baseline_shift > PPB_RUN_COMPARE_UNUSUAL * sv.pcs[0].noise); /* off as a whole */
    assert_string_equal(sv.rec->verdict, "INCONCLUSIVE");
    ppb_verdict_recheck out = recheck(&sv);
    if (!out.agree)
        fail_msg("%s", out.difference);
    double shift = sv.rec->baseline_shift;
    sv.rec->baseline_shift = 0.02;
    assert_differs(&sv, "case 0 (");
    sv.rec->baseline_shift = NAN; /* not measured: nothing widened */
    assert_differs(&sv, "case 0 (");
    sv.rec->baseline_shift = shift;
    assert_true(isnan(sv.rec->candidate_shift) == 0 && fabs(sv.rec->candidate_shift) < 0.004); /* as usual */
    double cshift = sv.rec->candidate_shift;
    sv.rec->candidate_shift = 0.05; /* stored as moved as a whole: a note the verdict did not have */
    assert_differs(&sv, "reasons");
    sv.rec->candidate_shift = cshift;
    assert_true(recheck(&sv).agree);
    sv.rec->rule_version = 3;
    assert_differs(&sv, "case 0 (");
    ppb_stored_verdict_free(&sv);
}

/* Rule 5: a baseline case off its usual level, stored with its offset
 * (schema 22), decides again alike from the offset as stored; another offset,
 * none, or the verdict taken as rule 4 decide otherwise. */
static void test_a_compare_off_baseline_case_is_re_derived(void **state)
{
    (void)state;
    ppb_stored_verdict sv;
    stored_off_baseline(12, (const double[4]){1.0, 1.08, 1.0, 1.0}, &sv);
    assert_true(fabs(sv.pcs[1].baseline_offset - log(1.08)) < 0.01);
    assert_true(sv.pcs[0].baseline_offset == 0 && sv.pcs[2].baseline_offset == 0);
    assert_string_equal(sv.rec->verdict, "INCONCLUSIVE");
    ppb_verdict_recheck out = recheck(&sv);
    if (!out.agree)
        fail_msg("%s", out.difference);
    double off = sv.pcs[1].baseline_offset;
    sv.pcs[1].baseline_offset = 0.02;
    assert_differs(&sv, "case 1 (");
    sv.pcs[1].baseline_offset = NAN; /* not measured: nothing widened */
    assert_differs(&sv, "case 1 (");
    sv.pcs[1].baseline_offset = off;
    assert_true(recheck(&sv).agree);
    sv.rec->rule_version = 4;
    assert_differs(&sv, "case 1 (");
    ppb_stored_verdict_free(&sv);
}

/* ---- through a database ------------------------------------------------------ */

static int64_t begin_run(ppb_store *s, const char *label)
{
    static ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "smoke");
    snprintf(run.backend, sizeof run.backend, "cpu");
    snprintf(run.label, sizeof run.label, "%s", label);
    snprintf(run.kind, sizeof run.kind, "proposal");
    ppb_err err = {{0}};
    if (ppb_store_begin_run(s, &run, &err))
        fail_msg("begin_run: %s", err.msg);
    return run.id;
}

static void db_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static void test_a_stored_proposal_round_trips(void **state)
{
    (void)state;
    char db[] = "/tmp/ppb-vrecompute-XXXXXX.db";
    int fd = mkstemps(db, 3);
    assert_true(fd >= 0);
    close(fd);
    unlink(db);
    sim_proposal *sp = calloc(1, sizeof *sp);
    make_kernel_config(sp, 3, ratios, 0.02);
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_open(&s, db, &err), PPB_OK);
    int64_t run[2] = {begin_run(s, "base"), begin_run(s, "cand")};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            ppb_sample_tags tags = {sp->seq[i].session[k], sp->seq[i].round[k]};
            assert_int_equal(ppb_store_put_tagged_result(s, run[k], &sp->side[i][k], &sp->res[i][k], &tags, &err),
                             PPB_OK);
        }
    ppb_proposal_record *rec = sp->sv.rec;
    rec->baseline_run = run[0], rec->candidate_run = run[1];
    assert_int_equal(ppb_store_put_proposal(s, rec, sp->sv.pcs, 3, &err), PPB_OK);
    int64_t id = rec->id;
    /* kv_capacity: arithmetic, nothing to recompute */
    ppb_proposal_record *kv = calloc(1, sizeof *kv);
    snprintf(kv->name, sizeof kv->name, "kv");
    snprintf(kv->kind, sizeof kv->kind, "kv_capacity");
    snprintf(kv->verdict, sizeof kv->verdict, "ACCEPT");
    kv->geomean_ratio = kv->geomean_lo = kv->geomean_hi = NAN;
    assert_int_equal(ppb_store_put_proposal(s, kv, NULL, 0, &err), PPB_OK);
    int64_t kv_id = kv->id;
    free(kv);
    ppb_store_close(s);

    ppb_stored_verdict sv;
    ppb_verdict_recheck out;
    assert_int_equal(ppb_store_open_readonly(&s, db, &err), PPB_OK);
    assert_int_equal(ppb_stored_verdict_load(s, id, &sv, &err), PPB_OK);
    assert_int_equal(sv.n_cases, 3);
    assert_non_null(sv.run[0].items[0].session);
    assert_int_equal(ppb_verdict_recompute(&sv, &out, &err), PPB_OK);
    if (!out.agree)
        fail_msg("%s", out.difference);
    assert_int_equal(sv.rec->rule_version, PPB_VERDICT_RULE_VERSION);
    assert_true(sv.rec->alpha == 0.05 && sv.rec->seed == 1 && sv.rec->bootstrap_reps == 2000);
    assert_int_equal(sv.rec->max_rounds, 8);
    ppb_stored_verdict_free(&sv);
    assert_int_equal(ppb_stored_verdict_load(s, kv_id, &sv, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "kv_capacity"));
    ppb_stored_verdict_free(&sv);
    assert_int_equal(ppb_stored_verdict_load(s, 99, &sv, &err), PPB_EINPUT);
    ppb_stored_verdict_free(&sv);
    ppb_store_close(s);

    /* a session changed in place: the row check refuses the result */
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE samples SET session = (session + 1) %% 3 WHERE idx = 0 AND result_id = "
                              "(SELECT min(id) FROM results WHERE run_id = %lld)", (long long)run[0]);
    db_exec(db, sql);
    assert_int_equal(ppb_store_open_readonly(&s, db, &err), PPB_OK);
    assert_int_equal(ppb_stored_verdict_load(s, id, &sv, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "changed after ppbench wrote it"));
    ppb_stored_verdict_free(&sv);
    ppb_store_close(s);
    /* read unchecked (as rows before schema 11), the spread moves */
    db_exec(db, "UPDATE results SET row_check = NULL");
    assert_int_equal(ppb_store_open_readonly(&s, db, &err), PPB_OK);
    assert_int_equal(ppb_stored_verdict_load(s, id, &sv, &err), PPB_OK);
    assert_int_equal(ppb_verdict_recompute(&sv, &out, &err), PPB_OK);
    assert_false(out.agree);
    assert_non_null(strstr(out.difference, "case 0 ("));
    ppb_stored_verdict_free(&sv);
    ppb_store_close(s);
    /* partly tagged samples are damaged */
    snprintf(sql, sizeof sql, "UPDATE samples SET round = NULL WHERE idx = 1 AND result_id = "
                              "(SELECT min(id) FROM results WHERE run_id = %lld)", (long long)run[1]);
    db_exec(db, sql);
    assert_int_equal(ppb_store_open_readonly(&s, db, &err), PPB_OK);
    assert_int_equal(ppb_stored_verdict_load(s, id, &sv, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "have a session and a round"));
    ppb_stored_verdict_free(&sv);
    ppb_store_close(s);
    /* stored before schema 13 */
    db_exec(db, "UPDATE proposals SET rule_version = NULL");
    assert_int_equal(ppb_store_open_readonly(&s, db, &err), PPB_OK);
    assert_int_equal(ppb_stored_verdict_load(s, id, &sv, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "stored before ppbench recorded what a verdict used; it cannot be recomputed"));
    ppb_stored_verdict_free(&sv);
    ppb_store_close(s);

    sim_free(sp);
    free(sp);
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof path, "%s%s", db, suffix[i]);
        unlink(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_kernel_config_verdict_is_re_derived),
        cmocka_unit_test(test_each_rule_version_spends_alpha_its_own_way),
        cmocka_unit_test(test_a_changed_sample_is_a_difference),
        cmocka_unit_test(test_a_changed_session_changes_the_spread),
        cmocka_unit_test(test_the_looks_come_from_the_rounds_and_the_design),
        cmocka_unit_test(test_stored_outcomes_are_checked),
        cmocka_unit_test(test_the_stored_rules_decide_it),
        cmocka_unit_test(test_a_bootstrap_verdict_is_re_derived),
        cmocka_unit_test(test_a_chunked_verdict_is_re_derived),
        cmocka_unit_test(test_a_compare_verdict_is_re_derived),
        cmocka_unit_test(test_a_compare_off_baseline_is_re_derived),
        cmocka_unit_test(test_a_compare_off_baseline_case_is_re_derived),
        cmocka_unit_test(test_the_samples_cost_is_re_derived),
        cmocka_unit_test(test_a_stored_proposal_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
