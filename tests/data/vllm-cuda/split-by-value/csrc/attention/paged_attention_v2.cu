// ppbench test fixture (tests/e2e/vllm_cuda_forms.sh): only the lines that
// kernels/vllm/cuda/vllm_tree.cmake looks for in a vLLM tree. Not vLLM code.
#include "attention_kernels.cuh"
paged_attention_v2_launcher(
int NUM_THREADS = 128
int max_num_partitions = DIVIDE_ROUND_UP(max_seq_len, PARTITION_SIZE);
int logits_size = PARTITION_SIZE * sizeof(float);
int outputs_size = (NUM_WARPS / 2) * head_size * sizeof(float);
dim3 grid(num_heads, num_seqs, max_num_partitions);
dim3 reduce_grid(num_heads, num_seqs);
int reduce_shared_mem_size = 2 * max_num_partitions * sizeof(float);
