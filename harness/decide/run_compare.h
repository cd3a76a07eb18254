/* Comparing two separately measured runs (`ppbench compare`). Two runs made
 * apart differ by more than their samples say: clocks, placement, the machine's
 * state drift between runs, so within-run intervals call a run against itself
 * different. Each case is judged by its own run-to-run noise instead, measured
 * on its history of plain runs; a case with too little history is never
 * rejected on timing. Rules and defaults: docs/STATISTICS.md "Comparing
 * separate runs". */
#ifndef PPB_RUN_COMPARE_H
#define PPB_RUN_COMPARE_H

#include <stdint.h>

#include "ppb_error.h"
#include "store.h"
#include "verdict.h"

/* One case in both runs. Pointers are borrowed. */
typedef struct ppb_run_compare_case {
    const char *key;
    double weight;                      /* >= 0 */
    double baseline_ms, candidate_ms;   /* the runs' medians; not > 0 (or NaN): not timed */
    /* A run that could not measure the case to its suite's noise target (status
     * noisy): its samples' spread, (q3 - q1) / median, which widens the case's
     * interval (judge_case says why); 0 for a run that could. */
    double baseline_spread, candidate_spread;
    int baseline_correct, candidate_correct;
    int baseline_feasible, candidate_feasible;
    const char *baseline_reason, *candidate_reason;
    const double *history;              /* the case's medians in earlier plain runs, oldest first, the two */
    int n_history;                      /* compared runs left out (ppb_run_compare_history) */
    /* Two implementations of one shape compared (runs of different kernels):
     * history[0, history_split) are the baseline implementation's plain runs,
     * the rest the candidate's, each about its own level, and the noise is
     * pooled over both; each part is the caller's to cap at max_history. 0: one history, the case's own. Kept with a
     * given noise too: the split sets the degrees of freedom. */
    int history_split;
    /* A stored comparison recomputed (verdict_recompute.h): its noise as
     * stored, from n_history runs, in place of a history (NULL), and the
     * baseline's offset from its usual level as stored (0: none). */
    int noise_given;
    double noise, baseline_offset;
} ppb_run_compare_case;

/* A case of the two runs from their results (the baseline case's key and
 * weight; each side timed when ok or noisy with a median, correct unless
 * wrong, feasible unless refused, its spread when noisy). c borrows from ca,
 * ra and rb; history is left empty. */
void ppb_run_compare_case_of(const ppb_case *ca, const ppb_result *ra, const ppb_result *rb,
                             ppb_run_compare_case *c);

typedef struct ppb_run_compare_rules {
    ppb_verdict_rules verdict;   /* threshold, max_regression, min_gain, alpha, require_correct */
    int min_history;             /* fewer plain runs of history: the case is not judged on timing (5) */
    int max_history;             /* the noise comes from the latest this many (20) */
} ppb_run_compare_rules;

/* verdict rules as ppb_verdict_rules_default but min_gain 0; history 5 and 20. */
void ppb_run_compare_rules_default(ppb_run_compare_rules *rules);

/* Is a compared run off as a whole against the cases' histories? Two runs made
 * apart can differ by the machine's state, which moves every case at once (a
 * loaded CPU once made a run's 5 cases 0.62-0.73x the time of the run before,
 * nothing changed: docs/STATISTICS.md). `shift` is the 25%-trimmed mean over
 * the judged cases of log(the run's median / the median of the case's history,
 * of its implementation's part with two), `noise` the median of those cases'
 * run-to-run noise (rep->noise); `unusual` when at least 3 cases were judged
 * and |shift| exceeds PPB_RUN_COMPARE_UNUSUAL x noise (3 in 1000 plain runs if
 * the run-level part were normal; on the loaded 2-core runner, where the
 * machine drifts and jumps, 17 of 99 in one study and 0 of 99 in another:
 * docs/STATISTICS.md). A baseline so off widens every case by its shift (rule
 * 4, ppb_run_compare_decide); for the candidate it is what a change of every
 * case looks like, of the code or of the machine, and a note says so. */
