/* Nightly trend of one case (docs/STATISTICS.md "Trend"). */
#include "trend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "suite.h"

/* MAD -> standard deviation for normal data. */
#define MAD_TO_SD 1.4826

const char *ppb_trend_status_name(int status)
{
    switch (status) {
    case PPB_TREND_OK: return "ok";
    case PPB_TREND_REGRESSION: return "regression";
    case PPB_TREND_IMPROVEMENT: return "improvement";
    case PPB_TREND_OUTLIER: return "outlier";
    case PPB_TREND_INSUFFICIENT_HISTORY: return "insufficient-history";
    case PPB_TREND_NOT_TIMED: return "not-timed";
    default: return "?";
    }
}

void ppb_trend_options_default(ppb_trend_options *opt)
{
    /* One initialiser, so a field added to the options cannot be left unset. */
    static const ppb_trend_options defaults = {
        .window = 10, .min_history = 6, .min_segment = 3, .sustain = 2,
        .min_change = PPB_TREND_DEFAULT_FLOOR, .noise_multiplier = PPB_TREND_DEFAULT_NOISE_K, .min_score = 5.0,
        .noise_floor = 0.001,
    };
    *opt = defaults;
}

void ppb_trend_not_timed(const char *run_status, const char *why, ppb_trend_result *out)
{
    memset(out, 0, sizeof *out);
    out->status = PPB_TREND_NOT_TIMED;
    out->step_index = -1;
    out->rel_change = out->score = NAN;
    snprintf(out->reason, sizeof out->reason, "NOT_TIMED: not timed in the latest run: %s%s%s", run_status,
             why && *why ? ": " : "", why ? why : "");
}

static int check_options(const ppb_trend_options *o, ppb_err *err)
{
    if (o->min_segment < 2 || o->window < o->min_segment)
        return ppb_fail(err, PPB_EINPUT, "trend window %d and min_segment %d: need 2 <= min_segment <= window",
                        o->window, o->min_segment);
    if (o->sustain < 1 || o->min_history < o->min_segment + 1)
        return ppb_fail(err, PPB_EINPUT, "trend sustain %d must be >= 1 and min_history %d > min_segment %d",
                        o->sustain, o->min_history, o->min_segment);
    if (!(o->min_change >= 0) || !(o->min_score >= 0) || !(o->noise_floor >= 0) || !(o->noise_multiplier >= 0) ||
        !isfinite(o->min_change) || !isfinite(o->noise_multiplier))
        return ppb_fail(err, PPB_EINPUT, "trend thresholds must be finite and >= 0");
    return 0;
}

/* The 95% quantile of a normal z (the 90% quantile of |z|). */
#define HALF_NORMAL_Q90 1.6448536269514722

/* The night-to-night noise of the nights v[from, to) as a relative standard
 * deviation, a change point `split` (or -1) left out: the larger of
 *  - the 90% quantile of |consecutive log differences| (none across the
 *    split) over 1.645 sqrt(2): a case that flips between two levels
 *    (bimodal) changes level in many of its nights, and those differences
 *    count, while one step (one difference) or one outlier night (two) in
 *    twenty nights does not;
 *  - 1.4826 MAD of the log values about their own segment's median (before
 *    and after the split): a case whose nights wander slowly (correlated) has
 *    small differences but a wide spread.
 * Both are the standard deviation for independent normal nights. `d` has room
 * for 2 (to - from) values. 0 for fewer than 2 nights. */
static double night_noise(const double *v, int from, int to, int split, double *d)
{
    if (!(split > from && split < to))
        split = -1;
    int m = 0;
    for (int i = from + 1; i < to; i++)
        if (i != split)
            d[m++] = fabs(log(v[i]) - log(v[i - 1]));
    if (m < 1)
        return 0;
    double by_diff = ppb_quantile(d, m, 0.9) / (HALF_NORMAL_Q90 * sqrt(2.0));
    double *dev = d + m;
    int k = 0;
    for (int part = 0; part < 2; part++) {
        int lo = part ? (split < 0 ? to : split) : from, hi = part ? to : (split < 0 ? to : split);
        if (hi - lo < 1)
            continue;
        for (int i = lo; i < hi; i++)
            dev[k + i - lo] = log(v[i]);
        double med = ppb_median(dev + k, hi - lo);
        for (int i = lo; i < hi; i++)
            dev[k + i - lo] -= med;
        k += hi - lo;
    }
    double by_level = MAD_TO_SD * ppb_mad(dev, k);
    return by_diff > by_level ? by_diff : by_level;
}

double ppb_trend_night_noise_split(const double *values, int n, int split)
{
    if (n < 2)
        return NAN;
    double *d = malloc(sizeof *d * 2 * (size_t)n);
    if (!d)
        return NAN;
    double noise = night_noise(values, 0, n, split, d);
    free(d);
    return noise;
}

