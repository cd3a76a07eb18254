/* vllm-triton: a vLLM tree's Triton prefix-prefill kernel (`_fwd_kernel` of
 * prefix_prefill.py, vLLM 0.6.3 to 0.34) and its Triton unified attention for
 * decode (0.9.2 on) behind ppbench's kernel ABI; or, prepared with
 * --prefill-kernel unified or chunked, the unified attention or
 * chunked_prefill_paged_decode (0.8.5 on: prefix prefill for prompt chunks, a
 * paged-attention kernel for one-token sequences) for prefill (mixed batches
 * included), reading keys from a cache its stage writes the new tokens into
 * first, as vLLM's cache write does (kernels/kv_append.h).
 *
 * prepare.py recorded, for each prepared case, the launch the tree's own
 * context_attention_fwd makes (capture.py: grid, warps, every argument by
 * name), compiled the kernels and generated variants_table.c; this file loads
 * those cubins in `open` and replays the recorded launches through the CUDA
 * driver API, pointers bound to ppbench's buffers by role. Nothing here calls
 * Python, and nothing here knows a release's argument list. What `open`
 * loads lives in the context it returns (kernel ABI version 3 on), freed by
 * `close`: nothing at file scope is written. */
#include <cuda.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_append.h"
#include "ppb_kernel_abi.h"
#include "variants.h"

typedef struct loaded {
    CUmodule mod;
    CUfunction fn;
    int registers, static_smem, local_bytes, max_threads;
    char error[200];                /* why this kernel cannot run here; "" when it can */
} loaded;

/* A unified-attention case's own buffers, made by its first prepare (never
 * timed) and kept until close: the scratch the wrapper or vLLM's backend would
 * allocate, and (decode) the query offsets. One set per prepared case, since an
 * A/B proposal alternates two cases of one library without preparing between
 * samples. */
enum { VT_MAX_SCRATCH = 8 };
typedef struct case_buffers {
    int ready;
    CUdeviceptr scratch[VT_MAX_SCRATCH];
    CUdeviceptr query_start;        /* decode: [num_seqs + 1] = 0, 1, ..., num_seqs */
} case_buffers;

/* The staged cache of a staged prefill (kv_append.h), built by `stage` from
 * ppbench's inputs and kept until close or until the slot is needed for other
 * inputs; `from_*` are the inputs it was built from: a launch finds its slot by
 * them, and one on inputs no stage saw is refused, never run on stale values.
 * Several slots, since a proposal prepares each side in several sessions, each
 * on its own inputs, and then alternates their launches without staging again. */
enum { VT_STAGED_SLOTS = 8 };
typedef struct staged_cache {
    CUdeviceptr k, v, table;
    size_t k_bytes, v_bytes, table_bytes;
    const void *from_k, *from_k_cache;
    const int32_t *from_table;
    int from_tokens;
    int variant;                    /* the case shape it was staged for */
} staged_cache;

/* The context `open` returns: the loaded kernels of one device. */
typedef struct vt_ctx {
    CUdevice device;
    CUcontext ctx;                  /* the device's primary context, the one ppbench's runtime API uses */
    int retained;                   /* ctx is retained: release it on close */
    loaded *fwd;                    /* one per ppbk_vt_kernels entry */
    CUdeviceptr ones;               /* PPBK_VT_ROLE_ONES: float 1.0 */
    case_buffers *dec;              /* one per ppbk_vt_decode_variants entry */
    case_buffers *spf;              /* one per ppbk_vt_staged_prefill_variants entry */
    staged_cache staged[VT_STAGED_SLOTS];
    int next_slot;                  /* the slot a stage on new inputs takes (round robin) */
} vt_ctx;

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

/* ------------------------------------------------------------ finding a case's launch */

/* The case's kernel parameters, each by name from the ABI config, in the list's order. */
#define VT_CFG_VALUE(cfg, name, ...) (cfg)->name,

static int knobs_match(const ppbk_vt_variant *x, const ppbk_prefill_config *cfg)
{
    const int want[PPBK_PREFILL_PARAM_COUNT] = {PPBK_PREFILL_PARAMS(VT_CFG_VALUE, cfg)};
    return memcmp(x->knobs, want, sizeof want) == 0;
}

/* " bm=128 bn=128 w=8": the parameters as the case key writes them (one left
 * out at its default where the key omits it). */
#define VT_KEY_TEXT(cfg, name, NAME, key, min, max, def, omits)                                          \
    if ((!(omits) || (cfg)->name != (def)) && n < len)                                                    \
        n += (size_t)snprintf(buf + n, len - n, " %s=%d", key, (cfg)->name);

static void knobs_text(const ppbk_prefill_config *cfg, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    PPBK_PREFILL_PARAMS(VT_KEY_TEXT, cfg)
}

static int facts_match(const ppbk_vt_facts *x, int dtype, int sliding_window, int head_dim, int num_heads,
                       int num_kv_heads, int page_size)
{
    int win = sliding_window > 0 ? sliding_window : 0; /* vLLM: <= 0 means off */
    return x->dtype == dtype && x->head_dim == head_dim && x->num_heads == num_heads &&
           x->num_kv_heads == num_kv_heads && x->page_size == page_size && x->sliding_window == win;
}

static const char *dtype_name(int dtype) { return dtype == PPB_KDTYPE_FP16 ? "fp16" : "bf16"; }

/* What each family's refuse checks first: the device, and a config built for the shape (PPBK_OK or PPBK_REFUSED). */
static int refuse_unless_runnable(const ppbk_device *dev, int cfg_head_dim, int cfg_page_size, int cfg_window,
                                  int head_dim, int page_size, int window, char *why, size_t len)
{
    if (dev->backend != PPBK_BACKEND_CUDA)
        return say(why, len, PPBK_REFUSED, "%s runs on CUDA devices only", ppbk_vt_name);
    if (cfg_head_dim != head_dim || cfg_page_size != page_size || cfg_window != window)
        return say(why, len, PPBK_REFUSED, "config and shape disagree (head_dim %d/%d, page %d/%d, window %d/%d)",
                   cfg_head_dim, head_dim, cfg_page_size, page_size, cfg_window, window);
    return PPBK_OK;
}

