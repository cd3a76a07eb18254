/* The HTML writer (harness/publish/html.c): escaping of text and attributes, control
 * characters and invalid UTF-8, slugs, the style-sheet guard. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

/* Run `fn` on a writer over a memory stream; returns the text (caller frees). */
typedef void (*html_fn)(ppb_html *h, const void *arg);

static char *render(html_fn fn, const void *arg, int *finish_rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    ppb_html h;
    ppb_html_init(&h, f);
    fn(&h, arg);
    ppb_err err = {{0}};
    int rc = ppb_html_finish(&h, &err);
    if (finish_rc)
        *finish_rc = rc;
    fclose(f);
    return buf;
}

static char *escaped(const char *text)
{
    size_t need = ppb_html_escape(text, NULL, 0);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    assert_int_equal(ppb_html_escape(text, buf, need + 1), need);
    return buf;
}

static void test_escape_specials(void **state)
{
    (void)state;
    char *s = escaped("<script>alert(1)</script>");
    assert_string_equal(s, "&lt;script&gt;alert(1)&lt;/script&gt;");
    free(s);
    s = escaped("\"><img src=x onerror='alert(1)'>&amp;");
    assert_string_equal(s, "&quot;&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&amp;amp;");
    free(s);
    s = escaped("plain text, 1.5 ms = fine");
    assert_string_equal(s, "plain text, 1.5 ms = fine");
    free(s);
    s = escaped("");
    assert_string_equal(s, "");
    free(s);
}

static void test_escape_control_and_utf8(void **state)
{
    (void)state;
    /* Tab, newline and CR stay; other controls and DEL become U+FFFD. */
    char *s = escaped("a\tb\nc\rd\x01" "e\x1b" "f\x7f");
    assert_string_equal(s, "a\tb\nc\rd\xEF\xBF\xBD" "e\xEF\xBF\xBD" "f\xEF\xBF\xBD");
    free(s);
    /* Valid multi-byte sequences pass: e-acute, the euro sign, an emoji. */
    s = escaped("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    assert_string_equal(s, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    free(s);
    /* Overlong '<' (C0 BC), a lone continuation byte, a surrogate, a byte past
     * U+10FFFF and a sequence cut short: each invalid byte is replaced, and an
     * overlong '<' never becomes a '<'. */
    s = escaped("x\xC0\xBCy\x80z\xED\xA0\x80w\xF5v\xE2\x82");
    assert_null(strchr(s, '<'));
    assert_string_equal(s, "x\xEF\xBF\xBD\xEF\xBF\xBDy\xEF\xBF\xBDz"
                           "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDw\xEF\xBF\xBDv"
                           "\xEF\xBF\xBD\xEF\xBF\xBD");
    free(s);
}

static void test_escape_truncates_like_snprintf(void **state)
{
    (void)state;
    char small[8];
    size_t need = ppb_html_escape("<<<<", small, sizeof small);
    assert_int_equal(need, 16);
    assert_string_equal(small, "&lt;");   /* the second entity does not fit whole */
    need = ppb_html_escape("abcdefghij", small, sizeof small);
    assert_int_equal(need, 10);
    assert_string_equal(small, "abcdefg");
    need = ppb_html_escape("abcd\xC3\xA9" "fg", small, sizeof small);
    assert_string_equal(small, "abcd\xC3\xA9" "f");
    ppb_html_escape("abcdef\xC3\xA9", small, sizeof small);
    assert_string_equal(small, "abcdef");   /* never half a character */
    assert_int_equal(ppb_html_escape(NULL, small, sizeof small), 0);
    assert_string_equal(small, "");
}

typedef struct page_args {
    const char *label, *key, *reason;
} page_args;

static void write_row(ppb_html *h, const void *arg)
{
    const page_args *a = arg;
    ppb_html_markup(h, "<tr");
    ppb_html_attr(h, "data-case-key", a->key);
    ppb_html_attrf(h, "id", "case-%d", 7);
    ppb_html_markup(h, ">");
    ppb_html_element(h, "td", a->label);
    ppb_html_element_class(h, "td", "reason", a->reason);
    ppb_html_markup(h, "<td>");
    ppb_html_textf(h, "%s took %.1f ms", a->label, 2.5);
    ppb_html_markup(h, "</td></tr>");
}

static void test_writer_escapes_text_and_attributes(void **state)
{
    (void)state;
    page_args a = {"<script>alert(1)</script>", "k\" onmouseover=\"alert(1)",
                   "\"><img src=x onerror=alert(1)>"};
    int rc = -1;
    char *out = render(write_row, &a, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(
        out, "<tr data-case-key=\"k&quot; onmouseover=&quot;alert(1)\" id=\"case-7\">"
             "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"
             "<td class=\"reason\">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td>"
             "<td>&lt;script&gt;alert(1)&lt;/script&gt; took 2.5 ms</td></tr>");
    free(out);
}

static void write_long(ppb_html *h, const void *arg)
{
    (void)arg;
    char big[3000];
    memset(big, '<', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ppb_html_textf(h, "[%s]", big);   /* longer than the writer's stack buffer */
}

static void test_textf_long_output(void **state)
{
    (void)state;
    char *out = render(write_long, NULL, NULL);
    assert_int_equal(strlen(out), 2 + 4 * 2999);
    assert_null(strchr(out, '<'));
    assert_int_equal(out[0], '[');
    free(out);
}

static void write_css(ppb_html *h, const void *arg)
{
    ppb_html_style_sheet(h, arg);
}

static void test_style_sheet_guard(void **state)
{
    (void)state;
    int rc = -1;
    char *out = render(write_css, "body { color: red; }", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "<style>\nbody { color: red; }</style>\n");
    free(out);
    out = render(write_css, "a{} </STYLE><script>alert(1)</script>", &rc);
    assert_int_equal(rc, PPB_EIO);   /* refused, and the page is marked failed */
    assert_null(strstr(out, "script"));
    free(out);
}

static void write_nothing_then_null(ppb_html *h, const void *arg)
{
    (void)arg;
    ppb_html_text(h, NULL);
    ppb_html_svg(h, NULL);
    ppb_html_attr(h, "title", NULL);
}

static void test_null_text(void **state)
{
    (void)state;
    char *out = render(write_nothing_then_null, NULL, NULL);
    assert_string_equal(out, " title=\"\"");
    free(out);
}

static void test_slug(void **state)
{
    (void)state;
    char buf[32];
    ppb_html_slug("Prefill Time #1", buf, sizeof buf);
    assert_string_equal(buf, "prefill-time-1");
    ppb_html_slug("<script>alert(1)</script>", buf, sizeof buf);
    assert_string_equal(buf, "script-alert-1-script");
    ppb_html_slug("--", buf, sizeof buf);
    assert_string_equal(buf, "x");
    ppb_html_slug(NULL, buf, sizeof buf);
    assert_string_equal(buf, "x");
    ppb_html_slug("nightly-decode", buf, 6);
    assert_string_equal(buf, "night");
    ppb_html_slug("a b", buf, 3);   /* no dangling dash at the end */
    assert_string_equal(buf, "a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_specials),
        cmocka_unit_test(test_escape_control_and_utf8),
        cmocka_unit_test(test_escape_truncates_like_snprintf),
        cmocka_unit_test(test_writer_escapes_text_and_attributes),
        cmocka_unit_test(test_textf_long_output),
        cmocka_unit_test(test_style_sheet_guard),
        cmocka_unit_test(test_null_text),
        cmocka_unit_test(test_slug),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
