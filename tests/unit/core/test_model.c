/* Model profiles: every shipped model (shapes from its published config.json, KV
 * bytes per token, per rank at TP 4), heads per rank, bad files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

static const char *source_dir(void)
{
    const char *d = getenv("PPB_SOURCE_DIR");
    return d && d[0] ? d : PPB_SOURCE_DIR;
}

static const char *data_dir(void)
{
    static char buf[4096];
    const char *d = getenv("PPB_TEST_DATA");
    if (d && d[0])
        return d;
    snprintf(buf, sizeof buf, "%s/tests/data", source_dir());
    return buf;
}

static void load(const char *name, ppb_model *m)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/suites", source_dir());
    ppb_err err = {{0}};
    if (ppb_model_load_named(dir, name, m, &err) != PPB_OK)
        fail_msg("loading %s: %s", name, err.msg);
}

/* Each shipped model as its published config.json gives it: layers (full attention), q / kv heads, D, KV
 * bytes per token (fp16), per rank at TP 4. */
static const struct {
    const char *name;
    int layers, full, heads, kv_heads, head_dim;
    long long kv_bytes, kv_bytes_tp4;
    int heads_tp4, kv_heads_tp4;
} table[] = {
    {"qwen3-30b-a3b", 48, 48, 32, 4, 128, 96 * 1024, 24 * 1024, 8, 1},
    {"qwen3-32b", 64, 64, 64, 8, 128, 256 * 1024, 64 * 1024, 16, 2},
    {"qwen3.5-35b-a3b", 40, 10, 16, 2, 256, 20 * 1024, 10 * 1024, 4, 1},
    {"llama-3.1-8b", 32, 32, 32, 8, 128, 128 * 1024, 32 * 1024, 8, 2},
    {"llama-3.1-70b", 80, 80, 64, 8, 128, 320 * 1024, 80 * 1024, 16, 2},
};

static void test_targets_md_model_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        ppb_model m;
        load(table[i].name, &m);
        assert_string_equal(m.name, table[i].name);
        assert_int_equal(m.layers.value, table[i].layers);
        assert_int_equal(m.full_attention_layers.value, table[i].full);
        assert_int_equal(m.num_heads.value, table[i].heads);
        assert_int_equal(m.num_kv_heads.value, table[i].kv_heads);
        assert_int_equal(m.head_dim.value, table[i].head_dim);
        assert_true(m.params_bytes.value > 1000000000LL);
        const ppb_model_value *all[] = {&m.layers, &m.full_attention_layers, &m.num_heads,
                                        &m.num_kv_heads, &m.head_dim, &m.params_bytes};
        for (size_t f = 0; f < sizeof all / sizeof all[0]; f++)
            assert_true(all[f]->source[0] != '\0');
        long long tp1 = ppb_model_kv_bytes_per_token(&m, 1, 2);
        long long tp4 = ppb_model_kv_bytes_per_token(&m, 4, 2);
        if (tp1 != table[i].kv_bytes || tp4 != table[i].kv_bytes_tp4)
            fail_msg("%s: KV bytes per token %lld / %lld at TP 1 / 4, TARGETS.md says %lld / %lld",
                     table[i].name, tp1, tp4, table[i].kv_bytes, table[i].kv_bytes_tp4);
        int h = 0, kv = 0;
        ppb_err err = {{0}};
        assert_int_equal(ppb_model_heads_per_rank(&m, 4, &h, &kv, &err), PPB_OK);
        assert_int_equal(h, table[i].heads_tp4);
        assert_int_equal(kv, table[i].kv_heads_tp4);
        /* fp8 halves it. */
        assert_true(ppb_model_kv_bytes_per_token(&m, 1, 1) == table[i].kv_bytes / 2);
    }
}

