/* The rules that carry a proposal's design into its verdict (harness/run/abrun.c,
 * harness/decide/ab_cases.c): the stopping rule runs at the verdict's own
 * simultaneous level, alpha / (pairs + 1), with the verdict's boundaries, and a
 * case's interval spends what its stopping look spent (alpha spending). Each,
 * changed, once passed every other decide test. The functions are pinned, and so is their use: a
 * small proposal run on the CPU backend, whose stored cases say which alpha
 * each pair's stopping rule ran at and which its interval spent. Also how
 * measured pairs become the verdict's cases (ab_cases), a chunked prompt's
 * included. */
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

#include "ab_cases.h"
#include "abrun.h"
#include "verdict_recompute.h"

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
    /* the verdict's boundaries, so sampling goes on until each is settled */
    assert_true(fabs(d.min_gain - ppb_verdict_gain_needed(&p.rules)) < 1e-15);
    assert_true(fabs(d.tolerance - ppb_verdict_tolerance(&p.rules)) < 1e-15);
    p.rules.min_gain = 0.04, p.rules.max_regression = 0.07;
    assert_true(fabs(ppb_ab_pair_design(&p, 10, 2, 77).min_gain - 0.04) < 1e-15);
    assert_true(fabs(ppb_ab_pair_design(&p, 10, 2, 77).tolerance - 0.07) < 1e-15);
    assert_int_equal(d.min_rounds, 3);
    assert_int_equal(d.max_rounds, 20);
    assert_int_equal(d.samples_per_round, 5);
    assert_int_equal(d.sessions, 2);
    assert_true(d.budget_ms == 1500);
    assert_true(d.seed == 77);
}

/* The case's interval spends what the stopping look spent, as a share of the
 * design's alpha: not all of it (the earlier looks spent some), not one
 * look's share of the looks taken or planned. */
static void test_intervals_spend_what_the_stopping_look_spent(void **state)
{
    (void)state;
    ppb_seq_design d = {.alpha = 0.01};
    ppb_seq_result r;
    memset(&r, 0, sizeof r);
    r.looks_planned = 5, r.looks_taken = 2;
    r.look_alpha = 0.0075, r.alpha_spent = 0.008;
    assert_true(fabs(ppb_ab_case_look_share(&r, &d) - 0.75) < 1e-12);
}

/* ---- measured pairs into the verdict's cases (ab_cases) ---------------- */

