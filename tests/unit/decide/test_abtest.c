/* A/B inference against textbook and reference values.
 *
 * Where the numbers come from:
 * - Critical values of U: the published two-sided tables (e.g. Siegel &
 *   Castellan 1988, table J; any statistics text), also checked by brute-force
 *   enumeration of all C(n+m, n) arrangements in Python.
 * - Exact P(U <= u): enumeration of all arrangements (Python, itertools).
 * - p-values: scipy 1.17.1 scipy.stats.mannwhitneyu(candidate, baseline,
 *   method='exact' or 'asymptotic', use_continuity=True), data written below.
 * - Hollander & Wolfe (1973) p. 69 (R's ?wilcox.test example): W = 35,
 *   p = 0.2544, difference in location 0.305, 95% CI [-0.15, 0.76].
 * - Holm and BH: R's p.adjust formulas (statsmodels multipletests gives the
 *   same numbers); each value is also checkable by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "abtest.h"
#include "stats.h"
#include "stats_sim.h"

#define assert_close(actual, expected, tol)                                                         \
    do {                                                                                            \
        double a_ = (actual), e_ = (expected);                                                      \
        if (!(fabs(a_ - e_) <= (tol)))                                                              \
            fail_msg("%s = %.17g, expected %.17g (tol %g)", #actual, a_, e_, (double)(tol));      \
    } while (0)

/* Hollander & Wolfe (1973), p. 69: permeability at term (x) and at 12-26 weeks (y). */
static const double hw_x[] = { 0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46 };
static const double hw_y[] = { 1.15, 0.88, 0.90, 0.74, 1.21 };

static void test_normal_distribution(void **state)
{
    (void)state;
    assert_close(ppb_normal_quantile(0.975), 1.959963984540054, 1e-14);
    assert_close(ppb_normal_quantile(0.995), 2.5758293035489004, 1e-14);
    assert_close(ppb_normal_quantile(0.5), 0.0, 1e-16);
    assert_close(ppb_normal_quantile(1e-10), -6.361340902404056, 1e-12);
    assert_close(ppb_normal_quantile(0.025), -1.959963984540054, 1e-14);
    assert_close(ppb_normal_cdf(1.959963984540054), 0.975, 1e-15);
    assert_close(ppb_normal_cdf(-3.0), 0.0013498980316300933, 1e-17);
    for (double p = 1e-8; p < 1; p *= 3.7)
        assert_close(ppb_normal_cdf(ppb_normal_quantile(p)), p, p * 1e-12);
    assert_true(isnan(ppb_normal_quantile(1.5)));
}

static void test_critical_values_match_published_tables(void **state)
{
    (void)state;
    /* Two-sided alpha 0.05 and 0.01, n = m. */
    static const int n[] = { 5, 6, 7, 8, 9, 10, 11, 12, 15, 20 };
    static const int crit05[] = { 2, 5, 8, 13, 17, 23, 30, 37, 64, 127 };
    static const int crit01[] = { 0, 2, 4, 7, 11, 16, 21, 27, 51, 105 };
    for (size_t i = 0; i < sizeof n / sizeof *n; i++) {
        assert_int_equal(ppb_mwu_critical_value(n[i], n[i], 0.05), crit05[i]);
        assert_int_equal(ppb_mwu_critical_value(n[i], n[i], 0.01), crit01[i]);
    }
    assert_int_equal(ppb_mwu_critical_value(5, 10, 0.05), 8);
    assert_int_equal(ppb_mwu_critical_value(10, 5, 0.05), 8);   /* symmetric in the sizes */
    assert_int_equal(ppb_mwu_critical_value(3, 8, 0.05), 2);
    assert_int_equal(ppb_mwu_critical_value(4, 4, 0.01), -1);   /* no test possible */
    assert_int_equal(ppb_mwu_critical_value(21, 5, 0.05), -1);  /* beyond the exact range */
}

static void test_exact_cdf_matches_enumeration(void **state)
{
    (void)state;
    assert_close(ppb_mwu_exact_cdf(10, 10, 23), 0.02162852627248912, 1e-15);
    assert_close(ppb_mwu_exact_cdf(10, 10, 24), 0.026212951135551756, 1e-15);
    assert_close(ppb_mwu_exact_cdf(7, 9, 12), 0.02089160839160839, 1e-15);
    assert_close(ppb_mwu_exact_cdf(9, 7, 12), 0.02089160839160839, 1e-15);
    assert_close(ppb_mwu_exact_cdf(7, 9, 30), 0.4590909090909091, 1e-15);
    assert_close(ppb_mwu_exact_cdf(5, 10, 8), 0.01998001998001998, 1e-15);
    assert_close(ppb_mwu_exact_cdf(1, 1, 0), 0.5, 0);
    assert_close(ppb_mwu_exact_cdf(20, 20, 400), 1.0, 0);
    assert_close(ppb_mwu_exact_cdf(20, 20, -1), 0.0, 0);
    /* Symmetry about nm/2 for the largest exact size. */
    assert_close(ppb_mwu_exact_cdf(20, 20, 150) + ppb_mwu_exact_cdf(20, 20, 249), 1.0, 1e-12);
}

