/* example-cpu: the reference plugin for plugin authors (kernels/ppb_kernel_abi.h).
 *
 * Prefix prefill and paged attention v1 / v2 on the CPU backend, written to be
 * read rather than to be fast: one query row at a time, keys in order, fp32
 * maths with an online softmax, fp16 / bf16 storage as uint16_t bits. The
 * tensor layouts are vLLM's, as kernels/attention_args.h describes them.
 *
 * Everything arrives as arguments, the context `open` made included; the
 * only file-scope objects are the constant tables at the end. `launch`
 * neither allocates nor prints. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv_append.h"
#include "ppb_kernel_abi.h"

#define MAX_HEAD_DIM 256

/* ---- messages --------------------------------------------------------------- */

/* Fill the caller's one-line buffer and return `rc`. */
static int say(char *why, size_t why_len, int rc, const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ---- fp16 / bf16 storage ---------------------------------------------------- */

static uint32_t float_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float fp16_to_float(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    int man = h & 0x3ff;
    float mag;
    if (exp == 0)
        mag = ldexpf((float)man, -24); /* zero and subnormals: man x 2^-24 */
    else if (exp == 31)
        mag = man ? NAN : INFINITY;
    else
        mag = ldexpf((float)(man | 0x400), exp - 25);
    return (h & 0x8000) ? -mag : mag;
}

/* IEEE half, round to nearest even, in integer arithmetic so the result does
 * not depend on the floating-point environment's rounding mode. */
static uint16_t float_to_fp16(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t abs = x & 0x7fffffff;
    if (abs > 0x7f800000)
        return sign | 0x7e00; /* NaN stays NaN (quiet) */
    if (abs >= 0x477ff000)
        return sign | 0x7c00; /* >= 65520 (halfway past 65504) and inf: inf */
    if (abs >= 0x38800000) {  /* >= 2^-14: a normal half */
        uint32_t h = (abs - 0x38000000) >> 13; /* rebias the exponent by 127 - 15 */
        uint32_t rem = abs & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
            h++; /* a carry into the exponent is the correct next value */
        return sign | (uint16_t)h;
    }
    /* Subnormal half: the value in units of 2^-24, rounded. */
    int e = (int)(abs >> 23);
    if (e < 102)
        return sign; /* below half the smallest subnormal (float subnormals too) */
    uint32_t m = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - e; /* 14 .. 24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++; /* may reach 0x400, the smallest normal: also correct */
    return sign | (uint16_t)q;
}

/* bf16 is the top half of a float. */
static float bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40); /* NaN: keep it NaN (rounding could make it inf) */
    x += 0x7fff + ((x >> 16) & 1);            /* round to nearest even; overflow gives inf */
    return (uint16_t)(x >> 16);
}

static float load(const void *base, size_t i, int dtype)
{
    uint16_t h = ((const uint16_t *)base)[i];
    return dtype == PPB_KDTYPE_FP16 ? fp16_to_float(h) : bf16_to_float(h);
}

static void store(void *base, size_t i, float f, int dtype)
{
    ((uint16_t *)base)[i] = dtype == PPB_KDTYPE_FP16 ? float_to_fp16(f) : float_to_bf16(f);
}

/* ---- one query row: online softmax over keys visited in any order ----------- */

typedef struct softmax_row {
    float max, sum;
    float acc[MAX_HEAD_DIM]; /* sum of exp(logit - max) * v */
} softmax_row;

static void row_start(softmax_row *r, int dim)
{
    r->max = -INFINITY;
    r->sum = 0.0f;
    for (int d = 0; d < dim; d++)
        r->acc[d] = 0.0f;
}

static void row_add(softmax_row *r, float logit, const float *v, int dim)
{
    if (logit > r->max) { /* a new maximum: rescale what was summed so far */
        float scale = expf(r->max - logit); /* 0 for the first key */
        r->sum *= scale;
        for (int d = 0; d < dim; d++)
            r->acc[d] *= scale;
        r->max = logit;
    }
    float p = expf(logit - r->max);
    r->sum += p;
    for (int d = 0; d < dim; d++)
        r->acc[d] += p * v[d];
}

