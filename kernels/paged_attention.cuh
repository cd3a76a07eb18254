/* Paged attention, decode: vLLM's paged_attention_v1 / _v2 + the v2 reduce, as our own
 * CUDA C (contract: ../shared/design/KERNELS.md; layouts: attention_args.h; design and
 * measurements: docs/KERNELS-IMPL.md "Paged attention"). Header-only templates: NVRTC
 * compiles them from a string, nvcc ahead of time. Launch shapes come from
 * decode_plan.c (ppb_decode_plan); the kernels check the shape they are given and trap
 * on a contract violation rather than compute garbage.
 *
 * One CTA handles HPC query heads of one kv head ("GQA group" of the CTA), so each K/V
 * byte is read from memory once per group instead of once per query head:
 *   main kernel grid (num_heads / HPC, num_seqs, v1 ? 1 : max_num_partitions);
 *   HPC = num_heads / gridDim.x, one of 1, 2, 4, 8, dividing num_heads / num_kv_heads
 *   (the plan picks it; v1 lowers it when the logits would not fit in shared memory).
 * Per CTA, for its token range (v1: the whole sequence; v2: PARTITION_SIZE tokens):
 *   1. logits = q . k * sm_scale for all HPC heads -> shared memory (fp32, base-2 units);
 *   2. softmax per head (max, exp2, sum), probabilities written over the logits;
 *   3. out = sum_t p_t v_t, fp32 accumulation, normalised by the sum;
 *   v2 writes the normalised partial out to tmp_out (storage dtype) and max_logits
 *   (natural-log units) / exp_sums (fp32), indexed with a.max_num_partitions, like vLLM.
 * Two code paths per phase, chosen by USE_MMA:
 *   SIMT (portable, any PPB_WARP_SIZE): a thread owns tokens (QK) or V rows (PV), all
 *   HPC heads at once, 16-byte loads, the other operand (q or p) broadcast from shared
 *   memory; no inline PTX.
 *   MMA (NVIDIA sm_80+, inside #if PPB_USE_MMA): mma.sync m16n8k16 with the K / V tile as
 *   the A operand loaded straight from global memory with 16-byte loads (the k index of
 *   the product is permuted so each thread's fragment is one contiguous 16-byte chunk;
 *   the B operand, q or p, uses the same permutation) and the <= 8 heads as N = 8.
 *   Probabilities are rounded to the storage dtype for P x V (as vLLM does). */
#ifndef PPB_PAGED_ATTENTION_CUH
#define PPB_PAGED_ATTENTION_CUH

#include "attention_args.h"
#include "ppb_device_common.cuh"

/* mma.sync code exists only where the compilation allows it (runtime's -DPPB_USE_MMA)
 * and the device pass is sm_80+ (bf16 mma). */
#if PPB_USE_MMA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && PPB_WARP_SIZE == 32
#define PPB_PA_MMA 1
#else
#define PPB_PA_MMA 0
#endif

