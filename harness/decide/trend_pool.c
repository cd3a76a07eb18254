/* A suite's nights pooled over its cases (trend_pool.h). */
#include "trend_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abtest.h"
#include "case.h"
#include "grow.h"
#include "stats.h"

void ppb_trend_pool_init(ppb_trend_pool *p, const char *group, int recent)
{
    memset(p, 0, sizeof *p);
    snprintf(p->group, sizeof p->group, "%s", group);
    p->recent = recent;
    p->min_change = -1;
}

void ppb_trend_pool_free(ppb_trend_pool *p)
{
    for (int i = 0; i < p->n_nights; i++)
        free(p->nights[i].ratios);
    free(p->nights);
    memset(p, 0, sizeof *p);
}

/* The lag-1 autocorrelation of x[0, n) with Kendall's small-sample bias
 * correction (the plain estimate is low by about (1 + 3 rho) / n: a third of
 * its size over a dozen nights). NAN with fewer than 6 values. */
static double lag1_correlation(const double *x, int n)
{
    if (n < 6)
        return NAN;
    double mean = 0, var = 0, cov = 0;
    for (int i = 0; i < n; i++)
        mean += x[i] / n;
    for (int i = 0; i < n; i++) {
        var += (x[i] - mean) * (x[i] - mean);
        if (i > 0)
            cov += (x[i] - mean) * (x[i - 1] - mean);
    }
    double rho = var > 0 ? cov / var : 0;
    return (rho * n + 1) / (n - 3); /* solves rho_hat = rho - (1 + 3 rho) / n */
}

static double clip_rho(double rho) { return !(rho > 0) ? 0 : rho > 0.9 ? 0.9 : rho; }

static ppb_trend_pool_night *night_of(ppb_trend_pool *p, const char *run_id, const char *when)
{
    for (int i = 0; i < p->n_nights; i++)
        if (strcmp(p->nights[i].run_id, run_id) == 0)
            return &p->nights[i];
    if (ppb_grow((void **)&p->nights, &p->cap_nights, p->n_nights, sizeof *p->nights, 32) != PPB_OK)
        return NULL;
    ppb_trend_pool_night *nt = &p->nights[p->n_nights++];
    memset(nt, 0, sizeof *nt);
    snprintf(nt->run_id, sizeof nt->run_id, "%s", run_id);
    snprintf(nt->when, sizeof nt->when, "%s", when);
    nt->seen = p->n_nights - 1;
    return nt;
}

int ppb_trend_pool_add(ppb_trend_pool *p, const ppb_trend_point *history, const char *const *when, int n,
                       double min_change, ppb_err *err)
{
    if (n < 1)
        return PPB_OK;
    p->min_change = fmax(p->min_change, min_change);
    double *v = malloc(sizeof *v * (size_t)n);
    if (!v)
        return ppb_fail(err, PPB_ENOMEM, "out of memory pooling a trend of %d runs", n);
    for (int i = 0; i < n; i++)
        v[i] = history[i].value;
    /* The case's usual level: the median over its whole history, so a step
     * in its last few nights does not move it. */
    double level = ppb_median(v, n);
    if (!(level > 0)) {
        free(v);
        return ppb_fail(err, PPB_EINPUT, "a trend history without a positive median");
    }
    for (int i = 0; i < n; i++)
        v[i] = log(v[i] / level);
    /* How much this case's nights drift, before the window a step would be in. */
    double rho = lag1_correlation(v, n - p->recent);
    if (!isnan(rho))
        p->rho_sum += rho, p->rho_n++;
    int rc = PPB_OK;
    for (int i = 0; i < n && !rc; i++) {
        ppb_trend_pool_night *nt = night_of(p, history[i].run_id ? history[i].run_id : "", when[i]);
        if (!nt || ppb_grow((void **)&nt->ratios, &nt->cap, nt->n, sizeof *nt->ratios, 16) != PPB_OK)
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory pooling a trend");
        else
            nt->ratios[nt->n++] = v[i];
    }
    free(v);
    p->n_cases += rc == PPB_OK;
    return rc;
}

/* The mean of the middle half (a quarter cut from each end) of x[0, n), and
 * the standard error its spread gives it: nearly the mean's precision on
 * normal noise (1.09 times its error), and a few cases that flip between
 * modes or were hit by a busy neighbour cannot move it far. 1 without memory. */
static int trimmed_mean(const double *x, int n, double *mean, double *error)
{
    *mean = ppb_midmean(x, n);
    *error = 1.4826 * ppb_mad(x, n) * 1.09 / sqrt(n);
    return isnan(*mean) || isnan(*error);
}

static int by_time(const void *a, const void *b)
{
    const ppb_trend_pool_night *x = *(ppb_trend_pool_night *const *)a, *y = *(ppb_trend_pool_night *const *)b;
    int c = strcmp(x->when, y->when);
    return c ? c : (x->seen > y->seen) - (x->seen < y->seen);
}

