/* A suite's nights pooled over its cases: one series per group of cases (a
 * kernel), each night a trimmed mean over the group's cases of the case's
 * time against its own usual level. A change that moves every case of a
 * kernel (a compiler, a driver, a harness change) moves this series by the
 * same factor, while the cases' own night-to-night noise, where it is
 * independent from case to case (a busy CPU runner's time slices), shrinks
 * with the number of cases pooled. So a suite-wide 10% step that no single
 * case's noise lets trend see stands out in the pooled series; noise common
 * to every case (a slower night for all) stays, and the series' own measured
 * noise says so.
 *
 * The series is judged by trend.h's rules with a threshold derived from a
 * false-alert rate (ppb_trend_pool_options) instead of the hand-set multiple a
 * single, heavy-tailed case needs: a mean over many cases is close to normal.
 * docs/STATISTICS.md "Trend: the suite pooled". */
#ifndef PPB_TREND_POOL_H
#define PPB_TREND_POOL_H

#include "ppb_error.h"
#include "trend.h"

/* Fewer cases than this in a group: no pooled series (a mean over two or
 * three cases is those cases). */
#define PPB_TREND_POOL_MIN_CASES 4

/* The false alerts per night the pooled threshold is derived for. */
#define PPB_TREND_POOL_ALERT_RATE 0.001

typedef struct ppb_trend_pool_night {
    char run_id[24];
    char when[32];        /* the run's start (UTC text): nights sort by it */
    int seen;             /* the order nights were first seen in (the histories' own): ties of `when` */
    double *ratios;       /* log(case time / the case's own median), one per case that ran */
    int n, cap;
} ppb_trend_pool_night;

typedef struct ppb_trend_pool {
    char group[32];       /* "prefix_prefill", "paged_attention" */
    int recent;           /* the last nights left out of the cases' correlation: the trend window */
    double min_change;    /* the largest practical floor of the cases added (< 0: none yet) */
    int n_cases;
    double rho_sum;       /* the cases' lag-1 correlations (bias-corrected), summed */
    int rho_n;
    ppb_trend_pool_night *nights;
    int n_nights, cap_nights;
} ppb_trend_pool;

/* `recent`: the trend window (a step in it would look like drift). */
void ppb_trend_pool_init(ppb_trend_pool *p, const char *group, int recent);
void ppb_trend_pool_free(ppb_trend_pool *p);

/* Add one case's history (n points, oldest first; when[i] the start of
 * history[i]'s run, whose run_id names the night). `min_change`: the case's
 * own practical floor (its suite's trend: setting); the pooled series is
 * judged at the largest of its cases', since a step its cases' owners call
 * too small to matter does not matter pooled either. */
int ppb_trend_pool_add(ppb_trend_pool *p, const ppb_trend_point *history, const char *const *when, int n,
                       double min_change, ppb_err *err);

/* trend.h's options for a pooled series: `base` with the noise multiple and
 * the score both set to the threshold k derived from
 * PPB_TREND_POOL_ALERT_RATE. A night alerts when the nights after a step and
 * each of the `sustain` last nights are beyond it, so each may be with
 * probability (rate / 2)^(1 / s), s the sustain counted as independent nights
 * (1 + (sustain - 1)(1 - rho) / (1 + rho): fewer where nights drift, lag-1
 * correlation rho); widened for the error of the reference's median over
 * `window` nights (as many independent ones as rho leaves). Neither test goes
 * below what `case_noise` gives (when > 0): the floor becomes
 * max(floor, k x case_noise). */
void ppb_trend_pool_options(const ppb_trend_options *base, double rho, double case_noise,
                            ppb_trend_options *out);

typedef struct ppb_trend_pooled {
    char group[32];
    int n_cases;
    ppb_trend_point *points;   /* the series, oldest first (run ids borrowed from the pool); NULL from
                                  ppb_trend_pools_judge */
    int n;
    double case_noise;   /* the median over nights of the error the cases' spread gives the night's value */
    double rho;          /* the nights' lag-1 correlation: the cases' mean (before the window) */
    ppb_trend_options options;   /* what the series was judged with */
    ppb_trend_result result;
} ppb_trend_pooled;

/* Pool and judge: the series over the nights at least half of the group's
 * cases (and PPB_TREND_POOL_MIN_CASES) ran, options derived from `base` (its
 * floor replaced by the cases' largest), and
 * trend.h's verdict on it. out->n 0 (and result INSUFFICIENT_HISTORY) when
 * the group has too few cases. Free with ppb_trend_pooled_free. */
int ppb_trend_pool_judge(const ppb_trend_pool *p, const ppb_trend_options *base, ppb_trend_pooled *out,
                         ppb_err *err);
void ppb_trend_pooled_free(ppb_trend_pooled *out);

/* One pool per kernel (ppb_kernel_kind order): what `ppbench trend` and the
 * trend report keep while they walk a suite's cases. */
#define PPB_TREND_POOLS 2
typedef struct ppb_trend_pools {
    ppb_trend_pool kernel[PPB_TREND_POOLS];
} ppb_trend_pools;

void ppb_trend_pools_init(ppb_trend_pools *s, int window);
void ppb_trend_pools_free(ppb_trend_pools *s);
/* Judge each kernel's pool with at least PPB_TREND_POOL_MIN_CASES cases into
 * out[0 .. *n_out) (no points kept). */
int ppb_trend_pools_judge(const ppb_trend_pools *s, const ppb_trend_options *base,
                          ppb_trend_pooled out[PPB_TREND_POOLS], int *n_out, ppb_err *err);

#endif
