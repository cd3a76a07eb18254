/* Inputs: reproducibility, paging, lengths, garbage slots, fp16/bf16 conversion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_args.h"
#include "ppb_rng.h"
#include "workload.h"

static ppb_case prefill_case(int batch, int q, int ctx, int ragged)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = batch;
    c.shape.query_len = q;
    c.shape.context_len = ctx;
    c.shape.ragged = ragged;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.shape.page_size = 16;
    c.shape.dtype = PPB_FP16;
    ppb_case_make_key(&c);
    return c;
}

static ppb_case decode_case(int batch, int seq, int ragged)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = batch;
    c.shape.seq_len = seq;
    c.shape.ragged = ragged;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 1;
    c.shape.head_dim = 64;
    c.shape.page_size = 8;
    c.shape.dtype = PPB_BF16;
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

static void test_reproducible_for_a_seed(void **state)
{
    (void)state;
    ppb_case c = prefill_case(3, 40, 50, 1);
    ppb_workload a, b;
    make(&a, &c, 42);
    make(&b, &c, 42);
    assert_int_equal(a.total_tokens, b.total_tokens);
    assert_memory_equal(a.q, b.q, a.q_elems * 2);
    assert_memory_equal(a.k, b.k, a.kv_elems * 2);
    assert_memory_equal(a.v, b.v, a.kv_elems * 2);
    assert_memory_equal(a.k_cache, b.k_cache, a.cache_elems * 2);
    assert_memory_equal(a.v_cache, b.v_cache, a.cache_elems * 2);
    assert_memory_equal(a.block_table, b.block_table,
                        sizeof(int32_t) * (size_t)a.batch * (size_t)a.max_blocks_per_seq);
    /* the definition the CUDA side relies on: element i of tensor t = f(seed, t, i) */
    for (size_t i = 0; i < a.q_elems; i += 97)
        assert_int_equal(a.q[i], ppb_rng_input(42, PPB_T_Q, i, PPB_FP16, 0));
    for (size_t i = 0; i < a.kv_elems; i += 89)
        assert_int_equal(a.v[i], ppb_rng_input(42, PPB_T_V, i, PPB_FP16, 0));
    ppb_workload_free(&a);
    ppb_workload_free(&b);
}

/* Tensors filled later (the session fills them only when the reference needs
 * them) are the tensors filled at once; valid_tokens describes the table. */
static void test_fill_later_is_the_same(void **state)
{
    (void)state;
    ppb_case c = prefill_case(3, 40, 50, 1);
    ppb_workload a, b;
    ppb_err err = {{0}};
    make(&a, &c, 42);
    assert_int_equal(ppb_workload_create(&b, &c, 42, 0, &err), PPB_OK);
    assert_null(b.q);
    assert_int_equal(ppb_workload_fill(&b, &err), PPB_OK);
    assert_memory_equal(a.q, b.q, a.q_elems * 2);
    assert_memory_equal(a.k, b.k, a.kv_elems * 2);
    assert_memory_equal(a.v, b.v, a.kv_elems * 2);
    assert_memory_equal(a.k_cache, b.k_cache, a.cache_elems * 2);
    assert_memory_equal(a.v_cache, b.v_cache, a.cache_elems * 2);
    uint16_t *q = b.q;
    assert_int_equal(ppb_workload_fill(&b, &err), PPB_OK); /* filled already: kept */
    assert_ptr_equal(b.q, q);
    /* the queries alone, then the cache on top: the same bits, q kept */
    ppb_workload_free_tensors(&b);
    assert_int_equal(ppb_workload_fill_queries(&b, &err), PPB_OK);
    assert_null(b.k_cache);
    assert_null(b.v_cache);
    assert_memory_equal(a.q, b.q, a.q_elems * 2);
    assert_memory_equal(a.k, b.k, a.kv_elems * 2);
    q = b.q;
    assert_int_equal(ppb_workload_fill(&b, &err), PPB_OK);
    assert_ptr_equal(b.q, q);
    assert_memory_equal(a.k_cache, b.k_cache, a.cache_elems * 2);
    assert_memory_equal(a.v_cache, b.v_cache, a.cache_elems * 2);
    int page = c.shape.page_size, used = 0;
    for (int s = 0; s < b.batch; s++)
        for (int lp = 0; lp * page < b.context_lens[s]; lp++, used++) {
            int left = b.context_lens[s] - lp * page;
            assert_int_equal(b.valid_tokens[b.block_table[s * b.max_blocks_per_seq + lp]], left < page ? left : page);
        }
    int zero = 0; /* the spare page holds no token */
    for (int p = 0; p < b.num_blocks; p++)
        zero += b.valid_tokens[p] == 0;
    assert_int_equal(zero, b.num_blocks - used);
    ppb_workload_free(&a);
    ppb_workload_free(&b);
}

