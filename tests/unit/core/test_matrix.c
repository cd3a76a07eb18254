/* Matrix expansion, --filter and --shard, on suites built in code (the YAML
 * parser has its own tests), with counts computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hash.h"
#include "matrix.h"

/* ---- building suites ----------------------------------------------------- */

#define MAX_SETS 8

typedef struct test_suite {
    ppb_suite s;
    ppb_axis_set shapes[MAX_SETS], configs[MAX_SETS], excludes[MAX_SETS], weights[MAX_SETS];
} test_suite;

static test_suite *new_suite(ppb_kernel_kind kernel)
{
    test_suite *t = calloc(1, sizeof *t);
    assert_non_null(t);
    ppb_suite_defaults(&t->s);
    snprintf(t->s.path, sizeof t->s.path, "suite.yaml");
    snprintf(t->s.name, sizeof t->s.name, "t");
    t->s.kernel = kernel;
    t->s.shapes = t->shapes;
    t->s.configs = t->configs;
    t->s.excludes = t->excludes;
    t->s.weights = t->weights;
    return t;
}

static ppb_axis_set *add_set(ppb_axis_set *sets, int *n, int line)
{
    assert_true(*n < MAX_SETS);
    ppb_axis_set *set = &sets[(*n)++];
    memset(set, 0, sizeof *set);
    set->line = line;
    set->weight = 1.0;
    return set;
}

/* axis(set, field, count, v1, v2, ...) */
static void axis(ppb_axis_set *set, ppb_field f, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    set->axis[f].n = n;
    for (int i = 0; i < n; i++)
        set->axis[f].v[i] = va_arg(ap, int);
    va_end(ap);
}

/* Two prefill shape sets (2 and 6 shapes) x two config sets (8 and 1 configs). */
static test_suite *prefill_suite(void)
{
    test_suite *t = new_suite(PPB_PREFIX_PREFILL);
    ppb_axis_set *a = add_set(t->shapes, &t->s.n_shapes, 10);
    axis(a, PPB_F_QUERY_LEN, 1, 8192);
    axis(a, PPB_F_CONTEXT_LEN, 2, 0, 90112);
    axis(a, PPB_F_NUM_HEADS, 1, 32);
    axis(a, PPB_F_NUM_KV_HEADS, 1, 4);
    ppb_axis_set *b = add_set(t->shapes, &t->s.n_shapes, 16);
    axis(b, PPB_F_QUERY_LEN, 3, 512, 1024, 2048);
    axis(b, PPB_F_CONTEXT_LEN, 1, 16384);
    axis(b, PPB_F_NUM_HEADS, 1, 8);
    axis(b, PPB_F_NUM_KV_HEADS, 1, 1);
    axis(b, PPB_F_HEAD_DIM, 2, 64, 128);
    ppb_axis_set *c = add_set(t->configs, &t->s.n_configs, 30);
    axis(c, PPB_F_BLOCK_M, 2, 64, 128);
    axis(c, PPB_F_BLOCK_N, 2, 64, 128);
    axis(c, PPB_F_NUM_WARPS, 2, 4, 8);
    ppb_axis_set *d = add_set(t->configs, &t->s.n_configs, 35);
    axis(d, PPB_F_BLOCK_M, 1, 32);
    return t;
}

static int count_where(const ppb_case_list *l, int (*pred)(const ppb_case *))
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        n += pred(&l->items[i]);
    return n;
}

static int find_key(const ppb_case_list *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->items[i].key, key) == 0)
            return i;
    return -1;
}

/* ---- expansion ----------------------------------------------------------- */

