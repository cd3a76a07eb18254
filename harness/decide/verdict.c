/* The proposal verdict. Order of business (docs/STATISTICS.md, "The verdict"):
 * feasibility, then correctness, then timing; every interval shares one
 * family-wise alpha (Bonferroni over the compared cases and the mean). */
#include "verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"
#include "sequential.h"

/* Hint cap: more samples than this per side is "not within any budget". */
#define MORE_SAMPLES_CAP 1000000L
#define CASE_LINES_MAX 3 /* open cases listed one by one; beyond, one line per kind */

const char *ppb_verdict_name(int verdict)
{
    switch (verdict) {
    case PPB_VERDICT_ACCEPT: return "ACCEPT";
    case PPB_VERDICT_REJECT: return "REJECT";
    case PPB_VERDICT_INCONCLUSIVE: return "INCONCLUSIVE";
    default: return "?";
    }
}

const char *ppb_case_state_name(int state)
{
    switch (state) {
    case PPB_CASE_COMPARED: return "compared";
    case PPB_CASE_INFEASIBLE: return "infeasible";
    case PPB_CASE_WRONG: return "wrong";
    case PPB_CASE_NO_SAMPLES: return "no-samples";
    case PPB_CASE_EXCLUDED: return "excluded";
    default: return "?";
    }
}

const char *ppb_interval_method_name(int method)
{
    switch (method) {
    case PPB_METHOD_HODGES_LEHMANN: return "hodges_lehmann";
    case PPB_METHOD_BOOTSTRAP: return "bootstrap";
    default: return "?";
    }
}

int ppb_interval_method_parse(const char *name)
{
    for (int m = PPB_METHOD_HODGES_LEHMANN; m <= PPB_METHOD_BOOTSTRAP; m++)
        if (strcmp(name, ppb_interval_method_name(m)) == 0)
            return m;
    return -1;
}

void ppb_verdict_rules_default(ppb_verdict_rules *rules)
{
    memset(rules, 0, sizeof *rules);
    rules->min_gain = 0.02;
    rules->max_regression = 0.05;
    rules->require_correct = 1;
    rules->threshold = 0.01;
    rules->alpha = 0.05;
    rules->method = PPB_METHOD_HODGES_LEHMANN;
    rules->bootstrap_reps = 2000;
    rules->seed = 1;
}

double ppb_verdict_tolerance(const ppb_verdict_rules *rules)
{
    return rules->max_regression > rules->threshold ? rules->max_regression : rules->threshold;
}

double ppb_verdict_gain_needed(const ppb_verdict_rules *rules)
{
    return rules->min_gain > rules->threshold ? rules->min_gain : rules->threshold;
}

/* ---- reason lines -------------------------------------------------------- */

typedef struct line_list {
    char **v;
    int n, cap;
} line_list;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int add_line(line_list *l, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v)
            return PPB_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    size_t len = strlen(buf);
    char *s = malloc(len + 1);
    if (!s)
        return PPB_ENOMEM;
    memcpy(s, buf, len + 1);
    l->v[l->n++] = s;
    return 0;
}

