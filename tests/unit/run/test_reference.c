/* The float64 reference against an independent brute force, its masks, and the checker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

static ppb_case make_case(ppb_kernel_kind kernel, int batch, int q, int ctx, int heads, int kv_heads,
                          int dim, int page, int window, int dtype, int ragged)
{
    ppb_case c;
    ppb_case_init(&c, kernel);
    c.shape.batch = batch;
    if (kernel == PPB_PREFIX_PREFILL) {
        c.shape.query_len = q;
        c.shape.context_len = ctx;
    } else {
        c.shape.seq_len = ctx;
    }
    c.shape.num_heads = heads;
    c.shape.num_kv_heads = kv_heads;
    c.shape.head_dim = dim;
    c.shape.page_size = page;
    c.shape.sliding_window = window;
    c.shape.dtype = dtype;
    c.shape.ragged = ragged;
    ppb_case_make_key(&c);
    return c;
}

static void make(ppb_workload *w, const ppb_case *c, uint64_t seed)
{
    ppb_err err = {{0}};
    int rc = ppb_workload_create(w, c, seed, 1, &err);
    if (rc)
        fail_msg("ppb_workload_create: %s", err.msg);
}

/* ---- an independent brute force: its own gather loops and index arithmetic ---- */

static double elem(const ppb_workload *w, uint16_t bits) { return ppb_half_to_float(bits, w->c->shape.dtype); }

static void brute_row(const ppb_workload *w, int token, int head, double *out)
{
    const ppb_shape *s = &w->c->shape;
    int D = s->head_dim, KVH = s->num_kv_heads, page = s->page_size;
    int kvh = head / (s->num_heads / KVH);
    int seq, cached, pos;
    if (w->c->kernel == PPB_PREFIX_PREFILL) {
        seq = 0;
        while (w->start_loc[seq + 1] <= token)
            seq++;
        cached = w->context_lens[seq];
        pos = cached + token - w->start_loc[seq];
    } else {
        seq = token;
        cached = w->context_lens[seq];
        pos = cached - 1;
    }
    int n = pos + 1;
    double *keys = malloc(sizeof(double) * (size_t)n * D), *vals = malloc(sizeof(double) * (size_t)n * D);
    double *logit = malloc(sizeof(double) * (size_t)n);
    for (int j = 0; j < n; j++)
        for (int d = 0; d < D; d++) {
            uint16_t kb, vb;
            if (j < cached) {
                int phys = w->block_table[seq * w->max_blocks_per_seq + j / page], slot = j % page;
                kb = w->k_cache[((((size_t)phys * KVH + kvh) * (D / 8) + d / 8) * page + slot) * 8 + d % 8];
                vb = w->v_cache[(((size_t)phys * KVH + kvh) * D + d) * page + slot];
            } else {
                size_t t = (size_t)w->start_loc[seq] + (size_t)(j - cached);
                kb = w->k[(t * KVH + kvh) * D + d];
                vb = w->v[(t * KVH + kvh) * D + d];
            }
            keys[(size_t)j * D + d] = elem(w, kb);
            vals[(size_t)j * D + d] = elem(w, vb);
        }
    const uint16_t *q = w->q + ((size_t)token * s->num_heads + head) * D;
    double mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        int visible = s->sliding_window == 0 || pos - j < s->sliding_window;
        double dot = 0;
        for (int d = 0; d < D; d++)
            dot += elem(w, q[d]) * keys[(size_t)j * D + d];
        logit[j] = visible ? dot / sqrt((double)D) : -INFINITY;
        if (logit[j] > mx)
            mx = logit[j];
    }
    double sum = 0;
    for (int j = 0; j < n; j++) {
        logit[j] = exp(logit[j] - mx);
        sum += logit[j];
    }
    for (int d = 0; d < D; d++) {
        double acc = 0;
        for (int j = 0; j < n; j++)
            acc += logit[j] / sum * vals[(size_t)j * D + d];
        out[d] = acc;
    }
    free(keys);
    free(vals);
    free(logit);
}

