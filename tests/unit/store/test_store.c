/* Unit tests for the results database (harness/store/store.c): round trips, replace on
 * re-put, migrations, refusal of foreign files, export, and a process killed
 * with an open transaction. Every test works in its own mkdtemp directory. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "case.h"
#include "result.h"
#include "store.h"
#include "store_internal.h"

typedef struct fixture {
    char dir[256];
    char db[512];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-store-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/results.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* ---- helpers ------------------------------------------------------------- */

static void same_double(double a, double b, const char *what)
{
    if (memcmp(&a, &b, sizeof a) != 0)
        fail_msg("%s: stored %.17g, read back %.17g", what, a, b);
}

static ppb_case make_case(int i)
{
    ppb_case c;
    if (i % 2 == 0) {
        ppb_case_init(&c, PPB_PREFIX_PREFILL);
        c.shape.batch = 1 + i;
        c.shape.query_len = 16 * (i + 1);
        c.shape.context_len = 1000 + i;
        c.shape.num_heads = 32;
        c.shape.num_kv_heads = 8;
        c.shape.dtype = i % 4 == 0 ? PPB_FP16 : PPB_BF16;
        c.shape.ragged = i % 4 == 0;
        c.config.block_m = 64;
        c.config.block_n = 32;
        c.config.num_warps = 4;
    } else {
        ppb_case_init(&c, PPB_PAGED_ATTENTION);
        c.shape.batch = 2 + i;
        c.shape.seq_len = 4096 + i;
        c.shape.num_heads = 16;
        c.shape.num_kv_heads = 16;
        c.shape.page_size = 32;
        c.config.partition_size = 512;
        c.config.host_partition_size = 256;
        c.config.path = PPB_PATH_SIMT;
    }
    c.weight = 0.25 + i / 3.0;
    ppb_case_make_key(&c);
    return c;
}

/* Every field gets a value no other field has, so a swapped column shows. */
static void make_result(ppb_result *r, int seed, int n_samples)
{
    ppb_result_init(r);
    r->status = seed % 7;
    snprintf(r->reason, sizeof r->reason, "reason %d: has, a comma and a \"quote\"%s", seed,
             seed == 1 ? "\nand a second line" : "");
    double s = seed;
    r->check.checked = 1;
    r->check.pass = seed % 2;
    r->check.max_abs_err = 1e-3 * (s + 1) + 1.0 / 3;
    r->check.rel_l2_err = 2e-4 * (s + 1) + 1.0 / 7;
    r->check.rows_checked = 100 + seed;
    r->check.rows_total = 3000000000L + seed;
    r->check.nonfinite = 3 + seed;
    r->check.unwritten = 5 + seed;
    r->check.atol = 1e-2 + s * 1e-5;
    r->check.rtol = 2e-2 + s * 1e-5;
    r->overrun.detected = 1;
    r->overrun.tmp_out_bytes = 5000000000LL + seed;
    r->overrun.exp_sums_bytes = 11 + seed;
    r->overrun.max_logits_bytes = 13 + seed;
    r->overrun.guard_bytes_changed = 17 + seed;
    r->resources.known = 1;
    r->resources.registers = 64 + seed;
    r->resources.static_smem = 1024 + seed;
    r->resources.dynamic_smem = 2048 + seed;
    r->resources.local_bytes = 7 + seed;
    r->resources.max_threads = 256 + seed;
    if (seed % 3) { /* judged on a target; every third result not (no target) */
        r->feasibility.judged = 1;
        r->feasibility.feasible = seed % 2;
        r->feasibility.blocks_per_sm = 1 + seed;
        snprintf(r->feasibility.limiter, sizeof r->feasibility.limiter, "smem");
        snprintf(r->feasibility.reason, sizeof r->feasibility.reason, "needs %d B, \"quoted\"", 1000 + seed);
        snprintf(r->feasibility.flips, sizeof r->feasibility.flips, "%s", seed == 1 ? "feasible at 128 KB" : "");
    }
    r->timing_is_cpu = seed % 2;
    r->dropped_throttled = 2 + seed;
    r->batch_launches = 4 + seed;
    r->median_ms = 1.5 + s / 3;
    r->mean_ms = 1.6 + s / 7;
    r->stdev_ms = 0.01 + s / 11;
    r->min_ms = 1.1 + s / 13;
    r->max_ms = 2.2 + s / 17;
    r->q1_ms = 1.4 + s / 19;
    r->q3_ms = 1.7 + s / 23;
    r->rel_noise = 0.02 + s / 29;
    r->tflops = 123.456 + s / 31;
    r->gbps = 789.012 + s / 37;
    r->phases = (ppb_phase_times){.generate_ms = 10 + s, .check_ms = 20 + s / 3, .warmup_ms = 30 + s / 7,
                                  .sampling_ms = 40 + s / 11};
    r->n_samples = n_samples;
    r->samples_ms = n_samples ? malloc((size_t)n_samples * sizeof(double)) : NULL;
    for (int k = 0; k < n_samples; k++)
        r->samples_ms[k] = 0.1 * (k + 1) + s / 3 + sqrt(2.0) * 1e-9 * k;
}

static void assert_same_result(const ppb_result *a, const ppb_result *b)
{
    assert_int_equal(a->status, b->status);
    assert_string_equal(a->reason, b->reason);
    assert_int_equal(a->check.checked, b->check.checked);
    assert_int_equal(a->check.pass, b->check.pass);
    same_double(a->check.max_abs_err, b->check.max_abs_err, "max_abs_err");
    same_double(a->check.rel_l2_err, b->check.rel_l2_err, "rel_l2_err");
    assert_int_equal(a->check.rows_checked, b->check.rows_checked);
    assert_int_equal(a->check.rows_total, b->check.rows_total);
    assert_int_equal(a->check.nonfinite, b->check.nonfinite);
    assert_int_equal(a->check.unwritten, b->check.unwritten);
    same_double(a->check.atol, b->check.atol, "atol");
    same_double(a->check.rtol, b->check.rtol, "rtol");
    assert_int_equal(a->overrun.detected, b->overrun.detected);
    assert_int_equal(a->overrun.tmp_out_bytes, b->overrun.tmp_out_bytes);
    assert_int_equal(a->overrun.exp_sums_bytes, b->overrun.exp_sums_bytes);
    assert_int_equal(a->overrun.max_logits_bytes, b->overrun.max_logits_bytes);
    assert_int_equal(a->overrun.guard_bytes_changed, b->overrun.guard_bytes_changed);
    assert_int_equal(a->resources.known, b->resources.known);
    assert_int_equal(a->resources.registers, b->resources.registers);
    assert_int_equal(a->resources.static_smem, b->resources.static_smem);
    assert_int_equal(a->resources.dynamic_smem, b->resources.dynamic_smem);
    assert_int_equal(a->resources.local_bytes, b->resources.local_bytes);
    assert_int_equal(a->resources.max_threads, b->resources.max_threads);
    assert_int_equal(a->feasibility.judged, b->feasibility.judged);
    assert_int_equal(a->feasibility.feasible, b->feasibility.feasible);
    assert_int_equal(a->feasibility.blocks_per_sm, b->feasibility.blocks_per_sm);
    assert_string_equal(a->feasibility.limiter, b->feasibility.limiter);
    assert_string_equal(a->feasibility.reason, b->feasibility.reason);
    assert_string_equal(a->feasibility.flips, b->feasibility.flips);
    assert_int_equal(a->timing_is_cpu, b->timing_is_cpu);
    assert_int_equal(a->dropped_throttled, b->dropped_throttled);
    assert_int_equal(a->batch_launches, b->batch_launches);
    same_double(a->median_ms, b->median_ms, "median_ms");
    same_double(a->mean_ms, b->mean_ms, "mean_ms");
    same_double(a->stdev_ms, b->stdev_ms, "stdev_ms");
    same_double(a->min_ms, b->min_ms, "min_ms");
    same_double(a->max_ms, b->max_ms, "max_ms");
    same_double(a->q1_ms, b->q1_ms, "q1_ms");
    same_double(a->q3_ms, b->q3_ms, "q3_ms");
    same_double(a->rel_noise, b->rel_noise, "rel_noise");
    same_double(a->tflops, b->tflops, "tflops");
    same_double(a->phases.generate_ms, b->phases.generate_ms, "generate_ms");
    same_double(a->phases.check_ms, b->phases.check_ms, "check_ms");
    same_double(a->phases.warmup_ms, b->phases.warmup_ms, "warmup_ms");
    same_double(a->phases.sampling_ms, b->phases.sampling_ms, "sampling_ms");
    same_double(a->gbps, b->gbps, "gbps");
    assert_int_equal(a->n_samples, b->n_samples);
    for (int k = 0; k < a->n_samples; k++)
        same_double(a->samples_ms[k], b->samples_ms[k], "sample");
}

