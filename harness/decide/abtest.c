/* A/B inference: Mann-Whitney U, Hodges-Lehmann with the Moses interval, a
 * bootstrap of the median ratio, classification, multiple comparisons and the
 * weighted geometric mean. docs/STATISTICS.md explains every formula here. */
#include "abtest.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* ---- small helpers ------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, good enough for resampling
 * and pivots, and the same stream on every platform. */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform integer in [0, bound), bound > 0, without modulo bias. */
static uint64_t uniform_below(uint64_t *state, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do
        r = splitmix64_next(state);
    while (r >= limit);
    return r % bound;
}

/* Quickselect: the k-th smallest (0-based) of x[0..n), reordering x.
 * Three-way partition so runs of equal values (timer quantisation) cost
 * nothing extra. */
static double select_in_place(double *x, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        double a = x[lo], b = x[mid], c = x[hi];
        double pivot = (a < b) ? ((b < c) ? b : (a < c ? c : a)) : ((a < c) ? a : (b < c ? c : b));
        int64_t lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            if (x[i] < pivot) {
                double t = x[lt]; x[lt] = x[i]; x[i] = t;
                lt++, i++;
            } else if (x[i] > pivot) {
                double t = x[gt]; x[gt] = x[i]; x[i] = t;
                gt--;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt - 1;
        else if (k > gt)
            lo = gt + 1;
        else
            return pivot;
    }
    return x[k];
}

static double median_in_place(double *x, int64_t n)
{
    double upper = select_in_place(x, n, n / 2);
    if (n % 2)
        return upper;
    /* After selecting n/2 everything left of it is <= it: the lower middle is their maximum. */
    double lower = x[0];
    for (int64_t i = 1; i < n / 2; i++)
        lower = x[i] > lower ? x[i] : lower;
    return 0.5 * (lower + upper);
}

static int check_times(const double *x, int n, const char *side, ppb_err *err)
{
    if (n < 1 || !x)
        return ppb_fail(err, PPB_EINPUT, "the %s has no samples", side);
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i]) || x[i] <= 0)
            return ppb_fail(err, PPB_EINPUT, "%s sample %d is %g: times must be finite and > 0", side, i, x[i]);
    return 0;
}

static int check_alpha(double alpha, ppb_err *err)
{
    if (!(alpha > 0 && alpha < 1))
        return ppb_fail(err, PPB_EINPUT, "alpha %g is not in (0, 1)", alpha);
    return 0;
}

/* ---- normal distribution ------------------------------------------------- */

double ppb_normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* Wichura, M. J. (1988) Algorithm AS 241: The percentage points of the normal
 * distribution. Applied Statistics 37, 477-484. Relative accuracy ~1e-16. */