double ppb_trend_night_noise(const double *values, int n)
{
    return ppb_trend_night_noise_split(values, n, -1);
}

/* Median, floored robust scale, night-to-night noise and the relative
 * threshold of values[from, to). */
typedef struct reference {
    double median, scale, noise, threshold;
    const char *from;   /* "floor" or "noise" */
    int n;
} reference;

/* `noise` is the night-to-night noise the threshold comes from (the caller
 * knows which nights show it). */
static int make_reference(const double *v, int from, int to, double noise, const ppb_trend_options *o,
                          reference *r)
{
    r->n = to - from;
    r->median = ppb_median(v + from, r->n);
    double mad = ppb_mad(v + from, r->n);
    r->noise = noise;
    if (isnan(r->median) || isnan(mad) || isnan(r->noise))
        return PPB_ENOMEM;
    r->scale = fmax(MAD_TO_SD * mad, o->noise_floor * fabs(r->median));
    double by_noise = o->noise_multiplier * r->noise;
    r->threshold = by_noise > o->min_change ? by_noise : o->min_change;
    r->from = by_noise > o->min_change ? "noise" : "floor";
    return 0;
}

/* +1 (slower) / -1 (faster) when x is beyond both thresholds against r, else 0. */
static int beyond(double x, const reference *r, const ppb_trend_options *o)
{
    double rel = x / r->median - 1, z = r->scale > 0 ? (x - r->median) / r->scale : (x == r->median ? 0 : INFINITY);
    if (fabs(rel) >= r->threshold && fabs(z) >= o->min_score)
        return x > r->median ? 1 : -1;
    return 0;
}

/* The smallest step both tests pass against r: the relative threshold, and
 * min_score robust scales (what the nights could see). */
static double smallest_step(const reference *r, const ppb_trend_options *o)
{
    return fmax(r->threshold, r->median > 0 ? o->min_score * r->scale / r->median : INFINITY);
}

static void set_reference(ppb_trend_result *out, const reference *r, const ppb_trend_options *o)
{
    out->reference = r->median;
    out->scale = r->scale;
    out->n_reference = r->n;
    out->noise = r->noise;
    out->threshold = r->threshold;
    out->threshold_from = r->from;
    out->detectable = smallest_step(r, o);
}

/* "threshold 2.0% (floor)" / "threshold 6.0% (5 x noise 1.2%)" */
static void describe_threshold(char *buf, size_t size, const reference *r, const ppb_trend_options *o)
{
    if (strcmp(r->from, "noise") == 0)
        snprintf(buf, size, "threshold %.2f%% (%g x night-to-night noise %.2f%%)", 100 * r->threshold,
                 o->noise_multiplier, 100 * r->noise);
    else
        snprintf(buf, size, "threshold %.2f%% (floor; night-to-night noise %.2f%%)", 100 * r->threshold,
                 100 * r->noise);
    size_t n = strlen(buf);
    if (n < size)
        snprintf(buf + n, size - n, "; it sees sustained steps of %.2f%% or more", 100 * smallest_step(r, o));
}

/* Sum of |v - median| over v[from, to). */
static int l1_cost(const double *v, int from, int to, double *cost)
{
    double med = ppb_median(v + from, to - from);
    if (isnan(med))
        return PPB_ENOMEM;
    double c = 0;
    for (int i = from; i < to; i++)
        c += fabs(v[i] - med);
    *cost = c;
    return 0;
}

static const char *name_of(const ppb_trend_point *p, int i, char *buf, size_t size)
{
    if (p[i].run_id && *p[i].run_id)
        snprintf(buf, size, "'%s'", p[i].run_id);
    else
        snprintf(buf, size, "#%d", i);
    return buf;
}