static void test_different_for_another_seed(void **state)
{
    (void)state;
    ppb_case c = prefill_case(2, 30, 200, 0);
    ppb_workload a, b;
    make(&a, &c, 1);
    make(&b, &c, 2);
    size_t same = 0;
    for (size_t i = 0; i < a.q_elems; i++)
        same += a.q[i] == b.q[i];
    assert_true(same < a.q_elems / 20); /* fp16 of uniform values: collisions are rare */
    assert_memory_not_equal(a.k_cache, b.k_cache, a.cache_elems * 2);
    assert_memory_not_equal(a.block_table, b.block_table,
                            sizeof(int32_t) * (size_t)a.batch * (size_t)a.max_blocks_per_seq);
    ppb_workload_free(&a);
    ppb_workload_free(&b);
}

/* Every used table entry is a distinct page in range, and the mapping is not the
 * identity (logical page order != physical order). */
static void assert_permuted_table(const ppb_workload *w, int page)
{
    char *seen = calloc((size_t)w->num_blocks, 1);
    assert_non_null(seen);
    int used = 0, in_order = 0;
    for (int b = 0; b < w->batch; b++) {
        int pages = (w->context_lens[b] + page - 1) / page;
        for (int p = 0; p < pages; p++) {
            int32_t phys = w->block_table[(size_t)b * (size_t)w->max_blocks_per_seq + (size_t)p];
            assert_true(phys >= 0 && phys < w->num_blocks);
            assert_false(seen[phys]);
            seen[phys] = 1;
            in_order += phys == used;
            used++;
        }
    }
    if (used > 0)
        assert_true(in_order < used);
    assert_true(w->num_blocks >= used);
    free(seen);
}

static void test_block_table_is_a_permutation(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++) {
        ppb_case c = decode_case(4, 100, 1);
        ppb_workload w;
        make(&w, &c, seed);
        assert_permuted_table(&w, 8);
        ppb_workload_free(&w);
    }
    /* one page in total: still not the identity */
    for (uint64_t seed = 0; seed < 20; seed++) {
        ppb_case c = decode_case(1, 5, 0);
        ppb_workload w;
        make(&w, &c, seed);
        assert_int_equal(w.max_blocks_per_seq, 1);
        assert_int_not_equal(w.block_table[0], 0);
        assert_permuted_table(&w, 8);
        ppb_workload_free(&w);
    }
}

static void test_ragged_prefill_lengths(void **state)
{
    (void)state;
    ppb_case c = prefill_case(4, 100, 37, 1);
    ppb_workload w;
    make(&w, &c, 7);
    const int q[4] = {100, 75, 50, 25}, ctx[4] = {37, 28, 19, 10};
    int start = 0;
    for (int b = 0; b < 4; b++) {
        assert_int_equal(w.query_lens[b], q[b]);
        assert_int_equal(w.context_lens[b], ctx[b]);
        assert_int_equal(w.start_loc[b], start);
        start += q[b];
    }
    assert_int_equal(w.start_loc[4], 250);
    assert_int_equal(w.total_tokens, 250);
    /* context only in the cache: 3 + 2 + 2 + 1 pages of 16, plus one spare */
    assert_int_equal(w.max_blocks_per_seq, 3);
    assert_int_equal(w.num_blocks, 9);
    assert_int_equal(w.q_elems, (size_t)250 * 4 * 64);
    assert_int_equal(w.kv_elems, (size_t)250 * 2 * 64);
    assert_int_equal(w.out_elems, w.q_elems);
    assert_int_equal(w.cache_elems, (size_t)9 * 2 * 64 * 16);
    assert_permuted_table(&w, 16);
    ppb_workload_free(&w);

    /* no context at all: a table of one unused entry, cache of one spare page */
    c = prefill_case(2, 9, 0, 0);
    make(&w, &c, 7);
    assert_int_equal(w.context_lens[0], 0);
    assert_int_equal(w.max_blocks_per_seq, 1);
    assert_int_equal(w.num_blocks, 1);
    ppb_workload_free(&w);
}

