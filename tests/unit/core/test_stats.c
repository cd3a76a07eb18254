/* harness/core/stats.h: the midmean (the mean of the middle half), which the
 * pooled trend and compare's run-level check take over cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "stats.h"

static void test_midmean_cuts_a_quarter_from_each_end(void **state)
{
    (void)state;
    /* 8 values: 2 cut from each end, the middle four 3 4 5 6 */
    const double x[] = {100, 5, -50, 3, 6, 4, 1e9, 0};
    assert_true(fabs(ppb_midmean(x, 8) - 4.5) < 1e-12);
    /* 3 values: n / 4 = 0, nothing cut */
    const double y[] = {1, 2, 6};
    assert_true(fabs(ppb_midmean(y, 3) - 3) < 1e-12);
    /* 5 values: one cut from each end */
    const double z[] = {9, 1, 2, 3, -9};
    assert_true(fabs(ppb_midmean(z, 5) - 2) < 1e-12);
    assert_true(isnan(ppb_midmean(x, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_midmean_cuts_a_quarter_from_each_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
