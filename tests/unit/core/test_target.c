/* Target profiles and the feasibility model: the shipped profiles, the seed's
 * BI-V100 question (BLOCK_N=128 at D=128), occupancy limiters computed by hand,
 * measured resources overriding the formula, and bad profile files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "decode_plan.h"
#include "prefill_plan.h"
#include "target.h"

static const char *source_dir(void)
{
    const char *d = getenv("PPB_SOURCE_DIR");
    return d && d[0] ? d : PPB_SOURCE_DIR;
}

static const char *data_dir(void)
{
    static char buf[4096];
    const char *d = getenv("PPB_TEST_DATA");
    if (d && d[0])
        return d;
    snprintf(buf, sizeof buf, "%s/tests/data", source_dir());
    return buf;
}

static ppb_target *load_named(const char *name)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/suites", source_dir());
    ppb_target *t = calloc(1, sizeof *t);
    assert_non_null(t);
    ppb_err err = {{0}};
    int rc = ppb_target_load_named(dir, name, t, &err);
    if (rc != PPB_OK)
        fail_msg("loading %s: %s", name, err.msg);
    return t;
}

static ppb_case prefill(int bm, int bn, int warps, int d)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.query_len = 8192;
    c.shape.num_heads = 32;
    c.shape.num_kv_heads = 4;
    c.shape.head_dim = d;
    c.config.block_m = bm;
    c.config.block_n = bn;
    c.config.num_warps = warps;
    ppb_case_make_key(&c);
    return c;
}

static ppb_case decode(int version, int threads, int partition, int seq_len)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.seq_len = seq_len;
    c.shape.batch = 8;
    c.shape.num_heads = 32;
    c.shape.num_kv_heads = 4;
    c.shape.head_dim = 128;
    c.config.version = version;
    c.config.num_threads = threads;
    c.config.partition_size = partition;
    ppb_case_make_key(&c);
    return c;
}

static void set_value(ppb_target_value *v, double value)
{
    memset(v, 0, sizeof *v);
    v->present = 1;
    v->value = value;
    snprintf(v->source, sizeof v->source, "test");
    snprintf(v->confidence, sizeof v->confidence, "assumed");
}

#define assert_contains(haystack, needle)                                                         \
    do {                                                                                          \
        if (!strstr((haystack), (needle)))                                                        \
            fail_msg("'%s' does not contain '%s'", (haystack), (needle));                        \
    } while (0)
#define assert_lacks(haystack, needle)                                                            \
    do {                                                                                          \
        if (strstr((haystack), (needle)))                                                         \
            fail_msg("'%s' contains '%s'", (haystack), (needle));                                \
    } while (0)

/* ---- the shipped profiles ------------------------------------------------ */

static void test_load_shipped_profiles(void **state)
{
    (void)state;
    ppb_target *b = load_named("bi-v100");
    assert_string_equal(b->name, "bi-v100");
    assert_true(b->warp_size.present && b->warp_size.value == 64);
    assert_string_equal(b->warp_size.confidence, "measured");
    assert_true(b->smem_per_block.value == 49152);
    assert_string_equal(b->smem_per_block.confidence, "disputed");
    assert_int_equal(b->smem_per_block.n_alt, 2);
    assert_true(b->smem_per_block.alternatives[0] == 32768);
    assert_true(b->smem_per_block.alternatives[1] == 131072);
    assert_string_equal(b->smem_per_block.alt_source[1], "LLVM backend feature list");
    assert_false(b->smem_per_sm.present);              /* unknown, not invented */
    assert_string_equal(b->smem_per_sm.confidence, "unknown");
    assert_false(b->regs_per_sm.present);
    assert_true(b->mem_bytes.value == 34057748480.0);
    assert_true(b->sm_count.value == 16 && b->sm_count.n_alt == 1);
    assert_true(b->mem_bandwidth.value == 1.2e12);
    assert_int_equal(b->mem_bandwidth.n_alt, 2);
    assert_true(b->mem_bandwidth.alternatives[0] == 584e9);
    const ppb_target_value *all[] = {&b->warp_size, &b->smem_per_block, &b->smem_per_sm,
                                     &b->max_threads_per_block, &b->max_threads_per_sm,
                                     &b->max_blocks_per_sm, &b->regs_per_sm,
                                     &b->max_regs_per_thread, &b->sm_count, &b->mem_bytes,
                                     &b->mem_bandwidth, &b->fp16_flops};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_true(all[i]->source[0] != '\0');   /* every figure, known or not, says why */

    ppb_target *h = load_named("h200");
    assert_true(h->warp_size.value == 32);
    assert_true(h->smem_per_block.value == 232448);
    assert_true(h->smem_per_block_default.value == 49152);
    assert_true(h->smem_per_sm.value == 233472);
    assert_true(h->smem_reserved_per_block.value == 1024);
    assert_true(h->sm_count.value == 132);
    assert_true(h->regs_per_sm.value == 65536);
    assert_true(h->max_regs_per_thread.value == 255);
    assert_true(h->max_threads_per_sm.value == 2048);
    assert_true(h->max_blocks_per_sm.value == 32);
    assert_true(h->mem_bytes.value > 140e9);

    ppb_target *a = load_named("a100");
    assert_true(a->smem_per_block.value == 166912);
    assert_true(a->smem_per_sm.value == 167936);
    assert_true(a->sm_count.value == 108);
    assert_true(a->mem_bytes.value == 80e9);
    assert_int_equal(a->mem_bytes.n_alt, 1);
    assert_true(a->mem_bytes.alternatives[0] == 40e9);
    free(b);
    free(h);
    free(a);
}

