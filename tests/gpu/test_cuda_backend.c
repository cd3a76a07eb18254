/* GPU test of the kernel runtime (kernels/runtime/ppb_kernels.h) and the CUDA backend
 * (harness/run/backend_cuda.c), independent of `ppbench run`.
 *
 *   test_cuda_backend [--cache DIR]   runtime + backend with the stand-in kernels
 *                                     (tests/gpu/standin_kernels: exact, predictable
 *                                     results), then the real kernels against the
 *                                     float64 reference where their sources exist
 *   test_cuda_backend --fault         a kernel fault: the backend must report the
 *                                     lost context, then refuse further work
 * Exit: 0 all passed, 1 a check failed, 77 no CUDA device (CTest: skipped).
 * Needs PPB_SOURCE_DIR (the repository root) for the stand-in kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "attention_args.h"
#include "backend.h"
#include "kernel_case.h"
#include "ppb_kernels.h"
#include "ppb_rng.h"
#include "reference.h"
#include "suite.h"
#include "threads.h"
#include "workload.h"

static int failures, checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char standin_dir[4096];

/* ---- the runtime on its own -------------------------------------------------------- */

static void fill_random(uint16_t *h, size_t n, int dtype)
{
    for (size_t i = 0; i < n; i++)
        h[i] = ppb_rng_input(7, 1, i, dtype, 0);
}

