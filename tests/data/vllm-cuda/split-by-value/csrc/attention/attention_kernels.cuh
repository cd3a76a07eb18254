// ppbench test fixture (tests/e2e/vllm_cuda_forms.sh): only the lines that
// kernels/vllm/cuda/vllm_tree.cmake looks for in a vLLM tree. Not vLLM code.
template <typename scalar_t, typename cache_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS,
          vllm::Fp8KVCacheDataType KV_DTYPE, bool IS_BLOCK_SPARSE>
__global__ void paged_attention_v1_kernel(
    const int q_stride, const int kv_block_stride, const int kv_head_stride,
    const float k_scale, const float v_scale, const int tp_rank,
    const int blocksparse_local_blocks, const int blocksparse_vert_stride,
    const int blocksparse_block_size, const int blocksparse_head_sliding_step) {}
__global__ void paged_attention_v2_kernel(
__global__ void paged_attention_v2_reduce_kernel(