static float dot(const float *a, const float *b, int dim)
{
    float s = 0.0f;
    for (int d = 0; d < dim; d++)
        s += a[d] * b[d];
    return s;
}

/* Key and value `pos` of a sequence from the paged caches, in vLLM's layout
 * k_cache [blocks, kv_heads, dim / 8, page, 8], v_cache [blocks, kv_heads, dim, page],
 * or, built with -DREADS_FLASH_LAYOUT (example-cpu-flash), the FLASH layout
 * [blocks, page, kv_heads, dim] of both (kernels/attention_args.h). */
static void load_cached(const void *k_cache, const void *v_cache, const int32_t *block_row, int pos,
                        int kv_head, int num_kv_heads, int dim, int page, int dtype, float *k, float *v)
{
    size_t block = (size_t)block_row[pos / page];
    size_t slot = (size_t)(pos % page);
#ifdef READS_FLASH_LAYOUT
    size_t base = ((block * (size_t)page + slot) * (size_t)num_kv_heads + (size_t)kv_head) * (size_t)dim;
    for (int d = 0; d < dim; d++) {
        k[d] = load(k_cache, base + (size_t)d, dtype);
        v[d] = load(v_cache, base + (size_t)d, dtype);
    }
#else
    size_t head_base = (block * (size_t)num_kv_heads + (size_t)kv_head) * (size_t)dim * (size_t)page;
    for (int d = 0; d < dim; d++) {
        k[d] = load(k_cache, head_base + ((size_t)(d / 8) * (size_t)page + slot) * 8 + (size_t)(d % 8), dtype);
        v[d] = load(v_cache, head_base + (size_t)d * (size_t)page + slot, dtype);
    }
#endif
}

/* First key position a query at `pos` sees: with a sliding window W, keys at
 * positions > pos - W. */
static int first_visible(int pos, int window)
{
    return window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
}

/* ---- the context ------------------------------------------------------------- */

/* What `open` hands back and every later call receives as `ctx`. This plugin
 * needs little: the device it was opened for. A GPU plugin keeps its loaded
 * modules and the like here, so that nothing lives at file scope and two
 * opens share nothing. */
/* STAGES_NEW_TOKENS: a staged cache its `stage` built (kv_append.h) and the
 * inputs it was built from. One per input set: a proposal prepares each side
 * in several sessions, each on its own copy of the inputs, then alternates
 * their launches without staging again; a launch finds its set by the
 * pointers, and one on inputs no stage saw fails. */
typedef struct staged {
    uint16_t *k, *v;
    int32_t *table;
    int mbps;
    const void *from_k, *from_k_cache;
    const int32_t *from_table;
} staged;
enum { STAGED_SETS = 8 };

typedef struct example_ctx {
    ppbk_device dev;
    staged sets[STAGED_SETS];
    int next_set; /* the one a stage on new inputs takes (round robin) */
} example_ctx;

static void free_staged(staged *st)
{
    free(st->k), free(st->v), free(st->table);
    memset(st, 0, sizeof *st);
}

#ifdef STAGES_NEW_TOKENS
/* The set staged from these inputs, or NULL. */
static const staged *staged_for(const example_ctx *x, const ppb_prefill_args *a)
{
    for (int i = 0; i < STAGED_SETS; i++)
        if (x->sets[i].k && x->sets[i].from_k == a->k && x->sets[i].from_k_cache == a->k_cache &&
            x->sets[i].from_table == a->block_table)
            return &x->sets[i];
    return NULL;
}
#endif

