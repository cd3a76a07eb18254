/* Baseline databases over HTTP (fetch.h). */
#include "fetch.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "http.h"
#include "stop_signals.h"
#include "store.h"
#include "store_internal.h"

#define MAX_BASELINE_BYTES (16LL << 30)

/* SQLite work on a baseline (a file from elsewhere) is bounded: the progress
 * handler runs every PROGRESS_OPS virtual-machine steps and ends the statement
 * (SQLITE_INTERRUPT) past the budget or once SIGINT/SIGTERM was caught. */
#define PROGRESS_OPS 10000
#define MAX_BASELINE_VM_STEPS 20000000000LL
#define MAX_BASELINE_VALUE_BYTES (64 << 20) /* one text or blob; a case's samples are far less */

/* The signal caught while a downloaded copy exists (0: none). The handler only
 * sets it; the download, the checks and the queries stop on it, the copy is
 * removed on the way out (ppb_fetch_release re-raises the signal after that). */
static volatile sig_atomic_t caught_signal;
static ppb_stop_signals catching;
static long long steps_left;

static void catch_signals(void)
{
    if (!catching.active)
        ppb_stop_signals_catch(&catching, &caught_signal);
}

static void restore_signals(int reraise)
{
    if (!catching.active)
        return;
    ppb_stop_signals_restore(&catching);
    if (reraise && caught_signal)
        raise(caught_signal);
}

static int on_progress(void *ctx)
{
    (void)ctx;
    steps_left -= PROGRESS_OPS;
    return caught_signal || steps_left < 0;
}

static void bound_work(sqlite3 *db)
{
    steps_left = MAX_BASELINE_VM_STEPS;
    sqlite3_progress_handler(db, PROGRESS_OPS, on_progress, NULL);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, MAX_BASELINE_VALUE_BYTES);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    /* Sorts and temporary results stay in memory, none in $TMPDIR files. */
    sqlite3_exec(db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
}

/* Why a step failed: the signal or the budget, else err as it is. */
static int interrupted(int rc, ppb_err *err)
{
    if (caught_signal)
        return ppb_fail(err, PPB_EINTR, "interrupted by signal %d (%s); the downloaded baseline was removed",
                        (int)caught_signal, strsignal(caught_signal));
    if (rc && steps_left < 0)
        return ppb_fail(err, PPB_EINPUT, "the baseline database takes more than %lld SQLite steps to read: refused",
                        MAX_BASELINE_VM_STEPS);
    return rc;
}

int ppb_fetch_is_url(const char *s)
{
    if (!s || !isalpha((unsigned char)*s))
        return 0;
    const char *p = s;
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    return strncmp(p, "://", 3) == 0;
}

static void remove_db_files(const char *path)
{
    char side[4096 + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

void ppb_fetch_release(const char *url_or_path, const char *local_path)
{
    if (!ppb_fetch_is_url(url_or_path) || !local_path || !*local_path ||
        strcmp(url_or_path, local_path) == 0)
        return;
    remove_db_files(local_path);
    restore_signals(1);
}

/* The download must be a SQLite file (magic header) that ppbench accepts and
 * whose pages are sound. ppb_store_open may migrate it: it is our copy. */
static int verify_download(const char *url, const char *path, ppb_err *err)
{
    static const char magic[16] = "SQLite format 3";
    char head[16] = {0};
    struct stat st;
    if (stat(path, &st) != 0)
        return ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    if (st.st_size == 0)
        return ppb_fail(err, PPB_EINPUT, "%s: not a ppbench database: the download is empty",
                        url);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    if (got != sizeof head || memcmp(head, magic, sizeof magic) != 0) {
        char shown[17];
        for (size_t i = 0; i < got && i < 16; i++)
            shown[i] = isprint((unsigned char)head[i]) ? head[i] : '.';
        shown[got < 16 ? got : 16] = '\0';
        return ppb_fail(err, PPB_EINPUT,
                        "%s: not a ppbench database: not a SQLite file (%lld bytes starting "
                        "\"%s\")",
                        url, (long long)st.st_size, shown);
    }
    ppb_store *s = NULL;
    ppb_err open_err = {{0}};
    if (ppb_store_open(&s, path, &open_err) != PPB_OK)
        return caught_signal ? interrupted(PPB_EINTR, err)
                             : ppb_fail(err, PPB_EINPUT, "%s: not a ppbench database: %s", url, open_err.msg);
    int rc = PPB_OK;
    sqlite3_stmt *stmt = NULL;
    sqlite3 *db = ppb_store_db(s);
    bound_work(db);
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &stmt, NULL) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_ROW) {
        rc = ppb_fail(err, PPB_EINPUT, "%s: damaged database: %s", url, sqlite3_errmsg(db));
    } else {
        const char *verdict = (const char *)sqlite3_column_text(stmt, 0);
        if (!verdict || strcmp(verdict, "ok") != 0)
            rc = ppb_fail(err, PPB_EINPUT, "%s: damaged database (quick_check: %s)", url,
                          verdict ? verdict : "no answer");
    }
    sqlite3_finalize(stmt);
    ppb_store_close(s);
    return interrupted(rc, err);
}

