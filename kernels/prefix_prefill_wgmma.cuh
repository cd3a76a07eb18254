/* Prefix prefill, Hopper path (sm_90a): the tensor-core path of prefix_prefill.cuh with
 * both GEMMs on warpgroup MMA (wgmma.mma_async) instead of mma.sync + ldmatrix.
 *
 * Included by prefix_prefill.cuh inside namespace ppb_prefill when PPB_USE_WGMMA is 1
 * (compiled for sm_90a: wgmma exists on no other architecture, so the BI-V100 build and
 * every other target never see this file's inline PTX). The plan (prefill_plan.c) gives
 * the path only configs it can run: HEAD_DIM 64 or 128, BLOCK_N 64 or 128, BLOCK_M 64 or
 * 128 with NUM_WARPS = BLOCK_M / 16 (one warpgroup of 4 warps per 64 rows).
 *
 * What changes against mma::run, and why:
 *  - Tiles sit in shared memory in the 128-byte-swizzled K-major layout wgmma reads
 *    through matrix descriptors (rows of 64 elements, 16-byte chunk c of row r at chunk
 *    c ^ (r % 8)): Q [BM][D], K [BN][D], V [D][BN]. V is d-major, which is the cache's own
 *    page layout, so the context's V pages are copied as they are; the new tokens' V
 *    ([tokens][D]) is transposed on its way in (loads a tile ahead into registers).
 *  - S = Q K^T: one m64nBNk16 wgmma per 16 dims, Q and K from shared memory. O += P V:
 *    m64nDk16 with P from registers (the accumulator layout of S is the A-fragment
 *    layout, as with mma.sync) and V from shared memory.
 *  - Tiles overlap: P V of tile i is issued right after S of tile i + 1 and runs during
 *    its softmax, so tile i's V keeps its stage a tile longer: 3 or 4 stages
 *    (ppb_prefill_wgmma_stages, prefill_plan.h), copies STAGES - 2 tiles ahead.
 *  - Copies are cp.async (generic proxy); wgmma reads shared memory through the async
 *    proxy, so every thread fences (fence.proxy.async) before the barrier that publishes
 *    a tile.
 * Masking, the online softmax and the output are mma::'s (one definition). */
#ifndef PPB_PREFIX_PREFILL_WGMMA_CUH
#define PPB_PREFIX_PREFILL_WGMMA_CUH

