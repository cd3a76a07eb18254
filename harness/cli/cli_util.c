#include "cli/cli_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ppb_cli_run_id(ppb_store *s, const char *text, int64_t *id, ppb_err *err)
{
    if (strcmp(text, "latest") == 0) {
        *id = ppb_store_latest_run(s);
        return *id > 0 ? PPB_OK : ppb_fail(err, PPB_EINPUT, "the database holds no runs");
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