static void test_runtime(const char *cache)
{
    printf("== kernel runtime (NVRTC + driver API) with stand-in kernels\n");
    ppb_kernels_options opt = {0};
    opt.cache_dir = cache;
    opt.source_dir = standin_dir;
    ppb_kernels *k = NULL;
    ppb_err err = {{0}};
    int rc = ppb_kernels_open(&k, &opt, &err);
    CHECK(rc == PPB_OK, "open: %s", err.msg);
    if (rc)
        return;
    ppb_kernels_info ki;
    ppb_kernels_get_info(k, &ki);
    printf("   mechanism %s, %s, sm_%d, warp %d, smem limit %ld, cache %s\n", ki.mechanism, ki.compiler,
           ki.arch, ki.warp_size, ki.smem_optin_limit, ki.cache_dir);

    const ppb_kernel_spec cfg = {.kind = PPB_KSPEC_PREFILL, .dtype = PPB_KDTYPE_FP16, .head_dim = 64,
                                 .block_m = 64, .block_n = 32, .num_warps = 4};
    ppb_kernel *h = NULL;
    ppbk_resources res;
    double t0 = now_s();
    rc = ppb_kernels_get(k, &cfg, &h, &res, &err);
    double first = now_s() - t0;
    CHECK(rc == PPB_OK, "get_prefill: %s", err.msg);
    if (rc)
        goto end;
    printf("   first get %.3f s: regs %d, static smem %d, local %d, max threads %d\n", first, res.registers,
           res.static_smem, res.local_bytes, res.max_threads);
    CHECK(res.static_smem == 64 * 4, "static smem %d (the stand-in holds BLOCK_M floats)", res.static_smem);
    CHECK(res.max_threads == 4 * ki.warp_size, "max threads %d (launch bounds)", res.max_threads);
    CHECK(res.registers > 0 && res.registers <= 255, "registers %d", res.registers);
    ppb_kernel *again = NULL;
    CHECK(ppb_kernels_get(k, &cfg, &again, NULL, &err) == PPB_OK && again == h,
          "a second get returns the loaded kernel");

    /* A launch that needs the opt-in (100 KB dynamic) and copies q to out. */
    const int tokens = 1 << 16, heads = 8, dim = 64;
    size_t n = (size_t)tokens * heads * dim;
    uint16_t *hq = malloc(n * 2), *hout = malloc(n * 2);
    void *dq = NULL, *dout = NULL;
    int32_t *dstart = NULL, hstart[2] = {0, tokens};
    fill_random(hq, n, PPB_FP16);
    cudaMalloc(&dq, n * 2);
    cudaMalloc(&dout, n * 2);
    cudaMalloc((void **)&dstart, sizeof hstart);
    cudaMemcpy(dq, hq, n * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dstart, hstart, sizeof hstart, cudaMemcpyHostToDevice);
    cudaMemset(dout, 0, n * 2);
    ppb_prefill_args a = {0};
    a.q = dq;
    a.out = dout;
    a.start_loc = dstart;
    a.batch = 1;
    a.num_heads = heads;
    a.head_dim = dim;
    ppb_launch_plan plan = {{264, 1, 1}, {128, 1, 1}, 100 * 1024};
    rc = ppb_kernels_launch(h, &plan, &a, sizeof a, NULL, &err);
    CHECK(rc == PPB_OK, "launch with 100 KB dynamic smem: %s", err.msg);
    cudaError_t e = cudaDeviceSynchronize();
    CHECK(e == cudaSuccess, "sync: %s", cudaGetErrorString(e));
    cudaMemcpy(hout, dout, n * 2, cudaMemcpyDeviceToHost);
    CHECK(memcmp(hq, hout, n * 2) == 0, "out == q after the stand-in copy");

    /* Wrong argument struct size and over-limit shared memory are refused before launching. */
    CHECK(ppb_kernels_launch(h, &plan, &a, sizeof a - 4, NULL, &err) == PPB_EINPUT, "args size checked");
    ppb_launch_plan too_big = plan;
    too_big.dynamic_smem = (unsigned)ki.smem_optin_limit + 1024;
    rc = ppb_kernels_launch(h, &too_big, &a, sizeof a, NULL, &err);
    CHECK(rc == PPB_EREFUSED, "over the limit refused (%d): %s", rc, err.msg);
    CHECK(strstr(err.msg, "shared memory") != NULL, "message: %s", err.msg);

    /* Timing on events: 20 copies of 2 x 64 MB. */
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    ppb_launch_plan fast = {{132 * 8, 1, 1}, {128, 1, 1}, 0};
    ppb_kernels_launch(h, &fast, &a, sizeof a, NULL, &err);
    cudaEventRecord(e0, NULL);
    for (int i = 0; i < 20; i++)
        ppb_kernels_launch(h, &fast, &a, sizeof a, NULL, &err);
    cudaEventRecord(e1, NULL);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    double gbps = 2.0 * n * 2 * 20 / (ms / 1e3) / 1e9;
    printf("   stand-in copy: %.3f ms per launch, %.0f GB/s (read + write)\n", ms / 20, gbps);
    CHECK(gbps > 50, "copy bandwidth %.0f GB/s is implausibly low", gbps);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);

    /* Decode v2 through the runtime: main + reduce give q back exactly. */
    const ppb_kernel_spec dc = {.kind = PPB_KSPEC_DECODE, .dtype = PPB_KDTYPE_BF16, .head_dim = 128,
                                .page_size = 16, .num_threads = 128, .partition_size = 256};
    const ppb_kernel_spec dcr = {.kind = PPB_KSPEC_DECODE_REDUCE, .dtype = PPB_KDTYPE_BF16, .head_dim = 128,
                                 .num_threads = 128, .partition_size = 256};
    ppb_kernel *dm = NULL, *dr = NULL;
    ppbk_resources rm, rr;
    rc = ppb_kernels_get(k, &dc, &dm, &rm, &err);
    if (rc == PPB_OK)
        rc = ppb_kernels_get(k, &dcr, &dr, &rr, &err);
    CHECK(rc == PPB_OK && dm && dr, "get_decode v2: %s", err.msg);
    if (rc == PPB_OK) {
        CHECK(rm.static_smem == 128 * 4 && rr.static_smem == 128 * 4, "decode static smem %d / %d",
              rm.static_smem, rr.static_smem);
        int seqs = 4, dh = 8, parts = 16;
        size_t nq = (size_t)seqs * dh * 128;
        uint16_t *q2 = malloc(nq * 2), *o2 = malloc(nq * 2);
        fill_random(q2, nq, PPB_BF16);
        void *dq2, *do2, *dtmp;
        float *des, *dml;
        cudaMalloc(&dq2, nq * 2);
        cudaMalloc(&do2, nq * 2);
        cudaMalloc(&dtmp, nq * parts * 2);
        cudaMalloc((void **)&des, (size_t)seqs * dh * parts * 4);
        cudaMalloc((void **)&dml, (size_t)seqs * dh * parts * 4);
        cudaMemcpy(dq2, q2, nq * 2, cudaMemcpyHostToDevice);
        ppb_decode_args da = {0};
        da.q = dq2;
        da.out = do2;
        da.tmp_out = dtmp;
        da.exp_sums = des;
        da.max_logits = dml;
        da.num_seqs = seqs;
        da.num_heads = dh;
        da.head_dim = 128;
        da.max_num_partitions = parts;
        ppb_launch_plan pm = {{dh, seqs, parts}, {128, 1, 1}, 0}, pr = {{dh, seqs, 1}, {128, 1, 1}, 0};
        CHECK(ppb_kernels_launch(dm, &pm, &da, sizeof da, NULL, &err) == PPB_OK, "main: %s", err.msg);
        CHECK(ppb_kernels_launch(dr, &pr, &da, sizeof da, NULL, &err) == PPB_OK, "reduce: %s", err.msg);
        /* A decode kernel takes ppb_decode_args, not ppb_prefill_args. */
        CHECK(ppb_kernels_launch(dm, &pm, &a, sizeof a, NULL, &err) == PPB_EINPUT, "args type checked");
        e = cudaDeviceSynchronize();
        CHECK(e == cudaSuccess, "sync: %s", cudaGetErrorString(e));
        cudaMemcpy(o2, do2, nq * 2, cudaMemcpyDeviceToHost);
        CHECK(memcmp(q2, o2, nq * 2) == 0, "decode v2 main + reduce give q back");
        cudaFree(dq2);
        cudaFree(do2);
        cudaFree(dtmp);
        cudaFree(des);
        cudaFree(dml);
        free(q2);
        free(o2);
    }
    ppb_kernels_get_info(k, &ki);
    int misses_first = ki.cache_misses;
    ppb_kernels_close(k);
    k = NULL;

    /* A second runtime (as a new process would) finds all three cubins on disk. */
    rc = ppb_kernels_open(&k, &opt, &err);
    CHECK(rc == PPB_OK, "reopen: %s", err.msg);
    if (rc == PPB_OK) {
        t0 = now_s();
        rc = ppb_kernels_get(k, &cfg, &h, &res, &err);
        double cached = now_s() - t0;
        CHECK(rc == PPB_OK, "cached get: %s", err.msg);
        rc = ppb_kernels_get(k, &dc, &dm, NULL, &err);
        if (rc == PPB_OK)
            rc = ppb_kernels_get(k, &dcr, &dr, NULL, &err);
        CHECK(rc == PPB_OK, "cached decode: %s", err.msg);
        ppb_kernels_get_info(k, &ki);
        printf("   second runtime: %d hits, %d misses (first runtime compiled %d); cached get %.4f s\n",
               ki.cache_hits, ki.cache_misses, misses_first, cached);
        CHECK(ki.cache_hits == 3 && ki.cache_misses == 0, "all from the disk cache");
        /* An emulated target's cap: no opt-in past it. */
        ppb_kernels_close(k);
        k = NULL;
        ppb_kernels_options capped = opt;
        capped.smem_cap = 48 * 1024;
        rc = ppb_kernels_open(&k, &capped, &err);
        CHECK(rc == PPB_OK, "open capped: %s", err.msg);
        if (rc == PPB_OK) {
            ppb_kernels_get(k, &cfg, &h, NULL, &err);
            ppb_launch_plan p64 = {{1, 1, 1}, {128, 1, 1}, 64 * 1024};
            rc = ppb_kernels_launch(h, &p64, &a, sizeof a, NULL, &err);
            CHECK(rc == PPB_EREFUSED, "64 KB under a 48 KB cap refused: %s", err.msg);
        }
    }
    cudaFree(dq);
    cudaFree(dout);
    cudaFree(dstart);
    free(hq);
    free(hout);
