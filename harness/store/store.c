/* The results database: every SQL statement of ppbench lives here (and the
 * schema in store_schema.c). Layout, migrations and resume: docs/STORE.md.
 *
 * Durability. The connection runs in WAL mode with synchronous=NORMAL. A
 * transaction is committed once its frames (and the commit frame) have been
 * written to the -wal file; with NORMAL that write is not fsync'ed, but it is
 * in the kernel's page cache, which survives the death of the process (kill -9,
 * a segfault in a kernel, the OOM killer). So a case whose put_result returned
 * survives the process; a transaction that was open when the process died has
 * no commit frame and is ignored when the WAL is next read. Only a power loss
 * or OS crash can roll back the last few commits (never corrupt the file), and
 * --resume re-runs those cases, so FULL (an fsync per case) buys nothing here.
 *
 * Every value reaches SQL through a bound parameter. The only SQL text formed
 * at run time is PRAGMA user_version / application_id with internal integer
 * constants (PRAGMA cannot take parameters). */
#include "store.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "store_internal.h"

#include "doc_text.h"

/* UPSERT needs 3.24; checkpoint-on-close control 3.16; the JSON functions must
 * be compiled in (they are by default, and built in from 3.38). RETURNING
 * (3.35) is avoided so older cluster distributions (RHEL 8: 3.26) still work. */
#if SQLITE_VERSION_NUMBER < 3024000
#error "ppbench needs SQLite 3.24 or newer"
#endif
#ifndef SQLITE_INNOCUOUS
#define SQLITE_INNOCUOUS 0
#endif

struct ppb_store {
    sqlite3 *db;
    char path[4096];
    ppb_store_commit_hook commit_hook;
    void *commit_hook_ctx;
};

/* ---- the case field columns -------------------------------------------------
 * One column per case field, named as in case.c's field table; values are bound
 * by name (":" + field name), so a field without a column is an error at the
 * first put, not a silent drop. A new field in case.h needs a migration step
 * that adds its column, and then this list and the count below. */
#define CASE_FIELD_COLUMNS(X)                                                                    \
    X(batch) X(query_len) X(context_len) X(seq_len) X(ragged) X(num_heads) X(num_kv_heads)      \
    X(head_dim) X(dtype) X(page_size) X(sliding_window) X(block_m) X(block_n) X(num_warps)     \
    X(version) X(num_threads) X(partition_size) X(host_partition_size) X(path) X(impl)

#define COUNT_ONE(name) +1
_Static_assert(0 CASE_FIELD_COLUMNS(COUNT_ONE) == PPB_F_COUNT,
               "a case field was added to case.h: add a migration step with its column to "
               "store_schema.c and the column to CASE_FIELD_COLUMNS in store.c");

#define FIELD_NAME_LIST(name) ", " #name
#define FIELD_PARAM_LIST(name) ", :" #name
#define FIELD_SELECT_LIST(name) ", c." #name
#define FIELD_JSON_PAIR(name) ", '" #name "', c." #name

/* ---- the result columns -----------------------------------------------------
 * (type, column, member of ppb_result). Insert, read-back and CSV export all
 * expand this one list, so they cannot disagree on a column. status, reason
 * and weight are handled by hand (text status, weight from the case). */
#define RESULT_COLUMNS(X)                                                                        \
    X(INT, timing_is_cpu, timing_is_cpu)                                                         \
    X(INT, n_samples, n_samples)                                                                 \
    X(INT, dropped_throttled, dropped_throttled)                                                 \
    X(INT, batch_launches, batch_launches)                                                       \
    X(REAL, median_ms, median_ms)                                                                \
    X(REAL, mean_ms, mean_ms)                                                                    \
    X(REAL, stdev_ms, stdev_ms)                                                                  \
    X(REAL, min_ms, min_ms)                                                                      \
    X(REAL, max_ms, max_ms)                                                                      \
    X(REAL, q1_ms, q1_ms)                                                                        \
    X(REAL, q3_ms, q3_ms)                                                                        \
    X(REAL, rel_noise, rel_noise)                                                                \
    X(REAL, tflops, tflops)                                                                      \
    X(REAL, gbps, gbps)                                                                          \
    X(INT, check_checked, check.checked)                                                         \
    X(INT, check_pass, check.pass)                                                               \
    X(REAL, check_max_abs_err, check.max_abs_err)                                                \
    X(REAL, check_rel_l2_err, check.rel_l2_err)                                                  \
    X(LONG, check_rows_checked, check.rows_checked)                                              \
    X(LONG, check_rows_total, check.rows_total)                                                  \
    X(LONG, check_nonfinite, check.nonfinite)                                                    \
    X(LONG, check_unwritten, check.unwritten)                                                    \
    X(REAL, check_atol, check.atol)                                                              \
    X(REAL, check_rtol, check.rtol)                                                              \
    X(INT, overrun_detected, overrun.detected)                                                   \
    X(LLONG, overrun_tmp_out_bytes, overrun.tmp_out_bytes)                                       \
    X(LLONG, overrun_exp_sums_bytes, overrun.exp_sums_bytes)                                     \
    X(LLONG, overrun_max_logits_bytes, overrun.max_logits_bytes)                                 \
    X(LLONG, overrun_guard_bytes_changed, overrun.guard_bytes_changed)                           \
    X(INT, resources_known, resources.known)                                                     \
    X(INT, resources_registers, resources.registers)                                             \
    X(INT, resources_static_smem, resources.static_smem)                                         \
    X(INT, resources_dynamic_smem, resources.dynamic_smem)                                       \
    X(INT, resources_local_bytes, resources.local_bytes)                                         \
    X(INT, resources_max_threads, resources.max_threads)

#define RESULT_NAME_LIST(type, col, member) ", " #col
#define RESULT_PARAM_LIST(type, col, member) ", :" #col
#define RESULT_SELECT_LIST(type, col, member) ", r." #col

static const char *const run_statuses[] = {"running", "complete", "interrupted", "failed"};

/* ---- small helpers ------------------------------------------------------- */

/* A lock held past busy_timeout, a full disk, a read-only file: all PPB_EIO. */
static int sqlite_fail(ppb_store *s, ppb_err *err, const char *what)
{
    return ppb_fail(err, PPB_EIO, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int prepare(ppb_store *s, const char *sql, sqlite3_stmt **stmt, ppb_err *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, stmt, NULL) != SQLITE_OK) {
        *stmt = NULL;
        return sqlite_fail(s, err, "preparing a statement");
    }
    return PPB_OK;
}

/* Bind by parameter name so statements and binders cannot drift apart. */
static int param_index(sqlite3_stmt *stmt, const char *name, ppb_err *err)
{
    int i = sqlite3_bind_parameter_index(stmt, name);
    if (i == 0)
        ppb_fail(err, PPB_EFAIL, "store: statement has no parameter %s", name);
    return i;
}

static int bind_i64(sqlite3_stmt *stmt, const char *name, long long v, ppb_err *err)
{
    int i = param_index(stmt, name, err);
    if (i == 0 || sqlite3_bind_int64(stmt, i, v) != SQLITE_OK)
        return i == 0 ? PPB_EFAIL : ppb_fail(err, PPB_EFAIL, "store: cannot bind %s", name);
    return PPB_OK;
}

/* NaN binds as NULL (what SQLite would store anyway) and reads back as NaN. */
static int bind_real(sqlite3_stmt *stmt, const char *name, double v, ppb_err *err)
{
    int i = param_index(stmt, name, err);
    int rc = i == 0 ? SQLITE_ERROR : isnan(v) ? sqlite3_bind_null(stmt, i)
                                               : sqlite3_bind_double(stmt, i, v);
    if (rc != SQLITE_OK)
        return i == 0 ? PPB_EFAIL : ppb_fail(err, PPB_EFAIL, "store: cannot bind %s", name);
    return PPB_OK;
}

