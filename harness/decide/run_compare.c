/* Two separate runs judged by each case's run-to-run noise
 * (docs/STATISTICS.md "Comparing separate runs"). */
#include "run_compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abtest.h"
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

/* P(|T| <= t) for Student's t with df degrees of freedom: the closed forms of
 * Abramowitz & Stegun 26.7.3 (odd df) and 26.7.4 (even df). */
static double t_two_sided(double t, int df)
{
    double th = atan(t / sqrt((double)df)), s = sin(th), c2 = cos(th) * cos(th), sum = 0, term;
    if (df % 2) {
        term = cos(th);
        for (int k = 3; k <= df; k += 2) {
            sum += term;
            term *= c2 * (k - 1) / k;
        }
        return 2 / 3.14159265358979323846 * (th + s * sum);
    }
    term = 1;
    for (int k = 2; k <= df; k += 2) {
        sum += term;
        term *= c2 * (k - 1) / k;
    }
    return s * sum;
}

double ppb_student_t_quantile(double alpha, int df)
{
    if (!(alpha > 0 && alpha < 1) || df < 1)
        return NAN;
    double lo = 0, hi = 1;
    while (t_two_sided(hi, df) < 1 - alpha && hi < 1e300)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (t_two_sided(mid, df) < 1 - alpha)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* ---- reason lines ---------------------------------------------------------- */

typedef struct lines {
    char **v;
    int n, cap;
} lines;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int add(lines *l, const char *fmt, ...)
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
    if (!(l->v[l->n] = strdup(buf)))
        return PPB_ENOMEM;
    l->n++;
    return 0;
}

/* Append b's lines to a (b emptied). */
static int append(lines *a, lines *b)
{
    for (int i = 0; i < b->n; i++) {
        if (a->n == a->cap) {
            int cap = a->cap ? 2 * a->cap : 8;
            char **v = realloc(a->v, sizeof *v * (size_t)cap);
            if (!v)
                return PPB_ENOMEM;
            a->v = v;
            a->cap = cap;
        }
        a->v[a->n++] = b->v[i];
        b->v[i] = NULL;
    }
    b->n = 0;
    return 0;
}

static void free_lines(lines *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static double pct(double f) { return fabs(f) < 0.0005 ? 0.0 : 100 * f; }

/* "7.1% slower [5.2%, 9.0%]" / "3.0% faster [2.1%, 3.9%]" */
static void describe(char *buf, size_t size, double r, double lo, double hi)
{
    if (r >= 1)
        snprintf(buf, size, "%.1f%% slower [%.1f%%, %.1f%%]", pct(r - 1), pct(lo - 1), pct(hi - 1));
    else
        snprintf(buf, size, "%.1f%% faster [%.1f%%, %.1f%%]", pct(1 / r - 1), pct(1 / hi - 1), pct(1 / lo - 1));
}

static const char *reason_of(const char *s) { return s && *s ? s : "no reason recorded"; }

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
    memset(r, 0, sizeof *r);
}

static int check_input(const ppb_run_compare_case *cases, int n, const ppb_run_compare_rules *r, ppb_err *err)
{
    const ppb_verdict_rules *v = &r->verdict;
    if (n < 1 || !cases)
        return ppb_fail(err, PPB_EINPUT, "a comparison needs at least one case");
    if (!(v->alpha > 0 && v->alpha < 1) || !(v->threshold >= 0) || !(v->max_regression >= 0) ||
        !(v->min_gain >= 0) || !isfinite(v->threshold) || !isfinite(v->max_regression) || !isfinite(v->min_gain))
        return ppb_fail(err, PPB_EINPUT, "comparison rules: alpha in (0, 1), thresholds finite and >= 0");
    if (r->min_history < 3 || r->max_history < r->min_history)
        return ppb_fail(err, PPB_EINPUT, "comparison history: need 3 <= min_history (%d) <= max_history (%d)",
                        r->min_history, r->max_history);
    for (int i = 0; i < n; i++) {
        if (!cases[i].key)
            return ppb_fail(err, PPB_EINPUT, "case %d has no key", i);
        if (!(cases[i].weight >= 0) || !isfinite(cases[i].weight))
            return ppb_fail(err, PPB_EINPUT, "case '%s' has weight %g", cases[i].key, cases[i].weight);
        for (int k = 0; k < cases[i].n_history; k++)
            if (!(cases[i].history[k] > 0) || !isfinite(cases[i].history[k]))
                return ppb_fail(err, PPB_EINPUT, "case '%s': history point %d is %g", cases[i].key, k,
                                cases[i].history[k]);
    }
    return PPB_OK;
}