static void test_mann_whitney_p_values(void **state)
{
    (void)state;
    ppb_mwu r;
    ppb_err err;
    /* Hollander & Wolfe, x as the candidate: U = 35, exact two-sided p. */
    assert_int_equal(ppb_mann_whitney(hw_y, 5, hw_x, 10, &r, &err), 0);
    assert_close(r.u, 35, 0);
    assert_int_equal(r.exact, 1);
    assert_close(r.p, 0.2544122544122544, 1e-13);
    /* Swapping the sides gives U' = nm - U and the same p. */
    assert_int_equal(ppb_mann_whitney(hw_x, 10, hw_y, 5, &r, &err), 0);
    assert_close(r.u, 15, 0);
    assert_close(r.p, 0.2544122544122544, 1e-13);

    /* No ties, 6 vs 8: exact. */
    static const double a[] = { 3.1, 2.7, 3.9, 3.3, 2.9, 3.6 };
    static const double b[] = { 3.8, 4.1, 3.5, 4.6, 3.7, 4.4, 4.0, 3.0 };
    assert_int_equal(ppb_mann_whitney(a, 6, b, 8, &r, &err), 0);
    assert_close(r.u, 40, 0);
    assert_int_equal(r.exact, 1);
    assert_close(r.p, 0.042624042624042624, 1e-13);

    /* Ties, small: normal approximation with tie and continuity corrections. */
    static const double ta[] = { 1.02, 1.05, 1.05, 1.10, 1.07, 1.03 };
    static const double tb[] = { 1.08, 1.10, 1.12, 1.05, 1.15, 1.11, 1.09 };
    assert_int_equal(ppb_mann_whitney(ta, 6, tb, 7, &r, &err), 0);
    assert_close(r.u, 36.5, 0);
    assert_int_equal(r.exact, 0);
    assert_close(r.p, 0.030948989790008933, 1e-12);
    assert_true(r.z > 0);

    /* 25 vs 30 with heavy ties (values on a 0.01 grid). */
    static const double la[] = { 2.00, 2.01, 1.99, 1.97, 1.99, 1.97, 2.00, 2.04, 1.99, 1.98, 2.01, 2.01, 2.00,
                                 1.97, 2.00, 2.02, 1.96, 1.99, 1.94, 1.96, 1.95, 1.99, 1.96, 2.01, 2.00 };
    static const double lb[] = { 2.01, 1.95, 2.00, 2.02, 2.02, 1.97, 2.01, 1.99, 2.00, 2.05,
                                 2.00, 2.02, 2.05, 2.00, 2.02, 2.02, 2.02, 1.98, 2.02, 2.06,
                                 1.97, 2.05, 2.02, 2.00, 2.08, 2.04, 1.98, 2.02, 2.04, 2.01 };
    assert_int_equal(ppb_mann_whitney(la, 25, lb, 30, &r, &err), 0);
    assert_close(r.u, 574, 0);
    assert_close(r.p, 0.0007161275977063802, 1e-14);

    /* Every value equal: no evidence, p = 1. */
    static const double flat[] = { 1, 1, 1, 1 };
    assert_int_equal(ppb_mann_whitney(flat, 4, flat, 4, &r, &err), 0);
    assert_close(r.p, 1.0, 0);

    static const double bad[] = { 1.0, -2.0 };
    assert_int_equal(ppb_mann_whitney(bad, 2, flat, 4, &r, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "baseline sample 1"));
}

static void test_hodges_lehmann_textbook(void **state)
{
    (void)state;
    ppb_ab_interval iv;
    ppb_err err;
    /* R: wilcox.test(x, y, conf.int = TRUE) estimates x - y: 0.305, [-0.15, 0.76]. */
    assert_int_equal(ppb_hodges_lehmann_shift(hw_y, 5, hw_x, 10, 0.05, &iv, &err), 0);
    assert_close(iv.shift, 0.305, 1e-12);
    assert_close(iv.shift_lo, -0.15, 1e-12);
    assert_close(iv.shift_hi, 0.76, 1e-12);
    assert_int_equal(iv.exact, 1);
    assert_int_equal(iv.bounded, 1);
    assert_int_equal(iv.rank_lo, 9);           /* critical value 8, plus one */
    assert_int_equal(iv.rank_hi, 42);          /* 50 + 1 - 9 */
    assert_close(iv.level_achieved, 0.9600399600399601, 1e-13);
}

