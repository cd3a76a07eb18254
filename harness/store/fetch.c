/* Baseline databases over HTTP (fetch.h). */
#include "fetch.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "http.h"
#include "store.h"
#include "store_internal.h"

#define MAX_BASELINE_BYTES (16LL << 30)

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
        return ppb_fail(err, PPB_EINPUT, "%s: not a ppbench database: %s", url, open_err.msg);
    int rc = PPB_OK;
    sqlite3_stmt *stmt = NULL;
    sqlite3 *db = ppb_store_db(s);
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
    return rc;
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
    int fd = mkstemps(path, 3);
    if (fd < 0)
        return ppb_fail(err, PPB_EIO, "cannot create a temporary file in %s: %s",
                        tmp && *tmp ? tmp : "/tmp", strerror(errno));
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
    ppb_http_result res;
    rc = ppb_http_request(&o, "GET", url_or_path, NULL, NULL, 0, f, MAX_BASELINE_BYTES, &res, err);
    if (fclose(f) != 0 && rc == PPB_OK)
        rc = ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    if (rc) {
        ppb_err_prefix(err, "fetching the baseline database: ");
        goto fail;
    }
    if ((rc = verify_download(url_or_path, path, err)) != PPB_OK)
        goto fail;
    snprintf(local_path, len, "%s", path);
    return PPB_OK;
fail:
    remove_db_files(path);
    return rc;
}
