/* The results database (SQLite, WAL). store.c owns every SQL statement.
 * Each case result is committed in its own transaction when it completes, so a
 * killed run loses nothing that finished, and --resume completes the rest. */
#ifndef PPB_STORE_H
#define PPB_STORE_H

#include <stdint.h>
#include <stdio.h>

#include "case.h"
#include "ppb_error.h"
#include "result.h"

typedef struct ppb_store ppb_store;

#define PPB_STORE_SCHEMA_VERSION 1

/* Path used when neither --db nor PPBENCH_DB is given. */
#define PPB_DEFAULT_DB "ppbench.db"

typedef struct ppb_run_info {
    int64_t id;
    char suite_path[4096];
    char suite_name[128];
    char suite_hash[17];
    char git_commit[64];
    char host[128];
    char backend[16];          /* "cpu" / "cuda" */
    char device[128];
    char target[64];
    char label[128];
    char started_at[32];       /* ISO 8601 UTC */
    char finished_at[32];      /* "" while running */
    char status[16];           /* "running", "complete", "interrupted", "failed" */
    char args[1024];           /* the command line (filter, shard) needed to resume */
    int n_cases;               /* cases planned */
    int n_done;                /* results stored */
} ppb_run_info;

/* Open or create; applies migrations up to PPB_STORE_SCHEMA_VERSION. A file that
 * is not a ppbench database (or is newer) is refused and left untouched. */
int ppb_store_open(ppb_store **out, const char *path, ppb_err *err);
void ppb_store_close(ppb_store *s);
/* Resolve the database path: explicit option, then $PPBENCH_DB, then the default. */
const char *ppb_store_default_path(const char *option);

int ppb_store_begin_run(ppb_store *s, ppb_run_info *run, ppb_err *err); /* fills run->id */
int ppb_store_put_env(ppb_store *s, int64_t run_id, const char *key, const char *value,
                      ppb_err *err);
/* One transaction: the case row (if new), the result and its raw samples. */
int ppb_store_put_result(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r,
                         ppb_err *err);
int ppb_store_finish_run(ppb_store *s, int64_t run_id, const char *status, ppb_err *err);

int ppb_store_get_run(ppb_store *s, int64_t run_id, ppb_run_info *run, ppb_err *err);
/* Latest run id, or 0 when none. */
int64_t ppb_store_latest_run(ppb_store *s);
/* Is there a stored result for this case key in this run? (resume) */
int ppb_store_has_result(ppb_store *s, int64_t run_id, const char *case_key);

/* Iterate results of a run, in insertion order. The callback gets a fully
 * filled case and result (samples included); returning non-zero stops. */
typedef int (*ppb_result_visitor)(void *ctx, const ppb_case *c, const ppb_result *r);
int ppb_store_each_result(ppb_store *s, int64_t run_id, ppb_result_visitor fn, void *ctx,
                          ppb_err *err);
typedef int (*ppb_run_visitor)(void *ctx, const ppb_run_info *run);
int ppb_store_each_run(ppb_store *s, ppb_run_visitor fn, void *ctx, ppb_err *err);
typedef int (*ppb_env_visitor)(void *ctx, const char *key, const char *value);
int ppb_store_each_env(ppb_store *s, int64_t run_id, ppb_env_visitor fn, void *ctx, ppb_err *err);

/* export RUN --format csv|json, written by SQLite (json via its JSON functions). */
int ppb_store_export(ppb_store *s, int64_t run_id, const char *format, FILE *out, ppb_err *err);

#endif
