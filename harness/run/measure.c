#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "provenance.h"
#include "stats.h"


static double robust_noise(const double *x, int n)
{
    double med = ppb_median(x, n);
    return med > 0 ? (ppb_quantile(x, n, 0.75) - ppb_quantile(x, n, 0.25)) / med : INFINITY;
}

/* Samples timed per synchronisation with the device (PPBENCH_SAMPLES_PER_SYNC,
 * 1 .. PPB_SAMPLES_PER_SYNC_MAX; 1: one at a time). */
static int samples_per_sync(void)
{
    const char *env = getenv("PPBENCH_SAMPLES_PER_SYNC");
    long v = env && *env ? strtol(env, NULL, 10) : PPB_SAMPLES_PER_SYNC_MAX;
    return v < 1 ? 1 : v > PPB_SAMPLES_PER_SYNC_MAX ? PPB_SAMPLES_PER_SYNC_MAX : (int)v;
}

/* Samples to time together: those the loop needs before its next decision
 * whatever they measure (up to min_samples, and while min_time_ms stays out of
 * reach even if each took twice the last one). At least 1. The decisions are
 * replayed sample by sample, so a guess too high only wastes launches. */
static int samples_due(const ppb_measure_settings *m, int n, double measured, double last_ms, int launches)
{
    double due = m->min_samples - n;
    if (last_ms > 0 && measured < m->min_time_ms) {
        double by_time = floor((m->min_time_ms - measured) / (2.0 * last_ms * launches));
        due = by_time > due ? by_time : due;
    }
    return due < 1 ? 1 : due > PPB_SAMPLES_PER_SYNC_MAX ? PPB_SAMPLES_PER_SYNC_MAX : (int)due;
}

size_t ppb_l2_flush_bytes(long long l2_bytes) { return (size_t)(2 * l2_bytes) + ((size_t)1 << 20); }

int ppb_cold_sample_needs_flush(const ppb_case *c, long long l2_bytes)
{
    return c->shape.sliding_window != 0 ||
           ppb_case_min_bytes(c) < (double)ppb_l2_flush_bytes(l2_bytes) + (double)l2_bytes;
}

static int take_samples(const ppb_backend_ops *ops, ppb_backend *b, int launches, int cold, int n, double *ms,
                        ppb_err *err)
{
    if (ops->time_samples)
        return ops->time_samples(b, launches, cold, n, ms, err);
    for (int i = 0; i < n; i++) {
        int rc = ops->time_sample(b, launches, cold, &ms[i], err);
        if (rc)
            return rc;
    }
    return PPB_OK;
}

int ppb_measure_warmup(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m, double done_ms,
                       int min_launches, volatile sig_atomic_t *stop, int *launches, ppb_err *err)
{
    double ms = 0, start = ppb_monotonic_ms(), shortest = done_ms > 0 ? done_ms : INFINITY;
    for (int warm = 0; warm < min_launches || ppb_monotonic_ms() - start + done_ms < m->warmup_ms; warm++) {
        int rc = ops->time_sample(b, 1, m->cold_l2, &ms, err);
        if (rc)
            return rc;
        shortest = ms < shortest ? ms : shortest;
        if (stop && *stop)
            return ppb_fail(err, PPB_EINTR, "interrupted");
    }
    int n = 1;
    if (shortest < PPB_MIN_SAMPLE_MS)
        n = (int)ceil(PPB_MIN_SAMPLE_MS / (shortest > 1e-6 ? shortest : 1e-6));
    *launches = n > 1000 ? 1000 : n;
    return PPB_OK;
}

double ppb_measure_warmup_owed(double warmup_ms, double busy_ms, double idle_ms)
{
    if (busy_ms <= 0 || idle_ms < 0 || idle_ms >= PPB_WARM_GAP_MS)
        return warmup_ms;
    return warmup_ms > busy_ms ? warmup_ms - busy_ms : 0;
}

/* One sampling window into res->samples_ms (cap slots): until the noise
 * target is met after min_samples and min_time_ms, or the samples or the
 * budget run out. *noise_met: whether it ended on the target. */
