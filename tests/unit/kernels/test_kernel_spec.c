/* Kernel instantiations: the spec line format (kernels/runtime/kernel_spec.h),
 * the case -> instantiation mapping per compute capability through the
 * built-in kernels' plans (harness/run/kernel_case.h over builtin_plan.h), the
 * sorted dedupe, and the list derived from suites (what ppb-kernel-compile and
 * PPB_AOT_CONFIGS consume). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_case.h"

static void test_format_parse_round_trip(void **state)
{
    (void)state;
    const char *lines[] = {
        "prefill dtype=bf16 head_dim=128 block_m=128 block_n=64 num_warps=8 mma=1",
        "decode dtype=fp16 head_dim=256 page_size=32 num_threads=256 partition_size=0 mma=0",
        "decode_reduce dtype=bf16 head_dim=64 num_threads=128 partition_size=512",
        "input_fill dtype=fp16",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        ppb_kernel_spec s;
        ppb_err err = {{0}};
        assert_int_equal(ppb_kernel_spec_parse(lines[i], &s, &err), PPB_OK);
        char text[PPB_KERNEL_SPEC_TEXT_MAX];
        ppb_kernel_spec_format(&s, text, sizeof text);
        assert_string_equal(text, lines[i]);
    }
    /* Field order and surrounding blanks do not matter on input. */
    ppb_kernel_spec a, b;
    ppb_err err = {{0}};
    assert_int_equal(ppb_kernel_spec_parse("  prefill mma=0 num_warps=4 block_n=32 block_m=16 head_dim=64 "
                                           "dtype=fp16\n",
                                           &a, &err),
                     PPB_OK);
    assert_int_equal(a.kind, PPB_KSPEC_PREFILL);
    assert_int_equal(a.dtype, PPB_FP16);
    assert_int_equal(a.head_dim, 64);
    assert_int_equal(a.block_m, 16);
    assert_int_equal(a.block_n, 32);
    assert_int_equal(a.num_warps, 4);
    assert_int_equal(a.use_mma, 0);
    assert_int_equal(ppb_kernel_spec_parse("prefill dtype=fp16 head_dim=64 block_m=16 block_n=32 "
                                           "num_warps=4 mma=0",
                                           &b, &err),
                     PPB_OK);
    assert_true(ppb_kernel_spec_equal(&a, &b));
}

/* The field table callers walk (ppb-kernel-compile's subset): the fields of a line, in its
 * order, with the values the line prints. */
static void test_field_table_matches_the_line(void **state)
{
    (void)state;
    const char *lines[] = {
        "prefill dtype=bf16 head_dim=128 block_m=128 block_n=64 num_warps=8 mma=2",
        "decode dtype=fp16 head_dim=256 page_size=32 num_threads=256 partition_size=512 mma=1",
        "decode_reduce dtype=bf16 head_dim=64 num_threads=128 partition_size=512",
        "input_fill dtype=fp16",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        ppb_kernel_spec s;
        ppb_err err = {{0}};
        assert_int_equal(ppb_kernel_spec_parse(lines[i], &s, &err), PPB_OK);
        int n = ppb_kernel_spec_field_count(s.kind);
        assert_in_range(n, 1, PPB_KERNEL_SPEC_FIELDS_MAX);
        char rebuilt[PPB_KERNEL_SPEC_TEXT_MAX];
        size_t len = (size_t)snprintf(rebuilt, sizeof rebuilt, "%s", ppb_kspec_kind_name(s.kind));
        for (int f = 0; f < n; f++) {
            const char *name = ppb_kernel_spec_field_name(s.kind, f);
            int v = ppb_kernel_spec_field_value(&s, f);
            if (strcmp(name, "dtype") == 0)
                len += (size_t)snprintf(rebuilt + len, sizeof rebuilt - len, " dtype=%s",
                                        v == PPB_KDTYPE_FP16 ? "fp16" : "bf16");
            else
                len += (size_t)snprintf(rebuilt + len, sizeof rebuilt - len, " %s=%d", name, v);
        }
        assert_string_equal(rebuilt, lines[i]);
        assert_null(ppb_kernel_spec_field_name(s.kind, n));
        assert_int_equal(ppb_kernel_spec_field_value(&s, n), 0);
    }
    assert_int_equal(ppb_kernel_spec_field_count(99), 0);
}