static void test_decode_lengths(void **state)
{
    (void)state;
    ppb_case c = decode_case(3, 50, 1);
    ppb_workload w;
    make(&w, &c, 3);
    const int seq[3] = {50, 34, 17};
    for (int b = 0; b < 3; b++) {
        assert_int_equal(w.query_lens[b], 1);
        assert_int_equal(w.context_lens[b], seq[b]);
    }
    assert_int_equal(w.total_tokens, 3);
    assert_null(w.k);
    assert_null(w.v);
    assert_int_equal(w.kv_elems, 0);
    assert_int_equal(w.max_blocks_per_seq, 7);                 /* ceil(50 / 8) */
    assert_int_equal(w.num_blocks, 7 + 5 + 3 + 1);
    assert_int_equal(w.q_elems, (size_t)3 * 4 * 64);
    ppb_workload_free(&w);
}

/* Valid slots hold values in [-1, 1]; slots past a sequence's length and spare
 * pages hold 100 + u, so a kernel that reads them gets a visibly wrong result. */
static void test_garbage_slots(void **state)
{
    (void)state;
    ppb_case c = decode_case(2, 21, 0); /* 21 = 2 pages + 5 slots of page 8 */
    ppb_workload w;
    make(&w, &c, 11);
    int *valid = calloc((size_t)w.num_blocks, sizeof(int));
    for (int b = 0; b < w.batch; b++)
        for (int p = 0; p < 3; p++)
            valid[w.block_table[b * w.max_blocks_per_seq + p]] = p < 2 ? 8 : 5;
    int n_garbage = 0;
    for (int blk = 0; blk < w.num_blocks; blk++)
        for (int slot = 0; slot < 8; slot++)
            for (int d = 0; d < 64; d += 7) {
                float kf = ppb_half_to_float(w.k_cache[ppb_kcache_index(&w, blk, 0, d, slot)], PPB_BF16);
                float vf = ppb_half_to_float(w.v_cache[ppb_vcache_index(&w, blk, 0, d, slot)], PPB_BF16);
                if (slot < valid[blk]) {
                    assert_true(kf >= -1.0f && kf <= 1.0f);
                    assert_true(vf >= -1.0f && vf <= 1.0f);
                } else {
                    assert_true(kf >= 99.0f && kf <= 101.0f);
                    assert_true(vf >= 99.0f && vf <= 101.0f);
                    n_garbage++;
                }
            }
    assert_true(n_garbage > 0);
    /* values are not degenerate: both signs, spread out */
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < w.q_elems; i++) {
        double v = ppb_half_to_float(w.q[i], PPB_BF16);
        assert_true(v >= -1.0 && v <= 1.0);
        sum += v;
        sum2 += v * v;
    }
    double mean = sum / (double)w.q_elems, var = sum2 / (double)w.q_elems - mean * mean;
    assert_true(fabs(mean) < 0.1);
    assert_true(fabs(var - 1.0 / 3.0) < 0.05);
    free(valid);
    ppb_workload_free(&w);
}

static void test_cache_index_layout(void **state)
{
    (void)state;
    ppb_case c = prefill_case(1, 4, 40, 0); /* KVH 2, D 64, page 16 */
    ppb_workload w;
    ppb_err err = {{0}};
    assert_int_equal(ppb_workload_create(&w, &c, 1, 0, &err), 0);
    assert_null(w.q); /* without tensors */
    /* k: [blocks, KVH, D/8, page, 8] */
    assert_int_equal(ppb_kcache_index(&w, 0, 0, 0, 0), 0);
    assert_int_equal(ppb_kcache_index(&w, 0, 0, 7, 0), 7);
    assert_int_equal(ppb_kcache_index(&w, 0, 0, 0, 1), 8);
    assert_int_equal(ppb_kcache_index(&w, 0, 0, 8, 0), 16 * 8);
    assert_int_equal(ppb_kcache_index(&w, 0, 1, 0, 0), 64 * 16);
    assert_int_equal(ppb_kcache_index(&w, 2, 1, 9, 3), ((2 * 2 + 1) * 8 + 1) * 16 * 8 + 3 * 8 + 1);
    /* v: [blocks, KVH, D, page] */
    assert_int_equal(ppb_vcache_index(&w, 0, 0, 0, 5), 5);
    assert_int_equal(ppb_vcache_index(&w, 0, 0, 1, 0), 16);
    assert_int_equal(ppb_vcache_index(&w, 2, 1, 9, 3), ((2 * 2 + 1) * 64 + 9) * 16 + 3);
    ppb_workload_free(&w);
}

