/* ppbench report (harness/report*.c): a store with synthetic runs, a proposal
 * and a nightly history in a temp dir; each test writes a report and reads the
 * HTML back: hostile labels escaped, every case present, the banner and its
 * reasons, charts inlined (or the no-gnuplot notice with every table), the
 * feasibility arithmetic, the device ceilings, the reproducing command.
 * Tests that need gnuplot skip without it; the rest turn it off for speed. */
#define _GNU_SOURCE   /* strcasestr */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "case.h"
#include "gnuplot.h"
#include "report.h"
#include "result.h"
#include "store.h"
#include "target.h"

#define HOSTILE_LABEL "<script>alert(1)</script>"
#define HOSTILE_ATTR "\"><img src=x onerror=alert(1)>"

typedef struct fixture {
    char dir[256];
    char db[512];
    char out[512];
    char suites[4096];
    ppb_store *s;
    /* The target of the run begun last: put_result judges on it, as a run
     * does when each case ends (judged 0: no target, nothing judged). */
    ppb_target target;
    int judging;
} fixture;

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        remove_tree(p);
    }
    closedir(d);
    rmdir(path);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-report-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/results.db", f->dir);
    snprintf(f->out, sizeof f->out, "%s/report", f->dir);
    const char *src = getenv("PPB_SOURCE_DIR");
    snprintf(f->suites, sizeof f->suites, "%s/suites", src ? src : PPB_SOURCE_DIR);
    ppb_err err = {{0}};
    if (ppb_store_open(&f->s, f->db, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        remove_tree(f->dir);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ppb_store_close(f->s);
    remove_tree(f->dir);
    free(f);
    return 0;
}

/* ---- synthetic data ------------------------------------------------------------------ */

static void prefill_case(ppb_case *c, int context_len, int bm, int bn, int head_dim)
{
    ppb_case_init(c, PPB_PREFIX_PREFILL);
    c->shape.batch = 1;
    c->shape.query_len = 16;
    c->shape.context_len = context_len;
    c->shape.num_heads = 4;
    c->shape.num_kv_heads = 2;
    c->shape.head_dim = head_dim;
    c->config.block_m = bm;
    c->config.block_n = bn;
    c->config.num_warps = 4;
    ppb_case_make_key(c);
}

/* A result with 5 samples around `median` (ms). */
static void put_result(fixture *f, int64_t run, const ppb_case *c, int status, double median,
                       double max_err, const char *reason)
{
    ppb_result r;
    ppb_result_init(&r);
    r.status = status;
    snprintf(r.reason, sizeof r.reason, "%s", reason ? reason : "");
    if (status == PPB_STATUS_OK || status == PPB_STATUS_WRONG || status == PPB_STATUS_NOISY) {
        r.check.checked = 1;
        r.check.pass = status != PPB_STATUS_WRONG;
        r.check.max_abs_err = max_err;
        r.check.atol = 0.016;
        r.check.rtol = 0.016;
        r.check.rows_checked = r.check.rows_total = 64;
    }
    if (median > 0) {
        r.n_samples = 5;
        r.samples_ms = malloc(5 * sizeof *r.samples_ms);
        assert_non_null(r.samples_ms);
        for (int i = 0; i < 5; i++)
            r.samples_ms[i] = median * (0.98 + 0.01 * i);
        ppb_result_summarise(&r, ppb_case_flops(c), ppb_case_min_bytes(c));
    }
    if (f->judging)
        ppb_target_judge(c, &f->target, &r.resources, &r.feasibility);
    ppb_err err = {{0}};
    if (ppb_store_put_result(f->s, run, c, &r, &err))
        fail_msg("put_result: %s", err.msg);
    ppb_result_free(&r);
}

static int64_t begin_run(fixture *f, const char *suite, const char *label, const char *backend,
                         const char *device, const char *target)
{
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "%s", suite);
    snprintf(run.suite_path, sizeof run.suite_path, "%s/%s.yaml", f->suites, "smoke");
    snprintf(run.suite_hash, sizeof run.suite_hash, "0123456789abcdef");
    snprintf(run.git_commit, sizeof run.git_commit, "deadbeef");
    snprintf(run.host, sizeof run.host, "testhost");
    snprintf(run.backend, sizeof run.backend, "%s", backend);
    snprintf(run.device, sizeof run.device, "%s", device);
    snprintf(run.target, sizeof run.target, "%s", target);
    snprintf(run.label, sizeof run.label, "%s", label);
    run.n_cases = 8;
    ppb_err err = {{0}};
    if (ppb_store_begin_run(f->s, &run, &err))
        fail_msg("begin_run: %s", err.msg);
    f->judging = target[0] != '\0';
    if (f->judging) {
        if (ppb_target_load_named(f->suites, target, &f->target, &err))
            fail_msg("target %s: %s", target, err.msg);
        assert_int_equal(ppb_store_put_env(f->s, run.id, "target.profile", f->target.path, &err), 0);
        assert_int_equal(ppb_store_put_env(f->s, run.id, "target.description", f->target.description, &err), 0);
    }
    return run.id;
}

static void finish(fixture *f, int64_t run, const char *status)
{
    ppb_err err = {{0}};
    if (ppb_store_finish_run(f->s, run, status, &err))
        fail_msg("finish_run: %s", err.msg);
}

