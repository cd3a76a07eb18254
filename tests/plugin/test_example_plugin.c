/* The example plugin (example_cpu_plugin.c), loaded with dlopen() as ppbench
 * loads a plugin, against a float64 brute force written here: prefix prefill,
 * decode v1 and v2 (the v2 scratch included, sized larger than needed too),
 * fp16 / bf16 rounding, refusals.
 * Usage: test_example_plugin [PLUGIN.so]; without an argument the plugin is
 * $PPB_PLUGIN_DIR/libppbk_example_cpu.so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppb_kernel_abi.h"

#define FP16 PPB_KDTYPE_FP16
#define BF16 PPB_KDTYPE_BF16
#define MAXB 6               /* sequences per case */
#define POISON 0x7E7Eu       /* output and tmp_out before a launch, as ppbench poisons */
#define CANARY_F (-12345.0f) /* exp_sums / max_logits before a launch */

static char plugin_path[4096];
static void *plugin_lib;
static const ppbk_impl *impl;
static void *plugin_ctx; /* what the plugin's open returned (load_plugin) */
static const ppbk_device cpu = {.backend = PPBK_BACKEND_CPU, .warp_size = 1, .sm_count = 1};

/* ---- random numbers, 16-bit values ------------------------------------------- */

static uint64_t next_u64(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rnd(uint64_t *s, int lo, int hi) /* inclusive */
{
    return lo + (int)(next_u64(s) % (uint64_t)(hi - lo + 1));
}

/* Value of a bit pattern, decoding the all-ones exponent as if it were one more
 * binade (inf -> 2^16 or 2^128): what round-to-nearest compares against. */
static double unbounded_value(uint16_t h, int dtype)
{
    int exp_bits = dtype == FP16 ? 5 : 8, man_bits = 15 - exp_bits, bias = (1 << (exp_bits - 1)) - 1;
    int e = (h >> man_bits) & ((1 << exp_bits) - 1), m = h & ((1 << man_bits) - 1);
    double mag = e ? ldexp(1.0 + ldexp(m, -man_bits), e - bias) : ldexp(m, 1 - bias - man_bits);
    return (h & 0x8000) ? -mag : mag;
}

static uint16_t inf_bits(int dtype) { return dtype == FP16 ? 0x7c00 : 0x7f80; }

static double to_double(uint16_t h, int dtype)
{
    uint16_t a = h & 0x7fff;
    if (a > inf_bits(dtype))
        return NAN;
    if (a == inf_bits(dtype))
        return (h & 0x8000) ? -INFINITY : INFINITY;
    return unbounded_value(h, dtype);
}

/* Round-to-nearest-even of a finite double, by bisection over the ordered
 * non-negative patterns: independent of the plugin's bit tricks. */
static uint16_t nearest_bits(double x, int dtype)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    unsigned lo = 0, hi = inf_bits(dtype);
    if (a >= unbounded_value((uint16_t)hi, dtype))
        return sign | (uint16_t)hi;
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (unbounded_value((uint16_t)mid, dtype) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - unbounded_value((uint16_t)lo, dtype), dh = unbounded_value((uint16_t)hi, dtype) - a;
    unsigned r = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
    return sign | (uint16_t)r;
}

/* Random inputs: multiples of 1/64 in [-scale, scale] (scale a power of two
 * <= 2): exact in fp16 and bf16, so the test needs no rounding of its own. */
static uint16_t *rnd_tensor(uint64_t *s, size_t n, double scale, int dtype)
{
    uint16_t bits[129];
    for (int i = 0; i <= 128; i++) {
        double x = (i - 64) / 64.0 * scale;
        bits[i] = nearest_bits(x, dtype);
        assert_true(to_double(bits[i], dtype) == x);
    }
    uint16_t *t = malloc((n ? n : 1) * sizeof *t); /* exact size: ASan sees any overrun */
    assert_non_null(t);
    for (size_t i = 0; i < n; i++)
        t[i] = bits[rnd(s, 0, 128)];
    return t;
}

static uint16_t *filled(size_t n, uint16_t bits)
{
    uint16_t *t = malloc((n ? n : 1) * sizeof *t);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++)
        t[i] = bits;
    return t;
}

/* ---- the paged KV cache --------------------------------------------------------- */

typedef struct paged {
    int batch, kv_heads, dim, page, num_blocks, max_blocks;
    uint16_t *k_cache, *v_cache;
    int32_t *block_table;
} paged;

/* Blocks in a random order, two spare; unused table entries point far out of
 * range so that reading one crashes rather than passes. */