static int cmp_dbl(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Brute force: all n*m differences sorted; the order statistics the function
 * says it used must be the values it returned, and its ranks must follow the
 * Moses rule computed here independently. */
static void check_hl_against_brute_force(const double *a, int n, const double *b, int m, double alpha)
{
    ppb_ab_interval iv;
    ppb_err err;
    assert_int_equal(ppb_hodges_lehmann_shift(a, n, b, m, alpha, &iv, &err), 0);
    int64_t nm = (int64_t)n * m;
    double *d = malloc(sizeof *d * (size_t)nm);
    assert_non_null(d);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            d[(int64_t)i * m + j] = b[j] - a[i];
    qsort(d, (size_t)nm, sizeof *d, cmp_dbl);
    double median = nm % 2 ? d[nm / 2] : 0.5 * (d[nm / 2 - 1] + d[nm / 2]);
    assert_close(iv.shift, median, 0);

    /* Independent rank rule: exact tables without ties and up to 20, else the
     * tie-corrected normal with continuity correction. */
    double *all = malloc(sizeof *all * (size_t)(n + m));
    assert_non_null(all);
    memcpy(all, a, sizeof *a * (size_t)n);
    memcpy(all + n, b, sizeof *b * (size_t)m);
    qsort(all, (size_t)(n + m), sizeof *all, cmp_dbl);
    double tie_term = 0;
    for (int i = 0; i < n + m;) {
        int j = i;
        while (j + 1 < n + m && all[j + 1] == all[i])
            j++;
        double t = j - i + 1;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    free(all);
    int64_t k;
    if (tie_term == 0 && n <= PPB_MWU_EXACT_MAX && m <= PPB_MWU_EXACT_MAX) {
        k = ppb_mwu_critical_value(n, m, alpha) + 1;
        assert_int_equal(iv.exact, 1);
    } else {
        double N = n + m, var = (double)nm / 12.0 * ((N + 1) - tie_term / (N * (N - 1)));
        k = (int64_t)floor(nm / 2.0 - ppb_normal_quantile(1 - alpha / 2) * sqrt(var) + 0.5);
        assert_int_equal(iv.exact, 0);
    }
    if (k < 1) {   /* too few samples for this level */
        assert_int_equal(iv.bounded, 0);
        assert_int_equal(iv.rank_lo, 0);
        free(d);
        return;
    }
    assert_int_equal(iv.bounded, 1);
    assert_int_equal(iv.rank_lo, k);
    assert_int_equal(iv.rank_hi, nm + 1 - k);
    assert_close(iv.shift_lo, d[k - 1], 0);
    assert_close(iv.shift_hi, d[nm - k], 0);
    free(d);
}

static void test_hodges_lehmann_matches_brute_force(void **state)
{
    (void)state;
    static const int sizes[][2] = { { 5, 7 }, { 12, 9 }, { 20, 20 }, { 21, 4 }, { 30, 40 },
                                    { 64, 64 }, { 120, 150 }, { 500, 500 }, { 3, 700 } };
    sim_rng rng = { 42 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s][0], m = sizes[s][1];
        double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)m);
        assert_non_null(a);
        assert_non_null(b);
        for (int quantised = 0; quantised < 2; quantised++) {
            for (int i = 0; i < n; i++)
                a[i] = sim_normal(&rng);
            for (int j = 0; j < m; j++)
                b[j] = 0.3 + 1.5 * sim_normal(&rng);
            if (quantised) {   /* timer resolution: many ties within and across samples */
                for (int i = 0; i < n; i++)
                    a[i] = round(a[i] * 4) / 4;
                for (int j = 0; j < m; j++)
                    b[j] = round(b[j] * 4) / 4;
            }
            check_hl_against_brute_force(a, n, b, m, 0.05);
            check_hl_against_brute_force(a, n, b, m, 0.001);
        }
        free(a);
        free(b);
    }
}

/* Every rank of a matrix large enough for several pivot rounds, with ties:
 * an off-by-one at a rank boundary shows up at some rank. */
