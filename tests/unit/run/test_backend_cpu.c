/* The CPU backend's tiled algorithms against the float64 reference, its
 * refusals, timing, and the PARTITION_SIZE mismatch in both directions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu_attention.h"
#include "decode_plan.h"
#include "reference.h"
#include "target.h"

static ppb_case prefill(int batch, int q, int ctx, int heads, int kv_heads, int dim, int page, int bm,
                        int bn, int dtype)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = batch;
    c.shape.query_len = q;
    c.shape.context_len = ctx;
    c.shape.num_heads = heads;
    c.shape.num_kv_heads = kv_heads;
    c.shape.head_dim = dim;
    c.shape.page_size = page;
    c.shape.dtype = dtype;
    c.config.block_m = bm;
    c.config.block_n = bn;
    c.config.num_warps = 4;
    ppb_case_make_key(&c);
    return c;
}

static ppb_case decode(int batch, int seq, int heads, int kv_heads, int dim, int page, int version,
                       int part, int dtype)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = batch;
    c.shape.seq_len = seq;
    c.shape.num_heads = heads;
    c.shape.num_kv_heads = kv_heads;
    c.shape.head_dim = dim;
    c.shape.page_size = page;
    c.shape.dtype = dtype;
    c.config.version = version;
    c.config.partition_size = part;
    ppb_case_make_key(&c);
    return c;
}

static ppb_check_settings full_check(void)
{
    ppb_check_settings cs;
    cs.atol[PPB_FP16] = 2e-3;
    cs.rtol[PPB_FP16] = 1e-2;
    cs.atol[PPB_BF16] = 1.6e-2;
    cs.rtol[PPB_BF16] = 5e-2;
    cs.full_check_max_rows = 1L << 30;
    cs.sample_rows = 0;
    return cs;
}

typedef struct run_out {
    int rc;
    ppb_err err;
    ppb_result res;
    ppb_check_result check;
} run_out;

/* Prepare, run once checked, and check every row against the reference. */
static void run_case(const ppb_case *c, const ppb_backend_options *opt, run_out *o)
{
    memset(o, 0, sizeof *o);
    ppb_result_init(&o->res);
    ppb_workload w;
    ppb_err err = {{0}};
    if (ppb_workload_create(&w, c, 1234, 1, &err))
        fail_msg("%s: workload: %s", c->key, err.msg);
    ppb_backend_options def = {0};
    ppb_backend *b = NULL;
    assert_int_equal(ppb_backend_cpu.open(&b, opt ? opt : &def, &err), 0);
    o->rc = ppb_backend_cpu.prepare(b, c, &w, &o->res, &o->err);
    if (o->rc == 0) {
        uint16_t *out = malloc(sizeof(uint16_t) * w.out_elems);
        o->rc = ppb_backend_cpu.run_checked(b, out, &o->res, &o->err);
        if (o->rc == 0) {
            ppb_check_settings cs = full_check();
            if (ppb_reference_check(&w, out, &cs, 1, &o->check, &err))
                fail_msg("%s: check: %s", c->key, err.msg);
        }
        free(out);
        ppb_backend_cpu.release(b);
    }
    ppb_backend_cpu.close(b);
    ppb_workload_free(&w);
}

static void assert_correct(const ppb_case *c)
{
    run_out o;
    run_case(c, NULL, &o);
    if (o.rc)
        fail_msg("%s: %s", c->key, o.err.msg);
    if (!o.check.pass || o.check.rows_checked != o.check.rows_total)
        fail_msg("%s: max abs %.3g, rel l2 %.3g, nonfinite %ld, unwritten %ld, rows %ld/%ld", c->key,
                 o.check.max_abs_err, o.check.rel_l2_err, o.check.nonfinite, o.check.unwritten,
                 o.check.rows_checked, o.check.rows_total);
    /* well inside the tolerance, not just under it */
    double rel_bound = c->shape.dtype == PPB_FP16 ? 2e-3 : 1.5e-2;
    if (o.check.rel_l2_err > rel_bound)
        fail_msg("%s: rel l2 %.3g above %.3g", c->key, o.check.rel_l2_err, rel_bound);
    assert_true(o.res.timing_is_cpu);
    ppb_result_free(&o.res);
}

