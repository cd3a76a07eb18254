/* vLLM's own paged-attention kernels, #included from the vLLM source tree at
 * build time (not copied), instantiated for one dtype and one head size per
 * compilation of this file:
 *   PPB_VLLM_DTYPE  PPB_KDTYPE_FP16 (0) or PPB_KDTYPE_BF16 (1)
 *   PPB_VLLM_HEAD   64, 128 or 256
 *   PPB_VLLM_SET    the name of the row array (vllm_kernels.h), e.g. ppb_vllm_bf16_128
 * and the form of the tree's files, which CMakeLists.txt reads from their
 * content (vllm_tree.cmake), not from the release's version:
 *   PPB_VLLM_LAYOUT 1: csrc/attention/attention_kernels.cu holds the kernels,
 *                   the torch launchers and the op entry points (0.6.3);
 *                   PPB_VLLM_QUANT_UTILS names the fp8 helper header it
 *                   includes;
 *                   2: csrc/attention/attention_kernels.cuh holds the kernels
 *                   alone, the launchers are in paged_attention_v1.cu / _v2.cu,
 *                   which are not compiled here (0.6.4 to 0.22.1)
 *   PPB_VLLM_SCALES_BY_POINTER  0: the kernels take `float k_scale, v_scale`
 *                   (up to 0.6.6.post1); 1: `const float *` (0.7.0 on)
 * Without them, the 0.6.3 form. CMakeLists.txt compiles the file once per
 * (dtype, head size) so that the instances build in parallel.
 *
 * How the file is made to build without PyTorch (the choice, and why):
 * vLLM's kernel file comes with torch-facing launchers (in the same file up to
 * 0.6.3, beside it after). We keep vLLM's kernels byte for byte and replace the
 * launchers with our own (vllm_cuda_plugin.c), so:
 *  - shim/ provides declaration-only stand-ins for <torch/all.h>,
 *    <ATen/cuda/CUDAContext.h> and <c10/cuda/CUDAGuard.h>, just enough for the
 *    headers and the launcher templates to parse; they are never instantiated;
 *  - layout 1: vLLM's two op entry points (paged_attention_v1/_v2, plain
 *    functions that dispatch over every dtype, fp8 cache type, block size, head
 *    size and sparsity) get an empty dispatch macro, so they instantiate
 *    nothing, and a per-file name, so the six compilations of this file link
 *    together. Layout 2 needs neither: only the kernel header is included.
 * Calling vLLM's launchers through fake tensors instead was rejected: each
 * one instantiates all eight head sizes and both sparsity variants (8/3 x 2,
 * about 5x the kernels to compile), reports errors by throwing (TORCH_CHECK), ignores the
 * result of cudaFuncSetAttribute and takes its stream from PyTorch's global
 * state. Our launches mirror vLLM's launcher arithmetic line for line (grid,
 * block, dynamic shared memory; the plugin cites each line, and the configure
 * step checks those lines are in the tree's launchers). */
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "vllm_kernels.h"

/* vLLM's own compatibility header first, to read the WARP_SIZE the kernels
 * are compiled with (attention_kernels.cu #undefs it at its end). */
#include "cuda_compat.h"
static constexpr int kVllmWarpSize = WARP_SIZE;

#ifndef PPB_VLLM_LAYOUT
#define PPB_VLLM_LAYOUT 1
#endif
#ifndef PPB_VLLM_SCALES_BY_POINTER
#define PPB_VLLM_SCALES_BY_POINTER 0
#endif

#if PPB_VLLM_LAYOUT == 1
#ifndef PPB_VLLM_QUANT_UTILS
#define PPB_VLLM_QUANT_UTILS "quantization/fp8/nvidia/quant_utils.cuh"
#endif
/* Include the fp8 helpers (guarded by #pragma once) before the kernel file,
 * so that its dispatch macro can be emptied before the entry points use it.
 * The empty version still names the entry points' locals, so that emptying
 * them does not warn about unused variables. */
