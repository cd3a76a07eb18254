/* Suite files: the shipped suites, every section of the schema, and a corpus of
 * bad files (tests/data/suites/bad/) whose first line says where the error must
 * be reported: "# expect: LINE:COLUMN WORD". Adding a bad case = adding a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "suite.h"

/* ---- helpers ------------------------------------------------------------ */

static const char *source_dir(void)
{
    const char *dir = getenv("PPB_SOURCE_DIR");
    return dir && *dir ? dir : PPB_SOURCE_DIR;
}

static void data_path(char *buf, size_t len, const char *rel)
{
    const char *data = getenv("PPB_TEST_DATA");
    if (data && *data)
        snprintf(buf, len, "%s/suites/%s", data, rel);
    else
        snprintf(buf, len, "%s/tests/data/suites/%s", source_dir(), rel);
}

/* Writes text to a fresh temporary file; the caller unlinks it. */
static void write_temp(const char *text, char *path, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, len, "%s/ppb_test_suite_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static int load_text(const char *text, ppb_suite *suite, ppb_err *err)
{
    char path[4096];
    write_temp(text, path, sizeof path);
    int rc = ppb_suite_load(path, suite, err);
    unlink(path);
    return rc;
}

static void load_ok(const char *path, ppb_suite *suite)
{
    ppb_err err = {{0}};
    int rc = ppb_suite_load(path, suite, &err);
    if (rc != PPB_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, PPB_OK);
}

static void assert_axis(const ppb_axis_set *set, ppb_field f, int n, const int *values)
{
    if (set->axis[f].n != n)
        print_error("field %s: %d values, expected %d\n", ppb_field_get(f)->name, set->axis[f].n, n);
    assert_int_equal(set->axis[f].n, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(set->axis[f].v[i], values[i]);
}
#define AXIS(set, f, ...)                                                                         \
    do {                                                                                          \
        const int vals_[] = {__VA_ARGS__};                                                        \
        assert_axis(set, f, (int)(sizeof vals_ / sizeof vals_[0]), vals_);                        \
    } while (0)

static int fields_given(const ppb_axis_set *set)
{
    int n = 0;
    for (int f = 0; f < PPB_F_COUNT; f++)
        n += set->axis[f].n > 0;
    return n;
}

/* The suite's cases as the matrix must build them (shape set x config set,
 * Cartesian product, defaults for fields not given, exclusions dropped). Each
 * case is checked with ppb_case_validate, so a shipped suite with a value the
 * case model rejects fails here. */
typedef struct expansion {
    int cases, excluded, invalid;
    double max_flops;
    char first_invalid[PPB_CASE_KEY_MAX + sizeof(ppb_err) + 4];
} expansion;

static void expand_pair(const ppb_suite *s, const ppb_axis_set *shape, const ppb_axis_set *config,
                        expansion *ex)
{
    const ppb_axis *axes[PPB_F_COUNT];
    int idx[PPB_F_COUNT] = {0};
    for (int f = 0; f < PPB_F_COUNT; f++)
        axes[f] = ppb_field_get(f)->is_config ? &config->axis[f] : &shape->axis[f];
    for (;;) {
        ppb_case c;
        ppb_case_init(&c, s->kernel);
        for (int f = 0; f < PPB_F_COUNT; f++)
            if (axes[f]->n)
                ppb_case_set(&c, f, axes[f]->v[idx[f]]);
        if (ppb_suite_case_excluded(s, &c)) {
            ex->excluded++;
        } else {
            ppb_err err = {{0}};
            ex->cases++;
            if (ppb_case_validate(&c, &err) == PPB_OK && ppb_case_flops(&c) > ex->max_flops)
                ex->max_flops = ppb_case_flops(&c);
            if (ppb_case_validate(&c, &err) != PPB_OK && ex->invalid++ == 0) {
                ppb_case_make_key(&c);
                snprintf(ex->first_invalid, sizeof ex->first_invalid, "%s: %s", c.key, err.msg);
            }
        }
        int f = 0;
        for (; f < PPB_F_COUNT; f++) {
            if (axes[f]->n == 0)
                continue;
            if (++idx[f] < axes[f]->n)
                break;
            idx[f] = 0;
        }
        if (f == PPB_F_COUNT)
            return;
    }
}

static expansion expand(const ppb_suite *s)
{
    expansion ex;
    ppb_axis_set all_defaults;
    memset(&ex, 0, sizeof ex);
    memset(&all_defaults, 0, sizeof all_defaults);
    for (int i = 0; i < s->n_shapes; i++) {
        for (int j = 0; j < s->n_configs; j++)
            expand_pair(s, &s->shapes[i], &s->configs[j], &ex);
        if (s->n_configs == 0)
            expand_pair(s, &s->shapes[i], &all_defaults, &ex);
    }
    return ex;
}

/* Independent FNV-1a 64, to check the suite's hash against. */
static void fnv1a_hex(const unsigned char *bytes, size_t n, char out[17])
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= bytes[i];
        h *= 0x100000001b3ULL;
    }
    snprintf(out, 17, "%016" PRIx64, h);
}

