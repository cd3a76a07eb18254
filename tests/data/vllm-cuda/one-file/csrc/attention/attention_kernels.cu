// ppbench test fixture (tests/e2e/vllm_cuda_forms.sh): only the lines that
// kernels/vllm/cuda/vllm_tree.cmake looks for in a vLLM tree. Not vLLM code.
#include "../quantization/fp8/nvidia/quant_utils.cuh"
template <typename scalar_t, typename cache_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS,
          vllm::Fp8KVCacheDataType KV_DTYPE, bool IS_BLOCK_SPARSE>
__global__ void paged_attention_v1_kernel(
    const int q_stride, const int kv_block_stride, const int kv_head_stride,
    const float k_scale, const float v_scale, const int tp_rank,
    const int blocksparse_local_blocks, const int blocksparse_vert_stride,
    const int blocksparse_block_size, const int blocksparse_head_sliding_step) {}
__global__ void paged_attention_v2_kernel(
__global__ void paged_attention_v2_reduce_kernel(
paged_attention_v1_launcher(
int NUM_THREADS = 128
int padded_max_seq_len = DIVIDE_ROUND_UP(max_seq_len, BLOCK_SIZE) * BLOCK_SIZE;
int outputs_size = (NUM_WARPS / 2) * head_size * sizeof(float);
int shared_mem_size = std::max(logits_size, outputs_size);
dim3 grid(num_heads, num_seqs, 1);
paged_attention_v2_launcher(
int NUM_THREADS = 128
int max_num_partitions = DIVIDE_ROUND_UP(max_seq_len, PARTITION_SIZE);
int logits_size = PARTITION_SIZE * sizeof(float);
int outputs_size = (NUM_WARPS / 2) * head_size * sizeof(float);
dim3 grid(num_heads, num_seqs, max_num_partitions);
dim3 reduce_grid(num_heads, num_seqs);
int reduce_shared_mem_size = 2 * max_num_partitions * sizeof(float);
DISPATCH_BY_KV_CACHE_DTYPE(
void paged_attention_v1(
void paged_attention_v2(
