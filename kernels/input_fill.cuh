/* A case's inputs generated on the device: element i of each tensor is
 * ppb_rng_keyed_input of (the tensor's key, i), exactly what the host computes
 * (harness/run/workload.c), so the host needs a copy only where the float64
 * reference reads one, and the GPU never waits for gigabytes of K/V to be made
 * on the CPU and copied over. Plain integer and float arithmetic: builds for
 * every target (no warp-size assumption, no inline PTX). */
#ifndef PPB_INPUT_FILL_CUH
#define PPB_INPUT_FILL_CUH

#include "attention_args.h"
#include "kv_layout.h"
#include "ppb_rng.h"

/* Element i, whose page holds `valid` tokens (ignored for a plain tensor); in
 * the FLASH layout the value of the vLLM-layout element at its place (the
 * same page, so the same `valid`). */
template <int DTYPE>
__device__ __forceinline__ uint16_t input_fill_one(const ppb_fill_args &a, unsigned long long i, int valid)
{
    if (a.layout == PPB_KV_LAYOUT_FLASH)
        i = ppb_kv_flash_to_vllm(i, a.slot_shift == 3, (unsigned long long)a.page_size,
                                 (unsigned long long)a.num_kv_heads, (unsigned long long)a.head_dim);
    int garbage = a.valid_tokens ? ppb_rng_past_valid(i, (unsigned)a.slot_shift, (unsigned)a.page_size, valid) : 0;
    return ppb_rng_keyed_input(a.key, i, DTYPE, garbage);
}

/* The page of element i: a 32-bit division where the tensor fits (a 64-bit one
 * costs about as much as the hashes of the eight elements that share it). */
__device__ __forceinline__ unsigned long long input_fill_page(const ppb_fill_args &a, unsigned long long i,
                                                              bool narrow)
{
    return narrow ? (unsigned long long)((unsigned)i / (unsigned)a.page_elems) : i / a.page_elems;
}

/* The checksum of a.n 16-bit elements: the sum, mod 2^64, of a bijective mix
 * of each element with its index. Two buffers that differ in one element
 * always differ in it (the terms differ, one for one); more changes cancel
 * with a chance of 2^-64. A sum does not depend on the order the blocks add
 * in, so one atomic add per block is enough. The reduction is over the
 * block's threads in shared memory: no warp size assumed; blockDim.x is
 * PPB_FILL_THREADS, a power of two. */
__device__ void input_sum(const ppb_fill_args &a)
{
    __shared__ unsigned long long part[PPB_FILL_THREADS];
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const uint16_t *in = (const uint16_t *)a.data;
    unsigned long long s = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        s += ppb_rng_mix64((i << 16 | in[i]) + 0x9E3779B97F4A7C15ull); /* i < 2^48: (i, value) one for one */
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(a.sum, part[0]);
}

/* DTYPE: PPB_KDTYPE_FP16 or PPB_KDTYPE_BF16. A grid-stride loop: any grid covers
 * any n. Eight consecutive elements per step: one 16-byte store (a.data is a
 * cudaMalloc base, so aligned) and, when pages are whole groups of eight, one
 * page lookup; the n % 8 tail one element at a time. */
template <int DTYPE>
__global__ void input_fill_kernel(const ppb_fill_args a)
{
    if (a.sum) { /* the same kernel, so the catalog and the AOT table have one entry for both */
        input_sum(a);
        return;
    }
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long groups = a.n / 8;
    const bool page_per_group = a.page_elems % 8 == 0;
    const bool narrow = a.n <= 0xFFFFFFFFull && a.page_elems <= 0xFFFFFFFFull;
    uint4 *out8 = (uint4 *)a.data;
    for (unsigned long long g = first; g < groups; g += stride) {
        const unsigned long long i0 = g * 8;
        int valid = a.valid_tokens && page_per_group ? a.valid_tokens[input_fill_page(a, i0, narrow)] : 0;
        unsigned v[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            if (a.valid_tokens && !page_per_group)
                valid = a.valid_tokens[input_fill_page(a, i0 + e, narrow)];
            v[e] = input_fill_one<DTYPE>(a, i0 + e, valid);
        }
        out8[g] = make_uint4(v[0] | v[1] << 16, v[2] | v[3] << 16, v[4] | v[5] << 16, v[6] | v[7] << 16);
    }
    uint16_t *out = (uint16_t *)a.data;
    for (unsigned long long i = groups * 8 + first; i < a.n; i += stride)
        out[i] = input_fill_one<DTYPE>(a, i, a.valid_tokens ? a.valid_tokens[input_fill_page(a, i, narrow)] : 0);
}

#endif
