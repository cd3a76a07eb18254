/* The prefix-prefill launch plan (kernels/prefill_plan.c): shared-memory figures of
 * both paths, including when K/V are double-buffered, the refusals and their words,
 * and the launch shape. The expected figures are worked out here from the layouts
 * documented in docs/KERNELS-IMPL.md, not taken from the code; the GPU test checks the
 * plan against the kernel's own layout structs for every config. The plans are plain
 * C in every build (ppb_kernel_core), CPU-only ones included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "prefill_plan.h"

/* Tensor-core layout: Q [BM][D+8]; per stage K [BN][D+8] and V, the larger of
 * [D][BN+8] and [BN][D+8]; 2-byte elements. */
static unsigned mma_bytes(int bm, int bn, int d, int stages)
{
    const int v = d * (bn + 8) > bn * (d + 8) ? d * (bn + 8) : bn * (d + 8);
    return 2u * (unsigned)(bm * (d + 8) + stages * (bn * (d + 8) + v));
}

static unsigned smem(int bm, int bn, int w, int mma, int d)
{
    const ppb_prefill_config cfg = {.block_m = bm, .block_n = bn, .num_warps = w, .use_mma = mma, .warp_size = 32};
    return ppb_prefill_smem_bytes(&cfg, d);
}

static void test_shared_memory_and_the_two_stage_rule(void **state)
{
    (void)state;
    /* 4+ warps and two stages within 113 KB: double-buffered */
    assert_int_equal(smem(128, 64, 4, 1, 128), mma_bytes(128, 64, 128, 2));
    assert_int_equal(smem(128, 64, 4, 1, 128), 106496);
    assert_int_equal(smem(64, 64, 4, 1, 128), 89088);
    assert_int_equal(smem(128, 64, 8, 1, 128), 106496);
    assert_int_equal(smem(64, 32, 4, 1, 64), mma_bytes(64, 32, 64, 2));
    /* 1-2 warps: one stage whatever fits (the CTAs per SM hide the copies) */
    assert_int_equal(smem(64, 64, 2, 1, 128), mma_bytes(64, 64, 128, 1));
    assert_int_equal(smem(64, 64, 2, 1, 128), 53248);
    assert_int_equal(smem(16, 16, 1, 1, 64), mma_bytes(16, 16, 64, 1));
    /* two stages past the two-CTAs-per-SM budget: one stage */
    assert_int_equal(smem(128, 128, 8, 1, 128), mma_bytes(128, 128, 128, 1));
    assert_int_equal(smem(128, 128, 8, 1, 128), 104448);
    assert_int_equal(smem(128, 128, 8, 1, 256), mma_bytes(128, 128, 256, 1));
    /* portable path: Q^T [D][BM], one K^T/V buffer [BN*D], P [BM][BN+2], one fp32 per row */
    assert_int_equal(smem(64, 64, 4, 0, 128), 2u * (128 * 64 + 64 * 128 + 64 * 66) + 4u * 64);
    assert_int_equal(smem(64, 64, 4, 0, 128), 41472);
    /* wgmma path: Q [BM][D], K [BN][D] and V [D][BN] stages (four for 128-row tiles where
     * they fit 227 KB, else three), unpadded, plus 1 KB to align the tiles to 1024 B */
    assert_int_equal(smem(128, 128, 8, 2, 128), 2u * (128 * 128 + 3 * 2 * 128 * 128) + 1024u);
    assert_int_equal(smem(128, 128, 8, 2, 128), 230400);   /* four would need 295936 B */
    assert_int_equal(smem(128, 64, 8, 2, 128), 2u * (128 * 128 + 4 * 2 * 64 * 128) + 1024u);
    assert_int_equal(smem(128, 64, 8, 2, 128), 164864);
    assert_int_equal(smem(64, 64, 4, 2, 64), 2u * (64 * 64 + 3 * 2 * 64 * 64) + 1024u);   /* 64 rows: three */
    assert_int_equal(smem(64, 64, 4, 2, 128), 115712);   /* two CTAs per SM */
    assert_int_equal(smem(128, 64, 4, 2, 128), 0);        /* no wgmma layout: 128 rows need 8 warps */
    assert_int_equal(smem(64, 32, 4, 2, 128), 0);         /* ... BLOCK_N 64 or 128 */
    assert_int_equal(smem(64, 64, 4, 2, 256), 0);         /* ... D 64 or 128 */
    /* knobs outside the supported set */
    assert_int_equal(smem(48, 64, 4, 1, 128), 0);
    assert_int_equal(smem(64, 64, 4, 1, 96), 0);
}

static ppb_prefill_args shape(int num_heads, int num_kv_heads, int head_dim, int page_size)
{
    ppb_prefill_args a;
    memset(&a, 0, sizeof a);
    a.batch = 2;
    a.max_query_len = 100;
    a.num_heads = num_heads;
    a.num_kv_heads = num_kv_heads;
    a.head_dim = head_dim;
    a.page_size = page_size;
    a.max_blocks_per_seq = 4;
    return a;
}