void ppb_trend_pool_options(const ppb_trend_options *base, double rho, double case_noise,
                            ppb_trend_options *out)
{
    *out = *base;
    int sustain = base->sustain > 0 ? base->sustain : 1, window = base->window > 0 ? base->window : 1;
    double shrink = (1 - clip_rho(rho)) / (1 + clip_rho(rho));
    double each = pow(PPB_TREND_POOL_ALERT_RATE / 2, 1.0 / (1 + (sustain - 1) * shrink));
    /* The reference's median over `window` nights has a standard error of
     * sqrt(pi / 2 / nights) nights' noise: a difference against it varies
     * that much more. */
    double k = ppb_normal_quantile(1 - each) * sqrt(1 + M_PI / 2 / (window * shrink));
    out->noise_multiplier = k;
    out->min_score = k;
    /* A series of twenty nights can look quieter than its nights are; the
     * cases' spread within each night says how much the pooled value must
     * vary where the cases vary independently. */
    if (case_noise > 0) {
        out->min_change = fmax(base->min_change, k * case_noise);
        out->noise_floor = fmax(base->noise_floor, case_noise);
    }
}

int ppb_trend_pool_judge(const ppb_trend_pool *p, const ppb_trend_options *base, ppb_trend_pooled *out,
                         ppb_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->group, sizeof out->group, "%s", p->group);
    out->n_cases = p->n_cases;
    out->result.status = PPB_TREND_INSUFFICIENT_HISTORY;
    out->result.step_index = -1;
    out->case_noise = out->rho = NAN;
    snprintf(out->result.reason, sizeof out->result.reason,
             "INSUFFICIENT_HISTORY: %d case%s, at least %d to pool", p->n_cases, p->n_cases == 1 ? "" : "s",
             PPB_TREND_POOL_MIN_CASES);
    if (p->n_cases < PPB_TREND_POOL_MIN_CASES)
        return PPB_OK;
    size_t cap = (size_t)(p->n_nights ? p->n_nights : 1);
    const ppb_trend_pool_night **order = malloc(sizeof *order * cap);
    double *errors = malloc(sizeof *errors * cap), log_value = 0;
    out->points = malloc(sizeof *out->points * cap);
    int rc = order && errors && out->points ? PPB_OK : PPB_ENOMEM;
    for (int i = 0; i < p->n_nights && !rc; i++)
        order[i] = &p->nights[i];
    if (!rc)
        qsort(order, (size_t)p->n_nights, sizeof *order, by_time);
    /* A night a filtered or partial run timed only a few of the cases is
     * left out: its value would be those few cases' noise. */
    int need = (p->n_cases + 1) / 2 > PPB_TREND_POOL_MIN_CASES ? (p->n_cases + 1) / 2 : PPB_TREND_POOL_MIN_CASES;
    for (int i = 0; i < p->n_nights && !rc; i++) {
        if (order[i]->n < need)
            continue;
        if (trimmed_mean(order[i]->ratios, order[i]->n, &log_value, &errors[out->n]))
            rc = PPB_ENOMEM;
        out->points[out->n].run_id = order[i]->run_id;
        out->points[out->n].value = exp(log_value);
        out->n++;
    }
    if (!rc && out->n > 0) {
        out->case_noise = ppb_median(errors, out->n);
        /* Drift: the cases' mean correlation, precise where the series' own
         * (a dozen nights) is not. Drift common to the cases shows in the
         * series' noise, which the threshold follows. */
        out->rho = clip_rho(p->rho_n ? p->rho_sum / p->rho_n : 0);
        ppb_trend_options floored = *base;
        if (p->min_change >= 0)
            floored.min_change = p->min_change;
        ppb_trend_pool_options(&floored, out->rho, out->case_noise, &out->options);
        rc = ppb_trend_analyse(out->points, out->n, &out->options, &out->result, err);
    }
    free(order);
    free(errors);
    if (rc == PPB_ENOMEM)
        return ppb_fail(err, PPB_ENOMEM, "out of memory pooling a trend");
    return rc;
}

void ppb_trend_pooled_free(ppb_trend_pooled *out)
{
    free(out->points);
    out->points = NULL;
}

void ppb_trend_pools_init(ppb_trend_pools *s, int window)
{
    for (int k = 0; k < PPB_TREND_POOLS; k++)
        ppb_trend_pool_init(&s->kernel[k], ppb_kernel_name((ppb_kernel_kind)k), window);
}

void ppb_trend_pools_free(ppb_trend_pools *s)
{
    for (int k = 0; k < PPB_TREND_POOLS; k++)
        ppb_trend_pool_free(&s->kernel[k]);
}

int ppb_trend_pools_judge(const ppb_trend_pools *s, const ppb_trend_options *base,
                          ppb_trend_pooled out[PPB_TREND_POOLS], int *n_out, ppb_err *err)
{
    *n_out = 0;
    for (int k = 0; k < PPB_TREND_POOLS; k++) {
        if (s->kernel[k].n_cases < PPB_TREND_POOL_MIN_CASES)
            continue;
        ppb_trend_pooled *o = &out[(*n_out)++];
        int rc = ppb_trend_pool_judge(&s->kernel[k], base, o, err);
        ppb_trend_pooled_free(o);
        if (rc)
            return rc;
    }
    return PPB_OK;
}