static void test_prefill_tile_edges(void **state)
{
    (void)state;
    const int qs[] = {1, 17, 33}, ctxs[] = {0, 1, 37, 100};
    const int tiles[][2] = {{16, 16}, {32, 16}, {16, 64}, {64, 32}, {128, 64}, {128, 128}};
    int k = 0;
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
        for (size_t j = 0; j < sizeof ctxs / sizeof *ctxs; j++, k++) {
            const int *t = tiles[k % 6];
            ppb_case c = prefill(1, qs[i], ctxs[j], 2, 1, 64, k % 2 ? 8 : 16, t[0], t[1], k % 2);
            assert_correct(&c);
        }
}

/* vLLM v0.6.3's Triton kernel gives NaN at BLOCK_M=128, BLOCK_N=64 (rows that see
 * no key in a diagonal tile); the CPU must compute it right. */
static void test_prefill_mismatched_tiles(void **state)
{
    (void)state;
    ppb_case c = prefill(1, 200, 50, 2, 1, 64, 16, 128, 64, PPB_BF16);
    assert_correct(&c);
    c = prefill(1, 130, 0, 1, 1, 64, 16, 128, 16, PPB_FP16);
    assert_correct(&c);
    c = prefill(1, 70, 20, 1, 1, 64, 16, 16, 128, PPB_FP16);
    assert_correct(&c);
}

static void test_prefill_gqa_and_head_dims(void **state)
{
    (void)state;
    const int kvh[] = {8, 4, 2, 1};
    for (int i = 0; i < 4; i++) {
        ppb_case c = prefill(1, 20, 30, 8, kvh[i], 64, 16, 16, 32, i % 2);
        assert_correct(&c);
    }
    ppb_case c = prefill(1, 19, 41, 2, 1, 128, 32, 32, 16, PPB_FP16);
    assert_correct(&c);
    c = prefill(1, 5, 9, 2, 1, 256, 8, 16, 16, PPB_BF16);
    assert_correct(&c);
}

static void test_prefill_window_and_ragged(void **state)
{
    (void)state;
    const int windows[] = {1, 5, 40, 1000};
    for (int i = 0; i < 4; i++) {
        ppb_case c = prefill(1, 33, 37, 2, 1, 64, 16, 16, 16, i % 2);
        c.shape.sliding_window = windows[i];
        ppb_case_make_key(&c);
        assert_correct(&c);
    }
    ppb_case c = prefill(3, 40, 45, 4, 2, 64, 8, 32, 16, PPB_BF16);
    c.shape.ragged = 1;
    ppb_case_make_key(&c);
    assert_correct(&c);
    c.shape.sliding_window = 20;
    ppb_case_make_key(&c);
    assert_correct(&c);
}

static void test_decode_v1(void **state)
{
    (void)state;
    const int seqs[] = {1, 15, 16, 17, 100};
    for (int i = 0; i < 5; i++) {
        ppb_case c = decode(2, seqs[i], 4, 2, 64, 16, 1, 512, i % 2);
        assert_correct(&c);
    }
    ppb_case c = decode(1, 300, 8, 1, 128, 32, 1, 512, PPB_BF16);
    assert_correct(&c);
    c = decode(1, 40, 2, 2, 256, 8, 1, 512, PPB_FP16);
    assert_correct(&c);
}

static void test_decode_v2_partitions(void **state)
{
    (void)state;
    const int parts[] = {16, 32, 64, 512};
    for (int i = 0; i < 4; i++) {
        int p = parts[i];
        const int seqs[] = {1, p - 1, p, p + 1, 3 * p + 5};
        for (int j = 0; j < 5; j++) {
            ppb_case c = decode(2, seqs[j], 2, 1, 64, 16, 2, p, (i + j) % 2);
            assert_correct(&c);
        }
    }
    /* ragged batch, GQA 4, window crossing partitions (whole partitions masked) */
    ppb_case c = decode(3, 150, 8, 2, 64, 16, 2, 32, PPB_BF16);
    c.shape.ragged = 1;
    c.shape.sliding_window = 40;
    ppb_case_make_key(&c);
    assert_correct(&c);
    c = decode(2, 90, 4, 4, 128, 8, 2, 16, PPB_FP16);
    c.shape.sliding_window = 1;
    ppb_case_make_key(&c);
    assert_correct(&c);
}

