/* strptime is X/Open. */
#define _XOPEN_SOURCE 700
#include "cli_util.h"

#include "commands.h"
#include "doc_text.h"
#include "fetch.h"
#include "files.h"
#include "measured.h"
#include "run_doc.h"
#include "verdict.h"
#include "verdict_doc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int ppb_cli_run_id(ppb_store *s, const char *text, int64_t *id, ppb_err *err)
{
    if (strcmp(text, "latest") == 0) {
        *id = ppb_store_latest_run(s);
        return *id > 0 ? PPB_OK
                       : ppb_fail(err, PPB_EINPUT, "the database holds no plain run for 'latest' (proposal and "
                                                   "calibration runs: by their id, `ppbench list` shows them)");
    }
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || v <= 0)
        return ppb_fail(err, PPB_EINPUT, "'%s' is not a run id (a number, or 'latest')", text);
    *id = v;
    return PPB_OK;
}

ppb_store *ppb_cli_open_store(const char *cmd, const char *db_option)
{
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    const char *path = ppb_store_default_path(db_option);
    if (ppb_store_open(&s, path, &err)) {
        fprintf(stderr, "ppbench %s: %s\n", cmd, err.msg);
        return NULL;
    }
    return s;
}

ppb_store *ppb_cli_open_existing_store(const char *cmd, const char *db_option)
{
    const char *path = ppb_store_default_path(db_option);
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "ppbench %s: no database at %s (from %s): nothing to read\n", cmd, path,
                db_option ? "--db" : getenv("PPBENCH_DB") ? "$PPBENCH_DB" : "the default path");
        return NULL;
    }
    return ppb_cli_open_store(cmd, db_option);
}

ppb_store *ppb_cli_open_readonly_store(const char *cmd, const char *db_option)
{
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    const char *path = ppb_store_default_path(db_option);
    if (access(path, F_OK) != 0)
        return ppb_cli_open_existing_store(cmd, db_option); /* says there is nothing to read */
    if (ppb_store_open_readonly(&s, path, &err)) {
        fprintf(stderr, "ppbench %s: %s\n", cmd, err.msg);
        return NULL;
    }
    return s;
}

int ppb_cli_index(const char *cmd, const char *opt, const char *text, int *out)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < 0 || v > 1 << 20) {
        fprintf(stderr, "ppbench %s: %s %s: expected an integer >= 0\n", cmd, opt, text);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int ppb_cli_positive(const char *cmd, const char *opt, const char *text, double *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0) || v > 1e15) {
        fprintf(stderr, "ppbench %s: %s %s: expected a positive number\n", cmd, opt, text);
        return -1;
    }
    *out = v;
    return 0;
}

static const struct {
    int verdict;
    int exit_code;
} verdict_exits[] = {
    {PPB_VERDICT_ACCEPT, PPB_EXIT_OK},
    {PPB_VERDICT_REJECT, PPB_EXIT_REJECT},
    {PPB_VERDICT_INCONCLUSIVE, PPB_EXIT_INCONCLUSIVE},
};

int ppb_cli_verdict_exit(const char *verdict)
{
    for (size_t i = 0; i < sizeof verdict_exits / sizeof *verdict_exits; i++)
        if (strcmp(verdict, ppb_verdict_name(verdict_exits[i].verdict)) == 0)
            return verdict_exits[i].exit_code;
    return PPB_EXIT_INCONCLUSIVE; /* no verdict to act on */
}

static const struct {
    int rc;
    int exit_code;
} error_exits[] = {
    {PPB_OK, PPB_EXIT_OK},
    {PPB_EINPUT, PPB_EXIT_INPUT},
    {PPB_EINTR, PPB_EXIT_INTERRUPTED},
};

int ppb_cli_exit(int rc)
{
    for (size_t i = 0; i < sizeof error_exits / sizeof *error_exits; i++)
        if (rc == error_exits[i].rc)
            return error_exits[i].exit_code;
    return PPB_EXIT_RUNTIME;
}

int ppb_cli_fail(const char *cmd, int rc, const ppb_err *err)
{
    fprintf(stderr, "ppbench %s: %s\n", cmd, err->msg);
    return ppb_cli_exit(rc);
}

/* A document path that would destroy stored results: the database, its
 * journal files, or any SQLite file. NULL when the path is safe. */
static const char *doc_path_danger(const char *path, const char *db)
{
    static const char *const db_files[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof db_files / sizeof *db_files; i++) {
        char name[4200];
        snprintf(name, sizeof name, "%s%s", db, db_files[i]);
        if (ppb_same_file(path, name))
            return i ? "a file of the database" : "the database";
    }
    return ppb_file_is_sqlite(path) ? "an SQLite database" : NULL;
}

/* Refused before anything runs: a document over the database (truncating it
 * lost every stored run), two documents on stdout or in one file. */
