/* A/B inference for one case and across cases: is the candidate faster than
 * the baseline, by how much, and how sure are we? Pure functions over arrays
 * of timing samples (no I/O); docs/STATISTICS.md gives the formulas, the
 * references and the reasons for each choice.
 *
 * Conventions: samples are times (> 0, finite). The effect is the time ratio
 * candidate/baseline, estimated on log-times, so a ratio below 1 means the
 * candidate is faster. `alpha` is always two-sided: an interval has level
 * 1 - alpha. */
#ifndef PPB_ABTEST_H
#define PPB_ABTEST_H

#include <stdint.h>

#include "ppb_error.h"

/* Above this size per side (or with ties) the Mann-Whitney null distribution
 * is replaced by its normal approximation. */
#define PPB_MWU_EXACT_MAX 20

/* Standard normal distribution. */
double ppb_normal_cdf(double x);
double ppb_normal_quantile(double p);   /* p in (0, 1); Wichura's AS 241 */
/* The two-sided critical value c of Student's t with `df` (>= 1) degrees of
 * freedom: P(|T| <= c) = 1 - alpha (Abramowitz & Stegun 26.7.3-4, bisection). */
double ppb_student_t_quantile(double alpha, int df);

/* ---- Mann-Whitney U ------------------------------------------------------ */

/* Exact null distribution of U for sizes (n, m) (no ties): P(U <= u).
 * 1 <= n, m <= PPB_MWU_EXACT_MAX; NAN outside that range. */
double ppb_mwu_exact_cdf(int n, int m, double u);

/* Lower critical value of U for a two-sided test at `alpha` (exact null): the
 * largest u with P(U <= u) <= alpha/2 (reject when U <= u), -1 if none exists
 * (samples too small for this alpha). This is the value printed in the
 * published tables (n = m = 10, alpha 0.05: 23). */
int ppb_mwu_critical_value(int n, int m, double alpha);

typedef struct ppb_mwu {
    double u;       /* pairs with candidate > baseline, ties counted 1/2 */
    double z;       /* normal score with tie and continuity corrections (0 when exact) */
    double p;       /* two-sided p-value */
    int exact;      /* 1: exact null distribution, 0: normal approximation */
} ppb_mwu;

/* Two-sided Mann-Whitney U test. Exact when both sizes are <= PPB_MWU_EXACT_MAX
 * and there are no ties, else normal approximation with tie correction and
 * continuity correction (the choices of scipy.stats.mannwhitneyu). */
int ppb_mann_whitney(const double *baseline, int n, const double *candidate, int m,
                     ppb_mwu *out, ppb_err *err);

/* ---- one case: effect and interval --------------------------------------- */

typedef struct ppb_ab_interval {
    double shift;                 /* estimate of log(candidate) - log(baseline) */
    double shift_lo, shift_hi;    /* its interval; -inf/+inf when samples are too few */
    double ratio, ratio_lo, ratio_hi;   /* exp() of the three above: candidate/baseline */
    double level;                 /* nominal level, 1 - alpha */
    double level_achieved;        /* exact: 1 - 2 P(U <= k - 1) (>= level); otherwise = level */
    int64_t rank_lo, rank_hi;     /* 1-based order statistics of the pairwise differences; 0 if unbounded */
    int exact;                    /* 1: critical value from the exact distribution */
    int bounded;                  /* 1: both ends finite */
} ppb_ab_interval;

/* Hodges-Lehmann shift of `b` relative to `a` (median of all b[j] - a[i]) with
 * the distribution-free Moses interval at level 1 - alpha, on values as given
 * (no log). Selects order statistics of the n*m differences without building
 * them (O((n + m) log(nm)) time, O(n + m) memory), so any size works. */
int ppb_hodges_lehmann_shift(const double *a, int n, const double *b, int m, double alpha,
                             ppb_ab_interval *out, ppb_err *err);

/* The k-th smallest (1-based, 1 <= k <= n*m) of the differences b[j] - a[i],
 * by the same selection (a and b need not be sorted). */
int ppb_pairwise_diff_kth(const double *a, int n, const double *b, int m, int64_t k, double *kth,
                          ppb_err *err);

/* The same on log-times: the ratio candidate/baseline and its interval. */
int ppb_ab_hodges_lehmann(const double *baseline, int n, const double *candidate, int m,
                          double alpha, ppb_ab_interval *out, ppb_err *err);