/* ---- shipped suites --------------------------------------------------------- */

typedef struct shipped {
    const char *file;
    ppb_kernel_kind kernel;
    int min_cases, max_cases;
    int seen;
} shipped;

static void test_shipped_suites_load_and_expand(void **state)
{
    (void)state;
    shipped expected[] = {
        {"smoke.yaml", PPB_PREFIX_PREFILL, 10, 60, 0},
        {"smoke-decode.yaml", PPB_PAGED_ATTENTION, 10, 60, 0},
        {"prefill.yaml", PPB_PREFIX_PREFILL, 20, 160, 0},
        {"decode.yaml", PPB_PAGED_ATTENTION, 12, 80, 0},
        {"nightly.yaml", PPB_PREFIX_PREFILL, 4, 30, 0},
        {"nightly-decode.yaml", PPB_PAGED_ATTENTION, 4, 30, 0},
        {"cpu-nightly.yaml", PPB_PREFIX_PREFILL, 17, 17, 0},
        {"cpu-nightly-decode.yaml", PPB_PAGED_ATTENTION, 9, 9, 0},
    };
    const int n_expected = (int)(sizeof expected / sizeof expected[0]);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/suites", source_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    int loaded = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ppb_suite s;
        load_ok(path, &s);
        loaded++;
        /* The name is the file name without .yaml (docs/SUITES.md). */
        assert_int_equal(strlen(s.name), len - 5);
        assert_memory_equal(s.name, e->d_name, len - 5);
        assert_true(s.n_shapes >= 1);
        expansion ex = expand(&s);
        if (ex.invalid)
            print_error("%s: %d invalid cases, first: %s\n", path, ex.invalid, ex.first_invalid);
        assert_int_equal(ex.invalid, 0);
        assert_true(ex.cases > 0);
        /* The suites sized for the CPU (README "No GPU?"): every case within the
         * CPU backend's default work limit, so none is refused for its size. */
        if (strncmp(e->d_name, "cpu-", 4) == 0 && ex.max_flops > PPB_CPU_DEFAULT_MAX_GFLOP * 1e9) {
            print_error("%s: a case of %g GFLOP, over the CPU backend's default %g\n", e->d_name, ex.max_flops / 1e9,
                        PPB_CPU_DEFAULT_MAX_GFLOP);
            fail();
        }
        for (int i = 0; i < n_expected; i++) {
            if (strcmp(expected[i].file, e->d_name) != 0)
                continue;
            expected[i].seen = 1;
            assert_int_equal(s.kernel, expected[i].kernel);
            if (ex.cases < expected[i].min_cases || ex.cases > expected[i].max_cases)
                print_error("%s: %d cases, expected %d..%d\n", e->d_name, ex.cases,
                            expected[i].min_cases, expected[i].max_cases);
            assert_in_range(ex.cases, expected[i].min_cases, expected[i].max_cases);
        }
        ppb_suite_free(&s);
    }
    closedir(d);
    for (int i = 0; i < n_expected; i++) {
        if (!expected[i].seen)
            print_error("shipped suite %s is missing\n", expected[i].file);
        assert_true(expected[i].seen);
    }
    assert_true(loaded >= n_expected);
}

/* The sizes the brief and KERNELS.md name are really in the shipped suites. */
static void test_shipped_suites_cover_anchor_sizes(void **state)
{
    (void)state;
    char path[4096];
    ppb_suite s;
    snprintf(path, sizeof path, "%s/suites/prefill.yaml", source_dir());
    load_ok(path, &s);
    assert_string_equal(s.target, ""); /* times the whole cube; --target bi-v100 judges it */
    assert_string_equal(s.model, "qwen3-30b-a3b");
    const int anchors[][4] = {{8192, 0, 32, 4}, {8192, 90112, 32, 4}, {512, 16384, 32, 4},
                              {512, 16384, 8, 1}};
    for (size_t a = 0; a < sizeof anchors / sizeof anchors[0]; a++) {
        int found = 0;
        for (int i = 0; i < s.n_shapes && !found; i++) {
            ppb_case c;
            ppb_case_init(&c, s.kernel);
            ppb_case_set(&c, PPB_F_QUERY_LEN, anchors[a][0]);
            ppb_case_set(&c, PPB_F_CONTEXT_LEN, anchors[a][1]);
            ppb_case_set(&c, PPB_F_NUM_HEADS, anchors[a][2]);
            ppb_case_set(&c, PPB_F_NUM_KV_HEADS, anchors[a][3]);
            ppb_case_set(&c, PPB_F_DTYPE, PPB_BF16);
            ppb_case_set(&c, PPB_F_HEAD_DIM, 128);
            found = ppb_axis_set_matches(&s.shapes[i], &c);
        }
        if (!found)
            print_error("prefill.yaml lacks q %d ctx %d %d/%d\n", anchors[a][0], anchors[a][1],
                        anchors[a][2], anchors[a][3]);
        assert_true(found);
    }
    ppb_suite_free(&s);

    snprintf(path, sizeof path, "%s/suites/decode.yaml", source_dir());
    load_ok(path, &s);
    int versions = 0, partitions = 0;
    for (int j = 0; j < s.n_configs; j++) {
        for (int i = 0; i < s.configs[j].axis[PPB_F_VERSION].n; i++)
            versions |= 1 << s.configs[j].axis[PPB_F_VERSION].v[i];
        for (int i = 0; i < s.configs[j].axis[PPB_F_PARTITION_SIZE].n; i++)
            partitions |= s.configs[j].axis[PPB_F_PARTITION_SIZE].v[i];
    }
    assert_int_equal(versions, (1 << 1) | (1 << 2));
    assert_int_equal(partitions, 256 | 512);
    ppb_suite_free(&s);
}