static void test_pairwise_selection_every_rank(void **state)
{
    (void)state;
    enum { N = 45, M = 52 };
    double a[N], b[M], d[N * M];
    sim_rng rng = { 5 };
    for (int i = 0; i < N; i++)
        a[i] = round(8 * sim_normal(&rng)) / 8;
    for (int j = 0; j < M; j++)
        b[j] = round(8 * sim_normal(&rng)) / 8;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++)
            d[i * M + j] = b[j] - a[i];
    qsort(d, N * M, sizeof *d, cmp_dbl);
    ppb_err err;
    for (int64_t k = 1; k <= N * M; k++) {
        double kth;
        assert_int_equal(ppb_pairwise_diff_kth(a, N, b, M, k, &kth, &err), 0);
        if (kth != d[k - 1])
            fail_msg("rank %lld: %.17g, brute force %.17g", (long long)k, kth, d[k - 1]);
    }
    double kth;
    assert_int_equal(ppb_pairwise_diff_kth(a, N, b, M, 0, &kth, &err), PPB_EINPUT);
    assert_int_equal(ppb_pairwise_diff_kth(a, N, b, M, N * M + 1, &kth, &err), PPB_EINPUT);
}

static void test_hodges_lehmann_edge_cases(void **state)
{
    (void)state;
    ppb_ab_interval iv;
    ppb_err err;
    /* Too few samples for a 95% interval: unbounded, estimate still given. */
    static const double a[] = { 1.0, 2.0 }, b[] = { 3.0, 5.0 };
    assert_int_equal(ppb_hodges_lehmann_shift(a, 2, b, 2, 0.05, &iv, &err), 0);
    assert_int_equal(iv.bounded, 0);
    assert_close(iv.shift, 2.5, 0);
    assert_true(isinf(iv.shift_lo) && iv.shift_lo < 0);
    assert_true(isinf(iv.shift_hi) && iv.shift_hi > 0);
    assert_int_equal(ppb_ab_classify(iv.ratio_lo, iv.ratio_hi, 0.01), PPB_AB_UNRESOLVED);
    /* All values equal on both sides: a zero-width interval at zero. */
    static const double same[] = { 2, 2, 2, 2, 2, 2, 2, 2 };
    assert_int_equal(ppb_hodges_lehmann_shift(same, 8, same, 8, 0.05, &iv, &err), 0);
    assert_int_equal(iv.bounded, 1);
    assert_close(iv.shift_lo, 0, 0);
    assert_close(iv.shift_hi, 0, 0);
    /* Bad input. */
    assert_int_equal(ppb_hodges_lehmann_shift(a, 0, b, 2, 0.05, &iv, &err), PPB_EINPUT);
    assert_int_equal(ppb_hodges_lehmann_shift(a, 2, b, 2, 1.5, &iv, &err), PPB_EINPUT);
    static const double times[] = { 1.0, 0.0 };
    assert_int_equal(ppb_ab_hodges_lehmann(times, 2, b, 2, 0.05, &iv, &err), PPB_EINPUT);
}

static void test_ratio_on_log_times(void **state)
{
    (void)state;
    /* Candidate = exactly 1.1 x the baseline samples: the pairwise log
     * differences are log 1.1 + (l_j - l_i), symmetric about log 1.1. */
    enum { N = 40 };
    double base[N], cand[N];
    sim_rng rng = { 7 };
    sim_lognormal(&rng, 2.0, 0.02, base, N);
    for (int i = 0; i < N; i++)
        cand[i] = base[i] * 1.1;
    ppb_ab_interval iv;
    ppb_err err;
    assert_int_equal(ppb_ab_hodges_lehmann(base, N, cand, N, 0.05, &iv, &err), 0);
    assert_close(iv.ratio, 1.1, 1e-12);
    assert_true(iv.ratio_lo < 1.1 && iv.ratio_hi > 1.1);
    assert_close(log(iv.ratio_lo), iv.shift_lo, 1e-15);
    assert_close(iv.ratio_hi, exp(iv.shift_hi), 1e-15);
    assert_int_equal(ppb_ab_classify(iv.ratio_lo, iv.ratio_hi, 0.01), PPB_AB_SLOWER);
    assert_int_equal(ppb_ab_hodges_lehmann(cand, N, base, N, 0.05, &iv, &err), 0);
    assert_close(iv.ratio, 1 / 1.1, 1e-12);
    assert_int_equal(ppb_ab_classify(iv.ratio_lo, iv.ratio_hi, 0.01), PPB_AB_FASTER);
}