static void test_expand_counts_and_defaults(void **state)
{
    (void)state;
    test_suite *t = prefill_suite();
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    assert_int_equal(l.n, (2 + 6) * (8 + 1));
    for (int i = 0; i < l.n; i++) {
        const ppb_case *c = &l.items[i];
        assert_int_equal(c->kernel, PPB_PREFIX_PREFILL);
        assert_int_equal(c->shape.dtype, PPB_BF16);     /* defaults where not given */
        assert_int_equal(c->shape.page_size, 16);
        assert_int_equal(c->shape.batch, 1);
        assert_true(c->weight == 1.0);
        ppb_case copy = *c;
        ppb_case_make_key(&copy);
        assert_string_equal(copy.key, c->key);           /* keys are filled */
    }
    /* The second config set takes defaults for block_n / num_warps. */
    ppb_case *last = &l.items[l.n - 1];
    assert_int_equal(last->config.block_m, 32);
    assert_int_equal(last->config.block_n, 128);
    assert_int_equal(last->config.num_warps, 8);
    /* Order: pairs (shape set, config set) in order; inside a pair, fields in
     * table order with the last fastest (shape fields come before config fields). */
    assert_int_equal(l.items[0].shape.context_len, 0);
    assert_int_equal(l.items[0].config.block_m, 64);
    assert_int_equal(l.items[0].config.block_n, 64);
    assert_int_equal(l.items[0].config.num_warps, 4);
    assert_int_equal(l.items[1].config.num_warps, 8);
    assert_int_equal(l.items[2].config.block_n, 128);
    assert_int_equal(l.items[7].shape.context_len, 0);
    assert_int_equal(l.items[8].shape.context_len, 90112);
    assert_int_equal(l.items[8].config.block_m, 64);
    assert_int_equal(l.items[16].config.block_m, 32);  /* then the second config set */
    assert_int_equal(l.items[16].shape.context_len, 0);
    assert_int_equal(l.items[17].shape.context_len, 90112);
    assert_int_equal(l.items[18].shape.query_len, 512);
    assert_int_equal(l.items[18].shape.head_dim, 64);

    /* Deterministic: a second expansion gives the same keys in the same order. */
    ppb_case_list again;
    assert_int_equal(ppb_matrix_expand(&t->s, &again, &err), PPB_OK);
    assert_int_equal(again.n, l.n);
    for (int i = 0; i < l.n; i++)
        assert_string_equal(again.items[i].key, l.items[i].key);
    ppb_case_list_free(&again);
    ppb_case_list_free(&l);
    free(t);
}

static int is_bm128_bn64(const ppb_case *c) { return c->config.block_m == 128 && c->config.block_n == 64; }
static int is_d64_w8(const ppb_case *c) { return c->shape.head_dim == 64 && c->config.num_warps == 8; }

static void test_expand_exclusions(void **state)
{
    (void)state;
    test_suite *t = prefill_suite();
    ppb_axis_set *x = add_set(t->excludes, &t->s.n_excludes, 40);
    axis(x, PPB_F_BLOCK_M, 1, 128);
    axis(x, PPB_F_BLOCK_N, 1, 64);
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    /* 2 of the 9 configs per shape (bm 128, bn 64, both warp counts) x 8 shapes. */
    assert_int_equal(l.n, 72 - 16);
    assert_int_equal(count_where(&l, is_bm128_bn64), 0);
    ppb_case_list_free(&l);

    /* An exclusion over a shape field and a config field together: head_dim 64
     * exists in 3 shapes; num_warps 8 in 4 of the 9 configs... plus the default
     * (8) of the second config set: 5 of 9. */
    ppb_axis_set *y = add_set(t->excludes, &t->s.n_excludes, 41);
    axis(y, PPB_F_HEAD_DIM, 1, 64);
    axis(y, PPB_F_NUM_WARPS, 1, 8);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    /* Of the 3 x 5 = 15 (d 64, w 8) cases, 3 are (bm 128, bn 64, w 8): already gone. */
    assert_int_equal(l.n, 56 - (15 - 3));
    assert_int_equal(count_where(&l, is_d64_w8), 0);
    ppb_case_list_free(&l);

    /* A value list in an exclusion matches any of its values. */
    t->s.n_excludes = 0;
    ppb_axis_set *z = add_set(t->excludes, &t->s.n_excludes, 42);
    axis(z, PPB_F_QUERY_LEN, 2, 512, 8192);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    assert_int_equal(l.n, 72 - (2 + 2) * 9);
    ppb_case_list_free(&l);
    free(t);
}

