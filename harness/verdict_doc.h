/* A stored verdict (propose, compare) as Markdown for a pull-request comment or
 * a CI job summary. The JSON form is the store's (ppb_store_proposal_json). */
#ifndef PPB_VERDICT_DOC_H
#define PPB_VERDICT_DOC_H

#include <stdint.h>
#include <stdio.h>

#include "ppb_error.h"
#include "store.h"

int ppb_verdict_markdown(ppb_store *s, int64_t proposal_id, FILE *out, ppb_err *err);

#endif
