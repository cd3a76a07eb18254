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

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store_internal.h"

#include "doc_text.h"
#include "grow.h"
#include "hash.h"
#include "ppb_kernel_params.h"

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
 * One column per case field, named as in case.c's field table, in its order;
 * the kernels' parameters come from their lists (ppb_kernel_params.h). Values
 * are bound by name (":" + field name), so a field without a column is an error
 * at the first put, not a silent drop. A new field needs a migration step that
 * adds its column (store_schema.c); a new shape or harness field, this list and
 * the count below too. */
#define PARAM_COLUMN(X, name, ...) X(name)
#define CASE_FIELD_COLUMNS(X)                                                                    \
    X(batch) X(query_len) X(context_len) X(seq_len) X(ragged) X(num_heads) X(num_kv_heads)      \
    X(head_dim) X(dtype) X(page_size) X(sliding_window) X(decode_seqs)                          \
    PPBK_PREFILL_PARAMS(PARAM_COLUMN, X) PPBK_DECODE_PARAMS(PARAM_COLUMN, X)                    \
    X(host_partition_size) X(path) X(impl)

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
    X(INT, resources_max_threads, resources.max_threads)                                         \
    X(REAL, generate_ms, phases.generate_ms)                                                     \
    X(REAL, check_ms, phases.check_ms)                                                           \
    X(REAL, warmup_ms, phases.warmup_ms)                                                         \
    X(REAL, sampling_ms, phases.sampling_ms)

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

/* ---- one statement: prepare, bind, step, finalize ------------------------------
 * Most functions below are one statement: its parameters as a list, then
 * exec_stmt (no rows), one_row (at most one) or each_row (a walk). The list
 * binds by name in order, so the first parameter that fails is the one named. */

/* A parameter: 'i' integer, 'r' real (NaN as NULL), 't' text of at most cap
 * bytes (fixed-size buffers may lack their terminator), 'R' a run reference
 * (0 as NULL: a proposal that ran nothing has no run to point at) or another
 * integer whose 0 means "not recorded" (P_INT0). */
typedef struct sql_param {
    const char *name;
    char type;
    long long i;
    double r;
    const char *t;
    size_t cap;
} sql_param;

#define P_INT(n, v) {.name = (n), .type = 'i', .i = (v)}
#define P_REAL(n, v) {.name = (n), .type = 'r', .r = (v)}
#define P_TEXT(n, v) {.name = (n), .type = 't', .t = (v), .cap = SIZE_MAX}
#define P_TEXTN(n, v) {.name = (n), .type = 't', .t = (v), .cap = sizeof(v)}
#define P_RUN(n, v) {.name = (n), .type = 'R', .i = (v)}
#define P_INT0 P_RUN
#define P_LONG P_INT
#define P_LLONG P_INT
/* A list ends at a NULL name. */
#define PARAMS(...) ((const sql_param[]){__VA_ARGS__, {0}})
#define NO_PARAMS ((const sql_param[]){{0}})

/* one_row's answer when the statement gives none: the caller says what was
 * missing (a run, a proposal), so it is not an error code. */
#define NO_ROW 1

static int bind_param(sqlite3_stmt *stmt, const sql_param *p, ppb_err *err)
{
    switch (p->type) {
    case 'r': return bind_real(stmt, p->name, p->r, err);
    case 't': return bind_text_n(stmt, p->name, p->t, p->cap, err);
    case 'R':
        if (p->i <= 0) {
            int i = param_index(stmt, p->name, err);
            return i && sqlite3_bind_null(stmt, i) == SQLITE_OK ? PPB_OK : PPB_EFAIL;
        }
        return bind_i64(stmt, p->name, p->i, err);
    default: return bind_i64(stmt, p->name, p->i, err);
    }
}

static int bind_params(sqlite3_stmt *stmt, const sql_param *params, ppb_err *err)
{
    int rc = PPB_OK;
    for (const sql_param *p = params; p->name && rc == PPB_OK; p++)
        rc = bind_param(stmt, p, err);
    return rc;
}

/* Prepare and bind; on failure *stmt is finalized and NULL. */
static int prepare_bound(ppb_store *s, const char *sql, const sql_param *params, sqlite3_stmt **stmt,
                         ppb_err *err)
{
    int rc = prepare(s, sql, stmt, err);
    if (rc == PPB_OK && (rc = bind_params(*stmt, params, err)) != PPB_OK) {
        sqlite3_finalize(*stmt);
        *stmt = NULL;
    }
    return rc;
}

static int step_done(ppb_store *s, sqlite3_stmt *stmt, const char *what, ppb_err *err)
{
    return sqlite3_step(stmt) == SQLITE_DONE ? PPB_OK : sqlite_fail(s, err, what);
}

/* A statement that returns no rows (INSERT, UPDATE, DELETE). */
static int exec_stmt(ppb_store *s, const char *sql, const sql_param *params, const char *what,
                     ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare_bound(s, sql, params, &stmt, err);
    if (rc == PPB_OK)
        rc = step_done(s, stmt, what, err);
    sqlite3_finalize(stmt);
    return rc;
}

/* Reads the current row of stmt: PPB_OK, or an error (< 0) or a visitor's
 * stop (> 0) to end a walk. */
typedef int (*row_reader)(sqlite3_stmt *stmt, void *ctx);

/* A statement that gives at most one row: PPB_OK after read (NULL: nothing to
 * read), NO_ROW when there is none, else the error. */
static int one_row(ppb_store *s, const char *sql, const sql_param *params, row_reader read,
                   void *ctx, const char *what, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare_bound(s, sql, params, &stmt, err);
    if (rc)
        return rc;
    int step = sqlite3_step(stmt);
    if (step == SQLITE_ROW)
        rc = read ? read(stmt, ctx) : PPB_OK;
    else
        rc = step == SQLITE_DONE ? NO_ROW : sqlite_fail(s, err, what);
    sqlite3_finalize(stmt);
    return rc;
}

/* Every row of a statement through read, in order; read's non-zero return
 * ends the walk (visitor_stop says what it means). */
static int each_row(ppb_store *s, const char *sql, const sql_param *params, row_reader read,
                    void *ctx, const char *what, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare_bound(s, sql, params, &stmt, err);
    if (rc)
        return rc;
    int step = SQLITE_DONE;
    while (rc == PPB_OK && (step = sqlite3_step(stmt)) == SQLITE_ROW)
        rc = read(stmt, ctx);
    if (rc != PPB_OK)
        rc = visitor_stop(rc);
    else if (step != SQLITE_DONE)
        rc = sqlite_fail(s, err, what);
    sqlite3_finalize(stmt);
    return rc;
}

/* The first column as an integer (a count, an id). */
static int read_int64(sqlite3_stmt *stmt, void *out)
{
    *(long long *)out = sqlite3_column_int64(stmt, 0);
    return PPB_OK;
}

/* A single integer from a statement without parameters (pragmas, counts). */
static int query_int(ppb_store *s, const char *sql, long long *out, ppb_err *err)
{
    int rc = one_row(s, sql, NO_PARAMS, read_int64, out, sql, err);
    return rc == NO_ROW ? sqlite_fail(s, err, sql) : rc;
}

static int run_exists(ppb_store *s, int64_t run_id, ppb_err *err)
{
    int rc = one_row(s, "SELECT 1 FROM runs WHERE id = :id", PARAMS(P_INT(":id", run_id)), NULL, NULL,
                     "looking up a run", err);
    if (rc == NO_ROW)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
    return rc;
}

/* ---- open, inspect, migrate ------------------------------------------------ */

/* Decide whether the file may be written to, reading only. Called before any
 * statement that writes (journal_mode=WAL rewrites the header), with checkpoint
 * on close turned off, so a refused file is left exactly as it was. */
static int check_expected_schema(ppb_store *s, long long version, ppb_err *err);

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
        return check_expected_schema(s, *version, err);
    }
    if (app_id == 0 && n_objects == 0 && *version == 0)
        return PPB_OK; /* an empty SQLite database: ours to initialise */
    return ppb_fail(err, PPB_EINPUT,
                    "%s is a SQLite database but not a ppbench database (application_id "
                    "0x%08llx, %lld schema objects); refusing to touch it",
                    s->path, (unsigned long long)(uint32_t)app_id, n_objects);
}