static void assert_same_case(const ppb_case *a, const ppb_case *b)
{
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->kernel, b->kernel);
    for (int f = 0; f < PPB_F_COUNT; f++)
        assert_int_equal(ppb_case_get(a, f), ppb_case_get(b, f));
    same_double(a->weight, b->weight, "weight");
}

/* Visitor that keeps deep copies of what it is shown. */
#define MAX_SEEN 64
typedef struct seen {
    int n;
    ppb_case cases[MAX_SEEN];
    ppb_result results[MAX_SEEN];
    int stop_after; /* 0: never */
    int stop_value; /* what the visitor returns when it stops */
} seen;

static int collect(void *ctx, const ppb_case *c, const ppb_result *r)
{
    seen *s = ctx;
    if (s->n >= MAX_SEEN)
        return -100;
    s->cases[s->n] = *c;
    s->results[s->n] = *r;
    if (r->n_samples) {
        s->results[s->n].samples_ms = malloc((size_t)r->n_samples * sizeof(double));
        memcpy(s->results[s->n].samples_ms, r->samples_ms, (size_t)r->n_samples * sizeof(double));
    }
    s->n++;
    return s->stop_after && s->n >= s->stop_after ? s->stop_value : 0;
}

static void seen_free(seen *s)
{
    for (int i = 0; i < s->n; i++)
        ppb_result_free(&s->results[i]);
    s->n = 0;
}

static ppb_store *open_ok(const char *path)
{
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    int rc = ppb_store_open(&s, path, &err);
    if (rc)
        fail_msg("open %s: %s", path, err.msg);
    return s;
}

static int64_t begin_run(ppb_store *s, const char *label)
{
    static ppb_run_info run; /* large: keep it off the stack */
    memset(&run, 0, sizeof run);
    snprintf(run.suite_path, sizeof run.suite_path, "suites/smoke.yaml");
    snprintf(run.suite_name, sizeof run.suite_name, "smoke");
    snprintf(run.suite_hash, sizeof run.suite_hash, "0123456789abcdef");
    snprintf(run.git_commit, sizeof run.git_commit, "deadbeef");
    snprintf(run.host, sizeof run.host, "host-1");
    snprintf(run.backend, sizeof run.backend, "cpu");
    snprintf(run.device, sizeof run.device, "Some CPU, with a comma");
    snprintf(run.target, sizeof run.target, "bi-v100");
    snprintf(run.label, sizeof run.label, "%s", label);
    snprintf(run.args, sizeof run.args, "--filter 'kernel=prefix_prefill' --shard 1/4");
    run.n_cases = 12;
    ppb_err err = {{0}};
    int rc = ppb_store_begin_run(s, &run, &err);
    if (rc)
        fail_msg("begin_run: %s", err.msg);
    assert_true(run.id > 0);
    assert_string_equal(run.status, "running");
    assert_int_equal(strlen(run.started_at), 20); /* 2024-01-02T03:04:05Z */
    return run.id;
}

static void put_ok(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r)
{
    ppb_err err = {{0}};
    int rc = ppb_store_put_result(s, run_id, c, r, &err);
    if (rc)
        fail_msg("put_result: %s", err.msg);
}

static long long db_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void db_text(sqlite3 *db, const char *sql, char *buf, size_t cap)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(buf, cap, "%s", t ? (const char *)t : "(null)");
    sqlite3_finalize(st);
}

static void db_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Open must fail with PPB_EINPUT, a message containing `expect`, and the file
 * exactly as it was. */
static void assert_refused_untouched(const char *path, const char *expect)
{
    size_t before_len = 0, after_len = 0;
    char *before = read_file(path, &before_len);
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_open(&s, path, &err), PPB_EINPUT);
    assert_null(s);
    if (!strstr(err.msg, expect))
        fail_msg("message '%s' lacks '%s'", err.msg, expect);
    char *after = read_file(path, &after_len);
    assert_int_equal(before_len, after_len);
    assert_memory_equal(before, after, before_len);
    free(before);
    free(after);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_migration_table_is_ordered(void **state)
{
    (void)state;
    for (int i = 0; i < ppb_store_migration_count; i++)
        assert_int_equal(ppb_store_migrations[i].version, i + 1);
}