static void assert_reference_matches_brute(const ppb_case *c)
{
    ppb_workload w;
    make(&w, c, 99);
    int heads = c->shape.num_heads, D = c->shape.head_dim;
    double ref[256], bf[256];
    for (int t = 0; t < w.total_tokens; t++)
        for (int h = 0; h < heads; h++) {
            ppb_reference_row(&w, t, h, ref);
            brute_row(&w, t, h, bf);
            for (int d = 0; d < D; d++)
                if (fabs(ref[d] - bf[d]) > 1e-12)
                    fail_msg("%s: token %d head %d dim %d: reference %.17g, brute force %.17g", c->key,
                             t, h, d, ref[d], bf[d]);
        }
    ppb_workload_free(&w);
}

static void test_matches_brute_force(void **state)
{
    (void)state;
    for (int dtype = 0; dtype < 2; dtype++)
        for (int window = 0; window <= 7; window += 7) {
            ppb_case p = make_case(PPB_PREFIX_PREFILL, 3, 9, 19, 4, 2, 64, 8, window, dtype, 1);
            assert_reference_matches_brute(&p);
            ppb_case d = make_case(PPB_PAGED_ATTENTION, 3, 0, 21, 4, 1, 64, 8, window ? 5 : 0, dtype, 1);
            assert_reference_matches_brute(&d);
        }
    ppb_case no_ctx = make_case(PPB_PREFIX_PREFILL, 2, 5, 0, 2, 2, 128, 16, 0, PPB_BF16, 0);
    assert_reference_matches_brute(&no_ctx);
    ppb_case gqa8 = make_case(PPB_PREFIX_PREFILL, 1, 3, 17, 8, 1, 64, 32, 0, PPB_FP16, 0);
    assert_reference_matches_brute(&gqa8);
}

static int rows_equal(const double *a, const double *b, int n) { return memcmp(a, b, sizeof(double) * (size_t)n) == 0; }

/* Flip a key element of cached position j of sequence 0, kv head kvh. */
static void poke_cached_key(ppb_workload *w, int kvh, int j, int d)
{
    int page = w->c->shape.page_size;
    int phys = w->block_table[j / page];
    size_t i = ppb_kcache_index(w, phys, kvh, d, j % page);
    w->k_cache[i] ^= 0x0400; /* changes the exponent: a large change */
}

static void test_causal_mask_and_window(void **state)
{
    (void)state;
    ppb_case c = make_case(PPB_PREFIX_PREFILL, 1, 6, 10, 1, 1, 64, 8, 0, PPB_FP16, 0);
    ppb_workload w;
    make(&w, &c, 5);
    double r0[64], r1[64];
    ppb_reference_row(&w, 2, 0, r0); /* new token 2: position 12 */
    w.k[3 * 64 + 5] ^= 0x0400;        /* future token 3 */
    ppb_reference_row(&w, 2, 0, r1);
    assert_true(rows_equal(r0, r1, 64));
    w.k[2 * 64 + 5] ^= 0x0400;        /* its own key */
    ppb_reference_row(&w, 2, 0, r1);
    assert_false(rows_equal(r0, r1, 64));
    w.k[2 * 64 + 5] ^= 0x0400;
    poke_cached_key(&w, 0, 0, 9);     /* first context token: visible without a window */
    ppb_reference_row(&w, 2, 0, r1);
    assert_false(rows_equal(r0, r1, 64));
    ppb_workload_free(&w);

    /* window 4 at position 12: keys 9..12 only */
    c = make_case(PPB_PREFIX_PREFILL, 1, 6, 10, 1, 1, 64, 8, 4, PPB_FP16, 0);
    make(&w, &c, 5);
    ppb_reference_row(&w, 2, 0, r0);
    poke_cached_key(&w, 0, 8, 1);
    ppb_reference_row(&w, 2, 0, r1);
    assert_true(rows_equal(r0, r1, 64));
    poke_cached_key(&w, 0, 9, 1);
    ppb_reference_row(&w, 2, 0, r1);
    assert_false(rows_equal(r0, r1, 64));
    ppb_workload_free(&w);

    /* decode, window 3, seq 20: query at 19 sees 17..19 */
    c = make_case(PPB_PAGED_ATTENTION, 1, 0, 20, 1, 1, 64, 8, 3, PPB_BF16, 0);
    make(&w, &c, 5);
    ppb_reference_row(&w, 0, 0, r0);
    poke_cached_key(&w, 0, 16, 0);
    ppb_reference_row(&w, 0, 0, r1);
    assert_true(rows_equal(r0, r1, 64));
    poke_cached_key(&w, 0, 17, 0);
    ppb_reference_row(&w, 0, 0, r1);
    assert_false(rows_equal(r0, r1, 64));
    ppb_workload_free(&w);
}

