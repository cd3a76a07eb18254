/* Merging results databases (merge.h). The source is ATTACHed to the output's
 * connection as "src" and copied with INSERT ... SELECT in one transaction.
 * Column lists are read from the schema (PRAGMA table_info), which the check
 * below proves identical on both sides, so a later migration that adds a
 * column is merged without touching this file. */
#include "merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_internal.h"

#define SQL_MAX 16384

static int sql_fail(sqlite3 *db, ppb_err *err, const char *what)
{
    return ppb_fail(err, PPB_EIO, "merge: %s: %s", what, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, const char *sql, const char *what, ppb_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ppb_fail(err, PPB_EIO, "merge: %s: %s", what, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return PPB_EIO;
    }
    return PPB_OK;
}

/* The first column of the first row, as an integer. */
static int query_int(sqlite3 *db, const char *sql, long long *out, ppb_err *err)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return sql_fail(db, err, sql);
    int rc = PPB_OK;
    if (sqlite3_step(stmt) == SQLITE_ROW)
        *out = sqlite3_column_int64(stmt, 0);
    else
        rc = sql_fail(db, err, sql);
    sqlite3_finalize(stmt);
    return rc;
}

/* Run a statement that changes rows; `changed` gets how many. */
static int exec_count(sqlite3 *db, const char *sql, int *changed, const char *what, ppb_err *err)
{
    int rc = exec(db, sql, what, err);
    if (rc == PPB_OK && changed)
        *changed = sqlite3_changes(db);
    return rc;
}

/* ---- the source check ---------------------------------------------------------- */

int ppb_merge_check_source(const char *path, ppb_err *err)
{
    sqlite3 *db = NULL;
    int rc = PPB_OK;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = ppb_fail(err, PPB_EINPUT, "%s: cannot open: %s", path,
                      db ? sqlite3_errmsg(db) : "out of memory");
        goto end;
    }
    long long app_id = 0, version = 0;
    ppb_err qerr;
    if (query_int(db, "PRAGMA application_id", &app_id, &qerr) != PPB_OK ||
        query_int(db, "PRAGMA user_version", &version, &qerr) != PPB_OK) {
        rc = ppb_fail(err, PPB_EINPUT, "%s is not a SQLite database (%s)", path,
                      sqlite3_errmsg(db));
        goto end;
    }
    if ((uint32_t)app_id != PPB_STORE_APPLICATION_ID) {
        rc = ppb_fail(err, PPB_EINPUT, "%s is not a ppbench database (application_id 0x%08llx)",
                      path, (unsigned long long)(uint32_t)app_id);
        goto end;
    }
    if (version < PPB_STORE_SCHEMA_VERSION)
        rc = ppb_fail(err, PPB_EINPUT,
                      "%s has schema version %lld, this ppbench writes %d: the schemas do not "
                      "match. Migrate it first by opening it once with this ppbench "
                      "(ppbench list --db %s), then merge",
                      path, version, PPB_STORE_SCHEMA_VERSION, path);
    else if (version > PPB_STORE_SCHEMA_VERSION)
        rc = ppb_fail(err, PPB_EINPUT,
                      "%s has schema version %lld, newer than this ppbench (%d): merge with a "
                      "newer ppbench",
                      path, version, PPB_STORE_SCHEMA_VERSION);
end:
    sqlite3_close(db);
    return rc;
}

/* Both directions of the set difference of the schema text: any table, index
 * or trigger that differs in name or definition is a mismatch. */
static int check_same_schema(sqlite3 *db, const char *src_path, ppb_err *err)
{
    static const char sql[] =
        "SELECT count(*) FROM ("
        " SELECT * FROM (SELECT type, name, sql FROM main.sqlite_master"
        "   WHERE name NOT LIKE 'sqlite_%'"
        "  EXCEPT SELECT type, name, sql FROM src.sqlite_master)"
        " UNION ALL"
        " SELECT * FROM (SELECT type, name, sql FROM src.sqlite_master"
        "   WHERE name NOT LIKE 'sqlite_%'"
        "  EXCEPT SELECT type, name, sql FROM main.sqlite_master))";
    long long differing = 0;
    int rc = query_int(db, sql, &differing, err);
    if (rc)
        return rc;
    if (differing)
        return ppb_fail(err, PPB_EINPUT,
                        "%s: its schema differs from the output's in %lld table, index or "
                        "trigger definitions (same version, different schema): refusing to "
                        "merge",
                        src_path, differing);
    return PPB_OK;
}