static void test_host_bytes(void **state)
{
    (void)state;
    ppb_case c = prefill_case(4, 100, 37, 1);
    ppb_workload w;
    make(&w, &c, 1);
    size_t tensors = 2 * (w.q_elems + 2 * w.kv_elems + 2 * w.cache_elems);
    size_t est = ppb_workload_host_bytes(&c);
    assert_true(est >= tensors);
    assert_true(est < tensors + 4096);
    ppb_workload_free(&w);
    /* a 1M-token decode batch is estimated without allocating anything */
    ppb_case big = decode_case(64, 1048576, 0);
    big.shape.num_kv_heads = 4;
    big.shape.head_dim = 128;
    assert_true(ppb_workload_host_bytes(&big) > (size_t)64 * 1048576 * 4 * 128 * 2 * 2);
}

static void test_invalid_case_refused(void **state)
{
    (void)state;
    ppb_case c = prefill_case(1, 4, 0, 0);
    c.shape.num_kv_heads = 3; /* 4 heads not a multiple of 3 */
    ppb_workload w;
    ppb_err err = {{0}};
    assert_int_equal(ppb_workload_create(&w, &c, 1, 1, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "num_kv_heads"));
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_fp16_conversion(void **state)
{
    (void)state;
    const int H = PPB_FP16;
    assert_int_equal(ppb_float_to_half(1.0f, H), 0x3C00);
    assert_int_equal(ppb_float_to_half(-2.0f, H), 0xC000);
    assert_int_equal(ppb_float_to_half(0.0f, H), 0x0000);
    assert_int_equal(ppb_float_to_half(-0.0f, H), 0x8000);
    assert_int_equal(ppb_float_to_half(65504.0f, H), 0x7BFF);
    assert_int_equal(ppb_float_to_half(65519.0f, H), 0x7BFF);
    assert_int_equal(ppb_float_to_half(65520.0f, H), 0x7C00); /* tie, odd max rounds up to inf */
    assert_int_equal(ppb_float_to_half(1e6f, H), 0x7C00);
    assert_int_equal(ppb_float_to_half(-1e6f, H), 0xFC00);
    assert_int_equal(ppb_float_to_half(INFINITY, H), 0x7C00);
    assert_int_equal(ppb_float_to_half(-INFINITY, H), 0xFC00);
    uint16_t n = ppb_float_to_half(NAN, H);
    assert_int_equal(n & 0x7C00, 0x7C00);
    assert_int_not_equal(n & 0x03FF, 0);
    /* round to nearest even at the tie */
    assert_int_equal(ppb_float_to_half(1.0f + 0x1p-11f, H), 0x3C00);     /* to even (down) */
    assert_int_equal(ppb_float_to_half(1.0f + 3 * 0x1p-11f, H), 0x3C02); /* to even (up) */
    assert_int_equal(ppb_float_to_half(1.0f + 0x1p-11f + 0x1p-20f, H), 0x3C01); /* above the tie */
    /* subnormals */
    assert_int_equal(ppb_float_to_half(0x1p-24f, H), 0x0001);
    assert_int_equal(ppb_float_to_half(0x1p-25f, H), 0x0000);       /* tie to even: zero */
    assert_int_equal(ppb_float_to_half(1.5f * 0x1p-25f, H), 0x0001);
    assert_int_equal(ppb_float_to_half(1.5f * 0x1p-24f, H), 0x0002); /* tie 1|2 -> 2 */
    assert_int_equal(ppb_float_to_half(2.5f * 0x1p-24f, H), 0x0002); /* tie 2|3 -> 2 */
    assert_int_equal(ppb_float_to_half(1023.0f * 0x1p-24f, H), 0x03FF);
    assert_int_equal(ppb_float_to_half(1023.5f * 0x1p-24f, H), 0x0400); /* into the normals */
    assert_int_equal(ppb_float_to_half(0x1p-14f, H), 0x0400);
    assert_int_equal(ppb_float_to_half(-0x1p-24f, H), 0x8001);
    assert_int_equal(ppb_float_to_half(1e-10f, H), 0x0000);
    assert_true(ppb_half_to_float(0x0001, H) == 0x1p-24f);
    assert_true(ppb_half_to_float(0x03FF, H) == 1023.0f * 0x1p-24f);
    assert_true(ppb_half_to_float(0x7BFF, H) == 65504.0f);
    assert_true(isinf(ppb_half_to_float(0xFC00, H)) && ppb_half_to_float(0xFC00, H) < 0);
    assert_true(isnan(ppb_half_to_float(0x7E00, H)));
    /* every pattern: exact decode, and encode(decode(h)) == h for non-NaN */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ppb_half_to_float((uint16_t)h, H);
        if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) {
            assert_true(isnan(f));
            continue;
        }
        assert_int_equal(ppb_float_to_half(f, H), h);
    }
}