static void test_bootstrap_median_ratio(void **state)
{
    (void)state;
    enum { N = 31 };
    double base[N], cand[N];
    sim_rng rng = { 11 };
    sim_lognormal(&rng, 1.0, 0.03, base, N);
    for (int i = 0; i < N; i++)
        cand[i] = base[i] * 1.2;
    ppb_ab_interval a, b, c;
    ppb_err err;
    assert_int_equal(ppb_ab_bootstrap_median_ratio(base, N, cand, N, 0.05, 2000, 123, &a, &err), 0);
    assert_close(a.ratio, ppb_median(cand, N) / ppb_median(base, N), 1e-12);
    assert_close(a.ratio, 1.2, 1e-12);
    assert_true(a.ratio_lo < 1.2 && a.ratio_hi > 1.2);
    assert_true(a.ratio_lo > 1.1 && a.ratio_hi < 1.3);   /* 3% noise, 31 samples: a tight interval */
    /* Deterministic for a seed, different for another. */
    assert_int_equal(ppb_ab_bootstrap_median_ratio(base, N, cand, N, 0.05, 2000, 123, &b, &err), 0);
    assert_true(a.shift_lo == b.shift_lo && a.shift_hi == b.shift_hi);
    assert_int_equal(ppb_ab_bootstrap_median_ratio(base, N, cand, N, 0.05, 2000, 124, &c, &err), 0);
    assert_true(a.shift_lo != c.shift_lo || a.shift_hi != c.shift_hi);
    /* Too few replicates for the tails. */
    assert_int_equal(ppb_bootstrap_min_reps(0.05), 400);
    assert_int_equal(ppb_bootstrap_min_reps(0.001), 20000);
    assert_int_equal(ppb_ab_bootstrap_median_ratio(base, N, cand, N, 0.001, 2000, 1, &c, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "20000"));
}

static void test_classification_boundaries(void **state)
{
    (void)state;
    const double t = 0.01, down = 1 / 1.01;
    assert_int_equal(ppb_ab_classify(0.98, 0.99, t), PPB_AB_FASTER);
    assert_int_equal(ppb_ab_classify(0.98, nextafter(down, 0), t), PPB_AB_FASTER);
    assert_int_equal(ppb_ab_classify(0.98, down, t), PPB_AB_UNRESOLVED);   /* hi must be strictly below */
    assert_int_equal(ppb_ab_classify(nextafter(1.01, 2), 1.03, t), PPB_AB_SLOWER);
    assert_int_equal(ppb_ab_classify(1.01, 1.03, t), PPB_AB_UNRESOLVED);   /* lo must be strictly above */
    assert_int_equal(ppb_ab_classify(down, 1.01, t), PPB_AB_SAME);          /* SAME is inclusive */
    assert_int_equal(ppb_ab_classify(0.995, 1.005, t), PPB_AB_SAME);
    assert_int_equal(ppb_ab_classify(0.99, 1.0, t), PPB_AB_UNRESOLVED);     /* 0.99 < 1/1.01 */
    assert_int_equal(ppb_ab_classify(1.0, nextafter(1.01, 2), t), PPB_AB_UNRESOLVED);
    assert_int_equal(ppb_ab_classify(0.9, 1.1, t), PPB_AB_UNRESOLVED);
    assert_int_equal(ppb_ab_classify(0.0, INFINITY, t), PPB_AB_UNRESOLVED);
    assert_int_equal(ppb_ab_classify(NAN, 1.0, t), PPB_AB_UNRESOLVED);
    assert_int_equal(ppb_ab_classify(1.0, 1.0, 0.0), PPB_AB_SAME);
    assert_int_equal(ppb_ab_classify(1.02, 1.04, 0.05), PPB_AB_SAME);
    assert_string_equal(ppb_ab_class_name(PPB_AB_FASTER), "faster");
    assert_string_equal(ppb_ab_class_name(PPB_AB_UNRESOLVED), "unresolved");
}

static void test_p_adjust_matches_r(void **state)
{
    (void)state;
    static const double p[] = { 0.01, 0.04, 0.03, 0.005, 0.20, 0.04, 0.5, 0.001 };
    static const double holm[] = { 0.06, 0.16, 0.15, 0.035, 0.4, 0.16, 0.5, 0.008 };
    static const double bh[] = { 0.02666666666666667, 0.05333333333333334, 0.05333333333333334, 0.02,
                                 0.2285714285714286, 0.05333333333333334, 0.5, 0.008 };
    double adj[8];
    ppb_err err;
    assert_int_equal(ppb_p_adjust_holm(p, 8, adj, &err), 0);
    for (int i = 0; i < 8; i++)
        assert_close(adj[i], holm[i], 1e-15);
    assert_int_equal(ppb_p_adjust_bh(p, 8, adj, &err), 0);
    for (int i = 0; i < 8; i++)
        assert_close(adj[i], bh[i], 1e-15);
    /* Capped at 1, in place. */
    double big[] = { 0.5, 0.6, 0.9 };
    assert_int_equal(ppb_p_adjust_holm(big, 3, big, &err), 0);
    assert_close(big[0], 1.0, 0);
    assert_close(big[1], 1.0, 0);
    assert_close(big[2], 1.0, 0);
    static const double bad[] = { 0.1, NAN };
    assert_int_equal(ppb_p_adjust_bh(bad, 2, adj, &err), PPB_EINPUT);
    assert_close(ppb_bonferroni_alpha(0.05, 10), 0.005, 1e-18);
    assert_close(ppb_bonferroni_alpha(0.05, 1), 0.05, 0);
}