/* ---- column lists from the schema ------------------------------------------------ */

/* Comma-separated, quoted column names of main.<table>, each prefixed with
 * `prefix` ("" or "s."), leaving out the names in `skip` (NULL-terminated). */
static int column_list(sqlite3 *db, const char *table, const char *const *skip,
                       const char *prefix, char *out, size_t len, ppb_err *err)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s', 'main') ORDER BY cid",
             table);
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return sql_fail(db, err, "reading a table's columns");
    size_t used = 0;
    int rc = PPB_OK, step;
    out[0] = '\0';
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++)
            skipped |= strcmp(name, skip[i]) == 0;
        if (skipped)
            continue;
        int n = snprintf(out + used, len - used, "%s%s\"%s\"", used ? ", " : "", prefix, name);
        if (n < 0 || (size_t)n >= len - used) {
            rc = ppb_fail(err, PPB_EFAIL, "merge: column list of %s too long", table);
            goto end;
        }
        used += (size_t)n;
    }
    if (step != SQLITE_DONE)
        rc = sql_fail(db, err, "reading a table's columns");
    else if (used == 0)
        rc = ppb_fail(err, PPB_EFAIL, "merge: table %s has no columns", table);
end:
    sqlite3_finalize(stmt);
    return rc;
}

/* Both lists a copy of main.<table> needs: the names for its INSERT and the
 * same names on the source row "s." for its SELECT, in one order. */
typedef struct column_pair {
    char cols[8192];
    char scols[8192];
} column_pair;

static int column_pair_of(sqlite3 *db, const char *table, const char *const *skip, column_pair *out,
                          ppb_err *err)
{
    int rc = column_list(db, table, skip, "", out->cols, sizeof out->cols, err);
    return rc ? rc : column_list(db, table, skip, "s.", out->scols, sizeof out->scols, err);
}

/* ---- the merge -------------------------------------------------------------------------- */

/* The status of a run made of two: any failed part fails it, any running one
 * keeps it running, any interrupted one leaves it to be resumed. */
static const char *combined_status(const char *a, const char *b)
{
    static const char *const order[] = {"failed", "running", "interrupted"};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (strcmp(a, order[i]) == 0 || strcmp(b, order[i]) == 0)
            return order[i];
    return "complete";
}

/* The next source shard not yet here (by uid, as a run or a folded part),
 * and the run of its night here if there is one: same group, suite, shard
 * count, backend and filter (the args without their shard line), none of the
 * source run's shards present yet. A shard present already (a re-run) finds
 * none and is kept apart as a run of its own. */
static const char next_shard[] =
    "SELECT s.id, s.shard_index, s.n_cases, s.status, s.started_at, s.finished_at, d.id, d.status"
    " FROM src.runs s LEFT JOIN main.runs d ON d.id = (SELECT r.id FROM main.runs r"
    "   WHERE r.run_group = s.run_group AND r.suite_hash = s.suite_hash"
    "   AND r.shard_count = s.shard_count AND r.backend = s.backend"
    "   AND replace(r.args, 'shard=' || r.shard_index || '/' || r.shard_count, '')"
    "     = replace(s.args, 'shard=' || s.shard_index || '/' || s.shard_count, '')"
    "   AND NOT EXISTS (SELECT 1 FROM main.run_parts p JOIN src.run_parts q ON q.shard_index = p.shard_index"
    "     WHERE p.run_id = r.id AND q.run_id = s.id)"
    "   ORDER BY r.id LIMIT 1)"
    " WHERE s.shard_count > 0 AND s.run_group <> ''"
    "   AND s.uid NOT IN (SELECT uid FROM main.runs) AND s.uid NOT IN (SELECT uid FROM main.run_parts)"
    " ORDER BY s.id LIMIT 1";