static void free_lines(line_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Append all of `from` to `to`, taking ownership of the strings. */
static int move_lines(line_list *to, line_list *from)
{
    for (int i = 0; i < from->n; i++) {
        if (to->n == to->cap) {
            int cap = to->cap ? 2 * to->cap : 8;
            char **v = realloc(to->v, sizeof *v * (size_t)cap);
            if (!v)
                return PPB_ENOMEM;
            to->v = v;
            to->cap = cap;
        }
        to->v[to->n++] = from->v[i];
        from->v[i] = NULL;
    }
    free_lines(from);
    return 0;
}

/* Percent for a reason line: no "-0.0%". */
static double pct(double fraction)
{
    double v = fraction * 100;
    return fabs(v) < 0.05 ? 0.0 : v;
}

/* "7.1% slower [5.2%, 9.0%]" or "3.0% faster [2.1%, 3.9%]": the effect in the
 * direction of the estimate, its interval in the same terms. */
void ppb_verdict_describe_change(char *buf, size_t size, double r)
{
    /* the faster side as a speedup */
    int slower = r >= 1;
    char m[32];
    ppb_format_fixed(m, sizeof m, pct(slower ? r - 1 : 1 / r - 1), 1);
    snprintf(buf, size, "%s%% %s", m, slower ? "slower" : "faster");
}

void ppb_verdict_describe_ratio(char *buf, size_t size, double r, double lo, double hi, int bounded)
{
    /* "x% slower [a%, b%]" or "x% faster [a%, b%]": each end as the middle is said */
    int slower = r >= 1;
    double a = slower ? lo - 1 : 1 / hi - 1, b = slower ? hi - 1 : 1 / lo - 1;
    char m[48], pa[32], pb[32];
    ppb_verdict_describe_change(m, sizeof m, r);
    ppb_format_fixed(pa, sizeof pa, pct(a), 1);
    ppb_format_fixed(pb, sizeof pb, pct(b), 1);
    if (bounded)
        snprintf(buf, size, "%s [%s%%, %s%%]", m, pa, pb);
    else
        snprintf(buf, size, "%s (no interval yet)", m);
}

static const char *plural(int n) { return n == 1 ? "" : "s"; }

/* " (BASIS)" after a case's effect when its interval came from elsewhere. */
static const char *basis_open(const ppb_verdict_case *c) { return c->basis ? " (" : ""; }
static const char *basis_text(const ppb_verdict_case *c) { return c->basis ? c->basis : ""; }
static const char *basis_close(const ppb_verdict_case *c) { return c->basis ? ")" : ""; }

static const char *or_unknown(const char *s) { return s && *s ? s : "no reason recorded"; }

/* ---- decision ------------------------------------------------------------ */

static int check_rules(const ppb_verdict_rules *r, ppb_err *err)
{
    if (!r)
        return ppb_fail(err, PPB_EINPUT, "no verdict rules");
    if (!(r->min_gain >= 0) || !isfinite(r->min_gain))
        return ppb_fail(err, PPB_EINPUT, "min_gain %g must be >= 0", r->min_gain);
    if (!(r->max_regression >= 0) || !isfinite(r->max_regression))
        return ppb_fail(err, PPB_EINPUT, "max_regression %g must be >= 0", r->max_regression);
    if (!(r->threshold >= 0) || !isfinite(r->threshold))
        return ppb_fail(err, PPB_EINPUT, "threshold %g must be >= 0", r->threshold);
    if (!(r->alpha > 0 && r->alpha < 1))
        return ppb_fail(err, PPB_EINPUT, "alpha %g is not in (0, 1)", r->alpha);
    if (r->method != PPB_METHOD_HODGES_LEHMANN && r->method != PPB_METHOD_BOOTSTRAP)
        return ppb_fail(err, PPB_EINPUT, "unknown interval method %d", r->method);
    return 0;
}

/* Cases untimed for the same reason (compare: every case short of history) are
 * one line, not one per case: "INCONCLUSIVE: 15 cases (the first: 'KEY') each
 * has fewer than 5 plain runs ...". A case is untimed when it reaches that
 * branch of classify_states: feasible, correct as required, no samples. */
static int untimed(const ppb_verdict_case *c, const ppb_verdict_rules *rules)
{
    return c->untimed && c->baseline_feasible && c->candidate_feasible &&
           !(rules->require_correct && (!c->baseline_correct || !c->candidate_correct)) && !c->interval &&
           (c->n_baseline < 1 || c->n_candidate < 1 || !c->baseline || !c->candidate);
}

static int same_untimed(const ppb_verdict_case *a, const ppb_verdict_case *b, const ppb_verdict_rules *rules)
{
    return untimed(a, rules) && untimed(b, rules) && strcmp(a->untimed, b->untimed) == 0;
}

static int untimed_said_before(const ppb_verdict_case *cases, int i, const ppb_verdict_rules *rules)
{
    for (int j = 0; j < i; j++)
        if (same_untimed(&cases[i], &cases[j], rules))
            return 1;
    return 0;
}

static int untimed_line(const ppb_verdict_case *cases, int n, int i, const ppb_verdict_rules *rules,
                        line_list *unresolved)
{
    int like = 0;
    for (int j = i + 1; j < n; j++)
        like += same_untimed(&cases[i], &cases[j], rules);
    if (like == 0)
        return add_line(unresolved, "INCONCLUSIVE: case '%s' %s", cases[i].key, cases[i].untimed);
    return add_line(unresolved, "INCONCLUSIVE: %d cases (the first: '%s') each %s", like + 1, cases[i].key,
                    cases[i].untimed);
}

/* Feasibility and correctness, before any timing. */
static int classify_states(const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules,
                           ppb_verdict_report *out, line_list *reject, line_list *unresolved,
                           line_list *notes, ppb_err *err)
{
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const ppb_verdict_case *c = &cases[i];
        ppb_verdict_outcome *o = &out->cases[i];
        if (!c->key)
            return ppb_fail(err, PPB_EINPUT, "case %d has no key", i);
        if (!(c->weight >= 0) || !isfinite(c->weight))
            return ppb_fail(err, PPB_EINPUT, "case '%s' has weight %g: weights must be finite and >= 0",
                            c->key, c->weight);
        int base_wrong = !c->baseline_correct, cand_wrong = !c->candidate_correct;
        /* A baseline that cannot run leaves nothing to compare against, also
         * when the candidate cannot run either (an A/A of a refused config). */
        if (!c->baseline_feasible) {
            o->state = PPB_CASE_EXCLUDED;
            rc = add_line(notes, "note: case '%s' is left out: the baseline cannot run on the target (%s)",
                          c->key, or_unknown(c->baseline_reason));
        } else if (!c->candidate_feasible) {
            o->state = PPB_CASE_INFEASIBLE;
            rc = add_line(reject, "REJECT: case '%s': the candidate cannot run on the target: %s", c->key,
                          or_unknown(c->candidate_reason));
        } else if (rules->require_correct && (base_wrong || cand_wrong)) {
            o->state = PPB_CASE_WRONG;
            if (cand_wrong)
                rc = add_line(reject, "REJECT: case '%s': the candidate's output is wrong: %s", c->key,
                              or_unknown(c->candidate_reason));
            if (!rc && base_wrong)
                rc = add_line(reject,
                              "REJECT: case '%s': the baseline's output is wrong (%s): a comparison against "
                              "it proves nothing",
                              c->key, or_unknown(c->baseline_reason));
        } else if (!c->interval && (c->n_baseline < 1 || c->n_candidate < 1 || !c->baseline || !c->candidate)) {
            o->state = PPB_CASE_NO_SAMPLES;
            if (!c->untimed)
                rc = add_line(unresolved, "INCONCLUSIVE: case '%s' has %d baseline and %d candidate samples", c->key,
                              c->n_baseline, c->n_candidate);
            else if (!untimed_said_before(cases, i, rules))
                rc = untimed_line(cases, n, i, rules, unresolved);
        } else {
            o->state = PPB_CASE_COMPARED;
            if (base_wrong || cand_wrong)
                rc = add_line(notes, "note: case '%s': the %s output is wrong (correctness not required)",
                              c->key, cand_wrong ? "candidate's" : "baseline's");
        }
    }
    return rc ? ppb_fail(err, rc, "out of memory for verdict reasons") : 0;
}

