// ppbench test fixture (tests/e2e/vllm_cuda_forms.sh): only the lines that
// kernels/vllm/cuda/vllm_tree.cmake looks for in a vLLM tree. Not vLLM code.
#include "attention_kernels.cuh"
paged_attention_v1_launcher(
int NUM_THREADS = 128
int padded_max_seq_len = DIVIDE_ROUND_UP(max_seq_len, BLOCK_SIZE) * BLOCK_SIZE;
int outputs_size = (NUM_WARPS / 2) * head_size * sizeof(float);
int shared_mem_size = std::max(logits_size, outputs_size);
dim3 grid(num_heads, num_seqs, 1);
