/* The results database (SQLite, WAL). store.c owns every SQL statement.
 * Each case result is committed in its own transaction as it completes (a run's
 * writer thread: harness/run/result_writer.h), so a killed run loses at most
 * the few results still queued, and --resume completes the rest.
 * Schema, migrations and resume: docs/STORE.md. One ppb_store is one SQLite
 * connection: use it from one thread at a time. */
#ifndef PPB_STORE_H
#define PPB_STORE_H

#include <stdint.h>
#include <stdio.h>

#include "case.h"
#include "ppb_error.h"
#include "result.h"

typedef struct ppb_store ppb_store;

/* user_version of a database this binary writes: the number of steps in
 * store_schema.c's migration list, so a new step is the one edit. */
extern const int ppb_store_migration_count;
#define PPB_STORE_SCHEMA_VERSION ppb_store_migration_count

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
    /* --shard K/N (0/0: the whole suite) and the group (night) its shards share;
     * `ppbench merge` folds the shards of one group into one run. */
    int shard_index, shard_count;
    char run_group[128];
    int n_shards;              /* shards this run holds: 1 for a shard, up to shard_count once merged */
    char kind[16];             /* ppb_store_run_kinds: "run", "proposal", "calibrate"; "" at begin: "run" */
} ppb_run_info;

/* What a run was for: a plain `ppbench run` ("run", the nights trend follows and
 * compare takes run-to-run noise from), a side of `propose`, or `calibrate`
 * (synthetic slowdowns included). NULL-terminated. */
extern const char *const ppb_store_run_kinds[];
/* 1 if `kind` is one of ppb_store_run_kinds. */
int ppb_store_run_kind_valid(const char *kind);
/* A comma-separated list of kinds ("run,proposal"), or "all": 0 if every name
 * is a kind (and the list is not empty), else PPB_EINPUT naming the bad one. */
int ppb_store_run_kinds_check(const char *list, ppb_err *err);

/* Open or create; applies migrations up to PPB_STORE_SCHEMA_VERSION. A file that
 * is not a ppbench database (or is newer) is refused with PPB_EINPUT and left
 * untouched; a path that does not exist (or an empty file) becomes a new database. */
int ppb_store_open(ppb_store **out, const char *path, ppb_err *err);
/* For commands that only read: SQLITE_OPEN_READONLY, checked like
 * ppb_store_open, nothing created or written next to the file (a database in a
 * read-only folder can be read). Without a -wal file (no writer has it open) it
 * is read as immutable (no -shm needed); with one, read-only with the writer's
 * WAL. An older schema (or an empty file) is opened with ppb_store_open, which
 * migrates it. Every write on the store fails (PPB_EIO). */
int ppb_store_open_readonly(ppb_store **out, const char *path, ppb_err *err);
void ppb_store_close(ppb_store *s);
/* Resolve the database path: explicit option, then $PPBENCH_DB, then the default. */
const char *ppb_store_default_path(const char *option);

/* Fills run->id; an empty started_at becomes now (UTC), an empty status "running". */
int ppb_store_begin_run(ppb_store *s, ppb_run_info *run, ppb_err *err);
/* Insert or replace one environment entry of a run. */
int ppb_store_put_env(ppb_store *s, int64_t run_id, const char *key, const char *value,
                      ppb_err *err);
/* One transaction: the case row (if new), the result and its raw samples. The
 * key is recomputed from c's fields. A second put for the same (run, case)
 * replaces the first (a case re-run after a crash). */
int ppb_store_put_result(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r,
                         ppb_err *err);

/* Where each sample of an A/B pair was taken (harness/decide/sequential.h):
 * sample k's session (0 .. sessions - 1) and round (1 ..), one entry per
 * sample. Stored beside the samples (schema 13) and covered by the row check,
 * so a verdict's between-session spread can be recomputed from the store. */
typedef struct ppb_sample_tags {
    const unsigned char *session;
    const int *round;
} ppb_sample_tags;
/* ppb_store_put_result with the samples' tags (NULL: untagged, as put_result). */
int ppb_store_put_tagged_result(ppb_store *s, int64_t run_id, const ppb_case *c, const ppb_result *r,
                                const ppb_sample_tags *tags, ppb_err *err);
/* status: "complete", "interrupted" or "failed" stamps finished_at; "running"
 * clears it (a run reopened by --resume). */
