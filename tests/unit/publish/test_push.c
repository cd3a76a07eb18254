/* Unit tests for push (harness/publish/push.c, http.c URL rules, push_queue.c): the
 * escaping of each format, the bodies and URLs built from a stored run, the
 * rules on URLs and tokens, and the queue table. Nothing here touches the
 * network; tests/e2e/push_pushgateway.sh and push_failures.sh send for real. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "case.h"
#include "http.h"
#include "push.h"
#include "push_queue.h"
#include "result.h"
#include "store.h"
#include "store_internal.h"

/* ---- escaping ----------------------------------------------------------------- */

typedef void (*escaper)(FILE *out, const char *s);

static char *escaped(escaper fn, const char *in)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fn(f, in);
    fclose(f);
    return buf;
}

static void expect_escape(escaper fn, const char *in, const char *want)
{
    char *got = escaped(fn, in);
    if (strcmp(got, want) != 0)
        fail_msg("escaping [%s]: got [%s], want [%s]", in, got, want);
    free(got);
}

static void test_prometheus_label_escaping(void **state)
{
    (void)state;
    expect_escape(ppb_push_prom_label_value, "plain b=1 q=17", "plain b=1 q=17");
    expect_escape(ppb_push_prom_label_value, "say \"hi\"", "say \\\"hi\\\"");
    expect_escape(ppb_push_prom_label_value, "C:\\tmp\\", "C:\\\\tmp\\\\");
    expect_escape(ppb_push_prom_label_value, "one\ntwo", "one\\ntwo");
    expect_escape(ppb_push_prom_label_value, "", "");
}

static void test_influx_escaping(void **state)
{
    (void)state;
    /* tags and field keys: comma, equals, space, backslash; no line breaks */
    expect_escape(ppb_push_influx_tag, "prefix_prefill b=1 q=17", "prefix_prefill\\ b\\=1\\ q\\=17");
    expect_escape(ppb_push_influx_tag, "a,b", "a\\,b");
    expect_escape(ppb_push_influx_tag, "ends\\", "ends\\\\");
    expect_escape(ppb_push_influx_tag, "x\ny", "x\\ y");
    expect_escape(ppb_push_influx_tag, "AMD EPYC", "AMD\\ EPYC");
    /* string fields: quoted, quote and backslash escaped, the rest kept */
    expect_escape(ppb_push_influx_string, "say \"hi\", a=b", "\"say \\\"hi\\\", a=b\"");
    expect_escape(ppb_push_influx_string, "back\\slash", "\"back\\\\slash\"");
    expect_escape(ppb_push_influx_string, "two\nlines", "\"two lines\"");
    expect_escape(ppb_push_influx_string, "", "\"\"");
}

static void test_base64url(void **state)
{
    (void)state;
    char out[64];
    struct {
        const char *in, *want;
    } cases[] = {{"", "="},        {"f", "Zg=="},         {"fo", "Zm8="},
                 {"foo", "Zm9v"},  {"smoke", "c21va2U="}, {"\xfb\xff", "-_8="},
                 {"1/2", "MS8y"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ppb_push_base64url(cases[i].in, out, sizeof out);
        assert_string_equal(out, cases[i].want);
    }
    /* too small a buffer truncates at a whole quantum, never overflows */
    char tiny[6];
    ppb_push_base64url("foofoo", tiny, sizeof tiny);
    assert_string_equal(tiny, "Zm9v");
}

static void test_format_names(void **state)
{
    (void)state;
    ppb_err err;
    ppb_push_format f;
    const char *names[] = {"prometheus", "influx", "json"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ppb_push_format_parse(names[i], &f, &err), PPB_OK);
        assert_int_equal((int)f, i);
        assert_string_equal(ppb_push_format_name(f), names[i]);
    }
    assert_int_equal(ppb_push_format_parse("xml", &f, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "xml"));
}

/* ---- URL and token rules ------------------------------------------------------ */

