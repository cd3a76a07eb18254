/* GPU test of the paged-attention decode kernels (kernels/paged_attention.cuh) and their
 * launch plan (kernels/decode_plan.c). Standalone: nvcc + libc, no harness libraries but
 * the float64 reference (harness/run/reference_row.c, plain C).
 *
 *   nvcc -std=c++17 -O2 -arch=sm_90 -Ikernels -Iharness/run tests/gpu/test_decode_kernel.cu \
 *        kernels/decode_plan.c harness/run/reference_row.c -o test_decode_kernel
 *   ./test_decode_kernel            plan checks, correctness, the PARTITION_SIZE mismatch
 *   ./test_decode_kernel --quick    a small subset (for compute-sanitizer)
 *   ./test_decode_kernel --bench    timings of the KERNELS.md anchor cases
 *   ./test_decode_kernel --bench-one  the main case once per path (for ncu)
 *   ./test_decode_kernel --bench[-one] --case TEXT  only the bench cases whose name contains TEXT
 *
 * Inputs come from kernels/ppb_rng.h (the project's input definition): element i of a
 * tensor is a pure function of (seed, tensor, i). The float64 CPU reference is the
 * harness's (ppb_reference_attend) on host copies of the pages the checked sequences
 * own, gathered from the device: it reads the very bits the kernel read. Cache slots past a sequence's end hold
 * "garbage" (100 + u), pages sit in a seeded random permutation, unused block-table
 * entries point far outside the cache. Outputs are poisoned (NaN) before each launch.
 * Exit status 0 only if every check passed. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "paged_attention.cuh"

extern "C" {
#include "decode_plan.h"
#include "ppb_rng.h"
#include "reference_row.h"
}

/* Tensor ids of the input definition (harness/run/workload.h). */
enum { TENSOR_Q = 1, TENSOR_K_CACHE = 4, TENSOR_V_CACHE = 5 };
static const int kTablePoison = 0x3fffffff; /* unused block-table entries: far outside any cache */
static const double kReadCeilingGBs = 4350.0; /* H200 read-only ceiling, KERNELS.md */

#define CUDA_CHECK(call)                                                                                   \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                           \
            fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
            exit(2); /* the context may be unusable: stop here */                                          \
        }                                                                                                  \
    } while (0)

static int g_failures = 0;
static int g_checks = 0;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
    g_checks++;
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (!ok)
        g_failures++;
}

/* ------------------------------------------------------------------ instances */
typedef unsigned long long (*smem_fn)(int, int);
struct Inst {
    int dtype, d, page, nt, part, mma;
    const void *main_fn, *reduce_fn;
    smem_fn smem;
    const char *name;
};

#define INST_V2(T, DT, D, PG, NT, PART, MMA)                                                               \
    {DT, D, PG, NT, PART, MMA, (const void *)&paged_attention_kernel<T, D, PG, NT, PART, MMA>,             \
     (const void *)&paged_attention_v2_reduce_kernel<T, D, NT, PART>,                                      \
     &ppb_pa::kernel_smem_bytes<D, PG, NT, PART, MMA>,                                                     \
     #T " D" #D " page" #PG " nt" #NT " part" #PART " mma=" #MMA}
#define INST_V1(T, DT, D, PG, NT, MMA)                                                                     \
    {DT, D, PG, NT, 0, MMA, (const void *)&paged_attention_kernel<T, D, PG, NT, 0, MMA>, nullptr,          \
     &ppb_pa::kernel_smem_bytes<D, PG, NT, 0, MMA>, #T " D" #D " page" #PG " nt" #NT " v1 mma=" #MMA}
#define BF PPB_KDTYPE_BF16
#define FP PPB_KDTYPE_FP16
#define BOTH_V2(T, DT, D, PG, NT, PART) INST_V2(T, DT, D, PG, NT, PART, false), INST_V2(T, DT, D, PG, NT, PART, true)
#define BOTH_V1(T, DT, D, PG, NT) INST_V1(T, DT, D, PG, NT, false), INST_V1(T, DT, D, PG, NT, true)

static const Inst kInstances[] = {
    BOTH_V2(__nv_bfloat16, BF, 128, 16, 128, 512), BOTH_V2(__nv_bfloat16, BF, 128, 16, 128, 256),
    BOTH_V1(__nv_bfloat16, BF, 128, 16, 128),      BOTH_V2(__half, FP, 128, 16, 128, 512),
    BOTH_V2(__nv_bfloat16, BF, 64, 8, 64, 32),     BOTH_V2(__half, FP, 64, 8, 64, 64),
    BOTH_V2(__nv_bfloat16, BF, 256, 32, 256, 64),  BOTH_V2(__half, FP, 256, 16, 128, 256),
    BOTH_V2(__nv_bfloat16, BF, 128, 32, 256, 512), BOTH_V2(__nv_bfloat16, BF, 128, 8, 64, 256),
    BOTH_V1(__half, FP, 64, 16, 256),              BOTH_V1(__nv_bfloat16, BF, 256, 32, 128),
    BOTH_V2(__nv_bfloat16, BF, 128, 16, 256, 512), BOTH_V2(__nv_bfloat16, BF, 128, 16, 64, 512),
    BOTH_V1(__half, FP, 128, 16, 128),             BOTH_V2(__half, FP, 128, 16, 128, 256),
};

static const Inst *find_inst(int dtype, int d, int page, int nt, int part, int mma)
{
    for (const Inst &i : kInstances)
        if (i.dtype == dtype && i.d == d && i.page == page && i.nt == nt && i.part == part && i.mma == mma)
            return &i;
    fprintf(stderr, "FATAL: no instance dtype %d D %d page %d nt %d part %d mma %d\n", dtype, d, page, nt, part,
            mma);
    exit(2);
}

static int g_smem_optin = 0;
static int g_have_mma = 0;

/* ------------------------------------------------------------------ inputs */
__global__ void fill_kernel(uint16_t *buf, size_t n, uint64_t seed, uint32_t tensor, int dtype,
                            const int *page_valid, long long page_elems, int layout, int page)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int garbage = 0;
        if (layout != 0) {
            const long long phys = (long long)(i / (size_t)page_elems);
            const int slot = layout == 1 ? (int)((i / 8) % page) : (int)(i % page);
            garbage = slot >= page_valid[phys];
        }
        buf[i] = ppb_rng_input(seed, tensor, i, dtype, garbage);
    }
}