/* A case's interval level: the family's share, times what its sampling's
 * stopping look spent of it (sequential.h). */
static double case_alpha(const ppb_verdict_report *out, const ppb_verdict_case *c)
{
    return c->look_share > 0 && c->look_share < 1 ? out->interval_alpha * c->look_share : out->interval_alpha;
}

/* Intervals, tests and classes for the compared cases, at level 1 - case_alpha. */
static int compare_cases(const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules,
                         ppb_verdict_report *out, ppb_err *err)
{
    int rc = 0;
    double *p = malloc(sizeof *p * (size_t)(out->n_compared > 0 ? out->n_compared : 1));
    double *adj = malloc(sizeof *adj * (size_t)(out->n_compared > 0 ? out->n_compared : 1));
    if (!p || !adj) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory comparing %d cases", n);
        goto done;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        const ppb_verdict_case *c = &cases[i];
        ppb_verdict_outcome *o = &out->cases[i];
        if (o->state != PPB_CASE_COMPARED)
            continue;
        if (c->interval) { /* measured elsewhere: no samples, no test */
            o->interval = *c->interval;
            o->alpha = 1 - o->interval.level;
            o->test.p = o->p_holm = o->p_bh = NAN;
            o->cls = ppb_ab_classify(o->interval.ratio_lo, o->interval.ratio_hi, rules->threshold);
            continue;
        }
        const double ia = case_alpha(out, c);
        o->alpha = ia;
        if (rules->method == PPB_METHOD_BOOTSTRAP) {
            int reps = ppb_bootstrap_min_reps(ia);
            if (reps < 0) {
                rc = ppb_fail(err, PPB_EINPUT, "alpha %g is too small for a bootstrap", ia);
                goto done;
            }
            reps = reps > rules->bootstrap_reps ? reps : rules->bootstrap_reps;
            rc = ppb_ab_bootstrap_median_ratio(c->baseline, c->n_baseline, c->candidate, c->n_candidate, ia, reps,
                                               rules->seed + (uint64_t)i, &o->interval, err);
        } else {
            rc = ppb_ab_hodges_lehmann(c->baseline, c->n_baseline, c->candidate, c->n_candidate, ia,
                                       &o->interval, err);
        }
        if (!rc)
            ppb_seq_widen(&o->interval, ia, c->between_sd, c->sessions);
        if (!rc)
            rc = ppb_mann_whitney(c->baseline, c->n_baseline, c->candidate, c->n_candidate, &o->test, err);
        if (rc) {
            ppb_err_prefix(err, "case '%s': ", c->key);
            goto done;
        }
        o->cls = ppb_ab_classify(o->interval.ratio_lo, o->interval.ratio_hi, rules->threshold);
        if (o->cls == PPB_AB_UNRESOLVED)
            o->more_samples = ppb_ab_samples_to_resolve(&o->interval, c->n_baseline, c->n_candidate,
                                                        rules->threshold, ia, MORE_SAMPLES_CAP);
        p[k++] = o->test.p;
    }
    if (k > 0) {
        if ((rc = ppb_p_adjust_holm(p, k, adj, err)))
            goto done;
        for (int i = 0, j = 0; i < n; i++)
            if (out->cases[i].state == PPB_CASE_COMPARED && !cases[i].interval)
                out->cases[i].p_holm = adj[j++];
        if ((rc = ppb_p_adjust_bh(p, k, adj, err)))
            goto done;
        for (int i = 0, j = 0; i < n; i++)
            if (out->cases[i].state == PPB_CASE_COMPARED && !cases[i].interval)
                out->cases[i].p_bh = adj[j++];
    }