static int find_variant(const ppbk_prefill_config *cfg, const ppb_prefill_args *s)
{
    for (int i = 0; i < ppbk_vt_n_variants; i++) {
        const ppbk_vt_variant *x = &ppbk_vt_variants[i];
        if (facts_match(&x->facts, cfg->dtype, cfg->sliding_window, s->head_dim, s->num_heads, s->num_kv_heads,
                        s->page_size) &&
            x->batch == s->batch && x->max_query_len == s->max_query_len &&
            x->max_blocks_per_seq == s->max_blocks_per_seq && (ppbk_vt_from_wrapper || knobs_match(x, cfg)))
            return i;
    }
    return -1;
}

/* ------------------------------------------------------------ open / close */

static int load(const vt_ctx *vt, const ppbk_vt_kernel *k, loaded *l)
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
    cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, vt->device);
    if (k->shared > 49152 && optin > 49152) {
        if ((r = cuFuncSetCacheConfig(l->fn, CU_FUNC_CACHE_PREFER_SHARED)) != CUDA_SUCCESS ||
            (r = cuFuncSetAttribute(l->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - l->static_smem)) !=
                CUDA_SUCCESS)
            return snprintf(l->error, sizeof l->error, "cannot opt in to %d B of dynamic shared memory: %s",
                            optin - l->static_smem, cu_text(r)), -1;
    }
    return 0;
}

/* Call with the context current. */
static void free_case_buffers(case_buffers *d)
{
    for (int i = 0; i < VT_MAX_SCRATCH; i++)
        if (d->scratch[i])
            cuMemFree(d->scratch[i]);
    if (d->query_start)
        cuMemFree(d->query_start);
    memset(d, 0, sizeof *d);
}

static void free_staged(staged_cache *st)
{
    if (st->k)
        cuMemFree(st->k);
    if (st->v)
        cuMemFree(st->v);
    if (st->table)
        cuMemFree(st->table);
    memset(st, 0, sizeof *st);
}

/* Undo what open did (any part of it) and free the context. */
static void vt_close(void *ctx)
{
    vt_ctx *vt = ctx;
    if (!vt)
        return;
    if (vt->retained) {
        cuCtxPushCurrent(vt->ctx);
        for (int i = 0; vt->fwd && i < ppbk_vt_n_kernels; i++)
            if (vt->fwd[i].mod)
                cuModuleUnload(vt->fwd[i].mod);
        if (vt->ones)
            cuMemFree(vt->ones);
        for (int i = 0; vt->dec && i < ppbk_vt_n_decode_variants; i++)
            free_case_buffers(&vt->dec[i]);
        for (int i = 0; vt->spf && i < ppbk_vt_n_staged_prefill_variants; i++)
            free_case_buffers(&vt->spf[i]);
        for (int i = 0; i < VT_STAGED_SLOTS; i++)
            free_staged(&vt->staged[i]);
        CUcontext dummy;
        cuCtxPopCurrent(&dummy);
        cuDevicePrimaryCtxRelease(vt->device);
    }
    free(vt->fwd);
    free(vt->dec);
    free(vt->spf);
    free(vt);
}

static int vt_open(const ppbk_device *dev, void **ctx, char *why, size_t len)
{
    if (dev->backend != PPBK_BACKEND_CUDA)
        return say(why, len, PPBK_FAILED, "%s runs on CUDA devices only", ppbk_vt_name);
    if (dev->cc != ppbk_vt_target_arch || dev->warp_size != ppbk_vt_target_warp_size)
        return say(why, len, PPBK_FAILED,
                   "prepared for cc %d (warp %d), this device is cc %d (warp %d): run %s on this machine",
                   ppbk_vt_target_arch, ppbk_vt_target_warp_size, dev->cc, dev->warp_size, ppbk_vt_prepare_cmd);
    vt_ctx *vt = calloc(1, sizeof *vt);
    if (!vt)
        return say(why, len, PPBK_FAILED, "%s: out of memory", ppbk_vt_name);
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGet(&vt->device, dev->device_index);
    if (r == CUDA_SUCCESS)
        r = cuDevicePrimaryCtxRetain(&vt->ctx, vt->device);
    if (r != CUDA_SUCCESS) {
        vt_close(vt);
        return say(why, len, PPBK_FAILED, "%s: no CUDA context for device %d: %s", ppbk_vt_name, dev->device_index,
                   cu_text(r));
    }
    vt->retained = 1; /* from here on vt_close undoes what was done */
    vt->fwd = calloc((size_t)ppbk_vt_n_kernels + 1, sizeof *vt->fwd);
    vt->dec = calloc((size_t)ppbk_vt_n_decode_variants + 1, sizeof *vt->dec);
    vt->spf = calloc((size_t)ppbk_vt_n_staged_prefill_variants + 1, sizeof *vt->spf);
    if (!vt->fwd || !vt->dec || !vt->spf) {
        vt_close(vt);
        return say(why, len, PPBK_FAILED, "%s: out of memory", ppbk_vt_name);
    }
    /* A kernel that does not load is refused by itself, with the reason. */
    cuCtxPushCurrent(vt->ctx);
    for (int i = 0; i < ppbk_vt_n_kernels; i++)
        load(vt, &ppbk_vt_kernels[i], &vt->fwd[i]);
    const float one = 1.0f;
    r = cuMemAlloc(&vt->ones, sizeof one);
    if (r == CUDA_SUCCESS)
        r = cuMemcpyHtoD(vt->ones, &one, sizeof one);
    CUcontext dummy;
    cuCtxPopCurrent(&dummy);
    if (r != CUDA_SUCCESS) {
        vt_close(vt);
        return say(why, len, PPBK_FAILED, "%s: cannot allocate the scale tensor: %s", ppbk_vt_name, cu_text(r));
    }
    *ctx = vt;
    return PPBK_OK;
}

/* ------------------------------------------------------------ prefill ops */