static void test_parse_errors_name_the_problem(void **state)
{
    (void)state;
    struct {
        const char *line, *expect;
    } bad[] = {
        {"", "empty"},
        {"gemm dtype=fp16", "not a kernel kind"},
        {"prefill dtype=fp16 head_dim=64 block_m=16 block_n=32 num_warps=4", "needs mma="},
        {"prefill dtype=fp8 head_dim=64 block_m=16 block_n=32 num_warps=4 mma=0", "dtype 'fp8'"},
        {"prefill dtype=fp16 head_dim=64 block_m=16 block_n=32 num_warps=4 mma=3", "mma must be 0 or 1 (or 2: wgmma)"},
        {"decode dtype=fp16 head_dim=64 page_size=16 num_threads=128 partition_size=0 mma=2", "mma must be 0 or 1"},
        {"prefill dtype=fp16 head_dim=x block_m=16 block_n=32 num_warps=4 mma=0", "head_dim='x'"},
        {"prefill dtype=fp16 head_dim=64 head_dim=64 block_m=16 block_n=32 num_warps=4 mma=0", "given twice"},
        {"decode_reduce dtype=fp16 head_dim=64 num_threads=128 partition_size=512 mma=0", "not a field"},
        {"decode dtype=fp16 head_dim", "not name=value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ppb_kernel_spec s;
        ppb_err err = {{0}};
        assert_int_equal(ppb_kernel_spec_parse(bad[i].line, &s, &err), PPB_EINPUT);
        if (!strstr(err.msg, bad[i].expect))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].line, err.msg, bad[i].expect);
    }
}

static ppb_case decode_case(int version, int partition)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.seq_len = 1000;
    c.shape.num_heads = 8;
    c.shape.num_kv_heads = 1;
    c.shape.page_size = 16;
    c.shape.dtype = PPB_FP16;
    c.config.version = version;
    c.config.partition_size = partition;
    c.config.num_threads = 256;
    ppb_case_make_key(&c);
    return c;
}

/* The instantiations the built-in kernels launch for a case on a device of
 * compute capability cc (its shared-memory opt-in, 32-wide warps), compiled by
 * NVRTC or (aot) ahead of time. */
static int specs_for_case_built(const ppb_case *c, int cc, int aot, ppb_kernel_spec s[2], int *n, ppb_err *err)
{
    ppb_builtin_launch l;
    int rc = ppb_kernel_launch_for_case(c, cc, 32, ppb_smem_optin_for_cc(cc), aot, &l, err);
    memcpy(s, l.spec, sizeof l.spec);
    *n = rc == PPB_OK ? l.n_specs : 0;
    return rc;
}

static int specs_for_case(const ppb_case *c, int cc, ppb_kernel_spec s[2], int *n, ppb_err *err)
{
    return specs_for_case_built(c, cc, 0, s, n, err);
}

