/* The run's ETA from measured case times (the progress line of `run`).
 *
 * Suites expand from small shapes to large ones and refused cases take ~0 s,
 * so "mean time of the finished cases x cases left" is about 2x low. Instead
 * the timed cases fit seconds = a + b * work (a: the fixed per-case cost of
 * warm-up, minimum sampling time and set-up; b: the cost of the work), and
 * each case left is predicted from its own work. Cases that finished without
 * being timed (refused, skipped, wrong, failed) count at their own measured
 * cost: cases left are expected to be refused at the rate seen so far, and all
 * of them above a work limit that refusals have shown (eta.c says how).
 *
 * Pure and deterministic: the caller reads the clock and passes seconds in. */
#ifndef PPB_ETA_H
#define PPB_ETA_H

#include "case.h"
#include "ppb_error.h"

typedef struct ppb_eta {
    struct ppb_eta_slot *slots; /* one per case index; private to eta.c */
    int n;
} ppb_eta;

/* Room for cases 0..n-1, none planned yet. PPB_ENOMEM. */
int ppb_eta_init(ppb_eta *e, int n, ppb_err *err);
void ppb_eta_free(ppb_eta *e);

/* A case's work before it runs: FLOPs plus bytes at a nominal machine balance. */
double ppb_eta_case_work(const ppb_case *c);
/* Case i is to run in this run. Indices outside 0..n-1 are ignored. */
void ppb_eta_plan(ppb_eta *e, int i, double work);
/* Planned case i finished after `seconds`; `timed`: it went through the
 * sampling loop (ok or noisy), so it informs the fit. */
void ppb_eta_finish(ppb_eta *e, int i, int timed, double seconds);
/* Seconds the planned cases not yet finished should take: finite, in
 * [0, PPB_ETA_MAX_S]; 0 before any case has finished (nothing to go on).
 * O(cases): called once per progress line. */
double ppb_eta_remaining_s(const ppb_eta *e);

/* Past this an ETA means "very long"; the cap keeps (int) casts defined. */
#define PPB_ETA_MAX_S 1e7

#endif