static void test_expand_weights_first_match(void **state)
{
    (void)state;
    test_suite *t = prefill_suite();
    ppb_axis_set *w1 = add_set(t->weights, &t->s.n_weights, 50);
    axis(w1, PPB_F_NUM_HEADS, 1, 8);
    axis(w1, PPB_F_QUERY_LEN, 1, 2048);
    w1->weight = 4;
    ppb_axis_set *w2 = add_set(t->weights, &t->s.n_weights, 51);
    axis(w2, PPB_F_NUM_HEADS, 1, 8);
    w2->weight = 2;
    ppb_axis_set *w3 = add_set(t->weights, &t->s.n_weights, 52);
    axis(w3, PPB_F_NUM_HEADS, 1, 8);   /* never reached: w2 matches first */
    w3->weight = 100;
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    int n4 = 0, n2 = 0, n1 = 0;
    for (int i = 0; i < l.n; i++) {
        const ppb_case *c = &l.items[i];
        double want = c->shape.num_heads != 8 ? 1.0 : c->shape.query_len == 2048 ? 4.0 : 2.0;
        assert_true(c->weight == want);
        n4 += c->weight == 4.0;
        n2 += c->weight == 2.0;
        n1 += c->weight == 1.0;
    }
    assert_int_equal(n4, 2 * 9);   /* q 2048 at d 64 and 128 */
    assert_int_equal(n2, 4 * 9);
    assert_int_equal(n1, 2 * 9);
    ppb_case_list_free(&l);
    free(t);
}

static void test_expand_dedupes_keeping_first(void **state)
{
    (void)state;
    test_suite *t = new_suite(PPB_PREFIX_PREFILL);
    ppb_axis_set *a = add_set(t->shapes, &t->s.n_shapes, 3);
    axis(a, PPB_F_QUERY_LEN, 1, 256);
    axis(a, PPB_F_CONTEXT_LEN, 2, 0, 100);
    axis(a, PPB_F_NUM_HEADS, 1, 4);
    axis(a, PPB_F_NUM_KV_HEADS, 1, 2);
    ppb_axis_set *b = add_set(t->shapes, &t->s.n_shapes, 8);
    *b = *a;
    b->line = 8;
    b->axis[PPB_F_CONTEXT_LEN].v[0] = 200;   /* {200, 100}: 100 repeats */
    ppb_axis_set *c = add_set(t->configs, &t->s.n_configs, 12);
    axis(c, PPB_F_BLOCK_N, 2, 64, 64);      /* a repeated value inside one axis too */
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    assert_int_equal(l.n, 3);                /* ctx 0, 100, 200 */
    assert_int_equal(l.items[0].shape.context_len, 0);
    assert_int_equal(l.items[1].shape.context_len, 100);
    assert_int_equal(l.items[2].shape.context_len, 200);
    for (int i = 0; i < l.n; i++)
        for (int j = i + 1; j < l.n; j++)
            assert_string_not_equal(l.items[i].key, l.items[j].key);
    ppb_case_list_free(&l);
    free(t);
}

static void test_expand_invalid_product_is_an_error(void **state)
{
    (void)state;
    test_suite *t = new_suite(PPB_PREFIX_PREFILL);
    ppb_axis_set *a = add_set(t->shapes, &t->s.n_shapes, 12);
    axis(a, PPB_F_QUERY_LEN, 1, 128);
    axis(a, PPB_F_NUM_HEADS, 2, 4, 8);
    axis(a, PPB_F_NUM_KV_HEADS, 2, 4, 8);   /* 4 heads with 8 kv heads: invalid */
    ppb_axis_set *c = add_set(t->configs, &t->s.n_configs, 20);
    axis(c, PPB_F_BLOCK_N, 1, 64);
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);
    assert_int_equal(l.n, 0);
    assert_null(l.items);
    assert_non_null(strstr(err.msg, "suite.yaml:12:"));
    assert_non_null(strstr(err.msg, "num_heads=4"));
    assert_non_null(strstr(err.msg, "num_kv_heads=8"));
    assert_non_null(strstr(err.msg, "config set at line 20"));

    /* Excluding the combination makes the suite valid: 3 of 4 remain. */
    ppb_axis_set *x = add_set(t->excludes, &t->s.n_excludes, 25);
    axis(x, PPB_F_NUM_HEADS, 1, 4);
    axis(x, PPB_F_NUM_KV_HEADS, 1, 8);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    assert_int_equal(l.n, 3);
    ppb_case_list_free(&l);
    free(t);
}

