/* Nightly trend: one case's history of per-run medians against itself. The
 * latest run gets a robust score against a trailing window; a step test (L1
 * change point) finds where a shift began, and only a shift that the last
 * runs sustain raises an alert, so one noisy night is an OUTLIER, never a new
 * normal. The relative threshold is the case's own: k times its measured
 * night-to-night noise, never under a practical floor. Formulas and defaults,
 * with reasons: docs/STATISTICS.md "Trend". */
#ifndef PPB_TREND_H
#define PPB_TREND_H

#include "ppb_error.h"

typedef enum {
    PPB_TREND_OK = 0,
    PPB_TREND_REGRESSION = 1,            /* a sustained step up in time */
    PPB_TREND_IMPROVEMENT = 2,           /* a sustained step down in time */
    PPB_TREND_OUTLIER = 3,               /* the latest run alone is beyond the thresholds */
    PPB_TREND_INSUFFICIENT_HISTORY = 4,
    /* The latest run did not time the case (refused, skipped, wrong, failed):
     * nothing to judge, and its history's last time is an earlier night's. Set
     * by the caller, which knows the run's status (ppb_trend_not_timed). */
    PPB_TREND_NOT_TIMED = 5,
    PPB_TREND_STATUS_COUNT
} ppb_trend_status;

const char *ppb_trend_status_name(int status);   /* "ok", "regression", ... */

/* One run of a case, oldest first. */
typedef struct ppb_trend_point {
    const char *run_id;    /* borrowed; may be NULL */
    double value;          /* the run's median time (> 0) */
} ppb_trend_point;

typedef struct ppb_trend_options {
    int window;           /* trailing runs in the reference (10) */
    int min_history;      /* fewer runs than this: INSUFFICIENT_HISTORY (6) */
    int min_segment;      /* runs before a change point, at least (3) */
    int sustain;          /* last runs that must all be beyond the thresholds (2) */
    double min_change;    /* the practical floor of the relative threshold (0.02) */
    double noise_multiplier;   /* k: threshold = max(min_change, k x night-to-night noise) (5) */
    double min_score;     /* |relative change| >= threshold AND |robust score| >= this (5) */
    double noise_floor;   /* the scale is at least this fraction of the reference median (0.001) */
} ppb_trend_options;

void ppb_trend_options_default(ppb_trend_options *opt);

typedef struct ppb_trend_result {
    int status;              /* ppb_trend_status */
    double rel_change;       /* step: median after / reference - 1; otherwise latest / reference - 1 */
    double score;            /* the same difference over the reference's robust scale */
    double reference;        /* median of the reference runs */
    double scale;            /* 1.4826 MAD of the reference runs, floored */
    double noise;            /* the reference's night-to-night noise (ppb_trend_night_noise) */
    double threshold;        /* the relative threshold used: max(min_change, k x noise) */
    const char *threshold_from;   /* "floor" or "noise": which term set it (static string) */
    /* The smallest sustained step this case's history lets trend flag (both
     * tests: the threshold and min_score x scale / reference), as a fraction:
     * what the nights could see; a smaller real change stays OK. */
    double detectable;
    int n_reference;         /* runs in the reference */
    int step_index;          /* first run of the step (REGRESSION/IMPROVEMENT), else -1 */
    int step_runs;           /* runs since the step began, the latest included */
    char step_run_id[128];   /* run id of step_index ("" if none or unnamed) */
    char reason[512];        /* one line */
} ppb_trend_result;

/* The night-to-night noise of a series of run medians (in time order) as a
 * relative standard deviation: the larger of a high quantile of consecutive
 * log differences and the robust spread of the log values (docs/STATISTICS.md
 * "Trend"). NAN with fewer than 2 values (or no memory). */
double ppb_trend_night_noise(const double *values, int n);
/* The same over two series in one array, values[0, split) and [split, n), each
 * about its own level (the runs of two implementations of one case): no
 * difference across the split, each part's spread about its own median. */
double ppb_trend_night_noise_split(const double *values, int n, int split);

/* A case the latest run did not time: status NOT_TIMED, the run's status and
 * reason as the reason ("not timed in the latest run: refused: ..."). */
void ppb_trend_not_timed(const char *run_status, const char *why, ppb_trend_result *out);

/* Judge the latest point of `history` (n points, oldest first). `opt` NULL:
 * defaults. */
int ppb_trend_analyse(const ppb_trend_point *history, int n, const ppb_trend_options *opt,
                      ppb_trend_result *out, ppb_err *err);

#endif
