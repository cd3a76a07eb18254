/* The reference cache: rows read back are the rows computed, every input of
 * the rows is in the key, and a damaged or unusable file is recomputed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel_cache.h"
#include "reference_cache.h"
#include "temp_dir.h"

static const ppb_check_settings check = {{1e-2, 2e-2}, {1e-2, 2e-2}, 64, 16};

static ppb_case make_case(int batch, int ctx, int heads, int kv_heads)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = batch;
    c.shape.seq_len = ctx;
    c.shape.num_heads = heads;
    c.shape.num_kv_heads = kv_heads;
    c.shape.head_dim = 64;
    c.shape.page_size = 16;
    c.shape.dtype = PPB_BF16;
    ppb_case_make_key(&c);
    return c;
}

static void make(ppb_workload *w, const ppb_case *c, uint64_t seed)
{
    ppb_err err = {{0}};
    if (ppb_workload_create(w, c, seed, 1, &err))
        fail_msg("ppb_workload_create: %s", err.msg);
}

static int get(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, const char *dir,
               ppb_reference_rows *r)
{
    ppb_err err = {{0}};
    int hit = -1;
    if (ppb_reference_rows_get(w, cs, seed, dir, NULL, r, &hit, &err))
        fail_msg("ppb_reference_rows_get: %s", err.msg);
    return hit;
}

static void assert_same_rows(const ppb_reference_rows *a, const ppb_reference_rows *b, int dim)
{
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->rows, b->rows, sizeof *a->rows * (size_t)a->n);
    assert_memory_equal(a->values, b->values, sizeof *a->values * (size_t)a->n * (size_t)dim);
}

static void test_read_back_is_computed(void **state)
{
    (void)state;
    char *dir = temp_dir_make();
    assert_non_null(dir);
    ppb_case c = make_case(3, 100, 4, 2);
    ppb_workload w;
    make(&w, &c, 7);
    ppb_reference_rows fresh, first, again;
    ppb_err err = {{0}};
    assert_int_equal(ppb_reference_rows_compute(&w, &check, 7, &fresh, &err), PPB_OK);
    assert_int_equal(get(&w, &check, 7, dir, &first), 0); /* a miss computes and writes */
    assert_int_equal(temp_dir_count(dir), 1);
    assert_int_equal(get(&w, &check, 7, dir, &again), 1); /* then it is read */
    assert_ptr_equal(again.w, &w);
    assert_same_rows(&fresh, &first, 64);
    assert_same_rows(&fresh, &again, 64);
    ppb_reference_rows_free(&fresh);
    ppb_reference_rows_free(&first);
    ppb_reference_rows_free(&again);
    ppb_workload_free(&w);
    temp_dir_remove(dir);
}

/* A sampled check (more rows than full_check_max_rows) caches its sample. */
static void test_sampled_rows(void **state)
{
    (void)state;
    char *dir = temp_dir_make();
    assert_non_null(dir);
    ppb_case c = make_case(4, 300, 32, 4); /* 128 rows > 64: sampled */
    ppb_workload w;
    make(&w, &c, 9);
    ppb_reference_rows first, again;
    assert_int_equal(get(&w, &check, 9, dir, &first), 0);
    assert_true(first.n < 128);
    assert_int_equal(get(&w, &check, 9, dir, &again), 1);
    assert_same_rows(&first, &again, 64);
    ppb_reference_rows_free(&first);
    ppb_reference_rows_free(&again);
    ppb_workload_free(&w);
    temp_dir_remove(dir);
}

/* Every input of the rows is in the key: each change below is a miss. */
static void test_key_names_every_input(void **state)
{
    (void)state;
    ppb_case c = make_case(3, 100, 4, 2), other_heads = make_case(3, 100, 8, 2), longer = make_case(3, 101, 4, 2);
    ppb_workload w, wh, wl, wseed;
    make(&w, &c, 7);
    make(&wh, &other_heads, 7);
    make(&wl, &longer, 7);
    make(&wseed, &c, 8);
    ppb_check_settings fewer = check, smaller = check;
    fewer.sample_rows = 15;
    smaller.full_check_max_rows = 63;
    char base[2048], k[2048];
    ppb_reference_cache_key(&w, &check, 7, base, sizeof base);
    assert_null(strchr(base, '\n')); /* the store takes one line */
    ppb_reference_cache_key(&w, &check, 7, k, sizeof k);
    assert_string_equal(base, k);
    ppb_reference_cache_key(&w, &check, 8, k, sizeof k);
    assert_string_not_equal(base, k);
    /* other tensors under the same lengths and block table, same rows' seed */
    memcpy(wseed.block_table, w.block_table, sizeof *w.block_table * (size_t)w.batch * (size_t)w.max_blocks_per_seq);
    ppb_reference_cache_key(&wseed, &check, 7, k, sizeof k);
    assert_string_not_equal(base, k);
    ppb_reference_cache_key(&wh, &check, 7, k, sizeof k);
    assert_string_not_equal(base, k);
    ppb_reference_cache_key(&wl, &check, 7, k, sizeof k);
    assert_string_not_equal(base, k);
    ppb_reference_cache_key(&w, &fewer, 7, k, sizeof k);
    assert_string_not_equal(base, k);
    ppb_reference_cache_key(&w, &smaller, 7, k, sizeof k);
    assert_string_not_equal(base, k);
    /* The same shape over a different block table (the layout) is another key. */
    w.block_table[0] ^= 1;
    ppb_reference_cache_key(&w, &check, 7, k, sizeof k);
    assert_string_not_equal(base, k);
    w.block_table[0] ^= 1;
    ppb_workload_free(&w);
    ppb_workload_free(&wh);
    ppb_workload_free(&wl);
    ppb_workload_free(&wseed);
}

