/* Small helpers shared by the subcommands. */
#ifndef PPB_CLI_UTIL_H
#define PPB_CLI_UTIL_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "store.h"

/* Options several commands share; ppb_cli_parse fills them. */
typedef struct ppb_cli_opts {
    const char *db;            /* --db PATH (NULL: $PPBENCH_DB, else the default) */
    const char *baseline_db;   /* --baseline-db PATH|URL */
    double baseline_timeout_s; /* --baseline-timeout S: each download try; 0 = the default */
    const char *json, *md;     /* --json FILE|-, --markdown FILE|- */
    const char *backend;       /* --backend auto|cpu|cuda (checked); "auto" when not given */
    int device_index;          /* --device N */
    double cpu_max_gflop;      /* --cpu-max-gflop X; 0 when not given */
} ppb_cli_opts;

/* Their rows of a getopt_long table. ppb_cli_parse takes the letters
 * d B W j m b D g and h (--help) as these; a command's own options use others. */
#define PPB_CLI_OPT_DB {"db", required_argument, NULL, 'd'}
#define PPB_CLI_OPT_BASELINE_DB                                                                                \
    {"baseline-db", required_argument, NULL, 'B'}, {"baseline-timeout", required_argument, NULL, 'W'}
#define PPB_CLI_OPT_DOCS {"json", required_argument, NULL, 'j'}, {"markdown", required_argument, NULL, 'm'}
#define PPB_CLI_OPT_BACKEND {"backend", required_argument, NULL, 'b'}
#define PPB_CLI_OPT_DEVICE {"device", required_argument, NULL, 'D'}
#define PPB_CLI_OPT_CPU_MAX_GFLOP {"cpu-max-gflop", required_argument, NULL, 'g'}
#define PPB_CLI_OPT_HELP_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}

/* A command's own option `opt` with its argument: 0 taken; -1 a bad value,
 * its line printed (exit 2); 1 not an option of the command. */
typedef int (*ppb_cli_opt_fn)(void *ctx, int opt, char *arg);
/* getopt_long over argv (from the start): the shared options into `o` (reset
 * to their defaults first), the others to `fn` (NULL: none). Returns -1 when
 * all were taken and `positional` arguments follow (< 0: any number, the
 * command counts them), else the exit code to return at once: PPB_EXIT_OK
 * after --help (usage on stdout), PPB_EXIT_USAGE after an unknown option or a
 * wrong count (usage on stderr) or a bad value (its line on stderr). */
int ppb_cli_parse(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts,
                  void (*usage)(FILE *), ppb_cli_opts *o, ppb_cli_opt_fn fn, void *ctx, int positional);
/* The settings of the sessions run, propose and calibrate open, from `o`:
 * backend, device, CPU work limit, the log stream (stderr), the database path. */
void ppb_cli_session_opts(const ppb_cli_opts *o, const char **backend, int *device_index, double *cpu_max_gflop,
                          FILE **log, const char **db_path);
/* Where the human-readable output goes: stderr when --json or --markdown
 * writes to stdout ("-"), else stdout. */
FILE *ppb_cli_human(const ppb_cli_opts *o);

/* "12" or "latest" -> run id; PPB_EINPUT with a message otherwise. */
int ppb_cli_run_id(ppb_store *s, const char *text, int64_t *id, ppb_err *err);
/* Open the database named by --db / $PPBENCH_DB / the default; prints the error
 * prefixed with `cmd` and returns NULL on failure. */
ppb_store *ppb_cli_open_store(const char *cmd, const char *db_option);
/* The same for commands that only read what earlier runs stored (show, list,
 * export, dump, report, trend, compare, push): a path with no file is refused,
 * never created empty (a mistyped --db would otherwise read as "no runs"). */
ppb_store *ppb_cli_open_existing_store(const char *cmd, const char *db_option);
/* The same, read-only (ppb_store_open_readonly): for commands that never write. */
ppb_store *ppb_cli_open_readonly_store(const char *cmd, const char *db_option);