/* A case interval with estimate r and log standard error se at level 1 - a. */
static ppb_ab_interval made_interval(double r, double se, double a)
{
    ppb_ab_interval iv = { 0 };
    double z = ppb_normal_quantile(1 - a / 2);
    iv.shift = log(r);
    iv.shift_lo = iv.shift - z * se;
    iv.shift_hi = iv.shift + z * se;
    iv.level = iv.level_achieved = 1 - a;
    iv.bounded = 1;
    iv.ratio = r;
    iv.ratio_lo = exp(iv.shift_lo);
    iv.ratio_hi = exp(iv.shift_hi);
    return iv;
}

static void test_weighted_geomean(void **state)
{
    (void)state;
    ppb_ab_interval c[3] = { made_interval(1.1, 0.01, 0.05), made_interval(0.9, 0.02, 0.001),
                             made_interval(1.0, 0.04, 0.05) };
    double w[3] = { 1, 2, 1 };
    ppb_geomean g;
    ppb_err err;
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, 0, &g, &err), 0);
    double expect = exp((log(1.1) + 2 * log(0.9)) / 4);
    assert_close(g.ratio, expect, 1e-14);
    /* se = sqrt(1 * 0.01^2 + 4 * 0.02^2 + 1 * 0.04^2) / 4; each case's se
     * recovered from its width whatever its level. */
    double se = sqrt(0.0001 + 4 * 0.0004 + 0.0016) / 4;
    assert_close(g.log_se, se, 1e-14);
    assert_close(g.ratio_lo, expect * exp(-1.959963984540054 * se), 1e-12);
    assert_close(g.ratio_hi, expect * exp(1.959963984540054 * se), 1e-12);
    assert_int_equal(g.n_cases, 3);
    /* Equal weights over ratios 2 and 0.5: geometric mean exactly 1. */
    ppb_ab_interval d[2] = { made_interval(2.0, 0.01, 0.05), made_interval(0.5, 0.01, 0.05) };
    double eq[2] = { 1, 1 };
    assert_int_equal(ppb_weighted_geomean(d, eq, 2, 0.05, 0, &g, &err), 0);
    assert_close(g.ratio, 1.0, 1e-15);
    /* A zero weight drops the case, even an unbounded one. */
    c[2].bounded = 0;
    c[2].shift_lo = -INFINITY;
    c[2].shift_hi = INFINITY;
    w[2] = 0;
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, 0, &g, &err), 0);
    assert_close(g.ratio, exp((log(1.1) + 2 * log(0.9)) / 3), 1e-14);
    assert_int_equal(g.bounded, 1);
    assert_int_equal(g.n_cases, 2);
    w[2] = 1;   /* ... but with weight it makes the mean's interval unbounded */
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, 0, &g, &err), 0);
    assert_int_equal(g.bounded, 0);
    assert_true(isinf(g.ratio_hi));
    w[0] = -1;
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, 0, &g, &err), PPB_EINPUT);
    double zero[3] = { 0, 0, 0 };
    assert_int_equal(ppb_weighted_geomean(c, zero, 3, 0.05, 0, &g, &err), PPB_EINPUT);
}

/* A part of every case's SD that is one draw for all of them (shared_sd) is
 * not averaged down: with weights 1, 2, 1 the mean's variance is the cases'
 * independent sum plus shared^2 (1 - 6/16), so that shared^2 is held whole;
 * its interval is wider than without; a negative or NaN shared SD is refused. */
static void test_weighted_geomean_keeps_a_shared_part_whole(void **state)
{
    (void)state;
    ppb_ab_interval c[3] = {made_interval(1.1, 0.03, 0.05), made_interval(0.9, 0.03, 0.001),
                            made_interval(1.0, 0.04, 0.05)};
    double w[3] = {1, 2, 1}, shared = 0.03;
    ppb_geomean g, g0;
    ppb_err err;
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, 0, &g0, &err), 0);
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, shared, &g, &err), 0);
    double v = (0.0009 + 4 * 0.0009 + 0.0016) / 16 + shared * shared * (1 - 6.0 / 16);
    assert_close(g.log_se, sqrt(v), 1e-14);
    assert_close(g.ratio, g0.ratio, 1e-15);
    assert_close(g.ratio_lo, g.ratio * exp(-1.959963984540054 * sqrt(v)), 1e-12);
    assert_close(g.ratio_hi, g.ratio * exp(1.959963984540054 * sqrt(v)), 1e-12);
    assert_true(g.log_se > shared && g0.log_se < shared);
    /* one case: the mean is the case, nothing to add */
    assert_int_equal(ppb_weighted_geomean(c, w, 1, 0.05, shared, &g, &err), 0);
    assert_close(g.log_se, 0.03, 1e-14);
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, -0.01, &g, &err), PPB_EINPUT);
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, NAN, &g, &err), PPB_EINPUT);
}