/* ---- the seed's question on the BI-V100 ---------------------------------- */

static void test_bi_v100_block_n_128_refused_and_flips_at_128k(void **state)
{
    (void)state;
    ppb_target *b = load_named("bi-v100");
    ppb_case c = prefill(128, 128, 8, 128);
    ppb_needs n;
    ppb_target_needs(&c, b, NULL, &n);
    /* The built-in kernel's portable layout (64-wide warps: no tensor cores): Q^T, one
     * K^T/V buffer, P [BM][BN+2], one fp32 per row: 2 x (128x128 + 128x128 + 128x130) + 4 x 128. */
    assert_int_equal(n.smem_bytes, 99328);
    assert_int_equal(n.seed_smem_bytes, 65536);
    assert_int_equal(n.threads, 8 * 64);
    assert_int_equal(n.seed_threads, 8 * 32);
    assert_int_equal(n.from_compiled, 0);
    assert_contains(n.arithmetic, "the seed assumes a 32-wide warp: 256");

    ppb_feasibility f;
    ppb_target_judge(&c, b, NULL, &f);
    assert_false(f.feasible);
    assert_int_equal(f.blocks_per_sm, 0);
    assert_contains(f.reason, "needs 99328 B shared memory (built-in kernel's portable layout "
                              "(kernels/prefill_plan.c) for BLOCK_M 128, BLOCK_N 128, 8 warps of 64, D 128: 99328 B");
    assert_contains(f.reason, "the seed counts K+V only: 65536 B (K+V tiles 2 x 128 x 128 x 2 B = 65536 B)");
    assert_contains(f.reason, "> 49152 B per block (bi-v100 smem_per_block, disputed)");
    assert_true(strchr(f.reason, '\n') == NULL);
    assert_string_equal(f.flips, "feasible at 131072 B (128 KB, LLVM backend feature list)");

    /* The seed's proposal, 64/64 tiles: 41472 B in the portable layout; the
     * 32 KB figure from Iluvatar's vLLM build would refuse it. */
    c = prefill(64, 64, 4, 128);
    ppb_target_judge(&c, b, NULL, &f);
    assert_true(f.feasible);
    assert_contains(f.reason, "needs 41472 B shared memory");
    assert_contains(f.reason, "<= 49152 B per block");
    assert_string_equal(f.flips, "infeasible at 32768 B (32 KB, hard-coded in Iluvatar's vLLM build)");
    /* Occupancy cannot be estimated: the per-SM figures are unknown. */
    assert_int_equal(f.blocks_per_sm, 0);
    assert_string_equal(f.limiter, "unknown");
    assert_contains(f.reason, "blocks/SM unknown");

    /* BLOCK_M 128 with BLOCK_N 64 (newer vLLM): 32 KB K+V, 65 KB in the kernel's layout. */
    c = prefill(128, 64, 4, 128);
    ppb_target_judge(&c, b, NULL, &f);
    assert_false(f.feasible);
    assert_contains(f.reason, "needs 66560 B");
    assert_string_equal(f.flips, "feasible at 131072 B (128 KB, LLVM backend feature list)");

    /* D 256 with 128 tiles needs 161 KB: no published figure rescues it. */
    c = prefill(128, 128, 8, 256);
    ppb_target_judge(&c, b, NULL, &f);
    assert_false(f.feasible);
    assert_contains(f.reason, "needs 164864 B");
    assert_contains(f.flips, "no disputed figure flips it");
    assert_lacks(f.flips, "feasible at");
    free(b);
}