/* ---- every section, values in the right place ------------------------------ */

static void test_full_example_values_land_in_axis_sets(void **state)
{
    (void)state;
    char path[4096];
    data_path(path, sizeof path, "good/full.yaml");
    ppb_suite s;
    load_ok(path, &s);
    assert_string_equal(s.name, "full-example_1.0");
    assert_string_equal(s.description, "every section once");
    assert_int_equal(s.kernel, PPB_PREFIX_PREFILL);
    assert_string_equal(s.target, "bi-v100");
    assert_string_equal(s.model, "qwen3-30b-a3b");
    assert_string_equal(s.path, path);

    /* shapes[0] expands into one set per heads pair, in file order; shapes[1]
     * gives num_heads/num_kv_heads directly; cases: come last. */
    assert_int_equal(s.n_shapes, 4);
    const int heads[2][2] = {{8, 2}, {4, 4}};
    for (int i = 0; i < 2; i++) {
        const ppb_axis_set *set = &s.shapes[i];
        assert_int_equal(set->line, 8);
        AXIS(set, PPB_F_BATCH, 1, 2);
        AXIS(set, PPB_F_QUERY_LEN, 17, 64);
        AXIS(set, PPB_F_CONTEXT_LEN, 0, 40);
        AXIS(set, PPB_F_NUM_HEADS, heads[i][0]);
        AXIS(set, PPB_F_NUM_KV_HEADS, heads[i][1]);
        AXIS(set, PPB_F_HEAD_DIM, 64, 128);
        AXIS(set, PPB_F_DTYPE, PPB_FP16, PPB_BF16);
        AXIS(set, PPB_F_PAGE_SIZE, 16);
        assert_int_equal(fields_given(set), 8);
        assert_true(set->weight == 1.0);
    }
    const ppb_axis_set *second = &s.shapes[2];
    assert_int_equal(second->line, 15);
    AXIS(second, PPB_F_QUERY_LEN, 33);
    AXIS(second, PPB_F_NUM_HEADS, 16, 32);
    AXIS(second, PPB_F_NUM_KV_HEADS, 2);
    AXIS(second, PPB_F_RAGGED, 0, 1);
    AXIS(second, PPB_F_SLIDING_WINDOW, 128);
    assert_int_equal(fields_given(second), 5);
    const ppb_axis_set *explicit_case = &s.shapes[3];
    assert_int_equal(explicit_case->line, 21);
    AXIS(explicit_case, PPB_F_BATCH, 1);
    AXIS(explicit_case, PPB_F_QUERY_LEN, 8192);
    AXIS(explicit_case, PPB_F_CONTEXT_LEN, 90112);
    AXIS(explicit_case, PPB_F_NUM_HEADS, 32);
    AXIS(explicit_case, PPB_F_NUM_KV_HEADS, 4);
    AXIS(explicit_case, PPB_F_HEAD_DIM, 128);
    AXIS(explicit_case, PPB_F_DTYPE, PPB_BF16);
    assert_int_equal(fields_given(explicit_case), 7);

    assert_int_equal(s.n_configs, 2);
    assert_int_equal(s.configs[0].line, 23);
    AXIS(&s.configs[0], PPB_F_BLOCK_M, 64, 128);
    AXIS(&s.configs[0], PPB_F_BLOCK_N, 64, 128);
    AXIS(&s.configs[0], PPB_F_NUM_WARPS, 4, 8);
    assert_int_equal(fields_given(&s.configs[0]), 3);
    AXIS(&s.configs[1], PPB_F_BLOCK_M, 16);
    AXIS(&s.configs[1], PPB_F_BLOCK_N, 32);
    AXIS(&s.configs[1], PPB_F_NUM_WARPS, 2);
    AXIS(&s.configs[1], PPB_F_PATH, PPB_PATH_SIMT);
    assert_int_equal(fields_given(&s.configs[1]), 4);

    /* exclude[1] has two heads pairs: two rules. */
    assert_int_equal(s.n_excludes, 3);
    AXIS(&s.excludes[0], PPB_F_BLOCK_M, 128);
    AXIS(&s.excludes[0], PPB_F_BLOCK_N, 64);
    assert_int_equal(fields_given(&s.excludes[0]), 2);
    AXIS(&s.excludes[1], PPB_F_NUM_HEADS, 4);
    AXIS(&s.excludes[1], PPB_F_NUM_KV_HEADS, 4);
    AXIS(&s.excludes[1], PPB_F_DTYPE, PPB_FP16);
    AXIS(&s.excludes[2], PPB_F_NUM_HEADS, 8);
    AXIS(&s.excludes[2], PPB_F_NUM_KV_HEADS, 2);
    assert_int_equal(s.excludes[2].line, 29);

    assert_int_equal(s.n_weights, 3);
    AXIS(&s.weights[0], PPB_F_QUERY_LEN, 8192);
    assert_true(s.weights[0].weight == 3.0);
    AXIS(&s.weights[1], PPB_F_NUM_HEADS, 8);
    AXIS(&s.weights[1], PPB_F_NUM_KV_HEADS, 2);
    AXIS(&s.weights[1], PPB_F_BLOCK_M, 64, 128);
    assert_true(s.weights[1].weight == 0.5);
    assert_int_equal(fields_given(&s.weights[2]), 0);
    assert_true(s.weights[2].weight == 2.0);

    assert_int_equal(s.measure.cold_l2, 0);
    assert_true(s.measure.warmup_ms == 20);
    assert_int_equal(s.measure.min_samples, 12);
    assert_int_equal(s.measure.max_samples, 200);
    assert_true(s.measure.min_time_ms == 100);
    assert_true(s.measure.budget_ms == 3000);
    assert_true(s.measure.target_noise == 0.02);
    assert_int_equal(s.measure.windows, 2);
    assert_true(s.measure.seed == UINT64_MAX);
    assert_true(s.check.atol[PPB_FP16] == 1e-3);
    assert_true(s.check.rtol[PPB_FP16] == 2e-2);
    assert_true(s.check.atol[PPB_BF16] == 3.2e-2);
    assert_true(s.check.rtol[PPB_BF16] == 5e-2); /* not given: default kept */
    assert_int_equal(s.check.full_check_max_rows, 1024);
    assert_int_equal(s.check.sample_rows, 128);

    char dir[4096];
    ppb_suite_dir(&s, dir, sizeof dir);
    char expected_dir[4096];
    data_path(expected_dir, sizeof expected_dir, "good");
    assert_string_equal(dir, expected_dir);
    ppb_suite_free(&s);
}

