/* Running a proposal: baseline and candidate interleaved in one process on one
 * device (two sessions, one per side, sharing the inputs), more rounds for the
 * pairs the statistics cannot resolve yet, then the verdict, all stored.
 * kv_capacity proposals are arithmetic (kv_capacity.h) and run nothing. */
#ifndef PPB_ABRUN_H
#define PPB_ABRUN_H

#include <stdio.h>

#include "proposal.h"
#include "sequential.h"
#include "store.h"
#include "verdict.h"

typedef struct ppb_propose_options {
    const char *db_path;
    const char *backend;        /* auto | cpu | cuda */
    int device_index;
    const char *target;         /* overrides the proposal's target ("none" = no target) */
    const char *label;
    double cpu_max_gflop;
    FILE *log;                  /* progress and notes */
    /* A known effect (calibrate, --scale-candidate): the candidate's measured
     * times are scaled by (1 + candidate_slowdown), > -1. 0 = off. */
    double candidate_slowdown;
    const char *run_kind;       /* the kind of both runs (ppb_store_run_kinds); NULL = "proposal" */
    /* When the backend refuses a side of every pair (ppb_session_refuses): 0,
     * say so in one line on the log and go on (the verdict records it); 1, fail
     * with PPB_EREFUSED and that line before any run is stored (calibrate: there
     * is nothing to calibrate). */
    int fail_if_all_refused;
    /* ppb_monotonic_ms() when the command started, so the verdict's cost
     * counts what came before the run (a source_patch's trees); 0 = when
     * ppb_propose_run starts. */
    double started_ms;
} ppb_propose_options;

/* What a proposal's run decided and stored, handed to the caller whole, so
 * that nothing is read back from the database it just wrote. */
typedef struct ppb_propose_outcome {
    ppb_proposal_record rec;     /* the stored proposal row: id, verdict, reasons, runs */
    ppb_proposal_case *cases;    /* its stored cases, in order */
    int n_cases;
    ppb_verdict_report report;   /* the verdict as decided */
    ppb_store *store;            /* the database, still open, for the documents written next */
} ppb_propose_outcome;

/* Run it, decide, store. Free out with ppb_propose_outcome_free (also after
 * an error: it closes the store). */
int ppb_propose_run(const ppb_proposal *p, const ppb_propose_options *o, ppb_propose_outcome *out, ppb_err *err);
void ppb_propose_outcome_free(ppb_propose_outcome *out);

#endif