static void assert_refused(const ppb_case *c, const ppb_backend_options *opt, const char *needle)
{
    run_out o;
    run_case(c, opt, &o);
    assert_int_equal(o.rc, PPB_EREFUSED);
    if (!strstr(o.err.msg, needle))
        fail_msg("%s: refusal '%s' does not say '%s'", c->key, o.err.msg, needle);
    ppb_result_free(&o.res);
}

static void test_refusals(void **state)
{
    (void)state;
    ppb_case c = prefill(1, 16, 0, 1, 1, 64, 16, 16, 16, PPB_FP16);
    c.config.path = PPB_PATH_MMA;
    ppb_case_make_key(&c);
    assert_refused(&c, NULL, "no tensor-core path");

    /* The built-in kernels' algorithms have no pipelining depth to set: refused, not run at their own. */
    c = prefill(1, 16, 0, 1, 1, 64, 16, 16, 16, PPB_FP16);
    c.config.num_stages = 2;
    ppb_case_make_key(&c);
    assert_refused(&c, NULL, "num_stages=2: the built-in prefix_prefill kernel has no num_stages");

    /* 4 * 8 heads * 128 * (512 * 16384 + 512^2/2) = 34.9 GFLOP > the 2 GFLOP default */
    c = prefill(1, 512, 16384, 8, 1, 128, 16, 64, 64, PPB_BF16);
    ppb_workload w;
    ppb_err err = {{0}};
    ppb_backend *b = NULL;
    assert_int_equal(ppb_workload_create(&w, &c, 1, 0, &err), 0); /* no tensors needed to refuse */
    ppb_backend_options opt = {0};
    assert_int_equal(ppb_backend_cpu.open(&b, &opt, &err), 0);
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_backend_cpu.prepare(b, &c, &w, &res, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "too large for the CPU backend: 34.9 GFLOP > 2 GFLOP limit (--cpu-max-gflop)"));
    ppb_backend_cpu.close(b);
    ppb_workload_free(&w);

    /* a lower limit refuses a small case */
    opt.cpu_max_gflop = 1e-4;
    c = prefill(1, 64, 64, 2, 1, 64, 16, 16, 16, PPB_FP16);
    assert_refused(&c, &opt, "--cpu-max-gflop");

    /* v1 logits in shared memory (the built-in kernel's layout, kernels/decode_plan.c):
     * 12289 tokens padded to 12320 + 4, + D output floats + 8 + 4 = 12400 floats > 48 KB */
    c = decode(1, 12289, 1, 1, 64, 16, 1, 512, PPB_FP16);
    opt.cpu_max_gflop = 0;
    assert_refused(&c, &opt, "paged_attention v1 needs 49600 B of shared memory > 49152 B per block");
    assert_refused(&c, &opt, "use version 2");
    /* ... which fits a target with more shared memory per block */
    ppb_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "big");
    t.smem_per_block.present = 1;
    t.smem_per_block.value = 232448;
    opt.target = &t;
    run_out o;
    run_case(&c, &opt, &o);
    assert_int_equal(o.rc, 0);
    assert_true(o.check.pass);
    ppb_result_free(&o.res);
    /* v2 partition logits: 16384 + 4 floats alone > 48 KB (+ 64 output + 8 + 4 floats) */
    opt.target = NULL;
    c = decode(1, 100, 1, 1, 64, 16, 2, 16384, PPB_FP16);
    assert_refused(&c, &opt, "paged_attention v2 needs 65856 B of shared memory > 49152 B per block");
}

/* The CPU backend's shared-memory refusal and `ppbench check` (ppb_target_needs) are the
 * same computation (kernels/decode_plan.c with the target's warp size): a case whose
 * need is exactly the target's per-block limit runs, one byte less refuses, on both. */