/* Plans cfg on the shape; returns the plan's result, the reason in why. */
static int plan(int bm, int bn, int w, int mma, int warp_size, const ppb_prefill_args *a, unsigned smem_limit,
                ppb_launch_plan *p, char *why, unsigned why_len)
{
    const ppb_prefill_config cfg = {.block_m = bm, .block_n = bn, .num_warps = w, .use_mma = mma,
                                    .warp_size = warp_size};
    return ppb_prefill_plan(&cfg, a, a->head_dim, PPB_KDTYPE_BF16, smem_limit, p, why, why_len);
}

static void test_refusals_say_why(void **state)
{
    (void)state;
    const ppb_prefill_args a = shape(32, 4, 128, 16);
    const unsigned h200 = 232448;
    ppb_launch_plan p;
    char why[256];
    assert_int_equal(plan(16, 32, 2, 1, 32, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "8 rows per warp, fewer than the 16 rows"));
    assert_int_equal(plan(128, 128, 4, 1, 32, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "256 fp32 accumulators per thread"));
    assert_non_null(strstr(why, "would spill"));
    assert_int_equal(plan(64, 64, 4, 1, 64, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "tensor-core path needs warp size 32, target has 64"));
    assert_int_equal(plan(128, 64, 1, 0, 32, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "output values per thread"));
    /* the double-buffered tiles on a card with less shared memory than they need */
    assert_int_equal(plan(128, 64, 4, 1, 32, &a, 101376, &p, why, sizeof why), -1);
    assert_string_equal(why, "needs 106496 B dynamic shared memory > 101376 B available");
    /* the BI-V100's 48 KB and 64-wide warps: the seed's 64/64/4 on the portable path fits */
    assert_int_equal(plan(64, 64, 4, 0, 64, &a, 49152, &p, why, sizeof why), 0);
    assert_string_equal(why, "");

    ppb_prefill_args bad = shape(32, 4, 128, 12);
    assert_int_equal(plan(64, 64, 4, 1, 32, &bad, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "page size 12"));
    bad = shape(30, 4, 128, 16);
    assert_int_equal(plan(64, 64, 4, 1, 32, &bad, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "num_heads 30 is not a multiple of num_kv_heads 4"));
    /* the wgmma path: a warpgroup per 64 rows, N of both GEMMs 64 or 128, 32-wide warps */
    assert_int_equal(plan(128, 128, 8, 2, 32, &a, h200, &p, why, sizeof why), 0);
    assert_int_equal(p.block[0], 256);
    assert_int_equal(p.dynamic_smem, 230400);
    /* a 64-row CTA alone on its SM (shared memory) gets a producer warpgroup; one that
     * shares its SM does not */
    assert_int_equal(plan(64, 128, 4, 2, 32, &a, h200, &p, why, sizeof why), 0);
    assert_int_equal(p.dynamic_smem, 214016);
    assert_int_equal(p.block[0], 256);
    assert_int_equal(plan(64, 64, 4, 2, 32, &a, h200, &p, why, sizeof why), 0);
    assert_int_equal(p.dynamic_smem, 115712);
    assert_int_equal(p.block[0], 128);
    assert_int_equal(plan(128, 64, 4, 2, 32, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "wgmma path: BLOCK_M=128 with NUM_WARPS=4"));
    assert_int_equal(plan(64, 32, 4, 2, 32, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "wgmma path: BLOCK_N=32, HEAD_DIM=128"));
    assert_int_equal(plan(64, 64, 4, 2, 64, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "warp size 32"));
    assert_int_equal(plan(128, 128, 8, 2, 32, &a, 224 * 1024, &p, why, sizeof why), -1);
    assert_string_equal(why, "needs 230400 B dynamic shared memory > 229376 B available");
    assert_int_equal(plan(64, 64, 4, 3, 32, &a, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "code path 3 unknown"));
    const ppb_prefill_args d256 = shape(32, 4, 256, 16);
    assert_int_equal(plan(64, 64, 4, 2, 32, &d256, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "HEAD_DIM=256"));

    bad = shape(32, 4, 64, 16);   /* a D 128 kernel given D 64 arguments */
    const ppb_prefill_config cfg = {.block_m = 64, .block_n = 64, .num_warps = 4, .use_mma = 1, .warp_size = 32};
    assert_int_equal(ppb_prefill_plan(&cfg, &bad, 128, PPB_KDTYPE_BF16, h200, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "arguments have head_dim 64, kernel HEAD_DIM=128"));
}

static void test_launch_shape(void **state)
{
    (void)state;
    /* GQA packing: 100 tokens x 8 query heads per kv head = 800 rows, 7 tiles of 128 */
    const ppb_prefill_args a = shape(32, 4, 128, 16);
    ppb_launch_plan p;
    char why[256];
    assert_int_equal(plan(128, 64, 4, 1, 32, &a, 232448, &p, why, sizeof why), 0);
    assert_int_equal(p.grid[0], 4);
    assert_int_equal(p.grid[1], 2);
    assert_int_equal(p.grid[2], 7);
    assert_int_equal(p.block[0], 128);
    assert_int_equal(p.block[1] * p.block[2], 1);
    assert_int_equal(p.dynamic_smem, 106496);
    /* the portable path's block is NUM_WARPS warps of the target's width */
    assert_int_equal(plan(64, 64, 4, 0, 64, &a, 49152, &p, why, sizeof why), 0);
    assert_int_equal(p.block[0], 256);
    assert_int_equal(p.grid[2], 13);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_memory_and_the_two_stage_rule),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_launch_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