/* ctx may be NULL (a caller that never opened): what needs the loaded kernels is then left out. */
static int prefill_refuse(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                          const ppb_prefill_args *s, char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    if (refuse_unless_runnable(dev, cfg->head_dim, cfg->page_size, cfg->sliding_window, s->head_dim, s->page_size,
                               s->sliding_window, why, len))
        return PPBK_REFUSED;
    if (s->num_kv_heads <= 0 || s->num_heads % s->num_kv_heads)
        return say(why, len, PPBK_REFUSED, "num_heads %d is not a multiple of num_kv_heads %d", s->num_heads,
                   s->num_kv_heads);
    int i = find_variant(cfg, s);
    if (i < 0) {
        int context = s->max_blocks_per_seq > 1 ? s->max_blocks_per_seq * s->page_size : 0;
        char knobs[256];
        knobs_text(cfg, knobs, sizeof knobs);
        return say(why, len, PPBK_REFUSED,
                   "not prepared%s: run %s --case 'prefix_prefill b=%d q=%d ctx=%d h=%d kvh=%d d=%d dtype=%s page=%d "
                   "win=%d%s' (or give it the suite file)",
                   !ppbk_vt_from_wrapper && cfg->block_m != cfg->block_n
                       ? " (prepare.py skips block_m != block_n where the tree's wrapper sets both from one BLOCK, "
                         "as vLLM 0.6.x does)"
                       : "",
                   ppbk_vt_prepare_cmd, s->batch, s->max_query_len, context, s->num_heads, s->num_kv_heads,
                   s->head_dim, dtype_name(cfg->dtype), s->page_size, cfg->sliding_window,
                   knobs);
    }
    const ppbk_vt_variant *x = &ppbk_vt_variants[i];
    /* The kernel computes element offsets in int32 (so does vLLM): beyond 2^31 they
     * wrap. A query row's offset is at most the batch's new tokens (num_tokens,
     * kernel ABI 6) plus one block past the last; the cache bound assumes
     * ppbench's allocation of batch x max_blocks_per_seq + 1 pages (refuse comes
     * before the inputs, and num_blocks with them). */
    long long rows = (long long)s->num_tokens + x->launch_block_m;
    long long q_elems = rows * s->num_heads * s->head_dim;
    long long cache_elems = ((long long)s->batch * s->max_blocks_per_seq + 1) * s->num_kv_heads * s->head_dim *
                            s->page_size;
    if (q_elems > INT32_MAX || cache_elems > INT32_MAX)
        return say(why, len, PPBK_REFUSED,
                   "int32 offsets overflow in vLLM's kernel: %lld query elements, %lld cache elements (max %d)",
                   q_elems, cache_elems, INT32_MAX);
    const loaded *l = vt ? &vt->fwd[x->kernel] : NULL;
    if (l && l->error[0])
        return say(why, len, PPBK_REFUSED, "%s", l->error);
    long smem = (long)ppbk_vt_kernels[x->kernel].shared + (l ? l->static_smem : 0);
    if (smem > dev->smem_optin)
        return say(why, len, PPBK_REFUSED, "needs %ld B of shared memory per block, the limit here is %ld B", smem,
                   dev->smem_optin);
    /* Accepted: say what runs where the wrapper chose it rather than the case's knobs. */
    if (ppbk_vt_from_wrapper)
        say(why, len, PPBK_OK, "as the tree's wrapper launches it: BLOCK_M %d, BLOCK_N %d, %d warps, %d stages "
                              "(the case's block_m/block_n/num_warps/num_stages do not apply)",
            x->launch_block_m, x->launch_block_n, x->launch_warps, x->launch_stages);
    else if (cfg->num_stages == 0)
        say(why, len, PPBK_OK, "num_stages 0: the tree's wrapper's choice, %d", x->launch_stages);
    return PPBK_OK;
}

static int prefill_prepare(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                           const ppb_prefill_args *s, ppbk_resources *out, char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    (void)dev;
    int i = find_variant(cfg, s);
    if (i < 0)
        return say(why, len, PPBK_REFUSED, "not prepared");
    const ppbk_vt_variant *x = &ppbk_vt_variants[i];
    memset(out, 0, sizeof *out);
    out->dynamic_smem = ppbk_vt_kernels[x->kernel].shared;
    if (vt) {
        const loaded *l = &vt->fwd[x->kernel];
        out->registers = l->registers;
        out->static_smem = l->static_smem;
        out->local_bytes = l->local_bytes;
        out->max_threads = l->max_threads;
    }
    return PPBK_OK;
}

typedef union argval {
    CUdeviceptr p;
    int32_t i;
    int64_t l;
    float f;
} argval;

/* One recorded launch: each parameter its buffer (roles[role]; a scratch
 * buffer by its number) or its recorded value, on the recorded grid with
 * num_warps x the warp size threads. */