static void test_gqa_head_mapping(void **state)
{
    (void)state;
    ppb_case c = make_case(PPB_PREFIX_PREFILL, 1, 4, 0, 8, 2, 64, 16, 0, PPB_FP16, 0);
    ppb_workload w;
    make(&w, &c, 8);
    double before[8][64], after[64];
    for (int h = 0; h < 8; h++)
        ppb_reference_row(&w, 3, h, before[h]);
    w.v[(0 * 2 + 1) * 64 + 10] ^= 0x0400; /* token 0, kv head 1 */
    for (int h = 0; h < 8; h++) {
        ppb_reference_row(&w, 3, h, after);
        if (h < 4)
            assert_true(rows_equal(before[h], after, 64));
        else
            assert_false(rows_equal(before[h], after, 64));
    }
    ppb_workload_free(&w);
}

/* ---- the checker ----------------------------------------------------------------------- */

static ppb_check_settings settings(long full_max, int samples)
{
    ppb_check_settings cs;
    cs.atol[PPB_FP16] = 2e-3;
    cs.rtol[PPB_FP16] = 1e-2;
    cs.atol[PPB_BF16] = 1.6e-2;
    cs.rtol[PPB_BF16] = 5e-2;
    cs.full_check_max_rows = full_max;
    cs.sample_rows = samples;
    return cs;
}

/* The reference rounded to the storage dtype: the best output a kernel can give. */
static uint16_t *perfect_output(const ppb_workload *w)
{
    const ppb_shape *s = &w->c->shape;
    uint16_t *out = malloc(sizeof(uint16_t) * w->out_elems);
    double row[256];
    for (int t = 0; t < w->total_tokens; t++)
        for (int h = 0; h < s->num_heads; h++) {
            ppb_reference_row(w, t, h, row);
            for (int d = 0; d < s->head_dim; d++)
                out[((size_t)t * s->num_heads + h) * s->head_dim + d] = ppb_float_to_half((float)row[d], s->dtype);
        }
    return out;
}

static void check(const ppb_workload *w, const uint16_t *out, ppb_check_settings cs, uint64_t seed,
                  ppb_check_result *res)
{
    ppb_err err = {{0}};
    int rc = ppb_reference_check(w, out, &cs, seed, res, &err);
    if (rc)
        fail_msg("ppb_reference_check: %s", err.msg);
}