static void test_specs_for_case(void **state)
{
    (void)state;
    ppb_case p;
    ppb_case_init(&p, PPB_PREFIX_PREFILL);
    p.shape.query_len = 10;
    p.shape.num_heads = 4;
    p.shape.num_kv_heads = 2;
    p.config.block_m = 64;
    p.config.block_n = 32;
    p.config.num_warps = 4;
    ppb_kernel_spec s[2];
    int n = 0;
    ppb_err err = {{0}};
    /* path auto: tensor cores from compute capability 8.0 on, not below. */
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, PPB_KSPEC_PREFILL);
    assert_int_equal(s[0].use_mma, 1);
    assert_int_equal(s[0].head_dim, 128);
    assert_int_equal(s[0].block_m, 64);
    assert_int_equal(s[0].block_n, 32);
    assert_int_equal(s[0].dtype, PPB_BF16);
    assert_int_equal(specs_for_case(&p, 70, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, 0);
    p.config.path = PPB_PATH_SIMT;
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, 0);
    p.config.path = PPB_PATH_MMA;
    assert_int_equal(specs_for_case(&p, 75, s, &n, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "path=mma needs compute capability 8.0"));

    /* path auto on compute capability 9.0: wgmma for every config it runs (where it was
     * measured faster), mma.sync for the others and on any other device. */
    p.config.path = PPB_PATH_AUTO;
    p.config.block_m = 128;
    p.config.block_n = 64;
    p.config.num_warps = 8;
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, PPB_KSPEC_MMA_WGMMA);
    /* kernels built ahead of time have no wgmma path: auto takes mma.sync, path=wgmma is refused */
    assert_int_equal(specs_for_case_built(&p, 90, 1, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, 1);
    p.config.path = PPB_PATH_WGMMA;
    assert_int_equal(specs_for_case_built(&p, 90, 1, s, &n, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "ahead-of-time kernels have no wgmma path"));
    p.config.path = PPB_PATH_AUTO;
    assert_int_equal(specs_for_case(&p, 80, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, 1);
    assert_int_equal(specs_for_case(&p, 100, s, &n, &err), PPB_OK);   /* sm_90a code runs on 9.0 only */
    assert_int_equal(s[0].use_mma, 1);
    p.config.num_warps = 4;   /* 128 rows on 4 warps: no wgmma layout, so mma.sync */
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, 1);
    p.config.block_m = 64;   /* 64-row tiles on 4 warps: a wgmma layout, so wgmma */
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, PPB_KSPEC_MMA_WGMMA);
    p.config.block_n = 32;   /* BLOCK_N 32: no wgmma N, so mma.sync */
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, 1);
    p.config.block_n = 64;
    p.config.path = PPB_PATH_WGMMA;   /* asked for: planned as asked */
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_OK);
    assert_int_equal(s[0].use_mma, PPB_KSPEC_MMA_WGMMA);
    assert_int_equal(specs_for_case(&p, 80, s, &n, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "path=wgmma needs compute capability 9.0"));
    p.config.block_n = 32;
    assert_int_equal(specs_for_case(&p, 90, s, &n, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "wgmma path: BLOCK_N=32"));

    /* decode v1: one kernel, PARTITION_SIZE 0 whatever the config says. */
    ppb_case d1 = decode_case(1, 512);
    d1.config.path = PPB_PATH_WGMMA;   /* a prefill-only path */
    assert_int_equal(specs_for_case(&d1, 90, s, &n, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "the decode kernels have no wgmma path"));
    d1.config.path = PPB_PATH_AUTO;
    assert_int_equal(specs_for_case(&d1, 90, s, &n, &err), PPB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, PPB_KSPEC_DECODE);
    assert_int_equal(s[0].partition_size, 0);
    assert_int_equal(s[0].page_size, 16);
    assert_int_equal(s[0].num_threads, 256);
    /* decode v2: main + reduce with the kernel's partition size (never the host's). */
    ppb_case d2 = decode_case(2, 256);
    d2.config.host_partition_size = 512;
    assert_int_equal(specs_for_case(&d2, 90, s, &n, &err), PPB_OK);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].partition_size, 256);
    assert_int_equal(s[1].kind, PPB_KSPEC_DECODE_REDUCE);
    assert_int_equal(s[1].partition_size, 256);
    assert_int_equal(s[1].num_threads, 256);
    assert_int_equal(s[1].use_mma, 0);
    assert_int_equal(s[1].page_size, 0);
}