/* The schema objects of a database as sorted "type name sql" lines. */
static int schema_lines(sqlite3 *db, char ***out, int *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master"
                           " WHERE name NOT LIKE 'sqlite_%' ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK)
        return PPB_EIO;
    int rc = PPB_OK, cap = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = ppb_grow((void **)out, &cap, *n, sizeof **out, 32)) != PPB_OK)
            break;
        if (!((*out)[*n] = strdup((const char *)sqlite3_column_text(st, 0)))) {
            rc = PPB_ENOMEM;
            break;
        }
        (*n)++;
    }
    if (rc == PPB_OK && step != SQLITE_DONE)
        rc = PPB_EIO;
    sqlite3_finalize(st);
    return rc;
}

static void free_lines(char **lines, int n)
{
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* A ppbench database holds exactly the objects its migration steps make: a
 * view over a huge query, a trigger or an extra index in a file from
 * elsewhere (a fetched baseline) would run whenever ppbench reads or writes.
 * The expected schema of `version` is built in memory from the same steps
 * and compared object by object, definitions included. */
static int check_expected_schema(ppb_store *s, long long version, ppb_err *err)
{
    sqlite3 *ref = NULL;
    char **want = NULL, **have = NULL;
    int n_want = 0, n_have = 0, rc = PPB_OK;
    if (sqlite3_open(":memory:", &ref) != SQLITE_OK) {
        rc = ppb_fail(err, PPB_ENOMEM, "cannot build the expected schema");
        goto end;
    }
    for (int i = 0; i < ppb_store_migration_count && ppb_store_migrations[i].version <= version; i++)
        if (sqlite3_exec(ref, ppb_store_migrations[i].sql, NULL, NULL, NULL) != SQLITE_OK) {
            rc = ppb_fail(err, PPB_EFAIL, "building the expected schema: %s", sqlite3_errmsg(ref));
            goto end;
        }
    if (schema_lines(ref, &want, &n_want) != PPB_OK || schema_lines(s->db, &have, &n_have) != PPB_OK) {
        rc = ppb_fail(err, PPB_EIO, "%s: cannot read its schema: %s", s->path, sqlite3_errmsg(s->db));
        goto end;
    }
    for (int i = 0, j = 0; i < n_have || j < n_want;) {
        int cmp = i == n_have ? 1 : j == n_want ? -1 : strcmp(have[i], want[j]);
        if (cmp == 0) {
            i++, j++;
            continue;
        }
        const char *line = cmp < 0 ? have[i] : want[j];
        rc = ppb_fail(err, PPB_EINPUT,
                      "%s does not have ppbench's schema version %lld: %s '%.*s' (refusing it, left untouched)",
                      s->path, version, cmp < 0 ? "it has an object ppbench never makes," : "it lacks",
                      (int)strcspn(line, "("), line);
        break;
    }
end:
    free_lines(want, n_want);
    free_lines(have, n_have);
    sqlite3_close(ref);
    return rc;
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
    for (int i = 0; i < ppb_store_migration_count; i++)
        if (ppb_store_migrations[i].version != i + 1)
            return ppb_fail(err, PPB_EFAIL, "store: migration step %d is out of order", i);
    if (target < 1 || target > PPB_STORE_SCHEMA_VERSION)
        return ppb_fail(err, PPB_EINPUT, "store: no schema version %d", target);
    return PPB_OK;
}

/* A file with damaged pages reads partly (a lost runs page looks like "no
 * runs") and takes appends it cannot keep: refuse it, naming the damage,
 * before anything reads or writes. quick_check reads every page once. */
static int check_not_damaged(ppb_store *s, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check(3)", -1, &stmt, NULL) != SQLITE_OK)
        return ppb_fail(err, PPB_EIO, "%s is damaged: %s", s->path, sqlite3_errmsg(s->db));
    char found[512] = "";
    size_t n = 0;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(stmt, 0);
        if (line && strcmp(line, "ok") != 0 && n < sizeof found)
            n += (size_t)snprintf(found + n, sizeof found - n, "%s%s", n ? "; " : "", line);
    }
    if (step != SQLITE_DONE && !found[0])
        snprintf(found, sizeof found, "%s", sqlite3_errmsg(s->db));
    sqlite3_finalize(stmt);
    if (found[0])
        return ppb_fail(err, PPB_EIO,
                        "%s is damaged (SQLite quick_check: %s); nothing was read or written: restore it from a "
                        "copy",
                        s->path, found);
    return PPB_OK;
}

/* The SQL functions ppbench's own statements use (JSON numbers, status names). */
static int register_functions(ppb_store *s, ppb_err *err)
{
    if (sqlite3_create_function_v2(s->db, "ppb_json_number", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                   NULL, sql_json_number, NULL, NULL, NULL) != SQLITE_OK)
        return sqlite_fail(s, err, "registering ppb_json_number");
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
    if ((rc = inspect_existing(s, target, &version, err)) != PPB_OK ||
        (!fresh && (rc = check_not_damaged(s, err)) != PPB_OK))
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
        /* An empty answer is a failed write (no space, a file size limit): the
         * advice about file systems is for a mode the file system refused. */
        int write_failed = !mode[0];
        rc = ppb_fail(err, PPB_EIO, "%s: cannot switch to WAL journal mode (got '%s': %s); %s", path, mode,
                      sqlite3_errmsg(s->db),
                      write_failed ? "writing beside the database failed: check the free space and any file size "
                                     "limit (ulimit -f) where it lives"
                                   : "the file system does not support it: use a local file system");
        goto fail;
    }
    if ((rc = exec_sql(s, "PRAGMA synchronous = NORMAL", "setting synchronous", err)) != PPB_OK)
        goto fail;
    if ((rc = register_functions(s, err)) != PPB_OK)
        goto fail;
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

/* "file:" + path with everything but [A-Za-z0-9/._-] percent-encoded. */
static int readonly_uri(const char *path, int immutable, char *uri, size_t len)
{
    size_t n = (size_t)snprintf(uri, len, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c && n + 4 < len; c++)
        n += (size_t)(isalnum(*c) || strchr("/._-", *c) ? snprintf(uri + n, len - n, "%c", *c)
                                                          : snprintf(uri + n, len - n, "%%%02X", *c));
    n += (size_t)snprintf(uri + n, len - n, "%s", immutable ? "?immutable=1" : "?mode=ro");
    return n + 1 < len ? PPB_OK : PPB_EINPUT;
}