static void test_h200_opt_in_and_smem_limiter(void **state)
{
    (void)state;
    ppb_target *h = load_named("h200");
    ppb_case c = prefill(128, 128, 8, 128);
    ppb_feasibility f;
    /* path auto on cc 9.0 takes the wgmma layout for 128-row tiles: three swizzled K/V
     * stages, 230400 B -> 233472 / (230400 + 1024) = 1.0 -> 1 block per SM. */
    ppb_target_judge(&c, h, NULL, &f);
    assert_true(f.feasible);
    assert_int_equal(f.blocks_per_sm, 1);
    assert_contains(f.reason, "wgmma layout");
    assert_contains(f.reason, "230400 B");
    /* path=mma: the tensor-core layout, one K/V stage (two exceed the two-CTAs-per-SM
     * budget): 104448 B. smem: 233472 / (104448 + 1024) = 2.2 -> 2; threads 2048 / 256 =
     * 8; blocks 32. */
    c.config.path = PPB_PATH_MMA;
    ppb_target_judge(&c, h, NULL, &f);
    assert_true(f.feasible);
    assert_int_equal(f.blocks_per_sm, 2);
    assert_string_equal(f.limiter, "smem");
    assert_contains(f.reason, "tensor-core layout");
    assert_contains(f.reason, "over the 49152 B default: the launch must opt in");
    assert_contains(f.reason, "2 blocks/SM, limited by smem (233472 B per SM / (104448 + 1024 reserved) B)");
    assert_contains(f.reason, "(an upper bound: registers/thread unknown)");
    assert_string_equal(f.flips, "");   /* nothing disputed on the H200 */

    /* D 256, 128 tiles (no wgmma layout at D 256: the tensor-core one): 200 KB fits the
     * 227 KB opt-in; one block per SM. */
    c = prefill(128, 128, 8, 256);
    ppb_target_judge(&c, h, NULL, &f);
    assert_true(f.feasible);
    assert_int_equal(f.blocks_per_sm, 1);
    /* 64/64/4 at D 128: path auto takes the wgmma layout there too, 115712 B + 1 KB
     * reserve -> 233472 / 116736 = 2; path=mma: two K/V stages, 89088 B -> 2. */
    c = prefill(64, 64, 4, 128);
    ppb_target_judge(&c, h, NULL, &f);
    assert_int_equal(f.blocks_per_sm, 2);
    assert_string_equal(f.limiter, "smem");
    assert_contains(f.reason, "wgmma layout");
    assert_contains(f.reason, "needs 115712 B");
    c.config.path = PPB_PATH_MMA;
    ppb_target_judge(&c, h, NULL, &f);
    assert_int_equal(f.blocks_per_sm, 2);
    assert_contains(f.reason, "needs 89088 B");
    /* path=simt on the same target: the portable layout, 41472 B, under the default. */
    c.config.path = PPB_PATH_SIMT;
    ppb_target_judge(&c, h, NULL, &f);
    assert_contains(f.reason, "needs 41472 B");
    assert_lacks(f.reason, "opt in");
    free(h);
}

/* ---- occupancy on hand-made targets -------------------------------------- */

static ppb_target *synthetic(void)
{
    ppb_target *t = calloc(1, sizeof *t);
    assert_non_null(t);
    snprintf(t->name, sizeof t->name, "synthetic");
    set_value(&t->warp_size, 32);
    set_value(&t->smem_per_block, 65536);
    set_value(&t->smem_per_sm, 65536);
    set_value(&t->max_threads_per_block, 1024);
    set_value(&t->max_threads_per_sm, 1024);
    set_value(&t->max_blocks_per_sm, 32);
    set_value(&t->regs_per_sm, 65536);
    set_value(&t->max_regs_per_thread, 255);
    return t;
}

static void test_occupancy_limiters(void **state)
{
    (void)state;
    ppb_target *t = synthetic();
    /* 16x16 tiles at D 64, portable layout (no compute capability: no tensor cores):
     * 2 x (64x16 + 16x64 + 16x18) + 4 x 16 = 4736 B; 8 warps = 256 threads.
     * smem 65536/4736 = 13, threads 1024/256 = 4, blocks 32 -> 4 (threads). */
    ppb_case c = prefill(16, 16, 8, 64);
    ppb_feasibility f;
    ppb_target_judge(&c, t, NULL, &f);
    assert_true(f.feasible);
    assert_int_equal(f.blocks_per_sm, 4);
    assert_string_equal(f.limiter, "threads");
    assert_contains(f.reason, "1024 threads per SM / 256");

    /* Cap the blocks: 3 < 4. */
    set_value(&t->max_blocks_per_sm, 3);
    ppb_target_judge(&c, t, NULL, &f);
    assert_int_equal(f.blocks_per_sm, 3);
    assert_string_equal(f.limiter, "blocks");

    /* Shared memory: 1 warp = 32 threads (32 blocks by threads), 4736 B, a
     * reserve of 2048 B per block: 65536 / 6784 = 9. */
    set_value(&t->max_blocks_per_sm, 32);
    set_value(&t->smem_reserved_per_block, 2048);
    c = prefill(16, 16, 1, 64);
    ppb_target_judge(&c, t, NULL, &f);
    assert_int_equal(f.blocks_per_sm, 9);
    assert_string_equal(f.limiter, "smem");

    /* Registers, from measured resources: 64 regs x 32 threads = 2048 per block,
     * 65536 / 2048 = 32 = the block cap; with 128 regs: 16 (registers). */
    ppb_resources r = {.known = 1, .registers = 128, .static_smem = 1024, .dynamic_smem = 0};
    ppb_target_judge(&c, t, &r, &f);
    assert_int_equal(f.blocks_per_sm, 16);
    assert_string_equal(f.limiter, "registers");
    assert_contains(f.reason, "65536 registers per SM / (128 x 32)");
    free(t);
}