/* States before timing: the verdict's order (feasibility, correctness), then
 * a time on both sides, then enough history. */
static int classify(const ppb_run_compare_case *c, int i, const ppb_run_compare_rules *r,
                    ppb_run_compare_report *out, lines *reject, lines *open, lines *notes)
{
    ppb_verdict_outcome *o = &out->v.cases[i];
    int base_wrong = !c->baseline_correct, cand_wrong = !c->candidate_correct, rc = 0;
    if (!c->baseline_feasible) {
        o->state = PPB_CASE_EXCLUDED;
        return add(notes, "note: case '%s' is left out: the baseline cannot run on the target (%s)", c->key,
                   reason_of(c->baseline_reason));
    }
    if (!c->candidate_feasible) {
        o->state = PPB_CASE_INFEASIBLE;
        return add(reject, "REJECT: case '%s': the candidate cannot run on the target: %s", c->key,
                   reason_of(c->candidate_reason));
    }
    if (r->verdict.require_correct && (base_wrong || cand_wrong)) {
        o->state = PPB_CASE_WRONG;
        if (cand_wrong)
            rc = add(reject, "REJECT: case '%s': the candidate's output is wrong: %s", c->key,
                     reason_of(c->candidate_reason));
        if (!rc && base_wrong)
            rc = add(reject, "REJECT: case '%s': the baseline's output is wrong (%s): a comparison against it "
                             "proves nothing", c->key, reason_of(c->baseline_reason));
        return rc;
    }
    if (!(c->baseline_ms > 0 && isfinite(c->baseline_ms)) || !(c->candidate_ms > 0 && isfinite(c->candidate_ms))) {
        o->state = PPB_CASE_NO_SAMPLES;
        return add(open, "INCONCLUSIVE: case '%s' was not timed in %s", c->key,
                   !(c->baseline_ms > 0) && !(c->candidate_ms > 0) ? "either run"
                   : !(c->baseline_ms > 0)                        ? "the baseline run"
                                                                  : "the candidate run");
    }
    int h = c->n_history < r->max_history ? c->n_history : r->max_history;
    out->n_history[i] = h;
    if (h < r->min_history) {
        o->state = PPB_CASE_NO_SAMPLES; /* stored as "no-history" */
        out->short_history[i] = 1;
        out->n_short++;
        return 0; /* one line for all of them, below */
    }
    o->state = PPB_CASE_COMPARED;
    if (base_wrong || cand_wrong)
        rc = add(notes, "note: case '%s': the %s output is wrong (correctness not required)", c->key,
                 cand_wrong ? "candidate's" : "baseline's");
    return rc;
}