__global__ void poison_kernel(uint16_t *buf, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = 0xffffu; /* NaN in fp16 and bf16 */
}

struct Inputs {
    int dtype, d, page, H, KVH, B, max_len, mbps, num_blocks;
    uint64_t seed;
    std::vector<int> lens, table;
    uint16_t *q = nullptr, *k = nullptr, *v = nullptr;
    int *dtable = nullptr, *dlens = nullptr;
    size_t q_elems = 0, cache_elems = 0;
};

static float to_float(uint16_t h, int dtype)
{
    return dtype == PPB_KDTYPE_FP16 ? ppb_rng_fp16_to_float(h) : ppb_rng_bf16_to_float(h);
}

static void make_inputs(Inputs &in, int dtype, int d, int page, int H, int KVH, const std::vector<int> &lens,
                        uint64_t seed)
{
    in.dtype = dtype;
    in.d = d;
    in.page = page;
    in.H = H;
    in.KVH = KVH;
    in.B = (int)lens.size();
    in.lens = lens;
    in.seed = seed;
    in.max_len = *std::max_element(lens.begin(), lens.end());
    in.mbps = (in.max_len + page - 1) / page + 1; /* one spare (poisoned) entry per row */
    int used = 0;
    for (int l : lens)
        used += (l + page - 1) / page;
    in.num_blocks = used + 3; /* a few pages no sequence owns */
    std::vector<int> perm(in.num_blocks);
    for (int i = 0; i < in.num_blocks; i++)
        perm[i] = i;
    for (int i = in.num_blocks - 1; i > 0; i--) {
        int j = (int)ppb_rng_below(seed, PPB_RNG_STREAM_PAGES, (uint64_t)i, (uint32_t)(i + 1));
        std::swap(perm[i], perm[j]);
    }
    in.table.assign((size_t)in.B * in.mbps, kTablePoison);
    std::vector<int> page_valid(in.num_blocks, 0);
    int next = 0;
    for (int b = 0; b < in.B; b++)
        for (int p = 0; p * page < lens[b]; p++) {
            const int phys = perm[next++];
            in.table[(size_t)b * in.mbps + p] = phys;
            page_valid[phys] = std::min(page, lens[b] - p * page);
        }
    in.q_elems = (size_t)in.B * H * d;
    const long long page_elems = (long long)KVH * d * page;
    in.cache_elems = (size_t)in.num_blocks * page_elems;
    int *dvalid;
    CUDA_CHECK(cudaMalloc(&in.q, in.q_elems * 2));
    CUDA_CHECK(cudaMalloc(&in.k, in.cache_elems * 2));
    CUDA_CHECK(cudaMalloc(&in.v, in.cache_elems * 2));
    CUDA_CHECK(cudaMalloc(&in.dtable, in.table.size() * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&in.dlens, lens.size() * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dvalid, page_valid.size() * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(in.dtable, in.table.data(), in.table.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(in.dlens, lens.data(), lens.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dvalid, page_valid.data(), page_valid.size() * sizeof(int), cudaMemcpyHostToDevice));
    fill_kernel<<<1024, 256>>>(in.q, in.q_elems, seed, TENSOR_Q, dtype, nullptr, 1, 0, page);
    fill_kernel<<<4096, 256>>>(in.k, in.cache_elems, seed, TENSOR_K_CACHE, dtype, dvalid, page_elems, 1, page);
    fill_kernel<<<4096, 256>>>(in.v, in.cache_elems, seed, TENSOR_V_CACHE, dtype, dvalid, page_elems, 2, page);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(dvalid));
}

static void free_inputs(Inputs &in)
{
    cudaFree(in.q);
    cudaFree(in.k);
    cudaFree(in.v);
    cudaFree(in.dtable);
    cudaFree(in.dlens);
    in.q = in.k = in.v = nullptr;
}

/* Copy pages[i] of a paged cache (page_elems elements each) to dst[i]. */
__global__ void gather_pages_kernel(const uint16_t *src, uint16_t *dst, const int *pages, int n, size_t page_elems)
{
    const size_t total = (size_t)n * page_elems;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[(size_t)pages[i / page_elems] * page_elems + i % page_elems];
}

/* Host copy of sequence b's pages (in block-table order) and a block-table row into it. */
struct HostSeq {
    std::vector<uint16_t> k, v;
    std::vector<int32_t> table;
};
static void host_pages(const Inputs &in, int b, HostSeq &hs)
{
    const int n = (in.lens[b] + in.page - 1) / in.page;
    const size_t page_elems = (size_t)in.KVH * in.d * in.page;
    hs.table.resize(n);
    std::vector<int> pages(n);
    for (int p = 0; p < n; p++) {
        pages[p] = in.table[(size_t)b * in.mbps + p];
        hs.table[p] = p;
    }
    hs.k.assign((size_t)n * page_elems, 0);
    hs.v.assign((size_t)n * page_elems, 0);
    if (n == 0)
        return;
    int *dpages;
    uint16_t *dbuf;
    CUDA_CHECK(cudaMalloc(&dpages, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dbuf, (size_t)n * page_elems * 2));
    CUDA_CHECK(cudaMemcpy(dpages, pages.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    gather_pages_kernel<<<1024, 256>>>(in.k, dbuf, dpages, n, page_elems);
    CUDA_CHECK(cudaMemcpy(hs.k.data(), dbuf, (size_t)n * page_elems * 2, cudaMemcpyDeviceToHost));
    gather_pages_kernel<<<1024, 256>>>(in.v, dbuf, dpages, n, page_elems);
    CUDA_CHECK(cudaMemcpy(hs.v.data(), dbuf, (size_t)n * page_elems * 2, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(dbuf));
    CUDA_CHECK(cudaFree(dpages));
}

/* float64 reference (the harness's, ppb_reference_attend) for the rows (b, h) with
 * want[b * H + h]; out[(b * H + h) * D + d]. */
static void reference(const Inputs &in, int window, float sm_scale, const std::vector<char> &want,
                      std::vector<double> &out)
{
    out.assign((size_t)in.B * in.H * in.d, 0.0);
    std::vector<uint16_t> q(in.q_elems);
    CUDA_CHECK(cudaMemcpy(q.data(), in.q, in.q_elems * 2, cudaMemcpyDeviceToHost));
    std::vector<HostSeq> seqs(in.B);
    std::vector<std::pair<int, int>> items;   /* (b, h) */
    for (int b = 0; b < in.B; b++) {
        bool any = false;
        for (int h = 0; h < in.H; h++)
            if (want[(size_t)b * in.H + h]) {
                items.push_back({b, h});
                any = true;
            }
        if (any)
            host_pages(in, b, seqs[b]);
    }
    const int group = in.H / in.KVH;
    auto work = [&](size_t first, size_t step) {
        for (size_t it = first; it < items.size(); it += step) {
            const int b = items[it].first, h = items[it].second;
            ppb_ref_keys keys;
            memset(&keys, 0, sizeof keys);
            keys.dtype = in.dtype;
            keys.head_dim = in.d;
            keys.num_kv_heads = in.KVH;
            keys.page_size = in.page;
            keys.k_cache = seqs[b].k.data();
            keys.v_cache = seqs[b].v.data();
            keys.block_table = seqs[b].table.data();
            keys.cached = in.lens[b];
            ppb_reference_attend(&keys, h / group, &q[((size_t)b * in.H + h) * in.d], (double)sm_scale,
                                 in.lens[b] - 1, window, &out[((size_t)b * in.H + h) * in.d]);
        }
    };
    unsigned n = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < n; i++)
        pool.emplace_back(work, (size_t)i, (size_t)n);
    for (auto &t : pool)
        t.join();
}

/* Worst per-row relative L2 error over the wanted rows; non-finite outputs counted. */
struct Cmp {
    double worst = 0;
    int worst_b = -1, worst_h = -1;
    long long nonfinite = 0;
};
static Cmp compare(const Inputs &in, const std::vector<uint16_t> &got, const std::vector<double> &ref,
                   const std::vector<char> &want)
{
    Cmp c;
    for (int b = 0; b < in.B; b++)
        for (int h = 0; h < in.H; h++) {
            if (!want[(size_t)b * in.H + h])
                continue;
            double num = 0, den = 0;
            for (int d = 0; d < in.d; d++) {
                const size_t i = ((size_t)b * in.H + h) * in.d + d;
                const double x = to_float(got[i], in.dtype);
                if (!std::isfinite(x)) {
                    c.nonfinite++;
                    continue;
                }
                num += (x - ref[i]) * (x - ref[i]);
                den += ref[i] * ref[i];
            }
            const double e = std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
            if (e > c.worst) {
                c.worst = e;
                c.worst_b = b;
                c.worst_h = h;
            }
        }
    return c;
}

static double tolerance(int dtype) { return dtype == PPB_KDTYPE_BF16 ? 1e-2 : 2.5e-3; }

/* ------------------------------------------------------------------ launching */
struct Scratch {
    void *tmp_out = nullptr;
    float *exp_sums = nullptr, *max_logits = nullptr;
};

static ppb_decode_args make_args(const Inputs &in, int window, float sm_scale, int max_num_partitions, void *out,
                                 const Scratch &s)
{
    ppb_decode_args a;
    memset(&a, 0, sizeof a);
    a.q = in.q;
    a.k_cache = in.k;
    a.v_cache = in.v;
    a.out = out;
    a.block_table = in.dtable;
    a.seq_lens = in.dlens;
    a.tmp_out = s.tmp_out;
    a.exp_sums = s.exp_sums;
    a.max_logits = s.max_logits;
    a.num_seqs = in.B;
    a.num_heads = in.H;
    a.num_kv_heads = in.KVH;
    a.head_dim = in.d;
    a.page_size = in.page;
    a.max_blocks_per_seq = in.mbps;
    a.max_seq_len = in.max_len;
    a.max_num_partitions = max_num_partitions;
    a.sliding_window = window;
    a.sm_scale = sm_scale;
    return a;
}

static ppb_decode_config config_of(const Inst &I)
{
    ppb_decode_config c;
    c.version = I.part ? 2 : 1;
    c.num_threads = I.nt;
    c.partition_size = I.part;
    c.use_mma = I.mma;
    c.warp_size = PPB_WARP_SIZE;
    return c;
}

/* Plan and (when plans != NULL) report; returns false with the reason when refused. */
static bool plan_for(const Inst &I, const ppb_decode_args &a, ppb_launch_plan *mp, ppb_launch_plan *rp,
                     std::string *why)
{
    ppb_decode_config c = config_of(I);
    char reason[256];
    if (ppb_decode_plan(&c, &a, I.d, I.page, I.dtype, (unsigned)g_smem_optin, mp, rp, reason, sizeof reason)) {
        if (why)
            *why = reason;
        return false;
    }
    return true;
}

static void launch(const Inst &I, const ppb_decode_args &a, const ppb_launch_plan &mp, const ppb_launch_plan &rp,
                   cudaStream_t st = 0)
{
    ppb_decode_args args = a;
    void *params[] = {&args};
    CUDA_CHECK(cudaLaunchKernel(I.main_fn, dim3(mp.grid[0], mp.grid[1], mp.grid[2]),
                                dim3(mp.block[0], mp.block[1], mp.block[2]), params, mp.dynamic_smem, st));
    if (I.part) {
        CUDA_CHECK(cudaLaunchKernel(I.reduce_fn, dim3(rp.grid[0], rp.grid[1], rp.grid[2]),
                                    dim3(rp.block[0], rp.block[1], rp.block[2]), params, rp.dynamic_smem, st));
    }
}

static void prepare_inst(const Inst &I)
{
    CUDA_CHECK(cudaFuncSetAttribute(I.main_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g_smem_optin));
    if (I.reduce_fn)
        CUDA_CHECK(cudaFuncSetAttribute(I.reduce_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g_smem_optin));
}

static void alloc_scratch(Scratch &s, const Inputs &in, int part)
{
    if (!part)
        return;
    CUDA_CHECK(cudaMalloc(&s.tmp_out, ppb_decode_tmp_out_bytes(in.B, in.H, in.d, in.max_len, part, 2)));
    CUDA_CHECK(cudaMalloc(&s.exp_sums, ppb_decode_exp_sums_bytes(in.B, in.H, in.max_len, part)));
    CUDA_CHECK(cudaMalloc(&s.max_logits, ppb_decode_max_logits_bytes(in.B, in.H, in.max_len, part)));
}

static void free_scratch(Scratch &s)
{
    cudaFree(s.tmp_out);
    cudaFree(s.exp_sums);
    cudaFree(s.max_logits);
    s = Scratch();
}

static float default_scale(int d) { return 1.0f / std::sqrt((float)d); }

/* Run one instance on prepared inputs, return the output (host). Fails the test on a
 * refusal when expect_plan. */
static bool run_once(const Inst &I, const Inputs &in, int window, float scale, std::vector<uint16_t> &out_host,
                     std::string *why, int *hpc_out = nullptr)
{
    const int parts = I.part ? (int)ppb_decode_num_partitions(in.max_len, I.part) : 0;
    Scratch s;
    alloc_scratch(s, in, I.part);
    uint16_t *out;
    CUDA_CHECK(cudaMalloc(&out, in.q_elems * 2));
    poison_kernel<<<256, 256>>>(out, in.q_elems);
    ppb_decode_args a = make_args(in, window, scale, parts, out, s);
    ppb_launch_plan mp, rp;
    bool ok = plan_for(I, a, &mp, &rp, why);
    if (ok) {
        const int hpc = in.H / (int)mp.grid[0];
        if (hpc_out)
            *hpc_out = hpc;
        const unsigned long long ks = I.smem(hpc, in.max_len);
        if (ks != mp.dynamic_smem) {
            check(false, "%s: plan's dynamic smem %u B != kernel layout %llu B (hpc %d)", I.name, mp.dynamic_smem,
                  ks, hpc);
        }
        if (I.part) {
            const unsigned long long rs = ppb_pa::reduce_smem_bytes(parts, I.d, I.nt);
            if (rs != rp.dynamic_smem)
                check(false, "%s: plan's reduce smem %u B != kernel layout %llu B", I.name, rp.dynamic_smem, rs);
        }
        prepare_inst(I);
        launch(I, a, mp, rp);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        out_host.resize(in.q_elems);
        CUDA_CHECK(cudaMemcpy(out_host.data(), out, in.q_elems * 2, cudaMemcpyDeviceToHost));
    }
    cudaFree(out);
    free_scratch(s);
    return ok;
}

/* ------------------------------------------------------------------ plan checks (host) */
static void plan_checks()
{
    printf("== plan checks\n");
    /* KERNELS.md's mismatch figures: bf16, batch 8, ctx 32768, 32 heads, D 128 */
    check(ppb_decode_tmp_out_bytes(8, 32, 128, 32768, 512, 2) == 4u * 1024 * 1024, "tmp_out at P 512 is 4 MiB");
    check(ppb_decode_tmp_out_bytes(8, 32, 128, 32768, 256, 2) == 8u * 1024 * 1024, "tmp_out at P 256 is 8 MiB");
    check(ppb_decode_exp_sums_bytes(8, 32, 32768, 512) == 64u * 1024 &&
              ppb_decode_max_logits_bytes(8, 32, 32768, 256) == 128u * 1024,
          "exp_sums 64 KiB at P 512, max_logits 128 KiB at P 256");
    check(ppb_decode_num_partitions(513, 512) == 2 && ppb_decode_num_partitions(512, 512) == 1 &&
              ppb_decode_num_partitions(0, 512) == 0,
          "partition counts 513 -> 2, 512 -> 1, 0 -> 0");

    ppb_decode_args a;
    memset(&a, 0, sizeof a);
    a.num_seqs = 64;
    a.num_heads = 32;
    a.num_kv_heads = 4;
    a.head_dim = 128;
    a.page_size = 16;
    a.max_seq_len = 32768;
    a.max_blocks_per_seq = 2048;
    a.max_num_partitions = 64;
    ppb_decode_config c = {2, 128, 512, 1, 32};
    ppb_launch_plan mp, rp;
    char why[256];
    int rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc == 0 && mp.grid[0] == 4 && mp.grid[1] == 64 && mp.grid[2] == 64 && mp.block[0] == 128 &&
              rp.grid[0] == 32 && rp.grid[1] == 64,
          "v2 main case: grid (4, 64, 64) = one CTA per kv head (8 q heads), reduce (32, 64) [%s]", rc ? why : "");
    a.max_num_partitions = 128;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc != 0 && strstr(why, "max_num_partitions 128") != nullptr,
          "v2 refuses max_num_partitions that is not the kernel's count: \"%s\"", why);
    a.max_num_partitions = 64;
    c.version = 1;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 49152, &mp, &rp, why, sizeof why);
    check(rc != 0 && strncmp(why, "v1 needs ", 9) == 0 && strstr(why, "for max_seq_len 32768 > 49152 B"),
          "v1 refusal names the shared memory: \"%s\"", why);
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc == 0 && mp.grid[0] == 32 && rp.grid[0] == 0,
          "v1 at 32768 tokens on 227 KB: one head per CTA (grid.x %u), no reduce", mp.grid[0]);
    a.max_seq_len = 4096;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc == 0 && mp.grid[0] == 4, "v1 at 4096 tokens keeps 8 heads per CTA (grid.x %u)", mp.grid[0]);
    c.version = 2;
    c.partition_size = 48;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc != 0 && strstr(why, "multiple of 32"), "partition 48 refused: \"%s\"", why);
    c.partition_size = 512;
    c.warp_size = 64;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc != 0 && strstr(why, "32-wide"), "mma with 64-wide warps refused: \"%s\"", why);
    c.warp_size = 32;
    a.num_kv_heads = 5;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc != 0 && strstr(why, "num_kv_heads 5"), "32 heads over 5 kv heads refused: \"%s\"", why);
    a.num_kv_heads = 2;
    a.num_heads = 12; /* group 6 -> 2 heads per CTA */
    a.max_num_partitions = 8;
    rc = ppb_decode_plan(&c, &a, 128, 16, PPB_KDTYPE_BF16, 232448, &mp, &rp, why, sizeof why);
    check(rc == 0 && mp.grid[0] == 6, "GQA group 6: 2 heads per CTA (grid.x %u)", mp.grid[0]);
}