static void test_kernels_md_decode_anchor(void **state)
{
    (void)state;
    ppb_target *h = load_named("h200");
    /* KERNELS-IMPL.md: vLLM's paged attention uses 96 registers and 288 B static
     * shared memory per block: 5 blocks per SM on the H200. */
    ppb_case c = decode(2, 128, 512, 32768);
    ppb_needs n;
    ppb_target_needs(&c, h, NULL, &n);
    /* The built-in kernel (tensor-core path on cc 9.0): 8 heads per block (GQA 8), each
     * with a partition's logits padded to 32 + 4 floats (516), 2 x 4 warps + 4 floats of
     * softmax state: (8 x 516 + 64 + 32) x 4 = 16896 B; the reduce for 64 partitions
     * 4 x (64 + 8 x 128 + 8) = 4384 B. */
    assert_int_equal(n.smem_bytes, 16896);
    assert_int_equal(n.threads, 128);
    assert_contains(n.arithmetic, "main kernel 16896 B for 8 heads per block");
    assert_contains(n.arithmetic, "reduce 4384 B for 64 partitions");
    ppb_resources r = {.known = 1, .registers = 96, .static_smem = 288, .dynamic_smem = 2048};
    ppb_feasibility f;
    ppb_target_judge(&c, h, &r, &f);
    assert_true(f.feasible);
    assert_int_equal(f.blocks_per_sm, 5);     /* 65536 / (96 x 128) = 5.3 */
    assert_string_equal(f.limiter, "registers");

    /* v1 at 100K context: even one head per block holds 100000 + 4 logits; the
     * tensor-core plan refuses, so path auto sizes the portable layout (as the built-in
     * kernels would try next): + D output floats + 8 + 4 = 100144 floats. */
    c = decode(1, 128, 512, 100000);
    ppb_target_needs(&c, h, NULL, &n);
    assert_int_equal(n.smem_bytes, 400576);
    assert_contains(n.arithmetic, "portable layout");
    assert_contains(n.arithmetic, "for 1 heads per block");
    ppb_target_judge(&c, h, NULL, &f);
    assert_false(f.feasible);
    assert_contains(f.reason, "needs 400576 B shared memory");
    assert_contains(f.reason, "> 232448 B per block (h200 smem_per_block, measured)");
    /* ... and the per-SM limit is broken too. */
    assert_contains(f.reason, "> 233472 B per SM");
    /* v1 pads the logits to 32 (+ 4): 8 heads x 1028 + 96 floats. */
    c = decode(1, 128, 512, 1001);
    ppb_target_needs(&c, h, NULL, &n);
    assert_int_equal(n.smem_bytes, (8 * 1028 + 96) * 4);
    free(h);
}

static void test_measured_resources_override_the_formula(void **state)
{
    (void)state;
    ppb_target *b = load_named("bi-v100");
    ppb_case c = prefill(128, 128, 8, 128);
    ppb_resources r = {.known = 1, .registers = 64, .static_smem = 8192, .dynamic_smem = 32768};
    ppb_needs n;
    ppb_target_needs(&c, b, &r, &n);
    assert_int_equal(n.from_compiled, 1);
    assert_int_equal(n.smem_bytes, 40960);
    assert_int_equal(n.registers_per_thread, 64);
    assert_contains(n.arithmetic, "measured from the compiled kernel: 8192 B static + 32768 B dynamic");
    assert_contains(n.arithmetic, "the formula says 99328 B");
    ppb_feasibility f;
    ppb_target_judge(&c, b, &r, &f);
    assert_true(f.feasible);   /* the formula alone says infeasible */
    assert_contains(f.reason, "measured from the compiled kernel");

    /* Unknown resources (known = 0) leave the formula in charge. */
    r.known = 0;
    ppb_target_judge(&c, b, &r, &f);
    assert_false(f.feasible);

    /* Registers past the SM's file: 128 x 1024 threads = 131072 > 65536. */
    ppb_target *h = load_named("h200");
    c = decode(2, 1024, 512, 4096);
    ppb_resources big = {.known = 1, .registers = 128, .static_smem = 0, .dynamic_smem = 4096};
    ppb_target_judge(&c, h, &big, &f);
    assert_false(f.feasible);
    assert_contains(f.reason, "128 registers x 1024 threads = 131072 registers > 65536 per SM");
    free(b);
    free(h);
}