static void test_heads_pairs_expand_one_set_per_pair(void **state)
{
    (void)state;
    ppb_suite s;
    ppb_err err = {{0}};
    assert_int_equal(load_text("name: h\nkernel: paged_attention\nshapes:\n"
                               "  - seq_len: [100, 200]\n"
                               "    heads: [\"32/4\", 8/1, '16/16']\n"
                               "    dtype: fp16\n",
                               &s, &err),
                     PPB_OK);
    assert_int_equal(s.n_shapes, 3);
    const int pairs[3][2] = {{32, 4}, {8, 1}, {16, 16}};
    for (int i = 0; i < 3; i++) {
        AXIS(&s.shapes[i], PPB_F_NUM_HEADS, pairs[i][0]);
        AXIS(&s.shapes[i], PPB_F_NUM_KV_HEADS, pairs[i][1]);
        AXIS(&s.shapes[i], PPB_F_SEQ_LEN, 100, 200);
        AXIS(&s.shapes[i], PPB_F_DTYPE, PPB_FP16);
        assert_int_equal(fields_given(&s.shapes[i]), 4);
        assert_int_equal(s.shapes[i].line, 4);
    }
    expansion ex = expand(&s);
    assert_int_equal(ex.cases, 6); /* 3 pairs x 2 lengths, not 3 x 3 x 2 */
    ppb_suite_free(&s);
}

static void test_scalar_is_one_value_list(void **state)
{
    (void)state;
    ppb_suite s;
    ppb_err err = {{0}};
    assert_int_equal(load_text("name: sc\nkernel: prefix_prefill\nshapes:\n"
                               "  - {query_len: 17, num_heads: 8, num_kv_heads: [2], "
                               "ragged: true, dtype: \"bf16\", page_size: '32'}\n"
                               "configs:\n  - {block_m: 64, path: mma}\n",
                               &s, &err),
                     PPB_OK);
    assert_int_equal(s.n_shapes, 1);
    AXIS(&s.shapes[0], PPB_F_QUERY_LEN, 17);
    AXIS(&s.shapes[0], PPB_F_NUM_HEADS, 8);
    AXIS(&s.shapes[0], PPB_F_NUM_KV_HEADS, 2);
    AXIS(&s.shapes[0], PPB_F_RAGGED, 1);
    AXIS(&s.shapes[0], PPB_F_DTYPE, PPB_BF16);
    AXIS(&s.shapes[0], PPB_F_PAGE_SIZE, 32);
    assert_int_equal(fields_given(&s.shapes[0]), 6);
    assert_int_equal(s.n_configs, 1);
    AXIS(&s.configs[0], PPB_F_BLOCK_M, 64);
    AXIS(&s.configs[0], PPB_F_PATH, PPB_PATH_MMA);
    assert_int_equal(fields_given(&s.configs[0]), 2);
    ppb_suite_free(&s);
}