static void test_list_sorted_without_duplicates(void **state)
{
    (void)state;
    ppb_kernel_spec_list l = {0};
    ppb_err err = {{0}};
    const char *lines[] = {
        "decode dtype=bf16 head_dim=128 page_size=16 num_threads=128 partition_size=512 mma=1",
        "prefill dtype=bf16 head_dim=128 block_m=128 block_n=64 num_warps=8 mma=1",
        "prefill dtype=bf16 head_dim=64 block_m=128 block_n=64 num_warps=8 mma=1",
        "decode dtype=bf16 head_dim=128 page_size=16 num_threads=128 partition_size=512 mma=1",
        "prefill dtype=bf16 head_dim=128 block_m=128 block_n=64 num_warps=8 mma=1",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        ppb_kernel_spec s;
        assert_int_equal(ppb_kernel_spec_parse(lines[i], &s, &err), PPB_OK);
        assert_int_equal(ppb_kernel_spec_list_add(&l, &s), PPB_OK);
    }
    assert_int_equal(l.n, 3);
    assert_int_equal(l.items[0].kind, PPB_KSPEC_PREFILL);
    assert_int_equal(l.items[0].head_dim, 64);
    assert_int_equal(l.items[1].head_dim, 128);
    assert_int_equal(l.items[2].kind, PPB_KSPEC_DECODE);
    for (int i = 1; i < l.n; i++)
        assert_true(ppb_kernel_spec_compare(&l.items[i - 1], &l.items[i]) < 0);
    ppb_kernel_spec_list_free(&l);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The list comes from the suite through the matrix: excluded cases bring no
 * kernel, shapes that differ only in lengths share one, mma depends on cc. */
static void test_list_from_suite(void **state)
{
    (void)state;
    char dir[] = "/tmp/ppb_kspec_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    write_file(path, "name: t\n"
                     "kernel: prefix_prefill\n"
                     "shapes:\n"
                     "  - {query_len: [16, 32], context_len: [0, 64], heads: \"4/2\", head_dim: [64, 128], dtype: fp16}\n"
                     "configs:\n"
                     "  - {block_m: [64, 128], block_n: 64, num_warps: 4}\n"
                     "  - {block_m: 64, block_n: 32, num_warps: 4, path: mma}\n"
                     "exclude:\n"
                     "  - {head_dim: 128, block_m: 128}\n");
    ppb_kernel_spec_list l = {0};
    long skipped = -1;
    ppb_err err = {{0}};
    const char *paths[] = {path};
    int rc = ppb_kernel_list_suites(paths, 1, 90, 0, 0, 0, &l, &skipped, &err);
    if (rc)
        fail_msg("%s", err.msg);
    /* d64: 64/64 (wgmma), 128/64, 64/32(mma); d128: 64/64 (wgmma), 64/32(mma); the fp16 input
     * generator, last */
    assert_int_equal(l.n, 6);
    assert_int_equal(skipped, 0);
    assert_int_equal(l.items[5].kind, PPB_KSPEC_INPUT_FILL);
    assert_int_equal(l.items[5].dtype, PPB_KDTYPE_FP16);
    for (int i = 0; i < l.n - 1; i++) {
        /* on sm_90 auto takes wgmma where it has a layout (64 rows on 4 warps, BLOCK_N 64), else mma */
        assert_int_equal(l.items[i].use_mma, l.items[i].block_m == 64 && l.items[i].block_n == 64 ? 2 : 1);
        assert_false(l.items[i].head_dim == 128 && l.items[i].block_m == 128);
    }
    ppb_kernel_spec_list_free(&l);

    /* On sm_70 the mma configs are left out (and counted), the rest are SIMT. */
    rc = ppb_kernel_list_suites(paths, 1, 70, 0, 0, 0, &l, &skipped, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(l.n, 4);
    assert_int_equal(skipped, 8); /* 2 q x 2 ctx x 2 head_dim of the path=mma config */
    assert_int_equal(l.items[3].kind, PPB_KSPEC_INPUT_FILL);
    for (int i = 0; i < l.n - 1; i++) {
        assert_int_equal(l.items[i].use_mma, 0);
        assert_int_equal(l.items[i].block_n, 64);
    }
    ppb_kernel_spec_list_free(&l);

    /* A list file: comments and blank lines ignored, errors name the line. */
    char list_path[256];
    snprintf(list_path, sizeof list_path, "%s/k.txt", dir);
    write_file(list_path, "# kernels\n\nprefill dtype=fp16 head_dim=64 block_m=16 block_n=32 num_warps=4 mma=0\n"
                          "decode_reduce dtype=bf16 head_dim=64 num_threads=128 partition_size=512 # v2\n");
    assert_int_equal(ppb_kernel_list_read(list_path, &l, &err), PPB_OK);
    assert_int_equal(l.n, 2);
    ppb_kernel_spec_list_free(&l);
    write_file(list_path, "prefill dtype=fp16 head_dim=64 block_m=16 block_n=32 num_warps=4 mma=0\nprefill x=1\n");
    assert_int_equal(ppb_kernel_list_read(list_path, &l, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "k.txt:2:"));
    ppb_kernel_spec_list_free(&l);
    unlink(list_path);
    unlink(path);
    rmdir(dir);
}

/* path=auto takes the portable path where the tensor-core plan refuses the
 * tile, and says why; an explicit path=mma is refused instead; the launch
 * shape comes from the plan. */
static void test_launch_for_case_uses_the_plans(void **state)
{
    (void)state;
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = 2;
    c.shape.query_len = 100;
    c.shape.context_len = 37;
    c.shape.num_heads = 8;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.config.block_m = 16; /* 4 rows per warp with 4 warps: below one m16 tile */
    c.config.block_n = 32;
    c.config.num_warps = 4;
    ppb_case_make_key(&c);
    ppb_builtin_launch l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_kernel_launch_for_case(&c, 90, 32, 232448, 0, &l, &err), PPB_OK);
    assert_int_equal(l.use_mma, 0);
    assert_non_null(strstr(l.note, "path auto ran simt"));
    assert_non_null(strstr(l.note, "rows per warp"));
    assert_int_equal(l.n_specs, 1);
    assert_int_equal(l.spec[0].use_mma, 0);
    assert_int_equal(l.plan[0].block[0], 4 * 32);
    assert_true(l.plan[0].grid[0] * l.plan[0].grid[1] * l.plan[0].grid[2] > 0);
    ppb_kernel_view v;
    ppb_kernel_view_of_case(&c, &v);
    assert_int_equal(v.prefill.max_query_len, 100);
    assert_int_equal(v.prefill.max_blocks_per_seq, 3); /* 37 tokens in 16-token pages */
    assert_int_equal(v.prefill_cfg.path, PPBK_PATH_AUTO);
    c.config.path = PPB_PATH_SIMT; /* asked for: planned as asked, no note */
    assert_int_equal(ppb_kernel_launch_for_case(&c, 90, 32, 232448, 0, &l, &err), PPB_OK);
    assert_string_equal(l.note, "");
    c.config.path = PPB_PATH_MMA;
    assert_int_equal(ppb_kernel_launch_for_case(&c, 90, 32, 232448, 0, &l, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "rows per warp"));

    /* Decode v2 with a host/kernel mismatch: the kernel's partition count in the
     * arguments, the host's beside it, and a reduce launch. */
    ppb_case d;
    ppb_case_init(&d, PPB_PAGED_ATTENTION);
    d.shape.batch = 3;
    d.shape.seq_len = 1000;
    d.shape.num_heads = 8;
    d.shape.num_kv_heads = 1;
    d.config.version = 2;
    d.config.partition_size = 256;
    d.config.host_partition_size = 512;
    ppb_case_make_key(&d);
    assert_int_equal(ppb_kernel_launch_for_case(&d, 90, 32, 232448, 0, &l, &err), PPB_OK);
    ppb_kernel_view_of_case(&d, &v);
    assert_int_equal(v.decode.max_num_partitions, 4); /* the kernel's count, not the host's 2 */
    assert_int_equal(v.decode_cfg.partition_size, 256);
    assert_int_equal(l.n_specs, 2);
    assert_true(l.plan[1].block[0] > 0);
    /* Too little shared memory for anything: refused with the plan's words. */
    assert_int_equal(ppb_kernel_launch_for_case(&d, 90, 32, 1024, 0, &l, &err), PPB_EREFUSED);
    assert_true(strlen(err.msg) > 0);
}

