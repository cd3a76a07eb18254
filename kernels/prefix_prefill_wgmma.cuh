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
 *  - Tiles sit in shared memory in the 128-byte-swizzled layout wgmma reads through
 *    matrix descriptors (rows of 64 elements, 16-byte chunk c of row r at chunk
 *    c ^ (r % 8)), each copied as it lies in memory: Q [BM][D], K [BN][D]; a context V
 *    tile [D][BN] (d-major: the cache's page layout, read K-major), a new-token V tile
 *    [BN][D] (token-major: the k/v tensors' layout, read MN-major, wgmma's transposed B).
 *    No tile passes through registers.
 *  - S = Q K^T: one m64nBNk16 wgmma per 16 dims, Q and K from shared memory. O += P V:
 *    m64nDk16 with P from registers (the accumulator layout of S is the A-fragment
 *    layout, as with mma.sync) and V from shared memory.
 *  - Tiles overlap: P V of tile i is issued right after S of tile i + 1 and runs during
 *    its softmax, so tile i's V keeps its slot a tile longer: 3 or 4 slots
 *    (ppb_prefill_wgmma_stages, prefill_plan.h), copies STAGES - 2 tiles ahead. O is
 *    rescaled while S runs, just before the P V that adds to it (FlashAttention-3's order):
 *    128/128/8 went from 254 to 207 registers at the same speed (+2% at q512 ctx16384).
 *  - A 64-row CTA alone on its SM has a producer warpgroup (threads 0-127) that issues
 *    every copy and runs as far ahead as the slots let it; the compute warpgroup after it
 *    only waits for data (prefill_plan.h says when, and what it gained).
 *  - No block-wide barrier per tile: every slot has mbarriers that say when its tile has
 *    landed (cp.async arrives by itself) and when every warp is done with it, K and V
 *    apart, so a warp waits only for the data it reads next. H200, against the per-tile
 *    __syncthreads it replaces (with the token-major V): 128/128/8 at q8192 ctx90112
 *    32/4 343 -> 388 TFLOP/s, at ctx 0 252 -> 394 (tests/gpu/test_prefill_kernel
 *    --bench; docs/results/h200-2026-12-02-wgmma-barriers.txt). Two warpgroups taking
 *    turns (FlashAttention-3's ping-pong), each copying one of K and V, were 12-14%
 *    slower there (split copies alone 4%), so both copy both and neither waits for the
 *    other.
 *  - cp.async writes through the generic proxy and wgmma reads through the async one:
 *    a thread fences (fence.proxy.async) after each wait for a tile, before its wgmma.
 *  - The body is compiled twice, once with the page size a constant for page 16 (run
 *    below says why: +12% at the goal case).
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

/* Matrix descriptor of a K-major, 128-byte-swizzled operand at shared address addr: start
 * address / 16, leading byte offset 1 (unused by swizzled K-major layouts), stride byte
 * offset 1024 / 16 (from one 8-row group to the next), swizzle mode 1 (128 B). */
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

/* Descriptor of an MN-major, 128-byte-swizzled operand (rows along K, 64 elements of N
 * per row and slab): leading byte offset = from one slab of 64 N-elements to the next,
 * stride byte offset 1024 / 16 (one 8-row group to the next), swizzle mode 1 (128 B). */
__device__ __forceinline__ unsigned long long sw128_mn_desc(unsigned addr, unsigned slab_bytes)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(slab_bytes >> 4) << 16) |
           (64ull << 32) | (1ull << 62);
}

/* The descriptor of the operand bytes after desc's: the start address is the low 14 bits,
 * in 16-byte units, and a shared address (below 256 KB) plus an offset inside the same
 * tile never carries out of them. */
__device__ __forceinline__ unsigned long long desc_plus(unsigned long long desc, unsigned bytes)
{
    return desc + (bytes >> 4);
}

/* x, as a value the compiler cannot see through: what is computed from it is computed where
 * it is used, not hoisted out of the loop around it into registers held all along. */
__device__ __forceinline__ unsigned opaque(unsigned x)
{
    asm volatile("" : "+r"(x));
    return x;
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
/* after the accumulators: SS: desc a, desc b, scale-d; RS: the four A registers, desc b, transpose b */
#define PPB_WGMMA_SS_AB_N64 "%32, %33"
#define PPB_WGMMA_SS_SCALE_N64 "%34"
#define PPB_WGMMA_RS_AB_N64 "{%32, %33, %34, %35}, %36"
#define PPB_WGMMA_RS_TRANS_N64 "%37"
#define PPB_WGMMA_SS_AB_N128 "%64, %65"
#define PPB_WGMMA_SS_SCALE_N128 "%66"
#define PPB_WGMMA_RS_AB_N128 "{%64, %65, %66, %67}, %68"
#define PPB_WGMMA_RS_TRANS_N128 "%69"

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
        /* d += A B, A from registers (m16k16 fragment layout per warp), B from shared memory:                   \
         * K-major, or MN_MAJOR (N contiguous, wgmma's transposed B) */                                          \
        template <bool MN_MAJOR>                                                                                  \
        static __device__ __forceinline__ void rs(float (&d)[N / 8][4], unsigned a0, unsigned a1, unsigned a2,    \
                                                  unsigned a3, unsigned long long desc_b)                         \
        {                                                                                                         \
            asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " "              \
                         PPB_WGMMA_D_N##N ", " PPB_WGMMA_RS_AB_N##N ", 1, 1, 1, " PPB_WGMMA_RS_TRANS_N##N ";\n"   \
                         : PPB_WGMMA_D_OPERANDS_N##N                                                              \
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "n"(MN_MAJOR ? 1 : 0));               \
        }                                                                                                         \
    };
