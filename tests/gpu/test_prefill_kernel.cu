/* GPU test and benchmark of the prefix-prefill kernel (kernels/prefix_prefill.cuh).
 *
 * A standalone nvcc program (no harness libraries: the GPU machine has none). Built by
 * tests/gpu/run_prefill_gpu.sh from this file, the kernel table (prefill_kernel_table.cu,
 * compiled once per part so the ~370 instantiations build in parallel),
 * kernels/prefill_plan.c and harness/run/reference_row.c: the float64 reference is the
 * harness's own (ppb_reference_attend), the inputs come from the project's generator
 * (kernels/ppb_rng.h).
 *
 *   test_prefill_kernel            correctness: every config x head_dim x dtype x path on
 *                                  seeded inputs in vLLM's paged layout against a float64
 *                                  CPU reference; refusals must be exactly the expected set;
 *                                  then edge shapes and a ~100K-token context (sampled rows)
 *   test_prefill_kernel --quick    a few shapes and configs (for compute-sanitizer)
 *   test_prefill_kernel --bench [N]  KERNELS.md anchor cases, cudaEvent timing, cold L2
 *                                  (256 MB written between samples), median of N (20)
 *   test_prefill_kernel --ncu CASE BM BN W [PATH]  one config on one anchor case (for ncu;
 *                                  PATH 0 simt, 1 mma (default), 2 wgmma)
 * Exit code != 0 on any failure. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "ppb_rng.h"
#include "prefill_plan.h"
#include "reference_row.h"
}

#include "prefill_kernel_table.h"

/* ================================================================================
 * The program
 * ================================================================================ */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

/* path: PPB_PREFILL_PATH_SIMT, _MMA, _WGMMA (prefill_plan.h) */
static kernel_entry lookup_kernel(int dtype, int d, int path, int bm, int bn, int w)
{
    if (path == PPB_PREFILL_PATH_WGMMA)
        return ppb_test_table_wgmma(dtype, d, bm, bn, w);
    typedef kernel_entry (*part_fn)(int, int, int);
    static const part_fn parts[12] = {ppb_test_table_part0, ppb_test_table_part1, ppb_test_table_part2,
                                      ppb_test_table_part3, ppb_test_table_part4, ppb_test_table_part5,
                                      ppb_test_table_part6, ppb_test_table_part7, ppb_test_table_part8,
                                      ppb_test_table_part9, ppb_test_table_part10, ppb_test_table_part11};
    const int di = d == 64 ? 0 : d == 128 ? 1 : 2;
    return parts[(dtype * 3 + di) * 2 + (path == PPB_PREFILL_PATH_MMA ? 1 : 0)](bm, bn, w);
}

static int g_failures = 0;
#define CHECK_CUDA(call)                                                                                  \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #call); \
            exit(2);                                                                                      \
        }                                                                                                 \
    } while (0)
#define FAIL(...)                  \
    do {                           \
        g_failures++;              \
        printf("FAIL: ");          \
        printf(__VA_ARGS__);       \
        printf("\n");              \
    } while (0)

/* ---- host dtype conversion (the generator's, round to nearest even) ---------------- */
static float bits_to_float(uint16_t b, int dtype)
{
    return dtype == PPB_KDTYPE_BF16 ? ppb_rng_bf16_to_float(b) : ppb_rng_fp16_to_float(b);
}
static uint16_t float_to_bits(float f, int dtype)
{
    return dtype == PPB_KDTYPE_BF16 ? ppb_rng_float_to_bf16(f) : ppb_rng_float_to_fp16(f);
}
static const uint16_t POISON = 0xFFFFu;   /* NaN in fp16 and in bf16 */

/* Tensor ids of the input definition (harness/run/workload.h). */
enum { TENSOR_Q = 1, TENSOR_K = 2, TENSOR_V = 3, TENSOR_K_CACHE = 4, TENSOR_V_CACHE = 5 };

/* ---- a workload: one batch in vLLM's layouts, host and device copies ------------- */
struct shape {
    std::vector<int> qlens, ctxs;
    int num_heads, num_kv_heads, head_dim, page, window, dtype;
    float q_scale;
    std::string name;
};

struct workload {
    shape sh;
    int total_q = 0, max_q = 0, max_blocks = 0, num_blocks = 0;
    std::vector<int> start_loc;
    std::vector<int> table;                       /* [batch][max_blocks] */
    std::vector<uint16_t> q, k, v, kc, vc;        /* storage bits (the reference reads them) */
    void *dq = nullptr, *dk = nullptr, *dv = nullptr, *dkc = nullptr, *dvc = nullptr, *dout = nullptr;
    int *dtable = nullptr, *dstart = nullptr, *dqlens = nullptr, *dctxs = nullptr;
    size_t out_elems = 0;
};

/* Element i of tensor `tensor`: the generator's uniform in [-1, 1) times `scale`, rounded
 * to the storage dtype (scale 1: exactly ppb_rng_input, the harness's inputs). */