static int launch_one(const vt_ctx *vt, int kernel, const unsigned grid[3], int n_params, const ppbk_vt_param *ps,
                      const void *const roles[PPBK_VT_NROLES], const CUdeviceptr *scratch, int n_scratch,
                      void *stream, char *why, size_t len)
{
    const ppbk_vt_kernel *k = &ppbk_vt_kernels[kernel];
    enum { MAX_PARAMS = 96 };
    argval vals[MAX_PARAMS];
    void *params[MAX_PARAMS];
    if (n_params > MAX_PARAMS)
        return say(why, len, PPBK_FAILED, "%s: %d kernel parameters", ppbk_vt_name, n_params);
    for (int p = 0; p < n_params; p++) {
        const ppbk_vt_param *pa = &ps[p];
        memset(&vals[p], 0, sizeof vals[p]);
        if (pa->kind == PPBK_VT_PTR) {
            const void *ptr = pa->role == PPBK_VT_ROLE_SCRATCH
                                  ? (pa->i >= 0 && pa->i < n_scratch ? (const void *)(uintptr_t)scratch[pa->i] : NULL)
                              : pa->role < PPBK_VT_NROLES ? roles[pa->role]
                                                          : NULL;
            /* The kernels were compiled for 16-byte aligned tensors, as Triton's JIT
             * specialises for cudaMalloc'ed ones. */
            if (!ptr || (uintptr_t)ptr % 16)
                return say(why, len, PPBK_FAILED, "%s: the buffer of parameter %d (role %d) is %s", ppbk_vt_name,
                           p, pa->role, ptr ? "not 16-byte aligned, which the prepared kernels assume" : "NULL");
            vals[p].p = (CUdeviceptr)(uintptr_t)ptr;
        } else if (pa->kind == PPBK_VT_I32) {
            vals[p].i = (int32_t)pa->i;
        } else if (pa->kind == PPBK_VT_I64) {
            vals[p].l = pa->i;
        } else if (pa->kind == PPBK_VT_F32) {
            vals[p].f = pa->f;
        } /* PPBK_VT_NULL: 0 */
        params[p] = &vals[p];
    }
    CUresult r = cuLaunchKernel(vt->fwd[kernel].fn, grid[0], grid[1], grid[2],
                                (unsigned)(k->num_warps * ppbk_vt_target_warp_size), 1, 1, (unsigned)k->shared,
                                (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "%s: %s launch: %s", ppbk_vt_name, k->name, cu_text(r));
    return PPBK_OK;
}

static int prefill_launch(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                          const ppb_prefill_args *a, void *stream, char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    (void)dev;
    int i = find_variant(cfg, a);
    const ppbk_vt_variant *x = i >= 0 ? &ppbk_vt_variants[i] : NULL;
    if (!vt || !x || vt->fwd[x->kernel].error[0])
        return say(why, len, PPBK_REFUSED, "%s: launch of a config refuse() did not accept", ppbk_vt_name);
    /* ppbench's buffers by role */
    const void *roles[PPBK_VT_NROLES] = {
        [PPBK_VT_ROLE_Q] = a->q, [PPBK_VT_ROLE_K] = a->k, [PPBK_VT_ROLE_V] = a->v,
        [PPBK_VT_ROLE_K_CACHE] = a->k_cache, [PPBK_VT_ROLE_V_CACHE] = a->v_cache, [PPBK_VT_ROLE_OUT] = a->out,
        [PPBK_VT_ROLE_BLOCK_TABLE] = a->block_table, [PPBK_VT_ROLE_START_LOC] = a->start_loc,
        [PPBK_VT_ROLE_SEQ_LENS] = a->seq_lens, [PPBK_VT_ROLE_CONTEXT_LENS] = a->context_lens,
        [PPBK_VT_ROLE_ONES] = (const void *)(uintptr_t)vt->ones,
    };
    return launch_one(vt, x->kernel, x->grid, x->n_params, x->params, roles, NULL, 0, stream, why, len);
}

/* ------------------------------------------------------------ unified attention (decode, and prefill when so prepared) */

/* What a unified-attention case's launches need of this device: each kernel
 * loaded and within the shared memory here; on PPBK_OK `note` names them. */
static int check_launches(const vt_ctx *vt, const ppbk_device *dev, const ppbk_vt_launch *launches, int n_launches,
                          int n_scratch, char *note, size_t note_len, char *why, size_t len)
{
    if (n_scratch > VT_MAX_SCRATCH)
        return say(why, len, PPBK_REFUSED, "%d scratch buffers, this plugin keeps at most %d", n_scratch,
                   VT_MAX_SCRATCH);
    size_t n = 0;
    note[0] = '\0';
    for (int l = 0; l < n_launches; l++) {
        const ppbk_vt_launch *la = &launches[l];
        const loaded *ld = vt ? &vt->fwd[la->kernel] : NULL;
        if (ld && ld->error[0])
            return say(why, len, PPBK_REFUSED, "%s", ld->error);
        long smem = (long)ppbk_vt_kernels[la->kernel].shared + (ld ? ld->static_smem : 0);
        if (smem > dev->smem_optin)
            return say(why, len, PPBK_REFUSED, "%s needs %ld B of shared memory per block, the limit here is %ld B",
                       ppbk_vt_kernels[la->kernel].name, smem, dev->smem_optin);
        if (n < note_len)
            n += (size_t)snprintf(note + n, note_len - n, "%s%s grid (%u, %u, %u) %d warps", l ? " + " : "",
                                  ppbk_vt_kernels[la->kernel].name, la->grid[0], la->grid[1], la->grid[2],
                                  ppbk_vt_kernels[la->kernel].num_warps);
    }
    return PPBK_OK;
}

/* The end of the refuse of a case recorded as a list of launches (decode, the
 * staged prefill families), once its variant is found:
 * refused for the variant's reason (a kernel that did not compile), for a
 * cache whose element offsets could wrap (they may be int32 in vLLM's kernel:
 * block number x its stride), or by check_launches; accepted with a note
 * naming the launches and the case's knobs that do not apply. */
static int accept_launches(const vt_ctx *vt, const ppbk_device *dev, const char *refusal, long long cache_elems,
                           const ppbk_vt_launch *launches, int n_launches, int n_scratch, const char *unused_knobs,
                           char *why, size_t len)
{
    if (refusal)
        return say(why, len, PPBK_REFUSED, "%s", refusal);
    if (cache_elems > INT32_MAX)
        return say(why, len, PPBK_REFUSED, "int32 offsets may overflow in vLLM's kernel: %lld cache elements (max %d)",
                   cache_elems, INT32_MAX);
    char note[400];
    int rc = check_launches(vt, dev, launches, n_launches, n_scratch, note, sizeof note, why, len);
    if (rc != PPBK_OK)
        return rc;
    return say(why, len, PPBK_OK, "%s, as the tree's wrapper launches it for vLLM's Triton backend (the case's %s "
                                  "do not apply)", note, unused_knobs);
}

/* The first launch's resources (the main kernel's), and the case's scratch
 * (and, for decode, query offsets 0, 1, ..., num_seqs) made on its first
 * prepare, outside timing, as vLLM's caching allocator would hand them over. */
static int prepare_case(vt_ctx *vt, case_buffers *d, const ppbk_vt_launch *first, int n_scratch,
                        const unsigned long long *scratch_bytes, int query_offsets, ppbk_resources *out, char *why,
                        size_t len)
{
    memset(out, 0, sizeof *out);
    const loaded *ld = &vt->fwd[first->kernel];
    out->dynamic_smem = ppbk_vt_kernels[first->kernel].shared;
    out->registers = ld->registers;
    out->static_smem = ld->static_smem;
    out->local_bytes = ld->local_bytes;
    out->max_threads = ld->max_threads;
    if (d->ready)
        return PPBK_OK;
    CUresult r = cuCtxPushCurrent(vt->ctx);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "%s: %s", ppbk_vt_name, cu_text(r));
    for (int b = 0; b < n_scratch && r == CUDA_SUCCESS; b++)
        r = cuMemAlloc(&d->scratch[b], (size_t)scratch_bytes[b]);
    if (r == CUDA_SUCCESS && query_offsets > 0) {
        size_t qs_bytes = sizeof(int32_t) * ((size_t)query_offsets + 1);
        int32_t *qs = malloc(qs_bytes);
        if (!qs)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        for (int q = 0; qs && q <= query_offsets; q++)
            qs[q] = q;
        if (r == CUDA_SUCCESS)
            r = cuMemAlloc(&d->query_start, qs_bytes);
        if (r == CUDA_SUCCESS)
            r = cuMemcpyHtoD(d->query_start, qs, qs_bytes);
        free(qs);
    }
    if (r == CUDA_SUCCESS)
        d->ready = 1;
    else
        free_case_buffers(d);
    CUcontext dummy;
    cuCtxPopCurrent(&dummy);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "%s: the case's scratch buffers: %s", ppbk_vt_name, cu_text(r));
    return PPBK_OK;
}