PPB_DEFINE_WGMMA_OP(__nv_bfloat16, "bf16", 64)
PPB_DEFINE_WGMMA_OP(__nv_bfloat16, "bf16", 128)
PPB_DEFINE_WGMMA_OP(__half, "f16", 64)
PPB_DEFINE_WGMMA_OP(__half, "f16", 128)
#undef PPB_DEFINE_WGMMA_OP

/* Issue O += P V for one tile: BN / 16 steps along the keys, P from registers. V from the
 * slot at shared address sV: d-major (a context tile: the cache's page layout, 16 keys =
 * 32 bytes into the slab) or, MN_MAJOR, token-major (a new-token tile, copied as it is:
 * 16 keys = 16 rows). The caller commits. */
template <typename T, int D, int BN, bool MN_MAJOR>
__device__ __forceinline__ void pv(float (&o)[1][D / 8][4], const unsigned (&pa)[BN / 16][4], unsigned sV)
{
    constexpr unsigned E = sizeof(T);
    const unsigned long long vd = MN_MAJOR ? sw128_mn_desc(sV, E * BN * 64u) : sw128_desc(sV);
#pragma unroll
    for (int kt = 0; kt < BN / 16; kt++) {
        const unsigned at = MN_MAJOR ? kt * 16 * 64 : (kt >> 2) * D * 64 + (kt & 3) * 16;   /* elements */
        op<T, D>::template rs<MN_MAJOR>(o[0], pa[kt][0], pa[kt][1], pa[kt][2], pa[kt][3], desc_plus(vd, E * at));
    }
}

/* Slot barriers (mbarrier objects in shared memory). K and V are two rings of STAGES
 * slots, tile t in slot t % STAGES of each. A slot's "full" barrier completes when its
 * tile has landed: every copying thread arrives once its part of it has
 * (cp.async's own arrival). Its "empty" barrier completes when every warp is done with
 * the tile (lane 0 of each warp arrives): K once S has landed, V once P V has. Waits name a phase by its
 * parity: tile t is phase t / STAGES of its slot, and no barrier gets two phases ahead
 * of a waiter (a slot is refilled only once every warp has read it, and read only once
 * filled). */
__device__ __forceinline__ void bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar)
{
    asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar) : "memory");
}
/* This thread's arrival, made once all its cp.async so far have landed. */
__device__ __forceinline__ void bar_arrive_when_copied(unsigned bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned addr, int phase)
{
    const unsigned parity = (unsigned)phase & 1u;
    unsigned done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(addr), "r"(parity)
                     : "memory");
    } while (!done);
}