static void test_smem_refusal_agrees_with_the_target_check(void **state)
{
    (void)state;
    const int warps[2] = {32, 64};
    for (int wi = 0; wi < 2; wi++)
        for (int version = 1; version <= 2; version++) {
            ppb_case c = decode(1, 3000, 2, 2, 64, 16, version, 256, PPB_FP16);
            ppb_target t;
            memset(&t, 0, sizeof t);
            snprintf(t.name, sizeof t.name, "edge");
            t.warp_size.present = 1;
            t.warp_size.value = warps[wi];
            ppb_kernel_smem ks;
            ppb_target_kernel_smem(&c, &t, 0, &ks);
            assert_true(ks.known);
            assert_int_equal(ks.warp_size, warps[wi]);
            /* the plan's own figure, with this warp size */
            ppb_decode_config cfg = {.version = version, .num_threads = c.config.num_threads, .partition_size = 256,
                                     .use_mma = 0, .warp_size = warps[wi]};
            assert_int_equal(ks.main_bytes,
                             (long)ppb_decode_main_smem_bytes(&cfg, 64, 16, ks.heads_per_cta, 3000));
            for (int miss = 0; miss <= 1; miss++) {
                t.smem_per_block.present = 1;
                t.smem_per_block.value = (double)(ks.bytes - miss);
                ppb_backend_options opt = {0};
                opt.target = &t;
                ppb_feasibility f;
                ppb_target_judge(&c, &t, NULL, &f);
                if (!miss) {
                    run_out o;
                    run_case(&c, &opt, &o);
                    assert_int_equal(o.rc, 0);
                    assert_true(o.check.pass);
                    ppb_result_free(&o.res);
                    assert_true(f.feasible);
                } else {
                    assert_refused(&c, &opt, "B of shared memory");
                    assert_false(f.feasible);
                }
            }
        }
}

/* ---- the PARTITION_SIZE mismatch ------------------------------------------------ */

/* Bytes the kernel writes past a host-sized buffer: it indexes
 * (seq * heads + head) * P_kernel + partition for every partition of every sequence. */
static long long expected_past(const ppb_workload *w, int heads, int ps_kernel, int ps_host, size_t elem)
{
    int max_len = 0;
    for (int b = 0; b < w->batch; b++)
        if (w->context_lens[b] > max_len)
            max_len = w->context_lens[b];
    long long pk = (max_len + ps_kernel - 1) / ps_kernel, ph = (max_len + ps_host - 1) / ps_host;
    long long end = 0;
    for (int b = 0; b < w->batch; b++)
        for (int h = 0; h < heads; h++) {
            long long parts = (w->context_lens[b] + ps_kernel - 1) / ps_kernel;
            long long e = ((long long)(b * heads + h) * pk + parts) * (long long)elem;
            if (e > end)
                end = e;
        }
    long long host = (long long)w->batch * heads * ph * (long long)elem;
    return end > host ? end - host : 0;
}

static void test_mismatch_overrun_caught_by_guards(void **state)
{
    (void)state;
    ppb_case c = decode(2, 200, 2, 1, 64, 16, 2, 32, PPB_BF16);
    c.config.host_partition_size = 64;
    ppb_case_make_key(&c);
    ppb_workload w;
    ppb_err err = {{0}};
    assert_int_equal(ppb_workload_create(&w, &c, 1234, 1, &err), 0);
    long long tmp_past = expected_past(&w, 2, 32, 64, 64 * 2);
    long long f_past = expected_past(&w, 2, 32, 64, 4);
    assert_int_equal(tmp_past, 1536); /* (3 * 7 + 7) * 128 - 4 * 4 * 128 */
    assert_int_equal(f_past, 48);

    run_out o;
    run_case(&c, NULL, &o);
    assert_int_equal(o.rc, 0);
    assert_true(o.check.pass); /* the guards absorbed the overrun: output still right */
    assert_true(o.res.overrun.detected);
    assert_int_equal(o.res.overrun.tmp_out_bytes, tmp_past);
    assert_int_equal(o.res.overrun.exp_sums_bytes, f_past);
    assert_int_equal(o.res.overrun.max_logits_bytes, f_past);
    assert_true(o.res.overrun.guard_bytes_changed > 0);
    assert_true(o.res.overrun.guard_bytes_changed <= tmp_past + 2 * f_past);
    assert_non_null(strstr(o.res.reason, "PARTITION_SIZE mismatch: host 64, kernel 32: kernel wrote 1536 B "
                                         "past tmp_out, 48 B past exp_sums, 48 B past max_logits"));
    assert_non_null(strstr(o.res.reason, "guard zones caught it"));
    ppb_result_free(&o.res);

    /* the ragged case: the last sequence is short, so the overrun is less */
    c.shape.ragged = 1;
    c.shape.batch = 3;
    ppb_case_make_key(&c);
    ppb_workload_free(&w);
    assert_int_equal(ppb_workload_create(&w, &c, 1234, 1, &err), 0);
    run_case(&c, NULL, &o);
    assert_int_equal(o.rc, 0);
    assert_true(o.check.pass);
    assert_int_equal(o.res.overrun.tmp_out_bytes, expected_past(&w, 2, 32, 64, 128));
    assert_int_equal(o.res.overrun.exp_sums_bytes, expected_past(&w, 2, 32, 64, 4));
    assert_true(o.res.overrun.detected);
    ppb_result_free(&o.res);
    ppb_workload_free(&w);
}