static void fill_random(std::vector<uint16_t> &bits, size_t n, uint64_t seed, uint32_t tensor, float scale,
                        int dtype)
{
    bits.resize(n);
    const uint64_t key = ppb_rng_key(seed, tensor);
    for (size_t i = 0; i < n; i++)
        bits[i] = float_to_bits(ppb_rng_keyed_uniform(key, i) * scale, dtype);
}

template <typename V>
static V *to_device(const std::vector<V> &h)
{
    V *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(V)));
    if (!h.empty())
        CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(V), cudaMemcpyHostToDevice));
    return d;
}

static void make_workload(workload &w, const shape &sh, uint64_t seed)
{
    w.sh = sh;
    const int B = (int)sh.qlens.size(), H = sh.num_heads, HK = sh.num_kv_heads, D = sh.head_dim, P = sh.page;
    w.start_loc.assign(B + 1, 0);
    for (int b = 0; b < B; b++) {
        w.start_loc[b + 1] = w.start_loc[b] + sh.qlens[b];
        w.max_q = std::max(w.max_q, sh.qlens[b]);
        w.max_blocks = std::max(w.max_blocks, (sh.ctxs[b] + P - 1) / P);
    }
    w.max_blocks = std::max(w.max_blocks, 1);
    w.total_q = w.start_loc[B];
    int used = 0;
    for (int b = 0; b < B; b++)
        used += (sh.ctxs[b] + P - 1) / P;
    w.num_blocks = used + 3;   /* a few pages nobody owns (poisoned) */
    /* pages: a random permutation, never identity */
    std::vector<int> perm(w.num_blocks);
    for (int i = 0; i < w.num_blocks; i++)
        perm[i] = i;
    for (int i = w.num_blocks - 1; i > 0; i--)
        std::swap(perm[i], perm[ppb_rng_below(seed, PPB_RNG_STREAM_PAGES, (uint64_t)i, (uint32_t)(i + 1))]);
    /* entries past a sequence's pages point far outside the cache: reading one faults */
    w.table.assign((size_t)B * w.max_blocks, 1 << 30);
    int next = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < (sh.ctxs[b] + P - 1) / P; i++)
            w.table[(size_t)b * w.max_blocks + i] = perm[next++];

    const int dt = sh.dtype;
    fill_random(w.q, (size_t)w.total_q * H * D, seed, TENSOR_Q, sh.q_scale, dt);
    /* k, v: one extra token of NaN past the end (a read past the last sequence shows) */
    fill_random(w.k, (size_t)(w.total_q + 1) * HK * D, seed, TENSOR_K, 1.f, dt);
    fill_random(w.v, (size_t)(w.total_q + 1) * HK * D, seed, TENSOR_V, 1.f, dt);
    for (size_t i = (size_t)w.total_q * HK * D; i < w.k.size(); i++)
        w.k[i] = w.v[i] = POISON;
    const size_t cache_elems = (size_t)w.num_blocks * HK * D * P;
    fill_random(w.kc, cache_elems, seed, TENSOR_K_CACHE, 1.f, dt);
    fill_random(w.vc, cache_elems, seed, TENSOR_V_CACHE, 1.f, dt);
    /* poison every cache slot that holds no context token: unowned pages, page tails */
    std::vector<char> live((size_t)w.num_blocks * P, 0);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < sh.ctxs[b]; t++)
            live[(size_t)w.table[(size_t)b * w.max_blocks + t / P] * P + t % P] = 1;
    for (int blk = 0; blk < w.num_blocks; blk++)
        for (int off = 0; off < P; off++) {
            if (live[(size_t)blk * P + off])
                continue;
            for (int kh = 0; kh < HK; kh++)
                for (int d = 0; d < D; d++) {
                    w.kc[(((size_t)blk * HK + kh) * (D / 8) + d / 8) * P * 8 + (size_t)off * 8 + d % 8] = POISON;
                    w.vc[(((size_t)blk * HK + kh) * D + d) * P + off] = POISON;
                }
        }

    w.dq = to_device(w.q);
    w.dk = to_device(w.k);
    w.dv = to_device(w.v);
    w.dkc = to_device(w.kc);
    w.dvc = to_device(w.vc);
    w.dtable = to_device(w.table);
    w.dstart = to_device(w.start_loc);
    w.dqlens = to_device(sh.qlens);
    w.dctxs = to_device(sh.ctxs);
    w.out_elems = (size_t)w.total_q * H * D;
    CHECK_CUDA(cudaMalloc(&w.dout, w.out_elems * 2));
}

static void free_workload(workload &w)
{
    cudaFree(w.dq); cudaFree(w.dk); cudaFree(w.dv); cudaFree(w.dkc); cudaFree(w.dvc); cudaFree(w.dout);
    cudaFree(w.dtable); cudaFree(w.dstart); cudaFree(w.dqlens); cudaFree(w.dctxs);
}