static int sample_window(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m,
                         volatile sig_atomic_t *stop, int launches, int cap, ppb_result *res, int *noise_met,
                         ppb_err *err)
{
    double measured = 0, start = ppb_monotonic_ms();
    int decided = 0, per_sync = samples_per_sync();
    res->n_samples = 0;
    *noise_met = 0;
    while (!decided) {
        if (stop && *stop)
            return ppb_fail(err, PPB_EINTR, "interrupted");
        int n = res->n_samples;
        int due = samples_due(m, n, measured, n ? res->samples_ms[n - 1] : 0, launches);
        due = due < per_sync ? due : per_sync;
        due = due < cap - n ? due : cap - n;
        int rc = take_samples(ops, b, launches, m->cold_l2, due, res->samples_ms + n, err);
        if (rc)
            return rc;
        /* As if taken one by one: the sample that completes a decision ends
         * the window, any after it are dropped. */
        for (int i = 0; i < due && !decided; i++) {
            measured += res->samples_ms[n] * launches;
            res->n_samples = ++n;
            if (n >= m->min_samples && measured >= m->min_time_ms)
                decided = *noise_met = robust_noise(res->samples_ms, n) <= m->target_noise;
            if (!decided && n >= cap) { /* out of samples: stop, noisy only if the spread says so */
                *noise_met = robust_noise(res->samples_ms, n) <= m->target_noise;
                decided = 1;
            }
        }
        if (!decided && ppb_monotonic_ms() - start >= m->budget_ms && n >= 3) {
            *noise_met = robust_noise(res->samples_ms, n) <= m->target_noise; /* out of budget */
            decided = 1;
        }
    }
    return PPB_OK;
}

/* A second window for a case that missed its target: the machine's load
 * mostly disturbs a window in part (docs/STATISTICS.md "A second window"), so
 * a fresh one is often quiet. The window with the lower median is kept, with
 * its own status (*noise_met), and the reason says both (appended to any note
 * it has): load only ever slows a kernel, and a window it slowed throughout
 * can be as tight as a quiet one (a second window chosen by its spread kept
 * one 50% slow at 1.7%). */
static int second_window(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m,
                         volatile sig_atomic_t *stop, int launches, int cap, ppb_result *res, int *noise_met,
                         ppb_err *err)
{
    ppb_result second = {.samples_ms = malloc(sizeof *res->samples_ms * (size_t)cap)};
    if (!second.samples_ms)
        return ppb_fail(err, PPB_ENOMEM, "out of memory for %d samples", cap);
    int second_met;
    int rc = sample_window(ops, b, m, stop, launches, cap, &second, &second_met, err);
    if (!rc) {
        const double med[2] = {ppb_median(res->samples_ms, res->n_samples),
                               ppb_median(second.samples_ms, second.n_samples)};
        const int keep_second = med[1] < med[0];
        size_t len = strlen(res->reason);
        snprintf(res->reason + len, sizeof res->reason - len,
                 "%ssampled twice: first window median %.4g ms, spread %.1f%%; second %.4g ms, %.1f%%; the %s kept",
                 len ? "; " : "", med[0], 100 * robust_noise(res->samples_ms, res->n_samples), med[1],
                 100 * robust_noise(second.samples_ms, second.n_samples), keep_second ? "second" : "first");
        if (keep_second) {
            double *swap = res->samples_ms;
            res->samples_ms = second.samples_ms, res->n_samples = second.n_samples;
            second.samples_ms = swap;
            *noise_met = second_met;
        }
    }
    free(second.samples_ms);
    return rc;
}

int ppb_measure_case(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m,
                     volatile sig_atomic_t *stop, ppb_result *res, ppb_err *err)
{
    double warmup_start = ppb_monotonic_ms();
    int launches = 1;
    const double done = res->checked_launch_ms;
    int rc = ppb_measure_warmup(ops, b, m, done, done > 0 ? 0 : 1, stop, &launches, err);
    res->phases.warmup_ms = ppb_monotonic_ms() - warmup_start;
    if (rc)
        return rc;
    res->batch_launches = launches;

    int cap = m->max_samples > 0 ? m->max_samples : 1;
    res->samples_ms = malloc(sizeof *res->samples_ms * (size_t)cap);
    if (!res->samples_ms)
        return ppb_fail(err, PPB_ENOMEM, "out of memory for %d samples", cap);
    double sampling_start = ppb_monotonic_ms();
    int noise_met;
    rc = sample_window(ops, b, m, stop, launches, cap, res, &noise_met, err);
    if (!rc && !noise_met && m->windows > 1)
        rc = second_window(ops, b, m, stop, launches, cap, res, &noise_met, err);
    res->phases.sampling_ms = ppb_monotonic_ms() - sampling_start;
    if (rc)
        return rc;
    if (!noise_met && res->status == PPB_STATUS_OK)
        res->status = PPB_STATUS_NOISY;
    return PPB_OK;
}
