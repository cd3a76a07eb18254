/* Prefix prefill (vLLM context_attention_fwd): new tokens of each sequence attend to the
 * sequence's context in the paged KV cache and, causally, to the new tokens themselves.
 *
 *   template <typename T, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS, int PATH>
 *   __global__ void prefix_prefill_kernel(ppb_prefill_args a);
 *
 * PATH (prefill_plan.h): PPB_PREFILL_PATH_SIMT, _MMA or _WGMMA.
 *
 * Layouts and masking: attention_args.h. Launch shape (grid, block, dynamic shared
 * memory) and which configs can run: prefill_plan.h. Design: docs/KERNELS-IMPL.md.
 *
 * One CTA computes BLOCK_M query rows of one kv head of one sequence. Rows are packed
 * token-major over the kv group's query heads (row = token * G + head_in_group, G =
 * num_heads / num_kv_heads), so the K/V tiles a CTA fetches serve every query head that
 * reads them; with G = 1 this is vLLM's (sequence, head, BLOCK_M tokens) program.
 * Grid: (num_kv_heads, batch, row tiles), tiles launched last-first (the causal part
 * makes late tiles the longest). Phase 1 walks the context through the block table in
 * BLOCK_N steps, phase 2 the new tokens up to the tile's last token; online softmax in
 * fp32 with exp2 of log2(e)-scaled scores; the output is written once.
 *
 * PATH MMA (NVIDIA sm_80+, and only when PPB_USE_MMA is 1): FlashAttention-2 style,
 * mma.sync m16n8k16 + ldmatrix, cp.async 16-byte gathers into padded shared tiles, each
 * warp owning BLOCK_M / NUM_WARPS rows. Otherwise a portable SIMT path (fp32 FMA, no
 * inline PTX, warp size PPB_WARP_SIZE). PATH WGMMA (sm_90a only, PPB_USE_WGMMA):
 * prefix_prefill_wgmma.cuh, the MMA path's structure on warpgroup MMA. */
#ifndef PPB_PREFIX_PREFILL_CUH
#define PPB_PREFIX_PREFILL_CUH

#include "attention_args.h"
#include "ppb_device_common.cuh"
#include "prefill_plan.h"   /* the shared-memory budget rules the plan and the layouts share */

