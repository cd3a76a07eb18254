/* The YAML loader every parser shares (harness/core/yaml_util.c): what it
 * refuses before and while parsing, fast and in bounded memory, each with the
 * file and, where there is one, the line: a key given twice (the first would
 * win silently), a second document (it would be dropped), nesting past the
 * depth limit, a file past the size limit, something that is not a regular
 * file (a FIFO would block the read forever). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yaml_util.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ppb_yaml_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text, size_t len)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    return path;
}

/* Load `text`; return the error code and leave the message in err. */
static int load(const char *text, ppb_err *err)
{
    ppb_yaml y;
    int rc = ppb_yaml_load(&y, write_file("t.yaml", text, strlen(text)), err);
    ppb_yaml_free(&y);
    return rc;
}

static void test_accepts_a_plain_document(void **state)
{
    (void)state;
    ppb_err err = {{0}};
    assert_int_equal(load("name: a\nrules: {x: 1, y: [1, 2]}\nlist:\n  - {a: 1}\n  - {a: 2}\n", &err), PPB_OK);
    /* the same key in two different maps is no duplicate */
    assert_int_equal(load("a: {k: 1}\nb: {k: 2}\n", &err), PPB_OK);
}

static void test_duplicate_keys_name_both_lines(void **state)
{
    (void)state;
    ppb_err err = {{0}};
    assert_int_equal(load("name: p\nrules: {max_noise: 0.5}\nkind: x\nrules: {max_noise: 0.01}\n", &err),
                     PPB_EINPUT);
    assert_non_null(strstr(err.msg, "t.yaml:4:1: rules: given twice (first at line 2)"));
    /* nested maps too */
    assert_int_equal(load("a:\n  b: 1\n  c: 2\n  b: 3\n", &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, ":4:3: b: given twice"));
}

/* A message quoting hostile text stays one printable line (ppb_fail): the
 * escape sequence a key carries cannot reach the terminal. */
static void test_messages_carry_no_control_characters(void **state)
{
    (void)state;
    ppb_err err = {{0}};
    assert_int_equal(load("\"k\\e[2J\\a\": 1\n\"k\\e[2J\\a\": 2\n", &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "k?[2J?: given twice"));
    for (const char *p = err.msg; *p; p++)
        assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static void test_one_document_per_file(void **state)
{
    (void)state;
    ppb_err err = {{0}};
    assert_int_equal(load("a: 1\n---\nb: 2\n", &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "t.yaml:2:1: a second YAML document"));
    assert_int_equal(load("--- \na: 1\n", &err), PPB_OK); /* one explicit document is fine */
}

static void test_depth_limit(void **state)
{
    (void)state;
    ppb_err err = {{0}};
    /* at the limit: fine */
    char ok[2 * PPB_YAML_MAX_DEPTH + 2];
    memset(ok, '[', PPB_YAML_MAX_DEPTH);
    memset(ok + PPB_YAML_MAX_DEPTH, ']', PPB_YAML_MAX_DEPTH);
    ok[2 * PPB_YAML_MAX_DEPTH] = '\n';
    ok[2 * PPB_YAML_MAX_DEPTH + 1] = '\0';
    assert_int_equal(load(ok, &err), PPB_OK);
    /* 100 000 deep: refused at level limit + 1, without building the document */
    size_t n = 100000;
    char *deep = malloc(2 * n + 2);
    assert_non_null(deep);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\n';
    deep[2 * n + 1] = '\0';
    assert_int_equal(load(deep, &err), PPB_EINPUT);
    free(deep);
    assert_non_null(strstr(err.msg, "nested more than 64 levels deep"));
    assert_non_null(strstr(err.msg, ":1:65:")); /* where it stopped: at the limit, not the end */
}

static void test_size_limit(void **state)
{
    (void)state;
    size_t n = PPB_YAML_MAX_BYTES + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = 'a';
    big[1] = ':';
    ppb_yaml y;
    ppb_err err = {{0}};
    assert_int_equal(ppb_yaml_load(&y, write_file("big.yaml", big, n), &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "big.yaml: 1048577 bytes; a ppbench YAML file holds at most 1048576"));
    /* exactly at the limit: read */
    assert_int_equal(ppb_yaml_load(&y, write_file("edge.yaml", big, n - 1), &err), PPB_OK);
    ppb_yaml_free(&y);
    free(big);
}

static void test_not_a_regular_file(void **state)
{
    (void)state;
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo.yaml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    ppb_yaml y;
    ppb_err err = {{0}};
    assert_int_equal(ppb_yaml_load(&y, fifo, &err), PPB_EINPUT); /* returns, does not block */
    assert_non_null(strstr(err.msg, "fifo.yaml: not a regular file"));
    assert_int_equal(ppb_yaml_load(&y, dir, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "not a regular file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_a_plain_document),
        cmocka_unit_test(test_duplicate_keys_name_both_lines),
        cmocka_unit_test(test_messages_carry_no_control_characters),
        cmocka_unit_test(test_one_document_per_file),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_not_a_regular_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