int ppb_store_finish_run(ppb_store *s, int64_t run_id, const char *status, ppb_err *err);

int ppb_store_get_run(ppb_store *s, int64_t run_id, ppb_run_info *run, ppb_err *err);
/* The newest plain run (kind 'run', what `ppbench run` stores) for "latest",
 * or 0 when none (negative PPB_E* if the query fails). A proposal's or a
 * calibration's runs are not "latest": after `propose`, `report latest` still
 * means the last `run` (proposals: `report --proposal latest`). */
int64_t ppb_store_latest_run(ppb_store *s);
/* Is there a stored result for this case key in this run? (resume)
 * 1 yes, 0 no, negative PPB_E* if the query fails. */
int ppb_store_has_result(ppb_store *s, int64_t run_id, const char *case_key);

/* Iterate results of a run, in insertion order (a replaced result counts as
 * inserted when replaced). The callback gets a fully filled case and result
 * (samples included); both, and the samples array, belong to the store and are
 * freed when the callback returns: copy what you keep. The callback must not
 * write to the same store. A visitor returning > 0 stops the walk early (found
 * it) and each_* returns 0; one returning < 0 stops it and each_* returns that
 * value unchanged (a PPB_E* code the visitor set; err is left as it is). */
typedef int (*ppb_result_visitor)(void *ctx, const ppb_case *c, const ppb_result *r);
int ppb_store_each_result(ppb_store *s, int64_t run_id, ppb_result_visitor fn, void *ctx,
                          ppb_err *err);
/* The same walk with each result's sample tags: NULL for a result stored
 * without them (not an A/B pair's, or stored before schema 13). */
typedef int (*ppb_tagged_result_visitor)(void *ctx, const ppb_case *c, const ppb_result *r,
                                         const ppb_sample_tags *tags);
int ppb_store_each_tagged_result(ppb_store *s, int64_t run_id, ppb_tagged_result_visitor fn, void *ctx,
                                 ppb_err *err);
/* Runs newest first. */
typedef int (*ppb_run_visitor)(void *ctx, const ppb_run_info *run);
int ppb_store_each_run(ppb_store *s, ppb_run_visitor fn, void *ctx, ppb_err *err);
/* Environment entries in the order they were first put. */
typedef int (*ppb_env_visitor)(void *ctx, const char *key, const char *value);
int ppb_store_each_env(ppb_store *s, int64_t run_id, ppb_env_visitor fn, void *ctx, ppb_err *err);
/* One environment entry's value into value (len bytes): 1 when the run has it, 0
 * when not (value ""), negative PPB_E* if the query fails. */
int ppb_store_get_env(ppb_store *s, int64_t run_id, const char *key, char *value, size_t len, ppb_err *err);
/* A run's results counted by status (ppb_status; 0 for a status none has). */
int ppb_store_run_status_counts(ppb_store *s, int64_t run_id, int counts[PPB_STATUS_COUNT], ppb_err *err);
/* The implementations a run's cases ran ("builtin", "plugin:NAME", ...), each
 * once, in byte order. */
typedef int (*ppb_impl_visitor)(void *ctx, const char *impl);
int ppb_store_each_run_impl(ppb_store *s, int64_t run_id, ppb_impl_visitor fn, void *ctx, ppb_err *err);
/* A read transaction: the reads between begin and end see one snapshot of the
 * database, however another process appends to it meanwhile (a document made
 * of several queries about a run that is still growing). Not nested. */
int ppb_store_read_begin(ppb_store *s, ppb_err *err);
void ppb_store_read_end(ppb_store *s);

/* ---- proposal verdicts (schema v3) -------------------------------------- */

/* Room for a verdict's reasons: a line per case that decided it, for suites of hundreds of cases. */
#define PPB_PROPOSAL_REASONS_MAX (128 * 1024)

/* What a proposal's verdict cost, in milliseconds of wall clock unless said
 * (schema 18; NaN when not recorded: stored before it, compare, kv_capacity).
 * The phases add up to about the wall time; kernel_ms is the device's part of
 * sampling_ms. docs/STATISTICS.md "What a verdict costs" defines the fixed
 * design. */
