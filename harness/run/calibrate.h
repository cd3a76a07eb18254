/* How far ppbench's word can be trusted on this device, measured in the regime
 * proposals measure in (the same sampling design, the same launches per
 * sample; sequential.h):
 *  - A/A: the suite's cases against themselves, repeated until at least
 *    `aa_pairs` pairs are compared; a FASTER/SLOWER is a false flag, and an
 *    A/A proposal must not come out ACCEPT or REJECT;
 *  - known effects: the candidate's measured times scaled by 1 + e (the same
 *    samples' noise, an effect of exactly e), or with `work_impl` real extra
 *    work: plugin:<work_impl>0 against plugin:<work_impl><100 e> (a build that
 *    does 100 e % more work per launch, which load stretches as it would a real
 *    change; the A/A pairs then run <work_impl>0 on both sides), repeated
 *    until `effect_pairs` pairs; detection = SLOWER per pair, REJECT per
 *    proposal.
 * Repeatability between separate processes is the CLI's part (it starts them). */
#ifndef PPB_CALIBRATE_H
#define PPB_CALIBRATE_H

#include "abrun.h"

#define PPB_CALIBRATE_MAX_EFFECTS 16

typedef struct ppb_calibrate_options {
    const char *suite_path;
    const char *filter;             /* NULL: every case */
    int aa_pairs;                   /* at least this many A/A pairs (200) */
    int effect_pairs;               /* at least this many pairs per known effect (50) */
    double effects[PPB_CALIBRATE_MAX_EFFECTS];
    int n_effects;
    double min_case_ms;             /* detection is judged on cases at least this long */
    double budget_ms;               /* each pair's time budget (sampling.budget_ms); 0: the proposals' default */
    const char *work_impl;          /* NULL: scaled times; else the plugins' name before the percent
                                       ("example-cpu-work": example-cpu-work0 against example-cpu-work10) */
} ppb_calibrate_options;

typedef struct ppb_calibrate_tally {
    double effect;                  /* 0: A/A */
    int pairs, faster, slower;      /* compared pairs and their classes */
    int long_pairs, long_faster, long_slower;   /* the same, cases >= min_case_ms */
    int proposals, accept, reject;  /* proposal verdicts */
} ppb_calibrate_tally;

typedef struct ppb_calibration {
    ppb_calibrate_tally aa;
    ppb_calibrate_tally effect[PPB_CALIBRATE_MAX_EFFECTS];
    int n_effects;
} ppb_calibration;

/* Run the A/A and known-effect proposals (stored, kind from o->run_kind), one
 * progress line per proposal on o->log: pairs so far, the proposals in all and
 * an ETA. PPB_EREFUSED (nothing stored) when the backend refuses every pair, or
 * when a proposal compared none. */
int ppb_calibrate(const ppb_calibrate_options *co, ppb_propose_options *o, ppb_calibration *out, ppb_err *err);

/* Repeatability of two stored runs of the same cases: |median_b / median_a - 1|
 * per case present in both, its median and 90th percentile over *n_cases. */
int ppb_calibrate_repeatability(ppb_store *s, int64_t run_a, int64_t run_b, double *median_diff, double *p90,
                                int *n_cases, ppb_err *err);

/* Share of pairs flagged (A/A: FASTER + SLOWER; an effect: SLOWER), of all
 * pairs or of the long ones. */
double ppb_calibrate_flag_rate(const ppb_calibrate_tally *t, int long_only);

/* One-sided 95% upper confidence bound of a proportion k/n (Wilson 1927). */
double ppb_wilson_upper(int k, int n);

/* The smallest effect flagged SLOWER in at least `share` of long pairs; NAN when none is. */
double ppb_calibrate_mde(const ppb_calibration *c, double share);

#endif
