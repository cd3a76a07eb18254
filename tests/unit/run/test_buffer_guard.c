/* Guard zones (harness/run/buffer_guard.h): how far before and past a buffer
 * a kernel wrote, read from the canaries; the reason's wording; and that an
 * untouched set of zones finds nothing (so no correct case is made wrong). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "buffer_guard.h"

#define ZONE 64

typedef struct zones {
    unsigned char before[ZONE], after[ZONE];
} zones;

static void fill(zones *z)
{
    memset(z->before, PPB_GUARD_CANARY, ZONE);
    memset(z->after, PPB_GUARD_CANARY, ZONE);
}

static void untouched_finds_nothing(void **state)
{
    (void)state;
    zones z;
    fill(&z);
    ppb_guard_hits h = ppb_guard_read(z.before, ZONE, z.after, ZONE);
    assert_int_equal(h.before, 0);
    assert_int_equal(h.past, 0);
    assert_int_equal(h.changed, 0);
    ppb_guard_report r;
    ppb_guard_report_init(&r);
    ppb_guard_report_add(&r, "out", &h);
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_guard_report_finish(&r, "x", &res), 0);
    assert_int_equal(res.overrun.detected, 0);
    assert_string_equal(res.reason, "");
}

/* The farthest byte counts on each side: before, from the buffer's start; past, from its end. */
static void reach_is_the_farthest_byte(void **state)
{
    (void)state;
    zones z;
    fill(&z);
    z.before[ZONE - 1] = 0;      /* 1 B before */
    z.before[ZONE - 10] = 0;     /* 10 B before: the farthest */
    z.after[0] = 0;              /* 1 B past */
    z.after[6] = 0;              /* 7 B past: the farthest */
    ppb_guard_hits h = ppb_guard_read(z.before, ZONE, z.after, ZONE);
    assert_int_equal(h.before, 10);
    assert_int_equal(h.past, 7);
    assert_int_equal(h.changed, 4);
    /* Either zone may be absent. */
    h = ppb_guard_read(NULL, 0, z.after, ZONE);
    assert_int_equal(h.before, 0);
    assert_int_equal(h.past, 7);
    h = ppb_guard_read(z.before, ZONE, NULL, 0);
    assert_int_equal(h.before, 10);
    assert_int_equal(h.past, 0);
}

/* A byte written with the canary's own value is invisible; any other value is seen. */
static void only_changed_values_count(void **state)
{
    (void)state;
    zones z;
    fill(&z);
    z.after[3] = PPB_GUARD_CANARY;
    z.after[5] = PPB_GUARD_CANARY ^ 0x01;
    ppb_guard_hits h = ppb_guard_read(NULL, 0, z.after, ZONE);
    assert_int_equal(h.past, 6);
    assert_int_equal(h.changed, 1);
}

static void reason_names_buffers_and_inputs(void **state)
{
    (void)state;
    ppb_guard_report r;
    ppb_guard_report_init(&r);
    ppb_guard_hits out = {1, 2, 3}, clean = {0, 0, 0}, table = {0, 5, 1};
    ppb_guard_report_add(&r, "out", &out);
    ppb_guard_report_add(&r, "q", &clean);
    ppb_guard_report_add(&r, "block_table", &table);
    ppb_guard_report_input_changed(&r, "k_cache");
    ppb_guard_report_input_changed(&r, "v_cache");
    ppb_result res;
    ppb_result_init(&res);
    res.overrun.guard_bytes_changed = 10; /* the v2 scratch's own count is kept */
    assert_int_equal(ppb_guard_report_finish(&r, "plug", &res), 1);
    assert_int_equal(res.overrun.detected, 1);
    assert_int_equal(res.overrun.guard_bytes_changed, 14);
    assert_string_equal(res.reason, "impl plug wrote outside its buffers: 1 B before out, 2 B past out, 5 B past "
                                    "block_table; it changed its inputs k_cache, v_cache (guard zones and input "
                                    "checks caught it)");
}

/* Only changed inputs: still found, and the wording says nothing was written outside. */
static void changed_input_alone_is_found(void **state)
{
    (void)state;
    ppb_guard_report r;
    ppb_guard_report_init(&r);
    ppb_guard_report_input_changed(&r, "q");
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_guard_report_finish(&r, "plug", &res), 1);
    assert_int_equal(res.overrun.detected, 1);
    assert_non_null(strstr(res.reason, "nothing outside them; it changed its inputs q"));
}

/* Many buffers: the text stays a bounded string. */
static void long_reports_stay_bounded(void **state)
{
    (void)state;
    ppb_guard_report r;
    ppb_guard_report_init(&r);
    ppb_guard_hits h = {123456789, 987654321, 2};
    for (int i = 0; i < 100; i++) {
        ppb_guard_report_add(&r, "a_buffer_with_a_long_name", &h);
        ppb_guard_report_input_changed(&r, "an_input_with_a_long_name");
    }
    assert_true(strlen(r.outside) < sizeof r.outside);
    assert_true(strlen(r.inputs) < sizeof r.inputs);
    assert_int_equal(r.changed, 200);
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_guard_report_finish(&r, "plug", &res), 1);
    assert_true(strlen(res.reason) < sizeof res.reason);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(untouched_finds_nothing),   cmocka_unit_test(reach_is_the_farthest_byte),
        cmocka_unit_test(only_changed_values_count), cmocka_unit_test(reason_names_buffers_and_inputs),
        cmocka_unit_test(changed_input_alone_is_found), cmocka_unit_test(long_reports_stay_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