static int check_doc_paths(const char *cmd, const ppb_cli_opts *o)
{
    if (o->json && o->md && strcmp(o->json, o->md) == 0) {
        fprintf(stderr, "ppbench %s: --json and --markdown both write to %s: give each its own file%s\n", cmd,
                strcmp(o->json, "-") == 0 ? "standard output" : o->json,
                strcmp(o->json, "-") == 0 ? " (one of them may be -)" : "");
        return -1;
    }
    const char *db = ppb_store_default_path(o->db);
    const char *paths[] = {o->json, o->md}, *opts[] = {"--json", "--markdown"};
    for (int i = 0; i < 2; i++) {
        const char *danger = paths[i] && strcmp(paths[i], "-") != 0 ? doc_path_danger(paths[i], db) : NULL;
        if (danger) {
            fprintf(stderr, "ppbench %s: %s %s is %s: refusing to write a document over stored results\n", cmd,
                    opts[i], paths[i], danger);
            return -1;
        }
    }
    return 0;
}

int ppb_cli_parse(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts,
                  void (*usage)(FILE *), ppb_cli_opts *o, ppb_cli_opt_fn fn, void *ctx, int positional)
{
    memset(o, 0, sizeof *o);
    o->backend = "auto";
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 'd': o->db = optarg; break;
        case 'B': o->baseline_db = optarg; break;
        case 'W': bad = ppb_cli_positive(cmd, "--baseline-timeout", optarg, &o->baseline_timeout_s); break;
        case 'j': o->json = optarg; break;
        case 'm': o->md = optarg; break;
        case 'b':
            bad = ppb_cli_backend(cmd, optarg);
            o->backend = optarg;
            break;
        case 'D': bad = ppb_cli_index(cmd, "--device", optarg, &o->device_index); break;
        case 'g': bad = ppb_cli_positive(cmd, "--cpu-max-gflop", optarg, &o->cpu_max_gflop); break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        case '?': bad = 1; break;
        default: bad = fn ? fn(ctx, c, optarg) : 1; break;
        }
        if (bad) {
            if (bad > 0)
                usage(stderr);
            return PPB_EXIT_USAGE;
        }
    }
    if (positional >= 0 && argc - optind != positional) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    return check_doc_paths(cmd, o) ? PPB_EXIT_USAGE : -1;
}

void ppb_cli_session_opts(const ppb_cli_opts *o, const char **backend, int *device_index, double *cpu_max_gflop,
                          FILE **log, const char **db_path)
{
    *backend = o->backend;
    *device_index = o->device_index;
    *cpu_max_gflop = o->cpu_max_gflop;
    *log = stderr;
    *db_path = ppb_store_default_path(o->db);
}

FILE *ppb_cli_human(const ppb_cli_opts *o)
{
    return (o->json && strcmp(o->json, "-") == 0) || (o->md && strcmp(o->md, "-") == 0) ? stderr : stdout;
}

int ppb_cli_write_doc(const char *cmd, const char *path, ppb_cli_doc_fn fn, void *ctx)
{
    if (!path)
        return 0;
    ppb_err err = {{0}};
    int rc;
    if (strcmp(path, "-") == 0) {
        rc = fn(ctx, stdout, &err);
        if (!rc && (fflush(stdout) != 0 || ferror(stdout)))
            rc = ppb_fail(&err, PPB_EIO, "%s", strerror(errno));
    } else {
        ppb_file_replace doc;
        rc = ppb_file_replace_open(&doc, path, &err);
        if (!rc && (rc = fn(ctx, doc.f, &err)) != 0)
            ppb_file_replace_abort(&doc);
        else if (!rc)
            rc = ppb_file_replace_commit(&doc, &err);
    }
    if (rc)
        fprintf(stderr, "ppbench %s: writing %s: %s\n", cmd, path, err.msg[0] ? err.msg : "stream error");
    return rc ? PPB_EXIT_RUNTIME : 0;
}

typedef struct run_doc_ctx {
    const char *cmd;
    ppb_store *s;
    int64_t run_id;
    int exit_code;
} run_doc_ctx;

static int run_json(void *ctx, FILE *out, ppb_err *err)
{
    const run_doc_ctx *d = ctx;
    return ppb_run_doc_json(d->s, d->run_id, d->cmd, d->exit_code, out, err);
}

static int run_markdown(void *ctx, FILE *out, ppb_err *err)
{
    const run_doc_ctx *d = ctx;
    return ppb_run_doc_markdown(d->s, d->run_id, d->exit_code, out, err);
}

int ppb_cli_run_docs(const char *cmd, ppb_store *s, int64_t run_id, int exit_code, const char *json_path,
                     const char *md_path)
{
    run_doc_ctx d = {cmd, s, run_id, exit_code};
    int rc = ppb_cli_write_doc(cmd, json_path, run_json, &d);
    return rc ? rc : ppb_cli_write_doc(cmd, md_path, run_markdown, &d);
}

void ppb_cli_load_note(ppb_store *s, int64_t run_id, FILE *out)
{
    ppb_measured m;
    ppb_err ignored;
    char note[PPB_MEASURED_NOTE_MAX];
    if (ppb_measured_read(s, run_id, &m, &ignored))
        return;
    ppb_measured_load_note(&m, note, sizeof note);
    if (note[0])
        fprintf(out, "note: %s\n", note);
}