static void test_mismatch_other_direction_wastes_memory(void **state)
{
    (void)state;
    ppb_case c = decode(2, 200, 2, 1, 64, 16, 2, 64, PPB_FP16);
    c.config.host_partition_size = 32;
    ppb_case_make_key(&c);
    run_out o;
    run_case(&c, NULL, &o);
    assert_int_equal(o.rc, 0);
    assert_true(o.check.pass);
    assert_false(o.res.overrun.detected);
    assert_int_equal(o.res.overrun.tmp_out_bytes, 0);
    assert_int_equal(o.res.overrun.guard_bytes_changed, 0);
    assert_non_null(strstr(o.res.reason, "host 32, kernel 64"));
    assert_non_null(strstr(o.res.reason, "sized for 7 partitions, kernel indexes 4"));
    assert_non_null(strstr(o.res.reason, "no overrun"));
    ppb_result_free(&o.res);
    /* no mismatch at all: no reason, nothing detected */
    c.config.host_partition_size = 0;
    ppb_case_make_key(&c);
    run_case(&c, NULL, &o);
    assert_true(o.check.pass);
    assert_false(o.res.overrun.detected);
    assert_string_equal(o.res.reason, "");
    ppb_result_free(&o.res);
}

static void test_mismatch_packed_corrupts(void **state)
{
    (void)state;
    setenv("PPBENCH_MISMATCH_PACKED", "1", 1);
    ppb_case c = decode(2, 200, 2, 1, 64, 16, 2, 32, PPB_BF16);
    c.config.host_partition_size = 64;
    ppb_case_make_key(&c);
    run_out o;
    run_case(&c, NULL, &o);
    assert_int_equal(o.rc, 0);
    assert_true(o.res.overrun.detected);
    assert_int_equal(o.res.overrun.tmp_out_bytes, 1536);
    assert_int_equal(o.res.overrun.exp_sums_bytes, 48);
    assert_int_equal(o.res.overrun.max_logits_bytes, 48);
    assert_true(o.res.overrun.guard_bytes_changed > 0); /* the tail guard after max_logits */
    assert_non_null(strstr(o.res.reason, "packed back to back"));
    assert_false(o.check.pass); /* exp_sums / max_logits were overwritten by tmp_out */
    ppb_result_free(&o.res);
    /* packed without a mismatch stays correct */
    c.config.host_partition_size = 0;
    ppb_case_make_key(&c);
    run_case(&c, NULL, &o);
    assert_true(o.check.pass);
    assert_false(o.res.overrun.detected);
    ppb_result_free(&o.res);
    unsetenv("PPBENCH_MISMATCH_PACKED");
}

static void test_scratch_layout(void **state)
{
    (void)state;
    ppb_case c = decode(2, 200, 2, 1, 64, 16, 2, 32, PPB_FP16);
    c.config.host_partition_size = 64;
    ppb_case_make_key(&c);
    ppb_workload w;
    ppb_err err = {{0}};
    assert_int_equal(ppb_workload_create(&w, &c, 1, 1, &err), 0);
    cpu_attn *a = NULL;
    assert_int_equal(cpu_attn_create(&a, &c, &w, 0, 0, &err), 0);
    cpu_scratch_info si;
    cpu_attn_scratch_info(a, &si);
    assert_true(si.used);
    assert_int_equal(si.host_partitions, 4);
    assert_int_equal(si.kernel_partitions, 7);
    assert_int_equal(si.tmp_out_bytes, 4 * 4 * 128);
    assert_int_equal(si.exp_sums_bytes, 4 * 4 * 4);
    assert_true(si.tmp_out_guard >= 4 * 3 * 128);  /* absorbs the whole possible overrun */
    assert_true(si.exp_sums_guard >= 4 * 3 * 4);
    cpu_attn_destroy(a);
    /* a workload of another shape is refused */
    ppb_case other = c;
    other.shape.num_heads = 4;
    assert_int_equal(cpu_attn_create(&a, &other, &w, 0, 0, &err), PPB_EINPUT);
    ppb_workload_free(&w);
}

