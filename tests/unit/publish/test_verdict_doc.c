/* A verdict's documents (harness/publish/verdict_doc.c): JSON and Markdown
 * written from the verdict the command holds, the runs' facts from the store.
 * Each test works in its own mkdtemp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "store_fixture.h"
#include "verdict_doc.h"

/* A record as a command fills it before storing it. */
static void make_record(ppb_proposal_record *rec, const char *verdict)
{
    memset(rec, 0, sizeof *rec);
    snprintf(rec->name, sizeof rec->name, "doc");
    snprintf(rec->kind, sizeof rec->kind, "kernel_config");
    snprintf(rec->verdict, sizeof rec->verdict, "%s", verdict);
    rec->geomean_ratio = rec->geomean_lo = rec->geomean_hi = NAN;
    rec->min_gain = rec->max_regression = rec->threshold = rec->detectable = NAN;
}

typedef enum { DOC_JSON, DOC_MARKDOWN } doc_format;

/* The document as written (free it). */
static char *document(fixture *f, doc_format format, const ppb_proposal_record *rec, const ppb_proposal_case *cases,
                      int n)
{
    char *doc = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&doc, &len);
    assert_non_null(mem);
    ppb_err err = {{0}};
    int rc = format == DOC_JSON ? ppb_verdict_json(f->s, rec, cases, n, "propose", 10, mem, &err)
                                : ppb_verdict_markdown(f->s, rec, cases, n, mem, &err);
    fclose(mem);
    if (rc)
        fail_msg("writing the verdict: %s", err.msg);
    return doc;
}

/* A compared case of candidate key `key` at ratio [lo, hi]. */
static ppb_proposal_case compared_case(const char *key, double ratio, double lo, double hi)
{
    ppb_proposal_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.candidate_key, sizeof c.candidate_key, "%s", key);
    snprintf(c.state, sizeof c.state, "compared");
    c.weight = 1;
    c.ratio = ratio, c.ratio_lo = lo, c.ratio_hi = hi, c.p_holm = NAN;
    return c;
}

/* A verdict with many reasons: every line in the JSON, none cut at 8 KB. */
static void test_long_reasons_written_whole(void **state)
{
    fixture *f = *state;
    static ppb_proposal_record rec; /* large: keep it off the stack */
    make_record(&rec, "REJECT");
    size_t n = 0;
    for (int i = 0; i < 400; i++)
        n += (size_t)snprintf(rec.reasons + n, sizeof rec.reasons - n, "REJECT: case %d is slower than it may be\n", i);
    assert_true(n > 8192 && n < sizeof rec.reasons);
    ppb_err err;
    assert_int_equal(ppb_store_put_proposal(f->s, &rec, NULL, 0, &err), PPB_OK);
    char *doc = document(f, DOC_JSON, &rec, NULL, 0);
    assert_non_null(strstr(doc, "\"reasons\":[\"REJECT: case 0 is slower than it may be\","));
    assert_non_null(strstr(doc, ",\"REJECT: case 399 is slower than it may be\"],"));
    free(doc);
}

/* The documents say the verdict the command holds, its cases in its order; the
 * store is asked only what the runs recorded (here none: no run, no measured). */
static void test_written_from_the_verdict_held(void **state)
{
    fixture *f = *state;
    static ppb_proposal_record rec;
    make_record(&rec, "ACCEPT");
    snprintf(rec.reasons, sizeof rec.reasons, "ACCEPT: faster\n\nnote: two cases\n");
    snprintf(rec.created_at, sizeof rec.created_at, "2026-01-02T03:04:05Z");
    rec.id = 42; /* never stored: nothing to read back */
    ppb_proposal_case cases[2] = {compared_case("prefix_prefill b=1 bm=64", 0.5, 0.25, 1),
                                  compared_case("prefix_prefill b=2 bm=64", 0.75, 0.25, 1)};
    for (int i = 0; i < 2; i++) {
        snprintf(cases[i].baseline_key, sizeof cases[i].baseline_key, "prefix_prefill b=%d", i + 1);
        snprintf(cases[i].cls, sizeof cases[i].cls, "faster");
    }
    char *json = document(f, DOC_JSON, &rec, cases, 2);
    assert_non_null(strstr(json, "\"proposal\":{\"id\":42,\"name\":\"doc\""));
    assert_non_null(strstr(json, "\"created_at\":\"2026-01-02T03:04:05Z\"},\"verdict\":\"ACCEPT\""));
    assert_non_null(strstr(json, "\"baseline_run\":null,\"candidate_run\":null,\"measured\":null"));
    assert_non_null(strstr(json, "\"reasons\":[\"ACCEPT: faster\",\"note: two cases\"]"));
    const char *first = strstr(json, "\"candidate_key\":\"prefix_prefill b=1 bm=64\"");
    const char *second = strstr(json, "\"candidate_key\":\"prefix_prefill b=2 bm=64\"");
    assert_true(first && second && first < second);
    assert_non_null(strstr(second, "\"ratio\":0.75,\"ratio_lo\":0.25,\"ratio_hi\":1,\"p_holm\":null,\"detectable_effect\":null}]}\n"));
    free(json);
    char *md = document(f, DOC_MARKDOWN, &rec, cases, 2);
    assert_non_null(strstr(md, "### ppbench: ACCEPT: doc\n\nProposal 42 (kernel_config).\n"));
    assert_non_null(strstr(md, "| compared | faster | 0.7500 | [0.2500, 1.0000] | - | `prefix_prefill b=2 bm=64` |\n"));
    assert_non_null(strstr(md, "\nReasons:\n- ACCEPT: faster\n- note: two cases\n"));
    free(md);
}

