/* harness/publish/gnuplot.c: finding gnuplot (and not finding it), running it with a
 * fixed argv and no shell, safe gnuplot strings, and the SVG check/rewrite
 * before a chart is inlined into HTML. Tests that need gnuplot skip without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gnuplot.h"

typedef struct fixture {
    char dir[256];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-gnuplot-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int exists(const char *dir, const char *name)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

static void need_gnuplot(ppb_gnuplot *gp)
{
    ppb_gnuplot_detect(gp, "gnuplot");
    if (!gp->available) {
        print_message("skipped: %s\n", gp->why);
        skip();
    }
}

/* ---- detection ------------------------------------------------------------------ */

static void test_detect_missing(void **state)
{
    (void)state;
    ppb_gnuplot gp;
    ppb_gnuplot_detect(&gp, "/nonexistent/gnuplot");
    assert_int_equal(gp.available, 0);
    assert_non_null(strstr(gp.why, "/nonexistent/gnuplot"));
    assert_non_null(strstr(gp.why, "not found"));

    ppb_gnuplot_detect(&gp, "ppb-no-such-program-anywhere");
    assert_int_equal(gp.available, 0);
    assert_non_null(strstr(gp.why, "on PATH"));

    ppb_gnuplot_detect(&gp, "");
    assert_int_equal(gp.available, 0);
    assert_non_null(strstr(gp.why, "turned off"));

    /* Runs, but is not gnuplot. */
    ppb_gnuplot_detect(&gp, "/bin/true");
    assert_int_equal(gp.available, 0);
    assert_non_null(strstr(gp.why, "does not answer --version like gnuplot"));

    /* $PPBENCH_GNUPLOT is read when no program is given. */
    setenv("PPBENCH_GNUPLOT", "/nonexistent/from-env", 1);
    ppb_gnuplot_detect(&gp, NULL);
    unsetenv("PPBENCH_GNUPLOT");
    assert_int_equal(gp.available, 0);
    assert_non_null(strstr(gp.why, "/nonexistent/from-env (from PPBENCH_GNUPLOT)"));

    ppb_err err = {{0}};
    const char *scripts[] = {"x.gp"};
    assert_int_equal(ppb_gnuplot_run(&gp, "/tmp", scripts, 1, "x.log", 5, &err), PPB_EFAIL);
}

static void test_detect_present(void **state)
{
    (void)state;
    ppb_gnuplot gp;
    need_gnuplot(&gp);
    assert_int_equal(strncmp(gp.version, "gnuplot ", 8), 0);
    assert_true(gp.path[0] == '/');
}

/* ---- running ---------------------------------------------------------------------- */

static void test_run_renders_and_reports_errors(void **state)
{
    fixture *f = *state;
    ppb_gnuplot gp;
    need_gnuplot(&gp);
    ppb_err err = {{0}};
    write_file(f->dir, "ok.gp",
               "set terminal svg size 300,200\nset output 'ok.svg'\nplot x title 'line'\n");
    write_file(f->dir, "bad.gp", "set terminal svg\nset output 'bad.svg'\nplot no_such_var\n");
    const char *ok[] = {"ok.gp"};
    assert_int_equal(ppb_gnuplot_run(&gp, f->dir, ok, 1, "ok.log", 30, &err), PPB_OK);
    assert_true(exists(f->dir, "ok.svg"));
    const char *bad[] = {"bad.gp"};
    assert_int_equal(ppb_gnuplot_run(&gp, f->dir, bad, 1, "bad.log", 30, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "gnuplot exited with"));
    assert_non_null(strstr(err.msg, "bad.gp"));   /* the log line naming the script */
    assert_true(exists(f->dir, "bad.log"));
}

/* A script name full of shell syntax is one argv element, never a command. */
static void test_run_uses_no_shell(void **state)
{
    fixture *f = *state;
    ppb_gnuplot gp;
    need_gnuplot(&gp);
    const char *name = "a; touch PWNED; b $(touch PWNED2).gp";
    write_file(f->dir, name, "set terminal svg\nset output 'shell.svg'\nplot x\n");
    ppb_err err = {{0}};
    const char *scripts[] = {name};
    assert_int_equal(ppb_gnuplot_run(&gp, f->dir, scripts, 1, "shell.log", 30, &err), PPB_OK);
    assert_true(exists(f->dir, "shell.svg"));
    assert_false(exists(f->dir, "PWNED"));
    assert_false(exists(f->dir, "PWNED2"));
    assert_false(exists(".", "PWNED"));
}