static void test_url_rules(void **state)
{
    (void)state;
    ppb_err err;
    char origin[256];
    assert_int_equal(ppb_http_check_url("https://gw.example.com:9091/x", "http,https", &err), 0);
    assert_int_equal(ppb_http_check_url("ftp://gw.example.com/", "http,https", &err), PPB_EINPUT);
    assert_int_equal(ppb_http_check_url("not a url", "http,https", &err), PPB_EINPUT);
    assert_int_equal(ppb_http_check_url("file:///tmp/x.db", "http,https", &err), PPB_EINPUT);
    assert_int_equal(ppb_http_check_url("file:///tmp/x.db", "http,https,file", &err), 0);
    /* credentials in the URL: refused, and not echoed */
    assert_int_equal(ppb_http_check_url("https://u:s3cret@gw.example.com/", "http,https", &err),
                     PPB_EINPUT);
    assert_null(strstr(err.msg, "s3cret"));
    assert_int_equal(ppb_http_check_url("https://tokenonly@gw.example.com/", "http,https", &err),
                     PPB_EINPUT);

    assert_int_equal(ppb_http_origin("HTTP://GW.Example.com/a/b?c=d", origin, sizeof origin, &err), 0);
    assert_string_equal(origin, "http://gw.example.com:80");
    assert_int_equal(ppb_http_origin("https://gw.example.com/", origin, sizeof origin, &err), 0);
    assert_string_equal(origin, "https://gw.example.com:443");
    assert_int_equal(ppb_http_origin("http://127.0.0.1:9091/", origin, sizeof origin, &err), 0);
    assert_string_equal(origin, "http://127.0.0.1:9091");

    assert_true(ppb_http_is_loopback("http://127.0.0.1:1/"));
    assert_true(ppb_http_is_loopback("http://127.3.2.1/"));
    assert_true(ppb_http_is_loopback("http://LOCALHOST:8/"));
    assert_true(ppb_http_is_loopback("http://[::1]:8/"));
    assert_false(ppb_http_is_loopback("http://10.0.0.1/"));
    assert_false(ppb_http_is_loopback("http://127.example.com/"));
    assert_false(ppb_http_is_loopback("http://128.0.0.1/"));
}

static void test_token_transport(void **state)
{
    (void)state;
    ppb_err err;
    ppb_http_options o;
    ppb_http_options_default(&o);
    assert_int_equal(ppb_http_check_token_transport(&o, "http://gw.example.com/", &err), 0);
    o.token = "abc";
    assert_int_equal(ppb_http_check_token_transport(&o, "http://gw.example.com/", &err),
                     PPB_EINPUT);
    assert_non_null(strstr(err.msg, "clear text"));
    assert_null(strstr(err.msg, "abc"));
    assert_int_equal(ppb_http_check_token_transport(&o, "https://gw.example.com/", &err), 0);
    assert_int_equal(ppb_http_check_token_transport(&o, "http://127.0.0.1:9/", &err), 0);
    assert_int_equal(ppb_http_check_token_transport(&o, "http://localhost:9/", &err), 0);
    o.token = "";
    assert_int_equal(ppb_http_check_token_transport(&o, "http://gw.example.com/", &err), 0);
    /* a request refused this way never opens a connection */
    o.token = "abc";
    ppb_http_result res;
    assert_int_equal(ppb_http_request(&o, "POST", "http://gw.example.com/", "text/plain", "x", 1,
                                      NULL, 0, &res, &err),
                     PPB_EINPUT);
    assert_int_equal(res.tries, 0);
}

/* ---- bodies from a stored run -------------------------------------------------- */

typedef struct fixture {
    char dir[256];
    char db[512];
    ppb_store *s;
    int64_t run;
    char key_ok[PPB_CASE_KEY_MAX], key_refused[PPB_CASE_KEY_MAX];
} fixture;

