/* The session's inputs for a backend that makes its own on the device: a
 * shape's inputs and rows made ahead and taken over at its turn (only then),
 * and cached rows read without building host tensors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"
#include "temp_dir.h"

static const ppb_backend_ops makes_inputs_ops = {.name = "fake-device", .makes_inputs = 1};
static const ppb_backend_ops host_inputs_ops = {.name = "fake-host", .makes_inputs = 0};

static ppb_case make_case(int seq)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = 2;
    c.shape.seq_len = seq;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.shape.page_size = 16;
    c.shape.dtype = PPB_BF16;
    ppb_case_make_key(&c);
    return c;
}

static void defaults_and_session(ppb_suite *defaults, ppb_session *s, const char *cache)
{
    memset(defaults, 0, sizeof *defaults);
    ppb_suite_defaults(defaults);
    memset(s, 0, sizeof *s);
    s->ops = &makes_inputs_ops;
    snprintf(s->reference_cache, sizeof s->reference_cache, "%s", cache);
}

static void test_inputs_ahead_are_taken_over(void **state)
{
    (void)state;
    char *dir = temp_dir_make();
    assert_non_null(dir);
    ppb_suite defaults;
    ppb_session s;
    defaults_and_session(&defaults, &s, dir);
    const ppb_check_settings *cs = &defaults.check;
    ppb_case c = make_case(100);
    uint64_t seed = ppb_case_seed(7, &c);

    /* ahead: computed (and cached), no host tensors kept */
    ppb_inputs_ahead ahead;
    assert_int_equal(ppb_session_inputs_ahead(&s, &c, seed, cs, &ahead), 1);
    assert_int_equal(s.reference_ahead, 1);
    assert_int_equal(temp_dir_count(dir), 1);
    assert_null(ahead.w.q);
    assert_true(ahead.rows.n > 0);
    long first_row = ahead.rows.rows[0];

    /* another shape's turn: not taken, the ahead inputs stay */
    ppb_case other = make_case(101);
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(&s, &other, ppb_case_seed(7, &other), cs, &ahead, &ref, &w, &res),
                     PPB_OK);
    assert_non_null(w.q); /* not cached: the tensors, for the check's rows */
    assert_null(ref.w);
    assert_string_not_equal(ahead.shape_key, "");
    ppb_workload_free(&w);

    /* the same shape on other inputs (another seed): not taken either */
    assert_int_equal(ppb_session_workload(&s, &c, seed + 1, cs, &ahead, &ref, &w, &res), PPB_OK);
    assert_null(ref.w);
    assert_string_not_equal(ahead.shape_key, "");
    ppb_workload_free(&w);

    /* its own turn: taken over whole, nothing read or computed again */
    int hits = s.reference_hits;
    assert_int_equal(ppb_session_workload(&s, &c, seed, cs, &ahead, &ref, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_OK);
    assert_ptr_equal(w.c, &c);
    assert_null(w.q);
    assert_ptr_equal(ref.w, &w);
    assert_int_equal(ref.rows[0], first_row);
    assert_int_equal(s.reference_hits, hits);
    assert_string_equal(ahead.shape_key, "");
    ppb_reference_rows_free(&ref);
    ppb_workload_free(&w);

    /* the next run: the ahead thread reads them from the cache */
    assert_int_equal(ppb_session_inputs_ahead(&s, &c, seed, cs, &ahead), 1);
    assert_int_equal(s.reference_ahead, 1);
    assert_int_equal(s.reference_hits, hits + 1);
    ppb_inputs_ahead_free(&ahead);
    assert_string_equal(ahead.shape_key, "");
    temp_dir_remove(dir);
}

static void test_inputs_ahead_without_cache_or_device_inputs(void **state)
{
    (void)state;
    ppb_suite defaults;
    ppb_session s;
    defaults_and_session(&defaults, &s, "");
    const ppb_check_settings *cs = &defaults.check;
    ppb_case c = make_case(100);
    uint64_t seed = ppb_case_seed(7, &c);
    ppb_inputs_ahead ahead;

    /* no cache: still made ahead and handed over */
    assert_int_equal(ppb_session_inputs_ahead(&s, &c, seed, cs, &ahead), 1);
    ppb_inputs_ahead_free(&ahead);
    /* a backend that reads host tensors (CPU timings): nothing ahead, tensors always */
    s.ops = &host_inputs_ops;
    assert_int_equal(ppb_session_inputs_ahead(&s, &c, seed, cs, &ahead), 0);
    assert_string_equal(ahead.shape_key, "");
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(&s, &c, seed, cs, NULL, &ref, &w, &res), PPB_OK);
    assert_non_null(w.q);
    ppb_workload_free(&w);
}

static void test_cached_rows_read_without_tensors(void **state)
{
    (void)state;
    char *dir = temp_dir_make();
    assert_non_null(dir);
    ppb_suite defaults;
    ppb_session s;
    defaults_and_session(&defaults, &s, dir);
    const ppb_check_settings *cs = &defaults.check;
    ppb_case c = make_case(100);
    uint64_t seed = ppb_case_seed(7, &c);
    ppb_inputs_ahead ahead;
    assert_int_equal(ppb_session_inputs_ahead(&s, &c, seed, cs, &ahead), 1); /* fills the cache */
    ppb_inputs_ahead_free(&ahead);

    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(&s, &c, seed, cs, NULL, &ref, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_OK);
    assert_null(w.q);
    assert_ptr_equal(ref.w, &w);
    assert_int_equal(s.reference_hits, 1);
    ppb_reference_rows_free(&ref);
    ppb_workload_free(&w);
    temp_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inputs_ahead_are_taken_over),
        cmocka_unit_test(test_inputs_ahead_without_cache_or_device_inputs),
        cmocka_unit_test(test_cached_rows_read_without_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
