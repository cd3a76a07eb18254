/* Unit tests for baseline databases by URL (harness/store/fetch.c): file:// URLs
 * and http from tests/e2e/fake_http.py on loopback. A good database is
 * downloaded to a temporary file that opens as a ppbench database; anything
 * else (empty, not SQLite, foreign SQLite, newer schema, HTTP errors) is
 * refused with a clear message and leaves no file behind. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "fetch.h"
#include "store.h"

typedef struct fixture {
    char dir[256];      /* inputs */
    char tmp[300];      /* $TMPDIR for the downloads: must end up empty */
    char good[512];
    pid_t server;
    int port;
    char plan[512];
} fixture;

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rm_tree(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static int files_in(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-fetch-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->tmp, sizeof f->tmp, "%s/tmp", f->dir);
    mkdir(f->tmp, 0700);
    setenv("TMPDIR", f->tmp, 1);
    snprintf(f->good, sizeof f->good, "%s/good.db", f->dir);
    ppb_store *s = NULL;
    ppb_err err;
    if (ppb_store_open(&s, f->good, &err) != PPB_OK)
        return -1;
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "baseline");
    if (ppb_store_begin_run(s, &run, &err) != PPB_OK)
        return -1;
    ppb_store_close(s); /* checkpointed: one self-contained file */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->server > 0) {
        kill(f->server, SIGTERM);
        waitpid(f->server, NULL, 0);
    }
    rm_tree(f->dir);
    unsetenv("TMPDIR");
    free(f);
    return 0;
}

static void file_url(const char *path, char *out, size_t len)
{
    snprintf(out, len, "file://%s", path);
}

static void expect_refused(fixture *f, const char *url, int code, const char *words)
{
    char local[4096] = "";
    ppb_err err = {{0}};
    int rc = ppb_fetch_baseline_db(url, 0, local, sizeof local, &err);
    if (rc != code)
        fail_msg("%s: got %d (%s), want %d", url, rc, err.msg, code);
    if (!strstr(err.msg, words))
        fail_msg("%s: message '%s' lacks '%s'", url, err.msg, words);
    assert_int_equal(files_in(f->tmp), 0); /* nothing left behind */
}

static void expect_fetched(fixture *f, const char *url)
{
    char local[4096] = "";
    ppb_err err = {{0}};
    if (ppb_fetch_baseline_db(url, 0, local, sizeof local, &err) != PPB_OK)
        fail_msg("%s: %s", url, err.msg);
    assert_string_not_equal(local, url);
    assert_int_equal(strncmp(local, f->tmp, strlen(f->tmp)), 0);
    ppb_store *s = NULL;
    assert_int_equal(ppb_store_open(&s, local, &err), PPB_OK);
    ppb_run_info run;
    assert_int_equal(ppb_store_get_run(s, 1, &run, &err), PPB_OK);
    assert_string_equal(run.suite_name, "baseline");
    ppb_store_close(s);
    ppb_fetch_release(url, local);
    assert_int_equal(files_in(f->tmp), 0);
}

static void test_is_url_and_paths(void **state)
{
    fixture *f = *state;
    assert_true(ppb_fetch_is_url("https://host/x.db"));
    assert_true(ppb_fetch_is_url("file:///tmp/x.db"));
    assert_false(ppb_fetch_is_url("/tmp/x.db"));
    assert_false(ppb_fetch_is_url("x.db"));
    assert_false(ppb_fetch_is_url("C:/x.db"));
    assert_false(ppb_fetch_is_url("://x"));
    /* a path is passed through untouched, and release leaves it alone */
    char local[4096];
    ppb_err err;
    assert_int_equal(ppb_fetch_baseline_db(f->good, 0, local, sizeof local, &err), PPB_OK);
    assert_string_equal(local, f->good);
    ppb_fetch_release(f->good, local);
    assert_int_equal(access(f->good, F_OK), 0);
    assert_int_equal(ppb_fetch_baseline_db("", 0, local, sizeof local, &err), PPB_EINPUT);
}

