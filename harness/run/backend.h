/* The backend interface: the CPU backend and the CUDA backend fill it.
 * Nothing above this header includes a CUDA header. */
#ifndef PPB_BACKEND_H
#define PPB_BACKEND_H

#include <stdint.h>

#include "case.h"
#include "ppb_error.h"
#include "result.h"
#include "target.h"
#include "workload.h"

typedef struct ppb_device_info {
    char backend[16];        /* "cpu" or "cuda" */
    int is_gpu;
    char name[128];          /* "NVIDIA H200", or the CPU model */
    char uuid[64];
    char driver[64], runtime[64];
    int cc_major, cc_minor;
    int sm_count;            /* CPU: cores */
    int warp_size;
    long long mem_total, mem_free;
    long long l2_bytes;
    int smem_per_block, smem_per_block_optin;
} ppb_device_info;

/* Key/value environment facts stored with a run (clocks, temperature, versions). */
typedef void (*ppb_env_sink)(void *ctx, const char *key, const char *value);

typedef struct ppb_backend ppb_backend;   /* backend-private state */

#define PPB_SAMPLES_PER_SYNC_MAX 64

/* The CPU backend's refusal of a case above --cpu-max-gflop begins with this
 * (the text before its ':'); a run whose cases all get it names the suites
 * sized for the CPU (ppb_refusals_text). */
#define PPB_CPU_TOO_LARGE "too large for the CPU backend"
/* --cpu-max-gflop's default: the suites sized for the CPU (suites/cpu-*.yaml) stay under it. */
#define PPB_CPU_DEFAULT_MAX_GFLOP 2.0

typedef struct ppb_backend_options {
    int device_index;
    const ppb_target *target;   /* emulated target (limits launches), or NULL */
    double cpu_max_gflop;       /* CPU backend: refuse cases above this much work */
} ppb_backend_options;

typedef struct ppb_backend_ops {
    const char *name;
    /* 1: prepare makes the inputs on the device from the workload's seed and
     * lengths (kernels/input_fill.cuh): it needs no host tensors. 0: prepare
     * reads the workload's host tensors. */
    int makes_inputs;
    int (*open)(ppb_backend **out, const ppb_backend_options *opt, ppb_err *err);
    void (*close)(ppb_backend *b);
    void (*device_info)(ppb_backend *b, ppb_device_info *info);
    /* Environment facts now (called before and after a run). */
    void (*environment)(ppb_backend *b, ppb_env_sink sink, void *ctx);
    /* Optional: refuse (PPB_EREFUSED + reason) from the shape alone, before the
     * inputs are built (they take seconds to generate at 100K contexts). `w`
     * holds lengths and the block table, no tensors. NULL: prepare decides. */
    int (*refuse)(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err);
    /* Optional: start loading the case's kernels in the background, ahead of
     * its prepare (the runner names every case it will run once, in order,
     * at the start). Best effort: a failure is prepare's to report. */
    void (*prefetch)(ppb_backend *b, const ppb_case *c);
    /* Refuse (PPB_EREFUSED + reason) or get ready: compile, allocate, upload inputs.
     * Fills res->resources where known. A backend may keep the inputs it
     * uploaded (see release_inputs) and use them again for the next case with
     * the same inputs: the same w->seed and shape key (ppb_case_shape_key). */
    int (*prepare)(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_result *res,
                   ppb_err *err);
    /* Poison the output, launch once, wait, copy the output (storage dtype) to `out`
     * (w->out_elems elements). Mismatch scenario: fills res->overrun. */
    int (*run_checked)(ppb_backend *b, uint16_t *out, ppb_result *res, ppb_err *err);
    /* Time one sample of `launches` back-to-back launches; cold = flush caches first.
     * Returns milliseconds per launch in *ms. */
    int (*time_sample)(ppb_backend *b, int launches, int cold, double *ms, ppb_err *err);
    /* Optional: n samples as time_sample would take them one by one (each
     * bracketed by its own timer, flushed first when cold), waited for once:
     * the sampling loop's round trips (tens of microseconds a sample) stay out
     * of the run. n <= PPB_SAMPLES_PER_SYNC_MAX; ms[n]. */
    int (*time_samples)(ppb_backend *b, int launches, int cold, int n, double *ms, ppb_err *err);
    /* Free what prepare allocated for the case (kept inputs stay). */
    void (*release)(ppb_backend *b);
    /* Free the kept inputs too (NULL: the backend keeps none). */
    void (*release_inputs)(ppb_backend *b);
} ppb_backend_ops;

extern const ppb_backend_ops ppb_backend_cpu;
#ifdef PPB_HAVE_CUDA
extern const ppb_backend_ops ppb_backend_cuda;
#endif

#endif
