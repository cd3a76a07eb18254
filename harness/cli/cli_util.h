/* Small helpers shared by the subcommands. */
#ifndef PPB_CLI_UTIL_H
#define PPB_CLI_UTIL_H

#include <stdint.h>

#include "store.h"

/* "12" or "latest" -> run id; PPB_EINPUT with a message otherwise. */
int ppb_cli_run_id(ppb_store *s, const char *text, int64_t *id, ppb_err *err);
/* Open the database named by --db / $PPBENCH_DB / the default; prints the error
 * prefixed with `cmd` and returns NULL on failure. */
ppb_store *ppb_cli_open_store(const char *cmd, const char *db_option);
/* The same for commands that only read what earlier runs stored (show, list,
 * export, dump, report, trend, compare, push): a path with no file is refused,
 * never created empty (a mistyped --db would otherwise read as "no runs"). */
ppb_store *ppb_cli_open_existing_store(const char *cmd, const char *db_option);

/* Option values. On a bad value they print "ppbench CMD: --OPT TEXT: expected
 * ..." and return -1 (the caller exits with PPB_EXIT_USAGE). */
int ppb_cli_index(const char *cmd, const char *opt, const char *text, int *out);      /* integer >= 0 */
int ppb_cli_positive(const char *cmd, const char *opt, const char *text, double *out); /* number > 0 */
/* The exit code of a verdict: 0 ACCEPT, 10 REJECT, 11 INCONCLUSIVE. */
int ppb_cli_verdict_exit(const char *verdict);
/* Write a document (--json / --markdown) to PATH, "-" being stdout, NULL
 * nothing. `fn` returns 0, or nonzero after filling `err` (may be left empty
 * for a stream error). 0, or PPB_EXIT_RUNTIME after printing the error. */
typedef int (*ppb_cli_doc_fn)(void *ctx, FILE *out, ppb_err *err);
int ppb_cli_write_doc(const char *cmd, const char *path, ppb_cli_doc_fn fn, void *ctx);
/* --json FILE|- and --markdown FILE|- (either may be NULL) of what is stored:
 * a run's outcome (is_run, id = the run) or a proposal's verdict (id = the proposal). */
int ppb_cli_stored_docs(const char *cmd, ppb_store *s, int is_run, int64_t id, int exit_code, const char *json_path,
                        const char *md_path);
/* --backend NAME: auto, cpu or cuda (a usage error otherwise, exit 2). */
int ppb_cli_backend(const char *cmd, const char *text);
/* A date: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[Z] (UTC), a real calendar date,
 * written into `utc` in the stored runs' form (YYYY-MM-DDTHH:MM:SSZ) so that
 * comparisons with started_at are exact. */
int ppb_cli_date(const char *cmd, const char *opt, const char *text, char *utc, size_t len);

/* --baseline-db PATH|URL: fetch (URLs, with libcurl) and open a baseline
 * database. Returns 0, or a PPB_EXIT_* code after printing the error. */
int ppb_cli_open_baseline(const char *cmd, const char *path_or_url, ppb_store **out, char *local,
                          size_t len);
void ppb_cli_close_baseline(ppb_store *s, const char *path_or_url, const char *local);

#endif