static void test_expand_decode_and_rule_errors(void **state)
{
    (void)state;
    test_suite *t = new_suite(PPB_PAGED_ATTENTION);
    ppb_axis_set *a = add_set(t->shapes, &t->s.n_shapes, 5);
    axis(a, PPB_F_SEQ_LEN, 3, 1024, 4096, 32768);
    axis(a, PPB_F_BATCH, 2, 8, 64);
    axis(a, PPB_F_NUM_HEADS, 1, 32);
    axis(a, PPB_F_NUM_KV_HEADS, 1, 4);
    ppb_axis_set *c = add_set(t->configs, &t->s.n_configs, 9);
    axis(c, PPB_F_VERSION, 2, 1, 2);
    axis(c, PPB_F_PARTITION_SIZE, 2, 256, 512);
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    assert_int_equal(l.n, 6 * 4);
    assert_int_equal(l.items[0].config.num_threads, 128);   /* default */
    ppb_case_list_free(&l);

    /* v1 with a host partition size is invalid: the error names it and the lines. */
    axis(c, PPB_F_HOST_PARTITION_SIZE, 2, 0, 512);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "host_partition_size"));
    assert_non_null(strstr(err.msg, "suite.yaml:5:"));
    ppb_axis_set *x = add_set(t->excludes, &t->s.n_excludes, 14);
    axis(x, PPB_F_VERSION, 1, 1);
    axis(x, PPB_F_HOST_PARTITION_SIZE, 1, 512);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    assert_int_equal(l.n, 6 * (8 - 2));
    ppb_case_list_free(&l);

    /* A field of the other kernel, in a set or a rule. */
    axis(a, PPB_F_BLOCK_N, 1, 64);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "block_n does not apply to paged_attention"));
    a->axis[PPB_F_BLOCK_N].n = 0;
    ppb_axis_set *w = add_set(t->weights, &t->s.n_weights, 30);
    axis(w, PPB_F_QUERY_LEN, 1, 5);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "suite.yaml:30:"));
    t->s.n_weights = 0;

    /* An empty exclusion would drop everything: refused. */
    add_set(t->excludes, &t->s.n_excludes, 44);
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "suite.yaml:44:"));
    t->s.n_excludes--;

    /* A required field nobody gives. */
    a->axis[PPB_F_SEQ_LEN].n = 0;
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "seq_len"));
    assert_non_null(strstr(err.msg, "no default"));
    free(t);
}

static void test_expand_refuses_huge_suites(void **state)
{
    (void)state;
    test_suite *t = new_suite(PPB_PREFIX_PREFILL);
    ppb_axis_set *a = add_set(t->shapes, &t->s.n_shapes, 2);
    int fields[] = {PPB_F_QUERY_LEN, PPB_F_CONTEXT_LEN, PPB_F_BATCH, PPB_F_SLIDING_WINDOW};
    for (int f = 0; f < 4; f++) {
        a->axis[fields[f]].n = 64;
        for (int i = 0; i < 64; i++)
            a->axis[fields[f]].v[i] = i + 1;
    }
    axis(a, PPB_F_NUM_HEADS, 1, 8);
    axis(a, PPB_F_NUM_KV_HEADS, 1, 8);
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_EINPUT);   /* 64^4 = 16.7M */
    assert_non_null(strstr(err.msg, "more than"));
    assert_int_equal(l.n, 0);
    free(t);
}

/* ---- --filter ------------------------------------------------------------ */

static ppb_case_list expanded_prefill(void)
{
    test_suite *t = prefill_suite();
    ppb_case_list l;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &l, &err), PPB_OK);
    free(t);
    return l;
}

typedef struct filter_case {
    const char *expr;
    int (*pred)(const ppb_case *);
} filter_case;

static int p_d128(const ppb_case *c) { return c->shape.head_dim == 128; }
static int p_bn_any(const ppb_case *c) { return c->config.block_n == 64 || c->config.block_n == 128; }
static int p_w_not8(const ppb_case *c) { return c->config.num_warps != 8; }
static int p_bm_not_64_32(const ppb_case *c) { return c->config.block_m != 64 && c->config.block_m != 32; }
static int p_ctx_lt100(const ppb_case *c) { return c->shape.context_len < 100; }
static int p_ctx_le16k(const ppb_case *c) { return c->shape.context_len <= 16384; }
static int p_q_gt512(const ppb_case *c) { return c->shape.query_len > 512; }
static int p_q_ge1024_d64(const ppb_case *c) { return c->shape.query_len >= 1024 && c->shape.head_dim == 64; }
static int p_bf16(const ppb_case *c) { return c->shape.dtype == PPB_BF16; }
static int p_fp16(const ppb_case *c) { return c->shape.dtype == PPB_FP16; }
static int p_three(const ppb_case *c)
{
    return c->shape.num_heads == 8 && c->config.block_m == 128 && c->config.block_n == 64;
}

