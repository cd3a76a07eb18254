/* gpu-memory-utilization as arithmetic: how many KV-cache tokens, and how many
 * max_model_len sequences, fit per GPU at a tensor-parallel degree, from a
 * model profile and a target's memory; the seed's own figures beside them. */
#ifndef PPB_KV_CAPACITY_H
#define PPB_KV_CAPACITY_H

#include <stdio.h>

#include "model.h"
#include "proposal.h"
#include "store.h"
#include "target.h"

typedef struct ppb_kv_side {
    double utilization;
    double budget;          /* mem x utilization */
    double weights;         /* params / TP */
    double kv_bytes;        /* budget - weights - reserve */
    double headroom;        /* mem x (1 - utilization): what vLLM leaves to everything else */
    long long bytes_per_token;   /* KV per token per rank */
    long long tokens;
    long long sequences;    /* of max_model_len tokens */
} ppb_kv_side;

/* Compute both sides and fill rec's verdict and reasons (no runs): the
 * verdict's own reason first, then a "note:" line, then every step of the
 * arithmetic as "arithmetic:" lines, so whatever shows the stored verdict shows
 * how it was reached. */
int ppb_kv_capacity_decide(const ppb_proposal *p, const ppb_target *t, const ppb_model *m,
                           ppb_kv_side sides[2], ppb_proposal_record *rec, ppb_err *err);

#endif