/* Skewed case intervals, every one above 1 with a long upper side: each side
 * of the mean's interval comes from the same side of the cases, so the mean
 * stays above 1 (the symmetric figure put its lower bound below 1). */
static void test_weighted_geomean_keeps_each_side(void **state)
{
    (void)state;
    ppb_ab_interval c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = made_interval(1.3, 0.1, 0.05);
        c[i].shift_lo = log(1.02);
        c[i].shift_hi = log(3.0);
        c[i].ratio_lo = 1.02, c[i].ratio_hi = 3.0;
    }
    double w[3] = {1, 1, 1};
    ppb_geomean g;
    ppb_err err;
    assert_int_equal(ppb_weighted_geomean(c, w, 3, 0.05, 0, &g, &err), 0);
    double z = 1.959963984540054, s = log(1.3);
    assert_close(g.ratio, 1.3, 1e-14);
    assert_close(g.ratio_lo, exp(s - z * sqrt(3 * pow((s - log(1.02)) / z, 2)) / 3), 1e-12);
    assert_close(g.ratio_hi, exp(s + z * sqrt(3 * pow((log(3.0) - s) / z, 2)) / 3), 1e-12);
    assert_true(g.ratio_lo > 1.0);
    /* the symmetric figure would have crossed 1 */
    assert_true(exp(s - z * g.log_se) < 1.0);
}

static void test_samples_to_resolve(void **state)
{
    (void)state;
    /* Estimate +5% with a log half-width of 0.06 at n = m = 20, t = 1%: the
     * lower half-width must shrink from 0.06 to log 1.05 - log 1.01, so
     * n' = 20 * (0.06 / 0.03883)^2 = 47.8 -> 28 more per side. */
    ppb_ab_interval iv = { 0 };
    iv.shift = log(1.05);
    iv.shift_lo = iv.shift - 0.06;
    iv.shift_hi = iv.shift + 0.06;
    iv.ratio_lo = exp(iv.shift_lo);
    iv.ratio_hi = exp(iv.shift_hi);
    iv.bounded = 1;
    double f = 0.06 / (log(1.05) - log(1.01));
    long expect = (long)ceil(20 * f * f - 20);
    assert_int_equal(expect, 28);
    assert_int_equal(ppb_ab_samples_to_resolve(&iv, 20, 20, 0.01, 0.05, 100000), 28);
    assert_int_equal(ppb_ab_samples_to_resolve(&iv, 20, 20, 0.01, 0.05, 10), 10);   /* over budget */
    /* Heading for SAME: estimate 0 with half-width 0.02 needs half-width log 1.01. */
    iv.shift = 0;
    iv.shift_lo = -0.02;
    iv.shift_hi = 0.02;
    iv.ratio_lo = exp(-0.02);
    iv.ratio_hi = exp(0.02);
    f = 0.02 / log(1.01);
    assert_int_equal(ppb_ab_samples_to_resolve(&iv, 30, 30, 0.01, 0.05, 100000), (long)ceil(30 * f * f - 30));
    /* Already resolved. */
    iv.shift_lo = -0.005;
    iv.shift_hi = 0.005;
    iv.ratio_lo = exp(-0.005);
    iv.ratio_hi = exp(0.005);
    assert_int_equal(ppb_ab_samples_to_resolve(&iv, 30, 30, 0.01, 0.05, 1000), 0);
    /* Estimate exactly on the threshold: no width resolves it. */
    iv.shift = log1p(0.01);
    iv.shift_lo = iv.shift - 0.01;
    iv.shift_hi = iv.shift + 0.01;
    iv.ratio_lo = exp(iv.shift_lo);
    iv.ratio_hi = exp(iv.shift_hi);
    assert_int_equal(ppb_ab_samples_to_resolve(&iv, 30, 30, 0.01, 0.05, 777), 777);
    /* Unbounded at n = m = 2, alpha 0.05: P(U = 0) = 1 / C(2n, n) <= 0.025
     * first holds at n = 4 (1/70), so 2 more per side. */
    static const double a[] = { 1.0, 1.1 }, b[] = { 1.2, 1.3 };
    ppb_err err;
    assert_int_equal(ppb_ab_hodges_lehmann(a, 2, b, 2, 0.05, &iv, &err), 0);
    assert_int_equal(iv.bounded, 0);
    assert_int_equal(ppb_ab_samples_to_resolve(&iv, 2, 2, 0.01, 0.05, 1000), 2);
}