double ppb_normal_quantile(double p)
{
    if (!(p > 0 && p < 1))
        return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
    double q = p - 0.5, r, val;
    if (fabs(q) <= 0.425) {
        r = 0.180625 - q * q;
        return q * (((((((r * 2509.0809287301226727 + 33430.575583588128105) * r + 67265.770927008700853) * r +
                        45921.953931549871457) * r + 13731.693765509461125) * r + 1971.5909503065514427) * r +
                     133.14166789178437745) * r + 3.387132872796366608) /
               (((((((r * 5226.495278852545925 + 28729.085735721942674) * r + 39307.89580009271061) * r +
                    21213.794301586595867) * r + 5394.1960214247511077) * r + 687.1870074920579083) * r +
                 42.313330701600911252) * r + 1.0);
    }
    r = q < 0 ? p : 1 - p;
    r = sqrt(-log(r));
    if (r <= 5.0) {
        r -= 1.6;
        val = (((((((r * 7.7454501427834140764e-4 + 0.0227238449892691845833) * r + 0.24178072517745061177) * r +
                   1.27045825245236838258) * r + 3.64784832476320460504) * r + 5.7694972214606914055) * r +
                4.6303378461565452959) * r + 1.42343711074968357734) /
              (((((((r * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r +
                   0.14810397642748007459) * r + 0.68976733498510000455) * r + 1.6763848301838038494) * r +
                2.05319162663775882187) * r + 1.0);
    } else {
        r -= 5.0;
        val = (((((((r * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r +
                   0.026532189526576123093) * r + 0.29656057182850489123) * r + 1.7848265399172913358) * r +
                5.4637849111641143699) * r + 6.6579046435011037772) /
              (((((((r * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r +
                   7.868691311456132591e-4) * r + 0.0148753612908506148525) * r + 0.13692988092273580531) * r +
                0.59983220655588793769) * r + 1.0);
    }
    return q < 0 ? -val : val;
}

/* ---- exact null distribution of U ---------------------------------------- */

/* counts[u] = number of arrangements of n baseline and m candidate values with
 * U = u, for u = 0..n*m (sums to C(n+m, n)). Mann & Whitney's (1947)
 * recurrence: the largest of the n+m values is either a baseline value, which
 * beats all m candidates, or a candidate value, which beats none:
 *   f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u),  f(0, j, u) = f(i, 0, u) = [u == 0].
 * Rolled over i; counts stay exact in a double (C(40, 20) < 2^38). Which side
 * "beats" is immaterial: the distribution is symmetric. */
static int mwu_exact_counts(int n, int m, double *counts)
{
    int width = n * m + 1;
    double *prev = calloc((size_t)(m + 1) * (size_t)width, sizeof *prev);
    double *cur = calloc((size_t)(m + 1) * (size_t)width, sizeof *cur);
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return PPB_ENOMEM;
    }
    for (int j = 0; j <= m; j++)
        prev[(size_t)j * width] = 1.0;   /* i = 0 */
    for (int i = 1; i <= n; i++) {
        memset(cur, 0, sizeof *cur * (size_t)(m + 1) * (size_t)width);
        cur[0] = 1.0;                    /* j = 0 */
        for (int j = 1; j <= m; j++) {
            double *f = cur + (size_t)j * width;
            const double *left = cur + (size_t)(j - 1) * width;   /* f(i, j-1, .) */
            const double *up = prev + (size_t)j * width;          /* f(i-1, j, .) */
            for (int u = 0; u <= i * j; u++)
                f[u] = left[u] + (u >= j ? up[u - j] : 0.0);
        }
        double *t = prev; prev = cur; cur = t;
    }
    memcpy(counts, prev + (size_t)m * width, sizeof *counts * (size_t)width);
    free(prev);
    free(cur);
    return 0;
}

/* Cumulative probabilities cdf[u] = P(U <= u), u = 0..n*m. */
static int mwu_exact_cdf_table(int n, int m, double *cdf)
{
    int rc = mwu_exact_counts(n, m, cdf);
    if (rc)
        return rc;
    double total = 0;
    for (int u = 0; u <= n * m; u++)
        total += cdf[u];
    double run = 0;
    for (int u = 0; u <= n * m; u++) {
        run += cdf[u];
        cdf[u] = run / total;
    }
    return 0;
}

double ppb_mwu_exact_cdf(int n, int m, double u)
{
    if (n < 1 || m < 1 || n > PPB_MWU_EXACT_MAX || m > PPB_MWU_EXACT_MAX || isnan(u))
        return NAN;
    if (u < 0)
        return 0.0;
    if (u >= (double)n * m)
        return 1.0;
    double *cdf = malloc(sizeof *cdf * (size_t)(n * m + 1));
    if (!cdf || mwu_exact_cdf_table(n, m, cdf)) {
        free(cdf);
        return NAN;
    }
    double v = cdf[(int)floor(u)];
    free(cdf);
    return v;
}

/* Tolerance for "P <= alpha/2" so a probability equal to alpha/2 up to
 * rounding counts as within it. */
#define PROB_EPS 1e-12

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

int ppb_mwu_critical_value(int n, int m, double alpha)
{
    if (n < 1 || m < 1 || n > PPB_MWU_EXACT_MAX || m > PPB_MWU_EXACT_MAX || !(alpha > 0 && alpha < 1))
        return -1;
    double *cdf = malloc(sizeof *cdf * (size_t)(n * m + 1));
    if (!cdf || mwu_exact_cdf_table(n, m, cdf)) {
        free(cdf);
        return -1;
    }
    int crit = -1;
    for (int u = 0; u <= n * m && cdf[u] <= alpha / 2 * (1 + PROB_EPS); u++)
        crit = u;
    free(cdf);
    return crit;
}

/* ---- Mann-Whitney U test ------------------------------------------------- */

typedef struct tagged {
    double v;
    int group;   /* 0 baseline, 1 candidate */
} tagged;

static int cmp_tagged(const void *pa, const void *pb)
{
    double a = ((const tagged *)pa)->v, b = ((const tagged *)pb)->v;
    return (a > b) - (a < b);
}

/* Rank sum of the candidate (midranks) and the tie term sum(t^3 - t). */
static int rank_candidate(const double *a, int n, const double *b, int m, double *rank_sum,
                          double *tie_term)
{
    int total = n + m;
    tagged *all = malloc(sizeof *all * (size_t)total);
    if (!all)
        return PPB_ENOMEM;
    for (int i = 0; i < n; i++)
        all[i] = (tagged){ a[i], 0 };
    for (int j = 0; j < m; j++)
        all[n + j] = (tagged){ b[j], 1 };
    qsort(all, (size_t)total, sizeof *all, cmp_tagged);
    double rs = 0, ties = 0;
    for (int i = 0; i < total;) {
        int j = i;
        while (j + 1 < total && all[j + 1].v == all[i].v)
            j++;
        double t = j - i + 1, midrank = 0.5 * ((i + 1) + (j + 1));
        for (int k = i; k <= j; k++)
            if (all[k].group == 1)
                rs += midrank;
        ties += t * t * t - t;
        i = j + 1;
    }
    free(all);
    *rank_sum = rs;
    *tie_term = ties;
    return 0;
}

/* Variance of U under the null, with the tie correction. */
static double mwu_variance(int n, int m, double tie_term)
{
    double N = (double)n + m;
    return (double)n * m / 12.0 * ((N + 1) - tie_term / (N * (N - 1)));
}

int ppb_mann_whitney(const double *baseline, int n, const double *candidate, int m, ppb_mwu *out,
                     ppb_err *err)
{
    int rc;
    if ((rc = check_times(baseline, n, "baseline", err)) || (rc = check_times(candidate, m, "candidate", err)))
        return rc;
    double rank_sum, tie_term;
    if ((rc = rank_candidate(baseline, n, candidate, m, &rank_sum, &tie_term)))
        return ppb_fail(err, rc, "out of memory ranking %d samples", n + m);
    double nm = (double)n * m, u = rank_sum - (double)m * (m + 1) / 2.0;
    memset(out, 0, sizeof *out);
    out->u = u;
    if (n <= PPB_MWU_EXACT_MAX && m <= PPB_MWU_EXACT_MAX && tie_term == 0) {
        double tail = fmin(u, nm - u);   /* symmetric: P(U >= u) = P(U <= nm - u) */
        double cdf = ppb_mwu_exact_cdf(n, m, tail);
        if (isnan(cdf))
            return ppb_fail(err, PPB_ENOMEM, "out of memory for the exact U distribution");
        out->exact = 1;
        out->p = fmin(1.0, 2.0 * cdf);
        return 0;
    }
    double var = mwu_variance(n, m, tie_term), dev = u - nm / 2.0;
    if (!(var > 0)) {       /* every value equal: no evidence either way */
        out->p = 1.0;
        return 0;
    }
    double corrected = fmax(fabs(dev) - 0.5, 0.0);
    out->z = (dev < 0 ? -corrected : corrected) / sqrt(var);
    out->p = fmin(1.0, erfc(fabs(out->z) / sqrt(2.0)));
    return 0;
}

/* ---- Hodges-Lehmann and the Moses interval ------------------------------- */

/* Below this many candidates the selection gathers them and quickselects. */
#define PAIRWISE_GATHER_MAX 1024

/* The k-th smallest (1-based) of the n*m differences b[j] - a[i], with a and b
 * sorted ascending, without materialising them (the matrix is sorted along
 * rows and columns: Monahan 1984, "Fast computation of the Hodges-Lehmann
 * location estimator", ACM TOMS 10, Algorithm 616, in its randomised form).
 * Row i keeps an active column range [lo[i], hi[i]); each round a random
 * active difference is the pivot, its rank is counted by a two-pointer sweep,
 * and the ranges shrink to the side holding rank k. Differences are always
 * computed as b[j] - a[i]; IEEE rounding is monotone, so the computed matrix
 * stays sorted and the counts agree with a brute-force sort. */
static int pairwise_diff_select(const double *a, int n, const double *b, int m, int64_t k,
                                double *result)
{
    int rc = PPB_ENOMEM;
    int *lo = calloc((size_t)n, sizeof *lo), *hi = malloc(sizeof *hi * (size_t)n);
    int *cnt_lt = malloc(sizeof *cnt_lt * (size_t)n), *cnt_le = malloc(sizeof *cnt_le * (size_t)n);
    double *gather = NULL;
    uint64_t rng = 0x5EEDC0FFEEull ^ (uint64_t)k;
    if (!lo || !hi || !cnt_lt || !cnt_le)
        goto done;
    for (int i = 0; i < n; i++)
        hi[i] = m;

    for (;;) {
        int64_t active = 0, below = 0;
        for (int i = 0; i < n; i++) {
            active += hi[i] - lo[i];
            below += lo[i];
        }
        int64_t want = k - below;   /* rank of the answer among the active differences */
        if (active <= PAIRWISE_GATHER_MAX) {
            gather = malloc(sizeof *gather * (size_t)(active > 0 ? active : 1));
            if (!gather)
                goto done;
            int64_t g = 0;
            for (int i = 0; i < n; i++)
                for (int j = lo[i]; j < hi[i]; j++)
                    gather[g++] = b[j] - a[i];
            *result = select_in_place(gather, active, want - 1);
            rc = 0;
            goto done;
        }
        int64_t pick = (int64_t)uniform_below(&rng, (uint64_t)active);
        int pi = 0;
        while (pick >= hi[pi] - lo[pi]) {
            pick -= hi[pi] - lo[pi];
            pi++;
        }
        double pivot = b[lo[pi] + pick] - a[pi];

        /* cnt_lt[i] = #{j : b[j] - a[i] < pivot}, nondecreasing in i. */
        int64_t n_lt = 0, n_le = 0;
        int jl = 0, je = 0;
        for (int i = 0; i < n; i++) {
            while (jl < m && b[jl] - a[i] < pivot)
                jl++;
            if (je < jl)
                je = jl;
            while (je < m && b[je] - a[i] <= pivot)
                je++;
            cnt_lt[i] = jl;
            cnt_le[i] = je;
            n_lt += jl;
            n_le += je;
        }
        if (k <= n_lt) {
            for (int i = 0; i < n; i++)
                hi[i] = cnt_lt[i] < hi[i] ? cnt_lt[i] : hi[i];
        } else if (k > n_le) {
            for (int i = 0; i < n; i++)
                lo[i] = cnt_le[i] > lo[i] ? cnt_le[i] : lo[i];
        } else {
            *result = pivot;
            rc = 0;
            goto done;
        }
    }
done:
    free(lo);
    free(hi);
    free(cnt_lt);
    free(cnt_le);
    free(gather);
    return rc;
}

/* Rank k of the lower interval end: [D(k), D(nm + 1 - k)] covers the shift
 * with probability 1 - 2 P(U <= k - 1). 0 means no interval at this level. */
static int64_t moses_rank(int n, int m, double alpha, int exact, double tie_term, double *achieved)
{
    int64_t nm = (int64_t)n * m, k;
    if (exact) {
        int crit = ppb_mwu_critical_value(n, m, alpha);
        k = crit + 1;
        *achieved = k >= 1 ? 1.0 - 2.0 * ppb_mwu_exact_cdf(n, m, (double)crit) : NAN;
    } else {
        /* Largest k with P(U <= k - 1) <= alpha/2 under the continuity-corrected
         * normal: (k - 1 + 0.5 - nm/2) / sd <= -z. */
        double sd = sqrt(fmax(mwu_variance(n, m, tie_term), 0.0));
        double z = ppb_normal_quantile(1.0 - alpha / 2.0);
        k = (int64_t)floor((double)nm / 2.0 - z * sd + 0.5);
        *achieved = 1.0 - alpha;
    }
    if (k > (nm + 1) / 2)
        k = (nm + 1) / 2;
    return k < 1 ? 0 : k;
}

static int has_ties(const double *a, int n, const double *b, int m)
{
    int i = 0, j = 0;
    double last = NAN;
    while (i < n || j < m) {   /* merge of two sorted arrays */
        double v = (j >= m || (i < n && a[i] <= b[j])) ? a[i++] : b[j++];
        if (v == last)
            return 1;
        last = v;
    }
    return 0;
}

/* The interval on the time scale: ratio = exp(shift of the log-times). */
static void shifts_to_ratios(ppb_ab_interval *out)
{
    out->ratio = exp(out->shift);
    out->ratio_lo = exp(out->shift_lo);
    out->ratio_hi = exp(out->shift_hi);
}

int ppb_hodges_lehmann_shift(const double *a, int n, const double *b, int m, double alpha,
                             ppb_ab_interval *out, ppb_err *err)
{
    int rc;
    if (n < 1 || m < 1 || !a || !b)
        return ppb_fail(err, PPB_EINPUT, "Hodges-Lehmann needs samples on both sides (have %d and %d)", n, m);
    if ((rc = check_alpha(alpha, err)))
        return rc;
    for (int i = 0; i < n; i++)
        if (!isfinite(a[i]))
            return ppb_fail(err, PPB_EINPUT, "baseline value %d is not finite", i);
    for (int j = 0; j < m; j++)
        if (!isfinite(b[j]))
            return ppb_fail(err, PPB_EINPUT, "candidate value %d is not finite", j);

    double *sa = ppb_sorted_copy(a, n), *sb = ppb_sorted_copy(b, m);
    rc = PPB_ENOMEM;
    if (!sa || !sb)
        goto done;
    memset(out, 0, sizeof *out);
    out->level = 1.0 - alpha;

    int64_t nm = (int64_t)n * m;
    double mid_hi;
    if ((rc = pairwise_diff_select(sa, n, sb, m, nm / 2 + 1, &mid_hi)))
        goto done;
    if (nm % 2) {
        out->shift = mid_hi;
    } else {
        double mid_lo;
        if ((rc = pairwise_diff_select(sa, n, sb, m, nm / 2, &mid_lo)))
            goto done;
        out->shift = 0.5 * (mid_lo + mid_hi);
    }

    int ties = has_ties(sa, n, sb, m);
    double tie_term = 0;
    if (ties || n > PPB_MWU_EXACT_MAX || m > PPB_MWU_EXACT_MAX) {
        double rank_sum;
        if ((rc = rank_candidate(sa, n, sb, m, &rank_sum, &tie_term)))
            goto done;
    }
    out->exact = !ties && n <= PPB_MWU_EXACT_MAX && m <= PPB_MWU_EXACT_MAX;
    int64_t k = moses_rank(n, m, alpha, out->exact, tie_term, &out->level_achieved);
    if (k == 0) {
        out->shift_lo = -INFINITY;
        out->shift_hi = INFINITY;
        out->level_achieved = 1.0;
    } else {
        out->rank_lo = k;
        out->rank_hi = nm + 1 - k;
        if ((rc = pairwise_diff_select(sa, n, sb, m, out->rank_lo, &out->shift_lo)) ||
            (rc = pairwise_diff_select(sa, n, sb, m, out->rank_hi, &out->shift_hi)))
            goto done;
        out->bounded = 1;
    }
    shifts_to_ratios(out);
    rc = 0;
done:
    if (rc == PPB_ENOMEM)
        ppb_fail(err, rc, "out of memory for Hodges-Lehmann on %d x %d samples", n, m);
    free(sa);
    free(sb);
    return rc;
}

int ppb_pairwise_diff_kth(const double *a, int n, const double *b, int m, int64_t k, double *kth,
                          ppb_err *err)
{
    if (n < 1 || m < 1 || !a || !b || k < 1 || k > (int64_t)n * m)
        return ppb_fail(err, PPB_EINPUT, "rank %lld is not within the %d x %d differences", (long long)k, n, m);
    double *sa = ppb_sorted_copy(a, n), *sb = ppb_sorted_copy(b, m);
    int rc = sa && sb ? pairwise_diff_select(sa, n, sb, m, k, kth) : PPB_ENOMEM;
    if (rc)
        ppb_fail(err, rc, "out of memory selecting among %d x %d differences", n, m);
    free(sa);
    free(sb);
    return rc;
}

static double *log_copy(const double *x, int n)
{
    double *l = malloc(sizeof *l * (size_t)n);
    if (l)
        for (int i = 0; i < n; i++)
            l[i] = log(x[i]);
    return l;
}

int ppb_ab_hodges_lehmann(const double *baseline, int n, const double *candidate, int m, double alpha,
                          ppb_ab_interval *out, ppb_err *err)
{
    int rc;
    if ((rc = check_times(baseline, n, "baseline", err)) || (rc = check_times(candidate, m, "candidate", err)))
        return rc;
    double *la = log_copy(baseline, n), *lb = log_copy(candidate, m);
    if (!la || !lb)
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory for %d + %d log-times", n, m);
    else
        rc = ppb_hodges_lehmann_shift(la, n, lb, m, alpha, out, err);
    free(la);
    free(lb);
    return rc;
}

/* ---- bootstrap of the median ratio --------------------------------------- */

int ppb_bootstrap_min_reps(double alpha)
{
    if (!(alpha > 0 && alpha < 1))
        return -1;
    double reps = ceil(20.0 / alpha - 1e-9);
    return reps > 1e9 ? -1 : (int)reps;
}

int ppb_ab_bootstrap_median_ratio(const double *baseline, int n, const double *candidate, int m,
                                  double alpha, int reps, uint64_t seed, ppb_ab_interval *out,
                                  ppb_err *err)
{
    int rc;
    if ((rc = check_times(baseline, n, "baseline", err)) || (rc = check_times(candidate, m, "candidate", err)) ||
        (rc = check_alpha(alpha, err)))
        return rc;
    int need = ppb_bootstrap_min_reps(alpha);
    if (need < 0 || reps < need)
        return ppb_fail(err, PPB_EINPUT,
                        "%d bootstrap replicates are too few for alpha %g: each tail needs 10, so at least %d",
                        reps, alpha, need);
    double *la = log_copy(baseline, n), *lb = log_copy(candidate, m);
    double *scratch = malloc(sizeof *scratch * (size_t)(n > m ? n : m));
    double *shifts = malloc(sizeof *shifts * (size_t)reps);
    rc = PPB_ENOMEM;
    if (!la || !lb || !scratch || !shifts) {
        ppb_fail(err, rc, "out of memory for a bootstrap of %d replicates", reps);
        goto done;
    }
    memset(out, 0, sizeof *out);
    memcpy(scratch, la, sizeof *la * (size_t)n);
    double med_a = median_in_place(scratch, n);
    memcpy(scratch, lb, sizeof *lb * (size_t)m);
    out->shift = median_in_place(scratch, m) - med_a;   /* log of the median ratio: log is monotone */

    uint64_t state = seed;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < n; i++)
            scratch[i] = la[uniform_below(&state, (uint64_t)n)];
        double ma = median_in_place(scratch, n);
        for (int j = 0; j < m; j++)
            scratch[j] = lb[uniform_below(&state, (uint64_t)m)];
        shifts[r] = median_in_place(scratch, m) - ma;
    }
    out->shift_lo = ppb_quantile(shifts, reps, alpha / 2.0);
    out->shift_hi = ppb_quantile(shifts, reps, 1.0 - alpha / 2.0);
    if (isnan(out->shift_lo) || isnan(out->shift_hi)) {
        ppb_fail(err, rc, "out of memory sorting %d bootstrap replicates", reps);
        goto done;
    }
    out->level = out->level_achieved = 1.0 - alpha;
    out->bounded = 1;
    shifts_to_ratios(out);
    rc = 0;
done:
    free(la);
    free(lb);
    free(scratch);
    free(shifts);
    return rc;
}

/* ---- classification ------------------------------------------------------ */

const char *ppb_ab_class_name(int cls)
{
    switch (cls) {
    case PPB_AB_UNRESOLVED: return "unresolved";
    case PPB_AB_SAME: return "same";
    case PPB_AB_FASTER: return "faster";
    case PPB_AB_SLOWER: return "slower";
    default: return "?";
    }
}

int ppb_ab_classify(double ratio_lo, double ratio_hi, double threshold)
{
    if (!(ratio_lo > 0) || !isfinite(ratio_hi) || !(ratio_lo <= ratio_hi) || !(threshold >= 0))
        return PPB_AB_UNRESOLVED;
    double up = 1.0 + threshold, down = 1.0 / (1.0 + threshold);
    if (ratio_hi < down)
        return PPB_AB_FASTER;
    if (ratio_lo > up)
        return PPB_AB_SLOWER;
    if (ratio_lo >= down && ratio_hi <= up)
        return PPB_AB_SAME;
    return PPB_AB_UNRESOLVED;
}

long ppb_ab_samples_to_resolve(const ppb_ab_interval *iv, int n, int m, double threshold, double alpha,
                               long cap)
{
    if (cap < 0)
        cap = 0;
    if (!iv || n < 1 || m < 1 || !(threshold >= 0) || !(alpha > 0 && alpha < 1))
        return cap;
    if (ppb_ab_classify(iv->ratio_lo, iv->ratio_hi, threshold) != PPB_AB_UNRESOLVED)
        return 0;
    if (!iv->bounded) {
        /* Smallest balanced addition for which the Moses interval exists at all. */
        for (long s = 1; s <= cap; s++) {
            int nn = (int)(n + s), mm = (int)(m + s);
            double achieved;
            int exact = nn <= PPB_MWU_EXACT_MAX && mm <= PPB_MWU_EXACT_MAX;
            if (moses_rank(nn, mm, alpha, exact, 0.0, &achieved) >= 1)
                return s;
        }
        return cap;
    }
    double T = log1p(threshold), c = iv->shift, lo = iv->shift_lo, hi = iv->shift_hi;
    double factor;   /* how many times narrower the interval must get */
    if (c > T)
        factor = (c - lo) / (c - T);
    else if (c < -T)
        factor = (hi - c) / (-T - c);
    else if (c < T && c > -T)
        factor = fmax((hi - c) / (T - c), (c - lo) / (c + T));
    else
        return cap;      /* the estimate sits on the threshold: no width resolves it */
    if (!isfinite(factor))
        return cap;
    if (factor <= 1.0)
        return 1;        /* resolved up to the strict/non-strict edge */
    double target = (1.0 / n + 1.0 / m) / (factor * factor);
    long lo_s = 0, hi_s = cap;
    if (1.0 / ((double)n + cap) + 1.0 / ((double)m + cap) > target)
        return cap;
    while (lo_s + 1 < hi_s) {   /* smallest s with 1/(n+s) + 1/(m+s) <= target */
        long mid = lo_s + (hi_s - lo_s) / 2;
        if (1.0 / ((double)n + mid) + 1.0 / ((double)m + mid) <= target)
            hi_s = mid;
        else
            lo_s = mid;
    }
    return hi_s;
}

/* ---- across cases -------------------------------------------------------- */

typedef struct indexed_p {
    double p;
    int index;
} indexed_p;

static int cmp_indexed_p(const void *pa, const void *pb)
{
    const indexed_p *a = pa, *b = pb;
    if (a->p != b->p)
        return (a->p > b->p) - (a->p < b->p);
    return (a->index > b->index) - (a->index < b->index);   /* stable */
}

static indexed_p *sorted_p(const double *p, int k, ppb_err *err, int *rc)
{
    *rc = 0;
    if (k < 1 || !p) {
        *rc = ppb_fail(err, PPB_EINPUT, "no p-values to adjust");
        return NULL;
    }
    for (int i = 0; i < k; i++)
        if (!(p[i] >= 0 && p[i] <= 1)) {
            *rc = ppb_fail(err, PPB_EINPUT, "p-value %d is %g, not in [0, 1]", i, p[i]);
            return NULL;
        }
    indexed_p *s = malloc(sizeof *s * (size_t)k);
    if (!s) {
        *rc = ppb_fail(err, PPB_ENOMEM, "out of memory adjusting %d p-values", k);
        return NULL;
    }
    for (int i = 0; i < k; i++)
        s[i] = (indexed_p){ p[i], i };
    qsort(s, (size_t)k, sizeof *s, cmp_indexed_p);
    return s;
}

int ppb_p_adjust_holm(const double *p, int k, double *adjusted, ppb_err *err)
{
    int rc;
    indexed_p *s = sorted_p(p, k, err, &rc);
    if (!s)
        return rc;
    double run = 0;
    for (int i = 0; i < k; i++) {
        run = fmax(run, fmin(1.0, (double)(k - i) * s[i].p));
        adjusted[s[i].index] = run;
    }
    free(s);
    return 0;
}

int ppb_p_adjust_bh(const double *p, int k, double *adjusted, ppb_err *err)
{
    int rc;
    indexed_p *s = sorted_p(p, k, err, &rc);
    if (!s)
        return rc;
    double run = 1.0;
    for (int i = k - 1; i >= 0; i--) {
        run = fmin(run, (double)k / (i + 1) * s[i].p);
        adjusted[s[i].index] = run;
    }
    free(s);
    return 0;
}

double ppb_bonferroni_alpha(double alpha, int family_size)
{
    return family_size > 1 ? alpha / family_size : alpha;
}

int ppb_weighted_geomean(const ppb_ab_interval *cases, const double *weights, int k, double alpha, double shared_sd,
                         ppb_geomean *out, ppb_err *err)
{
    int rc;
    if ((rc = check_alpha(alpha, err)))
        return rc;
    if (k < 1 || !cases || !weights)
        return ppb_fail(err, PPB_EINPUT, "no cases for a geometric mean");
    if (!(shared_sd >= 0) || !isfinite(shared_sd))
        return ppb_fail(err, PPB_EINPUT, "a shared SD of %g for a geometric mean", shared_sd);
    memset(out, 0, sizeof *out);
    double sum_w = 0, sum_w2 = 0, sum_ws = 0, sum_w2v = 0, sum_w2v_lo = 0, sum_w2v_hi = 0;
    int bounded = 1;
    for (int i = 0; i < k; i++) {
        double w = weights[i];
        if (!(w >= 0) || !isfinite(w))
            return ppb_fail(err, PPB_EINPUT, "case %d has weight %g: weights must be finite and >= 0", i, w);
        if (w == 0)
            continue;
        const ppb_ab_interval *c = &cases[i];
        if (!isfinite(c->shift))
            return ppb_fail(err, PPB_EINPUT, "case %d has no estimate", i);
        sum_w += w;
        sum_w2 += w * w;
        sum_ws += w * c->shift;
        out->n_cases++;
        if (!c->bounded) {
            bounded = 0;
            continue;
        }
        double level = c->level_achieved > 0 ? c->level_achieved : c->level;
        if (!(level > 0 && level < 1))
            return ppb_fail(err, PPB_EINPUT, "case %d has interval level %g", i, level);
        double z = ppb_normal_quantile(0.5 + level / 2.0);
        double se = (c->shift_hi - c->shift_lo) / (2.0 * z);
        /* Each side of the case's interval by itself: a widened or skewed
         * interval must not lend its long side to the short one. */
        double se_lo = (c->shift - c->shift_lo) / z, se_hi = (c->shift_hi - c->shift) / z;
        sum_w2v += w * w * se * se;
        sum_w2v_lo += w * w * se_lo * se_lo;
        sum_w2v_hi += w * w * se_hi * se_hi;
    }
    if (!(sum_w > 0))
        return ppb_fail(err, PPB_EINPUT, "every weight is 0");
    out->weight_total = sum_w;
    out->level = 1.0 - alpha;
    out->log_ratio = sum_ws / sum_w;
    out->ratio = exp(out->log_ratio);
    out->bounded = bounded;
    if (bounded) {
        /* the cases hold shared^2 sum w^2 / W^2 of it between them; the mean holds it whole */
        double shared = shared_sd * shared_sd * (1.0 - sum_w2 / (sum_w * sum_w));
        out->log_se = sqrt(sum_w2v / (sum_w * sum_w) + shared);
        double q = ppb_normal_quantile(1.0 - alpha / 2.0);
        out->ratio_lo = exp(out->log_ratio - q * sqrt(sum_w2v_lo / (sum_w * sum_w) + shared));
        out->ratio_hi = exp(out->log_ratio + q * sqrt(sum_w2v_hi / (sum_w * sum_w) + shared));
    } else {
        out->log_se = INFINITY;
        out->ratio_lo = 0.0;
        out->ratio_hi = INFINITY;
    }
    return 0;
}
