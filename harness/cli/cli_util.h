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

#endif
