/* The input generator: a counter-based hash, so element i of tensor t is a pure
 * function of (seed, t, i). The host (harness/run/workload.c) and a CUDA kernel can
 * both compute any element independently and get the same bits; no state, no
 * order dependence, trivially parallel.
 *
 * Plain C (no CUDA headers); every function is `static inline` and marked
 * __host__ __device__ when compiled by nvcc.
 *
 * The input definition (do not change without changing every stored result):
 *   u(seed, t, i)  = uniform in [-1, 1) with 24-bit resolution from ppb_rng_u64
 *   valid element  = round_to_storage(u)
 *   cache slot beyond a sequence's length ("garbage" that must never be read)
 *                  = round_to_storage(100 + u)
 * Rounding is IEEE round-to-nearest-even (ppb_rng_float_to_fp16 / _bf16 below,
 * identical to __float2half_rn / __float2bfloat16_rn). */
#ifndef PPB_RNG_H
#define PPB_RNG_H

#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif

#ifdef __CUDACC__
#define PPB_HD __host__ __device__
#else
#define PPB_HD
#endif

/* Streams that are not tensors (tensor ids 1..5 are in harness/run/workload.h). */
#define PPB_RNG_STREAM_PAGES 64u   /* Fisher-Yates shuffle of the physical KV pages */
#define PPB_RNG_STREAM_CHECK 65u   /* the checker's row sample */

/* splitmix64's finaliser: a bijection on 64 bits with full avalanche. */
static inline PPB_HD uint64_t ppb_rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* 64 random bits for element `index` of stream `stream` under `seed`. Two
 * rounds of mixing so that neighbouring seeds, streams and indices decorrelate. */
static inline PPB_HD uint64_t ppb_rng_key(uint64_t seed, uint32_t stream)
{
    return ppb_rng_mix64(seed + 0x9E3779B97F4A7C15ull * ((uint64_t)stream + 1u));
}

static inline PPB_HD uint64_t ppb_rng_keyed_u64(uint64_t key, uint64_t index)
{
    return ppb_rng_mix64(key ^ (index * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull));
}

static inline PPB_HD uint64_t ppb_rng_u64(uint64_t seed, uint32_t stream, uint64_t index)
{
    return ppb_rng_keyed_u64(ppb_rng_key(seed, stream), index);
}

/* Uniform in [-1, 1): 24 random bits, exactly representable in float. */
static inline PPB_HD float ppb_rng_keyed_uniform(uint64_t key, uint64_t index)
{
    uint32_t bits = (uint32_t)(ppb_rng_keyed_u64(key, index) >> 40);
    return (float)bits * (1.0f / 8388608.0f) - 1.0f;
}

static inline PPB_HD float ppb_rng_uniform(uint64_t seed, uint32_t stream, uint64_t index)
{
    return ppb_rng_keyed_uniform(ppb_rng_key(seed, stream), index);
}

/* Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32). */
static inline PPB_HD uint32_t ppb_rng_below(uint64_t seed, uint32_t stream, uint64_t index, uint32_t n)
{
    uint64_t bits = ppb_rng_u64(seed, stream, index) >> 32;
    return (uint32_t)((bits * (uint64_t)n) >> 32);
}

static inline PPB_HD uint32_t ppb_rng_float_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

static inline PPB_HD float ppb_rng_bits_float(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

/* float -> IEEE binary16, round to nearest even; overflow gives inf, NaN stays
 * NaN (quiet, sign kept), tiny values become subnormals or signed zero. */
static inline PPB_HD uint16_t ppb_rng_float_to_fp16(float f)
{
    uint32_t x = ppb_rng_float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) /* inf or NaN */
        return (uint16_t)(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (abs >= 0x477FF000u) /* rounds to >= 65520: overflow */
        return (uint16_t)(sign | 0x7C00u);
    if (abs < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
        if (abs < 0x33000000u) /* below 2^-25: rounds to zero (2^-25 itself is a tie to 0) */
            return sign;
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x007FFFFFu) | 0x00800000u;
        uint32_t shift = 126u - exp; /* value = mant * 2^(exp-150); result unit 2^-24 */
        uint32_t q = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q); /* q may carry into the smallest normal: still right */
    }
    /* normal: rebias exponent (127 -> 15) and round 13 dropped mantissa bits */
    uint32_t r = abs - 0x38000000u;
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1FFFu;
    q += (uint32_t)(rem > 0x1000u) | ((uint32_t)(rem == 0x1000u) & q); /* branch-free: random data */
    return (uint16_t)(sign | q);
}

static inline PPB_HD float ppb_rng_fp16_to_float(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = ((uint32_t)h >> 10) & 0x1Fu;
    uint32_t mant = (uint32_t)h & 0x3FFu;
    if (exp == 0x1Fu)
        return ppb_rng_bits_float(sign | 0x7F800000u | (mant << 13));
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in float */
        float v = (float)mant * (1.0f / 16777216.0f);
        return (sign ? -v : v);
    }
    return ppb_rng_bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* float -> bfloat16 (the top 16 bits of a float), round to nearest even. */
static inline PPB_HD uint16_t ppb_rng_float_to_bf16(float f)
{
    uint32_t x = ppb_rng_float_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x0040u); /* NaN: keep sign and payload top, force quiet */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline PPB_HD float ppb_rng_bf16_to_float(uint16_t h)
{
    return ppb_rng_bits_float((uint32_t)h << 16);
}

/* One input element in storage bits; dtype 0 = fp16, 1 = bf16 (harness/core/case.h). */
static inline PPB_HD uint16_t ppb_rng_keyed_input(uint64_t key, uint64_t index, int dtype, int garbage)
{
    float u = ppb_rng_keyed_uniform(key, index);
    if (garbage)
        u = 100.0f + u;
    return dtype == 0 ? ppb_rng_float_to_fp16(u) : ppb_rng_float_to_bf16(u);
}

/* Whether element i of a paged cache tensor is a slot past the `valid` tokens
 * of its physical page (garbage): slot = (i >> slot_shift) & (page_size - 1),
 * page_size a power of two; slot_shift 3 for k_cache [.., D/8, page, 8], 0 for
 * v_cache [.., D, page]. */
static inline PPB_HD int ppb_rng_past_valid(uint64_t index, unsigned slot_shift, unsigned page_size, int valid)
{
    return (int)((index >> slot_shift) & (uint64_t)(page_size - 1u)) >= valid;
}

/* Same as ppb_rng_keyed_input(ppb_rng_key(seed, tensor), ...): the key can be
 * computed once per tensor. */
static inline PPB_HD uint16_t ppb_rng_input(uint64_t seed, uint32_t tensor, uint64_t index, int dtype,
                                            int garbage)
{
    return ppb_rng_keyed_input(ppb_rng_key(seed, tensor), index, dtype, garbage);
}

#endif
