/* The sequential A/B design of a proposal's case pair: how samples are taken,
 * when sampling may stop, and what interval a stopped comparison may claim.
 * docs/STATISTICS.md "Sampling a pair" gives the reasons and references.
 *
 *  - Sessions: each side runs in `sessions` separately prepared sessions
 *    (own allocations, own warm-up); their spread estimates the
 *    between-session component, which widens every interval. Where that
 *    component (its sd) is twice the samples' own (their standard error),
 *    more rounds would hardly narrow the interval: a look that does not stop
 *    adds a session per side, up to max_sessions, which both shrinks the
 *    component and gives its estimate more degrees of freedom.
 *  - Order: every sampling slot takes one sample of each (side, session) unit
 *    in a fresh random order (seeded), so drift and load bursts hit both sides
 *    alike and no side owns a fixed position.
 *  - Looks: the interval is looked at only after the scheduled rounds
 *    min_rounds, 2 min_rounds, 4 min_rounds, ... and max_rounds (or once when
 *    the time budget runs out, in place of the next scheduled look).
 *  - Alpha spending: a look spends what an alpha-spending function allows at
 *    the information gathered so far, alpha t^2 with t the larger of the
 *    share of max_rounds and of the budget used; the look that is known to be
 *    the last (the budget ran out, or max_rounds) spends all that is left.
 *    The spent amounts add up to at most alpha, so the interval at whatever
 *    look stops has coverage 1 - alpha whatever the stopping rule did (a union
 *    bound; the session component's part by Student's t, an approximation).
 *    Bonferroni over the K scheduled looks (alpha / K each) paid for looks
 *    that mostly never came: most pairs stop on the budget after two or three.
 *  - Stopping aims at the decision: sampling goes on while the interval
 *    still straddles a boundary the verdict judges against (the practical
 *    threshold, the minimum gain, the tolerated regression), not only until
 *    it classifies against the threshold: a 3% speedup that is surely above
 *    1% but not yet surely above a 2% minimum gain keeps sampling. */
#ifndef PPB_SEQUENTIAL_H
#define PPB_SEQUENTIAL_H

#include <stdint.h>

#include "abtest.h"
#include "ppb_error.h"

#define PPB_SEQ_MAX_SESSIONS 4
#define PPB_SEQ_MAX_LOOKS 32

typedef struct ppb_seq_design {
    int samples_per_round;   /* sampling slots per round (each slot: one sample of every unit) */
    int min_rounds, max_rounds;
    int sessions;            /* per side at the start, 1..PPB_SEQ_MAX_SESSIONS */
    int max_sessions;        /* per side at most (sessions..PPB_SEQ_MAX_SESSIONS; 0: sessions) */
    double budget_ms;        /* measured time of all units; checked after each round */
    double alpha;            /* the case's share of the verdict's family alpha, before looks */
    double threshold;        /* practical threshold the interval classifies against */
    double min_gain;         /* the verdict's boundaries (verdict.h): the gain needed (>= threshold) and */
    double tolerance;        /* the tolerated regression (>= threshold); sampling stops once none is inside */
    uint64_t seed;           /* sample order */
} ppb_seq_design;

/* The scheduled looks (round numbers, ascending) for min_rounds..max_rounds;
 * returns K (>= 1). */
int ppb_seq_looks(int min_rounds, int max_rounds, int rounds[PPB_SEQ_MAX_LOOKS]);

/* The alpha spent by information fraction t (clamped to 0..1): alpha t^2,
 * the power family of Kim and DeMets with exponent 2 (docs/STATISTICS.md). */
double ppb_seq_alpha_spent(double alpha, double t);

/* 1 when no decision boundary of the design lies strictly inside the
 * interval [ratio_lo, ratio_hi] (and it is bounded): more samples could not
 * change which side of any boundary the verdict puts it on. */
int ppb_seq_settled(const ppb_seq_design *d, double ratio_lo, double ratio_hi);

/* The between-session standard deviation of the log ratio: with per-sample
 * session tags (0..sessions-1) on each side, per side tau^2 by the method of
 * moments from the Hodges-Lehmann shifts between its sessions (sequential.c
 * says why), averaged over the two sides, as it enters a ratio of pooled
 * samples: sqrt(2 tau^2 / sessions). 0 for one session. A pair of sessions
 * one of which has too few samples for a bounded shift (a session added at
 * the last look) is left out of the estimate; NAN (unknown: the interval then
 * claims nothing) when no pair is left, or on allocation failure. */
double ppb_seq_between_sd(const double *base, const unsigned char *base_session, int n, const double *cand,
                          const unsigned char *cand_session, int m, int sessions);

/* Widen an interval (any method) by the between-session component: each
 * half-width in quadrature with c * between_sd, c Student's t at 1 - alpha/2
 * with 2 (sessions - 1) degrees of freedom (the spread's own, pooled over the
 * two sides); level_achieved becomes the nominal level. A NaN spread (it could
 * not be computed) leaves the interval unbounded. */
void ppb_seq_widen(ppb_ab_interval *iv, double alpha, double between_sd, int sessions);

/* Samples per side a plain fixed-sample design would take for the interval
 * width a sequential look reached with n per side: one look at the pair's
 * whole `alpha` instead of the `look_alpha` the stopping look spent, so its
 * critical value is smaller and it needs n (z(alpha) / z(look_alpha))^2,
 * rounded up (width ~ z / sqrt(n)), and never fewer than give a bounded
 * Moses interval at alpha. The sessions' part of the width is left out: both
 * designs would sample the same sessions. 0 when n < 1 or an alpha is out of
 * (0, 1). */
int ppb_seq_fixed_samples(int n, double look_alpha, double alpha);

/* Time one sample of unit (side 0 = baseline / 1 = candidate, session):
 * *ms per launch, *cost_ms the time it took (counted against the budget). */
typedef int (*ppb_seq_sample_fn)(void *ctx, int side, int session, double *ms, double *cost_ms, ppb_err *err);

typedef enum {
    PPB_SEQ_STOP_RESOLVED = 0,   /* the interval was settled at a look */
    PPB_SEQ_STOP_BUDGET = 1,     /* the time budget ran out */
    PPB_SEQ_STOP_MAX_ROUNDS = 2, /* the last scheduled look left it unresolved */
} ppb_seq_stop;

typedef struct ppb_seq_result {
    double *samples[2];              /* per side, in the order taken */
    unsigned char *session[2];       /* each sample's session */
    int *round[2];                   /* each sample's round (1 ..) */
    int n[2];
    int rounds, looks_taken, looks_planned, stop;
    int sessions;                    /* per side at the end (the design's, plus those added) */
    double between_sd;               /* at the last look */
    double within_se;                /* the last look's standard error of the samples' own (log), beside between_sd */
    double look_alpha;               /* what the last look spent (its interval's alpha) */
    double alpha_spent;              /* by all looks taken (<= the design's alpha) */
    ppb_ab_interval interval;        /* at the last look, at look_alpha */
    int cls;                         /* ppb_ab_class of that interval */
} ppb_seq_result;

/* Run the design: rounds of slots, looks on schedule, stop at the first look
 * whose interval is settled (ppb_seq_settled), when the budget runs out, or
 * after max_rounds. Free out with ppb_seq_result_free (also after an error). */
int ppb_seq_run(const ppb_seq_design *d, ppb_seq_sample_fn sample, void *ctx, ppb_seq_result *out, ppb_err *err);
void ppb_seq_result_free(ppb_seq_result *r);

#endif