/* A launch keeps to the threads it was given (the calling one alone by default in
 * the backend), every count computing the same bits. */
static void test_kernel_threads(void **state)
{
    (void)state;
    setenv("PPBENCH_THREADS", "4", 1);
    ppb_case c = prefill(2, 64, 40, 4, 2, 64, 16, 16, 16, PPB_BF16); /* 32 items */
    ppb_workload w;
    ppb_err err = {{0}};
    assert_int_equal(ppb_workload_create(&w, &c, 7, 1, &err), 0);
    uint16_t *one = calloc(w.out_elems, sizeof *one), *many = calloc(w.out_elems, sizeof *many);
    cpu_attn *a = NULL;
    assert_int_equal(cpu_attn_create(&a, &c, &w, 0, 1, &err), 0);
    for (int launch = 0; launch < 20; launch++) { /* as often as the race below needs to show a second thread */
        assert_int_equal(cpu_attn_run(a, one, &err), 0);
        assert_int_equal(cpu_attn_threads_used(a), 1);
    }
    cpu_attn_destroy(a);
    assert_int_equal(cpu_attn_create(&a, &c, &w, 0, 2, &err), 0);
    assert_int_equal(cpu_attn_run(a, many, &err), 0);
    assert_true(cpu_attn_threads_used(a) <= 2);
    cpu_attn_destroy(a);
    assert_int_equal(cpu_attn_create(&a, &c, &w, 0, 0, &err), 0); /* every thread */
    int used = 0;
    for (int tries = 0; tries < 50 && used < 2; tries++) { /* the threads race for items: some get them */
        assert_int_equal(cpu_attn_run(a, many, &err), 0);
        used = cpu_attn_threads_used(a);
    }
    assert_true(used >= 2 && used <= 4);
    cpu_attn_destroy(a);
    assert_memory_equal(one, many, w.out_elems * sizeof *one);
    free(one);
    free(many);
    ppb_workload_free(&w);
    unsetenv("PPBENCH_THREADS");
}

typedef struct kernel_threads_seen {
    char value[64];
} kernel_threads_seen;

static void kernel_threads_sink(void *ctx, const char *key, const char *value)
{
    if (strcmp(key, "cpu_kernel_threads") == 0)
        snprintf(((kernel_threads_seen *)ctx)->value, sizeof((kernel_threads_seen *)ctx)->value, "%s", value);
}

/* What the environment record says, and a setting that is not a count refused by name. */
static void expect_kernel_threads(const char *env, const char *recorded)
{
    if (env)
        setenv("PPBENCH_CPU_KERNEL_THREADS", env, 1);
    else
        unsetenv("PPBENCH_CPU_KERNEL_THREADS");
    ppb_backend *b = NULL;
    ppb_err err = {{0}};
    ppb_backend_options opt = {0};
    int rc = ppb_backend_cpu.open(&b, &opt, &err);
    if (!recorded) {
        assert_int_equal(rc, PPB_EINPUT);
        assert_null(b);
        assert_non_null(strstr(err.msg, "PPBENCH_CPU_KERNEL_THREADS"));
        assert_non_null(strstr(err.msg, env));
    } else {
        assert_int_equal(rc, 0);
        kernel_threads_seen seen = {{0}};
        ppb_backend_cpu.environment(b, kernel_threads_sink, &seen);
        assert_string_equal(seen.value, recorded);
        ppb_backend_cpu.close(b);
    }
    unsetenv("PPBENCH_CPU_KERNEL_THREADS");
}

static void test_kernel_threads_setting(void **state)
{
    (void)state;
    setenv("PPBENCH_THREADS", "4", 1);
    expect_kernel_threads(NULL, "1");
    expect_kernel_threads("", "1");
    expect_kernel_threads("3", "3");
    expect_kernel_threads("9", "4"); /* no more than the threads there are */
    expect_kernel_threads("all", "all (4)");
    expect_kernel_threads("0", NULL);
    expect_kernel_threads("-2", NULL);
    expect_kernel_threads("two", NULL);
    expect_kernel_threads("2x", NULL);
    expect_kernel_threads("100000", NULL);
    unsetenv("PPBENCH_THREADS");
}

