/* A verdict (propose, compare) as documents for CI, both formats written here:
 * JSON (schema "ppbench-verdict/1", docs/CLI.md) and Markdown (a pull-request
 * comment, a CI job summary). Written from the verdict as the command decided
 * it (its record and cases, as stored); what its runs stored (device,
 * environment, implementations) is read from the store. */
#ifndef PPB_VERDICT_DOC_H
#define PPB_VERDICT_DOC_H

#include <stdio.h>

#include "ppb_error.h"
#include "store.h"

#define PPB_VERDICT_SCHEMA "ppbench-verdict/1"

/* The proposal, its verdict and `exit_code`, the runs, what was measured, the
 * implementations each side ran, the geometric mean with its interval, the
 * rules, every reason (one array element per line) and every case with state,
 * class, ratio and interval. One JSON object and a newline; the caller checks
 * the stream. s holds the proposal's runs. */
int ppb_verdict_json(ppb_store *s, const ppb_proposal_record *rec, const ppb_proposal_case *cases, int n_cases,
                     const char *command, int exit_code, FILE *out, ppb_err *err);
int ppb_verdict_markdown(ppb_store *s, const ppb_proposal_record *rec, const ppb_proposal_case *cases, int n_cases,
                         FILE *out, ppb_err *err);

#endif
