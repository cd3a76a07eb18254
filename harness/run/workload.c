#include "workload.h"

#include <stdlib.h>
#include <string.h>

#include "kv_layout.h"
#include "ppb_rng.h"
#include "threads.h"

/* Sizes that follow from the case alone: shared by the byte estimate and create. */
typedef struct workload_plan {
    long long total_tokens;
    long long used_pages;      /* pages holding cached tokens, over all sequences */
    long long num_blocks;      /* used_pages + 1 spare (see below) */
    long long max_blocks_per_seq;
    size_t q_elems, kv_elems, cache_elems, out_elems;
} workload_plan;

/* Tokens of sequence b that live in the paged cache: the context for prefill
 * (the prefix-prefill kernel reads new tokens from the contiguous k/v, so the
 * cache holds the context part only), the whole sequence for decode. */
static int cached_tokens_of(const ppb_case *c, int b) { return ppb_case_context_len_of(c, b); }

static long long pages_for(long long tokens, int page) { return (tokens + page - 1) / page; }

static void plan_workload(const ppb_case *c, workload_plan *p)
{
    const ppb_shape *s = &c->shape;
    memset(p, 0, sizeof *p);
    for (int b = 0; b < s->batch; b++) {
        p->total_tokens += ppb_case_query_len_of(c, b);
        long long pages = pages_for(cached_tokens_of(c, b), s->page_size);
        p->used_pages += pages;
        if (pages > p->max_blocks_per_seq)
            p->max_blocks_per_seq = pages;
    }
    if (p->max_blocks_per_seq < 1)
        p->max_blocks_per_seq = 1;
    /* One spare page beyond what the sequences use: the permutation then always
     * has a non-identity choice (even for a single used page), and a kernel that
     * follows a wrong table entry lands in garbage. */
    p->num_blocks = p->used_pages + 1;
    size_t hd = (size_t)s->head_dim;
    p->q_elems = (size_t)p->total_tokens * (size_t)s->num_heads * hd;
    p->kv_elems = c->kernel == PPB_PREFIX_PREFILL
                      ? (size_t)p->total_tokens * (size_t)s->num_kv_heads * hd
                      : 0;
    p->cache_elems = (size_t)p->num_blocks * (size_t)s->num_kv_heads * hd * (size_t)s->page_size;
    p->out_elems = p->q_elems;
}

size_t ppb_workload_host_bytes(const ppb_case *c)
{
    workload_plan p;
    plan_workload(c, &p);
    size_t b = (size_t)c->shape.batch;
    size_t bytes = sizeof(int32_t) * (4 * b + 1);                                /* lens, start_loc */
    bytes += sizeof(int32_t) * b * (size_t)p.max_blocks_per_seq;                 /* block table */
    bytes += sizeof(int32_t) * 2 * (size_t)p.num_blocks;                         /* shuffle, valid */
    bytes += sizeof(uint16_t) * (p.q_elems + 2 * p.kv_elems + 2 * p.cache_elems); /* tensors */
    return bytes;
}

size_t ppb_kcache_index(const ppb_workload *w, int block, int kv_head, int d, int slot)
{
    const ppb_shape *s = &w->c->shape;
    size_t x = 8; /* 16 bytes / sizeof(fp16 or bf16) */
    size_t row = ((size_t)block * (size_t)s->num_kv_heads + (size_t)kv_head) * ((size_t)s->head_dim / x) +
                 (size_t)d / x;
    return (row * (size_t)s->page_size + (size_t)slot) * x + (size_t)d % x;
}

size_t ppb_vcache_index(const ppb_workload *w, int block, int kv_head, int d, int slot)
{
    const ppb_shape *s = &w->c->shape;
    size_t row = ((size_t)block * (size_t)s->num_kv_heads + (size_t)kv_head) * (size_t)s->head_dim +
                 (size_t)d;
    return row * (size_t)s->page_size + (size_t)slot;
}

uint16_t *ppb_workload_cache_in_layout(const ppb_workload *w, int is_k, int layout)
{
    const uint16_t *src = is_k ? w->k_cache : w->v_cache;
    uint16_t *dst = src ? malloc(w->cache_elems * sizeof *dst) : NULL;
    if (!dst)
        return NULL;
    const ppb_shape *s = &w->c->shape;
    for (size_t i = 0; i < w->cache_elems; i++)
        dst[i] = src[layout == PPB_KV_LAYOUT_FLASH
                         ? ppb_kv_flash_to_vllm(i, is_k, (uint64_t)s->page_size, (uint64_t)s->num_kv_heads,
                                                (uint64_t)s->head_dim)
                         : i];
    return dst;
}

float ppb_half_to_float(uint16_t h, int dtype)
{
    return dtype == PPB_FP16 ? ppb_rng_fp16_to_float(h) : ppb_rng_bf16_to_float(h);
}