namespace ppb_pa {

constexpr int kWarp = PPB_WARP_SIZE;

/* Unroll of the v2 SIMT QK loop over 16-byte K chunks (a tuning knob, not part of the
 * template signature: docs/KERNELS-IMPL.md has the measurements behind the default;
 * v1 is always fully unrolled). */
#ifndef PPB_PA_SIMT_QK_UNROLL
#define PPB_PA_SIMT_QK_UNROLL 2
#endif
constexpr int kSimtQkUnroll = PPB_PA_SIMT_QK_UNROLL;

__host__ __device__ constexpr int cmin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int round_up(int a, int b) { return (a + b - 1) / b * b; }

/* Work split of the SIMT paths (compile-time; decode_plan.c repeats the part that sizes
 * shared memory, and tests/gpu/test_decode_kernel.cu checks both agree). */
template <int D, int PAGE, int NT, int PART>
struct simt_geometry {
    static constexpr int NW = NT / kWarp;
    static constexpr int CH = D / 8;                 /* 16-byte chunks of a K row */
    /* QK: TG threads share a token (each CH/TG chunks), TT tokens per thread per pass. */
    static constexpr int TG_WANT = PART == 0 ? 1
                                 : (NT / 1) * 4 <= PART ? 1
                                 : (NT / 2) * 4 <= PART ? 2
                                 : (NT / 4) * 4 <= PART ? 4 : 8;
    static constexpr int TG = cmin(cmin(TG_WANT, CH), kWarp);
    static constexpr int TT = PART == 0 ? 4 : cmax(1, cmin(4, PART * TG / NT));
    static constexpr int SLOTS = NT / TG;            /* tokens per pass and per j */
    static constexpr int PASS = SLOTS * TT;
    /* PV: a thread owns VR rows of V and one 8-token chunk (CPR chunks per page row). */
    static constexpr int CPR = PAGE / 8;
    static constexpr int VR = cmin(4, D * CPR / kWarp);
    static constexpr int RPI = kWarp / CPR;          /* rows one warp instruction covers */
    static constexpr int RPB = VR * RPI;             /* rows of one row block */
    static constexpr int NRB = D / RPB;
    static constexpr int WD = cmin(NRB, NW);         /* warps along D */
    static constexpr int WT = NW / WD;               /* warps along tokens (pages) */
    static constexpr int RB_PER_WARP = NRB / WD;
};

/* Work split of the MMA path. */
template <int D, int NT>
struct mma_geometry {
    static constexpr int NW = NT / kWarp;
    static constexpr int KM = D / 32;                /* 16-byte K chunks per row per thread */
    static constexpr int UQ = cmax(1, 8 / KM);       /* 16-token tiles per QK step (16 loads) */
    static constexpr int NMT = D / 16;               /* 16-row m-tiles of V^T */
    static constexpr int WD = cmin(NW, NMT);
    static constexpr int WT = NW / WD;
    static constexpr int MPW = NMT / WD;             /* m-tiles per warp */
    static constexpr int UV = cmax(1, 8 / MPW);      /* 32-token spans per PV step (16 loads) */
};

/* Dynamic shared memory of the main kernel, in bytes (layout in floats):
 *   [HPC][RA] logits / probabilities (row stride LPS) and, after P x V, the output
 *             exchange [WT][HPC][D];
 *   [HPC][D]  q in fp32 (SIMT only);
 *   [2][HPC][NW] softmax partials; [4][HPC] per-head statistics.
 * LPS = round_up(n_max, 32) + 4 (n_max = PART, v1: max_seq_len): 16-byte rows whose
 * stride is 4 words off a multiple of 32 banks, so the MMA path's stores and loads of
 * the logits are conflict-free. */
__host__ __device__ inline unsigned long long main_smem_bytes(int hpc, int n_max, int wt, int d, int nw,
                                                              bool simt)
{
    unsigned long long lps = (unsigned long long)round_up(n_max, 32) + 4;
    unsigned long long ra = lps > (unsigned long long)wt * d ? lps : (unsigned long long)wt * d;
    unsigned long long floats = hpc * ra + (simt ? (unsigned long long)hpc * d : 0ull) +
                                2ull * hpc * nw + 4ull * hpc;
    return floats * 4ull;
}

/* The same for one instantiation (the test compares it with the plan's figure). */
template <int D, int PAGE, int NT, int PART, bool USE_MMA>
__host__ __device__ inline unsigned long long kernel_smem_bytes(int hpc, int max_seq_len)
{
    typedef simt_geometry<D, PAGE, NT, PART> SG;
    typedef mma_geometry<D, NT> MG;
    const int wt = USE_MMA ? MG::WT : SG::WT;
    return main_smem_bytes(hpc, PART == 0 ? max_seq_len : PART, wt, D, NT / kWarp, !USE_MMA);
}

/* Reduce kernel: weights [round_up(P, 4)], output exchange [NT / (D / 8)][D], block
 * reduction [2][NW]. */
__host__ __device__ inline unsigned long long reduce_smem_bytes(int max_num_partitions, int d, int nt)
{
    return 4ull * ((unsigned long long)round_up(max_num_partitions, 4) +
                   (unsigned long long)(nt / (d / 8)) * d + 2ull * (nt / kWarp));
}

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000u); }

__device__ __forceinline__ uint4 ldg16(const void *p) { return __ldg(reinterpret_cast<const uint4 *>(p)); }

/* L2 eviction priorities (docs/KERNELS-IMPL.md "Paged attention"): K and V are streamed
 * once, the v2 partials are written by the main kernel and read back by the reduce right
 * after. Marking K/V evict-first and the partials evict-last keeps the partials in L2
 * between the two kernels; the reduce reads them evict-first, so they do not outstay it.
 * The hints are sm_80+ PTX (createpolicy, .L2::cache_hint): only where inline PTX is
 * allowed at all (PPB_USE_MMA); plain loads and stores elsewhere (the BI-V100, sm_70).
 * -DPPB_PA_L2_HINTS=0 turns them off for an A/B. */
#ifndef PPB_PA_L2_HINTS
#if PPB_USE_MMA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define PPB_PA_L2_HINTS 1
#else
#define PPB_PA_L2_HINTS 0
#endif
#endif

#if PPB_PA_L2_HINTS
__device__ __forceinline__ unsigned long long l2_evict_first()
{
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

__device__ __forceinline__ unsigned long long l2_evict_last()
{
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}
#endif

/* 16 bytes read once: K and V, and the partials in the reduce. */
__device__ __forceinline__ uint4 ldg16_once(const void *p)
{
#if PPB_PA_L2_HINTS
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(l2_evict_first()));
    return v;
#else
    return ldg16(p);
#endif
}

/* 16 bytes of a v2 partial (tmp_out), kept in L2 for the reduce. */
__device__ __forceinline__ void st16_partial(void *p, const uint4 &v)
{
#if PPB_PA_L2_HINTS
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w), "l"(l2_evict_last())
                 : "memory");
#else
    *reinterpret_cast<uint4 *>(p) = v;
#endif
}

__device__ __forceinline__ uint4 zero16()
{
    uint4 z;
    z.x = z.y = z.z = z.w = 0u;
    return z;
}

/* Zero the 16-bit elements i >= n (0 <= n <= 8) of a 16-byte vector: cache slots past
 * the sequence's end hold stale data and must not reach the sum (0 * NaN = NaN). */
__device__ __forceinline__ void mask_tail(uint4 &v, int n)
{
    unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (2 * i >= n)
            w[i] = 0u;
        else if (2 * i + 1 >= n)
            w[i] &= 0xffffu;
    }
    v.x = w[0];
    v.y = w[1];
    v.z = w[2];
    v.w = w[3];
}

template <typename T> __device__ __forceinline__ void unpack8(const uint4 &v, float f[8])
{
    ppb_vec8_to_float<T>(v, f);
}

/* What one CTA works on. */
struct work {
    int seq, head0, kvh, part;
    int seq_len, start, n_tok, win_lo;
    const int32_t *bt;            /* this sequence's block table row */
    const char *k_head, *v_head;  /* cache bases at page 0, this kv head (bytes) */
    long long page_stride;        /* bytes between physical pages */
};

