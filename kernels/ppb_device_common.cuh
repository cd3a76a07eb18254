/* Device helpers shared by the attention kernels (prefix_prefill.cuh, paged_attention.cuh).
 *
 * Portable by construction (docs/KERNELS-IMPL.md, TARGETS.md): the warp size is the
 * compile-time PPB_WARP_SIZE (32 on NVIDIA, 64 on the BI-V100), never a literal; every
 * helper here compiles for sm_70-class targets and the CoreX toolchain (no inline PTX).
 * Tensor-core code lives in the kernels, inside #if PPB_USE_MMA.
 * Header-only: NVRTC compiles it from a string, nvcc ahead of time. Keep it small and
 * additive: both kernel engineers include it. */
#ifndef PPB_DEVICE_COMMON_CUH
#define PPB_DEVICE_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef PPB_WARP_SIZE
#define PPB_WARP_SIZE 32
#endif
#if PPB_WARP_SIZE != 32 && PPB_WARP_SIZE != 64
#error "PPB_WARP_SIZE must be 32 or 64"
#endif

/* Whether mma.sync / ldmatrix / cp.async code may exist in this compilation. The
 * runtime passes it explicitly (-DPPB_USE_MMA=0|1); the default follows the device
 * pass's architecture, and is 0 in the host pass and on non-NVIDIA toolchains. */
#ifndef PPB_USE_MMA
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__ILUVATAR__)
#define PPB_USE_MMA 1
#else
#define PPB_USE_MMA 0
#endif
#endif

/* Whether warpgroup MMA (wgmma) code may exist: sm_90a device passes only (the "a"
 * architecture-specific target; the features are not forward-compatible), never on
 * other toolchains. The prefill kernel's Hopper path lives behind it. */
#ifndef PPB_USE_WGMMA
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(__ILUVATAR__)
#define PPB_USE_WGMMA 1
#else
#define PPB_USE_WGMMA 0
#endif
#endif

/* A kernel instantiated for a path this compilation cannot run stops the launch
 * (the launcher's plan refuses such configs first; this only makes a mistake loud). */
__device__ __forceinline__ void ppb_trap(void)
{
#if defined(__clang__) && !defined(__CUDACC_RTC__) && !defined(__NVCC__)
    __builtin_trap();
#else
    __trap();
#endif
}

/* ---- warp shuffles: the full mask follows the warp size ------------------------ */
template <typename V>
__device__ __forceinline__ V ppb_warp_xor(V v, int lane_mask)
{
#if PPB_WARP_SIZE == 32
    return __shfl_xor_sync(0xffffffffu, v, lane_mask, 32);
#else
    /* 64-wide warps (CoreX): the unmasked form; a 32-bit mask cannot name 64 lanes. */
    return __shfl_xor(v, lane_mask, 64);
#endif
}

/* Reductions over groups of WIDTH consecutive lanes (WIDTH a power of two <= warp size);
 * every lane of the group gets the result. All lanes of the warp must call. */
template <int WIDTH = PPB_WARP_SIZE>
__device__ __forceinline__ float ppb_warp_sum(float v)
{
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1)
        v += ppb_warp_xor(v, o);
    return v;
}

template <int WIDTH = PPB_WARP_SIZE>
__device__ __forceinline__ float ppb_warp_max(float v)
{
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1)
        v = fmaxf(v, ppb_warp_xor(v, o));
    return v;
}

/* ---- storage dtypes (__half, __nv_bfloat16) <-> fp32 ---------------------------- */
__device__ __forceinline__ float ppb_to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float ppb_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T ppb_from_float(float x);
template <> __device__ __forceinline__ __half ppb_from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 ppb_from_float<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* Two values packed into 32 bits, low half first (the layout of __half2 / __nv_bfloat162
 * and of the mma.sync fragments). */
template <typename T> __device__ __forceinline__ unsigned ppb_pack2(float lo, float hi);
template <> __device__ __forceinline__ unsigned ppb_pack2<__half>(float lo, float hi)
{
    union { __half2 h; unsigned u; } c;
    c.h = __floats2half2_rn(lo, hi);
    return c.u;
}
template <> __device__ __forceinline__ unsigned ppb_pack2<__nv_bfloat16>(float lo, float hi)
{
    union { __nv_bfloat162 h; unsigned u; } c;
    c.h = __floats2bfloat162_rn(lo, hi);
    return c.u;
}

/* Eight values as one 16-byte vector of T (a single 128-bit store). */
template <typename T> __device__ __forceinline__ uint4 ppb_pack8(const float f[8])
{
    uint4 v;
    v.x = ppb_pack2<T>(f[0], f[1]);
    v.y = ppb_pack2<T>(f[2], f[3]);
    v.z = ppb_pack2<T>(f[4], f[5]);
    v.w = ppb_pack2<T>(f[6], f[7]);
    return v;
}

/* The i-th (0..7) element of a 16-byte vector of T, as float. */
template <typename T>
__device__ __forceinline__ float ppb_vec8_get(const uint4 &v, int i)
{
    union { uint4 v; T e[8]; } c;
    c.v = v;
    return ppb_to_float(c.e[i]);
}

/* All 8 elements of a 16-byte vector of T, as floats. */
template <typename T>
__device__ __forceinline__ void ppb_vec8_to_float(const uint4 &v, float out[8])
{
    union { uint4 v; T e[8]; } c;
    c.v = v;
#pragma unroll
    for (int i = 0; i < 8; i++)
        out[i] = ppb_to_float(c.e[i]);
}

#if PPB_USE_MMA
/* d += A x B, mma.sync m16n8k16 with fp32 accumulators: A row-major 16x16 in four
 * registers per thread, B column-major 16x8 in two. One definition per element type. */
template <typename T>
__device__ __forceinline__ void ppb_mma16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1);
#define PPB_DEFINE_MMA16816(T, PTX_TYPE)                                                                          \
    template <>                                                                                                   \
    __device__ __forceinline__ void ppb_mma16816<T>(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,         \
                                                    unsigned a3, unsigned b0, unsigned b1)                        \
    {                                                                                                             \
        asm("mma.sync.aligned.m16n8k16.row.col.f32." PTX_TYPE "." PTX_TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
            "{%8,%9}, {%0,%1,%2,%3};\n"                                                                           \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                      \
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                                              \
    }
PPB_DEFINE_MMA16816(__nv_bfloat16, "bf16")
PPB_DEFINE_MMA16816(__half, "f16")
#undef PPB_DEFINE_MMA16816
#endif

#endif