/* Fold one source shard (a row of next_shard) into its night's run: its
 * parts, its planned cases, the combined status and times, and its
 * environment under "shard<K>." (each host keeps its own facts). Its results
 * follow through run_parts in merge_results. */
static int fold_one(sqlite3 *db, sqlite3_stmt *row, ppb_err *err)
{
    static const char parts[] =
        "INSERT INTO main.run_parts(run_id, uid, shard_index, host)"
        " SELECT ?2, uid, shard_index, host FROM src.run_parts WHERE run_id = ?1";
    static const char env[] =
        "INSERT OR IGNORE INTO main.env(run_id, key, value)"
        " SELECT ?2, 'shard' || ?3 || '.' || key, value FROM src.env WHERE run_id = ?1 ORDER BY rowid";
    static const char update[] =
        "UPDATE main.runs SET n_cases = n_cases + ?2, status = ?3, started_at = min(started_at, ?4),"
        " finished_at = CASE WHEN ?3 = 'running' THEN NULL ELSE max(coalesce(finished_at, ''), ?5) END,"
        " wall_ms = wall_ms + coalesce((SELECT wall_ms FROM src.runs WHERE id = ?6), 0)," /* machine time */
        " store_ms = store_ms + coalesce((SELECT store_ms FROM src.runs WHERE id = ?6), 0),"
        " open_ms = open_ms + coalesce((SELECT open_ms FROM src.runs WHERE id = ?6), 0)"
        " WHERE id = ?1";
    sqlite3_int64 src_id = sqlite3_column_int64(row, 0), dst_id = sqlite3_column_int64(row, 6);
    const char *src_status = (const char *)sqlite3_column_text(row, 3);
    const char *dst_status = (const char *)sqlite3_column_text(row, 7);
    const char *status = combined_status(src_status ? src_status : "", dst_status ? dst_status : "");
    sqlite3_stmt *st[3] = {NULL, NULL, NULL};
    int rc = PPB_OK;
    if (sqlite3_prepare_v2(db, parts, -1, &st[0], NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, env, -1, &st[1], NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, update, -1, &st[2], NULL) != SQLITE_OK) {
        rc = sql_fail(db, err, "preparing to fold a shard");
        goto end;
    }
    sqlite3_bind_int64(st[0], 1, src_id);
    sqlite3_bind_int64(st[0], 2, dst_id);
    sqlite3_bind_int64(st[1], 1, src_id);
    sqlite3_bind_int64(st[1], 2, dst_id);
    sqlite3_bind_int(st[1], 3, sqlite3_column_int(row, 1));
    sqlite3_bind_int64(st[2], 1, dst_id);
    sqlite3_bind_int(st[2], 2, sqlite3_column_int(row, 2));
    sqlite3_bind_text(st[2], 3, status, -1, SQLITE_STATIC);
    sqlite3_bind_value(st[2], 4, sqlite3_column_value(row, 4));
    sqlite3_bind_text(st[2], 5, sqlite3_column_type(row, 5) == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(row, 5),
                      -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st[2], 6, src_id);
    for (int i = 0; i < 3 && rc == PPB_OK; i++)
        if (sqlite3_step(st[i]) != SQLITE_DONE)
            rc = sql_fail(db, err, "folding a shard into its night's run");
end:
    for (int i = 0; i < 3; i++)
        sqlite3_finalize(st[i]);
    return rc;
}

/* Copy the runs given by `where` (a condition on the source run s) and their
 * shard parts. */
