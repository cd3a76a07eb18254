/* A standalone check of one prefix-prefill plugin (kernels/ppb_kernel_abi.h) on a GPU,
 * without ppbench: dlopen the library, run one small case, compare with a float64
 * CPU reference.
 *
 * Case: bf16, batch 2, query_len 100, context_len 300, 8 heads / 2 kv heads, D 128,
 * page 16, shuffled block table, random inputs. New token i of a sequence sees the
 * whole context and new tokens 0..i (attention_args.h).
 *
 * Build: gcc -std=c11 -O2 -I/usr/local/cuda/include tests/gpu/probe_prefill_plugin.c \
 *            -o probe_prefill_plugin -L/usr/local/cuda/lib64/stubs -lcuda -ldl -lm
 * Run:   ./probe_prefill_plugin PLUGIN.so [--block N] [--warps N] [--fp16] [--window N]
 * Exit:  0 max abs error <= 2e-2; 1 above it (or NaN); 2 refused; 3 setup or launch failure. */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/ppb_kernel_abi.h"

enum { BATCH = 2, QLEN = 100, CTX = 300, H = 8, KVH = 2, D = 128, PAGE = 16 };
enum { TOKENS = BATCH * QLEN, MBPS = (CTX + PAGE - 1) / PAGE, NBLOCKS = BATCH * MBPS + 1 };
#define TOLERANCE 2e-2

static void die(int code, const char *what, const char *detail)
{
    fprintf(stderr, "probe: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(code);
}

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *s = NULL;
        cuGetErrorString(r, &s);
        die(3, what, s ? s : "CUDA error");
    }
}