static int run_launches(const vt_ctx *vt, const ppbk_vt_launch *launches, int n_launches, const void *const *roles,
                        const case_buffers *d, int n_scratch, void *stream, char *why, size_t len)
{
    for (int l = 0; l < n_launches; l++) {
        const ppbk_vt_launch *la = &launches[l];
        int rc = launch_one(vt, la->kernel, la->grid, la->n_params, la->params, roles, d->scratch, n_scratch, stream,
                            why, len);
        if (rc != PPBK_OK)
            return rc;
    }
    return PPBK_OK;
}

/* ------------------------------------------------------------ decode ops */

static int find_decode_variant(const ppbk_decode_config *cfg, const ppb_decode_args *s)
{
    for (int i = 0; i < ppbk_vt_n_decode_variants; i++) {
        const ppbk_vt_decode_variant *x = &ppbk_vt_decode_variants[i];
        if (facts_match(&x->facts, cfg->dtype, cfg->sliding_window, s->head_dim, s->num_heads, s->num_kv_heads,
                        s->page_size) &&
            x->num_seqs == s->num_seqs && x->max_seq_len == s->max_seq_len &&
            x->max_blocks_per_seq == s->max_blocks_per_seq)
            return i;
    }
    return -1;
}

static int decode_refuse(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *s,
                         char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    if (refuse_unless_runnable(dev, cfg->head_dim, cfg->page_size, cfg->sliding_window, s->head_dim, s->page_size,
                               s->sliding_window, why, len))
        return PPBK_REFUSED;
    int i = find_decode_variant(cfg, s);
    if (i < 0)
        return say(why, len, PPBK_REFUSED,
                   "not prepared: run %s --case 'paged_attention b=%d seq=%d h=%d kvh=%d d=%d dtype=%s page=%d win=%d "
                   "v=1' (or give it the suite file)",
                   ppbk_vt_prepare_cmd, s->num_seqs, s->max_seq_len, s->num_heads, s->num_kv_heads, s->head_dim,
                   dtype_name(cfg->dtype), s->page_size, cfg->sliding_window);
    const ppbk_vt_decode_variant *x = &ppbk_vt_decode_variants[i];
    /* ppbench allocates num_seqs x max_blocks_per_seq + 1 pages */
    long long pages = (long long)s->num_seqs * s->max_blocks_per_seq + 1;
    return accept_launches(vt, dev, x->refusal, pages * s->num_kv_heads * s->head_dim * s->page_size, x->launches,
                           x->n_launches, x->n_scratch, "num_threads and partition_size", why, len);
}

static int decode_prepare(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *s,
                          ppbk_resources *out, char *why, size_t len)
{
    vt_ctx *vt = ctx;
    (void)dev;
    int i = find_decode_variant(cfg, s);
    if (i < 0 || !vt || ppbk_vt_decode_variants[i].refusal)
        return say(why, len, PPBK_REFUSED, "not prepared");
    const ppbk_vt_decode_variant *x = &ppbk_vt_decode_variants[i];
    return prepare_case(vt, &vt->dec[i], &x->launches[0], x->n_scratch, x->scratch_bytes, s->num_seqs, out, why, len);
}

static int decode_launch(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *a,
                         void *stream, char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    (void)dev;
    int i = find_decode_variant(cfg, a);
    if (!vt || i < 0 || !vt->dec[i].ready)
        return say(why, len, PPBK_REFUSED, "%s: launch of a config refuse() did not accept or prepare() did not make "
                   "ready", ppbk_vt_name);
    const ppbk_vt_decode_variant *x = &ppbk_vt_decode_variants[i];
    const void *roles[PPBK_VT_NROLES] = {
        [PPBK_VT_ROLE_Q] = a->q, [PPBK_VT_ROLE_K_CACHE] = a->k_cache, [PPBK_VT_ROLE_V_CACHE] = a->v_cache,
        [PPBK_VT_ROLE_OUT] = a->out, [PPBK_VT_ROLE_BLOCK_TABLE] = a->block_table,
        [PPBK_VT_ROLE_SEQ_LENS] = a->seq_lens, [PPBK_VT_ROLE_ONES] = (const void *)(uintptr_t)vt->ones,
        [PPBK_VT_ROLE_QUERY_START] = (const void *)(uintptr_t)vt->dec[i].query_start,
    };
    return run_launches(vt, x->launches, x->n_launches, roles, &vt->dec[i], x->n_scratch, stream, why, len);
}

