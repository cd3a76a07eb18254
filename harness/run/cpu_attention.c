#include "cpu_attention.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "decode_plan.h"
#include "ppb_rng.h"
#include "threads.h"

#define CANARY_BYTE 0xA5u
#define GUARD_MIN 64u          /* guard bytes even without a mismatch: a clean run leaves them intact */
#define SOFTMAX_EPS 1e-6f      /* vLLM adds it to every exp-sum before dividing */

enum { BUF_TMP_OUT = 0, BUF_EXP_SUMS = 1, BUF_MAX_LOGITS = 2, N_BUFS = 3 };

struct cpu_attn {
    const ppb_workload *w;
    const ppb_case *c;
    int threads;               /* the most threads a launch runs on (0: every thread of ppb_thread_count) */
    int n_workers;
    float *scratch;            /* n_workers x scratch_floats */
    atomic_int top_worker;     /* the highest worker index that took scratch in the last launch */
    size_t scratch_floats;
    int max_seq_len;
    /* decode v2 */
    int part_size;             /* the kernel's PARTITION_SIZE */
    long long parts_kernel;    /* max_num_partitions the kernel indexes with */
    long long parts_host;      /* partitions the host sized the buffers for */
    int packed;
    unsigned char *region;
    size_t region_bytes;
    size_t buf_off[N_BUFS], buf_bytes[N_BUFS], guard_bytes[N_BUFS];
    _Atomic long long written_end[N_BUFS]; /* highest byte end written, relative to the buffer */
    atomic_int out_of_region;              /* accesses refused: would have left the allocation */
};

static inline float to_f32(uint16_t h, int dtype)
{
    return dtype == PPB_FP16 ? ppb_rng_fp16_to_float(h) : ppb_rng_bf16_to_float(h);
}

static inline uint16_t to_storage(float f, int dtype)
{
    return dtype == PPB_FP16 ? ppb_rng_float_to_fp16(f) : ppb_rng_float_to_bf16(f);
}

/* The round trip through the storage dtype (probabilities before P x V). */
static inline float round_storage(float f, int dtype) { return to_f32(to_storage(f, dtype), dtype); }

/* Every item takes its worker's scratch, so this is also where a launch learns
 * which threads it ran on (cpu_attn_threads_used). */
