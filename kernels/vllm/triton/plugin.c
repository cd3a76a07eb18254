/* vllm-triton: vLLM 0.6.3's Triton prefix-prefill kernel (_fwd_kernel in
 * vllm/attention/ops/prefix_prefill.py) behind ppbench's kernel ABI.
 *
 * prepare.py compiled one cubin per variant (dtype, head_dim, BLOCK, warps,
 * sliding window, the integer arguments' divisibility) and generated
 * variants_table.c; this file loads those cubins in `open` and launches them
 * through the CUDA driver API with the argument list context_attention_fwd
 * passes. Nothing here calls Python. */
#include <cuda.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppb_kernel_abi.h"
#include "variants.h"

/* _fwd_kernel's runtime arguments, in order (prepare.py ARGS). */
enum {
    A_Q, A_K, A_V, A_K_CACHE, A_V_CACHE, A_B_LOC, A_SM_SCALE, A_K_SCALE, A_V_SCALE,
    A_B_START_LOC, A_B_SEQLEN, A_B_CTXLEN, A_BLOCK_SIZE, A_X, A_OUT,
    A_STRIDES,                      /* 23 strides: b_loc (2), q, k, v, out (3 each), k_cache (5), v_cache (4) */
    A_NQPKV = A_STRIDES + 23,       /* num_queries_per_kv */
    A_COUNT
};
_Static_assert(A_COUNT == PPBK_VT_NARGS, "argument list out of step with variants.h");
/* The integer arguments, the ones Triton's JIT specialises on (prepare.py
 * int_args): block_size, x, the 23 strides, num_queries_per_kv. */
#define N_INTS 26
_Static_assert(N_INTS == 2 + (A_NQPKV - A_STRIDES) + 1, "integer arguments out of step");

typedef union argval {
    CUdeviceptr p;
    int32_t i;
    float f;
} argval;

typedef struct loaded {
    CUmodule mod;
    CUfunction fn;
    int registers, static_smem, local_bytes, max_threads;
    char error[200];                /* why this kernel cannot run here; "" when it can */
} loaded;

static struct {
    int open;
    CUdevice device;
    CUcontext ctx;                  /* the device's primary context, the one ppbench's runtime API uses */
    loaded *fwd;                    /* one per ppbk_vt_variants entry */
} g;