/* ------------------------------------------------------------------ QK, SIMT */
/* s + a[0..3] . f[0..3] + b[0..3] . f[4..7], in this order (both SIMT
 * passes accumulate eight unpacked elements the same way). */
__device__ __forceinline__ float fma8(float s, const float4 &a, const float4 &b, const float f[8])
{
    s = fmaf(a.x, f[0], s);
    s = fmaf(a.y, f[1], s);
    s = fmaf(a.z, f[2], s);
    s = fmaf(a.w, f[3], s);
    s = fmaf(b.x, f[4], s);
    s = fmaf(b.y, f[5], s);
    s = fmaf(b.z, f[6], s);
    return fmaf(b.w, f[7], s);
}

template <typename T, int D, int PAGE, int NT, int PART, int HPC>
__device__ __forceinline__ void qk_simt(const work &w, float *logits, int lps, const float *q_s, float scale2)
{
    typedef simt_geometry<D, PAGE, NT, PART> G;
    const int tid = threadIdx.x;
    const int sub = tid % G::TG, slot = tid / G::TG;
    constexpr int NCI = G::CH / G::TG;
    const float4 *q4 = reinterpret_cast<const float4 *>(q_s);
    for (int base = 0; base < w.n_tok; base += G::PASS) {
        const char *kp[G::TT];
        bool ok[G::TT];
#pragma unroll
        for (int j = 0; j < G::TT; j++) {
            const int local = base + j * G::SLOTS + slot;
            const int tok = w.start + local;
            ok[j] = local < w.n_tok && tok >= w.win_lo;
            kp[j] = w.k_head;
            if (ok[j]) {
                const long long phys = w.bt[tok / PAGE];
                kp[j] = w.k_head + phys * w.page_stride + (long long)(tok % PAGE) * 16;
            }
        }
        float acc[G::TT][HPC];
#pragma unroll
        for (int j = 0; j < G::TT; j++)
#pragma unroll
            for (int g = 0; g < HPC; g++)
                acc[j][g] = 0.f;
        uint4 cur[G::TT];
#pragma unroll
        for (int j = 0; j < G::TT; j++)
            cur[j] = ok[j] ? ldg16_once(kp[j] + (long long)sub * PAGE * 16) : zero16();
        /* v2: not fully unrolled. 16 chunk steps x HPC x TT FMAs made the loop larger than
         * the instruction cache while 4 CTAs per SM sit in different phases (ncu: 40% of
         * stall cycles on instruction fetch; unroll 2: 2.72 -> 3.11 TB/s). v1 (one CTA per
         * SM, few warps) is faster fully unrolled (10.5 ms vs 15.2 ms at unroll 2). */
#pragma unroll(PART == 0 ? NCI : kSimtQkUnroll)
        for (int ci = 0; ci < NCI; ci++) {
            const int c = ci * G::TG + sub;
            uint4 nxt[G::TT];
            if (ci + 1 < NCI) {
#pragma unroll
                for (int j = 0; j < G::TT; j++)
                    nxt[j] = ok[j] ? ldg16_once(kp[j] + (long long)(c + G::TG) * PAGE * 16) : zero16();
            }
            float kf[G::TT][8];
#pragma unroll
            for (int j = 0; j < G::TT; j++)
                unpack8<T>(cur[j], kf[j]);
#pragma unroll
            for (int g = 0; g < HPC; g++) {
                const float4 qa = q4[(g * D + c * 8) / 4], qb = q4[(g * D + c * 8) / 4 + 1];
#pragma unroll
                for (int j = 0; j < G::TT; j++)
                    acc[j][g] = fma8(acc[j][g], qa, qb, kf[j]);
            }
            if (ci + 1 < NCI) {
#pragma unroll
                for (int j = 0; j < G::TT; j++)
                    cur[j] = nxt[j];
            }
        }
        if (G::TG > 1) {
#pragma unroll
            for (int j = 0; j < G::TT; j++)
#pragma unroll
                for (int g = 0; g < HPC; g++)
                    acc[j][g] = ppb_warp_sum<G::TG>(acc[j][g]);
        }
#pragma unroll
        for (int j = 0; j < G::TT; j++) {
            const int local = base + j * G::SLOTS + slot;
            if (local < w.n_tok) {
#pragma unroll
                for (int g = 0; g < HPC; g++)
                    if (g % G::TG == sub)
                        logits[g * lps + local] = ok[j] ? acc[j][g] * scale2 : neg_inf();
            }
        }
    }
}