typedef struct ppb_proposal_cost {
    double wall_ms;          /* the command's start (trees prepared included) to the verdict */
    double setup_ms;         /* before the first pair: trees, suite, sessions, device, plugins */
    double inputs_ms;        /* the pairs' inputs and float64 references */
    double check_ms;         /* preparing each side's session and checking its output */
    double warmup_ms;        /* preparing the timing sessions, and their untimed launches before sampling */
    double sampling_ms;      /* the sequential design's samples */
    double kernel_ms;        /* the kernels' own time in those samples, both sides */
    double fixed_kernel_ms;  /* what a plain fixed-sample design at the same resolution would take */
    int fixed_samples;       /* its samples per side and pair */
    /* the pair (1-based) whose case settled a REJECT alone, after which the
     * pairs were checked, not timed (sampling.stop_when_settled); 0: none */
    int settled_by_pair;
} ppb_proposal_cost;

typedef struct ppb_proposal_record {
    int64_t id;
    char name[128];
    char path[4096];
    char kind[32];                 /* "kernel_config", "chunked_prefill", "kv_capacity" */
    char target[64];
    int64_t baseline_run, candidate_run;   /* 0 when the proposal ran nothing (kv_capacity) */
    char verdict[16];              /* "ACCEPT", "REJECT", "INCONCLUSIVE" */
    double geomean_ratio, geomean_lo, geomean_hi;   /* candidate/baseline time; NaN if none */
    /* The rules it was decided under (verdict.h), for whoever draws them (the
     * report's chart); NaN when not known: stored before schema 12, or no A/B
     * verdict (kv_capacity). */
    double min_gain, max_regression, threshold;
    double detectable;             /* smallest change of the mean the run could see (0.031: 3.1%); NaN if none */
    char reasons[PPB_PROPOSAL_REASONS_MAX];   /* one reason per line, never cut: what does not fit is refused */
    char created_at[32];
    /* What the verdict used (schema 13), so that `ppbench verdict --recompute`
     * can re-derive it from the store. rule_version: PPB_VERDICT_RULE_VERSION
     * of the ppbench that decided it; 0 when not recorded (stored before
     * schema 13, or no A/B verdict: kv_capacity), and then the rest is unknown. */
    int rule_version;
    double alpha;                  /* the rest of the rules (verdict.h) */
    int require_correct;
    char method[24];               /* ppb_interval_method_name */
    int bootstrap_reps;
    uint64_t seed;
    /* propose: the sampling design (sequential.h) of every pair; 0 for compare */
    int samples_per_round, min_rounds, max_rounds, sessions;
    double budget_ms;
    /* compare: the history a case needs and the most it uses; 0 for propose */
    int min_history, max_history;
    /* compare: each run as a whole against its cases' histories, log(run /
     * usual level) (run_compare.h's run level; schema 21): a baseline off
     * beyond the noise widened every case, a candidate that far moved is said
     * in a note (rule 4). NaN: not measured. */
    double baseline_shift, candidate_shift;
    ppb_proposal_cost cost;
} ppb_proposal_record;

typedef struct ppb_proposal_case {
    char baseline_key[PPB_CASE_KEY_MAX], candidate_key[PPB_CASE_KEY_MAX];
    double weight;
    char state[16];                /* "compared", "infeasible", "wrong", ... */
    char cls[16];                  /* "faster", "slower", "same", "unresolved", "" */
    double ratio, ratio_lo, ratio_hi, p_holm;
    /* What the case's interval used (schema 13; 0 / NaN when not recorded). */
    int looks_taken, looks_planned;   /* propose: the design's looks (0: not sampled as a pair) */
    int sessions;                  /* per side (0: not sampled as a pair) */
    double between_sd;             /* the between-session sd the interval was widened by */
    double alpha;                  /* the alpha its interval spent (level 1 - alpha); NaN: not compared */
    double stop_alpha;             /* the stopping rule's alpha for the pair, before its looks; NaN: none */
    double look_share;             /* what its stopping look spent of stop_alpha (schema 15); NaN: none */
    double noise;                  /* compare: the run-to-run noise (relative sd); NaN: none */
    int history;                   /* compare: the plain runs that noise came from */
    int history_split;             /* compare of two implementations: the baseline's share of them (schema 19) */
    double baseline_offset;        /* compare: the baseline's |log(median / usual level)| that widened the case
                                    * (rule 5, schema 22); 0: the baseline was like its history; NaN: not judged */
} ppb_proposal_case;