#define RUN_LABEL "night \"7\" \\ two\nlines"

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-push-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->db, sizeof f->db, "%s/p.db", f->dir);
    ppb_err err;
    if (ppb_store_open(&f->s, f->db, &err) != PPB_OK)
        return -1;
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "smoke");
    snprintf(run.host, sizeof run.host, "node-1");
    snprintf(run.backend, sizeof run.backend, "cpu");
    snprintf(run.device, sizeof run.device, "AMD EPYC");
    snprintf(run.label, sizeof run.label, RUN_LABEL);
    snprintf(run.git_commit, sizeof run.git_commit, "abc123");
    snprintf(run.started_at, sizeof run.started_at, "2026-01-02T03:04:05Z");
    snprintf(run.args, sizeof run.args, "filter=\nshard=2/3\ntarget=none\n");
    run.shard_index = 2;
    run.shard_count = 3;
    snprintf(run.run_group, sizeof run.run_group, "night-1");
    run.n_cases = 2;
    if (ppb_store_begin_run(f->s, &run, &err) != PPB_OK)
        return -1;
    f->run = run.id;

    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.query_len = 17;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    ppb_case_make_key(&c);
    snprintf(f->key_ok, sizeof f->key_ok, "%s", c.key);
    ppb_result r;
    ppb_result_init(&r);
    r.status = PPB_STATUS_OK;
    r.timing_is_cpu = 1;
    double samples[] = {1.25, 1.5, 1.0};
    r.samples_ms = samples;
    r.n_samples = 3;
    r.median_ms = 1.25;
    r.mean_ms = 1.25;
    r.min_ms = 1.0;
    r.max_ms = 1.5;
    r.q1_ms = 1.125;
    r.q3_ms = 1.375;
    r.stdev_ms = 0.25;
    r.rel_noise = 0.2;
    r.tflops = 0.1 + 0.2; /* 0.30000000000000004: needs 17 digits */
    r.gbps = 3.5;
    r.check.checked = 1;
    r.check.pass = 1;
    if (ppb_store_put_result(f->s, f->run, &c, &r, &err) != PPB_OK)
        return -1;

    c.shape.query_len = 40;
    ppb_case_make_key(&c);
    snprintf(f->key_refused, sizeof f->key_refused, "%s", c.key);
    ppb_result_init(&r); /* as the runner stores it: zeros, no samples */
    r.status = PPB_STATUS_REFUSED;
    snprintf(r.reason, sizeof r.reason, "too large");
    if (ppb_store_put_result(f->s, f->run, &c, &r, &err) != PPB_OK)
        return -1;
    if (ppb_store_finish_run(f->s, f->run, "complete", &err) != PPB_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ppb_store_close(f->s);
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(f->dir);
    free(f);
    return 0;
}

static int count_lines_starting(const char *body, const char *prefix)
{
    int n = 0;
    size_t plen = strlen(prefix);
    for (const char *line = body; line && *line;) {
        if (strncmp(line, prefix, plen) == 0)
            n++;
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
    }
    return n;
}

static void test_prometheus_body_and_url(void **state)
{
    fixture *f = *state;
    ppb_err err;
    ppb_push_request req;
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_PROMETHEUS, "http://gw:9091/", &req, &err),
                     PPB_OK);
    /* grouping: suite "smoke", host "node-1", shard "2/3" in base64url */
    assert_string_equal(req.url, "http://gw:9091/metrics/job/ppbench/suite@base64/c21va2U="
                                 "/host@base64/bm9kZS0x/shard@base64/Mi8z");
    assert_string_equal(req.method, "PUT");
    assert_non_null(strstr(req.content_type, "version=0.0.4"));
    const char *b = req.body;
    assert_int_equal(strlen(b), req.body_len);

    /* Base units (seconds, FLOPs and bytes per second); where it ran and every case
     * field as labels of their own, impl among them; no free-text case key. */
#define LABELS(q)                                                                                          \
    "{backend=\"cpu\",device=\"AMD EPYC\",kernel=\"prefix_prefill\",batch=\"1\",query_len=\"" q "\","              \
    "context_len=\"0\",ragged=\"false\",num_heads=\"4\",num_kv_heads=\"2\",head_dim=\"128\",dtype=\"bf16\","       \
    "page_size=\"16\",sliding_window=\"0\",block_m=\"128\",block_n=\"128\",num_warps=\"8\",path=\"auto\","         \
    "impl=\"builtin\""
    assert_non_null(strstr(b, "\nppbench_case_median_seconds" LABELS("17") "} 0.00125\n"));
    assert_non_null(strstr(b, "\nppbench_case_flops_per_second" LABELS("17") "} 300000000000.00006\n"));
    assert_non_null(strstr(b, "\nppbench_case_bytes_per_second" LABELS("17") "} 3500000000\n"));
    /* the refused case: a status, no timings */
    assert_non_null(strstr(b, "\nppbench_case_status" LABELS("40") ",status=\"refused\"} 1\n"));
    assert_null(strstr(b, "ppbench_case_median_seconds" LABELS("40")));
    assert_null(strstr(b, "case=\""));
    assert_null(strstr(b, "_ms{"));