/* ------------------------------------------------------------------ correctness */
struct Case {
    const char *what;
    int dtype, d, page, nt, part;
    int H, KVH;
    std::vector<int> lens;
    int window;
    float scale; /* 0: 1/sqrt(D) */
};

static void correctness(bool quick)
{
    printf("== correctness (float64 CPU reference, per-row relative L2 error)\n");
    std::vector<Case> cases = {
        {"v2 P512 lens 1,P-1,P,P+1,many; 32/4 heads", BF, 128, 16, 128, 512, 32, 4, {1, 511, 512, 513, 2000, 4099}, 0, 0},
        {"v2 P256 8/1 heads, peaky softmax (scale 1)", BF, 128, 16, 128, 256, 8, 1, {1, 255, 256, 257, 3000}, 0, 1.0f},
        {"v1 32/4 heads", BF, 128, 16, 128, 0, 32, 4, {1, 15, 16, 17, 1000, 3333}, 0, 0},
        {"v1 long: fewer heads per CTA", BF, 128, 16, 128, 0, 16, 2, {12000, 7}, 0, 0},
        {"v2 fp16 MHA 4/4", FP, 128, 16, 128, 512, 4, 4, {700, 1, 1024, 1500}, 0, 0},
        {"v2 P32 page 8 D64 nt64 12/3 heads", BF, 64, 8, 64, 32, 12, 3, {1, 31, 32, 33, 100, 257}, 0, 0},
        {"v2 P64 page 8 fp16 D64 6/3 heads window 40", FP, 64, 8, 64, 64, 6, 3, {63, 64, 65, 1, 200}, 40, 0},
        {"v2 P64 page 32 D256 nt256 16/2 heads", BF, 256, 32, 256, 64, 16, 2, {64, 65, 1, 300}, 0, 0},
        {"v2 P256 fp16 D256 4/1 heads scale 1", FP, 256, 16, 128, 256, 4, 1, {256, 1000}, 0, 1.0f},
        {"v2 P512 page 32 nt256 window 300 (masked partition)", BF, 128, 32, 256, 512, 32, 4, {1, 513, 1025}, 300, 0},
        {"v2 P256 page 8 nt64 12/2 heads (group 6)", BF, 128, 8, 64, 256, 12, 2, {8, 9, 777}, 0, 0},
        {"v1 fp16 D64 nt256 MHA window 1000", FP, 64, 16, 256, 0, 8, 8, {1, 100, 2049}, 1000, 0},
        {"v1 D256 page 32 16/2 heads", BF, 256, 32, 128, 0, 16, 2, {33, 500}, 0, 0},
        {"v2 P512 nt256 32/4 heads", BF, 128, 16, 256, 512, 32, 4, {5000, 1}, 0, 0},
        {"v2 P512 nt64 32/4 heads", BF, 128, 16, 64, 512, 32, 4, {5000, 513}, 0, 0},
        {"v1 fp16 32/4 heads", FP, 128, 16, 128, 0, 32, 4, {2500, 3}, 0, 0},
        {"v2 P256 fp16 32/4 heads", FP, 128, 16, 128, 256, 32, 4, {2500, 257}, 0, 0},
    };
    if (quick)
        cases.resize(3);
    uint64_t seed = 1000;
    for (const Case &c : cases) {
        Inputs in;
        make_inputs(in, c.dtype, c.d, c.page, c.H, c.KVH, c.lens, seed++);
        const float scale = c.scale > 0 ? c.scale : default_scale(c.d);
        std::vector<char> want((size_t)in.B * in.H, 1);
        std::vector<double> ref;
        reference(in, c.window, scale, want, ref);
        for (int mma = 0; mma <= 1; mma++) {
            if (mma && !g_have_mma)
                continue;
            const Inst &I = *find_inst(c.dtype, c.d, c.page, c.nt, c.part, mma);
            std::vector<uint16_t> got;
            std::string why;
            int hpc = 0;
            if (!run_once(I, in, c.window, scale, got, &why, &hpc)) {
                check(false, "%s [%s]: refused: %s", c.what, I.name, why.c_str());
                continue;
            }
            Cmp r = compare(in, got, ref, want);
            check(r.nonfinite == 0 && r.worst <= tolerance(c.dtype),
                  "%s [%s, %d heads/CTA]: worst row error %.2e (b %d h %d), non-finite %lld (tol %.1e)", c.what,
                  I.name, hpc, r.worst, r.worst_b, r.worst_h, r.nonfinite, tolerance(c.dtype));
        }
        free_inputs(in);
    }
}

