#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ppb_rng.h"
#include "reference_row.h"
#include "threads.h"

/* The reference is plain softmax attention in double, independent of the kernels'
 * tiles; the arithmetic of one row is reference_row.c (ppb_reference_attend), which the
 * GPU kernel tests call too. */

#define REF_MAX_D PPB_REF_MAX_D

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

/* The sequence of query token `token` (decode: the sequence index) and the query's
 * absolute position in it. */
static void locate_query(const ppb_workload *w, int token, int *seq, int *query_pos)
{
    if (w->c->kernel == PPB_PREFIX_PREFILL) {
        *seq = seq_of_token(w, token);
        *query_pos = w->context_lens[*seq] + (token - w->start_loc[*seq]);
    } else {
        *seq = token;
        *query_pos = w->context_lens[*seq] - 1;
    }
}

/* Query rows of one token and one kv head, head_first .. head_first + n - 1: a
 * GQA group, or part of one. */
static void reference_group(const ppb_workload *w, int token, int head_first, int n, double *const *out_rows)
{
    const ppb_case *c = w->c;
    const ppb_shape *s = &c->shape;
    const int dim = s->head_dim;
    int seq, query_pos;
    locate_query(w, token, &seq, &query_pos);
    const size_t new_at = c->kernel == PPB_PREFIX_PREFILL
                              ? (size_t)w->start_loc[seq] * (size_t)s->num_kv_heads * (size_t)dim
                              : 0;
    const ppb_ref_keys keys = {
        .dtype = s->dtype,
        .head_dim = dim,
        .num_kv_heads = s->num_kv_heads,
        .page_size = s->page_size,
        .k_cache = w->k_cache,
        .v_cache = w->v_cache,
        .k_cache_key = ppb_rng_key(w->seed, PPB_T_K_CACHE),
        .v_cache_key = ppb_rng_key(w->seed, PPB_T_V_CACHE),
        .block_table = w->block_table + (size_t)seq * (size_t)w->max_blocks_per_seq,
        .cached = w->context_lens[seq],
        .k_new = w->k ? w->k + new_at : NULL,
        .v_new = w->v ? w->v + new_at : NULL,
    };
    const uint16_t *q[PPB_REF_MAX_GROUP];
    for (int i = 0; i < n; i++)
        q[i] = w->q + ((size_t)token * (size_t)s->num_heads + (size_t)(head_first + i)) * (size_t)dim;
    ppb_reference_attend_group(&keys, head_first / (s->num_heads / s->num_kv_heads), n, q, 1.0 / sqrt((double)dim),
                               query_pos, s->sliding_window, out_rows);
}

void ppb_reference_row(const ppb_workload *w, int token, int head, double *out_row)
{
    reference_group(w, token, head, 1, &out_row);
}

/* ---- the check ---------------------------------------------------------------- */

/* Runs of consecutive chosen rows that share a token and a kv head: computed
 * together, each key chunk read once for the run. */
typedef struct row_group {
    long first;     /* index into the chosen rows */
    int n;
} row_group;

typedef struct rows_job {
    const ppb_workload *w;
    const long *rows;   /* row id = token * num_heads + head */
    double *values;     /* [n][head_dim] */
    const row_group *groups;
} rows_job;

static void compute_group(void *ctx, long item, int worker)
{
    (void)worker;
    const rows_job *job = ctx;
    const int heads = job->w->c->shape.num_heads, dim = job->w->c->shape.head_dim;
    const row_group *g = &job->groups[item];
    double *out[PPB_REF_MAX_GROUP];
    for (int i = 0; i < g->n; i++)
        out[i] = job->values + (size_t)(g->first + i) * (size_t)dim;
    long row = job->rows[g->first];
    reference_group(job->w, (int)(row / heads), (int)(row % heads), g->n, out);
}