/* ------------------------------------------------------------ prefill ops (the staged families) */

static int find_staged_prefill_variant(const ppbk_prefill_config *cfg, const ppb_prefill_args *s)
{
    for (int i = 0; i < ppbk_vt_n_staged_prefill_variants; i++) {
        const ppbk_vt_staged_prefill_variant *x = &ppbk_vt_staged_prefill_variants[i];
        if (facts_match(&x->facts, cfg->dtype, cfg->sliding_window, s->head_dim, s->num_heads, s->num_kv_heads,
                        s->page_size) &&
            x->batch == s->batch && x->max_query_len == s->max_query_len && x->num_tokens == s->num_tokens &&
            x->max_blocks_per_seq == s->max_blocks_per_seq)
            return i;
    }
    return -1;
}

static int staged_prefill_refuse(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                                 const ppb_prefill_args *s, char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    if (refuse_unless_runnable(dev, cfg->head_dim, cfg->page_size, cfg->sliding_window, s->head_dim, s->page_size,
                               s->sliding_window, why, len))
        return PPBK_REFUSED;
    int i = find_staged_prefill_variant(cfg, s);
    if (i < 0)
        return say(why, len, PPBK_REFUSED,
                   "not prepared: run %s with the suite file of this case (prefill b=%d, %d new tokens, longest query "
                   "%d, h=%d kvh=%d d=%d dtype=%s page=%d win=%d)",
                   ppbk_vt_prepare_cmd, s->batch, s->num_tokens, s->max_query_len, s->num_heads, s->num_kv_heads,
                   s->head_dim, dtype_name(cfg->dtype), s->page_size, cfg->sliding_window);
    const ppbk_vt_staged_prefill_variant *x = &ppbk_vt_staged_prefill_variants[i];
    /* the staged cache: at most ppbench's batch x max_blocks_per_seq + 1 pages, and batch x staged_blocks_per_seq more */
    long long pages = (long long)s->batch * (s->max_blocks_per_seq + x->staged_blocks_per_seq) + 1;
    return accept_launches(vt, dev, x->refusal, pages * s->num_kv_heads * s->head_dim * s->page_size, x->launches,
                           x->n_launches, x->n_scratch, "block_m/block_n/num_warps/num_stages", why, len);
}

static int staged_prefill_prepare(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                                  const ppb_prefill_args *s, ppbk_resources *out, char *why, size_t len)
{
    vt_ctx *vt = ctx;
    (void)dev;
    int i = find_staged_prefill_variant(cfg, s);
    if (i < 0 || !vt || ppbk_vt_staged_prefill_variants[i].refusal)
        return say(why, len, PPBK_REFUSED, "not prepared");
    const ppbk_vt_staged_prefill_variant *x = &ppbk_vt_staged_prefill_variants[i];
    return prepare_case(vt, &vt->spf[i], &x->launches[0], x->n_scratch, x->scratch_bytes, 0, out, why, len);
}

/* kv_append.h's copies into the FLASH layout: device-to-device copies on the
 * stream (a token is a row there, in the cache as in k/v). */
typedef struct stage_copy {
    const staged_cache *st;
    const ppb_prefill_args *a;
    size_t row_bytes;
    CUstream stream;
} stage_copy;

static int stage_copy_rows(void *user, int from_new, size_t dst_row, size_t src_row, size_t rows)
{
    const stage_copy *c = user;
    CUdeviceptr k = (CUdeviceptr)(uintptr_t)(from_new ? c->a->k : c->a->k_cache);
    CUdeviceptr v = (CUdeviceptr)(uintptr_t)(from_new ? c->a->v : c->a->v_cache);
    size_t dst = dst_row * c->row_bytes, src = src_row * c->row_bytes, n = rows * c->row_bytes;
    CUresult r = cuMemcpyDtoDAsync(c->st->k + dst, k + src, n, c->stream);
    return r == CUDA_SUCCESS ? (int)cuMemcpyDtoDAsync(c->st->v + dst, v + src, n, c->stream) : (int)r;
}

/* The same into vLLM's paged-attention layout, where a token's key and value
 * are spread over its page (kv_layout.h): the whole cache is copied as it is
 * (a page holds the same elements in both layouts); a run of new tokens,
 * whose pages follow one another in the staged cache, goes through the host:
 * those pages and the tokens downloaded, each element put in its place
 * (ppb_kv_append_rows_paged), the pages uploaded on the stream. Untimed, once
 * per input set. */
static int stage_copy_rows_paged(void *user, int from_new, size_t dst_row, size_t src_row, size_t rows)
{
    const stage_copy *c = user;
    if (!from_new)
        return stage_copy_rows(user, from_new, dst_row, src_row, rows);
    const size_t P = (size_t)c->a->page_size, kvh = (size_t)c->a->num_kv_heads, D = (size_t)c->a->head_dim;
    const size_t row = kvh * D, first = dst_row / P, pages = (dst_row + rows - 1) / P - first + 1;
    const size_t page_bytes = P * row * sizeof(uint16_t), off = first * page_bytes;
    const size_t new_bytes = rows * row * sizeof(uint16_t), new_off = src_row * row * sizeof(uint16_t);
    uint16_t *hk = malloc(pages * page_bytes), *hv = malloc(pages * page_bytes);
    uint16_t *nk = malloc(new_bytes), *nv = malloc(new_bytes);
    CUresult r = hk && hv && nk && nv ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoHAsync(hk, c->st->k + off, pages * page_bytes, c->stream);
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoHAsync(hv, c->st->v + off, pages * page_bytes, c->stream);
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoHAsync(nk, (CUdeviceptr)(uintptr_t)c->a->k + new_off, new_bytes, c->stream);
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoHAsync(nv, (CUdeviceptr)(uintptr_t)c->a->v + new_off, new_bytes, c->stream);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(c->stream);
    if (r == CUDA_SUCCESS) {
        ppb_kv_append_rows_paged(hk, nk, dst_row - first * P, rows, 1, P, kvh, D);
        ppb_kv_append_rows_paged(hv, nv, dst_row - first * P, rows, 0, P, kvh, D);
        /* pageable memory: each call returns once its source is staged, so it may be freed below */
        r = cuMemcpyHtoDAsync(c->st->k + off, hk, pages * page_bytes, c->stream);
        if (r == CUDA_SUCCESS)
            r = cuMemcpyHtoDAsync(c->st->v + off, hv, pages * page_bytes, c->stream);
    }
    free(hk), free(hv), free(nk), free(nv);
    return (int)r;
}