static void test_filter_grammar(void **state)
{
    (void)state;
    const filter_case cases[] = {
        {"head_dim=128", p_d128},
        {"block_n=64|128", p_bn_any},
        {"num_warps!=8", p_w_not8},
        {"block_m!=64|32", p_bm_not_64_32},
        {"context_len<100", p_ctx_lt100},
        {"context_len<=16384", p_ctx_le16k},
        {"query_len>512", p_q_gt512},
        {" query_len>=1024 , head_dim==64 ", p_q_ge1024_d64},
        {"dtype=bf16", p_bf16},
        {"dtype=fp16", p_fp16},
        {"num_heads=8,block_m=128,block_n=64", p_three},
    };
    ppb_case_list all = expanded_prefill();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ppb_case_list l = {0};
        for (int j = 0; j < all.n; j++)
            assert_int_equal(ppb_case_list_push(&l, &all.items[j]), PPB_OK);
        ppb_err err = {{0}};
        int rc = ppb_matrix_filter(&l, cases[i].expr, &err);
        if (rc != PPB_OK)
            fail_msg("filter '%s': %s", cases[i].expr, err.msg);
        int want = count_where(&all, cases[i].pred);
        if (l.n != want)
            fail_msg("filter '%s' kept %d cases, expected %d", cases[i].expr, l.n, want);
        for (int j = 0; j < l.n; j++)
            assert_true(cases[i].pred(&l.items[j]));
        /* Order kept: the survivors appear in the original order. */
        for (int j = 1; j < l.n; j++)
            assert_true(find_key(&all, l.items[j - 1].key) < find_key(&all, l.items[j].key));
        ppb_case_list_free(&l);
    }
    /* Sanity of the hand-made expectations: they are not all trivially 0 or n. */
    assert_int_equal(count_where(&all, p_d128), 5 * 9);
    assert_int_equal(count_where(&all, p_fp16), 0);
    assert_int_equal(count_where(&all, p_three), 6 * 2);
    ppb_case_list_free(&all);
}

static void test_filter_errors_name_the_term(void **state)
{
    (void)state;
    const struct {
        const char *expr, *must_say;
    } bad[] = {
        {"", "empty"},
        {"head_dim=128,,block_n=64", "term 2 is empty"},
        {"head_dim=128,", "term 2 is empty"},
        {"foo=1", "unknown field 'foo'"},
        {"head_dim", "'head_dim'"},
        {"=128", "no field name"},
        {"head_dim=", "no value"},
        {"head_dim=abc", "'abc' is not an integer"},
        {"head_dim=7", "out of range"},
        {"dtype=fp8", "'fp8' is not one of fp16, bf16"},
        {"dtype<bf16", "no order"},
        {"block_n=64|", "empty value"},
        {"block_n=|64", "empty value"},
        {"block_n=64||128", "empty value"},
        {"query_len<12x", "'12x' is not an integer"},
        {"query_len>=1|2", "is not an integer"},
        {"seq_len=1024", "seq_len does not apply to prefix_prefill"},
        {"head_dim=128,num_warps~4", "'num_warps~4'"},
    };
    ppb_case_list l = expanded_prefill();
    int n = l.n;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ppb_err err = {{0}};
        int rc = ppb_matrix_filter(&l, bad[i].expr, &err);
        if (rc != PPB_EINPUT)
            fail_msg("filter '%s' returned %d, expected PPB_EINPUT", bad[i].expr, rc);
        if (!strstr(err.msg, bad[i].must_say))
            fail_msg("filter '%s': message '%s' does not say '%s'", bad[i].expr, err.msg,
                     bad[i].must_say);
        assert_int_equal(l.n, n);   /* the list is untouched */
    }
    ppb_case_list_free(&l);
}

/* ---- --shard ------------------------------------------------------------- */