/* 2 configs x 2 head dims x 2 context lengths = 8 cases; `wrong` marks case 0 wrong. */
static int64_t smoke_like_run(fixture *f, const char *label, const char *backend,
                              const char *device, const char *target, int wrong,
                              char keys[8][PPB_CASE_KEY_MAX])
{
    int64_t run = begin_run(f, HOSTILE_ATTR, label, backend, device, target);
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_env(f->s, run, "device.name", "</style><script>x()</script>",
                                       &err),
                     0);
    int n = 0;
    static const int configs[2][2] = {{128, 128}, {64, 64}};
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < 2; d++)
            for (int ctx = 0; ctx < 2; ctx++) {
                ppb_case c;
                prefill_case(&c, ctx ? 4096 : 512, configs[k][0], configs[k][1], d ? 128 : 64);
                snprintf(keys[n], PPB_CASE_KEY_MAX, "%s", c.key);
                double median = (ctx ? 8.0 : 1.0) * (d ? 2 : 1) * (k ? 0.8 : 1.0);
                if (n == 0 && wrong)
                    put_result(f, run, &c, PPB_STATUS_WRONG, median, 0.5, HOSTILE_LABEL);
                else
                    put_result(f, run, &c, PPB_STATUS_OK, median, 0.001 * (n + 1), NULL);
                n++;
            }
    finish(f, run, "complete");
    return run;
}

/* ---- reading it back ------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static int file_exists(const char *dir, const char *name)
{
    char p[1200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && st.st_size > 0;
}

/* An attribute value as the writer escapes it. */
static void expect_case_row(const char *html, const char *key)
{
    char needle[600];
    snprintf(needle, sizeof needle, "data-case-key=\"%s\"", key);
    if (!strstr(html, needle))
        fail_msg("no row for case '%s'", key);
}

static void request(fixture *f, ppb_report_request *req, int kind, int64_t id,
                    const char *gnuplot)
{
    memset(req, 0, sizeof *req);
    req->kind = kind;
    req->id = id;
    snprintf(req->out_dir, sizeof req->out_dir, "%s", f->out);
    snprintf(req->db_path, sizeof req->db_path, "%s", f->db);
    req->suites_dir = f->suites;
    req->gnuplot = gnuplot;
}

static char *write_report(fixture *f, const ppb_report_request *req, ppb_report_outcome *out)
{
    ppb_err err = {{0}};
    int rc = ppb_report_write(f->s, req, out, &err);
    if (rc)
        fail_msg("report failed (%d): %s", rc, err.msg);
    return slurp(out->html_path);
}

static int have_gnuplot(void)
{
    ppb_gnuplot gp;
    ppb_gnuplot_detect(&gp, "gnuplot");
    if (!gp.available)
        print_message("skipped: %s\n", gp.why);
    return gp.available;
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_hostile_strings_are_text(void **state)
{
    fixture *f = *state;
    char keys[8][PPB_CASE_KEY_MAX];
    int64_t run = smoke_like_run(f, HOSTILE_LABEL, "cpu", "CPU " HOSTILE_ATTR, "", 1, keys);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, run, "");
    char *html = write_report(f, &req, &out);

    /* Nothing in the page can run: no script element, no img, no handler. */
    assert_null(strcasestr(html, "<script"));
    assert_null(strcasestr(html, "<img"));
    /* ... and the strings are all there, as text. */
    assert_true(count(html, "&lt;script&gt;alert(1)&lt;/script&gt;") >= 2);   /* label, reason */
    /* suite name, device */
    assert_non_null(strstr(html, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert_non_null(strstr(html, "&lt;/style&gt;&lt;script&gt;x()&lt;/script&gt;"));   /* env */
    assert_int_equal(count(html, "</style>"), 1);   /* only the page's own */
    assert_non_null(
        strstr(html, "<dd class=\"run-label\">&lt;script&gt;alert(1)&lt;/script&gt;</dd>"));
    /* The page forbids loading or running anything, whatever slips through. */
    assert_non_null(strstr(html, "Content-Security-Policy\" content=\"default-src 'none'"));
    for (int i = 0; i < 8; i++)
        expect_case_row(html, keys[i]);
    free(html);
}

static void test_run_banner_and_verdicts(void **state)
{
    fixture *f = *state;
    char keys[8][PPB_CASE_KEY_MAX];
    int64_t bad = smoke_like_run(f, "a", "cpu", "CPU", "", 1, keys);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, bad, "");
    char *html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "FAIL");
    assert_non_null(strstr(html, "<header class=\"banner bad\" id=\"top\"><span class=\"verdict\" "
                                 "id=\"verdict\">FAIL</span>"));
    assert_non_null(strstr(out.headline, "1 of 8 cases failed (1 wrong"));
    /* The failing case is named in the reasons and first among the worst. */
    assert_non_null(strstr(html, keys[0]));
    assert_true(out.n_worst >= 1);
    assert_non_null(strstr(out.worst[0], "wrong"));
    assert_non_null(strstr(out.worst[0], keys[0]));
    assert_non_null(strstr(html, "CPU timings"));
    assert_int_equal(out.n_cases, 8);
    free(html);

    int64_t good = smoke_like_run(f, "b", "cpu", "CPU", "", 0, keys);
    request(f, &req, PPB_REPORT_RUN, good, "");
    html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "PASS");
    assert_non_null(strstr(html, "id=\"verdict\">PASS</span>"));
    assert_non_null(strstr(html, "class=\"banner good\""));
    /* No failure: the worst cases are those closest to the tolerance. */
    assert_non_null(strstr(out.worst[0], "#8 max err 0.008"));
    free(html);

    /* Interrupted part-way: INCOMPLETE, with the command that completes it. */
    int64_t part = begin_run(f, "smoke", "c", "cpu", "CPU", "");
    ppb_case c;
    prefill_case(&c, 512, 64, 64, 64);
    put_result(f, part, &c, PPB_STATUS_OK, 1.0, 0.001, NULL);
    finish(f, part, "interrupted");
    request(f, &req, PPB_REPORT_RUN, part, "");
    html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "INCOMPLETE");
    assert_non_null(strstr(html, "1 of 8 cases stored (ppbench run --resume"));
    free(html);
}

