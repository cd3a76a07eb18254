/* Launch plan of the prefix-prefill kernel (prefix_prefill.cuh): whether a config can
 * run on a shape and a device, and with which grid, block and dynamic shared memory.
 * Plain C (no CUDA headers): the kernel runtime, the harness's target checks and the
 * GPU test all ask the same function, so "refused" means the same everywhere.
 *
 * Refusals (one-line reason, checked in this order): a knob outside the supported set;
 * a shape the kernel does not handle (head_dim mismatch, GQA not dividing, page size not
 * a power of two >= 8, grid too large); the tensor-core path on a warp size other than
 * 32, with fewer than 16 rows per warp, or with more accumulators per thread than the
 * register file holds without spilling; the wgmma path outside its tile set (HEAD_DIM and
 * BLOCK_N 64 or 128, BLOCK_M 64 or 128 with NUM_WARPS = BLOCK_M / 16); the portable path
 * with thread tiles over its register budget; dynamic shared memory above max_smem_optin.
 * Whether the device and build have a path at all (sm_80+ for mma, sm_90 with an sm_90a
 * build for wgmma) is the caller's rule (kernels/runtime/builtin_plan.c). */
#ifndef PPB_PREFILL_PLAN_H
#define PPB_PREFILL_PLAN_H

#include "attention_args.h"
#include "launch_plan.h"

/* C linkage from C++ too: the kernel header includes this one for its layout rules, and
 * must not give these functions C++ linkage in a program that links prefill_plan.c. */