static ppb_prefill_args make_args(const workload &w)
{
    ppb_prefill_args a;
    memset(&a, 0, sizeof a);
    a.q = w.dq; a.k = w.dk; a.v = w.dv; a.k_cache = w.dkc; a.v_cache = w.dvc; a.out = w.dout;
    a.block_table = w.dtable; a.start_loc = w.dstart; a.query_lens = w.dqlens; a.context_lens = w.dctxs;
    a.batch = (int)w.sh.qlens.size();
    a.max_query_len = w.max_q;
    a.num_heads = w.sh.num_heads;
    a.num_kv_heads = w.sh.num_kv_heads;
    a.head_dim = w.sh.head_dim;
    a.page_size = w.sh.page;
    a.max_blocks_per_seq = w.max_blocks;
    a.sliding_window = w.sh.window;
    a.sm_scale = 1.0f / sqrtf((float)w.sh.head_dim);
    return a;
}

/* ---- float64 reference: the harness's (harness/run/reference_row.c) ------------------ */
struct ref_row {
    int token, head;           /* global token index, query head */
    std::vector<double> out;   /* D values */
};

static void reference_row(const workload &w, int seq, int t, int h, std::vector<double> &out)
{
    const shape &sh = w.sh;
    const int D = sh.head_dim, HK = sh.num_kv_heads;
    const size_t new_at = (size_t)w.start_loc[seq] * HK * D;
    ppb_ref_keys keys;
    keys.dtype = sh.dtype;
    keys.head_dim = D;
    keys.num_kv_heads = HK;
    keys.page_size = sh.page;
    keys.k_cache = w.kc.data();
    keys.v_cache = w.vc.data();
    keys.block_table = &w.table[(size_t)seq * w.max_blocks];
    keys.cached = sh.ctxs[seq];
    keys.k_new = w.k.data() + new_at;
    keys.v_new = w.v.data() + new_at;
    out.assign(D, 0.0);
    const int tok = w.start_loc[seq] + t;
    ppb_reference_attend(&keys, h / (sh.num_heads / HK), &w.q[((size_t)tok * sh.num_heads + h) * D],
                         1.0 / std::sqrt((double)D), sh.ctxs[seq] + t, sh.window, out.data());
}

/* All rows, or `sample` tokens per sequence (first, last and random ones: the checker's
 * stream of the generator) x every head_stride-th head. */
static std::vector<ref_row> reference(const workload &w, int sample, uint64_t seed, int head_stride = 1)
{
    std::vector<ref_row> rows;
    uint64_t draw = 0;
    for (int b = 0; b < (int)w.sh.qlens.size(); b++) {
        std::vector<int> toks;
        const int ql = w.sh.qlens[b];
        if (sample <= 0 || sample >= ql) {
            for (int t = 0; t < ql; t++)
                toks.push_back(t);
        } else {
            toks.push_back(0);
            toks.push_back(ql - 1);
            while ((int)toks.size() < sample)
                toks.push_back((int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, draw++, (uint32_t)ql));
        }
        for (int t : toks)
            for (int h = 0; h < w.sh.num_heads; h += head_stride) {
                ref_row rr;
                rr.token = w.start_loc[b] + t;
                rr.head = h;
                reference_row(w, b, t, h, rr.out);
                rows.push_back(std::move(rr));
            }
    }
    return rows;
}

/* ---- running and checking one config -------------------------------------------------- */
struct check_stats {
    double rel_l2 = 0, worst_row_rel = 0;
    bool nonfinite = false;
};

static float tol_global(int dtype) { return dtype == PPB_KDTYPE_BF16 ? 1e-2f : 2e-3f; }
static float tol_row(int dtype) { return dtype == PPB_KDTYPE_BF16 ? 3e-2f : 6e-3f; }

static bool launch(const kernel_entry &ke, const ppb_launch_plan &pl, const ppb_prefill_args &a)
{
    if (pl.dynamic_smem > 48 * 1024)
        CHECK_CUDA(cudaFuncSetAttribute((const void *)ke.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)pl.dynamic_smem));
    ke.fn<<<dim3(pl.grid[0], pl.grid[1], pl.grid[2]), dim3(pl.block[0], pl.block[1], pl.block[2]),
            pl.dynamic_smem>>>(a);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        FAIL("launch: %s", cudaGetErrorString(e));
        return false;
    }
    return true;
}

static check_stats compare(const workload &w, const std::vector<uint16_t> &out, const std::vector<ref_row> &rows,
                           bool check_all_finite)
{
    check_stats st;
    const int D = w.sh.head_dim, H = w.sh.num_heads;
    double num = 0, den = 0;
    for (const ref_row &rr : rows) {
        double rn = 0, rd = 0;
        for (int d = 0; d < D; d++) {
            const float o = bits_to_float(out[((size_t)rr.token * H + rr.head) * D + d], w.sh.dtype);
            if (!std::isfinite(o))
                st.nonfinite = true;
            const double e = (double)o - rr.out[d];
            rn += e * e;
            rd += rr.out[d] * rr.out[d];
        }
        num += rn;
        den += rd;
        st.worst_row_rel = std::max(st.worst_row_rel, std::sqrt(rn / std::max(rd, 1e-30)));
    }
    st.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
    if (check_all_finite)
        for (size_t i = 0; i < out.size(); i++)
            if (!std::isfinite(bits_to_float(out[i], w.sh.dtype)))
                st.nonfinite = true;
    return st;
}

