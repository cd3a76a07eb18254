/* Stored outcomes as Markdown for a pull-request comment or a CI job summary: a
 * proposal's verdict (propose, compare) and a run's. Their JSON forms are the
 * store's (ppb_store_proposal_json, ppb_store_run_json). */
#ifndef PPB_VERDICT_DOC_H
#define PPB_VERDICT_DOC_H

#include <stdint.h>
#include <stdio.h>

#include "ppb_error.h"
#include "store.h"

int ppb_verdict_markdown(ppb_store *s, int64_t proposal_id, FILE *out, ppb_err *err);
/* The run's counts by status and a row for every case that was not timed. */
int ppb_run_markdown(ppb_store *s, int64_t run_id, int exit_code, FILE *out, ppb_err *err);

#endif