namespace ppb_prefill {

/* C++11-style constexpr helpers (the CoreX clang may default to an older standard). */
__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int cmin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int pow2_floor_sqrt(int x, int p = 1) { return (p * 2) * (p * 2) <= x ? pow2_floor_sqrt(x, p * 2) : p; }

/* ---- shared-memory layouts (prefill_plan.c computes the same figures; the GPU test
 * checks that they agree for every config) ---------------------------------------- */

/* Tensor-core path: Q tile [BM][D+8], then per stage a K tile [BN][D+8] and a V tile,
 * either [D][BN+8] (phase 1: the cache's d-major page layout) or [BN][D+8] (phase 2); rows
 * padded by 16 bytes so the 8 row addresses of an ldmatrix fall in 8 different bank
 * groups. KV_STAGES (1 or 2): ppb_prefill_kv_stages of prefill_plan.h, the one definition the
 * plan uses too. */
template <int D, int BM, int BN, int W>
struct mma_layout {
    static constexpr int THREADS = W * 32;
    static constexpr int ROWS_PER_WARP = BM / W;
    static constexpr int MT = ROWS_PER_WARP / 16;     /* m16 tiles per warp */
    static constexpr int QS = D + 8, KS = D + 8, VS = D + 8, VTS = BN + 8;
    static constexpr int Q_ELEMS = BM * QS;
    static constexpr int K_ELEMS = BN * KS;
    static constexpr int V_ELEMS = cmax(D * VTS, BN * VS);
    static constexpr int STAGE_ELEMS = K_ELEMS + V_ELEMS;
    static constexpr int KV_STAGES = ppb_prefill_kv_stages(W, 2u * Q_ELEMS, 2u * STAGE_ELEMS);
    static constexpr unsigned SMEM_BYTES = 2u * (Q_ELEMS + KV_STAGES * STAGE_ELEMS);
    /* Q fragments stay in registers when O, S and Q together fit comfortably; otherwise
     * they are re-read from shared memory (ldmatrix) at every k-step, as FA2 does. */
    static constexpr bool Q_IN_REGS = MT * (D / 4 + D / 2 + BN / 2) <= 160;
};

/* Hopper (wgmma) path: Q [BM][D], then 3 or 4 stages of a K slot [BN][D] and a V slot
 * [D][BN] (a new-token V tile: [BN][D], the same size) (ppb_prefill_wgmma_stages of
 * prefill_plan.h), unpadded and 128-byte swizzled (prefix_prefill_wgmma.cuh), plus 1 KB
 * to align the start to 1024 bytes; the slots' barriers (BARRIER_BYTES) sit in that 1 KB,
 * before the tiles or after them. */
template <int D, int BM, int BN>
struct wgmma_layout {
    static constexpr int Q_ELEMS = BM * D, K_ELEMS = BN * D, V_ELEMS = D * BN;
    static constexpr int STAGE_ELEMS = K_ELEMS + V_ELEMS;
    static constexpr int STAGES = ppb_prefill_wgmma_stages(BM, 2u * Q_ELEMS, 2u * STAGE_ELEMS);
    static constexpr unsigned SMEM_BYTES = 2u * (Q_ELEMS + STAGES * STAGE_ELEMS) + 1024u;
    static constexpr unsigned BARRIER_BYTES = 8u * (4u * STAGES + 1u);   /* K, V x full, empty; Q full */
    /* before the tiles when the alignment gap is at least BARRIER_BYTES, else after them */
    static_assert(2u * BARRIER_BYTES <= 1024u, "the barriers fit the alignment KB either way");
};

/* Portable path: Q^T [D][BM], one K^T [D][BN] / V [BN][D] buffer, P [BM][BN+2] in the
 * storage type, one fp32 per row (alpha, then the row sum). Thread tiles: S is
 * TSM x TSN per thread (GN threads along a row: consecutive lanes, GN <= 32, so row
 * reductions are shuffles inside a warp); O is TOM x TON per thread. */
template <int D, int BM, int BN, int THREADS>
struct simt_layout {
    static constexpr int E_S = cmax(1, BM * BN / THREADS);
    static constexpr int TSN = cmin(E_S, cmax(BN / 32, cmin(BN, pow2_floor_sqrt(E_S))));
    static constexpr int TSM = E_S / TSN;
    static constexpr int GN = BN / TSN, GM = BM / TSM;
    static constexpr int ACTIVE_S = GN * GM;
    static constexpr int E_O = BM * D / THREADS;
    static constexpr int TON = pow2_floor_sqrt(E_O);
    static constexpr int TOM = E_O / TON;
    static constexpr int GNO = D / TON, GMO = BM / TOM;
    static constexpr int PS = BN + 2;
    static constexpr unsigned SMEM_BYTES = 2u * (D * BM + BN * D + BM * PS) + 4u * BM;
    static_assert(GN <= 32 && (GN & (GN - 1)) == 0, "a row of S must sit inside one warp");
    static_assert(ACTIVE_S <= THREADS && ACTIVE_S % PPB_WARP_SIZE == 0, "S threads must be whole warps");
    static_assert(GNO * GMO == THREADS, "O thread tiles must cover the block");
};

/* ---- per-CTA geometry, shared by both paths ------------------------------------ */
struct cta_geom {
    int seq, kvh, group, qlen, ctx, start, m0, tok_min, tok_max;
    int k1_begin, n1;    /* phase 1: context tiles from k1_begin */
    int k2_begin, n2;    /* phase 2: new-token tiles from k2_begin */
};

/* Returns false when the tile holds no row of this sequence (ragged batches). */
template <int BM, int BN>
__device__ __forceinline__ bool cta_setup(const ppb_prefill_args &a, cta_geom &g)
{
    g.kvh = blockIdx.x;
    g.seq = blockIdx.y;
    const int tile = (int)(gridDim.z - 1 - blockIdx.z);
    g.group = a.num_heads / a.num_kv_heads;
    g.qlen = a.query_lens[g.seq];
    g.ctx = a.context_lens[g.seq];
    g.start = a.start_loc[g.seq];
    g.m0 = tile * BM;
    if (g.m0 >= g.qlen * g.group)
        return false;
    g.tok_min = g.m0 / g.group;
    g.tok_max = min((g.m0 + BM - 1) / g.group, g.qlen - 1);
    const int W = a.sliding_window;
    int b1 = 0, b2 = 0;
    if (W > 0) {
        b1 = max(0, g.ctx + g.tok_min - W + 1);
        b2 = max(0, g.tok_min - W + 1);
    }
    g.k1_begin = b1 / BN * BN;
    g.n1 = g.ctx > g.k1_begin ? (g.ctx - g.k1_begin + BN - 1) / BN : 0;
    g.k2_begin = b2 / BN * BN;
    g.n2 = (g.tok_max + 1 - g.k2_begin + BN - 1) / BN;
    return true;
}

/* acc += a (x) b: the register-tile outer product of the SIMT path's two GEMMs. */
template <int M, int N>
__device__ __forceinline__ void outer_fma(float (&acc)[M][N], const float (&a)[M], const float (&b)[N])
{
#pragma unroll
    for (int i = 0; i < M; i++)
#pragma unroll
        for (int j = 0; j < N; j++)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

/* Whether some key of the tile at n0 is invisible to some row of the CTA. */
template <int BN>
__device__ __forceinline__ bool tile_needs_mask(const cta_geom &g, int W, bool ph1, int n0)
{
    if (ph1)
        return n0 + BN > g.ctx || (W > 0 && n0 < g.ctx + g.tok_max - W + 1);
    return n0 + BN - 1 > g.tok_min || (W > 0 && n0 < g.tok_max - W + 1);
}

/* Visible keys of a row (token `tok` of the new tokens) in a phase: [lo, hi). */
__device__ __forceinline__ void row_key_range(const cta_geom &g, int W, bool ph1, int tok, int &lo, int &hi)
{
    const int NONE = -(1 << 30);
    if (ph1) {
        hi = g.ctx;
        lo = W > 0 ? g.ctx + tok - W + 1 : NONE;
    } else {
        hi = tok + 1;
        lo = W > 0 ? tok - W + 1 : NONE;
    }
}

__device__ __forceinline__ unsigned char *dynamic_smem()
{
    extern __shared__ uint4 ppb_prefill_dynamic_smem[];
    return reinterpret_cast<unsigned char *>(ppb_prefill_dynamic_smem);
}

template <int P> struct path_tag {};

/* ================================================================================
 * Tensor-core path
 * ================================================================================ */
#if PPB_USE_MMA
namespace mma {

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* 16-byte asynchronous copies global -> shared, zero-filled past what they read
 * (cp_async16: all 16 bytes or, !valid, none).
 * cp_async16 bypasses L1 (.cg): Q and the new tokens' K/V. cp_async16_via_l1 (.ca) is
 * for the gathers from the paged cache: through L1 the 16-byte pieces of one line reach
 * L2 as one request. Bypassing L1, the goal case (q8192 ctx90112 32/4) sent L2 about one
 * request per 32-byte sector and L2 tag lookups, not bytes, were the limit (ncu on the
 * H200: tag requests 62-67% of peak, sector data 21-24%); through L1 the wgmma path ran
 * 23% faster there (docs/results/KERNELS-IMPL-runs.md). The new tokens stay on .cg: the
 * all-new-token anchor (ctx 0) ran up to 9% slower through L1. */
__device__ __forceinline__ void cp_async16(unsigned dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
/* src_bytes (0 .. 16) are read, the rest of the 16 written as zeros. */
__device__ __forceinline__ void cp_async16_via_l1(unsigned dst, const void *src, unsigned src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
/* Wait until at most N committed copy groups of this thread are still in flight. */
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Tree reductions over a register array with compile-time indices (short dependency chains). */
template <int LEN, int OFF, int N>
__device__ __forceinline__ float tree_max(const float (&t)[LEN])
{
    if constexpr (N == 1)
        return t[OFF];
    else
        return fmaxf(tree_max<LEN, OFF, N / 2>(t), tree_max<LEN, OFF + N / 2, N / 2>(t));
}
template <int LEN, int OFF, int N>
__device__ __forceinline__ float tree_sum(const float (&t)[LEN])
{
    if constexpr (N == 1)
        return t[OFF];
    else
        return tree_sum<LEN, OFF, N / 2>(t) + tree_sum<LEN, OFF + N / 2, N / 2>(t);
}

__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

__host__ __device__ constexpr int clog2(int x) { return x <= 1 ? 0 : 1 + clog2(x / 2); }

/* Phase-1 gather plan of one thread. A context tile of BN tokens spans NP = BN / SEG page
 * segments (SEG = min(page, BN) tokens of one page); THREADS / NP threads copy each
 * segment, so a thread reads one block-table entry per tile (prefetched a tile ahead,
 * off the critical path) and its 16-byte chunks walk that page in memory order. */
struct page_slot {
    int page_shift, seg_shift, tpp_shift;   /* log2 of page, segment, threads per segment */
    int seg;                                /* this thread's segment of the tile */
    int lt;                                 /* this thread's index among the segment's threads */
};

/* log2 of a segment (min(page, BN) tokens) and of the threads copying one (THREADS >= 32 >= BN / 8 >= NP) */
__host__ __device__ constexpr int segment_shift(int page_shift, int bn)
{
    return page_shift < clog2(bn) ? page_shift : clog2(bn);
}
__host__ __device__ constexpr int segment_threads_shift(int seg_shift, int bn, int threads)
{
    return clog2(threads) - (clog2(bn) - seg_shift);
}

template <int BN, int THREADS>
__device__ __forceinline__ page_slot make_page_slot(int page_shift)
{
    page_slot ps;
    ps.page_shift = page_shift;
    ps.seg_shift = segment_shift(page_shift, BN);
    ps.tpp_shift = segment_threads_shift(ps.seg_shift, BN, THREADS);
    ps.seg = (int)threadIdx.x >> ps.tpp_shift;
    ps.lt = (int)threadIdx.x & ((1 << ps.tpp_shift) - 1);
    return ps;
}

/* The same plan for a page size known when compiling (1 << PAGE_SHIFT tokens): the shifts
 * are constants, so the compiler sees that a thread's chunks of a tile are one row or
 * column apart and folds their addresses into a base and constant offsets, where the
 * run-time plan computes every address in full (the wgmma path's page-16 body). */
template <int BN, int THREADS, int PAGE_SHIFT>
struct fixed_page_slot {
    static constexpr int page_shift = PAGE_SHIFT;
    static constexpr int seg_shift = segment_shift(PAGE_SHIFT, BN);
    static constexpr int tpp_shift = segment_threads_shift(seg_shift, BN, THREADS);
    int seg = (int)threadIdx.x >> tpp_shift;
    int lt = (int)threadIdx.x & ((1 << tpp_shift) - 1);
};

/* Physical page of this thread's segment of the context tile at n0 (0 past the context). */
template <class PS>
__device__ __forceinline__ int segment_page(const ppb_prefill_args &a, const cta_geom &g, const PS &ps, int n0)
{
    const int tok = n0 + (ps.seg << ps.seg_shift);
    return tok < g.ctx ? __ldg(a.block_table + (size_t)g.seq * a.max_blocks_per_seq + (tok >> ps.page_shift)) : 0;
}

/* Shared address of element i of a tile that starts at a pointer (this path) or at a
 * shared address (the Hopper path, which converts its one base pointer once: see there). */
template <typename T>
__device__ __forceinline__ unsigned tile_addr(T *tile, int i)
{
    return smem_addr(tile + i);
}
template <typename T>
__device__ __forceinline__ unsigned tile_addr(unsigned tile, int i)
{
    return tile + (unsigned)(sizeof(T) * i);
}

/* Where a tile's 16-byte chunk c of row r lands (in elements): the shared-tile layout the
 * copies below are written for. This path pads rows by 16 bytes (ldmatrix reads 8 rows at
 * once from 8 different bank groups); the Hopper path swizzles (prefix_prefill_wgmma.cuh). */
template <int STRIDE>
struct padded_tile {
    __device__ static __forceinline__ int at(int r, int c) { return r * STRIDE + c * 8; }
};

/* Phase 2 (the new tokens, from the contiguous k or v of [tokens][kvh][D]):
 * BN tokens land as rows of TILE, token-major, zero-filled past the query. */
template <typename T, int D, int BN, int THREADS, class TILE, class DST>
__device__ __forceinline__ void issue_new_tile(const ppb_prefill_args &a, const cta_geom &g, const T *src_base, int n0,
                                               DST dst)
{
    constexpr int CHUNKS = BN * D / 8, DC = D / 8, ITER = (CHUNKS + THREADS - 1) / THREADS;
    const int tid = threadIdx.x;
#pragma unroll 4
    for (int i = 0; i < ITER; i++) {
        const int c = tid + i * THREADS;
        if (CHUNKS % THREADS == 0 || c < CHUNKS) {
            const int t = c / DC, dc = c % DC;
            const int n = n0 + t;
            const bool valid = n < g.qlen;
            const T *src = valid ? src_base + ((size_t)(g.start + n) * a.num_kv_heads + g.kvh) * D + dc * 8 : src_base;
            cp_async16(tile_addr<T>(dst, TILE::at(t, dc)), src, valid);
        }
    }
}

/* Q tile: row r of QT = packed row m0 + r = token * G + head in group; zeros past the
 * sequence. */
template <typename T, int D, int BM, int THREADS, class QT, class DST>
__device__ __forceinline__ void issue_q_tile(const ppb_prefill_args &a, const cta_geom &g, DST sQ)
{
    constexpr int CHUNKS = BM * D / 8, DC = D / 8;
    const T *qp = static_cast<const T *>(a.q);
#pragma unroll 4
    for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; i++) {
        const int c = threadIdx.x + i * THREADS;
        if (CHUNKS % THREADS == 0 || c < CHUNKS) {
            const int r = c / DC, dc = c % DC;
            const int pr = g.m0 + r, tok = pr / g.group;
            const bool valid = tok < g.qlen;
            const int head = g.kvh * g.group + (pr - tok * g.group);
            const T *src = valid ? qp + ((size_t)(g.start + tok) * a.num_heads + head) * D + dc * 8 : qp;
            cp_async16(tile_addr<T>(sQ, QT::at(r, dc)), src, valid);
        }
    }
}

/* K tile (both phases) lands as rows of KT, token-major. ps: this thread's page_slot or
 * fixed_page_slot; phys: segment_page of this tile. UNROLL: context copies whose addresses
 * a thread computes together before issuing them (all of them by default). */
template <typename T, int D, int BN, int THREADS, class KT, int UNROLL = (BN * D / 8 + THREADS - 1) / THREADS,
          class DST, class PS>
__device__ __forceinline__ void issue_k_tile(const ppb_prefill_args &a, const cta_geom &g, bool ph1, int n0, DST sK,
                                             const PS &ps, int phys)
{
    constexpr int CHUNKS = BN * D / 8, DC = D / 8, ITER = (CHUNKS + THREADS - 1) / THREADS;
    if (ph1) {
        /* cache [blocks][kvh][D/8][page][8]: 16 bytes = 8 dims of one token */
        const T *kc = static_cast<const T *>(a.k_cache);
        const int seg_tok = n0 + (ps.seg << ps.seg_shift);
        const int cpp = DC << ps.seg_shift;   /* chunks per segment */
        const T *base = kc + ((((size_t)phys * a.num_kv_heads + g.kvh) * DC) << ps.page_shift) * 8 +
                        (size_t)(seg_tok & ((1 << ps.page_shift) - 1)) * 8;
        const int row0 = ps.seg << ps.seg_shift;
#pragma unroll UNROLL
        for (int j = 0; j < ITER; j++) {
            const int cc = ps.lt + (j << ps.tpp_shift);
            if (CHUNKS % THREADS == 0 || cc < cpp) {
                const int tp = cc & ((1 << ps.seg_shift) - 1), dc = cc >> ps.seg_shift;
                const bool valid = seg_tok + tp < g.ctx;
                const T *src = valid ? base + ((size_t)dc << ps.page_shift) * 8 + tp * 8 : kc;
                cp_async16_via_l1(tile_addr<T>(sK, KT::at(row0 + tp, dc)), src, valid ? 16u : 0u);
            }
        }
    } else {
        issue_new_tile<T, D, BN, THREADS, KT>(a, g, static_cast<const T *>(a.k), n0, sK);
    }
}

/* V tile: phase 1 as rows of VT1 (the cache's layout, d-major: row d, chunks of 8 tokens);
 * phase 2 as rows of VT2 (token-major). The chunk holding the context's last token also
 * holds up to 7 stale slots of its page: they land as zeros (P is 0 there, but 0 * NaN is
 * not), so the tile is usable as soon as it has landed. */
template <typename T, int D, int BN, int THREADS, class VT1, class VT2,
          int UNROLL = (BN * D / 8 + THREADS - 1) / THREADS, class DST, class PS>
__device__ __forceinline__ void issue_v_tile(const ppb_prefill_args &a, const cta_geom &g, bool ph1, int n0, DST sV,
                                             const PS &ps, int phys)
{
    constexpr int CHUNKS = BN * D / 8, ITER = (CHUNKS + THREADS - 1) / THREADS;
    if (ph1) {
        /* cache [blocks][kvh][D][page]: 16 bytes = 8 tokens of one dim */
        const T *vc = static_cast<const T *>(a.v_cache);
        const int seg_tok = n0 + (ps.seg << ps.seg_shift);
        const int cps_shift = ps.seg_shift - 3;   /* chunks per dim per segment: SEG / 8 */
        const int cpp = D << cps_shift;
        const T *base = vc + ((((size_t)phys * a.num_kv_heads + g.kvh) * D) << ps.page_shift) +
                        (seg_tok & ((1 << ps.page_shift) - 1));
        const int chunk0 = (ps.seg << ps.seg_shift) >> 3;   /* segments hold whole chunks: seg >= 8 tokens */
#pragma unroll UNROLL
        for (int j = 0; j < ITER; j++) {
            const int cc = ps.lt + (j << ps.tpp_shift);
            if (CHUNKS % THREADS == 0 || cc < cpp) {
                const int tc = cc & ((1 << cps_shift) - 1), d = cc >> cps_shift;
                const int live = min(max(g.ctx - (seg_tok + tc * 8), 0), 8);   /* tokens of the chunk */
                const T *src = live > 0 ? base + ((size_t)d << ps.page_shift) + tc * 8 : vc;
                cp_async16_via_l1(tile_addr<T>(sV, VT1::at(d, chunk0 + tc)), src, (unsigned)live * (unsigned)sizeof(T));
            }
        }
    } else {
        issue_new_tile<T, D, BN, THREADS, VT2>(a, g, static_cast<const T *>(a.v), n0, sV);
    }
}

/* First key of tile i of a CTA's walk: the context tiles, then the new-token tiles. */
template <int BN>
__device__ __forceinline__ int tile_start(const cta_geom &g, int i)
{
    return i < g.n1 ? g.k1_begin + i * BN : g.k2_begin + (i - g.n1) * BN;
}

/* Scores of keys a row must not see -> -inf. Accumulators in the m16n8 C layout (also
 * wgmma's): s[m][j][2h + e] is row gq + 8h of m16 tile m, key n0 + 8j + 2tq + e. */
template <int MT, int BN>
__device__ __forceinline__ void mask_scores(float (&s)[MT][BN / 8][4], const cta_geom &g, int W, bool ph1, int n0,
                                            const int (&row_tok)[MT][2], int tq)
{
    const float NEG_INF = -__int_as_float(0x7f800000);
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int lo, hi;
            row_key_range(g, W, ph1, row_tok[m][h], lo, hi);
#pragma unroll
            for (int j = 0; j < BN / 8; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int n = n0 + j * 8 + 2 * tq + e;
                    if (n < lo || n >= hi)
                        s[m][j][2 * h + e] = NEG_INF;
                }
        }
}

/* One tile's online softmax: s becomes P = exp2(score * scale_log2 - running max), the
 * running max and sum advance, and alpha is the factor O must be rescaled by (exactly 1
 * for a row whose max did not move; the result: whether some row's did). A row of a
 * thread is spread over the 4 lanes of a quad. Apart from O's rescale (rescale_output),
 * so the Hopper path can rescale once the P V in flight has landed. */
template <int MT, int BN>
__device__ __forceinline__ bool softmax_tile(float (&s)[MT][BN / 8][4], float (&m_run)[MT][2], float (&l_run)[MT][2],
                                             float (&alpha)[MT][2], float scale_log2)
{
    const float NEG_INF = -__int_as_float(0x7f800000);
    bool rescale = false;
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            /* tree reductions: short dependency chains */
            float t[BN / 8];
#pragma unroll
            for (int j = 0; j < BN / 8; j++)
                t[j] = fmaxf(s[m][j][2 * h], s[m][j][2 * h + 1]);
            const float mx = quad_max(tree_max<BN / 8, 0, BN / 8>(t));
            const float m_new = fmaxf(m_run[m][h], mx * scale_log2);
            /* a row with no visible key so far keeps max -inf: subtract 0, not -inf */
            const float m_use = m_new == NEG_INF ? 0.f : m_new;
            alpha[m][h] = ex2(m_run[m][h] - m_use);
            rescale |= m_new != m_run[m][h];
            m_run[m][h] = m_new;
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                const float p0 = ex2(fmaf(s[m][j][2 * h], scale_log2, -m_use));
                const float p1 = ex2(fmaf(s[m][j][2 * h + 1], scale_log2, -m_use));
                s[m][j][2 * h] = p0;
                s[m][j][2 * h + 1] = p1;
                t[j] = p0 + p1;
            }
            l_run[m][h] = l_run[m][h] * alpha[m][h] + tree_sum<BN / 8, 0, BN / 8>(t);
        }
    return rescale;
}

/* O *= alpha, only when some row's max moved in the warp (alpha is exactly 1 otherwise);
 * after the first tiles of a long context that is rare. Warp-uniform branch. */
template <int MT, int D>
__device__ __forceinline__ void rescale_output(float (&o)[MT][D / 8][4], const float (&alpha)[MT][2], bool rescale)
{
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int i = 0; i < D / 8; i++) {
                o[m][i][0] *= alpha[m][0];
                o[m][i][1] *= alpha[m][0];
                o[m][i][2] *= alpha[m][1];
                o[m][i][3] *= alpha[m][1];
            }
    }
}

