/* Unit tests for merge (harness/store/merge.c) and the run uid of schema v4: every
 * row of every source arrives once and bit for bit, merges are idempotent, a
 * grown run gets only its new results, proposals keep pointing at the right
 * runs, sources are never written, and mismatched schemas are refused. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "case.h"
#include "merge.h"
#include "result.h"
#include "store.h"
#include "store_internal.h"

typedef struct fixture {
    char dir[256];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-merge-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void path_in(const fixture *f, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", f->dir, name);
}

static ppb_case make_case(int i)
{
    ppb_case c;
    ppb_case_init(&c, i % 2 ? PPB_PAGED_ATTENTION : PPB_PREFIX_PREFILL);
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    if (i % 2) {
        c.shape.seq_len = 100 + i;
        c.config.partition_size = 512;
    } else {
        c.shape.query_len = 16 + i;
    }
    ppb_case_make_key(&c);
    return c;
}

/* Set before add_run to make its run shard K of N of `group` (0/0: unsharded). */
static int shard_k, shard_n;
static const char *shard_group = "";
static const char *finish_status = "complete";

/* A run with cases first..first+n-1; medians and samples derived from seed so
 * every result differs. Returns the run id. */
static int64_t add_run(ppb_store *s, const char *suite, const char *host, int first, int n,
                       double seed, int finish)
{
    ppb_err err;
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    run.shard_index = shard_k;
    run.shard_count = shard_n;
    snprintf(run.run_group, sizeof run.run_group, "%s", shard_group);
    snprintf(run.args, sizeof run.args, "filter=\nshard=%d/%d\n", shard_k, shard_n);
    snprintf(run.suite_name, sizeof run.suite_name, "%s", suite);
    snprintf(run.host, sizeof run.host, "%s", host);
    snprintf(run.backend, sizeof run.backend, "cpu");
    run.n_cases = n;
    assert_int_equal(ppb_store_begin_run(s, &run, &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(s, run.id, "host.name", host, &err), PPB_OK);
    for (int i = first; i < first + n; i++) {
        ppb_case c = make_case(i);
        ppb_result r;
        ppb_result_init(&r);
        double samples[3] = {seed + i / 7.0, seed + i / 3.0, seed + i / 11.0};
        r.samples_ms = samples;
        r.n_samples = 3;
        r.median_ms = samples[0];
        r.rel_noise = NAN;
        if (ppb_store_put_result(s, run.id, &c, &r, &err) != PPB_OK)
            fail_msg("put_result: %s", err.msg);
    }
    if (finish) {
        assert_int_equal(ppb_store_finish_run(s, run.id, finish_status, &err), PPB_OK);
        assert_int_equal(ppb_store_add_run_wall(s, run.id, &(ppb_run_wall){1000 * seed, 100 * seed, 10 * seed}, &err),
                         PPB_OK);
    }
    return run.id;
}

static ppb_store *open_db(const char *path)
{
    ppb_store *s = NULL;
    ppb_err err;
    if (ppb_store_open(&s, path, &err) != PPB_OK)
        fail_msg("open %s: %s", path, err.msg);
    return s;
}

static long long scalar(ppb_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(ppb_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A digest of everything a merge must carry, independent of row ids: one
 * text of (run uid, case key, every result column, samples) ordered by key. */
static char *digest(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    static const char sql[] =
        "SELECT group_concat(line, char(10)) FROM (SELECT u.uid || '|' || c.key || '|' ||"
        " r.status || '|' || quote(r.median_ms) || '|' || quote(r.rel_noise) || '|' || r.n_samples"
        " || '|' || (SELECT group_concat(quote(ms), ',') FROM (SELECT ms FROM samples"
        "   WHERE result_id = r.id ORDER BY idx)) || '|' || u.status || '|' ||"
        " (SELECT group_concat(key || '=' || value) FROM env WHERE run_id = u.id) AS line"
        " FROM results r JOIN runs u ON u.id = r.run_id JOIN cases c ON c.id = r.case_id"
        " ORDER BY u.uid, c.key)";
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const char *t = (const char *)sqlite3_column_text(st, 0);
    char *copy = strdup(t ? t : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return copy;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void test_uids(void **state)
{
    fixture *f = *state;
    char a[512];
    path_in(f, "a.db", a, sizeof a);
    ppb_store *s = open_db(a);
    add_run(s, "smoke", "h1", 0, 1, 1.0, 1);
    add_run(s, "smoke", "h1", 0, 1, 2.0, 1);
    assert_int_equal(scalar(s, "SELECT count(DISTINCT uid) FROM runs"), 2);
    assert_int_equal(scalar(s, "SELECT count(*) FROM runs WHERE length(uid) = 32"
                               " AND uid NOT GLOB '*[^0-9a-f]*'"),
                     2);
    ppb_store_close(s);
}

static void test_merge_two_hosts(void **state)
{
    fixture *f = *state;
    char a[512], b[512], out[512];
    path_in(f, "a.db", a, sizeof a);
    path_in(f, "b.db", b, sizeof b);
    path_in(f, "out.db", out, sizeof out);
    ppb_store *sa = open_db(a), *sb = open_db(b);
    add_run(sa, "smoke", "h1", 0, 4, 1.0, 1);      /* shard 1 on host 1 */
    add_run(sb, "smoke", "h2", 4, 4, 2.0, 1);      /* shard 2 on host 2 */
    add_run(sb, "decode", "h2", 2, 3, 3.0, 1);     /* shares case keys 2, 3 with run 1 */
    ppb_store_close(sa);
    ppb_store_close(sb);
    size_t la, lb;
    char *bytes_a = slurp(a, &la), *bytes_b = slurp(b, &lb);

    ppb_err err;
    ppb_merge_stats st;
    ppb_store *so = open_db(out);
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(st.runs_added, 1);
    assert_int_equal(st.results_added, 4);
    assert_int_equal(st.cases_added, 4);
    assert_int_equal(st.env_added, 1);
    assert_int_equal(ppb_merge_into(so, b, &st, &err), PPB_OK);
    assert_int_equal(st.runs_added, 2);
    assert_int_equal(st.results_added, 7);
    assert_int_equal(st.cases_added, 4); /* keys 4..7 are new; 2, 3 exist */
    assert_int_equal(scalar(so, "SELECT count(*) FROM runs"), 3);
    assert_int_equal(scalar(so, "SELECT count(*) FROM results"), 11);
    assert_int_equal(scalar(so, "SELECT count(*) FROM samples"), 33);
    assert_int_equal(scalar(so, "SELECT count(*) FROM cases"), 8);
    /* again: nothing added, everything counted as present */
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(st.runs_added + st.results_added + st.cases_added + st.env_added, 0);
    assert_int_equal(st.runs_present, 1);
    assert_int_equal(st.results_present, 4);
    assert_int_equal(ppb_merge_into(so, b, &st, &err), PPB_OK);
    assert_int_equal(st.runs_added + st.results_added, 0);
    assert_int_equal(scalar(so, "SELECT count(*) FROM results"), 11);
    ppb_store_close(so);

    /* everything arrived exactly (NaN stays NULL, samples in order) */
    char *da = digest(a), *db = digest(b), *dout = digest(out);
    /* each source line is in the output, and the output has no other line */
    size_t lines_out = 1, lines_src = 2;
    for (const char *p = dout; *p; p++)
        lines_out += *p == '\n';
    for (const char *p = da; *p; p++)
        lines_src += *p == '\n';
    for (const char *p = db; *p; p++)
        lines_src += *p == '\n';
    assert_int_equal(lines_out, lines_src);
    for (char *src = da;; src = db) {
        char *copy = strdup(src), *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            if (!strstr(dout, line))
                fail_msg("missing after merge: %s", line);
        free(copy);
        if (src == db)
            break;
    }
    free(da);
    free(db);
    free(dout);

    /* the sources were not written */
    size_t la2, lb2;
    char *after_a = slurp(a, &la2), *after_b = slurp(b, &lb2);
    assert_true(la == la2 && memcmp(bytes_a, after_a, la) == 0);
    assert_true(lb == lb2 && memcmp(bytes_b, after_b, lb) == 0);
    free(bytes_a);
    free(bytes_b);
    free(after_a);
    free(after_b);
}

/* The shards of one night become one run, whatever order they arrive in: its
 * planned cases add up, an interrupted shard leaves the night interrupted, the
 * same shard again is kept apart, another night or another shard count is its
 * own run, and merging again adds nothing. */
static void test_shards_fold_into_one_run(void **state)
{
    fixture *f = *state;
    char p[5][512], out[512];
    const char *names[] = {"s1.db", "s2.db", "s3.db", "again.db", "other.db"};
    for (int i = 0; i < 5; i++)
        path_in(f, names[i], p[i], sizeof p[i]);
    path_in(f, "night.db", out, sizeof out);
    shard_n = 3;
    shard_group = "night-1";
    for (int k = 1; k <= 3; k++) {
        ppb_store *s = open_db(p[k - 1]);
        shard_k = k;
        finish_status = k == 2 ? "interrupted" : "complete";
        add_run(s, "nightly", k == 1 ? "h1" : "h2", 4 * (k - 1), 4, k, 1);
        ppb_store_close(s);
    }
    ppb_store *s = open_db(p[3]);
    shard_k = 1;
    finish_status = "complete";
    add_run(s, "nightly", "h3", 0, 4, 9.0, 1); /* shard 1 again, same night */
    ppb_store_close(s);
    s = open_db(p[4]);
    shard_group = "night-2";
    add_run(s, "nightly", "h1", 0, 4, 5.0, 1); /* another night */
    ppb_store_close(s);
    shard_k = shard_n = 0;
    shard_group = "";

    ppb_err err;
    ppb_merge_stats st;
    ppb_store *so = open_db(out);
    const int order[] = {2, 0, 1}; /* shard 3 first: arrival order does not matter */
    for (int i = 0; i < 3; i++) {
        if (ppb_merge_into(so, p[order[i]], &st, &err) != PPB_OK)
            fail_msg("merge: %s", err.msg);
        assert_int_equal(st.shards_folded, i == 0 ? 0 : 1);
        assert_int_equal(st.runs_added, i == 0 ? 1 : 0);
    }
    assert_int_equal(scalar(so, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(scalar(so, "SELECT n_cases FROM runs"), 12);
    assert_int_equal(scalar(so, "SELECT count(*) FROM results"), 12);
    assert_int_equal(scalar(so, "SELECT count(*) FROM run_parts"), 3);
    assert_int_equal(scalar(so, "SELECT status = 'interrupted' FROM runs"), 1);
    /* machine time adds up over the shards (seeds 1 + 2 + 3), each part of it too */
    assert_int_equal(scalar(so, "SELECT wall_ms = 6000 AND open_ms = 600 AND store_ms = 60 FROM runs"), 1);
    assert_int_equal(scalar(so, "SELECT count(*) FROM env WHERE key = 'shard2.host.name' AND value = 'h2'"), 1);
    ppb_run_info run;
    assert_int_equal(ppb_store_get_run(so, scalar(so, "SELECT id FROM runs"), &run, &err), PPB_OK);
    assert_int_equal(run.n_shards, 3);
    assert_int_equal(run.shard_count, 3);
    assert_int_equal(run.n_done, 12);
    /* the same shard again, another night: runs of their own */
    assert_int_equal(ppb_merge_into(so, p[3], &st, &err), PPB_OK);
    assert_int_equal(st.runs_added, 1);
    assert_int_equal(st.shards_folded, 0);
    assert_int_equal(ppb_merge_into(so, p[4], &st, &err), PPB_OK);
    assert_int_equal(st.runs_added, 1);
    assert_int_equal(scalar(so, "SELECT count(*) FROM runs"), 3);
    /* again: nothing */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ppb_merge_into(so, p[i], &st, &err), PPB_OK);
        assert_int_equal(st.runs_added + st.shards_folded + st.results_added, 0);
    }
    assert_int_equal(scalar(so, "SELECT count(*) FROM results"), 20);
    ppb_store_close(so);
}

/* A copy of a database is the same runs (same uids): merging both adds them once. */
static void test_copy_is_the_same_runs(void **state)
{
    fixture *f = *state;
    char a[512], copy[512], out[512];
    path_in(f, "a.db", a, sizeof a);
    path_in(f, "copy.db", copy, sizeof copy);
    path_in(f, "out.db", out, sizeof out);
    ppb_store *sa = open_db(a);
    add_run(sa, "smoke", "h1", 0, 3, 1.0, 1);
    ppb_store_close(sa);
    size_t len;
    char *bytes = slurp(a, &len);
    FILE *w = fopen(copy, "wb");
    assert_non_null(w);
    assert_int_equal(fwrite(bytes, 1, len, w), len);
    fclose(w);
    free(bytes);
    ppb_err err;
    ppb_merge_stats st;
    ppb_store *so = open_db(out);
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(ppb_merge_into(so, copy, &st, &err), PPB_OK);
    assert_int_equal(st.runs_added, 0);
    assert_int_equal(st.results_present, 3);
    assert_int_equal(scalar(so, "SELECT count(*) FROM results"), 3);
    ppb_store_close(so);
}

/* A run merged while running, merged again after it grew and finished. */
static void test_grown_run(void **state)
{
    fixture *f = *state;
    char a[512], out[512];
    path_in(f, "a.db", a, sizeof a);
    path_in(f, "out.db", out, sizeof out);
    ppb_store *sa = open_db(a);
    int64_t run = add_run(sa, "smoke", "h1", 0, 2, 1.0, 0);
    ppb_err err;
    ppb_merge_stats st;
    ppb_store *so = open_db(out);
    add_run(so, "other", "h0", 0, 1, 9.0, 1); /* output ids differ from the source's */
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(st.results_added, 2);
    assert_int_equal(scalar(so, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);

    for (int i = 2; i < 5; i++) {
        ppb_case c = make_case(i);
        ppb_result r;
        ppb_result_init(&r);
        r.median_ms = i;
        assert_int_equal(ppb_store_put_result(sa, run, &c, &r, &err), PPB_OK);
    }
    assert_int_equal(ppb_store_finish_run(sa, run, "complete", &err), PPB_OK);
    ppb_store_close(sa);
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(st.runs_added, 0);
    assert_int_equal(st.runs_completed, 1);
    assert_int_equal(st.results_added, 3);
    assert_int_equal(st.results_present, 2);
    assert_int_equal(scalar(so, "SELECT count(*) FROM runs WHERE status = 'complete'"
                                " AND finished_at IS NOT NULL"),
                     2);
    assert_int_equal(scalar(so, "SELECT count(*) FROM results"), 6);
    ppb_store_close(so);
}

/* Proposals point at runs by id: after a merge they point at the same runs (by uid). */
static void test_proposals_follow_their_runs(void **state)
{
    fixture *f = *state;
    char a[512], out[512];
    path_in(f, "a.db", a, sizeof a);
    path_in(f, "out.db", out, sizeof out);
    ppb_store *sa = open_db(a);
    int64_t base = add_run(sa, "smoke", "h1", 0, 2, 1.0, 1);
    int64_t cand = add_run(sa, "smoke", "h1", 0, 2, 0.9, 1);
    ppb_proposal_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.name, sizeof rec.name, "tiles 64");
    snprintf(rec.kind, sizeof rec.kind, "kernel_config");
    snprintf(rec.verdict, sizeof rec.verdict, "ACCEPT");
    rec.baseline_run = base;
    rec.candidate_run = cand;
    rec.geomean_ratio = 0.9;
    rec.geomean_lo = rec.geomean_hi = NAN;
    rec.cost = (ppb_proposal_cost){.wall_ms = 5000, .sampling_ms = 4000, .kernel_ms = 3500,
                                   .fixed_kernel_ms = 4200, .fixed_samples = 48};
    ppb_proposal_case pc[2];
    memset(pc, 0, sizeof pc);
    for (int i = 0; i < 2; i++) {
        ppb_case c = make_case(i);
        snprintf(pc[i].baseline_key, sizeof pc[i].baseline_key, "%s", c.key);
        snprintf(pc[i].candidate_key, sizeof pc[i].candidate_key, "%s", c.key);
        snprintf(pc[i].state, sizeof pc[i].state, "compared");
        pc[i].weight = 1;
        pc[i].ratio = 0.9 + i;
        pc[i].ratio_lo = pc[i].ratio_hi = pc[i].p_holm = NAN;
    }
    ppb_err err;
    assert_int_equal(ppb_store_put_proposal(sa, &rec, pc, 2, &err), PPB_OK);
    ppb_store_close(sa);

    ppb_store *so = open_db(out);
    add_run(so, "other", "h0", 0, 1, 9.0, 1);
    add_run(so, "other", "h0", 0, 1, 8.0, 1);
    ppb_merge_stats st;
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(st.proposals_added, 1);
    int64_t id = ppb_store_latest_proposal(so);
    ppb_proposal_record got;
    assert_int_equal(ppb_store_get_proposal(so, id, &got, &err), PPB_OK);
    assert_string_equal(got.name, "tiles 64");
    assert_int_equal(got.baseline_run, 3); /* ids shifted by the two runs already there */
    assert_int_equal(got.candidate_run, 4);
    assert_true(got.cost.wall_ms == 5000 && got.cost.kernel_ms == 3500 && got.cost.fixed_kernel_ms == 4200);
    assert_int_equal(got.cost.fixed_samples, 48); /* what the verdict cost travels with it */
    assert_int_equal(scalar(so, "SELECT count(*) FROM proposal_cases WHERE proposal_id ="
                                " (SELECT max(id) FROM proposals) AND ratio > 1.5"),
                     1);
    assert_int_equal(ppb_merge_into(so, a, &st, &err), PPB_OK);
    assert_int_equal(st.proposals_added, 0);
    assert_int_equal(st.proposals_present, 1);
    ppb_store_close(so);
}

static void exec_raw(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_refusals(void **state)
{
    fixture *f = *state;
    char old[512], odd[512], foreign[512], text[512], missing[512], out[512];
    path_in(f, "old.db", old, sizeof old);
    path_in(f, "odd.db", odd, sizeof odd);
    path_in(f, "foreign.db", foreign, sizeof foreign);
    path_in(f, "text.db", text, sizeof text);
    path_in(f, "missing.db", missing, sizeof missing);
    path_in(f, "out.db", out, sizeof out);
    ppb_err err;
    ppb_store *s = NULL;
    assert_int_equal(ppb_store_open_at_version(&s, old, 3, &err), PPB_OK);
    ppb_store_close(s);
    s = open_db(odd);
    add_run(s, "smoke", "h1", 0, 1, 1.0, 1);
    ppb_store_close(s);
    exec_raw(odd, "CREATE TABLE notes(x)");
    exec_raw(foreign, "CREATE TABLE t(x)");
    FILE *w = fopen(text, "w");
    fputs("hello, not SQLite, long enough to fill a header and then some more text\n", w);
    fclose(w);

    assert_int_equal(ppb_merge_check_source(old, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "schema version 3"));
    assert_int_equal(ppb_merge_check_source(foreign, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "not a ppbench database"));
    assert_int_equal(ppb_merge_check_source(text, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "not a SQLite database"));
    assert_int_equal(ppb_merge_check_source(missing, &err), PPB_EINPUT);
    assert_int_equal(access(missing, F_OK), -1); /* a read-only open creates nothing */
    char newer[64];
    snprintf(newer, sizeof newer, "PRAGMA user_version = %d", PPB_STORE_SCHEMA_VERSION + 1);
    exec_raw(old, newer);
    assert_int_equal(ppb_merge_check_source(old, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "newer"));

    /* the same version with another table: refused inside, nothing written */
    assert_int_equal(ppb_merge_check_source(odd, &err), PPB_OK);
    ppb_store *so = open_db(out);
    ppb_merge_stats st;
    assert_int_equal(ppb_merge_into(so, odd, &st, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "schema differs"));
    assert_int_equal(st.runs_added, 0);
    assert_int_equal(scalar(so, "SELECT count(*) FROM runs"), 0);
    /* the connection is usable afterwards (src detached, no open transaction) */
    assert_int_equal(scalar(so, "SELECT count(*) FROM pragma_database_list WHERE name = 'src'"), 0);
    add_run(so, "smoke", "h1", 0, 1, 1.0, 1);
    ppb_store_close(so);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_uids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shards_fold_into_one_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_two_hosts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_is_the_same_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grown_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_proposals_follow_their_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