int ppb_store_open_readonly(ppb_store **out, const char *path, ppb_err *err)
{
    *out = NULL;
    struct stat st;
    if (!path || !*path || strcmp(path, ":memory:") == 0 || stat(path, &st) != 0)
        return ppb_store_open(out, path, err);
    ppb_store *s = calloc(1, sizeof *s);
    char uri[3 * 4096 + 32], wal[4096 + 8];
    if (!s)
        return ppb_fail(err, PPB_ENOMEM, "out of memory opening %s", path);
    snprintf(wal, sizeof wal, "%s-wal", path);
    int immutable = access(wal, F_OK) != 0, rc;
    if (strlen(path) >= sizeof s->path || readonly_uri(path, immutable, uri, sizeof uri)) {
        free(s);
        return ppb_fail(err, PPB_EINPUT, "database path too long: %s", path);
    }
    strcpy(s->path, path);
    if (sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        rc = ppb_fail(err, PPB_EIO, "cannot open database %s to read: %s", path,
                      s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_busy_timeout(s->db, 5000);
    long long version = 0;
    if ((rc = inspect_existing(s, PPB_STORE_SCHEMA_VERSION, &version, err)) != PPB_OK ||
        (rc = check_not_damaged(s, err)) != PPB_OK)
        goto fail;
    if (version != PPB_STORE_SCHEMA_VERSION) { /* empty or older: opened to write once, to migrate */
        ppb_store_close(s);
        return ppb_store_open(out, path, err);
    }
    if ((rc = exec_sql(s, "PRAGMA foreign_keys = ON", "enabling foreign keys", err)) != PPB_OK)
        goto fail;
    if ((rc = register_functions(s, err)) != PPB_OK)
        goto fail;
    *out = s;
    return PPB_OK;
fail:
    ppb_store_close(s);
    return rc;
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

const char *const ppb_store_run_kinds[] = {"run", "proposal", "calibrate", NULL};

int ppb_store_run_kind_valid(const char *kind)
{
    for (int i = 0; kind && ppb_store_run_kinds[i]; i++)
        if (strcmp(kind, ppb_store_run_kinds[i]) == 0)
            return 1;
    return 0;
}

int ppb_store_run_kinds_check(const char *list, ppb_err *err)
{
    if (!list || !*list)
        return ppb_fail(err, PPB_EINPUT, "an empty list of run kinds (run, proposal, calibrate or all)");
    if (strcmp(list, "all") == 0)
        return PPB_OK;
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        char kind[16];
        snprintf(kind, sizeof kind, "%.*s", (int)(n < sizeof kind ? n : sizeof kind - 1), p);
        if (n >= sizeof kind || !ppb_store_run_kind_valid(kind))
            return ppb_fail(err, PPB_EINPUT, "unknown run kind '%.*s' (run, proposal, calibrate or all)", (int)n, p);
        if (!p[n])
            return PPB_OK;
        p += n + 1;
    }
}

/* SQL true when run u's kind is in the list :kinds ("" = plain runs, "all"). */
#define KIND_IN_LIST                                                                                \
    " (:kinds = 'all' OR instr(',' || COALESCE(NULLIF(:kinds, ''), 'run') || ',', ',' || u.kind || ',') > 0)"

int ppb_store_begin_run(ppb_store *s, ppb_run_info *run, ppb_err *err)
{
    char status[sizeof run->status];
    snprintf(status, sizeof status, "%.*s", (int)strnlen(run->status, sizeof run->status),
             run->status);
    if (status[0] && !valid_run_status(status))
        return ppb_fail(err, PPB_EINPUT, "unknown run status '%s'", status);
    char kind[sizeof run->kind];
    snprintf(kind, sizeof kind, "%.*s", (int)strnlen(run->kind, sizeof run->kind), run->kind);
    if (kind[0] && !ppb_store_run_kind_valid(kind))
        return ppb_fail(err, PPB_EINPUT, "unknown run kind '%s' (run, proposal, calibrate)", kind);
    static const char sql[] =
        "INSERT INTO runs(suite_path, suite_name, suite_hash, git_commit, host, backend, device,"
        " target, label, started_at, status, args, n_cases, shard_index, shard_count, run_group, kind)"
        " VALUES(:suite_path, :suite_name, :suite_hash, :git_commit, :host, :backend, :device,"
        " :target, :label,"
        " COALESCE(NULLIF(:started_at, ''), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),"
        " COALESCE(NULLIF(:status, ''), 'running'), :args, :n_cases, :shard_index, :shard_count,"
        " :run_group, COALESCE(NULLIF(:kind, ''), 'run'))";
    /* A shard is the first part of the run its group's shards fold into (merge.c). */
    static const char own_part[] =
        "INSERT INTO run_parts(run_id, uid, shard_index, host)"
        " SELECT id, uid, shard_index, host FROM runs WHERE id = :id AND shard_count > 0";
#define RUN_TEXT(field) P_TEXTN(":" #field, run->field)
    int rc = exec_stmt(s, sql,
                       PARAMS(RUN_TEXT(suite_path), RUN_TEXT(suite_name), RUN_TEXT(suite_hash),
                              RUN_TEXT(git_commit), RUN_TEXT(host), RUN_TEXT(backend), RUN_TEXT(device),
                              RUN_TEXT(target), RUN_TEXT(label), RUN_TEXT(started_at), RUN_TEXT(status),
                              RUN_TEXT(args), P_INT(":n_cases", run->n_cases),
                              P_INT(":shard_index", run->shard_index),
                              P_INT(":shard_count", run->shard_count), RUN_TEXT(run_group),
                              P_TEXT(":kind", kind)),
                       "recording a new run", err);
#undef RUN_TEXT
    if (rc)
        return rc;
    /* Read back what the database filled in (the id, a default start time). */
    int64_t id = sqlite3_last_insert_rowid(s->db);
    if ((rc = exec_stmt(s, own_part, PARAMS(P_INT(":id", id)), "recording a shard", err)) != PPB_OK)
        return rc;
    return ppb_store_get_run(s, id, run, err);
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
    int rc = exec_stmt(s, sql, PARAMS(P_TEXT(":status", status), P_INT(":id", run_id)),
                       "finishing a run", err);
    if (rc == PPB_OK && sqlite3_changes(s->db) == 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
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
    int rc = prepare_bound(s, sql,
                           PARAMS(P_INT(":run_id", run_id), P_TEXT(":key", key), P_TEXT(":value", value)),
                           &stmt, err);
    /* A missing run is the caller's mistake, not the database's. */
    if (rc == PPB_OK && sqlite3_step(stmt) != SQLITE_DONE)
        rc = sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_FOREIGNKEY
                 ? ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id)
                 : sqlite_fail(s, err, "storing an env entry");
    sqlite3_finalize(stmt);
    return rc;
}

/* A walk's visitor and its context, for the row readers below. */
typedef struct env_walk {
    ppb_env_visitor fn;
    void *ctx;
} env_walk;

static int env_row(sqlite3_stmt *stmt, void *arg)
{
    const env_walk *w = arg;
    const char *k = (const char *)sqlite3_column_text(stmt, 0);
    const char *v = (const char *)sqlite3_column_text(stmt, 1);
    return w->fn(w->ctx, k ? k : "", v ? v : "");
}

int ppb_store_each_env(ppb_store *s, int64_t run_id, ppb_env_visitor fn, void *ctx, ppb_err *err)
{
    int rc = run_exists(s, run_id, err);
    if (rc)
        return rc;
    env_walk w = {fn, ctx};
    return each_row(s, "SELECT key, value FROM env WHERE run_id = :run_id ORDER BY rowid",
                    PARAMS(P_INT(":run_id", run_id)), env_row, &w, "reading env", err);
}

#define RUN_SELECT                                                                               \
    "SELECT id, suite_path, suite_name, suite_hash, git_commit, host, backend, device, target,"  \
    " label, started_at, finished_at, status, args, n_cases,"                                    \
    " (SELECT count(*) FROM results WHERE results.run_id = runs.id),"                             \
    " shard_index, shard_count, run_group,"                                                      \
    " (SELECT count(*) FROM run_parts WHERE run_parts.run_id = runs.id), kind FROM runs"

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
    copy_column_text(st, i++, run->kind, sizeof run->kind);
}

static int run_row(sqlite3_stmt *stmt, void *run)
{
    read_run_row(stmt, run);
    return PPB_OK;
}

int ppb_store_get_run(ppb_store *s, int64_t run_id, ppb_run_info *run, ppb_err *err)
{
    int rc = one_row(s, RUN_SELECT " WHERE id = :id", PARAMS(P_INT(":id", run_id)), run_row, run,
                     "reading a run", err);
    if (rc == NO_ROW)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
    return rc;
}

typedef struct run_walk {
    ppb_run_visitor fn;
    void *ctx;
    ppb_run_info *run;
} run_walk;

static int each_run_row(sqlite3_stmt *stmt, void *arg)
{
    const run_walk *w = arg;
    read_run_row(stmt, w->run);
    return w->fn(w->ctx, w->run);
}

int ppb_store_each_run(ppb_store *s, ppb_run_visitor fn, void *ctx, ppb_err *err)
{
    run_walk w = {fn, ctx, malloc(sizeof *w.run)}; /* ~6 KiB: keep it off the stack */
    if (!w.run)
        return ppb_fail(err, PPB_ENOMEM, "out of memory listing runs");
    int rc = each_row(s, RUN_SELECT " ORDER BY id DESC", NO_PARAMS, each_run_row, &w, "listing runs", err);
    free(w.run);
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
    return latest_id(s, "SELECT COALESCE(max(id), 0) FROM runs WHERE kind = 'run'");
}

int ppb_store_has_result(ppb_store *s, int64_t run_id, const char *case_key)
{
    static const char sql[] = "SELECT 1 FROM results r JOIN cases c ON c.id = r.case_id"
                              " WHERE r.run_id = :run_id AND c.key = :key";
    ppb_err err;
    int rc = one_row(s, sql, PARAMS(P_INT(":run_id", run_id), P_TEXT(":key", case_key ? case_key : "")),
                     NULL, NULL, "looking up a result", &err);
    return rc == PPB_OK ? 1 : rc == NO_ROW ? 0 : rc;
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
            char text[PPB_FIELD_TEXT_MAX];
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
    sqlite3_stmt *stmt = NULL;
    int rc = prepare_bound(s, sql,
                           PARAMS(P_TEXT(":key", c->key), P_TEXT(":kernel", ppb_kernel_name(c->kernel)),
                                  P_REAL(":weight", c->weight)),
                           &stmt, err);
    if (rc == PPB_OK && (rc = bind_case_fields(stmt, c, err)) == PPB_OK)
        rc = step_done(s, stmt, "storing a case", err);
    sqlite3_finalize(stmt);
    if (rc)
        return rc;
    /* last_insert_rowid is not set by the UPDATE branch: look the id up. */
    long long id = 0;
    rc = one_row(s, "SELECT id FROM cases WHERE key = :key", PARAMS(P_TEXT(":key", c->key)), read_int64,
                 &id, "looking up a case", err);
    if (rc == NO_ROW)
        rc = sqlite_fail(s, err, "looking up a case");
    *case_id = id;
    return rc;
}

/* ---- the row check ------------------------------------------------------------
 * FNV-1a over a result as stored: every value in a fixed 8-byte form (integers
 * as int64, reals as their bits, NaN as one pattern since SQLite stores it as
 * NULL), texts with their terminating NUL. Computed from the values written and
 * again from the values read back, which must agree. */
static uint64_t hash_i64(uint64_t h, long long v)
{
    int64_t x = v;
    return ppb_fnv1a64_update(h, &x, sizeof x);
}

static uint64_t hash_real(uint64_t h, double v)
{
    uint64_t bits = 0x7ff8000000000000ULL; /* every NaN alike */
    if (!isnan(v))
        memcpy(&bits, &v, sizeof bits);
    return ppb_fnv1a64_update(h, &bits, sizeof bits);
}

#define hash_INT hash_i64
#define hash_LONG hash_i64
#define hash_LLONG hash_i64
#define hash_REAL hash_real

/* The samples' tags (schema 13) follow the samples when there are any, so a
 * row without them hashes as before. */
static void row_check(const char *key, double weight, const char *status, const ppb_result *r,
                      const ppb_sample_tags *tags, char out[17])
{
    uint64_t h = ppb_fnv1a64_update(PPB_FNV1A64_OFFSET, key, strlen(key) + 1);
    h = hash_real(h, weight);
    h = ppb_fnv1a64_update(h, status, strlen(status) + 1);
    h = ppb_fnv1a64_update(h, r->reason, strlen(r->reason) + 1);
#define HASH_RESULT_COLUMN(type, col, member) h = hash_##type(h, r->member);
    RESULT_COLUMNS(HASH_RESULT_COLUMN)
#undef HASH_RESULT_COLUMN
    for (int k = 0; k < r->n_samples && r->samples_ms; k++)
        h = hash_real(h, r->samples_ms[k]);
    for (int k = 0; tags && k < r->n_samples; k++) {
        h = hash_i64(h, tags->session[k]);
        h = hash_i64(h, tags->round[k]);
    }
    const ppb_feasibility *f = &r->feasibility;
    if (f->judged) { /* schema 17; a row without a judgement hashes as before */
        h = hash_i64(h, f->feasible);
        h = hash_i64(h, f->blocks_per_sm);
        h = ppb_fnv1a64_update(h, f->limiter, strnlen(f->limiter, sizeof f->limiter));
        h = ppb_fnv1a64_update(h, "", 1);
        h = ppb_fnv1a64_update(h, f->reason, strnlen(f->reason, sizeof f->reason));
        h = ppb_fnv1a64_update(h, "", 1);
        h = ppb_fnv1a64_update(h, f->flips, strnlen(f->flips, sizeof f->flips));
        h = ppb_fnv1a64_update(h, "", 1);
    }
    ppb_fnv1a64_hex(h, out);
}

static int insert_result(ppb_store *s, int64_t run_id, int64_t case_id, const ppb_case *c,
                         const ppb_result *r, const ppb_sample_tags *tags, int64_t *result_id, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO results(run_id, case_id, weight, status, reason, row_check"
        RESULT_COLUMNS(RESULT_NAME_LIST) ")"
        " VALUES(:run_id, :case_id, :weight, :status, :reason, :row_check"
        RESULT_COLUMNS(RESULT_PARAM_LIST) ")";
    char check[17];
    row_check(c->key, c->weight, ppb_status_name(r->status), r, tags, check);
#define RESULT_PARAM(type, col, member) , P_##type(":" #col, r->member)
    int rc = exec_stmt(s, sql,
                       PARAMS(P_INT(":run_id", run_id), P_INT(":case_id", case_id),
                              P_REAL(":weight", c->weight), P_TEXT(":status", ppb_status_name(r->status)),
                              P_TEXTN(":reason", r->reason), P_TEXT(":row_check", check)
                                  RESULT_COLUMNS(RESULT_PARAM)),
                       "storing a result", err);
#undef RESULT_PARAM
    if (rc == PPB_OK)
        *result_id = sqlite3_last_insert_rowid(s->db);
    const ppb_feasibility *f = &r->feasibility;
    if (rc == PPB_OK && f->judged) /* else the columns stay NULL: not judged */
        rc = exec_stmt(s,
                       "UPDATE results SET feasible = :feasible, blocks_per_sm = :blocks_per_sm,"
                       " feasibility_limiter = :limiter, feasibility_reason = :reason, feasibility_flips = :flips"
                       " WHERE id = :id",
                       PARAMS(P_INT(":feasible", f->feasible != 0), P_INT(":blocks_per_sm", f->blocks_per_sm),
                              P_TEXTN(":limiter", f->limiter), P_TEXTN(":reason", f->reason),
                              P_TEXTN(":flips", f->flips), P_INT(":id", *result_id)),
                       "storing a result's feasibility", err);
    return rc;
}

static int insert_samples(ppb_store *s, int64_t result_id, const ppb_result *r, const ppb_sample_tags *tags,
                          ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = prepare(s,
                     tags ? "INSERT INTO samples(result_id, idx, ms, session, round)"
                            " VALUES(:result_id, :idx, :ms, :session, :round)"
                          : "INSERT INTO samples(result_id, idx, ms) VALUES(:result_id, :idx, :ms)",
                     &stmt, err);
    for (int k = 0; rc == PPB_OK && k < r->n_samples; k++) {
        sqlite3_reset(stmt);
        rc = tags ? bind_params(stmt,
                                PARAMS(P_INT(":result_id", result_id), P_INT(":idx", k),
                                       P_REAL(":ms", r->samples_ms[k]), P_INT(":session", tags->session[k]),
                                       P_INT(":round", tags->round[k])),
                                err)
                  : bind_params(stmt,
                                PARAMS(P_INT(":result_id", result_id), P_INT(":idx", k),
                                       P_REAL(":ms", r->samples_ms[k])),
                                err);
        if (rc == PPB_OK)
            rc = step_done(s, stmt, "storing samples", err);
    }
    sqlite3_finalize(stmt);
    return rc;
}

int ppb_store_put_result(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r,
                         ppb_err *err)
{
    return ppb_store_put_tagged_result(s, run_id, c, r, NULL, err);
}

int ppb_store_put_tagged_result(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r,
                                const ppb_sample_tags *tags, ppb_err *err)
{
    if (r->n_samples < 0 || (r->n_samples > 0 && !r->samples_ms))
        return ppb_fail(err, PPB_EINPUT, "result has %d samples but no sample array",
                        r->n_samples);
    if (tags && r->n_samples > 0 && (!tags->session || !tags->round))
        return ppb_fail(err, PPB_EINPUT, "result has tags without a session or a round per sample");
    if (tags && r->n_samples == 0)
        tags = NULL; /* nothing to tag */
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
    if ((rc = exec_stmt(s, "DELETE FROM results WHERE run_id = :run_id AND case_id = :case_id",
                        PARAMS(P_INT(":run_id", run_id), P_INT(":case_id", case_id)),
                        "replacing a result", err)) ||
        (rc = insert_result(s, run_id, case_id, &keyed, r, tags, &result_id, err)) ||
        (rc = insert_samples(s, result_id, r, tags, err)))
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

/* One result's samples and, when they have them, their tags (all or none:
 * a partly tagged result is damaged); *tagged says which. */
static int read_samples(ppb_store *s, sqlite3_stmt *stmt, int64_t result_id, ppb_result *r,
                        unsigned char **session, int **round, int *tagged, ppb_err *err)
{
    sqlite3_reset(stmt);
    *tagged = 0;
    int rc = bind_i64(stmt, ":result_id", result_id, err);
    if (rc)
        return rc;
    if (r->n_samples > 0) {
        r->samples_ms = malloc((size_t)r->n_samples * sizeof *r->samples_ms);
        *session = malloc((size_t)r->n_samples);
        *round = malloc((size_t)r->n_samples * sizeof **round);
        if (!r->samples_ms || !*session || !*round)
            return ppb_fail(err, PPB_ENOMEM, "out of memory reading %d samples", r->n_samples);
    }
    int k = 0, step, untagged = 0;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (k >= r->n_samples || sqlite3_column_int(stmt, 0) != k)
            return ppb_fail(err, PPB_EFAIL, "%s: result %lld: samples do not match n_samples=%d",
                            s->path, (long long)result_id, r->n_samples);
        int has = sqlite3_column_type(stmt, 2) != SQLITE_NULL && sqlite3_column_type(stmt, 3) != SQLITE_NULL;
        *tagged += has, untagged += !has;
        int session_k = sqlite3_column_int(stmt, 2);
        if (has && (session_k < 0 || session_k > 255))
            return ppb_fail(err, PPB_EFAIL, "%s: result %lld: sample %d has session %d", s->path,
                            (long long)result_id, k, session_k);
        (*session)[k] = (unsigned char)(has ? session_k : 0);
        (*round)[k] = has ? sqlite3_column_int(stmt, 3) : 0;
        read_REAL(stmt, 1, &r->samples_ms[k++]);
    }
    if (step != SQLITE_DONE)
        return sqlite_fail(s, err, "reading samples");
    if (k != r->n_samples)
        return ppb_fail(err, PPB_EFAIL, "%s: result %lld has %d samples, n_samples says %d",
                        s->path, (long long)result_id, k, r->n_samples);
    if (*tagged && untagged)
        return ppb_fail(err, PPB_EFAIL, "%s: result %lld: %d of its samples have a session and a round, %d do not",
                        s->path, (long long)result_id, *tagged, untagged);
    *tagged = *tagged > 0;
    return PPB_OK;
}

typedef struct result_walk {
    ppb_store *s;
    sqlite3_stmt *samples;   /* SELECT of one result's samples, reset per row */
    ppb_result res;
    unsigned char *session;  /* the samples' tags, read with them */
    int *round;
    ppb_result_visitor fn;   /* one of the two */
    ppb_tagged_result_visitor tagged_fn;
    void *ctx;
    ppb_err *err;
} result_walk;

static void free_tags(result_walk *w)
{
    free(w->session);
    free(w->round);
    w->session = NULL;
    w->round = NULL;
}

static int result_row(sqlite3_stmt *stmt, void *arg)
{
    result_walk *w = arg;
    ppb_store *s = w->s;
    ppb_case c;
    int64_t result_id = sqlite3_column_int64(stmt, 0);
    const char *key = (const char *)sqlite3_column_text(stmt, 1);
    int rc = ppb_case_from_key(key ? key : "", &c, w->err);
    if (rc != PPB_OK) {
        ppb_err_prefix(w->err, "%s: result %lld: ", s->path, (long long)result_id);
        return rc;
    }
    read_REAL(stmt, 2, &c.weight);
    const char *status = (const char *)sqlite3_column_text(stmt, 3);
    ppb_result_init(&w->res);
    w->res.status = ppb_status_parse(status ? status : "");
    if (w->res.status < 0)
        return ppb_fail(w->err, PPB_EFAIL, "%s: result %lld has unknown status '%s'", s->path,
                        (long long)result_id, status ? status : "");
    copy_column_text(stmt, 4, w->res.reason, sizeof w->res.reason);
    char stored_check[17] = "", check[17];
    copy_column_text(stmt, 5, stored_check, sizeof stored_check);
    int col = 6;
#define READ_RESULT_COLUMN(type, column, member) read_##type(stmt, col++, &w->res.member);
    RESULT_COLUMNS(READ_RESULT_COLUMN)
#undef READ_RESULT_COLUMN
    ppb_feasibility *f = &w->res.feasibility;
    if ((f->judged = sqlite3_column_type(stmt, col) != SQLITE_NULL)) {
        read_INT(stmt, col, &f->feasible);
        read_INT(stmt, col + 1, &f->blocks_per_sm);
        copy_column_text(stmt, col + 2, f->limiter, sizeof f->limiter);
        copy_column_text(stmt, col + 3, f->reason, sizeof f->reason);
        copy_column_text(stmt, col + 4, f->flips, sizeof f->flips);
    }
    int tagged = 0;
    free_tags(w);
    if ((rc = read_samples(s, w->samples, result_id, &w->res, &w->session, &w->round, &tagged, w->err)) != PPB_OK)
        return rc;
    ppb_sample_tags tags = {w->session, w->round};
    row_check(key, c.weight, ppb_status_name(w->res.status), &w->res, tagged ? &tags : NULL, check);
    if (stored_check[0] && strcmp(stored_check, check) != 0)
        return ppb_fail(w->err, PPB_EFAIL, "%s: result %lld (%s) was changed after ppbench wrote it (its row check "
                        "no longer matches): the database was edited or damaged outside ppbench",
                        s->path, (long long)result_id, key);
    rc = w->tagged_fn ? w->tagged_fn(w->ctx, &c, &w->res, tagged ? &tags : NULL) : w->fn(w->ctx, &c, &w->res);
    ppb_result_free(&w->res);
    free_tags(w);
    return rc;
}

static int each_result(ppb_store *s, int64_t run_id, ppb_result_visitor fn, ppb_tagged_result_visitor tagged_fn,
                       void *ctx, ppb_err *err)
{
    static const char sql[] =
        "SELECT r.id, c.key, r.weight, r.status, r.reason, r.row_check" RESULT_COLUMNS(RESULT_SELECT_LIST)
        ", r.feasible, r.blocks_per_sm, r.feasibility_limiter, r.feasibility_reason, r.feasibility_flips"
        " FROM results r JOIN cases c ON c.id = r.case_id"
        " WHERE r.run_id = :run_id ORDER BY r.id";
    int rc = run_exists(s, run_id, err);
    if (rc)
        return rc;
    result_walk w = {.s = s, .fn = fn, .tagged_fn = tagged_fn, .ctx = ctx, .err = err};
    ppb_result_init(&w.res);
    /* The outer statement stays active for the whole walk, so the connection
     * holds one read transaction: results and samples come from one snapshot
     * even while another process appends to the run. */
    if ((rc = prepare(s, "SELECT idx, ms, session, round FROM samples WHERE result_id = :result_id ORDER BY idx",
                      &w.samples, err)) == PPB_OK)
        rc = each_row(s, sql, PARAMS(P_INT(":run_id", run_id)), result_row, &w, "reading results", err);
    ppb_result_free(&w.res);
    free_tags(&w);
    sqlite3_finalize(w.samples);
    return rc;
}

int ppb_store_each_result(ppb_store *s, int64_t run_id, ppb_result_visitor fn, void *ctx, ppb_err *err)
{
    return each_result(s, run_id, fn, NULL, ctx, err);
}

int ppb_store_each_tagged_result(ppb_store *s, int64_t run_id, ppb_tagged_result_visitor fn, void *ctx,
                                 ppb_err *err)
{
    return each_result(s, run_id, NULL, fn, ctx, err);
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
    int rc = prepare_bound(s, sql, PARAMS(P_INT(":run_id", run_id)), &stmt, err);
    if (rc)
        return rc;
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
    "   'status', status, 'args', args, 'n_cases', n_cases, 'kind', kind,"
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
    "   'feasibility', CASE WHEN r.feasible IS NULL THEN NULL ELSE json_object("
    "     'feasible', r.feasible, 'blocks_per_sm', r.blocks_per_sm, 'limiter', r.feasibility_limiter,"
    "     'reason', r.feasibility_reason, 'flips', r.feasibility_flips) END,"
    "   'samples', json((SELECT json_group_array(" JNUM("ms") ") FROM"
    "     (SELECT ms FROM samples WHERE result_id = r.id ORDER BY idx)))"
    "   ) AS item"
    "   FROM results r JOIN cases c ON c.id = r.case_id"
    "   WHERE r.run_id = runs.id ORDER BY r.id)))"
    ") FROM runs WHERE id = :run_id";

/* A document SQLite builds in one row and one column, written to out with a
 * newline (the caller checks the stream). NO_ROW when the query finds none. */
typedef struct doc_sink {
    ppb_store *s;
    FILE *out;
    const char *what;
    ppb_err *err;
} doc_sink;

static int doc_row(sqlite3_stmt *stmt, void *arg)
{
    const doc_sink *d = arg;
    const char *doc = (const char *)sqlite3_column_text(stmt, 0);
    if (!doc)
        return sqlite_fail(d->s, d->err, d->what);
    fprintf(d->out, "%s\n", doc);
    return PPB_OK;
}

static int write_doc(ppb_store *s, const char *sql, const sql_param *params, FILE *out, const char *what,
                     ppb_err *err)
{
    doc_sink d = {s, out, what, err};
    return one_row(s, sql, params, doc_row, &d, what, err);
}

/* One document, built by SQLite. A field that does not apply to the case's
 * kernel is NULL in its column; patching it onto '{}' drops it from the case. */
static int export_json(ppb_store *s, int64_t run_id, FILE *out, ppb_err *err)
{
    static const char what[] = "exporting a run as JSON";
    int rc = write_doc(s, export_json_sql, PARAMS(P_INT(":run_id", run_id)), out, what, err);
    return rc == NO_ROW ? sqlite_fail(s, err, what) : rc;
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

/* ---- what a run's documents say beside its rows ---------------------------- */

int ppb_store_read_begin(ppb_store *s, ppb_err *err)
{
    return exec_sql(s, "BEGIN", "starting to read", err);
}

void ppb_store_read_end(ppb_store *s)
{
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
}

typedef struct status_tally {
    ppb_store *s;
    int *counts;
    ppb_err *err;
} status_tally;

static int status_count_row(sqlite3_stmt *stmt, void *arg)
{
    const status_tally *t = arg;
    const char *name = (const char *)sqlite3_column_text(stmt, 0);
    int status = ppb_status_parse(name ? name : "");
    if (status < 0)
        return ppb_fail(t->err, PPB_EFAIL, "%s: a result has unknown status '%s'", t->s->path, name ? name : "");
    t->counts[status] = sqlite3_column_int(stmt, 1);
    return PPB_OK;
}

int ppb_store_run_status_counts(ppb_store *s, int64_t run_id, int counts[PPB_STATUS_COUNT], ppb_err *err)
{
    memset(counts, 0, PPB_STATUS_COUNT * sizeof *counts);
    int rc = run_exists(s, run_id, err);
    status_tally t = {s, counts, err};
    return rc ? rc
              : each_row(s, "SELECT status, count(*) FROM results WHERE run_id = :run_id GROUP BY status",
                         PARAMS(P_INT(":run_id", run_id)), status_count_row, &t, "counting results", err);
}

typedef struct impl_walk {
    ppb_impl_visitor fn;
    void *ctx;
} impl_walk;

static int impl_row(sqlite3_stmt *stmt, void *arg)
{
    const impl_walk *w = arg;
    const char *impl = (const char *)sqlite3_column_text(stmt, 0);
    return w->fn(w->ctx, impl ? impl : "");
}

int ppb_store_each_run_impl(ppb_store *s, int64_t run_id, ppb_impl_visitor fn, void *ctx, ppb_err *err)
{
    impl_walk w = {fn, ctx};
    return each_row(s,
                    "SELECT DISTINCT c.impl FROM results r JOIN cases c ON c.id = r.case_id"
                    " WHERE r.run_id = :run_id ORDER BY c.impl",
                    PARAMS(P_INT(":run_id", run_id)), impl_row, &w, "listing a run's implementations", err);
}

typedef struct env_value_read {
    char *value;
    size_t len;
} env_value_read;

static int env_value_row(sqlite3_stmt *stmt, void *arg)
{
    const env_value_read *v = arg;
    copy_column_text(stmt, 0, v->value, v->len);
    return PPB_OK;
}

int ppb_store_get_env(ppb_store *s, int64_t run_id, const char *key, char *value, size_t len, ppb_err *err)
{
    env_value_read v = {value, len};
    value[0] = '\0';
    int rc = one_row(s, "SELECT value FROM env WHERE run_id = :run_id AND key = :key",
                     PARAMS(P_INT(":run_id", run_id), P_TEXT(":key", key)), env_value_row, &v,
                     "reading an env entry", err);
    return rc == NO_ROW ? 0 : rc == PPB_OK ? 1 : rc;
}

int ppb_store_run_timing(ppb_store *s, int64_t run_id, char *timing, size_t len, ppb_err *err)
{
    int rc = ppb_store_get_env(s, run_id, PPB_ENV_KERNEL_THREADS, timing, len, err);
    return rc < 0 ? rc : PPB_OK;
}

/* ---- proposal verdicts ----------------------------------------------------- */

static int insert_proposal_case(ppb_store *s, int64_t proposal_id, int idx,
                                const ppb_proposal_case *c, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO proposal_cases(proposal_id, idx, baseline_key, candidate_key, weight, state,"
        " class, ratio, ratio_lo, ratio_hi, p_holm, looks_taken, looks_planned, sessions, between_sd, alpha,"
        " stop_alpha, look_share, noise, history, history_split, baseline_offset) VALUES(:pid, :idx, :bk, :ck, :w,"
        " :state, :cls, :ratio, :lo, :hi, :p, :lt, :lp, :ss, :bsd, :alpha, :salpha, :share, :noise, :hist, :split,"
        " :boff)";
    return exec_stmt(s, sql,
                     PARAMS(P_INT(":pid", proposal_id), P_INT(":idx", idx), P_TEXTN(":bk", c->baseline_key),
                            P_TEXTN(":ck", c->candidate_key), P_REAL(":w", c->weight),
                            P_TEXTN(":state", c->state), P_TEXTN(":cls", c->cls), P_REAL(":ratio", c->ratio),
                            P_REAL(":lo", c->ratio_lo), P_REAL(":hi", c->ratio_hi), P_REAL(":p", c->p_holm),
                            P_INT(":lt", c->looks_taken), P_INT(":lp", c->looks_planned),
                            P_INT(":ss", c->sessions), P_REAL(":bsd", c->between_sd), P_REAL(":alpha", c->alpha),
                            P_REAL(":salpha", c->stop_alpha), P_REAL(":share", c->look_share),
                            P_REAL(":noise", c->noise),
                            P_INT(":hist", c->history), P_INT0(":split", c->history_split),
                            P_REAL(":boff", c->baseline_offset)),
                     "storing a proposal case", err);
}

/* The time the database stamped on a proposal it stored. */
static int created_at_row(sqlite3_stmt *stmt, void *rec)
{
    ppb_proposal_record *r = rec;
    copy_column_text(stmt, 0, r->created_at, sizeof r->created_at);
    return PPB_OK;
}

int ppb_store_put_proposal(ppb_store *s, ppb_proposal_record *rec, const ppb_proposal_case *cases,
                           int n_cases, ppb_err *err)
{
    static const char sql[] =
        "INSERT INTO proposals(name, path, kind, target, baseline_run, candidate_run, verdict,"
        " geomean_ratio, geomean_lo, geomean_hi, reasons, min_gain, max_regression, threshold, detectable,"
        " rule_version, alpha, require_correct, method, bootstrap_reps, seed, samples_per_round, min_rounds,"
        " max_rounds, sessions, budget_ms, min_history, max_history, wall_ms, setup_ms, inputs_ms, check_ms,"
        " warmup_ms, sampling_ms, kernel_ms, fixed_kernel_ms, fixed_samples, settled_by_pair, baseline_shift,"
        " candidate_shift)"
        " VALUES(:name, :path, :kind, :target, :brun, :crun, :verdict, :g, :glo, :ghi, :reasons, :mg, :mr, :t, :det,"
        " :rv, CASE WHEN :rv IS NULL THEN NULL ELSE :alpha END, CASE WHEN :rv IS NULL THEN NULL ELSE :rc END,"
        " CASE WHEN :rv IS NULL THEN NULL ELSE :method END,"
        " CASE WHEN :rv IS NULL THEN NULL ELSE :reps END, CASE WHEN :rv IS NULL THEN NULL ELSE :seed END,"
        " :spr, :minr, :maxr, :ss, CASE WHEN :spr IS NULL THEN NULL ELSE :budget END, :minh, :maxh,"
        " :wall, :setup, :inputs, :check, :warmup, :sampling, :kernel, :fixed, :fixedn, :settled, :bshift, :cshift)";
    /* a cost without a wall time was not measured (compare, kv_capacity): NULL, not zeros */
    static const ppb_proposal_cost unmeasured = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, 0};
    const ppb_proposal_cost *c = rec->cost.wall_ms > 0 ? &rec->cost : &unmeasured;
    int rc = exec_sql(s, "BEGIN IMMEDIATE", "starting to store a proposal", err);
    if (rc)
        return rc;
    if ((rc = exec_stmt(s, sql,
                        PARAMS(P_TEXTN(":name", rec->name), P_TEXTN(":path", rec->path),
                               P_TEXTN(":kind", rec->kind), P_TEXTN(":target", rec->target),
                               P_RUN(":brun", rec->baseline_run), P_RUN(":crun", rec->candidate_run),
                               P_TEXTN(":verdict", rec->verdict), P_REAL(":g", rec->geomean_ratio),
                               P_REAL(":glo", rec->geomean_lo), P_REAL(":ghi", rec->geomean_hi),
                               P_TEXTN(":reasons", rec->reasons), P_REAL(":mg", rec->min_gain),
                               P_REAL(":mr", rec->max_regression), P_REAL(":t", rec->threshold),
                               P_REAL(":det", rec->detectable), P_INT0(":rv", rec->rule_version),
                               P_REAL(":alpha", rec->alpha), P_INT(":rc", rec->require_correct),
                               P_TEXTN(":method", rec->method), P_INT(":reps", rec->bootstrap_reps),
                               P_INT(":seed", (long long)rec->seed), P_INT0(":spr", rec->samples_per_round),
                               P_INT0(":minr", rec->min_rounds), P_INT0(":maxr", rec->max_rounds),
                               P_INT0(":ss", rec->sessions), P_REAL(":budget", rec->budget_ms),
                               P_INT0(":minh", rec->min_history), P_INT0(":maxh", rec->max_history),
                               P_REAL(":wall", c->wall_ms), P_REAL(":setup", c->setup_ms),
                               P_REAL(":inputs", c->inputs_ms), P_REAL(":check", c->check_ms),
                               P_REAL(":warmup", c->warmup_ms), P_REAL(":sampling", c->sampling_ms),
                               P_REAL(":kernel", c->kernel_ms), P_REAL(":fixed", c->fixed_kernel_ms),
                               P_INT0(":fixedn", c->fixed_samples), P_INT0(":settled", c->settled_by_pair),
                               P_REAL(":bshift", rec->baseline_shift), P_REAL(":cshift", rec->candidate_shift)),
                        "storing a proposal", err)))
        goto fail;
    rec->id = sqlite3_last_insert_rowid(s->db);
    if ((rc = one_row(s, "SELECT created_at FROM proposals WHERE id = :id", PARAMS(P_INT(":id", rec->id)),
                      created_at_row, rec, "storing a proposal", err)))
        goto fail;
    for (int i = 0; i < n_cases; i++)
        if ((rc = insert_proposal_case(s, rec->id, i, &cases[i], err)))
            goto fail;
    if ((rc = exec_sql(s, "COMMIT", "committing a proposal", err)))
        goto fail;
    return PPB_OK;
fail:
    rollback_if_open(s);
    return rc;
}

typedef struct proposal_read {
    ppb_store *s;
    int64_t id;
    ppb_proposal_record *rec;
    ppb_err *err;
} proposal_read;

static int proposal_row(sqlite3_stmt *stmt, void *arg)
{
    const proposal_read *p = arg;
    ppb_proposal_record *rec = p->rec;
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
    if ((size_t)sqlite3_column_bytes(stmt, 11) >= sizeof rec->reasons)
        return ppb_fail(p->err, PPB_EIO, "%s: proposal %lld: its reasons are longer than %zu bytes (a merged "
                        "database of another build?): not read cut", p->s->path, (long long)p->id,
                        sizeof rec->reasons);
    copy_column_text(stmt, 11, rec->reasons, sizeof rec->reasons);
    copy_column_text(stmt, 12, rec->created_at, sizeof rec->created_at);
    read_REAL(stmt, 13, &rec->min_gain);
    read_REAL(stmt, 14, &rec->max_regression);
    read_REAL(stmt, 15, &rec->threshold);
    read_REAL(stmt, 16, &rec->detectable);
    read_INT(stmt, 17, &rec->rule_version);
    read_REAL(stmt, 18, &rec->alpha);
    read_INT(stmt, 19, &rec->require_correct);
    copy_column_text(stmt, 20, rec->method, sizeof rec->method);
    read_INT(stmt, 21, &rec->bootstrap_reps);
    rec->seed = (uint64_t)sqlite3_column_int64(stmt, 22);
    read_INT(stmt, 23, &rec->samples_per_round);
    read_INT(stmt, 24, &rec->min_rounds);
    read_INT(stmt, 25, &rec->max_rounds);
    read_INT(stmt, 26, &rec->sessions);
    read_REAL(stmt, 27, &rec->budget_ms);
    read_INT(stmt, 28, &rec->min_history);
    read_INT(stmt, 29, &rec->max_history);
    ppb_proposal_cost *c = &rec->cost;
    double *phase[] = {&c->wall_ms, &c->setup_ms, &c->inputs_ms, &c->check_ms, &c->warmup_ms,
                       &c->sampling_ms, &c->kernel_ms, &c->fixed_kernel_ms};
    for (int i = 0; i < (int)(sizeof phase / sizeof phase[0]); i++)
        read_REAL(stmt, 30 + i, phase[i]);
    read_INT(stmt, 38, &c->fixed_samples);
    read_INT(stmt, 39, &c->settled_by_pair);
    read_REAL(stmt, 40, &rec->baseline_shift);
    read_REAL(stmt, 41, &rec->candidate_shift);
    return PPB_OK;
}

int ppb_store_get_proposal(ppb_store *s, int64_t id, ppb_proposal_record *rec, ppb_err *err)
{
    static const char sql[] =
        "SELECT id, name, path, kind, target, COALESCE(baseline_run, 0),"
        " COALESCE(candidate_run, 0), verdict, geomean_ratio, geomean_lo, geomean_hi, reasons,"
        " created_at, min_gain, max_regression, threshold, detectable, rule_version, alpha, require_correct,"
        " method, bootstrap_reps, seed, samples_per_round, min_rounds, max_rounds, sessions, budget_ms,"
        " min_history, max_history, wall_ms, setup_ms, inputs_ms, check_ms, warmup_ms, sampling_ms, kernel_ms,"
        " fixed_kernel_ms, fixed_samples, settled_by_pair, baseline_shift, candidate_shift FROM proposals"
        " WHERE id = :id";
    proposal_read p = {s, id, rec, err};
    int rc = one_row(s, sql, PARAMS(P_INT(":id", id)), proposal_row, &p, "reading a proposal", err);
    if (rc == NO_ROW)
        rc = ppb_fail(err, PPB_EINPUT, "%s: proposal %lld not found", s->path, (long long)id);
    return rc;
}

int64_t ppb_store_latest_proposal(ppb_store *s)
{
    return latest_id(s, "SELECT COALESCE(max(id), 0) FROM proposals");
}

typedef struct proposal_case_walk {
    ppb_proposal_case_visitor fn;
    void *ctx;
} proposal_case_walk;

static int proposal_case_row(sqlite3_stmt *stmt, void *arg)
{
    const proposal_case_walk *w = arg;
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
    read_INT(stmt, 9, &c.looks_taken);
    read_INT(stmt, 10, &c.looks_planned);
    read_INT(stmt, 11, &c.sessions);
    read_REAL(stmt, 12, &c.between_sd);
    read_REAL(stmt, 13, &c.alpha);
    read_REAL(stmt, 14, &c.stop_alpha);
    read_REAL(stmt, 15, &c.noise);
    read_INT(stmt, 16, &c.history);
    read_REAL(stmt, 17, &c.look_share);
    read_INT(stmt, 18, &c.history_split);
    read_REAL(stmt, 19, &c.baseline_offset);
    return w->fn(w->ctx, &c);
}

int ppb_store_each_proposal_case(ppb_store *s, int64_t id, ppb_proposal_case_visitor fn, void *ctx,
                                 ppb_err *err)
{
    static const char sql[] =
        "SELECT baseline_key, candidate_key, weight, state, class, ratio, ratio_lo, ratio_hi,"
        " p_holm, looks_taken, looks_planned, sessions, between_sd, alpha, stop_alpha, noise, history, look_share,"
        " history_split, baseline_offset FROM proposal_cases WHERE proposal_id = :id ORDER BY idx";
    proposal_case_walk w = {fn, ctx};
    return each_row(s, sql, PARAMS(P_INT(":id", id)), proposal_case_row, &w, "reading proposal cases", err);
}

int ppb_store_add_run_wall(ppb_store *s, int64_t run_id, const ppb_run_wall *w, ppb_err *err)
{
    int rc = exec_stmt(s,
                       "UPDATE runs SET wall_ms = wall_ms + :ms, open_ms = open_ms + :op, store_ms = store_ms + :st"
                       " WHERE id = :id",
                       PARAMS(P_REAL(":ms", w->wall_ms), P_REAL(":op", w->open_ms), P_REAL(":st", w->store_ms),
                              P_INT(":id", run_id)),
                       "storing a run's wall time", err);
    if (rc == PPB_OK && sqlite3_changes(s->db) == 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
    return rc;
}

static int read_run_time(sqlite3_stmt *stmt, void *out)
{
    ppb_run_time *t = out;
    t->wall_s = sqlite3_column_double(stmt, 0);
    t->generate_s = sqlite3_column_double(stmt, 1);
    t->check_s = sqlite3_column_double(stmt, 2);
    t->warmup_s = sqlite3_column_double(stmt, 3);
    t->sampling_s = sqlite3_column_double(stmt, 4);
    t->cases = sqlite3_column_int(stmt, 5);
    t->kernel_s = sqlite3_column_double(stmt, 6);
    t->store_s = sqlite3_column_double(stmt, 7);
    t->open_s = sqlite3_column_double(stmt, 8);
    return PPB_OK;
}

int ppb_store_run_time(ppb_store *s, int64_t run_id, ppb_run_time *out, ppb_err *err)
{
    static const char sql[] =
        "SELECT CASE WHEN u.wall_ms > 0 THEN u.wall_ms / 1e3 ELSE"
        "  (julianday(COALESCE(NULLIF(u.finished_at, ''), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))"
        "   - julianday(u.started_at)) * 86400.0 END,"
        "  r.g / 1e3, r.c / 1e3, r.w / 1e3, r.s / 1e3, r.n,"
        "  (SELECT COALESCE(sum(x.ms * y.batch_launches), 0) / 1e3 FROM samples x JOIN results y"
        "     ON y.id = x.result_id WHERE y.run_id = :id),"
        "  u.store_ms / 1e3, u.open_ms / 1e3"
        " FROM runs u, (SELECT COALESCE(sum(generate_ms), 0) g, COALESCE(sum(check_ms), 0) c,"
        "   COALESCE(sum(warmup_ms), 0) w, COALESCE(sum(sampling_ms), 0) s, count(*) n"
        "   FROM results WHERE run_id = :id) r"
        " WHERE u.id = :id";
    memset(out, 0, sizeof *out);
    int rc = one_row(s, sql, PARAMS(P_INT(":id", run_id)), read_run_time, out, "reading a run's time", err);
    if (rc == NO_ROW)
        rc = ppb_fail(err, PPB_EINPUT, "%s: run %lld not found", s->path, (long long)run_id);
    return rc;
}

/* ---- history (trend) ------------------------------------------------------- */

typedef struct history_walk {
    ppb_history_visitor fn;
    void *ctx;
} history_walk;

static int history_row(sqlite3_stmt *stmt, void *arg)
{
    const history_walk *w = arg;
    ppb_history_point p;
    memset(&p, 0, sizeof p);
    p.run_id = sqlite3_column_int64(stmt, 0);
    copy_column_text(stmt, 1, p.started_at, sizeof p.started_at);
    copy_column_text(stmt, 2, p.status, sizeof p.status);
    read_REAL(stmt, 3, &p.median_ms);
    copy_column_text(stmt, 4, p.uid, sizeof p.uid);
    return w->fn(w->ctx, &p);
}

/* A run u timed as :timing says (:any_timing 1: every run), the one definition of
 * ppb_store_run_timing's rule for the history readers. */
#define TIMED_AS                                                                                                \
    " (:any_timing OR COALESCE((SELECT e.value FROM env e WHERE e.run_id = u.id AND e.key = '"                  \
    PPB_ENV_KERNEL_THREADS "'), '') = :timing)"

int ppb_store_case_history(ppb_store *s, const char *suite_name, const char *case_key, const char *since,
                           const char *kinds, const char *timing, ppb_history_visitor fn, void *ctx, ppb_err *err)
{
    static const char sql[] =
        "SELECT u.id, u.started_at, r.status, r.median_ms, COALESCE(u.uid, '') FROM results r"
        " JOIN runs u ON u.id = r.run_id JOIN cases c ON c.id = r.case_id"
        " WHERE u.suite_name = :suite AND c.key = :key AND u.started_at >= :since AND" KIND_IN_LIST " AND" TIMED_AS
        " ORDER BY u.started_at, u.id";
    if (kinds && *kinds) {
        int rc = ppb_store_run_kinds_check(kinds, err);
        if (rc)
            return rc;
    }
    history_walk w = {fn, ctx};
    return each_row(s, sql,
                    PARAMS(P_TEXT(":suite", suite_name), P_TEXT(":key", case_key),
                           P_TEXT(":since", since ? since : ""), P_TEXT(":kinds", kinds ? kinds : ""),
                           P_INT(":any_timing", timing == NULL), P_TEXT(":timing", timing ? timing : "")),
                    history_row, &w, "reading a case's history", err);
}

int ppb_store_runs_timed_otherwise(ppb_store *s, const char *suite_name, const char *since, const char *kinds,
                                   const char *timing, int *count, ppb_err *err)
{
    *count = 0;
    if (!timing)
        return PPB_OK;
    if (kinds && *kinds) {
        int rc = ppb_store_run_kinds_check(kinds, err);
        if (rc)
            return rc;
    }
    long long n = 0;
    int rc = one_row(s,
                     "SELECT count(*) FROM runs u WHERE u.suite_name = :suite AND u.started_at >= :since AND"
                     KIND_IN_LIST " AND NOT" TIMED_AS,
                     PARAMS(P_TEXT(":suite", suite_name), P_TEXT(":since", since ? since : ""),
                            P_TEXT(":kinds", kinds ? kinds : ""), P_INT(":any_timing", 0), P_TEXT(":timing", timing)),
                     read_int64, &n, "counting a suite's runs timed otherwise", err);
    *count = (int)n;
    return rc;
}

int64_t ppb_store_latest_run_of_suite(ppb_store *s, const char *suite_name, const char *kinds)
{
    long long id = 0;
    ppb_err ignored;
    if (kinds && *kinds && ppb_store_run_kinds_check(kinds, &ignored))
        return PPB_EINPUT;
    int rc = one_row(s, "SELECT COALESCE(max(id), 0) FROM runs u WHERE suite_name = :suite AND" KIND_IN_LIST,
                     PARAMS(P_TEXT(":suite", suite_name), P_TEXT(":kinds", kinds ? kinds : "")), read_int64, &id,
                     "finding a suite's runs", &ignored);
    return rc == PPB_OK ? id : PPB_EIO;
}
