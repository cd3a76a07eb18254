/* Descriptive statistics over timing samples. Inference for A/B decisions
 * (intervals, tests, multiple-comparison control) lives in abtest.h. */
#ifndef PPB_STATS_H
#define PPB_STATS_H

double ppb_mean(const double *x, int n);
double ppb_stdev(const double *x, int n);                 /* sample (n - 1) */
/* Quantile q in [0, 1], linear interpolation between order statistics (R type 7). */
double ppb_quantile(const double *x, int n, double q);
double ppb_median(const double *x, int n);
/* The midmean: the mean of the middle half, a quarter (n / 4 values) cut
 * from each end; NAN for n <= 0 or without memory. Nearly the mean's precision
 * on normal values, and a few wild ones cannot move it far. */
double ppb_midmean(const double *x, int n);
/* Median absolute deviation from the median (unscaled). */
double ppb_mad(const double *x, int n);
double ppb_min(const double *x, int n);
double ppb_max(const double *x, int n);
/* Sort a copy; callers own the result (NULL on allocation failure). */
double *ppb_sorted_copy(const double *x, int n);

#endif