/* The lengths and block table as ppbench filled them, on the host. */
typedef struct host_lengths {
    int32_t *ctx, *qlen, *start, *table;
} host_lengths;

static CUresult download_lengths(const ppb_prefill_args *a, host_lengths *h)
{
    size_t b = (size_t)a->batch, table = b * (size_t)a->max_blocks_per_seq;
    h->ctx = malloc(b * sizeof(int32_t)), h->qlen = malloc(b * sizeof(int32_t));
    h->start = malloc((b + 1) * sizeof(int32_t)), h->table = malloc(table * sizeof(int32_t));
    if (!h->ctx || !h->qlen || !h->start || !h->table)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = cuMemcpyDtoH(h->ctx, (CUdeviceptr)(uintptr_t)a->context_lens, b * sizeof(int32_t));
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoH(h->qlen, (CUdeviceptr)(uintptr_t)a->query_lens, b * sizeof(int32_t));
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoH(h->start, (CUdeviceptr)(uintptr_t)a->start_loc, (b + 1) * sizeof(int32_t));
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoH(h->table, (CUdeviceptr)(uintptr_t)a->block_table, table * sizeof(int32_t));
    return r;
}

/* Device memory of `bytes` in *p, reusing what it holds when big enough. */
static CUresult ensure(CUdeviceptr *p, size_t *have, size_t bytes)
{
    if (*p && *have >= bytes)
        return CUDA_SUCCESS;
    if (*p)
        cuMemFree(*p);
    *p = 0, *have = 0;
    CUresult r = cuMemAlloc(p, bytes);
    if (r == CUDA_SUCCESS)
        *have = bytes;
    return r;
}

/* The slot staged from these inputs, or -1. */
static int staged_slot(const vt_ctx *vt, const ppb_prefill_args *a)
{
    for (int i = 0; i < VT_STAGED_SLOTS; i++) {
        const staged_cache *st = &vt->staged[i];
        if (st->k && st->from_k == a->k && st->from_k_cache == a->k_cache && st->from_table == a->block_table &&
            st->from_tokens == a->num_tokens)
            return i;
    }
    return -1;
}

/* vLLM's cache write before attention, untimed: ppbench's cache copied and
 * each sequence's new tokens written after its context (kv_append.h), in the
 * layout of the prefill ops, with the staged block table the recorded launches
 * index. */
static int staged_prefill_stage(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                                const ppb_prefill_args *a, void *stream, char *why, size_t len)
{
    vt_ctx *vt = ctx;
    (void)dev;
    int i = find_staged_prefill_variant(cfg, a);
    if (!vt || i < 0)
        return say(why, len, PPBK_REFUSED, "%s: stage of a config refuse() did not accept", ppbk_vt_name);
    if (a->num_blocks < 1)
        return say(why, len, PPBK_FAILED, "%s: stage without the cache's page count (kernel ABI 6)", ppbk_vt_name);
    const ppbk_vt_staged_prefill_variant *x = &ppbk_vt_staged_prefill_variants[i];
    CUresult r = cuCtxPushCurrent(vt->ctx);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "%s: %s", ppbk_vt_name, cu_text(r));
    /* Staged for another shape: a run has moved on from those inputs (a proposal's sessions share one shape). */
    for (int k = 0; k < VT_STAGED_SLOTS; k++)
        if (vt->staged[k].k && vt->staged[k].variant != i)
            free_staged(&vt->staged[k]);
    int slot = staged_slot(vt, a);
    if (slot < 0) { /* new inputs: the next slot, round robin */
        slot = vt->next_slot;
        vt->next_slot = (vt->next_slot + 1) % VT_STAGED_SLOTS;
    }
    staged_cache *st = &vt->staged[slot];
    st->from_k = NULL, st->from_k_cache = NULL, st->from_table = NULL; /* stale until this stage succeeds */
    host_lengths h = {0};
    int rc = PPBK_OK;
    /* ppbench made the inputs on this stream: wait for them before reading the lengths */
    r = cuStreamSynchronize((CUstream)stream);
    if (r == CUDA_SUCCESS)
        r = download_lengths(a, &h);
    int mbps = 0;
    if (r == CUDA_SUCCESS) {
        mbps = ppb_kv_append_blocks_per_seq(h.ctx, h.qlen, a->batch, a->page_size);
        if (mbps != x->staged_blocks_per_seq)
            rc = say(why, len, PPBK_FAILED, "%s: these lengths need %d staged pages per sequence, the case was "
                     "prepared for %d: run %s again", ppbk_vt_name, mbps, x->staged_blocks_per_seq,
                     ppbk_vt_prepare_cmd);
    }
    if (r == CUDA_SUCCESS && rc == PPBK_OK) {
        long long pages = ppb_kv_append_num_blocks(h.ctx, h.qlen, a->batch, a->page_size, a->num_blocks);
        size_t row_bytes = (size_t)a->num_kv_heads * (size_t)a->head_dim * sizeof(uint16_t);
        size_t bytes = (size_t)pages * (size_t)a->page_size * row_bytes;
        size_t table_bytes = (size_t)a->batch * (size_t)mbps * sizeof(int32_t);
        int32_t *table = malloc(table_bytes);
        r = table ? ensure(&st->k, &st->k_bytes, bytes) : CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS)
            r = ensure(&st->v, &st->v_bytes, bytes);
        if (r == CUDA_SUCCESS)
            r = ensure(&st->table, &st->table_bytes, table_bytes);
        if (r == CUDA_SUCCESS) {
            ppb_kv_append_block_table(h.table, a->max_blocks_per_seq, h.ctx, h.qlen, a->batch, a->page_size,
                                      a->num_blocks, mbps, table);
            r = cuMemcpyHtoD(st->table, table, table_bytes);
        }
        if (r == CUDA_SUCCESS) {
            stage_copy c = {st, a, row_bytes, (CUstream)stream};
            r = (CUresult)ppb_kv_append_copies(
                table, mbps, h.ctx, h.qlen, h.start, a->batch, a->page_size, a->num_blocks,
                ppbk_vt_prefill_kernel == PPBK_VT_PREFILL_KERNEL_CHUNKED ? stage_copy_rows_paged : stage_copy_rows, &c);
        }
        free(table);
        if (r == CUDA_SUCCESS)
            st->from_k = a->k, st->from_k_cache = a->k_cache, st->from_table = a->block_table,
            st->from_tokens = a->num_tokens, st->variant = i;
        else
            free_staged(st); /* sizes and pointers together, or nothing */
    }
    free(h.ctx), free(h.qlen), free(h.start), free(h.table);
    CUcontext dummy;
    cuCtxPopCurrent(&dummy);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return say(why, len, PPBK_REFUSED, "%s: no memory for the staged cache (the context and new tokens, "
                   "K and V)", ppbk_vt_name);
    if (r != CUDA_SUCCESS)
        return say(why, len, PPBK_FAILED, "%s: staging the cache: %s", ppbk_vt_name, cu_text(r));
    return rc;
}

