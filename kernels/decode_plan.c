/* Launch plan of the paged-attention decode kernels (decode_plan.h). The shared-memory
 * arithmetic mirrors paged_attention.cuh (ppb_pa::simt_geometry, mma_geometry,
 * main_smem_bytes, reduce_smem_bytes); tests/gpu/test_decode_kernel.cu checks that the
 * two agree for every instantiation it builds. */
#include "decode_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GRID_YZ_MAX 65535u

static int imin(int a, int b) { return a < b ? a : b; }
static int round_up(int a, int b) { return (a + b - 1) / b * b; }

static int refuse(char *reason, unsigned reason_len, const char *fmt, ...)
{
    if (reason && reason_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, reason_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

size_t ppb_decode_num_partitions(int max_seq_len, int partition_size)
{
    if (max_seq_len <= 0 || partition_size <= 0)
        return 0;
    return ((size_t)max_seq_len + (size_t)partition_size - 1) / (size_t)partition_size;
}

static size_t rows_times_partitions(int num_seqs, int num_heads, int max_seq_len, int partition_size)
{
    if (num_seqs <= 0 || num_heads <= 0)
        return 0;
    return (size_t)num_seqs * (size_t)num_heads * ppb_decode_num_partitions(max_seq_len, partition_size);
}

size_t ppb_decode_tmp_out_bytes(int num_seqs, int num_heads, int head_dim, int max_seq_len, int partition_size,
                                int elem_bytes)
{
    if (head_dim <= 0 || elem_bytes <= 0)
        return 0;
    return rows_times_partitions(num_seqs, num_heads, max_seq_len, partition_size) * (size_t)head_dim *
           (size_t)elem_bytes;
}

size_t ppb_decode_exp_sums_bytes(int num_seqs, int num_heads, int max_seq_len, int partition_size)
{
    return rows_times_partitions(num_seqs, num_heads, max_seq_len, partition_size) * sizeof(float);
}

size_t ppb_decode_max_logits_bytes(int num_seqs, int num_heads, int max_seq_len, int partition_size)
{
    return rows_times_partitions(num_seqs, num_heads, max_seq_len, partition_size) * sizeof(float);
}

/* Warps along the token axis in P x V (the output exchange has one [HPC][D] slice per
 * such warp): simt_geometry::WT / mma_geometry::WT. */
static int token_warps(const ppb_decode_config *cfg, int head_dim, int page_size)
{
    const int nw = cfg->num_threads / cfg->warp_size;
    int wd;
    if (cfg->use_mma) {
        wd = imin(nw, head_dim / 16);
    } else {
        const int cpr = page_size / 8;
        const int vr = imin(4, head_dim * cpr / cfg->warp_size);
        const int rows_per_block = vr * (cfg->warp_size / cpr);
        wd = imin(head_dim / rows_per_block, nw);
    }
    return nw / wd;
}

unsigned long long ppb_decode_main_smem_bytes(const ppb_decode_config *cfg, int head_dim, int page_size,
                                              int heads_per_cta, int max_seq_len)
{
    const int n_max = cfg->version == 1 ? max_seq_len : cfg->partition_size;
    const unsigned long long hpc = (unsigned long long)heads_per_cta, d = (unsigned long long)head_dim;
    const unsigned long long lps = (unsigned long long)round_up(n_max, 32) + 4;
    const unsigned long long xchg = (unsigned long long)token_warps(cfg, head_dim, page_size) * d;
    const unsigned long long ra = lps > xchg ? lps : xchg;
    const unsigned long long nw = (unsigned long long)(cfg->num_threads / cfg->warp_size);
    const unsigned long long floats = hpc * ra + (cfg->use_mma ? 0ull : hpc * d) + 2ull * hpc * nw + 4ull * hpc;
    return floats * 4ull;
}

unsigned long long ppb_decode_reduce_smem_bytes(const ppb_decode_config *cfg, int head_dim, int max_num_partitions)
{
    const unsigned long long groups = (unsigned long long)(cfg->num_threads / (head_dim / 8));
    return 4ull * ((unsigned long long)round_up(max_num_partitions, 4) + groups * (unsigned long long)head_dim +
                   2ull * (unsigned long long)(cfg->num_threads / cfg->warp_size));
}

/* The knobs the kernels are instantiated for (ppb_decode_plan refuses the rest with a reason). */
static int knobs_supported(const ppb_decode_config *cfg, int head_dim, int page_size)
{
    return (cfg->version == 1 || cfg->version == 2) && (cfg->warp_size == 32 || cfg->warp_size == 64) &&
           (cfg->num_threads == 64 || cfg->num_threads == 128 || cfg->num_threads == 256) &&
           (!cfg->use_mma || cfg->warp_size == 32) && (head_dim == 64 || head_dim == 128 || head_dim == 256) &&
           (page_size == 8 || page_size == 16 || page_size == 32) &&
           (cfg->version == 1 || (cfg->partition_size > 0 && cfg->partition_size % 32 == 0));
}

int ppb_decode_smem_need(const ppb_decode_config *cfg, int head_dim, int page_size, int num_heads, int num_kv_heads,
                         int max_seq_len, unsigned max_smem_optin, ppb_decode_smem *out)
{
    memset(out, 0, sizeof *out);
    if (!cfg || !knobs_supported(cfg, head_dim, page_size) || num_heads <= 0 || num_kv_heads <= 0 ||
        num_heads % num_kv_heads != 0 || max_seq_len <= 0)
        return -1;
    const int group = num_heads / num_kv_heads;
    int hpc = 8;
    while (group % hpc != 0)
        hpc /= 2;
    unsigned long long smem = ppb_decode_main_smem_bytes(cfg, head_dim, page_size, hpc, max_seq_len);
    if (cfg->version == 1)   /* v1's logits grow with the sequence: fewer heads per CTA until they fit */
        while (smem > max_smem_optin && hpc > 1) {
            hpc /= 2;
            smem = ppb_decode_main_smem_bytes(cfg, head_dim, page_size, hpc, max_seq_len);
        }
    out->heads_per_cta = hpc;
    out->main_bytes = smem;
    if (cfg->version == 2) {
        out->partitions = ppb_decode_num_partitions(max_seq_len, cfg->partition_size);
        out->reduce_bytes = ppb_decode_reduce_smem_bytes(cfg, head_dim, (int)out->partitions);
    }
    return 0;
}

static void set_plan(ppb_launch_plan *p, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned smem)
{
    p->grid[0] = gx;
    p->grid[1] = gy;
    p->grid[2] = gz;
    p->block[0] = bx;
    p->block[1] = 1;
    p->block[2] = 1;
    p->dynamic_smem = smem;
}

int ppb_decode_plan(const ppb_decode_config *cfg, const ppb_decode_args *args, int head_dim, int page_size,
                    int dtype, unsigned max_smem_optin, ppb_launch_plan *main_plan, ppb_launch_plan *reduce_plan,
                    char *reason, unsigned reason_len)
{
    if (reason && reason_len > 0)
        reason[0] = '\0';
    if (!cfg || !args || !main_plan || !reduce_plan)
        return refuse(reason, reason_len, "decode plan: missing config, arguments or output");
    memset(main_plan, 0, sizeof *main_plan);
    memset(reduce_plan, 0, sizeof *reduce_plan);

    /* ---- the instantiation */
    if (cfg->version != 1 && cfg->version != 2)
        return refuse(reason, reason_len, "decode version %d: must be 1 or 2", cfg->version);
    if (cfg->warp_size != 32 && cfg->warp_size != 64)
        return refuse(reason, reason_len, "warp size %d: must be 32 or 64", cfg->warp_size);
    if (cfg->num_threads != 64 && cfg->num_threads != 128 && cfg->num_threads != 256)
        return refuse(reason, reason_len, "num_threads %d: must be 64, 128 or 256", cfg->num_threads);
    if (cfg->use_mma && cfg->warp_size != 32)
        return refuse(reason, reason_len, "the mma path needs 32-wide warps (warp size %d)", cfg->warp_size);
    if (head_dim != 64 && head_dim != 128 && head_dim != 256)
        return refuse(reason, reason_len, "head_dim %d: the decode kernels have 64, 128 and 256", head_dim);
    if (page_size != 8 && page_size != 16 && page_size != 32)
        return refuse(reason, reason_len, "page size %d: the decode kernels have 8, 16 and 32", page_size);
    if (dtype != PPB_KDTYPE_FP16 && dtype != PPB_KDTYPE_BF16)
        return refuse(reason, reason_len, "dtype code %d: must be fp16 (%d) or bf16 (%d)", dtype,
                      PPB_KDTYPE_FP16, PPB_KDTYPE_BF16);
    if (cfg->version == 2 && (cfg->partition_size <= 0 || cfg->partition_size % 32 != 0))
        return refuse(reason, reason_len, "partition_size %d: v2 needs a positive multiple of 32",
                      cfg->partition_size);

    /* ---- the shape */
    if (args->head_dim != head_dim || args->page_size != page_size)
        return refuse(reason, reason_len, "arguments say head_dim %d / page size %d, the kernel is for %d / %d",
                      args->head_dim, args->page_size, head_dim, page_size);
    if (args->num_seqs <= 0 || (unsigned)args->num_seqs > GRID_YZ_MAX)
        return refuse(reason, reason_len, "num_seqs %d: must be 1..%u", args->num_seqs, GRID_YZ_MAX);
    if (args->num_heads <= 0 || args->num_kv_heads <= 0 || args->num_heads % args->num_kv_heads != 0)
        return refuse(reason, reason_len, "num_heads %d is not a positive multiple of num_kv_heads %d",
                      args->num_heads, args->num_kv_heads);
    if (args->max_seq_len <= 0)
        return refuse(reason, reason_len, "max_seq_len %d: must be positive", args->max_seq_len);
    if ((long long)args->max_blocks_per_seq * page_size < args->max_seq_len)
        return refuse(reason, reason_len, "max_blocks_per_seq %d x page %d cannot hold max_seq_len %d",
                      args->max_blocks_per_seq, page_size, args->max_seq_len);
    if (args->sliding_window < 0)
        return refuse(reason, reason_len, "sliding_window %d: must be 0 (off) or positive", args->sliding_window);

    ppb_decode_smem need;
    if (ppb_decode_smem_need(cfg, head_dim, page_size, args->num_heads, args->num_kv_heads, args->max_seq_len,
                             max_smem_optin, &need) != 0)
        return refuse(reason, reason_len, "decode plan: no shared-memory layout for this config");
    const int hpc = need.heads_per_cta;
    const unsigned long long smem = need.main_bytes;
    if (cfg->version == 1) {
        if (smem > max_smem_optin)
            return refuse(reason, reason_len, "v1 needs %llu B of shared memory for max_seq_len %d > %u B", smem,
                          args->max_seq_len, max_smem_optin);
        set_plan(main_plan, (unsigned)(args->num_heads / hpc), (unsigned)args->num_seqs, 1,
                 (unsigned)cfg->num_threads, (unsigned)smem);
        return 0;
    }

    const size_t parts = need.partitions;
    if ((size_t)args->max_num_partitions != parts)
        return refuse(reason, reason_len,
                      "max_num_partitions %d is not ceil(max_seq_len %d / partition_size %d) = %zu, the "
                      "kernel's count",
                      args->max_num_partitions, args->max_seq_len, cfg->partition_size, parts);
    if (parts > GRID_YZ_MAX)
        return refuse(reason, reason_len, "%zu partitions exceed the grid's %u", parts, GRID_YZ_MAX);
    if (smem > max_smem_optin)
        return refuse(reason, reason_len,
                      "v2 needs %llu B of shared memory for partition_size %d (%d heads per block) > %u B", smem,
                      cfg->partition_size, hpc, max_smem_optin);
    const unsigned long long rsmem = need.reduce_bytes;
    if (rsmem > max_smem_optin)
        return refuse(reason, reason_len, "v2 reduce needs %llu B of shared memory for %zu partitions > %u B", rsmem,
                      parts, max_smem_optin);
    set_plan(main_plan, (unsigned)(args->num_heads / hpc), (unsigned)args->num_seqs, (unsigned)parts,
             (unsigned)cfg->num_threads, (unsigned)smem);
    set_plan(reduce_plan, (unsigned)args->num_heads, (unsigned)args->num_seqs, 1, (unsigned)cfg->num_threads,
             (unsigned)rsmem);
    return 0;
}
