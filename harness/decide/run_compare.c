/* Two separate runs judged by each case's run-to-run noise
 * (docs/STATISTICS.md "Comparing separate runs"). */
#include "run_compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abtest.h"
#include "grow.h"
#include "stats.h"
#include "trend.h"
#include "verdict_record.h"

/* MAD-based scales carry about 37% of the information of a standard deviation
 * from the same number of values (Rousseeuw & Croux 1993): the degrees of
 * freedom of the noise estimate are scaled by it. */
#define MAD_EFFICIENCY 0.37

void ppb_run_compare_rules_default(ppb_run_compare_rules *rules)
{
    memset(rules, 0, sizeof *rules);
    ppb_verdict_rules_default(&rules->verdict);
    rules->verdict.min_gain = 0; /* two runs are not a proposal: no gain required */
    rules->min_history = 5;
    rules->max_history = 20;
}

/* ---- a compared run as a whole ------------------------------------------------ */

/* The usual level of a case's run on `side`: the median of the history the
 * case's noise came from (its latest h runs), or with two implementations of
 * the side's own part of it. */
static double usual_level(const ppb_run_compare_case *c, int h, int side)
{
    if (!c->history_split)
        return ppb_median(c->history + (c->n_history - h), h);
    return side ? ppb_median(c->history + c->history_split, c->n_history - c->history_split)
                : ppb_median(c->history, c->history_split);
}

/* The run level over the cases with a noise (judged): noise[i] NaN is not.
 * `given`: the shift as stored (recompute: no histories), else measured from
 * each case's history (its latest n_history[i]). */