static int copy_runs(sqlite3 *db, const char *where, int *added, ppb_err *err)
{
    static const char *const skip_id[] = {"id", NULL};
    column_pair c;
    char sql[SQL_MAX];
    int rc = column_pair_of(db, "runs", skip_id, &c, err);
    if (rc)
        return rc;
    snprintf(sql, sizeof sql, "INSERT INTO main.runs(%s) SELECT %s FROM src.runs s WHERE %s ORDER BY s.id", c.cols,
             c.scols, where);
    int n = 0;
    if ((rc = exec_count(db, sql, &n, "copying runs", err)))
        return rc;
    *added += n;
    return exec(db,
                "INSERT INTO main.run_parts(run_id, uid, shard_index, host)"
                " SELECT du.id, p.uid, p.shard_index, p.host FROM src.run_parts p"
                " JOIN src.runs su ON su.id = p.run_id JOIN main.runs du ON du.uid = su.uid"
                " WHERE p.uid NOT IN (SELECT uid FROM main.run_parts)",
                "copying shard parts", err);
}

/* Shards one at a time, in the source's order: the first of a night becomes
 * its run here, the next ones fold into it. */
static int merge_shards(sqlite3 *db, ppb_merge_stats *st, ppb_err *err)
{
    for (;;) {
        sqlite3_stmt *row = NULL;
        if (sqlite3_prepare_v2(db, next_shard, -1, &row, NULL) != SQLITE_OK)
            return sql_fail(db, err, "finding shards");
        int step = sqlite3_step(row), rc = PPB_OK;
        if (step == SQLITE_ROW && sqlite3_column_type(row, 6) != SQLITE_NULL) {
            if ((rc = fold_one(db, row, err)) == PPB_OK)
                st->shards_folded++;
        } else if (step == SQLITE_ROW) {
            char where[64];
            snprintf(where, sizeof where, "s.id = %lld", (long long)sqlite3_column_int64(row, 0));
            rc = copy_runs(db, where, &st->runs_added, err);
        } else if (step != SQLITE_DONE) {
            rc = sql_fail(db, err, "finding shards");
        }
        sqlite3_finalize(row);
        if (rc || step != SQLITE_ROW)
            return rc;
    }
}

static int merge_runs(sqlite3 *db, ppb_merge_stats *st, ppb_err *err)
{
    long long in_src = 0;
    int rc;
    if ((rc = query_int(db, "SELECT count(*) FROM src.runs", &in_src, err)) ||
        (rc = copy_runs(db,
                        "s.uid NOT IN (SELECT uid FROM main.runs) AND s.uid NOT IN (SELECT uid FROM main.run_parts)"
                        " AND NOT (s.shard_count > 0 AND s.run_group <> '')",
                        &st->runs_added, err)) ||
        (rc = merge_shards(db, st, err)))
        return rc;
    st->runs_present = (int)in_src - st->runs_added - st->shards_folded;
    /* A run merged while it was still going, finished since. */
    return exec_count(db,
                      "UPDATE main.runs SET (status, finished_at) ="
                      " (SELECT s.status, s.finished_at FROM src.runs s WHERE s.uid = runs.uid)"
                      " WHERE finished_at IS NULL AND uid IN"
                      " (SELECT uid FROM src.runs WHERE finished_at IS NOT NULL)",
                      &st->runs_completed, "updating finished runs", err);
}

static int merge_cases(sqlite3 *db, ppb_merge_stats *st, ppb_err *err)
{
    static const char *const skip_id[] = {"id", NULL};
    column_pair c;
    char sql[SQL_MAX];
    int rc = column_pair_of(db, "cases", skip_id, &c, err);
    if (rc)
        return rc;
    snprintf(sql, sizeof sql,
             "INSERT INTO main.cases(%s) SELECT %s FROM src.cases s"
             " WHERE s.key NOT IN (SELECT key FROM main.cases) ORDER BY s.id",
             c.cols, c.scols);
    return exec_count(db, sql, &st->cases_added, "copying cases", err);
}