uint16_t ppb_float_to_half(float f, int dtype)
{
    return dtype == PPB_FP16 ? ppb_rng_float_to_fp16(f) : ppb_rng_float_to_bf16(f);
}

/* ---- parallel tensor filling ------------------------------------------------ */

enum { FILL_PLAIN = 0, FILL_K_CACHE = 1, FILL_V_CACHE = 2 };
#define FILL_CHUNK ((size_t)1 << 16)
#define FILL_MAX_TENSORS 5

typedef struct fill_tensor {
    uint16_t *data;
    size_t n;
    uint32_t id;    /* PPB_T_* */
    int layout;     /* FILL_* */
    size_t first_chunk;
} fill_tensor;

typedef struct fill_job {
    fill_tensor t[FILL_MAX_TENSORS];
    int n_tensors;
    uint64_t seed;
    int dtype;
    const int32_t *valid_tokens; /* [num_blocks]: cached tokens in each physical page */
    size_t page, block_elems;    /* tokens per page, elements per physical page */
} fill_job;

static void fill_chunk(void *ctx, long item, int worker)
{
    (void)worker;
    const fill_job *job = ctx;
    size_t chunk = (size_t)item;
    int ti = 0;
    while (ti + 1 < job->n_tensors && job->t[ti + 1].first_chunk <= chunk)
        ti++;
    const fill_tensor *t = &job->t[ti];
    size_t begin = (chunk - t->first_chunk) * FILL_CHUNK;
    size_t end = begin + FILL_CHUNK < t->n ? begin + FILL_CHUNK : t->n;
    uint64_t key = ppb_rng_key(job->seed, t->id);
    if (t->layout == FILL_PLAIN) {
        for (size_t i = begin; i < end; i++)
            t->data[i] = ppb_rng_keyed_input(key, i, job->dtype, 0);
        return;
    }
    /* page sizes are 8, 16 or 32 (ppb_case_validate): a power of two */
    unsigned slot_shift = t->layout == FILL_K_CACHE ? 3u : 0u;
    size_t block = begin / job->block_elems, block_end = (block + 1) * job->block_elems;
    int valid = job->valid_tokens[block];
    for (size_t i = begin; i < end; i++) {
        if (i == block_end) {
            block++;
            block_end += job->block_elems;
            valid = job->valid_tokens[block];
        }
        int garbage = ppb_rng_past_valid(i, slot_shift, (unsigned)job->page, valid);
        t->data[i] = ppb_rng_keyed_input(key, i, job->dtype, garbage);
    }
}

static void fill_tensors(fill_job *job)
{
    size_t chunks = 0;
    for (int i = 0; i < job->n_tensors; i++) {
        job->t[i].first_chunk = chunks;
        chunks += (job->t[i].n + FILL_CHUNK - 1) / FILL_CHUNK;
    }
    ppb_parallel_for((long)chunks, fill_chunk, job);
}

/* ---- create ------------------------------------------------------------------ */

