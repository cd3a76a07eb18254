/* How a run was measured (harness/publish/measured.c): the one rule for the
 * load warning (the load average above the cores, both recorded), the CPU
 * timings note, and both in the words and JSON every document uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measured.h"

static ppb_measured measured(const char *backend, const char *loadavg, const char *cores)
{
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    run.id = 7;
    snprintf(run.backend, sizeof run.backend, "%s", backend);
    snprintf(run.device, sizeof run.device, "Some CPU");
    ppb_measured m;
    ppb_measured_of(&run, loadavg, cores, NULL, &m);
    return m;
}

static char *written(const ppb_measured *m, void (*fn)(const ppb_measured *, FILE *))
{
    static char buf[4096];
    memset(buf, 0, sizeof buf);
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    fn(m, f);
    fclose(f);
    return buf;
}

static void markdown_with_cpu_note(const ppb_measured *m, FILE *out) { ppb_measured_markdown(m, 1, out); }
static void markdown_without_cpu_note(const ppb_measured *m, FILE *out) { ppb_measured_markdown(m, 0, out); }

static void test_load_warning_above_the_cores_only(void **state)
{
    (void)state;
    ppb_measured busy = measured("cuda", "6.85 4.10 3.00", "2"), full = measured("cuda", "2.00 2.00 2.00", "2"),
                 idle = measured("cuda", "0.30 0.20 0.10", "16"), no_cores = measured("cuda", "6.85 1 1", NULL),
                 no_load = measured("cuda", NULL, "2");
    assert_true(ppb_measured_load_warning(&busy));
    assert_false(ppb_measured_load_warning(&full)); /* every core busy is not past them */
    assert_false(ppb_measured_load_warning(&idle));
    assert_false(ppb_measured_load_warning(&no_cores));
    assert_false(ppb_measured_load_warning(&no_load));
    assert_true(isnan(no_load.load_average));
    char note[PPB_MEASURED_NOTE_MAX];
    ppb_measured_load_note(&busy, note, sizeof note);
    assert_string_equal(note, "the load average was 6.85 on 2 cores when run 7 ended: its timings were disturbed, "
                              "so a difference here may be the machine, not the code");
    ppb_measured_load_note(&idle, note, sizeof note);
    assert_string_equal(note, "");
}

static void test_cpu_note_on_the_cpu_backend_only(void **state)
{
    (void)state;
    ppb_measured cpu = measured("cpu", "0.1 0.1 0.1", "2"), gpu = measured("cuda", "0.1 0.1 0.1", "2");
    char note[PPB_MEASURED_NOTE_MAX];
    ppb_measured_cpu_note(&cpu, note, sizeof note);
    assert_string_equal(note, "CPU backend on Some CPU: these are CPU timings and say nothing about a GPU");
    ppb_measured_cpu_note(&gpu, note, sizeof note);
    assert_string_equal(note, "");
    /* the threads a launch ran on, where the run recorded them (PPBENCH_CPU_KERNEL_THREADS) */
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend, sizeof run.backend, "cpu");
    snprintf(run.device, sizeof run.device, "Some CPU");
    ppb_measured_of(&run, NULL, NULL, "1", &cpu);
    ppb_measured_cpu_note(&cpu, note, sizeof note);
    assert_string_equal(note, "CPU backend on Some CPU, each launch on 1 thread: these are CPU timings and say nothing "
                              "about a GPU");
    ppb_measured_of(&run, NULL, NULL, "all (2)", &cpu);
    ppb_measured_cpu_note(&cpu, note, sizeof note);
    assert_non_null(strstr(note, "each launch on all (2) threads: "));
}

static void test_json_says_the_load_and_both_notes(void **state)
{
    (void)state;
    ppb_measured busy_cpu = measured("cpu", "6.00 4.10 3.00", "2"), idle_gpu = measured("cuda", NULL, NULL);
    assert_string_equal(written(&busy_cpu, ppb_measured_json),
                        "{\"run\":7,\"backend\":\"cpu\",\"device\":\"Some CPU\",\"cpu_timings\":true,"
                        "\"load_average\":6.0,\"cpu_cores\":2,\"load_warning\":true,\"notes\":["
                        "\"CPU backend on Some CPU: these are CPU timings and say nothing about a GPU\","
                        "\"the load average was 6.00 on 2 cores when run 7 ended: its timings were disturbed, so a "
                        "difference here may be the machine, not the code\"]}");
    assert_string_equal(written(&idle_gpu, ppb_measured_json),
                        "{\"run\":7,\"backend\":\"cuda\",\"device\":\"Some CPU\",\"cpu_timings\":false,"
                        "\"load_average\":null,\"cpu_cores\":null,\"load_warning\":false,\"notes\":[]}");
}

static void test_markdown_notes(void **state)
{
    (void)state;
    ppb_measured busy_cpu = measured("cpu", "6.85 4.10 3.00", "2"), idle_cpu = measured("cpu", "0.5", "2");
    const char *md = written(&busy_cpu, markdown_with_cpu_note);
    assert_non_null(strstr(md, "\n**Note:** CPU backend on Some CPU: these are CPU timings"));
    assert_non_null(strstr(md, "\n**Note:** the load average was 6.85 on 2 cores when run 7 ended: its timings were "
                               "disturbed, so a difference here may be the machine, not the code.\n"));
    md = written(&busy_cpu, markdown_without_cpu_note);
    assert_null(strstr(md, "CPU timings"));
    assert_non_null(strstr(md, "the load average was 6.85"));
    assert_string_equal(written(&idle_cpu, markdown_without_cpu_note), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_warning_above_the_cores_only),
        cmocka_unit_test(test_cpu_note_on_the_cpu_backend_only),
        cmocka_unit_test(test_json_says_the_load_and_both_notes),
        cmocka_unit_test(test_markdown_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