struct cfg_key {
    int bm, bn, w;
    int mma;   /* the code path: PPB_PREFILL_PATH_SIMT, _MMA or _WGMMA */
};

static const char *path_name(int path)
{
    return path == PPB_PREFILL_PATH_WGMMA ? "wgmma" : path == PPB_PREFILL_PATH_MMA ? "mma" : "simt";
}

static const char *dtype_name(int dt) { return dt == PPB_KDTYPE_BF16 ? "bf16" : "fp16"; }

/* Run one config on one workload; check against the reference rows. Returns worst row error. */
static double run_and_check(const workload &w, const std::vector<ref_row> &rows, const cfg_key &c,
                            unsigned smem_limit, bool verbose)
{
    ppb_prefill_config cfg = {c.bm, c.bn, c.w, c.mma, PPB_WARP_SIZE};
    ppb_prefill_args a = make_args(w);
    ppb_launch_plan pl;
    char reason[256];
    if (ppb_prefill_plan(&cfg, &a, w.sh.head_dim, w.sh.dtype, smem_limit, &pl, reason, sizeof reason) != 0) {
        FAIL("%s %s D%d %s BM%d BN%d W%d: plan refused a config the test expected to run: %s", w.sh.name.c_str(),
             dtype_name(w.sh.dtype), w.sh.head_dim, path_name(c.mma), c.bm, c.bn, c.w, reason);
        return 1e9;
    }
    kernel_entry ke = lookup_kernel(w.sh.dtype, w.sh.head_dim, c.mma, c.bm, c.bn, c.w);
    if (!ke.fn) {
        FAIL("no instantiation for an accepted config");
        return 1e9;
    }
    CHECK_CUDA(cudaMemset(w.dout, 0xFF, w.out_elems * 2));   /* poison: NaN */
    if (!launch(ke, pl, a))
        return 1e9;
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "kernel fault (%s) in %s %s D%d %s BM%d BN%d W%d\n", cudaGetErrorString(e),
                w.sh.name.c_str(), dtype_name(w.sh.dtype), w.sh.head_dim, path_name(c.mma), c.bm, c.bn, c.w);
        exit(3);
    }
    std::vector<uint16_t> out(w.out_elems);
    CHECK_CUDA(cudaMemcpy(out.data(), w.dout, w.out_elems * 2, cudaMemcpyDeviceToHost));
    check_stats st = compare(w, out, rows, true);
    const bool bad = st.nonfinite || !(st.rel_l2 <= tol_global(w.sh.dtype)) ||
                     !(st.worst_row_rel <= tol_row(w.sh.dtype));
    if (bad)
        FAIL("%s %s D%d %s BM%d BN%d W%d: rel_l2 %.3g worst row %.3g%s", w.sh.name.c_str(), dtype_name(w.sh.dtype),
             w.sh.head_dim, path_name(c.mma), c.bm, c.bn, c.w, st.rel_l2, st.worst_row_rel,
             st.nonfinite ? " NON-FINITE" : "");
    else if (verbose)
        printf("  ok %-28s %s D%-3d %-4s BM%-3d BN%-3d W%d  rel_l2 %.2e  worst row %.2e\n", w.sh.name.c_str(),
               dtype_name(w.sh.dtype), w.sh.head_dim, path_name(c.mma), c.bm, c.bn, c.w, st.rel_l2,
               st.worst_row_rel);
    return st.nonfinite ? 1e9 : st.worst_row_rel;
}

static shape make_shape(const char *name, std::vector<int> ql, std::vector<int> cl, int H, int HK, int D, int page,
                        int window, int dtype, float q_scale = 2.f)
{
    shape s;
    s.name = name;
    s.qlens = ql;
    s.ctxs = cl;
    s.num_heads = H;
    s.num_kv_heads = HK;
    s.head_dim = D;
    s.page = page;
    s.window = window;
    s.dtype = dtype;
    s.q_scale = q_scale;
    return s;
}

/* ---- plan checks that need no GPU -------------------------------------------------------- */

/* The plan's block: NUM_WARPS warps of the path's width, on the wgmma path plus a producer
 * warpgroup where the CTA has its SM to itself (exact counts: tests/unit/kernels/
 * test_prefill_plan.c; the kernel traps on any other block). */
static bool block_threads_ok(const ppb_prefill_config &cfg, unsigned threads)
{
    const unsigned compute = (unsigned)(cfg.num_warps * (cfg.use_mma ? 32 : cfg.warp_size));
    return threads == compute || (cfg.use_mma == PPB_PREFILL_PATH_WGMMA && threads == compute + 128);
}