#undef LABELS
    /* the run's label, escaped */
    assert_non_null(strstr(b, "label=\"night \\\"7\\\" \\\\ two\\nlines\""));
    assert_non_null(strstr(b, "\nppbench_run_start_timestamp_seconds 1767323045\n"));
    assert_non_null(strstr(b, "\nppbench_run_results{status=\"ok\"} 1\n"));
    assert_non_null(strstr(b, "\nppbench_run_results{status=\"refused\"} 1\n"));
    /* every family declared exactly once, before its samples; no raw line break in a value */
    int families = count_lines_starting(b, "# TYPE ");
    assert_int_equal(families, count_lines_starting(b, "# HELP "));
    assert_int_equal(families, 4 + 3 + 10); /* run, case status/check/samples, timings */
    for (const char *l = b; *l;) {
        const char *nl = strchr(l, '\n');
        assert_non_null(nl); /* the body ends with a line break */
        if (*l != '#') {
            char name[128];
            size_t n = strcspn(l, "{ ");
            snprintf(name, sizeof name, "# TYPE %.*s gauge\n", (int)n, l);
            const char *decl = strstr(b, name);
            assert_non_null(decl);
            assert_true(decl < l);
            assert_true(l[n] == '{' || l[n] == ' ');
        }
        l = nl + 1;
    }
    ppb_push_request_free(&req);

    /* a URL that names its job is used as given */
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_PROMETHEUS,
                                    "https://gw/metrics/job/mine/x/y", &req, &err),
                     PPB_OK);
    assert_string_equal(req.url, "https://gw/metrics/job/mine/x/y");
    ppb_push_request_free(&req);
    /* Once merge folded the night's other shards in, the run is the whole
     * suite: its group is the suite and host, no shard. */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(ppb_store_db(f->s),
                                        "INSERT INTO run_parts(run_id, uid, shard_index) VALUES(?1, 'x1', 1),"
                                        " (?1, 'x3', 3)", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, f->run);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_PROMETHEUS, "http://gw:9091/", &req, &err), PPB_OK);
    assert_string_equal(req.url, "http://gw:9091/metrics/job/ppbench/suite@base64/c21va2U=/host@base64/bm9kZS0x");
    ppb_push_request_free(&req);
    /* a missing run is bad input, before anything else */
    assert_int_equal(ppb_push_build(f->s, 99, PPB_PUSH_PROMETHEUS, "http://gw/", &req, &err),
                     PPB_EINPUT);
}

static void test_influx_body(void **state)
{
    fixture *f = *state;
    ppb_err err;
    ppb_push_request req;
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_INFLUX,
                                    "http://db:8086/api/v2/write?org=o&bucket=b&precision=ns", &req,
                                    &err),
                     PPB_OK);
    assert_string_equal(req.method, "POST");
    assert_string_equal(req.url, "http://db:8086/api/v2/write?org=o&bucket=b&precision=ns");
    const char *b = req.body;
    assert_int_equal(count_lines_starting(b, "ppbench_run,"), 1);
    assert_int_equal(count_lines_starting(b, "ppbench_case,"), 2);
    assert_non_null(strstr(b, "ppbench_run,suite=smoke,host=node-1,backend=cpu,device=AMD\\ EPYC "
                              "run_id=1i,status=\"complete\",n_cases=2i,n_done=2i,"
                              "git_commit=\"abc123\",label=\"night \\\"7\\\" \\\\ two lines\" "
                              "1767323045000000000\n"));
    /* every case field a tag of its own; base units */
    const char *want = ",kernel=prefix_prefill,batch=1,query_len=17,context_len=0,ragged=false,num_heads=4,"
                       "num_kv_heads=2,head_dim=128,dtype=bf16,page_size=16,sliding_window=0,block_m=128,"
                       "block_n=128,num_warps=8,path=auto,impl=builtin run_id=1i,status=\"ok\",n_samples=3i,"
                       "timing_is_cpu=true,check_pass=true,median_seconds=0.00125,mean_seconds=0.00125,"
                       "stdev_seconds=0.00025,min_seconds=0.001,max_seconds=0.0015,q1_seconds=0.0011250000000000001,"
                       "q3_seconds=0.001375,rel_noise_ratio=0.2,flops_per_second=300000000000.00006,"
                       "bytes_per_second=3500000000 1767323045000000000\n";
    assert_non_null(strstr(b, want));
    /* the refused case: status only, no NaN fields */
    const char *refused = strstr(b, "status=\"refused\"");
    assert_non_null(refused);
    const char *end = strchr(refused, '\n');
    assert_null(memchr(refused, 'N', (size_t)(end - refused))); /* no NaN */
    assert_null(strstr(refused, "median_seconds"));
    ppb_push_request_free(&req);

    /* timestamps are ns: another precision is refused; n (v1 spelling of ns) is fine */
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_INFLUX, "http://db/write?db=x&precision=s",
                                    &req, &err),
                     PPB_EINPUT);
    assert_non_null(strstr(err.msg, "precision"));
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_INFLUX,
                                    "http://db/write?precision=n&db=x", &req, &err),
                     PPB_OK);
    ppb_push_request_free(&req);
}

