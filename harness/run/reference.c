#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ppb_rng.h"
#include "threads.h"

/* The reference is plain softmax attention in double, independent of the
 * kernels' tiles: keys are visited in chunks of at most one page (or 32 new
 * tokens), each chunk converted to fp32 rows (exact for fp16/bf16) and folded
 * into a running max / sum / weighted V sum in double. No memory beyond a few
 * fixed buffers, one pass over K and V, so a 100K-token row costs O(ctx x D).
 * Double rounding makes the result exact to ~1e-15 relative: far below any
 * tolerance a 16-bit output is judged with. */

#define REF_MAX_D 256
#define REF_CHUNK 32 /* >= the largest page size */

/* Sequence whose new tokens contain global token `token` (prefill). */
static int seq_of_token(const ppb_workload *w, int token)
{
    int lo = 0, hi = w->batch - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (w->start_loc[mid] <= token)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static inline float bits_to_f32(uint16_t h, int dtype)
{
    return dtype == PPB_FP16 ? ppb_rng_fp16_to_float(h) : ppb_rng_bf16_to_float(h);
}

typedef struct ref_row_keys {
    const ppb_workload *w;
    int seq, kv_head, cached, dim, dtype;
} ref_row_keys;

/* K and V rows [j - j0][D] of key positions [j0, j1), all in one page of the
 * cache (positions < cached, through the block table) or all among the new
 * tokens (contiguous k / v, prefill). */
static void load_chunk(const ref_row_keys *r, int j0, int j1, float *k, float *v)
{
    const ppb_workload *w = r->w;
    const ppb_shape *s = &w->c->shape;
    int dim = r->dim;
    for (int j = j0; j < j1; j++) {
        float *kd = k + (size_t)(j - j0) * dim, *vd = v + (size_t)(j - j0) * dim;
        if (j < r->cached) {
            int block = w->block_table[(size_t)r->seq * (size_t)w->max_blocks_per_seq +
                                       (size_t)(j / s->page_size)];
            int slot = j % s->page_size;
            /* k: [.., D/8, page, 8] -> dim d at + (d / 8) * page * 8 + d % 8; v: [.., D, page] */
            const uint16_t *kb = w->k_cache + ppb_kcache_index(w, block, r->kv_head, 0, slot);
            const uint16_t *vb = w->v_cache + ppb_vcache_index(w, block, r->kv_head, 0, slot);
            size_t page = (size_t)s->page_size;
            for (int d = 0; d < dim; d++) {
                kd[d] = bits_to_f32(kb[(size_t)(d / 8) * page * 8 + (size_t)(d % 8)], r->dtype);
                vd[d] = bits_to_f32(vb[(size_t)d * page], r->dtype);
            }
        } else {
            size_t tok = (size_t)w->start_loc[r->seq] + (size_t)(j - r->cached);
            size_t at = (tok * (size_t)s->num_kv_heads + (size_t)r->kv_head) * (size_t)dim;
            for (int d = 0; d < dim; d++) {
                kd[d] = bits_to_f32(w->k[at + d], r->dtype);
                vd[d] = bits_to_f32(w->v[at + d], r->dtype);
            }
        }
    }
}

void ppb_reference_row(const ppb_workload *w, int token, int head, double *out_row)
{
    const ppb_case *c = w->c;
    const ppb_shape *s = &c->shape;
    int dim = s->head_dim;
    ref_row_keys r = {.w = w, .dim = dim, .dtype = s->dtype,
                      .kv_head = head / (s->num_heads / s->num_kv_heads)};
    int query_pos; /* absolute position of the query in its sequence */
    if (c->kernel == PPB_PREFIX_PREFILL) {
        r.seq = seq_of_token(w, token);
        r.cached = w->context_lens[r.seq];
        query_pos = r.cached + (token - w->start_loc[r.seq]);
    } else {
        r.seq = token;
        r.cached = w->context_lens[r.seq];
        query_pos = r.cached - 1;
    }
    /* Causal (bottom-right aligned): keys 0..query_pos. Sliding window W: only
     * keys at positions > query_pos - W, i.e. the last W positions including the
     * query's own. */
    int first = 0;
    if (s->sliding_window > 0 && query_pos - s->sliding_window + 1 > 0)
        first = query_pos - s->sliding_window + 1;
    int last = query_pos;

    double q[REF_MAX_D];
    float k[REF_CHUNK * REF_MAX_D], v[REF_CHUNK * REF_MAX_D];
    const uint16_t *qsrc = w->q + ((size_t)token * (size_t)s->num_heads + (size_t)head) * (size_t)dim;
    double scale = 1.0 / sqrt((double)dim);
    for (int d = 0; d < dim; d++) {
        q[d] = bits_to_f32(qsrc[d], s->dtype) * scale;
        out_row[d] = 0;
    }
    double max_logit = -INFINITY, sum = 0;
    for (int j0 = first; j0 <= last;) {
        /* a chunk never crosses a page or the cached / new boundary */
        int j1 = j0 < r.cached ? (j0 / s->page_size + 1) * s->page_size : j0 + REF_CHUNK;
        if (j0 < r.cached && j1 > r.cached)
            j1 = r.cached;
        if (j1 > last + 1)
            j1 = last + 1;
        load_chunk(&r, j0, j1, k, v);
        double logit[REF_CHUNK], chunk_max = -INFINITY;
        for (int j = 0; j < j1 - j0; j++) {
            const float *kj = k + (size_t)j * dim;
            double lane[4] = {0, 0, 0, 0};
            for (int d = 0; d < dim; d += 4)
                for (int l = 0; l < 4; l++)
                    lane[l] += q[d + l] * kj[d + l];
            logit[j] = (lane[0] + lane[1]) + (lane[2] + lane[3]);
            if (logit[j] > chunk_max)
                chunk_max = logit[j];
        }
        if (chunk_max > max_logit) {
            double rescale = exp(max_logit - chunk_max); /* 0 on the first chunk */
            sum *= rescale;
            for (int d = 0; d < dim; d++)
                out_row[d] *= rescale;
            max_logit = chunk_max;
        }
        for (int j = 0; j < j1 - j0; j++) {
            double p = exp(logit[j] - max_logit);
            const float *vj = v + (size_t)j * dim;
            sum += p;
            for (int d = 0; d < dim; d++)
                out_row[d] += p * vj[d];
        }
        j0 = j1;
    }
    for (int d = 0; d < dim; d++)
        out_row[d] /= sum;
}

/* ---- the check ---------------------------------------------------------------- */

typedef struct row_check {
    double max_abs, sum_diff2, sum_ref2;
    long nonfinite, unwritten, outside_tol;
} row_check;

typedef struct check_job {
    const ppb_workload *w;
    const uint16_t *out;
    const long *rows;   /* row id = token * num_heads + head */
    row_check *results;
    double atol, rtol;
} check_job;

/* Elements left at the poison pattern count as unwritten, NaN/Inf as
 * non-finite; both fail the check and neither enters max_abs_err / rel_l2_err,
 * which describe the elements that were written with finite values. */
static void check_one_row(void *ctx, long item, int worker)
{
    (void)worker;
    const check_job *job = ctx;
    const ppb_shape *s = &job->w->c->shape;
    long row = job->rows[item];
    int token = (int)(row / s->num_heads), head = (int)(row % s->num_heads);
    double ref[REF_MAX_D];
    ppb_reference_row(job->w, token, head, ref);
    const uint16_t *o = job->out + (size_t)row * (size_t)s->head_dim;
    row_check rc = {0};
    for (int d = 0; d < s->head_dim; d++) {
        if (o[d] == PPB_POISON_BITS) {
            rc.unwritten++;
            continue;
        }
        double v = ppb_half_to_float(o[d], s->dtype);
        if (!isfinite(v)) {
            rc.nonfinite++;
            continue;
        }
        double diff = fabs(v - ref[d]);
        if (diff > rc.max_abs)
            rc.max_abs = diff;
        if (!(diff <= job->atol + job->rtol * fabs(ref[d])))
            rc.outside_tol++;
        rc.sum_diff2 += diff * diff;
        rc.sum_ref2 += ref[d] * ref[d];
    }
    job->results[item] = rc;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The rows to check, sorted and without duplicates. */
static long *choose_rows(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed,
                         long *n_out)
{
    const ppb_shape *s = &w->c->shape;
    long heads = s->num_heads;
    long rows_total = (long)w->total_tokens * heads;
    long *rows;
    long n = 0;
    if (rows_total <= cs->full_check_max_rows) {
        rows = malloc(sizeof(long) * (size_t)rows_total);
        if (!rows)
            return NULL;
        for (long r = 0; r < rows_total; r++)
            rows[n++] = r;
        *n_out = n;
        return rows;
    }
    long samples = cs->sample_rows > 0 ? cs->sample_rows : 0;
    rows = malloc(sizeof(long) * (size_t)(samples + 2L * w->batch));
    if (!rows)
        return NULL;
    for (long k = 0; k < samples; k++) {
        uint64_t base = 4u * (uint64_t)k;
        int seq = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, base, (uint32_t)w->batch);
        int head = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, base + 1, (uint32_t)heads);
        int row = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, base + 2,
                                     (uint32_t)w->query_lens[seq]);
        long token = (long)w->start_loc[seq] + row;
        rows[n++] = token * heads + head;
    }
    /* Each sequence's first and last row (for one seeded random head each): the
     * tile edges where masks and partial tiles go wrong first. */
    for (int b = 0; b < w->batch; b++) {
        uint64_t idx = 4u * (uint64_t)samples + (uint64_t)b;
        int head = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, idx, (uint32_t)heads);
        long first = w->start_loc[b], last = (long)w->start_loc[b] + w->query_lens[b] - 1;
        rows[n++] = first * heads + head;
        rows[n++] = last * heads + head;
    }
    qsort(rows, (size_t)n, sizeof(long), cmp_long);
    long m = 0;
    for (long i = 0; i < n; i++)
        if (m == 0 || rows[m - 1] != rows[i])
            rows[m++] = rows[i];
    *n_out = m;
    return rows;
}