static void check_plan_refusals()
{
    ppb_prefill_args a;
    memset(&a, 0, sizeof a);
    a.batch = 1; a.max_query_len = 100; a.num_heads = 8; a.num_kv_heads = 2; a.head_dim = 128; a.page_size = 16;
    a.max_blocks_per_seq = 3;
    ppb_launch_plan pl;
    char reason[256];
    struct {
        ppb_prefill_config cfg;
        int page, head_dim_arg, heads, expect_ok;
        unsigned smem;
        const char *needle;
    } cases[] = {
        {{16, 16, 2, 1, 32}, 16, 128, 8, 0, 227 * 1024, "rows per warp"},
        {{128, 64, 8, 1, 32}, 16, 128, 8, 1, 227 * 1024, ""},
        {{128, 64, 8, 1, 64}, 16, 128, 8, 0, 227 * 1024, "warp size 32"},
        {{128, 128, 8, 1, 32}, 16, 128, 8, 0, 64 * 1024, "dynamic shared memory"},   /* needs 104,448 B */
        {{64, 64, 4, 0, 32}, 4, 128, 8, 0, 227 * 1024, "power of two"},
        {{64, 64, 4, 0, 32}, 24, 128, 8, 0, 227 * 1024, "power of two"},
        {{64, 64, 4, 0, 32}, 16, 64, 8, 0, 227 * 1024, "head_dim"},
        {{64, 64, 4, 0, 32}, 16, 128, 7, 0, 227 * 1024, "multiple"},
        {{48, 64, 4, 0, 32}, 16, 128, 8, 0, 227 * 1024, "BLOCK_M=48"},
        {{64, 64, 4, 0, 64}, 16, 128, 8, 1, 48 * 1024, ""},     /* BI-V100-like: portable 64/64, 41.5 KB */
        {{64, 128, 4, 0, 64}, 16, 128, 8, 0, 48 * 1024, "dynamic shared memory"},
        {{128, 128, 1, 1, 32}, 16, 128, 8, 0, 227 * 1024, "would spill"},
        {{128, 128, 8, 2, 32}, 16, 128, 8, 1, 227 * 1024, ""},   /* wgmma: 230,400 B */
        {{128, 128, 8, 2, 32}, 16, 128, 8, 0, 160 * 1024, "dynamic shared memory"},
        {{128, 64, 4, 2, 32}, 16, 128, 8, 0, 227 * 1024, "warpgroup"},
        {{64, 32, 4, 2, 32}, 16, 128, 8, 0, 227 * 1024, "BLOCK_N=32"},
        {{64, 64, 4, 2, 64}, 16, 128, 8, 0, 227 * 1024, "warp size 32"},
        {{64, 64, 4, 3, 32}, 16, 128, 8, 0, 227 * 1024, "code path 3"},
        {{128, 64, 1, 0, 32}, 16, 128, 8, 0, 227 * 1024, "output values per thread"},
    };
    for (auto &c : cases) {
        a.page_size = c.page;
        a.head_dim = c.head_dim_arg;
        a.num_heads = c.heads;
        unsigned smem = c.smem;
        const int expect = c.expect_ok;
        int rc = ppb_prefill_plan(&c.cfg, &a, 128, PPB_KDTYPE_BF16, smem, &pl, reason, sizeof reason);
        if ((rc == 0) != (expect == 1))
            FAIL("plan BM%d BN%d W%d mma%d ws%d page %d: rc %d, expected %s (%s)", c.cfg.block_m, c.cfg.block_n,
                 c.cfg.num_warps, c.cfg.use_mma, c.cfg.warp_size, c.page, rc, expect ? "ok" : "refusal", reason);
        else if (rc != 0 && c.needle[0] && !strstr(reason, c.needle))
            FAIL("plan refusal reason \"%s\" lacks \"%s\"", reason, c.needle);
        else if (rc != 0)
            printf("  refused as expected: %s\n", reason);
        if (rc == 0 && (pl.grid[0] != 2 || pl.grid[1] != 1 ||
                        pl.grid[2] != (unsigned)((100 * 4 + c.cfg.block_m - 1) / c.cfg.block_m) ||
                        !block_threads_ok(c.cfg, pl.block[0])))
            FAIL("plan grid/block wrong for BM%d", c.cfg.block_m);
    }
}

/* ---- the full matrix --------------------------------------------------------------------- */
static const int BMS[4] = {16, 32, 64, 128}, BNS[4] = {16, 32, 64, 128}, WS_[4] = {1, 2, 4, 8};
static const int DS[3] = {64, 128, 256};