/* ------------------------------------------------------------------ PV, SIMT */
/* Leaves the un-normalised output of its rows in xchg[wt][g][d]. */
template <typename T, int D, int PAGE, int NT, int PART, int HPC>
__device__ __forceinline__ void pv_simt(const work &w, const float *probs, int lps, float *xchg)
{
    typedef simt_geometry<D, PAGE, NT, PART> G;
    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
    const int wd = warp % G::WD, wt = warp / G::WD;
    const int cc = lane % G::CPR, rl = lane / G::CPR;
    const int n_pages = (w.n_tok + PAGE - 1) / PAGE;
    const int page0 = w.start / PAGE;
    constexpr int UV = 2;
    float acc_all[G::RB_PER_WARP][G::VR][HPC];
#pragma unroll
    for (int rbi = 0; rbi < G::RB_PER_WARP; rbi++) {
        const int row0 = (wd * G::RB_PER_WARP + rbi) * G::RPB + rl;
        float(&acc)[G::VR][HPC] = acc_all[rbi];
#pragma unroll
        for (int k = 0; k < G::VR; k++)
#pragma unroll
            for (int g = 0; g < HPC; g++)
                acc[k][g] = 0.f;
        for (int pg = wt; pg < n_pages; pg += G::WT * UV) {
            uint4 v[UV][G::VR];
            int nvalid[UV];
#pragma unroll
            for (int u = 0; u < UV; u++) {
                const int page = pg + u * G::WT;
                const int local0 = page * PAGE + cc * 8;
                const int tok0 = w.start + local0;
                const bool ok = page < n_pages && tok0 < w.seq_len && tok0 + 8 > w.win_lo;
                nvalid[u] = ok ? cmin(8, w.seq_len - tok0) : 0;
                const char *vp = w.v_head;
                if (ok)
                    vp = w.v_head + (long long)w.bt[page0 + page] * w.page_stride +
                         ((long long)row0 * PAGE + cc * 8) * 2;
#pragma unroll
                for (int k = 0; k < G::VR; k++)
                    v[u][k] = ok ? ldg16_once(vp + (long long)k * G::RPI * PAGE * 2) : zero16();
            }
#pragma unroll
            for (int u = 0; u < UV; u++) {
                const int page = pg + u * G::WT;
                if (page >= n_pages)
                    break;
                const int local0 = page * PAGE + cc * 8;
                float vf[G::VR][8];
#pragma unroll
                for (int k = 0; k < G::VR; k++) {
                    if (nvalid[u] > 0 && nvalid[u] < 8)
                        mask_tail(v[u][k], nvalid[u]);
                    unpack8<T>(v[u][k], vf[k]);
                }
#pragma unroll
                for (int g = 0; g < HPC; g++) {
                    const float4 pa = *reinterpret_cast<const float4 *>(probs + g * lps + local0);
                    const float4 pb = *reinterpret_cast<const float4 *>(probs + g * lps + local0 + 4);
#pragma unroll
                    for (int k = 0; k < G::VR; k++)
                        acc[k][g] = fma8(acc[k][g], pa, pb, vf[k]);
                }
            }
        }
        if (G::CPR > 1) {
#pragma unroll
            for (int k = 0; k < G::VR; k++)
#pragma unroll
                for (int g = 0; g < HPC; g++)
                    acc[k][g] = ppb_warp_sum<G::CPR>(acc[k][g]);
        }
    }
    __syncthreads(); /* every warp is done with the probabilities: xchg overlays them */
#pragma unroll
    for (int rbi = 0; rbi < G::RB_PER_WARP; rbi++) {
        const int row0 = (wd * G::RB_PER_WARP + rbi) * G::RPB + rl;
        if (cc == 0) {
#pragma unroll
            for (int k = 0; k < G::VR; k++)
#pragma unroll
                for (int g = 0; g < HPC; g++)
                    xchg[(wt * HPC + g) * D + row0 + k * G::RPI] = acc_all[rbi][k][g];
        }
    }
}

#if PPB_PA_MMA
/* ------------------------------------------------------------------ QK, MMA */
/* S^T[16 tokens x 8 heads] = K[16 tokens x D] Q^T[D x 8 heads], D in 16-wide k-steps.
 * Thread (gid = lane / 4, t = lane % 4) loads, for tokens gid and gid + 8, the 16-byte
 * chunks c = 4m + t (m < D / 32); k-step (m, h) takes d = 8c + 4h + {0,1 | 2,3} for
 * k = {2t, 2t+1 | 2t+8, 2t+9}; q[head gid] is loaded with the same mapping. */