static void test_open_creates_database_with_pragmas(void **state)
{
    fixture *f = *state;
    assert_false(file_exists(f->db));
    ppb_store *s = open_ok(f->db);
    assert_true(file_exists(f->db));
    sqlite3 *db = ppb_store_db(s);
    char mode[32];
    db_text(db, "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
    assert_int_equal(db_int(db, "PRAGMA synchronous"), 1); /* NORMAL */
    assert_int_equal(db_int(db, "PRAGMA foreign_keys"), 1);
    assert_int_equal(db_int(db, "PRAGMA busy_timeout"), 5000);
    assert_int_equal(db_int(db, "PRAGMA application_id"), PPB_STORE_APPLICATION_ID);
    assert_int_equal(db_int(db, "PRAGMA user_version"), PPB_STORE_SCHEMA_VERSION);
    assert_int_equal(ppb_store_latest_run(s), 0);
    ppb_store_close(s);
    /* reopening an up-to-date database changes nothing */
    s = open_ok(f->db);
    assert_int_equal(db_int(ppb_store_db(s), "PRAGMA user_version"), PPB_STORE_SCHEMA_VERSION);
    ppb_store_close(s);
}

static void test_every_case_field_has_a_column(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    sqlite3 *db = ppb_store_db(s);
    for (int fi = 0; fi < PPB_F_COUNT; fi++) {
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT count(*) FROM pragma_table_info('cases')"
                                            " WHERE name = ?1",
                                            -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(st, 1, ppb_field_get(fi)->name, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        if (sqlite3_column_int(st, 0) != 1)
            fail_msg("cases has no column %s", ppb_field_get(fi)->name);
        sqlite3_finalize(st);
    }
    ppb_store_close(s);
}

/* A verdict with many reasons reads back whole (not cut at 8 KB). */
static void test_long_reasons_read_back_whole(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    static ppb_proposal_record rec, got; /* large: keep them off the stack */
    memset(&rec, 0, sizeof rec);
    snprintf(rec.name, sizeof rec.name, "long");
    snprintf(rec.kind, sizeof rec.kind, "kernel_config");
    snprintf(rec.verdict, sizeof rec.verdict, "REJECT");
    rec.geomean_ratio = rec.geomean_lo = rec.geomean_hi = NAN;
    size_t n = 0;
    for (int i = 0; i < 400; i++)
        n += (size_t)snprintf(rec.reasons + n, sizeof rec.reasons - n, "REJECT: case %d is slower than it may be\n", i);
    assert_true(n > 8192 && n < sizeof rec.reasons);
    ppb_err err;
    assert_int_equal(ppb_store_put_proposal(s, &rec, NULL, 0, &err), PPB_OK);
    assert_int_equal(ppb_store_get_proposal(s, rec.id, &got, &err), PPB_OK);
    assert_string_equal(got.reasons, rec.reasons);
    ppb_store_close(s);
}

typedef struct offsets_read {
    int n;
    double v[2];
} offsets_read;

static int read_offset(void *ctx, const ppb_proposal_case *c)
{
    offsets_read *o = ctx;
    if (o->n < 2)
        o->v[o->n] = c->baseline_offset;
    o->n++;
    return 0;
}

/* What a verdict cost reads back as stored; one whose cost was not measured
 * (no wall time: compare, kv_capacity) reads back as NaN, not as zeros. */
static void test_proposal_cost_round_trips(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    static ppb_proposal_record rec, got;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.name, sizeof rec.name, "cost");
    snprintf(rec.kind, sizeof rec.kind, "kernel_config");
    snprintf(rec.verdict, sizeof rec.verdict, "ACCEPT");
    rec.geomean_ratio = rec.geomean_lo = rec.geomean_hi = NAN;
    rec.cost = (ppb_proposal_cost){1000, 10, 20, 30, 40, 800, 700, 900, 33, 2};
    ppb_err err;
    assert_int_equal(ppb_store_put_proposal(s, &rec, NULL, 0, &err), PPB_OK);
    assert_int_equal(ppb_store_get_proposal(s, rec.id, &got, &err), PPB_OK);
    assert_memory_equal(&got.cost, &rec.cost, sizeof rec.cost);
    memset(&rec.cost, 0, sizeof rec.cost);
    rec.cost.kernel_ms = 5; /* without a wall time nothing of it was measured */
    assert_int_equal(ppb_store_put_proposal(s, &rec, NULL, 0, &err), PPB_OK);
    assert_int_equal(ppb_store_get_proposal(s, rec.id, &got, &err), PPB_OK);
    assert_true(isnan(got.cost.wall_ms) && isnan(got.cost.kernel_ms) && isnan(got.cost.fixed_kernel_ms));
    assert_int_equal(got.cost.fixed_samples, 0);
    assert_int_equal(got.cost.settled_by_pair, 0);
    /* a comparison's runs' shifts (schema 21) read back as stored, none as NaN */
    assert_true(rec.baseline_shift == 0 && got.baseline_shift == 0 && got.candidate_shift == 0);
    rec.baseline_shift = -0.0296, rec.candidate_shift = 0.0871;
    assert_int_equal(ppb_store_put_proposal(s, &rec, NULL, 0, &err), PPB_OK);
    assert_int_equal(ppb_store_get_proposal(s, rec.id, &got, &err), PPB_OK);
    assert_true(got.baseline_shift == -0.0296 && got.candidate_shift == 0.0871);
    rec.baseline_shift = rec.candidate_shift = NAN;
    assert_int_equal(ppb_store_put_proposal(s, &rec, NULL, 0, &err), PPB_OK);
    assert_int_equal(ppb_store_get_proposal(s, rec.id, &got, &err), PPB_OK);
    assert_true(isnan(got.baseline_shift) && isnan(got.candidate_shift));
    /* a compared case's baseline offset (schema 22) reads back as stored, none as NaN */
    static ppb_proposal_case pcs[2];
    memset(pcs, 0, sizeof pcs);
    pcs[0].baseline_offset = 0.0742;
    pcs[1].baseline_offset = NAN;
    for (int i = 0; i < 2; i++)
        pcs[i].noise = pcs[i].between_sd = pcs[i].alpha = pcs[i].stop_alpha = pcs[i].look_share = NAN;
    assert_int_equal(ppb_store_put_proposal(s, &rec, pcs, 2, &err), PPB_OK);
    offsets_read got_offsets = {0, {0, 0}};
    assert_int_equal(ppb_store_each_proposal_case(s, rec.id, read_offset, &got_offsets, &err), PPB_OK);
    assert_int_equal(got_offsets.n, 2);
    assert_true(got_offsets.v[0] == 0.0742 && isnan(got_offsets.v[1]));
    ppb_store_close(s);
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    enum { N = 5 };
    ppb_case cases[N];
    ppb_result results[N];
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "round trip");
    for (int i = 0; i < N; i++) {
        cases[i] = make_case(i);
        make_result(&results[i], i, i == 2 ? 0 : 3 + 7 * i); /* one refused-like, no samples */
        put_ok(s, run_id, &cases[i], &results[i]);
    }
    ppb_store_close(s);

    s = open_ok(f->db);
    static ppb_run_info run;
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_get_run(s, run_id, &run, &err), PPB_OK);
    assert_int_equal(run.id, run_id);
    assert_string_equal(run.suite_path, "suites/smoke.yaml");
    assert_string_equal(run.suite_name, "smoke");
    assert_string_equal(run.suite_hash, "0123456789abcdef");
    assert_string_equal(run.git_commit, "deadbeef");
    assert_string_equal(run.host, "host-1");
    assert_string_equal(run.backend, "cpu");
    assert_string_equal(run.device, "Some CPU, with a comma");
    assert_string_equal(run.target, "bi-v100");
    assert_string_equal(run.label, "round trip");
    assert_string_equal(run.args, "--filter 'kernel=prefix_prefill' --shard 1/4");
    assert_string_equal(run.status, "running");
    assert_string_equal(run.finished_at, "");
    assert_int_equal(run.n_cases, 12);
    assert_int_equal(run.n_done, N);

    static seen got;
    memset(&got, 0, sizeof got);
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, N);
    for (int i = 0; i < N; i++) {
        assert_same_case(&cases[i], &got.cases[i]);
        assert_same_result(&results[i], &got.results[i]);
        ppb_result_free(&results[i]);
    }
    seen_free(&got);
    ppb_store_close(s);
}

/* An A/B pair's samples keep their sessions and rounds (schema 13): read back
 * with them, covered by the row check; an untagged result reads as untagged. */
typedef struct tag_seen {
    int n, tagged;
    unsigned char session[16];
    int round[16];
} tag_seen;

static int collect_tags(void *ctx, const ppb_case *c, const ppb_result *r, const ppb_sample_tags *tags)
{
    (void)c;
    tag_seen *t = ctx;
    t->n++;
    if (!tags)
        return 0;
    t->tagged++;
    for (int k = 0; k < r->n_samples && k < 16; k++)
        t->session[k] = tags->session[k], t->round[k] = tags->round[k];
    return 0;
}

static void test_sample_tags_round_trip(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "tags");
    ppb_case c[2] = {make_case(0), make_case(2)};
    ppb_result r;
    make_result(&r, 1, 6);
    const unsigned char session[6] = {0, 1, 2, 1, 0, 2};
    const int round[6] = {1, 1, 1, 2, 2, 3};
    ppb_sample_tags tags = {session, round};
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_tagged_result(s, run_id, &c[0], &r, &tags, &err), PPB_OK);
    put_ok(s, run_id, &c[1], &r);
    tag_seen t;
    memset(&t, 0, sizeof t);
    assert_int_equal(ppb_store_each_tagged_result(s, run_id, collect_tags, &t, &err), PPB_OK);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.tagged, 1);
    assert_memory_equal(t.session, session, 6);
    assert_memory_equal(t.round, round, sizeof round);
    /* the plain walk reads tagged results too, checked */
    static seen got;
    memset(&got, 0, sizeof got);
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 2);
    seen_free(&got);
    /* a session changed in place fails the row check like a changed sample */
    db_exec(ppb_store_db(s), "UPDATE samples SET session = 2 WHERE idx = 0 AND result_id ="
                             " (SELECT min(id) FROM results)");
    assert_int_equal(ppb_store_each_tagged_result(s, run_id, collect_tags, &t, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "changed after ppbench wrote it"));
    db_exec(ppb_store_db(s), "UPDATE samples SET session = 0 WHERE idx = 0 AND result_id ="
                             " (SELECT min(id) FROM results)");
    db_exec(ppb_store_db(s), "UPDATE samples SET round = 9 WHERE idx = 5 AND result_id ="
                             " (SELECT min(id) FROM results)");
    assert_int_equal(ppb_store_each_tagged_result(s, run_id, collect_tags, &t, &err), PPB_EFAIL);
    db_exec(ppb_store_db(s), "UPDATE samples SET round = 3 WHERE idx = 5 AND result_id ="
                             " (SELECT min(id) FROM results)");
    assert_int_equal(ppb_store_each_tagged_result(s, run_id, collect_tags, &t, &err), PPB_OK);
    /* so does a stored judgement on the target (schema 17) edited in place */
    db_exec(ppb_store_db(s), "UPDATE results SET feasibility_reason = 'edited' WHERE id = (SELECT min(id) FROM results)");
    assert_int_equal(ppb_store_each_tagged_result(s, run_id, collect_tags, &t, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "changed after ppbench wrote it"));
    /* tags without arrays are refused before anything is written */
    ppb_sample_tags half = {session, NULL};
    assert_int_equal(ppb_store_put_tagged_result(s, run_id, &c[0], &r, &half, &err), PPB_EINPUT);
    ppb_result_free(&r);
    ppb_store_close(s);
}