/* A compile-time choice passed to a generic lambda (the loop body's P V variant). */
template <bool B>
struct flag {
    static constexpr bool value = B;
};

/* A thread's copy plan: page size 1 << PAGE_SHIFT when PAGE_SHIFT > 0, else read at run time. */
template <int BN, int THREADS, int PAGE_SHIFT>
struct copy_plan {
    using type = mma::fixed_page_slot<BN, THREADS, PAGE_SHIFT>;
    static __device__ __forceinline__ type make(const ppb_prefill_args &) { return type{}; }
};
template <int BN, int THREADS>
struct copy_plan<BN, THREADS, 0> {
    using type = mma::page_slot;
    static __device__ __forceinline__ type make(const ppb_prefill_args &a)
    {
        return mma::make_page_slot<BN, THREADS>(__ffs(a.page_size) - 1);
    }
};

/* The kernel body, for pages of 1 << PAGE_SHIFT tokens, or of any size when PAGE_SHIFT is 0 (run below). */
template <typename T, int D, int BM, int BN, int W, int PAGE_SHIFT>
__device__ __forceinline__ void run_pages(const ppb_prefill_args &a)
{
    static_assert(BM == W * 16 && (BM == 64 || BM == 128), "one warpgroup per 64 rows, 16 rows per warp");
    static_assert((D == 64 || D == 128) && (BN == 64 || BN == 128), "wgmma N of both GEMMs: 64 or 128");
    using L = wgmma_layout<D, BM, BN>;
    using QT = sw128_tile<BM>;
    using KT = sw128_tile<BN>;   /* also a new-token V tile (token-major, read MN-major) */
    using VT = sw128_tile<D>;    /* a context V tile: d-major, the page layout */
    constexpr int STAGES = L::STAGES;
    /* PRODUCERS threads (a producer warpgroup, prefill_plan.h) copy and the W warps after
     * them compute; without a producer every thread does both. */
    constexpr int PRODUCERS = ppb_prefill_wgmma_producer_warps(W, L::SMEM_BYTES) * 32;
    constexpr int COPIERS = PRODUCERS > 0 ? PRODUCERS : W * 32;
    /* A producer's copies go two at a time: it shares the kernel's register allocation,
     * and with all 16 of a tile's addresses live 64/128/4 took 255 registers and spilled
     * (219 without spills two at a time, the build measured in prefill_plan.h). */
    constexpr int COPY_UNROLL = PRODUCERS > 0 ? 2 : (BN * D / 8) / COPIERS;

    if (blockDim.x != PRODUCERS + W * 32)
        ppb_trap();   /* the barriers count on these threads: a plan from another build */
    cta_geom g;
    if (!cta_setup<BM, BN>(a, g))
        return;
    /* Shared memory is addressed by 32-bit shared-window addresses throughout, converted
     * from a generic pointer once. From generic pointers nvcc's front end folded the
     * conversions and NVRTC's kept one per pointer, so the kernel bench (nvcc) and ppbench
     * (NVRTC) ran different code (5bc9c13's 128/128/8: 207 and 255 registers; 10da97d's
     * order, faster in the bench, spilled in ppbench). From these both build the same.
     * The tiles start at the first 1024-byte boundary; the barriers go in the gap before
     * it where it has room, else right after the tiles (SMEM_BYTES leaves 1 KB for both). */
    constexpr unsigned E = sizeof(T);
    const unsigned smem = mma::smem_addr(dynamic_smem());
    const unsigned gap = (1024u - (smem & 1023u)) & 1023u;
    const unsigned sQ = smem + gap;
    const unsigned sKV = sQ + E * L::Q_ELEMS;   /* slot s: K tile at sKV + s * STAGE_ELEMS, V tile after it */
    /* barrier i of a ring (8 bytes each): the K full, K empty, V full, V empty rings, then Q's */
    const unsigned k_full = gap >= L::BARRIER_BYTES ? smem : sKV + E * STAGES * L::STAGE_ELEMS;
    const unsigned k_empty = k_full + 8u * STAGES, v_full = k_empty + 8u * STAGES, v_empty = v_full + 8u * STAGES;
    const unsigned q_full = v_empty + 8u * STAGES;
    auto slot_bar = [](unsigned ring, int t) { return ring + 8u * (unsigned)(t % STAGES); };
    const int ntiles = g.n1 + g.n2;

    if (threadIdx.x < STAGES) {
        bar_init(slot_bar(k_full, threadIdx.x), COPIERS);
        bar_init(slot_bar(v_full, threadIdx.x), COPIERS);
        bar_init(slot_bar(k_empty, threadIdx.x), W);
        bar_init(slot_bar(v_empty, threadIdx.x), W);
    }
    if (threadIdx.x == 0)
        bar_init(q_full, COPIERS);
    __syncthreads();   /* the barriers exist before anyone arrives */

    auto k_slot = [&](int t) { return sKV + E * (unsigned)((t % STAGES) * L::STAGE_ELEMS); };
    auto v_slot = [&](int t) { return k_slot(t) + E * L::K_ELEMS; };
    /* Copy tile t into its slots once every warp is done with the tiles they held before.
     * phys: this thread's block-table entry for the tile (mma::segment_page). */
    using plan = copy_plan<BN, COPIERS, PAGE_SHIFT>;
    using page_slot = typename plan::type;
    auto issue_tile = [&](const page_slot &ps, int t, int phys) {
        const bool ph1 = t < g.n1;
        const int n0 = mma::tile_start<BN>(g, t);
        if (t >= STAGES)
            bar_wait(slot_bar(k_empty, t), t / STAGES - 1);
        mma::issue_k_tile<T, D, BN, COPIERS, KT, COPY_UNROLL>(a, g, ph1, n0, k_slot(t), ps, phys);
        bar_arrive_when_copied(slot_bar(k_full, t));
        if (t >= STAGES)
            bar_wait(slot_bar(v_empty, t), t / STAGES - 1);
        mma::issue_v_tile<T, D, BN, COPIERS, VT, KT, COPY_UNROLL>(a, g, ph1, n0, v_slot(t), ps, phys);
        bar_arrive_when_copied(slot_bar(v_full, t));
    };
    auto issue_q = [&]() {
        mma::issue_q_tile<T, D, BM, COPIERS, QT>(a, g, sQ);
        bar_arrive_when_copied(q_full);
    };
    auto tile_page = [&](const page_slot &ps, int t) {
        return t < g.n1 ? mma::segment_page(a, g, ps, mma::tile_start<BN>(g, t)) : 0;
    };

    /* Without a producer the copies run AHEAD tiles ahead of the maths: a K slot holds the
     * tile being computed, a V slot the previous tile's V (its P V runs during this tile's
     * softmax), the others the tiles in flight; block-table entries are read a tile before
     * the copies that use them. A producer runs as far ahead as the slots let it. */
    constexpr int AHEAD = STAGES - 2;
    /* The order of a step (H200 kernel bench, 5bc9c13's order -> this one, two rounds,
     * docs/results/h200-2026-12-02-u32-addressing.txt). With BLOCK_N 128 S goes out before
     * the step waits for the previous tile's V (a late V holds up P V only), and in the
     * context steps the copies AHEAD tiles on go out after both GEMMs, so the GEMMs start
     * first and the copies' waits for slots and page-table reads run beside them: 128/128/8
     * at q8192 ctx90112 32/4 401 -> 414-416 TFLOP/s, q512 ctx16384 32/4 375 -> 412. The
     * new-token steps copy first: after, ctx 0 fell 384 -> 364; first, 386. With BLOCK_N
     * 64 the step waits for V, copies, then issues S: S first was 4% slower at 128/64/8. */
    constexpr bool S_BEFORE_V_WAIT = BN == 128;
    int phys_next = 0;
    page_slot ps{};
    if constexpr (PRODUCERS > 0) {
        if (threadIdx.x < PRODUCERS) {
            const page_slot pps = plan::make(a);
            issue_q();
            int phys = tile_page(pps, 0);
            for (int t = 0; t < ntiles; t++) {
                const int next = tile_page(pps, t + 1);
                issue_tile(pps, t, phys);
                phys = next;
            }
            mma::cp_async_wait_all();   /* no thread leaves with copies in flight */
            return;
        }
    } else {
        ps = plan::make(a);
        issue_q();
        for (int t = 0; t < AHEAD && t < ntiles; t++)
            issue_tile(ps, t, tile_page(ps, t));
        phys_next = tile_page(ps, AHEAD);
    }
    const int tid = threadIdx.x - PRODUCERS, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
    const int gq = lane >> 2, tq = lane & 3;
    const int W_ = a.sliding_window;
    bar_wait(q_full, 0);
    fence_proxy_async();

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
    const unsigned q_wg = sQ + E * (unsigned)(wg * 64 * 64);   /* this warpgroup's 64 rows of each slab */

    unsigned pa[BN / 16][4];   /* P of the tile whose P V is pending (T pairs) */
    float s[1][BN / 8][4];
    float alpha[1][2];         /* O's rescale for the tile whose P is in pa */
    bool moved = false;        /* whether any row's max moved (else alpha is 1) */
    /* Without a producer: start the copies of tile it + AHEAD. */
    auto copy_ahead = [&](int it) {
        if constexpr (PRODUCERS == 0) {
            const int t = it + AHEAD;
            if (t < ntiles)
                issue_tile(ps, t, phys_next);
            phys_next = tile_page(ps, t + 1);
        }
    };
    /* Wait for tile it's K. */
    auto begin_tile = [&](int it) {
        bar_wait(slot_bar(k_full, it), it / STAGES);
        fence_proxy_async();   /* the other threads' copies, seen by this thread's wgmma */
    };
    /* This warp is done with a slot (the wgmma reading it was waited for). */
    auto release = [&](unsigned empty, int t) {
        __syncwarp();
        if (lane == 0)
            bar_arrive(slot_bar(empty, t));
    };
    /* Wait for tile t's V. */
    auto await_v = [&](int t) {
        bar_wait(slot_bar(v_full, t), t / STAGES);
        fence_proxy_async();
    };
    /* S = Q K^T: D / 16 steps along the dims, 16 dims = 32 bytes into the slab. The caller
     * commits. */
    auto issue_s = [&](int it) {
        const unsigned sK = k_slot(it);
#pragma unroll
        for (int j = 0; j < BN / 8; j++)
            s[0][j][0] = s[0][j][1] = s[0][j][2] = s[0][j][3] = 0.f;
        fence_accumulators(s[0]);
        fence_accumulators(o[0]);
        fence_operands();
        /* Q's descriptors are the same every tile: computed here from an opaque base, or the
         * compiler keeps all D / 16 of them live across the loop (10da97d's reorder spilled
         * under NVRTC with them live). */
        const unsigned long long qd = sw128_desc(opaque(q_wg)), kd = sw128_desc(sK);
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
            op<T, BN>::ss(s[0], desc_plus(qd, E * ((kk >> 2) * BM * 64 + (kk & 3) * 16)),
                          desc_plus(kd, E * ((kk >> 2) * BN * 64 + (kk & 3) * 16)), kk > 0);
    };
    /* Mask and softmax of S (landed): alpha and moved for O's rescale. */
    auto softmax = [&](int it) {
        fence_accumulators(s[0]);
        const bool ph1 = it < g.n1;
        const int n0 = mma::tile_start<BN>(g, it);
        if (tile_needs_mask<BN>(g, W_, ph1, n0))
            mma::mask_scores<1, BN>(s, g, W_, ph1, n0, row_tok, tq);
        moved = mma::softmax_tile<1, BN>(s, m_run, l_run, alpha, scale_log2);
    };
    /* Rescale O (every P V before the pending one has landed in it). */
    auto rescale = [&]() {
        fence_accumulators(o[0]);
        mma::rescale_output<1, D>(o, alpha, moved);
    };
    /* Keep P (S after the softmax) for its P V, once the P V before it has landed. */
    auto keep_p = [&]() {
#pragma unroll
        for (int kt = 0; kt < BN / 16; kt++) {
            pa[kt][0] = ppb_pack2<T>(s[0][2 * kt][0], s[0][2 * kt][1]);
            pa[kt][1] = ppb_pack2<T>(s[0][2 * kt][2], s[0][2 * kt][3]);
            pa[kt][2] = ppb_pack2<T>(s[0][2 * kt + 1][0], s[0][2 * kt + 1][1]);
            pa[kt][3] = ppb_pack2<T>(s[0][2 * kt + 1][2], s[0][2 * kt + 1][3]);
        }
    };
    /* O += P V of tile t, O rescaled first by the softmax of tile t. The caller commits. */
    auto issue_pv = [&](int t, auto new_v) {
        rescale();
        fence_accumulators(o[0]);
        fence_operands();
        pv<T, D, BN, decltype(new_v)::value>(o, pa, v_slot(t));
    };

    /* Tiles overlap: P V of tile it - 1 is issued right after S of tile it and runs while
     * tile it's softmax does; O is rescaled while S runs, just before the P V that adds to
     * it. Tile 0 has no P V before it, so it is peeled off the loop: the wgmma groups in
     * flight at every wait are then the same on every path (ptxas serialises wgmma where
     * it cannot tell). For the same reason the P V variant is a compile-time choice: one
     * loop while tile it - 1 is a context tile, one while it is a new-token tile (new_v:
     * its V is token-major). */
    auto step = [&](int it, auto new_v) {
        constexpr bool copies_after_gemms = S_BEFORE_V_WAIT && !decltype(new_v)::value;
        begin_tile(it);
        if constexpr (!copies_after_gemms)
            copy_ahead(it);
        if constexpr (!S_BEFORE_V_WAIT)
            await_v(it - 1);
        issue_s(it);
        commit();
        if constexpr (S_BEFORE_V_WAIT)
            await_v(it - 1);
        issue_pv(it - 1, new_v);
        commit();
        if constexpr (copies_after_gemms)
            copy_ahead(it);
        wait<1>();   /* S has landed (groups complete in order); P V still runs */
        release(k_empty, it);
        softmax(it);
        wait<0>();   /* the previous tile's P V has landed in O */
        release(v_empty, it - 1);
        keep_p();
    };
    /* Every CTA has a new-token tile (its rows see their own tokens: cta_setup's n2 >= 1),
     * and it comes last. */
    begin_tile(0);
    copy_ahead(0);
    issue_s(0);
    commit();
    wait<0>();
    release(k_empty, 0);
    softmax(0);
    keep_p();
    int it = 1;
    for (; it <= g.n1; it++)
        step(it, flag<false>());
    for (; it < ntiles; it++)
        step(it, flag<true>());
    await_v(ntiles - 1);
    issue_pv(ntiles - 1, flag<true>());
    commit();
    wait<0>();
    fence_accumulators(o[0]);
    mma::store_output<T, D, 1, 16>(a, g, o, l_run, row_tok, warp, lane);
}

/* The page size a compile-time constant for page 16 (vLLM's default block size), else read
 * at run time. With page 16 and 256 copying threads a thread's 8 K chunks of a context tile
 * lie in one row 2 chunks apart and its 8 V chunks in one column 16 rows apart, all valid or
 * none: with the shift a constant their addresses fold into a base and constant offsets,
 * where the general body works each one out in full (IMAD, ISETP and LEA were 3428 of 5460b4b's
 * 8792 SASS instructions at 128/128/8). H200 kernel bench, q8192 ctx90112 32/4 bf16 128/128/8:
 * 416 -> 466 TFLOP/s (docs/results/h200-2026-12-02-page16.txt). */
template <typename T, int D, int BM, int BN, int W>
__device__ __forceinline__ void run(const ppb_prefill_args &a)
{
    constexpr int VLLM_PAGE = 16;
    if (a.page_size == VLLM_PAGE)
        run_pages<T, D, BM, BN, W, mma::clog2(VLLM_PAGE)>(a);
    else
        run_pages<T, D, BM, BN, W, 0>(a);
}

} /* namespace wgmma */

#endif