/* num_stages is Triton's knob; the built-in prefill kernel has none (its K/V
 * buffering is its own, per path). A case that sets it is refused on every path,
 * NVRTC or ahead of time, with the reason, never planned as if it had been
 * honoured; at 0, the implementation's own choice, the plan is what it was. */
static void test_builtin_plan_refuses_num_stages(void **state)
{
    (void)state;
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.query_len = 100;
    c.shape.num_heads = 8;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.config.block_m = 64;
    c.config.block_n = 64;
    c.config.num_warps = 4;
    ppb_case_make_key(&c);
    ppb_builtin_launch at_default, l;
    ppb_err err = {{0}};
    const int paths[] = {PPB_PATH_AUTO, PPB_PATH_SIMT, PPB_PATH_MMA, PPB_PATH_WGMMA};
    for (size_t p = 0; p < sizeof paths / sizeof *paths; p++) {
        for (int aot = 0; aot <= 1; aot++) {
            c.config.path = paths[p];
            c.config.num_stages = 0;
            int rc_default = ppb_kernel_launch_for_case(&c, 90, 32, 232448, aot, &at_default, &err);
            assert_true(rc_default == PPB_OK || (aot && paths[p] == PPB_PATH_WGMMA));
            for (int stages = 1; stages <= 8; stages++) {
                c.config.num_stages = stages;
                memset(&err, 0, sizeof err);
                assert_int_equal(ppb_kernel_launch_for_case(&c, 90, 32, 232448, aot, &l, &err), PPB_EREFUSED);
                char want[256];
                snprintf(want, sizeof want,
                         "num_stages=%d: the built-in prefix_prefill kernel has no num_stages (a knob of other "
                         "implementations, such as vllm-triton's); it runs num_stages=0 only, its own choice",
                         stages);
                assert_string_equal(err.msg, want);
                assert_int_equal(l.n_specs, 0); /* nothing planned */
            }
        }
    }
    /* The check alone, as the CPU backend asks it, and decode (no such parameter yet). */
    ppb_kernel_view v;
    c.config.num_stages = 0;
    ppb_kernel_view_of_case(&c, &v);
    assert_int_equal(ppb_builtin_refuse_prefill_params(&v.prefill_cfg, &err), PPB_OK);
    v.prefill_cfg.num_stages = 2;
    assert_int_equal(ppb_builtin_refuse_prefill_params(&v.prefill_cfg, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "num_stages=2: the built-in prefix_prefill kernel has no num_stages"));
    assert_int_equal(ppb_builtin_refuse_decode_params(&v.decode_cfg, &err), PPB_OK);
}