done:
    free(p);
    free(adj);
    return rc;
}

static int weighted_mean(const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules, ppb_verdict_report *out,
                         ppb_err *err)
{
    int k = 0, rc = 0;
    double weight = 0;
    ppb_ab_interval *iv = malloc(sizeof *iv * (size_t)(out->n_compared > 0 ? out->n_compared : 1));
    double *w = malloc(sizeof *w * (size_t)(out->n_compared > 0 ? out->n_compared : 1));
    if (!iv || !w) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory for the geometric mean");
        goto done;
    }
    /* The mean is looked at with its cases: at the strictest case level. */
    double mean_alpha = out->interval_alpha;
    for (int i = 0; i < n; i++)
        if (out->cases[i].state == PPB_CASE_COMPARED) {
            iv[k] = out->cases[i].interval;
            w[k] = cases[i].weight;
            weight += w[k++];
            double a = case_alpha(out, &cases[i]);
            mean_alpha = a < mean_alpha ? a : mean_alpha;
        }
    if (k > 0 && weight > 0) {
        if ((rc = ppb_weighted_geomean(iv, w, k, mean_alpha, rules->shared_sd, &out->geomean, err)))
            goto done;
        out->have_geomean = 1;
    }
done:
    free(iv);
    free(w);
    return rc;
}

