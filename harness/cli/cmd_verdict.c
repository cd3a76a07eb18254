/* ppbench verdict --recompute ID: a stored verdict decided again from what the
 * store holds (harness/decide/verdict_recompute.h) and compared with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "verdict_recompute.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench verdict --recompute ID|latest [--db PATH]\n\n"
            "Re-derives a stored verdict (propose, compare, calibrate) from the database: rebuilds its\n"
            "inputs from the two runs' samples (each sample's session and round) and what the proposal\n"
            "stored (rules, rule version, sampling design, looks, run-to-run noise), decides it again\n"
            "under the stored rules, and compares the verdict, the weighted mean, every case's state,\n"
            "class, interval and spreads (reals within 1e-9, relative) and the reasons, line by line.\n\n"
            "  --recompute ID|latest  the proposal (its id as propose, compare and report name it)\n"
            "  --db PATH              results database (default $PPBENCH_DB, else ./" PPB_DEFAULT_DB ")\n\n"
            "exit: 0 the same, 13 a difference (the first one is named), 2 usage, 3 cannot be recomputed\n"
            "(unknown id; kv_capacity; stored before schema 13; a baseline from another database),\n"
            "4 runtime failure (a result changed outside ppbench fails its row check)\n");
}

static int verdict_opt(void *ctx, int opt, char *arg)
{
    if (opt != 'R')
        return 1;
    *(const char **)ctx = arg;
    return 0;
}

static int proposal_id(ppb_store *s, const char *text, int64_t *id, ppb_err *err)
{
    if (strcmp(text, "latest") == 0) {
        *id = ppb_store_latest_proposal(s);
        return *id > 0 ? PPB_OK : ppb_fail(err, PPB_EINPUT, "the database holds no proposal");
    }
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || v <= 0)
        return ppb_fail(err, PPB_EINPUT, "'%s' is not a proposal id (a number, or 'latest')", text);
    *id = v;
    return PPB_OK;
}

int cmd_verdict(int argc, char **argv)
{
    static const struct option longopts[] = {PPB_CLI_OPT_DB, {"recompute", required_argument, NULL, 'R'},
                                             PPB_CLI_OPT_HELP_END};
    ppb_cli_opts co;
    const char *which = NULL;
    int xrc = ppb_cli_parse("verdict", argc, argv, "h", longopts, usage, &co, verdict_opt, &which, 0);
    if (xrc >= 0)
        return xrc;
    if (!which) {
        fprintf(stderr, "ppbench verdict: what to do: --recompute ID\n");
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_store *s = ppb_cli_open_readonly_store("verdict", co.db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    ppb_err err = {{0}};
    ppb_stored_verdict sv;
    memset(&sv, 0, sizeof sv);
    ppb_verdict_recheck check;
    int64_t id = 0;
    int rc = proposal_id(s, which, &id, &err);
    if (!rc)
        rc = ppb_stored_verdict_load(s, id, &sv, &err);
    if (!rc)
        rc = ppb_verdict_recompute(&sv, &check, &err);
    if (rc) {
        ppb_stored_verdict_free(&sv);
        ppb_store_close(s);
        return ppb_cli_fail("verdict", rc, &err);
    }
    char name[128];
    snprintf(name, sizeof name, "%s", sv.rec->name);
    ppb_term_clean(name, 0);
    ppb_term_clean(check.difference, 0);
    printf("proposal %lld (%s, %s): stored %s; decided again from the stored samples under its rules (rule "
           "version %d): %s\n",
           (long long)id, name, sv.rec->kind, check.stored_verdict, check.rule_version, check.verdict);
    if (check.agree)
        printf("the same: verdict, weighted mean, %d case%s (%d compared) and reasons agree with what was stored\n",
               check.n_cases, check.n_cases == 1 ? "" : "s", check.n_compared);
    else
        printf("DIFFERENT from what was stored: %s\n", check.difference);
    if (check.rule_version != PPB_VERDICT_RULE_VERSION)
        printf("note: it was decided under rule version %d, this ppbench decides under %d: a change of the rules "
               "can explain a difference\n",
               check.rule_version, PPB_VERDICT_RULE_VERSION);
    ppb_stored_verdict_free(&sv);
    ppb_store_close(s);
    return check.agree ? PPB_EXIT_OK : PPB_EXIT_MISMATCH;
}