static int merge_results(sqlite3 *db, ppb_merge_stats *st, ppb_err *err)
{
    static const char *const skip_keys[] = {"id", "run_id", "case_id", NULL};
    column_pair c;
    char sql[SQL_MAX];
    int rc = column_pair_of(db, "results", skip_keys, &c, err);
    if (rc)
        return rc;
    /* Which source results are new: (run uid, case key) not yet in the output. */
    if ((rc = exec(db,
                   "DROP TABLE IF EXISTS temp.merge_map;"
                   "CREATE TEMP TABLE merge_map AS"
                   " SELECT sr.id AS src_id, du.id AS run_id, dc.id AS case_id"
                   " FROM src.results sr"
                   " JOIN src.runs su ON su.id = sr.run_id"
                   " JOIN src.cases sc ON sc.id = sr.case_id"
                   /* a folded shard's results go to its night's run */
                   " JOIN (SELECT uid, id FROM main.runs UNION SELECT uid, run_id FROM main.run_parts) du"
                   "   ON du.uid = su.uid"
                   " JOIN main.cases dc ON dc.key = sc.key"
                   " WHERE NOT EXISTS (SELECT 1 FROM main.results r"
                   "   WHERE r.run_id = du.id AND r.case_id = dc.id)",
                   "mapping results", err)))
        return rc;
    long long in_src = 0, new_ones = 0;
    if ((rc = query_int(db, "SELECT count(*) FROM src.results", &in_src, err)) ||
        (rc = query_int(db, "SELECT count(*) FROM temp.merge_map", &new_ones, err)))
        return rc;
    snprintf(sql, sizeof sql,
             "INSERT INTO main.results(run_id, case_id, %s)"
             " SELECT m.run_id, m.case_id, %s FROM temp.merge_map m"
             " JOIN src.results s ON s.id = m.src_id ORDER BY s.id",
             c.cols, c.scols);
    if ((rc = exec_count(db, sql, &st->results_added, "copying results", err)))
        return rc;
    st->results_present = (int)(in_src - new_ones);
    return exec(db,
                "INSERT INTO main.samples(result_id, idx, ms, session, round)"
                " SELECT r.id, s.idx, s.ms, s.session, s.round FROM temp.merge_map m"
                " JOIN main.results r ON r.run_id = m.run_id AND r.case_id = m.case_id"
                " JOIN src.samples s ON s.result_id = m.src_id;"
                "DROP TABLE temp.merge_map",
                "copying samples", err);
}

static int merge_env(sqlite3 *db, ppb_merge_stats *st, ppb_err *err)
{
    static const char sql[] = "INSERT OR IGNORE INTO main.env(run_id, key, value)"
                              " SELECT du.id, e.key, e.value FROM src.env e"
                              " JOIN src.runs su ON su.id = e.run_id"
                              " JOIN main.runs du ON du.uid = su.uid ORDER BY e.rowid";
    return exec_count(db, sql, &st->env_added, "copying env", err);
}

/* Proposals have no uid: one is present when a proposal with the same name,
 * kind, verdict, creation time and the same two runs (by uid) is. Few rows, so
 * one at a time, to carry their cases over to the new id. */