static void test_no_gnuplot_keeps_every_table(void **state)
{
    fixture *f = *state;
    char keys[8][PPB_CASE_KEY_MAX];
    int64_t run = smoke_like_run(f, "nogp", "cpu", "CPU", "bi-v100", 0, keys);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, run, NULL);
    setenv("PPBENCH_GNUPLOT", "/nonexistent/gnuplot", 1);
    char *html = write_report(f, &req, &out);
    unsetenv("PPBENCH_GNUPLOT");
    assert_int_equal(out.gnuplot_available, 0);
    assert_int_equal(out.n_charts, 0);
    assert_true(out.n_charts_failed > 0);
    assert_non_null(strstr(out.gnuplot_note, "/nonexistent/gnuplot"));
    assert_non_null(strstr(html, "id=\"no-gnuplot\""));
    assert_non_null(strstr(html, "apt-get install gnuplot-nox"));
    assert_null(strstr(html, "<svg"));
    assert_non_null(strstr(html, "chart not drawn: no gnuplot"));
    assert_non_null(strstr(html, "href=\"charts/prefill-heatmap.gp\""));
    assert_null(strstr(html, ".png\""));   /* no link to a PNG that was not drawn */
    /* Every table is still there: results, correctness, feasibility, environment. */
    for (int i = 0; i < 8; i++)
        expect_case_row(html, keys[i]);
    assert_non_null(strstr(html, "<table class=\"correctness\">"));
    assert_non_null(strstr(html, "<table class=\"feasibility\">"));
    assert_non_null(strstr(html, "<table class=\"env\">"));
    /* The chart sources are written, to render later. */
    char charts[700];
    snprintf(charts, sizeof charts, "%s/charts", f->out);
    assert_true(file_exists(charts, "style.gp"));
    assert_true(file_exists(charts, "prefill-heatmap.gp"));
    assert_true(file_exists(charts, "prefill-heatmap.dat"));
    assert_true(file_exists(charts, "correctness.gp"));
    assert_false(file_exists(charts, "prefill-heatmap.svg"));
    free(html);
}

static void test_charts_inline_svg(void **state)
{
    fixture *f = *state;
    if (!have_gnuplot())
        skip();
    char keys[8][PPB_CASE_KEY_MAX];
    int64_t run = smoke_like_run(f, "charts", "cpu", "CPU", "", 1, keys);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, run, "gnuplot");
    char *html = write_report(f, &req, &out);
    /* 2 shape groups (d=64, d=128) x time + rate, the heatmap, the roofline,
     * correctness: every one drawn and inlined. */
    assert_int_equal(out.n_charts_failed, 0);
    assert_int_equal(out.n_charts, 7);
    assert_int_equal(count(html, "<svg class=\"chart-svg\""), 7);
    assert_int_equal(count(html, "</svg>"), 7);
    assert_null(strstr(html, "<?xml"));
    assert_null(strstr(html, "chart not drawn"));
    static const char *const names[] = {"prefill-time-1", "prefill-rate-1", "prefill-time-2",
                                        "prefill-rate-2", "prefill-heatmap", "prefill-roofline",
                                        "correctness"};
    char charts[700], file[200], id[200];
    snprintf(charts, sizeof charts, "%s/charts", f->out);
    for (int i = 0; i < 7; i++) {
        snprintf(id, sizeof id, "id=\"chart-%s\"", names[i]);
        assert_non_null(strstr(html, id));
        static const char *const exts[] = {"svg", "png", "gp", "dat"};
        for (int e = 0; e < 4; e++) {
            snprintf(file, sizeof file, "%s.%s", names[i], exts[e]);
            if (!file_exists(charts, file))
                fail_msg("missing %s", file);
        }
        /* Each chart's ids carry its name: one page, no clashes. */
        snprintf(id, sizeof id, "id='%s-gpDot'", names[i]);
        assert_int_equal(count(html, id), 1);
    }
    assert_null(strstr(html, "id='gpDot'"));
    /* CPU run: no invented ceilings. */
    assert_non_null(strstr(html, "no ceilings known"));
    char *gp = slurp(strcat(charts, "/prefill-roofline.gp"));
    assert_null(strstr(gp, "roof(x)"));
    free(gp);
    free(html);
}

/* One chart gnuplot cannot draw costs that chart only: the others are drawn,
 * and its place in the page says what gnuplot said. */
static void test_one_failing_chart(void **state)
{
    fixture *f = *state;
    if (!have_gnuplot())
        skip();
    char fake[600];
    snprintf(fake, sizeof fake, "%s/fake-gnuplot", f->dir);
    FILE *script = fopen(fake, "w");
    assert_non_null(script);
    fputs("#!/bin/sh\n"
          "[ \"$1\" = --version ] && exec gnuplot --version\n"
          "shift\n"
          "status=0\n"
          "for f in \"$@\"; do\n"
          "  case \"$f\" in\n"
          "  prefill-heatmap.gp) echo \"\\\"$f\\\" line 3: simulated failure\" >&2; status=1 ;;\n"
          "  *) gnuplot -d \"$f\" || status=1 ;;\n"
          "  esac\n"
          "done\n"
          "exit $status\n",
          script);
    fclose(script);
    chmod(fake, 0755);
    char keys[8][PPB_CASE_KEY_MAX];
    int64_t run = smoke_like_run(f, "fail", "cpu", "CPU", "", 0, keys);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, run, fake);
    char *html = write_report(f, &req, &out);
    assert_int_equal(out.gnuplot_available, 1);
    assert_int_equal(out.n_charts_failed, 1);
    assert_int_equal(out.n_charts, 6);
    assert_non_null(strstr(html, "chart not drawn: gnuplot exited with 1: &quot;prefill-heatmap.gp"
                                 "&quot; line 3: simulated failure"));
    assert_non_null(strstr(html, "id=\"chart-correctness\" data-chart=\"correctness\">\n<svg"));
    free(html);
}