/* O / l, written once. Warp `warp` owns rows warp * ROWS_PER_WARP + 16m + gq (+8). */
template <typename T, int D, int MT, int ROWS_PER_WARP>
__device__ __forceinline__ void store_output(const ppb_prefill_args &a, const cta_geom &g,
                                             const float (&o)[MT][D / 8][4], const float (&l_run)[MT][2],
                                             const int (&row_tok)[MT][2], int warp, int lane)
{
    const int gq = lane >> 2, tq = lane & 3;
    T *outp = static_cast<T *>(a.out);
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float l = quad_sum(l_run[m][h]);
            const float inv = l > 0.f ? 1.f / l : 0.f;
            const int tok = row_tok[m][h];
            if (tok < g.qlen) {
                const int pr = g.m0 + warp * ROWS_PER_WARP + m * 16 + gq + 8 * h;
                const int head = g.kvh * g.group + (pr - tok * g.group);
                T *dst = outp + ((size_t)(g.start + tok) * a.num_heads + head) * D + 2 * tq;
#pragma unroll
                for (int i = 0; i < D / 8; i++)
                    *reinterpret_cast<unsigned *>(dst + i * 8) =
                        ppb_pack2<T>(o[m][i][2 * h] * inv, o[m][i][2 * h + 1] * inv);
            }
        }
}

