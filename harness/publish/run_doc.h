/* A stored run as documents for CI, both formats written here: JSON (schema
 * "ppbench-run/1", `run --json`, `show --json`; "ppbench-runs/1" for every run,
 * `list --json`) and Markdown (`run --markdown`, a job summary). docs/CLI.md
 * lists the fields. Read from the store: a resumed run's document holds what
 * every process stored. */
#ifndef PPB_RUN_DOC_H
#define PPB_RUN_DOC_H

#include <stdint.h>
#include <stdio.h>

#include "ppb_error.h"
#include "store.h"

#define PPB_RUN_SCHEMA "ppbench-run/1"
#define PPB_RUNS_SCHEMA "ppbench-runs/1"

/* The run, the `command` that wrote the document and its `exit_code`, the
 * device (details from the environment the session recorded), how it was
 * measured (measured.h: CPU timings, the load warning), counts by status
 * (every status, 0 included), the environment, and per case the key,
 * implementation, status, reason, samples, median and quartiles, rates and the
 * check's errors (the full data, samples included, is `ppbench export`). One
 * JSON object and a newline; the caller checks the stream. */
int ppb_run_doc_json(ppb_store *s, int64_t run_id, const char *command, int exit_code, FILE *out, ppb_err *err);
/* The run's counts by status, the notes on how it was measured (measured.h)
 * and a row for every case that was not timed. */
int ppb_run_doc_markdown(ppb_store *s, int64_t run_id, int exit_code, FILE *out, ppb_err *err);
/* Every stored run, newest first: the fields of ppbench-run/1's "run" and each
 * run's counts by status. */
int ppb_runs_doc_json(ppb_store *s, FILE *out, ppb_err *err);

/* What timed a run, as the session recorded it when the run began (the clocks:
 * NVML's, then and at most): ppbench-run/1's "device", ppbench-verdict/1's
 * "measured.device_details". A JSON object. */
int ppb_run_device_json(ppb_store *s, const ppb_run_info *run, FILE *out, ppb_err *err);

#endif