static void test_feasibility_and_ceilings(void **state)
{
    fixture *f = *state;
    char keys[8][PPB_CASE_KEY_MAX];
    int64_t run = smoke_like_run(f, "h200", "cuda", "NVIDIA H200", "bi-v100", 0, keys);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, run, "");
    char *html = write_report(f, &req, &out);
    /* bm=128 bn=128 at d=128 needs 2 x 128 x 128 x 2 B of K+V tiles: over the
     * BI-V100's 48 KB; the table shows the arithmetic and the disputed figures. */
    assert_non_null(strstr(html, "<table class=\"feasibility\">"));
    assert_non_null(strstr(html, "st-infeasible"));
    assert_non_null(strstr(html, "st-feasible"));
    assert_non_null(strstr(html, "K+V tiles 2 x 128 x 128 x 2 B = 65536 B"));
    assert_non_null(strstr(html, "bi-v100"));
    /* An H200 run: the roofline uses the profile's ceilings, with their source. */
    assert_non_null(strstr(html, "targets/h200.yaml: memory 4.8 TB/s"));
    assert_non_null(strstr(html, "989 TFLOP/s"));
    char gp[900];
    snprintf(gp, sizeof gp, "%s/charts/prefill-roofline.gp", f->out);
    char *script = slurp(gp);
    assert_non_null(strstr(script, "bandwidth = 4.8"));
    assert_non_null(strstr(script, "peak = 989"));
    free(script);
    free(html);

    /* No target named: said so, no table. */
    int64_t plain = smoke_like_run(f, "plain", "cpu", "CPU", "", 0, keys);
    request(f, &req, PPB_REPORT_RUN, plain, "");
    html = write_report(f, &req, &out);
    assert_non_null(strstr(html, "no target profile was named"));
    assert_null(strstr(html, "<table class=\"feasibility\">"));
    free(html);
}

/* The table shows what the run judged when its cases ran (stored with each
 * result), not a judgement made again at report time; results stored without
 * one (before schema 17) are said to have none. */
static void test_feasibility_as_stored(void **state)
{
    fixture *f = *state;
    int64_t run = begin_run(f, "prefill", "stored", "cuda", "NVIDIA H200", "bi-v100");
    ppb_case c;
    prefill_case(&c, 512, 64, 64, 64);
    ppb_result r;
    ppb_result_init(&r);
    r.status = PPB_STATUS_REFUSED;
    snprintf(r.reason, sizeof r.reason, "infeasible on bi-v100: as judged then");
    r.feasibility = (ppb_feasibility){.judged = 1, .feasible = 0};
    snprintf(r.feasibility.reason, sizeof r.feasibility.reason, "needs 99999 B, as the profile said then");
    snprintf(r.feasibility.flips, sizeof r.feasibility.flips, "feasible at a figure since corrected");
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_result(f->s, run, &c, &r, &err), 0);
    finish(f, run, "complete");
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, run, "");
    char *html = write_report(f, &req, &out);
    assert_non_null(strstr(html, "needs 99999 B, as the profile said then"));
    assert_non_null(strstr(html, "feasible at a figure since corrected"));
    assert_non_null(strstr(html, "targets/bi-v100.yaml"));
    free(html);

    int64_t old = begin_run(f, "prefill", "old", "cuda", "NVIDIA H200", "bi-v100");
    f->judging = 0; /* as a run stored before results carried their judgement */
    put_result(f, old, &c, PPB_STATUS_OK, 1.0, 0.001, NULL);
    finish(f, old, "complete");
    request(f, &req, PPB_REPORT_RUN, old, "");
    html = write_report(f, &req, &out);
    assert_non_null(strstr(html, "no result of this run carries a judgement on it"));
    assert_null(strstr(html, "<table class=\"feasibility\">"));
    free(html);
}

