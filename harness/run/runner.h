/* The run pipeline: suite -> matrix -> (target check) -> workload -> backend ->
 * reference check -> measurement -> store, one case at a time, each committed
 * as it completes so an interrupted run can be resumed. */
#ifndef PPB_RUNNER_H
#define PPB_RUNNER_H

#include <stdint.h>
#include <stdio.h>

#include "ppb_error.h"
#include "store.h"
#include "suite.h"

typedef struct ppb_run_options {
    const char *suite_path;
    const char *db_path;
    const char *filter;       /* --filter, or NULL */
    const char *impl;         /* --impl: every case on this implementation, or NULL (the suite's) */
    int shard_k, shard_n;     /* --shard K/N; 0/0 = everything */
    const char *group;        /* --group: the night the shards belong to (NULL: commit and UTC date) */
    const char *backend;      /* "auto" (GPU when there is one), "cpu", "cuda" */
    int device_index;
    const char *target;       /* overrides the suite's target; "none" = no target */
    const char *label;
    const char *run_kind;     /* --kind: run (NULL), proposal or calibrate (ppb_store_run_kinds); a
                                 resumed run keeps its own */
    int64_t resume_run;       /* complete this run instead of starting one */
    double cpu_max_gflop;     /* CPU backend work limit per case (0 = its default) */
    int hot;                  /* 1: do not flush caches between samples */
    int progress;             /* ppb_progress_mode: how progress shows on stderr */
    FILE *log;                /* where to say which backend runs and why cases are refused */
    const char *devices;      /* --devices all|0,1,..: one worker process per device; NULL = in process */
    double case_timeout_s;    /* worker watchdog per case (0 = none) */
} ppb_run_options;

/* A terminal gets one line rewritten in place; a CI log (stderr not a
 * terminal) gets a line per finished case, which stays readable in a file. */
typedef enum { PPB_PROGRESS_NONE = 0, PPB_PROGRESS_TERMINAL = 1, PPB_PROGRESS_LOG = 2 } ppb_progress_mode;

typedef struct ppb_run_summary {
    int64_t run_id;
    int planned;              /* cases in this run (after filter and shard) */
    int already_done;         /* resume: cases found stored */
    int interrupted;
    int timing_is_cpu;
    char backend[16];
    /* After a run that returned 0, what the pipeline worked with, handed over
     * (ppb_run_summary_close): its connection to the run's database, still
     * open, for whatever the caller reads of the run (what this process and an
     * earlier one, before --resume, stored); and the suite as it ran (a resumed
     * run's as stored). NULL otherwise. */
    ppb_store *store;
    ppb_suite *suite;
} ppb_run_summary;

int ppb_run_suite(const ppb_run_options *opt, ppb_run_summary *sum, ppb_err *err);
/* Close the database and free the suite the run handed over. */
void ppb_run_summary_close(ppb_run_summary *sum);

#endif