/* Text from a fixed-size buffer that might lack its terminator. */
static int bind_text_n(sqlite3_stmt *stmt, const char *name, const char *v, size_t cap,
                       ppb_err *err)
{
    int i = param_index(stmt, name, err);
    if (i == 0)
        return PPB_EFAIL;
    if (sqlite3_bind_text(stmt, i, v, (int)strnlen(v, cap), SQLITE_TRANSIENT) != SQLITE_OK)
        return ppb_fail(err, PPB_EFAIL, "store: cannot bind %s", name);
    return PPB_OK;
}

static int bind_text(sqlite3_stmt *stmt, const char *name, const char *v, ppb_err *err)
{
    return bind_text_n(stmt, name, v, strlen(v) + 1, err);
}

#define bind_INT bind_i64
#define bind_LONG bind_i64
#define bind_LLONG bind_i64
#define bind_REAL bind_real

static void read_INT(sqlite3_stmt *st, int col, int *out) { *out = sqlite3_column_int(st, col); }
static void read_LONG(sqlite3_stmt *st, int col, long *out)
{
    *out = (long)sqlite3_column_int64(st, col);
}
static void read_LLONG(sqlite3_stmt *st, int col, long long *out)
{
    *out = (long long)sqlite3_column_int64(st, col);
}
static void read_REAL(sqlite3_stmt *st, int col, double *out)
{
    *out = sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

static void copy_column_text(sqlite3_stmt *st, int col, char *buf, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

/* SQL function ppb_json_number(x): a REAL as JSON number text that round-trips
 * exactly (SQLite's own JSON rendering keeps 15 digits and writes Inf, which is
 * not JSON); NULL, NaN and infinities become null. Wrapped in json() by the
 * export query so json_object embeds it as a number. */
static void sql_json_number(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    char buf[64];
    switch (sqlite3_value_type(argv[0])) {
    case SQLITE_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)sqlite3_value_int64(argv[0]));
        break;
    case SQLITE_FLOAT: {
        double x = sqlite3_value_double(argv[0]);
        if (isfinite(x))
            ppb_format_double_exact(x, buf, sizeof buf);
        else
            snprintf(buf, sizeof buf, "null");
        break;
    }
    default:
        snprintf(buf, sizeof buf, "null");
        break;
    }
    sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

static int exec_sql(ppb_store *s, const char *sql, const char *what, ppb_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ppb_fail(err, PPB_EIO, "%s: %s: %s", s->path, what, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return PPB_EIO;
    }
    return PPB_OK;
}

/* Undo an open transaction after a failure; the error already says why. */
static void rollback_if_open(ppb_store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* A visitor's non-zero return ends a walk: > 0 means "done early" (success),
 * < 0 is an error code the visitor chose, passed up as is. */
static int visitor_stop(int visitor_rc) { return visitor_rc > 0 ? PPB_OK : visitor_rc; }

/* A single integer from a statement without parameters (pragmas, counts). */
static int query_int(ppb_store *s, const char *sql, long long *out, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if (sqlite3_step(stmt) != SQLITE_ROW) {
        rc = sqlite_fail(s, err, sql);
        goto end;
    }
    *out = sqlite3_column_int64(stmt, 0);
end:
    sqlite3_finalize(stmt);
    return rc;
}

static int run_exists(ppb_store *s, int64_t run_id, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, "SELECT 1 FROM runs WHERE id = :id", &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":id", run_id, err)) != PPB_OK)
        goto end;
    int step = sqlite3_step(stmt);
    if (step == SQLITE_DONE)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
    else if (step != SQLITE_ROW)
        rc = sqlite_fail(s, err, "looking up a run");
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* ---- open, inspect, migrate ------------------------------------------------ */

/* Decide whether the file may be written to, reading only. Called before any
 * statement that writes (journal_mode=WAL rewrites the header), with checkpoint
 * on close turned off, so a refused file is left exactly as it was. */
static int inspect_existing(ppb_store *s, int target, long long *version, ppb_err *err)
{
    long long app_id = 0, n_objects = 0;
    if (query_int(s, "PRAGMA application_id", &app_id, err) != PPB_OK) {
        int code = sqlite3_errcode(s->db) & 0xff; /* primary code */
        if (code == SQLITE_NOTADB)
            return ppb_fail(err, PPB_EINPUT,
                            "%s is not a SQLite database; refusing to use it as a ppbench "
                            "database (left untouched)",
                            s->path);
        if (code == SQLITE_CORRUPT)
            return ppb_fail(err, PPB_EINPUT, "%s is a damaged SQLite database (left untouched)",
                            s->path);
        return PPB_EIO;
    }
    if (query_int(s, "PRAGMA user_version", version, err) != PPB_OK ||
        query_int(s, "SELECT count(*) FROM sqlite_master", &n_objects, err) != PPB_OK)
        return PPB_EIO;

    if ((uint32_t)app_id == PPB_STORE_APPLICATION_ID) {
        if (*version > target)
            return ppb_fail(err, PPB_EINPUT,
                            "%s has ppbench schema version %lld, newer than this ppbench knows "
                            "(%d); use a newer ppbench (file left untouched)",
                            s->path, *version, target);
        if (*version < 1)
            return ppb_fail(err, PPB_EINPUT,
                            "%s is marked as a ppbench database but has no schema version; "
                            "refusing to touch it",
                            s->path);
        return PPB_OK;
    }
    if (app_id == 0 && n_objects == 0 && *version == 0)
        return PPB_OK; /* an empty SQLite database: ours to initialise */
    return ppb_fail(err, PPB_EINPUT,
                    "%s is a SQLite database but not a ppbench database (application_id "
                    "0x%08llx, %lld schema objects); refusing to touch it",
                    s->path, (unsigned long long)(uint32_t)app_id, n_objects);
}

static int migrate(ppb_store *s, long long version, int target, ppb_err *err)
{
    if (version >= target)
        return PPB_OK;
    for (int i = 0; i < ppb_store_migration_count; i++) {
        const ppb_store_migration *step = &ppb_store_migrations[i];
        if (step->version > target)
            break;
        /* IMMEDIATE: take the write lock before reading the version, so two
         * processes opening the same new file cannot both apply a step. */
        int rc = exec_sql(s, "BEGIN IMMEDIATE", "starting a migration", err);
        if (rc)
            return rc;
        long long now = 0;
        if ((rc = query_int(s, "PRAGMA user_version", &now, err)) != PPB_OK)
            goto fail;
        if (now >= step->version) {
            rc = exec_sql(s, "COMMIT", "ending a migration", err);
            if (rc)
                goto fail;
            continue;
        }
        if (now != step->version - 1) {
            rc = ppb_fail(err, PPB_EFAIL, "%s: schema version %lld cannot be migrated by step %d",
                          s->path, now, step->version);
            goto fail;
        }
        char pragma[96];
        if ((rc = exec_sql(s, step->sql, step->summary, err)) != PPB_OK)
            goto fail;
        if (step->version == 1) {
            snprintf(pragma, sizeof pragma, "PRAGMA application_id = %d",
                     (int)PPB_STORE_APPLICATION_ID);
            if ((rc = exec_sql(s, pragma, "marking the database", err)) != PPB_OK)
                goto fail;
        }
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", step->version);
        if ((rc = exec_sql(s, pragma, "recording the schema version", err)) != PPB_OK ||
            (rc = exec_sql(s, "COMMIT", "committing a migration", err)) != PPB_OK)
            goto fail;
        continue;
    fail:
        rollback_if_open(s);
        ppb_err_prefix(err, "migrating to schema version %d (%s): ", step->version,
                       step->summary);
        return rc;
    }
    return PPB_OK;
}