/* Every suite in the repository yields a non-empty list on both architectures
 * the compile check uses (a suite that cannot be expanded fails here first). */
static void test_repository_suites_list(void **state)
{
    (void)state;
    const char *root = getenv("PPB_SOURCE_DIR");
    if (!root)
        skip();
    const char *names[] = {"prefill.yaml", "decode.yaml", "smoke.yaml"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/suites/%s", root, names[i]);
        if (access(path, R_OK) != 0)
            continue;
        const char *paths[] = {path};
        for (int cc = 70; cc <= 90; cc += 20) {
            ppb_kernel_spec_list l = {0};
            ppb_err err = {{0}};
            int rc = ppb_kernel_list_suites(paths, 1, cc, 0, 0, 0, &l, NULL, &err);
            if (rc)
                fail_msg("%s: %s", path, err.msg);
            assert_true(l.n > 0);
            ppb_kernel_spec_list_free(&l);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_parse_round_trip),
        cmocka_unit_test(test_parse_errors_name_the_problem),
        cmocka_unit_test(test_field_table_matches_the_line),
        cmocka_unit_test(test_specs_for_case),
        cmocka_unit_test(test_list_sorted_without_duplicates),
        cmocka_unit_test(test_list_from_suite),
        cmocka_unit_test(test_repository_suites_list),
        cmocka_unit_test(test_launch_for_case_uses_the_plans),
        cmocka_unit_test(test_builtin_plan_refuses_num_stages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