static void test_proposal_report(void **state)
{
    fixture *f = *state;
    int gp = have_gnuplot();
    int64_t base = begin_run(f, "prefill", "baseline", "cpu", "CPU", "bi-v100");
    int64_t cand = begin_run(f, "prefill", "candidate", "cpu", "CPU", "bi-v100");
    ppb_proposal_case pc[3];
    memset(pc, 0, sizeof pc);
    static const char *const cls[] = {"faster", "slower", "same"};
    static const double ratio[] = {0.8, 1.12, 1.0};
    for (int i = 0; i < 3; i++) {
        ppb_case b, c;
        prefill_case(&b, 512 << (2 * i), 128, 128, 64);
        prefill_case(&c, 512 << (2 * i), 64, 64, 64);
        put_result(f, base, &b, PPB_STATUS_OK, 1.0 + i, 0.001, NULL);
        put_result(f, cand, &c, PPB_STATUS_OK, (1.0 + i) * ratio[i], 0.002, NULL);
        snprintf(pc[i].baseline_key, sizeof pc[i].baseline_key, "%s", b.key);
        snprintf(pc[i].candidate_key, sizeof pc[i].candidate_key, "%s", c.key);
        pc[i].weight = 1;
        snprintf(pc[i].state, sizeof pc[i].state, "compared");
        snprintf(pc[i].cls, sizeof pc[i].cls, "%s", cls[i]);
        pc[i].ratio = ratio[i];
        pc[i].ratio_lo = ratio[i] * 0.98;
        pc[i].ratio_hi = ratio[i] * 1.02;
        pc[i].p_holm = 0.01;
    }
    finish(f, base, "complete");
    finish(f, cand, "complete");
    ppb_proposal_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.name, sizeof rec.name, "%s", "tile 64 " HOSTILE_LABEL);
    snprintf(rec.path, sizeof rec.path, "suites/proposals/x.yaml");
    snprintf(rec.kind, sizeof rec.kind, "kernel_config");
    snprintf(rec.target, sizeof rec.target, "bi-v100");
    rec.baseline_run = base;
    rec.candidate_run = cand;
    snprintf(rec.verdict, sizeof rec.verdict, "REJECT");
    rec.geomean_ratio = 0.96;
    rec.geomean_lo = 0.94;
    rec.geomean_hi = 0.98;
    snprintf(rec.reasons, sizeof rec.reasons,
             "REJECT: case #2 is 12%% slower, beyond the 5%% tolerance\nnote: " HOSTILE_ATTR "\n");
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_proposal(f->s, &rec, pc, 3, &err), 0);

    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_PROPOSAL, rec.id, gp ? "gnuplot" : "");
    char *html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "REJECT");
    assert_non_null(strstr(html, "id=\"verdict\">REJECT</span>"));
    assert_non_null(strstr(html, "class=\"banner bad\""));
    assert_non_null(strstr(html, "<li class=\"lead\">REJECT: case #2 is 12% slower"));
    assert_non_null(strstr(html, "note: &quot;&gt;&lt;img src=x"));
    assert_null(strcasestr(html, "<script"));
    assert_null(strcasestr(html, "<img"));
    assert_non_null(strstr(html, "0.9600 [0.9400, 0.9800]"));
    /* Every proposal case, and both sides' results. */
    for (int i = 0; i < 3; i++) {
        expect_case_row(html, pc[i].candidate_key);
        char needle[600];
        snprintf(needle, sizeof needle, "data-baseline-key=\"%s\"", pc[i].baseline_key);
        assert_non_null(strstr(html, needle));
    }
    assert_int_equal(count(html, "data-side=\"baseline\""), 3);
    assert_int_equal(count(html, "data-side=\"candidate\""), 3);
    /* The slowest case leads the worst list. */
    assert_non_null(strstr(out.worst[0], "slower"));
    assert_non_null(strstr(out.worst[0], pc[1].candidate_key));
    /* Both runs' environments, the feasibility of both configs. */
    assert_non_null(strstr(html, "baseline run "));
    assert_non_null(strstr(html, "candidate run "));
    assert_non_null(strstr(html, "<table class=\"feasibility\">"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ppbench report --proposal %lld", (long long)rec.id);
    assert_non_null(strstr(html, cmd));
    if (gp) {
        assert_non_null(strstr(html, "id=\"chart-proposal-ratios\""));
        assert_int_equal(out.n_charts_failed, 0);
    }
    free(html);

    err.msg[0] = '\0';
    request(f, &req, PPB_REPORT_PROPOSAL, rec.id + 100, "");
    assert_int_equal(ppb_report_write(f->s, &req, &out, &err), PPB_EINPUT);
}

/* 16 cases whose nights wander +-6% each on their own, all 10% slower in the
 * last 3 of 14 nights: no case alone shows it past its own noise, the kernel's
 * cases pooled do (trend_pool.h): the page says REGRESSION and why, with the
 * pooled table. */
static void test_trend_report_pooled(void **state)
{
    fixture *f = *state;
    ppb_case cases[16];
    for (int c = 0; c < 16; c++)
        prefill_case(&cases[c], 512 * (1 + c % 8), c < 8 ? 64 : 128, 64, 64);
    for (int night = 0; night < 14; night++) {
        int64_t run = begin_run(f, "nightly-p", "", "cpu", "CPU", "");
        for (int c = 0; c < 16; c++) {
            double noise = ((night * 131 + c * 71) % 13 - 6) / 100.0;
            put_result(f, run, &cases[c], PPB_STATUS_OK, (1 + c) * (1 + noise) * (night >= 11 ? 1.10 : 1.0), 0.001,
                       NULL);
        }
        finish(f, run, "complete");
    }
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_TREND, 0, "");
    snprintf(req.suite, sizeof req.suite, "nightly-p");
    char *html = write_report(f, &req, &out);
    assert_null(strstr(html, "data-status=\"regression\""));   /* no case alone */
    assert_string_equal(out.verdict, "REGRESSION");
    assert_non_null(strstr(html, "slowed down together in a sustained step"));
    assert_non_null(strstr(html, "<table class=\"pooled\">"));
    assert_non_null(strstr(html, "prefix_prefill, 16 cases pooled: REGRESSION: a step of +"));
    free(html);
}