end:
    ppb_kernels_close(k);
}

/* Wait (up to a minute) until the runtime has `n` kernels loaded; returns the count. */
static int wait_loaded(ppb_kernels *k, int n)
{
    ppb_kernels_info ki;
    for (int i = 0; i < 6000; i++) {
        ppb_kernels_get_info(k, &ki);
        if (ki.loaded >= n)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return ki.loaded;
}

/* Prefetch: the loader threads load each kernel once, whoever asks first; a get
 * racing them gets the same kernel; paused loaders start nothing; a spec that
 * cannot load is left to get. */
static void test_prefetch(void)
{
    printf("== kernel runtime: prefetch on the loader threads\n");
    char dir[] = "/tmp/ppb_prefetch_cache_XXXXXX";
    ppb_kernels_options opt = {0};
    opt.cache_dir = mkdtemp(dir);
    opt.source_dir = standin_dir;
    const ppb_kernel_spec specs[] = {
        {.kind = PPB_KSPEC_PREFILL, .dtype = PPB_KDTYPE_FP16, .head_dim = 64, .block_m = 64, .block_n = 32,
         .num_warps = 4},
        {.kind = PPB_KSPEC_DECODE, .dtype = PPB_KDTYPE_BF16, .head_dim = 128, .page_size = 16,
         .num_threads = 128, .partition_size = 256},
        {.kind = PPB_KSPEC_DECODE_REDUCE, .dtype = PPB_KDTYPE_BF16, .head_dim = 128, .num_threads = 128,
         .partition_size = 256},
        {.kind = PPB_KSPEC_PREFILL, .dtype = PPB_KDTYPE_FP16, .head_dim = 64, .block_m = 64, .block_n = 32,
         .num_warps = 4},                                    /* a repeat: loaded once */
        {.kind = PPB_KSPEC_PREFILL, .dtype = PPB_KDTYPE_FP16}, /* incomplete: never queued */
    };
    ppb_err err = {{0}};
    /* round 0 compiles on the loaders (empty cache); round 1 reads the cache while gets race
     * the loaders, in the reverse order; round 2 prefetches while paused */
    for (int round = 0; round < 3; round++) {
        ppb_kernels *k = NULL;
        int rc = ppb_kernels_open(&k, &opt, &err);
        CHECK(rc == PPB_OK, "open: %s", err.msg);
        if (rc)
            return;
        if (round == 2)
            ppb_kernels_pause(k);
        ppb_kernels_prefetch(k, specs, 5);
        if (round == 2) {
            struct timespec ts = {0, 300 * 1000 * 1000};
            nanosleep(&ts, NULL);
            CHECK(wait_loaded(k, 0) == 0, "round 2: paused loaders loaded nothing");
            ppb_kernels_resume(k);
        }
        if (round != 1)
            CHECK(wait_loaded(k, 3) == 3, "round %d: the loaders loaded the 3 distinct specs", round);
        ppb_kernel *h[3] = {NULL};
        for (int i = 2; i >= 0; i--) {
            rc = ppb_kernels_get(k, &specs[i], &h[i], NULL, &err);
            CHECK(rc == PPB_OK && h[i], "round %d get %d: %s", round, i, err.msg);
        }
        ppb_kernel *again = NULL;
        CHECK(ppb_kernels_get(k, &specs[3], &again, NULL, &err) == PPB_OK && again == h[0],
              "round %d: the repeat is the same kernel", round);
        ppb_kernels_info ki;
        ppb_kernels_get_info(k, &ki);
        CHECK(ki.loaded == 3 && ki.cache_hits + ki.cache_misses == 3,
              "round %d: %d loaded, %d hits + %d misses (each kernel built once)", round, ki.loaded,
              ki.cache_hits, ki.cache_misses);
        CHECK(round == 0 ? ki.cache_misses == 3 : ki.cache_hits == 3, "round %d: %d hits, %d misses", round,
              ki.cache_hits, ki.cache_misses);
        ppb_kernels_close(k);
    }
}

/* ---- the backend ----------------------------------------------------------------------- */

static void print_env(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    printf("   env %s = %s\n", key, value);
}

static ppb_case make_prefill(int batch, int q, int ctx, int h, int kvh, int d, int dtype, int bm, int bn, int w,
                             int path)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = batch;
    c.shape.query_len = q;
    c.shape.context_len = ctx;
    c.shape.num_heads = h;
    c.shape.num_kv_heads = kvh;
    c.shape.head_dim = d;
    c.shape.dtype = dtype;
    c.config.block_m = bm;
    c.config.block_n = bn;
    c.config.num_warps = w;
    c.config.path = path;
    ppb_case_make_key(&c);
    return c;
}

