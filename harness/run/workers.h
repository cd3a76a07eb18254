/* Worker processes for `run --devices`: one process per GPU, cases handed out
 * one at a time, results sent back over a pipe, and one writer (the parent) to
 * SQLite. A worker that dies or hangs past the watchdog is replaced; the case
 * it held is recorded as crashed (died) or hung (past the watchdog) with what
 * happened, and the run goes on.
 *
 * Workers are forked before the parent touches the GPU (a CUDA context does not
 * survive fork), so the parent learns the device from the first worker. */
#ifndef PPB_WORKERS_H
#define PPB_WORKERS_H

#include <signal.h>

#include "backend.h"
#include "case.h"
#include "ppb_error.h"
#include "result.h"

typedef struct ppb_pool_callbacks {
    void *ctx;
    /* In the child: open what the worker needs on `device` and describe it. */
    int (*worker_open)(void *ctx, int device, ppb_device_info *info, ppb_err *err);
    /* In the child: run one case. */
    int (*worker_case)(void *ctx, const ppb_case *c, ppb_result *res);
    void (*worker_close)(void *ctx);
    /* In the parent: the first worker's device, before any case runs. */
    int (*on_device)(void *ctx, const ppb_device_info *info, ppb_err *err);
    /* In the parent: a finished (or crashed) case; res is freed afterwards. */
    int (*on_result)(void *ctx, int index, const ppb_case *c, ppb_result *res, ppb_err *err);
} ppb_pool_callbacks;

typedef struct ppb_pool_options {
    int n_devices;
    const int *devices;         /* device index of each worker */
    double case_timeout_s;      /* watchdog per case; 0 = none */
} ppb_pool_options;

/* Parse "all" (n_available devices) or "0,1,3" into devices[] (at most max). */
int ppb_pool_parse_devices(const char *text, int n_available, int *devices, int max, int *n,
                           ppb_err *err);

/* Run cases[i] for every i with todo[i] set. Returns on completion, on `stop`,
 * or on an error from a parent callback. */
int ppb_pool_run(const ppb_pool_options *opt, const ppb_case *cases, const char *todo, int n,
                 const ppb_pool_callbacks *cb, volatile sig_atomic_t *stop, ppb_err *err);

#endif