static void test_threads_and_warp_flip(void **state)
{
    (void)state;
    ppb_target *t = synthetic();
    set_value(&t->warp_size, 64);
    t->warp_size.n_alt = 1;
    t->warp_size.alternatives[0] = 32;
    snprintf(t->warp_size.alt_source[0], sizeof t->warp_size.alt_source[0], "the seed");
    set_value(&t->max_threads_per_block, 256);
    /* 8 warps x 64 = 512 threads > 256; at a 32-wide warp, 256: fits. */
    ppb_case c = prefill(16, 16, 8, 64);
    ppb_feasibility f;
    ppb_target_judge(&c, t, NULL, &f);
    assert_false(f.feasible);
    assert_contains(f.reason, "needs 512 threads (threads 8 warps x 64 = 512 (the seed assumes a "
                              "32-wide warp: 256)) > 256 per block");
    assert_string_equal(f.flips, "feasible at warp_size 32 (the seed)");
    free(t);
}

static void test_plain_alternatives_and_partial_occupancy(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/targets/good/plain_alternatives.yaml", data_dir());
    ppb_target *t = calloc(1, sizeof *t);
    ppb_err err = {{0}};
    if (ppb_target_load(path, t, &err) != PPB_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(t->smem_per_block.n_alt, 1);
    assert_string_equal(t->smem_per_block.alt_source[0], "");
    ppb_case c = prefill(128, 128, 4, 128);
    ppb_feasibility f;
    ppb_target_judge(&c, t, NULL, &f);
    assert_false(f.feasible);
    assert_string_equal(f.flips, "feasible at 131072 B (128 KB)");
    /* 64/32 tiles at D 64: 8192 + 8192 B; 4 warps = 128 threads: threads allow 16, blocks 3. */
    c = prefill(64, 32, 4, 64);
    ppb_target_judge(&c, t, NULL, &f);
    assert_true(f.feasible);
    assert_int_equal(f.blocks_per_sm, 3);
    assert_string_equal(f.limiter, "blocks");
    assert_contains(f.reason, "an upper bound: smem_per_sm; registers/thread unknown");
    free(t);
}

static void test_unknown_warp_assumes_32_and_says_so(void **state)
{
    (void)state;
    ppb_target *t = synthetic();
    memset(&t->warp_size, 0, sizeof t->warp_size);
    ppb_case c = prefill(64, 64, 4, 64);
    ppb_needs n;
    ppb_target_needs(&c, t, NULL, &n);
    assert_int_equal(n.threads, 128);
    assert_contains(n.arithmetic, "warp size unknown on synthetic: 32 assumed");
    /* And with no per-block limit the check says what it could not check. */
    memset(&t->smem_per_block, 0, sizeof t->smem_per_block);
    ppb_feasibility f;
    ppb_target_judge(&c, t, NULL, &f);
    assert_true(f.feasible);
    assert_contains(f.reason, "not checked: smem_per_block unknown on synthetic");
    free(t);
}

/* ---- bad profiles -------------------------------------------------------- */

static void test_bad_profiles_name_position_and_field(void **state)
{
    (void)state;
    const struct {
        const char *file, *where, *what;
    } bad[] = {
        {"unknown_top_key.yaml", ":3:1: shared_mem", "unknown key"},
        {"unknown_value_key.yaml", ":4:3: warp_size.src", "unknown key"},
        {"missing_confidence.yaml", ":3:3: smem_per_block", "confidence is missing"},
        {"missing_source.yaml", ":3:3: sm_count", "source is missing"},
        {"empty_source.yaml", ":2:31: sm_count.source", "must not be empty"},
        {"bad_confidence.yaml", ":2:49: warp_size.confidence", "'sure' is not one of"},
        {"disputed_without_alternatives.yaml", ":4:3: smem_per_block", "needs its alternatives"},
        {"unknown_with_value.yaml", ":3:10: regs_per_sm.value", "marked unknown"},
        {"missing_value.yaml", ":3:3: regs_per_sm", "value is missing"},
        {"not_a_number.yaml", ":2:24: mem_bandwidth.value", "'fast' is not a finite number"},
        {"fractional_warp.yaml", ":2:20: warp_size.value", "32.5 is not a whole number"},
        {"negative_value.yaml", ":2:32: max_threads_per_block.value", "out of range"},
        {"missing_name.yaml", ":1:1: name", "no name"},
        {"bad_name.yaml", ":1:7: name", "must be letters"},
        {"per_block_over_per_sm.yaml", ":3:17: smem_per_block", "98304 is more than smem_per_sm 65536"},
        {"alternative_repeats_value.yaml", ":6:25: smem_per_block.alternatives",
         "repeats the value"},
        {"alternative_bad_key.yaml", ":7:22: smem_per_block.alternatives.where", "unknown key"},
        {"value_not_a_mapping.yaml", ":2:12: warp_size", "expected a mapping"},
        {"syntax_error.yaml", "syntax_error.yaml:", "YAML syntax error"},
        {"list_at_top.yaml", ":1:1:", "expected a mapping"},
    };
    ppb_target *t = calloc(1, sizeof *t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/targets/bad/%s", data_dir(), bad[i].file);
        ppb_err err = {{0}};
        int rc = ppb_target_load(path, t, &err);
        if (rc != PPB_EINPUT)
            fail_msg("%s: returned %d, expected PPB_EINPUT (%s)", bad[i].file, rc, err.msg);
        char where[256];
        snprintf(where, sizeof where, "%s%s", bad[i].file, bad[i].where);
        if (bad[i].where[0] != ':')
            snprintf(where, sizeof where, "%s", bad[i].where);
        if (!strstr(err.msg, where) || !strstr(err.msg, bad[i].what))
            fail_msg("%s: message '%s' lacks '%s' or '%s'", bad[i].file, err.msg, where,
                     bad[i].what);
        assert_true(strchr(err.msg, '\n') == NULL);
    }
    free(t);
}

static void test_load_named_errors(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/suites", source_dir());
    ppb_target *t = calloc(1, sizeof *t);
    ppb_err err = {{0}};
    assert_int_equal(ppb_target_load_named(dir, "bi-v200", t, &err), PPB_EINPUT);
    assert_contains(err.msg, "no target profile 'bi-v200'");
    assert_contains(err.msg, "known: a100, bi-v100, h200");
    /* A name is never a path (a suite's target: cannot point elsewhere); what a user
     * typed may be: a '/' or a .yaml ending makes it the profile's file. */
    char path[4200];
    snprintf(path, sizeof path, "%s/targets/h200.yaml", dir);
    assert_int_equal(ppb_target_load_named(dir, "../targets/h200", t, &err), PPB_EINPUT);
    assert_contains(err.msg, "command line only");
    assert_int_equal(ppb_target_load_named(dir, path, t, &err), PPB_EINPUT);
    assert_int_equal(ppb_target_load_arg("/nonexistent", path, t, &err), PPB_OK);
    assert_string_equal(t->name, "h200");
    assert_int_equal(ppb_target_load_arg(dir, "bi-v100", t, &err), PPB_OK);
    assert_int_equal(ppb_target_load_named(dir, "bad name", t, &err), PPB_EINPUT);
    assert_contains(err.msg, "must be letters");
    /* Beside the suite first, then $PPBENCH_TARGETS, then this source tree's suites/targets. */
    assert_int_equal(ppb_target_load_named("/nonexistent", "bi-v100", t, &err), PPB_OK);
    assert_contains(t->path, "/suites/targets/bi-v100.yaml");

    /* A file whose name: differs from its file name. */
    char tmp[] = "/tmp/ppb_target_XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char sub[4200], file[4300];
    snprintf(sub, sizeof sub, "%s/targets", tmp);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(file, sizeof file, "%s/alias.yaml", sub);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("name: other\n", f);
    fclose(f);
    assert_int_equal(ppb_target_load_named(tmp, "alias", t, &err), PPB_EINPUT);
    assert_contains(err.msg, "named 'other', not 'alias'");
    unlink(file);
    rmdir(sub);
    rmdir(tmp);
    free(t);
}

/* ---- the target check and the launch plans agree exactly at the limit ------ */

/* A target whose per-block limit is `limit`: warp size and compute capability as given. */
static ppb_target *limited(int warp, double cc, double limit)
{
    ppb_target *t = synthetic();
    set_value(&t->warp_size, warp);
    if (cc > 0)
        set_value(&t->compute_capability, cc);
    set_value(&t->smem_per_block, limit);
    memset(&t->smem_per_sm, 0, sizeof t->smem_per_sm);
    return t;
}

static int prefill_plan_accepts(const ppb_case *c, int use_mma, int warp, unsigned limit)
{
    ppb_prefill_config cfg = {.block_m = c->config.block_m, .block_n = c->config.block_n,
                              .num_warps = c->config.num_warps, .use_mma = use_mma, .warp_size = warp};
    ppb_prefill_args a;
    memset(&a, 0, sizeof a);
    a.batch = c->shape.batch;
    a.max_query_len = c->shape.query_len;
    a.num_heads = c->shape.num_heads;
    a.num_kv_heads = c->shape.num_kv_heads;
    a.head_dim = c->shape.head_dim;
    a.page_size = c->shape.page_size;
    a.max_blocks_per_seq = 1;
    ppb_launch_plan p;
    return ppb_prefill_plan(&cfg, &a, c->shape.head_dim, c->shape.dtype, limit, &p, NULL, 0) == 0;
}

static void test_prefill_check_and_plan_agree_at_the_limit(void **state)
{
    (void)state;
    /* mma: the level path auto takes at the limit; fallback: one byte short */
    const struct {
        int bm, bn, w, d, warp, mma, fallback;
        double cc;
    } cfgs[] = {
        {64, 64, 4, 128, 64, 0, 0, 7.0},   /* BI-V100-like: the portable layout, 64-wide warps */
        {128, 64, 8, 128, 32, 1, 0, 8.0},  /* A100-like: two K/V stages */
        {64, 64, 4, 128, 32, 1, 0, 9.0},   /* H200, 64-row tiles: mma.sync (auto keeps it there) */
        {128, 64, 8, 128, 32, 2, 1, 9.0},  /* H200: wgmma 164864 B; mma two stages (106496 B) fit */
        {128, 128, 8, 128, 32, 2, 1, 9.0}, /* H200: wgmma 230400 B; mma one stage (104448 B) fits */
        {16, 16, 1, 64, 32, 0, 0, 0},      /* no compute capability: portable */
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        ppb_case c = prefill(cfgs[i].bm, cfgs[i].bn, cfgs[i].w, cfgs[i].d);
        const ppb_prefill_config cfg = {.block_m = cfgs[i].bm, .block_n = cfgs[i].bn, .num_warps = cfgs[i].w,
                                        .use_mma = cfgs[i].mma, .warp_size = cfgs[i].warp};
        const unsigned need = ppb_prefill_smem_bytes(&cfg, cfgs[i].d);
        assert_true(need > 0);
        for (int miss = 0; miss <= 1; miss++) {
            /* fits exactly / misses by one byte */
            ppb_target *t = limited(cfgs[i].warp, cfgs[i].cc, (double)need - miss);
            ppb_kernel_smem ks;
            ppb_target_kernel_smem(&c, t, 0, &ks);
            if (!miss) {
                assert_int_equal(ks.use_mma, cfgs[i].mma);
                assert_int_equal(ks.bytes, (long)need);
            }
            ppb_needs n;
            ppb_target_needs(&c, t, NULL, &n);
            ppb_feasibility f;
            ppb_target_judge(&c, t, NULL, &f);
            if (!miss) {
                assert_int_equal(n.smem_bytes, (long)need);
                assert_true(f.feasible);
                assert_true(prefill_plan_accepts(&c, cfgs[i].mma, cfgs[i].warp, need));
            } else if (cfgs[i].mma) {
                /* path auto: the tensor-core plan refuses one byte short, so the check (like
                 * the built-in kernels) sizes the next layout down instead */
                assert_false(prefill_plan_accepts(&c, cfgs[i].mma, cfgs[i].warp, need - 1));
                assert_int_equal(ks.use_mma, cfgs[i].fallback);
                ppb_prefill_config lower = cfg;
                lower.use_mma = cfgs[i].fallback;
                assert_int_equal(n.smem_bytes, (long)ppb_prefill_smem_bytes(&lower, cfgs[i].d));
                /* an explicit path stays on its layout: infeasible, as the plan refuses */
                c.config.path = cfgs[i].mma == 2 ? PPB_PATH_WGMMA : PPB_PATH_MMA;
                ppb_target_judge(&c, t, NULL, &f);
                assert_false(f.feasible);
                c.config.path = PPB_PATH_AUTO;
            } else {
                assert_false(f.feasible);
                assert_false(prefill_plan_accepts(&c, 0, cfgs[i].warp, need - 1));
            }
            free(t);
        }
    }
}

/* The decode plan's answer on a case's shape: 0 and the main / reduce smem, or -1. */
static int decode_plan_smem(const ppb_case *c, int use_mma, int warp, unsigned limit, unsigned *main_smem,
                            unsigned *reduce_smem)
{
    ppb_decode_config cfg = {.version = c->config.version, .num_threads = c->config.num_threads,
                             .partition_size = c->config.partition_size, .use_mma = use_mma, .warp_size = warp};
    ppb_decode_args a;
    memset(&a, 0, sizeof a);
    a.num_seqs = c->shape.batch;
    a.num_heads = c->shape.num_heads;
    a.num_kv_heads = c->shape.num_kv_heads;
    a.head_dim = c->shape.head_dim;
    a.page_size = c->shape.page_size;
    a.max_seq_len = c->shape.seq_len;
    a.max_blocks_per_seq = (c->shape.seq_len + c->shape.page_size - 1) / c->shape.page_size;
    if (c->config.version == 2)
        a.max_num_partitions = (int)ppb_decode_num_partitions(c->shape.seq_len, c->config.partition_size);
    ppb_launch_plan m, r;
    if (ppb_decode_plan(&cfg, &a, c->shape.head_dim, c->shape.page_size, c->shape.dtype, limit, &m, &r, NULL, 0))
        return -1;
    *main_smem = m.dynamic_smem;
    *reduce_smem = r.dynamic_smem;
    return 0;
}

static void test_decode_check_and_plan_agree_at_the_limit(void **state)
{
    (void)state;
    const struct {
        int version, threads, partition, seq, heads, kv_heads, warp;
        double cc;
    } cfgs[] = {
        {2, 128, 512, 32768, 32, 32, 64, 7.0}, /* 64-wide warps: the warp size changes the figure */
        {2, 128, 512, 32768, 32, 32, 32, 0},
        {2, 256, 256, 4096, 32, 32, 32, 9.0},  /* tensor-core path */
        {1, 128, 0, 3000, 32, 32, 64, 7.0},    /* v1, MHA: one head per block at any limit */
        {2, 64, 32, 600000, 8, 8, 32, 0},      /* the reduce is the larger: 18750 partitions */
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        ppb_case c = decode(cfgs[i].version, cfgs[i].threads, cfgs[i].partition ? cfgs[i].partition : 512,
                            cfgs[i].seq);
        c.shape.num_heads = cfgs[i].heads;
        c.shape.num_kv_heads = cfgs[i].kv_heads;
        const int mma = cfgs[i].cc >= 8.0 && cfgs[i].warp == 32;
        unsigned m = 0, r = 0;
        assert_int_equal(decode_plan_smem(&c, mma, cfgs[i].warp, UINT32_MAX, &m, &r), 0);
        const unsigned need = m > r ? m : r;
        for (int miss = 0; miss <= 1; miss++) {
            ppb_target *t = limited(cfgs[i].warp, cfgs[i].cc, (double)need - miss);
            ppb_kernel_smem ks;
            ppb_target_kernel_smem(&c, t, 0, &ks);
            ppb_feasibility f;
            ppb_target_judge(&c, t, NULL, &f);
            unsigned pm = 0, pr = 0;
            const int plan_ok = decode_plan_smem(&c, ks.use_mma, cfgs[i].warp, need - (unsigned)miss, &pm, &pr) == 0;
            if (!miss) {
                assert_int_equal(ks.use_mma, mma);
                assert_int_equal(ks.main_bytes, (long)m);
                assert_int_equal(ks.reduce_bytes, (long)r);
                assert_int_equal(ks.bytes, (long)need);
                assert_true(f.feasible);
                assert_true(plan_ok);
                assert_int_equal(pm, m);
            } else {
                assert_false(plan_ok);
                if (!mma) /* (the tensor-core case falls back to the portable layout, also refused) */
                    assert_int_equal(ks.bytes, (long)need);
                assert_false(f.feasible);
            }
            free(t);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_shipped_profiles),
        cmocka_unit_test(test_bi_v100_block_n_128_refused_and_flips_at_128k),
        cmocka_unit_test(test_h200_opt_in_and_smem_limiter),
        cmocka_unit_test(test_occupancy_limiters),
        cmocka_unit_test(test_kernels_md_decode_anchor),
        cmocka_unit_test(test_measured_resources_override_the_formula),
        cmocka_unit_test(test_threads_and_warp_flip),
        cmocka_unit_test(test_plain_alternatives_and_partial_occupancy),
        cmocka_unit_test(test_unknown_warp_assumes_32_and_says_so),
        cmocka_unit_test(test_prefill_check_and_plan_agree_at_the_limit),
        cmocka_unit_test(test_decode_check_and_plan_agree_at_the_limit),
        cmocka_unit_test(test_bad_profiles_name_position_and_field),
        cmocka_unit_test(test_load_named_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