template <typename T, int D, int PAGE, int NT, int HPC>
__device__ __forceinline__ void qk_mma(const work &w, const ppb_decode_args &a, float *logits, int lps,
                                       float scale2)
{
    typedef mma_geometry<D, NT> G;
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int gid = lane >> 2, t = lane & 3;
    unsigned qf[G::KM][4];
    {
        const char *qrow = reinterpret_cast<const char *>(a.q) +
                           ((long long)w.seq * a.num_heads + w.head0 + cmin(gid, HPC - 1)) * D * 2;
#pragma unroll
        for (int m = 0; m < G::KM; m++) {
            uint4 v = gid < HPC ? ldg16(qrow + (4 * m + t) * 16) : zero16();
            qf[m][0] = v.x;
            qf[m][1] = v.y;
            qf[m][2] = v.z;
            qf[m][3] = v.w;
        }
    }
    const int n_tiles = (w.n_tok + 15) / 16;
    for (int t0 = warp; t0 < n_tiles; t0 += G::NW * G::UQ) {
        uint4 kl[G::UQ][G::KM], kh[G::UQ][G::KM];
#pragma unroll
        for (int u = 0; u < G::UQ; u++) {
            const int local_lo = (t0 + u * G::NW) * 16 + gid, local_hi = local_lo + 8;
            const int tok_lo = w.start + local_lo, tok_hi = w.start + local_hi;
            const bool ok_lo = local_lo < w.n_tok && tok_lo >= w.win_lo;
            const bool ok_hi = local_hi < w.n_tok && tok_hi >= w.win_lo;
            const char *plo = w.k_head, *phi = w.k_head;
            if (ok_lo)
                plo = w.k_head + (long long)w.bt[tok_lo / PAGE] * w.page_stride + (long long)(tok_lo % PAGE) * 16;
            if (ok_hi)
                phi = w.k_head + (long long)w.bt[tok_hi / PAGE] * w.page_stride + (long long)(tok_hi % PAGE) * 16;
#pragma unroll
            for (int m = 0; m < G::KM; m++) {
                kl[u][m] = ok_lo ? ldg16_once(plo + (long long)(4 * m + t) * PAGE * 16) : zero16();
                kh[u][m] = ok_hi ? ldg16_once(phi + (long long)(4 * m + t) * PAGE * 16) : zero16();
            }
        }
#pragma unroll
        for (int u = 0; u < G::UQ; u++) {
            const int tile = t0 + u * G::NW;
            if (tile >= n_tiles)
                break; /* warp-uniform */
            float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int m = 0; m < G::KM; m++) {
                ppb_mma16816<T>(c, kl[u][m].x, kh[u][m].x, kl[u][m].y, kh[u][m].y, qf[m][0], qf[m][1]);
                ppb_mma16816<T>(c, kl[u][m].z, kh[u][m].z, kl[u][m].w, kh[u][m].w, qf[m][2], qf[m][3]);
            }
            const int local_lo = tile * 16 + gid, local_hi = local_lo + 8;
            const bool vis_lo = w.start + local_lo >= w.win_lo, vis_hi = w.start + local_hi >= w.win_lo;
            /* c0, c1: token gid, heads 2t, 2t+1; c2, c3: token gid + 8 */
            if (2 * t < HPC) {
                if (local_lo < w.n_tok)
                    logits[(2 * t) * lps + local_lo] = vis_lo ? c[0] * scale2 : neg_inf();
                if (local_hi < w.n_tok)
                    logits[(2 * t) * lps + local_hi] = vis_hi ? c[2] * scale2 : neg_inf();
            }
            if (2 * t + 1 < HPC) {
                if (local_lo < w.n_tok)
                    logits[(2 * t + 1) * lps + local_lo] = vis_lo ? c[1] * scale2 : neg_inf();
                if (local_hi < w.n_tok)
                    logits[(2 * t + 1) * lps + local_hi] = vis_hi ? c[3] * scale2 : neg_inf();
            }
        }
    }
}

/* ------------------------------------------------------------------ PV, MMA */
/* O^T[16 rows of D x 8 heads] += V^T[16 rows x 16 tokens] P^T[16 tokens x 8 heads].
 * A 32-token span is two k-steps: thread (gid, t) loads rows gid and gid + 8, tokens
 * 8t..8t+7 of the span (one 16-byte chunk: V rows are token-contiguous); k-step h takes
 * tokens 4h + {0,1 | 2,3}; p[head gid] for the same 8 tokens is the B fragment. */
template <typename T, int D, int PAGE, int NT, int HPC>
__device__ __forceinline__ void pv_mma(const work &w, const float *probs, int lps, float *xchg)
{
    typedef mma_geometry<D, NT> G;
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int gid = lane >> 2, t = lane & 3;
    const int wd = warp % G::WD, wt = warp / G::WD;
    const int n_spans = (w.n_tok + 31) / 32;
    float acc[G::MPW][4];
#pragma unroll
    for (int mi = 0; mi < G::MPW; mi++)
        acc[mi][0] = acc[mi][1] = acc[mi][2] = acc[mi][3] = 0.f;
    for (int s0 = wt; s0 < n_spans; s0 += G::WT * G::UV) {
        uint4 vl[G::UV][G::MPW], vh[G::UV][G::MPW];
        int nvalid[G::UV];
#pragma unroll
        for (int u = 0; u < G::UV; u++) {
            const int local0 = (s0 + u * G::WT) * 32 + 8 * t;
            const int tok0 = w.start + local0;
            const bool ok = local0 < w.n_tok && tok0 + 8 > w.win_lo;
            nvalid[u] = ok ? cmin(8, w.seq_len - tok0) : 0;
            const char *vp = w.v_head;
            if (ok)
                vp = w.v_head + (long long)w.bt[tok0 / PAGE] * w.page_stride +
                     ((long long)(wd * G::MPW * 16 + gid) * PAGE + tok0 % PAGE) * 2;
#pragma unroll
            for (int mi = 0; mi < G::MPW; mi++) {
                vl[u][mi] = ok ? ldg16_once(vp + (long long)(mi * 16) * PAGE * 2) : zero16();
                vh[u][mi] = ok ? ldg16_once(vp + (long long)(mi * 16 + 8) * PAGE * 2) : zero16();
            }
        }
#pragma unroll
        for (int u = 0; u < G::UV; u++) {
            const int span = s0 + u * G::WT;
            if (span >= n_spans)
                break; /* warp-uniform */
            const int local0 = span * 32 + 8 * t;
            unsigned pb[4] = {0u, 0u, 0u, 0u};
            if (gid < HPC) {
                const float4 pa = *reinterpret_cast<const float4 *>(probs + gid * lps + local0);
                const float4 pc = *reinterpret_cast<const float4 *>(probs + gid * lps + local0 + 4);
                pb[0] = ppb_pack2<T>(pa.x, pa.y);
                pb[1] = ppb_pack2<T>(pa.z, pa.w);
                pb[2] = ppb_pack2<T>(pc.x, pc.y);
                pb[3] = ppb_pack2<T>(pc.z, pc.w);
            }
#pragma unroll
            for (int mi = 0; mi < G::MPW; mi++) {
                if (nvalid[u] > 0 && nvalid[u] < 8) {
                    mask_tail(vl[u][mi], nvalid[u]);
                    mask_tail(vh[u][mi], nvalid[u]);
                }
                ppb_mma16816<T>(acc[mi], vl[u][mi].x, vh[u][mi].x, vl[u][mi].y, vh[u][mi].y, pb[0], pb[1]);
                ppb_mma16816<T>(acc[mi], vl[u][mi].z, vh[u][mi].z, vl[u][mi].w, vh[u][mi].w, pb[2], pb[3]);
            }
        }
    }
    __syncthreads(); /* every warp is done with the probabilities: xchg overlays them */
#pragma unroll
    for (int mi = 0; mi < G::MPW; mi++) {
        const int row = (wd * G::MPW + mi) * 16 + gid;
        /* c0, c1: row, heads 2t, 2t+1; c2, c3: row + 8 */
        if (2 * t < HPC) {
            xchg[(wt * HPC + 2 * t) * D + row] = acc[mi][0];
            xchg[(wt * HPC + 2 * t) * D + row + 8] = acc[mi][2];
        }
        if (2 * t + 1 < HPC) {
            xchg[(wt * HPC + 2 * t + 1) * D + row] = acc[mi][1];
            xchg[(wt * HPC + 2 * t + 1) * D + row + 8] = acc[mi][3];
        }
    }
}
#endif /* PPB_PA_MMA */