static int example_open(const ppbk_device *dev, void **ctx, char *why, size_t why_len)
{
    if (!dev || dev->backend != PPBK_BACKEND_CPU)
        return say(why, why_len, PPBK_FAILED, "example-cpu runs on the CPU backend only");
    example_ctx *x = malloc(sizeof *x);
    if (!x)
        return say(why, why_len, PPBK_FAILED, "example-cpu: out of memory");
    memset(x, 0, sizeof *x);
    x->dev = *dev;
    *ctx = x;
    return PPBK_OK;
}

static void example_close(void *ctx)
{
    example_ctx *x = ctx;
    for (int i = 0; x && i < STAGED_SETS; i++)
        free_staged(&x->sets[i]);
    free(ctx);
}

/* ---- refusals (from the shape and config alone) -------------------------------- */

static int pow2_upto_128(int x)
{
    return x > 0 && x <= 128 && (x & (x - 1)) == 0;
}

/* What both kernels need: the context, this backend, a dtype, a head_dim, heads that group. */
static int refuse_common(const example_ctx *x, const ppbk_device *dev, int dtype, int head_dim, int page_size,
                         int window, int shape_head_dim, int shape_page_size, int shape_window, int num_heads,
                         int num_kv_heads, char *why, size_t why_len)
{
    if (!x)
        return say(why, why_len, PPBK_REFUSED, "example-cpu was called without the context its open returned");
    if (!dev || dev->backend != PPBK_BACKEND_CPU)
        return say(why, why_len, PPBK_REFUSED, "example-cpu runs on the CPU backend only");
    if (dev->device_index != x->dev.device_index)
        return say(why, why_len, PPBK_REFUSED, "example-cpu was opened for device %d, not %d", x->dev.device_index,
                   dev->device_index);
    if (dtype != PPB_KDTYPE_FP16 && dtype != PPB_KDTYPE_BF16)
        return say(why, why_len, PPBK_REFUSED, "dtype %d is neither fp16 nor bf16", dtype);
    if (head_dim != 64 && head_dim != 128 && head_dim != 256)
        return say(why, why_len, PPBK_REFUSED, "head_dim %d: example-cpu handles 64, 128 and 256", head_dim);
    if (page_size < 1)
        return say(why, why_len, PPBK_REFUSED, "page_size %d < 1", page_size);
    /* The config is what the kernel is built for; a shape that disagrees would be computed wrong. */
    if (shape_head_dim != head_dim || shape_page_size != page_size || shape_window != window)
        return say(why, why_len, PPBK_REFUSED,
                   "shape (head_dim %d, page_size %d, sliding_window %d) differs from the config (%d, %d, %d)",
                   shape_head_dim, shape_page_size, shape_window, head_dim, page_size, window);
    if (num_heads < 1 || num_kv_heads < 1 || num_heads % num_kv_heads)
        return say(why, why_len, PPBK_REFUSED, "num_heads %d is not a multiple of num_kv_heads %d", num_heads,
                   num_kv_heads);
    return PPBK_OK;
}

static int prefill_refuse(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                          const ppb_prefill_args *shape, char *why, size_t why_len)
{
    int rc = refuse_common(ctx, dev, cfg->dtype, cfg->head_dim, cfg->page_size, cfg->sliding_window, shape->head_dim,
                           shape->page_size, shape->sliding_window, shape->num_heads, shape->num_kv_heads, why,
                           why_len);
    if (rc)
        return rc;
    /* This code ignores the tiling knobs; refusing odd ones shows what a knob-based refusal looks like. */
    if (!pow2_upto_128(cfg->block_m) || !pow2_upto_128(cfg->block_n) || !pow2_upto_128(cfg->num_warps))
        return say(why, why_len, PPBK_REFUSED,
                   "block_m %d, block_n %d, num_warps %d: each must be a power of two <= 128", cfg->block_m,
                   cfg->block_n, cfg->num_warps);
    /* A loop on the CPU has no software pipeline: a depth it cannot honour is refused, not ignored. */
    if (cfg->num_stages != 0)
        return say(why, why_len, PPBK_REFUSED, "num_stages %d: this implementation has no pipelining stages "
                   "(0 only)", cfg->num_stages);
    return PPBK_OK;
}