/* Percentile bootstrap of the ratio of medians, median(candidate) /
 * median(baseline): `reps` resamples of each side, deterministic for a given
 * seed. Each tail needs replicates beyond it: reps * alpha / 2 >= 10, else
 * PPB_EINPUT (ppb_bootstrap_min_reps says how many). */
int ppb_ab_bootstrap_median_ratio(const double *baseline, int n, const double *candidate, int m,
                                  double alpha, int reps, uint64_t seed,
                                  ppb_ab_interval *out, ppb_err *err);
int ppb_bootstrap_min_reps(double alpha);

/* ---- classification against a practical threshold ------------------------ */

typedef enum {
    PPB_AB_UNRESOLVED = 0,   /* the interval straddles a threshold: more samples needed */
    PPB_AB_SAME = 1,         /* 1/(1+t) <= lo and hi <= 1+t */
    PPB_AB_FASTER = 2,       /* hi < 1/(1+t) */
    PPB_AB_SLOWER = 3,       /* lo > 1+t */
} ppb_ab_class;

const char *ppb_ab_class_name(int cls);   /* "unresolved", "same", "faster", "slower" */

/* Classify a ratio interval [lo, hi] against threshold t (e.g. 0.01). The
 * thresholds are symmetric in log space: faster by t means baseline/candidate
 * > 1 + t. Non-finite or NaN bounds give UNRESOLVED. */
int ppb_ab_classify(double ratio_lo, double ratio_hi, double threshold);

/* Additional samples per side (both sides get them, as interleaved pairs)
 * after which an interval of this width would resolve against threshold t,
 * assuming the estimate stays where it is and the width shrinks like
 * sqrt(1/n + 1/m). 0 when already resolved; `cap` when it would take more
 * (e.g. an estimate exactly on the threshold). For an unbounded interval, the
 * samples needed for any interval at level 1 - alpha to exist. */
long ppb_ab_samples_to_resolve(const ppb_ab_interval *iv, int n, int m, double threshold,
                               double alpha, long cap);

/* ---- across cases -------------------------------------------------------- */

/* Adjusted p-values in input order, as R's p.adjust(p, "holm") and
 * p.adjust(p, "BH"): monotone in the sorted order, capped at 1. Every p must
 * be in [0, 1]. `adjusted` may alias `p`. */
int ppb_p_adjust_holm(const double *p, int k, double *adjusted, ppb_err *err);
int ppb_p_adjust_bh(const double *p, int k, double *adjusted, ppb_err *err);

/* Per-interval alpha for simultaneous (Bonferroni) coverage of a family of
 * `family_size` intervals at level 1 - alpha: alpha / family_size. */
double ppb_bonferroni_alpha(double alpha, int family_size);

typedef struct ppb_geomean {
    double ratio, ratio_lo, ratio_hi;   /* weighted geometric mean of ratios and its interval */
    double log_ratio, log_se;           /* on the log scale */
    double level;
    double weight_total;
    int n_cases;                        /* cases with weight > 0 */
    int bounded;
} ppb_geomean;

/* Weighted geometric mean of the case ratios (weights >= 0, not all 0) with a
 * normal interval at level 1 - alpha: log G = sum w_i s_i / sum w_i with s_i
 * the case's shift, cases independent. Each side of the mean's interval comes
 * from the same side of the case intervals: se_lo_i = (s_i - shift_lo_i) / z_i
 * and se_hi_i = (shift_hi_i - s_i) / z_i, z_i of the case interval's achieved
 * level, so a case's long (widened, skewed) side does not widen the other side
 * of the mean (every case clearly slower once gave a mean reaching -10%).
 * log_se is the symmetric figure, (shift_hi - shift_lo) / (2 z_i) per case.
 * An unbounded case interval (with weight > 0) makes the mean's interval
 * unbounded.
 *
 * shared_sd: a part of every case's SD (log scale) that is one draw for all of
 * them, not independent (compare's baseline run off as a whole: run_compare.h),
 * and already inside each case's interval. Averaging does not shrink it: the
 * mean's variance gets shared_sd^2 (1 - sum w_i^2 / (sum w_i)^2) more, so that
 * it holds shared_sd^2 whole. 0: the cases are independent. */
int ppb_weighted_geomean(const ppb_ab_interval *cases, const double *weights, int k, double alpha, double shared_sd,
                         ppb_geomean *out, ppb_err *err);

#endif