static void paged_make(paged *pc, uint64_t *s, int batch, const int *lens, int kv_heads, int dim, int page,
                       int dtype, double v_scale)
{
    *pc = (paged){.batch = batch, .kv_heads = kv_heads, .dim = dim, .page = page};
    int used = 0;
    for (int b = 0; b < batch; b++) {
        int n = (lens[b] + page - 1) / page;
        used += n;
        if (n + 1 > pc->max_blocks)
            pc->max_blocks = n + 1;
    }
    pc->num_blocks = used + 2;
    int *perm = malloc(sizeof(int) * (size_t)pc->num_blocks);
    for (int i = 0; i < pc->num_blocks; i++)
        perm[i] = i;
    for (int i = pc->num_blocks - 1; i > 0; i--) {
        int j = rnd(s, 0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    pc->block_table = malloc(sizeof(int32_t) * (size_t)(batch * pc->max_blocks));
    int at = 0;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < pc->max_blocks; i++)
            pc->block_table[b * pc->max_blocks + i] = i < (lens[b] + page - 1) / page ? perm[at++] : 1 << 30;
    free(perm);
    size_t n = (size_t)pc->num_blocks * (size_t)(kv_heads * dim * page);
    pc->k_cache = rnd_tensor(s, n, 1.0, dtype);
    pc->v_cache = rnd_tensor(s, n, v_scale, dtype);
}

static void paged_free(paged *pc)
{
    free(pc->k_cache);
    free(pc->v_cache);
    free(pc->block_table);
}

/* Key / value element d of cached token j of sequence b, written out in full. */
static double cached_k(const paged *pc, int b, int j, int kvh, int d, int dtype)
{
    long blk = pc->block_table[b * pc->max_blocks + j / pc->page];
    long i = ((((blk * pc->kv_heads + kvh) * (pc->dim / 8) + d / 8) * pc->page) + j % pc->page) * 8 + d % 8;
    return to_double(pc->k_cache[i], dtype);
}

static double cached_v(const paged *pc, int b, int j, int kvh, int d, int dtype)
{
    long blk = pc->block_table[b * pc->max_blocks + j / pc->page];
    long i = ((blk * pc->kv_heads + kvh) * pc->dim + d) * pc->page + j % pc->page;
    return to_double(pc->v_cache[i], dtype);
}

/* ---- float64 brute force --------------------------------------------------------- */

/* softmax(scale q.K^T) V over n keys (rows of K, V): out[dim], and the max
 * logit and sum of exp(logit - max) a v2 partition stores. n = 0: zeros. */
static void brute(const double *q, const double *K, const double *V, int n, int dim, double scale, double *out,
                  double *max_out, double *sum_out)
{
    double *logit = malloc(sizeof(double) * (size_t)(n + 1)), mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) {
        logit[j] = 0;
        for (int d = 0; d < dim; d++)
            logit[j] += q[d] * K[(size_t)j * dim + d];
        logit[j] *= scale;
        mx = fmax(mx, logit[j]);
    }
    for (int d = 0; d < dim; d++)
        out[d] = 0;
    for (int j = 0; j < n; j++) {
        double p = exp(logit[j] - mx);
        sum += p;
        for (int d = 0; d < dim; d++)
            out[d] += p * V[(size_t)j * dim + d];
    }
    for (int d = 0; d < dim; d++)
        out[d] = n ? out[d] / sum : 0;
    *max_out = mx;
    *sum_out = sum;
    free(logit);
}

/* |got - ref| within what storage rounding allows: u |ref| for the output,
 * plus u * max|v| where a v2 partial output was rounded too (u: unit roundoff). */
static int close_enough(uint16_t got, double ref, int dtype, double v_max, int rounded_twice)
{
    double u = dtype == FP16 ? 0x1p-11 : 0x1p-8;
    double tol = 1e-4 + 1.5 * u * fabs(ref) + (rounded_twice ? 1.5 * u * v_max : 0);
    return fabs(to_double(got, dtype) - ref) <= tol;
}

/* ---- prefix prefill ---------------------------------------------------------------- */

typedef struct pcase {
    int dtype, dim, heads, kv_heads, page, window, batch;
    int qlen[MAXB], ctx[MAXB];
    int block_m, block_n, num_warps;
    float sm_scale; /* 0: 1 / sqrt(dim) */
} pcase;

