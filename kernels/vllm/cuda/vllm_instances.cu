/* vLLM 0.6.3's own paged-attention kernels (csrc/attention/attention_kernels.cu,
 * #included from the vLLM source tree at build time, not copied), instantiated
 * for one dtype and one head size per compilation of this file:
 *   PPB_VLLM_DTYPE  PPB_KDTYPE_FP16 (0) or PPB_KDTYPE_BF16 (1)
 *   PPB_VLLM_HEAD   64, 128 or 256
 *   PPB_VLLM_SET    the name of the row array (vllm_kernels.h), e.g. ppb_vllm_bf16_128
 * CMakeLists.txt compiles it once per (dtype, head size) so that the
 * instances build in parallel.
 *
 * How the file is made to build without PyTorch (the choice, and why):
 * attention_kernels.cu holds both the __global__ kernel templates and
 * torch-facing launchers. We keep vLLM's kernels byte for byte and replace the
 * launchers with our own (vllm_cuda_plugin.c), so:
 *  - shim/ provides declaration-only stand-ins for <torch/all.h>,
 *    <ATen/cuda/CUDAContext.h> and <c10/cuda/CUDAGuard.h>, just enough for the
 *    launcher templates to parse; they are never instantiated;
 *  - vLLM's two op entry points (paged_attention_v1/_v2, plain functions that
 *    dispatch over every dtype, fp8 cache type, block size, head size and
 *    sparsity) get an empty dispatch macro, so they instantiate nothing, and
 *    a per-file name, so the six compilations of this file link together.
 * Calling vLLM's launchers through fake tensors instead was rejected: each
 * one instantiates all eight head sizes and both sparsity variants (8/3 x 2,
 * about 5x the kernels to compile), reports errors by throwing (TORCH_CHECK), ignores the
 * result of cudaFuncSetAttribute and takes its stream from PyTorch's global
 * state. Our launches mirror vLLM's launcher arithmetic line for line (grid,
 * block, dynamic shared memory; the plugin cites each line). */
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "vllm_kernels.h"

/* vLLM's own compatibility header first, to read the WARP_SIZE the kernels
 * are compiled with (attention_kernels.cu #undefs it at its end). */
#include "cuda_compat.h"
static constexpr int kVllmWarpSize = WARP_SIZE;

/* Include the fp8 helpers (guarded by #pragma once) before the kernel file,
 * so that its dispatch macro can be emptied before the entry points use it.
 * The empty version still names the entry points' locals, so that emptying
 * them does not warn about unused variables. */
#include "quantization/fp8/nvidia/quant_utils.cuh"
#undef DISPATCH_BY_KV_CACHE_DTYPE
#define DISPATCH_BY_KV_CACHE_DTYPE(SRC_DTYPE, KV_DTYPE, FN) \
    (void)is_block_sparse;                                  \
    (void)(KV_DTYPE);

#define PPB_VLLM_CAT2(a, b) a##b
#define PPB_VLLM_CAT(a, b) PPB_VLLM_CAT2(a, b)
#define paged_attention_v1 PPB_VLLM_CAT(PPB_VLLM_SET, _unused_torch_entry_v1)
#define paged_attention_v2 PPB_VLLM_CAT(PPB_VLLM_SET, _unused_torch_entry_v2)
#include "attention/attention_kernels.cu"
#undef paged_attention_v1
#undef paged_attention_v2

