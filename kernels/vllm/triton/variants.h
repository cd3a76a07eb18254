/* The table prepare.py generates (variants_table.c) and plugin.c reads: the
 * compiled kernels, and per prepared case the launch(es) the vLLM tree's
 * wrapper makes for it (capture.py), with every kernel parameter bound by name. */
#ifndef PPBK_VT_VARIANTS_H
#define PPBK_VT_VARIANTS_H

#include <stdint.h>

#include "common/ppb_kernel_params.h"

/* The buffers a pointer parameter is bound to (prepare.py ROLES, same order). */
enum {
    PPBK_VT_ROLE_Q, PPBK_VT_ROLE_K, PPBK_VT_ROLE_V, PPBK_VT_ROLE_K_CACHE, PPBK_VT_ROLE_V_CACHE,
    PPBK_VT_ROLE_OUT, PPBK_VT_ROLE_BLOCK_TABLE, PPBK_VT_ROLE_START_LOC, PPBK_VT_ROLE_SEQ_LENS,
    PPBK_VT_ROLE_CONTEXT_LENS,
    PPBK_VT_ROLE_ONES,            /* a one-element float 1.0 (fp8 scales passed as tensors) */
    PPBK_VT_ROLE_QUERY_START,     /* decode: [num_seqs + 1] = 0, 1, ..., num_seqs (one query token each) */
    PPBK_VT_ROLE_SCRATCH,         /* decode: the case's scratch buffer number `i` (split-softmax partials) */
    PPBK_VT_NROLES
};

/* What one kernel parameter gets. */
enum {
    PPBK_VT_PTR,                  /* the buffer of `role` */
    PPBK_VT_I32,                  /* the integer the wrapper passed (a stride, a size) */
    PPBK_VT_I64,                  /* the same for a parameter the kernel annotates tl.int64 */
    PPBK_VT_F32,                  /* the float the wrapper passed (sm_scale, a scale) */
    PPBK_VT_NULL,                 /* a scratch pointer newer Triton appends: prepare.py refuses kernels
                                   * that need scratch memory, so it gets NULL */
};

typedef struct ppbk_vt_param {
    unsigned char kind, role;
    int64_t i;                    /* I32 / I64: the value; PTR of role SCRATCH: the buffer's number */
    float f;
} ppbk_vt_param;

typedef struct ppbk_vt_kernel {
    const unsigned char *cubin, *cubin_end;
    const char *name;             /* the cubin's kernel symbol */
    int shared;                   /* dynamic shared memory per block, bytes (Triton's metadata.shared) */
    int num_warps;
} ppbk_vt_kernel;

/* What every variant is compiled and recorded for, matched first (the
 * config's dtype and window, the shape's heads, head size and page). */
typedef struct ppbk_vt_facts {
    int dtype;                    /* PPB_KDTYPE_* */
    int head_dim, num_heads, num_kv_heads, page_size, sliding_window;
} ppbk_vt_facts;

typedef struct ppbk_vt_variant {
    /* the case it was recorded for: what ppb_prefill_args and the config carry */
    ppbk_vt_facts facts;
    int batch, max_query_len, max_blocks_per_seq;
    /* the case's kernel parameters in kernels/common/ppb_kernel_params.h's order
     * (prepare.py reads the list; matched unless ppbk_vt_from_wrapper); a
     * num_stages of 0 launched the wrapper's stages */
    int knobs[PPBK_PREFILL_PARAM_COUNT];
    /* the launch */
    int launch_block_m, launch_block_n, launch_warps, launch_stages;
    unsigned grid[3];
    int kernel;                   /* index into ppbk_vt_kernels */
    int n_params;                 /* parameters of the compiled kernel (constants the JIT folded are absent) */
    const ppbk_vt_param *params;
} ppbk_vt_variant;

/* Decode (vLLM's Triton unified attention, the cache in the FLASH layout): a
 * case runs one or more launches in order (the split-softmax kernel and
 * reduce_segments, or one 2D kernel), always as the tree's wrapper makes them
 * when called as vLLM's Triton backend calls it (capture.py). */
typedef struct ppbk_vt_launch {
    unsigned grid[3];
    int kernel;                   /* index into ppbk_vt_kernels */
    int n_params;
    const ppbk_vt_param *params;
} ppbk_vt_launch;

typedef struct ppbk_vt_decode_variant {
    /* the case: what ppb_decode_args and the config carry */
    ppbk_vt_facts facts;
    int num_seqs, max_seq_len, max_blocks_per_seq;
    int n_launches;
    const ppbk_vt_launch *launches;
    int n_scratch;                /* buffers the wrapper or the backend allocates, bytes each */
    const unsigned long long *scratch_bytes;
    const char *refusal;          /* why the case cannot run (a kernel did not compile), else NULL */
} ppbk_vt_decode_variant;

/* Prefill through a wrapper that reads keys from the cache after vLLM's cache
 * write (prepare.py --prefill-kernel unified or chunked): the launches read the
 * staged cache (kernels/kv_append.h) the plugin's stage builds, in the layout
 * of the prefill ops; roles K_CACHE, V_CACHE and BLOCK_TABLE are the staged
 * ones, START_LOC is the query offsets, SEQ_LENS context + new tokens, K and V
 * the new tokens as ppbench packs them (chunked's prefix-prefill launch). */
typedef struct ppbk_vt_staged_prefill_variant {
    /* the case: what ppb_prefill_args and the config carry */
    ppbk_vt_facts facts;
    int batch, max_query_len, num_tokens, max_blocks_per_seq;
    int staged_blocks_per_seq;    /* the staged block table's row */
    int n_launches;
    const ppbk_vt_launch *launches;
    int n_scratch;
    const unsigned long long *scratch_bytes;
    const char *refusal;
} ppbk_vt_staged_prefill_variant;

extern const ppbk_vt_kernel ppbk_vt_kernels[];
extern const int ppbk_vt_n_kernels;
extern const ppbk_vt_variant ppbk_vt_variants[];
extern const int ppbk_vt_n_variants;
extern const ppbk_vt_decode_variant ppbk_vt_decode_variants[];
extern const int ppbk_vt_n_decode_variants;
extern const ppbk_vt_staged_prefill_variant ppbk_vt_staged_prefill_variants[];
extern const int ppbk_vt_n_staged_prefill_variants;
/* Which wrapper the library's prefill cases run through (prepare.py
 * --prefill-kernel, PREFILL_KERNELS' order): prefix prefill (ppbk_vt_variants),
 * or one of the staged families (ppbk_vt_staged_prefill_variants): the unified
 * attention (the FLASH layout) or chunked_prefill_paged_decode (vLLM's
 * paged-attention layout). */
enum { PPBK_VT_PREFILL_KERNEL_PREFIX, PPBK_VT_PREFILL_KERNEL_UNIFIED, PPBK_VT_PREFILL_KERNEL_CHUNKED };
extern const int ppbk_vt_prefill_kernel;
/* 1: each case launches as the tree's own wrapper would (its blocks, warps and
 * stages; the case's block_m/block_n/num_warps/num_stages are not matched); 0:
 * a knob sweep, the case's knobs in place of the wrapper's choice. */
extern const int ppbk_vt_from_wrapper;
extern const int ppbk_vt_target_arch, ppbk_vt_target_warp_size;
extern const char ppbk_vt_name[], ppbk_vt_version[], ppbk_vt_source[], ppbk_vt_prepare_cmd[];

#endif