int ppb_fetch_baseline_db(const char *url_or_path, long timeout_s, char *local_path, size_t len, ppb_err *err)
{
    if (!url_or_path || !*url_or_path)
        return ppb_fail(err, PPB_EINPUT, "no baseline database given");
    if (!ppb_fetch_is_url(url_or_path)) {
        if (strlen(url_or_path) >= len)
            return ppb_fail(err, PPB_EINPUT, "path too long: %s", url_or_path);
        snprintf(local_path, len, "%s", url_or_path);
        return PPB_OK;
    }
    int rc = ppb_http_check_url(url_or_path, "http,https,file", err);
    if (rc)
        return rc;
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/ppbench-baseline-XXXXXX.db",
                     tmp && *tmp ? tmp : "/tmp");
    if (n >= (int)sizeof path || (size_t)n >= len)
        return ppb_fail(err, PPB_EINPUT, "temporary directory path too long");
    catch_signals();
    int fd = mkstemps(path, 3);
    if (fd < 0) {
        restore_signals(0);
        return ppb_fail(err, PPB_EIO, "cannot create a temporary file in %s: %s",
                        tmp && *tmp ? tmp : "/tmp", strerror(errno));
    }
    FILE *f = fdopen(fd, "w+b");
    if (!f) {
        rc = ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    ppb_http_options o;
    ppb_http_options_default(&o);
    o.timeout_s = timeout_s > 0 ? timeout_s : PPB_FETCH_DEFAULT_TIMEOUT_S;
    o.cacert = getenv("PPBENCH_CACERT");
    o.token = getenv("PPBENCH_BASELINE_TOKEN");
    o.stop = &caught_signal;
    ppb_http_result res;
    rc = ppb_http_request(&o, "GET", url_or_path, NULL, NULL, 0, f, MAX_BASELINE_BYTES, &res, err);
    if (fclose(f) != 0 && rc == PPB_OK)
        rc = ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    if (rc || (rc = interrupted(PPB_OK, err))) {
        ppb_err_prefix(err, "fetching the baseline database: ");
        goto fail;
    }
    if ((rc = verify_download(url_or_path, path, err)) != PPB_OK)
        goto fail;
    snprintf(local_path, len, "%s", path);
    return PPB_OK;
fail:
    remove_db_files(path);
    restore_signals(0);
    return rc;
}

int ppb_fetch_open_baseline(const char *url_or_path, long timeout_s, ppb_store **out, char *local_path,
                            size_t len, ppb_err *err)
{
    *out = NULL;
    local_path[0] = '\0';
    int rc = ppb_fetch_baseline_db(url_or_path, timeout_s, local_path, len, err);
    if (rc)
        return rc;
    if ((rc = ppb_store_open_readonly(out, local_path, err)) != PPB_OK) {
        if (strcmp(url_or_path, local_path) != 0)
            remove_db_files(local_path);
        local_path[0] = '\0';
        rc = interrupted(rc, err);
        restore_signals(0);
        return rc;
    }
    bound_work(ppb_store_db(*out));
    return PPB_OK;
}