static void test_fnv1a64_vectors(void **state)
{
    (void)state;
    /* Published FNV-1a 64 test vectors: the shard of a case must never change. */
    assert_true(ppb_fnv1a64_str("") == 0xcbf29ce484222325ULL);
    assert_true(ppb_fnv1a64_str("a") == 0xaf63dc4c8601ec8cULL);
    assert_true(ppb_fnv1a64_str("foobar") == 0x85944171f73967e8ULL);
    assert_true(ppb_fnv1a64("foobar", 6) == ppb_fnv1a64_str("foobar"));
    assert_true(ppb_fnv1a64_update(ppb_fnv1a64("foo", 3), "bar", 3) == ppb_fnv1a64_str("foobar"));
    char hex[17];
    ppb_fnv1a64_hex(0xaf63dc4c8601ec8cULL, hex);
    assert_string_equal(hex, "af63dc4c8601ec8c");
    ppb_fnv1a64_hex(0x1ULL, hex);
    assert_string_equal(hex, "0000000000000001");
}

static void test_parse_shard(void **state)
{
    (void)state;
    int k = 0, n = 0;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_parse_shard("1/1", &k, &n, &err), PPB_OK);
    assert_int_equal(k, 1);
    assert_int_equal(n, 1);
    assert_int_equal(ppb_matrix_parse_shard("3/8", &k, &n, &err), PPB_OK);
    assert_int_equal(k, 3);
    assert_int_equal(n, 8);
    const char *bad[] = {"", "2", "0/2", "3/2", "-1/2", "a/2", "1/b", "2/0", "1/2x", "1//2",
                         "/2", "1/", "1/1000000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        k = n = -7;
        if (ppb_matrix_parse_shard(bad[i], &k, &n, &err) != PPB_EINPUT)
            fail_msg("shard '%s' was accepted", bad[i]);
        assert_int_equal(k, -7);   /* outputs untouched on error */
        assert_non_null(strstr(err.msg, "shard"));
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted copies of the keys, for set comparisons. */
static const char **sorted_keys(const ppb_case_list *l)
{
    const char **keys = malloc((size_t)(l->n ? l->n : 1) * sizeof *keys);
    assert_non_null(keys);
    for (int i = 0; i < l->n; i++)
        keys[i] = l->items[i].key;
    qsort(keys, (size_t)l->n, sizeof *keys, cmp_str);
    return keys;
}

static void test_shards_partition_the_list(void **state)
{
    (void)state;
    ppb_case_list all = expanded_prefill();
    const int ns[] = {1, 2, 3, 7, 100};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int n = ns[t];
        int *owner = calloc((size_t)all.n, sizeof *owner);
        assert_non_null(owner);
        int total = 0, nonempty = 0;
        for (int k = 1; k <= n; k++) {
            ppb_case_list l = {0};
            for (int i = 0; i < all.n; i++)
                assert_int_equal(ppb_case_list_push(&l, &all.items[i]), PPB_OK);
            ppb_matrix_shard(&l, k, n);
            total += l.n;
            nonempty += l.n > 0;
            for (int i = 0; i < l.n; i++) {
                int at = find_key(&all, l.items[i].key);
                assert_true(at >= 0);
                assert_int_equal(owner[at], 0);   /* disjoint */
                owner[at] = k;
                assert_true(ppb_fnv1a64_str(l.items[i].key) % (uint64_t)n == (uint64_t)(k - 1));
            }
            for (int i = 1; i < l.n; i++)   /* order kept */
                assert_true(find_key(&all, l.items[i - 1].key) < find_key(&all, l.items[i].key));
            ppb_case_list_free(&l);
        }
        assert_int_equal(total, all.n);       /* union = whole list */
        for (int i = 0; i < all.n; i++)
            assert_true(owner[i] >= 1);
        if (n > 1 && n <= 7)
            assert_true(nonempty >= 2);        /* the hash actually spreads cases */
        free(owner);
    }
    ppb_case_list_free(&all);
}