static int decode_refuse(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                         const ppb_decode_args *shape, int version, char *why, size_t why_len)
{
    int rc = refuse_common(ctx, dev, cfg->dtype, cfg->head_dim, cfg->page_size, cfg->sliding_window, shape->head_dim,
                           shape->page_size, shape->sliding_window, shape->num_heads, shape->num_kv_heads, why,
                           why_len);
    if (rc)
        return rc;
    if (cfg->version != version)
        return say(why, why_len, PPBK_REFUSED, "config version %d given to the v%d entry", cfg->version, version);
    if (cfg->num_threads < 32 || cfg->num_threads % 32)
        return say(why, why_len, PPBK_REFUSED, "num_threads %d is not a positive multiple of 32", cfg->num_threads);
    if (version == 2) {
        if (cfg->partition_size < 1)
            return say(why, why_len, PPBK_REFUSED, "partition_size %d < 1", cfg->partition_size);
        /* The scratch stride must hold every partition of the longest sequence. */
        long long need = ((long long)shape->max_seq_len + cfg->partition_size - 1) / cfg->partition_size;
        if (shape->max_num_partitions < need)
            return say(why, why_len, PPBK_REFUSED,
                       "max_num_partitions %d < %lld partitions of %d for max_seq_len %d",
                       shape->max_num_partitions, need, cfg->partition_size, shape->max_seq_len);
    }
    return PPBK_OK;
}

static int decode_v1_refuse(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                            const ppb_decode_args *shape, char *why, size_t why_len)
{
    return decode_refuse(ctx, dev, cfg, shape, 1, why, why_len);
}

static int decode_v2_refuse(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                            const ppb_decode_args *shape, char *why, size_t why_len)
{
    return decode_refuse(ctx, dev, cfg, shape, 2, why, why_len);
}

/* ---- prefix prefill ------------------------------------------------------------ */

static int prefill_launch(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                          const ppb_prefill_args *a, void *stream, char *why, size_t why_len)
{
    (void)stream; /* NULL on the CPU: the launch is done when it returns */
    int rc = prefill_refuse(ctx, dev, cfg, a, why, why_len);
    if (rc)
        return rc;
    int dim = a->head_dim, group = a->num_heads / a->num_kv_heads, dtype = cfg->dtype;
    /* Checked before anything is written: contexts must fit the block table. */
    for (int b = 0; b < a->batch; b++)
        if (a->context_lens[b] > a->max_blocks_per_seq * a->page_size)
            return say(why, why_len, PPBK_FAILED, "sequence %d: context_len %d exceeds %d blocks of %d", b,
                       a->context_lens[b], a->max_blocks_per_seq, a->page_size);

    const void *k_cache = a->k_cache, *v_cache = a->v_cache;
    const int32_t *table = a->block_table;
    int mbps = a->max_blocks_per_seq;
#ifdef STAGES_NEW_TOKENS
    /* Every key from the cache its stage built: context and new tokens alike. */
    const staged *st = staged_for(ctx, a);
    if (!st)
        return say(why, why_len, PPBK_FAILED, "%s: launch on inputs its stage did not see", PLUGIN_NAME);
    k_cache = st->k, v_cache = st->v, table = st->table, mbps = st->mbps;
#endif
    float q[MAX_HEAD_DIM], k[MAX_HEAD_DIM], v[MAX_HEAD_DIM];
    softmax_row row;
    for (int b = 0; b < a->batch; b++) {
        int ctx_len = a->context_lens[b], start = a->start_loc[b];
        const int32_t *block_row = table + (size_t)b * (size_t)mbps;
        int cached = ctx_len; /* positions read through the block table */
#ifdef STAGES_NEW_TOKENS
        cached += a->query_lens[b]; /* the new tokens too, in the staged cache */
#endif
        for (int i = 0; i < a->query_lens[b]; i++) {
            size_t token = (size_t)start + (size_t)i;
            int pos = ctx_len + i; /* absolute position: the causal mask is bottom-right aligned */
            for (int h = 0; h < a->num_heads; h++) {
                int kv_head = h / group;
                for (int d = 0; d < dim; d++)
                    q[d] = load(a->q, (token * (size_t)a->num_heads + (size_t)h) * (size_t)dim + (size_t)d, dtype);
                row_start(&row, dim);
                for (int j = first_visible(pos, a->sliding_window); j <= pos; j++) {
                    if (j < cached) { /* a cached token, through the block table */
                        load_cached(k_cache, v_cache, block_row, j, kv_head, a->num_kv_heads, dim, a->page_size,
                                    dtype, k, v);
                    } else { /* a new token: k, v [tokens, kv_heads, dim] */
                        size_t at = (((size_t)start + (size_t)(j - ctx_len)) * (size_t)a->num_kv_heads +
                                     (size_t)kv_head) * (size_t)dim;
                        for (int d = 0; d < dim; d++) {
                            k[d] = load(a->k, at + (size_t)d, dtype);
                            v[d] = load(a->v, at + (size_t)d, dtype);
                        }
                    }
                    row_add(&row, a->sm_scale * dot(q, k, dim), v, dim);
                }
                size_t out = (token * (size_t)a->num_heads + (size_t)h) * (size_t)dim;
                for (int d = 0; d < dim; d++)
                    store(a->out, out + (size_t)d, row.acc[d] / row.sum, dtype); /* sum >= 1: the query sees itself */
            }
        }
    }
    return PPBK_OK;
}

