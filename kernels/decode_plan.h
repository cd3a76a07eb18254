/* Launch plan of the paged-attention decode kernels (paged_attention.cuh): config +
 * shape + the device's shared-memory limit -> grid, block and dynamic shared memory of
 * the main kernel and the v2 reduce, or a refusal with a one-line reason. Also the v2
 * scratch sizes for a partition size, so a host can size its buffers with ITS partition
 * size (P_host) while the kernel indexes with its own (the PARTITION_SIZE mismatch,
 * KERNELS.md). Plain C, no CUDA headers: the harness and CPU-only tests use it. */
#ifndef PPB_DECODE_PLAN_H
#define PPB_DECODE_PLAN_H

#include <stddef.h>

#include "attention_args.h"
#include "launch_plan.h"

typedef struct ppb_decode_config {
    int version;        /* 1 or 2 */
    int num_threads;    /* 64, 128 or 256 (whole warps) */
    int partition_size; /* v2: the kernel's PARTITION_SIZE, a multiple of 32 (and so of the page); v1: ignored */
    int use_mma;        /* 1: the mma.sync path (32-wide warps, sm_80+; the caller checks the device) */
    int warp_size;      /* 32 (NVIDIA) or 64 (BI-V100) */
} ppb_decode_config;

/* Plan one launch. `args` carries the shape (num_seqs, num_heads, num_kv_heads,
 * head_dim, page_size, max_seq_len, max_num_partitions); pointers are not read.
 * v2 needs args->max_num_partitions == ceil(max_seq_len / partition_size), the
 * kernel's own count. The main kernel's grid is (num_heads / HPC, num_seqs, v1 ? 1 :
 * max_num_partitions): HPC (1, 2, 4 or 8) query heads of one kv head per CTA, the
 * largest that divides the GQA group and, for v1, fits the logits of max_seq_len in
 * max_smem_optin. reduce_plan is all zero for v1. dtype: PPB_KDTYPE_FP16 / _BF16.
 * Returns 0, or -1 with a one-line reason (truncated to reason_len). */
int ppb_decode_plan(const ppb_decode_config *cfg, const ppb_decode_args *args, int head_dim, int page_size,
                    int dtype, unsigned max_smem_optin, ppb_launch_plan *main_plan, ppb_launch_plan *reduce_plan,
                    char *reason, unsigned reason_len);

/* Partitions of a sequence of max_seq_len tokens: ceil(max_seq_len / partition_size)
 * (0 for a non-positive argument). */
size_t ppb_decode_num_partitions(int max_seq_len, int partition_size);

/* v2 scratch sizes in bytes when sized with `partition_size` partitions (the host's
 * P_host, or the kernel's to get the extent the kernel writes):
 * tmp_out [num_seqs, num_heads, P, head_dim] elements of elem_bytes;
 * exp_sums and max_logits [num_seqs, num_heads, P] floats each. */
size_t ppb_decode_tmp_out_bytes(int num_seqs, int num_heads, int head_dim, int max_seq_len, int partition_size,
                                int elem_bytes);
size_t ppb_decode_exp_sums_bytes(int num_seqs, int num_heads, int max_seq_len, int partition_size);
size_t ppb_decode_max_logits_bytes(int num_seqs, int num_heads, int max_seq_len, int partition_size);

/* The shared memory the decode kernels need for a config on a shape, on a device whose
 * blocks may opt in to max_smem_optin bytes: the heads per CTA (HPC) ppb_decode_plan
 * launches with (the largest of 8, 4, 2, 1 that divides the GQA group num_heads /
 * num_kv_heads and, for v1, whose logits fit max_smem_optin; else 1), the main kernel's
 * dynamic shared memory at that HPC and, for v2, the reduce's for
 * ppb_decode_num_partitions(max_seq_len, partition_size) partitions (0 for v1). The one
 * definition of these figures: ppb_decode_plan refuses what exceeds max_smem_optin, the
 * harness's target check (`ppbench check`) and the CPU backend report the same numbers,
 * each with its own warp size in cfg->warp_size. Returns 0, or -1 (out zeroed) for a
 * config the kernels do not have: version, warp size (32, 64), num_threads (64, 128,
 * 256), the mma path on other than 32-wide warps, head_dim (64, 128, 256), page size (8,
 * 16, 32), a v2 partition size that is not a positive multiple of 32, or a shape without
 * a positive GQA group or length. */
typedef struct ppb_decode_smem {
    int heads_per_cta;
    unsigned long long main_bytes;    /* the main kernel, at heads_per_cta */
    unsigned long long reduce_bytes;  /* v2's reduce; 0 for v1 */
    size_t partitions;                /* v2: the kernel's partition count; 0 for v1 */
} ppb_decode_smem;
int ppb_decode_smem_need(const ppb_decode_config *cfg, int head_dim, int page_size, int num_heads, int num_kv_heads,
                         int max_seq_len, unsigned max_smem_optin, ppb_decode_smem *out);

/* Dynamic shared memory of the main kernel for `heads_per_cta` heads (the layout in
 * paged_attention.cuh, ppb_pa::main_smem_bytes; the GPU test checks both agree) and
 * of the reduce. */
unsigned long long ppb_decode_main_smem_bytes(const ppb_decode_config *cfg, int head_dim, int page_size,
                                              int heads_per_cta, int max_seq_len);
unsigned long long ppb_decode_reduce_smem_bytes(const ppb_decode_config *cfg, int head_dim,
                                                int max_num_partitions);

#endif