static void test_run_times_out(void **state)
{
    fixture *f = *state;
    ppb_gnuplot gp;
    need_gnuplot(&gp);
    write_file(f->dir, "slow.gp", "pause 30\n");
    ppb_err err = {{0}};
    const char *scripts[] = {"slow.gp"};
    assert_int_equal(ppb_gnuplot_run(&gp, f->dir, scripts, 1, "slow.log", 1, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "was stopped"));
}

/* ---- gnuplot strings -------------------------------------------------------------- */

static void test_gnuplot_string(void **state)
{
    (void)state;
    char buf[128];
    ppb_gnuplot_string("bm=64 bn=64 w=4", buf, sizeof buf);
    assert_string_equal(buf, "'bm=64 bn=64 w=4'");
    /* A quote would end the string; a newline would start a command. */
    ppb_gnuplot_string("x'; system('rm -rf /')\nplot 1", buf, sizeof buf);
    assert_string_equal(buf, "'x?\? system(?rm -rf /?)?plot 1'");
    ppb_gnuplot_string("<script>&\"\\`$", buf, sizeof buf);
    assert_string_equal(buf, "'?script?\?\?\?\?\?'");
    ppb_gnuplot_string("caf\xC3\xA9", buf, sizeof buf);
    assert_string_equal(buf, "'caf?\?'");
    /* Truncation keeps both quotes. */
    ppb_gnuplot_string("abcdefghij", buf, 6);
    assert_string_equal(buf, "'abc'");
    ppb_gnuplot_string(NULL, buf, sizeof buf);
    assert_string_equal(buf, "''");
}

/* ---- SVG check and rewrite ---------------------------------------------------------- */

static const char svg_doc[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"  standalone=\"no\"?>\n"
    "<svg \n width=\"600\" height=\"300\"\n viewBox=\"0 0 600 300\"\n"
    " xmlns=\"http://www.w3.org/2000/svg\"\n xmlns:xlink=\"http://www.w3.org/1999/xlink\"\n>\n"
    "<title>Gnuplot</title>\n<desc>Produced by GNUPLOT 5.4 patchlevel 4 </desc>\n"
    "<g id=\"gnuplot_canvas\">\n<defs>\n"
    "\t<circle id='gpDot' r='0.5'/>\n\t<path id='gpPt0' d='M-1,0 h2'/>\n"
    "\t<use xlink:href='#gpPt0' id='gpPt1' fill='currentColor'/>\n"
    "\t<filter id='textbox'/>\n</defs>\n"
    "<path d='M45.50,270.00 L578.99,270.00'/>\n"
    "<text filter='url(#textbox)'>a&lt;b</text>\n"
    "</g>\n</svg>\n\n";

static void test_svg_inline_rewrites(void **state)
{
    (void)state;
    char *out = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_svg_inline(svg_doc, "c1", &out, &err), PPB_OK);
    assert_non_null(out);
    assert_int_equal(strncmp(out, "<svg class=\"chart-svg\" role=\"img\"", 33), 0);
    assert_null(strstr(out, "<?xml"));
    assert_null(strstr(out, "<title>Gnuplot</title>"));
    /* The whole document arrived (ends with </svg>, keeps its paths). */
    assert_non_null(strstr(out, "d='M45.50,270.00 L578.99,270.00'"));
    size_t n = strlen(out);
    assert_true(n > 6 && strcmp(out + n - 6, "</svg>") == 0);
    /* Ids and references prefixed, none left bare. */
    assert_non_null(strstr(out, "id=\"c1-gnuplot_canvas\""));
    assert_non_null(strstr(out, "id='c1-gpDot'"));
    assert_non_null(strstr(out, "xlink:href='#c1-gpPt0' id='c1-gpPt1'"));
    assert_non_null(strstr(out, "filter='url(#c1-textbox)'"));
    assert_null(strstr(out, "'#gpPt0'"));
    assert_null(strstr(out, "id='gpDot'"));
    assert_null(strstr(out, "url(#textbox)"));
    /* A namespace name, not something loaded: kept. */
    assert_non_null(strstr(out, "xmlns=\"http://www.w3.org/2000/svg\""));
    free(out);
}