/* A/A: both sides from the same lognormal. The Moses interval must cover the
 * true shift (0) at about its level, and at a family level (Bonferroni over
 * 200 cases) with the 1% practical threshold there must be (almost) no
 * FASTER/SLOWER call: MEASUREMENT.md's goal is under 1% of cases. */
static void test_aa_simulation_false_alarms(void **state)
{
    (void)state;
    enum { CASES = 200, N = 30 };
    double base[N], cand[N];
    sim_rng rng = { 20240601 };
    ppb_err err;
    double case_alpha = ppb_bonferroni_alpha(0.05, CASES + 1);
    int false_alarms = 0, misses = 0, small_p = 0;
    double pvals[CASES], holm[CASES];
    for (int c = 0; c < CASES; c++) {
        /* Noise from 0.5% to 5% (log-sd), as quiet and noisy GPU cases. */
        double sigma = 0.005 + 0.045 * (c % 10) / 9.0;
        sim_lognormal(&rng, 1.0 + c * 0.01, sigma, base, N);
        sim_lognormal(&rng, 1.0 + c * 0.01, sigma, cand, N);
        ppb_ab_interval fam, raw;
        assert_int_equal(ppb_ab_hodges_lehmann(base, N, cand, N, case_alpha, &fam, &err), 0);
        int cls = ppb_ab_classify(fam.ratio_lo, fam.ratio_hi, 0.01);
        false_alarms += cls == PPB_AB_FASTER || cls == PPB_AB_SLOWER;
        assert_int_equal(ppb_ab_hodges_lehmann(base, N, cand, N, 0.05, &raw, &err), 0);
        misses += raw.shift_lo > 0 || raw.shift_hi < 0;
        ppb_mwu t;
        assert_int_equal(ppb_mann_whitney(base, N, cand, N, &t, &err), 0);
        pvals[c] = t.p;
        small_p += t.p < 0.05;
    }
    print_message("A/A: %d false alarms of %d at family level, %d misses of 95%% intervals, %d p < 0.05\n",
                  false_alarms, CASES, misses, small_p);
    assert_true(false_alarms <= 3);
    /* Binomial(200, 0.05): mean 10, sd 3.1; [2, 20] is beyond 3 sd either way,
     * so an interval that is much too narrow or too wide fails here. */
    assert_in_range(misses, 2, 20);
    assert_in_range(small_p, 2, 20);
    /* Holm keeps the family-wise error: no A/A case survives at 0.05. */
    assert_int_equal(ppb_p_adjust_holm(pvals, CASES, holm, &err), 0);
    for (int c = 0; c < CASES; c++)
        assert_true(holm[c] >= 0.05);
}

/* A real effect must be found: 5% slower with 1% noise, 30 samples a side. */
static void test_known_effect_detected(void **state)
{
    (void)state;
    enum { TRIALS = 50, N = 30 };
    double base[N], cand[N];
    sim_rng rng = { 99 };
    ppb_err err;
    int slower = 0;
    for (int t = 0; t < TRIALS; t++) {
        sim_lognormal(&rng, 1.0, 0.01, base, N);
        sim_lognormal(&rng, 1.05, 0.01, cand, N);
        ppb_ab_interval iv;
        assert_int_equal(ppb_ab_hodges_lehmann(base, N, cand, N, ppb_bonferroni_alpha(0.05, 100), &iv, &err), 0);
        slower += ppb_ab_classify(iv.ratio_lo, iv.ratio_hi, 0.01) == PPB_AB_SLOWER;
        assert_true(fabs(iv.ratio - 1.05) < 0.01);
    }
    assert_int_equal(slower, TRIALS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal_distribution),
        cmocka_unit_test(test_critical_values_match_published_tables),
        cmocka_unit_test(test_exact_cdf_matches_enumeration),
        cmocka_unit_test(test_mann_whitney_p_values),
        cmocka_unit_test(test_hodges_lehmann_textbook),
        cmocka_unit_test(test_hodges_lehmann_matches_brute_force),
        cmocka_unit_test(test_pairwise_selection_every_rank),
        cmocka_unit_test(test_hodges_lehmann_edge_cases),
        cmocka_unit_test(test_ratio_on_log_times),
        cmocka_unit_test(test_bootstrap_median_ratio),
        cmocka_unit_test(test_classification_boundaries),
        cmocka_unit_test(test_p_adjust_matches_r),
        cmocka_unit_test(test_weighted_geomean),
        cmocka_unit_test(test_weighted_geomean_keeps_each_side),
        cmocka_unit_test(test_weighted_geomean_keeps_a_shared_part_whole),
        cmocka_unit_test(test_samples_to_resolve),
        cmocka_unit_test(test_aa_simulation_false_alarms),
        cmocka_unit_test(test_known_effect_detected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
