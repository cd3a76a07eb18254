#include "result.h"

#include <stdlib.h>
#include <string.h>

#include "stats.h"

static const char *const status_names[] = {"ok", "wrong", "refused", "skipped", "error", "noisy",
                                           "crashed", "hung"};
_Static_assert(sizeof status_names / sizeof *status_names == PPB_STATUS_COUNT, "a name for every status");

const char *ppb_status_name(int status)
{
    if (status < 0 || status >= (int)(sizeof status_names / sizeof *status_names))
        return "unknown";
    return status_names[status];
}

int ppb_status_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof status_names / sizeof *status_names); i++)
        if (strcmp(status_names[i], name) == 0)
            return i;
    return -1;
}

int ppb_status_failed(int status)
{
    return status == PPB_STATUS_WRONG || status == PPB_STATUS_ERROR || status == PPB_STATUS_CRASHED ||
           status == PPB_STATUS_HUNG;
}

void ppb_result_init(ppb_result *r)
{
    memset(r, 0, sizeof *r);
    r->batch_launches = 1;
}

void ppb_result_free(ppb_result *r)
{
    free(r->samples_ms);
    r->samples_ms = NULL;
    r->n_samples = 0;
}

void ppb_result_summarise(ppb_result *r, double flops, double bytes)
{
    int n = r->n_samples;
    if (n <= 0)
        return;
    const double *x = r->samples_ms;
    r->median_ms = ppb_median(x, n);
    r->mean_ms = ppb_mean(x, n);
    r->stdev_ms = ppb_stdev(x, n);
    r->min_ms = ppb_min(x, n);
    r->max_ms = ppb_max(x, n);
    r->q1_ms = ppb_quantile(x, n, 0.25);
    r->q3_ms = ppb_quantile(x, n, 0.75);
    r->rel_noise = r->median_ms > 0 ? (r->q3_ms - r->q1_ms) / r->median_ms : 0;
    double seconds = r->median_ms * 1e-3;
    r->tflops = seconds > 0 ? flops / seconds * 1e-12 : 0;
    r->gbps = seconds > 0 ? bytes / seconds * 1e-9 : 0;
}