/* xorshift64*: the same inputs on every run. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(void)
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* 16-bit storage, round to nearest even; the reference reads the rounded values back. */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t to_fp16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, e = (u >> 23) & 0xFF, m = u & 0x7FFFFF;
    int ex = (int)e - 127 + 15;
    if (ex <= 0) /* our inputs are |x| <= 1 and never this small except 0: flush */
        return (uint16_t)sign;
    uint32_t r = ((uint32_t)ex << 10) | (m >> 13), rest = m & 0x1FFF;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
        r++;
    return (uint16_t)(sign | r);
}
static double from_fp16(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static int fp16;
static uint16_t store(double x) { return fp16 ? to_fp16((float)x) : to_bf16((float)x); }
static double load(uint16_t h) { return fp16 ? from_fp16(h) : from_bf16(h); }

static CUdeviceptr upload(const void *host, size_t bytes)
{
    CUdeviceptr d;
    check(cuMemAlloc(&d, bytes), "cuMemAlloc");
    if (host)
        check(cuMemcpyHtoD(d, host, bytes), "cuMemcpyHtoD");
    return d;
}

int main(int argc, char **argv)
{
    int block = 128, warps = 8, window = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--block") && i + 1 < argc)
            block = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warps") && i + 1 < argc)
            warps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--window") && i + 1 < argc)
            window = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fp16"))
            fp16 = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            die(3, "usage", "probe_prefill_plugin PLUGIN.so [--block N] [--warps N] [--fp16] [--window N]");
    }
    if (!path)
        die(3, "usage", "probe_prefill_plugin PLUGIN.so [--block N] [--warps N] [--fp16] [--window N]");

    /* The library and its table. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        die(3, "dlopen", dlerror());
    ppbk_entry_fn entry = (ppbk_entry_fn)(uintptr_t)dlsym(lib, PPBK_ENTRY_SYMBOL);
    if (!entry)
        die(3, "no " PPBK_ENTRY_SYMBOL, dlerror());
    const ppbk_impl *impl = entry();
    if (!impl || impl->abi_version != PPBK_ABI_VERSION || impl->struct_size < sizeof(ppbk_impl) || !impl->prefill)
        die(3, "table", "wrong ABI version or size, or no prefill kernel");
    printf("plugin %s: %s\n  version %s\n  source %s\n", path, impl->name, impl->version, impl->source);

    /* The device, as ppbench describes it; the primary context, as ppbench's runtime API uses. */
    CUdevice cud;
    CUcontext ctx;
    int major, minor, warp, sms, optin;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&cud, 0), "cuDeviceGet");
    check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cud), "attribute");
    check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cud), "attribute");
    check(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, cud), "attribute");
    check(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cud), "attribute");
    check(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, cud), "attribute");
    check(cuDevicePrimaryCtxRetain(&ctx, cud), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    ppbk_device dev = {PPBK_BACKEND_CUDA, 0, major * 10 + minor, warp, sms, optin};
    printf("device cc %d, warp %d, %d SMs, %d B shared memory opt-in\n", dev.cc, warp, sms, optin);

    char why[512] = "";
    void *pctx = NULL; /* the plugin's context: from its open, to every call and its close */
    if (impl->open && impl->open(&dev, &pctx, why, sizeof why) != PPBK_OK)
        die(3, "open", why);

    /* Lengths, start_loc and a shuffled block table over NBLOCKS pages (one spare). */
    int32_t qlens[BATCH], clens[BATCH], slens[BATCH], start[BATCH + 1], table[BATCH * MBPS], perm[NBLOCKS];
    for (int i = 0; i < NBLOCKS; i++)
        perm[i] = i;
    for (int i = NBLOCKS - 1; i > 0; i--) {
        int j = (int)((uniform() + 1.0) * 0.5 * (i + 1)) % (i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int b = 0; b < BATCH; b++) {
        qlens[b] = QLEN, clens[b] = CTX, slens[b] = CTX + QLEN, start[b] = b * QLEN;
        for (int p = 0; p < MBPS; p++)
            table[b * MBPS + p] = perm[b * MBPS + p];
    }
    start[BATCH] = TOKENS;

    /* Inputs: new tokens' q/k/v, and each sequence's context k/v written into the paged caches. */
    size_t nq = (size_t)TOKENS * H * D, nkv = (size_t)TOKENS * KVH * D, ncache = (size_t)NBLOCKS * KVH * D * PAGE;
    size_t nctx = (size_t)BATCH * CTX * KVH * D;
    uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2), *out = malloc(nq * 2);
    uint16_t *kc = calloc(ncache, 2), *vc = calloc(ncache, 2);
    uint16_t *kctx = malloc(nctx * 2), *vctx = malloc(nctx * 2); /* [b][pos][kvh][d] */
    if (!q || !k || !v || !out || !kc || !vc || !kctx || !vctx)
        die(3, "out of memory", NULL);
    for (size_t i = 0; i < nq; i++)
        q[i] = store(uniform());
    for (size_t i = 0; i < nkv; i++)
        k[i] = store(uniform()), v[i] = store(uniform());
    for (int b = 0; b < BATCH; b++)
        for (int p = 0; p < CTX; p++)
            for (int h = 0; h < KVH; h++)
                for (int d = 0; d < D; d++) {
                    size_t src = (((size_t)b * CTX + p) * KVH + h) * D + d;
                    kctx[src] = store(uniform()), vctx[src] = store(uniform());
                    size_t blk = (size_t)table[b * MBPS + p / PAGE], off = (size_t)(p % PAGE);
                    kc[(((blk * KVH + h) * (D / 8) + d / 8) * PAGE + off) * 8 + d % 8] = kctx[src];
                    vc[((blk * KVH + h) * D + d) * PAGE + off] = vctx[src];
                }

    ppb_prefill_args a = {0};
    a.batch = BATCH, a.max_query_len = QLEN, a.num_heads = H, a.num_kv_heads = KVH, a.head_dim = D;
    a.page_size = PAGE, a.max_blocks_per_seq = MBPS, a.sliding_window = window;
    a.sm_scale = (float)(1.0 / sqrt((double)D));
    ppbk_prefill_config cfg = {.dtype = fp16 ? PPB_KDTYPE_FP16 : PPB_KDTYPE_BF16, .head_dim = D, .page_size = PAGE,
                               .sliding_window = window, .block_m = block, .block_n = block, .num_warps = warps};
    printf("case: %s, batch %d, query %d, context %d, heads %d/%d, D %d, page %d, window %d; "
           "block %d, warps %d\n", fp16 ? "fp16" : "bf16", BATCH, QLEN, CTX, H, KVH, D, PAGE, window, block, warps);

    int rc = impl->prefill->refuse(pctx, &dev, &cfg, &a, why, sizeof why);
    if (rc != PPBK_OK) {
        printf("refused: %s\n", why);
        return rc == PPBK_REFUSED ? 2 : 3;
    }
    if (impl->prefill->prepare) {
        ppbk_resources res = {0};
        if (impl->prefill->prepare(pctx, &dev, &cfg, &a, &res, why, sizeof why) == PPBK_OK)
            printf("resources: %d registers, %d B static + %d B dynamic shared, %d B local, %d max threads\n",
                   res.registers, res.static_smem, res.dynamic_smem, res.local_bytes, res.max_threads);
    }

    CUdeviceptr dq = upload(q, nq * 2), dk = upload(k, nkv * 2), dv = upload(v, nkv * 2);
    CUdeviceptr dkc = upload(kc, ncache * 2), dvc = upload(vc, ncache * 2), dout = upload(NULL, nq * 2);
    CUdeviceptr dtab = upload(table, sizeof table), dstart = upload(start, sizeof start);
    CUdeviceptr dql = upload(qlens, sizeof qlens), dcl = upload(clens, sizeof clens), dsl = upload(slens, sizeof slens);
    check(cuMemsetD8(dout, 0xFF, nq * 2), "cuMemsetD8"); /* NaN: rows the kernel misses show */
    a.q = (void *)dq, a.k = (void *)dk, a.v = (void *)dv, a.k_cache = (void *)dkc, a.v_cache = (void *)dvc;
    a.out = (void *)dout, a.block_table = (void *)dtab, a.start_loc = (void *)dstart;
    a.query_lens = (void *)dql, a.context_lens = (void *)dcl, a.seq_lens = (void *)dsl;

    CUstream stream;
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    /* Twice, as ppbench's check-then-time does: the second launch must give the same answer. */
    for (int rep = 0; rep < 2; rep++)
        if (impl->prefill->launch(pctx, &dev, &cfg, &a, (void *)stream, why, sizeof why) != PPBK_OK)
            die(3, "launch", why);
    check(cuStreamSynchronize(stream), "kernel");
    check(cuMemcpyDtoH(out, dout, nq * 2), "cuMemcpyDtoH");

    /* float64 reference. */
    double max_err = 0, *s = malloc(sizeof(double) * (CTX + QLEN));
    int group = H / KVH, bad = 0;
    for (int b = 0; b < BATCH; b++)
        for (int i = 0; i < QLEN; i++)
            for (int h = 0; h < H; h++) {
                int kh = h / group, pos = CTX + i, n = 0;
                const uint16_t *qr = q + ((size_t)(start[b] + i) * H + h) * D;
                double m = -INFINITY, l = 0, acc[D] = {0};
                for (int j = 0; j < CTX + i + 1; j++) { /* context 0..CTX-1, then new tokens 0..i */
                    const uint16_t *kr = j < CTX ? kctx + (((size_t)b * CTX + j) * KVH + kh) * D
                                                 : k + ((size_t)(start[b] + j - CTX) * KVH + kh) * D;
                    double dot = 0;
                    for (int d = 0; d < D; d++)
                        dot += load(qr[d]) * load(kr[d]);
                    s[j] = (window > 0 && pos - j >= window) ? -INFINITY : dot * a.sm_scale;
                    m = s[j] > m ? s[j] : m;
                    n++;
                }
                for (int j = 0; j < n; j++) {
                    double p = exp(s[j] - m);
                    const uint16_t *vr = j < CTX ? vctx + (((size_t)b * CTX + j) * KVH + kh) * D
                                                 : v + ((size_t)(start[b] + j - CTX) * KVH + kh) * D;
                    l += p;
                    for (int d = 0; d < D; d++)
                        acc[d] += p * load(vr[d]);
                }
                const uint16_t *o = out + ((size_t)(start[b] + i) * H + h) * D;
                for (int d = 0; d < D; d++) {
                    double e = fabs(load(o[d]) - acc[d] / l);
                    if (isnan(e) && !bad++)
                        printf("NaN at seq %d token %d head %d dim %d\n", b, i, h, d);
                    max_err = e > max_err ? e : max_err;
                }
            }
    printf("max abs err %.3e (tolerance %.0e), %d NaN outputs\n", max_err, TOLERANCE, bad);
    if (impl->close)
        impl->close(pctx);
    free(q), free(k), free(v), free(out), free(kc), free(vc), free(kctx), free(vctx), free(s);
    return max_err <= TOLERANCE && !bad ? 0 : 1;
}