#ifdef STAGES_NEW_TOKENS
/* ---- the staged cache (example-cpu-staged) -------------------------------------- */

/* What vLLM's cache write does before a kernel that reads every key from the
 * cache (kv_append.h): ppbench's FLASH-layout cache copied, each sequence's
 * new tokens written after its context. Built by `stage`, outside timing; the
 * launch reads keys only from here. */
typedef struct stage_copy {
    staged *st;
    const ppb_prefill_args *a;
    size_t row_bytes;
} stage_copy;

static int stage_copy_rows(void *user, int from_new, size_t dst_row, size_t src_row, size_t rows)
{
    const stage_copy *c = user;
    const unsigned char *k = from_new ? c->a->k : c->a->k_cache, *v = from_new ? c->a->v : c->a->v_cache;
    memcpy((unsigned char *)c->st->k + dst_row * c->row_bytes, k + src_row * c->row_bytes, rows * c->row_bytes);
    memcpy((unsigned char *)c->st->v + dst_row * c->row_bytes, v + src_row * c->row_bytes, rows * c->row_bytes);
    return 0;
}

static int prefill_stage(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                         const ppb_prefill_args *a, void *stream, char *why, size_t why_len)
{
    (void)dev, (void)cfg, (void)stream;
    example_ctx *x = ctx;
    staged *st = (staged *)staged_for(x, a); /* the same inputs staged again, or the next set */
    if (!st) {
        st = &x->sets[x->next_set];
        x->next_set = (x->next_set + 1) % STAGED_SETS;
    }
    free_staged(st);
    if (a->num_blocks < 1)
        return say(why, why_len, PPBK_FAILED, "%s: stage without the cache's page count", PLUGIN_NAME);
    int mbps = ppb_kv_append_blocks_per_seq(a->context_lens, a->query_lens, a->batch, a->page_size);
    long long pages = ppb_kv_append_num_blocks(a->context_lens, a->query_lens, a->batch, a->page_size, a->num_blocks);
    size_t row_bytes = (size_t)a->num_kv_heads * (size_t)a->head_dim * sizeof(uint16_t);
    size_t bytes = (size_t)pages * (size_t)a->page_size * row_bytes;
    st->k = malloc(bytes), st->v = malloc(bytes);
    st->table = malloc((size_t)a->batch * (size_t)mbps * sizeof(int32_t));
    if (!st->k || !st->v || !st->table) {
        free_staged(st);
        return say(why, why_len, PPBK_FAILED, "%s: out of memory for a staged cache of %zu B", PLUGIN_NAME,
                   2 * bytes);
    }
    st->mbps = mbps;
    ppb_kv_append_block_table(a->block_table, a->max_blocks_per_seq, a->context_lens, a->query_lens, a->batch,
                              a->page_size, a->num_blocks, mbps, st->table);
    stage_copy c = {st, a, row_bytes};
    ppb_kv_append_copies(st->table, mbps, a->context_lens, a->query_lens, a->start_loc, a->batch, a->page_size,
                         a->num_blocks, stage_copy_rows, &c);
    st->from_k = a->k, st->from_k_cache = a->k_cache, st->from_table = a->block_table;
    return PPBK_OK;
}
#define PREFILL_STAGE prefill_stage
#else
#define PREFILL_STAGE NULL
#endif