static void test_checker_flags_errors(void **state)
{
    (void)state;
    for (int dtype = 0; dtype < 2; dtype++) {
        ppb_case c = make_case(PPB_PREFIX_PREFILL, 2, 7, 12, 4, 2, 64, 8, 0, dtype, 1);
        ppb_workload w;
        make(&w, &c, 3);
        uint16_t *out = perfect_output(&w);
        ppb_check_result r;
        check(&w, out, settings(1000000, 0), 1, &r);
        assert_true(r.checked && r.pass);
        assert_int_equal(r.rows_total, (long)w.total_tokens * 4);
        assert_int_equal(r.rows_checked, r.rows_total);
        assert_true(r.max_abs_err <= (dtype == PPB_FP16 ? 0x1p-11 : 0x1p-8)); /* half an ulp of |x| <= 1 */
        assert_true(r.rel_l2_err < (dtype == PPB_FP16 ? 1e-3 : 5e-3));
        assert_true(r.atol == (dtype == PPB_FP16 ? 2e-3 : 1.6e-2));

        size_t at = 3 * 64 + 17; /* token 0, head 3, dim 17 */
        uint16_t saved = out[at];
        double v = ppb_half_to_float(saved, dtype);
        /* just inside the tolerance: still a pass */
        double tol = r.atol + r.rtol * fabs(v);
        out[at] = ppb_float_to_half((float)(v + 0.5 * tol), dtype);
        check(&w, out, settings(1000000, 0), 1, &r);
        assert_true(r.pass);
        /* one element off by 0.25: fail, and the error says by how much */
        out[at] = ppb_float_to_half((float)(v + 0.25), dtype);
        check(&w, out, settings(1000000, 0), 1, &r);
        assert_false(r.pass);
        assert_true(r.max_abs_err > 0.2 && r.max_abs_err < 0.3);
        assert_int_equal(r.nonfinite, 0);
        assert_int_equal(r.unwritten, 0);
        /* NaN */
        out[at] = dtype == PPB_FP16 ? 0x7E00 : 0x7FC0;
        check(&w, out, settings(1000000, 0), 1, &r);
        assert_false(r.pass);
        assert_int_equal(r.nonfinite, 1);
        assert_int_equal(r.unwritten, 0);
        /* poison left in place: unwritten (for bf16 the pattern is a finite number) */
        out[at] = PPB_POISON_BITS;
        check(&w, out, settings(1000000, 0), 1, &r);
        assert_false(r.pass);
        assert_int_equal(r.unwritten, 1);
        assert_int_equal(r.nonfinite, 0);
        out[at] = saved;
        check(&w, out, settings(1000000, 0), 1, &r);
        assert_true(r.pass);
        free(out);
        ppb_workload_free(&w);
    }
}

static void test_sampling(void **state)
{
    (void)state;
    /* ragged: 9, 6, 3 new tokens; 4 heads -> 72 rows */
    ppb_case c = make_case(PPB_PREFIX_PREFILL, 3, 9, 12, 4, 2, 64, 8, 0, PPB_BF16, 1);
    ppb_workload w;
    make(&w, &c, 4);
    uint16_t *out = perfect_output(&w);
    ppb_check_result a, b;
    check(&w, out, settings(10, 5), 77, &a);
    check(&w, out, settings(10, 5), 77, &b);
    assert_true(a.pass);
    assert_int_equal(a.rows_total, 72);
    assert_true(a.rows_checked >= 6 && a.rows_checked <= 11);
    assert_int_equal(a.rows_checked, b.rows_checked);
    assert_true(a.max_abs_err == b.max_abs_err && a.rel_l2_err == b.rel_l2_err);

    /* without random samples exactly each sequence's first and last row are checked */
    check(&w, out, settings(10, 0), 77, &a);
    assert_int_equal(a.rows_checked, 6);
    /* a middle row (token 4 of sequence 0, every head) is not among them ... */
    size_t row_elems = 4 * 64;
    uint16_t *bad = malloc(sizeof(uint16_t) * w.out_elems);
    memcpy(bad, out, sizeof(uint16_t) * w.out_elems);
    for (size_t i = 0; i < row_elems; i++)
        bad[4 * row_elems + i] = PPB_POISON_BITS;
    check(&w, bad, settings(10, 0), 77, &a);
    assert_true(a.pass);
    /* ... but enough random samples find it */
    check(&w, bad, settings(10, 2000), 77, &a);
    assert_false(a.pass);
    assert_true(a.unwritten > 0);
    /* the last row of sequence 1 (token 9 + 6 - 1 = 14) is always checked */
    memcpy(bad, out, sizeof(uint16_t) * w.out_elems);
    for (size_t i = 0; i < row_elems; i++)
        bad[14 * row_elems + i] = PPB_POISON_BITS;
    check(&w, bad, settings(10, 0), 123, &a);
    assert_false(a.pass);
    assert_int_equal(a.unwritten, 64);
    /* and the first row of sequence 2 (token 15) */
    memcpy(bad, out, sizeof(uint16_t) * w.out_elems);
    for (size_t i = 0; i < row_elems; i++)
        bad[15 * row_elems + i] ^= 0x4000;
    check(&w, bad, settings(10, 0), 5, &a);
    assert_false(a.pass);
    free(bad);
    free(out);
    ppb_workload_free(&w);
}