/* num_stages: a prefill config axis like the others (a list, a scalar, in exclude
 * rules); a suite that leaves it out runs it at 0, each implementation's own choice. */
static void test_num_stages_is_a_config_axis(void **state)
{
    (void)state;
    ppb_suite s;
    ppb_err err = {{0}};
    assert_int_equal(load_text("name: st\nkernel: prefix_prefill\nshapes:\n"
                               "  - {query_len: 17, heads: 8/2}\n"
                               "configs:\n  - {block_m: 64, num_stages: [0, 2, 4]}\n  - {num_stages: 3}\n"
                               "exclude:\n  - {num_stages: 4}\n",
                               &s, &err),
                     PPB_OK);
    assert_int_equal(s.n_configs, 2);
    AXIS(&s.configs[0], PPB_F_NUM_STAGES, 0, 2, 4);
    AXIS(&s.configs[1], PPB_F_NUM_STAGES, 3);
    assert_int_equal(fields_given(&s.configs[1]), 1);
    AXIS(&s.excludes[0], PPB_F_NUM_STAGES, 4);
    expansion ex = expand(&s);
    assert_int_equal(ex.cases, 3); /* 0 and 2 of the first set (4 excluded), 3 of the second */
    assert_int_equal(ex.excluded, 1);
    assert_int_equal(ex.invalid, 0);
    ppb_suite_free(&s);

    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    assert_int_equal(c.config.num_stages, 0);
}

static void test_defaults(void **state)
{
    (void)state;
    ppb_suite d;
    memset(&d, 0, sizeof d);
    ppb_suite_defaults(&d);
    assert_int_equal(d.measure.cold_l2, 1);
    assert_true(d.measure.warmup_ms == 25);
    assert_int_equal(d.measure.min_samples, 10);
    assert_int_equal(d.measure.max_samples, 500);
    assert_true(d.measure.min_time_ms == 100);
    assert_true(d.measure.budget_ms == 5000);
    assert_true(d.measure.target_noise == 0.01);
    assert_int_equal(d.measure.windows, 1);
    assert_true(d.measure.seed == 20261129u);
    assert_true(d.check.atol[PPB_FP16] == 2e-3 && d.check.rtol[PPB_FP16] == 1e-2);
    assert_true(d.check.atol[PPB_BF16] == 1.6e-2 && d.check.rtol[PPB_BF16] == 5e-2);
    assert_int_equal(d.check.full_check_max_rows, 4096);
    assert_int_equal(d.check.sample_rows, 256);

    char path[4096];
    data_path(path, sizeof path, "good/minimal.yaml");
    ppb_suite s;
    load_ok(path, &s);
    assert_memory_equal(&s.measure, &d.measure, sizeof d.measure);
    assert_memory_equal(&s.check, &d.check, sizeof d.check);
    assert_string_equal(s.description, "");
    assert_string_equal(s.target, "");
    assert_string_equal(s.model, "");
    /* No configs: no config sets; every config field takes its default. */
    assert_int_equal(s.n_configs, 0);
    assert_null(s.configs);
    assert_int_equal(s.n_excludes, 0);
    assert_null(s.excludes);
    assert_int_equal(s.n_weights, 0);
    expansion ex = expand(&s);
    assert_int_equal(ex.cases, 1);
    assert_int_equal(ex.invalid, 0);
    ppb_suite_free(&s);
}

/* ---- hash ------------------------------------------------------------------ */