static int say(char *why, size_t len, int rc, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static const char *cu_text(CUresult r)
{
    const char *s = NULL;
    return cuGetErrorString(r, &s) == CUDA_SUCCESS && s ? s : "unknown CUDA error";
}

/* ------------------------------------------------------------ argument values */

static int ceil_div(long long a, long long b) { return (int)((a + b - 1) / b); }

/* The integer arguments context_attention_fwd passes for this shape, in
 * argument order without Out: v_cache.shape[3], k_cache.shape[4], the strides
 * of ppbench's contiguous tensors (attention_args.h), num_queries_per_kv.
 * prepare.py int_args computes the same list. */
static void int_args(const ppb_prefill_args *s, long long v[N_INTS])
{
    long long h = s->num_heads, kvh = s->num_kv_heads, d = s->head_dim, page = s->page_size;
    long long i[N_INTS] = {
        page, 8,                                 /* block_size, x */
        s->max_blocks_per_seq, 1,                /* block_table [batch, max_blocks_per_seq] */
        h * d, d, 1,                             /* q [tokens, h, d] */
        kvh * d, d, 1,                           /* k */
        kvh * d, d, 1,                           /* v */
        h * d, d, 1,                             /* out */
        kvh * d * page, d * page, page * 8, 8, 1, /* k_cache [blocks, kvh, d/8, page, 8] */
        kvh * d * page, d * page, page, 1,       /* v_cache [blocks, kvh, d, page] */
        s->num_kv_heads ? h / kvh : 0,           /* num_queries_per_kv */
    };
    memcpy(v, i, sizeof i);
}

/* What Triton's JIT tells integers apart by (prepare.py int_classes). */
static void int_classes(const long long v[N_INTS], char out[N_INTS + 1])
{
    for (int k = 0; k < N_INTS; k++)
        out[k] = v[k] < INT32_MIN || v[k] > INT32_MAX ? 'L' : v[k] == 1 ? '1' : v[k] % 16 == 0 ? 'D' : '.';
    out[N_INTS] = 0;
}

static int find_variant(const ppbk_prefill_config *cfg, const ppb_prefill_args *s)
{
    long long v[N_INTS];
    char cls[N_INTS + 1];
    int_args(s, v);
    int_classes(v, cls);
    int win = cfg->sliding_window > 0 ? cfg->sliding_window : 0; /* vLLM: <= 0 means off */
    for (int i = 0; i < ppbk_vt_n_variants; i++) {
        const ppbk_vt_variant *x = &ppbk_vt_variants[i];
        if (x->dtype == cfg->dtype && x->head_dim == cfg->head_dim && x->block == cfg->block_m &&
            x->num_warps == cfg->num_warps && x->sliding_window == win && strcmp(x->int_classes, cls) == 0)
            return i;
    }
    return -1;
}

/* ------------------------------------------------------------ open / close */

static int load(const ppbk_vt_kernel *k, loaded *l)
{
    CUresult r = cuModuleLoadData(&l->mod, k->cubin);
    if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&l->fn, l->mod, k->name);
    if (r != CUDA_SUCCESS)
        return snprintf(l->error, sizeof l->error, "loading the cubin failed: %s", cu_text(r)), -1;
    cuFuncGetAttribute(&l->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, l->fn);
    cuFuncGetAttribute(&l->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l->fn);
    cuFuncGetAttribute(&l->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, l->fn);
    cuFuncGetAttribute(&l->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, l->fn);
    /* Above 48 KB a kernel must opt in. Do it exactly as Triton's loader does
     * (backends/nvidia/driver.c, loadBinary): prefer shared memory in the L1 /
     * shared carveout and allow the device's whole opt-in less the static part.
     * The carveout changes the kernel's speed: opting in to just `shared`, with
     * no cache preference, left more L1 and ran BLOCK 128 variants 2-10% faster
     * on an H200 than vLLM's own launches (measured with tests/gpu/timing_fidelity.py). */
    int optin = 0;
    cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g.device);
    if (k->shared > 49152 && optin > 49152) {
        if ((r = cuFuncSetCacheConfig(l->fn, CU_FUNC_CACHE_PREFER_SHARED)) != CUDA_SUCCESS ||
            (r = cuFuncSetAttribute(l->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - l->static_smem)) !=
                CUDA_SUCCESS)
            return snprintf(l->error, sizeof l->error, "cannot opt in to %d B of dynamic shared memory: %s",
                            optin - l->static_smem, cu_text(r)), -1;
    }
    return 0;
}

static void vt_close(void)
{
    if (!g.open)
        return;
    cuCtxPushCurrent(g.ctx);
    for (int i = 0; g.fwd && i < ppbk_vt_n_variants; i++)
        if (g.fwd[i].mod)
            cuModuleUnload(g.fwd[i].mod);
    CUcontext dummy;
    cuCtxPopCurrent(&dummy);
    cuDevicePrimaryCtxRelease(g.device);
    free(g.fwd);
    memset(&g, 0, sizeof g);
}

static int vt_open(const ppbk_device *dev, char *why, size_t len)
{
    if (g.open)
        return PPBK_OK;
    if (dev->backend != PPBK_BACKEND_CUDA)
        return say(why, len, PPBK_FAILED, "vllm-triton runs on CUDA devices only");
    if (dev->cc != ppbk_vt_target_arch || dev->warp_size != ppbk_vt_target_warp_size)
        return say(why, len, PPBK_FAILED,
                   "prepared for cc %d (warp %d), this device is cc %d (warp %d): run %s on this machine",
                   ppbk_vt_target_arch, ppbk_vt_target_warp_size, dev->cc, dev->warp_size, ppbk_vt_prepare_cmd);
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGet(&g.device, dev->device_index);
    if (r == CUDA_SUCCESS)
        r = cuDevicePrimaryCtxRetain(&g.ctx, g.device);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "vllm-triton: no CUDA context for device %d: %s", dev->device_index,
                   cu_text(r));
    g.open = 1; /* from here on vt_close undoes what was done */
    g.fwd = calloc((size_t)ppbk_vt_n_variants + 1, sizeof *g.fwd);
    if (!g.fwd) {
        vt_close();
        return say(why, len, PPBK_FAILED, "vllm-triton: out of memory");
    }
    /* A variant that does not load is refused by itself, with the reason. */
    cuCtxPushCurrent(g.ctx);
    for (int i = 0; i < ppbk_vt_n_variants; i++)
        load(&ppbk_vt_variants[i].k, &g.fwd[i]);
    CUcontext dummy;
    cuCtxPopCurrent(&dummy);
    return PPBK_OK;
}