#include PPB_VLLM_QUANT_UTILS
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
#elif PPB_VLLM_LAYOUT == 2
#include "attention/attention_kernels.cuh"
#else
#error "PPB_VLLM_LAYOUT must be 1 (attention_kernels.cu) or 2 (attention_kernels.cuh)"
#endif

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

/* vLLM's launchers (0.6.3 to 0.22.1) use NUM_THREADS = 128 and PARTITION_SIZE
 * = 512 as defaults; 256 is what ppbench also measures. */
constexpr int kNumThreads = 128;
constexpr int kPartitions[PPB_VLLM_NUM_PARTITIONS] = PPB_VLLM_PARTITIONS;
constexpr auto kAuto = vllm::Fp8KVCacheDataType::kAuto;
constexpr bool kBlockSparse = false;  // vLLM's choice when blocksparse_vert_stride <= 1
#if PPB_VLLM_SCALES_BY_POINTER
using scale_t = const float *;  // the launchers pass their k_scale / v_scale tensors' data
#else
using scale_t = float;
#endif

/* The parameter lists vllm_cuda_plugin.c packs for cudaLaunchKernel, in
 * order: a vLLM whose kernels take anything else does not compile here.
 * (Compared as pointer types: nvcc's host pass rewrites decltype(f) as
 * decltype((f)), a reference.) */
#define PPB_R __restrict__
using v1_signature = void(scalar_t *PPB_R out, const scalar_t *PPB_R q, const scalar_t *PPB_R k_cache,
                          const scalar_t *PPB_R v_cache, int num_kv_heads, float scale,
                          const int *PPB_R block_tables, const int *PPB_R seq_lens, int max_num_blocks_per_seq,
                          const float *PPB_R alibi_slopes, int q_stride, int kv_block_stride, int kv_head_stride,
                          scale_t k_scale, scale_t v_scale, int tp_rank, int blocksparse_local_blocks,
                          int blocksparse_vert_stride, int blocksparse_block_size,
                          int blocksparse_head_sliding_step);
using v2_signature = void(float *PPB_R exp_sums, float *PPB_R max_logits, scalar_t *PPB_R tmp_out,
                          const scalar_t *PPB_R q, const scalar_t *PPB_R k_cache, const scalar_t *PPB_R v_cache,
                          int num_kv_heads, float scale, const int *PPB_R block_tables, const int *PPB_R seq_lens,
                          int max_num_blocks_per_seq, const float *PPB_R alibi_slopes, int q_stride,
                          int kv_block_stride, int kv_head_stride, scale_t k_scale, scale_t v_scale, int tp_rank,
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
                  "vLLM's paged_attention_v1_kernel parameters are not what vllm_cuda_plugin.c packs "
                  "for this form (vllm_tree.cmake)");
    static_assert(std::is_same<decltype(&paged_attention_v2_kernel<scalar_t, scalar_t, HEAD, BLOCK, kNumThreads, kAuto,
                                                                  kBlockSparse, kPartitions[0]>),
                               v2_signature *>::value,
                  "vLLM's paged_attention_v2_kernel parameters are not what vllm_cuda_plugin.c packs "
                  "for this form (vllm_tree.cmake)");
    static_assert(std::is_same<decltype(&paged_attention_v2_reduce_kernel<scalar_t, HEAD, kNumThreads, kPartitions[0]>),
                               reduce_signature *>::value,
                  "vLLM's paged_attention_v2_reduce_kernel parameters are not what vllm_cuda_plugin.c "
                  "packs (vllm_tree.cmake)");
    return ppb_vllm_kernels{
        PPB_VLLM_DTYPE,
        HEAD,
        BLOCK,
        kNumThreads,
        kVllmWarpSize,
        PPB_VLLM_SCALES_BY_POINTER,
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

/* The block sizes vLLM compiles (8, 16, 32; 0.6.3 to 0.22.1), in this order. */
extern "C" const ppb_vllm_kernels PPB_VLLM_SET[PPB_VLLM_NUM_BLOCK_SIZES] = {
    row<PPB_VLLM_HEAD, 8>(),
    row<PPB_VLLM_HEAD, 16>(),
    row<PPB_VLLM_HEAD, 32>(),
};