static void test_file_urls(void **state)
{
    fixture *f = *state;
    char url[1024], path[600];
    file_url(f->good, url, sizeof url);
    expect_fetched(f, url);

    snprintf(path, sizeof path, "%s/empty.db", f->dir);
    write_file(path, "", 0);
    file_url(path, url, sizeof url);
    expect_refused(f, url, PPB_EINPUT, "empty");

    snprintf(path, sizeof path, "%s/page.html", f->dir);
    const char *html = "<html><body>502 Bad Gateway</body></html>\n";
    write_file(path, html, strlen(html));
    file_url(path, url, sizeof url);
    expect_refused(f, url, PPB_EINPUT, "not a ppbench database: not a SQLite file");

    snprintf(path, sizeof path, "%s/foreign.db", f->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    file_url(path, url, sizeof url);
    expect_refused(f, url, PPB_EINPUT, "not a ppbench database");

    /* a ppbench database from a newer ppbench */
    snprintf(path, sizeof path, "%s/newer.db", f->dir);
    ppb_store *s = NULL;
    ppb_err err;
    assert_int_equal(ppb_store_open(&s, path, &err), PPB_OK);
    ppb_store_close(s);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    file_url(path, url, sizeof url);
    expect_refused(f, url, PPB_EINPUT, "newer");

    snprintf(path, sizeof path, "%s/missing.db", f->dir);
    file_url(path, url, sizeof url);
    expect_refused(f, url, PPB_EIO, "missing.db");

    expect_refused(f, "ftp://127.0.0.1/x.db", PPB_EINPUT, "not supported");
}

/* ---- over http, from the e2e tests' fake server ---------------------------- */

static int start_server(fixture *f)
{
    const char *src = getenv("PPB_SOURCE_DIR");
    char script[1024], port_file[600], log[600];
    snprintf(script, sizeof script, "%s/tests/e2e/fake_http.py", src ? src : PPB_SOURCE_DIR);
    snprintf(port_file, sizeof port_file, "%s/port", f->dir);
    snprintf(f->plan, sizeof f->plan, "%s/plan", f->dir);
    snprintf(log, sizeof log, "%s/log", f->dir);
    write_file(f->plan, "", 0);
    if (access("/usr/bin/python3", X_OK) != 0)
        return -1;
    f->server = fork();
    if (f->server == 0) {
        execl("/usr/bin/python3", "python3", script, "--port-file", port_file, "--plan", f->plan,
              "--log", log, "--serve-dir", f->dir, "--lifetime", "60", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        FILE *p = fopen(port_file, "r");
        if (p) {
            int ok = fscanf(p, "%d", &f->port) == 1;
            fclose(p);
            if (ok)
                return 0;
        }
        struct timespec t = {0, 25000000};
        nanosleep(&t, NULL);
    }
    return -1;
}

static void test_http(void **state)
{
    fixture *f = *state;
    if (start_server(f) != 0)
        skip(); /* no python3: the e2e tests cover http against the same server */
    char url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/good.db", f->port);
    expect_fetched(f, url);
    /* a transient 503, then the file: fetched on the retry (1 s backoff) */
    write_file(f->plan, "503 200", 7);
    expect_fetched(f, url);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/nothing-here.db", f->port);
    expect_refused(f, url, PPB_EIO, "HTTP 404");
    /* an error page with a 200 status is not a database */
    const char *html = "<html>login required</html>\n";
    char path[600];
    snprintf(path, sizeof path, "%s/login.html", f->dir);
    write_file(path, html, strlen(html));
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/login.html", f->port);
    expect_refused(f, url, PPB_EINPUT, "not a SQLite file");
    /* a 401 is not retried and says so */
    write_file(f->plan, "401 200", 7);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/good.db", f->port);
    expect_refused(f, url, PPB_EIO, "HTTP 401");
    /* a server that stalls past the limit: each try gives up, and the error says so */
    const char *stalls = "stall:3 stall:3 stall:3 stall:3"; /* one per try: the first and 3 retries */
    write_file(f->plan, stalls, strlen(stalls));
    char local[4096];
    ppb_err err = {{0}};
    assert_int_equal(ppb_fetch_baseline_db(url, 1, local, sizeof local, &err), PPB_EIO);
    assert_non_null(strstr(err.msg, "after 4 tries"));
    assert_non_null(strstr(err.msg, "imeout"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_is_url_and_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_urls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
