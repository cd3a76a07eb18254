/* The float64 attention of one query row over plain arrays in vLLM's layouts: the
 * arithmetic of the reference (reference.c) with nothing else of the harness, so the
 * GPU kernel tests (tests/gpu/test_*_kernel.cu, built by nvcc alone) judge the kernels
 * with exactly the reference ppbench uses. Plain C; C linkage from C++. */
#ifndef PPB_REFERENCE_ROW_H
#define PPB_REFERENCE_ROW_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PPB_REF_MAX_D 256

/* The keys and values one sequence's query rows attend to. Positions 0..cached-1 are in
 * the paged cache through the sequence's block-table row; positions from `cached` on are
 * the sequence's new tokens (prefill), contiguous rows [n][num_kv_heads][head_dim].
 * Without the cache tensors (k_cache NULL) their elements are generated: each is
 * ppb_rng_keyed_input(key, its index in the tensor), the very bits the host and device
 * fills write, so a check that reads a cache element about once need not hold gigabytes. */
typedef struct ppb_ref_keys {
    int dtype;                       /* 0 fp16, 1 bf16 (ppb_rng.h) */
    int head_dim;                    /* a multiple of 8, at most PPB_REF_MAX_D */
    int num_kv_heads, page_size;
    const uint16_t *k_cache;         /* [blocks][num_kv_heads][head_dim / 8][page_size][8] */
    const uint16_t *v_cache;         /* [blocks][num_kv_heads][head_dim][page_size] */
    uint64_t k_cache_key, v_cache_key; /* the generator's tensor keys, used when k_cache is NULL */
    const int32_t *block_table;      /* this sequence's row */
    int cached;
    const uint16_t *k_new, *v_new;   /* NULL when the sequence has no new tokens (decode) */
} ppb_ref_keys;

/* The first key position a query at query_pos sees: 0, or with a sliding window
 * W > 0 the first position > query_pos - W. */
static inline int ppb_reference_first_key(int query_pos, int sliding_window)
{
    return sliding_window > 0 && query_pos - sliding_window + 1 > 0 ? query_pos - sliding_window + 1 : 0;
}

/* out_row[head_dim] = softmax(scale * q . K) V over the keys a query at position
 * query_pos of its sequence sees: causal (bottom-right aligned: keys 0..query_pos) and,
 * with sliding_window W > 0, only positions > query_pos - W. q_row: head_dim values in
 * storage bits, of a query head of kv head kv_head. Keys are folded in chunks of at most
 * one page (or 32 new tokens) into a running max / sum / weighted V sum in double; all
 * zeros when no key is visible. */
void ppb_reference_attend(const ppb_ref_keys *keys, int kv_head, const uint16_t *q_row, double scale,
                          int query_pos, int sliding_window, double *out_row);

/* The same for n_rows (<= PPB_REF_MAX_GROUP) query rows of one kv head at one
 * position (the query heads of a GQA group): each key chunk is read and
 * converted once for all of them. Each row's result is bit for bit what
 * ppb_reference_attend gives it alone. */
#define PPB_REF_MAX_GROUP 16
void ppb_reference_attend_group(const ppb_ref_keys *keys, int kv_head, int n_rows, const uint16_t *const *q_rows,
                                double scale, int query_pos, int sliding_window, double *const *out_rows);

#ifdef __cplusplus
}
#endif

#endif