/* ------------------------------------------------------------------ softmax */
/* Per head over the CTA's n_tok logits (base-2 units): max, p = exp2(l - max) written
 * over the logits (zero padding up to the next 32 tokens), sum. Leaves max (base 2) in
 * stats[g], the sum in stats[HPC + g]. */
template <int NT, int HPC>
__device__ __forceinline__ void softmax(float *logits, int lps, int n_tok, float *red, float *stats)
{
    constexpr int NW = NT / kWarp;
    constexpr int WPH = NW >= HPC ? NW / HPC : 1; /* warps per head */
    constexpr int HPW = HPC > NW ? HPC / NW : 1;  /* heads per warp */
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int part = warp % WPH;
    const int n_pad = round_up(n_tok, 32);
#pragma unroll
    for (int hh = 0; hh < HPW; hh++) {
        const int g = (warp / WPH) * HPW + hh;
        float m = neg_inf();
        for (int i = part * kWarp + lane; i < n_tok; i += WPH * kWarp)
            m = fmaxf(m, logits[g * lps + i]);
        m = ppb_warp_max(m);
        if (lane == 0)
            red[g * WPH + part] = m;
    }
    __syncthreads();
#pragma unroll
    for (int hh = 0; hh < HPW; hh++) {
        const int g = (warp / WPH) * HPW + hh;
        float m = red[g * WPH];
#pragma unroll
        for (int i = 1; i < WPH; i++)
            m = fmaxf(m, red[g * WPH + i]);
        float s = 0.f;
        for (int i = part * kWarp + lane; i < n_pad; i += WPH * kWarp) {
            float p = 0.f;
            if (i < n_tok)
                p = exp2f(logits[g * lps + i] - m); /* -inf (masked) -> 0; m is finite */
            logits[g * lps + i] = p;
            s += p;
        }
        s = ppb_warp_sum(s);
        if (lane == 0)
            red[HPC * WPH + g * WPH + part] = s;
        if (part == 0 && lane == 0)
            stats[g] = m;
    }
    __syncthreads();
    if (threadIdx.x < HPC) {
        const int g = threadIdx.x;
        float s = 0.f;
        for (int i = 0; i < WPH; i++)
            s += red[HPC * WPH + g * WPH + i];
        stats[HPC + g] = s;
    }
    __syncthreads();
}

