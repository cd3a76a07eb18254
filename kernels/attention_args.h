/* Kernel arguments, shared by the CUDA kernels (device side), the kernel runtime
 * (host side, NVRTC or ahead-of-time launch) and the harness. Plain C: no CUDA
 * headers, so the harness and the BI-V100 toolchain see the same layout.
 * Layouts follow vLLM 0.6.3 (docs/KERNEL-ABI.md lists them); an implementation
 * may ask for the paged cache in the other layout vLLM uses (PPB_KV_LAYOUT_*). */
#ifndef PPB_ATTENTION_ARGS_H
#define PPB_ATTENTION_ARGS_H

#ifdef __CUDACC_RTC__
typedef int int32_t;
#else
#include <stdint.h>
#endif

/* dtype codes match harness/core/case.h ppb_dtype */
#define PPB_KDTYPE_FP16 0
#define PPB_KDTYPE_BF16 1

/* The paged cache's layouts. An implementation names the one its kernels read
 * (ppbk_*_ops.kv_layout); ppbench fills that one, untimed, with the same
 * values at the same (page, slot, kv head, d), so every implementation sees
 * the same inputs and the same float64 reference.
 * VLLM:  k_cache [num_blocks, num_kv_heads, head_dim / 8, page_size, 8],
 *        v_cache [num_blocks, num_kv_heads, head_dim, page_size]
 *        (vLLM's paged attention and prefix prefill kernels; the default)
 * FLASH: k_cache and v_cache [num_blocks, page_size, num_kv_heads, head_dim]
 *        (vLLM's FlashAttention and Triton unified attention backends) */
#define PPB_KV_LAYOUT_VLLM 0
#define PPB_KV_LAYOUT_FLASH 1

/* Prefix prefill (vLLM context_attention_fwd). Pointers are device pointers.
 * q, out: [total_tokens, num_heads, head_dim]; k, v: [total_tokens, num_kv_heads, head_dim]
 * k_cache, v_cache: the paged cache in the implementation's layout (above)
 * block_table: [batch, max_blocks_per_seq]; start_loc: [batch + 1] first new token of each sequence;
 * query_lens, context_lens: [batch]; seq_lens: [batch] = context_lens + query_lens (vLLM's b_seq_len,
 * built once per batch by the host as vLLM does, so an implementation that wants it needs no kernel of its own).
 * New token i of a sequence sees the whole context and new tokens 0..i;
 * with sliding_window > 0, a query at absolute position p sees keys at positions > p - sliding_window. */
typedef struct ppb_prefill_args {
    const void *q, *k, *v, *k_cache, *v_cache;
    void *out;
    const int32_t *block_table, *start_loc, *query_lens, *context_lens;
    int batch, max_query_len, num_heads, num_kv_heads, head_dim, page_size, max_blocks_per_seq;
    int sliding_window;
    float sm_scale;
    const int32_t *seq_lens;
    /* Since kernel ABI version 6: the new tokens of the whole batch (the sum of
     * query_lens: the rows of q), and the paged cache's physical pages
     * (num_blocks; 0 in what `refuse` and `prepare` get, which precede the
     * inputs). */
    int num_tokens, num_blocks;
} ppb_prefill_args;

/* Paged attention decode (vLLM paged_attention_v1/_v2 + reduce).
 * q, out: [num_seqs, num_heads, head_dim]; caches as above; seq_lens: [num_seqs].
 * v2 scratch (sized by the host with ITS partition size; the kernel indexes with
 * max_num_partitions = ceil(max_seq_len / kernel partition size), like vLLM's gridDim.z):
 * tmp_out [num_seqs, num_heads, max_num_partitions, head_dim] (storage dtype),
 * exp_sums, max_logits [num_seqs, num_heads, max_num_partitions] (fp32). */
typedef struct ppb_decode_args {
    const void *q, *k_cache, *v_cache;
    void *out;
    const int32_t *block_table, *seq_lens;
    void *tmp_out;
    float *exp_sums, *max_logits;
    int num_seqs, num_heads, num_kv_heads, head_dim, page_size, max_blocks_per_seq;
    int max_seq_len, max_num_partitions;
    int sliding_window;
    float sm_scale;
} ppb_decode_args;

/* One input tensor generated on the device (input_fill.cuh), element i exactly
 * as the host generates it (harness/run/workload.c, ppb_rng.h). A paged cache
 * tensor (valid_tokens non-NULL) holds garbage past the valid tokens of each
 * physical page: slot = (i >> slot_shift) & (page_size - 1), slot_shift 3 for
 * k_cache's [.., D/8, page, 8], 0 for v_cache's [.., D, page]. */
typedef struct ppb_fill_args {
    void *data;                      /* uint16 storage bits */
    unsigned long long n;            /* elements */
    unsigned long long key;          /* ppb_rng_key(seed, tensor id) */
    const int32_t *valid_tokens;     /* [pages]: tokens in each physical page; NULL: a plain tensor */
    unsigned long long page_elems;   /* elements per physical page */
    int page_size, slot_shift;
    /* A paged cache asked for in PPB_KV_LAYOUT_FLASH: element i takes the value
     * of the vLLM-layout element at its place (kv_layout.h; slot_shift 3: the
     * k_cache's, 0: the v_cache's). PPB_KV_LAYOUT_VLLM: element i is index i. */
    int layout, num_kv_heads, head_dim;
    /* Non-NULL: read, not write. The checksum of the n 16-bit elements at
     * `data` (input_sum in input_fill.cuh) is added to *sum, and every other
     * field is ignored: how a plugin's inputs are shown unchanged without
     * copying gigabytes of KV cache to the host. */
    unsigned long long *sum;
} ppb_fill_args;

/* The input generator's block size: its checksum reduces a block in shared memory. */
#define PPB_FILL_THREADS 256

#endif