static int check_migration_table(int target, ppb_err *err)
{
    if (ppb_store_migration_count != PPB_STORE_SCHEMA_VERSION)
        return ppb_fail(err, PPB_EFAIL, "store: %d migration steps for schema version %d",
                        ppb_store_migration_count, PPB_STORE_SCHEMA_VERSION);
    for (int i = 0; i < ppb_store_migration_count; i++)
        if (ppb_store_migrations[i].version != i + 1)
            return ppb_fail(err, PPB_EFAIL, "store: migration step %d is out of order", i);
    if (target < 1 || target > PPB_STORE_SCHEMA_VERSION)
        return ppb_fail(err, PPB_EINPUT, "store: no schema version %d", target);
    return PPB_OK;
}

int ppb_store_open_at_version(ppb_store **out, const char *path, int target, ppb_err *err)
{
    *out = NULL;
    if (!path || !*path)
        return ppb_fail(err, PPB_EINPUT, "no database path given");
    int rc = check_migration_table(target, err);
    if (rc)
        return rc;
    ppb_store *s = calloc(1, sizeof *s);
    if (!s)
        return ppb_fail(err, PPB_ENOMEM, "out of memory opening %s", path);
    if (strlen(path) >= sizeof s->path) {
        free(s);
        return ppb_fail(err, PPB_EINPUT, "database path too long: %s", path);
    }
    strcpy(s->path, path);

    /* Only a path that does not exist yet may be created; an existing file is
     * opened without SQLITE_OPEN_CREATE and inspected before anything writes. */
    struct stat st;
    int fresh = stat(path, &st) != 0 && errno == ENOENT;
    int flags = SQLITE_OPEN_READWRITE | (fresh ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        rc = ppb_fail(err, PPB_EIO, "cannot %s database %s: %s", fresh ? "create" : "open",
                      path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    /* The file may come from elsewhere (a fetched baseline, a merge source):
     * its triggers and views may not call functions with side effects, and
     * its schema cannot be rewritten by hand (docs/SECURITY.md). */
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    /* Closing the last connection to a WAL database checkpoints into the main
     * file; a refused foreign WAL database must not be written that way. */
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    /* Wait for another writer (a second shard, a concurrent export) rather than
     * failing at once. */
    sqlite3_busy_timeout(s->db, 5000);

    long long version = 0;
    if ((rc = inspect_existing(s, target, &version, err)) != PPB_OK)
        goto fail;
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int *)NULL);

    long long on = 0;
    if ((rc = exec_sql(s, "PRAGMA foreign_keys = ON", "enabling foreign keys", err)) != PPB_OK ||
        (rc = query_int(s, "PRAGMA foreign_keys", &on, err)) != PPB_OK)
        goto fail;
    if (!on) {
        rc = ppb_fail(err, PPB_EFAIL, "%s: this SQLite has no foreign key support", path);
        goto fail;
    }
    /* WAL: readers never block the writer, and a commit is one append to the
     * -wal file (see the durability note at the top). No silent fallback: a
     * file system without shared memory (NFS) keeps the old mode, and we say so. */
    sqlite3_stmt *stmt = NULL;
    if ((rc = prepare(s, "PRAGMA journal_mode = WAL", &stmt, err)) != PPB_OK)
        goto fail;
    char mode[16] = "";
    if (sqlite3_step(stmt) == SQLITE_ROW)
        copy_column_text(stmt, 0, mode, sizeof mode);
    sqlite3_finalize(stmt);
    int in_memory = strcmp(path, ":memory:") == 0 && strcmp(mode, "memory") == 0;
    if (strcmp(mode, "wal") != 0 && !in_memory) {
        rc = ppb_fail(err, PPB_EIO,
                      "%s: cannot switch to WAL journal mode (got '%s': %s); use a local file "
                      "system",
                      path, mode, sqlite3_errmsg(s->db));
        goto fail;
    }
    if ((rc = exec_sql(s, "PRAGMA synchronous = NORMAL", "setting synchronous", err)) != PPB_OK)
        goto fail;
    if (sqlite3_create_function_v2(s->db, "ppb_json_number", 1,
                                   SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                   sql_json_number, NULL, NULL, NULL) != SQLITE_OK) {
        rc = sqlite_fail(s, err, "registering ppb_json_number");
        goto fail;
    }
    if ((rc = migrate(s, version, target, err)) != PPB_OK)
        goto fail;
    *out = s;
    return PPB_OK;
fail:
    sqlite3_close(s->db);
    free(s);
    return rc;
}

int ppb_store_open(ppb_store **out, const char *path, ppb_err *err)
{
    return ppb_store_open_at_version(out, path, PPB_STORE_SCHEMA_VERSION, err);
}

void ppb_store_close(ppb_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s);
}

const char *ppb_store_default_path(const char *option)
{
    if (option && *option)
        return option;
    const char *env = getenv("PPBENCH_DB");
    if (env && *env)
        return env;
    return PPB_DEFAULT_DB;
}

void ppb_store_set_commit_hook(ppb_store *s, ppb_store_commit_hook hook, void *ctx)
{
    s->commit_hook = hook;
    s->commit_hook_ctx = ctx;
}

sqlite3 *ppb_store_db(ppb_store *s) { return s->db; }

/* ---- runs and env ---------------------------------------------------------- */

static int valid_run_status(const char *status)
{
    for (size_t i = 0; i < sizeof run_statuses / sizeof *run_statuses; i++)
        if (strcmp(status, run_statuses[i]) == 0)
            return 1;
    return 0;
}