static void test_hash_is_fnv1a_of_the_bytes(void **state)
{
    (void)state;
    char hex[17];
    fnv1a_hex((const unsigned char *)"", 0, hex);
    assert_string_equal(hex, "cbf29ce484222325"); /* published FNV-1a 64 test vectors */
    fnv1a_hex((const unsigned char *)"a", 1, hex);
    assert_string_equal(hex, "af63dc4c8601ec8c");
    fnv1a_hex((const unsigned char *)"foobar", 6, hex);
    assert_string_equal(hex, "85944171f73967e8");

    char text[] = "# v1\nname: h\nkernel: prefix_prefill\nshapes:\n  - {query_len: 1, heads: 1/1}\n";
    ppb_suite a, b, c;
    ppb_err err = {{0}};
    assert_int_equal(load_text(text, &a, &err), PPB_OK);
    fnv1a_hex((const unsigned char *)text, strlen(text), hex);
    assert_string_equal(a.hash, hex);
    assert_int_equal(strlen(a.hash), 16);
    /* Same bytes, another file: same hash. */
    assert_int_equal(load_text(text, &b, &err), PPB_OK);
    assert_string_equal(a.hash, b.hash);
    /* One byte changed (in a comment, so the suite means the same): new hash. */
    text[3] = '2';
    assert_int_equal(load_text(text, &c, &err), PPB_OK);
    assert_string_not_equal(a.hash, c.hash);
    fnv1a_hex((const unsigned char *)text, strlen(text), hex);
    assert_string_equal(c.hash, hex);
    ppb_suite_free(&a);
    ppb_suite_free(&b);
    ppb_suite_free(&c);
}

/* ---- matching: exclude and weights ------------------------------------------ */

static void test_exclude_and_weights_match_every_given_field(void **state)
{
    (void)state;
    char path[4096];
    data_path(path, sizeof path, "good/full.yaml");
    ppb_suite s;
    load_ok(path, &s);
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    ppb_case_set(&c, PPB_F_QUERY_LEN, 17);
    ppb_case_set(&c, PPB_F_NUM_HEADS, 8);
    ppb_case_set(&c, PPB_F_NUM_KV_HEADS, 2);
    ppb_case_set(&c, PPB_F_DTYPE, PPB_BF16);
    ppb_case_set(&c, PPB_F_BLOCK_M, 128);
    ppb_case_set(&c, PPB_F_BLOCK_N, 128);

    /* exclude {block_m: 128, block_n: 64}: both fields must match. */
    assert_false(ppb_axis_set_matches(&s.excludes[0], &c));
    /* exclude heads 8/2 + dtype fp16: heads match, dtype does not. */
    assert_false(ppb_suite_case_excluded(&s, &c));
    ppb_case_set(&c, PPB_F_BLOCK_N, 64);
    assert_true(ppb_suite_case_excluded(&s, &c));
    ppb_case_set(&c, PPB_F_BLOCK_N, 128);
    ppb_case_set(&c, PPB_F_DTYPE, PPB_FP16);
    assert_true(ppb_suite_case_excluded(&s, &c));
    ppb_case_set(&c, PPB_F_NUM_KV_HEADS, 4); /* 8/4 is not a listed pair */
    assert_false(ppb_suite_case_excluded(&s, &c));

    /* Weights: first matching rule wins; the empty match is a catch-all. */
    ppb_case_set(&c, PPB_F_NUM_KV_HEADS, 2);
    assert_true(ppb_suite_case_weight(&s, &c) == 0.5);
    ppb_case_set(&c, PPB_F_QUERY_LEN, 8192);
    assert_true(ppb_suite_case_weight(&s, &c) == 3.0);
    ppb_case_set(&c, PPB_F_QUERY_LEN, 17);
    ppb_case_set(&c, PPB_F_BLOCK_M, 32);
    assert_true(ppb_suite_case_weight(&s, &c) == 2.0);
    ppb_suite_free(&s);

    ppb_suite none;
    memset(&none, 0, sizeof none);
    assert_true(ppb_suite_case_weight(&none, &c) == 1.0);
    assert_false(ppb_suite_case_excluded(&none, &c));
}

/* smoke-decode's expect_wrong: names exactly its overrunning mismatches (issue 36):
 * host 64 / kernel 32 everywhere, host 512 / kernel 256 past one partition. */
static void test_expect_wrong_names_the_deliberate_faults(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/suites/smoke-decode.yaml", source_dir());
    ppb_suite s;
    load_ok(path, &s);
    assert_int_equal(s.n_expect_wrong, 2);
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    ppb_case_set(&c, PPB_F_VERSION, 2);
    ppb_case_set(&c, PPB_F_SEQ_LEN, 100);
    assert_false(ppb_suite_case_expects_wrong(&s, &c));   /* no mismatch */
    ppb_case_set(&c, PPB_F_PARTITION_SIZE, 32);
    ppb_case_set(&c, PPB_F_HOST_PARTITION_SIZE, 64);
    assert_true(ppb_suite_case_expects_wrong(&s, &c));
    ppb_case_set(&c, PPB_F_PARTITION_SIZE, 64);
    ppb_case_set(&c, PPB_F_HOST_PARTITION_SIZE, 32);
    assert_false(ppb_suite_case_expects_wrong(&s, &c));   /* buffers too large: correct */
    ppb_case_set(&c, PPB_F_PARTITION_SIZE, 256);
    ppb_case_set(&c, PPB_F_HOST_PARTITION_SIZE, 512);
    assert_false(ppb_suite_case_expects_wrong(&s, &c));   /* one partition: nothing past it */
    ppb_case_set(&c, PPB_F_SEQ_LEN, 257);
    assert_true(ppb_suite_case_expects_wrong(&s, &c));
    ppb_suite_free(&s);
    assert_null(s.expect_wrong);
}