/* Sorted rows into groups: the same token, consecutive heads of one kv head. */
static row_group *group_rows(const ppb_workload *w, const long *rows, long n, long *n_groups)
{
    const long heads = w->c->shape.num_heads, per_kv = heads / w->c->shape.num_kv_heads;
    row_group *g = malloc(sizeof *g * (size_t)(n ? n : 1));
    long m = 0;
    for (long i = 0; g && i < n; i++) {
        const row_group *last = m ? &g[m - 1] : NULL;
        long prev = last ? rows[last->first + last->n - 1] : -1;
        if (last && rows[i] == prev + 1 && rows[i] / heads == prev / heads &&
            (rows[i] % heads) / per_kv == (rows[last->first] % heads) / per_kv && last->n < PPB_REF_MAX_GROUP)
            g[m - 1].n++;
        else
            g[m++] = (row_group){i, 1};
    }
    *n_groups = m;
    return g;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Row ids in place: sorted, without duplicates; the new count. */
static long sort_unique(long *rows, long n)
{
    qsort(rows, (size_t)n, sizeof(long), cmp_long);
    long m = 0;
    for (long i = 0; i < n; i++)
        if (m == 0 || rows[m - 1] != rows[i])
            rows[m++] = rows[i];
    return m;
}

/* The rows to check, sorted and without duplicates. A sample is seeded random rows
 * plus each sequence's first and last row (for one seeded random head each): the tile
 * edges where masks and partial tiles go wrong first. Decode has one query row per
 * sequence and head, and a row's cost is its sequence's keys, which the query heads of
 * a kv head share: its random rows come in whole GQA groups (a group costs about one
 * row), and its edges are the batch's first and last sequence. */
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
    const int decode = w->c->kernel == PPB_PAGED_ATTENTION;
    const long group = decode ? heads / s->num_kv_heads : 1;
    const long draws = (samples + group - 1) / group;
    rows = malloc(sizeof(long) * (size_t)(draws * group + 2L * w->batch));
    if (!rows)
        return NULL;
    for (long k = 0; k < draws; k++) {
        uint64_t base = 4u * (uint64_t)k;
        int seq = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, base, (uint32_t)w->batch);
        long head = (long)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, base + 1, (uint32_t)heads) / group * group;
        int row = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, base + 2,
                                     (uint32_t)w->query_lens[seq]);
        long token = (long)w->start_loc[seq] + row;
        for (long g = 0; g < group; g++)
            rows[n++] = token * heads + head + g;
    }
    for (int b = 0; b < w->batch; b++) {
        if (decode && b != 0 && b != w->batch - 1)
            continue;
        uint64_t idx = 4u * (uint64_t)draws + (uint64_t)b;
        int head = (int)ppb_rng_below(seed, PPB_RNG_STREAM_CHECK, idx, (uint32_t)heads);
        long first = w->start_loc[b], last = (long)w->start_loc[b] + w->query_lens[b] - 1;
        rows[n++] = first * heads + head;
        rows[n++] = last * heads + head;
    }
    *n_out = sort_unique(rows, n);
    return rows;
}

/* Whether the rows read the cache's elements more than once on average (a group
 * reads each key it sees once, for all of its heads). */
static int reads_cache_often(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed)
{
    long n = 0, n_groups = 0;
    long *rows = choose_rows(w, cs, seed, &n);
    row_group *groups = rows ? group_rows(w, rows, n, &n_groups) : NULL;
    const ppb_shape *s = &w->c->shape;
    double reads = 0; /* cache tokens the groups visit, each for one kv head */
    for (long g = 0; groups && g < n_groups; g++) {
        int seq, query_pos;
        locate_query(w, (int)(rows[groups[g].first] / s->num_heads), &seq, &query_pos);
        int first = ppb_reference_first_key(query_pos, s->sliding_window);
        int last = query_pos < w->context_lens[seq] - 1 ? query_pos : w->context_lens[seq] - 1;
        if (last >= first)
            reads += last - first + 1;
    }
    int often = !groups || reads > (double)w->num_blocks * s->page_size * s->num_kv_heads;
    free(groups);
    free(rows);
    return often;
}

int ppb_reference_fill_inputs(ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, ppb_err *err)
{
    return reads_cache_often(w, cs, seed) ? ppb_workload_fill(w, err) : ppb_workload_fill_queries(w, err);
}

void ppb_reference_rows_free(ppb_reference_rows *r)
{
    free(r->rows);
    free(r->values);
    memset(r, 0, sizeof *r);
}