/* Fisher-Yates with the counter-based generator; never the identity (n >= 2). */
static void shuffle_pages(int32_t *perm, long long n, uint64_t seed)
{
    for (long long i = 0; i < n; i++)
        perm[i] = (int32_t)i;
    for (long long i = n - 1; i > 0; i--) {
        long long j = ppb_rng_below(seed, PPB_RNG_STREAM_PAGES, (uint64_t)i, (uint32_t)(i + 1));
        int32_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    int identity = 1;
    for (long long i = 0; i < n && identity; i++)
        identity = perm[i] == i;
    if (identity && n >= 2) {
        perm[0] = (int32_t)(n - 1);
        perm[n - 1] = 0;
    }
}

int ppb_workload_create(ppb_workload *w, const ppb_case *c, uint64_t seed, int with_tensors,
                        ppb_err *err)
{
    int rc = ppb_case_validate(c, err);
    if (rc)
        return rc;
    memset(w, 0, sizeof *w);
    const ppb_shape *s = &c->shape;
    workload_plan p;
    plan_workload(c, &p);
    int32_t *perm = NULL;
    w->c = c;
    w->seed = seed;
    w->batch = s->batch;
    w->total_tokens = (int)p.total_tokens;
    w->max_blocks_per_seq = (int)p.max_blocks_per_seq;
    w->num_blocks = (int)p.num_blocks;
    w->q_elems = p.q_elems;
    w->kv_elems = p.kv_elems;
    w->cache_elems = p.cache_elems;
    w->out_elems = p.out_elems;

    size_t b = (size_t)s->batch;
    w->query_lens = malloc(sizeof(int32_t) * b);
    w->context_lens = malloc(sizeof(int32_t) * b);
    w->start_loc = malloc(sizeof(int32_t) * (b + 1));
    w->seq_lens = malloc(sizeof(int32_t) * b);
    w->block_table = calloc(b * (size_t)p.max_blocks_per_seq, sizeof(int32_t));
    perm = malloc(sizeof(int32_t) * (size_t)p.num_blocks);
    w->valid_tokens = calloc((size_t)p.num_blocks, sizeof(int32_t));
    if (!w->query_lens || !w->context_lens || !w->start_loc || !w->seq_lens || !w->block_table || !perm ||
        !w->valid_tokens) {
        rc = ppb_fail(err, PPB_ENOMEM, "workload: out of host memory for lengths and block table");
        goto fail;
    }

    w->start_loc[0] = 0;
    for (int i = 0; i < s->batch; i++) {
        w->query_lens[i] = ppb_case_query_len_of(c, i);
        w->context_lens[i] = cached_tokens_of(c, i);
        w->start_loc[i + 1] = w->start_loc[i] + w->query_lens[i];
        w->seq_lens[i] = c->kernel == PPB_PREFIX_PREFILL ? w->context_lens[i] + w->query_lens[i]
                                                         : w->context_lens[i];
    }

    /* Logical pages in sequence order take the shuffled physical pages in turn. */
    shuffle_pages(perm, p.num_blocks, seed);
    long long next = 0;
    for (int i = 0; i < s->batch; i++) {
        long long tokens = w->context_lens[i];
        long long pages = pages_for(tokens, s->page_size);
        for (long long lp = 0; lp < pages; lp++) {
            int32_t phys = perm[next++];
            w->block_table[(size_t)i * (size_t)p.max_blocks_per_seq + (size_t)lp] = phys;
            long long left = tokens - lp * s->page_size;
            w->valid_tokens[phys] = (int32_t)(left < s->page_size ? left : s->page_size);
        }
    }

    free(perm);
    if (with_tensors && (rc = ppb_workload_fill(w, err)))
        ppb_workload_free(w);
    return rc;

fail:
    free(perm);
    ppb_workload_free(w);
    return rc;
}

/* The host tensors not made yet: the queries and new tokens, and with_cache the paged cache. */
static int fill_missing(ppb_workload *w, int with_cache, ppb_err *err)
{
    const ppb_shape *s = &w->c->shape;
    fill_job job = {.seed = w->seed, .dtype = s->dtype, .valid_tokens = w->valid_tokens,
                    .page = (size_t)s->page_size,
                    .block_elems = (size_t)s->num_kv_heads * (size_t)s->head_dim * (size_t)s->page_size};
    int ok = 1;
    if (!w->q) {
        w->q = malloc(sizeof(uint16_t) * (w->q_elems ? w->q_elems : 1));
        ok = w->q != NULL;
        job.t[job.n_tensors++] = (fill_tensor){w->q, w->q_elems, PPB_T_Q, FILL_PLAIN, 0};
        if (w->kv_elems) {
            w->k = malloc(sizeof(uint16_t) * w->kv_elems);
            w->v = malloc(sizeof(uint16_t) * w->kv_elems);
            ok = ok && w->k && w->v;
            job.t[job.n_tensors++] = (fill_tensor){w->k, w->kv_elems, PPB_T_K, FILL_PLAIN, 0};
            job.t[job.n_tensors++] = (fill_tensor){w->v, w->kv_elems, PPB_T_V, FILL_PLAIN, 0};
        }
    }
    if (with_cache && !w->k_cache) {
        w->k_cache = malloc(sizeof(uint16_t) * w->cache_elems);
        w->v_cache = malloc(sizeof(uint16_t) * w->cache_elems);
        ok = ok && w->k_cache && w->v_cache;
        job.t[job.n_tensors++] = (fill_tensor){w->k_cache, w->cache_elems, PPB_T_K_CACHE, FILL_K_CACHE, 0};
        job.t[job.n_tensors++] = (fill_tensor){w->v_cache, w->cache_elems, PPB_T_V_CACHE, FILL_V_CACHE, 0};
    }
    if (!ok) {
        ppb_workload_free_tensors(w);
        return ppb_fail(err, PPB_ENOMEM, "workload: out of host memory for the tensors (%zu B)",
                        ppb_workload_host_bytes(w->c));
    }
    fill_tensors(&job);
    return PPB_OK;
}

int ppb_workload_fill(ppb_workload *w, ppb_err *err) { return fill_missing(w, 1, err); }

int ppb_workload_fill_queries(ppb_workload *w, ppb_err *err) { return fill_missing(w, 0, err); }

void ppb_workload_free_tensors(ppb_workload *w)
{
    free(w->q);
    free(w->k);
    free(w->v);
    free(w->k_cache);
    free(w->v_cache);
    w->q = w->k = w->v = w->k_cache = w->v_cache = NULL;
}

void ppb_workload_free(ppb_workload *w)
{
    if (!w)
        return;
    free(w->query_lens);
    free(w->context_lens);
    free(w->start_loc);
    free(w->seq_lens);
    free(w->block_table);
    free(w->valid_tokens);
    ppb_workload_free_tensors(w);
    memset(w, 0, sizeof *w);
}
