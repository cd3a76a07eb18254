/* Text in documents for people and machines (harness/core/doc_text.c): a
 * proposal name or a reason in a Markdown PR comment cannot open HTML, a link
 * or an image, hide text or break the table it sits in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"

/* What fn writes for s. */
static char *written(void (*fn)(FILE *, const char *), const char *s)
{
    static char buf[1024];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    fn(f, s);
    fclose(f);
    return buf;
}

/* Every character a JSON reader must not take literally is escaped; the common
 * control characters in their short form, as SQLite's JSON functions (which
 * wrote the run and verdict documents before) write them. */
static void test_json_strings_escape_what_they_must(void **state)
{
    (void)state;
    assert_string_equal(written(ppb_json_string, "quote \" backslash \\"), "\"quote \\\" backslash \\\\\"");
    assert_string_equal(written(ppb_json_string, "tab\tnl\ncr\rbs\bff\f"), "\"tab\\tnl\\ncr\\rbs\\bff\\f\"");
    assert_string_equal(written(ppb_json_string, "bell\a esc\x1b del\x7f \xc3\xbc"), "\"bell\\u0007 esc\\u001b del\x7f \xc3\xbc\"");
}

static void test_markdown_prose_is_inert(void **state)
{
    (void)state;
    assert_string_equal(written(ppb_md_text, "<script>alert(1)</script>"), "&lt;script&gt;alert\\(1\\)&lt;/script&gt;");
    assert_string_equal(written(ppb_md_text, "<img src=x onerror=alert(1)>"),
                        "&lt;img src=x onerror=alert\\(1\\)&gt;");
    assert_string_equal(written(ppb_md_text, "![x](http://h/i.png) [ok](javascript:x)"),
                        "\\!\\[x\\]\\(http://h/i.png\\) \\[ok\\]\\(javascript:x\\)");
    assert_string_equal(written(ppb_md_text, "a|b\nc\r`d` *e* _f_ ~g~ #h &i \\j"),
                        "a\\|b c \\`d\\` \\*e\\* \\_f\\_ \\~g\\~ \\#h &amp;i \\\\j");
    assert_string_equal(written(ppb_md_text, "esc\x1b[31mred\x07"), "esc?\\[31mred?");
    assert_string_equal(written(ppb_md_text, "plain text, 2.7% faster: 1.02x"), "plain text, 2.7% faster: 1.02x");
}

static void test_markdown_code_spans_stay_closed(void **state)
{
    (void)state;
    assert_string_equal(written(ppb_md_code, "prefix_prefill b=1 q=17"), "prefix_prefill b=1 q=17");
    assert_string_equal(written(ppb_md_code, "a`b|c\nd"), "a'b\\|c d");
}

/* Numbers for people stay short whatever the value (a degenerate interval once
 * printed 230 digits and cut the reason after it). */
static void test_numbers_stay_short(void **state)
{
    (void)state;
    char buf[64];
    ppb_format_fixed(buf, sizeof buf, 1.02345, 4);
    assert_string_equal(buf, "1.0234");
    ppb_format_fixed(buf, sizeof buf, -12.5, 1);
    assert_string_equal(buf, "-12.5");
    ppb_format_fixed(buf, sizeof buf, 3.1e200, 4);
    assert_string_equal(buf, "3.1e+200");
    ppb_format_fixed(buf, sizeof buf, -1e15, 1);
    assert_string_equal(buf, "-1e+15");
    ppb_format_fixed(buf, sizeof buf, 1.0 / 0.0, 1);
    assert_string_equal(buf, "inf");
    ppb_format_interval(buf, sizeof buf, 0.97, 1e-200, 4.2e230);
    assert_string_equal(buf, "0.9700 [0.0000, 4.2e+230]");
}

/* Wrapped at spaces within the width, every line after the first indented; a
 * word longer than a line stands alone, uncut. */
static void test_terminal_wrap(void **state)
{
    (void)state;
    char buf[512];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    ppb_term_wrap(f, "  why: ", 7, 24, "needs 41472 B shared  memory <= 49152 B per block; averyveryverylongwordindeed x");
    fclose(f);
    assert_string_equal(buf, "  why: needs 41472 B\n"
                             "       shared memory <=\n"
                             "       49152 B per\n"
                             "       block;\n"
                             "       averyveryverylongwordindeed\n"
                             "       x\n");
    f = fmemopen(buf, sizeof buf, "w");
    ppb_term_wrap(f, NULL, 2, 80, "short");
    fclose(f);
    assert_string_equal(buf, "  short\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_strings_escape_what_they_must),
        cmocka_unit_test(test_markdown_prose_is_inert),
        cmocka_unit_test(test_markdown_code_spans_stay_closed),
        cmocka_unit_test(test_numbers_stay_short),
        cmocka_unit_test(test_terminal_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