static void test_heads_per_rank_rules(void **state)
{
    (void)state;
    ppb_model m;
    load("qwen3-32b", &m);   /* 64 q / 8 kv */
    int h, kv;
    ppb_err err = {{0}};
    assert_int_equal(ppb_model_heads_per_rank(&m, 8, &h, &kv, &err), PPB_OK);
    assert_int_equal(h, 8);
    assert_int_equal(kv, 1);
    /* TP 16 > 8 kv heads: each rank keeps one replicated kv head. */
    assert_int_equal(ppb_model_heads_per_rank(&m, 16, &h, &kv, &err), PPB_OK);
    assert_int_equal(h, 4);
    assert_int_equal(kv, 1);
    assert_true(ppb_model_kv_bytes_per_token(&m, 16, 2) == 2LL * 64 * 1 * 128 * 2);
    /* Does not split: 64 heads over 3 ranks; 8 kv heads over 3 ranks. */
    h = kv = -1;
    assert_int_equal(ppb_model_heads_per_rank(&m, 3, &h, &kv, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "64 query heads do not split over 3 ranks"));
    assert_int_equal(h, -1);
    assert_true(ppb_model_kv_bytes_per_token(&m, 3, 2) < 0);
    assert_int_equal(ppb_model_heads_per_rank(&m, 0, &h, &kv, &err), PPB_EINPUT);
    assert_true(ppb_model_kv_bytes_per_token(&m, 1, 0) < 0);

    /* Qwen3.5: 16 q / 2 kv; TP 4 replicates, TP 8 too; TP 32 leaves no query head. */
    load("qwen3.5-35b-a3b", &m);
    assert_int_equal(ppb_model_heads_per_rank(&m, 8, &h, &kv, &err), PPB_OK);
    assert_int_equal(h, 2);
    assert_int_equal(kv, 1);
    assert_int_equal(ppb_model_heads_per_rank(&m, 32, &h, &kv, &err), PPB_EINPUT);
    /* 2 kv heads, TP 2: one each, no replication: 2 x 10 x 1 x 256 x 2. */
    assert_true(ppb_model_kv_bytes_per_token(&m, 2, 2) == 10240);
}

static void test_bad_model_files(void **state)
{
    (void)state;
    const struct {
        const char *file, *where, *what;
    } bad[] = {
        {"unknown_key.yaml", ":8:1: hidden_size", "unknown key"},
        {"missing_field.yaml", ":1:1: num_kv_heads", "missing"},
        {"full_over_layers.yaml", ":3:24: full_attention_layers", "5 is more than layers (4)"},
        {"heads_not_multiple.yaml", ":5:15: num_kv_heads", "not a multiple of num_kv_heads 3"},
        {"missing_source.yaml", ":2:9: layers", "source is missing"},
        {"fractional_params.yaml", ":7:23: params_bytes.value", "1.5 is not a whole number"},
        {"bad_confidence.yaml", ":2:45: layers.confidence", "'unknown' is not one of"},
        {"zero_heads.yaml", ":4:20: num_heads.value", "out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/models/bad/%s", data_dir(), bad[i].file);
        ppb_model m;
        ppb_err err = {{0}};
        int rc = ppb_model_load(path, &m, &err);
        if (rc != PPB_EINPUT)
            fail_msg("%s: returned %d, expected PPB_EINPUT (%s)", bad[i].file, rc, err.msg);
        char where[256];
        snprintf(where, sizeof where, "%s%s", bad[i].file, bad[i].where);
        if (!strstr(err.msg, where) || !strstr(err.msg, bad[i].what))
            fail_msg("%s: message '%s' lacks '%s' or '%s'", bad[i].file, err.msg, where,
                     bad[i].what);
    }
}

static void test_load_named_errors(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/suites", source_dir());
    ppb_model m;
    ppb_err err = {{0}};
    assert_int_equal(ppb_model_load_named(dir, "qwen4", &m, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "no model profile 'qwen4'"));
    assert_int_equal(ppb_model_load_named(dir, "../models/qwen3-32b", &m, &err), PPB_EINPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets_md_model_table),
        cmocka_unit_test(test_heads_per_rank_rules),
        cmocka_unit_test(test_bad_model_files),
        cmocka_unit_test(test_load_named_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
