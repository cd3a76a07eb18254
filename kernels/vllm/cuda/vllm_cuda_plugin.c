/* The "vllm-cuda" implementation (kernels/ppb_kernel_abi.h): vLLM's own CUDA
 * paged attention, v1, v2 and the v2 reduce, built from vLLM's source
 * distribution without PyTorch: 0.6.3 as "vllm-cuda", any release from 0.6.3
 * to 0.22.1 as "vllm-cuda@VERSION" (CMakeLists.txt, PPB_VLLM_CUDA_TREES).
 *
 * The choice (shim headers AND our own launches of vLLM's kernel templates):
 * vllm_instances.cu #includes vLLM's csrc/attention/attention_kernels.cu
 * from the source tree (nothing of vLLM is copied here), with
 * declaration-only torch/ATen/c10 shim headers (shim/) so the file parses,
 * and instantiates the kernels; this file launches them itself. Why not
 * vLLM's own launchers: they are torch functions (tensors, TORCH_CHECK
 * exceptions, PyTorch's current stream) and instantiate every head size;
 * vllm_instances.cu has the details. Every launch below repeats the
 * arithmetic of vLLM's paged_attention_v1_launcher / _v2_launcher
 * (attention_kernels.cu in 0.6.3, paged_attention_v1.cu / _v2.cu from 0.6.4
 * to 0.22.1, the same lines), quoted next to each line.
 *
 * Plain C and the CUDA runtime API at the CUDA 10.2 level (cudaLaunchKernel,
 * cudaFuncGetAttributes, cudaFuncSetAttribute, cudaDeviceGetAttribute), like
 * kernels/runtime/kernels_aot.cu, so other toolchains can build the same file. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "ppb_kernel_abi.h"
#include "vllm_kernels.h"

/* The implementation's name and the release it was built from (CMakeLists.txt
 * passes both; the defaults are the plain "vllm-cuda" of 0.6.3). */
#ifndef PPB_VLLM_IMPL_NAME
#define PPB_VLLM_IMPL_NAME "vllm-cuda"
#endif
#ifndef PPB_VLLM_VERSION
#define PPB_VLLM_VERSION "0.6.3"
#endif
#define PPB_VLLM_RELEASE "vLLM " PPB_VLLM_VERSION
#ifndef PPB_VLLM_SOURCE_DESC
#define PPB_VLLM_SOURCE_DESC PPB_VLLM_RELEASE " source distribution (path and sha256 not recorded by the build)"
#endif
#ifndef PPB_VLLM_CUDA_ARCHS
#define PPB_VLLM_CUDA_ARCHS "unknown"
#endif

/* A known effect of real work (calibrate --work-impl vllm-cuda-work;
 * docs/STATISTICS.md): a build with PPB_VLLM_WORK_PERCENT=N launches the
 * kernels a second time over the first N% of the sequences (the nearest whole
 * number, at least one), after the case's own launch. Those programs write the
 * same values again (the kernels are deterministic and each sequence's
 * programs write only its own rows), so the output stays right, and the time
 * grows by about that share on a batch of equal sequences: real GPU work, with
 * the noise real work has, where calibrate's default multiplies recorded
 * times. 0: the plain plugin, the A/A partner. */
#ifndef PPB_VLLM_WORK_PERCENT
#define PPB_VLLM_WORK_PERCENT 0
#endif

#define PPB_VLLM_EXPORT __attribute__((visibility("default")))

/* dtype_bfloat16.cuh in vLLM 0.6.3 (to 0.22.1) asserts (or, with NDEBUG, computes
 * nothing) below __CUDA_ARCH__ 800: bf16 needs compute capability 8.0. */
#define PPB_VLLM_BF16_MIN_CC 80

#define PPB_VLLM_DECLARE_ROW(name, code, head) ppb_vllm_##name##_##head,
static const ppb_vllm_kernels *const vllm_sets[] = {PPB_VLLM_INSTANCE_SETS(PPB_VLLM_DECLARE_ROW)};
#undef PPB_VLLM_DECLARE_ROW
#define VLLM_NUM_SETS ((int)(sizeof vllm_sets / sizeof vllm_sets[0]))