#ifdef __cplusplus
extern "C" {
#endif

/* Code paths of the kernel (its PATH template argument and ppb_prefill_config.use_mma). */
#define PPB_PREFILL_PATH_SIMT 0    /* portable: any warp size, no inline PTX */
#define PPB_PREFILL_PATH_MMA 1     /* mma.sync + ldmatrix + cp.async: NVIDIA sm_80+, warp size 32 */
#define PPB_PREFILL_PATH_WGMMA 2   /* warpgroup MMA: sm_90a builds only (prefix_prefill_wgmma.cuh) */

typedef struct ppb_prefill_config {
    int block_m, block_n, num_warps;
    int use_mma;     /* the code path: PPB_PREFILL_PATH_SIMT, _MMA or _WGMMA */
    int warp_size;   /* PPB_WARP_SIZE the kernel is compiled with (32, or 64 on the BI-V100) */
} ppb_prefill_config;

/* Budgets behind the register refusals (prefill_plan.c says how they were set). */
#define PPB_PREFILL_MMA_ACC_LIMIT 192   /* fp32 O + S accumulators per thread, tensor-core path */
#define PPB_PREFILL_SIMT_O_LIMIT 64     /* fp32 O values per thread, portable path */
#define PPB_PREFILL_SIMT_S_LIMIT 64     /* fp32 S values per thread, portable path */

/* Tensor-core path: K and V tiles are double-buffered (the next tile's copies fly during
 * the whole of this tile's maths) when the CTA has at least 4 warps and the two-stage
 * layout still lets two CTAs share an sm_90 SM (228 KB, 1 KB reserved per CTA); else
 * single-buffered. With 1 or 2 warps the CTAs per SM hide the copies, and doubling the
 * tiles cuts them (64/64/2: 4 -> 2 per SM, 29% slower on the H200; 128/64/4: 5% faster,
 * docs/KERNELS-IMPL.md). ppb_prefill_kv_stages below is the rule: the plan
 * (ppb_prefill_smem_bytes) and the kernel (prefix_prefill.cuh, mma_layout) both call it.
 * -DPPB_PREFILL_MAX_KV_STAGES=1 in both builds turns it off (for A/B runs). */
#ifndef PPB_PREFILL_MAX_KV_STAGES
#define PPB_PREFILL_MAX_KV_STAGES 2
#endif
#define PPB_PREFILL_TWO_STAGE_MIN_WARPS 4
#define PPB_PREFILL_TWO_STAGE_SMEM_LIMIT (228u * 1024u / 2u - 1024u)   /* 115712 B */

/* wgmma path: K/V stages, 3 or 4. One holds the tile being computed, one the previous
 * tile's V (its P V runs during this tile's softmax); the rest are copies in flight,
 * STAGES - 2 tiles ahead. Four for 128-row CTAs where they fit the 227 KB a Hopper block
 * can opt into (such a CTA fills the register file: one per SM whatever its shared
 * memory); 64-row CTAs keep three, so two share an SM where the tiles allow (64/64/4). H200, 4 against 3 stages:
 * 128/64/8 +1% at q8192 ctx90112, +5% at ctx 0; 64/64/4 15-24% slower with four (one
 * CTA per SM); docs/results/KERNELS-IMPL-runs.md. ppb_prefill_wgmma_stages is the rule,
 * for the plan (prefill_plan.c) and the kernel (wgmma_layout in prefix_prefill.cuh)
 * alike; -DPPB_PREFILL_WGMMA_MAX_STAGES=3 turns the fourth off for an A/B of the GPU test,
 * which compiles plan and kernels with it (run_prefill_gpu.sh DEFS); ppbench's runtime
 * compiles its kernels with the defaults. */
#ifndef PPB_PREFILL_WGMMA_MAX_STAGES
#define PPB_PREFILL_WGMMA_MAX_STAGES 4
#endif
#define PPB_PREFILL_WGMMA_SMEM_LIMIT 232448u

/* The rule itself, the one definition: K/V stages (1 or 2) of the tensor-core layout for
 * a CTA of num_warps warps whose Q tile takes q_bytes and one K + V stage stage_bytes.
 * A constant expression in C++ (the kernel's mma_layout sizes its shared memory with it)
 * and callable from host and device code; plain C calls it from prefill_plan.c. */
#if defined(__cplusplus)
#define PPB_PLAN_CONSTEXPR constexpr
#else
#define PPB_PLAN_CONSTEXPR
#endif
#if defined(__CUDACC__)
#define PPB_PLAN_HD __host__ __device__
#else
#define PPB_PLAN_HD
#endif
static inline PPB_PLAN_CONSTEXPR PPB_PLAN_HD int ppb_prefill_kv_stages(int num_warps, unsigned q_bytes,
                                                                       unsigned stage_bytes)
{
    return PPB_PREFILL_MAX_KV_STAGES >= 2 && num_warps >= PPB_PREFILL_TWO_STAGE_MIN_WARPS &&
                   q_bytes + 2u * stage_bytes <= PPB_PREFILL_TWO_STAGE_SMEM_LIMIT
               ? 2
               : 1;
}

/* Stages of the wgmma layout of a CTA of block_m rows whose Q tile takes q_bytes and one
 * K + V stage stage_bytes (1 KB more aligns the tiles to 1024 B). */
static inline PPB_PLAN_CONSTEXPR PPB_PLAN_HD int ppb_prefill_wgmma_stages(int block_m, unsigned q_bytes,
                                                                          unsigned stage_bytes)
{
    return PPB_PREFILL_WGMMA_MAX_STAGES >= 4 && block_m == 128 &&
                   q_bytes + 4u * stage_bytes + 1024u <= PPB_PREFILL_WGMMA_SMEM_LIMIT
               ? 4
               : 3;
}

/* wgmma path: a 64-row CTA whose shared memory keeps it alone on its SM gets a producer
 * warpgroup (4 warps before the compute warps) that issues every copy, so its one compute
 * warpgroup only waits for data. H200, 64/128/4 with against without (kernel bench):
 * q8192 ctx90112 32/4 181 -> 207 TFLOP/s, ctx 0 131 -> 245, q512 ctx16384 8/1 86 -> 98.
 * A CTA that shares its SM (64/64/4: two per SM) would lose its neighbour to the extra
 * registers; 128-row CTAs ran 11% slower with a producer warpgroup (setmaxnreg 24/240)
 * and 71% slower with a producer warp (docs/results/h200-2026-12-02-producer.txt). */
static inline PPB_PLAN_CONSTEXPR PPB_PLAN_HD int ppb_prefill_wgmma_producer_warps(int num_warps, unsigned smem_bytes)
{
    return num_warps == 4 && smem_bytes > PPB_PREFILL_TWO_STAGE_SMEM_LIMIT ? 4 : 0;
}

/* Threads of a CTA of num_warps (compute) warps on a path, for a kernel compiled with
 * warp size warp_size (the portable path's; the others need 32). */
static inline PPB_PLAN_CONSTEXPR PPB_PLAN_HD int ppb_prefill_block_threads(int num_warps, int path, int warp_size,
                                                                           unsigned smem_bytes)
{
    return path == PPB_PREFILL_PATH_WGMMA  ? (num_warps + ppb_prefill_wgmma_producer_warps(num_warps, smem_bytes)) * 32
           : path == PPB_PREFILL_PATH_MMA ? num_warps * 32
                                          : num_warps * warp_size;
}

/* max_smem_optin: bytes the launcher may opt into (device or target limit, whichever is
 * lower). Returns 0 and fills *plan, or -1 with a one-line reason (reason may be NULL).
 * dtype: PPB_KDTYPE_FP16 / PPB_KDTYPE_BF16. */
int ppb_prefill_plan(const ppb_prefill_config *cfg, const ppb_prefill_args *args, int head_dim, int dtype,
                     unsigned max_smem_optin, ppb_launch_plan *plan, char *reason, unsigned reason_len);

/* Dynamic shared memory the kernel's layout needs for a config (bytes; both dtypes are 2
 * bytes wide), without any feasibility check; 0 for knobs outside the supported set.
 * The one definition of the figure: ppb_prefill_plan, the harness's target check
 * (`ppbench check`) and the CPU backend all read it from here. */
unsigned ppb_prefill_smem_bytes(const ppb_prefill_config *cfg, int head_dim);

/* The refusals of ppb_prefill_plan that depend on the config alone (knobs, the code path's
 * register and warp rules, dynamic shared memory above max_smem_optin), without a shape:
 * whether the config can run on a device at all. 0, or -1 with the same one-line reason
 * ppb_prefill_plan gives. The target check uses it to pick the path `path: auto` takes. */
int ppb_prefill_config_check(const ppb_prefill_config *cfg, int head_dim, int dtype, unsigned max_smem_optin,
                             char *reason, unsigned reason_len);

#ifdef __cplusplus
}
#endif

#endif