/* O += P V for one tile. P comes from the S accumulators (fp32 -> T, the m16n8 C layout of
 * two adjacent n-tiles is the m16k16 A layout). V_TRANS: V as [BN][VS] (ldmatrix.trans),
 * else [D][VTS] (plain ldmatrix). */
template <typename T, int D, int BN, int MT, int VSTRIDE, bool V_TRANS>
__device__ __forceinline__ void pv_tile(float (&o)[MT][D / 8][4], const float (&s)[MT][BN / 8][4], const T *sV,
                                        int lane)
{
#pragma unroll
    for (int kt = 0; kt < BN / 16; kt++) {
        unsigned pa[MT][4];
#pragma unroll
        for (int m = 0; m < MT; m++) {
            pa[m][0] = ppb_pack2<T>(s[m][2 * kt][0], s[m][2 * kt][1]);
            pa[m][1] = ppb_pack2<T>(s[m][2 * kt][2], s[m][2 * kt][3]);
            pa[m][2] = ppb_pack2<T>(s[m][2 * kt + 1][0], s[m][2 * kt + 1][1]);
            pa[m][3] = ppb_pack2<T>(s[m][2 * kt + 1][2], s[m][2 * kt + 1][3]);
        }
#pragma unroll
        for (int i = 0; i < D / 8; i += 2) {
            unsigned b0, b1, b2, b3;
            if (V_TRANS) {
                const T *p = sV + (kt * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * VSTRIDE + i * 8 + (lane >> 4) * 8;
                ldsm_x4_trans(smem_addr(p), b0, b1, b2, b3);
            } else {
                const T *p = sV + (i * 8 + (lane >> 4) * 8 + (lane & 7)) * VSTRIDE + kt * 16 + ((lane >> 3) & 1) * 8;
                ldsm_x4(smem_addr(p), b0, b1, b2, b3);
            }
#pragma unroll
            for (int m = 0; m < MT; m++) {
                ppb_mma16816<T>(o[m][i], pa[m][0], pa[m][1], pa[m][2], pa[m][3], b0, b1);
                ppb_mma16816<T>(o[m][i + 1], pa[m][0], pa[m][1], pa[m][2], pa[m][3], b2, b3);
            }
        }
    }
}

template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void run(const ppb_prefill_args &a)
{
    using L = mma_layout<D, BM, BN, W>;
    using KT = padded_tile<L::KS>;
    using VT1 = padded_tile<L::VTS>;
    using VT2 = padded_tile<L::VS>;
    constexpr int MT = L::MT, THREADS = L::THREADS;
    const float NEG_INF = -__int_as_float(0x7f800000);

    cta_geom g;
    if (!cta_setup<BM, BN>(a, g))
        return;
    constexpr bool TWO_STAGES = L::KV_STAGES == 2;
    T *sQ = reinterpret_cast<T *>(dynamic_smem());
    T *sKV = sQ + L::Q_ELEMS;   /* stage s: K tile at sKV + s * STAGE_ELEMS, its V tile after it */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int gq = lane >> 2, tq = lane & 3;
    const int W_ = a.sliding_window;
    const page_slot ps = make_page_slot<BN, THREADS>(__ffs(a.page_size) - 1);
    const int ntiles = g.n1 + g.n2;

    issue_q_tile<T, D, BM, THREADS, padded_tile<L::QS>>(a, g, sQ);
    /* Block-table entries of this thread's page segment, read a tile ahead of use: phys for
     * the copies issued now (one stage: tile it's V), phys_next for the next tile's copies.
     * Tile 0 goes with Q: its K, and with two stages its V too. */
    int phys = g.n1 > 0 ? segment_page(a, g, ps, g.k1_begin) : 0, phys_next = 0;
    if (ntiles > 0) {
        const bool ph1 = g.n1 > 0;
        const int n0 = tile_start<BN>(g, 0);
        issue_k_tile<T, D, BN, THREADS, KT>(a, g, ph1, n0, sKV, ps, phys);
        if (TWO_STAGES)
            issue_v_tile<T, D, BN, THREADS, VT1, VT2>(a, g, ph1, n0, sKV + L::K_ELEMS, ps, phys);
    }
    cp_async_commit();
    if (TWO_STAGES && 1 < g.n1)
        phys_next = segment_page(a, g, ps, tile_start<BN>(g, 1));

    int row_tok[MT][2];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            row_tok[m][h] = (g.m0 + warp * L::ROWS_PER_WARP + m * 16 + gq + 8 * h) / g.group;

    float o[MT][D / 8][4];
    float m_run[MT][2], l_run[MT][2];
#pragma unroll
    for (int m = 0; m < MT; m++) {
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            o[m][i][0] = o[m][i][1] = o[m][i][2] = o[m][i][3] = 0.f;
        m_run[m][0] = m_run[m][1] = NEG_INF;
        l_run[m][0] = l_run[m][1] = 0.f;
    }
    unsigned qf[L::Q_IN_REGS ? MT : 1][L::Q_IN_REGS ? D / 16 : 1][4];
    const float scale_log2 = a.sm_scale * 1.4426950408889634f;
    const T *q_warp = sQ + (warp * L::ROWS_PER_WARP + (lane & 15)) * L::QS + (lane >> 4) * 8;

    /* One stage: V(it) is copied during S(it) and softmax, K(it + 1) during P V(it). Two
     * stages: K and V of tile it + 1 are copied during all of tile it's maths. */
    for (int it = 0; it < ntiles; it++) {
        const bool ph1 = it < g.n1;
        const int n0 = tile_start<BN>(g, it);
        T *sK = sKV + (TWO_STAGES ? (it & 1) * L::STAGE_ELEMS : 0);
        T *sV = sK + L::K_ELEMS;

        cp_async_wait_all();
        __syncthreads();   /* this tile's K (two stages: and V; first tile: Q) landed; every warp is done
                              with the previous tile */
        if (L::Q_IN_REGS && it == 0) {
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++)
                    ldsm_x4(smem_addr(q_warp + m * 16 * L::QS + kk * 16), qf[m][kk][0], qf[m][kk][1], qf[m][kk][2],
                            qf[m][kk][3]);
        }
        if (TWO_STAGES) {
            if (it + 1 < ntiles) {
                const bool nph1 = it + 1 < g.n1;
                const int nn0 = tile_start<BN>(g, it + 1);
                T *nK = sKV + ((it + 1) & 1) * L::STAGE_ELEMS;
                issue_k_tile<T, D, BN, THREADS, KT>(a, g, nph1, nn0, nK, ps, phys_next);
                issue_v_tile<T, D, BN, THREADS, VT1, VT2>(a, g, nph1, nn0, nK + L::K_ELEMS, ps, phys_next);
                cp_async_commit();
            }
            if (it + 2 < g.n1)
                phys_next = segment_page(a, g, ps, tile_start<BN>(g, it + 2));   /* used next tile */
        } else {
            issue_v_tile<T, D, BN, THREADS, VT1, VT2>(a, g, ph1, n0, sV, ps, phys);
            cp_async_commit();
            if (it + 1 < g.n1)
                phys_next = segment_page(a, g, ps, n0 + BN);   /* used after S and softmax */
        }

        /* S = Q K^T */
        float s[MT][BN / 8][4];
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int j = 0; j < BN / 8; j++)
                s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            unsigned qa[MT][4];
#pragma unroll
            for (int m = 0; m < MT; m++) {
                if (L::Q_IN_REGS) {
                    qa[m][0] = qf[L::Q_IN_REGS ? m : 0][L::Q_IN_REGS ? kk : 0][0];
                    qa[m][1] = qf[L::Q_IN_REGS ? m : 0][L::Q_IN_REGS ? kk : 0][1];
                    qa[m][2] = qf[L::Q_IN_REGS ? m : 0][L::Q_IN_REGS ? kk : 0][2];
                    qa[m][3] = qf[L::Q_IN_REGS ? m : 0][L::Q_IN_REGS ? kk : 0][3];
                } else {
                    ldsm_x4(smem_addr(q_warp + m * 16 * L::QS + kk * 16), qa[m][0], qa[m][1], qa[m][2], qa[m][3]);
                }
            }
#pragma unroll
            for (int j = 0; j < BN / 8; j += 2) {
                unsigned b0, b1, b2, b3;
                const T *p = sK + (j * 8 + (lane >> 4) * 8 + (lane & 7)) * L::KS + kk * 16 + ((lane >> 3) & 1) * 8;
                ldsm_x4(smem_addr(p), b0, b1, b2, b3);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    ppb_mma16816<T>(s[m][j], qa[m][0], qa[m][1], qa[m][2], qa[m][3], b0, b1);
                    ppb_mma16816<T>(s[m][j + 1], qa[m][0], qa[m][1], qa[m][2], qa[m][3], b2, b3);
                }
            }
        }

        /* mask, then online softmax (scores in log2 units) */
        if (tile_needs_mask<BN>(g, W_, ph1, n0))
            mask_scores<MT, BN>(s, g, W_, ph1, n0, row_tok, tq);
        float alpha[MT][2];
        rescale_output<MT, D>(o, alpha, softmax_tile<MT, BN>(s, m_run, l_run, alpha, scale_log2));

        if (!TWO_STAGES) {
            cp_async_wait_all();
            __syncthreads();   /* V tile landed; every warp is done with this K tile */
            if (it + 1 < ntiles) {
                issue_k_tile<T, D, BN, THREADS, KT>(a, g, it + 1 < g.n1, tile_start<BN>(g, it + 1), sK, ps,
                                                       phys_next);
                cp_async_commit();
            }
            phys = phys_next;
        }

        if (ph1)
            pv_tile<T, D, BN, MT, L::VTS, false>(o, s, sV, lane);
        else
            pv_tile<T, D, BN, MT, L::VS, true>(o, s, sV, lane);
    }
    cp_async_wait_all();

    store_output<T, D, MT, L::ROWS_PER_WARP>(a, g, o, l_run, row_tok, warp, lane);
}

} /* namespace mma */