/* ------------------------------------------------------------ prefill ops */

static int prefill_refuse(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *s,
                          char *why, size_t len)
{
    if (dev->backend != PPBK_BACKEND_CUDA)
        return say(why, len, PPBK_REFUSED, "vllm-triton runs on CUDA devices only");
    if (cfg->block_m != cfg->block_n)
        return say(why, len, PPBK_REFUSED,
                   "vLLM 0.6.3 has one BLOCK for BLOCK_M and BLOCK_N: block_m %d != block_n %d", cfg->block_m,
                   cfg->block_n);
    if (cfg->head_dim != s->head_dim || cfg->page_size != s->page_size ||
        cfg->sliding_window != s->sliding_window)
        return say(why, len, PPBK_REFUSED, "config and shape disagree (head_dim %d/%d, page %d/%d, window %d/%d)",
                   cfg->head_dim, s->head_dim, cfg->page_size, s->page_size, cfg->sliding_window,
                   s->sliding_window);
    if (s->num_kv_heads <= 0 || s->num_heads % s->num_kv_heads)
        return say(why, len, PPBK_REFUSED, "num_heads %d is not a multiple of num_kv_heads %d", s->num_heads,
                   s->num_kv_heads);
    /* The kernel computes element offsets in int32 (so does vLLM): beyond 2^31 they
     * wrap. The cache bound assumes ppbench's allocation of batch x
     * max_blocks_per_seq + 1 pages (the ABI does not carry num_blocks). */
    long long rows = (long long)s->batch * s->max_query_len + cfg->block_m;
    long long q_elems = rows * s->num_heads * s->head_dim;
    long long cache_elems = ((long long)s->batch * s->max_blocks_per_seq + 1) * s->num_kv_heads * s->head_dim *
                            s->page_size;
    if (q_elems > INT32_MAX || cache_elems > INT32_MAX)
        return say(why, len, PPBK_REFUSED,
                   "int32 offsets overflow in vLLM's kernel: %lld query elements, %lld cache elements (max %d)",
                   q_elems, cache_elems, INT32_MAX);
    int i = find_variant(cfg, s);
    if (i < 0) {
        int ctx = s->max_blocks_per_seq > 1 ? s->max_blocks_per_seq * s->page_size : 0;
        return say(why, len, PPBK_REFUSED,
                   "not prepared: run %s --case 'prefix_prefill b=%d q=%d ctx=%d h=%d kvh=%d d=%d dtype=%s page=%d "
                   "win=%d bm=%d bn=%d w=%d' (or give it the suite file)",
                   ppbk_vt_prepare_cmd, s->batch, s->max_query_len, ctx, s->num_heads, s->num_kv_heads,
                   s->head_dim, cfg->dtype == PPB_KDTYPE_FP16 ? "fp16" : "bf16", s->page_size, cfg->sliding_window,
                   cfg->block_m, cfg->block_n, cfg->num_warps);
    }
    if (g.open && g.fwd[i].error[0])
        return say(why, len, PPBK_REFUSED, "%s", g.fwd[i].error);
    long smem = (long)ppbk_vt_variants[i].k.shared + (g.open ? g.fwd[i].static_smem : 0);
    if (smem > dev->smem_optin)
        return say(why, len, PPBK_REFUSED, "needs %ld B of shared memory per block, the limit here is %ld B", smem,
                   dev->smem_optin);
    return PPBK_OK;
}

static int prefill_prepare(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *s,
                             ppbk_resources *out, char *why, size_t len)
{
    int i = find_variant(cfg, s);
    if (i < 0)
        return say(why, len, PPBK_REFUSED, "not prepared");
    memset(out, 0, sizeof *out);
    out->dynamic_smem = ppbk_vt_variants[i].k.shared;
    if (g.open) {
        out->registers = g.fwd[i].registers;
        out->static_smem = g.fwd[i].static_smem;
        out->local_bytes = g.fwd[i].local_bytes;
        out->max_threads = g.fwd[i].max_threads;
    }
    return PPBK_OK;
}

/* The kernel parameter array of one launch: each parameter points at the value of its argument. */
static void params_of(const ppbk_vt_kernel *k, argval *vals, void **params)
{
    static argval zero; /* scratch pointers: NULL */
    for (int p = 0; p < k->n_params; p++)
        params[p] = k->params[p] == PPBK_VT_SCRATCH ? (void *)&zero : (void *)&vals[k->params[p]];
}