static void result_with(ppb_result *r, int status, double *samples, int n, const char *reason)
{
    ppb_result_init(r);
    r->status = status;
    r->samples_ms = samples;
    r->n_samples = n;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

/* One pair, one case: ok and noisy sides give their samples (noisy: correct,
 * timed, only short of its noise target); refused is infeasible, wrong is
 * incorrect, each with its reason; the sampling only for a pair sampled as one. */
static void test_a_pair_becomes_a_case(void **state)
{
    (void)state;
    double a[3] = {1, 2, 3}, b[2] = {4, 5};
    ppb_result r[2];
    result_with(&r[0], PPB_STATUS_OK, a, 3, "");
    result_with(&r[1], PPB_STATUS_NOISY, b, 2, "noise target missed");
    ppb_ab_pair_view v = {.key = "shape", .weight = 2.5, .present = {1, 1}, .res = {&r[0], &r[1]},
                          .sessions = 3, .look_share = 0.75, .between_sd = 0.01};
    ppb_verdict_case vc;
    ppb_ab_pair_case(&v, &vc);
    assert_string_equal(vc.key, "shape");
    assert_true(vc.weight == 2.5);
    assert_ptr_equal(vc.baseline, a);
    assert_int_equal(vc.n_baseline, 3);
    assert_ptr_equal(vc.candidate, b);
    assert_int_equal(vc.n_candidate, 2);
    assert_true(vc.baseline_feasible && vc.candidate_feasible && vc.baseline_correct && vc.candidate_correct);
    assert_null(vc.baseline_reason);
    assert_string_equal(vc.candidate_reason, "noise target missed");
    assert_true(vc.look_share == 0.75);
    assert_int_equal(vc.sessions, 3);
    assert_true(vc.between_sd == 0.01);
    /* refused and wrong sides: no samples, and why */
    result_with(&r[0], PPB_STATUS_WRONG, a, 3, "max error 3");
    result_with(&r[1], PPB_STATUS_REFUSED, NULL, 0, "needs 200 KiB");
    v.sessions = 0; /* not sampled as a pair */
    ppb_ab_pair_case(&v, &vc);
    assert_null(vc.baseline);
    assert_int_equal(vc.n_baseline, 0);
    assert_false(vc.baseline_correct);
    assert_true(vc.baseline_feasible);
    assert_false(vc.candidate_feasible);
    assert_string_equal(vc.candidate_reason, "needs 200 KiB");
    assert_true(vc.look_share == 0);
    assert_int_equal(vc.sessions, 0);
}

/* A chunked prompt: sample j of a side is the sum of its chunks' sample j
 * over the fewest samples a chunk has; its sampling the chunks' smallest look
 * share, fewest sessions and largest spread; its design record the most looks
 * taken and planned, the largest stopping alpha and the smallest look share. */
static void test_chunks_become_one_case(void **state)
{
    (void)state;
    double c0[2][4] = {{1, 2, 3, 4}, {10, 20, 30, 40}}, c1[2][3] = {{100, 200, 300}, {1000, 2000, 3000}},
           c2[4] = {7, 7, 7, 7};
    ppb_result r[3][2];
    result_with(&r[0][0], PPB_STATUS_OK, c0[0], 4, "");
    result_with(&r[0][1], PPB_STATUS_OK, c0[1], 4, "");
    result_with(&r[1][0], PPB_STATUS_OK, c1[0], 3, "");
    result_with(&r[1][1], PPB_STATUS_OK, c1[1], 3, "");
    result_with(&r[2][1], PPB_STATUS_OK, c2, 4, ""); /* the candidate's third chunk, timed alone */
    ppb_ab_pair_view v[3] = {
        {.key = "p", .present = {1, 1}, .res = {&r[0][0], &r[0][1]}, .sessions = 3, .look_share = 0.9, .between_sd = 0.02,
         .looks_taken = 1, .looks_planned = 2, .stop_alpha = 0.01},
        {.key = "p", .present = {1, 1}, .res = {&r[1][0], &r[1][1]}, .sessions = 2, .look_share = 0.6, .between_sd = 0.01,
         .looks_taken = 3, .looks_planned = 5, .stop_alpha = 0.02},
        {.key = "p", .present = {0, 1}, .res = {NULL, &r[2][1]}},
    };
    ppb_verdict_case vc;
    double *totals[2];
    assert_int_equal(ppb_ab_chunked_case(v, 3, "prompt", totals, &vc), PPB_OK);
    assert_string_equal(vc.key, "prompt");
    assert_true(vc.weight == 1.0);
    assert_int_equal(vc.n_baseline, 3);
    assert_int_equal(vc.n_candidate, 3);
    for (int j = 0; j < 3; j++) {
        assert_true(vc.baseline[j] == c0[0][j] + c1[0][j]);
        assert_true(vc.candidate[j] == c0[1][j] + c1[1][j] + c2[j]);
    }
    assert_true(vc.look_share == 0.6); /* the smallest: the total's interval is no narrower than a chunk's */
    assert_int_equal(vc.sessions, 2);
    assert_true(vc.between_sd == 0.02);
    free(totals[0]);
    free(totals[1]);
    ppb_proposal_case pc;
    memset(&pc, 0, sizeof pc);
    ppb_ab_case_design(v, 3, &pc);
    assert_int_equal(pc.looks_taken, 3);
    assert_int_equal(pc.looks_planned, 5);
    assert_true(pc.stop_alpha == 0.02);
    assert_true(pc.look_share == 0.6);
    /* a chunk without samples leaves its side without any; a wrong chunk makes its side wrong */
    result_with(&r[1][0], PPB_STATUS_WRONG, NULL, 0, "chunk 1 wrong");
    assert_int_equal(ppb_ab_chunked_case(v, 3, "prompt", totals, &vc), PPB_OK);
    assert_int_equal(vc.n_baseline, 0);
    assert_false(vc.baseline_correct);
    assert_string_equal(vc.baseline_reason, "chunk 1 wrong");
    assert_int_equal(vc.n_candidate, 3);
    free(totals[0]);
    free(totals[1]);
}

static const char *source_dir(void)
{
    const char *d = getenv("PPB_SOURCE_DIR");
    return d && d[0] ? d : PPB_SOURCE_DIR;
}

typedef struct case_list {
    ppb_proposal_case c[16];
    int n;
} case_list;

static int keep_case(void *ctx, const ppb_proposal_case *c)
{
    case_list *l = ctx;
    if (l->n < 16)
        l->c[l->n++] = *c;
    return 0;
}

/* A two-pair proposal on the CPU backend in a scratch folder: smoke.yaml's
 * prefill shapes at batch 1 without context, 16/32 against 32/16 with the
 * candidate's times x10, under `sampling` (a YAML flow map). The caller reads
 * the store and the log in dir, then calls scratch_done. */
typedef struct scratch {
    char dir[64], db[256], log[256];
    ppb_proposal *p;
    ppb_propose_outcome *out;
} scratch;

static void propose_two_pairs(scratch *x, const char *sampling)
{
    snprintf(x->dir, sizeof x->dir, "/tmp/ppb-abrun-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    char yaml[256], cache[256];
    snprintf(yaml, sizeof yaml, "%s/p.yaml", x->dir);
    snprintf(x->db, sizeof x->db, "%s/p.db", x->dir);
    snprintf(x->log, sizeof x->log, "%s/log.txt", x->dir);
    snprintf(cache, sizeof cache, "%s/cache", x->dir);
    setenv("PPBENCH_KERNEL_CACHE", cache, 1);
    setenv("PPBENCH_REFERENCE_CACHE", "off", 1);
    FILE *f = fopen(yaml, "w");
    assert_non_null(f);
    fprintf(f,
            "name: design-glue\nkind: kernel_config\nsuite: %s/suites/smoke.yaml\n"
            "filter: \"dtype=bf16,head_dim=64,page_size=16,sliding_window=0,batch=1,context_len=0\"\n"
            "baseline: {block_m: 16, block_n: 32, num_warps: 4}\ncandidate: {block_m: 32, block_n: 16, num_warps: 4}\n"
            "rules: {min_gain: 0.0, max_regression: 0.5, threshold: 0.01, alpha: 0.05}\nsampling: %s\n",
            source_dir(), sampling);
    fclose(f);
    x->p = calloc(1, sizeof *x->p);
    ppb_err err = {{0}};
    if (ppb_proposal_load(yaml, x->p, &err))
        fail_msg("%s", err.msg);
    FILE *log = fopen(x->log, "w");
    ppb_propose_options o = {.db_path = x->db, .backend = "cpu", .log = log, .candidate_slowdown = 9};
    x->out = calloc(1, sizeof *x->out);
    if (ppb_propose_run(x->p, &o, x->out, &err))
        fail_msg("propose: %s", err.msg);
    fclose(log);
}

/* How many times the propose log has the text */
static int logged_times(const scratch *x, const char *text)
{
    char buf[8192];
    FILE *f = fopen(x->log, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    int times = 0;
    for (const char *p = strstr(buf, text); p; p = strstr(p + 1, text))
        times++;
    return times;
}

static int logged(const scratch *x, const char *line) { return logged_times(x, line) > 0; }

/* The pairs were timed in the order of the difference their checked launches
 * showed, largest first: each "KEY: timed" line's key, looked up among the
 * check lines ("KEY: ... one launch each: candidate xR)"), has |log R| no
 * larger than the one timed before it. */
static void assert_timed_by_apparent_difference(const scratch *x)
{
    FILE *f = fopen(x->log, "r");
    assert_non_null(f);
    char line[1024], keys[8][256];
    double ratio[8];
    int n = 0;
    double last = INFINITY;
    while (fgets(line, sizeof line, f)) {
        char *colon = strstr(line, ": ");
        const char *r = strstr(line, "one launch each: candidate x");
        if (!colon || strncmp(line, "  [", 3) != 0)
            continue;
        *colon = '\0';
        const char *key = strchr(line, ']') + 2;
        if (r && n < 8) {
            snprintf(keys[n], sizeof keys[n], "%s", key);
            ratio[n++] = strtod(r + strlen("one launch each: candidate x"), NULL);
        } else if (strncmp(colon + 2, "timed (", 7) == 0) {
            int k = 0;
            while (k < n && strcmp(keys[k], key) != 0)
                k++;
            if (k == n)
                fail_msg("'%s' was timed without a checked launch ratio", key);
            assert_true(fabs(log(ratio[k])) <= last);
            last = fabs(log(ratio[k]));
        }
    }
    fclose(f);
    assert_true(n > 0);
}

/* The stored verdict is what the store's samples decide again. */
static void assert_recomputes(ppb_store *s, int64_t id)
{
    ppb_stored_verdict sv;
    ppb_verdict_recheck check;
    ppb_err err;
    assert_int_equal(ppb_stored_verdict_load(s, id, &sv, &err), PPB_OK);
    assert_int_equal(ppb_verdict_recompute(&sv, &check, &err), PPB_OK);
    if (!check.agree)
        fail_msg("recomputed: %s", check.difference);
    ppb_stored_verdict_free(&sv);
}

static void scratch_done(scratch *x)
{
    ppb_propose_outcome_free(x->out);
    free(x->out);
    free(x->p);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", x->dir);
    assert_int_equal(system(cmd), 0);
}

/* Two pairs on the CPU backend, the candidate's times x10 (a known effect: the
 * first look resolves), looks planned at rounds 2, 4, 8 and 16. Each pair's
 * stopping rule ran at alpha / 3 (2 cases and the mean); each interval spent
 * the share of it its stopping look spent, which at the first look, with
 * little of the budget used, is (2 / 16)^2 of it, far from all; and the
 * stored verdict is what the store's samples decide again. */
static void test_a_proposal_carries_its_design_into_the_verdict(void **state)
{
    (void)state;
    scratch x;
    /* each pair to its own end: the design is what is pinned here */
    propose_two_pairs(&x, "{samples_per_round: 3, min_rounds: 2, max_rounds: 16, sessions: 3, budget_ms: 60000,"
                          " stop_when_settled: false}");
    const ppb_propose_outcome *out = x.out;
    const ppb_proposal_record *rec = &out->rec;
    const ppb_verdict_report rep = out->report;
    assert_int_equal(rep.n_cases, 2);
    assert_int_equal(rep.n_compared, 2);
    assert_non_null(out->store); /* handed over open, for the documents */
    ppb_store *s = NULL;
    ppb_err err;
    assert_int_equal(ppb_store_open_readonly(&s, x.db, &err), PPB_OK);
    case_list got = {.n = 0};
    assert_int_equal(ppb_store_each_proposal_case(s, rec->id, keep_case, &got, &err), PPB_OK);
    assert_int_equal(got.n, 2);
    /* the cases handed over are those stored: the caller need not read them back */
    assert_int_equal(out->n_cases, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(out->cases[i].candidate_key, got.c[i].candidate_key);
        assert_string_equal(out->cases[i].cls, got.c[i].cls);
        assert_true(out->cases[i].ratio == got.c[i].ratio && out->cases[i].alpha == got.c[i].alpha);
        assert_true(out->cases[i].look_share == got.c[i].look_share);
    }
    int stopped_early = 0;
    for (int i = 0; i < 2; i++) {
        const ppb_proposal_case *pc = &got.c[i];
        assert_true(fabs(pc->stop_alpha - 0.05 / 3) < 1e-15);   /* the stopping rule's level */
        assert_int_equal(pc->looks_planned, 4);
        assert_true(pc->looks_taken >= 1 && pc->looks_taken <= 4);
        stopped_early += pc->looks_taken < pc->looks_planned;
        assert_int_equal(pc->sessions, 3);
        /* the interval's level: what the stopping look spent of the family's share */
        assert_true(pc->look_share > 0 && pc->look_share <= 1);
        if (pc->looks_taken == 1 && pc->look_share > 0.05)
            fail_msg("case %d stopped at its first look, which spent %g of its alpha", i, pc->look_share);
        const double case_alpha = 0.05 / 3 * pc->look_share;
        if (fabs(pc->alpha - case_alpha) > 1e-15 || fabs(rep.cases[i].alpha - case_alpha) > 1e-15 ||
            fabs(rep.cases[i].interval.level - (1 - case_alpha)) > 1e-12)
            fail_msg("case %d: alpha stored %.17g, reported %.17g, level %.17g; want %.17g (looks %d of %d)", i,
                     pc->alpha, rep.cases[i].alpha, rep.cases[i].interval.level, case_alpha, pc->looks_taken,
                     pc->looks_planned);
        assert_string_equal(pc->cls, "slower");
    }
    assert_true(stopped_early > 0); /* so the planned looks differ from the taken */
    assert_string_equal(rec->verdict, "REJECT");
    assert_recomputes(s, rec->id);
    ppb_store_close(s);
    scratch_done(&x);
}

/* A proposal whose pairs each settle a REJECT alone (the candidate x10, past
 * the 50% tolerance): both are checked, then the one timed first settles it
 * and the other is not timed (sampling.stop_when_settled, the default). Which
 * comes first is the checked launches' guess (unscaled: the known effect
 * scales samples only), so the test takes either. The verdict's cost names the
 * pair, the untimed pair's results are stored as skipped saying why, it stays
 * in the verdict's family of intervals (the timed pair's interval has the
 * level of a two-case verdict, as its stopping rule had), and the store
 * decides the same again. Turned off, both pairs are sampled. */
static void run_settling(int stop_when_settled, ppb_proposal_record *rec, ppb_proposal_case cases[2],
                         ppb_stored_verdict *sv)
{
    scratch x;
    char sampling[200];
    snprintf(sampling, sizeof sampling,
             "{samples_per_round: 1, min_rounds: 1, max_rounds: 16, sessions: 1, budget_ms: 60000,"
             " stop_when_settled: %s}", stop_when_settled ? "true" : "false");
    propose_two_pairs(&x, sampling);
    assert_int_equal(x.p->sampling.stop_when_settled, stop_when_settled);
    assert_int_equal(logged(&x, "  timing 2 pairs, the largest difference the checked launches showed first\n"), 1);
    char line[200];
    snprintf(line, sizeof line, "  the verdict is REJECT whatever the other pairs show (pair %d): the pair left is "
             "checked, not timed\n", x.out->rec.cost.settled_by_pair);
    assert_int_equal(logged(&x, line), stop_when_settled);
    assert_int_equal(logged_times(&x, ": timed ("), stop_when_settled ? 1 : 2);
    assert_timed_by_apparent_difference(&x);
    assert_int_equal(x.out->report.family_size, 3); /* 2 cases and the mean, timed or not */
    assert_int_equal(x.out->n_cases, 2);
    ppb_store *s = NULL;
    ppb_err err;
    assert_int_equal(ppb_store_open_readonly(&s, x.db, &err), PPB_OK);
    assert_int_equal(ppb_store_get_proposal(s, x.out->rec.id, rec, &err), PPB_OK); /* as stored */
    memcpy(cases, x.out->cases, 2 * sizeof *cases);
    assert_recomputes(s, rec->id);
    assert_int_equal(ppb_stored_verdict_load(s, rec->id, sv, &err), PPB_OK);
    ppb_store_close(s);
    scratch_done(&x);
}

/* The stored result of a case's side (0 baseline, 1 candidate). */
static const ppb_stored_result *find_stored(const ppb_stored_verdict *sv, int side, const ppb_proposal_case *pc)
{
    const char *key = side ? pc->candidate_key : pc->baseline_key;
    for (int i = 0; i < sv->run[side].n; i++)
        if (strcmp(sv->run[side].items[i].c.key, key) == 0)
            return &sv->run[side].items[i];
    fail_msg("no stored result for '%s'", key);
    return NULL;
}

static void test_a_settled_reject_cuts_the_later_pairs_short(void **state)
{
    (void)state;
    static ppb_proposal_record rec;
    ppb_proposal_case c[2];
    ppb_stored_verdict sv;
    run_settling(1, &rec, c, &sv);
    assert_string_equal(rec.verdict, "REJECT");
    int settled = rec.cost.settled_by_pair - 1, other = 1 - settled;
    assert_true(settled == 0 || settled == 1);
    assert_string_equal(c[settled].cls, "slower");
    assert_string_equal(c[other].state, "no-samples");
    assert_int_equal(c[other].looks_taken, 0);
    char why[100];
    snprintf(why, sizeof why, "checked, not timed: pair %d had settled the proposal's REJECT", settled + 1);
    for (int side = 0; side < 2; side++) {   /* stored as skipped, saying why; checked first */
        const ppb_stored_result *r = find_stored(&sv, side, &c[other]);
        assert_int_equal(r->r.status, PPB_STATUS_SKIPPED);
        assert_int_equal(r->r.n_samples, 0);
        assert_string_equal(r->r.reason, why);
        assert_true(r->r.check.checked && r->r.check.pass);
    }
    ppb_stored_verdict_free(&sv);
    run_settling(0, &rec, c, &sv);
    assert_string_equal(rec.verdict, "REJECT");
    assert_int_equal(rec.cost.settled_by_pair, 0);
    for (int i = 0; i < 2; i++) {                /* both sampled */
        assert_string_equal(c[i].state, "compared");
        assert_true(c[i].looks_taken >= 1);
    }
    ppb_stored_verdict_free(&sv);
}

/* A slow pair's rounds shrink so that the rounds of its first three looks fit
 * its budget: the proposal's samples per round, or as many as fit (at least 1). */
static void test_slow_pairs_take_fewer_samples_a_round(void **state)
{
    (void)state;
    ppb_sampling sp;
    ppb_sampling_default(&sp);
    sp.samples_per_round = 5, sp.min_rounds = 3, sp.max_rounds = 160, sp.budget_ms = 15000;
    /* looks at rounds 3, 6, 12, ...: 12 rounds must fit */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 100), 5);    /* 12 rounds of 5: 6 s */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 250), 5);    /* exactly the budget */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 300), 4);
    assert_int_equal(ppb_ab_samples_per_round(&sp, 1000), 1);   /* 1.25 a round would fit */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 2700), 1);   /* 0.45 s x 6 units: 40 s at 5 a round */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 1e6), 1);    /* never none */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 0), 5);      /* unknown: the proposal's */
    assert_int_equal(ppb_ab_samples_per_round(&sp, NAN), 5);
    /* fewer looks planned (3 and 5): the rounds up to the last must fit */
    sp.max_rounds = 5;
    assert_int_equal(ppb_ab_samples_per_round(&sp, 500), 5);    /* 15000 / (5 x 500) = 6 */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 1000), 3);
    sp.max_rounds = 3;                                          /* one look */
    assert_int_equal(ppb_ab_samples_per_round(&sp, 1000), 5);
    assert_int_equal(ppb_ab_samples_per_round(&sp, 1200), 4);

    /* at the call site: 500 rounds (one look) cannot fit a 1 ms budget for any kernel slower than
     * 2 us a slot, so every pair takes one sample a unit per round, and stops at that look (the budget spent) */
    scratch x;
    propose_two_pairs(&x, "{samples_per_round: 4, min_rounds: 500, max_rounds: 500, sessions: 1, budget_ms: 1,"
                          " stop_when_settled: false}");
    ppb_store *s = NULL;
    ppb_err err;
    assert_int_equal(ppb_store_open_readonly(&s, x.db, &err), PPB_OK);
    ppb_stored_verdict sv;
    assert_int_equal(ppb_stored_verdict_load(s, x.out->rec.id, &sv, &err), PPB_OK);
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < sv.run[side].n; i++) {
            const ppb_stored_result *r = &sv.run[side].items[i];
            int rounds = 0;
            for (int k = 0; k < r->r.n_samples; k++)
                rounds = r->round[k] > rounds ? r->round[k] : rounds;
            assert_int_equal(rounds, 500);
            assert_int_equal(r->r.n_samples, rounds); /* one session, one sample a round */
        }
    ppb_stored_verdict_free(&sv);
    assert_recomputes(s, x.out->rec.id); /* the store's samples decide the same, whatever a round held */
    ppb_store_close(s);
    scratch_done(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_stopping_rule_runs_at_the_verdicts_level),
        cmocka_unit_test(test_intervals_spend_what_the_stopping_look_spent),
        cmocka_unit_test(test_a_pair_becomes_a_case),
        cmocka_unit_test(test_chunks_become_one_case),
        cmocka_unit_test(test_a_proposal_carries_its_design_into_the_verdict),
        cmocka_unit_test(test_a_settled_reject_cuts_the_later_pairs_short),
        cmocka_unit_test(test_slow_pairs_take_fewer_samples_a_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