static ppb_case make_decode(int batch, int seq, int h, int kvh, int d, int dtype, int version, int part, int host_part,
                            int path)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = batch;
    c.shape.seq_len = seq;
    c.shape.num_heads = h;
    c.shape.num_kv_heads = kvh;
    c.shape.head_dim = d;
    c.shape.dtype = dtype;
    c.config.version = version;
    c.config.num_threads = 128;
    c.config.partition_size = part;
    c.config.host_partition_size = host_part;
    c.config.path = path;
    ppb_case_make_key(&c);
    return c;
}

/* prepare + run_checked; returns the output (caller frees) or NULL. */
static uint16_t *run_case(const ppb_backend_ops *ops, ppb_backend *b, const ppb_case *c, ppb_workload *w,
                          ppb_result *res, int *rc_out, ppb_err *err)
{
    ppb_result_init(res);
    int rc = ppb_workload_create(w, c, 1234, 1, err);
    if (rc == PPB_OK)
        rc = ops->prepare(b, c, w, res, err);
    uint16_t *out = NULL;
    if (rc == PPB_OK) {
        out = malloc(w->out_elems * 2);
        rc = ops->run_checked(b, out, res, err);
    }
    *rc_out = rc;
    if (rc) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_backend_standins(void)
{
    printf("== CUDA backend with stand-in kernels\n");
    setenv("PPBENCH_KERNEL_SOURCE_DIR", standin_dir, 1);
    const ppb_backend_ops *ops = &ppb_backend_cuda;
    ppb_backend *b = NULL;
    ppb_backend_options bo = {0};
    ppb_err err = {{0}};
    int rc = ops->open(&b, &bo, &err);
    CHECK(rc == PPB_OK, "open: %s", err.msg);
    if (rc)
        return;
    ppb_device_info di;
    ops->device_info(b, &di);
    printf("   %s (%s), cc %d.%d, %d SMs, warp %d, %.1f GB (%.1f free), L2 %lld, smem %d/%d, driver %s, "
           "runtime %s\n",
           di.name, di.uuid, di.cc_major, di.cc_minor, di.sm_count, di.warp_size, di.mem_total / 1e9,
           di.mem_free / 1e9, di.l2_bytes, di.smem_per_block, di.smem_per_block_optin, di.driver, di.runtime);
    CHECK(di.is_gpu && di.sm_count > 0 && di.l2_bytes > 0 && strncmp(di.uuid, "GPU-", 4) == 0, "device info");
    ops->environment(b, print_env, NULL);

    /* Prefill: the stand-in copies q. */
    ppb_case c = make_prefill(2, 100, 50, 8, 2, 128, PPB_BF16, 64, 64, 4, PPB_PATH_SIMT);
    ppb_workload w;
    ppb_result res;
    uint16_t *out = run_case(ops, b, &c, &w, &res, &rc, &err);
    CHECK(rc == PPB_OK, "prefill stand-in: %s", err.msg);
    if (out) {
        CHECK(memcmp(out, w.q, w.out_elems * 2) == 0, "prefill stand-in output == q");
        CHECK(res.resources.known && res.resources.static_smem == 64 * 4, "resources: static %d",
              res.resources.static_smem);
        double ms_cold = 0, ms_hot = 0;
        CHECK(ops->time_sample(b, 3, 1, &ms_cold, &err) == PPB_OK, "cold sample: %s", err.msg);
        CHECK(ops->time_sample(b, 10, 0, &ms_hot, &err) == PPB_OK, "hot sample: %s", err.msg);
        printf("   prefill stand-in: %.4f ms cold, %.4f ms hot\n", ms_cold, ms_hot);
        CHECK(ms_cold > 0 && ms_hot > 0, "positive times");
        free(out);
    }
    ops->release(b);
    ppb_workload_free(&w);

    /* The PARTITION_SIZE mismatch, host 512 / kernel 256: a 2x overrun of all three
     * buffers, caught by the guards, measured to the byte. */
    int S = 4, H = 8, D = 128, seq = 4096;
    c = make_decode(S, seq, H, 1, D, PPB_BF16, 2, 256, 512, PPB_PATH_SIMT);
    out = run_case(ops, b, &c, &w, &res, &rc, &err);
    CHECK(rc == PPB_OK, "mismatch stand-in: %s", err.msg);
    if (out) {
        long long kp = seq / 256, hp = seq / 512;
        printf("   %s\n", res.reason);
        CHECK(res.overrun.detected, "overrun detected");
        CHECK(res.overrun.tmp_out_bytes == (long long)S * H * (kp - hp) * D * 2, "tmp_out overrun %lld",
              res.overrun.tmp_out_bytes);
        CHECK(res.overrun.exp_sums_bytes == (long long)S * H * (kp - hp) * 4, "exp_sums overrun %lld",
              res.overrun.exp_sums_bytes);
        CHECK(res.overrun.max_logits_bytes == (long long)S * H * (kp - hp) * 4, "max_logits overrun %lld",
              res.overrun.max_logits_bytes);
        CHECK(strstr(res.reason, "PARTITION_SIZE mismatch: host 512, kernel 256: kernel wrote") != NULL,
              "reason: %s", res.reason);
        CHECK(memcmp(out, w.q, w.out_elems * 2) == 0, "output still right (the guards absorbed the overrun)");
        free(out);
    }
    ops->release(b);
    ppb_workload_free(&w);

    /* The other direction: buffers too large, no overrun. And a matching v2. */
    c = make_decode(S, seq, H, 1, D, PPB_FP16, 2, 512, 256, PPB_PATH_SIMT);
    out = run_case(ops, b, &c, &w, &res, &rc, &err);
    CHECK(rc == PPB_OK, "reverse mismatch: %s", err.msg);
    if (out) {
        CHECK(!res.overrun.detected, "no overrun");
        CHECK(strstr(res.reason, "no overrun") != NULL, "reason: %s", res.reason);
        CHECK(memcmp(out, w.q, w.out_elems * 2) == 0, "output right");
        free(out);
    }
    ops->release(b);
    ppb_workload_free(&w);

    /* Too large for the device: refused before allocating, with the figures. */
    c = make_decode(256, 1000000, 64, 8, 256, PPB_BF16, 2, 512, 0, PPB_PATH_SIMT);
    ppb_result_init(&res);
    rc = ppb_workload_create(&w, &c, 1, 0, &err);
    CHECK(rc == PPB_OK, "lengths-only workload: %s", err.msg);
    if (rc == PPB_OK) {
        rc = ops->prepare(b, &c, &w, &res, &err);
        CHECK(rc == PPB_EREFUSED && strstr(err.msg, "GB free") != NULL, "memory refusal: %s", err.msg);
        ppb_workload_free(&w);
    }
    ops->close(b);
    unsetenv("PPBENCH_KERNEL_SOURCE_DIR");
}

/* ---- the input generator ----------------------------------------------------------- */

/* kernels/input_fill.cuh against the host's ppb_workload_fill, every tensor bit for
 * bit, garbage slots included (the reference never reads those, so only this sees them). */
static void test_input_fill(void)
{
    printf("== input generator (input_fill) against the host's inputs\n");
    ppb_kernels_options opt = {0};
    ppb_kernels *k = NULL;
    ppb_err err = {{0}};
    int rc = ppb_kernels_open(&k, &opt, &err);
    CHECK(rc == PPB_OK, "open: %s", err.msg);
    if (rc)
        return;
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    const ppb_case cases[] = {
        make_prefill(2, 40, 37, 4, 2, 64, PPB_FP16, 16, 32, 4, PPB_PATH_SIMT),
        make_decode(3, 1001, 8, 2, 128, PPB_BF16, 1, 0, 0, PPB_PATH_SIMT),
        make_decode(2, 333, 4, 1, 256, PPB_FP16, 2, 512, 0, PPB_PATH_SIMT),
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const ppb_case *c = &cases[ci];
        ppb_workload w;
        if ((rc = ppb_workload_create(&w, c, 4242, 1, &err))) {
            CHECK(0, "workload: %s", err.msg);
            continue;
        }
        const ppb_kernel_spec spec = {.kind = PPB_KSPEC_INPUT_FILL, .dtype = c->shape.dtype};
        ppb_kernel *fill = NULL;
        ppbk_resources kres;
        rc = ppb_kernels_get(k, &spec, &fill, &kres, &err);
        CHECK(rc == PPB_OK, "input_fill: %s", err.msg);
        int32_t *valid = NULL;
        cudaMalloc((void **)&valid, sizeof(int32_t) * (size_t)w.num_blocks);
        cudaMemcpy(valid, w.valid_tokens, sizeof(int32_t) * (size_t)w.num_blocks, cudaMemcpyHostToDevice);
        /* The caches also in the FLASH layout: the host's remapped copy is what the device must make. */
        uint16_t *k_flash = ppb_workload_cache_in_layout(&w, 1, PPB_KV_LAYOUT_FLASH);
        uint16_t *v_flash = ppb_workload_cache_in_layout(&w, 0, PPB_KV_LAYOUT_FLASH);
        CHECK(k_flash && v_flash, "%s: no FLASH-layout host copy", c->key);
        struct { const uint16_t *host; size_t n; uint32_t id; int paged, shift, layout; } t[] = {
            {w.q, w.q_elems, PPB_T_Q, 0, 0, PPB_KV_LAYOUT_VLLM},
            {w.k, w.kv_elems, PPB_T_K, 0, 0, PPB_KV_LAYOUT_VLLM},
            {w.v, w.kv_elems, PPB_T_V, 0, 0, PPB_KV_LAYOUT_VLLM},
            {w.k_cache, w.cache_elems, PPB_T_K_CACHE, 1, 3, PPB_KV_LAYOUT_VLLM},
            {w.v_cache, w.cache_elems, PPB_T_V_CACHE, 1, 0, PPB_KV_LAYOUT_VLLM},
            {k_flash, k_flash ? w.cache_elems : 0, PPB_T_K_CACHE, 1, 3, PPB_KV_LAYOUT_FLASH},
            {v_flash, v_flash ? w.cache_elems : 0, PPB_T_V_CACHE, 1, 0, PPB_KV_LAYOUT_FLASH},
        };
        for (size_t ti = 0; rc == PPB_OK && ti < sizeof t / sizeof *t; ti++) {
            if (!t[ti].n)
                continue;
            void *d = NULL;
            uint16_t *back = malloc(t[ti].n * 2);
            cudaMalloc(&d, t[ti].n * 2);
            ppb_fill_args a = {.data = d, .n = t[ti].n, .key = ppb_rng_key(w.seed, t[ti].id),
                               .valid_tokens = t[ti].paged ? valid : NULL,
                               .page_elems = (unsigned long long)c->shape.num_kv_heads * c->shape.head_dim *
                                             c->shape.page_size,
                               .page_size = c->shape.page_size, .slot_shift = t[ti].shift,
                               .layout = t[ti].layout, .num_kv_heads = c->shape.num_kv_heads,
                               .head_dim = c->shape.head_dim};
            /* few blocks: the grid-stride loop covers the rest */
            ppb_launch_plan plan = {{(unsigned)prop.multiProcessorCount, 1, 1}, {128, 1, 1}, 0};
            int lrc = ppb_kernels_launch(fill, &plan, &a, sizeof a, NULL, &err);
            cudaError_t e = cudaMemcpy(back, d, t[ti].n * 2, cudaMemcpyDeviceToHost);
            size_t bad = 0;
            for (size_t i = 0; i < t[ti].n; i++)
                bad += back[i] != t[ti].host[i];
            CHECK(lrc == PPB_OK && e == cudaSuccess && bad == 0, "%s tensor %u (layout %d): %zu of %zu elements differ (%s)",
                  c->key, t[ti].id, t[ti].layout, bad, t[ti].n, lrc ? err.msg : cudaGetErrorString(e));
            free(back);
            cudaFree(d);
        }
        printf("   %s: q, k/v, caches in both layouts (garbage slots included) identical\n", c->key);
        free(k_flash);
        free(v_flash);
        cudaFree(valid);
        ppb_workload_free(&w);
    }
    /* Against the definition itself, where no case's shapes go: a tail of n % 8
     * elements, and pages that are not whole groups of eight (12 elements). */
    struct { size_t n; int paged; unsigned long long page_elems; int page_size, shift; } odd[] = {
        {8 * 1000 + 5, 0, 0, 0, 0},
        {12 * 97 + 7, 1, 12, 4, 0},
        {12 * 97, 1, 12, 4, 1},
    };
    for (size_t oi = 0; oi < sizeof odd / sizeof *odd; oi++) {
        size_t n = odd[oi].n, pages = (n + odd[oi].page_elems - 1) / (odd[oi].page_elems ? odd[oi].page_elems : 1);
        int32_t *hvalid = calloc(pages + 1, sizeof *hvalid), *dvalid = NULL;
        uint16_t *back = malloc(n * 2);
        void *d = NULL;
        for (size_t p = 0; p < pages; p++)
            hvalid[p] = (int32_t)(p % (size_t)(odd[oi].page_size + 1));
        cudaMalloc((void **)&dvalid, sizeof(int32_t) * (pages + 1));
        cudaMemcpy(dvalid, hvalid, sizeof(int32_t) * (pages + 1), cudaMemcpyHostToDevice);
        cudaMalloc(&d, n * 2);
        const int dtype = oi == 1 ? PPB_KDTYPE_FP16 : PPB_KDTYPE_BF16;
        const ppb_kernel_spec spec = {.kind = PPB_KSPEC_INPUT_FILL, .dtype = dtype};
        ppb_kernel *fill = NULL;
        ppbk_resources kres;
        rc = ppb_kernels_get(k, &spec, &fill, &kres, &err);
        ppb_fill_args a = {.data = d, .n = n, .key = ppb_rng_key(99, 4), .valid_tokens = odd[oi].paged ? dvalid : NULL,
                           .page_elems = odd[oi].page_elems, .page_size = odd[oi].page_size,
                           .slot_shift = odd[oi].shift};
        ppb_launch_plan plan = {{3, 1, 1}, {64, 1, 1}, 0};
        int lrc = rc ? rc : ppb_kernels_launch(fill, &plan, &a, sizeof a, NULL, &err);
        cudaError_t e = cudaMemcpy(back, d, n * 2, cudaMemcpyDeviceToHost);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            int garbage = odd[oi].paged ? ppb_rng_past_valid(i, (unsigned)odd[oi].shift, (unsigned)odd[oi].page_size,
                                                             hvalid[i / odd[oi].page_elems])
                                        : 0;
            bad += back[i] != ppb_rng_keyed_input(a.key, i, dtype, garbage);
        }
        CHECK(lrc == PPB_OK && e == cudaSuccess && bad == 0, "n %zu, page_elems %llu: %zu elements differ (%s)", n,
              odd[oi].page_elems, bad, lrc ? err.msg : cudaGetErrorString(e));
        cudaFree(d);
        cudaFree(dvalid);
        free(back);
        free(hvalid);
    }
    printf("   tails of n %% 8 and pages of 12 elements: as defined\n");
    ppb_kernels_close(k);
}