int ppb_reference_check(const ppb_workload *w, const uint16_t *out, const ppb_check_settings *cs,
                        uint64_t seed, ppb_check_result *res, ppb_err *err)
{
    const ppb_shape *s = &w->c->shape;
    memset(res, 0, sizeof *res);
    if (!w->q || !out)
        return ppb_fail(err, PPB_EINPUT, "reference check: the workload has no tensors or no output");
    if (s->head_dim > REF_MAX_D)
        return ppb_fail(err, PPB_EINPUT, "reference check: head_dim %d > %d", s->head_dim, REF_MAX_D);
    int dtype = s->dtype == PPB_FP16 ? 0 : 1;
    res->atol = cs->atol[dtype];
    res->rtol = cs->rtol[dtype];
    res->rows_total = (long)w->total_tokens * s->num_heads;

    long n_rows = 0;
    long *rows = choose_rows(w, cs, seed, &n_rows);
    row_check *results = rows ? calloc((size_t)(n_rows ? n_rows : 1), sizeof *results) : NULL;
    if (!rows || !results) {
        free(rows);
        free(results);
        return ppb_fail(err, PPB_ENOMEM, "reference check: out of host memory for %ld rows",
                        res->rows_total);
    }
    check_job job = {.w = w, .out = out, .rows = rows, .results = results,
                     .atol = res->atol, .rtol = res->rtol};
    ppb_parallel_for(n_rows, check_one_row, &job);

    /* Reduce in row order so the figures do not depend on thread timing. */
    double sum_diff2 = 0, sum_ref2 = 0;
    long outside = 0;
    for (long i = 0; i < n_rows; i++) {
        if (results[i].max_abs > res->max_abs_err)
            res->max_abs_err = results[i].max_abs;
        sum_diff2 += results[i].sum_diff2;
        sum_ref2 += results[i].sum_ref2;
        res->nonfinite += results[i].nonfinite;
        res->unwritten += results[i].unwritten;
        outside += results[i].outside_tol;
    }
    res->rel_l2_err = sum_ref2 > 0 ? sqrt(sum_diff2 / sum_ref2) : sqrt(sum_diff2);
    res->rows_checked = n_rows;
    res->checked = 1;
    res->pass = res->nonfinite == 0 && res->unwritten == 0 && outside == 0;
    free(rows);
    free(results);
    return PPB_OK;
}