static void test_trend_report(void **state)
{
    fixture *f = *state;
    int gp = have_gnuplot();
    ppb_case steady, stepped;
    prefill_case(&steady, 512, 64, 64, 64);
    prefill_case(&stepped, 4096, 64, 64, 64);
    /* 10 nightly runs; the second case steps up 20% from run 7 on. */
    for (int night = 0; night < 10; night++) {
        int64_t run = begin_run(f, "nightly-t", "", "cpu", "CPU", "");
        double wobble = 1 + 0.002 * ((night * 7) % 5);
        put_result(f, run, &steady, PPB_STATUS_OK, 1.0 * wobble, 0.001, NULL);
        put_result(f, run, &stepped, PPB_STATUS_OK, 2.0 * wobble * (night >= 7 ? 1.2 : 1.0),
                   0.001, NULL);
        finish(f, run, "complete");
    }
    /* Another suite's runs do not enter the history. */
    int64_t other = begin_run(f, "other", "", "cpu", "CPU", "");
    put_result(f, other, &steady, PPB_STATUS_OK, 50.0, 0.001, NULL);
    finish(f, other, "complete");

    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_TREND, 0, gp ? "gnuplot" : "");
    snprintf(req.suite, sizeof req.suite, "nightly-t");
    char *html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "REGRESSION");
    assert_non_null(strstr(html, "id=\"verdict\">REGRESSION</span>"));
    assert_non_null(strstr(out.headline, "1 of 2 cases"));
    expect_case_row(html, steady.key);
    expect_case_row(html, stepped.key);
    /* The alert comes first, naming its case. */
    char needle[600];
    snprintf(needle, sizeof needle, "id=\"case-1\" data-case-key=\"%s\" data-status=\"regression\"",
             stepped.key);
    assert_non_null(strstr(html, needle));
    snprintf(needle, sizeof needle, "data-case-key=\"%s\" data-status=\"ok\"", steady.key);
    assert_non_null(strstr(html, needle));
    assert_int_equal(strncmp(out.worst[0], "regression", 10), 0);
    assert_non_null(strstr(out.worst[0], "+20."));   /* +20%, give or take the wobble */
    assert_non_null(strstr(out.worst[0], "% since run 8:"));
    assert_non_null(strstr(out.worst[0], stepped.key));
    if (gp) {
        assert_int_equal(out.n_charts, 3);   /* the overview, one per case */
        assert_int_equal(out.n_charts_failed, 0);
        assert_non_null(strstr(html, "id=\"chart-trend-overview\" data-chart=\"trend-overview\">\n<svg"));
        char dat[900];
        snprintf(dat, sizeof dat, "%s/charts/trend-1.dat", f->out);
        char *d = slurp(dat);
        /* 10 runs in the history, 3 of them (the step) marked. */
        const char *alert = strstr(d, "# alert");
        assert_non_null(alert);
        int lines = 0;
        for (const char *p = alert; *p; p++)
            lines += *p == '\n';
        assert_int_equal(lines, 4);   /* the comment line + 3 runs */
        /* x is the run's night (one position each: runs of one second never
         * stack), its start time kept beside; time never drawn below zero */
        const char *first = strchr(strstr(d, "# every run"), '\n') + 1;
        assert_true(first[0] == '0' && first[1] == ' ');
        const char *eol = strchr(first, '\n');
        assert_true(eol[-1] == 'Z' && eol[-10] == 'T');
        free(d);
        snprintf(dat, sizeof dat, "%s/charts/trend-1.gp", f->out);
        d = slurp(dat);
        assert_null(strstr(d, "set xdata time"));
        assert_non_null(strstr(d, "set xrange [-0.5:9.5]\n"));
        assert_non_null(strstr(d, "set yrange [0:*]\n"));
        free(d);
    }
    free(html);

    /* --since past every run: nothing to judge, said per case. */
    snprintf(req.since, sizeof req.since, "2999-01-01");
    html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "NO HISTORY");
    assert_non_null(strstr(html, "class=\"banner warn\""));
    assert_non_null(strstr(html, "no run of this case has a median time"));
    free(html);

    snprintf(req.suite, sizeof req.suite, "no-such-suite");
    ppb_err err = {{0}};
    assert_int_equal(ppb_report_write(f->s, &req, &out, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "no run of suite 'no-such-suite'"));
}

/* ---- trend overview ------------------------------------------------------------------- */

#define HOSTILE_COMMIT "'<i>%n;system('id')"

/* A run of `suite` that started on day `day` of 2026-11 (02:00 UTC), at `commit`. */
static int64_t begin_night(fixture *f, const char *suite, int day, const char *commit)
{
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "%s", suite);
    snprintf(run.suite_path, sizeof run.suite_path, "%s/smoke.yaml", f->suites);
    snprintf(run.git_commit, sizeof run.git_commit, "%s", commit);
    snprintf(run.backend, sizeof run.backend, "cpu");
    snprintf(run.device, sizeof run.device, "CPU");
    snprintf(run.started_at, sizeof run.started_at, "2026-11-%02dT02:00:00Z", day);
    ppb_err err = {{0}};
    if (ppb_store_begin_run(f->s, &run, &err))
        fail_msg("begin_night: %s", err.msg);
    return run.id;
}

/* The text between `from` and the end of its line. */
static char *line_of(const char *text, const char *from)
{
    const char *p = strstr(text, from);
    if (!p)
        fail_msg("no line starting '%s'", from);
    size_t n = strcspn(p, "\n");
    char *line = malloc(n + 1);
    assert_non_null(line);
    memcpy(line, p, n);
    line[n] = '\0';
    return line;
}

static char *chart_file(fixture *f, const char *name)
{
    char path[900];
    snprintf(path, sizeof path, "%s/charts/%s", f->out, name);
    return slurp(path);
}