static void expect_refused(const char *body, const char *why)
{
    char doc[2048];
    snprintf(doc, sizeof doc, "<svg xmlns=\"http://www.w3.org/2000/svg\">%s</svg>", body);
    char *out = (char *)1;
    ppb_err err = {{0}};
    int rc = ppb_svg_inline(doc, "c", &out, &err);
    if (rc != PPB_EINPUT)
        fail_msg("not refused: %s", body);
    assert_null(out);
    if (!strstr(err.msg, why))
        fail_msg("'%s' refused with '%s', expected '%s'", body, err.msg, why);
}

static void test_svg_inline_refuses_active_content(void **state)
{
    (void)state;
    expect_refused("<script>alert(1)</script>", "<script");
    expect_refused("<SCRIPT>alert(1)</SCRIPT>", "<script");
    expect_refused("<g onload=\"alert(1)\"/>", "event handler");
    expect_refused("<g\nONCLICK = 'x'/>", "event handler");
    expect_refused("<foreignObject><p>x</p></foreignObject>", "<foreignobject");
    expect_refused("<image href='http://example.com/x.png'/>", "refers outside");
    expect_refused("<use xlink:href=\"other.svg#a\"/>", "refers outside");
    expect_refused("<rect fill='url(http://example.com/p)'/>", "refers outside");
    expect_refused("<a href='#x'>x</a>", "<a ");
    expect_refused("<style>@import 'x.css';</style>", "<style");
    expect_refused("<text>javascript:alert(1)</text>", "javascript:");
    char *out = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_svg_inline("<html>no svg here</html>", "c", &out, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "not an SVG"));
    /* Words that merely contain "on" are fine. */
    assert_int_equal(ppb_svg_inline("<svg><text font='x' stroke-width='1' "
                                     "text-anchor='end'>ontology done</text></svg>",
                                     "c", &out, &err),
                     PPB_OK);
    free(out);
}

static void test_svg_from_gnuplot_is_accepted(void **state)
{
    fixture *f = *state;
    ppb_gnuplot gp;
    need_gnuplot(&gp);
    write_file(f->dir, "real.gp",
               "set terminal svg size 400,300 fixed noenhanced font 'sans,10'\n"
               "set output 'real.svg'\nset logscale y\nset palette defined (0 'green', 1 'red')\n"
               "$d << EOD\n0 0 0.2\n1 0 0.7\n0 1 1\n1 1 0.5\nEOD\n"
               "plot $d using 1:2:(0.4):(0.4):3 with boxxyerror fs solid lc palette, "
               "x**2 title 'a_b<c>'\n");
    const char *scripts[] = {"real.gp"};
    ppb_err err = {{0}};
    assert_int_equal(ppb_gnuplot_run(&gp, f->dir, scripts, 1, "real.log", 30, &err), PPB_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/real.svg", f->dir);
    char *out = NULL;
    if (ppb_svg_inline_file(path, "real", &out, &err))
        fail_msg("gnuplot's own SVG refused: %s", err.msg);
    assert_non_null(strstr(out, "<path"));
    assert_null(strstr(out, "<c>"));   /* gnuplot escaped it */
    free(out);
    snprintf(path, sizeof path, "%s/missing.svg", f->dir);
    assert_int_equal(ppb_svg_inline_file(path, "x", &out, &err), PPB_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_missing),
        cmocka_unit_test(test_detect_present),
        cmocka_unit_test_setup_teardown(test_run_renders_and_reports_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_uses_no_shell, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_times_out, setup, teardown),
        cmocka_unit_test(test_gnuplot_string),
        cmocka_unit_test(test_svg_inline_rewrites),
        cmocka_unit_test(test_svg_inline_refuses_active_content),
        cmocka_unit_test_setup_teardown(test_svg_from_gnuplot_is_accepted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