/* ---- paged attention decode ---------------------------------------------------- */

/* Keys [start, end) of sequence `seq` for query head `head`, the window applied;
 * the query is the sequence's last token. */
static void decode_range(const ppb_decode_args *a, int dtype, int seq, int head, int start, int end,
                         softmax_row *row)
{
    int dim = a->head_dim, kv_head = head / (a->num_heads / a->num_kv_heads);
    int first = first_visible(a->seq_lens[seq] - 1, a->sliding_window);
    const int32_t *block_row = a->block_table + (size_t)seq * (size_t)a->max_blocks_per_seq;
    float q[MAX_HEAD_DIM], k[MAX_HEAD_DIM], v[MAX_HEAD_DIM];
    for (int d = 0; d < dim; d++)
        q[d] = load(a->q, ((size_t)seq * (size_t)a->num_heads + (size_t)head) * (size_t)dim + (size_t)d, dtype);
    row_start(row, dim);
    for (int j = start > first ? start : first; j < end; j++) {
        load_cached(a->k_cache, a->v_cache, block_row, j, kv_head, a->num_kv_heads, dim, a->page_size, dtype, k, v);
        row_add(row, a->sm_scale * dot(q, k, dim), v, dim);
    }
}

/* Checked before anything is written: sequences must fit the block table and,
 * for v2, the partition stride (parts 0 when v1). */
static int decode_check_lengths(const ppb_decode_args *a, int part_size, char *why, size_t why_len)
{
    for (int s = 0; s < a->num_seqs; s++) {
        int len = a->seq_lens[s];
        if (len > a->max_blocks_per_seq * a->page_size)
            return say(why, why_len, PPBK_FAILED, "sequence %d: seq_len %d exceeds %d blocks of %d", s, len,
                       a->max_blocks_per_seq, a->page_size);
        if (part_size && (len + part_size - 1) / part_size > a->max_num_partitions)
            return say(why, why_len, PPBK_FAILED, "sequence %d: seq_len %d needs more than %d partitions of %d", s,
                       len, a->max_num_partitions, part_size);
    }
    return PPBK_OK;
}

static int decode_v1_launch(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                            const ppb_decode_args *a, void *stream, char *why, size_t why_len)
{
    (void)stream;
    int rc = decode_v1_refuse(ctx, dev, cfg, a, why, why_len);
    if (!rc)
        rc = decode_check_lengths(a, 0, why, why_len);
    if (rc)
        return rc;
    int dim = a->head_dim;
    softmax_row row;
    for (int s = 0; s < a->num_seqs; s++)
        for (int h = 0; h < a->num_heads; h++) {
            decode_range(a, cfg->dtype, s, h, 0, a->seq_lens[s], &row);
            float inv = row.sum > 0.0f ? 1.0f / row.sum : 0.0f; /* 0: an empty sequence gives zeros */
            size_t out = ((size_t)s * (size_t)a->num_heads + (size_t)h) * (size_t)dim;
            for (int d = 0; d < dim; d++)
                store(a->out, out + (size_t)d, row.acc[d] * inv, cfg->dtype);
        }
    return PPBK_OK;
}