#define PPB_RUN_COMPARE_UNUSUAL 3.0
typedef struct ppb_run_level {
    double shift, noise;
    int cases, unusual;
} ppb_run_level;

typedef struct ppb_run_compare_report {
    ppb_verdict_report v;        /* verdict, states, intervals, classes, mean, reasons */
    double *noise;               /* per case: relative run-to-run SD used (NaN: not judged) */
    int *n_history;              /* per case: plain runs it came from */
    int *short_history;          /* per case: 1 when it had fewer than min_history */
    int n_short;
    double *crit;                /* per case: the critical value (Student t) of its interval */
    double *sd;                  /* per case: the SD of its log change, the history's and the runs' own */
    /* per case: the baseline's |log(median / usual level)| when beyond its
     * interval's reach of the history's noise, which widens the case (rule 5);
     * 0: like its history; NaN: not judged */
    double *baseline_offset;
    int n_baseline_off;          /* the cases so widened */
    /* Each run as a whole (shift NaN: not measured). A baseline off as a whole
     * (unusual): every case's interval is widened by |shift|, and the weighted
     * mean keeps it whole. A candidate moved as a whole: a note. */
    ppb_run_level baseline_level, candidate_level;
} ppb_run_compare_report;

/* Decide (no I/O). The runs' levels are measured on the cases' histories, or
 * given (`stored_shift`, not NULL: the baseline's and the candidate's shift of
 * a stored comparison recomputed, its cases' noise given; NaN: not measured).
 * Fills `out`: free it with ppb_run_compare_report_free, also after an error. */
int ppb_run_compare_decide(const ppb_run_compare_case *cases, int n, const ppb_run_compare_rules *rules,
                           const double stored_shift[2], ppb_run_compare_report *out, ppb_err *err);

void ppb_run_compare_report_free(ppb_run_compare_report *r);


/* Where a case's history comes from: the plain runs of `suite` in `s`, without
 * runs skip[0] and skip[1] (0: none), which are the compared runs, and without
 * runs timed otherwise than `timing` says (ppb_store_run_timing; NULL: every
 * run). */
typedef struct ppb_run_compare_source {
    ppb_store *s;
    const char *suite;
    int64_t skip[2];
    const char *timing;
} ppb_run_compare_source;

/* The case's timed medians over the sources, oldest first, each run once (by
 * uid: a database and its copy are one history), a run skipped in any source
 * skipped in all, the latest `max_n` kept. The runs that measured the case to
 * their noise target (ok) when at least `min_measured` did, else the noisy ones
 * too: a compared run that could not brings its own spread (judge_case), so
 * the history's noise is that of runs that could, and one disturbed run does
 * not widen every interval for the next max_n compares; a case that seldom
 * meets its target is judged on all its runs (min_measured 0: always). *out is
 * malloc'd (free it); *n may be 0. */
int ppb_run_compare_history(const ppb_run_compare_source *src, int n_src, const char *key, int max_n,
                            int min_measured, double **out, int *n, ppb_err *err);


/* Fill the record of a decided comparison as ppb_verdict_record does, and
 * what a comparison adds: the cases with too little history get state
 * "no-history", each case its noise and history, rec the history rules and
 * the two runs' shifts. */
int ppb_run_compare_record(const ppb_run_compare_report *rep, const ppb_run_compare_case *cases, int n,
                           const ppb_run_compare_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                           ppb_err *err);

/* Decide, record (ppb_run_compare_record) and store (rec's name, kind and
 * runs set by the caller; pcs' keys too). */
int ppb_run_compare_store(ppb_store *s, const ppb_run_compare_case *cases, int n,
                          const ppb_run_compare_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                          ppb_run_compare_report *rep, ppb_err *err);

#endif
