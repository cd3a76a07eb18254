/* libFuzzer target: a results database read from arbitrary bytes.
 * ppb_store_open_readonly, ppb_store_open (checks, migrations), then every reader: each_run,
 * each_result and each_env of each run, export csv and json, the stored
 * proposals, and merge's source check. Every refusal must carry a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "merge.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RUNS 8

typedef struct run_ids {
    int64_t ids[MAX_RUNS];
    int n;
} run_ids;

static int collect_run(void *ctx, const ppb_run_info *run)
{
    run_ids *r = ctx;
    if (r->n < MAX_RUNS)
        r->ids[r->n++] = run->id;
    return 0;
}

static int visit_result(void *ctx, const ppb_case *c, const ppb_result *r)
{
    (void)c;
    (void)r;
    ++*(long *)ctx;
    return 0;
}

static int visit_env(void *ctx, const char *key, const char *value)
{
    (void)key;
    (void)value;
    ++*(long *)ctx;
    return 0;
}

static int visit_proposal_case(void *ctx, const ppb_proposal_case *c)
{
    (void)c;
    ++*(long *)ctx;
    return 0;
}

static void check_refusal(int rc, const ppb_err *err)
{
    if (rc < 0 && !ppb_fuzz_message_ok(err->msg))
        abort();   /* a refusal without a message */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ppb_fuzz_remove("input.db");
    const char *path = ppb_fuzz_write_input("input.db", data, size);
    if (!path)
        return 0;
    ppb_err err = {{0}};
    check_refusal(ppb_merge_check_source(path, &err), &err);

    ppb_store *s = NULL;
    err.msg[0] = '\0';
    /* The read-only open of list/show/export (falls back to ppb_store_open to migrate). */
    int rc = ppb_store_open_readonly(&s, path, &err);
    check_refusal(rc, &err);
    ppb_store_close(s);
    s = NULL;
    err.msg[0] = '\0';
    rc = ppb_store_open(&s, path, &err);
    check_refusal(rc, &err);
    if (rc != 0)
        goto end;

    run_ids runs = {{0}, 0};
    long visited = 0;
    err.msg[0] = '\0';
    check_refusal(ppb_store_each_run(s, collect_run, &runs, &err), &err);
    FILE *sink = fopen("/dev/null", "w");
    for (int i = 0; i < runs.n; i++) {
        ppb_run_info info;
        err.msg[0] = '\0';
        check_refusal(ppb_store_get_run(s, runs.ids[i], &info, &err), &err);
        err.msg[0] = '\0';
        check_refusal(ppb_store_each_result(s, runs.ids[i], visit_result, &visited, &err), &err);
        err.msg[0] = '\0';
        check_refusal(ppb_store_each_env(s, runs.ids[i], visit_env, &visited, &err), &err);
        if (sink) {
            err.msg[0] = '\0';
            check_refusal(ppb_store_export(s, runs.ids[i], "csv", sink, &err), &err);
            err.msg[0] = '\0';
            check_refusal(ppb_store_export(s, runs.ids[i], "json", sink, &err), &err);
        }
    }
    if (sink)
        fclose(sink);
    int64_t proposal = ppb_store_latest_proposal(s);
    if (proposal > 0) {
        ppb_proposal_record *rec = malloc(sizeof *rec);
        if (rec) {
            err.msg[0] = '\0';
            check_refusal(ppb_store_get_proposal(s, proposal, rec, &err), &err);
            free(rec);
        }
        err.msg[0] = '\0';
        check_refusal(ppb_store_each_proposal_case(s, proposal, visit_proposal_case, &visited, &err),
                      &err);
    }
    ppb_store_close(s);
end:
    ppb_fuzz_remove("input.db");
    return 0;
}