int ppb_store_begin_run(ppb_store *s, ppb_run_info *run, ppb_err *err)
{
    char status[sizeof run->status];
    snprintf(status, sizeof status, "%.*s", (int)strnlen(run->status, sizeof run->status),
             run->status);
    if (status[0] && !valid_run_status(status))
        return ppb_fail(err, PPB_EINPUT, "unknown run status '%s'", status);
    static const char sql[] =
        "INSERT INTO runs(suite_path, suite_name, suite_hash, git_commit, host, backend, device,"
        " target, label, started_at, status, args, n_cases, shard_index, shard_count, run_group)"
        " VALUES(:suite_path, :suite_name, :suite_hash, :git_commit, :host, :backend, :device,"
        " :target, :label,"
        " COALESCE(NULLIF(:started_at, ''), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),"
        " COALESCE(NULLIF(:status, ''), 'running'), :args, :n_cases, :shard_index, :shard_count,"
        " :run_group)";
    /* A shard is the first part of the run its group's shards fold into (merge.c). */
    static const char own_part[] =
        "INSERT INTO run_parts(run_id, uid, shard_index, host)"
        " SELECT id, uid, shard_index, host FROM runs WHERE id = :id AND shard_count > 0";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
#define BIND_RUN_TEXT(field) bind_text_n(stmt, ":" #field, run->field, sizeof run->field, err)
    if ((rc = BIND_RUN_TEXT(suite_path)) || (rc = BIND_RUN_TEXT(suite_name)) ||
        (rc = BIND_RUN_TEXT(suite_hash)) || (rc = BIND_RUN_TEXT(git_commit)) ||
        (rc = BIND_RUN_TEXT(host)) || (rc = BIND_RUN_TEXT(backend)) ||
        (rc = BIND_RUN_TEXT(device)) || (rc = BIND_RUN_TEXT(target)) ||
        (rc = BIND_RUN_TEXT(label)) || (rc = BIND_RUN_TEXT(started_at)) ||
        (rc = BIND_RUN_TEXT(status)) || (rc = BIND_RUN_TEXT(args)) ||
        (rc = bind_i64(stmt, ":n_cases", run->n_cases, err)) ||
        (rc = bind_i64(stmt, ":shard_index", run->shard_index, err)) ||
        (rc = bind_i64(stmt, ":shard_count", run->shard_count, err)) || (rc = BIND_RUN_TEXT(run_group)))
        goto end;
#undef BIND_RUN_TEXT
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(s, err, "recording a new run");
        goto end;
    }
    /* Read back what the database filled in (the id, a default start time). */
    int64_t id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(stmt);
    stmt = NULL;
    if ((rc = prepare(s, own_part, &stmt, err)) || (rc = bind_i64(stmt, ":id", id, err)))
        goto end;
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(s, err, "recording a shard");
        goto end;
    }
    rc = ppb_store_get_run(s, id, run, err);
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_finish_run(ppb_store *s, int64_t run_id, const char *status, ppb_err *err)
{
    if (!status || !valid_run_status(status))
        return ppb_fail(err, PPB_EINPUT,
                        "unknown run status '%s' (running, complete, interrupted, failed)",
                        status ? status : "(null)");
    static const char sql[] =
        "UPDATE runs SET status = :status,"
        " finished_at = CASE WHEN :status = 'running' THEN NULL"
        "                    ELSE strftime('%Y-%m-%dT%H:%M:%SZ', 'now') END"
        " WHERE id = :id";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_text(stmt, ":status", status, err)) || (rc = bind_i64(stmt, ":id", run_id, err)))
        goto end;
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(s, err, "finishing a run");
        goto end;
    }
    if (sqlite3_changes(s->db) == 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_put_env(ppb_store *s, int64_t run_id, const char *key, const char *value,
                      ppb_err *err)
{
    if (!key || !*key || !value)
        return ppb_fail(err, PPB_EINPUT, "env entry needs a key and a value");
    static const char sql[] = "INSERT INTO env(run_id, key, value) VALUES(:run_id, :key, :value)"
                              " ON CONFLICT(run_id, key) DO UPDATE SET value = excluded.value";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, err)) || (rc = bind_text(stmt, ":key", key, err)) ||
        (rc = bind_text(stmt, ":value", value, err)))
        goto end;
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        if (sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
            rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
        else
            rc = sqlite_fail(s, err, "storing an env entry");
    }
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_each_env(ppb_store *s, int64_t run_id, ppb_env_visitor fn, void *ctx, ppb_err *err)
{
    int rc = run_exists(s, run_id, err);
    if (rc)
        return rc;
    sqlite3_stmt *stmt = NULL;
    if ((rc = prepare(s, "SELECT key, value FROM env WHERE run_id = :run_id ORDER BY rowid",
                      &stmt, err)) != PPB_OK)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, err)) != PPB_OK)
        goto end;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(stmt, 0);
        const char *v = (const char *)sqlite3_column_text(stmt, 1);
        if ((rc = fn(ctx, k ? k : "", v ? v : "")) != 0) {
            rc = visitor_stop(rc);
            goto end;
        }
    }
    if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, "reading env");
end:
    sqlite3_finalize(stmt);
    return rc;
}

#define RUN_SELECT                                                                               \
    "SELECT id, suite_path, suite_name, suite_hash, git_commit, host, backend, device, target,"  \
    " label, started_at, finished_at, status, args, n_cases,"                                    \
    " (SELECT count(*) FROM results WHERE results.run_id = runs.id),"                             \
    " shard_index, shard_count, run_group,"                                                      \
    " (SELECT count(*) FROM run_parts WHERE run_parts.run_id = runs.id) FROM runs"

static void read_run_row(sqlite3_stmt *st, ppb_run_info *run)
{
    memset(run, 0, sizeof *run);
    int i = 0;
    run->id = sqlite3_column_int64(st, i++);
#define READ_RUN_TEXT(field) copy_column_text(st, i++, run->field, sizeof run->field)
    READ_RUN_TEXT(suite_path);
    READ_RUN_TEXT(suite_name);
    READ_RUN_TEXT(suite_hash);
    READ_RUN_TEXT(git_commit);
    READ_RUN_TEXT(host);
    READ_RUN_TEXT(backend);
    READ_RUN_TEXT(device);
    READ_RUN_TEXT(target);
    READ_RUN_TEXT(label);
    READ_RUN_TEXT(started_at);
    READ_RUN_TEXT(finished_at);
    READ_RUN_TEXT(status);
    READ_RUN_TEXT(args);
#undef READ_RUN_TEXT
    run->n_cases = sqlite3_column_int(st, i++);
    run->n_done = sqlite3_column_int(st, i++);
    run->shard_index = sqlite3_column_int(st, i++);
    run->shard_count = sqlite3_column_int(st, i++);
    copy_column_text(st, i++, run->run_group, sizeof run->run_group);
    run->n_shards = sqlite3_column_int(st, i++);
}

int ppb_store_get_run(ppb_store *s, int64_t run_id, ppb_run_info *run, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, RUN_SELECT " WHERE id = :id", &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":id", run_id, err)) != PPB_OK)
        goto end;
    int step = sqlite3_step(stmt);
    if (step == SQLITE_ROW)
        read_run_row(stmt, run);
    else if (step == SQLITE_DONE)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
    else
        rc = sqlite_fail(s, err, "reading a run");
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_each_run(ppb_store *s, ppb_run_visitor fn, void *ctx, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, RUN_SELECT " ORDER BY id DESC", &stmt, err);
    if (rc)
        return rc;
    ppb_run_info *run = malloc(sizeof *run); /* ~6 KiB: keep it off the stack */
    if (!run) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory listing runs");
        goto end;
    }
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        read_run_row(stmt, run);
        if ((rc = fn(ctx, run)) != 0) {
            rc = visitor_stop(rc);
            goto end;
        }
    }
    if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, "listing runs");
end:
    free(run);
    sqlite3_finalize(stmt);
    return rc;
}

/* The newest id a query returns (0 when none, PPB_EIO on a database error). */
static int64_t latest_id(ppb_store *s, const char *sql)
{
    long long id = 0;
    ppb_err ignored;
    return query_int(s, sql, &id, &ignored) == PPB_OK ? id : PPB_EIO;
}

int64_t ppb_store_latest_run(ppb_store *s)
{
    return latest_id(s, "SELECT COALESCE(max(id), 0) FROM runs");
}

int ppb_store_has_result(ppb_store *s, int64_t run_id, const char *case_key)
{
    static const char sql[] = "SELECT 1 FROM results r JOIN cases c ON c.id = r.case_id"
                              " WHERE r.run_id = :run_id AND c.key = :key";
    ppb_err err;
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, &err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, &err)) != PPB_OK ||
        (rc = bind_text(stmt, ":key", case_key ? case_key : "", &err)) != PPB_OK)
        goto end;
    int step = sqlite3_step(stmt);
    rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : PPB_EIO;
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* ---- results ----------------------------------------------------------------- */

static int bind_case_fields(sqlite3_stmt *stmt, const ppb_case *c, ppb_err *err)
{
    unsigned kernel_bit = 1u << c->kernel;
    for (int f = 0; f < PPB_F_COUNT; f++) {
        const ppb_field_info *fi = ppb_field_get(f);
        char param[64];
        snprintf(param, sizeof param, ":%s", fi->name);
        int i = param_index(stmt, param, err);
        if (i == 0)
            return PPB_EFAIL;
        int rc;
        if (!(fi->kernels & kernel_bit)) {
            rc = sqlite3_bind_null(stmt, i); /* the field does not apply to this kernel */
        } else if (fi->names) {
            char text[32];
            ppb_field_format_value(f, ppb_case_get(c, f), text, sizeof text);
            rc = sqlite3_bind_text(stmt, i, text, -1, SQLITE_TRANSIENT);
        } else {
            rc = sqlite3_bind_int(stmt, i, ppb_case_get(c, f));
        }
        if (rc != SQLITE_OK)
            return ppb_fail(err, PPB_EFAIL, "store: cannot bind %s", param);
    }
    return PPB_OK;
}