static void test_nan_reads_back_as_nan(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "nan");
    ppb_case c = make_case(0);
    ppb_result r;
    make_result(&r, 3, 2);
    r.check.rel_l2_err = NAN; /* a check that met non-finite output */
    r.median_ms = INFINITY;
    put_ok(s, run_id, &c, &r);
    static seen got;
    memset(&got, 0, sizeof got);
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 1);
    assert_true(isnan(got.results[0].check.rel_l2_err));
    assert_true(isinf(got.results[0].median_ms));
    same_double(r.check.max_abs_err, got.results[0].check.max_abs_err, "max_abs_err");
    seen_free(&got);
    ppb_result_free(&r);
    ppb_store_close(s);
}

static void test_second_put_replaces(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "replace");
    ppb_case c = make_case(1), other = make_case(2);
    ppb_result first, second, kept;
    make_result(&first, 1, 9);
    make_result(&second, 4, 3);
    make_result(&kept, 5, 4);
    put_ok(s, run_id, &c, &first);
    put_ok(s, run_id, &other, &kept);
    put_ok(s, run_id, &c, &second);

    sqlite3 *db = ppb_store_db(s);
    assert_int_equal(db_int(db, "SELECT count(*) FROM results"), 2);
    assert_int_equal(db_int(db, "SELECT count(*) FROM cases"), 2);
    assert_int_equal(db_int(db, "SELECT count(*) FROM samples"), 3 + 4); /* no orphans */
    static seen got;
    memset(&got, 0, sizeof got);
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 2);
    /* the replaced result counts as inserted last */
    assert_same_case(&other, &got.cases[0]);
    assert_same_result(&kept, &got.results[0]);
    assert_same_case(&c, &got.cases[1]);
    assert_same_result(&second, &got.results[1]);
    static ppb_run_info run;
    assert_int_equal(ppb_store_get_run(s, run_id, &run, &err), PPB_OK);
    assert_int_equal(run.n_done, 2);
    seen_free(&got);
    ppb_result_free(&first);
    ppb_result_free(&second);
    ppb_result_free(&kept);
    ppb_store_close(s);
}

static void test_key_is_derived_from_fields(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "stale key");
    ppb_case c = make_case(0);
    c.config.block_m = 32; /* fields changed, key not refreshed */
    ppb_result r;
    make_result(&r, 0, 1);
    put_ok(s, run_id, &c, &r);
    ppb_case_make_key(&c);
    assert_int_equal(ppb_store_has_result(s, run_id, c.key), 1);
    ppb_result_free(&r);
    ppb_store_close(s);
}

static void test_has_result(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run1 = begin_run(s, "a"), run2 = begin_run(s, "b");
    ppb_case c = make_case(3), absent = make_case(4);
    ppb_result r;
    make_result(&r, 3, 2);
    put_ok(s, run1, &c, &r);
    assert_int_equal(ppb_store_has_result(s, run1, c.key), 1);
    assert_int_equal(ppb_store_has_result(s, run2, c.key), 0);
    assert_int_equal(ppb_store_has_result(s, run1, absent.key), 0);
    ppb_result_free(&r);
    ppb_store_close(s);
}

static void test_put_to_unknown_run_stores_nothing(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    ppb_case c = make_case(0);
    ppb_result r;
    make_result(&r, 0, 2);
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_result(s, 42, &c, &r, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "run 42 not found"));
    /* the case upsert was rolled back with the rest */
    assert_int_equal(db_int(ppb_store_db(s), "SELECT count(*) FROM cases"), 0);
    r.n_samples = 2;
    free(r.samples_ms);
    r.samples_ms = NULL; /* samples claimed but missing */
    int64_t run_id = begin_run(s, "x");
    assert_int_equal(ppb_store_put_result(s, run_id, &c, &r, &err), PPB_EINPUT);
    ppb_store_close(s);
}

static void test_visitor_stops_and_returns_its_value(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "stop");
    for (int i = 0; i < 3; i++) {
        ppb_case c = make_case(i);
        ppb_result r;
        make_result(&r, i, 1);
        put_ok(s, run_id, &c, &r);
        ppb_result_free(&r);
    }
    static seen got;
    memset(&got, 0, sizeof got);
    got.stop_after = 1;
    got.stop_value = 1; /* found what it wanted: success */
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 1);
    seen_free(&got);
    got.stop_after = 2;
    got.stop_value = PPB_ENOMEM; /* an error of its own: passed up unchanged */
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_ENOMEM);
    assert_int_equal(got.n, 2);
    seen_free(&got);
    assert_int_equal(ppb_store_each_result(s, 999, collect, &got, &err), PPB_EINPUT);
    ppb_store_close(s);
}

typedef struct run_list {
    int n;
    int64_t ids[8];
    char labels[8][128];
} run_list;

static int collect_run(void *ctx, const ppb_run_info *run)
{
    run_list *l = ctx;
    l->ids[l->n] = run->id;
    snprintf(l->labels[l->n], sizeof l->labels[0], "%s", run->label);
    l->n++;
    return 0;
}

static void test_runs_newest_first_and_finish(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t a = begin_run(s, "first"), b = begin_run(s, "second"), c = begin_run(s, "third");
    assert_true(a < b && b < c);
    assert_int_equal(ppb_store_latest_run(s), c);
    run_list l = {0};
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_each_run(s, collect_run, &l, &err), PPB_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.ids[0], c);
    assert_string_equal(l.labels[0], "third");
    assert_int_equal(l.ids[2], a);

    static ppb_run_info run;
    assert_int_equal(ppb_store_finish_run(s, b, "interrupted", &err), PPB_OK);
    assert_int_equal(ppb_store_get_run(s, b, &run, &err), PPB_OK);
    assert_string_equal(run.status, "interrupted");
    assert_int_equal(strlen(run.finished_at), 20);
    /* resume reopens it */
    assert_int_equal(ppb_store_finish_run(s, b, "running", &err), PPB_OK);
    assert_int_equal(ppb_store_get_run(s, b, &run, &err), PPB_OK);
    assert_string_equal(run.status, "running");
    assert_string_equal(run.finished_at, "");
    assert_int_equal(ppb_store_finish_run(s, b, "done", &err), PPB_EINPUT);
    assert_int_equal(ppb_store_finish_run(s, 77, "complete", &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "run 77 not found"));
    assert_int_equal(ppb_store_get_run(s, 77, &run, &err), PPB_EINPUT);

    /* a bogus status is refused before anything is written */
    memset(&run, 0, sizeof run);
    snprintf(run.status, sizeof run.status, "bogus");
    assert_int_equal(ppb_store_begin_run(s, &run, &err), PPB_EINPUT);
    assert_int_equal(ppb_store_latest_run(s), c);
    ppb_store_close(s);
}

typedef struct env_list {
    int n;
    char keys[8][64];
    char values[8][128];
} env_list;

static int find_driver(void *ctx, const char *key, const char *value)
{
    int *calls = ctx;
    ++*calls;
    return strcmp(key, "driver") == 0 ? 1 : 0; /* stop when found */
}

static int fail_at_once(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    return PPB_EIO;
}

static int collect_env(void *ctx, const char *key, const char *value)
{
    env_list *l = ctx;
    snprintf(l->keys[l->n], sizeof l->keys[0], "%s", key);
    snprintf(l->values[l->n], sizeof l->values[0], "%s", value);
    l->n++;
    return 0;
}

/* A run's time: the cases' phases summed, kernel time = every sample x its
 * launches, wall time as added (over resumes) by the runner. */