/* ---- limits and edge cases -------------------------------------------------- */

static void test_value_limit_is_inclusive(void **state)
{
    (void)state;
    char text[2048];
    int n = snprintf(text, sizeof text, "name: l\nkernel: prefix_prefill\nshapes:\n  - heads: 1/1\n"
                                        "    query_len: [");
    for (int i = 1; i <= PPB_MAX_AXIS_VALUES; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s%d", i > 1 ? ", " : "", i);
    snprintf(text + n, sizeof text - (size_t)n, "]\n");
    ppb_suite s;
    ppb_err err = {{0}};
    assert_int_equal(load_text(text, &s, &err), PPB_OK);
    assert_int_equal(s.shapes[0].axis[PPB_F_QUERY_LEN].n, PPB_MAX_AXIS_VALUES);
    assert_int_equal(s.shapes[0].axis[PPB_F_QUERY_LEN].v[PPB_MAX_AXIS_VALUES - 1],
                     PPB_MAX_AXIS_VALUES);
    ppb_suite_free(&s);
}

static void test_missing_file_and_zero_byte_file(void **state)
{
    (void)state;
    ppb_suite s;
    ppb_err err = {{0}};
    assert_int_equal(ppb_suite_load("/nonexistent/ppb/suite.yaml", &s, &err), PPB_EINPUT); /* the input file is missing: exit 3 */
    assert_non_null(strstr(err.msg, "/nonexistent/ppb/suite.yaml"));
    assert_null(s.shapes);
    char path[4096];
    write_temp("", path, sizeof path);
    assert_int_equal(ppb_suite_load(path, &s, &err), PPB_EINPUT);
    unlink(path);
    char expected[4200];
    snprintf(expected, sizeof expected, "%s:1:1: ", path);
    assert_memory_equal(err.msg, expected, strlen(expected));
    assert_null(s.shapes);
}

static void test_free_is_safe_on_zeroed_and_twice(void **state)
{
    (void)state;
    ppb_suite s;
    memset(&s, 0, sizeof s);
    ppb_suite_free(&s);
    ppb_suite_free(NULL);
    char path[4096];
    data_path(path, sizeof path, "good/full.yaml");
    load_ok(path, &s);
    ppb_suite_free(&s);
    assert_null(s.shapes);
    assert_null(s.configs);
    assert_null(s.weights);
    assert_int_equal(s.n_shapes + s.n_configs + s.n_excludes + s.n_weights, 0);
    ppb_suite_free(&s);
}

static void test_suite_dir(void **state)
{
    (void)state;
    ppb_suite s;
    char dir[4096];
    memset(&s, 0, sizeof s);
    snprintf(s.path, sizeof s.path, "suites/prefill.yaml");
    ppb_suite_dir(&s, dir, sizeof dir);
    assert_string_equal(dir, "suites");
    snprintf(s.path, sizeof s.path, "prefill.yaml");
    ppb_suite_dir(&s, dir, sizeof dir);
    assert_string_equal(dir, ".");
    snprintf(s.path, sizeof s.path, "/prefill.yaml");
    ppb_suite_dir(&s, dir, sizeof dir);
    assert_string_equal(dir, "/");
}

/* trend: the suite's floor and multiplier (defaults 2% and 5), and groups by
 * match:, the first matching one winning, its unset values the suite's
 * (mutation: a group's value not applied, or groups taken last-match). */
static void test_trend_thresholds(void **state)
{
    (void)state;
    static const char head[] = "name: t\nkernel: paged_attention\n"
                               "shapes: [{seq_len: [512, 4096], heads: '8/1', head_dim: [64, 128]}]\n";
    char text[2048];
    ppb_suite s;
    ppb_err err = {{0}};
    snprintf(text, sizeof text, "%s", head);
    assert_int_equal(load_text(text, &s, &err), PPB_OK);
    assert_true(s.trend.min_change_floor == 0.02 && s.trend.noise_multiplier == 5);
    assert_int_equal(s.n_trend_groups, 0);
    ppb_suite_free(&s);

    snprintf(text, sizeof text,
             "%strend:\n  min_change_floor: 0.03\n  noise_multiplier: 4\n  groups:\n"
             "    - {match: {head_dim: 128, seq_len: 4096}, min_change_floor: 0.01}\n"
             "    - {match: {head_dim: 128}, noise_multiplier: 6}\n"
             "    - {match: {heads: ['8/1', '4/1']}, min_change_floor: 0.5}\n",
             head);
    assert_int_equal(load_text(text, &s, &err), PPB_OK);
    assert_true(s.trend.min_change_floor == 0.03 && s.trend.noise_multiplier == 4);
    assert_int_equal(s.n_trend_groups, 4); /* the heads pairs: one set each */
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.num_heads = 8;
    c.shape.num_kv_heads = 1;
    c.shape.head_dim = 128;
    c.shape.seq_len = 4096;
    ppb_trend_settings t;
    assert_int_equal(ppb_suite_case_trend(&s, &c, &t), 0);
    assert_true(t.min_change_floor == 0.01 && t.noise_multiplier == 4);
    c.shape.seq_len = 512;
    assert_int_equal(ppb_suite_case_trend(&s, &c, &t), 1);
    assert_true(t.min_change_floor == 0.03 && t.noise_multiplier == 6);
    c.shape.head_dim = 64;
    assert_int_equal(ppb_suite_case_trend(&s, &c, &t), 2);
    assert_true(t.min_change_floor == 0.5);
    c.shape.num_heads = 16;
    assert_int_equal(ppb_suite_case_trend(&s, &c, &t), -1);
    assert_true(t.min_change_floor == 0.03 && t.noise_multiplier == 4);
    ppb_suite_free(&s);

    /* errors name the file, line and field */
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {"trend: {min_change_floor: 2}\n", ":4:27: trend.min_change_floor:"},
        {"trend: {noise_multiplier: -1}\n", "trend.noise_multiplier:"},
        {"trend: {floor: 0.02}\n", "trend.floor"},
        {"trend: {groups: []}\n", "empty list"},
        {"trend: {groups: [{match: {head_dim: 64}}]}\n", "trend.groups[0].min_change_floor: a trend group sets"},
        {"trend: {groups: [{min_change_floor: 0.1}]}\n", "trend.groups[0].match: required"},
        {"trend: {groups: [{match: {block_m: 64}, min_change_floor: 0.1}]}\n", "trend.groups[0].match"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "%s%s", head, bad[i].yaml);
        assert_int_equal(load_text(text, &s, &err), PPB_EINPUT);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("%s: got '%s', want '%s'", bad[i].yaml, err.msg, bad[i].want);
        assert_null(s.trend_groups);
    }
}

