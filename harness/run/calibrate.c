#include "calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "provenance.h"
#include "stats.h"
#include "suite.h"

/* The baseline median of one case of a stored run (the case's length). */
typedef struct median_lookup {
    const char *key;
    double median;
} median_lookup;

static int find_median(void *ctx, const ppb_case *c, const ppb_result *r)
{
    median_lookup *m = ctx;
    if (strcmp(c->key, m->key) != 0)
        return 0;
    m->median = r->median_ms;
    return 1;
}

typedef struct tally_ctx {
    ppb_calibrate_tally *t;
    double min_case_ms;
    ppb_store *s;
    int64_t base_run;
} tally_ctx;

static int tally_case(void *ctx, const ppb_proposal_case *c)
{
    tally_ctx *k = ctx;
    if (strcmp(c->state, "compared") != 0)
        return 0;
    int slower = strcmp(c->cls, "slower") == 0, faster = strcmp(c->cls, "faster") == 0;
    k->t->pairs++;
    k->t->faster += faster;
    k->t->slower += slower;
    median_lookup m = {c->baseline_key, 0};
    ppb_err ignored;
    ppb_store_each_result(k->s, k->base_run, find_median, &m, &ignored);
    if (m.median >= k->min_case_ms) {
        k->t->long_pairs++;
        k->t->long_faster += faster;
        k->t->long_slower += slower;
    }
    return 0;
}

/* Progress over the whole calibration: every proposal measures the same
 * cases, so each takes about as long as the ones before, and the total is
 * the proposals each effect needs at the pairs a proposal compares. */
typedef struct progress {
    const ppb_calibrate_options *co;
    double t0_ms;
    int proposals, pairs;   /* done, over all effects */
} progress;

/* Proposals the whole calibration takes at `per` compared pairs a proposal. */
static int planned_proposals(const ppb_calibrate_options *co, int per)
{
    int n = (co->aa_pairs + per - 1) / per;
    for (int i = 0; i < co->n_effects; i++)
        n += (co->effect_pairs + per - 1) / per;
    return n;
}

static void progress_line(const progress *g, FILE *log, const char *name, const char *verdict, int pairs, int want)
{
    if (!log)
        return;
    int per = g->pairs / g->proposals;   /* >= 1: a proposal that compares none ends the calibration */
    int total = planned_proposals(g->co, per);
    if (total < g->proposals)
        total = g->proposals;
    double el = (ppb_monotonic_ms() - g->t0_ms) / 1e3, eta = el / g->proposals * (total - g->proposals);
    fprintf(log, "calibrate: %s: verdict %s, %d of %d pairs; proposal %d of about %d, %02d:%02d elapsed, ETA %02d:%02d "
            "(then two separate runs)\n", name, verdict, pairs, want, g->proposals, total, (int)el / 60, (int)el % 60,
            (int)eta / 60, (int)eta % 60);
    fflush(log);
}

/* The one config (kernel knobs) the suite's filtered cases share, as a side
 * that gives every knob: a side's unnamed knobs take their defaults, not the
 * suite's (docs/PROPOSALS.md), so the work builds must be told the config. */
