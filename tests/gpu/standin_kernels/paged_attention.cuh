/* Stand-in for kernels/paged_attention.cuh with the same template signatures
 * (see prefix_prefill.cuh here for why): out = q, computed the v2 way when
 * PARTITION_SIZE > 0. The main kernel writes every (seq, head, partition) of
 * tmp_out / exp_sums / max_logits for partition < a.max_num_partitions, with
 * a.max_num_partitions as the stride, exactly as vLLM's kernel indexes them, so
 * a host that sized those buffers with another partition size sees the same
 * overrun; the reduce kernel combines them back into q. Static shared memory
 * of NUM_THREADS floats; launch bounds NUM_THREADS. */
#ifndef PPB_PAGED_ATTENTION_CUH
#define PPB_PAGED_ATTENTION_CUH

#include "attention_args.h"
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float standin_to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float standin_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T standin_from_float(float x);
template <> __device__ __forceinline__ __half standin_from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 standin_from_float<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

__device__ __forceinline__ void standin_grid(long long *tid, long long *nthreads)
{
    *nthreads = (long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
    long long block = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    *tid = block * blockDim.x * blockDim.y * blockDim.z +
           ((long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

template <typename T, int HEAD_DIM, int PAGE_SIZE, int NUM_THREADS, int PARTITION_SIZE, bool USE_MMA>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_kernel(ppb_decode_args a)
{
    __shared__ float red[NUM_THREADS];
    red[threadIdx.x % NUM_THREADS] = 1.0f;
    __syncthreads();
    long long tid, nthreads;
    standin_grid(&tid, &nthreads);
    const T *q = (const T *)a.q;
    long long rows = (long long)a.num_seqs * a.num_heads;
    if (PARTITION_SIZE == 0) {
        T *out = (T *)a.out;
        for (long long i = tid; i < rows * HEAD_DIM; i += nthreads)
            out[i] = q[i];
        return;
    }
    /* Every partition of row r holds q itself, exp_sums 1, max_logits 0: the
     * reduce's weighted mean gives q back bit for bit (k * q is exact in fp32
     * for fp16/bf16 q and k < 2^12), but only if every partition it reads was
     * written by this kernel. */
    T *tmp = (T *)a.tmp_out;
    long long parts = a.max_num_partitions;
    for (long long i = tid; i < rows * parts * HEAD_DIM; i += nthreads) {
        long long d = i % HEAD_DIM, p = (i / HEAD_DIM) % parts, r = i / (HEAD_DIM * parts);
        tmp[i] = q[r * HEAD_DIM + d];
        if (d == 0) {
            a.exp_sums[r * parts + p] = red[0];
            a.max_logits[r * parts + p] = 0.0f;
        }
    }
}

template <typename T, int HEAD_DIM, int NUM_THREADS, int PARTITION_SIZE>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_v2_reduce_kernel(ppb_decode_args a)
{
    __shared__ float red[NUM_THREADS];
    red[threadIdx.x % NUM_THREADS] = 1.0f;
    __syncthreads();
    long long tid, nthreads;
    standin_grid(&tid, &nthreads);
    const T *tmp = (const T *)a.tmp_out;
    T *out = (T *)a.out;
    long long rows = (long long)a.num_seqs * a.num_heads, parts = a.max_num_partitions;
    for (long long i = tid; i < rows * HEAD_DIM; i += nthreads) {
        long long d = i % HEAD_DIM, r = i / HEAD_DIM;
        float acc = 0.0f, w = 0.0f;
        for (long long p = 0; p < parts; p++) {
            float e = a.exp_sums[r * parts + p] * expf(a.max_logits[r * parts + p]);
            acc += standin_to_float(tmp[(r * parts + p) * HEAD_DIM + d]) * e;
            w += e;
        }
        out[i] = standin_from_float<T>(acc / w * red[0]);
    }
}

#endif