/* ---- the real kernels ---------------------------------------------------------------- */

static void check_real(const ppb_backend_ops *ops, ppb_backend *b, const ppb_case *c, const ppb_check_settings *cs)
{
    ppb_workload w;
    ppb_result res;
    ppb_err err = {{0}};
    int rc;
    double t0 = now_s();
    uint16_t *out = run_case(ops, b, c, &w, &res, &rc, &err);
    double t_run = now_s() - t0;
    if (rc == PPB_EREFUSED) {
        printf("   refused  %s: %s\n", c->key, err.msg);
    } else if (rc) {
        CHECK(0, "%s: %s", c->key, err.msg);
    } else {
        ppb_check_result chk;
        rc = ppb_reference_check(&w, out, cs, 99, &chk, &err);
        CHECK(rc == PPB_OK, "reference: %s", err.msg);
        double ms = 0;
        int trc = ops->time_sample(b, 1, 1, &ms, &err);
        printf("   %-4s %s: max abs %.3g, rel L2 %.3g, %ld rows, %ld unwritten, %ld non-finite; regs %d, smem "
               "%d+%d; %.3f ms cold; prepare+run %.1f s%s%s\n",
               chk.pass ? "ok" : "WRONG", c->key, chk.max_abs_err, chk.rel_l2_err, chk.rows_checked, chk.unwritten,
               chk.nonfinite, res.resources.registers, res.resources.static_smem, res.resources.dynamic_smem, ms,
               t_run, res.reason[0] ? "; " : "", res.reason);
        CHECK(chk.pass, "%s matches the reference", c->key);
        /* The real kernel's overrun, to the byte: every sequence has all its
         * partitions when the lengths are equal. */
        const ppb_config *k = &c->config;
        if (c->kernel == PPB_PAGED_ATTENTION && k->host_partition_size > k->partition_size && !c->shape.ragged) {
            long long seq = c->shape.seq_len, rows = (long long)c->shape.batch * c->shape.num_heads;
            long long extra = (seq + k->partition_size - 1) / k->partition_size -
                              (seq + k->host_partition_size - 1) / k->host_partition_size;
            CHECK(res.overrun.detected && res.overrun.tmp_out_bytes == rows * extra * c->shape.head_dim * 2 &&
                      res.overrun.exp_sums_bytes == rows * extra * 4 && res.overrun.max_logits_bytes == rows * extra * 4,
                  "%s: overrun %lld / %lld / %lld B", c->key, res.overrun.tmp_out_bytes, res.overrun.exp_sums_bytes,
                  res.overrun.max_logits_bytes);
        }
        CHECK(trc == PPB_OK, "timing %s: %s", c->key, err.msg);
        free(out);
    }
    ops->release(b);
    ppb_workload_free(&w);
}

