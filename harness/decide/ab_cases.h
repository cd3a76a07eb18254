/* A verdict's cases from measured A/B pairs: the one place that turns what
 * `propose` measured (abrun) into ppb_verdict_case inputs, used again by
 * `verdict --recompute` (verdict_recompute) on the pairs as the store holds
 * them, so both build the same inputs the same way. Pure: no I/O. */
#ifndef PPB_AB_CASES_H
#define PPB_AB_CASES_H

#include "proposal.h"
#include "result.h"
#include "sequential.h"
#include "store.h"
#include "verdict.h"

/* One measured pair, as the verdict takes it. Pointers are borrowed. */
typedef struct ppb_ab_pair_view {
    const char *key;            /* the verdict's key for it (the pair's shape key) */
    double weight;              /* the baseline case's */
    int present[2];             /* chunked_prefill: the side with fewer chunks lacks the last ones */
    const ppb_result *res[2];   /* 0 baseline, 1 candidate: status, reason, samples */
    int sessions;               /* per side as sampled; 0: not sampled as a pair (a side not timed) */
    int untimed_settled;        /* checked, not timed: an earlier pair had settled a REJECT (stop_when_settled) */
    double look_share;          /* what its stopping look spent of the design's alpha (ppb_ab_case_look_share) */
    double between_sd;          /* the sessions' spread at the last look */
    /* Of its design, what the stored case keeps beside (not used by the verdict): */
    int looks_taken, looks_planned;
    double stop_alpha;          /* the stopping rule's alpha, before its looks */
} ppb_ab_pair_view;

/* Why a pair after the one that settled a REJECT has no samples: the case's
 * INCONCLUSIVE line, were the verdict not REJECT (it cannot be). */
#define PPB_AB_UNTIMED_SETTLED \
    "was checked but not timed: an earlier pair had settled the REJECT (sampling.stop_when_settled)"

/* kernel_config: one pair, one case. A side is feasible unless refused,
 * correct unless wrong, and gives its samples when ok or noisy; a pair left
 * untimed by a settled REJECT says so and stays in the verdict's family of
 * intervals (verdict.h's in_family). vc borrows from pr. */
void ppb_ab_pair_case(const ppb_ab_pair_view *pr, ppb_verdict_case *vc);

/* chunked_prefill: the prompt's one case (key, weight 1) from its n chunk
 * pairs, in chunk order. Sample j of a side is the sum of sample j of its
 * chunks, over the fewest samples a chunk has (no samples if a chunk has
 * none); a side is wrong or cannot run when a chunk is (the reason: the last
 * such chunk's); sampled with the chunks' smallest look share, fewest sessions and
 * largest spread (a bound on the total's). totals[0] and totals[1] are
 * allocated here (free them, also after an error). PPB_ENOMEM or PPB_OK. */
int ppb_ab_chunked_case(const ppb_ab_pair_view *pairs, int n, const char *key, double *totals[2],
                        ppb_verdict_case *vc);

/* The design a stored case records of its n pairs (one, or a prompt's
 * chunks): the most looks taken and planned, the largest stopping alpha and
 * the smallest look share of those sampled as pairs (0, 0, NaN and NaN when
 * none was). */
void ppb_ab_case_design(const ppb_ab_pair_view *pairs, int n, ppb_proposal_case *pc);

/* The design a pair is sampled by (sequential.h): the proposal's sampling,
 * the stopping rule at the verdict's own simultaneous level, alpha shared over
 * the pairs and the weighted mean (alpha / (pairs + 1)): a rule at a looser
 * level than the verdict would stop pairs the verdict then cannot resolve;
 * and the verdict's boundaries (gain needed, tolerated regression), so
 * sampling goes on until the case is settled against each of them. `sessions`
 * are those prepared per side: the design starts with the proposal's and may
 * grow to them (sequential.h). Here
 * because `propose` samples by it and `verdict --recompute` re-derives it. */
ppb_seq_design ppb_ab_pair_design(const ppb_proposal *p, int n_pairs, int sessions, uint64_t seed);

/* Samples per round for a pair: the proposal's, or fewer (at least 1) where
 * the rounds of its first three scheduled looks (min_rounds, twice and four
 * times that, sequential.h; fewer when max_rounds comes first) would not fit
 * its budget_ms. A slow pair then still has looks to stop at early: fitting
 * only the first look's rounds left it one look, its whole budget, whatever
 * its effect (the seed's goal shape, 33% slower on an H100, sampled 20 s of
 * kernels for a class its first few samples showed). `slot_ms` is the measured
 * time of one sample of every unit (both sides, every session at the start);
 * unknown (<= 0 or NaN): the proposal's. */
int ppb_ab_samples_per_round(const ppb_sampling *sp, double slot_ms);

/* The share of the design's alpha a case's interval spends: what the look
 * that stopped its sampling spent (alpha spending, sequential.h), so the
 * verdict's interval is the one the stopping rule paid for. */
double ppb_ab_case_look_share(const ppb_seq_result *r, const ppb_seq_design *d);

/* What the pairs' samples cost, against a plain fixed-sample design that
 * resolves as finely (docs/STATISTICS.md "What a verdict costs"). A fixed
 * design fixes its sample count before it sees any noise, so it gives every
 * pair the count the hardest one needs: the largest ppb_seq_fixed_samples
 * over the pairs sampled by the design, each at the alpha its stopping look
 * spent. The kernel time of a sample is its time per launch times the
 * launches it timed; a pair's mean sample stands for each of the fixed
 * design's. Pairs not sampled as pairs (a side refused, wrong, or absent)
 * count in neither. */
typedef struct ppb_ab_cost {
    double kernel_ms;         /* the samples the pairs took, both sides */
    double fixed_kernel_ms;   /* the fixed design's, at fixed_samples per side in every pair */
    int fixed_samples;        /* per side and pair */
    int pairs;                /* sampled as pairs */
} ppb_ab_cost;
void ppb_ab_sampling_cost(const ppb_ab_pair_view *pairs, int n, ppb_ab_cost *out);

#endif