int ppb_run_compare_decide(const ppb_run_compare_case *cases, int n, const ppb_run_compare_rules *rules,
                           ppb_run_compare_report *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    out->v.verdict = PPB_VERDICT_INCONCLUSIVE;
    int rc = check_input(cases, n, rules, err);
    if (rc)
        return rc;
    const ppb_verdict_rules *vr = &rules->verdict;
    ppb_verdict_report *v = &out->v;
    v->cases = calloc((size_t)n, sizeof *v->cases);
    out->noise = calloc((size_t)n, sizeof *out->noise);
    out->crit = calloc((size_t)n, sizeof *out->crit);
    out->n_history = calloc((size_t)n, sizeof *out->n_history);
    out->short_history = calloc((size_t)n, sizeof *out->short_history);
    ppb_ab_interval *iv = calloc((size_t)n, sizeof *iv);
    double *w = calloc((size_t)n, sizeof *w);
    lines reject = {0}, open = {0}, notes = {0}, final = {0};
    if (!v->cases || !out->noise || !out->crit || !out->n_history || !out->short_history || !iv || !w) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory comparing %d cases", n);
        goto done;
    }
    v->n_cases = n;
    const double t = vr->threshold, tol = vr->max_regression > t ? vr->max_regression : t;
    v->regression_tolerance = tol;
    for (int i = 0; i < n && !rc; i++) {
        out->noise[i] = out->crit[i] = NAN;
        rc = classify(&cases[i], i, rules, out, &reject, &open, &notes);
    }
    if (rc)
        goto oom;
    for (int i = 0; i < n; i++)
        v->n_compared += v->cases[i].state == PPB_CASE_COMPARED;
    v->family_size = v->n_compared + 1;
    v->interval_alpha = ppb_bonferroni_alpha(vr->alpha, v->family_size);

    /* Per case: d = log(candidate / baseline), the interval d +- c sqrt(2) sigma,
     * sigma the case's run-to-run noise, c Student's t at the family level. */
    int k = 0, cases_clear = v->n_compared > 0 && out->n_short == 0;
    char what[160];
    for (int i = 0; i < n && !rc; i++) {
        const ppb_run_compare_case *c = &cases[i];
        ppb_verdict_outcome *o = &v->cases[i];
        if (o->state == PPB_CASE_NO_SAMPLES)
            cases_clear = 0;
        if (o->state != PPB_CASE_COMPARED)
            continue;
        int h = out->n_history[i];
        const double *hist = c->history + (c->n_history - h);
        double sigma = ppb_trend_night_noise(hist, h);
        if (isnan(sigma)) {
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory for a case's noise");
            goto done;
        }
        int df = (int)floor(MAD_EFFICIENCY * (h - 1));
        double crit = ppb_student_t_quantile(v->interval_alpha, df < 1 ? 1 : df);
        double d = log(c->candidate_ms) - log(c->baseline_ms), half = crit * sqrt(2.0) * sigma;
        out->noise[i] = sigma;
        out->crit[i] = crit;
        ppb_ab_interval *x = &o->interval;
        x->shift = d;
        x->shift_lo = d - half;
        x->shift_hi = d + half;
        x->ratio = exp(d);
        x->ratio_lo = exp(x->shift_lo);
        x->ratio_hi = exp(x->shift_hi);
        x->level = x->level_achieved = 1 - v->interval_alpha;
        x->bounded = 1;
        o->cls = ppb_ab_classify(x->ratio_lo, x->ratio_hi, t);
        o->p_holm = o->p_bh = NAN;
        o->test.p = NAN;
        iv[k] = *x;
        w[k++] = c->weight;
        describe(what, sizeof what, x->ratio, x->ratio_lo, x->ratio_hi);
        if (x->ratio_lo > 1 + tol)
            rc = add(&reject, "REJECT: case '%s' is %s, above the %g%% tolerated regression (run-to-run noise "
                              "%.2f%% from %d plain runs)", c->key, what, 100 * tol, 100 * sigma, h);
        else if (x->ratio_hi > 1 + tol) {
            cases_clear = 0;
            rc = add(&open, "INCONCLUSIVE: case '%s' is %s: it may be beyond the %g%% tolerated regression "
                            "(run-to-run noise %.2f%% from %d plain runs)", c->key, what, 100 * tol, 100 * sigma, h);
        }
    }
    if (rc)
        goto oom;
    if (out->n_short > 0) {
        char first[96] = "";
        for (int i = 0; i < n; i++)
            if (out->short_history[i]) {
                snprintf(first, sizeof first, "%.80s", cases[i].key);
                break;
            }
        rc = add(&open, "INCONCLUSIVE: %d of %d cases have fewer than %d plain runs of history (e.g. '%s'): their "
                        "run-to-run noise is unknown, so they are not judged on time",
                 out->n_short, n, rules->min_history, first);
        if (rc)
            goto oom;
    }

    /* The weighted geometric mean, as the verdict judges it. */
    double weight = 0;
    for (int i = 0; i < k; i++)
        weight += w[i];
    int gain_clear = 0;
    if (k > 0 && weight > 0) {
        if ((rc = ppb_weighted_geomean(iv, w, k, v->interval_alpha, &v->geomean, err)))
            goto done;
        v->have_geomean = 1;
        const ppb_geomean *g = &v->geomean;
        describe(what, sizeof what, g->ratio, g->ratio_lo, g->ratio_hi);
        if (vr->min_gain > 0 && 1 / g->ratio_lo - 1 < vr->min_gain)
            rc = add(&reject, "REJECT: the weighted geometric mean over %d case%s is %s: no meaningful gain toward "
                              "the %g%% minimum", g->n_cases, g->n_cases == 1 ? "" : "s", what, 100 * vr->min_gain);
        else if (g->ratio_lo > 1 + t)
            rc = add(&reject, "REJECT: the weighted geometric mean over %d case%s is %s: slower overall", g->n_cases,
                     g->n_cases == 1 ? "" : "s", what);
        else if (g->ratio_hi < 1 / (1 + t) && g->ratio_hi <= 1 / (1 + vr->min_gain))
            gain_clear = 1;
        else
            rc = add(&open, "INCONCLUSIVE: the weighted geometric mean over %d case%s is %s: %s", g->n_cases,
                     g->n_cases == 1 ? "" : "s", what,
                     g->ratio_lo >= 1 / (1 + t) && g->ratio_hi <= 1 + t
                         ? "no difference beyond the practical threshold and the run-to-run noise"
                         : "not clear of the run-to-run noise");
        if (!rc && gain_clear && cases_clear && reject.n == 0)
            rc = add(&final, "ACCEPT: the weighted geometric mean over %d case%s is %s, beyond each case's "
                             "run-to-run noise; no case can be beyond the %g%% tolerated regression",
                     g->n_cases, g->n_cases == 1 ? "" : "s", what, 100 * tol);
    } else if (v->n_compared > 0) {
        rc = add(&open, "INCONCLUSIVE: every compared case has weight 0: no geometric mean");
    } else if (out->n_short == 0) {
        rc = add(&open, "INCONCLUSIVE: no case could be compared");
    }
    if (!rc)
        rc = add(&notes, "note: separate runs: each case's interval comes from its run-to-run noise over its "
                         "plain runs (at least %d), not from the runs' samples", rules->min_history);
    if (rc)
        goto oom;

    if (reject.n > 0) {
        v->verdict = PPB_VERDICT_REJECT;
        rc = append(&final, &reject);
    } else if (gain_clear && cases_clear) {
        v->verdict = PPB_VERDICT_ACCEPT;
    } else {
        v->verdict = PPB_VERDICT_INCONCLUSIVE;
        rc = append(&final, &open);
    }
    if (!rc)
        rc = append(&final, &notes);
    if (rc)
        goto oom;
    v->reasons = final.v;
    v->n_reasons = final.n;
    final = (lines){0};
    goto done;