static void test_json_body(void **state)
{
    fixture *f = *state;
    ppb_err err;
    ppb_push_request req;
    assert_int_equal(ppb_push_build(f->s, f->run, PPB_PUSH_JSON, "https://hooks/x?y=1", &req, &err),
                     PPB_OK);
    assert_string_equal(req.content_type, "application/json");
    assert_string_equal(req.url, "https://hooks/x?y=1");
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT json_valid(?1), json_extract(?1, '$.run.label'),"
                                        " json_array_length(?1, '$.results'),"
                                        " json_extract(?1, '$.results[0].samples[1]')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, req.body, (int)req.body_len, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 1);
    assert_string_equal((const char *)sqlite3_column_text(st, 1), RUN_LABEL);
    assert_int_equal(sqlite3_column_int(st, 2), 2);
    assert_true(sqlite3_column_double(st, 3) == 1.5);
    sqlite3_finalize(st);
    sqlite3_close(db);
    ppb_push_request_free(&req);
}

/* ---- the queue ------------------------------------------------------------------------ */

typedef struct seen {
    int n;
    ppb_push_pending rows[4];
} seen;

static int remember(void *ctx, const ppb_push_pending *p)
{
    seen *s = ctx;
    if (s->n < 4)
        s->rows[s->n] = *p;
    s->n++;
    return 0;
}

static void test_queue(void **state)
{
    fixture *f = *state;
    ppb_err err;
    seen s = {0};
    assert_int_equal(ppb_push_queue_record_failure(f->s, f->run, "http://a/", "json", 4, "HTTP 503",
                                                   &err),
                     PPB_OK);
    assert_int_equal(ppb_push_queue_record_failure(f->s, f->run, "http://b/", "prometheus", 1,
                                                   "refused", &err),
                     PPB_OK);
    /* the same (run, url, format) again: one row, attempts added, error replaced */
    assert_int_equal(ppb_push_queue_record_failure(f->s, f->run, "http://a/", "json", 2, "timeout",
                                                   &err),
                     PPB_OK);
    assert_int_equal(ppb_push_queue_each(f->s, remember, &s, &err), PPB_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.rows[0].url, "http://a/"); /* oldest first */
    assert_int_equal(s.rows[0].attempts, 6);
    assert_string_equal(s.rows[0].last_error, "timeout");
    assert_true(s.rows[0].created_at[0] && s.rows[0].last_attempt_at[0]);
    assert_string_equal(s.rows[1].format, "prometheus");
    /* a run that does not exist cannot be queued */
    assert_int_equal(ppb_push_queue_record_failure(f->s, 42, "http://a/", "json", 1, "x", &err),
                     PPB_EINPUT);
    /* forget by key, drop by id */
    assert_int_equal(ppb_push_queue_forget(f->s, f->run, "http://a/", "json", &err), PPB_OK);
    assert_int_equal(ppb_push_queue_drop(f->s, s.rows[1].id, &err), PPB_OK);
    assert_int_equal(ppb_push_queue_drop(f->s, s.rows[1].id, &err), PPB_EINPUT);
    s.n = 0;
    assert_int_equal(ppb_push_queue_each(f->s, remember, &s, &err), PPB_OK);
    assert_int_equal(s.n, 0);
    /* the queue table holds no body or header column: nothing secret can go there */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(ppb_store_db(f->s),
                                        "SELECT group_concat(name) FROM pragma_table_info('push_queue')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0),
                        "id,run_id,url,format,created_at,attempts,last_error,last_attempt_at");
    sqlite3_finalize(st);
}

/* A run deleted from the database takes its queued pushes with it. */
static void test_queue_follows_runs(void **state)
{
    fixture *f = *state;
    ppb_err err;
    assert_int_equal(ppb_push_queue_record_failure(f->s, f->run, "http://a/", "json", 1, "x", &err),
                     PPB_OK);
    char *msg = NULL;
    assert_int_equal(sqlite3_exec(ppb_store_db(f->s), "DELETE FROM runs", NULL, NULL, &msg),
                     SQLITE_OK);
    seen s = {0};
    assert_int_equal(ppb_push_queue_each(f->s, remember, &s, &err), PPB_OK);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prometheus_label_escaping),
        cmocka_unit_test(test_influx_escaping),
        cmocka_unit_test(test_base64url),
        cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_url_rules),
        cmocka_unit_test(test_token_transport),
        cmocka_unit_test_setup_teardown(test_prometheus_body_and_url, setup, teardown),
        cmocka_unit_test_setup_teardown(test_influx_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_follows_runs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