static int prefill_launch(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *a,
                          void *stream, char *why, size_t len)
{
    (void)dev;
    int i = find_variant(cfg, a);
    if (!g.open || i < 0 || g.fwd[i].error[0])
        return say(why, len, PPBK_REFUSED, "vllm-triton: launch of a config refuse() did not accept");
    const ppbk_vt_kernel *k = &ppbk_vt_variants[i].k;

    /* Pointers: the variants were compiled for 16-byte aligned tensors, as
     * Triton's JIT would specialise for cudaMalloc'ed ones. */
    if (!a->seq_lens)
        return say(why, len, PPBK_FAILED, "vllm-triton: seq_lens is NULL (vLLM's B_Seqlen: the host fills it)");
    const void *ptrs[] = {a->q, a->k, a->v, a->k_cache, a->v_cache, a->out, a->block_table, a->start_loc,
                          a->seq_lens, a->context_lens};
    for (size_t p = 0; p < sizeof ptrs / sizeof ptrs[0]; p++)
        if ((uintptr_t)ptrs[p] % 16)
            return say(why, len, PPBK_FAILED, "vllm-triton: pointer argument %zu is not 16-byte aligned, which "
                       "the prepared kernels assume", p);

    argval v[A_COUNT];
    memset(v, 0, sizeof v);
    v[A_Q].p = (CUdeviceptr)a->q;
    v[A_K].p = (CUdeviceptr)a->k;
    v[A_V].p = (CUdeviceptr)a->v;
    v[A_K_CACHE].p = (CUdeviceptr)a->k_cache;
    v[A_V_CACHE].p = (CUdeviceptr)a->v_cache;
    v[A_B_LOC].p = (CUdeviceptr)a->block_table;
    v[A_SM_SCALE].f = a->sm_scale;
    v[A_K_SCALE].f = 1.0f; /* fp8 cache scales; 1.0 for 16-bit caches, as vLLM passes */
    v[A_V_SCALE].f = 1.0f;
    v[A_B_START_LOC].p = (CUdeviceptr)a->start_loc; /* vLLM: query_start_loc[:-1] */
    v[A_B_SEQLEN].p = (CUdeviceptr)a->seq_lens; /* context + new tokens */
    v[A_B_CTXLEN].p = (CUdeviceptr)a->context_lens;
    v[A_OUT].p = (CUdeviceptr)a->out;
    long long ints[N_INTS];
    int_args(a, ints);
    v[A_BLOCK_SIZE].i = (int32_t)ints[0];
    v[A_X].i = (int32_t)ints[1];
    for (int s = 0; s < 24; s++) /* 23 strides, then num_queries_per_kv */
        v[A_STRIDES + s].i = (int32_t)ints[2 + s];

    void *params[PPBK_VT_NARGS + 8];
    if (k->n_params > (int)(sizeof params / sizeof params[0]))
        return say(why, len, PPBK_FAILED, "vllm-triton: %d kernel parameters", k->n_params);
    params_of(k, v, params);
    /* vLLM's grid: (batch, num_heads, cdiv(max_input_len, BLOCK)). */
    CUresult r = cuLaunchKernel(g.fwd[i].fn, (unsigned)a->batch, (unsigned)a->num_heads,
                       (unsigned)ceil_div(a->max_query_len, cfg->block_m),
                       (unsigned)(k->num_warps * ppbk_vt_target_warp_size), 1, 1, (unsigned)k->shared,
                       (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "vllm-triton: _fwd_kernel launch: %s", cu_text(r));
    return PPBK_OK;
}

/* ------------------------------------------------------------ the table */

static const ppbk_prefill_ops prefill_ops = {prefill_refuse, prefill_launch, prefill_prepare};

__attribute__((visibility("default"))) const ppbk_impl *ppbk_entry(void)
{
    static const ppbk_impl impl = {
        .abi_version = PPBK_ABI_VERSION,
        .struct_size = sizeof(ppbk_impl),
        .name = "vllm-triton",
        .version = ppbk_vt_version,
        .source = ppbk_vt_source,
        .backends = PPBK_BACKEND_CUDA,
        .open = vt_open,
        .close = vt_close,
        .prefill = &prefill_ops,
    };
    return &impl;
}