int ppb_trend_analyse(const ppb_trend_point *history, int n, const ppb_trend_options *opt,
                      ppb_trend_result *out, ppb_err *err)
{
    ppb_trend_options defaults;
    if (!opt) {
        ppb_trend_options_default(&defaults);
        opt = &defaults;
    }
    int rc = check_options(opt, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    out->step_index = -1;
    if (n < 0 || (n > 0 && !history))
        return ppb_fail(err, PPB_EINPUT, "no trend history");
    for (int i = 0; i < n; i++)
        if (!isfinite(history[i].value) || history[i].value <= 0)
            return ppb_fail(err, PPB_EINPUT, "trend point %d is %g: medians must be finite and > 0", i,
                            history[i].value);
    if (n < opt->min_history) {
        out->status = PPB_TREND_INSUFFICIENT_HISTORY;
        snprintf(out->reason, sizeof out->reason, "INSUFFICIENT_HISTORY: %d run%s, at least %d needed", n,
                 n == 1 ? "" : "s", opt->min_history);
        return 0;
    }

    double *v = malloc(sizeof *v * (size_t)n), *d = malloc(sizeof *d * 2 * (size_t)n);
    if (!v || !d) {
        free(v);
        free(d);
        return ppb_fail(err, PPB_ENOMEM, "out of memory for a trend of %d runs", n);
    }
    for (int i = 0; i < n; i++)
        v[i] = history[i].value;
    const int last = n - 1;
    char who[160], from[160], thr[160];
    name_of(history, last, who, sizeof who);

    /* 1. The latest run against the trailing window before it, the noise
     *    measured over the recent region the step test searches (the last two
     *    windows): an accepted step older than that no longer inflates it. */
    reference win;
    const int win_from = last - opt->window > 0 ? last - opt->window : 0;
    const int region = n - 2 * opt->window > 0 ? n - 2 * opt->window : 0;
    if ((rc = make_reference(v, win_from, last, night_noise(v, region, last, -1, d), opt, &win)))
        goto oom;
    set_reference(out, &win, opt);
    out->rel_change = v[last] / win.median - 1;
    out->score = (v[last] - win.median) / win.scale;
    const int latest_dir = beyond(v[last], &win, opt);

    /* 2. The step test, whatever the latest score says (a step a few runs old
     *    has already pulled the trailing window's median and MAD towards it).
     *    The single change point minimising the L1 cost (sum of absolute
     *    deviations from each segment's median) over the last two windows,
     *    with at least `min_segment` runs before it. A step with more than
     *    `window` runs after it is the new normal, not news. */
    int best = -1;
    double best_cost = INFINITY;
    for (int s = region + opt->min_segment; s <= last; s++) {
        double before, after;
        if ((rc = l1_cost(v, region, s, &before)) || (rc = l1_cost(v, s, n, &after)))
            goto oom;
        if (before + after < best_cost) {   /* ties: the earliest */
            best_cost = before + after;
            best = s;
        }
    }

    /* 3. Sustained? The median after the change point and each of the last
     *    `sustain` runs must all be beyond the thresholds, the same way,
     *    against the runs before it. */
    int dir = 0;
    reference ref;
    if (best >= 0 && n - best >= opt->sustain && n - best <= opt->window) {
        int ref_from = best - opt->window > region ? best - opt->window : region;
        /* the noise of all the nights, not across the change point */
        if ((rc = make_reference(v, ref_from, best, night_noise(v, region, n, best, d), opt, &ref)))
            goto oom;
        double after = ppb_median(v + best, n - best);
        dir = beyond(after, &ref, opt);
        for (int i = n - opt->sustain; i < n && dir; i++)
            if (beyond(v[i], &ref, opt) != dir)
                dir = 0;
        if (dir) {
            out->status = dir > 0 ? PPB_TREND_REGRESSION : PPB_TREND_IMPROVEMENT;
            set_reference(out, &ref, opt);
            out->rel_change = after / ref.median - 1;
            out->score = (after - ref.median) / ref.scale;
            out->step_index = best;
            out->step_runs = n - best;
            if (history[best].run_id)
                snprintf(out->step_run_id, sizeof out->step_run_id, "%s", history[best].run_id);
            name_of(history, best, from, sizeof from);
            describe_threshold(thr, sizeof thr, &ref, opt);
            snprintf(out->reason, sizeof out->reason,
                     "%s: a step of %+.1f%% (score %+.1f) began at run %s and has held for %d runs, against the "
                     "median of the %d runs before it; %s",
                     dir > 0 ? "REGRESSION" : "IMPROVEMENT", 100 * out->rel_change, out->score, from,
                     out->step_runs, ref.n, thr);
            goto done;
        }
    }
    describe_threshold(thr, sizeof thr, &win, opt);
    if (latest_dir) {
        out->status = PPB_TREND_OUTLIER;
        snprintf(out->reason, sizeof out->reason,
                 "OUTLIER: latest run %s is %+.1f%% against the median of the %d runs before (score %+.1f; %s), "
                 "but no step is sustained over %d runs: an outlier, not a step",
                 who, 100 * out->rel_change, win.n, out->score, thr, opt->sustain);
        goto done;
    }
    out->status = PPB_TREND_OK;
    snprintf(out->reason, sizeof out->reason,
             "OK: latest run %s is %+.1f%% against the median of the %d runs before (score %+.1f; %s)", who,
             100 * out->rel_change, win.n, out->score, thr);
done:
    free(v);
    free(d);
    return 0;
oom:
    free(v);
    free(d);
    return ppb_fail(err, PPB_ENOMEM, "out of memory analysing a trend of %d runs", n);
}