static int test_matrix(unsigned smem_limit)
{
    int launched = 0, refused = 0;
    double worst[2][3] = {{0, 0, 0}, {0, 0, 0}};   /* [dtype][path] */
    for (int dt = 0; dt < 2; dt++)
        for (int D : DS) {
            /* ragged batch of 3 (tile edges: q 17/1/100, ctx 37/300/0), GQA 4, page 16; and the
             * same with a sliding window of 24 */
            shape s1 = make_shape("ragged3", {17, 1, 100}, {37, 300, 0}, 8, 2, D, 16, 0, dt);
            shape s2 = make_shape("ragged3-window24", {17, 1, 100}, {37, 300, 5}, 8, 2, D, 16, 24, dt, 4.f);
            workload w1, w2;
            make_workload(w1, s1, 1000 + dt * 10 + D);
            make_workload(w2, s2, 2000 + dt * 10 + D);
            std::vector<ref_row> r1 = reference(w1, 0, 1), r2 = reference(w2, 0, 2);
            for (int mma = 0; mma < 3; mma++)
                for (int bm : BMS)
                    for (int bn : BNS)
                        for (int wp : WS_) {
                            ppb_prefill_config cfg = {bm, bn, wp, mma, PPB_WARP_SIZE};
                            kernel_entry ke = lookup_kernel(dt, D, mma, bm, bn, wp);
                            const unsigned plan_smem = ppb_prefill_smem_bytes(&cfg, D);
                            if (plan_smem != ke.smem)
                                FAIL("smem mismatch D%d BM%d BN%d W%d mma%d: plan %u, kernel layout %u", D, bm, bn,
                                     wp, mma, plan_smem, ke.smem);
                            const bool expect = test_expects_static_ok(D, bm, bn, wp, mma, PPB_WARP_SIZE) && ke.fn &&
                                                ke.smem <= smem_limit;
                            ppb_prefill_args a = make_args(w1);
                            ppb_launch_plan pl;
                            char reason[256];
                            const bool ok = ppb_prefill_plan(&cfg, &a, D, dt, smem_limit, &pl, reason,
                                                             sizeof reason) == 0;
                            if (ok != expect) {
                                FAIL("%s D%d %s BM%d BN%d W%d: plan %s, test expected %s (%s)", dtype_name(dt), D,
                                     path_name(mma), bm, bn, wp, ok ? "accepts" : "refuses",
                                     expect ? "run" : "refusal", reason);
                                continue;
                            }
                            if (!ok) {
                                refused++;
                                if (dt == 0 && !reason[0])
                                    FAIL("refusal without a reason");
                                continue;
                            }
                            const cfg_key c = {bm, bn, wp, mma};
                            const double e1 = run_and_check(w1, r1, c, smem_limit, false);
                            const double e2 = run_and_check(w2, r2, c, smem_limit, false);
                            worst[dt][mma] = std::max(worst[dt][mma], std::max(e1, e2));
                            launched++;
                        }
            free_workload(w1);
            free_workload(w2);
        }
    printf("matrix: %d configs run on 2 shapes each, %d refused by the plan (as expected)\n", launched, refused);
    printf("matrix: worst row error fp16 simt %.2e mma %.2e wgmma %.2e | bf16 simt %.2e mma %.2e wgmma %.2e\n",
           worst[0][0], worst[0][1], worst[0][2], worst[1][0], worst[1][1], worst[1][2]);
    return launched;
}

/* Shapes beyond the matrix, on a few configs of each path. quick: fewer configs and shapes
 * (for compute-sanitizer runs). */
static void test_shapes(unsigned smem_limit, bool quick)
{
    std::vector<cfg_key> cfgs = {{64, 64, 4, 1},  {128, 64, 8, 1}, {16, 16, 1, 1},   {128, 32, 4, 1}, {64, 64, 4, 0},
                                 {16, 16, 1, 0},  {32, 128, 8, 0}, {128, 128, 8, 2}, {64, 64, 4, 2}};
    if (quick)
        cfgs = {{64, 64, 4, 1}, {16, 16, 1, 1}, {64, 64, 4, 0}, {128, 64, 8, 2}};
    std::vector<shape> shapes;
    for (int dt = 0; dt < 2; dt++) {
        shapes.push_back(make_shape("gqa1", {17, 33}, {5, 64}, 4, 4, 128, 16, 0, dt));
        shapes.push_back(make_shape("gqa2", {17, 33}, {5, 64}, 8, 4, 128, 16, 0, dt));
        shapes.push_back(make_shape("gqa8", {17, 33}, {5, 64}, 16, 2, 64, 16, 0, dt));
        shapes.push_back(make_shape("page8", {100, 3}, {37, 129}, 8, 2, 128, 8, 0, dt));
        shapes.push_back(make_shape("page32", {100, 3}, {37, 129}, 8, 2, 256, 32, 0, dt));
        shapes.push_back(make_shape("q1-ctx0", {1}, {0}, 8, 1, 128, 16, 0, dt));
        shapes.push_back(make_shape("window1", {40, 7}, {300, 20}, 8, 2, 128, 16, 1, dt));
        shapes.push_back(make_shape("window7", {40, 7}, {300, 20}, 8, 2, 128, 16, 7, dt));
        shapes.push_back(make_shape("window200", {260}, {300}, 8, 2, 64, 16, 200, dt));
        shapes.push_back(make_shape("peaky-q", {100, 17}, {37, 300}, 8, 2, 128, 16, 0, dt, 12.f));
        shapes.push_back(make_shape("ragged-8", {1, 2, 9, 31, 64, 65, 128, 129}, {0, 300, 17, 8, 1, 16, 255, 1000},
                                    8, 2, 128, 16, 0, dt));
    }
    int n = 0;
    for (const shape &s : shapes) {
        if (quick && s.name != "page8" && s.name != "window7" && s.name != "ragged-8" && s.name != "q1-ctx0")
            continue;
        workload w;
        make_workload(w, s, 3000 + n);
        std::vector<ref_row> rows = reference(w, 0, 3);
        for (const cfg_key &c : cfgs) {
            ppb_prefill_config cfg = {c.bm, c.bn, c.w, c.mma, PPB_WARP_SIZE};
            ppb_prefill_args a = make_args(w);
            ppb_launch_plan pl;
            if (ppb_prefill_plan(&cfg, &a, s.head_dim, s.dtype, smem_limit, &pl, nullptr, 0) != 0)
                continue;   /* e.g. simt 32/128/8 at D 256: the matrix test covers refusals */
            run_and_check(w, rows, c, smem_limit, true);
        }
        free_workload(w);
        n++;
    }
}

