/* Launch plan of the prefix-prefill kernel. The shared-memory formulas mirror the
 * kernel's layout structs (mma_layout / wgmma_layout / simt_layout in prefix_prefill.cuh);
 * the GPU test (tests/gpu/test_prefill_kernel.cu) checks they agree for every config.
 *
 * Register budgets: a thread has at most 255 registers. The tensor-core path keeps, per
 * m16 tile a warp owns, D/2 fp32 output and BLOCK_N/2 fp32 score accumulators per thread;
 * past PPB_PREFILL_MMA_ACC_LIMIT of them (plus addresses, Q fragments, softmax state) ptxas
 * spills to local memory (seen with nvcc 13.0 -Xptxas -v, sm_90; docs/KERNELS-IMPL.md). The
 * wgmma path's tile set is small enough to need no budget: of its instances only 64/128/4
 * at D 128 spills (792 B, -Xptxas -v, sm_90a), slow anyway and left runnable.
 * The portable path holds its S and O thread tiles in registers; the limits keep both
 * well inside 255 on any warp size. */
#include "prefill_plan.h"

#include <stdarg.h>
#include <stdio.h>

static int refuse(char *reason, unsigned reason_len, const char *fmt, ...)
{
    if (reason && reason_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, reason_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is_pow2_in(int v, int lo, int hi)
{
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

/* The wgmma path's tile set: a warpgroup (4 warps) per 64 rows, wgmma N of S = BLOCK_N and
 * of O = HEAD_DIM, each 64 or 128. */
static int wgmma_rows_ok(const ppb_prefill_config *cfg)
{
    return (cfg->block_m == 64 || cfg->block_m == 128) && cfg->num_warps == cfg->block_m / 16;
}
static int wgmma_n_ok(const ppb_prefill_config *cfg, int head_dim)
{
    return (cfg->block_n == 64 || cfg->block_n == 128) && (head_dim == 64 || head_dim == 128);
}

unsigned ppb_prefill_smem_bytes(const ppb_prefill_config *cfg, int head_dim)
{
    const int bm = cfg->block_m, bn = cfg->block_n, d = head_dim;
    if (!is_pow2_in(bm, 16, 128) || !is_pow2_in(bn, 16, 128) || (d != 64 && d != 128 && d != 256))
        return 0;
    if (cfg->use_mma == PPB_PREFILL_PATH_WGMMA) {
        if (!wgmma_rows_ok(cfg) || !wgmma_n_ok(cfg, d))
            return 0;   /* no wgmma layout */
        /* Q [BM][D], 3 or 4 stages (prefill_plan.h) of K [BN][D] and V [D][BN] (or
         * [BN][D]), 2-byte elements, swizzled (no padding); 1 KB to align the start to
         * 1024 B, which also holds the stages' barriers */
        const unsigned q = 2u * (unsigned)(bm * d), stage = 2u * (unsigned)(2 * bn * d);
        return q + (unsigned)ppb_prefill_wgmma_stages(bm, q, stage) * stage + 1024u;
    }
    if (cfg->use_mma) {
        /* Q [BM][D+8], per stage K [BN][D+8] and V [D][BN+8] or [BN][D+8] (the larger),
         * 2-byte elements; two stages where they fit (prefill_plan.h) */
        const unsigned q = 2u * (unsigned)(bm * (d + 8));
        const unsigned kv = 2u * (unsigned)(bn * (d + 8) + max_int(d * (bn + 8), bn * (d + 8)));
        return q + (unsigned)ppb_prefill_kv_stages(cfg->num_warps, q, kv) * kv;
    }
    /* Q^T [D][BM], K^T / V [BN*D], P [BM][BN+2] (2-byte), one fp32 per row */
    return 2u * (unsigned)(d * bm + bn * d + bm * (bn + 2)) + 4u * (unsigned)bm;
}

/* ---- knobs ---- */
static int check_knobs(const ppb_prefill_config *cfg, int head_dim, int dtype, char *reason, unsigned reason_len)
{
    const int bm = cfg->block_m, bn = cfg->block_n, w = cfg->num_warps;
    if (!is_pow2_in(bm, 16, 128))
        return refuse(reason, reason_len, "BLOCK_M=%d unsupported (16, 32, 64 or 128)", bm);
    if (!is_pow2_in(bn, 16, 128))
        return refuse(reason, reason_len, "BLOCK_N=%d unsupported (16, 32, 64 or 128)", bn);
    if (!is_pow2_in(w, 1, 8))
        return refuse(reason, reason_len, "NUM_WARPS=%d unsupported (1, 2, 4 or 8)", w);
    if (head_dim != 64 && head_dim != 128 && head_dim != 256)
        return refuse(reason, reason_len, "HEAD_DIM=%d unsupported (64, 128 or 256)", head_dim);
    if (dtype != PPB_KDTYPE_FP16 && dtype != PPB_KDTYPE_BF16)
        return refuse(reason, reason_len, "dtype code %d unsupported (fp16 or bf16)", dtype);
    if (cfg->warp_size != 32 && cfg->warp_size != 64)
        return refuse(reason, reason_len, "warp size %d unsupported (32 or 64)", cfg->warp_size);
    if (cfg->use_mma < PPB_PREFILL_PATH_SIMT || cfg->use_mma > PPB_PREFILL_PATH_WGMMA)
        return refuse(reason, reason_len, "code path %d unknown (0 portable, 1 mma, 2 wgmma)", cfg->use_mma);
    return 0;
}

/* ---- path (registers, warp size) and shared memory ---- */
static int check_path_and_smem(const ppb_prefill_config *cfg, int head_dim, unsigned max_smem_optin, char *reason,
                               unsigned reason_len)
{
    const int bm = cfg->block_m, bn = cfg->block_n, w = cfg->num_warps;
    const int ws = cfg->use_mma ? 32 : cfg->warp_size;
    if (cfg->use_mma && cfg->warp_size != 32)
        return refuse(reason, reason_len, "tensor-core path needs warp size 32, target has %d", cfg->warp_size);
    if (cfg->use_mma == PPB_PREFILL_PATH_WGMMA) {
        if (!wgmma_rows_ok(cfg))
            return refuse(reason, reason_len,
                          "wgmma path: BLOCK_M=%d with NUM_WARPS=%d; it runs BLOCK_M 64 or 128 with NUM_WARPS = "
                          "BLOCK_M / 16 (a warpgroup per 64 rows); refused",
                          bm, w);
        if (!wgmma_n_ok(cfg, head_dim))
            return refuse(reason, reason_len,
                          "wgmma path: BLOCK_N=%d, HEAD_DIM=%d; it runs BLOCK_N and HEAD_DIM of 64 or 128; refused",
                          bn, head_dim);
    } else if (cfg->use_mma) {
        const int rows_per_warp = bm / w;
        if (rows_per_warp < 16)
            return refuse(reason, reason_len,
                          "BLOCK_M=%d with NUM_WARPS=%d: %d rows per warp, fewer than the 16 rows of one mma.sync "
                          "m16 tile; refused",
                          bm, w, rows_per_warp);
        const int mt = rows_per_warp / 16;
        const int acc = mt * (head_dim / 2 + bn / 2);
        if (acc > PPB_PREFILL_MMA_ACC_LIMIT)
            return refuse(reason, reason_len,
                          "BLOCK_M=%d, BLOCK_N=%d, NUM_WARPS=%d, HEAD_DIM=%d: %d m16 tiles per warp need %d fp32 "
                          "accumulators per thread (> %d of 255 registers): would spill; refused",
                          bm, bn, w, head_dim, mt, acc, PPB_PREFILL_MMA_ACC_LIMIT);
    } else {
        const int threads = w * ws;
        const int o_per_thread = bm * head_dim / threads;
        const int s_per_thread = bm * bn / threads;
        if (o_per_thread > PPB_PREFILL_SIMT_O_LIMIT)
            return refuse(reason, reason_len,
                          "portable path, BLOCK_M=%d, HEAD_DIM=%d on %d threads: %d output values per thread "
                          "(> %d registers budgeted); refused",
                          bm, head_dim, threads, o_per_thread, PPB_PREFILL_SIMT_O_LIMIT);
        if (s_per_thread > PPB_PREFILL_SIMT_S_LIMIT)
            return refuse(reason, reason_len,
                          "portable path, BLOCK_M=%d, BLOCK_N=%d on %d threads: %d scores per thread "
                          "(> %d registers budgeted); refused",
                          bm, bn, threads, s_per_thread, PPB_PREFILL_SIMT_S_LIMIT);
    }
    const unsigned smem = ppb_prefill_smem_bytes(cfg, head_dim);
    if (smem > max_smem_optin)
        return refuse(reason, reason_len, "needs %u B dynamic shared memory > %u B available", smem, max_smem_optin);
    return 0;
}

int ppb_prefill_config_check(const ppb_prefill_config *cfg, int head_dim, int dtype, unsigned max_smem_optin,
                             char *reason, unsigned reason_len)
{
    if (reason && reason_len)
        reason[0] = '\0';
    if (!cfg)
        return refuse(reason, reason_len, "no config given");
    if (check_knobs(cfg, head_dim, dtype, reason, reason_len))
        return -1;
    return check_path_and_smem(cfg, head_dim, max_smem_optin, reason, reason_len);
}

int ppb_prefill_plan(const ppb_prefill_config *cfg, const ppb_prefill_args *args, int head_dim, int dtype,
                     unsigned max_smem_optin, ppb_launch_plan *plan, char *reason, unsigned reason_len)
{
    if (reason && reason_len)
        reason[0] = '\0';
    if (!cfg || !args || !plan)
        return refuse(reason, reason_len, "no config, arguments or plan given");
    const int bm = cfg->block_m, w = cfg->num_warps;

    if (check_knobs(cfg, head_dim, dtype, reason, reason_len))
        return -1;

    /* ---- shape ---- */
    if (args->head_dim != head_dim)
        return refuse(reason, reason_len, "arguments have head_dim %d, kernel HEAD_DIM=%d", args->head_dim,
                      head_dim);
    if (args->num_kv_heads <= 0 || args->num_heads <= 0 || args->num_heads % args->num_kv_heads != 0)
        return refuse(reason, reason_len, "num_heads %d is not a multiple of num_kv_heads %d", args->num_heads,
                      args->num_kv_heads);
    if (!is_pow2_in(args->page_size, 8, 1 << 20))
        return refuse(reason, reason_len,
                      "page size %d: the kernel gathers 16-byte chunks of 8 tokens, needs a power of two >= 8",
                      args->page_size);
    if (args->batch <= 0 || args->max_query_len <= 0)
        return refuse(reason, reason_len, "batch %d, max_query_len %d: nothing to launch", args->batch,
                      args->max_query_len);
    const long long group = args->num_heads / args->num_kv_heads;
    const long long tiles = ((long long)args->max_query_len * group + bm - 1) / bm;
    if (tiles > 65535 || args->batch > 65535)
        return refuse(reason, reason_len, "grid (%d, %d, %lld) exceeds 65535 in y or z", args->num_kv_heads,
                      args->batch, tiles);

    if (check_path_and_smem(cfg, head_dim, max_smem_optin, reason, reason_len))
        return -1;

    plan->grid[0] = (unsigned)args->num_kv_heads;
    plan->grid[1] = (unsigned)args->batch;
    plan->grid[2] = (unsigned)tiles;
    plan->dynamic_smem = ppb_prefill_smem_bytes(cfg, head_dim);
    plan->block[0] = (unsigned)ppb_prefill_block_threads(w, cfg->use_mma, cfg->warp_size, plan->dynamic_smem);
    plan->block[1] = 1;
    plan->block[2] = 1;
    return 0;
}