/* A damaged file, or one whose image does not fit the workload, is a miss:
 * the rows are computed again, and right. */
static void test_damaged_file_is_recomputed(void **state)
{
    (void)state;
    char *dir = temp_dir_make();
    assert_non_null(dir);
    ppb_case c = make_case(3, 100, 4, 2);
    ppb_workload w;
    make(&w, &c, 7);
    ppb_reference_rows good, r;
    assert_int_equal(get(&w, &check, 7, dir, &good), 0);

    /* flip the last byte of the file (a value) */
    char key[2048], path[4700];
    ppb_reference_cache_key(&w, &check, 7, key, sizeof key);
    ppb_kernel_cache_path(dir, key, path, sizeof path);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -1, SEEK_END), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, -1, SEEK_END), 0);
    fputc(ch ^ 0x40, f);
    fclose(f);
    assert_int_equal(get(&w, &check, 7, dir, &r), 0);
    assert_same_rows(&good, &r, 64);
    ppb_reference_rows_free(&r);
    assert_int_equal(get(&w, &check, 7, dir, &r), 1); /* rewritten whole */
    ppb_reference_rows_free(&r);

    /* a whole, checksummed file under the key whose image claims more rows than the case has */
    int64_t bogus[3] = {1000, 64, 12};
    ppb_kernel_cache_entry e = {.image = bogus, .size = sizeof bogus};
    ppb_err err = {{0}};
    assert_int_equal(ppb_kernel_cache_store(dir, key, &e, &err), PPB_OK);
    assert_int_equal(get(&w, &check, 7, dir, &r), 0);
    assert_same_rows(&good, &r, 64);
    ppb_reference_rows_free(&r);

    ppb_reference_rows_free(&good);
    ppb_workload_free(&w);
    temp_dir_remove(dir);
}

/* No folder: computed, nothing written. A folder that cannot be written:
 * still computed, still right. */
static void test_no_cache_and_unwritable(void **state)
{
    (void)state;
    ppb_case c = make_case(2, 50, 4, 2);
    ppb_workload w;
    make(&w, &c, 7);
    ppb_reference_rows a, b;
    assert_int_equal(get(&w, &check, 7, "", &a), 0);
    assert_int_equal(get(&w, &check, 7, "", &b), 0);
    ppb_reference_rows_free(&b);
    char *dir = temp_dir_make();
    assert_non_null(dir);
    char blocked[4200];
    snprintf(blocked, sizeof blocked, "%s/file", dir);
    FILE *f = fopen(blocked, "w"); /* a file where the folder should be */
    assert_non_null(f);
    fclose(f);
    char under[4300];
    snprintf(under, sizeof under, "%s/sub", blocked);
    assert_int_equal(get(&w, &check, 7, under, &b), 0);
    assert_same_rows(&a, &b, 64);
    ppb_reference_rows_free(&a);
    ppb_reference_rows_free(&b);
    ppb_workload_free(&w);
    temp_dir_remove(dir);
}

static void test_cache_dir_setting(void **state)
{
    (void)state;
    char buf[4096];
    setenv("PPBENCH_KERNEL_CACHE", "/some/cache", 1);
    unsetenv(PPB_REFERENCE_CACHE_ENV);
    ppb_reference_cache_dir(buf, sizeof buf);
    assert_string_equal(buf, "/some/cache");
    setenv(PPB_REFERENCE_CACHE_ENV, "off", 1);
    ppb_reference_cache_dir(buf, sizeof buf);
    assert_string_equal(buf, "");
    unsetenv(PPB_REFERENCE_CACHE_ENV);
    unsetenv("PPBENCH_KERNEL_CACHE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_back_is_computed),
        cmocka_unit_test(test_sampled_rows),
        cmocka_unit_test(test_key_names_every_input),
        cmocka_unit_test(test_damaged_file_is_recomputed),
        cmocka_unit_test(test_no_cache_and_unwritable),
        cmocka_unit_test(test_cache_dir_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