static void test_run_time(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    ppb_err err = {{0}};
    int64_t id = begin_run(s, "timed");
    double kernel = 0, generate = 0;
    for (int i = 1; i <= 3; i++) {
        ppb_case c = make_case(i);
        ppb_result r;
        make_result(&r, i, 4);
        for (int k = 0; k < r.n_samples; k++)
            kernel += r.samples_ms[k] * r.batch_launches;
        generate += r.phases.generate_ms;
        assert_int_equal(ppb_store_put_result(s, id, &c, &r, &err), PPB_OK);
        ppb_result_free(&r);
    }
    assert_int_equal(ppb_store_add_run_wall(s, id, &(ppb_run_wall){1500, 230, 40}, &err), PPB_OK);
    assert_int_equal(ppb_store_add_run_wall(s, id, &(ppb_run_wall){500, 120, 20}, &err), PPB_OK); /* a resume adds its part */
    ppb_run_time t;
    assert_int_equal(ppb_store_run_time(s, id, &t, &err), PPB_OK);
    assert_int_equal(t.cases, 3);
    same_double(t.wall_s, 2.0, "wall_s");
    same_double(t.open_s, 0.35, "open_s");
    same_double(t.store_s, 0.06, "store_s");
    assert_true(fabs(t.generate_s - generate / 1e3) < 1e-12);
    assert_true(fabs(t.kernel_s - kernel / 1e3) < 1e-12);
    assert_int_equal(ppb_store_add_run_wall(s, id + 100, &(ppb_run_wall){1, 0, 0}, &err), PPB_EINPUT);
    assert_int_equal(ppb_store_run_time(s, id + 100, &t, &err), PPB_EINPUT);
    ppb_store_close(s);
}

static void test_env_round_trip(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "env"), other = begin_run(s, "other");
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_env(s, run_id, "device.name", "old", &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(s, run_id, "driver", "550.54, \"cuda\" 12.4\nline2", &err),
                     PPB_OK);
    assert_int_equal(ppb_store_put_env(s, run_id, "device.name", "NVIDIA H200 ü", &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(s, other, "device.name", "other", &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(s, run_id, "a.last", "", &err), PPB_OK);
    assert_int_equal(ppb_store_put_env(s, 99, "k", "v", &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "not found"));
    env_list l = {0};
    assert_int_equal(ppb_store_each_env(s, run_id, collect_env, &l, &err), PPB_OK);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.keys[0], "device.name");
    assert_string_equal(l.values[0], "NVIDIA H200 ü");
    assert_string_equal(l.keys[1], "driver");
    assert_string_equal(l.values[1], "550.54, \"cuda\" 12.4\nline2");
    assert_string_equal(l.keys[2], "a.last"); /* insertion order, not key order */
    assert_string_equal(l.values[2], "");
    assert_int_equal(ppb_store_each_env(s, 99, collect_env, &l, &err), PPB_EINPUT);
    int calls = 0;
    assert_int_equal(ppb_store_each_env(s, run_id, find_driver, &calls, &err), PPB_OK);
    assert_int_equal(calls, 2);
    assert_int_equal(ppb_store_each_env(s, run_id, fail_at_once, NULL, &err), PPB_EIO);
    ppb_store_close(s);
}

static void test_migration_from_v1(void **state)
{
    fixture *f = *state;
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_open_at_version(&s, f->db, 1, &err), PPB_OK);
    sqlite3 *db = ppb_store_db(s);
    assert_int_equal(db_int(db, "PRAGMA user_version"), 1);
    assert_int_equal(db_int(db, "PRAGMA application_id"), PPB_STORE_APPLICATION_ID);
    assert_int_equal(db_int(db, "SELECT count(*) FROM pragma_table_info('results')"
                                " WHERE name = 'overrun_detected'"),
                     0);
    /* rows as an older ppbench wrote them */
    ppb_case c = make_case(1);
    sqlite3_stmt *st = NULL;
    db_exec(db, "INSERT INTO runs(id, started_at, status, label) VALUES(1, '2024-05-01T00:00:00Z',"
                " 'complete', 'old')");
    /* what an older calibrate and propose stored: classified by the migration */
    db_exec(db, "INSERT INTO runs(id, started_at, status, label, args) VALUES"
                " (2, '2024-05-01T00:00:01Z', 'complete', 'proposal calibrate +2%: candidate', 'proposal=x\n'),"
                " (3, '2024-05-01T00:00:02Z', 'complete', 'calibrate repeatability', ''),"
                " (4, '2024-05-01T00:00:03Z', 'complete', 'proposal seed: baseline', 'proposal=seed.yaml\n')");
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO cases(id, key, kernel, weight)"
                                            " VALUES(1, ?1, 'paged_attention', 2.5)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, c.key, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    db_exec(db, "INSERT INTO results(id, run_id, case_id, weight, status, reason, n_samples,"
                " median_ms, check_checked, check_pass, check_max_abs_err)"
                " VALUES(1, 1, 1, 2.5, 'ok', 'fine', 3, 0.75, 1, 1, 0.001)");
    db_exec(db, "INSERT INTO samples VALUES(1, 0, 0.5), (1, 1, 0.75), (1, 2, 1.25)");
    db_exec(db, "INSERT INTO env VALUES(1, 'gpu', 'V100')");
    ppb_store_close(s);

    s = open_ok(f->db);
    db = ppb_store_db(s);
    assert_int_equal(db_int(db, "PRAGMA user_version"), PPB_STORE_SCHEMA_VERSION);
    char ok[16];
    db_text(db, "PRAGMA integrity_check", ok, sizeof ok);
    assert_string_equal(ok, "ok");
    /* runs from before kinds were stored: plain runs, unless calibrate or propose wrote them */
    db_text(db, "SELECT kind FROM runs WHERE id = 1", ok, sizeof ok);
    assert_string_equal(ok, "run");
    char kinds[64];
    db_text(db, "SELECT group_concat(kind, ',') FROM (SELECT kind FROM runs WHERE id > 1 ORDER BY id)", kinds,
            sizeof kinds);
    assert_string_equal(kinds, "calibrate,calibrate,proposal");
    static seen got;
    memset(&got, 0, sizeof got);
    assert_int_equal(ppb_store_each_result(s, 1, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 1);
    assert_string_equal(got.cases[0].key, c.key);
    same_double(got.cases[0].weight, 2.5, "weight");
    const ppb_result *r = &got.results[0];
    assert_int_equal(r->status, PPB_STATUS_OK);
    assert_string_equal(r->reason, "fine");
    same_double(r->median_ms, 0.75, "median");
    same_double(r->check.max_abs_err, 0.001, "max_abs_err");
    assert_int_equal(r->n_samples, 3);
    same_double(r->samples_ms[2], 1.25, "sample");
    assert_int_equal(r->overrun.detected, 0);
    assert_int_equal(r->resources.known, 0);
    assert_int_equal(r->batch_launches, 1);
    seen_free(&got);
    env_list l = {0};
    assert_int_equal(ppb_store_each_env(s, 1, collect_env, &l, &err), PPB_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.values[0], "V100");

    /* the upgraded database takes new results with the new columns */
    ppb_result fresh;
    make_result(&fresh, 6, 2);
    put_ok(s, 1, &c, &fresh);
    memset(&got, 0, sizeof got);
    assert_int_equal(ppb_store_each_result(s, 1, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 1);
    assert_same_result(&fresh, &got.results[0]);
    seen_free(&got);
    ppb_result_free(&fresh);
    ppb_store_close(s);
}

/* num_stages (schema 16): a database of version 14 opens, its cases keep their keys and
 * read back at 0 (the column NULL: they ran at each implementation's own choice), and
 * a case that sets it is stored in the column and the key and reads back whole. */
static void test_num_stages_migration_and_round_trip(void **state)
{
    fixture *f = *state;
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_open_at_version(&s, f->db, 14, &err), PPB_OK);
    sqlite3 *db = ppb_store_db(s);
    assert_int_equal(db_int(db, "SELECT count(*) FROM pragma_table_info('cases') WHERE name = 'num_stages'"), 0);
    /* a prefill case and its result as ppbench of schema 14 stored them */
    ppb_case old = make_case(0);
    assert_null(strstr(old.key, "st="));
    db_exec(db, "INSERT INTO runs(id, started_at, status, label) VALUES(1, '2026-12-01T00:00:00Z', 'complete', 'v14')");
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO cases(id, key, kernel, block_m, weight)"
                                            " VALUES(1, ?1, 'prefix_prefill', 64, 0.25)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, old.key, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    db_exec(db, "INSERT INTO results(id, run_id, case_id, weight, status, n_samples, median_ms)"
                " VALUES(1, 1, 1, 0.25, 'ok', 1, 0.5)");
    db_exec(db, "INSERT INTO samples(result_id, idx, ms) VALUES(1, 0, 0.5)");
    ppb_store_close(s);

    s = open_ok(f->db);
    db = ppb_store_db(s);
    assert_int_equal(db_int(db, "PRAGMA user_version"), PPB_STORE_SCHEMA_VERSION);
    assert_int_equal(db_int(db, "SELECT count(*) FROM cases WHERE id = 1 AND num_stages IS NULL"), 1);
    static seen got;
    memset(&got, 0, sizeof got);
    assert_int_equal(ppb_store_each_result(s, 1, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 1);
    assert_same_case(&old, &got.cases[0]);
    assert_int_equal(got.cases[0].config.num_stages, 0);
    seen_free(&got);

    /* the same shape and knobs at num_stages 3: another case, in the key and the column */
    ppb_case staged = make_case(0);
    staged.config.num_stages = 3;
    ppb_case_make_key(&staged);
    assert_non_null(strstr(staged.key, " w=4 st=3 "));
    int64_t run_id = begin_run(s, "staged");
    ppb_result r;
    make_result(&r, 1, 2);
    put_ok(s, run_id, &staged, &r);
    assert_int_equal(db_int(db, "SELECT count(*) FROM cases WHERE num_stages = 3 AND key LIKE '% st=3 %'"), 1);
    memset(&got, 0, sizeof got);
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, 1);
    assert_same_case(&staged, &got.cases[0]);
    assert_int_equal(got.cases[0].config.num_stages, 3);
    assert_same_result(&r, &got.results[0]);
    seen_free(&got);
    ppb_result_free(&r);
    ppb_store_close(s);
}