static int one_config(const ppb_calibrate_options *co, ppb_side *side, ppb_err *err)
{
    ppb_suite suite;
    ppb_case_list cases = {0};
    int rc = ppb_suite_load(co->suite_path, &suite, err);
    if (rc)
        return rc;
    if (!(rc = ppb_matrix_expand(&suite, &cases, err)) && co->filter && co->filter[0])
        rc = ppb_matrix_filter(&cases, co->filter, err);
    memset(side, 0, sizeof *side);
    for (int i = 0; i < cases.n && !rc; i++)
        for (int f = 0; f < PPB_F_COUNT && !rc; f++) {
            const ppb_field_info *fi = ppb_field_get(f);
            if (!fi->is_config || f == PPB_F_IMPL || !((fi->kernels >> cases.items[i].kernel) & 1u))
                continue;
            int v = ppb_case_get(&cases.items[i], f);
            if (i == 0)
                side->given |= 1u << f, side->value[f] = v;
            else if (side->value[f] != v)
                rc = ppb_fail(err, PPB_EINPUT, "--work-impl compares two builds of one implementation on one config, "
                              "and the filtered cases of %s have more than one %s (narrow --filter)",
                              co->suite_path, ppb_field_get(f)->name);
        }
    if (!rc && cases.n == 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s: --filter selects no case", co->suite_path);
    ppb_case_list_free(&cases);
    ppb_suite_free(&suite);
    return rc;
}

/* Side `side` runs plugin:<work_impl><percent>. */
static int set_work_impl(ppb_side *side, const char *work_impl, long percent, ppb_err *err)
{
    char name[PPB_FIELD_TEXT_MAX];
    int impl = 0;
    snprintf(name, sizeof name, "plugin:%s%ld", work_impl, percent);
    int rc = ppb_field_parse_value(PPB_F_IMPL, name, &impl, err);
    if (rc)
        return rc;
    side->given |= 1u << PPB_F_IMPL;
    side->value[PPB_F_IMPL] = impl;
    return PPB_OK;
}

/* The sides of an effect as real work: both on the filtered cases' config
 * (`config`), the candidate's build doing `effect` more. */
static int work_sides(const ppb_calibrate_options *co, const ppb_side *config, ppb_proposal *p, double effect,
                      ppb_err *err)
{
    p->baseline = p->candidate = *config;
    int rc = set_work_impl(&p->baseline, co->work_impl, 0, err);
    return rc ? rc : set_work_impl(&p->candidate, co->work_impl, lround(100 * effect), err);
}

/* Before anything runs: the one config the work builds are compared on, and
 * every effect a whole percent (the builds are made per percent). */
static int work_config(const ppb_calibrate_options *co, ppb_side *config, ppb_err *err)
{
    for (int i = 0; i < co->n_effects; i++)
        if (fabs(100 * co->effects[i] - (double)lround(100 * co->effects[i])) > 1e-9)
            return ppb_fail(err, PPB_EINPUT, "--work-impl: effect %g is not a whole percent (the %s builds are one "
                            "per percent)", co->effects[i], co->work_impl);
    return one_config(co, config, err);
}

/* Proposals of one effect (0: A/A) until `pairs` pairs are compared; with
 * `config` (--work-impl) the effect is real work, else scaled times. */
static int tally_effect(const ppb_calibrate_options *co, const ppb_side *config, ppb_propose_options *o,
                        ppb_proposal *p, double effect, int pairs, ppb_calibrate_tally *t, progress *g, ppb_err *err)
{
    memset(t, 0, sizeof *t);
    t->effect = effect;
    o->candidate_slowdown = config ? 0 : effect;
    if (config) {
        int rc = work_sides(co, config, p, effect, err);
        if (rc)
            return rc;
    }
    ppb_propose_outcome *out = calloc(1, sizeof *out);
    int rc = out ? PPB_OK : ppb_fail(err, PPB_ENOMEM, "out of memory");
    while (rc == PPB_OK && t->pairs < pairs) {
        if (effect > 0)
            snprintf(p->name, sizeof p->name, "calibrate +%g%%%s #%d", effect * 100, co->work_impl ? " work" : "",
                     t->proposals + 1);
        else
            snprintf(p->name, sizeof p->name, "calibrate A/A #%d", t->proposals + 1);
        int before = t->pairs;
        ppb_propose_outcome_free(out);
        rc = ppb_propose_run(p, o, out, err);
        if (rc)
            break;
        const ppb_proposal_record *rec = &out->rec;
        t->proposals++;
        t->accept += strcmp(rec->verdict, "ACCEPT") == 0;
        t->reject += strcmp(rec->verdict, "REJECT") == 0;
        tally_ctx k = {t, co->min_case_ms, out->store, rec->baseline_run};
        for (int i = 0; i < out->n_cases && !rc; i++)
            rc = tally_case(&k, &out->cases[i]);
        if (!rc && t->pairs == before)
            rc = ppb_fail(err, PPB_EREFUSED, "%s: no case could be compared (all refused or failing their check)",
                          co->suite_path);
        if (!rc) {
            g->proposals++;
            g->pairs += t->pairs - before;
            progress_line(g, o->log, p->name, rec->verdict, t->pairs, pairs);
        }
    }
    if (out)
        ppb_propose_outcome_free(out);
    free(out);
    return rc;
}

int ppb_calibrate(const ppb_calibrate_options *co, ppb_propose_options *o, ppb_calibration *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    ppb_proposal p;
    memset(&p, 0, sizeof p);
    snprintf(p.path, sizeof p.path, "%s", co->suite_path);
    snprintf(p.suite_path, sizeof p.suite_path, "%s", co->suite_path);
    snprintf(p.filter, sizeof p.filter, "%s", co->filter ? co->filter : "");
    p.kind = PPB_PROPOSAL_KERNEL_CONFIG;
    ppb_verdict_rules_default(&p.rules);
    p.rules.min_gain = 0;          /* A/A must be INCONCLUSIVE, never REJECT for "no gain" */
    p.rules.max_regression = 10;   /* known slowdowns are counted, not rejected case by case */
    ppb_sampling_default(&p.sampling);   /* the regime every proposal measures in */
    if (co->budget_ms > 0)               /* a proposal may set its own budget: calibrate at that one */
        p.sampling.budget_ms = co->budget_ms;
    p.sampling.stop_when_settled = 0;    /* every pair is counted: each one sampled to its own end */
    /* A suite this backend cannot run at all (a GPU suite on the CPU) is said
     * before the first proposal, not found after it. */
    int fail_if_all_refused = o->fail_if_all_refused;
    o->fail_if_all_refused = 1;
    progress g = {co, ppb_monotonic_ms(), 0, 0};
    if (o->log) {
        fprintf(o->log, "calibrate: A/A proposals until %d pairs, then", co->aa_pairs);
        for (int i = 0; i < co->n_effects; i++)
            fprintf(o->log, "%s+%g%%", i ? ", " : " ", 100 * co->effects[i]);
        fprintf(o->log, " until %d pairs each, then two separate runs of the suite\n", co->effect_pairs);
        if (co->work_impl)
            fprintf(o->log, "calibrate: effects as real work: plugin:%s0 against plugin:%sN (N%% more work a "
                            "launch); A/A on plugin:%s0\n", co->work_impl, co->work_impl, co->work_impl);
    }
    ppb_side config;
    int rc = co->work_impl ? work_config(co, &config, err) : PPB_OK;
    const ppb_side *work = co->work_impl ? &config : NULL;
    if (!rc)
        rc = tally_effect(co, work, o, &p, 0, co->aa_pairs, &out->aa, &g, err);
    for (int i = 0; i < co->n_effects && !rc; i++, out->n_effects++)
        rc = tally_effect(co, work, o, &p, co->effects[i], co->effect_pairs, &out->effect[i], &g, err);
    o->candidate_slowdown = 0;
    o->fail_if_all_refused = fail_if_all_refused;
    return rc;
}

double ppb_calibrate_flag_rate(const ppb_calibrate_tally *t, int long_only)
{
    int n = long_only ? t->long_pairs : t->pairs;
    int slower = long_only ? t->long_slower : t->slower, faster = long_only ? t->long_faster : t->faster;
    int k = t->effect > 0 ? slower : faster + slower;
    return n ? (double)k / n : NAN;
}

double ppb_wilson_upper(int k, int n)
{
    if (n <= 0)
        return 1;
    const double z = 1.6448536269514722, p = (double)k / n, z2n = z * z / n;
    return (p + z2n / 2 + z * sqrt(p * (1 - p) / n + z2n / (4 * n))) / (1 + z2n);
}

double ppb_calibrate_mde(const ppb_calibration *c, double share)
{
    double best = NAN;
    for (int i = 0; i < c->n_effects; i++) {
        double rate = ppb_calibrate_flag_rate(&c->effect[i], 1);
        if (rate >= share && (isnan(best) || c->effect[i].effect < best))
            best = c->effect[i].effect;
    }
    return best;
}

typedef struct repeat_ctx {
    ppb_store *s;
    int64_t other;
    double *diffs;
    int n, cap;
} repeat_ctx;

static int repeat_case(void *ctx, const ppb_case *c, const ppb_result *r)
{
    repeat_ctx *x = ctx;
    median_lookup m = {c->key, 0};
    ppb_err ignored;
    ppb_store_each_result(x->s, x->other, find_median, &m, &ignored);
    if (r->median_ms > 0 && m.median > 0 && x->n < x->cap)
        x->diffs[x->n++] = fabs(m.median / r->median_ms - 1);
    return 0;
}

int ppb_calibrate_repeatability(ppb_store *s, int64_t run_a, int64_t run_b, double *median_diff, double *p90,
                                int *n_cases, ppb_err *err)
{
    ppb_run_info run;
    int rc = ppb_store_get_run(s, run_a, &run, err);
    repeat_ctx x = {s, run_b, NULL, 0, rc ? 0 : run.n_cases};
    if (!rc && !(x.diffs = calloc((size_t)x.cap + 1, sizeof *x.diffs)))
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (!rc)
        rc = ppb_store_each_result(s, run_a, repeat_case, &x, err);
    *n_cases = x.n;
    if (!rc && x.n == 0)
        rc = ppb_fail(err, PPB_EFAIL, "repeatability: runs %lld and %lld have no case timed in both, so there is "
                      "nothing to compare (ppbench show %lld says why)", (long long)run_a, (long long)run_b,
                      (long long)run_a);
    *median_diff = x.n ? ppb_median(x.diffs, x.n) : NAN;
    *p90 = x.n ? ppb_quantile(x.diffs, x.n, 0.9) : NAN;
    free(x.diffs);
    return rc;
}