/* Insert the case if its key is new, refresh its weight; returns its id. */
static int upsert_case(ppb_store *s, const ppb_case *c, int64_t *case_id, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO cases(key, kernel" CASE_FIELD_COLUMNS(FIELD_NAME_LIST) ", weight)"
        " VALUES(:key, :kernel" CASE_FIELD_COLUMNS(FIELD_PARAM_LIST) ", :weight)"
        " ON CONFLICT(key) DO UPDATE SET weight = excluded.weight";
    sqlite3_stmt *stmt = NULL, *find = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_text(stmt, ":key", c->key, err)) ||
        (rc = bind_text(stmt, ":kernel", ppb_kernel_name(c->kernel), err)) ||
        (rc = bind_case_fields(stmt, c, err)) || (rc = bind_real(stmt, ":weight", c->weight, err)))
        goto end;
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(s, err, "storing a case");
        goto end;
    }
    /* last_insert_rowid is not set by the UPDATE branch: look the id up. */
    if ((rc = prepare(s, "SELECT id FROM cases WHERE key = :key", &find, err)) ||
        (rc = bind_text(find, ":key", c->key, err)))
        goto end;
    if (sqlite3_step(find) != SQLITE_ROW) {
        rc = sqlite_fail(s, err, "looking up a case");
        goto end;
    }
    *case_id = sqlite3_column_int64(find, 0);
end:
    sqlite3_finalize(find);
    sqlite3_finalize(stmt);
    return rc;
}

static int insert_result(ppb_store *s, int64_t run_id, int64_t case_id, const ppb_case *c,
                         const ppb_result *r, int64_t *result_id, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO results(run_id, case_id, weight, status, reason"
        RESULT_COLUMNS(RESULT_NAME_LIST) ")"
        " VALUES(:run_id, :case_id, :weight, :status, :reason"
        RESULT_COLUMNS(RESULT_PARAM_LIST) ")";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, err)) ||
        (rc = bind_i64(stmt, ":case_id", case_id, err)) ||
        (rc = bind_real(stmt, ":weight", c->weight, err)) ||
        (rc = bind_text(stmt, ":status", ppb_status_name(r->status), err)) ||
        (rc = bind_text_n(stmt, ":reason", r->reason, sizeof r->reason, err)))
        goto end;
#define BIND_RESULT_COLUMN(type, col, member)                                                    \
    if ((rc = bind_##type(stmt, ":" #col, r->member, err)) != PPB_OK)                            \
        goto end;
    RESULT_COLUMNS(BIND_RESULT_COLUMN)
#undef BIND_RESULT_COLUMN
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(s, err, "storing a result");
        goto end;
    }
    *result_id = sqlite3_last_insert_rowid(s->db);
end:
    sqlite3_finalize(stmt);
    return rc;
}

static int insert_samples(ppb_store *s, int64_t result_id, const ppb_result *r, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, "INSERT INTO samples(result_id, idx, ms) VALUES(:result_id, :idx, :ms)",
                     &stmt, err);
    if (rc)
        return rc;
    for (int k = 0; k < r->n_samples; k++) {
        sqlite3_reset(stmt);
        if ((rc = bind_i64(stmt, ":result_id", result_id, err)) ||
            (rc = bind_i64(stmt, ":idx", k, err)) ||
            (rc = bind_real(stmt, ":ms", r->samples_ms[k], err)))
            goto end;
        if (sqlite3_step(stmt) != SQLITE_DONE) {
            rc = sqlite_fail(s, err, "storing samples");
            goto end;
        }
    }
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_put_result(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r,
                         ppb_err *err)
{
    if (r->n_samples < 0 || (r->n_samples > 0 && !r->samples_ms))
        return ppb_fail(err, PPB_EINPUT, "result has %d samples but no sample array",
                        r->n_samples);
    if (strcmp(ppb_status_name(r->status), "unknown") == 0)
        return ppb_fail(err, PPB_EINPUT, "result has unknown status %d", r->status);
    /* The key is the join key of every later comparison: derive it from the
     * fields, and make sure it reads back, or each_result could not rebuild it. */
    ppb_case keyed = *c, parsed;
    ppb_case_make_key(&keyed);
    int rc = ppb_case_from_key(keyed.key, &parsed, err);
    if (rc) {
        ppb_err_prefix(err, "cannot store case '%s': ", keyed.key);
        return rc;
    }

    if ((rc = exec_sql(s, "BEGIN IMMEDIATE", "starting to store a result", err)) != PPB_OK)
        return rc;
    int64_t case_id = 0, result_id = 0;
    if ((rc = run_exists(s, run_id, err)) || (rc = upsert_case(s, &keyed, &case_id, err)))
        goto fail;
    /* A re-run replaces the old result; its samples go with it (ON DELETE CASCADE). */
    sqlite3_stmt *del = NULL;
    if ((rc = prepare(s, "DELETE FROM results WHERE run_id = :run_id AND case_id = :case_id", &del,
                      err)) != PPB_OK)
        goto fail;
    if ((rc = bind_i64(del, ":run_id", run_id, err)) ||
        (rc = bind_i64(del, ":case_id", case_id, err)) ||
        (sqlite3_step(del) != SQLITE_DONE && (rc = sqlite_fail(s, err, "replacing a result")))) {
        sqlite3_finalize(del);
        goto fail;
    }
    sqlite3_finalize(del);
    if ((rc = insert_result(s, run_id, case_id, &keyed, r, &result_id, err)) ||
        (rc = insert_samples(s, result_id, r, err)))
        goto fail;
    if (s->commit_hook)
        s->commit_hook(s->commit_hook_ctx, s->db);
    if ((rc = exec_sql(s, "COMMIT", "committing a result", err)) != PPB_OK)
        goto fail;
    return PPB_OK;
fail:
    rollback_if_open(s);
    ppb_err_prefix(err, "storing %s: ", keyed.key);
    return rc;
}

static int read_samples(ppb_store *s, sqlite3_stmt *stmt, int64_t result_id, ppb_result *r,
                        ppb_err *err)
{
    sqlite3_reset(stmt);
    int rc = bind_i64(stmt, ":result_id", result_id, err);
    if (rc)
        return rc;
    if (r->n_samples > 0) {
        r->samples_ms = malloc((size_t)r->n_samples * sizeof *r->samples_ms);
        if (!r->samples_ms)
            return ppb_fail(err, PPB_ENOMEM, "out of memory reading %d samples", r->n_samples);
    }
    int k = 0, step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (k >= r->n_samples || sqlite3_column_int(stmt, 0) != k)
            return ppb_fail(err, PPB_EFAIL, "%s: result %lld: samples do not match n_samples=%d",
                            s->path, (long long)result_id, r->n_samples);
        read_REAL(stmt, 1, &r->samples_ms[k++]);
    }
    if (step != SQLITE_DONE)
        return sqlite_fail(s, err, "reading samples");
    if (k != r->n_samples)
        return ppb_fail(err, PPB_EFAIL, "%s: result %lld has %d samples, n_samples says %d",
                        s->path, (long long)result_id, k, r->n_samples);
    return PPB_OK;
}

