/* A stored verdict re-derived from the store (`ppbench verdict --recompute`):
 * the verdict's inputs rebuilt from the two runs' samples and the proposal's
 * rows (schema 13: rules, rule version, sampling design, per case the looks,
 * sessions and spreads; per sample its session and round), decided again by
 * ppb_verdict_decide under the stored rules, and compared with what was
 * stored. What is re-derived and what is taken as stored: docs/CLI.md and
 * docs/STATISTICS.md ("Re-deriving a verdict"). */
#ifndef PPB_VERDICT_RECOMPUTE_H
#define PPB_VERDICT_RECOMPUTE_H

#include <stdint.h>

#include "ppb_error.h"
#include "store.h"
#include "verdict.h"

/* Relative tolerance of every real compared (intervals, means, spreads). */
#define PPB_RECOMPUTE_TOLERANCE 1e-9

/* One stored result of a run, with its samples' tags (NULL: untagged). */
typedef struct ppb_stored_result {
    ppb_case c;
    ppb_result r;              /* owns its samples */
    unsigned char *session;    /* owned; NULL when untagged */
    int *round;
} ppb_stored_result;

typedef struct ppb_stored_run {
    ppb_stored_result *items;
    int n, cap;
} ppb_stored_run;

/* A stored verdict and what it was decided from. */
typedef struct ppb_stored_verdict {
    ppb_proposal_record *rec;  /* owned */
    ppb_proposal_case *pcs;    /* owned, n_cases */
    int n_cases, cap_cases;
    ppb_stored_run run[2];     /* the baseline's and the candidate's results */
} ppb_stored_verdict;

/* Read proposal `id` and both its runs. A proposal that cannot be recomputed
 * is PPB_EINPUT, saying why: kv_capacity (arithmetic, no samples), stored
 * before schema 13 ("stored before ppbench recorded what a verdict used; it
 * cannot be recomputed"), a compare whose baseline run is in another database.
 * A result changed outside ppbench fails its row check (PPB_EFAIL). Free sv
 * with ppb_stored_verdict_free, also after an error. */
int ppb_stored_verdict_load(ppb_store *s, int64_t id, ppb_stored_verdict *sv, ppb_err *err);
void ppb_stored_verdict_free(ppb_stored_verdict *sv);
/* Add a result to a run (copies r's samples and the tags; tags may be NULL). */
int ppb_stored_run_add(ppb_stored_run *run, const ppb_case *c, const ppb_result *r, const ppb_sample_tags *tags);

typedef struct ppb_verdict_recheck {
    int agree;                 /* 1: the same verdict, mean, cases and reasons */
    char difference[1024];     /* the first difference (agree 0) */
    char verdict[16];          /* as recomputed */
    char stored_verdict[16];
    int n_cases, n_compared;
    int rule_version;          /* the stored verdict's (PPB_VERDICT_RULE_VERSION decided it again) */
} ppb_verdict_recheck;

/* Rebuild the verdict's cases from sv (kernel_config and source_patch: a case
 * per pair; chunked_prefill: the prompt's totals over its chunks; compare: each
 * case's medians against its stored run-to-run noise), decide under the stored
 * rules and compare with the stored record: every case's state, class, ratio,
 * interval, p_holm, the alpha its interval spent, its sessions, between-session
 * sd, looks and stopping alpha (the last four re-derived from the samples' tags
 * and the stored design), noise and history (cases first: a difference there
 * is what moves the mean and the verdict), then the mean, its interval, the
 * detectable effect, the verdict, and the reasons, line by line.
 * Reals agree within PPB_RECOMPUTE_TOLERANCE (relative). Pure: no I/O. Errors:
 * stored inputs that cannot make a verdict (a case's result missing from its
 * run, say): PPB_EINPUT. */
int ppb_verdict_recompute(const ppb_stored_verdict *sv, ppb_verdict_recheck *out, ppb_err *err);

#endif
