/* A proposal's verdict: ACCEPT / REJECT / INCONCLUSIVE from per-case A/B
 * samples, correctness and feasibility, under the proposal's rules
 * (MEASUREMENT.md "How ppbench decides"; the exact rules, and why, are in
 * docs/STATISTICS.md). Pure: no I/O, no exit codes (the CLI maps verdicts). */
#ifndef PPB_VERDICT_H
#define PPB_VERDICT_H

#include <stdint.h>

#include "abtest.h"
#include "ppb_error.h"

/* The version of the decision rules: ppb_verdict_decide and all it relies on
 * (the intervals and their widening, the Bonferroni family, the weighted mean,
 * the classes, the reasons' text). Stored with every verdict (schema 13).
 * Bump it whenever a change makes the same inputs decide or read differently:
 * `ppbench verdict --recompute` then tells a verdict decided under other rules
 * from one whose data changed. */
/* 3: compare widens a case by a noisy run's own spread; 4: and every case by a
 * baseline run off as a whole, which the mean keeps whole; 5: and a case by its
 * baseline's offset when that case alone lies off its usual level (run_compare.c) */
#define PPB_VERDICT_RULE_VERSION 5

typedef enum {
    PPB_VERDICT_ACCEPT = 0,
    PPB_VERDICT_REJECT = 1,
    PPB_VERDICT_INCONCLUSIVE = 2,
} ppb_verdict;

const char *ppb_verdict_name(int verdict);   /* "ACCEPT", "REJECT", "INCONCLUSIVE" */
/* A time ratio (candidate / baseline) in words, the one way every reason and
 * page says an effect: "4.1% slower [1.2%, 7.0%]" (ratio - 1), or for a ratio
 * below 1 the speedup "6.5% faster [4.2%, 8.9%]" (1 / ratio - 1); without an
 * interval (bounded 0) "... (no interval yet)". */
void ppb_verdict_describe_ratio(char *buf, size_t size, double r, double lo, double hi, int bounded);
/* The effect alone, as the above says it: "4.1% slower", "6.5% faster". */
void ppb_verdict_describe_change(char *buf, size_t size, double r);

typedef enum {
    PPB_METHOD_HODGES_LEHMANN = 0,   /* HL on log-times, Moses interval (default) */
    PPB_METHOD_BOOTSTRAP = 1,        /* percentile bootstrap of the median ratio */
} ppb_interval_method;

/* "hodges_lehmann", "bootstrap" (as proposals spell them); "?" otherwise. */
const char *ppb_interval_method_name(int method);
/* The method so named, or -1. */
int ppb_interval_method_parse(const char *name);

/* One case as measured for a proposal. Pointers are borrowed. */
typedef struct ppb_verdict_case {
    const char *key;                   /* canonical case key */
    double weight;                     /* share of serving this case stands for (>= 0) */
    const double *baseline;            /* times, any unit, the same for both sides */
    int n_baseline;
    const double *candidate;
    int n_candidate;
    int baseline_correct, candidate_correct;     /* 1: within tolerance of the reference */
    int baseline_feasible, candidate_feasible;   /* 1: the target can run it */
    const char *baseline_reason;       /* why infeasible or wrong (may be NULL) */
    const char *candidate_reason;      /* e.g. the target's feasibility arithmetic */
    /* How the pair was sampled (harness/decide/sequential.h); 0 = one look, one session. */
    double look_share;                 /* the share of the case's alpha its stopping look spent (0: all of it) */
    int sessions;                      /* sessions per side (1: no between-session component measured) */
    double between_sd;                 /* between-session sd of the log ratio, widens the interval */
    /* Judged on an interval from elsewhere instead of samples (two separate
     * runs: run_compare.h): not NULL = the case's interval, as is. */
    const ppb_ab_interval *interval;
    const char *basis;                 /* where that interval comes from, said in the case's lines */
    const char *untimed;               /* no samples and no interval: why (NULL: the sample counts) */
    /* Untimed, yet one of the verdict's family of intervals: its sampling was
     * skipped because another case had already settled a REJECT (propose's
     * sampling.stop_when_settled), so the other intervals keep the level the
     * sampling design stopped them at, as if it had been timed. */
    int in_family;
} ppb_verdict_case;

typedef struct ppb_verdict_rules {
    double min_gain;        /* the geometric-mean speedup must clear this (0.02 = 2% faster); 0: no minimum */
    double max_regression;  /* largest tolerated slowdown of any one case (0.05 = 5%) */
    int require_correct;    /* 1: a failed correctness check on either side rejects */
    double threshold;       /* practical threshold t: smaller differences count as none (0.01) */
    double alpha;           /* family-wise error of the verdict's intervals (0.05) */
    int method;             /* ppb_interval_method */
    int bootstrap_reps;     /* at least this many replicates (raised to what alpha needs) */
    uint64_t seed;          /* bootstrap seed */
    /* Not a rule, said beside one: each pair's sampling budget (propose's
     * sampling.budget_ms), so an INCONCLUSIVE mean's note can name the budget
     * that would likely settle it; 0 when the samples came otherwise. */
    double budget_ms;
    /* Nor this: a part of every compared case's SD (log scale) that is one
     * draw for all of them, already inside each case's interval (compare's
     * baseline run off as a whole: run_compare.h). The weighted mean keeps it
     * whole (ppb_weighted_geomean). 0: the cases are independent. */
    double shared_sd;
} ppb_verdict_rules;