/* v2: each partition of partition_size tokens writes its max logit, its sum of
 * exponentials and its normalised output at index (seq * heads + head) *
 * max_num_partitions + partition, as vLLM's kernel does; partitions past a
 * sequence's end are not touched. Then the reduce weighs partition p by
 * exp_sums[p] * exp(max_logits[p] - global max). */
static int decode_v2_launch(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                            const ppb_decode_args *a, void *stream, char *why, size_t why_len)
{
    (void)stream;
    int rc = decode_v2_refuse(ctx, dev, cfg, a, why, why_len);
    if (!rc)
        rc = decode_check_lengths(a, cfg->partition_size, why, why_len);
    if (rc)
        return rc;
    int dim = a->head_dim, ps = cfg->partition_size, dtype = cfg->dtype;
    softmax_row row;
    for (int s = 0; s < a->num_seqs; s++)
        for (int h = 0; h < a->num_heads; h++) {
            int len = a->seq_lens[s], parts = (len + ps - 1) / ps;
            size_t first = ((size_t)s * (size_t)a->num_heads + (size_t)h) * (size_t)a->max_num_partitions;
            for (int p = 0; p < parts; p++) {
                int end = (p + 1) * ps < len ? (p + 1) * ps : len;
                decode_range(a, dtype, s, h, p * ps, end, &row);
                /* A partition wholly outside the window: weight 0 in the reduce
                 * (-FLT_MAX rather than -inf, as vLLM starts its max, keeps exp() finite). */
                int empty = row.sum == 0.0f;
                a->max_logits[first + (size_t)p] = empty ? -FLT_MAX : row.max;
                a->exp_sums[first + (size_t)p] = row.sum;
                for (int d = 0; d < dim; d++)
                    store(a->tmp_out, (first + (size_t)p) * (size_t)dim + (size_t)d,
                          empty ? 0.0f : row.acc[d] / row.sum, dtype);
            }
            /* The reduce, reading back what was just stored (tmp_out in storage precision). */
            float global_max = -FLT_MAX, global_sum = 0.0f, acc[MAX_HEAD_DIM] = {0};
            for (int p = 0; p < parts; p++)
                global_max = fmaxf(global_max, a->max_logits[first + (size_t)p]);
            for (int p = 0; p < parts; p++)
                global_sum += a->exp_sums[first + (size_t)p] * expf(a->max_logits[first + (size_t)p] - global_max);
            for (int p = 0; p < parts; p++) {
                float w = a->exp_sums[first + (size_t)p] * expf(a->max_logits[first + (size_t)p] - global_max);
                w = global_sum > 0.0f ? w / global_sum : 0.0f;
                for (int d = 0; d < dim; d++)
                    acc[d] += w * load(a->tmp_out, (first + (size_t)p) * (size_t)dim + (size_t)d, dtype);
            }
            size_t out = ((size_t)s * (size_t)a->num_heads + (size_t)h) * (size_t)dim;
            for (int d = 0; d < dim; d++)
                store(a->out, out + (size_t)d, acc[d], dtype);
        }
    return PPBK_OK;
}

/* ---- a known effect of real work (built with -DEXTRA_WORK_PERCENT=N) ------------ */

#ifdef EXTRA_WORK_PERCENT
/* example-cpu-workN: the same kernels, each launch followed by extra
 * arithmetic for N% of the CPU time the launch itself took. Calibration's
 * usual known effect multiplies the candidate's measured times exactly; this
 * one is work the machine really does, so under load it stretches and
 * scatters as a real slowdown would (an extra 10% of CPU measured 4.6-18% per
 * process on a loaded 2-core runner). Thread CPU time, not wall time, sizes
 * it: the effect stays N% of the kernel's work whatever else runs. */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define PLUGIN_NAME "example-cpu-work" STRINGIFY(EXTRA_WORK_PERCENT)