static float *worker_scratch(cpu_attn *a, int worker)
{
    int top = atomic_load_explicit(&a->top_worker, memory_order_relaxed);
    while (worker > top && !atomic_compare_exchange_weak_explicit(&a->top_worker, &top, worker,
                                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return a->scratch + (size_t)worker * a->scratch_floats;
}

int cpu_attn_launch_threads(int threads)
{
    int all = ppb_thread_count();
    return threads > 0 && threads < all ? threads : all;
}

/* K / V row of cached token `pos` of sequence `seq`, converted to fp32. */
static void gather_cached_kv(const ppb_workload *w, int seq, int kv_head, int pos, float *k_row,
                             float *v_row)
{
    const ppb_shape *s = &w->c->shape;
    int block = w->block_table[(size_t)seq * (size_t)w->max_blocks_per_seq + (size_t)(pos / s->page_size)];
    int slot = pos % s->page_size;
    int dim = s->head_dim, dtype = s->dtype;
    if (k_row) {
        size_t base = ppb_kcache_index(w, block, kv_head, 0, slot);
        size_t group_stride = (size_t)s->page_size * 8; /* next group of 8 dims */
        for (int g = 0; g < dim / 8; g++)
            for (int x = 0; x < 8; x++)
                k_row[g * 8 + x] = to_f32(w->k_cache[base + (size_t)g * group_stride + (size_t)x], dtype);
    }
    if (v_row) {
        size_t base = ppb_vcache_index(w, block, kv_head, 0, slot);
        for (int d = 0; d < dim; d++)
            v_row[d] = to_f32(w->v_cache[base + (size_t)d * (size_t)s->page_size], dtype);
    }
}

/* n is a multiple of 8 (head_dim 64/128/256). Eight independent partial sums:
 * the compiler vectorises the lanes, and fp32 summation order is not part of
 * the kernels' contract anyway (each GPU kernel sums in its own order). */
static float dot_f32(const float *a, const float *b, int n)
{
    float lane[8] = {0};
    for (int i = 0; i < n; i += 8)
        for (int l = 0; l < 8; l++)
            lane[l] += a[i + l] * b[i + l];
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* ==== prefix prefill ========================================================== */

typedef struct prefill_tile_ctx {
    cpu_attn *a;
    uint16_t *out;
    long *unit_start;   /* [batch + 1]: first work item of each sequence */
    int *tiles;         /* [batch]: BLOCK_M tiles of each sequence */
} prefill_tile_ctx;

/* Scratch floats one prefill worker needs. */
static size_t prefill_scratch_floats(int bm, int bn, int dim)
{
    return (size_t)bm * dim * 2 + (size_t)bn * dim * 2 + (size_t)bm * bn + (size_t)bm * 2;
}

/* One online-softmax step over a BLOCK_N tile of keys for every row of the
 * tile, as vLLM v0.6.3's _fwd_kernel does it:
 *   m_new = max(m, max(qk)); alpha = e^(m - m_new); beta = e^(max(qk) - m_new)
 *   l_new = alpha l + beta sum(e^(qk - max(qk)))
 *   acc = acc (l / l_new) alpha + to_storage(e^(qk - max(qk)) beta / l_new) V
 * qk holds -inf where a key is masked. A row with no visible key in this tile
 * is left unchanged: the Triton kernel computes e^(-inf - -inf) = NaN there
 * (the BLOCK_M=128, BLOCK_N=64 failure in KERNELS.md); a config must be
 * computed right or refused, so the CPU does the former. */
static void online_softmax_step(float *qk, const float *v_tile, float *acc, float *m_i, float *l_i,
                                int rows, int cols, int bn, int dim, int dtype)
{
    for (int r = 0; r < rows; r++) {
        float *row = qk + (size_t)r * bn;
        float m_ij = -INFINITY;
        for (int n = 0; n < cols; n++)
            if (row[n] > m_ij)
                m_ij = row[n];
        if (m_ij == -INFINITY)
            continue;
        float l_ij = 0.0f;
        for (int n = 0; n < cols; n++) {
            row[n] = expf(row[n] - m_ij);
            l_ij += row[n];
        }
        float m_new = m_i[r] > m_ij ? m_i[r] : m_ij;
        float alpha = expf(m_i[r] - m_new);
        float beta = expf(m_ij - m_new);
        float l_new = alpha * l_i[r] + beta * l_ij;
        float p_scale = beta / l_new;
        float acc_scale = l_i[r] / l_new * alpha;
        float *acc_row = acc + (size_t)r * dim;
        for (int d = 0; d < dim; d++)
            acc_row[d] *= acc_scale;
        for (int n = 0; n < cols; n++) {
            float p = round_storage(row[n] * p_scale, dtype);
            if (p == 0.0f)
                continue;
            const float *v_row = v_tile + (size_t)n * dim;
            for (int d = 0; d < dim; d++)
                acc_row[d] += p * v_row[d];
        }
        l_i[r] = l_new;
        m_i[r] = m_new;
    }
}

static void prefill_tile(void *ctxp, long item, int worker)
{
    prefill_tile_ctx *ctx = ctxp;
    cpu_attn *a = ctx->a;
    const ppb_workload *w = a->w;
    const ppb_shape *s = &a->c->shape;
    const ppb_config *k = &a->c->config;
    /* num_warps only changes how a GPU spreads a tile over threads; the CPU
     * runs a tile in one thread, so it has no effect here. */
    int bm = k->block_m, bn = k->block_n, dim = s->head_dim, dtype = s->dtype;
    int heads = s->num_heads, kv_head_div = s->num_heads / s->num_kv_heads;
    int window = s->sliding_window;

    int lo = 0, hi = w->batch - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (ctx->unit_start[mid] <= item)
            lo = mid;
        else
            hi = mid - 1;
    }
    int seq = lo;
    long rem = item - ctx->unit_start[seq];
    int tiles = ctx->tiles[seq];
    int head = (int)(rem / tiles);
    int tile = tiles - 1 - (int)(rem % tiles); /* longest tiles first: better balance */
    int kv_head = head / kv_head_div;
    int qlen = w->query_lens[seq], ctx_len = w->context_lens[seq], first_tok = w->start_loc[seq];
    int m0 = tile * bm;
    int rows = qlen - m0 < bm ? qlen - m0 : bm;

    float *q = worker_scratch(a, worker);
    float *acc = q + (size_t)bm * dim;
    float *k_tile = acc + (size_t)bm * dim;
    float *v_tile = k_tile + (size_t)bn * dim;
    float *qk = v_tile + (size_t)bn * dim;
    float *m_i = qk + (size_t)bm * bn;
    float *l_i = m_i + bm;
    float sm_scale = 1.0f / sqrtf((float)dim);

    for (int r = 0; r < rows; r++) {
        const uint16_t *src = w->q + ((size_t)(first_tok + m0 + r) * heads + head) * dim;
        for (int d = 0; d < dim; d++)
            q[(size_t)r * dim + d] = to_f32(src[d], dtype);
        memset(acc + (size_t)r * dim, 0, sizeof(float) * (size_t)dim);
        m_i[r] = -INFINITY;
        l_i[r] = 1.0f;
    }

    /* Phase 1: the context, BLOCK_N keys at a time through the block table; no
     * causal mask (every new token comes after the whole context). */
    for (int start_n = 0; start_n < ctx_len; start_n += bn) {
        int cols = ctx_len - start_n < bn ? ctx_len - start_n : bn;
        for (int n = 0; n < cols; n++)
            gather_cached_kv(w, seq, kv_head, start_n + n, k_tile + (size_t)n * dim,
                             v_tile + (size_t)n * dim);
        for (int r = 0; r < rows; r++) {
            int query_pos = ctx_len + m0 + r;
            for (int n = 0; n < cols; n++) {
                int visible = window <= 0 || query_pos - (start_n + n) < window;
                qk[(size_t)r * bn + n] =
                    visible ? dot_f32(q + (size_t)r * dim, k_tile + (size_t)n * dim, dim) * sm_scale
                            : -INFINITY;
            }
        }
        online_softmax_step(qk, v_tile, acc, m_i, l_i, rows, cols, bn, dim, dtype);
    }

    /* Phase 2: the new tokens from the contiguous k / v, up to the end of this
     * tile's diagonal; causal mask m >= n. */
    int end_n = m0 + rows; /* keys 0 .. m0 + rows - 1 can be visible to this tile */
    for (int start_n = 0; start_n < end_n; start_n += bn) {
        int cols = end_n - start_n < bn ? end_n - start_n : bn;
        for (int n = 0; n < cols; n++) {
            size_t src = ((size_t)(first_tok + start_n + n) * s->num_kv_heads + kv_head) * dim;
            for (int d = 0; d < dim; d++) {
                k_tile[(size_t)n * dim + d] = to_f32(w->k[src + d], dtype);
                v_tile[(size_t)n * dim + d] = to_f32(w->v[src + d], dtype);
            }
        }
        for (int r = 0; r < rows; r++) {
            int m = m0 + r;
            for (int n = 0; n < cols; n++) {
                int key = start_n + n;
                int visible = key <= m && (window <= 0 || m - key < window);
                qk[(size_t)r * bn + n] =
                    visible ? dot_f32(q + (size_t)r * dim, k_tile + (size_t)n * dim, dim) * sm_scale
                            : -INFINITY;
            }
        }
        online_softmax_step(qk, v_tile, acc, m_i, l_i, rows, cols, bn, dim, dtype);
    }

    for (int r = 0; r < rows; r++) {
        uint16_t *dst = ctx->out + ((size_t)(first_tok + m0 + r) * heads + head) * dim;
        for (int d = 0; d < dim; d++)
            dst[d] = to_storage(acc[(size_t)r * dim + d], dtype);
    }
}

static int run_prefill(cpu_attn *a, uint16_t *out, ppb_err *err)
{
    const ppb_workload *w = a->w;
    int bm = a->c->config.block_m;
    long *unit_start = malloc(sizeof(long) * (size_t)(w->batch + 1));
    int *tiles = malloc(sizeof(int) * (size_t)w->batch);
    if (!unit_start || !tiles) {
        free(unit_start);
        free(tiles);
        return ppb_fail(err, PPB_ENOMEM, "cpu prefill: out of host memory");
    }
    unit_start[0] = 0;
    for (int b = 0; b < w->batch; b++) {
        tiles[b] = (w->query_lens[b] + bm - 1) / bm;
        unit_start[b + 1] = unit_start[b] + (long)tiles[b] * a->c->shape.num_heads;
    }
    prefill_tile_ctx ctx = {.a = a, .out = out, .unit_start = unit_start, .tiles = tiles};
    ppb_parallel_for(unit_start[w->batch], prefill_tile, &ctx);
    free(unit_start);
    free(tiles);
    return PPB_OK;
}

/* ==== paged attention decode ===================================================== */
/* num_threads only changes how a GPU block splits a sequence over warps (and the
 * kernel's shared-memory request, which backend_cpu.c checks); one CPU thread
 * runs a whole block, so it has no effect on the computation here. */

/* v2 scratch access: byte `offset` of buffer `buf`, `n` bytes. Lands wherever the
 * kernel's index puts it (the buffer, its guard, or in the packed layout the
 * next buffer) but never outside the allocation. */
static void scratch_store(cpu_attn *a, int buf, size_t offset, const void *src, size_t n)
{
    size_t at = a->buf_off[buf] + offset;
    if (at > a->region_bytes || n > a->region_bytes - at) {
        atomic_fetch_add(&a->out_of_region, 1);
        return;
    }
    memcpy(a->region + at, src, n);
    long long end = (long long)(offset + n);
    long long seen = atomic_load(&a->written_end[buf]);
    while (end > seen && !atomic_compare_exchange_weak(&a->written_end[buf], &seen, end))
        ;
}

static void scratch_load(cpu_attn *a, int buf, size_t offset, void *dst, size_t n)
{
    size_t at = a->buf_off[buf] + offset;
    if (at > a->region_bytes || n > a->region_bytes - at) {
        atomic_fetch_add(&a->out_of_region, 1);
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, a->region + at, n);
}

/* Slots [s0, s1) of logical page `page_index` of a sequence, converted to fp32
 * rows [slot - s0][D]: K from [D/8, page, 8], V from [D, page]. A page block of
 * one kv head is contiguous, so this reads memory in order. */
static void gather_page(const ppb_workload *w, int seq, int kv_head, int page_index, int s0, int s1,
                        float *k_rows, float *v_rows)
{
    const ppb_shape *s = &w->c->shape;
    int block = w->block_table[(size_t)seq * (size_t)w->max_blocks_per_seq + (size_t)page_index];
    int dim = s->head_dim, dtype = s->dtype, page = s->page_size;
    if (k_rows) {
        const uint16_t *kb = w->k_cache + ppb_kcache_index(w, block, kv_head, 0, 0);
        for (int g = 0; g < dim / 8; g++)
            for (int slot = s0; slot < s1; slot++) {
                const uint16_t *src = kb + ((size_t)g * page + (size_t)slot) * 8;
                float *dst = k_rows + (size_t)(slot - s0) * dim + g * 8;
                for (int x = 0; x < 8; x++)
                    dst[x] = to_f32(src[x], dtype);
            }
    }
    if (v_rows) {
        const uint16_t *vb = w->v_cache + ppb_vcache_index(w, block, kv_head, 0, 0);
        for (int d = 0; d < dim; d++)
            for (int slot = s0; slot < s1; slot++)
                v_rows[(size_t)(slot - s0) * dim + d] = to_f32(vb[(size_t)d * page + (size_t)slot], dtype);
    }
}

/* Logits of keys [start, end) of a sequence for one query row, scaled, with
 * the sliding window applied (masked keys get -inf). Walks the range a page
 * at a time, as the kernel's warps do. Returns the max. */
static float decode_logits(const ppb_workload *w, int seq, int kv_head, const float *q, int start,
                           int end, float *logits, float *k_rows)
{
    const ppb_shape *s = &w->c->shape;
    int dim = s->head_dim, page = s->page_size;
    int query_pos = w->context_lens[seq] - 1;
    float sm_scale = 1.0f / sqrtf((float)dim);
    float max_logit = -FLT_MAX;
    for (int t = start; t < end;) {
        int s0 = t % page, s1 = end - t < page - s0 ? s0 + (end - t) : page;
        int first_visible = t; /* keys before it are outside the window */
        if (s->sliding_window > 0 && query_pos - s->sliding_window + 1 > first_visible)
            first_visible = query_pos - s->sliding_window + 1;
        if (first_visible < t + (s1 - s0))
            gather_page(w, seq, kv_head, t / page, s0, s1, k_rows, NULL);
        for (int n = 0; n < s1 - s0; n++, t++) {
            if (t < first_visible) {
                logits[t - start] = -INFINITY;
                continue;
            }
            float qk = sm_scale * dot_f32(q, k_rows + (size_t)n * dim, dim);
            logits[t - start] = qk;
            if (qk > max_logit)
                max_logit = qk;
        }
    }
    return max_logit;
}

/* Softmax numerators over the range in place; returns their sum. */
static float decode_exp(float *logits, int n, float max_logit)
{
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        float e = logits[i] == -INFINITY ? 0.0f : expf(logits[i] - max_logit);
        logits[i] = e;
        sum += e;
    }
    return sum;
}

/* acc = sum_t to_storage(prob_t) V_t: vLLM converts the probabilities to the
 * cache dtype before the dot with V and accumulates in fp32. */
static void decode_weighted_v(const ppb_workload *w, int seq, int kv_head, const float *probs,
                              int start, int end, float *acc, float *v_rows)
{
    const ppb_shape *s = &w->c->shape;
    int dim = s->head_dim, page = s->page_size;
    memset(acc, 0, sizeof(float) * (size_t)dim);
    for (int t = start; t < end;) {
        int s0 = t % page, s1 = end - t < page - s0 ? s0 + (end - t) : page;
        int any = 0;
        for (int n = 0; n < s1 - s0 && !any; n++)
            any = probs[t - start + n] != 0.0f;
        if (any)
            gather_page(w, seq, kv_head, t / page, s0, s1, NULL, v_rows);
        for (int n = 0; n < s1 - s0; n++, t++) {
            float p = round_storage(probs[t - start], s->dtype);
            if (p == 0.0f)
                continue;
            const float *v = v_rows + (size_t)n * dim;
            for (int d = 0; d < dim; d++)
                acc[d] += p * v[d];
        }
    }
}

/* Per-worker decode scratch: q and acc (D each), K and V of one page (page x D
 * each), then the logits. */
static size_t decode_scratch_floats(const ppb_shape *s, size_t logits)
{
    return 2 * (size_t)s->head_dim + 2 * (size_t)s->page_size * (size_t)s->head_dim + logits;
}

static void decode_scratch(cpu_attn *a, int worker, float **q, float **k_rows, float **v_rows,
                           float **acc, float **logits)
{
    size_t dim = (size_t)a->c->shape.head_dim, page = (size_t)a->c->shape.page_size;
    float *base = worker_scratch(a, worker);
    *q = base;
    *acc = base + dim;
    *k_rows = base + 2 * dim;
    *v_rows = *k_rows + page * dim;
    *logits = *v_rows + page * dim;
}

static void load_query(const ppb_workload *w, int seq, int head, float *q)
{
    const ppb_shape *s = &w->c->shape;
    const uint16_t *src = w->q + ((size_t)seq * s->num_heads + head) * s->head_dim;
    for (int d = 0; d < s->head_dim; d++)
        q[d] = to_f32(src[d], s->dtype);
}

typedef struct decode_ctx {
    cpu_attn *a;
    uint16_t *out;
} decode_ctx;

/* v1: grid (heads, seqs); the whole sequence in one pass. */
static void decode_v1_block(void *ctxp, long item, int worker)
{
    decode_ctx *ctx = ctxp;
    cpu_attn *a = ctx->a;
    const ppb_workload *w = a->w;
    const ppb_shape *s = &a->c->shape;
    int seq = (int)(item / s->num_heads), head = (int)(item % s->num_heads);
    int kv_head = head / (s->num_heads / s->num_kv_heads);
    int seq_len = w->context_lens[seq];
    float *q, *k_row, *v_row, *acc, *logits;
    decode_scratch(a, worker, &q, &k_row, &v_row, &acc, &logits);
    load_query(w, seq, head, q);
    float max_logit = decode_logits(w, seq, kv_head, q, 0, seq_len, logits, k_row);
    float exp_sum = decode_exp(logits, seq_len, max_logit);
    float inv_sum = 1.0f / (exp_sum + SOFTMAX_EPS);
    for (int t = 0; t < seq_len; t++)
        logits[t] *= inv_sum;
    decode_weighted_v(w, seq, kv_head, logits, 0, seq_len, acc, v_row);
    uint16_t *dst = ctx->out + ((size_t)seq * s->num_heads + head) * s->head_dim;
    for (int d = 0; d < s->head_dim; d++)
        dst[d] = to_storage(acc[d], s->dtype);
}

/* v2, first kernel: block (head, seq, partition). Writes max_logits and
 * exp_sums, then the normalised partial output, at the kernel's indices
 * ((seq * heads + head) * parts_kernel + partition). A fully masked partition
 * (sliding window) writes max -FLT_MAX, sum 0 and zeros: weight 0 in the reduce. */
static void decode_v2_partition(cpu_attn *a, int seq, int head, int part, int worker)
{
    const ppb_workload *w = a->w;
    const ppb_shape *s = &a->c->shape;
    int seq_len = w->context_lens[seq];
    int start = part * a->part_size;
    if (start >= seq_len)
        return; /* the kernel's early exit for partitions past this sequence */
    int end = start + a->part_size < seq_len ? start + a->part_size : seq_len;
    int dim = s->head_dim;
    int kv_head = head / (s->num_heads / s->num_kv_heads);
    float *q, *k_row, *v_row, *acc, *logits;
    decode_scratch(a, worker, &q, &k_row, &v_row, &acc, &logits);
    load_query(w, seq, head, q);
    float max_logit = decode_logits(w, seq, kv_head, q, start, end, logits, k_row);
    float exp_sum = decode_exp(logits, end - start, max_logit);
    float inv_sum = 1.0f / (exp_sum + SOFTMAX_EPS);
    for (int t = 0; t < end - start; t++)
        logits[t] *= inv_sum;
    decode_weighted_v(w, seq, kv_head, logits, start, end, acc, v_row);

    size_t index = ((size_t)seq * s->num_heads + head) * (size_t)a->parts_kernel + (size_t)part;
    scratch_store(a, BUF_MAX_LOGITS, index * sizeof(float), &max_logit, sizeof(float));
    scratch_store(a, BUF_EXP_SUMS, index * sizeof(float), &exp_sum, sizeof(float));
    uint16_t row[256];
    for (int d = 0; d < dim; d++)
        row[d] = to_storage(acc[d], s->dtype);
    scratch_store(a, BUF_TMP_OUT, index * (size_t)dim * sizeof(uint16_t), row,
                  (size_t)dim * sizeof(uint16_t));
}

static void decode_v2_partition_item(void *ctxp, long item, int worker)
{
    decode_ctx *ctx = ctxp;
    cpu_attn *a = ctx->a;
    long heads = a->c->shape.num_heads;
    long unit = item / a->parts_kernel;
    int part = (int)(item % a->parts_kernel);
    decode_v2_partition(a, (int)(unit / heads), (int)(unit % heads), part, worker);
}

/* v2, second kernel (vLLM paged_attention_v2_reduce_kernel): grid (heads, seqs). */
static void decode_v2_reduce(void *ctxp, long item, int worker)
{
    decode_ctx *ctx = ctxp;
    cpu_attn *a = ctx->a;
    const ppb_workload *w = a->w;
    const ppb_shape *s = &a->c->shape;
    int dim = s->head_dim;
    int seq = (int)(item / s->num_heads);
    int seq_len = w->context_lens[seq];
    int n_parts = (seq_len + a->part_size - 1) / a->part_size;
    size_t first = (size_t)item * (size_t)a->parts_kernel;
    uint16_t *dst = ctx->out + (size_t)item * dim;
    uint16_t row[256];
    if (n_parts == 1) { /* vLLM copies the single partial output */
        scratch_load(a, BUF_TMP_OUT, first * dim * sizeof(uint16_t), dst, (size_t)dim * sizeof(uint16_t));
        return;
    }
    float *weights = worker_scratch(a, worker); /* n_parts floats */
    float *acc = weights + a->parts_kernel;
    float max_logit = -FLT_MAX;
    for (int p = 0; p < n_parts; p++) {
        float m;
        scratch_load(a, BUF_MAX_LOGITS, (first + p) * sizeof(float), &m, sizeof m);
        weights[p] = m; /* max logits for now */
        if (m > max_logit)
            max_logit = m;
    }
    float global_exp_sum = 0.0f;
    for (int p = 0; p < n_parts; p++) {
        float e;
        scratch_load(a, BUF_EXP_SUMS, (first + p) * sizeof(float), &e, sizeof e);
        weights[p] = e * expf(weights[p] - max_logit);
        global_exp_sum += weights[p];
    }
    float inv = 1.0f / (global_exp_sum + SOFTMAX_EPS);
    memset(acc, 0, sizeof(float) * (size_t)dim);
    for (int p = 0; p < n_parts; p++) {
        scratch_load(a, BUF_TMP_OUT, (first + p) * dim * sizeof(uint16_t), row,
                     (size_t)dim * sizeof(uint16_t));
        for (int d = 0; d < dim; d++)
            acc[d] += to_f32(row[d], s->dtype) * weights[p] * inv;
    }
    for (int d = 0; d < dim; d++)
        dst[d] = to_storage(acc[d], s->dtype);
}

static int run_decode(cpu_attn *a, uint16_t *out, ppb_err *err)
{
    const ppb_shape *s = &a->c->shape;
    long units = (long)a->w->batch * s->num_heads;
    decode_ctx ctx = {.a = a, .out = out};
    if (a->c->config.version == 1) {
        ppb_parallel_for(units, decode_v1_block, &ctx);
        return PPB_OK;
    }
    if (a->packed) {
        /* Overlapping writes from different blocks: run the grid in one thread
         * in launch order (x = head fastest, then seq, then partition) so the
         * corruption is the same on every run. */
        for (long long p = 0; p < a->parts_kernel; p++)
            for (int seq = 0; seq < a->w->batch; seq++)
                for (int h = 0; h < s->num_heads; h++)
                    decode_v2_partition(a, seq, h, (int)p, 0);
    } else {
        ppb_parallel_for((long)(units * a->parts_kernel), decode_v2_partition_item, &ctx);
    }
    ppb_parallel_for(units, decode_v2_reduce, &ctx);
    if (atomic_load(&a->out_of_region))
        return ppb_fail(err, PPB_EFAIL,
                        "cpu paged attention v2: %d scratch accesses would have left the allocation "
                        "(guard zone sized too small)",
                        atomic_load(&a->out_of_region));
    return PPB_OK;
}

/* ==== plan ========================================================================= */

static int plan_v2_scratch(cpu_attn *a, ppb_err *err)
{
    const ppb_shape *s = &a->c->shape;
    const ppb_config *k = &a->c->config;
    a->part_size = k->partition_size;
    a->parts_kernel = (long long)ppb_decode_num_partitions(a->max_seq_len, k->partition_size);
    a->parts_host = (long long)ppb_decode_num_partitions(a->max_seq_len, ppb_case_host_partition_size(a->c));
    size_t units = (size_t)a->w->batch * (size_t)s->num_heads;
    size_t elem[N_BUFS] = {(size_t)s->head_dim * sizeof(uint16_t), sizeof(float), sizeof(float)};
    size_t kernel_bytes[N_BUFS];
    for (int b = 0; b < N_BUFS; b++) {
        a->buf_bytes[b] = units * (size_t)a->parts_host * elem[b];
        kernel_bytes[b] = units * (size_t)a->parts_kernel * elem[b]; /* the most the kernel can touch */
    }
    size_t at = 0;
    if (a->packed) {
        for (int b = 0; b < N_BUFS; b++) {
            a->buf_off[b] = at;
            at += a->buf_bytes[b];
            a->guard_bytes[b] = 0;
        }
        size_t reach = at;
        for (int b = 0; b < N_BUFS; b++)
            if (a->buf_off[b] + kernel_bytes[b] > reach)
                reach = a->buf_off[b] + kernel_bytes[b];
        a->guard_bytes[N_BUFS - 1] = reach - at + GUARD_MIN; /* tail guard only */
        at = reach + GUARD_MIN;
    } else {
        for (int b = 0; b < N_BUFS; b++) {
            a->buf_off[b] = at;
            size_t over = kernel_bytes[b] > a->buf_bytes[b] ? kernel_bytes[b] - a->buf_bytes[b] : 0;
            a->guard_bytes[b] = (over + GUARD_MIN + 63) / 64 * 64;
            at += a->buf_bytes[b] + a->guard_bytes[b];
        }
    }
    a->region_bytes = at;
    a->region = malloc(at);
    if (!a->region)
        return ppb_fail(err, PPB_ENOMEM,
                        "cpu paged attention v2: out of host memory for the scratch buffers (%zu B)", at);
    cpu_attn_reset_scratch(a);
    return PPB_OK;
}

int cpu_attn_create(cpu_attn **out, const ppb_case *c, const ppb_workload *w, int packed_scratch, int threads,
                    ppb_err *err)
{
    *out = NULL;
    if (!w->q)
        return ppb_fail(err, PPB_EINPUT, "cpu attention: the workload has no tensors");
    if (c->kernel != w->c->kernel || memcmp(&c->shape, &w->c->shape, sizeof c->shape) != 0)
        return ppb_fail(err, PPB_EINPUT,
                        "cpu attention: the workload was built for another kernel or shape");
    const ppb_shape *s = &c->shape;
    if (s->head_dim > 256 || s->head_dim % 8)
        return ppb_fail(err, PPB_EINPUT, "cpu attention: head_dim %d not supported", s->head_dim);
    cpu_attn *a = calloc(1, sizeof *a);
    if (!a)
        return ppb_fail(err, PPB_ENOMEM, "cpu attention: out of host memory");
    a->w = w;
    a->c = c;
    a->threads = threads > 0 ? threads : 0;
    a->n_workers = cpu_attn_launch_threads(a->threads);
    for (int b = 0; b < w->batch; b++)
        if (w->context_lens[b] > a->max_seq_len)
            a->max_seq_len = w->context_lens[b];
    int rc = PPB_OK;
    if (c->kernel == PPB_PREFIX_PREFILL) {
        a->scratch_floats = prefill_scratch_floats(c->config.block_m, c->config.block_n, s->head_dim);
    } else {
        size_t logits = c->config.version == 1 ? (size_t)a->max_seq_len : (size_t)c->config.partition_size;
        a->scratch_floats = decode_scratch_floats(s, logits);
        if (c->config.version == 2) {
            a->packed = packed_scratch;
            rc = plan_v2_scratch(a, err);
            if (rc)
                goto fail;
            /* the reduce needs parts_kernel weights + D accumulators */
            size_t reduce = (size_t)a->parts_kernel + (size_t)s->head_dim;
            if (reduce > a->scratch_floats)
                a->scratch_floats = reduce;
        }
    }
    a->scratch = malloc(sizeof(float) * a->scratch_floats * (size_t)a->n_workers);
    if (!a->scratch) {
        rc = ppb_fail(err, PPB_ENOMEM, "cpu attention: out of host memory for worker scratch");
        goto fail;
    }
    *out = a;
    return PPB_OK;
fail:
    cpu_attn_destroy(a);
    return rc;
}

void cpu_attn_destroy(cpu_attn *a)
{
    if (!a)
        return;
    free(a->region);
    free(a->scratch);
    free(a);
}

int cpu_attn_run(cpu_attn *a, uint16_t *out, ppb_err *err)
{
    /* PPBENCH_THREADS may have grown since create: every worker index needs scratch */
    int workers = cpu_attn_launch_threads(a->threads);
    if (workers > a->n_workers) {
        float *more = realloc(a->scratch, sizeof(float) * a->scratch_floats * (size_t)workers);
        if (!more)
            return ppb_fail(err, PPB_ENOMEM, "cpu attention: out of host memory for worker scratch");
        a->scratch = more;
        a->n_workers = workers;
    }
    atomic_store(&a->top_worker, 0);
    int before = ppb_parallel_limit_this_thread(workers);
    int rc = a->c->kernel == PPB_PREFIX_PREFILL ? run_prefill(a, out, err) : run_decode(a, out, err);
    ppb_parallel_limit_this_thread(before);
    return rc;
}

int cpu_attn_threads_used(const cpu_attn *a) { return atomic_load(&((cpu_attn *)a)->top_worker) + 1; }

void cpu_attn_reset_scratch(cpu_attn *a)
{
    if (!a->region)
        return;
    memset(a->region, CANARY_BYTE, a->region_bytes);
    for (int b = 0; b < N_BUFS; b++)
        atomic_store(&a->written_end[b], 0);
    atomic_store(&a->out_of_region, 0);
}

void cpu_attn_overrun(const cpu_attn *a, ppb_overrun *ov)
{
    memset(ov, 0, sizeof *ov);
    if (!a->region)
        return;
    long long past[N_BUFS];
    for (int b = 0; b < N_BUFS; b++) {
        long long end = atomic_load(&((cpu_attn *)a)->written_end[b]);
        past[b] = end > (long long)a->buf_bytes[b] ? end - (long long)a->buf_bytes[b] : 0;
    }
    ov->tmp_out_bytes = past[BUF_TMP_OUT];
    ov->exp_sums_bytes = past[BUF_EXP_SUMS];
    ov->max_logits_bytes = past[BUF_MAX_LOGITS];
    for (int b = 0; b < N_BUFS; b++) {
        const unsigned char *g = a->region + a->buf_off[b] + a->buf_bytes[b];
        for (size_t i = 0; i < a->guard_bytes[b]; i++)
            ov->guard_bytes_changed += g[i] != CANARY_BYTE;
    }
    ov->detected = past[0] || past[1] || past[2] || ov->guard_bytes_changed;
}

void cpu_attn_scratch_info(const cpu_attn *a, cpu_scratch_info *info)
{
    memset(info, 0, sizeof *info);
    if (!a->region)
        return;
    info->used = 1;
    info->packed = a->packed;
    info->host_partitions = a->parts_host;
    info->kernel_partitions = a->parts_kernel;
    info->tmp_out_bytes = a->buf_bytes[BUF_TMP_OUT];
    info->exp_sums_bytes = a->buf_bytes[BUF_EXP_SUMS];
    info->max_logits_bytes = a->buf_bytes[BUF_MAX_LOGITS];
    info->tmp_out_guard = a->guard_bytes[BUF_TMP_OUT];
    info->exp_sums_guard = a->guard_bytes[BUF_EXP_SUMS];
    info->max_logits_guard = a->guard_bytes[BUF_MAX_LOGITS];
    info->region_bytes = a->region_bytes;
}