int ppb_reference_rows_compute(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed,
                               ppb_reference_rows *out, ppb_err *err)
{
    const ppb_shape *s = &w->c->shape;
    memset(out, 0, sizeof *out);
    if (!w->q)
        return ppb_fail(err, PPB_EINPUT, "reference check: the workload has no tensors");
    if (s->head_dim > REF_MAX_D)
        return ppb_fail(err, PPB_EINPUT, "reference check: head_dim %d > %d", s->head_dim, REF_MAX_D);
    out->rows = choose_rows(w, cs, seed, &out->n);
    out->values = out->rows ? malloc(sizeof *out->values * (size_t)(out->n ? out->n : 1) * (size_t)s->head_dim)
                            : NULL;
    if (!out->rows || !out->values) {
        long total = (long)w->total_tokens * s->num_heads;
        ppb_reference_rows_free(out);
        return ppb_fail(err, PPB_ENOMEM, "reference check: out of host memory for %ld rows", total);
    }
    long n_groups = 0;
    row_group *groups = group_rows(w, out->rows, out->n, &n_groups);
    if (!groups) {
        ppb_reference_rows_free(out);
        return ppb_fail(err, PPB_ENOMEM, "reference check: out of host memory for %ld rows", out->n);
    }
    out->w = w;
    rows_job job = {.w = w, .rows = out->rows, .values = out->values, .groups = groups};
    ppb_parallel_for(n_groups, compute_group, &job);
    free(groups);
    return PPB_OK;
}

/* Elements left at the poison pattern count as unwritten, NaN/Inf as
 * non-finite; both fail the check and neither enters max_abs_err / rel_l2_err,
 * which describe the elements that were written with finite values. Rows in
 * order, so the figures do not depend on thread timing. */
int ppb_reference_compare(const ppb_reference_rows *ref, const uint16_t *out, const ppb_check_settings *cs,
                          ppb_check_result *res, ppb_err *err)
{
    memset(res, 0, sizeof *res);
    if (!ref->w || !out)
        return ppb_fail(err, PPB_EINPUT, "reference check: no reference rows or no output");
    const ppb_shape *s = &ref->w->c->shape;
    const int dtype = s->dtype, dim = s->head_dim;
    res->atol = cs->atol[dtype == PPB_FP16 ? 0 : 1];
    res->rtol = cs->rtol[dtype == PPB_FP16 ? 0 : 1];
    res->rows_total = (long)ref->w->total_tokens * s->num_heads;
    double sum_diff2 = 0, sum_ref2 = 0;
    long outside = 0;
    for (long i = 0; i < ref->n; i++) {
        const uint16_t *o = out + (size_t)ref->rows[i] * (size_t)dim;
        const double *r = ref->values + (size_t)i * (size_t)dim;
        for (int d = 0; d < dim; d++) {
            if (o[d] == PPB_POISON_BITS) {
                res->unwritten++;
                continue;
            }
            /* the conversions inline (ppb_rng.h): this loop reads every checked element */
            double v = dtype == PPB_FP16 ? ppb_rng_fp16_to_float(o[d]) : ppb_rng_bf16_to_float(o[d]);
            if (!isfinite(v)) {
                res->nonfinite++;
                continue;
            }
            double diff = fabs(v - r[d]);
            if (diff > res->max_abs_err)
                res->max_abs_err = diff;
            if (!(diff <= res->atol + res->rtol * fabs(r[d])))
                outside++;
            sum_diff2 += diff * diff;
            sum_ref2 += r[d] * r[d];
        }
    }
    res->rel_l2_err = sum_ref2 > 0 ? sqrt(sum_diff2 / sum_ref2) : sqrt(sum_diff2);
    res->rows_checked = ref->n;
    res->checked = 1;
    res->pass = res->nonfinite == 0 && res->unwritten == 0 && outside == 0;
    return PPB_OK;
}

int ppb_reference_check(const ppb_workload *w, const uint16_t *out, const ppb_check_settings *cs,
                        uint64_t seed, ppb_check_result *res, ppb_err *err)
{
    ppb_reference_rows ref;
    memset(res, 0, sizeof *res);
    int rc = ppb_reference_rows_compute(w, cs, seed, &ref, err);
    if (!rc)
        rc = ppb_reference_compare(&ref, out, cs, res, err);
    ppb_reference_rows_free(&ref);
    return rc;
}