static void run_prefill(const pcase *c, uint64_t seed)
{
    uint64_t s = seed;
    int D = c->dim, H = c->heads, KVH = c->kv_heads, group = H / KVH, total = 0, maxq = 0;
    int32_t start_loc[MAXB + 1], qlen[MAXB], ctx[MAXB];
    for (int b = 0; b < c->batch; b++) {
        start_loc[b] = total;
        qlen[b] = c->qlen[b];
        ctx[b] = c->ctx[b];
        total += c->qlen[b];
        maxq = c->qlen[b] > maxq ? c->qlen[b] : maxq;
    }
    start_loc[c->batch] = total;
    paged pc;
    paged_make(&pc, &s, c->batch, c->ctx, KVH, D, c->page, c->dtype, 2.0);
    uint16_t *q = rnd_tensor(&s, (size_t)total * H * D, 2.0, c->dtype);
    uint16_t *k = rnd_tensor(&s, (size_t)total * KVH * D, 1.0, c->dtype);
    uint16_t *v = rnd_tensor(&s, (size_t)total * KVH * D, 2.0, c->dtype);
    uint16_t *out = filled((size_t)total * H * D, POISON);
    float scale = c->sm_scale ? c->sm_scale : 1.0f / sqrtf((float)D);
    ppb_prefill_args a = {.q = q, .k = k, .v = v, .k_cache = pc.k_cache, .v_cache = pc.v_cache, .out = out,
                          .block_table = pc.block_table, .start_loc = start_loc, .query_lens = qlen,
                          .context_lens = ctx, .batch = c->batch, .max_query_len = maxq, .num_heads = H,
                          .num_kv_heads = KVH, .head_dim = D, .page_size = c->page,
                          .max_blocks_per_seq = pc.max_blocks, .sliding_window = c->window, .sm_scale = scale};
    ppbk_prefill_config cfg = {.dtype = c->dtype, .head_dim = D, .page_size = c->page,
                               .sliding_window = c->window, .block_m = c->block_m ? c->block_m : 16,
                               .block_n = c->block_n ? c->block_n : 64, .num_warps = c->num_warps ? c->num_warps : 4};
    char why[256] = "";
    assert_int_equal(impl->prefill->refuse(plugin_ctx, &cpu, &cfg, &a, why, sizeof why), PPBK_OK);
    int rc = impl->prefill->launch(plugin_ctx, &cpu, &cfg, &a, NULL, why, sizeof why);
    if (rc != PPBK_OK)
        fail_msg("prefill launch: %d %s", rc, why);

    int bad = 0;
    double qd[256], ref[256], mx, sum;
    for (int b = 0; b < c->batch; b++)
        for (int i = 0; i < c->qlen[b]; i++)
            for (int h = 0; h < H; h++) {
                int t = start_loc[b] + i, pos = c->ctx[b] + i, kvh = h / group;
                int first = c->window > 0 && pos - c->window + 1 > 0 ? pos - c->window + 1 : 0, n = pos - first + 1;
                double *K = malloc(sizeof(double) * (size_t)n * D), *V = malloc(sizeof(double) * (size_t)n * D);
                for (int j = first; j <= pos; j++)
                    for (int d = 0; d < D; d++) {
                        size_t row = (size_t)(j - first) * D + d;
                        if (j < c->ctx[b]) {
                            K[row] = cached_k(&pc, b, j, kvh, d, c->dtype);
                            V[row] = cached_v(&pc, b, j, kvh, d, c->dtype);
                        } else {
                            size_t at = ((size_t)(start_loc[b] + j - c->ctx[b]) * KVH + kvh) * D + d;
                            K[row] = to_double(k[at], c->dtype);
                            V[row] = to_double(v[at], c->dtype);
                        }
                    }
                for (int d = 0; d < D; d++)
                    qd[d] = to_double(q[((size_t)t * H + h) * D + d], c->dtype);
                brute(qd, K, V, n, D, scale, ref, &mx, &sum);
                for (int d = 0; d < D; d++) {
                    uint16_t got = out[((size_t)t * H + h) * D + d];
                    if (!close_enough(got, ref[d], c->dtype, 2.0, 0) && bad++ < 5)
                        print_error("prefill seq %d token %d head %d dim %d: got %g (0x%04x), want %g\n", b, i, h, d,
                                    to_double(got, c->dtype), got, ref[d]);
                }
                free(K);
                free(V);
            }
    free(q), free(k), free(v), free(out);
    paged_free(&pc);
    if (bad)
        fail_msg("prefill (dtype %d D %d H %d KVH %d page %d window %d batch %d): %d elements wrong", c->dtype, D, H,
                 KVH, c->page, c->window, c->batch, bad);
}

