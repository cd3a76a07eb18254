/* The one-line error buffer (kernels/common/ppb_error.c): a message longer
 * than the buffer keeps its end, where the reason is, not only its start (a
 * 5,054-character path once left "PATH..." and no reason). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ppb_error.h"

static void test_short_messages_are_whole(void **state)
{
    (void)state;
    ppb_err err;
    assert_int_equal(ppb_fail(&err, PPB_EIO, "%s: %s", "/tmp/r.db", "disk full"), PPB_EIO);
    assert_string_equal(err.msg, "/tmp/r.db: disk full");
    ppb_fail(&err, PPB_EINPUT, "line\nbreak\x1b[2J");
    assert_string_equal(err.msg, "line?break?[2J");
}

static void test_a_long_path_keeps_the_reason(void **state)
{
    (void)state;
    static char path[5055];
    memset(path, 'p', sizeof path - 1);
    path[0] = '/';
    ppb_err err;
    ppb_fail(&err, PPB_EIO, "cannot open the database %s: %s", path, "No space left on device");
    size_t n = strlen(err.msg);
    assert_true(n < sizeof err.msg);
    assert_true(n > sizeof err.msg - 8);
    assert_memory_equal(err.msg, "cannot open the database /ppp", 29);
    assert_non_null(strstr(err.msg, "ppp ... ppp"));
    assert_string_equal(err.msg + n - 25, ": No space left on device");
    /* a prefix keeps the reason too */
    ppb_err_prefix(&err, "while storing run %d: ", 7);
    n = strlen(err.msg);
    assert_memory_equal(err.msg, "while storing run 7: cannot", 27);
    assert_string_equal(err.msg + n - 25, ": No space left on device");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_messages_are_whole),
        cmocka_unit_test(test_a_long_path_keeps_the_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