/* What the verdict cost: in JSON as measured (null when it was not), in
 * Markdown as the one line results_table.h formats, the fixed design beside. */
static void test_cost_is_said_where_measured(void **state)
{
    fixture *f = *state;
    static ppb_proposal_record rec;
    make_record(&rec, "REJECT");
    rec.id = 7;
    char *json = document(f, DOC_JSON, &rec, NULL, 0);
    assert_non_null(strstr(json, ",\"cost\":null,"));
    free(json);
    rec.cost = (ppb_proposal_cost){.wall_ms = 20000, .setup_ms = 2000, .inputs_ms = 3000, .check_ms = 1000,
                                   .warmup_ms = 1000, .sampling_ms = 12500, .kernel_ms = 10000,
                                   .fixed_kernel_ms = 15000, .fixed_samples = 60};
    json = document(f, DOC_JSON, &rec, NULL, 0);
    assert_non_null(strstr(json, ",\"cost\":{\"wall_ms\":20000,\"setup_ms\":2000,\"inputs_ms\":3000,"));
    assert_non_null(strstr(json, "\"kernel_ms\":10000,\"fixed_kernel_ms\":15000,\"fixed_samples\":60,"
                                 "\"settled_by_pair\":0},"));
    free(json);
    char *md = document(f, DOC_MARKDOWN, &rec, NULL, 0);
    assert_non_null(strstr(md, "Cost: wall 20.0 s = setup 2.0 + inputs 3.0 + check 1.0 + warm-up 1.0 + sampling 12.5"
                               " + other 0.5 s; kernels 10.00 s in the samples; a fixed-sample design at the same"
                               " resolution: 60 samples a side in every pair, kernels 15.00 s (1.50x).\n"));
    free(md);
    /* a REJECT settled by one pair says why the other pairs have no times */
    rec.cost.settled_by_pair = 3;
    json = document(f, DOC_JSON, &rec, NULL, 0);
    assert_non_null(strstr(json, "\"fixed_samples\":60,\"settled_by_pair\":3},"));
    free(json);
    md = document(f, DOC_MARKDOWN, &rec, NULL, 0);
    assert_non_null(strstr(md, "kernels 15.00 s (1.50x); pair 3 settled the REJECT alone, so the pairs not timed by"
                               " then were checked only.\n"));
    free(md);
}

/* Each case says what it could see (verdict.h ppb_detectable_change at the
 * level its interval spent): 1.0 [0.9, 1.1] at 95% sees 16.3% with 80% power
 * (the wider side, 0.1054 in log, / 1.960 x (1.960 + 0.842)); a case without
 * an interval's level says nothing. */
static void test_each_case_says_what_it_could_see(void **state)
{
    fixture *f = *state;
    static ppb_proposal_record rec;
    make_record(&rec, "INCONCLUSIVE");
    rec.id = 8;
    ppb_proposal_case cases[2] = {compared_case("k0", 1.0, 0.9, 1.1), compared_case("k1", 1.0, 0.9, 1.1)};
    cases[0].alpha = 0.05;
    cases[1].alpha = NAN; /* no level stored */
    char *json = document(f, DOC_JSON, &rec, cases, 2);
    const char *at = strstr(json, "\"detectable_effect\":0.1625");
    assert_non_null(at);
    assert_non_null(strstr(at + 1, "\"detectable_effect\":null}]"));
    free(json);
    char *md = document(f, DOC_MARKDOWN, &rec, cases, 2);
    assert_non_null(strstr(md, "| state | class | time ratio | interval | could see | candidate case |"));
    assert_non_null(strstr(md, "| [0.9000, 1.1000] | 16.3% | `k0` |"));
    assert_non_null(strstr(md, "| [0.9000, 1.1000] | - | `k1` |"));
    free(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_long_reasons_written_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_from_the_verdict_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_is_said_where_measured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_case_says_what_it_could_see, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