/* ctx ~100K, sampled rows. */
static void test_long(unsigned smem_limit)
{
    shape s = make_shape("long-ctx98341", {300}, {98341}, 8, 1, 128, 16, 0, PPB_KDTYPE_BF16);
    workload w;
    make_workload(w, s, 4242);
    std::vector<ref_row> rows = reference(w, 6, 5);   /* 6 tokens x 8 heads */
    const cfg_key cfgs[] = {{128, 64, 8, 1}, {64, 64, 4, 1}, {128, 128, 8, 1}, {64, 64, 4, 0}, {128, 128, 8, 2}};
    for (const cfg_key &c : cfgs)
        run_and_check(w, rows, c, smem_limit, true);
    free_workload(w);
}

/* ---- benchmark --------------------------------------------------------------------------- */
struct bench_case {
    const char *name;
    int q, ctx, H, HK;
};
static const bench_case BENCH_CASES[] = {
    {"q8192-ctx0-32/4", 8192, 0, 32, 4},
    {"q8192-ctx90112-32/4", 8192, 90112, 32, 4},
    {"q512-ctx16384-32/4", 512, 16384, 32, 4},
    {"q512-ctx16384-8/1", 512, 16384, 8, 1},
};

static double flops_of(const bench_case &b, int D)
{
    return 4.0 * b.H * D * ((double)b.q * b.ctx + (double)b.q * b.q / 2.0);
}