double ppb_detectable_change(double ratio, double lo, double hi, double level, double power)
{
    if (!(ratio > 0 && lo > 0 && hi > lo && isfinite(hi) && level > 0 && level < 1 && power > 0 && power < 1))
        return 0;
    double z = ppb_normal_quantile(0.5 + level / 2);
    /* The wider side: a change toward it is the one the run sees least well. */
    double side = fmax(log(ratio) - log(lo), log(hi) - log(ratio));
    return exp(side / z * (z + ppb_normal_quantile(power))) - 1;
}

#define SETTLE_CAP 100.0

/* The mean against the gain boundary b (ratio 1 / (1 + need)): the side of
 * its interval facing b must shrink to the distance between the estimate and
 * b; widths go as 1/sqrt(samples), so samples as the square of the ratio. */
static double settle_factor(const ppb_geomean *g, double need)
{
    double d = log(g->ratio), b = -log1p(need), lo = log(g->ratio_lo), hi = log(g->ratio_hi);
    if (!g->bounded || !(lo < b && b < hi))
        return 0;
    double side = d < b ? hi - d : d - lo, gap = fabs(d - b);
    double f = gap > 0 ? (side / gap) * (side / gap) : INFINITY;
    return f > SETTLE_CAP ? INFINITY : f;
}

/* The "could see" note every verdict ends with, and for an INCONCLUSIVE mean
 * what would likely settle it. */
static int detectable_notes(ppb_verdict_report *out, double need, double budget_ms, line_list *notes)
{
    const ppb_geomean *g = &out->geomean;
    if (!out->have_geomean || !g->bounded)
        return 0;
    out->detectable = ppb_detectable_change(g->ratio, g->ratio_lo, g->ratio_hi, g->level, PPB_DETECT_POWER);
    /* Past a doubling the figure says nothing a reader can use (separate noisy runs reach millions of percent). */
    int rc = out->detectable >= 1
                 ? add_line(notes, "note: this run could not see even a 2x change of the weighted mean (%.0f%% power "
                                   "at the mean's %.4g%% level): its interval is too wide to judge any real effect",
                            100 * PPB_DETECT_POWER, 100 * g->level)
                 : add_line(notes,
                      "note: this run could see a change of the weighted mean of %.1f%% or more (%.0f%% power at "
                      "the mean's %.4g%% level); smaller true effects would most likely read as no difference",
                      pct(out->detectable), 100 * PPB_DETECT_POWER, 100 * g->level);
    if (rc || out->verdict != PPB_VERDICT_INCONCLUSIVE)
        return rc;
    out->settle_factor = settle_factor(g, need);
    if (isinf(out->settle_factor))
        return add_line(notes, "note: the weighted mean sits on the %g%% gain boundary: more than %.0fx the samples "
                               "would be needed to settle it",
                        100 * need, SETTLE_CAP);
    if (!(out->settle_factor > 0))
        return 0;
    char budget[128] = ""; /* what that means in the proposal's own terms, when the budget is known */
    if (budget_ms > 0)
        snprintf(budget, sizeof budget, ": a sampling budget_ms of about %.0f (this run's: %.0f), max_rounds permitting",
                 out->settle_factor * budget_ms, budget_ms);
    return add_line(notes, "note: about %.1fx this run's samples would likely settle the weighted mean against the "
                           "%g%% gain boundary, if the effect is as measured%s",
                    out->settle_factor, 100 * need, budget);
}

