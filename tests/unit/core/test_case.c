/* The case fields: the kernels' parameters come from their lists
 * (ppb_kernel_params.h), and the names everything stored depends on (suite and
 * filter names = store columns, key names, key order) stay what they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "case.h"
#include "ppb_kernel_params.h"

/* Each parameter of a list is a config field of that kernel with the list's name, key
 * name, range and default, found by its name, and a member of the case config. */
#define EXPECT_PARAM_FIELD(kernels_, name_, NAME_, key_, min_, max_, def_, omit_)            \
    do {                                                                                      \
        const ppb_field_info *fi = ppb_field_get(PPB_F_##NAME_);                             \
        assert_string_equal(fi->name, #name_);                                                \
        assert_string_equal(fi->key_name, key_);                                              \
        assert_int_equal(fi->kernels, kernels_);                                              \
        assert_int_equal(fi->is_config, 1);                                                   \
        assert_int_equal(fi->min, min_);                                                      \
        assert_int_equal(fi->max, max_);                                                      \
        assert_int_equal(fi->def, def_);                                                      \
        assert_null(fi->names);                                                               \
        assert_int_equal(fi->key_omits_default, omit_);                                       \
        assert_int_equal(ppb_field_lookup(#name_), PPB_F_##NAME_);                            \
        ppb_case c;                                                                           \
        memset(&c, 0, sizeof c);                                                              \
        ppb_case_set(&c, PPB_F_##NAME_, 4321);                                                \
        assert_int_equal(c.config.name_, 4321);                                               \
        assert_int_equal(ppb_case_get(&c, PPB_F_##NAME_), 4321);                              \
    } while (0);

static void test_parameter_fields_come_from_the_lists(void **state)
{
    (void)state;
    PPBK_PREFILL_PARAMS(EXPECT_PARAM_FIELD, PPB_FOR_PREFILL)
    PPBK_DECODE_PARAMS(EXPECT_PARAM_FIELD, PPB_FOR_DECODE)
}

/* Suite / filter names (the store's columns) and key names, in key order: stored
 * databases and suites name fields by them. A new field may come anywhere (a new
 * parameter lands after its kernel's others); these keep their names and order. */
static void test_field_names_and_order_are_stable(void **state)
{
    (void)state;
    static const struct {
        const char *name, *key;
    } fields[] = {
        {"batch", "b"},          {"query_len", "q"},     {"context_len", "ctx"},          {"seq_len", "seq"},
        {"ragged", "ragged"},    {"num_heads", "h"},     {"num_kv_heads", "kvh"},         {"head_dim", "d"},
        {"dtype", "dtype"},      {"page_size", "page"},  {"sliding_window", "win"},       {"decode_seqs", "dec"},
        {"block_m", "bm"},
        {"block_n", "bn"},       {"num_warps", "w"},     {"num_stages", "st"},
        {"version", "v"},                {"num_threads", "t"},
        {"partition_size", "p"}, {"host_partition_size", "hp"}, {"path", "path"},        {"impl", "impl"},
    };
    int previous = -1;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        int f = ppb_field_lookup(fields[i].name);
        if (f < 0)
            fail_msg("no field '%s'", fields[i].name);
        assert_string_equal(ppb_field_get(f)->key_name, fields[i].key);
        if (f <= previous)
            fail_msg("field '%s' moved before '%s'", fields[i].name, fields[i - 1].name);
        previous = f;
    }
}

/* The key text of a case, byte for byte as runs stored it. */
static void test_keys_are_unchanged(void **state)
{
    (void)state;
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    ppb_case_set(&c, PPB_F_QUERY_LEN, 17);
    ppb_case_set(&c, PPB_F_NUM_HEADS, 4);
    ppb_case_set(&c, PPB_F_NUM_KV_HEADS, 2);
    ppb_case_set(&c, PPB_F_BLOCK_M, 64);
    ppb_case_set(&c, PPB_F_BLOCK_N, 32);
    ppb_case_set(&c, PPB_F_NUM_WARPS, 4);
    ppb_case_make_key(&c);
    assert_string_equal(c.key, "prefix_prefill b=1 q=17 ctx=0 ragged=false h=4 kvh=2 d=128 dtype=bf16 page=16 "
                               "win=0 bm=64 bn=32 w=4 path=auto");

    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    ppb_case_set(&c, PPB_F_SEQ_LEN, 257);
    ppb_case_set(&c, PPB_F_NUM_HEADS, 4);
    ppb_case_set(&c, PPB_F_NUM_KV_HEADS, 1);
    ppb_case_set(&c, PPB_F_NUM_THREADS, 256);
    ppb_case_set(&c, PPB_F_PARTITION_SIZE, 64);
    ppb_case_set(&c, PPB_F_HOST_PARTITION_SIZE, 512);
    ppb_case_make_key(&c);
    const char *decode_key = "paged_attention b=1 seq=257 ragged=false h=4 kvh=1 d=128 dtype=bf16 page=16 win=0 "
                             "v=2 t=256 p=64 hp=512 path=auto";
    assert_string_equal(c.key, decode_key);

    /* and back: every parameter read from its key name */
    ppb_case back;
    ppb_err err = {{0}};
    assert_int_equal(ppb_case_from_key(decode_key, &back, &err), PPB_OK);
    assert_string_equal(back.key, decode_key);
    assert_int_equal(back.config.version, 2);
    assert_int_equal(back.config.num_threads, 256);
    assert_int_equal(back.config.partition_size, 64);
    assert_int_equal(back.config.host_partition_size, 512);
}

/* A mixed batch (decode_seqs): the first sequences are decode steps of one
 * token over their whole context, the rest prefill chunks; the key names it
 * only when set; more decode steps than sequences is refused. */
static void test_mixed_batch(void **state)
{
    (void)state;
    ppb_case c;
    ppb_err err = {{0}};
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    ppb_case_set(&c, PPB_F_BATCH, 4);
    ppb_case_set(&c, PPB_F_QUERY_LEN, 40);
    ppb_case_set(&c, PPB_F_CONTEXT_LEN, 37);
    ppb_case_set(&c, PPB_F_NUM_HEADS, 4);
    ppb_case_set(&c, PPB_F_NUM_KV_HEADS, 2);
    ppb_case_set(&c, PPB_F_BLOCK_M, 64);
    ppb_case_set(&c, PPB_F_BLOCK_N, 64);
    ppb_case_set(&c, PPB_F_NUM_WARPS, 4);
    double plain = ppb_case_flops(&c);
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(&c, shape, sizeof shape); /* proposals pair cases by it: unchanged at 0 */
    assert_string_equal(shape, "prefix_prefill b=4 q=40 ctx=37 ragged=false h=4 kvh=2 d=128 dtype=bf16 page=16 win=0");
    ppb_case_set(&c, PPB_F_DECODE_SEQS, 3);
    ppb_case_shape_key(&c, shape, sizeof shape);
    assert_string_equal(shape, "prefix_prefill b=4 q=40 ctx=37 ragged=false h=4 kvh=2 d=128 dtype=bf16 page=16 win=0 "
                               "dec=3");
    ppb_case_make_key(&c);
    assert_string_equal(c.key, "prefix_prefill b=4 q=40 ctx=37 ragged=false h=4 kvh=2 d=128 dtype=bf16 page=16 "
                               "win=0 dec=3 bm=64 bn=64 w=4 path=auto");
    assert_int_equal(ppb_case_validate(&c, &err), PPB_OK);
    for (int b = 0; b < 3; b++) {
        assert_int_equal(ppb_case_query_len_of(&c, b), 1);
        assert_int_equal(ppb_case_context_len_of(&c, b), 37);
    }
    assert_int_equal(ppb_case_query_len_of(&c, 3), 40);
    assert_int_equal(ppb_case_context_len_of(&c, 3), 37);
    /* three sequences of 40 new tokens became one each: less work */
    double d = 4.0 * 4 * 128, want = plain - 3 * d * (40 * 37 + 40 * 40 / 2.0) + 3 * d * (37 + 0.5);
    assert_true(ppb_case_flops(&c) > 0 && ppb_case_flops(&c) == want);
    ppb_case back;
    assert_int_equal(ppb_case_from_key(c.key, &back, &err), PPB_OK);
    assert_int_equal(back.shape.decode_seqs, 3);
    ppb_case_set(&c, PPB_F_DECODE_SEQS, 5);
    assert_int_equal(ppb_case_validate(&c, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "decode_seqs=5 is more than batch=4"));
    /* not a decode kernel's field */
    assert_int_equal(ppb_field_get(PPB_F_DECODE_SEQS)->kernels, PPB_FOR_PREFILL);
}

/* num_stages (Triton's pipelining depth) came after keys were stored: left out of the
 * key at its default, 0 (each implementation's own choice), so every stored key still
 * names its case and reads back at 0; any other value is in the key as st=N, after the
 * prefill kernel's other parameters, and is a config field (the shape, so the inputs, is
 * the same). Outside 0..8 it is refused, naming the field. */
static void test_num_stages_in_the_key(void **state)
{
    (void)state;
    const ppb_field_info *fi = ppb_field_get(PPB_F_NUM_STAGES);
    assert_string_equal(fi->key_name, "st");
    assert_int_equal(fi->def, 0);
    assert_int_equal(fi->key_omits_default, 1);
    assert_int_equal(fi->kernels, PPB_FOR_PREFILL);
    const char *stored = "prefix_prefill b=1 q=17 ctx=0 ragged=false h=4 kvh=2 d=128 dtype=bf16 page=16 "
                         "win=0 bm=64 bn=32 w=4 path=auto";
    ppb_case c;
    ppb_err err = {{0}};
    assert_int_equal(ppb_case_from_key(stored, &c, &err), PPB_OK);
    assert_int_equal(c.config.num_stages, 0);
    assert_string_equal(c.key, stored);
    assert_null(strstr(c.key, "st="));
    char shape_before[PPB_CASE_KEY_MAX], shape_after[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(&c, shape_before, sizeof shape_before);

    ppb_case_set(&c, PPB_F_NUM_STAGES, 3);
    ppb_case_make_key(&c);
    assert_string_equal(c.key, "prefix_prefill b=1 q=17 ctx=0 ragged=false h=4 kvh=2 d=128 dtype=bf16 page=16 "
                               "win=0 bm=64 bn=32 w=4 st=3 path=auto");
    ppb_case_shape_key(&c, shape_after, sizeof shape_after);
    assert_string_equal(shape_after, shape_before);
    ppb_case back;
    assert_int_equal(ppb_case_from_key(c.key, &back, &err), PPB_OK);
    assert_int_equal(back.config.num_stages, 3);
    assert_string_equal(back.key, c.key);
    assert_int_equal(ppb_case_validate(&back, &err), PPB_OK);

    /* st=0 written out names the same case as the key without it */
    assert_int_equal(ppb_case_from_key("prefix_prefill b=1 q=17 ctx=0 ragged=false h=4 kvh=2 d=128 dtype=bf16 "
                                       "page=16 win=0 bm=64 bn=32 w=4 st=0 path=auto", &back, &err), PPB_OK);
    assert_string_equal(back.key, stored);

    ppb_case_set(&c, PPB_F_NUM_STAGES, 9);
    assert_int_equal(ppb_case_validate(&c, &err), PPB_EINPUT);
    assert_string_equal(err.msg, "num_stages=9 is out of range [0, 8]");
    ppb_case_set(&c, PPB_F_NUM_STAGES, -1);
    assert_int_equal(ppb_case_validate(&c, &err), PPB_EINPUT);
    assert_string_equal(err.msg, "num_stages=-1 is out of range [0, 8]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_batch),
        cmocka_unit_test(test_parameter_fields_come_from_the_lists),
        cmocka_unit_test(test_field_names_and_order_are_stable),
        cmocka_unit_test(test_keys_are_unchanged),
        cmocka_unit_test(test_num_stages_in_the_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