#if PPB_USE_WGMMA
#include "prefix_prefill_wgmma.cuh"
#endif
#endif /* PPB_USE_MMA */

/* ================================================================================
 * Portable SIMT path: no inline PTX, no sm_80 intrinsics, warp size PPB_WARP_SIZE.
 * ================================================================================ */
namespace simt {

/* K tile -> K^T [D][BN] in shared memory; zeros for keys past the sequence. */
template <typename T, int D, int BN, int THREADS>
__device__ __forceinline__ void load_k_tile(const ppb_prefill_args &a, const cta_geom &g, bool ph1, int n0, T *sKt,
                                            int page_shift)
{
    constexpr int CHUNKS = BN * D / 8, DC = D / 8;
    const T zero = ppb_from_float<T>(0.f);
    for (int c = threadIdx.x; c < CHUNKS; c += THREADS) {
        /* token fastest: neighbouring threads write neighbouring shared columns */
        const int t = c % BN, dc = c / BN;
        const int n = n0 + t;
        uint4 v = make_uint4(0, 0, 0, 0);
        const bool valid = ph1 ? n < g.ctx : n < g.qlen;
        if (valid) {
            const uint4 *src;
            if (ph1) {
                const int phys = a.block_table[(size_t)g.seq * a.max_blocks_per_seq + (n >> page_shift)];
                src = reinterpret_cast<const uint4 *>(
                    static_cast<const T *>(a.k_cache) +
                    ((((size_t)phys * a.num_kv_heads + g.kvh) * DC + dc) << page_shift) * 8 +
                    (size_t)(n & ((1 << page_shift) - 1)) * 8);
            } else {
                src = reinterpret_cast<const uint4 *>(static_cast<const T *>(a.k) +
                                                      ((size_t)(g.start + n) * a.num_kv_heads + g.kvh) * D + dc * 8);
            }
            v = *src;
        }
        union { uint4 v; T e[8]; } u;
        u.v = v;
#pragma unroll
        for (int e = 0; e < 8; e++)
            sKt[(dc * 8 + e) * BN + t] = valid ? u.e[e] : zero;
    }
}

/* V tile -> V [BN][D]; zeros for keys past the sequence (also the stale slots that share a
 * 16-byte chunk with the context's last token). */
template <typename T, int D, int BN, int THREADS>
__device__ __forceinline__ void load_v_tile(const ppb_prefill_args &a, const cta_geom &g, bool ph1, int n0, T *sV,
                                            int page_shift)
{
    constexpr int CHUNKS = BN * D / 8, DC = D / 8;
    const T zero = ppb_from_float<T>(0.f);
    if (ph1) {
        /* cache [blocks][kvh][D][page]: a chunk is 8 tokens of one dim */
        for (int c = threadIdx.x; c < CHUNKS; c += THREADS) {
            const int d = c % D, t = (c / D) * 8;
            const int n = n0 + t;
            union { uint4 v; T e[8]; } u;
            u.v = make_uint4(0, 0, 0, 0);
            if (n < g.ctx) {
                const int phys = a.block_table[(size_t)g.seq * a.max_blocks_per_seq + (n >> page_shift)];
                u.v = *reinterpret_cast<const uint4 *>(
                    static_cast<const T *>(a.v_cache) + ((((size_t)phys * a.num_kv_heads + g.kvh) * D + d) << page_shift) +
                    (n & ((1 << page_shift) - 1)));
            }
#pragma unroll
            for (int e = 0; e < 8; e++)
                sV[(t + e) * D + d] = n + e < g.ctx ? u.e[e] : zero;
        }
    } else {
        for (int c = threadIdx.x; c < CHUNKS; c += THREADS) {
            const int t = c / DC, dc = c % DC;
            const int n = n0 + t;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (n < g.qlen)
                v = *reinterpret_cast<const uint4 *>(static_cast<const T *>(a.v) +
                                                     ((size_t)(g.start + n) * a.num_kv_heads + g.kvh) * D + dc * 8);
            *reinterpret_cast<uint4 *>(sV + t * D + dc * 8) = v;
        }
    }
}

template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void run(const ppb_prefill_args &a)
{
    constexpr int THREADS = W * PPB_WARP_SIZE;
    using L = simt_layout<D, BM, BN, THREADS>;
    constexpr int TSM = L::TSM, TSN = L::TSN, GN = L::GN, GM = L::GM;
    constexpr int TOM = L::TOM, TON = L::TON, GNO = L::GNO, GMO = L::GMO, PS = L::PS;
    const float NEG_INF = -__int_as_float(0x7f800000);

    cta_geom g;
    if (!cta_setup<BM, BN>(a, g))
        return;
    T *sQt = reinterpret_cast<T *>(dynamic_smem());   /* [D][BM] */
    T *sKV = sQt + D * BM;                             /* K^T [D][BN] or V [BN][D] */
    T *sP = sKV + BN * D;                              /* [BM][PS] */
    float *sRow = reinterpret_cast<float *>(sP + BM * PS);   /* [BM] */
    const int tid = threadIdx.x;
    const int W_ = a.sliding_window;
    const int page_shift = __ffs(a.page_size) - 1;
    const int ntiles = g.n1 + g.n2;

    /* Q^T, zero rows past the sequence */
    {
        constexpr int CHUNKS = BM * D / 8;
        const T zero = ppb_from_float<T>(0.f);
        for (int c = tid; c < CHUNKS; c += THREADS) {
            const int r = c % BM, dc = c / BM;
            const int pr = g.m0 + r, tok = pr / g.group;
            const bool valid = tok < g.qlen;
            union { uint4 v; T e[8]; } u;
            u.v = make_uint4(0, 0, 0, 0);
            if (valid) {
                const int head = g.kvh * g.group + (pr - tok * g.group);
                u.v = *reinterpret_cast<const uint4 *>(static_cast<const T *>(a.q) +
                                                       ((size_t)(g.start + tok) * a.num_heads + head) * D + dc * 8);
            }
#pragma unroll
            for (int e = 0; e < 8; e++)
                sQt[(dc * 8 + e) * BM + r] = valid ? u.e[e] : zero;
        }
    }

    /* S-phase thread tile: rows tm + i*GM, keys tn + j*GN */
    const int tn = tid % GN, tm = tid / GN;
    const bool s_active = tid < L::ACTIVE_S;   /* whole warps: ACTIVE_S is a multiple of the warp size */
    int row_tok[TSM];
    float m_run[TSM], l_run[TSM];
#pragma unroll
    for (int i = 0; i < TSM; i++) {
        row_tok[i] = (g.m0 + tm + i * GM) / g.group;
        m_run[i] = NEG_INF;
        l_run[i] = 0.f;
    }
    /* O-phase thread tile: rows om + i*GMO, dims on + j*GNO */
    const int on = tid % GNO, om = tid / GNO;
    float o[TOM][TON] = {};
    const float scale_log2 = a.sm_scale * 1.4426950408889634f;

    for (int it = 0; it < ntiles; it++) {
        const bool ph1 = it < g.n1;
        const int n0 = ph1 ? g.k1_begin + it * BN : g.k2_begin + (it - g.n1) * BN;
        load_k_tile<T, D, BN, THREADS>(a, g, ph1, n0, sKV, page_shift);
        __syncthreads();   /* K^T (and, the first time, Q^T) in place */

        if (s_active) {
            float s[TSM][TSN] = {};
#pragma unroll 4
            for (int d = 0; d < D; d++) {
                float qv[TSM], kv[TSN];
#pragma unroll
                for (int i = 0; i < TSM; i++)
                    qv[i] = ppb_to_float(sQt[d * BM + tm + i * GM]);
#pragma unroll
                for (int j = 0; j < TSN; j++)
                    kv[j] = ppb_to_float(sKV[d * BN + tn + j * GN]);
                outer_fma(s, qv, kv);
            }
            const bool masked = tile_needs_mask<BN>(g, W_, ph1, n0);
#pragma unroll
            for (int i = 0; i < TSM; i++) {
                if (masked) {
                    int lo, hi;
                    row_key_range(g, W_, ph1, row_tok[i], lo, hi);
#pragma unroll
                    for (int j = 0; j < TSN; j++) {
                        const int n = n0 + tn + j * GN;
                        if (n < lo || n >= hi)
                            s[i][j] = NEG_INF;
                    }
                }
                float mx = NEG_INF;
#pragma unroll
                for (int j = 0; j < TSN; j++)
                    mx = fmaxf(mx, s[i][j]);
                mx = ppb_warp_max<GN>(mx);
                const float m_new = fmaxf(m_run[i], mx * scale_log2);
                const float m_use = m_new == NEG_INF ? 0.f : m_new;
                const float alpha = exp2f(m_run[i] - m_use);
                m_run[i] = m_new;
                float rs = 0.f;
                T *prow = sP + (tm + i * GM) * PS;
#pragma unroll
                for (int j = 0; j < TSN; j++) {
                    const float p = exp2f(fmaf(s[i][j], scale_log2, -m_use));
                    rs += p;
                    prow[tn + j * GN] = ppb_from_float<T>(p);
                }
                l_run[i] = l_run[i] * alpha + rs;
                if (tn == 0)
                    sRow[tm + i * GM] = alpha;
            }
        }
        __syncthreads();   /* P and alpha written; K^T no longer read */
        load_v_tile<T, D, BN, THREADS>(a, g, ph1, n0, sKV, page_shift);
        __syncthreads();   /* V in place */

#pragma unroll
        for (int i = 0; i < TOM; i++) {
            const float alpha = sRow[om + i * GMO];
#pragma unroll
            for (int j = 0; j < TON; j++)
                o[i][j] *= alpha;
        }
#pragma unroll 2
        for (int n = 0; n < BN; n++) {
            float pv[TOM], vv[TON];
#pragma unroll
            for (int i = 0; i < TOM; i++)
                pv[i] = ppb_to_float(sP[(om + i * GMO) * PS + n]);
#pragma unroll
            for (int j = 0; j < TON; j++)
                vv[j] = ppb_to_float(sKV[n * D + on + j * GNO]);
            outer_fma(o, pv, vv);
        }
        __syncthreads();   /* V, P and alpha free for the next tile */
    }

    /* row sums: complete across the GN lanes of a row, then O / l */
    if (s_active) {
#pragma unroll
        for (int i = 0; i < TSM; i++) {
            const float l = ppb_warp_sum<GN>(l_run[i]);
            if (tn == 0)
                sRow[tm + i * GM] = l;
        }
    }
    __syncthreads();
    T *outp = static_cast<T *>(a.out);
#pragma unroll
    for (int i = 0; i < TOM; i++) {
        const int r = om + i * GMO;
        const int pr = g.m0 + r, tok = pr / g.group;
        if (tok < g.qlen) {
            const float l = sRow[r];
            const float inv = l > 0.f ? 1.f / l : 0.f;
            const int head = g.kvh * g.group + (pr - tok * g.group);
            T *dst = outp + ((size_t)(g.start + tok) * a.num_heads + head) * D;
#pragma unroll
            for (int j = 0; j < TON; j++)
                dst[on + j * GNO] = ppb_from_float<T>(o[i][j] * inv);
        }
    }
}

} /* namespace simt */

