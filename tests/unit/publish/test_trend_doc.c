/* The trend's documents (harness/publish/trend_doc.c): the verdict, and how
 * the latest night was measured (measured.h): on a machine loaded past its
 * cores, the load warning in the JSON CI reads and the Markdown people read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trend_doc.h"

typedef enum { DOC_JSON, DOC_MARKDOWN } doc_format;

static char *document(const ppb_trend_doc *d, doc_format format)
{
    char *doc = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&doc, &len);
    assert_non_null(mem);
    if (format == DOC_JSON)
        ppb_trend_doc_json(d, 1, mem);
    else
        ppb_trend_doc_markdown(d, mem);
    fclose(mem);
    return doc;
}

/* A night whose cases were all refused, measured on a CPU loaded as given. */
static void refused_night(ppb_trend_doc *d, const char *loadavg, const char *cpu_cores)
{
    memset(d, 0, sizeof *d);
    snprintf(d->suite, sizeof d->suite, "smoke");
    d->window = 10;
    d->latest_run = 9;
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    run.id = d->latest_run;
    snprintf(run.backend, sizeof run.backend, "cpu");
    snprintf(run.device, sizeof run.device, "Some CPU");
    ppb_measured_of(&run, loadavg, cpu_cores, NULL, &d->measured);
    ppb_trend_result res;
    ppb_trend_not_timed("refused", "too large", &res);
    assert_int_equal(ppb_trend_doc_add(d, "prefix_prefill b=1", &res), PPB_OK);
}

static void test_a_busy_night_is_said_to_be_disturbed(void **state)
{
    (void)state;
    ppb_trend_doc d;
    refused_night(&d, "9.00 1 1", "4");
    char *json = document(&d, DOC_JSON);
    assert_non_null(strstr(json, "\"measured\":{\"run\":9,\"backend\":\"cpu\",\"device\":\"Some CPU\",\"cpu_timings\":true,"
                                 "\"load_average\":9.0,\"cpu_cores\":4,\"load_warning\":true,\"notes\":[\"CPU backend"));
    assert_non_null(strstr(json, ",\"the load average was 9.00 on 4 cores when run 9 ended: its timings were "
                                 "disturbed, so a difference here may be the machine, not the code\"]}"));
    free(json);
    char *md = document(&d, DOC_MARKDOWN);
    assert_non_null(strstr(md, "\n**Note:** CPU backend on Some CPU: these are CPU timings"));
    assert_non_null(strstr(md, "\n**Note:** the load average was 9.00 on 4 cores when run 9 ended"));
    free(md);
    ppb_trend_doc_free(&d);
}

static void test_a_quiet_night_has_no_load_warning(void **state)
{
    (void)state;
    ppb_trend_doc d;
    refused_night(&d, "1.00 1 1", "4");
    char *json = document(&d, DOC_JSON);
    assert_non_null(strstr(json, "\"load_warning\":false,\"notes\":[\"CPU backend on Some CPU: these are CPU timings "
                                 "and say nothing about a GPU\"]}"));
    free(json);
    char *md = document(&d, DOC_MARKDOWN);
    assert_null(strstr(md, "load average"));
    free(md);
    ppb_trend_doc_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_busy_night_is_said_to_be_disturbed),
        cmocka_unit_test(test_a_quiet_night_has_no_load_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