/* ------------------------------------------------------------------ main body */
template <typename T, int D, int PAGE, int NT, int PART, bool USE_MMA, int HPC>
__device__ __forceinline__ void attention_body(const ppb_decode_args &a)
{
    typedef simt_geometry<D, PAGE, NT, PART> SG;
    typedef mma_geometry<D, NT> MG;
    constexpr int NW = NT / kWarp;
    constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
    extern __shared__ float4 pa_smem4[];
    float *smem = reinterpret_cast<float *>(pa_smem4);

    work w;
    w.seq = blockIdx.y;
    w.part = blockIdx.z;
    w.head0 = blockIdx.x * HPC;
    w.kvh = w.head0 / (a.num_heads / a.num_kv_heads);
    w.seq_len = a.seq_lens[w.seq];
    if (PART == 0) {
        if (w.seq_len > a.max_seq_len)
            ppb_trap(); /* the logits would overrun shared memory */
        w.start = 0;
        w.n_tok = w.seq_len;
    } else {
        if (w.seq_len > (long long)gridDim.z * PART)
            ppb_trap(); /* partitions past the grid would be lost */
        w.start = w.part * PART;
        if (w.start >= w.seq_len)
            return; /* past this sequence's end: nothing to write, the reduce never reads it */
        w.n_tok = cmin(PART, w.seq_len - w.start);
    }
    w.win_lo = a.sliding_window > 0 ? cmax(0, w.seq_len - a.sliding_window) : 0;
    w.bt = a.block_table + (long long)w.seq * a.max_blocks_per_seq;
    w.page_stride = (long long)a.num_kv_heads * D * PAGE * 2;
    w.k_head = reinterpret_cast<const char *>(a.k_cache) + (long long)w.kvh * D * PAGE * 2;
    w.v_head = reinterpret_cast<const char *>(a.v_cache) + (long long)w.kvh * D * PAGE * 2;

    const long long row0 = (long long)w.seq * a.num_heads + w.head0; /* first output row */
    const int n_max = PART == 0 ? a.max_seq_len : PART;
    const int lps = round_up(n_max, 32) + 4;
    const int wt = USE_MMA ? MG::WT : SG::WT;
    const int ra = cmax(lps, wt * D);
#if defined(__CUDA_ARCH__) && PPB_WARP_SIZE == 32 && !defined(__ILUVATAR__)
    {
        unsigned dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if ((unsigned long long)dyn < kernel_smem_bytes<D, PAGE, NT, PART, USE_MMA>(HPC, a.max_seq_len))
            ppb_trap(); /* launched with less dynamic shared memory than the plan gives */
    }
#endif
    float *logits = smem;
    float *q_s = smem + HPC * ra;
    float *red = q_s + (USE_MMA ? 0 : HPC * D);
    float *stats = red + 2 * HPC * NW;

    if (w.seq_len <= 0 || w.start + w.n_tok <= w.win_lo) {
        /* nothing visible (empty sequence, or a v2 partition wholly before the sliding
         * window): a zero output, exp_sum 0 and max -inf, so the reduce weighs it 0. */
        for (int i = threadIdx.x; i < HPC * D; i += NT) {
            const int g = i / D, d = i % D;
            if (PART == 0)
                reinterpret_cast<T *>(a.out)[(row0 + g) * D + d] = ppb_from_float<T>(0.f);
            else
                reinterpret_cast<T *>(a.tmp_out)[((row0 + g) * a.max_num_partitions + w.part) * D + d] =
                    ppb_from_float<T>(0.f);
        }
        if (PART != 0 && threadIdx.x < HPC) {
            const long long idx = (row0 + threadIdx.x) * a.max_num_partitions + w.part;
            a.max_logits[idx] = neg_inf();
            a.exp_sums[idx] = 0.f;
        }
        return;
    }

    const float scale2 = a.sm_scale * kLog2e; /* logits in base-2 units: exp2 in the softmax */
    if (USE_MMA) {
#if PPB_PA_MMA
        qk_mma<T, D, PAGE, NT, HPC>(w, a, logits, lps, scale2);
#else
        ppb_trap(); /* USE_MMA instantiated where this compilation has no mma path */
#endif
    } else {
        const T *q = reinterpret_cast<const T *>(a.q) + row0 * D;
        for (int i = threadIdx.x; i < HPC * D; i += NT)
            q_s[i] = ppb_to_float(q[i]);
        __syncthreads();
        qk_simt<T, D, PAGE, NT, PART, HPC>(w, logits, lps, q_s, scale2);
    }
    __syncthreads();
    softmax<NT, HPC>(logits, lps, w.n_tok, red, stats);

    float *xchg = smem; /* overlays the probabilities once P x V is done */
    if (USE_MMA) {
#if PPB_PA_MMA
        pv_mma<T, D, PAGE, NT, HPC>(w, logits, lps, xchg);
#endif
    } else {
        pv_simt<T, D, PAGE, NT, PART, HPC>(w, logits, lps, xchg);
    }
    __syncthreads();

    /* out = sum over the token warps / exp_sum, 8 elements (16 bytes) per thread */
    for (int i = threadIdx.x; i < HPC * D / 8; i += NT) {
        const int g = i / (D / 8), d0 = (i % (D / 8)) * 8;
        const float inv = 1.f / stats[HPC + g];
        float o[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            float s = 0.f;
            for (int k = 0; k < wt; k++)
                s += xchg[(k * HPC + g) * D + d0 + e];
            o[e] = s * inv;
        }
        if (PART == 0)
            *reinterpret_cast<uint4 *>(reinterpret_cast<T *>(a.out) + (row0 + g) * D + d0) = ppb_pack8<T>(o);
        else
            st16_partial(reinterpret_cast<T *>(a.tmp_out) + ((row0 + g) * a.max_num_partitions + w.part) * D + d0,
                         ppb_pack8<T>(o));
    }
    if (PART != 0 && threadIdx.x < HPC) {
        const long long idx = (row0 + threadIdx.x) * a.max_num_partitions + w.part;
        a.max_logits[idx] = stats[threadIdx.x] * kLn2; /* natural-log units, as vLLM */
        a.exp_sums[idx] = stats[HPC + threadIdx.x];
    }
}

} /* namespace ppb_pa */

/* The main kernel. Grid (num_heads / HPC, num_seqs, PARTITION_SIZE ? max_num_partitions : 1),
 * block NUM_THREADS, dynamic shared memory from ppb_decode_plan. PARTITION_SIZE 0 = v1. */