/* ---- the bad corpus ---------------------------------------------------------- */

static int read_expectation(const char *path, int *line, int *col, char *word, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char first[512] = "";
    char *got = fgets(first, sizeof first, f);
    fclose(f);
    char fmt[64];
    snprintf(fmt, sizeof fmt, "# expect: %%d:%%d %%%zus", len - 1);
    if (!got || sscanf(first, fmt, line, col, word) != 3)
        return -1;
    return 0;
}

static void test_bad_corpus_reports_position_and_field(void **state)
{
    (void)state;
    char dir[4096];
    data_path(dir, sizeof dir, "bad");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int checked = 0, failures = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        char path[8192], word[128];
        int line, col;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (read_expectation(path, &line, &col, word, sizeof word) != 0) {
            print_error("%s: first line is not '# expect: LINE:COL WORD'\n", path);
            failures++;
            continue;
        }
        ppb_suite s;
        ppb_err err = {{0}};
        int rc = ppb_suite_load(path, &s, &err);
        char prefix[8300];
        snprintf(prefix, sizeof prefix, "%s:%d:%d: ", path, line, col);
        const char *after = err.msg + strlen(prefix);
        int ok = rc == PPB_EINPUT && strncmp(err.msg, prefix, strlen(prefix)) == 0 &&
                 strstr(after, word) != NULL && strchr(err.msg, '\n') == NULL &&
                 s.shapes == NULL && s.configs == NULL && s.excludes == NULL &&
                 s.weights == NULL && s.n_shapes == 0;
        if (!ok) {
            print_error("%s: expected rc %d and '%s...%s', got rc %d: %s\n", e->d_name, PPB_EINPUT,
                        prefix, word, rc, err.msg);
            failures++;
        }
        checked++;
    }
    closedir(d);
    assert_int_equal(failures, 0);
    assert_true(checked >= 15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_suites_load_and_expand),
        cmocka_unit_test(test_shipped_suites_cover_anchor_sizes),
        cmocka_unit_test(test_full_example_values_land_in_axis_sets),
        cmocka_unit_test(test_heads_pairs_expand_one_set_per_pair),
        cmocka_unit_test(test_scalar_is_one_value_list),
        cmocka_unit_test(test_num_stages_is_a_config_axis),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_hash_is_fnv1a_of_the_bytes),
        cmocka_unit_test(test_exclude_and_weights_match_every_given_field),
        cmocka_unit_test(test_expect_wrong_names_the_deliberate_faults),
        cmocka_unit_test(test_value_limit_is_inclusive),
        cmocka_unit_test(test_missing_file_and_zero_byte_file),
        cmocka_unit_test(test_free_is_safe_on_zeroed_and_twice),
        cmocka_unit_test(test_suite_dir),
        cmocka_unit_test(test_trend_thresholds),
        cmocka_unit_test(test_bad_corpus_reports_position_and_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
