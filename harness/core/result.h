/* What running one case produced: check errors, timings, status and reason.
 * Filled by the run pipeline (harness/run/runner.c), stored by store.c. */
#ifndef PPB_RESULT_H
#define PPB_RESULT_H

#include <stdint.h>

typedef enum {
    PPB_STATUS_OK = 0,        /* correct and timed */
    PPB_STATUS_WRONG = 1,     /* ran, output outside tolerance (or not written / non-finite) */
    PPB_STATUS_REFUSED = 2,   /* config refused before launch (kernel or target); reason says why */
    PPB_STATUS_SKIPPED = 3,   /* not run: too large for memory / backend; reason says why */
    PPB_STATUS_ERROR = 4,     /* the backend failed while running it */
    PPB_STATUS_NOISY = 5,     /* correct, but the noise target was not met within the budget */
    PPB_STATUS_CRASHED = 6,   /* the worker died on it, or the implementation called exit() */
    PPB_STATUS_HUNG = 7,      /* the implementation did not return: a worker past --case-timeout, or a
                                 call still running when a stop (Ctrl-C, SIGTERM) came */
    PPB_STATUS_COUNT = 8
} ppb_status;

const char *ppb_status_name(int status);   /* "ok", "wrong", ... */
int ppb_status_parse(const char *name);    /* -1 if unknown */
/* 1 for the statuses that fail a run: wrong, error, crashed, hung. */
int ppb_status_failed(int status);

typedef struct ppb_check_result {
    int checked;               /* 0: no check was made */
    int pass;
    double max_abs_err;
    double rel_l2_err;         /* ||out - ref|| / ||ref|| over the checked rows */
    long rows_checked, rows_total;
    long nonfinite;            /* NaN/Inf elements in checked rows */
    long unwritten;            /* poison left in the output: elements the kernel never wrote */
    double atol, rtol;         /* tolerances applied */
} ppb_check_result;

/* The PARTITION_SIZE host/kernel mismatch: what was written past each buffer. */
typedef struct ppb_overrun {
    int detected;
    long long tmp_out_bytes, exp_sums_bytes, max_logits_bytes; /* bytes written past the end */
    long long guard_bytes_changed;                             /* canary bytes overwritten */
} ppb_overrun;

typedef struct ppb_resources {
    int known;                 /* 1 when measured from the compiled kernel */
    int registers, static_smem, dynamic_smem, local_bytes, max_threads;
} ppb_resources;

/* What the run's target profile says of the case (target.h's
 * ppb_target_judge): judged once, when the case ran, from the compiled
 * kernel's resources when they were measured, and stored with the result, so
 * a report shows what the run saw, not what today's profile file says. */
typedef struct ppb_feasibility {
    int judged;                   /* 0: the run named no target (the rest is empty) */
    int feasible;
    int blocks_per_sm;            /* occupancy estimate; 0 when infeasible or unknown */
    char limiter[32];             /* what limits blocks_per_sm: "smem", "threads", "registers", "blocks" */
    char reason[1024];            /* the arithmetic, one line */
    char flips[512];              /* "feasible at the 128 KB figure (source)" or "" */
} ppb_feasibility;

/* Where a case's wall time went (ms): inputs built, the checked launch against
 * the reference (preparing included), warm-up, the sampling loop. */
typedef struct ppb_phase_times {
    double generate_ms, check_ms, warmup_ms, sampling_ms;
} ppb_phase_times;

typedef struct ppb_result {
    int status;                /* ppb_status */
    char reason[512];
    ppb_check_result check;
    ppb_overrun overrun;
    ppb_resources resources;
    ppb_feasibility feasibility;
    int timing_is_cpu;         /* 1: times are CPU-backend timings, not GPU */
    int n_samples;
    double *samples_ms;        /* raw samples, owned by the result */
    int dropped_throttled;     /* samples dropped by the throttle guard */
    int batch_launches;        /* launches per sample (batched timing of short kernels) */
    double median_ms, mean_ms, stdev_ms, min_ms, max_ms, q1_ms, q3_ms;
    double rel_noise;          /* (q3 - q1) / median */
    double tflops;             /* ppb_case_flops / median */
    double gbps;               /* ppb_case_min_bytes / median */
    ppb_phase_times phases;
    /* The checked launch's own time (ms; 0 = unknown), not a sample and not
     * stored: the warm-up counts it (ppb_measure_case). */
    double checked_launch_ms;
} ppb_result;

void ppb_result_init(ppb_result *r);
void ppb_result_free(ppb_result *r);
/* Fill the summary statistics and rates from samples_ms. */
void ppb_result_summarise(ppb_result *r, double flops, double bytes);

#endif
