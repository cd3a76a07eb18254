#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double *ppb_sorted_copy(const double *x, int n)
{
    double *s = malloc(sizeof *s * (size_t)(n > 0 ? n : 1));
    if (!s)
        return NULL;
    if (n > 0)
        memcpy(s, x, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return s;
}

double ppb_mean(const double *x, int n)
{
    if (n <= 0)
        return NAN;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    return sum / n;
}

double ppb_stdev(const double *x, int n)
{
    if (n < 2)
        return 0.0;
    double m = ppb_mean(x, n), ss = 0;
    for (int i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (n - 1));
}

/* On sorted data. */
static double quantile_sorted(const double *s, int n, double q)
{
    if (n <= 0)
        return NAN;
    double h = (n - 1) * q;
    int lo = (int)floor(h);
    if (lo >= n - 1)
        return s[n - 1];
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo]);
}

double ppb_quantile(const double *x, int n, double q)
{
    double *s = ppb_sorted_copy(x, n);
    if (!s)
        return NAN;
    double v = quantile_sorted(s, n, q);
    free(s);
    return v;
}

double ppb_median(const double *x, int n) { return ppb_quantile(x, n, 0.5); }

double ppb_midmean(const double *x, int n)
{
    double *s = n > 0 ? ppb_sorted_copy(x, n) : NULL;
    if (!s)
        return NAN;
    int cut = n / 4;
    double sum = 0;
    for (int i = cut; i < n - cut; i++)
        sum += s[i];
    free(s);
    return sum / (n - 2 * cut);
}

double ppb_mad(const double *x, int n)
{
    if (n <= 0)
        return NAN;
    double med = ppb_median(x, n);
    double *dev = malloc(sizeof *dev * (size_t)n);
    if (!dev)
        return NAN;
    for (int i = 0; i < n; i++)
        dev[i] = fabs(x[i] - med);
    double v = ppb_median(dev, n);
    free(dev);
    return v;
}

double ppb_min(const double *x, int n)
{
    double m = n > 0 ? x[0] : NAN;
    for (int i = 1; i < n; i++)
        m = x[i] < m ? x[i] : m;
    return m;
}

double ppb_max(const double *x, int n)
{
    double m = n > 0 ? x[0] : NAN;
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}