/* ---- the rest of the interface ---------------------------------------------------- */

typedef struct env_seen {
    int model, kernel, compiler, cores;
} env_seen;

static void env_sink(void *ctx, const char *key, const char *value)
{
    env_seen *s = ctx;
    assert_non_null(value);
    s->model += strcmp(key, "cpu_model") == 0 && value[0];
    s->kernel += strcmp(key, "os_kernel") == 0 && value[0];
    s->compiler += strcmp(key, "compiler") == 0 && value[0];
    s->cores += strcmp(key, "cpu_cores") == 0 && atoi(value) >= 1;
}

static void test_info_environment_and_timing(void **state)
{
    (void)state;
    ppb_backend *b = NULL;
    ppb_err err = {{0}};
    ppb_backend_options opt = {0};
    assert_int_equal(ppb_backend_cpu.open(&b, &opt, &err), 0);
    ppb_device_info info;
    ppb_backend_cpu.device_info(b, &info);
    assert_string_equal(info.backend, "cpu");
    assert_int_equal(info.is_gpu, 0);
    assert_true(info.name[0] != '\0');
    assert_true(info.sm_count >= 1);
    assert_true(info.l2_bytes > 0);
    env_seen seen = {0};
    ppb_backend_cpu.environment(b, env_sink, &seen);
    assert_int_equal(seen.model, 1);
    assert_int_equal(seen.kernel, 1);
    assert_int_equal(seen.compiler, 1);
    assert_int_equal(seen.cores, 1);

    double ms = 0;
    assert_int_equal(ppb_backend_cpu.time_sample(b, 1, 0, &ms, &err), PPB_EINPUT); /* not prepared */

    ppb_case c = prefill(1, 40, 30, 2, 1, 64, 16, 16, 16, PPB_FP16);
    ppb_workload w;
    assert_int_equal(ppb_workload_create(&w, &c, 1, 1, &err), 0);
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_backend_cpu.prepare(b, &c, &w, &res, &err), 0);
    assert_int_equal(ppb_backend_cpu.time_sample(b, 0, 0, &ms, &err), PPB_EINPUT);
    assert_int_equal(ppb_backend_cpu.time_sample(b, 3, 0, &ms, &err), 0);
    assert_true(ms > 0 && ms < 10000);
    ms = 0;
    assert_int_equal(ppb_backend_cpu.time_sample(b, 1, 1, &ms, &err), 0);
    assert_true(ms > 0 && ms < 10000);

    /* A/B on one workload: another config prepared on the same inputs */
    ppb_case c2 = c;
    c2.config.block_m = 32;
    c2.config.block_n = 64;
    ppb_case_make_key(&c2);
    assert_int_equal(ppb_backend_cpu.prepare(b, &c2, &w, &res, &err), 0);
    uint16_t *out = malloc(sizeof(uint16_t) * w.out_elems);
    assert_int_equal(ppb_backend_cpu.run_checked(b, out, &res, &err), 0);
    ppb_check_settings cs = full_check();
    ppb_check_result chk;
    assert_int_equal(ppb_reference_check(&w, out, &cs, 1, &chk, &err), 0);
    assert_true(chk.pass);
    free(out);
    ppb_backend_cpu.release(b);
    assert_int_equal(ppb_backend_cpu.run_checked(b, NULL, &res, &err), PPB_EINPUT); /* released */
    ppb_backend_cpu.close(b);
    ppb_result_free(&res);
    ppb_workload_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_tile_edges),
        cmocka_unit_test(test_prefill_mismatched_tiles),
        cmocka_unit_test(test_prefill_gqa_and_head_dims),
        cmocka_unit_test(test_prefill_window_and_ragged),
        cmocka_unit_test(test_decode_v1),
        cmocka_unit_test(test_decode_v2_partitions),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_smem_refusal_agrees_with_the_target_check),
        cmocka_unit_test(test_mismatch_overrun_caught_by_guards),
        cmocka_unit_test(test_mismatch_other_direction_wastes_memory),
        cmocka_unit_test(test_mismatch_packed_corrupts),
        cmocka_unit_test(test_scratch_layout),
        cmocka_unit_test(test_kernel_threads),
        cmocka_unit_test(test_kernel_threads_setting),
        cmocka_unit_test(test_info_environment_and_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