static int run_level(const ppb_run_compare_case *cases, int n, const double *noise, const int *n_history, int side,
                     const double *given, ppb_run_level *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    out->shift = out->noise = NAN;
    size_t cap = (size_t)(n > 0 ? n : 1);
    double *shift = calloc(cap, sizeof *shift), *sd = calloc(cap, sizeof *sd);
    if (!shift || !sd) {
        free(shift);
        free(sd);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    int k = 0, rc = PPB_OK;
    for (int i = 0; i < n && !rc; i++) {
        const ppb_run_compare_case *c = &cases[i];
        if (isnan(noise[i]) || (!given && !c->history))
            continue;
        if (!given) {
            double usual = usual_level(c, n_history[i], side);
            if (isnan(usual))
                rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
            shift[k] = log((side ? c->candidate_ms : c->baseline_ms) / usual);
        }
        sd[k++] = noise[i];
    }
    if (!rc && k > 0) {
        out->cases = k;
        out->shift = given ? *given : ppb_midmean(shift, k);
        out->noise = ppb_median(sd, k);
        if ((!given && isnan(out->shift)) || isnan(out->noise))
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        out->unusual = !rc && k >= 3 && fabs(out->shift) > PPB_RUN_COMPARE_UNUSUAL * out->noise;
    }
    free(shift);
    free(sd);
    return rc;
}

/* ---- the decision ---------------------------------------------------------- */

void ppb_run_compare_report_free(ppb_run_compare_report *r)
{
    if (!r)
        return;
    ppb_verdict_report_free(&r->v);
    free(r->noise);
    free(r->n_history);
    free(r->short_history);
    free(r->crit);
    free(r->sd);
    free(r->baseline_offset);
    memset(r, 0, sizeof *r);
}

static int check_input(const ppb_run_compare_case *cases, int n, const ppb_run_compare_rules *r, ppb_err *err)
{
    if (n < 1 || !cases)
        return ppb_fail(err, PPB_EINPUT, "a comparison needs at least one case");
    if (!(r->verdict.alpha > 0 && r->verdict.alpha < 1))   /* the rest the verdict checks */
        return ppb_fail(err, PPB_EINPUT, "comparison rules: alpha %g is not in (0, 1)", r->verdict.alpha);
    if (r->min_history < 3 || r->max_history < r->min_history)
        return ppb_fail(err, PPB_EINPUT, "comparison history: need 3 <= min_history (%d) <= max_history (%d)",
                        r->min_history, r->max_history);
    for (int i = 0; i < n; i++) {
        if (!cases[i].key)
            return ppb_fail(err, PPB_EINPUT, "case %d has no key", i);
        if (!(cases[i].weight >= 0) || !isfinite(cases[i].weight))
            return ppb_fail(err, PPB_EINPUT, "case '%s' has weight %g", cases[i].key, cases[i].weight);
        if (cases[i].history_split < 0 || cases[i].history_split > cases[i].n_history)
            return ppb_fail(err, PPB_EINPUT, "case '%s': history split at %d of %d runs", cases[i].key,
                            cases[i].history_split, cases[i].n_history);
        if (cases[i].noise_given && (!(cases[i].noise >= 0) || !isfinite(cases[i].noise) || cases[i].history))
            return ppb_fail(err, PPB_EINPUT, "case '%s': a given noise of %g (with%s a history)", cases[i].key,
                            cases[i].noise, cases[i].history ? "" : "out");
        for (int k = 0; k < cases[i].n_history && !cases[i].noise_given; k++)
            if (!(cases[i].history[k] > 0) || !isfinite(cases[i].history[k]))
                return ppb_fail(err, PPB_EINPUT, "case '%s': history point %d is %g", cases[i].key, k,
                                cases[i].history[k]);
    }
    return PPB_OK;
}

/* The plain standard deviation of the log values v[0, n) about their mean, or
 * with a split (history_split) each part about its own. */
static double log_sd(const double *v, int n, int split)
{
    double ss = 0;
    int levels = 0;
    for (int lo = 0, hi = split > 0 ? split : n; lo < n; lo = hi, hi = n) {
        double mean = 0;
        for (int i = lo; i < hi; i++)
            mean += log(v[i]) / (hi - lo);
        for (int i = lo; i < hi; i++)
            ss += (log(v[i]) - mean) * (log(v[i]) - mean);
        levels++;
    }
    return n > levels ? sqrt(ss / (n - levels)) : 0;
}

/* A case's run-to-run noise from its history: Trend's robust estimate
 * (ppb_trend_night_noise), or the plain standard deviation of the log medians
 * where that is larger. The robust one keeps one outlier run or an old step
 * from widening every interval, but it also reads a machine that now and then
 * runs a whole run slow as outliers: on the loaded 2-core runner 5 of 30 plain
 * runs were 35-70% slow and the rest within 1%, the robust noise came out at
 * 5%, and 6 of 29 A/A compares were REJECTed. The plain deviation counts those
 * runs; on a quiet history the two are close. */
static double history_noise(const ppb_run_compare_case *c, int h)
{
    const double *v = c->history + (c->n_history - h);
    int split = c->history_split;
    double robust = split ? ppb_trend_night_noise_split(v, h, split) : ppb_trend_night_noise(v, h);
    double plain = log_sd(v, h, split);
    return plain > robust ? plain : robust;
}

/* The SD of a run's median that the run's own samples allow when it could not
 * measure the case to its noise target: the samples' SD (IQR / 1.349 for a
 * normal spread), not divided by sqrt(n). The samples of such a run are not
 * independent draws: on the loaded 2-core runner the outlier runs of a case
 * (5-17% from its level, against 0.3% run-to-run noise) were runs where load
 * came and went during its sampling, its samples spread 11-30% where a plain
 * run's spread 0.2-2% (docs/STATISTICS.md "Comparing separate runs"). A run
 * that met its target adds nothing: its own spread is part of what the
 * history's noise measures. */
static double own_sd(double spread) { return spread > 0 && isfinite(spread) ? spread / 1.349 : 0; }

/* The critical value of a case's interval: Student's t at the family level
 * with the degrees of freedom of its noise estimate over h plain runs. */
static double case_crit(const ppb_run_compare_case *c, int h, double alpha)
{
    int df = (int)floor(MAD_EFFICIENCY * (h - 1 - (c->history_split > 0))); /* a level per implementation */
    return ppb_student_t_quantile(alpha, df < 1 ? 1 : df);
}

/* Each judged case's interval: d = log(candidate / baseline) +- crit s,
 * s = sqrt(2 sigma^2 + own_a^2 + own_b^2 + offset^2), sigma its run-to-run
 * noise over its latest h plain runs, own the noisy runs' own SD (own_sd),
 * offset the baseline's: of the run when it is off as a whole
 * (baseline_offset), or of this case when it alone is further off
 * (case_offset). */
static void judge_case(const ppb_run_compare_case *c, double sigma, double offset, double crit, double alpha,
                       ppb_ab_interval *x, double *sd)
{
    double own_a = own_sd(c->baseline_spread), own_b = own_sd(c->candidate_spread);
    *sd = sqrt(2.0 * sigma * sigma + own_a * own_a + own_b * own_b + offset * offset);
    double d = log(c->candidate_ms) - log(c->baseline_ms), half = crit * *sd;
    memset(x, 0, sizeof *x);
    x->shift = d;
    x->shift_lo = d - half;
    x->shift_hi = d + half;
    x->ratio = exp(d);
    x->ratio_lo = exp(x->shift_lo);
    x->ratio_hi = exp(x->shift_hi);
    x->level = x->level_achieved = 1 - alpha;
    x->bounded = 1;
}

/* The whole-run offset every case of the comparison is widened by (rule 4):
 * the baseline run's shift when the run is off as a whole, else 0. A baseline
 * is a plain run like its history; one whose judged cases are together beyond
 * PPB_RUN_COMPARE_UNUSUAL x their noise from their usual level was run on a
 * machine in another state (on the loaded 2-core runner, 2 runs in 100 had
 * every case 2-4% slow with samples as tight as usual, against 0.25% noise,
 * and each, as the baseline, made an A/A compare ACCEPT: docs/STATISTICS.md).
 * Its level is then known only to within that offset, for every case at once:
 * the cases' intervals hold it and the weighted mean keeps it whole
 * (ppb_verdict_rules.shared_sd). A candidate off as a whole is not widened:
 * that is what a change of every case looks like. */
static double baseline_offset(const ppb_run_level *lv) { return lv->unusual ? fabs(lv->shift) : 0; }

/* A baseline case off its own usual level (rule 5): |log(baseline median /
 * usual level)| when it lies beyond crit x its SD as one run of the history
 * (sigma, and its own noisy spread), else 0. The run-level rule above needs 3
 * cases moved together; on the loaded 2-core runner single cases also came out
 * 7-13% off their level for a whole window, their samples as tight as usual
 * (status ok), and as the baseline each made an A/A compare ACCEPT
 * (docs/STATISTICS.md "A baseline case off its level"). Such a baseline says
 * nothing about the case's usual time but to within its offset, so the case
 * is widened by it. The candidate's case is not judged so: a change of one
 * case is what a real change of one shape looks like. A baseline off as a
 * whole is widened by its shift alone. */
static double case_offset(const ppb_run_compare_case *c, int h, double sigma, double crit)
{
    double usual = c->history ? usual_level(c, h, 0) : NAN;
    if (!(usual > 0))
        return 0;
    double off = fabs(log(c->baseline_ms / usual)), own = own_sd(c->baseline_spread);
    return off > crit * sqrt(sigma * sigma + own * own) ? off : 0;
}

/* A timed result's median; 0 when the case has no time. */
static double timed_median(const ppb_result *r)
{
    int timed = r->status == PPB_STATUS_OK || r->status == PPB_STATUS_NOISY;
    return timed && r->median_ms > 0 ? r->median_ms : 0;
}

void ppb_run_compare_case_of(const ppb_case *ca, const ppb_result *ra, const ppb_result *rb,
                             ppb_run_compare_case *c)
{
    memset(c, 0, sizeof *c);
    c->key = ca->key;
    c->weight = ca->weight;
    c->baseline_ms = timed_median(ra);
    c->candidate_ms = timed_median(rb);
    c->baseline_correct = ra->status != PPB_STATUS_WRONG;
    c->candidate_correct = rb->status != PPB_STATUS_WRONG;
    c->baseline_feasible = ra->status != PPB_STATUS_REFUSED;
    c->candidate_feasible = rb->status != PPB_STATUS_REFUSED;
    c->baseline_reason = ra->reason;
    c->candidate_reason = rb->reason;
    c->baseline_spread = ra->status == PPB_STATUS_NOISY ? ra->rel_noise : 0;
    c->candidate_spread = rb->status == PPB_STATUS_NOISY ? rb->rel_noise : 0;
}

static int timed(const ppb_run_compare_case *c)
{
    return c->baseline_ms > 0 && isfinite(c->baseline_ms) && c->candidate_ms > 0 && isfinite(c->candidate_ms);
}

/* One more reason line, after the verdict's own. */
static int add_note(ppb_verdict_report *v, const char *line)
{
    char **grown = realloc(v->reasons, sizeof *grown * (size_t)(v->n_reasons + 1));
    if (!grown)
        return PPB_ENOMEM;
    v->reasons = grown;
    if (!(v->reasons[v->n_reasons] = strdup(line)))
        return PPB_ENOMEM;
    v->n_reasons++;
    return PPB_OK;
}

/* The reason line of a run off as a whole (rule 4): from what the store keeps
 * (the shift, each case's noise), so that recompute says it alike. */
static int note_run_level(ppb_verdict_report *v, const ppb_run_level *lv, int side)
{
    char what[64], note[512];
    ppb_verdict_describe_change(what, sizeof what, exp(lv->shift));
    int at = snprintf(note, sizeof note,
                      "note: the %s run is off as a whole: its %d judged cases are together %s than their usual "
                      "level, beyond %.0fx their run-to-run noise (%.2f%%): ",
                      side ? "candidate" : "baseline", lv->cases, what, PPB_RUN_COMPARE_UNUSUAL, 100 * lv->noise);
    if (side)
        snprintf(note + at, sizeof note - (size_t)at, "a change that moves every case alike, of the code or of the "
                 "machine's state; a second candidate run tells them apart");
    else
        snprintf(note + at, sizeof note - (size_t)at, "the machine's state may have changed between the runs, so "
                 "every case's interval is widened by that %.1f%% and the weighted mean keeps it whole; compare "
                 "against a typical run to see smaller changes", 100 * fabs(lv->shift));
    return add_note(v, note);
}

/* The reason line of baseline cases off their usual level (rule 5), from
 * what the store keeps (each case's offset), so that recompute says it alike. */
static int note_cases_off(ppb_verdict_report *v, const ppb_run_compare_report *r, int n)
{
    double largest = 0;
    for (int i = 0; i < n; i++)
        largest = r->baseline_offset[i] > largest ? r->baseline_offset[i] : largest;
    char note[512];
    snprintf(note, sizeof note,
             "note: %d case%s of the baseline run lie%s off %s usual level beyond %s run-to-run noise (by up to "
             "%.1f%%): each is widened by its offset, since such a baseline says the case's usual time only to "
             "within it; compare against a typical run to see smaller changes",
             r->n_baseline_off, r->n_baseline_off == 1 ? "" : "s", r->n_baseline_off == 1 ? "s" : "",
             r->n_baseline_off == 1 ? "its" : "their", r->n_baseline_off == 1 ? "its" : "their", 100 * largest);
    return add_note(v, note);
}

/* The verdict's rules (ppb_verdict_decide) on run-to-run intervals: the timing
 * decision has one home. A case with too little history is untimed. */
int ppb_run_compare_decide(const ppb_run_compare_case *cases, int n, const ppb_run_compare_rules *rules,
                           const double stored_shift[2], ppb_run_compare_report *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    out->v.verdict = PPB_VERDICT_INCONCLUSIVE;
    out->baseline_level.shift = out->baseline_level.noise = NAN;
    out->candidate_level = out->baseline_level;
    int rc = check_input(cases, n, rules, err);
    if (rc)
        return rc;
    out->noise = calloc((size_t)n, sizeof *out->noise);
    out->crit = calloc((size_t)n, sizeof *out->crit);
    out->sd = calloc((size_t)n, sizeof *out->sd);
    out->n_history = calloc((size_t)n, sizeof *out->n_history);
    out->baseline_offset = calloc((size_t)n, sizeof *out->baseline_offset);
    out->short_history = calloc((size_t)n, sizeof *out->short_history);
    ppb_verdict_case *vc = calloc((size_t)n, sizeof *vc);
    ppb_ab_interval *iv = calloc((size_t)n, sizeof *iv);
    char (*basis)[256] = calloc((size_t)n, sizeof *basis);
    char untimed[160];
    if (!out->noise || !out->crit || !out->sd || !out->n_history || !out->short_history || !out->baseline_offset ||
        !vc || !iv || !basis) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory comparing %d cases", n);
        goto done;
    }
    snprintf(untimed, sizeof untimed,
             "has fewer than %d plain runs of history: its run-to-run noise is unknown, so it is not judged on time",
             rules->min_history);
    /* The family: the cases judged on time and the mean, as the verdict counts
     * them; each judged case's noise, which the baseline's run level needs
     * before any case is judged. */
    int judged = 0;
    for (int i = 0; i < n && !rc; i++) {
        const ppb_run_compare_case *c = &cases[i];
        out->noise[i] = out->crit[i] = out->sd[i] = out->baseline_offset[i] = NAN;
        out->n_history[i] = c->history_split || c->n_history < rules->max_history ? c->n_history : rules->max_history;
        int usable = c->baseline_feasible && c->candidate_feasible && timed(c) &&
                     !(rules->verdict.require_correct && (!c->baseline_correct || !c->candidate_correct));
        /* two implementations: each needs two runs of its own for a spread about its level */
        int split_short = c->history_split && (c->history_split < 2 || c->n_history - c->history_split < 2);
        if (usable && (out->n_history[i] < rules->min_history || split_short)) {
            out->short_history[i] = 1;
            out->n_short++;
        }
        if (usable && !out->short_history[i]) {
            judged++;
            out->noise[i] = c->noise_given ? c->noise : history_noise(c, out->n_history[i]);
            if (isnan(out->noise[i]))
                rc = ppb_fail(err, PPB_ENOMEM, "out of memory for a case's noise");
        }
    }
    ppb_run_level *level[2] = {&out->baseline_level, &out->candidate_level};
    for (int side = 0; side < 2 && !rc; side++)
        rc = run_level(cases, n, out->noise, out->n_history, side, stored_shift ? &stored_shift[side] : NULL,
                       level[side], err);
    const double alpha = ppb_bonferroni_alpha(rules->verdict.alpha, judged + 1);
    const double offset = baseline_offset(&out->baseline_level);
    for (int i = 0; i < n && !rc; i++) {
        const ppb_run_compare_case *c = &cases[i];
        vc[i] = (ppb_verdict_case){.key = c->key, .weight = c->weight, .baseline_correct = c->baseline_correct,
                                   .candidate_correct = c->candidate_correct,
                                   .baseline_feasible = c->baseline_feasible,
                                   .candidate_feasible = c->candidate_feasible, .baseline_reason = c->baseline_reason,
                                   .candidate_reason = c->candidate_reason};
        if (!timed(c))
            vc[i].untimed = !(c->baseline_ms > 0) && !(c->candidate_ms > 0) ? "was not timed in either run"
                            : !(c->baseline_ms > 0)                         ? "was not timed in the baseline run"
                                                                            : "was not timed in the candidate run";
        else if (out->short_history[i])
            vc[i].untimed = out->n_history[i] < rules->min_history
                                ? untimed
                                : "has fewer than 2 plain runs of one of its two implementations: its run-to-run noise "
                                  "is unknown, so it is not judged on time";
        else if (!isnan(out->noise[i])) {
            out->crit[i] = case_crit(c, out->n_history[i], alpha);
            out->baseline_offset[i] = c->noise_given ? c->baseline_offset
                                      : offset > 0   ? 0 /* a run off as a whole: its shift covers it */
                                                     : case_offset(c, out->n_history[i], out->noise[i], out->crit[i]);
            out->n_baseline_off += out->baseline_offset[i] > 0;
            double widen = fmax(offset, out->baseline_offset[i]);
            judge_case(c, out->noise[i], widen, out->crit[i], alpha, &iv[i], &out->sd[i]);
            vc[i].interval = &iv[i];
            int at = c->history_split
                         ? snprintf(basis[i], sizeof basis[i],
                                    "run-to-run noise %.2f%% from %d + %d plain runs of the two implementations",
                                    100 * out->noise[i], c->history_split, c->n_history - c->history_split)
                         : snprintf(basis[i], sizeof basis[i], "run-to-run noise %.2f%% from %d plain runs",
                                    100 * out->noise[i], out->n_history[i]);
            const char *side[2] = {"baseline", "candidate"};
            double spread[2] = {c->baseline_spread, c->candidate_spread};
            for (int s = 0; s < 2; s++)
                if (own_sd(spread[s]) > 0 && at > 0 && (size_t)at < sizeof basis[i])
                    at += snprintf(basis[i] + at, sizeof basis[i] - (size_t)at,
                                   "; the %s run's samples spread %.1f%% (noisy)", side[s], 100 * spread[s]);
            if (widen > 0 && at > 0 && (size_t)at < sizeof basis[i])
                snprintf(basis[i] + at, sizeof basis[i] - (size_t)at, offset > 0
                         ? "; the baseline run off as a whole by %.1f%%" : "; the baseline run off its usual level by %.1f%%",
                         100 * widen);
            vc[i].basis = basis[i];
        }
    }
    ppb_verdict_rules vrules = rules->verdict;
    vrules.shared_sd = offset;
    if (!rc)
        rc = ppb_verdict_decide(vc, n, &vrules, &out->v, err);
    if (!rc) {
        char note[256];
        snprintf(note, sizeof note,
                 "note: separate runs: each case's interval comes from its run-to-run noise over its plain runs "
                 "(at least %d), and from a run's own samples only where that run could not measure the case to "
                 "its noise target (noisy)",
                 rules->min_history);
        rc = add_note(&out->v, note);
        for (int side = 0; side < 2 && !rc; side++)
            if (level[side]->unusual)
                rc = note_run_level(&out->v, level[side], side);
        if (!rc && out->n_baseline_off > 0)
            rc = note_cases_off(&out->v, out, n);
        if (rc)
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory for the comparison's reasons");
    }
done:
    free(vc);
    free(iv);
    free(basis);
    return rc;
}