namespace {

/* vLLM's dispatch (DISPATCH_BY_KV_CACHE_DTYPE, kv_cache_dtype "auto"):
 * Half -> uint16_t, BFloat16 -> __nv_bfloat16, cache type = scalar type. */
#if PPB_VLLM_DTYPE == 0
using scalar_t = uint16_t;
#elif PPB_VLLM_DTYPE == 1
using scalar_t = __nv_bfloat16;
#else
#error "PPB_VLLM_DTYPE must be 0 (fp16) or 1 (bf16)"
#endif

/* vLLM 0.6.3's launchers use NUM_THREADS = 128 and PARTITION_SIZE = 512 as
 * defaults; 256 is what ppbench also measures. */
constexpr int kNumThreads = 128;
constexpr int kPartitions[PPB_VLLM_NUM_PARTITIONS] = PPB_VLLM_PARTITIONS;
constexpr auto kAuto = vllm::Fp8KVCacheDataType::kAuto;
constexpr bool kBlockSparse = false;  // vLLM's choice when blocksparse_vert_stride <= 1

/* The parameter lists vllm_cuda_plugin.c packs for cudaLaunchKernel, in
 * order: a vLLM whose kernels take anything else does not compile here.
 * (Compared as pointer types: nvcc's host pass rewrites decltype(f) as
 * decltype((f)), a reference.) */
#define PPB_R __restrict__
using v1_signature = void(scalar_t *PPB_R out, const scalar_t *PPB_R q, const scalar_t *PPB_R k_cache,
                          const scalar_t *PPB_R v_cache, int num_kv_heads, float scale,
                          const int *PPB_R block_tables, const int *PPB_R seq_lens, int max_num_blocks_per_seq,
                          const float *PPB_R alibi_slopes, int q_stride, int kv_block_stride, int kv_head_stride,
                          float k_scale, float v_scale, int tp_rank, int blocksparse_local_blocks,
                          int blocksparse_vert_stride, int blocksparse_block_size,
                          int blocksparse_head_sliding_step);
using v2_signature = void(float *PPB_R exp_sums, float *PPB_R max_logits, scalar_t *PPB_R tmp_out,
                          const scalar_t *PPB_R q, const scalar_t *PPB_R k_cache, const scalar_t *PPB_R v_cache,
                          int num_kv_heads, float scale, const int *PPB_R block_tables, const int *PPB_R seq_lens,
                          int max_num_blocks_per_seq, const float *PPB_R alibi_slopes, int q_stride,
                          int kv_block_stride, int kv_head_stride, float k_scale, float v_scale, int tp_rank,
                          int blocksparse_local_blocks, int blocksparse_vert_stride, int blocksparse_block_size,
                          int blocksparse_head_sliding_step);
using reduce_signature = void(scalar_t *PPB_R out, const float *PPB_R exp_sums, const float *PPB_R max_logits,
                              const scalar_t *PPB_R tmp_out, const int *PPB_R seq_lens, int max_num_partitions);
#undef PPB_R

template <int HEAD, int BLOCK>
ppb_vllm_kernels row()
{
    using namespace vllm;
    static_assert(std::is_same<decltype(&paged_attention_v1_kernel<scalar_t, scalar_t, HEAD, BLOCK, kNumThreads, kAuto,
                                                                  kBlockSparse>),
                               v1_signature *>::value,
                  "vLLM's paged_attention_v1_kernel parameters changed: update vllm_cuda_plugin.c");
    static_assert(std::is_same<decltype(&paged_attention_v2_kernel<scalar_t, scalar_t, HEAD, BLOCK, kNumThreads, kAuto,
                                                                  kBlockSparse, kPartitions[0]>),
                               v2_signature *>::value,
                  "vLLM's paged_attention_v2_kernel parameters changed: update vllm_cuda_plugin.c");
    static_assert(std::is_same<decltype(&paged_attention_v2_reduce_kernel<scalar_t, HEAD, kNumThreads, kPartitions[0]>),
                               reduce_signature *>::value,
                  "vLLM's paged_attention_v2_reduce_kernel parameters changed: update vllm_cuda_plugin.c");
    return ppb_vllm_kernels{
        PPB_VLLM_DTYPE,
        HEAD,
        BLOCK,
        kNumThreads,
        kVllmWarpSize,
        {kPartitions[0], kPartitions[1]},
        (const void *)paged_attention_v1_kernel<scalar_t, scalar_t, HEAD, BLOCK, kNumThreads, kAuto, kBlockSparse>,
        {(const void *)paged_attention_v2_kernel<scalar_t, scalar_t, HEAD, BLOCK, kNumThreads, kAuto, kBlockSparse,
                                                 kPartitions[0]>,
         (const void *)paged_attention_v2_kernel<scalar_t, scalar_t, HEAD, BLOCK, kNumThreads, kAuto, kBlockSparse,
                                                 kPartitions[1]>},
        {(const void *)paged_attention_v2_reduce_kernel<scalar_t, HEAD, kNumThreads, kPartitions[0]>,
         (const void *)paged_attention_v2_reduce_kernel<scalar_t, HEAD, kNumThreads, kPartitions[1]>},
    };
}

}  // namespace

/* The block sizes vLLM 0.6.3 compiles (8, 16, 32), in this order. */
extern "C" const ppb_vllm_kernels PPB_VLLM_SET[PPB_VLLM_NUM_BLOCK_SIZES] = {
    row<PPB_VLLM_HEAD, 8>(),
    row<PPB_VLLM_HEAD, 16>(),
    row<PPB_VLLM_HEAD, 32>(),
};
