/* The inputs of one case, in vLLM's layouts (KERNELS.md), on the host.
 *
 * Values come from a counter-based generator (kernels/ppb_rng.h): element i of
 * tensor t is a pure function of (seed, t, i), so the CUDA backend generates
 * the same inputs on the device (kernels/input_fill.cuh) and the host copy
 * here, made only where the reference needs it, matches bit for bit.
 * KV pages are placed through a seeded random permutation, never the identity. */
#ifndef PPB_WORKLOAD_H
#define PPB_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "case.h"
#include "ppb_error.h"

/* Tensor ids for the generator: part of the input definition, never renumber. */
enum { PPB_T_Q = 1, PPB_T_K = 2, PPB_T_V = 3, PPB_T_K_CACHE = 4, PPB_T_V_CACHE = 5 };

typedef struct ppb_workload {
    const ppb_case *c;
    uint64_t seed;
    int batch;
    int32_t *query_lens;    /* [batch]; decode: all 1 */
    int32_t *context_lens;  /* [batch]; prefill: cached tokens; decode: seq_lens */
    int32_t *start_loc;     /* [batch + 1]; prefill: first new token of each sequence */
    int32_t *seq_lens;      /* [batch]; every token a sequence attends to (prefill: context + new; decode: seq_lens) */
    int total_tokens;       /* prefill: sum of query_lens; decode: batch */
    int max_blocks_per_seq;
    int num_blocks;         /* physical pages in the cache */
    int32_t *block_table;   /* [batch, max_blocks_per_seq]; unused slots are 0 */
    int32_t *valid_tokens;  /* [num_blocks]: cached tokens in each physical page (the rest is garbage) */
    /* Storage-dtype (fp16/bf16 bit patterns) host tensors */
    uint16_t *q;            /* prefill [total_tokens, H, D]; decode [batch, H, D] */
    uint16_t *k, *v;        /* prefill new tokens [total_tokens, KVH, D]; decode NULL */
    uint16_t *k_cache;      /* [num_blocks, KVH, D/8, page, 8]; NULL when only the queries are filled */
    uint16_t *v_cache;      /* [num_blocks, KVH, D, page] (vLLM's layout: ppb_workload_cache_in_layout for another) */
    size_t q_elems, kv_elems, cache_elems, out_elems;
} ppb_workload;

/* Host bytes ppb_workload_create would allocate (for refusing oversized cases). */
size_t ppb_workload_host_bytes(const ppb_case *c);
/* Build lengths, the block table and (if with_tensors) the tensors. */
int ppb_workload_create(ppb_workload *w, const ppb_case *c, uint64_t seed, int with_tensors,
                        ppb_err *err);
/* The host tensors of a workload created without them (those it lacks),
 * filled in parallel over the available cores. */
int ppb_workload_fill(ppb_workload *w, ppb_err *err);
/* Only q and the new tokens' k and v: what a reference that generates the paged
 * cache's elements as it reads them needs (ppb_reference_reads_cache_often). */
int ppb_workload_fill_queries(ppb_workload *w, ppb_err *err);
void ppb_workload_free_tensors(ppb_workload *w);
void ppb_workload_free(ppb_workload *w);

/* Index helpers for the paged layouts. */
size_t ppb_kcache_index(const ppb_workload *w, int block, int kv_head, int d, int slot);
size_t ppb_vcache_index(const ppb_workload *w, int block, int kv_head, int d, int slot);

/* A malloc'd copy of the paged k_cache (is_k) or v_cache in `layout`
 * (PPB_KV_LAYOUT_*, kernels/attention_args.h): the same values at the same
 * (page, slot, kv head, d). NULL when the workload has no such tensor or
 * memory ran out. For an implementation that reads the other layout. */
uint16_t *ppb_workload_cache_in_layout(const ppb_workload *w, int is_k, int layout);

/* fp16/bf16 <-> float conversion (round to nearest even), used everywhere on the host. */
float ppb_half_to_float(uint16_t h, int dtype);
uint16_t ppb_float_to_half(float f, int dtype);

#endif
