/* A run's documents (harness/publish/run_doc.c) say how the run was measured:
 * the CPU timings note and, on a machine loaded past its cores as the run
 * ended, the load warning, in the JSON CI reads and the Markdown people read.
 * Each test works in its own mkdtemp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_doc.h"
#include "store.h"
#include "store_fixture.h"

/* A finished run of one timed case, its machine's load as the session records it. */
static int64_t stored_run(fixture *f, const char *backend, const char *loadavg, const char *cpu_cores)
{
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "smoke");
    snprintf(run.backend, sizeof run.backend, "%s", backend);
    snprintf(run.device, sizeof run.device, "Some device");
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_begin_run(f->s, &run, &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(f->s, run.id, "after.loadavg", loadavg, &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(f->s, run.id, "after.cpu_cores", cpu_cores, &err), PPB_OK);
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.batch = 1, c.shape.query_len = 16, c.shape.context_len = 64;
    c.shape.num_heads = 4, c.shape.num_kv_heads = 2, c.shape.head_dim = 64;
    c.config.block_m = c.config.block_n = 64, c.config.num_warps = 4;
    ppb_case_make_key(&c);
    ppb_result r;
    ppb_result_init(&r);
    r.n_samples = 3;
    r.samples_ms = malloc(3 * sizeof *r.samples_ms);
    assert_non_null(r.samples_ms);
    for (int i = 0; i < 3; i++)
        r.samples_ms[i] = 1 + 0.01 * i;
    ppb_result_summarise(&r, ppb_case_flops(&c), ppb_case_min_bytes(&c));
    assert_int_equal(ppb_store_put_result(f->s, run.id, &c, &r, &err), PPB_OK);
    ppb_result_free(&r);
    assert_int_equal(ppb_store_finish_run(f->s, run.id, "complete", &err), PPB_OK);
    return run.id;
}

typedef enum { DOC_JSON, DOC_MARKDOWN } doc_format;

static char *run_document(fixture *f, int64_t run_id, doc_format format)
{
    char *doc = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&doc, &len);
    assert_non_null(mem);
    ppb_err err = {{0}};
    int rc = format == DOC_JSON ? ppb_run_doc_json(f->s, run_id, "run", 0, mem, &err)
                                : ppb_run_doc_markdown(f->s, run_id, 0, mem, &err);
    fclose(mem);
    if (rc)
        fail_msg("writing run %lld: %s", (long long)run_id, err.msg);
    return doc;
}

static void test_run_documents_warn_of_a_busy_machine(void **state)
{
    fixture *f = *state;
    int64_t busy = stored_run(f, "cuda", "6.85 4.10 3.00", "2");
    char *json = run_document(f, busy, DOC_JSON);
    char expected[512];
    snprintf(expected, sizeof expected,
             "\"measured\":{\"run\":%lld,\"backend\":\"cuda\",\"device\":\"Some device\",\"cpu_timings\":false,"
             "\"load_average\":6.85,\"cpu_cores\":2,\"load_warning\":true,\"notes\":[\"the load average was 6.85 on "
             "2 cores when run %lld ended: its timings were disturbed, so a difference here may be the machine, not "
             "the code\"]}",
             (long long)busy, (long long)busy);
    assert_non_null(strstr(json, expected));
    free(json);
    char *md = run_document(f, busy, DOC_MARKDOWN);
    snprintf(expected, sizeof expected, "\n**Note:** the load average was 6.85 on 2 cores when run %lld ended",
             (long long)busy);
    assert_non_null(strstr(md, expected));
    assert_null(strstr(md, "CPU timings"));
    free(md);
}

static void test_run_documents_of_a_quiet_cpu_run(void **state)
{
    fixture *f = *state;
    int64_t quiet = stored_run(f, "cpu", "0.50 0.40 0.30", "2");
    char *json = run_document(f, quiet, DOC_JSON);
    assert_non_null(strstr(json, "\"cpu_timings\":true,\"load_average\":0.5,\"cpu_cores\":2,\"load_warning\":false,"
                                 "\"notes\":[\"CPU backend on Some device: these are CPU timings and say nothing "
                                 "about a GPU\"]}"));
    free(json);
    char *md = run_document(f, quiet, DOC_MARKDOWN);
    assert_non_null(strstr(md, "\n**Note:** CPU backend on Some device: these are CPU timings and say nothing about "
                               "a GPU.\n"));
    assert_null(strstr(md, "load average"));
    free(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_run_documents_warn_of_a_busy_machine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_documents_of_a_quiet_cpu_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