/* The check's rows are computed a GQA group at a time; each must be bit for
 * bit the row computed alone (decode and prefill, windows, sampled rows), and
 * the same again without the host's cache, its elements generated as read. */
static void test_grouped_and_generated_rows_are_the_rows_alone(void **state)
{
    (void)state;
    const ppb_case cases[] = {
        make_case(PPB_PAGED_ATTENTION, 3, 1, 200, 32, 4, 64, 16, 0, PPB_BF16, 0),
        make_case(PPB_PAGED_ATTENTION, 4, 1, 150, 8, 1, 128, 8, 40, PPB_FP16, 1),
        make_case(PPB_PREFIX_PREFILL, 2, 20, 37, 8, 2, 64, 32, 24, PPB_FP16, 1),
        make_case(PPB_PREFIX_PREFILL, 2, 300, 100, 16, 2, 64, 16, 0, PPB_BF16, 0), /* sampled */
    };
    ppb_check_settings cs = {{1e-2, 2e-2}, {1e-2, 2e-2}, 4096, 64};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ppb_workload w, generated;
        ppb_reference_rows rows, from_generated;
        ppb_err err = {{0}};
        make(&w, &cases[k], 5);
        assert_int_equal(ppb_reference_rows_compute(&w, &cs, 11, &rows, &err), PPB_OK);
        const int heads = cases[k].shape.num_heads, dim = cases[k].shape.head_dim;
        double alone[256];
        for (long i = 0; i < rows.n; i++) {
            ppb_reference_row(&w, (int)(rows.rows[i] / heads), (int)(rows.rows[i] % heads), alone);
            assert_memory_equal(alone, rows.values + (size_t)i * (size_t)dim, sizeof(double) * (size_t)dim);
        }
        if (k == 3)
            assert_true(rows.n < (long)w.total_tokens * heads);
        assert_int_equal(ppb_workload_create(&generated, &cases[k], 5, 0, &err), PPB_OK);
        assert_int_equal(ppb_workload_fill_queries(&generated, &err), PPB_OK);
        assert_null(generated.k_cache);
        assert_int_equal(ppb_reference_rows_compute(&generated, &cs, 11, &from_generated, &err), PPB_OK);
        assert_int_equal(rows.n, from_generated.n);
        assert_memory_equal(rows.rows, from_generated.rows, sizeof(long) * (size_t)rows.n);
        assert_memory_equal(rows.values, from_generated.values, sizeof(double) * (size_t)rows.n * (size_t)dim);
        ppb_reference_rows_free(&from_generated);
        ppb_workload_free(&generated);
        ppb_reference_rows_free(&rows);
        ppb_workload_free(&w);
    }
}

/* A 100K-token row: sampled check of a long decode sequence stays cheap. */
static void test_long_context_row(void **state)
{
    (void)state;
    ppb_case c = make_case(PPB_PAGED_ATTENTION, 1, 0, 100000, 1, 1, 64, 16, 0, PPB_FP16, 0);
    ppb_workload w;
    make(&w, &c, 6);
    uint16_t *out = perfect_output(&w);
    ppb_check_result r;
    check(&w, out, settings(0, 4), 1, &r);
    assert_true(r.pass);
    assert_int_equal(r.rows_checked, 1);
    out[10] ^= 0x2000;
    check(&w, out, settings(0, 4), 1, &r);
    assert_false(r.pass);
    free(out);
    ppb_workload_free(&w);
}