/* One transaction: the proposal row (fills rec->id and rec->created_at) and its cases. */
int ppb_store_put_proposal(ppb_store *s, ppb_proposal_record *rec, const ppb_proposal_case *cases,
                           int n_cases, ppb_err *err);
int ppb_store_get_proposal(ppb_store *s, int64_t id, ppb_proposal_record *rec, ppb_err *err);
int64_t ppb_store_latest_proposal(ppb_store *s);
typedef int (*ppb_proposal_case_visitor)(void *ctx, const ppb_proposal_case *c);
int ppb_store_each_proposal_case(ppb_store *s, int64_t id, ppb_proposal_case_visitor fn, void *ctx,
                                 ppb_err *err);

/* Where a run's wall time went (seconds): the time spent opening the device,
 * the sums of its cases' phases, the time the run waited to store results (a
 * writer thread stores them while the next case runs), its kernel
 * time (every sample times its launches) and its wall time (as added by
 * ppb_store_add_run_wall; else start to finish in whole seconds, to now while
 * it runs). overhead = 1 - kernel / wall. */
typedef struct ppb_run_time {
    double wall_s, open_s, generate_s, check_s, warmup_s, sampling_s, store_s, kernel_s;
    int cases;
} ppb_run_time;
int ppb_store_run_time(ppb_store *s, int64_t run_id, ppb_run_time *out, ppb_err *err);

/* A process's part of a run's wall time (ms, a monotonic clock's), and the
 * parts of it spent opening the device and waiting to store results. */
typedef struct ppb_run_wall {
    double wall_ms, open_ms, store_ms;
} ppb_run_wall;
/* Add it to the run's (a resume adds its part). */
int ppb_store_add_run_wall(ppb_store *s, int64_t run_id, const ppb_run_wall *w, ppb_err *err);

/* ---- history (trend) ----------------------------------------------------- */

/* How a run's kernels were timed beyond its device: the CPU backend's threads per
 * launch (PPBENCH_CPU_KERNEL_THREADS), as its environment recorded them. Runs
 * that differ in it (one thread against every core: about 2x apart) are not one
 * history: the history readers below keep the runs timed as the one judged.
 * `timing` gets the run's value ("" when not recorded: a GPU run, or a CPU run
 * from before it was recorded). Returns 0 or a negative PPB_E*. */
#define PPB_ENV_KERNEL_THREADS "before.cpu_kernel_threads"
int ppb_store_run_timing(ppb_store *s, int64_t run_id, char *timing, size_t len, ppb_err *err);

typedef struct ppb_history_point {
    int64_t run_id;
    char uid[33];              /* the run's stable id: the same run in two databases */
    char started_at[32];
    char status[16];
    double median_ms;
} ppb_history_point;

/* Results of one case key across the runs of one suite (by suite name),
 * oldest first, limited to runs started at or after `since` ("" = all), to
 * runs of the `kinds` (a list as ppb_store_run_kinds_check takes; NULL or "":
 * plain runs only, "run") and to runs timed as `timing` says
 * (ppb_store_run_timing's value; NULL: every run). */
typedef int (*ppb_history_visitor)(void *ctx, const ppb_history_point *p);
int ppb_store_case_history(ppb_store *s, const char *suite_name, const char *case_key, const char *since,
                           const char *kinds, const char *timing, ppb_history_visitor fn, void *ctx, ppb_err *err);
/* The runs of the suite (since, kinds as above) that the history leaves out for
 * being timed otherwise than `timing`: what a trend says it did not follow. */
int ppb_store_runs_timed_otherwise(ppb_store *s, const char *suite_name, const char *since, const char *kinds,
                                   const char *timing, int *count, ppb_err *err);
/* Latest run of a suite (complete or not) of the `kinds` (as above), 0 when none. */
int64_t ppb_store_latest_run_of_suite(ppb_store *s, const char *suite_name, const char *kinds);

/* export RUN --format csv|json, written by SQLite (json via its JSON functions).
 * Unknown format or run: PPB_EINPUT; a failed write to `out`: PPB_EIO. */
int ppb_store_export(ppb_store *s, int64_t run_id, const char *format, FILE *out, ppb_err *err);

#endif
