/* ptxas -v's resource lines read into numbers (kernels/runtime/ptxas_report.h):
 * the figures of the first kernel, a spill read as one, logs without the lines
 * (a cache hit's empty log, a failed compile) read as unknown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ptxas_report.h"

/* NVRTC 13.0's log for the 128/128/8 wgmma prefill kernel that spilled (reverted in e26c05d). */
static const char SPILLED[] =
    "ptxas info    : 30 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z21prefix_prefill_kernelI13__nv_bfloat16Li128ELi128ELi128ELi8ELi2EEv16"
    "ppb_prefill_args' for 'sm_90a'\n"
    "ptxas info    : Function properties for _Z21prefix_prefill_kernelI13__nv_bfloat16Li128ELi128ELi128ELi8ELi2EEv16"
    "ppb_prefill_args\n"
    "ptxas         .     24 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers\n"
    "ptxas info    : Compile time = 1831.849 ms\n";

static void test_spill_read(void **state)
{
    (void)state;
    ppb_ptxas_report r;
    ppb_ptxas_report_parse(SPILLED, &r);
    assert_true(r.known);
    assert_int_equal(r.registers, 255);
    assert_int_equal(r.stack_bytes, 24);
    assert_int_equal(r.spill_store_bytes, 24);
    assert_int_equal(r.spill_load_bytes, 20);
}

/* Two kernels in one log, and no trailing newline: the first kernel's figures. */
static void test_first_kernel_counts(void **state)
{
    (void)state;
    ppb_ptxas_report r;
    ppb_ptxas_report_parse("ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                           "ptxas info    : Used 207 registers, used 1 barriers, 16 bytes smem\n"
                           "ptxas         .     8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
                           "ptxas info    : Used 96 registers",
                           &r);
    assert_true(r.known);
    assert_int_equal(r.registers, 207);
    assert_int_equal(r.stack_bytes, 0);
    assert_int_equal(r.spill_store_bytes, 0);
}

static void test_no_lines_unknown(void **state)
{
    (void)state;
    ppb_ptxas_report r;
    ppb_ptxas_report_parse(NULL, &r);
    assert_false(r.known);
    ppb_ptxas_report_parse("", &r);
    assert_false(r.known);
    /* a register line without the frame line (an older ptxas, a truncated log) is not enough */
    ppb_ptxas_report_parse("ptxas info    : Used 40 registers\n", &r);
    assert_false(r.known);
    assert_int_equal(r.registers, 0);
    ppb_ptxas_report_parse("error: expected a ';'\n", &r);
    assert_false(r.known);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_read),
        cmocka_unit_test(test_first_kernel_counts),
        cmocka_unit_test(test_no_lines_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