/* Option values. On a bad value they print "ppbench CMD: --OPT TEXT: expected
 * ..." and return -1 (the caller exits with PPB_EXIT_USAGE). */
int ppb_cli_index(const char *cmd, const char *opt, const char *text, int *out);      /* integer >= 0 */
int ppb_cli_positive(const char *cmd, const char *opt, const char *text, double *out); /* number > 0 */
/* Exit codes (docs/CLI.md "Exit codes"), each mapping one table:
 * a stored verdict's: 0 ACCEPT, 10 REJECT, 11 INCONCLUSIVE; */
int ppb_cli_verdict_exit(const char *verdict);
/* a PPB_E* code's: 0 (PPB_OK), 3 (PPB_EINPUT: bad input), else 4 (runtime). */
int ppb_cli_exit(int rc);
/* "ppbench CMD: MESSAGE" on stderr, then ppb_cli_exit(rc). */
int ppb_cli_fail(const char *cmd, int rc, const ppb_err *err);
/* Write a document (--json / --markdown) to PATH, "-" being stdout, NULL
 * nothing. `fn` returns 0, or nonzero after filling `err` (may be left empty
 * for a stream error). 0, or PPB_EXIT_RUNTIME after printing the error. */
typedef int (*ppb_cli_doc_fn)(void *ctx, FILE *out, ppb_err *err);
int ppb_cli_write_doc(const char *cmd, const char *path, ppb_cli_doc_fn fn, void *ctx);
/* --json FILE|- and --markdown FILE|- (either may be NULL), with `exit_code` in
 * them: a stored run's outcome (run_doc.h), read from s; */
int ppb_cli_run_docs(const char *cmd, ppb_store *s, int64_t run_id, int exit_code, const char *json_path,
                     const char *md_path);
/* a verdict as the command decided and stored it (verdict_doc.h), s holding its runs. */
int ppb_cli_verdict_docs(const char *cmd, ppb_store *s, const ppb_proposal_record *rec, const ppb_proposal_case *cases,
                         int n_cases, int exit_code, const char *json_path, const char *md_path);
/* The terminal's "note: ..." line when the run's machine was loaded past its
 * cores as it ended (measured.h's rule and words, as every page and document
 * says it); nothing otherwise, or when the run's environment cannot be read. */
void ppb_cli_load_note(ppb_store *s, int64_t run_id, FILE *out);
/* --backend NAME: auto, cpu or cuda (a usage error otherwise, exit 2). */
int ppb_cli_backend(const char *cmd, const char *text);
/* A date: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[Z] (UTC), a real calendar date,
 * written into `utc` in the stored runs' form (YYYY-MM-DDTHH:MM:SSZ) so that
 * comparisons with started_at are exact. */
int ppb_cli_date(const char *cmd, const char *opt, const char *text, char *utc, size_t len);

/* Every text field of a stored run made safe for the terminal (ppb_term_clean). */
void ppb_run_info_clean(ppb_run_info *r);

/* The database a reading command works on (ppb_cli_open_existing_store) and,
 * with --baseline-db PATH|URL, the baseline database beside it (URLs fetched
 * with libcurl, checked to be a ppbench database). */
typedef struct ppb_cli_stores {
    ppb_store *s;
    ppb_store *baseline;       /* NULL without --baseline-db */
    const char *baseline_db;
    char baseline_path[4096];  /* its local copy */
} ppb_cli_stores;
/* A suite (sub "") or proposal (sub "proposals") argument: the path as given, or
 * the shipped one it names (ppb_find_shipped_suite: `ppbench run smoke` finds
 * <prefix>/share/ppbench/suites/smoke.yaml). The text lives as long as the process. */
const char *ppb_cli_suite_arg(const char *arg, const char *sub);

/* 0, or a PPB_EXIT_* code after printing the error (nothing left open). */
int ppb_cli_open_stores(const char *cmd, const ppb_cli_opts *o, ppb_cli_stores *st);
void ppb_cli_close_stores(ppb_cli_stores *st);

#endif