/* min_gain 0.02, max_regression 0.05, require_correct 1, threshold 0.01,
 * alpha 0.05, Hodges-Lehmann, 2000 replicates, seed 1. */
void ppb_verdict_rules_default(ppb_verdict_rules *rules);

/* The two limits the verdict judges against, each never below the practical
 * threshold (a smaller difference counts as none). As time ratios (candidate /
 * baseline), where the report's chart draws them: a compared case whose whole
 * interval lies above 1 + tolerance REJECTs; ACCEPT needs the weighted mean's
 * whole interval below 1 / (1 + gain needed). */
double ppb_verdict_tolerance(const ppb_verdict_rules *rules);     /* max(max_regression, threshold) */
double ppb_verdict_gain_needed(const ppb_verdict_rules *rules);   /* max(min_gain, threshold) */

typedef enum {
    PPB_CASE_COMPARED = 0,      /* timed on both sides and compared */
    PPB_CASE_INFEASIBLE = 1,    /* the candidate cannot run on the target */
    PPB_CASE_WRONG = 2,         /* a required correctness check failed */
    PPB_CASE_NO_SAMPLES = 3,    /* a side has no samples: nothing to compare */
    PPB_CASE_EXCLUDED = 4,      /* the baseline cannot run on the target: nothing to compare against */
} ppb_case_state;

const char *ppb_case_state_name(int state);

typedef struct ppb_verdict_outcome {
    int state;                  /* ppb_case_state */
    int cls;                    /* ppb_ab_class (COMPARED only) */
    ppb_ab_interval interval;   /* ratio candidate/baseline at the family level */
    double alpha;               /* the alpha the interval spent: its level is 1 - alpha (COMPARED only) */
    ppb_mwu test;               /* Mann-Whitney, for the report */
    double p_holm, p_bh;        /* adjusted across the compared cases */
    long more_samples;          /* per side to resolve the class (UNRESOLVED only) */
} ppb_verdict_outcome;

/* The power "could see" figures are stated at. */
#define PPB_DETECT_POWER 0.8

/* The smallest true change of a mean with interval [lo, hi] around ratio at
 * two-sided level `level` that is resolved from no change with `power`: the
 * wider side's standard error times (z_level + z_power), as a fraction. 0 when
 * the interval is unbounded or degenerate. */
double ppb_detectable_change(double ratio, double lo, double hi, double level, double power);

typedef struct ppb_verdict_report {
    int verdict;                     /* ppb_verdict */
    int n_cases;
    ppb_verdict_outcome *cases;      /* one per input case, same order */
    int n_compared;
    int family_size;                 /* intervals sharing alpha: compared cases (and untimed in_family ones) + the mean */
    double interval_alpha;           /* alpha / family_size; a case's interval has level 1 - this x its look share */
    double regression_tolerance;     /* max(max_regression, threshold) */
    int have_geomean;
    ppb_geomean geomean;             /* over compared cases, at the same level */
    /* What the run could have seen (docs/STATISTICS.md "Detectable effect"): the
     * smallest change of the weighted mean, as a fraction (0.031: 3.1%), that
     * this run's precision resolves from no change with PPB_DETECT_POWER power
     * at the mean's level; 0 without a bounded mean. */
    double detectable;
    /* An INCONCLUSIVE whose mean straddles the gain boundary: about how many
     * times this run's samples would settle it if the effect is as measured
     * (the width shrinking as 1/sqrt(n)); 0 otherwise, INFINITY past 100x. */
    double settle_factor;
    int n_reasons;
    char **reasons;                  /* one line each, "ACCEPT: ...", "REJECT: ...", "INCONCLUSIVE: ...", "note: ..." */
} ppb_verdict_report;

/* Decide. Fills `out` (free it with ppb_verdict_report_free, also after an
 * error). Errors are input errors (bad rules, bad samples) or memory. */
int ppb_verdict_decide(const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules,
                       ppb_verdict_report *out, ppb_err *err);
void ppb_verdict_report_free(ppb_verdict_report *report);

/* 1 when case c alone makes ppb_verdict_decide REJECT, whatever the other
 * cases of its verdict show: the candidate cannot run on the target, an output
 * is wrong while correctness is required, or its interval lies wholly above
 * the tolerated regression at the level it would have in a verdict of
 * `cases_most` compared cases (the most the verdict can have, so its strictest
 * level: fewer cases only narrow the interval). 0 otherwise, or on an error.
 * propose checks the pairs after such a case but does not time them
 * (sampling.stop_when_settled): nothing they could show changes the word. */
int ppb_verdict_case_settles_reject(const ppb_verdict_case *c, const ppb_verdict_rules *rules, int cases_most);

/* The report's reasons, one per line, into buf: whole, or PPB_EINPUT saying how
 * much room they need (a verdict is never stored with its reasons cut). */
int ppb_verdict_reasons_text(const ppb_verdict_report *rep, char *buf, size_t len, ppb_err *err);

#endif