oom:
    rc = ppb_fail(err, PPB_ENOMEM, "out of memory for the comparison's reasons");
done:
    free(iv);
    free(w);
    free_lines(&reject);
    free_lines(&open);
    free_lines(&notes);
    free_lines(&final);
    return rc;
}

/* ---- history from the store ------------------------------------------------ */

typedef struct hist_point {
    char uid[33];
    char started_at[32];
    double ms;
    int skip, seq;   /* seq: the order read, for runs started in the same second */
} hist_point;

typedef struct hist_walk {
    hist_point *p;
    int n, cap;
    const int64_t *skip;
} hist_walk;

static int hist_add(void *ctx, const ppb_history_point *p)
{
    hist_walk *h = ctx;
    int skip = p->run_id == h->skip[0] || p->run_id == h->skip[1];
    int timed = (strcmp(p->status, "ok") == 0 || strcmp(p->status, "noisy") == 0) && p->median_ms > 0 &&
                isfinite(p->median_ms);
    if (!skip && !timed)
        return 0;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 32;
        hist_point *g = realloc(h->p, sizeof *g * (size_t)cap);
        if (!g)
            return PPB_ENOMEM;
        h->p = g;
        h->cap = cap;
    }
    hist_point *q = &h->p[h->n++];
    snprintf(q->uid, sizeof q->uid, "%s", p->uid);
    snprintf(q->started_at, sizeof q->started_at, "%s", p->started_at);
    q->ms = p->median_ms;
    q->skip = skip;
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
                            double **out, int *n, ppb_err *err)
{
    hist_walk h = {NULL, 0, 0, NULL};
    int rc = PPB_OK;
    *out = NULL;
    *n = 0;
    for (int i = 0; i < n_src && !rc; i++) {
        h.skip = src[i].skip;
        rc = ppb_store_case_history(src[i].s, src[i].suite, key, "", "run", hist_add, &h, err);
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
    for (int i = 0; i < h.n && !rc; i++)
        if (!drop[i])
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

int ppb_run_compare_store(ppb_store *s, const ppb_run_compare_case *cases, int n,
                          const ppb_run_compare_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                          ppb_run_compare_report *rep, ppb_err *err)
{
    int rc = ppb_run_compare_decide(cases, n, rules, rep, err);
    ppb_verdict_case *vc = rc ? NULL : calloc((size_t)n, sizeof *vc);
    if (!rc && !vc)
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < n; i++) {
        vc[i].key = cases[i].key;
        vc[i].weight = cases[i].weight;
    }
    if (!rc)
        rc = ppb_verdict_record(&rep->v, vc, n, rec, pcs, err);
    for (int i = 0; !rc && i < n; i++)
        if (rep->short_history[i])
            snprintf(pcs[i].state, sizeof pcs[i].state, "no-history");
    if (!rc)
        rc = ppb_store_put_proposal(s, rec, pcs, n, err);
    free(vc);
    return rc;
}