static int bench(unsigned smem_limit, const char *only_case, const cfg_key *only_cfg, int samples)
{
    const int D = 128, dt = PPB_KDTYPE_BF16;
    std::vector<cfg_key> cfgs;
    if (only_cfg)
        cfgs.push_back(*only_cfg);
    else
        cfgs = {{128, 64, 8, 1},  {128, 128, 8, 1}, {128, 64, 4, 1}, {64, 64, 4, 1},  {128, 32, 4, 1},
                {64, 128, 4, 1},  {64, 64, 2, 1},   {64, 32, 2, 1},  {64, 64, 4, 0},  {128, 128, 8, 2},
                {128, 64, 8, 2},  {64, 128, 4, 2},  {64, 64, 4, 2}};
    void *flush = nullptr;
    const size_t flush_bytes = 256u << 20;
    CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    printf("\n%-22s %-18s %5s %9s %9s %9s %7s  %s\n", "case", "config", "regs", "median_ms", "min_ms", "TFLOP/s",
           "check", "note");
    for (const bench_case &b : BENCH_CASES) {
        if (only_case && strcmp(only_case, b.name) != 0)
            continue;
        shape s = make_shape(b.name, {b.q}, {b.ctx}, b.H, b.HK, D, 16, 0, dt);
        workload w;
        make_workload(w, s, 777);
        std::vector<ref_row> rows;
        if (!only_cfg || samples > 1) {
            /* a few sampled rows checked per config: a fast wrong kernel is no result */
            rows = reference(w, 4, 9, std::max(1, b.H / 4));   /* 4 tokens x 4 heads */
        }
        for (const cfg_key &c : cfgs) {
            if (!c.mma && b.ctx > 20000 && b.q > 1000)
                continue;   /* the portable path is too slow for the big anchor */
            ppb_prefill_config cfg = {c.bm, c.bn, c.w, c.mma, PPB_WARP_SIZE};
            ppb_prefill_args a = make_args(w);
            ppb_launch_plan pl;
            char reason[256];
            if (ppb_prefill_plan(&cfg, &a, D, dt, smem_limit, &pl, reason, sizeof reason) != 0) {
                printf("%-22s %s BM%d BN%d W%d refused: %s\n", b.name, path_name(c.mma), c.bm, c.bn, c.w, reason);
                continue;
            }
            kernel_entry ke = lookup_kernel(dt, D, c.mma, c.bm, c.bn, c.w);
            cudaFuncAttributes fa;
            CHECK_CUDA(cudaFuncGetAttributes(&fa, (const void *)ke.fn));
            CHECK_CUDA(cudaMemset(w.dout, 0xFF, w.out_elems * 2));
            if (!launch(ke, pl, a))
                continue;
            CHECK_CUDA(cudaDeviceSynchronize());
            const char *verdict = "-";
            if (!rows.empty()) {
                std::vector<uint16_t> out(w.out_elems);
                CHECK_CUDA(cudaMemcpy(out.data(), w.dout, w.out_elems * 2, cudaMemcpyDeviceToHost));
                check_stats st = compare(w, out, rows, true);
                const bool bad = st.nonfinite || !(st.worst_row_rel <= tol_row(dt));
                verdict = bad ? "WRONG" : "ok";
                if (bad)
                    FAIL("bench %s %s BM%d BN%d W%d: worst row %.3g%s", b.name, path_name(c.mma), c.bm, c.bn,
                         c.w, st.worst_row_rel, st.nonfinite ? " NON-FINITE" : "");
            }
            std::vector<float> ms;
            for (int i = 0; i < samples; i++) {
                CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes));   /* cold L2 */
                CHECK_CUDA(cudaEventRecord(e0));
                launch(ke, pl, a);
                CHECK_CUDA(cudaEventRecord(e1));
                CHECK_CUDA(cudaEventSynchronize(e1));
                float t = 0;
                CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
                ms.push_back(t);
            }
            if (ms.empty())
                continue;
            std::sort(ms.begin(), ms.end());
            const double med = ms[ms.size() / 2];
            char cname[64];
            snprintf(cname, sizeof cname, "%s %d/%d/%d", path_name(c.mma), c.bm, c.bn, c.w);
            printf("%-22s %-18s %5d %9.3f %9.3f %9.1f %7s  smem %u local %zu\n", b.name, cname, fa.numRegs, med, ms[0],
                   flops_of(b, D) / (med * 1e-3) / 1e12, verdict, pl.dynamic_smem, (size_t)fa.localSizeBytes);
            fflush(stdout);
        }
        free_workload(w);
    }
    cudaFree(flush);
    return 0;
}

static void print_resources(void)
{
    printf("\nresources of the main configs (bf16, D 128):\n");
    const cfg_key cfgs[] = {{128, 64, 8, 1}, {128, 128, 8, 1}, {128, 64, 4, 1}, {64, 64, 4, 1},  {128, 32, 4, 1},
                            {64, 128, 4, 1}, {64, 64, 2, 1},   {64, 32, 2, 1},  {64, 64, 4, 0},  {128, 128, 8, 2},
                            {128, 64, 8, 2}, {64, 128, 4, 2},  {64, 64, 4, 2}};
    for (const cfg_key &c : cfgs) {
        kernel_entry ke = lookup_kernel(PPB_KDTYPE_BF16, 128, c.mma, c.bm, c.bn, c.w);
        if (!ke.fn)
            continue;
        cudaFuncAttributes fa;
        CHECK_CUDA(cudaFuncGetAttributes(&fa, (const void *)ke.fn));
        printf("  %s %d/%d/%d: %d registers, %zu B local (spill), %u B dynamic smem\n", path_name(c.mma),
               c.bm, c.bn, c.w, fa.numRegs, (size_t)fa.localSizeBytes, ke.smem);
    }
}

int main(int argc, char **argv)
{
    int dev = 0;
    CHECK_CUDA(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
    const unsigned smem_limit = (unsigned)prop.sharedMemPerBlockOptin;
    printf("device %s, cc %d.%d, %d SMs, opt-in smem %u B, warp size %d (compiled %d)\n", prop.name, prop.major,
           prop.minor, prop.multiProcessorCount, smem_limit, prop.warpSize, PPB_WARP_SIZE);
    if (prop.warpSize != PPB_WARP_SIZE) {
        printf("FAIL: device warp size differs from PPB_WARP_SIZE\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        return 0;   /* the binary starts and sees a GPU */
    } else if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        const int samples = argc > 2 ? atoi(argv[2]) : 20;
        print_resources();
        bench(smem_limit, nullptr, nullptr, samples < 1 ? 20 : samples);
    } else if (argc > 1 && strcmp(argv[1], "--quick") == 0) {
        test_shapes(smem_limit, true);
    } else if (argc > 5 && strcmp(argv[1], "--ncu") == 0) {
        const cfg_key c = {atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argc > 6 ? atoi(argv[6]) : 1};
        bench(smem_limit, argv[2], &c, 1);
    } else {
        check_plan_refusals();
        test_matrix(smem_limit);
        test_shapes(smem_limit, false);
        test_long(smem_limit);
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
    return g_failures ? 1 : 0;
}