/* Compile every instantiation the cases need, in parallel, into the cache the
 * backend then reads (same sources, options and architecture: same keys). */
typedef struct precompile_job {
    ppb_kernels *rt;
    ppb_kernel_spec_list *list;
    int failed;
} precompile_job;

static void precompile_one(void *ctx, long i, int worker)
{
    (void)worker;
    precompile_job *j = ctx;
    ppb_kernel_compile_info info;
    ppb_err err = {{0}};
    if (ppb_kernels_compile(j->rt, &j->list->items[i], &info, &err) != PPB_OK) {
        printf("   precompile failed: %s\n", err.msg);
        __atomic_add_fetch(&j->failed, 1, __ATOMIC_RELAXED);
    }
}

static void precompile(const ppb_case *cases, int n, const ppb_device_info *di)
{
    int cc = di->cc_major * 10 + di->cc_minor;
    ppb_kernel_spec_list list = {0};
    for (int i = 0; i < n; i++) {
        ppb_builtin_launch l;
        ppb_err err;
        if (ppb_kernel_launch_for_case(&cases[i], cc, di->warp_size, (unsigned)di->smem_per_block_optin, 0, &l, &err))
            continue;
        for (int k = 0; k < l.n_specs; k++)
            ppb_kernel_spec_list_add(&list, &l.spec[k]);
    }
    ppb_kernels_options opt = {0};
    opt.compile_only = 1;
    opt.arch = cc;
    opt.warp_size = di->warp_size;
    opt.mechanism = PPB_KMECH_NVRTC;
    ppb_kernels *rt = NULL;
    ppb_err err = {{0}};
    if (ppb_kernels_open(&rt, &opt, &err) != PPB_OK) {
        printf("   precompile: %s\n", err.msg);
        ppb_kernel_spec_list_free(&list);
        return;
    }
    double t0 = now_s();
    precompile_job j = {rt, &list, 0};
    ppb_parallel_for(list.n, precompile_one, &j);
    ppb_kernels_info ki;
    ppb_kernels_get_info(rt, &ki);
    printf("   precompiled %d instantiations on %d threads in %.1f s (%d compiled, %d from the cache, %.1f s of "
           "NVRTC)\n",
           list.n, ppb_thread_count(), now_s() - t0, ki.cache_misses, ki.cache_hits, ki.compile_seconds);
    CHECK(j.failed == 0, "%d instantiations failed to compile", j.failed);
    ppb_kernels_close(rt);
    ppb_kernel_spec_list_free(&list);
}