static void test_shard_stable_when_suite_order_changes(void **state)
{
    (void)state;
    test_suite *t = prefill_suite();
    test_suite *r = prefill_suite();
    /* Reverse the shape sets, the config sets and every value list. */
    ppb_axis_set tmp = r->shapes[0];
    r->shapes[0] = r->shapes[1];
    r->shapes[1] = tmp;
    tmp = r->configs[0];
    r->configs[0] = r->configs[1];
    r->configs[1] = tmp;
    ppb_axis_set *sets[] = {&r->shapes[0], &r->shapes[1], &r->configs[0], &r->configs[1]};
    for (int s = 0; s < 4; s++)
        for (int f = 0; f < PPB_F_COUNT; f++) {
            ppb_axis *a = &sets[s]->axis[f];
            for (int i = 0; i < a->n / 2; i++) {
                int v = a->v[i];
                a->v[i] = a->v[a->n - 1 - i];
                a->v[a->n - 1 - i] = v;
            }
        }
    ppb_case_list a, b;
    ppb_err err = {{0}};
    assert_int_equal(ppb_matrix_expand(&t->s, &a, &err), PPB_OK);
    assert_int_equal(ppb_matrix_expand(&r->s, &b, &err), PPB_OK);
    assert_int_equal(a.n, b.n);
    assert_string_not_equal(a.items[0].key, b.items[0].key);   /* the order did change */
    for (int k = 1; k <= 3; k++) {
        ppb_case_list sa = {0}, sb = {0};
        for (int i = 0; i < a.n; i++) {
            ppb_case_list_push(&sa, &a.items[i]);
            ppb_case_list_push(&sb, &b.items[i]);
        }
        ppb_matrix_shard(&sa, k, 3);
        ppb_matrix_shard(&sb, k, 3);
        assert_int_equal(sa.n, sb.n);
        const char **ka = sorted_keys(&sa), **kb = sorted_keys(&sb);
        for (int i = 0; i < sa.n; i++)
            assert_string_equal(ka[i], kb[i]);
        free(ka);
        free(kb);
        ppb_case_list_free(&sa);
        ppb_case_list_free(&sb);
    }
    ppb_case_list_free(&a);
    ppb_case_list_free(&b);
    free(t);
    free(r);
}

static void test_list_push_grows(void **state)
{
    (void)state;
    ppb_case_list l = {0};
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    for (int i = 0; i < 1000; i++) {
        c.shape.seq_len = i + 1;
        assert_int_equal(ppb_case_list_push(&l, &c), PPB_OK);
    }
    assert_int_equal(l.n, 1000);
    assert_true(l.cap >= 1000);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(l.items[i].shape.seq_len, i + 1);
    ppb_case_list_free(&l);
    assert_null(l.items);
    assert_int_equal(l.n, 0);
}

/* Cases of one shape end up adjacent, shapes in the order they first appear,
 * each shape's cases in their order: shapes A B A C B -> A A B B C. */
static void test_group_by_shape_keeps_first_appearance_order(void **state)
{
    (void)state;
    const int seq[] = {100, 200, 100, 300, 200}, partition[] = {256, 256, 512, 256, 512};
    ppb_case_list l = {0};
    for (int i = 0; i < 5; i++) {
        ppb_case c;
        ppb_case_init(&c, PPB_PAGED_ATTENTION);
        c.shape.seq_len = seq[i];
        c.config.partition_size = partition[i];
        ppb_case_make_key(&c);
        assert_int_equal(ppb_case_list_push(&l, &c), PPB_OK);
    }
    ppb_err err;
    assert_int_equal(ppb_matrix_group_by_shape(&l, &err), PPB_OK);
    const int want_seq[] = {100, 100, 200, 200, 300}, want_partition[] = {256, 512, 256, 512, 256};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(l.items[i].shape.seq_len, want_seq[i]);
        assert_int_equal(l.items[i].config.partition_size, want_partition[i]);
    }
    ppb_case_list_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_counts_and_defaults),
        cmocka_unit_test(test_expand_exclusions),
        cmocka_unit_test(test_expand_weights_first_match),
        cmocka_unit_test(test_expand_dedupes_keeping_first),
        cmocka_unit_test(test_expand_invalid_product_is_an_error),
        cmocka_unit_test(test_expand_decode_and_rule_errors),
        cmocka_unit_test(test_expand_refuses_huge_suites),
        cmocka_unit_test(test_filter_grammar),
        cmocka_unit_test(test_filter_errors_name_the_term),
        cmocka_unit_test(test_fnv1a64_vectors),
        cmocka_unit_test(test_parse_shard),
        cmocka_unit_test(test_shards_partition_the_list),
        cmocka_unit_test(test_shard_stable_when_suite_order_changes),
        cmocka_unit_test(test_list_push_grows),
        cmocka_unit_test(test_group_by_shape_keeps_first_appearance_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