static double thread_cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Arithmetic the compiler cannot drop, until `seconds` of CPU time passed. */
static void extra_work(double seconds)
{
    const double until = thread_cpu_seconds() + seconds;
    volatile double x = 1.0;
    while (thread_cpu_seconds() < until)
        for (int i = 0; i < 256; i++)
            x = x * 1.0000001 + 1e-9;
}

#define WITH_EXTRA_WORK(call)                                                                      \
    do {                                                                                            \
        double t0 = thread_cpu_seconds();                                                           \
        int rc = (call);                                                                            \
        if (rc == PPBK_OK)                                                                          \
            extra_work((thread_cpu_seconds() - t0) * EXTRA_WORK_PERCENT / 100.0);                   \
        return rc;                                                                                  \
    } while (0)

static int prefill_launch_worked(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                                 const ppb_prefill_args *a, void *stream, char *why, size_t why_len)
{
    WITH_EXTRA_WORK(prefill_launch(ctx, dev, cfg, a, stream, why, why_len));
}

static int decode_v1_launch_worked(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                                   const ppb_decode_args *a, void *stream, char *why, size_t why_len)
{
    WITH_EXTRA_WORK(decode_v1_launch(ctx, dev, cfg, a, stream, why, why_len));
}

static int decode_v2_launch_worked(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg,
                                   const ppb_decode_args *a, void *stream, char *why, size_t why_len)
{
    WITH_EXTRA_WORK(decode_v2_launch(ctx, dev, cfg, a, stream, why, why_len));
}
#define PREFILL_LAUNCH prefill_launch_worked
#define DECODE_V1_LAUNCH decode_v1_launch_worked
#define DECODE_V2_LAUNCH decode_v2_launch_worked
#else
#ifndef PLUGIN_NAME /* the build may name it (a long name's round trip: tests/e2e/plugin_long_name.sh) */
#define PLUGIN_NAME "example-cpu"
#endif
#define PREFILL_LAUNCH prefill_launch
#define DECODE_V1_LAUNCH decode_v1_launch
#define DECODE_V2_LAUNCH decode_v2_launch
#endif

/* ---- the table ppbench reads --------------------------------------------------- */

/* The layout the kernels say they read: the one they do, unless the build
 * declares another (example-cpu-flash-undeclared, a plugin that gets it wrong:
 * the run must find its results wrong, tests/e2e/plugin.sh). */
#ifndef DECLARED_KV_LAYOUT
#ifdef READS_FLASH_LAYOUT
#define DECLARED_KV_LAYOUT PPB_KV_LAYOUT_FLASH
#else
#define DECLARED_KV_LAYOUT PPB_KV_LAYOUT_VLLM
#endif
#endif

static const ppbk_prefill_ops prefill_ops = {prefill_refuse, PREFILL_LAUNCH, NULL, DECLARED_KV_LAYOUT,
                                             PREFILL_STAGE};
static const ppbk_decode_ops decode_v1_ops = {decode_v1_refuse, DECODE_V1_LAUNCH, NULL, DECLARED_KV_LAYOUT};
static const ppbk_decode_ops decode_v2_ops = {decode_v2_refuse, DECODE_V2_LAUNCH, NULL, DECLARED_KV_LAYOUT};

static const ppbk_impl example_cpu = {
    .abi_version = PPBK_ABI_VERSION,
    .struct_size = sizeof(ppbk_impl),
    .name = PLUGIN_NAME,
    .version = "1",
    .source = "ppbench tests/plugin/example_cpu_plugin.c",
    .backends = PPBK_BACKEND_CPU,
    .open = example_open,
    .close = example_close,
    .prefill = &prefill_ops,
    .decode_v1 = &decode_v1_ops,
    .decode_v2 = &decode_v2_ops,
};

/* Exported even when built with -fvisibility=hidden. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const ppbk_impl *ppbk_entry(void);

const ppbk_impl *ppbk_entry(void)
{
    return &example_cpu;
}