static void test_prefill_cases(void **state)
{
    (void)state;
    const pcase cases[] = {
        {.dtype = FP16, .dim = 64, .heads = 4, .kv_heads = 4, .page = 16, .batch = 2, .qlen = {5, 17}, .ctx = {0, 33}},
        /* GQA 4:1, ragged, context ends mid-page */
        {.dtype = BF16, .dim = 128, .heads = 8, .kv_heads = 2, .page = 8, .batch = 3, .qlen = {1, 9, 20},
         .ctx = {7, 16, 40}},
        {.dtype = FP16, .dim = 256, .heads = 2, .kv_heads = 1, .page = 32, .batch = 2, .qlen = {12, 3},
         .ctx = {70, 0}, .sm_scale = 0.11f},
        /* sliding windows: shorter than the context, shorter than the new tokens, longer than everything */
        {.dtype = BF16, .dim = 64, .heads = 4, .kv_heads = 2, .page = 16, .window = 10, .batch = 2,
         .qlen = {15, 4}, .ctx = {30, 5}},
        {.dtype = FP16, .dim = 128, .heads = 6, .kv_heads = 3, .page = 32, .window = 40, .batch = 3,
         .qlen = {33, 1, 2}, .ctx = {64, 100, 0}},
        {.dtype = FP16, .dim = 64, .heads = 2, .kv_heads = 1, .page = 8, .window = 1, .batch = 1, .qlen = {6},
         .ctx = {9}},
        {.dtype = BF16, .dim = 64, .heads = 3, .kv_heads = 1, .page = 8, .window = 500, .batch = 1,
         .qlen = {7}, .ctx = {12}},
        /* the largest knobs accepted */
        {.dtype = BF16, .dim = 64, .heads = 1, .kv_heads = 1, .page = 16, .batch = 1, .qlen = {3}, .ctx = {2},
         .block_m = 128, .block_n = 128, .num_warps = 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_prefill(&cases[i], 100 + i);
}

static void test_prefill_random(void **state)
{
    (void)state;
    static const int dims[] = {64, 128, 256}, pages[] = {8, 16, 32}, kvhs[] = {1, 2, 4};
    for (uint64_t seed = 1; seed <= 24; seed++) {
        uint64_t s = seed * 7919;
        pcase c = {.dtype = rnd(&s, 0, 1), .dim = dims[rnd(&s, 0, 2)], .page = pages[rnd(&s, 0, 2)],
                   .kv_heads = kvhs[rnd(&s, 0, 2)], .batch = rnd(&s, 1, 4)};
        c.heads = c.kv_heads * rnd(&s, 1, 3);
        c.window = rnd(&s, 0, 1) ? rnd(&s, 1, 60) : 0;
        c.sm_scale = rnd(&s, 0, 1) ? 0.0f : 0.25f;
        for (int b = 0; b < c.batch; b++) {
            c.qlen[b] = rnd(&s, 1, 24);
            c.ctx[b] = rnd(&s, 0, 3) ? rnd(&s, 0, 90) : 0;
        }
        run_prefill(&c, seed);
    }
}

/* ---- paged attention decode ---------------------------------------------------------- */

typedef struct dcase {
    int dtype, dim, heads, kv_heads, page, window, batch;
    int seq[MAXB];
    int version, part, host_part; /* host_part: the partition size the host sized the scratch with */
    float sm_scale;
} dcase;

static int canary_float(float f)
{
    float c = CANARY_F;
    return memcmp(&f, &c, sizeof f) == 0;
}

static void run_decode(const dcase *c, uint64_t seed)
{
    uint64_t s = seed;
    int D = c->dim, H = c->heads, KVH = c->kv_heads, group = H / KVH, B = c->batch, maxlen = 0;
    int32_t seq_lens[MAXB];
    for (int b = 0; b < B; b++) {
        seq_lens[b] = c->seq[b];
        maxlen = c->seq[b] > maxlen ? c->seq[b] : maxlen;
    }
    paged pc;
    paged_make(&pc, &s, B, c->seq, KVH, D, c->page, c->dtype, 2.0);
    uint16_t *q = rnd_tensor(&s, (size_t)B * H * D, 2.0, c->dtype);
    uint16_t *out = filled((size_t)B * H * D, POISON);
    float scale = c->sm_scale ? c->sm_scale : 1.0f / sqrtf((float)D);
    int v2 = c->version == 2;
    int parts = v2 ? (maxlen + c->part - 1) / c->part : 0;
    int host_part = c->host_part ? c->host_part : c->part;
    size_t host_slots = v2 ? (size_t)B * H * ((maxlen + host_part - 1) / host_part) : 0;
    assert_true(host_slots >= (size_t)B * H * parts); /* these cases never size it smaller */
    uint16_t *tmp_out = v2 ? filled(host_slots * D, POISON) : NULL;
    float *exp_sums = v2 ? malloc(sizeof(float) * host_slots) : NULL;
    float *max_logits = v2 ? malloc(sizeof(float) * host_slots) : NULL;
    for (size_t i = 0; i < host_slots; i++)
        exp_sums[i] = max_logits[i] = CANARY_F;
    ppb_decode_args a = {.q = q, .k_cache = pc.k_cache, .v_cache = pc.v_cache, .out = out,
                         .block_table = pc.block_table, .seq_lens = seq_lens, .tmp_out = tmp_out,
                         .exp_sums = exp_sums, .max_logits = max_logits, .num_seqs = B, .num_heads = H,
                         .num_kv_heads = KVH, .head_dim = D, .page_size = c->page,
                         .max_blocks_per_seq = pc.max_blocks, .max_seq_len = maxlen, .max_num_partitions = parts,
                         .sliding_window = c->window, .sm_scale = scale};
    ppbk_decode_config cfg = {.dtype = c->dtype, .head_dim = D, .page_size = c->page, .sliding_window = c->window,
                              .version = c->version, .num_threads = 128, .partition_size = v2 ? c->part : 0};
    const ppbk_decode_ops *ops = v2 ? impl->decode_v2 : impl->decode_v1;
    char why[256] = "";
    assert_int_equal(ops->refuse(plugin_ctx, &cpu, &cfg, &a, why, sizeof why), PPBK_OK);
    int rc = ops->launch(plugin_ctx, &cpu, &cfg, &a, NULL, why, sizeof why);
    if (rc != PPBK_OK)
        fail_msg("decode v%d launch: %d %s", c->version, rc, why);

    int bad = 0;
    double qd[256], ref[256], mx, sum;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int len = c->seq[b], kvh = h / group, pos = len - 1;
            int first = c->window > 0 && pos - c->window + 1 > 0 ? pos - c->window + 1 : 0;
            double *K = malloc(sizeof(double) * (size_t)len * D), *V = malloc(sizeof(double) * (size_t)len * D);
            for (int j = 0; j < len; j++)
                for (int d = 0; d < D; d++) {
                    K[(size_t)j * D + d] = cached_k(&pc, b, j, kvh, d, c->dtype);
                    V[(size_t)j * D + d] = cached_v(&pc, b, j, kvh, d, c->dtype);
                }
            for (int d = 0; d < D; d++)
                qd[d] = to_double(q[((size_t)b * H + h) * D + d], c->dtype);
            brute(qd, K + (size_t)first * D, V + (size_t)first * D, len - first, D, scale, ref, &mx, &sum);
            for (int d = 0; d < D; d++) {
                uint16_t got = out[((size_t)b * H + h) * D + d];
                if (!close_enough(got, ref[d], c->dtype, 2.0, v2) && bad++ < 5)
                    print_error("decode v%d seq %d head %d dim %d: got %g (0x%04x), want %g\n", c->version, b, h, d,
                                to_double(got, c->dtype), got, ref[d]);
            }
            /* v2: each partition's scratch at (seq * heads + head) * max_num_partitions + p;
             * partitions past the sequence left alone, as vLLM's early exit does. */
            for (int p = 0; v2 && p < parts; p++) {
                size_t at = ((size_t)b * H + h) * parts + p;
                int lo = p * c->part, hi = (p + 1) * c->part < len ? (p + 1) * c->part : len;
                if (lo >= len) {
                    int untouched = canary_float(exp_sums[at]) && canary_float(max_logits[at]);
                    for (int d = 0; d < D; d++)
                        untouched = untouched && tmp_out[at * D + d] == POISON;
                    if (!untouched && bad++ < 5)
                        print_error("decode v2 seq %d head %d: partition %d past the end was written\n", b, h, p);
                    continue;
                }
                int from = lo > first ? lo : first, n = hi > from ? hi - from : 0;
                double pref[256], pmax, psum;
                brute(qd, K + (size_t)from * D, V + (size_t)from * D, n, D, scale, pref, &pmax, &psum);
                int ok = n ? fabs(exp_sums[at] - psum) <= 1e-3 * psum && fabs(max_logits[at] - pmax) <= 1e-3 * (1 + fabs(pmax))
                           : exp_sums[at] == 0.0f; /* a partition outside the window weighs nothing */
                for (int d = 0; d < D && n; d++)
                    ok = ok && close_enough(tmp_out[at * D + d], pref[d], c->dtype, 2.0, 0);
                if (!ok && bad++ < 5)
                    print_error("decode v2 seq %d head %d partition %d: exp_sum %g (want %g), max %g (want %g)\n", b,
                                h, p, exp_sums[at], psum, max_logits[at], pmax);
            }
            free(K);
            free(V);
        }
    /* Nothing beyond the kernel's max_num_partitions stride, however large the scratch. */
    for (size_t i = (size_t)B * H * parts; i < host_slots; i++) {
        int untouched = canary_float(exp_sums[i]) && canary_float(max_logits[i]);
        for (int d = 0; d < D; d++)
            untouched = untouched && tmp_out[i * D + d] == POISON;
        if (!untouched && bad++ < 5)
            print_error("decode v2: scratch slot %zu beyond the kernel's %d partitions was written\n", i, parts);
    }
    free(q), free(out), free(tmp_out), free(exp_sums), free(max_logits);
    paged_free(&pc);
    if (bad)
        fail_msg("decode v%d (dtype %d D %d H %d KVH %d page %d window %d part %d host_part %d): %d wrong", c->version,
                 c->dtype, D, H, KVH, c->page, c->window, c->part, host_part, bad);
}

static void test_decode_cases(void **state)
{
    (void)state;
    const dcase cases[] = {
        {.dtype = FP16, .dim = 64, .heads = 4, .kv_heads = 1, .page = 8, .batch = 4, .seq = {1, 8, 9, 50}, .version = 1},
        {.dtype = BF16, .dim = 256, .heads = 2, .kv_heads = 2, .page = 32, .window = 20, .batch = 2, .seq = {100, 31},
         .version = 1},
        {.dtype = BF16, .dim = 128, .heads = 6, .kv_heads = 2, .page = 16, .batch = 3, .seq = {17, 2, 64},
         .version = 1, .sm_scale = 0.3f},
        /* v2: lengths on, just past and just short of partition boundaries, and a single token */
        {.dtype = FP16, .dim = 128, .heads = 4, .kv_heads = 2, .page = 16, .batch = 6, .seq = {32, 33, 31, 1, 64, 65},
         .version = 2, .part = 32},
        /* the scratch sized with a smaller partition size: larger than the kernel needs */
        {.dtype = BF16, .dim = 64, .heads = 8, .kv_heads = 8, .page = 8, .batch = 3, .seq = {16, 40, 7},
         .version = 2, .part = 16, .host_part = 8},
        {.dtype = FP16, .dim = 256, .heads = 2, .kv_heads = 1, .page = 32, .batch = 2, .seq = {129, 64},
         .version = 2, .part = 64, .host_part = 16},
        /* a window shorter than a partition: whole partitions masked */
        {.dtype = FP16, .dim = 64, .heads = 4, .kv_heads = 2, .page = 8, .window = 10, .batch = 3, .seq = {70, 5, 33},
         .version = 2, .part = 16},
        {.dtype = BF16, .dim = 128, .heads = 2, .kv_heads = 1, .page = 16, .window = 16, .batch = 2, .seq = {48, 49},
         .version = 2, .part = 16, .host_part = 4},
        /* one partition per sequence: the reduce passes it through */
        {.dtype = BF16, .dim = 64, .heads = 2, .kv_heads = 1, .page = 16, .batch = 2, .seq = {30, 12},
         .version = 2, .part = 32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_decode(&cases[i], 200 + i);
}

static void test_decode_random(void **state)
{
    (void)state;
    static const int dims[] = {64, 128, 256}, pages[] = {8, 16, 32}, kvhs[] = {1, 2, 4}, parts[] = {16, 32, 64};
    for (uint64_t seed = 1; seed <= 32; seed++) {
        uint64_t s = seed * 104729;
        dcase c = {.dtype = rnd(&s, 0, 1), .dim = dims[rnd(&s, 0, 2)], .page = pages[rnd(&s, 0, 2)],
                   .kv_heads = kvhs[rnd(&s, 0, 2)], .batch = rnd(&s, 1, MAXB), .version = rnd(&s, 1, 2)};
        c.heads = c.kv_heads * rnd(&s, 1, 3);
        c.window = rnd(&s, 0, 2) ? 0 : rnd(&s, 1, 80);
        c.part = parts[rnd(&s, 0, 2)];
        c.host_part = c.part >> rnd(&s, 0, 2);
        for (int b = 0; b < c.batch; b++)
            c.seq[b] = rnd(&s, 1, 150);
        run_decode(&c, seed);
    }
}

/* ---- storage rounding, through decode with q = 0 ------------------------------------------
 * With q = 0 every logit is 0, so the output is the plain mean of the values,
 * computed exactly in fp32: two keys give midpoints (ties, where round-to-
 * nearest-even decides), four give quarter points; inf and NaN pass through. */
static void test_storage_rounding(void **state)
{
    (void)state;
    for (int dtype = FP16; dtype <= BF16; dtype++) {
        int D = 64, page = 8, fp16 = dtype == FP16;
        uint16_t inf = inf_bits(dtype), nan = fp16 ? 0x7e00 : 0x7fc0, one = fp16 ? 0x3c00 : 0x3f80;
        uint16_t min_normal = fp16 ? 0x0400 : 0x0080, big = fp16 ? 0x7bfe : 0x7efe;
        /* pairs (a, b) of seq 0 */
        const uint16_t pairs[][2] = {
            {0x0000, 0x0001}, {0x0001, 0x0002}, {0x0002, 0x0003}, {min_normal - 1, min_normal},
            {one, one + 1}, {one + 1, one + 2}, {big, big + 1}, {0x8001, 0x8002},
            {one, one | 0x8000}, {inf, inf}, {inf | 0x8000, inf | 0x8000}, {big + 1, inf},
            {nan, one}, {inf, inf | 0x8000},
        };
        int npairs = (int)(sizeof pairs / sizeof pairs[0]);
        uint64_t s = 77 + (uint64_t)dtype;
        /* seq 0: 2 keys, seq 1: 4 keys; all in block 0 and 1, page 8 */
        uint16_t *k_cache = filled((size_t)2 * D * page, 0), *v_cache = filled((size_t)2 * D * page, 0);
        uint16_t vals[2][4][64];
        for (int d = 0; d < D; d++) {
            /* random finite patterns below 2^13 (fp16) / 2^125 (bf16): the fp32 sums cannot overflow */
            uint16_t lim = fp16 ? 0x7400 : 0x7e00;
            uint16_t sign = rnd(&s, 0, 1) ? 0x8000 : 0, a = (uint16_t)rnd(&s, 0, lim - 4);
            uint16_t b = (uint16_t)(a + rnd(&s, 1, 3));
            vals[0][0][d] = d < npairs ? pairs[d][0] : (a | sign);
            vals[0][1][d] = d < npairs ? pairs[d][1] : (b | sign);
            int pattern = rnd(&s, 0, 3); /* how many of the four are b */
            for (int j = 0; j < 4; j++)
                vals[1][j][d] = (j < pattern ? b : a) | sign;
        }
        for (int seq = 0; seq < 2; seq++)
            for (int j = 0; j < (seq ? 4 : 2); j++)
                for (int d = 0; d < D; d++)
                    v_cache[((size_t)seq * D + d) * page + j] = vals[seq][j][d];
        uint16_t q[2 * 64] = {0}, out[2 * 64];
        int32_t table[2] = {0, 1}, lens[2] = {2, 4};
        ppb_decode_args a = {.q = q, .k_cache = k_cache, .v_cache = v_cache, .out = out, .block_table = table,
                             .seq_lens = lens, .num_seqs = 2, .num_heads = 1, .num_kv_heads = 1, .head_dim = D,
                             .page_size = page, .max_blocks_per_seq = 1, .max_seq_len = 4, .sm_scale = 0.125f};
        ppbk_decode_config cfg = {.dtype = dtype, .head_dim = D, .page_size = page, .version = 1, .num_threads = 32};
        char why[256] = "";
        int rc = impl->decode_v1->launch(plugin_ctx, &cpu, &cfg, &a, NULL, why, sizeof why);
        if (rc != PPBK_OK)
            fail_msg("launch: %s", why);
        int bad = 0;
        for (int seq = 0; seq < 2; seq++)
            for (int d = 0; d < D; d++) {
                int n = seq ? 4 : 2;
                double mean = 0;
                for (int j = 0; j < n; j++)
                    mean += to_double(vals[seq][j][d], dtype);
                mean /= n;
                uint16_t got = out[seq * D + d];
                int ok = isnan(mean) ? isnan(to_double(got, dtype))
                         : isinf(mean) ? got == (mean > 0 ? inf : (inf | 0x8000))
                                       : got == nearest_bits(mean, dtype);
                if (!ok && bad++ < 5)
                    print_error("dtype %d seq %d dim %d: mean %.17g gave 0x%04x, want 0x%04x\n", dtype, seq, d, mean,
                                got, isnan(mean) ? nan : nearest_bits(mean, dtype));
            }
        free(k_cache);
        free(v_cache);
        if (bad)
            fail_msg("dtype %d: %d values rounded wrongly", dtype, bad);
    }
}

/* ---- the table and its refusals ------------------------------------------------------------- */

static void test_table(void **state)
{
    (void)state;
    assert_int_equal(impl->abi_version, PPBK_ABI_VERSION);
    assert_true(impl->struct_size >= sizeof(ppbk_impl));
    assert_string_equal(impl->name, "example-cpu");
    assert_string_equal(impl->version, "1");
    assert_int_equal(impl->backends, PPBK_BACKEND_CPU);
    assert_non_null(impl->prefill);
    assert_non_null(impl->decode_v1);
    assert_non_null(impl->decode_v2);
    assert_null(impl->prefill->prepare);
    assert_null(impl->decode_v1->prepare);
    assert_null(impl->decode_v2->prepare);
    assert_non_null(impl->open);
    assert_non_null(impl->close);
    assert_non_null(plugin_ctx);
}

/* The context is the plugin's: open makes one per call (nothing shared), refuses
 * a device it cannot run on, and a call without a context is refused, not run. */
static void test_context(void **state)
{
    (void)state;
    char why[256] = "";
    void *other = NULL;
    assert_int_equal(impl->open(&cpu, &other, why, sizeof why), PPBK_OK);
    assert_non_null(other);
    assert_ptr_not_equal(other, plugin_ctx);
    impl->close(other);
    ppbk_device cuda = cpu;
    cuda.backend = PPBK_BACKEND_CUDA;
    other = NULL;
    assert_int_equal(impl->open(&cuda, &other, why, sizeof why), PPBK_FAILED);
    assert_null(other);
    assert_non_null(strstr(why, "CPU backend only"));
    ppb_prefill_args ps = {.batch = 1, .max_query_len = 16, .num_heads = 8, .num_kv_heads = 2, .head_dim = 128,
                           .page_size = 16, .max_blocks_per_seq = 4, .sm_scale = 0.1f};
    ppbk_prefill_config pc = {.dtype = FP16, .head_dim = 128, .page_size = 16, .block_m = 64, .block_n = 32,
                              .num_warps = 4};
    assert_int_equal(impl->prefill->refuse(NULL, &cpu, &pc, &ps, why, sizeof why), PPBK_REFUSED);
    assert_non_null(strstr(why, "without the context"));
    assert_int_equal(impl->prefill->launch(NULL, &cpu, &pc, &ps, NULL, why, sizeof why), PPBK_REFUSED);
    ppbk_device second = cpu;
    second.device_index = 1;
    assert_int_equal(impl->prefill->refuse(plugin_ctx, &second, &pc, &ps, why, sizeof why), PPBK_REFUSED);
    assert_non_null(strstr(why, "opened for device 0, not 1"));
}

/* A refusal: PPBK_REFUSED with one non-empty line; launch refuses the same
 * (the shapes here carry NULL pointers, so a launch that went on would crash). */
static void expect_refused(int rc, const char *why, const char *what)
{
    if (rc != PPBK_REFUSED)
        fail_msg("%s: rc %d, want PPBK_REFUSED", what, rc);
    if (!why[0] || strchr(why, '\n'))
        fail_msg("%s: reason \"%s\" is not one line", what, why);
}

static void prefill_refused(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                            const char *what)
{
    char why[256] = "";
    expect_refused(impl->prefill->refuse(plugin_ctx, dev, cfg, shape, why, sizeof why), why, what);
    why[0] = 0;
    expect_refused(impl->prefill->launch(plugin_ctx, dev, cfg, shape, NULL, why, sizeof why), why, what);
}

static void decode_refused(const ppbk_decode_ops *ops, const ppbk_device *dev, const ppbk_decode_config *cfg,
                           const ppb_decode_args *shape, const char *what)
{
    char why[256] = "";
    expect_refused(ops->refuse(plugin_ctx, dev, cfg, shape, why, sizeof why), why, what);
    why[0] = 0;
    expect_refused(ops->launch(plugin_ctx, dev, cfg, shape, NULL, why, sizeof why), why, what);
}

static void test_refusals(void **state)
{
    (void)state;
    char why[256];
    ppbk_device cuda = cpu;
    cuda.backend = PPBK_BACKEND_CUDA;
    ppb_prefill_args ps = {.batch = 1, .max_query_len = 16, .num_heads = 8, .num_kv_heads = 2, .head_dim = 128,
                           .page_size = 16, .max_blocks_per_seq = 4, .sm_scale = 0.1f};
    ppbk_prefill_config pc = {.dtype = FP16, .head_dim = 128, .page_size = 16, .block_m = 64, .block_n = 32,
                              .num_warps = 4};
    assert_int_equal(impl->prefill->refuse(plugin_ctx, &cpu, &pc, &ps, why, sizeof why), PPBK_OK);
    prefill_refused(&cuda, &pc, &ps, "prefill on CUDA");
    prefill_refused(NULL, &pc, &ps, "prefill without a device");
    ppbk_prefill_config p = pc;
    p.block_m = 48;
    prefill_refused(&cpu, &p, &ps, "block_m 48");
    p = pc, p.block_n = 256;
    prefill_refused(&cpu, &p, &ps, "block_n 256");
    p = pc, p.num_warps = 0;
    prefill_refused(&cpu, &p, &ps, "num_warps 0");
    p = pc, p.num_warps = 3;
    prefill_refused(&cpu, &p, &ps, "num_warps 3");
    p = pc, p.dtype = 7;
    prefill_refused(&cpu, &p, &ps, "dtype 7");
    ppb_prefill_args s2 = ps;
    p = pc, p.head_dim = s2.head_dim = 96;
    prefill_refused(&cpu, &p, &s2, "head_dim 96");
    p = pc, p.head_dim = s2.head_dim = 512;
    prefill_refused(&cpu, &p, &s2, "head_dim 512");
    s2 = ps, s2.num_kv_heads = 3;
    prefill_refused(&cpu, &pc, &s2, "8 heads over 3 kv heads");
    s2 = ps, s2.head_dim = 64;
    prefill_refused(&cpu, &pc, &s2, "shape head_dim differs from the config");

    ppb_decode_args ds = {.num_seqs = 2, .num_heads = 4, .num_kv_heads = 4, .head_dim = 64, .page_size = 16,
                          .max_blocks_per_seq = 8, .max_seq_len = 100, .max_num_partitions = 4, .sm_scale = 0.1f};
    ppbk_decode_config d1 = {.dtype = BF16, .head_dim = 64, .page_size = 16, .version = 1, .num_threads = 128};
    ppbk_decode_config d2 = d1;
    d2.version = 2, d2.partition_size = 32;
    assert_int_equal(impl->decode_v1->refuse(plugin_ctx, &cpu, &d1, &ds, why, sizeof why), PPBK_OK);
    assert_int_equal(impl->decode_v2->refuse(plugin_ctx, &cpu, &d2, &ds, why, sizeof why), PPBK_OK);
    decode_refused(impl->decode_v1, &cuda, &d1, &ds, "v1 on CUDA");
    decode_refused(impl->decode_v2, &cuda, &d2, &ds, "v2 on CUDA");
    ppbk_decode_config d = d1;
    d.num_threads = 100;
    decode_refused(impl->decode_v1, &cpu, &d, &ds, "num_threads 100");
    d = d2, d.num_threads = 0;
    decode_refused(impl->decode_v2, &cpu, &d, &ds, "num_threads 0");
    ppb_decode_args t = ds;
    d = d1, d.head_dim = t.head_dim = 80;
    decode_refused(impl->decode_v1, &cpu, &d, &t, "head_dim 80");
    decode_refused(impl->decode_v1, &cpu, &d2, &ds, "a v2 config given to v1");
    decode_refused(impl->decode_v2, &cpu, &d1, &ds, "a v1 config given to v2");
    d = d2, d.partition_size = 0;
    decode_refused(impl->decode_v2, &cpu, &d, &ds, "partition_size 0");
    t = ds, t.max_num_partitions = 3; /* 100 tokens need 4 partitions of 32 */
    decode_refused(impl->decode_v2, &cpu, &d2, &t, "max_num_partitions too small");

    /* Short or absent reason buffers: truncated, never overrun. */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    assert_int_equal(impl->decode_v1->refuse(plugin_ctx, &cuda, &d1, &ds, tiny, sizeof tiny), PPBK_REFUSED);
    assert_int_equal(tiny[7], 0);
    assert_int_equal(impl->decode_v1->refuse(plugin_ctx, &cuda, &d1, &ds, NULL, 0), PPBK_REFUSED);
}

/* A launch whose data contradict the shape (a context longer than the block
 * table) fails with a reason and writes nothing. */
static void test_launch_checks_lengths(void **state)
{
    (void)state;
    int32_t table[1] = {0}, lens[1] = {17};
    uint16_t cache[64 * 16] = {0}, q[64] = {0}, out[64];
    for (int d = 0; d < 64; d++)
        out[d] = POISON;
    ppb_decode_args a = {.q = q, .k_cache = cache, .v_cache = cache, .out = out, .block_table = table,
                         .seq_lens = lens, .num_seqs = 1, .num_heads = 1, .num_kv_heads = 1, .head_dim = 64,
                         .page_size = 16, .max_blocks_per_seq = 1, .max_seq_len = 17, .sm_scale = 0.1f};
    ppbk_decode_config cfg = {.dtype = FP16, .head_dim = 64, .page_size = 16, .version = 1, .num_threads = 64};
    char why[256] = "";
    assert_int_equal(impl->decode_v1->launch(plugin_ctx, &cpu, &cfg, &a, NULL, why, sizeof why), PPBK_FAILED);
    assert_non_null(strstr(why, "seq_len 17"));
    for (int d = 0; d < 64; d++)
        assert_int_equal(out[d], POISON);
}

/* ---- loading ---------------------------------------------------------------------------------- */

static int load_plugin(void **state)
{
    (void)state;
    plugin_lib = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (!plugin_lib) {
        fprintf(stderr, "dlopen %s: %s\n", plugin_path, dlerror());
        return -1;
    }
    ppbk_entry_fn entry;
    void *sym = dlsym(plugin_lib, PPBK_ENTRY_SYMBOL);
    if (!sym) {
        fprintf(stderr, "%s: no %s\n", plugin_path, PPBK_ENTRY_SYMBOL);
        return -1;
    }
    memcpy(&entry, &sym, sizeof entry); /* object to function pointer, without the ISO C warning */
    impl = entry();
    if (!impl) {
        fprintf(stderr, "%s: %s returned no table\n", plugin_path, PPBK_ENTRY_SYMBOL);
        return -1;
    }
    /* As ppbench does: open once, pass the context to every call, close at the end. */
    char why[256] = "";
    if (impl->open && impl->open(&cpu, &plugin_ctx, why, sizeof why) != PPBK_OK) {
        fprintf(stderr, "%s: open: %s\n", plugin_path, why);
        return -1;
    }
    return 0;
}

static int unload_plugin(void **state)
{
    (void)state;
    if (impl && impl->close && plugin_ctx)
        impl->close(plugin_ctx);
    if (plugin_lib)
        dlclose(plugin_lib);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("PPB_PLUGIN_DIR");
    if (argc > 1)
        snprintf(plugin_path, sizeof plugin_path, "%s", argv[1]);
    else if (dir && *dir)
        snprintf(plugin_path, sizeof plugin_path, "%s/libppbk_example_cpu.so", dir);
    else {
        fprintf(stderr, "usage: %s PLUGIN.so (or set PPB_PLUGIN_DIR)\n", argv[0]);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_context),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_launch_checks_lengths),
        cmocka_unit_test(test_storage_rounding),
        cmocka_unit_test(test_prefill_cases),
        cmocka_unit_test(test_prefill_random),
        cmocka_unit_test(test_decode_cases),
        cmocka_unit_test(test_decode_random),
    };
    return cmocka_run_group_tests(tests, load_plugin, unload_plugin);
}