template <typename T, int HEAD_DIM, int PAGE_SIZE, int NUM_THREADS, int PARTITION_SIZE, bool USE_MMA>
__global__ void __launch_bounds__(NUM_THREADS, (512 / NUM_THREADS > 0 ? 512 / NUM_THREADS : 1))
    paged_attention_kernel(ppb_decode_args a)
{
    static_assert(HEAD_DIM == 64 || HEAD_DIM == 128 || HEAD_DIM == 256, "head_dim 64, 128 or 256");
    static_assert(PAGE_SIZE == 8 || PAGE_SIZE == 16 || PAGE_SIZE == 32, "page size 8, 16 or 32");
    static_assert(NUM_THREADS % PPB_WARP_SIZE == 0 && NUM_THREADS >= 64 && NUM_THREADS <= 256,
                  "NUM_THREADS: whole warps, 64..256");
    static_assert(PARTITION_SIZE >= 0 && PARTITION_SIZE % 32 == 0, "PARTITION_SIZE: 0 (v1) or a multiple of 32");
    static_assert(!USE_MMA || PPB_WARP_SIZE == 32, "the mma path needs 32-wide warps");
    const int hpc = a.num_heads / (int)gridDim.x;
    const int group = a.num_kv_heads > 0 ? a.num_heads / a.num_kv_heads : 0;
    if (hpc * (int)gridDim.x != a.num_heads || group <= 0 || group * a.num_kv_heads != a.num_heads ||
        group % hpc != 0 || a.head_dim != HEAD_DIM || a.page_size != PAGE_SIZE || blockDim.x != NUM_THREADS ||
        (PARTITION_SIZE != 0 && (int)gridDim.z > a.max_num_partitions))
        ppb_trap(); /* launch shape does not match the plan's contract */
    switch (hpc) {
    case 8: ppb_pa::attention_body<T, HEAD_DIM, PAGE_SIZE, NUM_THREADS, PARTITION_SIZE, USE_MMA, 8>(a); break;
    case 4: ppb_pa::attention_body<T, HEAD_DIM, PAGE_SIZE, NUM_THREADS, PARTITION_SIZE, USE_MMA, 4>(a); break;
    case 2: ppb_pa::attention_body<T, HEAD_DIM, PAGE_SIZE, NUM_THREADS, PARTITION_SIZE, USE_MMA, 2>(a); break;
    case 1: ppb_pa::attention_body<T, HEAD_DIM, PAGE_SIZE, NUM_THREADS, PARTITION_SIZE, USE_MMA, 1>(a); break;
    default: ppb_trap();
    }
}

/* The v2 reduce: grid (num_heads, num_seqs), block NUM_THREADS, dynamic shared memory
 * from ppb_decode_plan. out = sum_p w_p tmp_out_p / sum_p w_p, w_p = exp_sum_p *
 * exp(max_logit_p - max over p); one partition: a copy. */
template <typename T, int HEAD_DIM, int NUM_THREADS, int PARTITION_SIZE>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_v2_reduce_kernel(ppb_decode_args a)
{
    static_assert(PARTITION_SIZE > 0 && PARTITION_SIZE % 32 == 0, "the reduce is for v2 partitions");
    static_assert(NUM_THREADS % PPB_WARP_SIZE == 0 && NUM_THREADS >= HEAD_DIM / 8, "NUM_THREADS");
    constexpr int D = HEAD_DIM, NT = NUM_THREADS, NW = NT / PPB_WARP_SIZE, DV = D / 8, PG = NT / DV;
    extern __shared__ float4 pa_reduce_smem4[];
    float *wts = reinterpret_cast<float *>(pa_reduce_smem4);
    float *xchg = wts + ppb_pa::round_up(a.max_num_partitions, 4);
    float *red = xchg + PG * D;
    const int head = blockIdx.x, seq = blockIdx.y, P = a.max_num_partitions;
    const int lane = threadIdx.x % PPB_WARP_SIZE, warp = threadIdx.x / PPB_WARP_SIZE;
    const int seq_len = a.seq_lens[seq];
    const int np = seq_len > 0 ? (seq_len + PARTITION_SIZE - 1) / PARTITION_SIZE : 0;
    if (np > P)
        ppb_trap(); /* the main kernel could not have written these partitions */
    const long long row = (long long)seq * a.num_heads + head;
    T *out = reinterpret_cast<T *>(a.out) + row * D;
    const T *tmp = reinterpret_cast<const T *>(a.tmp_out) + row * P * D;
    if (np <= 1) {
        for (int i = threadIdx.x; i < DV; i += NT) {
            uint4 v = np == 1 ? ppb_pa::ldg16_once(tmp + i * 8) : ppb_pa::zero16();
            *reinterpret_cast<uint4 *>(out + i * 8) = v;
        }
        return;
    }
    const float *ml = a.max_logits + row * P, *es = a.exp_sums + row * P;
    float m = ppb_pa::neg_inf();
    for (int i = threadIdx.x; i < np; i += NT)
        m = fmaxf(m, ml[i]);
    m = ppb_warp_max(m);
    if (lane == 0)
        red[warp] = m;
    __syncthreads();
    m = red[0];
    for (int i = 1; i < NW; i++)
        m = fmaxf(m, red[i]);
    float s = 0.f;
    for (int i = threadIdx.x; i < np; i += NT) {
        const float wi = es[i] * expf(ml[i] - m); /* a partition wholly before the window: 0 * 0 */
        wts[i] = wi;
        s += wi;
    }
    s = ppb_warp_sum(s);
    if (lane == 0)
        red[NW + warp] = s;
    __syncthreads();
    float total = 0.f;
    for (int i = 0; i < NW; i++)
        total += red[NW + i];
    const float inv = 1.f / total;
    const int dv = threadIdx.x % DV, pg = threadIdx.x / DV;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (pg < PG) {
        for (int i = pg; i < np; i += PG) {
            float f[8];
            ppb_vec8_to_float<T>(ppb_pa::ldg16_once(tmp + (long long)i * D + dv * 8), f);
            const float wi = wts[i];
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[e] = fmaf(wi, f[e], acc[e]);
        }
#pragma unroll
        for (int e = 0; e < 8; e++)
            xchg[pg * D + dv * 8 + e] = acc[e];
    }
    __syncthreads();
    if (threadIdx.x < DV) {
        float o[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            float t = 0.f;
            for (int k = 0; k < PG; k++)
                t += xchg[k * D + threadIdx.x * 8 + e];
            o[e] = t * inv;
        }
        *reinterpret_cast<uint4 *>(out + threadIdx.x * 8) = ppb_pack8<T>(o);
    }
}

#endif