int ppb_verdict_decide(const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules,
                       ppb_verdict_report *out, ppb_err *err)
{
    int rc;
    line_list reject = { 0 }, unresolved = { 0 }, notes = { 0 }, final = { 0 };
    memset(out, 0, sizeof *out);
    out->verdict = PPB_VERDICT_INCONCLUSIVE;
    if ((rc = check_rules(rules, err)))
        return rc;
    if (n < 1 || !cases)
        return ppb_fail(err, PPB_EINPUT, "a verdict needs at least one case");
    out->cases = calloc((size_t)n, sizeof *out->cases);
    if (!out->cases)
        return ppb_fail(err, PPB_ENOMEM, "out of memory for %d case outcomes", n);
    out->n_cases = n;
    const double t = rules->threshold;
    const double tol = ppb_verdict_tolerance(rules);
    out->regression_tolerance = tol;

    if ((rc = classify_states(cases, n, rules, out, &reject, &unresolved, &notes, err)))
        goto done;
    int untimed_in_family = 0;
    for (int i = 0; i < n; i++) {
        out->n_compared += out->cases[i].state == PPB_CASE_COMPARED;
        untimed_in_family += out->cases[i].state == PPB_CASE_NO_SAMPLES && cases[i].in_family;
    }
    out->family_size = out->n_compared + untimed_in_family + 1;
    out->interval_alpha = ppb_bonferroni_alpha(rules->alpha, out->family_size);
    if ((rc = compare_cases(cases, n, rules, out, err)) || (rc = weighted_mean(cases, n, rules, out, err)))
        goto done;

    /* Per-case regressions beyond the tolerance, and cases that might be.
     * Open cases are listed up to CASE_LINES_MAX; beyond, one line per kind
     * says how many more (a wall of alike lines hides the decision; the
     * cases table has each). Rejecting cases are each a cause: all listed. */
    int cases_clear = out->n_compared > 0, open_lines = 0, more_open[3] = {0, 0, 0}, one_session = 0;
    for (int i = 0; i < n; i++)
        one_session += out->cases[i].state == PPB_CASE_COMPARED && cases[i].sessions == 1;
    char what[160];
    for (int i = 0; i < n && !rc; i++) {
        const ppb_verdict_outcome *o = &out->cases[i];
        const ppb_ab_interval *iv = &o->interval;
        if (o->state == PPB_CASE_NO_SAMPLES)
            cases_clear = 0;
        if (o->state != PPB_CASE_COMPARED)
            continue;
        ppb_verdict_describe_ratio(what, sizeof what, iv->ratio, iv->ratio_lo, iv->ratio_hi, iv->bounded);
        /* Open: too few samples (0), maybe beyond on run-to-run noise (1), or until more samples (2). */
        int open_kind = !iv->bounded                                    ? 0
                        : iv->ratio_lo <= 1 + tol && iv->ratio_hi > 1 + tol ? (cases[i].interval ? 1 : 2)
                                                                        : -1;
        int listed = open_kind < 0 || open_lines++ < CASE_LINES_MAX;
        if (!listed) {
            cases_clear = 0;
            more_open[open_kind]++;
        } else if (!iv->bounded) {
            cases_clear = 0;
            long more = ppb_ab_samples_to_resolve(iv, cases[i].n_baseline, cases[i].n_candidate, t,
                                                  case_alpha(out, &cases[i]), MORE_SAMPLES_CAP);
            rc = add_line(&unresolved,
                          "INCONCLUSIVE: case '%s': %d + %d samples are too few for an interval at level %.4g%%; "
                          "at least %ld more per side",
                          cases[i].key, cases[i].n_baseline, cases[i].n_candidate,
                          100 * (1 - case_alpha(out, &cases[i])),
                          more);
        } else if (iv->ratio_lo > 1 + tol) {
            rc = add_line(&reject, "REJECT: case '%s' is %s, above the %g%% tolerated regression%s%s%s", cases[i].key,
                          what, 100 * tol, basis_open(&cases[i]), basis_text(&cases[i]), basis_close(&cases[i]));
        } else if (iv->ratio_hi > 1 + tol && cases[i].interval) {
            cases_clear = 0;
            rc = add_line(&unresolved, "INCONCLUSIVE: case '%s' is %s: it may be beyond the %g%% tolerated regression%s%s%s",
                          cases[i].key, what, 100 * tol, basis_open(&cases[i]), basis_text(&cases[i]),
                          basis_close(&cases[i]));
        } else if (iv->ratio_hi > 1 + tol) {
            cases_clear = 0;
            long more = ppb_ab_samples_to_resolve(iv, cases[i].n_baseline, cases[i].n_candidate, tol,
                                                  case_alpha(out, &cases[i]), MORE_SAMPLES_CAP);
            int near = more > 10L * (cases[i].n_baseline + cases[i].n_candidate);
            /* the hint scales the whole width with samples; the between-session part does not shrink */
            rc = add_line(&unresolved,
                          "INCONCLUSIVE: case '%s' is %s: it may be beyond the %g%% tolerated regression; "
                          "about %ld more samples per side would settle it%s%s",
                          cases[i].key, what, 100 * tol, more,
                          near ? " (the estimate is close to the tolerance)" : "",
                          cases[i].between_sd > 0 ? " if the sessions' spread shrank with them (it need not)" : "");
        }
        if (!rc && cases[i].sessions == 1 && one_session <= CASE_LINES_MAX)
            rc = add_line(&notes,
                          "note: case '%s' was measured in one session per side: its interval has no "
                          "between-session component",
                          cases[i].key);
    }
    if (!rc && more_open[0])
        rc = add_line(&unresolved, "INCONCLUSIVE: %d more case%s %s too few samples for an interval (the cases table "
                                   "lists each)",
                      more_open[0], plural(more_open[0]), more_open[0] == 1 ? "has" : "have");
    if (!rc && more_open[1])
        rc = add_line(&unresolved, "INCONCLUSIVE: %d more case%s may be beyond the %g%% tolerated regression on "
                                   "their run-to-run noise (the cases table lists each)",
                      more_open[1], plural(more_open[1]), 100 * tol);
    if (!rc && more_open[2])
        rc = add_line(&unresolved, "INCONCLUSIVE: %d more case%s may be beyond the %g%% tolerated regression; more "
                                   "samples would settle them (the cases table lists each)",
                      more_open[2], plural(more_open[2]), 100 * tol);
    if (!rc && one_session > CASE_LINES_MAX)
        rc = add_line(&notes, "note: %d cases were measured in one session per side: their intervals have no "
                              "between-session component",
                      one_session);
    if (rc) {
        rc = ppb_fail(err, rc, "out of memory for verdict reasons");
        goto done;
    }

    /* The weighted geometric mean against the minimum gain. Speedup = 1/ratio - 1. */
    int gain_clear = 0;
    const ppb_geomean *g = &out->geomean;
    if (!out->have_geomean) {
        rc = add_line(&unresolved, "INCONCLUSIVE: %s", out->n_compared ? "every compared case has weight 0: no "
                                                                         "geometric mean"
                                                                       : "no case could be compared");
    } else {
        ppb_verdict_describe_ratio(what, sizeof what, g->ratio, g->ratio_lo, g->ratio_hi, g->bounded);
        double need = ppb_verdict_gain_needed(rules);
        if (!g->bounded) {
            rc = add_line(&unresolved, "INCONCLUSIVE: the weighted geometric mean is %s: a case has too few samples",
                          what);
        } else if (rules->min_gain > 0 && 1 / g->ratio_lo - 1 < rules->min_gain) {
            double most = 1 / g->ratio_lo - 1;
            if (most < 0)
                rc = add_line(&reject,
                              "REJECT: the weighted geometric mean over %d case%s is %s: slower overall, no gain "
                              "toward the %g%% minimum",
                              g->n_cases, plural(g->n_cases), what, 100 * rules->min_gain);
            else
                rc = add_line(&reject,
                              "REJECT: the weighted geometric mean over %d case%s is %s: no meaningful gain, the "
                              "speedup is at most %.1f%%, below the %g%% minimum",
                              g->n_cases, plural(g->n_cases), what, pct(most), 100 * rules->min_gain);
        } else if (g->ratio_lo > 1 + t) {
            rc = add_line(&reject, "REJECT: the weighted geometric mean over %d case%s is %s: slower overall",
                          g->n_cases, plural(g->n_cases), what);
        } else if (g->ratio_hi < 1 / (1 + t) && g->ratio_hi <= 1 / (1 + rules->min_gain)) {
            gain_clear = 1;
        } else if (g->ratio_lo >= 1 / (1 + t) && g->ratio_hi <= 1 + t) {
            rc = add_line(&unresolved,
                          "INCONCLUSIVE: the weighted geometric mean over %d case%s is %s: no difference beyond "
                          "the %g%% practical threshold",
                          g->n_cases, plural(g->n_cases), what, 100 * t);
        } else {
            rc = add_line(&unresolved,
                          "INCONCLUSIVE: the weighted geometric mean over %d case%s is %s: ACCEPT needs the whole "
                          "interval above a %g%% speedup",
                          g->n_cases, plural(g->n_cases), what, 100 * need);
        }
        if (!rc && gain_clear && cases_clear && reject.n == 0)
            rc = add_line(&final,
                          "ACCEPT: the weighted geometric mean over %d case%s is %s, clearing the %g%% minimum "
                          "gain; no case can be beyond the %g%% tolerated regression; %s",
                          g->n_cases, plural(g->n_cases), what, 100 * rules->min_gain, 100 * tol,
                          rules->require_correct ? "every case is correct" : "correctness was not required");
    }
    if (rc) {
        rc = ppb_fail(err, rc, "out of memory for verdict reasons");
        goto done;
    }

    if (reject.n > 0) {
        out->verdict = PPB_VERDICT_REJECT;
        rc = move_lines(&final, &reject);
    } else if (gain_clear && cases_clear) {
        out->verdict = PPB_VERDICT_ACCEPT;
    } else {
        out->verdict = PPB_VERDICT_INCONCLUSIVE;
        rc = move_lines(&final, &unresolved);
    }
    if (!rc)
        rc = detectable_notes(out, rules->min_gain > t ? rules->min_gain : t, rules->budget_ms, &notes);
    if (!rc)
        rc = move_lines(&final, &notes);
    if (rc) {
        rc = ppb_fail(err, rc, "out of memory for verdict reasons");
        goto done;
    }
    out->reasons = final.v;
    out->n_reasons = final.n;
    final = (line_list){ 0 };
done:
    free_lines(&reject);
    free_lines(&unresolved);
    free_lines(&notes);
    free_lines(&final);
    return rc;
}