static void test_bf16_conversion(void **state)
{
    (void)state;
    const int B = PPB_BF16;
    assert_int_equal(ppb_float_to_half(1.0f, B), 0x3F80);
    assert_int_equal(ppb_float_to_half(-2.0f, B), 0xC000);
    assert_int_equal(ppb_float_to_half(1.0f + 0x1p-8f, B), 0x3F80);     /* tie to even (down) */
    assert_int_equal(ppb_float_to_half(1.0f + 3 * 0x1p-8f, B), 0x3F82); /* tie to even (up) */
    assert_int_equal(ppb_float_to_half(1.0f + 0x1p-8f + 0x1p-20f, B), 0x3F81);
    assert_int_equal(ppb_float_to_half(bits_to_float(0x7F7FFFFFu), B), 0x7F80); /* FLT_MAX -> inf */
    assert_int_equal(ppb_float_to_half(INFINITY, B), 0x7F80);
    assert_int_equal(ppb_float_to_half(-INFINITY, B), 0xFF80);
    assert_int_equal(ppb_float_to_half(bits_to_float(0x00010000u), B), 0x0001); /* subnormal */
    assert_int_equal(ppb_float_to_half(bits_to_float(0x00018000u), B), 0x0002); /* tie 1|2 -> 2 */
    uint16_t n = ppb_float_to_half(bits_to_float(0x7F800001u), B); /* NaN with a low payload */
    assert_int_equal(n & 0x7F80, 0x7F80);
    assert_int_not_equal(n & 0x007F, 0);
    assert_true(isnan(ppb_half_to_float(n, B)));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ppb_half_to_float((uint16_t)h, B);
        if ((h & 0x7F80) == 0x7F80 && (h & 0x7F)) {
            assert_true(isnan(f));
            continue;
        }
        assert_int_equal(ppb_float_to_half(f, B), h);
    }
}

/* The FLASH-layout copy [pages, page, kv_heads, D] holds, at every (page, slot,
 * kv head, d), what vLLM's layout holds there (ppb_kcache_index /
 * ppb_vcache_index, the layouts' own definitions), garbage slots included, for
 * a GQA prefill and a decode with 1 kv head; the VLLM layout copies as is. */
static void test_flash_layout_copy(void **state)
{
    (void)state;
    const ppb_case cases[] = {prefill_case(2, 30, 200, 1), decode_case(3, 70, 1)};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        ppb_workload w;
        make(&w, &cases[ci], 11);
        const ppb_shape *s = &cases[ci].shape;
        uint16_t *k = ppb_workload_cache_in_layout(&w, 1, PPB_KV_LAYOUT_FLASH);
        uint16_t *v = ppb_workload_cache_in_layout(&w, 0, PPB_KV_LAYOUT_FLASH);
        uint16_t *same = ppb_workload_cache_in_layout(&w, 1, PPB_KV_LAYOUT_VLLM);
        assert_non_null(k);
        assert_non_null(v);
        assert_non_null(same);
        assert_memory_equal(same, w.k_cache, w.cache_elems * sizeof *same);
        size_t i = 0, garbage = 0;
        for (int page = 0; page < w.num_blocks; page++)
            for (int slot = 0; slot < s->page_size; slot++)
                for (int h = 0; h < s->num_kv_heads; h++)
                    for (int d = 0; d < s->head_dim; d++, i++) {
                        assert_int_equal(k[i], w.k_cache[ppb_kcache_index(&w, page, h, d, slot)]);
                        assert_int_equal(v[i], w.v_cache[ppb_vcache_index(&w, page, h, d, slot)]);
                        garbage += slot >= w.valid_tokens[page];
                    }
        assert_int_equal(i, w.cache_elems);
        assert_true(garbage > 0); /* the copy covers the slots no kernel may read, too */
        free(k);
        free(v);
        free(same);
        ppb_workload_free(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reproducible_for_a_seed),
        cmocka_unit_test(test_fill_later_is_the_same),
        cmocka_unit_test(test_different_for_another_seed),
        cmocka_unit_test(test_block_table_is_a_permutation),
        cmocka_unit_test(test_ragged_prefill_lengths),
        cmocka_unit_test(test_decode_lengths),
        cmocka_unit_test(test_garbage_slots),
        cmocka_unit_test(test_cache_index_layout),
        cmocka_unit_test(test_flash_layout_copy),
        cmocka_unit_test(test_host_bytes),
        cmocka_unit_test(test_invalid_case_refused),
        cmocka_unit_test(test_fp16_conversion),
        cmocka_unit_test(test_bf16_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