typedef struct verdict_doc_ctx {
    const char *cmd;
    ppb_store *s;
    const ppb_proposal_record *rec;
    const ppb_proposal_case *cases;
    int n_cases;
    int exit_code;
} verdict_doc_ctx;

static int verdict_json(void *ctx, FILE *out, ppb_err *err)
{
    const verdict_doc_ctx *d = ctx;
    return ppb_verdict_json(d->s, d->rec, d->cases, d->n_cases, d->cmd, d->exit_code, out, err);
}

static int verdict_markdown(void *ctx, FILE *out, ppb_err *err)
{
    const verdict_doc_ctx *d = ctx;
    return ppb_verdict_markdown(d->s, d->rec, d->cases, d->n_cases, out, err);
}

int ppb_cli_verdict_docs(const char *cmd, ppb_store *s, const ppb_proposal_record *rec, const ppb_proposal_case *cases,
                         int n_cases, int exit_code, const char *json_path, const char *md_path)
{
    verdict_doc_ctx d = {cmd, s, rec, cases, n_cases, exit_code};
    int rc = ppb_cli_write_doc(cmd, json_path, verdict_json, &d);
    return rc ? rc : ppb_cli_write_doc(cmd, md_path, verdict_markdown, &d);
}

int ppb_cli_backend(const char *cmd, const char *text)
{
    if (strcmp(text, "auto") == 0 || strcmp(text, "cpu") == 0 || strcmp(text, "cuda") == 0)
        return 0;
    fprintf(stderr, "ppbench %s: --backend %s: expected auto, cpu or cuda\n", cmd, text);
    return -1;
}

int ppb_cli_date(const char *cmd, const char *opt, const char *text, char *utc, size_t len)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(text, "%Y-%m-%d", &tm);
    if (end && *end == 'T')
        end = strptime(end, "T%H:%M:%S", &tm);
    if (end && *end == 'Z')
        end++;
    /* strptime takes 2026-02-31; a round trip through timegm shows it is not a date. */
    struct tm back = tm;
    time_t t = end ? timegm(&back) : (time_t)-1;
    if (!end || *end || strlen(text) < 10 || t == (time_t)-1 || back.tm_mday != tm.tm_mday ||
        back.tm_mon != tm.tm_mon) {
        fprintf(stderr, "ppbench %s: %s '%s' is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)\n", cmd, opt,
                text);
        return -1;
    }
    strftime(utc, len, "%Y-%m-%dT%H:%M:%SZ", &back);
    return 0;
}

static int open_baseline(const char *cmd, const char *path_or_url, double timeout_s, ppb_store **out, char *local,
                         size_t len)
{
    ppb_err err = {{0}};
    local[0] = '\0';
    int rc = ppb_fetch_open_baseline(path_or_url, (long)(timeout_s + 0.999), out, local, len, &err);
    if (!rc)
        return 0;
    fprintf(stderr, "ppbench %s: %s\n", cmd, err.msg);
    if (local[0])
        ppb_fetch_release(path_or_url, local);
    return ppb_cli_exit(rc);
}

static void close_baseline(ppb_store *s, const char *path_or_url, const char *local)
{
    ppb_store_close(s);
    ppb_fetch_release(path_or_url, local);
}

int ppb_cli_open_stores(const char *cmd, const ppb_cli_opts *o, ppb_cli_stores *st)
{
    memset(st, 0, sizeof *st);
    /* compare stores its verdict; trend only reads */
    st->s = strcmp(cmd, "compare") == 0 ? ppb_cli_open_existing_store(cmd, o->db) : ppb_cli_open_readonly_store(cmd, o->db);
    if (!st->s)
        return PPB_EXIT_RUNTIME;
    st->baseline_db = o->baseline_db;
    int rc = o->baseline_db ? open_baseline(cmd, o->baseline_db, o->baseline_timeout_s, &st->baseline,
                                            st->baseline_path, sizeof st->baseline_path)
                            : 0;
    if (rc) {
        ppb_store_close(st->s);
        memset(st, 0, sizeof *st);
    }
    return rc;
}

void ppb_cli_close_stores(ppb_cli_stores *st)
{
    if (st->baseline)
        close_baseline(st->baseline, st->baseline_db, st->baseline_path);
    ppb_store_close(st->s);
    memset(st, 0, sizeof *st);
}

void ppb_run_info_clean(ppb_run_info *r)
{
    char *const fields[] = {r->suite_path, r->suite_name, r->suite_hash, r->git_commit, r->host,    r->backend,
                            r->device,     r->target,     r->label,      r->started_at, r->finished_at, r->status,
                            r->args,       r->run_group};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        ppb_term_clean(fields[i], 0);
}

const char *ppb_cli_suite_arg(const char *arg, const char *sub)
{
    static char found[32][4096];   /* a command names a few suites (list-kernels: several) */
    static int n;
    if (n == 32 || !ppb_find_shipped_suite(arg, sub, found[n], sizeof found[n]))
        return arg;
    return found[n++];
}