static int staged_prefill_launch(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                                 const ppb_prefill_args *a, void *stream, char *why, size_t len)
{
    const vt_ctx *vt = ctx;
    (void)dev;
    int i = find_staged_prefill_variant(cfg, a);
    if (!vt || i < 0 || !vt->spf[i].ready)
        return say(why, len, PPBK_REFUSED, "%s: launch of a config refuse() did not accept or prepare() did not make "
                   "ready", ppbk_vt_name);
    int slot = staged_slot(vt, a);
    if (slot < 0)
        return say(why, len, PPBK_FAILED, "%s: launch on inputs its stage did not see", ppbk_vt_name);
    const staged_cache *st = &vt->staged[slot];
    const ppbk_vt_staged_prefill_variant *x = &ppbk_vt_staged_prefill_variants[i];
    const void *roles[PPBK_VT_NROLES] = {
        [PPBK_VT_ROLE_Q] = a->q, [PPBK_VT_ROLE_K] = a->k, [PPBK_VT_ROLE_V] = a->v,
        [PPBK_VT_ROLE_K_CACHE] = (const void *)(uintptr_t)st->k, [PPBK_VT_ROLE_V_CACHE] = (const void *)(uintptr_t)st->v,
        [PPBK_VT_ROLE_OUT] = a->out, [PPBK_VT_ROLE_BLOCK_TABLE] = (const void *)(uintptr_t)st->table,
        [PPBK_VT_ROLE_START_LOC] = a->start_loc, [PPBK_VT_ROLE_SEQ_LENS] = a->seq_lens,
        [PPBK_VT_ROLE_CONTEXT_LENS] = a->context_lens, [PPBK_VT_ROLE_ONES] = (const void *)(uintptr_t)vt->ones,
    };
    return run_launches(vt, x->launches, x->n_launches, roles, &vt->spf[i], x->n_scratch, stream, why, len);
}

/* ------------------------------------------------------------ the table */

/* vLLM's prefix prefill and chunked_prefill_paged_decode read the paged-attention layout, its unified
 * attention the FLASH one (for prefill, the staged families from the cache their stage builds). */
static const ppbk_prefill_ops prefill_ops = {prefill_refuse, prefill_launch, prefill_prepare, PPB_KV_LAYOUT_VLLM,
                                             NULL};
static const ppbk_prefill_ops unified_prefill_ops = {staged_prefill_refuse, staged_prefill_launch,
                                                     staged_prefill_prepare, PPB_KV_LAYOUT_FLASH,
                                                     staged_prefill_stage};
static const ppbk_prefill_ops chunked_prefill_ops = {staged_prefill_refuse, staged_prefill_launch,
                                                     staged_prefill_prepare, PPB_KV_LAYOUT_VLLM,
                                                     staged_prefill_stage};
static const ppbk_decode_ops decode_ops = {decode_refuse, decode_launch, decode_prepare, PPB_KV_LAYOUT_FLASH};

/* A library prepared without prefill (or decode) cases provides no such kernel:
 * ppbench then says so, rather than refusing every case as not prepared. */
#define VT_IMPL(prefill_table, decode_table)                                                                  \
    {.abi_version = PPBK_ABI_VERSION, .struct_size = sizeof(ppbk_impl), .name = ppbk_vt_name,                \
     .version = ppbk_vt_version, .source = ppbk_vt_source, .backends = PPBK_BACKEND_CUDA, .open = vt_open,    \
     .close = vt_close, .prefill = (prefill_table), .decode_v1 = (decode_table)}

__attribute__((visibility("default"))) const ppbk_impl *ppbk_entry(void)
{
    /* indexed by ppbk_vt_prefill_kernel (variants.h's PPBK_VT_PREFILL_KERNEL_* order) */
    static const ppbk_impl both[3] = {VT_IMPL(&prefill_ops, &decode_ops), VT_IMPL(&unified_prefill_ops, &decode_ops),
                                      VT_IMPL(&chunked_prefill_ops, &decode_ops)};
    static const ppbk_impl prefill_only[3] = {VT_IMPL(&prefill_ops, NULL), VT_IMPL(&unified_prefill_ops, NULL),
                                              VT_IMPL(&chunked_prefill_ops, NULL)};
    static const ppbk_impl decode_only = VT_IMPL(NULL, &decode_ops);
    int k = ppbk_vt_prefill_kernel;
    if (!(k == PPBK_VT_PREFILL_KERNEL_PREFIX ? ppbk_vt_n_variants : ppbk_vt_n_staged_prefill_variants))
        return &decode_only;
    return ppbk_vt_n_decode_variants ? &both[k] : &prefill_only[k];
}
