/* The run-time line `show` and the report print (results_table.c): every
 * phase in its place, `other` what they leave of the wall, the overhead from
 * the kernel time; no overhead for a run without a wall time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "results_table.h"

static void test_every_phase_and_what_is_left(void **state)
{
    (void)state;
    const ppb_run_time t = {.wall_s = 4.0, .open_s = 0.25, .generate_s = 0.5, .check_s = 0.25, .warmup_s = 0.125,
                            .sampling_s = 2.5, .store_s = 0.125, .kernel_s = 2.0, .cases = 3};
    char line[256];
    ppb_format_run_time(&t, line, sizeof line);
    assert_string_equal(line, "wall 4.00 s = device 0.25 + inputs 0.50 + check 0.25 + warm-up 0.12 + sampling 2.50 + "
                              "store 0.12 + other 0.25 s; kernels 2.00 s (overhead 50%, 47% without the device's start)");
}

/* No device phase stored (runs before schema version 10): the overhead alone. */
static void test_no_device_phase_overhead_alone(void **state)
{
    (void)state;
    const ppb_run_time t = {.wall_s = 2.0, .sampling_s = 1.5, .kernel_s = 1.5};
    char line[256];
    ppb_format_run_time(&t, line, sizeof line);
    assert_non_null(strstr(line, "kernels 1.50 s (overhead 25%)"));
}

static void test_no_wall_no_overhead(void **state)
{
    (void)state;
    const ppb_run_time t = {.kernel_s = 1.0};
    char line[256];
    ppb_format_run_time(&t, line, sizeof line);
    assert_null(strstr(line, "overhead"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_phase_and_what_is_left),
        cmocka_unit_test(test_no_device_phase_overhead_alone),
        cmocka_unit_test(test_no_wall_no_overhead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