static int say(char *why, size_t why_len, int rc, const char *fmt, ...)
{
    if (why && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int cuda_failed(char *why, size_t why_len, cudaError_t e, const char *what)
{
    return say(why, why_len, PPBK_FAILED, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static const ppb_vllm_kernels *find_kernels(int dtype, int head_size, int block_size)
{
    for (int s = 0; s < VLLM_NUM_SETS; s++)
        for (int b = 0; b < PPB_VLLM_NUM_BLOCK_SIZES; b++) {
            const ppb_vllm_kernels *k = &vllm_sets[s][b];
            if (k->dtype == dtype && k->head_size == head_size && k->block_size == block_size)
                return k;
        }
    return NULL;
}

/* The head sizes (want_head) or block sizes this build has, for refusal
 * messages: "64,128,256", "8,16,32". */
static void built_list(int want_head, char *buf, size_t len)
{
    int vals[64], n = 0;
    size_t used = 0;
    for (int s = 0; s < VLLM_NUM_SETS; s++)
        for (int b = 0; b < PPB_VLLM_NUM_BLOCK_SIZES; b++) {
            int v = want_head ? vllm_sets[s][b].head_size : vllm_sets[s][b].block_size, seen = 0;
            for (int j = 0; j < n; j++)
                seen |= vals[j] == v;
            if (!seen && n < (int)(sizeof vals / sizeof vals[0]))
                vals[n++] = v;
        }
    buf[0] = '\0';
    for (int j = 0; j < n && used < len; j++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", j ? "," : "", vals[j]);
}

/* One decode launch, decided from the config and the shape alone (no CUDA
 * call), so launch can repeat it cheaply: vLLM's host code does only
 * arithmetic and cudaFuncSetAttribute before its launches, and ppbench times
 * launch. */
typedef struct vllm_plan {
    const ppb_vllm_kernels *k;
    const void *main_fn, *reduce_fn; /* reduce_fn: v2 only */
    int partition_size;              /* v2 */
    int partitions;                  /* v2: gridDim.z, the kernel's own max_num_partitions */
    int num_warps;
    long smem;                       /* dynamic shared memory of the main kernel */
    long reduce_smem;                /* v2 */
} vllm_plan;

static int plan_decode(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *a,
                       int version, vllm_plan *p, char *why, size_t why_len)
{
    char built[64];

    if (dev->backend != PPBK_BACKEND_CUDA)
        return say(why, why_len, PPBK_REFUSED, "vllm-cuda runs on CUDA devices only");
    if (cfg->version != version)
        return say(why, why_len, PPBK_REFUSED, "the decode_v%d entry was called with version %d", version,
                   cfg->version);
    if (cfg->dtype != PPB_KDTYPE_FP16 && cfg->dtype != PPB_KDTYPE_BF16)
        return say(why, why_len, PPBK_REFUSED, "dtype %d: vllm-cuda is built for fp16 and bf16 (kv cache \"auto\")",
                   cfg->dtype);
    if (cfg->dtype == PPB_KDTYPE_BF16 && dev->cc < PPB_VLLM_BF16_MIN_CC)
        return say(why, why_len, PPBK_REFUSED,
                   "bf16 on compute capability %d.%d: " PPB_VLLM_RELEASE "'s bf16 kernels need 8.0 or newer "
                   "(dtype_bfloat16.cuh asserts below sm_80)",
                   dev->cc / 10, dev->cc % 10);
    if (cfg->sliding_window > 0 || a->sliding_window > 0)
        return say(why, why_len, PPBK_REFUSED,
                   "sliding_window %d: " PPB_VLLM_RELEASE "'s CUDA paged attention has no sliding window",
                   cfg->sliding_window > 0 ? cfg->sliding_window : a->sliding_window);
    if (cfg->head_dim != a->head_dim || cfg->page_size != a->page_size)
        return say(why, why_len, PPBK_REFUSED, "config (head_dim %d, page_size %d) does not match the shape (%d, %d)",
                   cfg->head_dim, cfg->page_size, a->head_dim, a->page_size);

    const ppb_vllm_kernels *k = find_kernels(cfg->dtype, cfg->head_dim, cfg->page_size);
    if (!k) {
        built_list(1, built, sizeof built);
        int head_ok = 0;
        for (int s = 0; s < VLLM_NUM_SETS; s++)
            head_ok |= vllm_sets[s][0].head_size == cfg->head_dim;
        if (!head_ok)
            return say(why, why_len, PPBK_REFUSED, "head_dim %d: this vllm-cuda build has head sizes %s only",
                       cfg->head_dim, built);
        built_list(0, built, sizeof built);
        return say(why, why_len, PPBK_REFUSED,
                   "page_size %d: " PPB_VLLM_RELEASE
                   " compiles block sizes %s only (block sizes 1, 2, 4 and 64+ were omitted)",
                   cfg->page_size, built);
    }
    if (cfg->num_threads != k->num_threads)
        return say(why, why_len, PPBK_REFUSED,
                   "num_threads %d: " PPB_VLLM_RELEASE " launches paged attention with %d threads", cfg->num_threads,
                   k->num_threads);
    if (dev->warp_size != k->warp_size)
        return say(why, why_len, PPBK_REFUSED,
                   "warp size %d: " PPB_VLLM_RELEASE
                   "'s CUDA kernels are compiled for WARP_SIZE %d (csrc/cuda_compat.h)",
                   dev->warp_size, k->warp_size);
    if (a->num_kv_heads <= 0 || a->num_heads % a->num_kv_heads != 0)
        return say(why, why_len, PPBK_REFUSED,
                   "%d heads over %d kv heads: vLLM needs a whole number of heads per kv head", a->num_heads,
                   a->num_kv_heads);
    if (a->num_seqs <= 0 || a->num_heads <= 0 || a->max_seq_len <= 0)
        return say(why, why_len, PPBK_REFUSED, "empty shape (%d sequences, %d heads, max_seq_len %d)", a->num_seqs,
                   a->num_heads, a->max_seq_len);

    p->k = k;
    p->num_warps = k->num_threads / k->warp_size;
    /* Both launchers: outputs_size = (NUM_WARPS / 2) * head_size * sizeof(float). */
    long outputs_size = (long)(p->num_warps / 2) * cfg->head_dim * (long)sizeof(float);
    /* vLLM's kernels index with 32-bit ints; refuse shapes where those wrap. */
    int64_t out_elems = (int64_t)a->num_seqs * a->num_heads * cfg->head_dim;
    int64_t table_elems = (int64_t)a->num_seqs * a->max_blocks_per_seq;

    if (version == 1) {
        p->main_fn = k->v1;
        p->reduce_fn = NULL;
        p->partition_size = 0;
        p->partitions = 1;
        /* v1 launcher: padded_max_seq_len = DIVIDE_ROUND_UP(max_seq_len, BLOCK_SIZE) * BLOCK_SIZE;
         * logits_size = padded_max_seq_len * sizeof(float);
         * shared_mem_size = std::max(logits_size, outputs_size). */
        long padded = ((long)a->max_seq_len + cfg->page_size - 1) / cfg->page_size * cfg->page_size;
        long logits_size = padded * (long)sizeof(float);
        p->smem = logits_size > outputs_size ? logits_size : outputs_size;
        p->reduce_smem = 0;
    } else {
        int slot = -1;
        for (int i = 0; i < PPB_VLLM_NUM_PARTITIONS; i++)
            if (k->partition_size[i] == cfg->partition_size)
                slot = i;
        if (slot < 0)
            return say(why, why_len, PPBK_REFUSED,
                       "partition_size %d: vllm-cuda builds vLLM's v2 with PARTITION_SIZE %d and %d only",
                       cfg->partition_size, k->partition_size[0], k->partition_size[1]);
        p->main_fn = k->v2[slot];
        p->reduce_fn = k->v2_reduce[slot];
        p->partition_size = cfg->partition_size;
        /* v2 launcher: max_num_partitions = DIVIDE_ROUND_UP(max_seq_len, PARTITION_SIZE).
         * ppbench passes that count in the arguments (the scratch may be sized for
         * another one); it must cover max_seq_len, or tokens would be skipped. */
        int needed = (int)(((int64_t)a->max_seq_len + cfg->partition_size - 1) / cfg->partition_size);
        p->partitions = a->max_num_partitions > 0 ? a->max_num_partitions : needed;
        if (p->partitions < needed)
            return say(why, why_len, PPBK_REFUSED,
                       "max_num_partitions %d does not cover max_seq_len %d at PARTITION_SIZE %d (needs %d)",
                       a->max_num_partitions, a->max_seq_len, cfg->partition_size, needed);
        /* logits_size = PARTITION_SIZE * sizeof(float); shared_mem_size = std::max(logits_size, outputs_size);
         * reduce_shared_mem_size = 2 * max_num_partitions * sizeof(float). */
        long logits_size = (long)cfg->partition_size * (long)sizeof(float);
        p->smem = logits_size > outputs_size ? logits_size : outputs_size;
        p->reduce_smem = 2L * p->partitions * (long)sizeof(float);
        int64_t tmp_elems = out_elems * p->partitions;
        if (tmp_elems > INT_MAX)
            return say(why, why_len, PPBK_REFUSED,
                       "tmp_out has %lld elements: vLLM's v2 indexes it with 32-bit ints (at most %d)",
                       (long long)tmp_elems, INT_MAX);
    }
    if (out_elems > INT_MAX || table_elems > INT_MAX)
        return say(why, why_len, PPBK_REFUSED,
                   "out has %lld elements, the block table %lld: vLLM indexes them with 32-bit ints (at most %d)",
                   (long long)out_elems, (long long)table_elems, INT_MAX);
    return PPBK_OK;
}

/* Static + dynamic shared memory of `fn` against `limit`. */
static int check_smem(const void *fn, long dynamic, long limit, const char *kernel, const char *rule,
                      const char *limit_name, struct cudaFuncAttributes *attr, char *why, size_t why_len)
{
    cudaError_t e = cudaFuncGetAttributes(attr, fn);
    if (e != cudaSuccess)
        return cuda_failed(why, why_len, e, "cudaFuncGetAttributes");
    long total = dynamic + (long)attr->sharedSizeBytes;
    if (total > limit)
        return say(why, why_len, PPBK_REFUSED,
                   "%s needs %ld B of shared memory per block (%s: %ld B dynamic + %ld B static) > %s %ld B", kernel,
                   total, rule, dynamic, (long)attr->sharedSizeBytes, limit_name, limit);
    return PPBK_OK;
}

/* The plan, checked against this device's limits; attr is the main kernel's. */
static int plan_checked(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                        int version, vllm_plan *plan, struct cudaFuncAttributes *attr, char *why, size_t why_len)
{
    int rc = plan_decode(dev, cfg, shape, version, plan, why, why_len);
    if (rc != PPBK_OK)
        return rc;
    const vllm_plan p = *plan;

    /* Grid limits of this device: gridDim.y = num_seqs, gridDim.z = partitions. */
    int max_y = 0, max_z = 0, default_smem = 0;
    cudaError_t e = cudaDeviceGetAttribute(&max_y, cudaDevAttrMaxGridDimY, dev->device_index);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&max_z, cudaDevAttrMaxGridDimZ, dev->device_index);
    /* Launches that do not opt in (vLLM sets the attribute for v1 only) get the default per-block limit. */
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&default_smem, cudaDevAttrMaxSharedMemoryPerBlock, dev->device_index);
    if (e != cudaSuccess)
        return cuda_failed(why, why_len, e, "cudaDeviceGetAttribute");
    if (shape->num_seqs > max_y || p.partitions > max_z)
        return say(why, why_len, PPBK_REFUSED, "grid (%d, %d, %d) exceeds this device's y/z limits (%d, %d)",
                   shape->num_heads, shape->num_seqs, p.partitions, max_y, max_z);
    long plain_limit = (long)default_smem < dev->smem_optin ? (long)default_smem : dev->smem_optin;

    if (version == 1)
        /* vLLM's v1 launcher opts in to p.smem bytes with cudaFuncSetAttribute: the
         * device's opt-in limit (or the target's cap) applies. */
        rc = check_smem(p.main_fn, p.smem, dev->smem_optin, "v1 (all logits in shared memory)",
                        "vLLM's launcher: max(padded max_seq_len * 4, NUM_WARPS/2 * head_size * 4)",
                        "the opt-in limit", attr, why, why_len);
    else
        rc = check_smem(p.main_fn, p.smem, plain_limit, "v2",
                        "max(PARTITION_SIZE * 4, NUM_WARPS/2 * head_size * 4), no opt-in", "the default limit",
                        attr, why, why_len);
    if (rc != PPBK_OK)
        return rc;
    if (attr->maxThreadsPerBlock < p.k->num_threads)
        return say(why, why_len, PPBK_REFUSED, "the kernel can run %d threads per block here, vLLM launches %d",
                   attr->maxThreadsPerBlock, p.k->num_threads);
    struct cudaFuncAttributes reduce_attr;
    if (version == 2)
        rc = check_smem(p.reduce_fn, p.reduce_smem, plain_limit, "the v2 reduce",
                        "2 * max_num_partitions * 4, no opt-in", "the default limit", &reduce_attr, why, why_len);
    return rc;
}

static int vllm_refuse(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                       int version, char *why, size_t why_len)
{
    vllm_plan p;
    struct cudaFuncAttributes attr;
    return plan_checked(dev, cfg, shape, version, &p, &attr, why, why_len);
}

/* vLLM's launch of `version` over the first `num_seqs` sequences of `a`
 * (all of them, but for the known effect's second launch). */
static int launch_seqs(const vllm_plan *plan, const ppb_decode_args *a, int version, int num_seqs, void *stream,
                       char *why, size_t why_len)
{
    const vllm_plan p = *plan;
    /* The kernel parameters, in the order and types of vLLM's kernels.
     * Strides as query.stride(0) and key_cache.stride(0) / stride(1) of
     * contiguous [num_seqs, num_heads, head_size] and
     * [num_blocks, num_kv_heads, head_size/x, block_size, x] tensors (the
     * value cache has the same two outer strides). */
    void *out = a->out;
    const void *q = a->q, *k_cache = a->k_cache, *v_cache = a->v_cache;
    int num_kv_heads = a->num_kv_heads;
    float scale = a->sm_scale;
    const int32_t *block_tables = a->block_table, *seq_lens = a->seq_lens;
    int max_num_blocks_per_seq = a->max_blocks_per_seq;
    const float *alibi_slopes = NULL;
    int q_stride = a->num_heads * a->head_dim;
    int kv_head_stride = a->head_dim * a->page_size;
    int kv_block_stride = a->num_kv_heads * kv_head_stride;
    float k_scale = 1.0f, v_scale = 1.0f; /* kv cache "auto": unused */
    /* From 0.7.0 the kernels take the scales as pointers (the launchers pass
     * their k_scale / v_scale tensors' data) and read them only for an fp8
     * cache: `if constexpr (KV_DTYPE == kAuto)` leaves the reads out of these
     * "auto" instances, so no scale buffer is passed. */
    const float *k_scale_ptr = NULL, *v_scale_ptr = NULL;
    void *k_scale_arg = p.k->scales_by_pointer ? (void *)&k_scale_ptr : (void *)&k_scale;
    void *v_scale_arg = p.k->scales_by_pointer ? (void *)&v_scale_ptr : (void *)&v_scale;
    /* vllm/_custom_ops.py defaults: tp_rank 0, blocksparse_local_blocks 0,
     * blocksparse_vert_stride 0, blocksparse_block_size 64,
     * blocksparse_head_sliding_step 0 (IS_BLOCK_SPARSE is false). */
    int tp_rank = 0, bs_local_blocks = 0, bs_vert_stride = 0, bs_block_size = 64, bs_head_sliding_step = 0;

    cudaStream_t s = (cudaStream_t)stream;
    dim3 block = {(unsigned)p.k->num_threads, 1, 1};
    cudaError_t e;

    if (version == 1) {
        void *params[] = {&out, &q, &k_cache, &v_cache, &num_kv_heads, &scale, &block_tables, &seq_lens,
                          &max_num_blocks_per_seq, &alibi_slopes, &q_stride, &kv_block_stride, &kv_head_stride,
                          k_scale_arg, v_scale_arg, &tp_rank, &bs_local_blocks, &bs_vert_stride, &bs_block_size,
                          &bs_head_sliding_step};
        /* LAUNCH_PAGED_ATTENTION_V1 sets the attribute before every launch; so do we
         * (its cost is part of what vLLM's v1 costs on the host). */
        e = cudaFuncSetAttribute(p.main_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.smem);
        if (e != cudaSuccess)
            return cuda_failed(why, why_len, e, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
        /* dim3 grid(num_heads, num_seqs, 1) */
        dim3 grid = {(unsigned)a->num_heads, (unsigned)num_seqs, 1};
        e = cudaLaunchKernel(p.main_fn, grid, block, params, (size_t)p.smem, s);
        if (e != cudaSuccess)
            return cuda_failed(why, why_len, e, "cudaLaunchKernel(paged_attention_v1_kernel)");
        return PPBK_OK;
    }

    void *exp_sums = a->exp_sums, *max_logits = a->max_logits, *tmp_out = a->tmp_out;
    void *params[] = {&exp_sums, &max_logits, &tmp_out, &q, &k_cache, &v_cache, &num_kv_heads, &scale,
                      &block_tables, &seq_lens, &max_num_blocks_per_seq, &alibi_slopes, &q_stride,
                      &kv_block_stride, &kv_head_stride, k_scale_arg, v_scale_arg, &tp_rank, &bs_local_blocks,
                      &bs_vert_stride, &bs_block_size, &bs_head_sliding_step};
    /* dim3 grid(num_heads, num_seqs, max_num_partitions) */
    dim3 grid = {(unsigned)a->num_heads, (unsigned)num_seqs, (unsigned)p.partitions};
    e = cudaLaunchKernel(p.main_fn, grid, block, params, (size_t)p.smem, s);
    if (e != cudaSuccess)
        return cuda_failed(why, why_len, e, "cudaLaunchKernel(paged_attention_v2_kernel)");

    int max_num_partitions = p.partitions;
    void *reduce_params[] = {&out, &exp_sums, &max_logits, &tmp_out, &seq_lens, &max_num_partitions};
    /* dim3 reduce_grid(num_heads, num_seqs); same block */
    dim3 reduce_grid = {(unsigned)a->num_heads, (unsigned)num_seqs, 1};
    e = cudaLaunchKernel(p.reduce_fn, reduce_grid, block, reduce_params, (size_t)p.reduce_smem, s);
    if (e != cudaSuccess)
        return cuda_failed(why, why_len, e, "cudaLaunchKernel(paged_attention_v2_reduce_kernel)");
    return PPBK_OK;
}

static int vllm_launch(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *a,
                       int version, void *stream, char *why, size_t why_len)
{
    vllm_plan p;
    int rc = plan_decode(dev, cfg, a, version, &p, why, why_len);
    if (rc == PPBK_OK)
        rc = launch_seqs(&p, a, version, a->num_seqs, stream, why, why_len);
    if (rc == PPBK_OK && PPB_VLLM_WORK_PERCENT > 0) { /* the known effect: again over the first N% */
        int again = (a->num_seqs * PPB_VLLM_WORK_PERCENT + 50) / 100;
        rc = launch_seqs(&p, a, version, again > 0 ? again : 1, stream, why, why_len);
    }
    return rc;
}

static int vllm_prepare(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                          int version, ppbk_resources *out, char *why, size_t why_len)
{
    vllm_plan p;
    struct cudaFuncAttributes attr;
    int rc = plan_checked(dev, cfg, shape, version, &p, &attr, why, why_len);
    if (rc != PPBK_OK)
        return rc;
    out->registers = attr.numRegs;
    out->static_smem = (int)attr.sharedSizeBytes;
    out->dynamic_smem = (int)p.smem;
    out->local_bytes = (int)attr.localSizeBytes;
    out->max_threads = attr.maxThreadsPerBlock;
    return PPBK_OK;
}

/* Checks that the kernels load on this device: a build for other
 * architectures fails here once, with the reason, instead of at every launch.
 * No context: the kernels are this library's own functions and everything a
 * launch needs comes from its arguments (ctx stays NULL). */
static int vllm_open(const ppbk_device *dev, void **ctx, char *why, size_t why_len)
{
    (void)ctx;
    if (dev->backend != PPBK_BACKEND_CUDA)
        return say(why, why_len, PPBK_FAILED, "vllm-cuda runs on CUDA devices only");
    struct cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, vllm_sets[0][0].v1);
    if (e != cudaSuccess)
        return say(why, why_len, PPBK_FAILED,
                   "vLLM kernels do not load on this device (compute capability %d.%d; built for CUDA "
                   "architectures %s): %s (%s)",
                   dev->cc / 10, dev->cc % 10, PPB_VLLM_CUDA_ARCHS, cudaGetErrorString(e), cudaGetErrorName(e));
    return PPBK_OK;
}

/* The ABI's entries for v1 and v2 (ctx unused: see vllm_open): the version as an argument. */
#define VLLM_DECODE_ENTRIES(v)                                                                                  \
    static int refuse_v##v(void *ctx, const ppbk_device *d, const ppbk_decode_config *c, const ppb_decode_args *s, \
                           char *w, size_t n)                                                                    \
    {                                                                                                            \
        (void)ctx;                                                                                               \
        return vllm_refuse(d, c, s, v, w, n);                                                                    \
    }                                                                                                            \
    static int launch_v##v(void *ctx, const ppbk_device *d, const ppbk_decode_config *c, const ppb_decode_args *a, \
                           void *st, char *w, size_t n)                                                          \
    {                                                                                                            \
        (void)ctx;                                                                                               \
        return vllm_launch(d, c, a, v, st, w, n);                                                                \
    }                                                                                                            \
    static int prepare_v##v(void *ctx, const ppbk_device *d, const ppbk_decode_config *c,                        \
                            const ppb_decode_args *s, ppbk_resources *r, char *w, size_t n)                      \
    {                                                                                                            \
        (void)ctx;                                                                                               \
        return vllm_prepare(d, c, s, v, r, w, n);                                                                \
    }
VLLM_DECODE_ENTRIES(1)
VLLM_DECODE_ENTRIES(2)
#undef VLLM_DECODE_ENTRIES

static const ppbk_decode_ops decode_v1_ops = {refuse_v1, launch_v1, prepare_v1, PPB_KV_LAYOUT_VLLM};
static const ppbk_decode_ops decode_v2_ops = {refuse_v2, launch_v2, prepare_v2, PPB_KV_LAYOUT_VLLM};

static const ppbk_impl vllm_cuda_impl = {
    .abi_version = PPBK_ABI_VERSION,
    .struct_size = sizeof(ppbk_impl),
    .name = PPB_VLLM_IMPL_NAME,
    .version = "vllm " PPB_VLLM_VERSION,
    .source = PPB_VLLM_SOURCE_DESC,
    .backends = PPBK_BACKEND_CUDA,
    .open = vllm_open,
    .close = NULL, /* nothing to free: open made no context */
    .prefill = NULL, /* vLLM's prefix prefill is a Triton kernel, not in this library */
    .decode_v1 = &decode_v1_ops,
    .decode_v2 = &decode_v2_ops,
};

PPB_VLLM_EXPORT const ppbk_impl *ppbk_entry(void)
{
    return &vllm_cuda_impl;
}