static void test_backend_real(void)
{
    printf("== CUDA backend with the real kernels (embedded sources) against the float64 reference\n");
    const ppb_backend_ops *ops = &ppb_backend_cuda;
    ppb_backend *b = NULL;
    ppb_backend_options bo = {0};
    ppb_err err = {{0}};
    int rc = ops->open(&b, &bo, &err);
    CHECK(rc == PPB_OK, "open: %s", err.msg);
    if (rc)
        return;
    ppb_device_info di;
    ops->device_info(b, &di);
    ppb_suite defaults;
    memset(&defaults, 0, sizeof defaults);
    ppb_suite_defaults(&defaults);
    const ppb_check_settings *cs = &defaults.check;
    /* Pass 0 collects the cases and compiles their kernels in parallel; pass 1 runs them. */
    ppb_case all_cases[32];
    int n_all = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int path = PPB_PATH_SIMT; path <= PPB_PATH_MMA; path++) {
            ppb_case cases[] = {
                make_prefill(2, 40, 37, 4, 2, 64, PPB_FP16, 16, 32, 4, path),
                make_prefill(1, 300, 1000, 8, 1, 128, PPB_BF16, 64, 64, 4, path),
                make_prefill(1, 128, 200, 4, 1, 256, PPB_BF16, 64, 64, 4, path),
                make_prefill(1, 512, 100000, 8, 1, 128, PPB_BF16, 128, 64, 8, path), /* 100K context */
                make_decode(3, 1000, 8, 2, 128, PPB_BF16, 1, 0, 0, path),
                make_decode(4, 5000, 8, 1, 128, PPB_FP16, 2, 512, 0, path),
                make_decode(2, 100000, 8, 1, 128, PPB_BF16, 2, 512, 0, path),         /* 100K context */
                make_decode(4, 4096, 8, 1, 128, PPB_BF16, 2, 256, 512, path),         /* the mismatch */
            };
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                if (pass == 0 && n_all < 32)
                    all_cases[n_all++] = cases[i];
                else if (pass == 1)
                    check_real(ops, b, &cases[i], cs);
            }
        }
        if (pass == 0)
            precompile(all_cases, n_all, &di);
    }
    ops->environment(b, print_env, NULL);
    ops->close(b);
}

