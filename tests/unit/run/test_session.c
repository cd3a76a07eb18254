/* The session's use of the reference cache for a backend that makes its own
 * inputs: rows read ahead of the tensors (none built), and rows computed ahead
 * for a later shape. */
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

static void test_rows_ahead_then_read_without_tensors(void **state)
{
    (void)state;
    char *dir = temp_dir_make();
    assert_non_null(dir);
    ppb_suite defaults;
    memset(&defaults, 0, sizeof defaults);
    ppb_suite_defaults(&defaults);
    const ppb_check_settings *cs = &defaults.check;
    ppb_session s;
    memset(&s, 0, sizeof s);
    s.ops = &makes_inputs_ops;
    snprintf(s.reference_cache, sizeof s.reference_cache, "%s", dir);
    ppb_case c = make_case(100);
    uint64_t seed = ppb_case_seed(7, &c);

    /* ahead: computed once into the cache, then found there */
    assert_int_equal(ppb_session_rows_ahead(&s, &c, seed, cs), 1);
    assert_int_equal(temp_dir_count(dir), 1);
    assert_int_equal(ppb_session_rows_ahead(&s, &c, seed, cs), 0);
    assert_int_equal(s.reference_ahead, 1);

    /* the shape's turn: rows read, no host tensors built */
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(&s, &c, seed, cs, &ref, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_OK);
    assert_null(w.q);
    assert_ptr_equal(ref.w, &w);
    assert_true(ref.n > 0);
    assert_int_equal(s.reference_hits, 1);
    ppb_reference_rows_free(&ref);
    ppb_workload_free(&w);

    /* not cached: the tensors are built (the check computes the rows) */
    ppb_case other = make_case(101);
    assert_int_equal(ppb_session_workload(&s, &other, ppb_case_seed(7, &other), cs, &ref, &w, &res), PPB_OK);
    assert_non_null(w.q);
    assert_null(ref.w);
    ppb_workload_free(&w);

    /* a backend that reads host tensors (CPU timings), or no cache: nothing ahead, tensors always */
    temp_dir_clear(dir);
    s.ops = &host_inputs_ops;
    assert_int_equal(ppb_session_rows_ahead(&s, &c, seed, cs), 0);
    assert_int_equal(temp_dir_count(dir), 0);
    s.ops = &makes_inputs_ops;
    s.reference_cache[0] = '\0';
    assert_int_equal(ppb_session_rows_ahead(&s, &c, seed, cs), 0);
    assert_int_equal(ppb_session_workload(&s, &c, seed, cs, &ref, &w, &res), PPB_OK);
    assert_non_null(w.q);
    ppb_workload_free(&w);
    temp_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_ahead_then_read_without_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