/* Lines of a .dat block: from its comment line to the next blank line. */
static int block_lines(const char *dat, const char *comment)
{
    const char *p = strstr(dat, comment);
    assert_non_null(p);
    p = strchr(p, '\n') + 1;
    int n = 0;
    while (*p && *p != '\n') {
        n++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    return n;
}

/* 7 nights, 3 cases: one steps up 20% and one down 8% from night 5, one is
 * steady and has no time on night 2. Night 3's commit is hostile. */
static void overview_store(fixture *f, ppb_case cases[3])
{
    prefill_case(&cases[0], 512, 64, 64, 64);     /* steady */
    prefill_case(&cases[1], 4096, 64, 64, 64);    /* +20% */
    prefill_case(&cases[2], 2048, 64, 64, 64);    /* -8% */
    for (int night = 0; night < 7; night++) {
        char commit[64];
        snprintf(commit, sizeof commit, "c0ffee%d0123456789", night);
        int64_t run = begin_night(f, "nightly-o", night + 1, night == 2 ? HOSTILE_COMMIT : commit);
        if (night != 1)
            put_result(f, run, &cases[0], PPB_STATUS_OK, 1.0, 0.001, NULL);
        put_result(f, run, &cases[1], PPB_STATUS_OK, night >= 4 ? 2.4 : 2.0, 0.001, NULL);
        put_result(f, run, &cases[2], PPB_STATUS_OK, night >= 4 ? 3.68 : 4.0, 0.001, NULL);
        finish(f, run, "complete");
    }
}

/* The page opens with the overview (one row per case, one column per night,
 * the change in each cell with its class), then the alerts, then the charts;
 * all of it as text, without gnuplot. */
static void test_trend_overview_table(void **state)
{
    fixture *f = *state;
    ppb_case cases[3];
    overview_store(f, cases);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_TREND, 0, "");
    snprintf(req.suite, sizeof req.suite, "nightly-o");
    char *html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "REGRESSION");

    /* Overview first, then the alerts, then the history charts. */
    const char *overview = strstr(html, "<section id=\"trend-overview\">");
    const char *alerts = strstr(html, "<section id=\"trend-alerts\">");
    const char *charts = strstr(html, "<section id=\"trend-charts\">");
    assert_non_null(overview);
    assert_true(overview < alerts && alerts < charts);

    /* 3 rows x 7 nights, every cell present; night 2 of the steady case has no time. */
    assert_int_equal(count(html, "<tr class=\"overview-row\""), 3);
    assert_int_equal(count(html, "<th class=\"night\""), 7);
    assert_int_equal(count(html, "<td class=\"chg "), 21);
    assert_int_equal(count(html, "<td class=\"chg chg-none\""), 1);
    /* Columns name the night's date and commit. */
    assert_non_null(strstr(html, ">11-01<br><code>c0ffee0</code></th>"));
    assert_non_null(strstr(html, ">11-07<br><code>c0ffee6</code></th>"));
    /* Rows: the regression (#1), the improvement (#2), the steady case (#3). */
    char needle[700];
    snprintf(needle, sizeof needle, "<tr class=\"overview-row\" data-case-key=\"%s\"><td "
                                    "class=\"num\"><a href=\"#case-1\">#1</a>",
             cases[1].key);
    assert_non_null(strstr(html, needle));
    /* The step's nights: +20% and -8% against the runs before, outlined as the alert. */
    assert_int_equal(count(html, "<td class=\"chg chg-p2 alert\" title=\"#1, run "), 3);
    assert_int_equal(count(html, "<td class=\"chg chg-m2 alert\" title=\"#2, run "), 3); /* -8%: past 2 x the 2% floor */
    assert_int_equal(count(html, "+20.0% against the reference 2 ms; part of the alert\">+20</td>"),
                     3);
    assert_int_equal(count(html, "-8.0% against the reference 4 ms; part of the alert\">-8</td>"),
                     3);
    assert_int_equal(count(html, "<td class=\"chg chg-0\" title=\"#3, run "), 6);
    assert_int_equal(count(html, ">0</td>"), 4 + 4 + 6);

    /* The alerts: both steps, from the run where they began, with its date and commit. */
    assert_int_equal(count(html, "<tr class=\"alert-row\""), 2);
    assert_non_null(strstr(html, "(11-05, c0ffee4)</td>"));
    assert_null(strstr(html, "id=\"no-alerts\""));

    /* The hostile commit is text: in the column head (its first 7 characters) and its title. */
    assert_null(strstr(html, "<i>"));
    assert_non_null(strstr(html, "11-03<br><code>&#39;&lt;i&gt;%n;</code>"));
    assert_non_null(strstr(html, "commit &#39;&lt;i&gt;%n;system(&#39;id&#39;))\""));
    free(html);
}

/* The overview chart's data and script, and the history charts' tics, carry
 * each night's run id and commit; a hostile commit cannot leave its string. */
static void test_trend_overview_chart(void **state)
{
    fixture *f = *state;
    int gp = have_gnuplot();
    ppb_case cases[3];
    overview_store(f, cases);
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_TREND, 0, gp ? "gnuplot" : "");
    snprintf(req.suite, sizeof req.suite, "nightly-o");
    char *html = write_report(f, &req, &out);

    char *dat = chart_file(f, "trend-overview.dat");
    assert_int_equal(block_lines(dat, "# cells with a time"), 20);
    assert_int_equal(block_lines(dat, "# alert runs"), 6);
    /* column row class change label run: night 5 of the regression (row 0) */
    assert_non_null(strstr(dat, "\n4 0 2 20 \"+20\" "));
    assert_non_null(strstr(dat, "\n4 1 -2 -8 \"-8\" "));
    free(dat);

    char *script = chart_file(f, "trend-overview.gp");
    char *xtics = line_of(script, "set xtics (");
    assert_non_null(strstr(xtics, "set xtics ('run 1'.nl.'c0ffee0' 0, 'run 2'.nl.'c0ffee1' 1, "));
    assert_non_null(strstr(xtics, "'run 3'.nl.'??i?%%n?' 2, "));
    assert_non_null(strstr(xtics, "'run 7'.nl.'c0ffee6' 6)"));
    /* Only the safe alphabet inside the quotes, and a '%' that prints as itself. */
    assert_null(strchr(xtics, ';'));
    assert_null(strstr(xtics, "<i>"));
    assert_null(strstr(xtics, "system"));
    free(xtics);
    char *ytics = line_of(script, "set ytics (");
    assert_non_null(strstr(ytics, "set ytics ('#1' 0, '#2' 1, '#3' 2)"));
    free(ytics);
    assert_non_null(strstr(script, "eval palette_change\n"));
    free(script);

    /* The regression's own chart: every night a tic at its position, named by run id and commit. */
    char *history = chart_file(f, "trend-1.gp");
    xtics = line_of(history, "set xtics (");
    assert_int_equal(count(xtics, ".nl."), 7);
    assert_non_null(strstr(xtics, "'run 5'.nl.'c0ffee4' 4"));
    assert_non_null(strstr(xtics, "'run 3'.nl.'??i?%%n?' 2"));
    free(xtics);
    free(history);

    if (gp) {
        assert_int_equal(out.n_charts_failed, 0);
        assert_non_null(strstr(html, "id=\"chart-trend-overview\" data-chart=\"trend-overview\">\n<svg"));
        assert_null(strstr(html, "<i>"));
    }
    free(html);
}