template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void dispatch(const ppb_prefill_args &a, path_tag<PPB_PREFILL_PATH_WGMMA>)
{
#if PPB_USE_MMA && PPB_USE_WGMMA
    wgmma::run<T, D, BM, BN, W>(a);
#else
    (void)a;
    ppb_trap();   /* this compilation has no wgmma path (not sm_90a); builtin_plan.c never asks for it */
#endif
}

template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void dispatch(const ppb_prefill_args &a, path_tag<PPB_PREFILL_PATH_MMA>)
{
#if PPB_USE_MMA
    mma::run<T, D, BM, BN, W>(a);
#else
    (void)a;
    ppb_trap();   /* this compilation has no tensor-core path; the plan refuses use_mma here */
#endif
}

template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void dispatch(const ppb_prefill_args &a, path_tag<PPB_PREFILL_PATH_SIMT>)
{
    simt::run<T, D, BM, BN, W>(a);
}

} /* namespace ppb_prefill */

template <typename T, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS, int PATH>
__global__ void __launch_bounds__(
    ppb_prefill_block_threads(NUM_WARPS, PATH, PPB_WARP_SIZE,
                              ppb_prefill::wgmma_layout<HEAD_DIM, BLOCK_M, BLOCK_N>::SMEM_BYTES))
    prefix_prefill_kernel(ppb_prefill_args a)
{
    ppb_prefill::dispatch<T, HEAD_DIM, BLOCK_M, BLOCK_N, NUM_WARPS>(a, ppb_prefill::path_tag<PATH>());
}

#endif