/* ---- run kinds and the history trend and compare read ------------------------------ */

static int64_t begin_kind(ppb_store *s, const char *kind, const char *started_at)
{
    static ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "nightly");
    snprintf(run.started_at, sizeof run.started_at, "%s", started_at);
    snprintf(run.kind, sizeof run.kind, "%s", kind);
    ppb_err err = {{0}};
    if (ppb_store_begin_run(s, &run, &err))
        fail_msg("begin_run: %s", err.msg);
    assert_string_equal(run.kind, kind[0] ? kind : "run");
    return run.id;
}

typedef struct history_seen {
    int64_t ids[16];
    double ms[16];
    char uids[16][33];
    int n;
} history_seen;

static int collect_history(void *ctx, const ppb_history_point *p)
{
    history_seen *h = ctx;
    assert_true(h->n < 16);
    h->ids[h->n] = p->run_id;
    h->ms[h->n] = p->median_ms;
    snprintf(h->uids[h->n], sizeof h->uids[h->n], "%s", p->uid);
    h->n++;
    return 0;
}

static history_seen history_timed(ppb_store *s, const char *key, const char *kinds, const char *timing)
{
    history_seen h;
    memset(&h, 0, sizeof h);
    ppb_err err = {{0}};
    if (ppb_store_case_history(s, "nightly", key, "", kinds, timing, collect_history, &h, &err))
        fail_msg("history: %s", err.msg);
    return h;
}

static history_seen history_of(ppb_store *s, const char *key, const char *kinds)
{
    return history_timed(s, key, kinds, NULL);
}

/* A run has a kind (run, proposal, calibrate; "" = run); history and the latest
 * run of a suite take plain runs unless asked (mutation: the kind filter
 * dropped, or not defaulting to plain runs). */
static void test_run_kinds_and_history(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    ppb_case c = make_case(1);
    ppb_result r;
    make_result(&r, 0, 0);
    r.status = PPB_STATUS_OK;
    const char *kinds[] = {"", "run", "calibrate", "proposal", "run"};
    int64_t id[5];
    for (int i = 0; i < 5; i++) {
        char when[32];
        snprintf(when, sizeof when, "2026-01-0%dT00:00:00Z", i + 1);
        id[i] = begin_kind(s, kinds[i], when);
        r.median_ms = 1 + i;
        put_ok(s, id[i], &c, &r);
    }
    ppb_run_info *info = malloc(sizeof *info);
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_get_run(s, id[2], info, &err), PPB_OK);
    assert_string_equal(info->kind, "calibrate");
    free(info);

    history_seen h = history_of(s, c.key, NULL);
    assert_int_equal(h.n, 3);
    assert_true(h.ids[0] == id[0] && h.ids[1] == id[1] && h.ids[2] == id[4]);
    assert_int_equal(strlen(h.uids[0]), 32);
    h = history_of(s, c.key, "run,calibrate");
    assert_int_equal(h.n, 4);
    assert_true(h.ms[2] == 3);
    assert_int_equal(history_of(s, c.key, "all").n, 5);
    assert_int_equal(history_of(s, c.key, "proposal").n, 1);

    assert_int_equal(ppb_store_latest_run_of_suite(s, "nightly", NULL), id[4]);
    assert_int_equal(ppb_store_latest_run_of_suite(s, "nightly", "calibrate"), id[2]);
    assert_int_equal(ppb_store_latest_run_of_suite(s, "nightly", "proposal,calibrate"), id[3]);
    assert_int_equal(ppb_store_latest_run_of_suite(s, "other", NULL), 0);

    /* unknown kinds: refused, when stored and when asked for */
    static ppb_run_info bad;
    memset(&bad, 0, sizeof bad);
    snprintf(bad.kind, sizeof bad.kind, "nightly");
    assert_int_equal(ppb_store_begin_run(s, &bad, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "unknown run kind 'nightly'"));
    assert_int_equal(ppb_store_run_kinds_check("run,bogus", &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "'bogus'"));
    assert_int_equal(ppb_store_run_kinds_check("run,", &err), PPB_EINPUT);
    assert_int_equal(ppb_store_run_kinds_check("", &err), PPB_EINPUT);
    assert_int_equal(ppb_store_run_kinds_check("proposal,calibrate", &err), PPB_OK);
    history_seen none = {0};
    assert_int_equal(ppb_store_case_history(s, "nightly", c.key, "", "runs", NULL, collect_history, &none, &err),
                     PPB_EINPUT);
    assert_int_equal(none.n, 0);

    /* runs timed another way (the CPU kernel's threads per launch) are another history, and are counted */
    assert_int_equal(ppb_store_put_env(s, id[1], PPB_ENV_KERNEL_THREADS, "1", &err), PPB_OK);
    char timing[32];
    assert_int_equal(ppb_store_run_timing(s, id[1], timing, sizeof timing, &err), PPB_OK);
    assert_string_equal(timing, "1");
    assert_int_equal(ppb_store_run_timing(s, id[0], timing, sizeof timing, &err), PPB_OK);
    assert_string_equal(timing, "");
    h = history_timed(s, c.key, NULL, "1");
    assert_true(h.n == 1 && h.ids[0] == id[1]);
    h = history_timed(s, c.key, NULL, "");
    assert_true(h.n == 2 && h.ids[0] == id[0] && h.ids[1] == id[4]);
    int left_out = -1;
    assert_int_equal(ppb_store_runs_timed_otherwise(s, "nightly", "", NULL, "", &left_out, &err), PPB_OK);
    assert_int_equal(left_out, 1);
    assert_int_equal(ppb_store_runs_timed_otherwise(s, "nightly", "", "all", "1", &left_out, &err), PPB_OK);
    assert_int_equal(left_out, 4);
    assert_int_equal(ppb_store_runs_timed_otherwise(s, "nightly", "", NULL, NULL, &left_out, &err), PPB_OK);
    assert_int_equal(left_out, 0);
    ppb_result_free(&r);
    ppb_store_close(s);
}

static void test_refuses_newer_schema(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    begin_run(s, "kept");
    ppb_store_close(s);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    db_exec(db, "PRAGMA user_version = 999");
    sqlite3_close(db);
    assert_refused_untouched(f->db, "newer");
}

static void test_refuses_non_sqlite_file(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(f->db, "wb");
    assert_non_null(fp);
    for (int i = 0; i < 200; i++)
        fprintf(fp, "run,case,median_ms\n%d,prefix_prefill b=1,0.5\n", i);
    fclose(fp);
    assert_refused_untouched(f->db, "not a SQLite database");
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", f->db);
    assert_false(file_exists(wal));
}

static void test_refuses_foreign_sqlite(void **state)
{
    fixture *f = *state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    db_exec(db, "CREATE TABLE results(x); INSERT INTO results VALUES(1), (2);");
    sqlite3_close(db);
    assert_refused_untouched(f->db, "not a ppbench database");
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", f->db);
    assert_false(file_exists(wal));
}

/* A foreign WAL database whose last commit is still only in its -wal file:
 * closing our connection must not checkpoint it into the main file. */