int ppb_store_each_result(ppb_store *s, int64_t run_id, ppb_result_visitor fn, void *ctx,
                          ppb_err *err)
{
    static const char sql[] =
        "SELECT r.id, c.key, r.weight, r.status, r.reason" RESULT_COLUMNS(RESULT_SELECT_LIST)
        " FROM results r JOIN cases c ON c.id = r.case_id"
        " WHERE r.run_id = :run_id ORDER BY r.id";
    int rc = run_exists(s, run_id, err);
    if (rc)
        return rc;
    sqlite3_stmt *stmt = NULL, *samples = NULL;
    ppb_result res;
    ppb_result_init(&res);
    if ((rc = prepare(s, sql, &stmt, err)) ||
        (rc = prepare(s, "SELECT idx, ms FROM samples WHERE result_id = :result_id ORDER BY idx",
                      &samples, err)) ||
        (rc = bind_i64(stmt, ":run_id", run_id, err)))
        goto end;
    /* The outer statement stays active for the whole walk, so the connection
     * holds one read transaction: results and samples come from one snapshot
     * even while another process appends to the run. */
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        ppb_case c;
        int64_t result_id = sqlite3_column_int64(stmt, 0);
        const char *key = (const char *)sqlite3_column_text(stmt, 1);
        if ((rc = ppb_case_from_key(key ? key : "", &c, err)) != PPB_OK) {
            ppb_err_prefix(err, "%s: result %lld: ", s->path, (long long)result_id);
            goto end;
        }
        read_REAL(stmt, 2, &c.weight);
        const char *status = (const char *)sqlite3_column_text(stmt, 3);
        ppb_result_init(&res);
        res.status = ppb_status_parse(status ? status : "");
        if (res.status < 0) {
            rc = ppb_fail(err, PPB_EFAIL, "%s: result %lld has unknown status '%s'", s->path,
                          (long long)result_id, status ? status : "");
            goto end;
        }
        copy_column_text(stmt, 4, res.reason, sizeof res.reason);
        int col = 5;
#define READ_RESULT_COLUMN(type, column, member) read_##type(stmt, col++, &res.member);
        RESULT_COLUMNS(READ_RESULT_COLUMN)
#undef READ_RESULT_COLUMN
        if ((rc = read_samples(s, samples, result_id, &res, err)) != PPB_OK)
            goto end;
        rc = fn(ctx, &c, &res);
        ppb_result_free(&res);
        if (rc != 0) {
            rc = visitor_stop(rc);
            goto end;
        }
    }
    if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, "reading results");
end:
    ppb_result_free(&res);
    sqlite3_finalize(samples);
    sqlite3_finalize(stmt);
    return rc;
}

/* ---- export ------------------------------------------------------------------ */

/* RFC 4180: quote a field that holds a separator, a quote, a line break or
 * edge whitespace; double the quotes inside. */
static void csv_write_text(FILE *out, const char *t)
{
    size_t n = strlen(t);
    int quote = n > 0 && (t[0] == ' ' || t[n - 1] == ' ');
    for (const char *p = t; *p && !quote; p++)
        quote = *p == ',' || *p == '"' || *p == '\n' || *p == '\r';
    if (!quote) {
        fputs(t, out);
        return;
    }
    fputc('"', out);
    for (const char *p = t; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static int export_csv(ppb_store *s, int64_t run_id, FILE *out, ppb_err *err)
{
    static const char sql[] =
        "SELECT r.run_id, c.key AS case_key, c.kernel" CASE_FIELD_COLUMNS(FIELD_SELECT_LIST)
        ", r.weight, r.status, r.reason" RESULT_COLUMNS(RESULT_SELECT_LIST)
        " FROM results r JOIN cases c ON c.id = r.case_id"
        " WHERE r.run_id = :run_id ORDER BY r.id";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, err)) != PPB_OK)
        goto end;
    int n_cols = sqlite3_column_count(stmt);
    for (int i = 0; i < n_cols; i++) {
        if (i)
            fputc(',', out);
        csv_write_text(out, sqlite3_column_name(stmt, i));
    }
    fputc('\n', out);
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        for (int i = 0; i < n_cols; i++) {
            char num[64];
            if (i)
                fputc(',', out);
            switch (sqlite3_column_type(stmt, i)) {
            case SQLITE_NULL: /* NaN, or a field that does not apply: empty cell */
                break;
            case SQLITE_INTEGER:
                fprintf(out, "%lld", (long long)sqlite3_column_int64(stmt, i));
                break;
            case SQLITE_FLOAT:
                ppb_format_double_exact(sqlite3_column_double(stmt, i), num, sizeof num);
                fputs(num, out);
                break;
            default:
                csv_write_text(out, (const char *)sqlite3_column_text(stmt, i));
                break;
            }
        }
        fputc('\n', out);
    }
    if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, "exporting results");
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* Reals go through ppb_json_number (exact, null for non-finite). */
#define JNUM(x) "json(ppb_json_number(" x "))"

static const char export_json_sql[] =
    "SELECT json_object("
    " 'run', json_object("
    "   'id', id, 'suite_path', suite_path, 'suite_name', suite_name, 'suite_hash', suite_hash,"
    "   'git_commit', git_commit, 'host', host, 'backend', backend, 'device', device,"
    "   'target', target, 'label', label, 'started_at', started_at, 'finished_at', finished_at,"
    "   'status', status, 'args', args, 'n_cases', n_cases,"
    "   'n_done', (SELECT count(*) FROM results WHERE run_id = runs.id)),"
    " 'env', json((SELECT json_group_object(key, value) FROM"
    "   (SELECT key, value FROM env WHERE run_id = runs.id ORDER BY rowid))),"
    " 'results', json((SELECT json_group_array(json(item)) FROM (SELECT json_object("
    "   'case', json_patch('{}', json_object('key', c.key, 'kernel', c.kernel,"
    "     'weight', " JNUM("r.weight") CASE_FIELD_COLUMNS(FIELD_JSON_PAIR) ")),"
    "   'status', r.status, 'reason', r.reason, 'timing_is_cpu', r.timing_is_cpu,"
    "   'n_samples', r.n_samples, 'dropped_throttled', r.dropped_throttled,"
    "   'batch_launches', r.batch_launches,"
    "   'median_ms', " JNUM("r.median_ms") ", 'mean_ms', " JNUM("r.mean_ms") ","
    "   'stdev_ms', " JNUM("r.stdev_ms") ", 'min_ms', " JNUM("r.min_ms") ","
    "   'max_ms', " JNUM("r.max_ms") ", 'q1_ms', " JNUM("r.q1_ms") ", 'q3_ms', " JNUM("r.q3_ms") ","
    "   'rel_noise', " JNUM("r.rel_noise") ", 'tflops', " JNUM("r.tflops") ","
    "   'gbps', " JNUM("r.gbps") ","
    "   'check', json_object('checked', r.check_checked, 'pass', r.check_pass,"
    "     'max_abs_err', " JNUM("r.check_max_abs_err") ","
    "     'rel_l2_err', " JNUM("r.check_rel_l2_err") ","
    "     'rows_checked', r.check_rows_checked, 'rows_total', r.check_rows_total,"
    "     'nonfinite', r.check_nonfinite, 'unwritten', r.check_unwritten,"
    "     'atol', " JNUM("r.check_atol") ", 'rtol', " JNUM("r.check_rtol") "),"
    "   'overrun', json_object('detected', r.overrun_detected,"
    "     'tmp_out_bytes', r.overrun_tmp_out_bytes, 'exp_sums_bytes', r.overrun_exp_sums_bytes,"
    "     'max_logits_bytes', r.overrun_max_logits_bytes,"
    "     'guard_bytes_changed', r.overrun_guard_bytes_changed),"
    "   'resources', json_object('known', r.resources_known,"
    "     'registers', r.resources_registers, 'static_smem', r.resources_static_smem,"
    "     'dynamic_smem', r.resources_dynamic_smem, 'local_bytes', r.resources_local_bytes,"
    "     'max_threads', r.resources_max_threads),"
    "   'samples', json((SELECT json_group_array(" JNUM("ms") ") FROM"
    "     (SELECT ms FROM samples WHERE result_id = r.id ORDER BY idx)))"
    "   ) AS item"
    "   FROM results r JOIN cases c ON c.id = r.case_id"
    "   WHERE r.run_id = runs.id ORDER BY r.id)))"
    ") FROM runs WHERE id = :run_id";