/* ------------------------------------------------------------------ the mismatch */
static const unsigned char kCanary = 0xA5;

struct GuardScan {
    size_t changed = 0, extent = 0; /* changed bytes, 1 + offset of the last changed byte */
};
static GuardScan scan_guard(const unsigned char *dev, size_t bytes)
{
    GuardScan g;
    if (!bytes)
        return g;
    std::vector<unsigned char> h(bytes);
    CUDA_CHECK(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++)
        if (h[i] != kCanary) {
            g.changed++;
            g.extent = i + 1;
        }
    return g;
}

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }
static size_t sub0(size_t a, size_t b) { return a > b ? a - b : 0; }

static void mismatch(int p_host, int p_kernel)
{
    printf("== PARTITION_SIZE mismatch: host sizes scratch with P_host %d, kernel built with P_kernel %d "
           "(bf16, batch 8, ctx 32768, 32/4 heads, D 128, page 16)\n",
           p_host, p_kernel);
    Inputs in;
    make_inputs(in, BF, 128, 16, 32, 4, std::vector<int>(8, 32768), 77);
    const float scale = default_scale(128);
    const Inst &I = *find_inst(BF, 128, 16, 128, p_kernel, g_have_mma ? 1 : 0);
    prepare_inst(I);
    const int kparts = (int)ppb_decode_num_partitions(in.max_len, p_kernel);
    const size_t tmp_h = ppb_decode_tmp_out_bytes(in.B, in.H, in.d, in.max_len, p_host, 2);
    const size_t es_h = ppb_decode_exp_sums_bytes(in.B, in.H, in.max_len, p_host);
    const size_t ml_h = ppb_decode_max_logits_bytes(in.B, in.H, in.max_len, p_host);
    const size_t tmp_k = ppb_decode_tmp_out_bytes(in.B, in.H, in.d, in.max_len, p_kernel, 2);
    const size_t es_k = ppb_decode_exp_sums_bytes(in.B, in.H, in.max_len, p_kernel);
    const size_t ml_k = ppb_decode_max_logits_bytes(in.B, in.H, in.max_len, p_kernel);
    uint16_t *out;
    CUDA_CHECK(cudaMalloc(&out, in.q_elems * 2));

    /* clean run: scratch sized with the kernel's own count */
    Scratch clean;
    alloc_scratch(clean, in, p_kernel);
    ppb_decode_args a = make_args(in, 0, scale, kparts, out, clean);
    ppb_launch_plan mp, rp;
    std::string why;
    if (!plan_for(I, a, &mp, &rp, &why)) {
        check(false, "mismatch: plan refused: %s", why.c_str());
        return;
    }
    poison_kernel<<<256, 256>>>(out, in.q_elems);
    launch(I, a, mp, rp);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> out_clean(in.q_elems), got(in.q_elems);
    CUDA_CHECK(cudaMemcpy(out_clean.data(), out, in.q_elems * 2, cudaMemcpyDeviceToHost));
    std::vector<unsigned char> tmp_clean(tmp_k), es_clean(es_k), ml_clean(ml_k);
    CUDA_CHECK(cudaMemcpy(tmp_clean.data(), clean.tmp_out, tmp_k, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(es_clean.data(), clean.exp_sums, es_k, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ml_clean.data(), clean.max_logits, ml_k, cudaMemcpyDeviceToHost));
    free_scratch(clean);
    {
        std::vector<char> want((size_t)in.B * in.H, 0);
        for (int h = 0; h < in.H; h++)
            want[h] = want[(size_t)7 * in.H + h] = 1;
        std::vector<double> ref;
        reference(in, 0, scale, want, ref);
        Cmp r = compare(in, out_clean, ref, want);
        check(r.nonfinite == 0 && r.worst <= tolerance(BF),
              "clean run (scratch sized for P_kernel) [%s]: sequences 0 and 7 vs float64, worst row %.2e", I.name,
              r.worst);
    }

    /* guarded: each buffer sized for P_host, then a canary guard that absorbs the overrun */
    {
        const size_t over_t = sub0(tmp_k, tmp_h), over_e = sub0(es_k, es_h), over_m = sub0(ml_k, ml_h);
        const size_t g_t = align256(over_t + (1u << 20)), g_e = align256(over_e + (1u << 20)),
                     g_m = align256(over_m + (1u << 20));
        const size_t off_t = 0, off_gt = align256(tmp_h), off_e = off_gt + g_t, off_ge = off_e + align256(es_h),
                     off_m = off_ge + g_e, off_gm = off_m + align256(ml_h), total = off_gm + g_m;
        unsigned char *base;
        CUDA_CHECK(cudaMalloc(&base, total));
        CUDA_CHECK(cudaMemset(base, kCanary, total));
        Scratch s;
        s.tmp_out = base + off_t;
        s.exp_sums = (float *)(base + off_e);
        s.max_logits = (float *)(base + off_m);
        ppb_decode_args ga = make_args(in, 0, scale, kparts, out, s);
        poison_kernel<<<256, 256>>>(out, in.q_elems);
        launch(I, ga, mp, rp);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), out, in.q_elems * 2, cudaMemcpyDeviceToHost));
        /* the guard begins right after the host size (the 256-B alignment pad counts as guard) */
        GuardScan st = scan_guard(base + tmp_h, off_e - tmp_h);
        GuardScan se = scan_guard(base + off_e + es_h, off_m - off_e - es_h);
        GuardScan sm = scan_guard(base + off_m + ml_h, total - off_m - ml_h);
        const bool same = memcmp(got.data(), out_clean.data(), in.q_elems * 2) == 0;
        printf("guarded: kernel wrote %zu B past tmp_out, %zu B past exp_sums, %zu B past max_logits "
               "(%zu + %zu + %zu guard bytes changed; output correct: %s)\n",
               st.extent, se.extent, sm.extent, st.changed, se.changed, sm.changed, same ? "yes" : "no");
        /* a written byte can equal the canary by chance: allow a few at the very end */
        auto near = [](size_t got_b, size_t want_b) { return got_b <= want_b && got_b + 64 >= want_b; };
        check(near(st.extent, over_t) && near(se.extent, over_e) && near(sm.extent, over_m),
              "guarded: overrun extents match the prediction (tmp_out %zu, exp_sums %zu, max_logits %zu B)", over_t,
              over_e, over_m);
        check(same, "guarded: output identical to the clean run (the guards absorbed the overrun)");
        cudaFree(base);
    }

    /* packed: the three host-sized buffers back to back, one guard at the very end */
    {
        const size_t off_e = tmp_h, off_m = tmp_h + es_h, end = off_m + ml_h;
        const size_t reach = std::max(std::max(tmp_k, off_e + es_k), off_m + ml_k);
        const size_t past = sub0(reach, end);
        const size_t total = end + align256(past + (1u << 20));
        unsigned char *base;
        CUDA_CHECK(cudaMalloc(&base, total));
        CUDA_CHECK(cudaMemset(base, kCanary, total));
        Scratch s;
        s.tmp_out = base;
        s.exp_sums = (float *)(base + off_e);
        s.max_logits = (float *)(base + off_m);
        ppb_decode_args pa = make_args(in, 0, scale, kparts, out, s);
        poison_kernel<<<256, 256>>>(out, in.q_elems);
        launch(I, pa, mp, rp);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got.data(), out, in.q_elems * 2, cudaMemcpyDeviceToHost));
        GuardScan sg = scan_guard(base + end, total - end);
        /* what each buffer holds afterwards, in the kernel's own indexing, vs the clean run */
        std::vector<unsigned char> view(total);
        CUDA_CHECK(cudaMemcpy(view.data(), base, total, cudaMemcpyDeviceToHost));
        size_t bad_t = 0, bad_e = 0, bad_m = 0;
        for (size_t i = 0; i < tmp_k / 2; i++)
            bad_t += memcmp(&view[i * 2], &tmp_clean[i * 2], 2) != 0;
        for (size_t i = 0; i < es_k / 4; i++)
            bad_e += memcmp(&view[off_e + i * 4], &es_clean[i * 4], 4) != 0;
        for (size_t i = 0; i < ml_k / 4; i++)
            bad_m += memcmp(&view[off_m + i * 4], &ml_clean[i * 4], 4) != 0;
        long long nonfinite = 0;
        for (uint16_t h : got)
            nonfinite += !std::isfinite(to_float(h, BF));
        const bool same = memcmp(got.data(), out_clean.data(), in.q_elems * 2) == 0;
        printf("packed: kernel wrote %zu B past the end of the packed buffers (%zu guard bytes changed); entries "
               "overwritten by a neighbouring buffer: tmp_out %zu, exp_sums %zu, max_logits %zu; output correct: "
               "%s (%lld non-finite)\n",
               sg.extent, sg.changed, bad_t, bad_e, bad_m, same ? "yes" : "no", nonfinite);
        check(sg.extent <= past && sg.extent + 64 >= past, "packed: overrun past the end matches the prediction (%zu B)",
              past);
        if (past > 0)
            check(bad_t + bad_e + bad_m > 0, "packed: the overrun corrupted neighbouring buffers");
        else
            check(bad_t + bad_e + bad_m == 0 && same, "packed: no overrun, nothing corrupted, output correct");
        cudaFree(base);
    }
    cudaFree(out);
    free_inputs(in);
}