/* ---- history from the store ------------------------------------------------ */

typedef struct hist_point {
    char uid[33];
    char started_at[32];
    double ms;
    int skip, seq;   /* seq: the order read, for runs started in the same second */
    int noisy;       /* status noisy: the run did not measure the case to its target */
} hist_point;

typedef struct hist_walk {
    hist_point *p;
    int n, cap;
    const ppb_run_compare_source *src;
} hist_walk;

static int hist_add(void *ctx, const ppb_history_point *p)
{
    hist_walk *h = ctx;
    int skip = p->run_id == h->src->skip[0] || p->run_id == h->src->skip[1];
    int timed = (strcmp(p->status, "ok") == 0 || strcmp(p->status, "noisy") == 0) && p->median_ms > 0 &&
                isfinite(p->median_ms);
    if (!skip && !timed)
        return 0;
    if (ppb_grow((void **)&h->p, &h->cap, h->n, sizeof *h->p, 32) != PPB_OK)
        return PPB_ENOMEM;
    hist_point *q = &h->p[h->n++];
    snprintf(q->uid, sizeof q->uid, "%s", p->uid);
    snprintf(q->started_at, sizeof q->started_at, "%s", p->started_at);
    q->ms = p->median_ms;
    q->skip = skip;
    q->noisy = strcmp(p->status, "noisy") == 0;
    q->seq = h->n - 1;
    return 0;
}