/* Decode's sample: random rows in whole GQA groups, and the batch's first and
 * last sequence. */
static void test_decode_sample_in_groups(void **state)
{
    (void)state;
    ppb_case c = make_case(PPB_PAGED_ATTENTION, 6, 1, 40, 16, 2, 64, 16, 0, PPB_BF16, 0);
    ppb_workload w;
    make(&w, &c, 2);
    ppb_check_settings cs = settings(0, 16); /* 16 rows: two groups of 8 */
    for (uint64_t seed = 1; seed <= 8; seed++) {
        ppb_reference_rows rows;
        ppb_err err = {{0}};
        assert_int_equal(ppb_reference_rows_compute(&w, &cs, seed, &rows, &err), PPB_OK);
        int heads_of[6][2] = {{0}};
        for (long i = 0; i < rows.n; i++)
            heads_of[rows.rows[i] / 16][rows.rows[i] % 16 / 8]++;
        int whole = 0, partial = 0;
        for (int b = 0; b < 6; b++)
            for (int g = 0; g < 2; g++) {
                whole += heads_of[b][g] == 8;
                partial += heads_of[b][g] > 0 && heads_of[b][g] < 8;
            }
        assert_true(heads_of[0][0] + heads_of[0][1] > 0);
        assert_true(heads_of[5][0] + heads_of[5][1] > 0);
        /* the draws' groups (two, unless both fell on one) are whole; the two edge
         * sequences' rows add at most two partial groups */
        assert_true(whole >= 1 && whole <= 2);
        assert_true(partial <= 2);
        assert_true(rows.n <= 2 * 8 + 2);
        ppb_reference_rows_free(&rows);
    }
    ppb_workload_free(&w);
}

/* The cache is worth a host copy only where the rows read it more than once. */
static void test_fill_inputs(void **state)
{
    (void)state;
    ppb_check_settings cs = settings(4096, 64);
    const struct {
        ppb_case c;
        int cache_on_host;
    } cases[] = {
        /* decode, every row: each (sequence, kv head) group reads its own keys once */
        {make_case(PPB_PAGED_ATTENTION, 3, 1, 200, 32, 4, 64, 16, 0, PPB_BF16, 0), 0},
        /* prefill, sampled: the sampled queries of a sequence share its context */
        {make_case(PPB_PREFIX_PREFILL, 2, 300, 100, 16, 2, 64, 16, 0, PPB_BF16, 0), 1},
        /* prefill without a context: nothing in the cache to read */
        {make_case(PPB_PREFIX_PREFILL, 2, 300, 0, 16, 2, 64, 16, 0, PPB_BF16, 0), 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ppb_workload w;
        ppb_err err = {{0}};
        assert_int_equal(ppb_workload_create(&w, &cases[k].c, 1, 0, &err), PPB_OK);
        assert_int_equal(ppb_reference_fill_inputs(&w, &cs, 1, &err), PPB_OK);
        assert_non_null(w.q);
        assert_int_equal(w.k_cache != NULL, cases[k].cache_on_host);
        assert_int_equal(w.v_cache != NULL, cases[k].cache_on_host);
        ppb_workload_free(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_brute_force),
        cmocka_unit_test(test_causal_mask_and_window),
        cmocka_unit_test(test_gqa_head_mapping),
        cmocka_unit_test(test_checker_flags_errors),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_long_context_row),
        cmocka_unit_test(test_grouped_and_generated_rows_are_the_rows_alone),
        cmocka_unit_test(test_decode_sample_in_groups),
        cmocka_unit_test(test_fill_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