namespace wgmma {

/* 128-byte swizzle of a tile of ROWS rows in slabs of 64 elements: slab c / 8 holds
 * chunk columns 8 (c / 8) .. +7 of every row; within it, row r's chunk c lands at
 * (c ^ r) % 8. Slabs and tiles start 1024-byte aligned (the swizzle acts on address
 * bits 4-9). */
template <int ROWS>
struct sw128_tile {
    __device__ static __forceinline__ int at(int r, int c)
    {
        return (c >> 3) * (ROWS * 64) + r * 64 + (((c ^ r) & 7) << 3);
    }
};

/* Matrix descriptor of a K-major, 128-byte-swizzled operand at a shared address: start
 * address / 16, leading byte offset 1 (unused by swizzled K-major layouts), stride byte
 * offset 1024 / 16 (from one 8-row group to the next), swizzle mode 1 (128 B). */
__device__ __forceinline__ unsigned long long sw128_desc(const void *p)
{
    const unsigned addr = mma::smem_addr(p);
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void fence_operands() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/* Wait until at most N committed groups of this warpgroup are still running. */
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
/* Pin accumulators in place around an asynchronous wgmma: the compiler sees the asm
 * statements as ordinary register reads and writes, and would otherwise move the maths
 * that reads d across the wait (or the writes that feed it across the issue). */
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N][4])
{
#pragma unroll
    for (int j = 0; j < N; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            asm volatile("" : "+f"(d[j][e])::"memory");
}

/* Make this thread's generic-proxy writes to shared memory visible to wgmma's reads. */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* The instructions, by element type and N (64 or 128). Inline PTX names every register:
 * accumulator d[j][e] (4j + e) is operand %(4j + e), the operands after them follow. */
#define PPB_WGMMA_REGS_0_31                                                                                \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
    "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define PPB_WGMMA_REGS_32_63                                                                                    \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, " \
    "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define PPB_WGMMA_D_N64 "{" PPB_WGMMA_REGS_0_31 "}"
#define PPB_WGMMA_D_N128 "{" PPB_WGMMA_REGS_0_31 ", " PPB_WGMMA_REGS_32_63 "}"
#define PPB_WGMMA_D4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define PPB_WGMMA_D_OPERANDS_N64                                                                                  \
    PPB_WGMMA_D4(0), PPB_WGMMA_D4(1), PPB_WGMMA_D4(2), PPB_WGMMA_D4(3), PPB_WGMMA_D4(4), PPB_WGMMA_D4(5), \
        PPB_WGMMA_D4(6), PPB_WGMMA_D4(7)
#define PPB_WGMMA_D_OPERANDS_N128                                                                                 \
    PPB_WGMMA_D_OPERANDS_N64, PPB_WGMMA_D4(8), PPB_WGMMA_D4(9), PPB_WGMMA_D4(10), PPB_WGMMA_D4(11),            \
        PPB_WGMMA_D4(12), PPB_WGMMA_D4(13), PPB_WGMMA_D4(14), PPB_WGMMA_D4(15)
/* after the accumulators: SS: desc a, desc b, scale-d; RS: the four A registers, desc b */
#define PPB_WGMMA_SS_AB_N64 "%32, %33"
#define PPB_WGMMA_SS_SCALE_N64 "%34"
#define PPB_WGMMA_RS_AB_N64 "{%32, %33, %34, %35}, %36"
#define PPB_WGMMA_SS_AB_N128 "%64, %65"
#define PPB_WGMMA_SS_SCALE_N128 "%66"
#define PPB_WGMMA_RS_AB_N128 "{%64, %65, %66, %67}, %68"

template <typename T, int N>
struct op;
#define PPB_DEFINE_WGMMA_OP(T, PTX_TYPE, N)                                                                       \
    template <>                                                                                                   \
    struct op<T, N> {                                                                                             \
        /* d (+)= A B, A and B from shared memory; accumulate 0 ignores d's old value */                          \
        static __device__ __forceinline__ void ss(float (&d)[N / 8][4], unsigned long long desc_a,                \
                                                  unsigned long long desc_b, int accumulate)                      \
        {                                                                                                         \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PPB_WGMMA_SS_SCALE_N##N ", 0;\n"                      \
                         "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " "              \
                         PPB_WGMMA_D_N##N ", " PPB_WGMMA_SS_AB_N##N ", p, 1, 1, 0, 0;\n}\n"                      \
                         : PPB_WGMMA_D_OPERANDS_N##N                                                              \
                         : "l"(desc_a), "l"(desc_b), "r"(accumulate));                                            \
        }                                                                                                         \
        /* d += A B, A from registers (m16k16 fragment layout per warp), B from shared memory */                 \
        static __device__ __forceinline__ void rs(float (&d)[N / 8][4], unsigned a0, unsigned a1, unsigned a2,    \
                                                  unsigned a3, unsigned long long desc_b)                         \
        {                                                                                                         \
            asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " "              \
                         PPB_WGMMA_D_N##N ", " PPB_WGMMA_RS_AB_N##N ", 1, 1, 1, 0;\n"                             \
                         : PPB_WGMMA_D_OPERANDS_N##N                                                              \
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b));                                      \
        }                                                                                                         \
    };
PPB_DEFINE_WGMMA_OP(__nv_bfloat16, "bf16", 64)
PPB_DEFINE_WGMMA_OP(__nv_bfloat16, "bf16", 128)
PPB_DEFINE_WGMMA_OP(__half, "f16", 64)
PPB_DEFINE_WGMMA_OP(__half, "f16", 128)
#undef PPB_DEFINE_WGMMA_OP

/* The new tokens' V ([tokens][kvh][D]) reaches the d-major tile through registers
 * (cp.async cannot transpose): fetch() issues the global loads a tile ahead, so their
 * latency hides behind a tile of maths; store() writes them transposed. Token fastest
 * across threads, so a warp's stores fill whole chunks of one row. Zeros past the query. */
template <typename T, int D, int BN, int THREADS>
struct new_v_rows {
    static constexpr int ITER = BN * D / 8 / THREADS;
    uint4 r[ITER];

    __device__ __forceinline__ void fetch(const ppb_prefill_args &a, const cta_geom &g, int n0)
    {
        const T *v = static_cast<const T *>(a.v);
#pragma unroll
        for (int i = 0; i < ITER; i++) {
            const int c = threadIdx.x + i * THREADS, t = c % BN, dc = c / BN;
            const int n = n0 + t;
            r[i] = n < g.qlen ? *reinterpret_cast<const uint4 *>(
                                    v + ((size_t)(g.start + n) * a.num_kv_heads + g.kvh) * D + dc * 8)
                              : make_uint4(0, 0, 0, 0);
        }
    }
    template <class VT>
    __device__ __forceinline__ void store(T *sV) const
    {
#pragma unroll
        for (int i = 0; i < ITER; i++) {
            const int c = threadIdx.x + i * THREADS, t = c % BN, dc = c / BN;
            union { uint4 v; T e[8]; } u;
            u.v = r[i];
#pragma unroll
            for (int e = 0; e < 8; e++)
                sV[VT::at(dc * 8 + e, t >> 3) + (t & 7)] = u.e[e];
        }
    }
};

/* Issue O += P V for one tile: BN / 16 steps along the keys, P from registers, V from
 * the tile's d-major stage (16 keys = 32 bytes into the slab). The caller commits. */
template <typename T, int D, int BN>
__device__ __forceinline__ void pv(float (&o)[1][D / 8][4], const unsigned (&pa)[BN / 16][4], const T *sV)
{
#pragma unroll
    for (int kt = 0; kt < BN / 16; kt++)
        op<T, D>::rs(o[0], pa[kt][0], pa[kt][1], pa[kt][2], pa[kt][3],
                     sw128_desc(sV + (kt >> 2) * D * 64 + (kt & 3) * 16));
}

template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void run(const ppb_prefill_args &a)
{
    static_assert(BM == W * 16 && (BM == 64 || BM == 128), "one warpgroup per 64 rows, 16 rows per warp");
    static_assert((D == 64 || D == 128) && (BN == 64 || BN == 128), "wgmma N of both GEMMs: 64 or 128");
    using L = wgmma_layout<D, BM, BN>;
    using QT = sw128_tile<BM>;
    using KT = sw128_tile<BN>;
    using VT = sw128_tile<D>;
    constexpr int THREADS = W * 32;

    cta_geom g;
    if (!cta_setup<BM, BN>(a, g))
        return;
    unsigned char *smem = dynamic_smem();
    smem += (1024u - (mma::smem_addr(smem) & 1023u)) & 1023u;
    T *sQ = reinterpret_cast<T *>(smem);
    T *sKV = sQ + L::Q_ELEMS;   /* stage s: K tile at sKV + s * STAGE_ELEMS, its V tile after it */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int gq = lane >> 2, tq = lane & 3;
    const int W_ = a.sliding_window;
    const mma::page_slot ps = mma::make_page_slot<BN, THREADS>(__ffs(a.page_size) - 1);
    const int ntiles = g.n1 + g.n2;

    mma::issue_q_tile<T, D, BM, THREADS, QT>(a, g, sQ);
    /* The copies run AHEAD tiles ahead of the maths: one stage holds the tile being
     * computed, one the previous tile's V (its P V runs during this tile's softmax), the
     * rest the tiles in flight. Tile t lives in stage t % STAGES. Every tile issues one
     * copy group, empty past the last tile, so "tile it has landed" is always "at most
     * AHEAD - 1 groups in flight". Block-table entries are read a tile before the copies
     * that use them. */
    constexpr int AHEAD = L::STAGES - 2;
    new_v_rows<T, D, BN, THREADS> new_v;
    auto stage_of = [&](int t) { return sKV + (t % L::STAGES) * L::STAGE_ELEMS; };
    auto issue_tile = [&](int t, int phys) {   /* returns the V stage when new_v holds its rows */
        T *nK = stage_of(t);
        T *pending_rows = nullptr;
        if (t < ntiles) {
            const bool ph1 = t < g.n1;
            const int n0 = mma::tile_start<BN>(g, t);
            mma::issue_k_tile<T, D, BN, THREADS, KT>(a, g, ph1, n0, nK, ps, phys);
            if (ph1) {
                mma::issue_v_tile<T, D, BN, THREADS, VT, VT>(a, g, true, n0, nK + L::K_ELEMS, ps, phys);
            } else {
                new_v.fetch(a, g, n0);
                pending_rows = nK + L::K_ELEMS;
            }
        }
        mma::cp_async_commit();
        return pending_rows;
    };
    for (int t = 0; t < AHEAD; t++) {
        T *rows = issue_tile(t, t < g.n1 ? mma::segment_page(a, g, ps, mma::tile_start<BN>(g, t)) : 0);
        if (rows)
            new_v.template store<VT>(rows);
    }
    int phys_next = AHEAD < g.n1 ? mma::segment_page(a, g, ps, mma::tile_start<BN>(g, AHEAD)) : 0;

    int row_tok[1][2];
    row_tok[0][0] = (g.m0 + warp * 16 + gq) / g.group;
    row_tok[0][1] = (g.m0 + warp * 16 + gq + 8) / g.group;
    float o[1][D / 8][4];
    float m_run[1][2], l_run[1][2];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
        o[0][i][0] = o[0][i][1] = o[0][i][2] = o[0][i][3] = 0.f;
    m_run[0][0] = m_run[0][1] = -__int_as_float(0x7f800000);
    l_run[0][0] = l_run[0][1] = 0.f;
    const float scale_log2 = a.sm_scale * 1.4426950408889634f;
    const T *q_wg = sQ + (warp >> 2) * 64 * 64;   /* this warpgroup's 64 rows of each slab */

    /* Tiles overlap: P V of tile it - 1 is issued right after S of tile it and runs while
     * tile it's softmax does; O is rescaled once it has landed. Tile 0 has no P V before
     * it, so it is peeled off the loop: the wgmma groups in flight at every wait are then
     * the same on every path (ptxas serialises wgmma where it cannot tell). */
    unsigned pa[BN / 16][4];   /* P of the tile whose P V is pending (T pairs) */
    float s[1][BN / 8][4];
    T *sV = nullptr, *next_v = nullptr;
    /* Wait for tile it, publish it, and start the copies of tile it + AHEAD (its V from the
     * new tokens: loads into registers, stored by finish_tile). Sets sV and next_v; K's
     * stage is sV - K_ELEMS. */
    auto begin_tile = [&](int it) {
        sV = stage_of(it) + L::K_ELEMS;
        mma::cp_async_wait<AHEAD - 1>();
        fence_proxy_async();
        __syncthreads();   /* tile it's K and V (tile 0: and Q) landed; every warp is done with the stage
                              the next copies overwrite (tile it - 2's, whose P V was waited for) */
        if (it < g.n1 && mma::zero_stale_v_slots<T, D, BN, THREADS, VT>(g, mma::tile_start<BN>(g, it), sV)) {
            fence_proxy_async();
            __syncthreads();
        }
        next_v = issue_tile(it + AHEAD, phys_next);
        if (it + AHEAD + 1 < g.n1)
            phys_next = mma::segment_page(a, g, ps, mma::tile_start<BN>(g, it + AHEAD + 1));
    };
    /* S = Q K^T: D / 16 steps along the dims, 16 dims = 32 bytes into the slab. The caller
     * commits. */
    auto issue_s = [&]() {
        const T *sK = sV - L::K_ELEMS;
#pragma unroll
        for (int j = 0; j < BN / 8; j++)
            s[0][j][0] = s[0][j][1] = s[0][j][2] = s[0][j][3] = 0.f;
        fence_accumulators(s[0]);
        fence_accumulators(o[0]);
        fence_operands();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
            op<T, BN>::ss(s[0], sw128_desc(q_wg + (kk >> 2) * BM * 64 + (kk & 3) * 16),
                          sw128_desc(sK + (kk >> 2) * BN * 64 + (kk & 3) * 16), kk > 0);
    };
    /* Mask and softmax of S (landed), giving alpha; the caller rescales O. */
    auto softmax = [&](int it, float (&alpha)[1][2]) {
        fence_accumulators(s[0]);
        const bool ph1 = it < g.n1;
        const int n0 = mma::tile_start<BN>(g, it);
        if (tile_needs_mask<BN>(g, W_, ph1, n0))
            mma::mask_scores<1, BN>(s, g, W_, ph1, n0, row_tok, tq);
        return mma::softmax_tile<1, BN>(s, m_run, l_run, alpha, scale_log2);
    };
    /* O has landed: rescale it, keep P for its P V, store the new-token V of the tile
     * issued AHEAD. */
    auto finish_tile = [&](const float (&alpha)[1][2], bool moved) {
        fence_accumulators(o[0]);
        mma::rescale_output<1, D>(o, alpha, moved);
#pragma unroll
        for (int kt = 0; kt < BN / 16; kt++) {
            pa[kt][0] = ppb_pack2<T>(s[0][2 * kt][0], s[0][2 * kt][1]);
            pa[kt][1] = ppb_pack2<T>(s[0][2 * kt][2], s[0][2 * kt][3]);
            pa[kt][2] = ppb_pack2<T>(s[0][2 * kt + 1][0], s[0][2 * kt + 1][1]);
            pa[kt][3] = ppb_pack2<T>(s[0][2 * kt + 1][2], s[0][2 * kt + 1][3]);
        }
        if (next_v)   /* its stage is read by no one until that tile's barrier */
            new_v.template store<VT>(next_v);
    };

    if (ntiles > 0) {
        float alpha[1][2];
        begin_tile(0);
        issue_s();
        commit();
        wait<0>();
        finish_tile(alpha, softmax(0, alpha));
        for (int it = 1; it < ntiles; it++) {
            const T *pending_v = sV;
            begin_tile(it);
            issue_s();
            commit();
            pv<T, D, BN>(o, pa, pending_v);
            commit();
            wait<1>();   /* S has landed (groups complete in order); P V still runs */
            const bool moved = softmax(it, alpha);
            wait<0>();   /* the previous tile's P V has landed in O */
            finish_tile(alpha, moved);
        }
        fence_accumulators(o[0]);
        fence_operands();
        pv<T, D, BN>(o, pa, sV);
        commit();
        wait<0>();
        fence_accumulators(o[0]);
    }
    mma::cp_async_wait_all();
    mma::store_output<T, D, 1, 16>(a, g, o, l_run, row_tok, warp, lane);
}

} /* namespace wgmma */

#endif