/* A suite of 122 cases gets one overview row each; a long history shows its
 * last 30 nights, and a history chart labels at most 8 tics (the latest and
 * the step's first run among them). */
static void test_trend_overview_scales(void **state)
{
    fixture *f = *state;
    enum { N_CASES = 122, N_NIGHTS = 3 };
    for (int night = 0; night < N_NIGHTS; night++) {
        int64_t run = begin_night(f, "big", night + 1, "abcdef0");
        for (int i = 0; i < N_CASES; i++) {
            ppb_case c;
            prefill_case(&c, 16 * (i + 1), 64, 64, 64);
            put_result(f, run, &c, PPB_STATUS_OK, 1.0 + 0.01 * i, 0.001, NULL);
        }
        finish(f, run, "complete");
    }
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_TREND, 0, "");
    snprintf(req.suite, sizeof req.suite, "big");
    char *html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "NO HISTORY");
    assert_int_equal(count(html, "<tr class=\"overview-row\""), N_CASES);
    assert_int_equal(count(html, "<td class=\"chg chg-0\""), N_CASES * N_NIGHTS);
    assert_non_null(strstr(html, "id=\"no-alerts\""));
    char *script = chart_file(f, "trend-overview.gp");
    char *ytics = line_of(script, "set ytics (");
    assert_int_equal(count(ytics, "'#"), N_CASES);
    free(ytics);
    assert_non_null(strstr(script, "set x2tics ("));   /* a tall chart names its nights on top too */
    free(script);
    free(html);

    /* 2 cases, 32 nights, +20% from night 27 on. */
    ppb_case a, b;
    prefill_case(&a, 512, 128, 128, 64);
    prefill_case(&b, 1024, 128, 128, 64);
    for (int night = 0; night < 32; night++) {
        char commit[32];
        snprintf(commit, sizeof commit, "%07d", night);
        int64_t run = begin_night(f, "long", night / 2 + 1, commit);
        put_result(f, run, &a, PPB_STATUS_OK, 1.0, 0.001, NULL);
        put_result(f, run, &b, PPB_STATUS_OK, night >= 27 ? 1.2 : 1.0, 0.001, NULL);
        finish(f, run, "complete");
    }
    snprintf(req.suite, sizeof req.suite, "long");
    html = write_report(f, &req, &out);
    assert_string_equal(out.verdict, "REGRESSION");
    assert_int_equal(count(html, "<th class=\"night\""), 30);
    assert_non_null(strstr(html, "<br><code>0000002</code>"));   /* the 3rd night: the first shown */
    /* each night's header leads with its run id: nights of one day and commit read apart */
    assert_non_null(strstr(html, "data-run=\"6\">#6<br>11-02<br><code>0000002</code>"));
    assert_null(strstr(html, "<br><code>0000001</code>"));
    char *history = chart_file(f, "trend-1.gp");
    char *xtics = line_of(history, "set xtics (");
    assert_true(count(xtics, ".nl.") <= 8 + 1);
    assert_non_null(strstr(xtics, ".nl.'0000027'"));   /* the step's first run */
    assert_non_null(strstr(xtics, ".nl.'0000031'"));   /* the latest */
    free(xtics);
    free(history);
    free(html);
}

static void test_unknown_run(void **state)
{
    fixture *f = *state;
    ppb_report_request req;
    ppb_report_outcome out;
    request(f, &req, PPB_REPORT_RUN, 42, "");
    ppb_err err = {{0}};
    assert_int_equal(ppb_report_write(f->s, &req, &out, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "run 42 not found"));
    struct stat st;
    char index[700];
    snprintf(index, sizeof index, "%s/index.html", f->out);
    assert_int_not_equal(stat(index, &st), 0);   /* nothing written */
}

static void test_command_and_quoting(void **state)
{
    (void)state;
    char buf[512];
    ppb_shell_quote("plain-arg_1.db", buf, sizeof buf);
    assert_string_equal(buf, "plain-arg_1.db");
    ppb_shell_quote("it's here", buf, sizeof buf);
    assert_string_equal(buf, "'it'\\''s here'");
    ppb_shell_quote("$(rm -rf /)", buf, sizeof buf);
    assert_string_equal(buf, "'$(rm -rf /)'");
    ppb_shell_quote("", buf, sizeof buf);
    assert_string_equal(buf, "''");

    ppb_report_request req;
    memset(&req, 0, sizeof req);
    req.kind = PPB_REPORT_TREND;
    snprintf(req.suite, sizeof req.suite, "nightly");
    snprintf(req.since, sizeof req.since, "2026-11-01");
    req.window = 12;
    snprintf(req.db_path, sizeof req.db_path, "/data/my db.db");
    snprintf(req.out_dir, sizeof req.out_dir, "out/trend");
    ppb_report_command(&req, buf, sizeof buf);
    assert_string_equal(buf, "ppbench report --trend nightly --since 2026-11-01 --window 12 --db "
                             "'/data/my db.db' -o out/trend");
    req.kind = PPB_REPORT_RUN;
    req.id = 7;
    ppb_report_command(&req, buf, sizeof buf);
    assert_string_equal(buf, "ppbench report 7 --db '/data/my db.db' -o out/trend");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hostile_strings_are_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_banner_and_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_gnuplot_keeps_every_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_charts_inline_svg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_failing_chart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_feasibility_and_ceilings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_feasibility_as_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_proposal_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_report_pooled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_overview_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_overview_chart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_overview_scales, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_run, setup, teardown),
        cmocka_unit_test(test_command_and_quoting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
