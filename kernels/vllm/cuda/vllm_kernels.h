/* The vLLM kernel instances the plugin carries: one row per (dtype, head
 * size, page size), filled by vllm_instances.cu (compiled once per dtype and
 * head size) and read by the plain-C plugin (vllm_cuda_plugin.c), which
 * launches them through the CUDA runtime API. */
#ifndef PPB_VLLM_KERNELS_H
#define PPB_VLLM_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* PARTITION_SIZE values of the v2 instances, in the order of v2[] / reduce[]. */
#define PPB_VLLM_NUM_PARTITIONS 2
#define PPB_VLLM_PARTITIONS {256, 512}

typedef struct ppb_vllm_kernels {
    int dtype;              /* PPB_KDTYPE_* */
    int head_size, block_size;
    int num_threads;        /* the NUM_THREADS the instances were compiled with */
    int warp_size;          /* vLLM's WARP_SIZE (csrc/cuda_compat.h) at compile time */
    int scales_by_pointer;  /* k_scale / v_scale are const float * (0.7.0 on), else float */
    int partition_size[PPB_VLLM_NUM_PARTITIONS];
    /* Host stubs of __global__ functions: what cudaLaunchKernel,
     * cudaFuncGetAttributes and cudaFuncSetAttribute take. */
    const void *v1;
    const void *v2[PPB_VLLM_NUM_PARTITIONS];
    const void *v2_reduce[PPB_VLLM_NUM_PARTITIONS];
} ppb_vllm_kernels;

/* Page (block) sizes instantiated per (dtype, head size): rows of each array. */
#define PPB_VLLM_NUM_BLOCK_SIZES 3

/* X(dtype name, PPB_KDTYPE_* code, head size) for every array that the build
 * compiles; CMakeLists.txt compiles the same list. */
#define PPB_VLLM_INSTANCE_SETS(X) \
    X(fp16, 0, 64)                \
    X(fp16, 0, 128)               \
    X(fp16, 0, 256)               \
    X(bf16, 1, 64)                \
    X(bf16, 1, 128)               \
    X(bf16, 1, 256)

#define PPB_VLLM_DECLARE_SET(name, code, head) \
    extern const ppb_vllm_kernels ppb_vllm_##name##_##head[PPB_VLLM_NUM_BLOCK_SIZES];
PPB_VLLM_INSTANCE_SETS(PPB_VLLM_DECLARE_SET)
#undef PPB_VLLM_DECLARE_SET

#ifdef __cplusplus
}
#endif

#endif