static const char run_json_sql[] =
    "SELECT json_object("
    " 'schema', '" PPB_RUN_SCHEMA "', 'command', 'run', 'exit_code', :exit_code,"
    " 'run', json_object('id', id, 'suite_name', suite_name, 'suite_path', suite_path, 'git_commit', git_commit,"
    "   'backend', backend, 'device', device, 'target', target, 'label', label, 'started_at', started_at,"
    "   'finished_at', finished_at, 'status', status, 'n_cases', n_cases),"
    " 'counts', json((SELECT json_group_object(status, n) FROM"
    "   (SELECT status, count(*) AS n FROM results WHERE run_id = runs.id GROUP BY status))),"
    " 'cases', json((SELECT json_group_array(json(item)) FROM (SELECT json_object("
    "   'key', c.key, 'kernel', c.kernel, 'impl', c.impl, 'status', r.status, 'reason', r.reason,"
    "   'timing_is_cpu', r.timing_is_cpu, 'median_ms', " JNUM("r.median_ms") ","
    "   'tflops', " JNUM("r.tflops") ", 'gbps', " JNUM("r.gbps") ") AS item"
    "   FROM results r JOIN cases c ON c.id = r.case_id WHERE r.run_id = runs.id ORDER BY r.id)))"
    ") FROM runs WHERE id = :run_id";

int ppb_store_run_json(ppb_store *s, int64_t run_id, int exit_code, FILE *out, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = run_exists(s, run_id, err);
    if (!rc)
        rc = prepare(s, run_json_sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, err)) || (rc = bind_i64(stmt, ":exit_code", exit_code, err)))
        goto end;
    const char *doc = sqlite3_step(stmt) == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
    if (!doc)
        rc = sqlite_fail(s, err, "writing a run as JSON");
    else
        fprintf(out, "%s\n", doc); /* the caller checks the stream */
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* One document, built by SQLite. A field that does not apply to the case's
 * kernel is NULL in its column; patching it onto '{}' drops it from the case. */
static int export_json(ppb_store *s, int64_t run_id, FILE *out, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, export_json_sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":run_id", run_id, err)) != PPB_OK)
        goto end;
    if (sqlite3_step(stmt) != SQLITE_ROW) {
        rc = sqlite_fail(s, err, "exporting a run as JSON");
        goto end;
    }
    const char *doc = (const char *)sqlite3_column_text(stmt, 0);
    if (!doc) {
        rc = sqlite_fail(s, err, "exporting a run as JSON");
        goto end;
    }
    fputs(doc, out);
    fputc('\n', out);
end:
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_export(ppb_store *s, int64_t run_id, const char *format, FILE *out, ppb_err *err)
{
    int is_csv = format && strcmp(format, "csv") == 0;
    int is_json = format && strcmp(format, "json") == 0;
    if (!is_csv && !is_json)
        return ppb_fail(err, PPB_EINPUT, "unknown export format '%s' (use csv or json)",
                        format ? format : "(null)");
    int rc = run_exists(s, run_id, err);
    if (rc)
        return rc;
    /* One read transaction, so the export is one snapshot of a run that may
     * still be growing. */
    if ((rc = exec_sql(s, "BEGIN", "starting an export", err)) != PPB_OK)
        return rc;
    rc = is_csv ? export_csv(s, run_id, out, err) : export_json(s, run_id, out, err);
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc == PPB_OK && (fflush(out) != 0 || ferror(out)))
        rc = ppb_fail(err, PPB_EIO, "writing the export of run %lld failed: %s",
                      (long long)run_id, strerror(errno));
    return rc;
}

/* ---- proposal verdicts ----------------------------------------------------- */

/* Built by SQLite, reasons split into lines by a recursive CTE. */
static const char proposal_json_sql[] =
    "WITH RECURSIVE lines(line, rest) AS ("
    "  SELECT NULL, reasons || char(10) FROM proposals WHERE id = :id"
    "  UNION ALL SELECT substr(rest, 1, instr(rest, char(10)) - 1), substr(rest, instr(rest, char(10)) + 1)"
    "  FROM lines WHERE rest <> '')"
    "SELECT json_object("
    " 'schema', '" PPB_VERDICT_SCHEMA "', 'command', :command, 'exit_code', :exit_code,"
    " 'proposal', json_object('id', id, 'name', name, 'path', path, 'kind', kind, 'target', target,"
    "   'created_at', created_at),"
    " 'verdict', verdict, 'baseline_run', baseline_run, 'candidate_run', candidate_run,"
    " 'geomean', json_object('ratio', " JNUM("geomean_ratio") ", 'lo', " JNUM("geomean_lo") ","
    "   'hi', " JNUM("geomean_hi") "),"
    " 'reasons', json((SELECT json_group_array(line) FROM lines WHERE line <> '')),"
    " 'cases', json((SELECT json_group_array(json(item)) FROM (SELECT json_object("
    "   'baseline_key', baseline_key, 'candidate_key', candidate_key, 'weight', " JNUM("weight") ","
    "   'state', state, 'class', class, 'ratio', " JNUM("ratio") ", 'ratio_lo', " JNUM("ratio_lo") ","
    "   'ratio_hi', " JNUM("ratio_hi") ", 'p_holm', " JNUM("p_holm") ") AS item"
    "   FROM proposal_cases WHERE proposal_id = proposals.id ORDER BY idx)))"
    ") FROM proposals WHERE id = :id";

int ppb_store_proposal_json(ppb_store *s, int64_t id, const char *command, int exit_code, FILE *out,
                            ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, proposal_json_sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":id", id, err)) || (rc = bind_text(stmt, ":command", command, err)) ||
        (rc = bind_i64(stmt, ":exit_code", exit_code, err)))
        goto end;
    int step = sqlite3_step(stmt);
    const char *doc = step == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
    if (step == SQLITE_DONE)
        rc = ppb_fail(err, PPB_EINPUT, "no proposal %lld", (long long)id);
    else if (!doc)
        rc = sqlite_fail(s, err, "writing a verdict as JSON");
    else
        fprintf(out, "%s\n", doc); /* the caller checks the stream */
end:
    sqlite3_finalize(stmt);
    return rc;
}

static int insert_proposal_case(ppb_store *s, int64_t proposal_id, int idx,
                                const ppb_proposal_case *c, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO proposal_cases(proposal_id, idx, baseline_key, candidate_key, weight, state,"
        " class, ratio, ratio_lo, ratio_hi, p_holm) VALUES(:pid, :idx, :bk, :ck, :w, :state, :cls,"
        " :ratio, :lo, :hi, :p)";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":pid", proposal_id, err)) || (rc = bind_i64(stmt, ":idx", idx, err)) ||
        (rc = bind_text_n(stmt, ":bk", c->baseline_key, sizeof c->baseline_key, err)) ||
        (rc = bind_text_n(stmt, ":ck", c->candidate_key, sizeof c->candidate_key, err)) ||
        (rc = bind_real(stmt, ":w", c->weight, err)) ||
        (rc = bind_text_n(stmt, ":state", c->state, sizeof c->state, err)) ||
        (rc = bind_text_n(stmt, ":cls", c->cls, sizeof c->cls, err)) ||
        (rc = bind_real(stmt, ":ratio", c->ratio, err)) ||
        (rc = bind_real(stmt, ":lo", c->ratio_lo, err)) ||
        (rc = bind_real(stmt, ":hi", c->ratio_hi, err)) ||
        (rc = bind_real(stmt, ":p", c->p_holm, err)))
        goto end;
    if (sqlite3_step(stmt) != SQLITE_DONE)
        rc = sqlite_fail(s, err, "storing a proposal case");
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* 0 binds as NULL: a proposal that ran nothing has no runs to point at. */
static int bind_run_ref(sqlite3_stmt *stmt, const char *name, int64_t run, ppb_err *err)
{
    if (run > 0)
        return bind_i64(stmt, name, run, err);
    int i = param_index(stmt, name, err);
    return i && sqlite3_bind_null(stmt, i) == SQLITE_OK ? PPB_OK : PPB_EFAIL;
}

