/* Stand-in for kernels/prefix_prefill.cuh with the same template signature, for
 * testing the kernel runtime and the CUDA backend independently of the real
 * kernel: out = q (a copy), plus features whose effect a test can predict.
 *  - static shared memory of exactly BLOCK_M floats (the resource query must
 *    report BLOCK_M * 4 bytes), launch bounds NUM_WARPS * PPB_WARP_SIZE;
 *  - touches the last byte of its dynamic shared memory (an opt-in that did not
 *    happen fails the launch);
 *  - batch == 7 && num_heads == 7: writes far out of bounds on purpose (an
 *    illegal address, for the lost-context test).
 * Grid-stride loops: correct under whatever grid the real plan picks. */
#ifndef PPB_PREFIX_PREFILL_CUH
#define PPB_PREFIX_PREFILL_CUH

#include "attention_args.h"
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef PPB_WARP_SIZE
#define PPB_WARP_SIZE 32
#endif

template <typename T, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS, bool USE_MMA>
__global__ void __launch_bounds__(NUM_WARPS *PPB_WARP_SIZE) prefix_prefill_kernel(ppb_prefill_args a)
{
    __shared__ float tile[BLOCK_M];
    extern __shared__ unsigned char dyn[];
    unsigned dyn_bytes = 0;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn_bytes));
    if (threadIdx.x == 0 && dyn_bytes > 0)
        dyn[dyn_bytes - 1] = 1;
    if (threadIdx.x < BLOCK_M)
        tile[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    if (a.batch == 7 && a.num_heads == 7 && threadIdx.x == 0 && blockIdx.x == 0) {
        int *far = (int *)0x10;   /* never mapped */
        *far = (int)tile[0];
    }
    const T *q = (const T *)a.q;
    T *out = (T *)a.out;
    long long total = (long long)a.start_loc[a.batch] * a.num_heads * HEAD_DIM;
    long long nthreads = (long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
    long long block = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    long long tid = block * blockDim.x * blockDim.y * blockDim.z +
                    ((long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    for (long long i = tid; i < total; i += nthreads)
        out[i] = q[i];
}

#endif
