#include "measure.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "provenance.h"
#include "stats.h"


static double robust_noise(const double *x, int n)
{
    double med = ppb_median(x, n);
    return med > 0 ? (ppb_quantile(x, n, 0.75) - ppb_quantile(x, n, 0.25)) / med : INFINITY;
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

int ppb_measure_case(const ppb_backend_ops *ops, ppb_backend *b, const ppb_measure_settings *m,
                     volatile sig_atomic_t *stop, ppb_result *res, ppb_err *err)
{
    double ms = 0, warmup_start = ppb_monotonic_ms();
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
    res->n_samples = 0;

    double measured = 0, sampling_start = ppb_monotonic_ms();
    int noise_met = 0;
    for (;;) {
        if (stop && *stop)
            return ppb_fail(err, PPB_EINTR, "interrupted");
        rc = ops->time_sample(b, launches, m->cold_l2, &ms, err);
        if (rc)
            return rc;
        res->samples_ms[res->n_samples++] = ms;
        measured += ms * launches;
        int n = res->n_samples;
        int enough = n >= m->min_samples && measured >= m->min_time_ms;
        if (enough) {
            noise_met = robust_noise(res->samples_ms, n) <= m->target_noise;
            if (noise_met)
                break;
        }
        /* Out of samples or out of budget: stop, and say so if noisy. */
        if (n >= cap || (ppb_monotonic_ms() - sampling_start >= m->budget_ms && n >= 3)) {
            noise_met = robust_noise(res->samples_ms, n) <= m->target_noise;
            break;
        }
    }
    res->phases.sampling_ms = ppb_monotonic_ms() - sampling_start;
    if (!noise_met && res->status == PPB_STATUS_OK)
        res->status = PPB_STATUS_NOISY;
    return PPB_OK;
}