int ppb_verdict_case_settles_reject(const ppb_verdict_case *c, const ppb_verdict_rules *rules, int cases_most)
{
    ppb_verdict_outcome o;
    ppb_verdict_report one = {.cases = &o, .n_cases = 1, .n_compared = 1};
    line_list reject = {0}, unresolved = {0}, notes = {0};
    ppb_err err;
    memset(&o, 0, sizeof o);
    if (cases_most < 1 || check_rules(rules, &err) || classify_states(c, 1, rules, &one, &reject, &unresolved,
                                                                       &notes, &err)) {
        o.state = PPB_CASE_NO_SAMPLES; /* an error settles nothing */
    } else if (o.state == PPB_CASE_COMPARED) {
        one.interval_alpha = ppb_bonferroni_alpha(rules->alpha, cases_most + 1); /* as ppb_verdict_decide's family */
        if (compare_cases(c, 1, rules, &one, &err))
            o.state = PPB_CASE_NO_SAMPLES;
    }
    free_lines(&reject);
    free_lines(&unresolved);
    free_lines(&notes);
    if (o.state == PPB_CASE_INFEASIBLE || o.state == PPB_CASE_WRONG)
        return 1;
    return o.state == PPB_CASE_COMPARED && o.interval.bounded &&
           o.interval.ratio_lo > 1 + ppb_verdict_tolerance(rules);
}

void ppb_verdict_report_free(ppb_verdict_report *report)
{
    if (!report)
        return;
    for (int i = 0; i < report->n_reasons; i++)
        free(report->reasons[i]);
    free(report->reasons);
    free(report->cases);
    memset(report, 0, sizeof *report);
}

int ppb_verdict_reasons_text(const ppb_verdict_report *rep, char *buf, size_t len, ppb_err *err)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < rep->n_reasons; i++) {
        size_t need = strlen(rep->reasons[i]) + 1;
        if (n + need >= len)
            return ppb_fail(err, PPB_EINPUT,
                            "the verdict's %d reasons need more than %zu bytes: narrow the proposal (filter:) or "
                            "compare fewer cases",
                            rep->n_reasons, len);
        memcpy(buf + n, rep->reasons[i], need - 1);
        buf[n + need - 1] = '\n';
        n += need;
        buf[n] = '\0';
    }
    return PPB_OK;
}