static void test_refuses_foreign_wal_database_without_checkpoint(void **state)
{
    fixture *f = *state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    db_exec(db, "PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES(1);");
    db_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    db_exec(db, "INSERT INTO t VALUES(2)");
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    sqlite3_close(db);
    assert_refused_untouched(f->db, "not a ppbench database");
    /* and the foreign data is all still there */
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(db_int(db, "SELECT count(*) FROM t"), 2);
    sqlite3_close(db);
}

static void test_empty_file_becomes_database(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(f->db, "wb");
    assert_non_null(fp);
    fclose(fp);
    ppb_store *s = open_ok(f->db);
    assert_int_equal(db_int(ppb_store_db(s), "PRAGMA user_version"), PPB_STORE_SCHEMA_VERSION);
    ppb_store_close(s);
}

static void test_open_errors(void **state)
{
    fixture *f = *state;
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    char path[600];
    snprintf(path, sizeof path, "%s/no/such/dir/x.db", f->dir);
    assert_int_equal(ppb_store_open(&s, path, &err), PPB_EIO);
    assert_null(s);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(ppb_store_open(&s, "", &err), PPB_EINPUT);
}

static void test_default_path(void **state)
{
    (void)state;
    const char *saved = getenv("PPBENCH_DB");
    char keep[512] = "";
    if (saved)
        snprintf(keep, sizeof keep, "%s", saved);
    setenv("PPBENCH_DB", "/tmp/from-env.db", 1);
    assert_string_equal(ppb_store_default_path("given.db"), "given.db");
    assert_string_equal(ppb_store_default_path(NULL), "/tmp/from-env.db");
    assert_string_equal(ppb_store_default_path(""), "/tmp/from-env.db");
    setenv("PPBENCH_DB", "", 1);
    assert_string_equal(ppb_store_default_path(NULL), PPB_DEFAULT_DB);
    unsetenv("PPBENCH_DB");
    assert_string_equal(ppb_store_default_path(""), PPB_DEFAULT_DB);
    if (saved)
        setenv("PPBENCH_DB", keep, 1);
}

/* Minimal RFC 4180 reader: enough to check what the exporter wrote. */
#define CSV_ROWS 16
#define CSV_COLS 96
typedef struct csv {
    int n_rows;
    int n_cols[CSV_ROWS];
    char cell[CSV_ROWS][CSV_COLS][600];
} csv;

static void csv_parse(const char *p, csv *out)
{
    memset(out, 0, sizeof *out);
    int row = 0, col = 0;
    size_t len = 0;
    int quoted = 0, row_open = 0;
    for (; *p; p++) {
        char ch = *p;
        if (quoted) {
            if (ch == '"' && p[1] == '"') {
                out->cell[row][col][len++] = '"';
                p++;
            } else if (ch == '"') {
                quoted = 0;
            } else {
                out->cell[row][col][len++] = ch;
            }
            continue;
        }
        row_open = 1;
        if (ch == '"') {
            quoted = 1;
        } else if (ch == ',') {
            col++;
            len = 0;
        } else if (ch == '\n') {
            out->n_cols[row] = col + 1;
            row++;
            col = 0;
            len = 0;
            row_open = 0;
        } else {
            out->cell[row][col][len++] = ch;
        }
        assert_true(row < CSV_ROWS && col < CSV_COLS && len < 599);
    }
    assert_false(quoted);
    assert_false(row_open); /* every row ends with a newline */
    out->n_rows = row;
}

static int csv_column(const csv *t, const char *name)
{
    for (int i = 0; i < t->n_cols[0]; i++)
        if (strcmp(t->cell[0][i], name) == 0)
            return i;
    fail_msg("CSV has no column %s", name);
    return -1;
}

static int64_t store_export_fixture(const char *path, ppb_case *cases, ppb_result *results, int n)
{
    ppb_store *s = open_ok(path);
    begin_run(s, "unrelated"); /* results of another run must not leak in */
    int64_t run_id = begin_run(s, "export");
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_put_env(s, run_id, "gpu", "H200, \"SXM\"", &err), PPB_OK);
    for (int i = 0; i < n; i++) {
        cases[i] = make_case(i);
        make_result(&results[i], i, 2 + i);
        put_ok(s, run_id, &cases[i], &results[i]);
    }
    ppb_store_close(s);
    return run_id;
}

static char *export_to_string(ppb_store *s, int64_t run_id, const char *format, int *rc,
                              ppb_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    *rc = ppb_store_export(s, run_id, format, out, err);
    fclose(out);
    return text;
}

static void test_export_csv(void **state)
{
    fixture *f = *state;
    enum { N = 3 };
    ppb_case cases[N];
    ppb_result results[N];
    int64_t run_id = store_export_fixture(f->db, cases, results, N);
    ppb_store *s = open_ok(f->db);
    ppb_err err = {{0}};
    int rc;
    char *text = export_to_string(s, run_id, "csv", &rc, &err);
    if (rc)
        fail_msg("export csv: %s", err.msg);
    csv *t = malloc(sizeof *t);
    csv_parse(text, t);
    assert_int_equal(t->n_rows, 1 + N);
    for (int i = 1; i < t->n_rows; i++)
        assert_int_equal(t->n_cols[i], t->n_cols[0]);
    int c_run = csv_column(t, "run_id"), c_key = csv_column(t, "case_key"),
        c_reason = csv_column(t, "reason"), c_median = csv_column(t, "median_ms"),
        c_block_m = csv_column(t, "block_m"), c_dtype = csv_column(t, "dtype"),
        c_err = csv_column(t, "check_max_abs_err"), c_status = csv_column(t, "status");
    for (int fi = 0; fi < PPB_F_COUNT; fi++)
        csv_column(t, ppb_field_get(fi)->name);
    csv_column(t, "tflops");
    csv_column(t, "gbps");
    csv_column(t, "overrun_tmp_out_bytes");
    csv_column(t, "resources_registers");
    for (int i = 0; i < N; i++) {
        char (*row)[600] = t->cell[1 + i];
        assert_int_equal(strtoll(row[c_run], NULL, 10), run_id);
        assert_string_equal(row[c_key], cases[i].key);
        assert_string_equal(row[c_reason], results[i].reason); /* comma, quote, newline */
        assert_string_equal(row[c_status], ppb_status_name(results[i].status));
        same_double(strtod(row[c_median], NULL), results[i].median_ms, "csv median");
        same_double(strtod(row[c_err], NULL), results[i].check.max_abs_err, "csv max_abs_err");
        if (cases[i].kernel == PPB_PREFIX_PREFILL)
            assert_int_equal(atoi(row[c_block_m]), cases[i].config.block_m);
        else
            assert_string_equal(row[c_block_m], ""); /* does not apply */
        assert_string_equal(row[c_dtype], ppb_dtype_name(cases[i].shape.dtype));
        ppb_result_free(&results[i]);
    }
    /* the reason was quoted in the raw text, with doubled quotes */
    assert_non_null(strstr(text, "\"reason 0: has, a comma and a \"\"quote\"\"\""));
    free(t);
    free(text);
    ppb_store_close(s);
}

static void json_check(sqlite3 *db, const char *doc, const char *sql_expr_of_doc, char *out,
                       size_t cap)
{
    sqlite3_stmt *st = NULL;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s", sql_expr_of_doc);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, doc, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, cap, "%s", t ? (const char *)t : "(null)");
    sqlite3_finalize(st);
}