int ppb_store_put_proposal(ppb_store *s, ppb_proposal_record *rec, const ppb_proposal_case *cases,
                           int n_cases, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO proposals(name, path, kind, target, baseline_run, candidate_run, verdict,"
        " geomean_ratio, geomean_lo, geomean_hi, reasons) VALUES(:name, :path, :kind, :target,"
        " :brun, :crun, :verdict, :g, :glo, :ghi, :reasons)";
    int rc = exec_sql(s, "BEGIN IMMEDIATE", "starting to store a proposal", err);
    if (rc)
        return rc;
    sqlite3_stmt *stmt = NULL;
    if ((rc = prepare(s, sql, &stmt, err)))
        goto fail;
    if ((rc = bind_text_n(stmt, ":name", rec->name, sizeof rec->name, err)) ||
        (rc = bind_text_n(stmt, ":path", rec->path, sizeof rec->path, err)) ||
        (rc = bind_text_n(stmt, ":kind", rec->kind, sizeof rec->kind, err)) ||
        (rc = bind_text_n(stmt, ":target", rec->target, sizeof rec->target, err)) ||
        (rc = bind_run_ref(stmt, ":brun", rec->baseline_run, err)) ||
        (rc = bind_run_ref(stmt, ":crun", rec->candidate_run, err)) ||
        (rc = bind_text_n(stmt, ":verdict", rec->verdict, sizeof rec->verdict, err)) ||
        (rc = bind_real(stmt, ":g", rec->geomean_ratio, err)) ||
        (rc = bind_real(stmt, ":glo", rec->geomean_lo, err)) ||
        (rc = bind_real(stmt, ":ghi", rec->geomean_hi, err)) ||
        (rc = bind_text_n(stmt, ":reasons", rec->reasons, sizeof rec->reasons, err)))
        goto fail;
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(s, err, "storing a proposal");
        goto fail;
    }
    sqlite3_finalize(stmt);
    stmt = NULL;
    rec->id = sqlite3_last_insert_rowid(s->db);
    for (int i = 0; i < n_cases; i++)
        if ((rc = insert_proposal_case(s, rec->id, i, &cases[i], err)))
            goto fail;
    if ((rc = exec_sql(s, "COMMIT", "committing a proposal", err)))
        goto fail;
    return PPB_OK;
fail:
    sqlite3_finalize(stmt);
    rollback_if_open(s);
    return rc;
}

int ppb_store_get_proposal(ppb_store *s, int64_t id, ppb_proposal_record *rec, ppb_err *err)
{
    static const char sql[] =
        "SELECT id, name, path, kind, target, COALESCE(baseline_run, 0),"
        " COALESCE(candidate_run, 0), verdict, geomean_ratio, geomean_lo, geomean_hi, reasons,"
        " created_at FROM proposals WHERE id = :id";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":id", id, err)))
        goto end;
    int step = sqlite3_step(stmt);
    if (step == SQLITE_DONE) {
        rc = ppb_fail(err, PPB_EINPUT, "%s: proposal %lld not found", s->path, (long long)id);
        goto end;
    }
    if (step != SQLITE_ROW) {
        rc = sqlite_fail(s, err, "reading a proposal");
        goto end;
    }
    memset(rec, 0, sizeof *rec);
    rec->id = sqlite3_column_int64(stmt, 0);
    copy_column_text(stmt, 1, rec->name, sizeof rec->name);
    copy_column_text(stmt, 2, rec->path, sizeof rec->path);
    copy_column_text(stmt, 3, rec->kind, sizeof rec->kind);
    copy_column_text(stmt, 4, rec->target, sizeof rec->target);
    rec->baseline_run = sqlite3_column_int64(stmt, 5);
    rec->candidate_run = sqlite3_column_int64(stmt, 6);
    copy_column_text(stmt, 7, rec->verdict, sizeof rec->verdict);
    read_REAL(stmt, 8, &rec->geomean_ratio);
    read_REAL(stmt, 9, &rec->geomean_lo);
    read_REAL(stmt, 10, &rec->geomean_hi);
    if ((size_t)sqlite3_column_bytes(stmt, 11) >= sizeof rec->reasons) {
        rc = ppb_fail(err, PPB_EIO, "%s: proposal %lld: its reasons are longer than %zu bytes (a merged "
                      "database of another build?): not read cut", s->path, (long long)id, sizeof rec->reasons);
        goto end;
    }
    copy_column_text(stmt, 11, rec->reasons, sizeof rec->reasons);
    copy_column_text(stmt, 12, rec->created_at, sizeof rec->created_at);
end:
    sqlite3_finalize(stmt);
    return rc;
}

int64_t ppb_store_latest_proposal(ppb_store *s)
{
    return latest_id(s, "SELECT COALESCE(max(id), 0) FROM proposals");
}

int ppb_store_each_proposal_case(ppb_store *s, int64_t id, ppb_proposal_case_visitor fn, void *ctx,
                                 ppb_err *err)
{
    static const char sql[] =
        "SELECT baseline_key, candidate_key, weight, state, class, ratio, ratio_lo, ratio_hi,"
        " p_holm FROM proposal_cases WHERE proposal_id = :id ORDER BY idx";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_i64(stmt, ":id", id, err)))
        goto end;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        ppb_proposal_case c;
        memset(&c, 0, sizeof c);
        copy_column_text(stmt, 0, c.baseline_key, sizeof c.baseline_key);
        copy_column_text(stmt, 1, c.candidate_key, sizeof c.candidate_key);
        read_REAL(stmt, 2, &c.weight);
        copy_column_text(stmt, 3, c.state, sizeof c.state);
        copy_column_text(stmt, 4, c.cls, sizeof c.cls);
        read_REAL(stmt, 5, &c.ratio);
        read_REAL(stmt, 6, &c.ratio_lo);
        read_REAL(stmt, 7, &c.ratio_hi);
        read_REAL(stmt, 8, &c.p_holm);
        if ((rc = fn(ctx, &c)) != 0) {
            rc = visitor_stop(rc);
            goto end;
        }
    }
    if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, "reading proposal cases");
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* ---- history (trend) ------------------------------------------------------- */

int ppb_store_case_history(ppb_store *s, const char *suite_name, const char *case_key,
                           const char *since, ppb_history_visitor fn, void *ctx, ppb_err *err)
{
    static const char sql[] =
        "SELECT u.id, u.started_at, r.status, r.median_ms FROM results r"
        " JOIN runs u ON u.id = r.run_id JOIN cases c ON c.id = r.case_id"
        " WHERE u.suite_name = :suite AND c.key = :key AND u.started_at >= :since"
        " ORDER BY u.started_at, u.id";
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s, sql, &stmt, err);
    if (rc)
        return rc;
    if ((rc = bind_text(stmt, ":suite", suite_name, err)) ||
        (rc = bind_text(stmt, ":key", case_key, err)) ||
        (rc = bind_text(stmt, ":since", since ? since : "", err)))
        goto end;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        ppb_history_point p;
        memset(&p, 0, sizeof p);
        p.run_id = sqlite3_column_int64(stmt, 0);
        copy_column_text(stmt, 1, p.started_at, sizeof p.started_at);
        copy_column_text(stmt, 2, p.status, sizeof p.status);
        read_REAL(stmt, 3, &p.median_ms);
        if ((rc = fn(ctx, &p)) != 0) {
            rc = visitor_stop(rc);
            goto end;
        }
    }
    if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, "reading a case's history");
end:
    sqlite3_finalize(stmt);
    return rc;
}

int64_t ppb_store_latest_run_of_suite(ppb_store *s, const char *suite_name)
{
    sqlite3_stmt *stmt = NULL;
    ppb_err ignored;
    if (prepare(s, "SELECT COALESCE(max(id), 0) FROM runs WHERE suite_name = :suite", &stmt,
                &ignored))
        return PPB_EIO;
    int64_t id = PPB_EIO;
    if (bind_text(stmt, ":suite", suite_name, &ignored) == PPB_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        id = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return id;
}
