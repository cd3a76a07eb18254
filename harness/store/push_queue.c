/* The push queue's statements (push_queue.h). It reaches the connection through
 * store_internal.h like the store's own files: the queue is store state. */
#include "push_queue.h"

#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "store_internal.h"

static int fail_sql(sqlite3 *db, ppb_err *err, const char *what)
{
    return ppb_fail(err, PPB_EIO, "push queue: %s: %s", what, sqlite3_errmsg(db));
}

/* Prepare, bind (i = int64, t = text, in order) and step a statement that
 * returns no rows. `changes` gets sqlite3_changes when not NULL. */
static int exec_bound(sqlite3 *db, const char *sql, const char *types, const int64_t *ints,
                      const char *const *texts, int *changes, const char *what, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return fail_sql(db, err, what);
    int rc = PPB_OK, ni = 0, nt = 0;
    for (int i = 0; types[i]; i++) {
        int b = types[i] == 'i' ? sqlite3_bind_int64(stmt, i + 1, ints[ni++])
                                : sqlite3_bind_text(stmt, i + 1, texts[nt++], -1, SQLITE_TRANSIENT);
        if (b != SQLITE_OK) {
            rc = fail_sql(db, err, what);
            goto end;
        }
    }
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        if (sqlite3_extended_errcode(db) == SQLITE_CONSTRAINT_FOREIGNKEY)
            rc = ppb_fail(err, PPB_EINPUT, "push queue: %s: no such run", what);
        else
            rc = fail_sql(db, err, what);
        goto end;
    }
    if (changes)
        *changes = sqlite3_changes(db);
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_push_queue_record_failure(ppb_store *s, int64_t run_id, const char *url,
                                  const char *format, int tries, const char *error, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO push_queue(run_id, url, format, attempts, last_error, last_attempt_at)"
        " VALUES(?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))"
        " ON CONFLICT(run_id, url, format) DO UPDATE SET"
        "  attempts = attempts + excluded.attempts, last_error = excluded.last_error,"
        "  last_attempt_at = excluded.last_attempt_at";
    int64_t ints[] = {run_id, tries};
    const char *texts[] = {url, format, error ? error : ""};
    return exec_bound(ppb_store_db(s), sql, "ittit", ints, texts, NULL, "queueing a push", err);
}

int ppb_push_queue_forget(ppb_store *s, int64_t run_id, const char *url, const char *format,
                          ppb_err *err)
{
    int64_t ints[] = {run_id};
    const char *texts[] = {url, format};
    return exec_bound(ppb_store_db(s),
                      "DELETE FROM push_queue WHERE run_id = ?1 AND url = ?2 AND format = ?3",
                      "itt", ints, texts, NULL, "removing a sent push", err);
}

int ppb_push_queue_drop(ppb_store *s, int64_t id, ppb_err *err)
{
    int64_t ints[] = {id};
    int changes = 0;
    int rc = exec_bound(ppb_store_db(s), "DELETE FROM push_queue WHERE id = ?1", "i", ints, NULL,
                        &changes, "dropping a queued push", err);
    if (rc == PPB_OK && changes == 0)
        rc = ppb_fail(err, PPB_EINPUT, "no queued push %lld", (long long)id);
    return rc;
}

static void copy_text(sqlite3_stmt *st, int col, char *buf, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

int ppb_push_queue_each(ppb_store *s, ppb_push_pending_visitor fn, void *ctx, ppb_err *err)
{
    static const char sql[] =
        "SELECT id, run_id, url, format, created_at, attempts, last_error,"
        " COALESCE(last_attempt_at, '') FROM push_queue ORDER BY id";
    sqlite3 *db = ppb_store_db(s);
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return fail_sql(db, err, "reading the queue");
    int rc = PPB_OK, step;
    ppb_push_pending p;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        memset(&p, 0, sizeof p);
        p.id = sqlite3_column_int64(stmt, 0);
        p.run_id = sqlite3_column_int64(stmt, 1);
        copy_text(stmt, 2, p.url, sizeof p.url);
        copy_text(stmt, 3, p.format, sizeof p.format);
        copy_text(stmt, 4, p.created_at, sizeof p.created_at);
        p.attempts = sqlite3_column_int(stmt, 5);
        copy_text(stmt, 6, p.last_error, sizeof p.last_error);
        copy_text(stmt, 7, p.last_attempt_at, sizeof p.last_attempt_at);
        int v = fn(ctx, &p);
        if (v != 0) {
            rc = v > 0 ? PPB_OK : v;
            goto end;
        }
    }
    if (step != SQLITE_DONE)
        rc = fail_sql(db, err, "reading the queue");
end:
    sqlite3_finalize(stmt);
    return rc;
}