static void test_export_json(void **state)
{
    fixture *f = *state;
    enum { N = 3 };
    ppb_case cases[N];
    ppb_result results[N];
    int64_t run_id = store_export_fixture(f->db, cases, results, N);
    ppb_store *s = open_ok(f->db);
    ppb_err err = {{0}};
    int rc;
    char *doc = export_to_string(s, run_id, "json", &rc, &err);
    if (rc)
        fail_msg("export json: %s", err.msg);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    char v[4096];
    json_check(db, doc, "json_valid(?1)", v, sizeof v);
    assert_string_equal(v, "1");
    json_check(db, doc, "json_extract(?1, '$.run.id')", v, sizeof v);
    assert_int_equal(strtoll(v, NULL, 10), run_id);
    json_check(db, doc, "json_extract(?1, '$.run.label')", v, sizeof v);
    assert_string_equal(v, "export");
    json_check(db, doc, "json_extract(?1, '$.run.n_done')", v, sizeof v);
    assert_string_equal(v, "3");
    json_check(db, doc, "json_extract(?1, '$.env.gpu')", v, sizeof v);
    assert_string_equal(v, "H200, \"SXM\"");
    json_check(db, doc, "json_array_length(?1, '$.results')", v, sizeof v);
    assert_string_equal(v, "3");
    for (int i = 0; i < N; i++) {
        char expr[256];
        snprintf(expr, sizeof expr, "json_extract(?1, '$.results[%d].case.key')", i);
        json_check(db, doc, expr, v, sizeof v);
        assert_string_equal(v, cases[i].key);
        snprintf(expr, sizeof expr, "json_extract(?1, '$.results[%d].reason')", i);
        json_check(db, doc, expr, v, sizeof v);
        assert_string_equal(v, results[i].reason);
        snprintf(expr, sizeof expr, "json_type(?1, '$.results[%d].case.block_m')", i);
        json_check(db, doc, expr, v, sizeof v);
        assert_string_equal(v, cases[i].kernel == PPB_PREFIX_PREFILL ? "integer" : "(null)");
        snprintf(expr, sizeof expr, "json_extract(?1, '$.results[%d].overrun.tmp_out_bytes')", i);
        json_check(db, doc, expr, v, sizeof v);
        assert_int_equal(strtoll(v, NULL, 10), results[i].overrun.tmp_out_bytes);
        /* reals are written so that they read back exactly */
        snprintf(expr, sizeof expr, "json_extract(?1, '$.results[%d].samples')", i);
        json_check(db, doc, expr, v, sizeof v);
        const char *p = v;
        assert_int_equal(*p++, '[');
        for (int k = 0; k < results[i].n_samples; k++) {
            char *end = NULL;
            same_double(strtod(p, &end), results[i].samples_ms[k], "json sample");
            p = end + 1; /* ',' or ']' */
        }
        assert_int_equal(p[-1], ']');
        ppb_result_free(&results[i]);
    }
    sqlite3_close(db);
    free(doc);
    ppb_store_close(s);
}

static void test_export_errors(void **state)
{
    fixture *f = *state;
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "empty");
    ppb_err err = {{0}};
    int rc;
    char *text = export_to_string(s, run_id, "xml", &rc, &err);
    assert_int_equal(rc, PPB_EINPUT);
    assert_non_null(strstr(err.msg, "xml"));
    free(text);
    text = export_to_string(s, run_id + 100, "csv", &rc, &err);
    assert_int_equal(rc, PPB_EINPUT);
    assert_non_null(strstr(err.msg, "not found"));
    free(text);
    /* a run without results: a header, an empty array */
    text = export_to_string(s, run_id, "csv", &rc, &err);
    assert_int_equal(rc, PPB_OK);
    assert_int_equal(strchr(text, '\n') - text + 1, (long)strlen(text));
    free(text);
    text = export_to_string(s, run_id, "json", &rc, &err);
    assert_int_equal(rc, PPB_OK);
    assert_non_null(strstr(text, "\"results\":[]"));
    assert_non_null(strstr(text, "\"env\":{}"));
    free(text);
    ppb_store_close(s);
}

static void test_two_connections_share_results(void **state)
{
    fixture *f = *state;
    ppb_store *a = open_ok(f->db), *b = open_ok(f->db);
    int64_t run_id = begin_run(a, "shared");
    ppb_case c = make_case(5);
    ppb_result r;
    make_result(&r, 5, 3);
    put_ok(b, run_id, &c, &r);
    assert_int_equal(ppb_store_has_result(a, run_id, c.key), 1);
    ppb_result_free(&r);
    ppb_store_close(a);
    ppb_store_close(b);
}

/* ---- crash safety ------------------------------------------------------------ */

typedef struct crash_ctx {
    int pipe_fd;
    char wal[600];
    long long wal_before;
    int armed;
} crash_ctx;

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Runs in the child, inside the open transaction of the put that must be lost. */
static void die_before_commit(void *ctx, sqlite3 *db)
{
    (void)db;
    crash_ctx *x = ctx;
    if (!x->armed)
        return;
    long long sizes[2] = {x->wal_before, file_size(x->wal)};
    if (write(x->pipe_fd, sizes, sizeof sizes) != (ssize_t)sizeof sizes)
        _exit(5);
    kill(getpid(), SIGKILL);
}

static void crash_child(const char *path, int64_t run_id, int n, int pipe_fd)
{
    ppb_store *s = NULL;
    ppb_err err;
    if (ppb_store_open(&s, path, &err) != PPB_OK)
        _exit(2);
    crash_ctx x = {.pipe_fd = pipe_fd};
    snprintf(x.wal, sizeof x.wal, "%s-wal", path);
    ppb_store_set_commit_hook(s, die_before_commit, &x);
    for (int i = 0; i < n; i++) {
        ppb_case c = make_case(i);
        ppb_result r;
        if (i == n / 2) {
            /* A tiny page cache and a big result: the uncommitted transaction
             * spills its pages into the -wal file before the process dies, so
             * the reader has to skip real uncommitted frames. */
            sqlite3_exec(ppb_store_db(s), "PRAGMA cache_size = 4", NULL, NULL, NULL);
            make_result(&r, i, 20000);
            x.wal_before = file_size(x.wal);
            x.armed = 1;
        } else {
            make_result(&r, i, 4);
        }
        if (ppb_store_put_result(s, run_id, &c, &r, &err) != PPB_OK)
            _exit(3);
        ppb_result_free(&r);
    }
    _exit(4); /* not reached: the hook kills us */
}

static void test_killed_writer_loses_only_the_open_transaction(void **state)
{
    fixture *f = *state;
    enum { N = 8 };
    ppb_store *s = open_ok(f->db);
    int64_t run_id = begin_run(s, "crash");
    ppb_store_close(s); /* no SQLite connection may cross fork() */

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child(f->db, run_id, N, fds[1]);
    }
    close(fds[1]);
    long long sizes[2] = {-1, -1};
    ssize_t got_bytes = read(fds[0], sizes, sizeof sizes);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("child did not die by SIGKILL (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    assert_int_equal(got_bytes, (ssize_t)sizeof sizes);
    assert_true(sizes[0] > 0);
    assert_true(sizes[1] > sizes[0]); /* uncommitted frames reached the -wal file */

    s = open_ok(f->db);
    char ok[16];
    db_text(ppb_store_db(s), "PRAGMA integrity_check", ok, sizeof ok);
    assert_string_equal(ok, "ok");
    static seen got;
    memset(&got, 0, sizeof got);
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_each_result(s, run_id, collect, &got, &err), PPB_OK);
    assert_int_equal(got.n, N / 2);
    for (int i = 0; i < N / 2; i++) {
        ppb_case c = make_case(i);
        ppb_result r;
        make_result(&r, i, 4);
        assert_same_case(&c, &got.cases[i]);
        assert_same_result(&r, &got.results[i]);
        ppb_result_free(&r);
    }
    ppb_case lost = make_case(N / 2);
    assert_int_equal(ppb_store_has_result(s, run_id, lost.key), 0);
    assert_int_equal(db_int(ppb_store_db(s), "SELECT count(*) FROM samples"), 4 * (N / 2));
    seen_free(&got);
    /* and the run goes on: resume stores the lost case */
    ppb_result r;
    make_result(&r, N / 2, 5);
    put_ok(s, run_id, &lost, &r);
    assert_int_equal(ppb_store_has_result(s, run_id, lost.key), 1);
    ppb_result_free(&r);
    ppb_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migration_table_is_ordered),
        cmocka_unit_test_setup_teardown(test_run_time, setup, teardown),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test_setup_teardown(test_open_creates_database_with_pragmas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_case_field_has_a_column, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sample_tags_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nan_reads_back_as_nan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_put_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_is_derived_from_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_has_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_to_unknown_run_stores_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_visitor_stops_and_returns_its_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs_newest_first_and_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_from_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_num_stages_migration_and_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_kinds_and_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_non_sqlite_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_foreign_sqlite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_foreign_wal_database_without_checkpoint,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_file_becomes_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_proposal_cost_round_trips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_reasons_read_back_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_connections_share_results, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_writer_loses_only_the_open_transaction,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