/* ---- a kernel fault -------------------------------------------------------------------- */

static int test_fault(void)
{
    printf("== a kernel fault loses the context, and the backend says so\n");
    setenv("PPBENCH_KERNEL_SOURCE_DIR", standin_dir, 1);
    const ppb_backend_ops *ops = &ppb_backend_cuda;
    ppb_backend *b = NULL;
    ppb_backend_options bo = {0};
    ppb_err err = {{0}};
    int rc = ops->open(&b, &bo, &err);
    CHECK(rc == PPB_OK, "open: %s", err.msg);
    if (rc)
        return 1;
    /* batch 7 with 7 heads: the stand-in writes to an unmapped address. */
    ppb_case c = make_prefill(7, 16, 0, 7, 7, 64, PPB_FP16, 16, 16, 4, PPB_PATH_SIMT);
    ppb_workload w;
    ppb_result res;
    uint16_t *out = run_case(ops, b, &c, &w, &res, &rc, &err);
    printf("   run: %s\n", err.msg);
    CHECK(rc == PPB_EFAIL, "fault reported as a failure (%d)", rc);
    CHECK(strstr(err.msg, "context is lost") != NULL, "says the context is lost: %s", err.msg);
    free(out);
    ops->release(b);
    ppb_workload_free(&w);
    c = make_prefill(1, 16, 0, 4, 4, 64, PPB_FP16, 16, 16, 4, PPB_PATH_SIMT);
    ppb_workload_create(&w, &c, 1, 1, &err);
    rc = ops->prepare(b, &c, &w, &res, &err);
    printf("   next prepare: %s\n", err.msg);
    CHECK(rc == PPB_EFAIL && strstr(err.msg, "lost earlier") != NULL, "later cases refused: %s", err.msg);
    double ms;
    CHECK(ops->time_sample(b, 1, 0, &ms, &err) == PPB_EFAIL, "timing refused");
    ops->environment(b, print_env, NULL);
    ops->close(b);
    ppb_workload_free(&w);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *cache = NULL;
    int fault = 0, real_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cache") == 0 && i + 1 < argc)
            cache = argv[++i];
        else if (strcmp(argv[i], "--fault") == 0)
            fault = 1;
        else if (strcmp(argv[i], "--real-only") == 0)
            real_only = 1;
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    const char *root = getenv("PPB_SOURCE_DIR");
    snprintf(standin_dir, sizeof standin_dir, "%s/tests/gpu/standin_kernels", root ? root : PPB_SOURCE_DIR);
    char tmp_cache[] = "/tmp/ppb_gpu_cache_XXXXXX";
    if (!cache)
        cache = mkdtemp(tmp_cache);
    double t0 = now_s();
    if (fault) {
        test_fault();
    } else {
        if (!real_only) {
            test_runtime(cache);
            test_prefetch();
            test_backend_standins();
        }
        test_input_fill();
        setenv("PPBENCH_KERNEL_CACHE", cache, 1);
        test_backend_real();
    }
    printf("%d checks, %d failed, %.1f s\n", checks, failures, now_s() - t0);
    return failures ? 1 : 0;
}