/* ------------------------------------------------------------------ bench */
struct BenchCase {
    const char *name;
    int dtype, batch, ctx, H, KVH;
    const char *vllm; /* KERNELS.md anchor */
};
struct Variant {
    int nt, part, mma;
};

static void bench(bool one, const char *only)
{
    printf("== bench (cudaEvent, L2 flushed by a 256 MB write before each sample, median of 20; v2 includes the "
           "reduce)\n");
    std::vector<BenchCase> cases = {
        {"bf16 batch 64 ctx 32768 32/4", BF, 64, 32768, 32, 4, "vLLM v0.6.3: v1 142, v2 659 GB/s"},
        {"fp16 batch 64 ctx 32768 32/4", FP, 64, 32768, 32, 4, "vLLM v0.6.3: v1 285, v2 1010 GB/s"},
        {"bf16 batch 256 ctx 4096 32/4", BF, 256, 4096, 32, 4, "vLLM v0.6.3: v1 624, v2 655 GB/s"},
        {"bf16 batch 8 ctx 100000 32/4", BF, 8, 100000, 32, 4, "vLLM v0.6.3: v1 refused, v2 651 GB/s"},
        {"bf16 batch 64 ctx 32768 8/1", BF, 64, 32768, 8, 1, "(no anchor)"},
        {"bf16 batch 256 ctx 4096 8/1", BF, 256, 4096, 8, 1, "(no anchor)"},
        {"bf16 batch 8 ctx 100000 8/1", BF, 8, 100000, 8, 1, "(no anchor)"},
    };
    if (only)
        cases.erase(std::remove_if(cases.begin(), cases.end(),
                                   [&](const BenchCase &c) { return !strstr(c.name, only); }),
                    cases.end());
    std::vector<Variant> variants = {{128, 512, 1}, {128, 512, 0}, {128, 256, 1}, {128, 256, 0},
                                     {256, 512, 1}, {256, 512, 0}, {64, 512, 1},  {128, 0, 1},
                                     {128, 0, 0}};
    if (one) {
        cases.resize(std::min<size_t>(cases.size(), 1));
        variants = {{128, 512, 1}, {128, 512, 0}};
    }
    void *flush;
    const size_t flush_bytes = 256u << 20;
    CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
    cudaEvent_t e0, e1, e2;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventCreate(&e2));
    printf("%-32s %-30s %9s %9s %9s %8s %s\n", "case", "kernel", "ms", "reduce", "GB/s", "%4.35", "check");
    uint64_t seed = 5000;
    for (const BenchCase &bc : cases) {
        Inputs in;
        make_inputs(in, bc.dtype, 128, 16, bc.H, bc.KVH, std::vector<int>(bc.batch, bc.ctx), seed++);
        const float scale = default_scale(128);
        const double kv_bytes = 2.0 * bc.batch * (double)bc.ctx * bc.KVH * 128 * 2;
        std::vector<char> want((size_t)in.B * in.H, 0);
        for (int h = 0; h < bc.H / bc.KVH; h++)
            want[h] = 1; /* sequence 0, the heads of kv head 0 */
        std::vector<double> ref;
        reference(in, 0, scale, want, ref);
        uint16_t *out;
        CUDA_CHECK(cudaMalloc(&out, in.q_elems * 2));
        for (const Variant &v : variants) {
            if (v.mma && !g_have_mma)
                continue;
            if (bc.dtype == FP && !(v.nt == 128 && (v.part == 512 || v.part == 256 || v.part == 0)))
                continue;
            const Inst &I = *find_inst(bc.dtype, 128, 16, v.nt, v.part, v.mma);
            const int parts = v.part ? (int)ppb_decode_num_partitions(in.max_len, v.part) : 0;
            Scratch s;
            alloc_scratch(s, in, v.part);
            ppb_decode_args a = make_args(in, 0, scale, parts, out, s);
            ppb_launch_plan mp, rp;
            std::string why;
            if (!plan_for(I, a, &mp, &rp, &why)) {
                printf("%-32s %-30s refused: %s\n", bc.name, I.name, why.c_str());
                free_scratch(s);
                continue;
            }
            prepare_inst(I);
            poison_kernel<<<256, 256>>>(out, in.q_elems);
            for (int w = 0; w < 2; w++)
                launch(I, a, mp, rp);
            CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<uint16_t> got(in.q_elems);
            CUDA_CHECK(cudaMemcpy(got.data(), out, in.q_elems * 2, cudaMemcpyDeviceToHost));
            Cmp r = compare(in, got, ref, want);
            const bool ok = r.nonfinite == 0 && r.worst <= tolerance(bc.dtype);
            std::vector<float> total, red;
            const int samples = one ? 1 : 20;
            for (int i = 0; i < samples; i++) {
                CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
                CUDA_CHECK(cudaEventRecord(e0));
                ppb_decode_args args = a;
                void *params[] = {&args};
                CUDA_CHECK(cudaLaunchKernel(I.main_fn, dim3(mp.grid[0], mp.grid[1], mp.grid[2]), dim3(mp.block[0]),
                                            params, mp.dynamic_smem, 0));
                CUDA_CHECK(cudaEventRecord(e1));
                if (I.part)
                    CUDA_CHECK(cudaLaunchKernel(I.reduce_fn, dim3(rp.grid[0], rp.grid[1], rp.grid[2]),
                                                dim3(rp.block[0]), params, rp.dynamic_smem, 0));
                CUDA_CHECK(cudaEventRecord(e2));
                CUDA_CHECK(cudaEventSynchronize(e2));
                float t_all, t_red;
                CUDA_CHECK(cudaEventElapsedTime(&t_all, e0, e2));
                CUDA_CHECK(cudaEventElapsedTime(&t_red, e1, e2));
                total.push_back(t_all);
                red.push_back(t_red);
            }
            CUDA_CHECK(cudaGetLastError());
            std::sort(total.begin(), total.end());
            std::sort(red.begin(), red.end());
            const double ms = total[total.size() / 2], rms = red[red.size() / 2];
            const double gbs = kv_bytes / (ms * 1e-3) / 1e9;
            cudaFuncAttributes fa;
            CUDA_CHECK(cudaFuncGetAttributes(&fa, I.main_fn));
            int occ = 0;
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, I.main_fn, I.nt, mp.dynamic_smem));
            printf("%-32s %-30s %9.3f %9.3f %9.0f %7.1f%% %s (err %.1e; grid %ux%ux%u, %u B smem, %d regs, %d "
                   "CTA/SM)\n",
                   bc.name, I.name, ms, rms, gbs, 100.0 * gbs / kReadCeilingGBs, ok ? "ok" : "WRONG", r.worst,
                   mp.grid[0], mp.grid[1], mp.grid[2], mp.dynamic_smem, fa.numRegs, occ);
            fflush(stdout);
            if (!ok)
                check(false, "bench %s [%s]: output wrong (worst row %.2e, non-finite %lld)", bc.name, I.name,
                      r.worst, r.nonfinite);
            free_scratch(s);
        }
        printf("%-32s %s\n", bc.name, bc.vllm);
        cudaFree(out);
        free_inputs(in);
    }
    cudaFree(flush);
}

int main(int argc, char **argv)
{
    bool do_bench = false, one = false, quick = false;
    const char *only = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bench"))
            do_bench = true;
        else if (!strcmp(argv[i], "--bench-one"))
            do_bench = one = true;
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--case") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--bench | --bench-one | --quick] [--case TEXT]\n", argv[0]);
            return 2;
        }
    }
    int dev = 0;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&g_smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    g_have_mma = prop.major * 10 + prop.minor >= 80 && PPB_WARP_SIZE == 32;
    printf("device %s, cc %d.%d, %d SMs, %d B smem opt-in, warp %d, mma path %s\n", prop.name, prop.major,
           prop.minor, prop.multiProcessorCount, g_smem_optin, prop.warpSize, g_have_mma ? "tested" : "skipped");
    if (do_bench) {
        bench(one, only);
    } else {
        plan_checks();
        correctness(quick);
        if (!quick) {
            mismatch(512, 256);
            mismatch(256, 512);
        }
    }
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