static int merge_proposals(sqlite3 *db, ppb_merge_stats *st, ppb_err *err)
{
    static const char *const skip_p[] = {"id", "baseline_run", "candidate_run", NULL};
    static const char *const skip_c[] = {"proposal_id", NULL};
    column_pair p, c;
    char ins_p[SQL_MAX], ins_c[SQL_MAX];
    int rc;
    if ((rc = column_pair_of(db, "proposals", skip_p, &p, err)) ||
        (rc = column_pair_of(db, "proposal_cases", skip_c, &c, err)))
        return rc;
    snprintf(ins_p, sizeof ins_p,
             "INSERT INTO main.proposals(baseline_run, candidate_run, %s)"
             " SELECT ?2, ?3, %s FROM src.proposals s WHERE s.id = ?1",
             p.cols, p.scols);
    snprintf(ins_c, sizeof ins_c,
             "INSERT INTO main.proposal_cases(proposal_id, %s)"
             " SELECT ?2, %s FROM src.proposal_cases s WHERE s.proposal_id = ?1 ORDER BY s.idx",
             c.cols, c.scols);
    static const char pick[] =
        "SELECT sp.id, bu.id, cu.id, EXISTS (SELECT 1 FROM main.proposals p"
        "   WHERE p.name = sp.name AND p.kind = sp.kind AND p.verdict = sp.verdict"
        "   AND p.created_at = sp.created_at"
        "   AND p.baseline_run IS bu.id AND p.candidate_run IS cu.id)"
        " FROM src.proposals sp"
        " LEFT JOIN src.runs sb ON sb.id = sp.baseline_run"
        " LEFT JOIN main.runs bu ON bu.uid = sb.uid"
        " LEFT JOIN src.runs sc ON sc.id = sp.candidate_run"
        " LEFT JOIN main.runs cu ON cu.uid = sc.uid ORDER BY sp.id";
    sqlite3_stmt *sel = NULL, *put_p = NULL, *put_c = NULL;
    if (sqlite3_prepare_v2(db, pick, -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, ins_p, -1, &put_p, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, ins_c, -1, &put_c, NULL) != SQLITE_OK) {
        rc = sql_fail(db, err, "preparing the proposal copy");
        goto end;
    }
    int step;
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        if (sqlite3_column_int(sel, 3)) {
            st->proposals_present++;
            continue;
        }
        sqlite3_int64 src_id = sqlite3_column_int64(sel, 0);
        sqlite3_reset(put_p);
        sqlite3_bind_int64(put_p, 1, src_id);
        for (int i = 1; i <= 2; i++) {
            if (sqlite3_column_type(sel, i) == SQLITE_NULL)
                sqlite3_bind_null(put_p, i + 1);
            else
                sqlite3_bind_int64(put_p, i + 1, sqlite3_column_int64(sel, i));
        }
        if (sqlite3_step(put_p) != SQLITE_DONE) {
            rc = sql_fail(db, err, "copying a proposal");
            goto end;
        }
        sqlite3_reset(put_c);
        sqlite3_bind_int64(put_c, 1, src_id);
        sqlite3_bind_int64(put_c, 2, sqlite3_last_insert_rowid(db));
        if (sqlite3_step(put_c) != SQLITE_DONE) {
            rc = sql_fail(db, err, "copying a proposal's cases");
            goto end;
        }
        st->proposals_added++;
    }
    if (step != SQLITE_DONE)
        rc = sql_fail(db, err, "reading proposals");
end:
    sqlite3_finalize(sel);
    sqlite3_finalize(put_p);
    sqlite3_finalize(put_c);
    return rc;
}

int ppb_merge_into(ppb_store *dst, const char *src_path, ppb_merge_stats *stats, ppb_err *err)
{
    memset(stats, 0, sizeof *stats);
    int rc = ppb_merge_check_source(src_path, err);
    if (rc)
        return rc;
    sqlite3 *db = ppb_store_db(dst);
    sqlite3_stmt *attach = NULL;
    if (sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS src", -1, &attach, NULL) != SQLITE_OK ||
        sqlite3_bind_text(attach, 1, src_path, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_step(attach) != SQLITE_DONE) {
        rc = ppb_fail(err, PPB_EIO, "merge: cannot attach %s: %s", src_path, sqlite3_errmsg(db));
        sqlite3_finalize(attach);
        return rc;
    }
    sqlite3_finalize(attach);
    /* The source is only read; query_only is per connection, so it is not
     * set, and every statement above names main. or src. explicitly. */
    if ((rc = exec(db, "BEGIN IMMEDIATE", "starting the merge", err)) ||
        (rc = check_same_schema(db, src_path, err)) || (rc = merge_runs(db, stats, err)) ||
        (rc = merge_cases(db, stats, err)) || (rc = merge_results(db, stats, err)) ||
        (rc = merge_env(db, stats, err)) || (rc = merge_proposals(db, stats, err)) ||
        (rc = exec(db, "COMMIT", "committing the merge", err))) {
        if (!sqlite3_get_autocommit(db))
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        ppb_err_prefix(err, "merging %s: ", src_path);
    }
    /* Detaching the last connection to a WAL source would checkpoint it, a
     * write to an input; checkpoint-on-close is off around the detach. */
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int *)NULL);
    if (rc)
        memset(stats, 0, sizeof *stats);
    return rc;
}