static int by_start(const void *a, const void *b)
{
    const hist_point *x = a, *y = b;
    int c = strcmp(x->started_at, y->started_at);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

int ppb_run_compare_history(const ppb_run_compare_source *src, int n_src, const char *key, int max_n,
                            int min_measured, double **out, int *n, ppb_err *err)
{
    hist_walk h = {NULL, 0, 0, NULL};
    int rc = PPB_OK;
    *out = NULL;
    *n = 0;
    for (int i = 0; i < n_src && !rc; i++) {
        h.src = &src[i];
        rc = ppb_store_case_history(src[i].s, src[i].suite, key, "", "run", src[i].timing, hist_add, &h, err);
    }
    if (rc == PPB_ENOMEM)
        ppb_fail(err, rc, "out of memory reading a case's history");
    /* One run once; a run skipped anywhere is skipped everywhere (a uid, when
     * a database has none, never matches). */
    int m = 0;
    char *drop = rc || h.n == 0 ? NULL : calloc((size_t)h.n, 1);
    if (!rc && h.n > 0 && !drop)
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory reading a case's history");
    for (int i = 0; i < h.n && !rc; i++) {
        drop[i] = (char)h.p[i].skip;
        for (int j = 0; j < h.n && !drop[i] && h.p[i].uid[0]; j++)
            if (j != i && strcmp(h.p[i].uid, h.p[j].uid) == 0 && (h.p[j].skip || j < i))
                drop[i] = 1;
    }
    int measured = 0;
    for (int i = 0; i < h.n && !rc; i++)
        measured += !drop[i] && !h.p[i].noisy;
    for (int i = 0; i < h.n && !rc; i++)
        if (!drop[i] && !(h.p[i].noisy && min_measured > 0 && measured >= min_measured))
            h.p[m++] = h.p[i];
    free(drop);
    if (!rc && m > 0) {
        qsort(h.p, (size_t)m, sizeof *h.p, by_start); /* sources interleave in time */
        int from = max_n > 0 && m > max_n ? m - max_n : 0;
        double *v = malloc(sizeof *v * (size_t)(m - from));
        if (!v) {
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory for a case's history");
        } else {
            for (int i = from; i < m; i++)
                v[i - from] = h.p[i].ms;
            *out = v;
            *n = m - from;
        }
    }
    free(h.p);
    return rc;
}

int ppb_run_compare_record(const ppb_run_compare_report *rep, const ppb_run_compare_case *cases, int n,
                           const ppb_run_compare_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                           ppb_err *err)
{
    ppb_verdict_case *vc = calloc((size_t)n, sizeof *vc);
    if (!vc)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        vc[i].key = cases[i].key;
        vc[i].weight = cases[i].weight;
    }
    int rc = ppb_verdict_record(&rep->v, vc, n, &rules->verdict, rec, pcs, err);
    free(vc);
    rec->min_history = rules->min_history;
    rec->max_history = rules->max_history;
    rec->baseline_shift = rep->baseline_level.shift;
    rec->candidate_shift = rep->candidate_level.shift;
    for (int i = 0; !rc && i < n; i++) {
        if (rep->short_history[i])
            snprintf(pcs[i].state, sizeof pcs[i].state, "no-history");
        pcs[i].noise = rep->noise[i];
        pcs[i].history = rep->n_history[i];
        pcs[i].history_split = cases[i].history_split;
        pcs[i].baseline_offset = rep->baseline_offset[i];
        pcs[i].looks_taken = pcs[i].looks_planned = 0;
        pcs[i].stop_alpha = pcs[i].look_share = NAN;
    }
    return rc;
}

int ppb_run_compare_store(ppb_store *s, const ppb_run_compare_case *cases, int n,
                          const ppb_run_compare_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                          ppb_run_compare_report *rep, ppb_err *err)
{
    int rc = ppb_run_compare_decide(cases, n, rules, NULL, rep, err);
    if (!rc)
        rc = ppb_run_compare_record(rep, cases, n, rules, rec, pcs, err);
    if (!rc)
        rc = ppb_store_put_proposal(s, rec, pcs, n, err);
    return rc;
}
