/* ppbench show RUN: a run's provenance, environment and results. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "results_table.h"
#include "run_doc.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench show RUN|latest [--db PATH] [--no-env] [--json FILE|-]\n"
                 "  --json FILE|-   the run as JSON (schema " PPB_RUN_SCHEMA ", docs/CLI.md) instead of the text;\n"
                 "                  it holds the environment with or without --no-env\n");
}

static int print_env(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    char k[256], v[1024];
    snprintf(k, sizeof k, "%s", key);
    snprintf(v, sizeof v, "%s", value);
    ppb_term_clean(k, 0);
    ppb_term_clean(v, 0);
    printf("  %-32s %s\n", k, v);
    return 0;
}

static int show_opt(void *ctx, int opt, char *arg)
{
    (void)arg;
    if (opt != 'E')
        return 1;
    *(int *)ctx = 0;
    return 0;
}

/* The text: provenance, time, device, environment, results. */
static int show_text(ppb_store *s, int64_t id, int with_env, ppb_err *err)
{
    ppb_run_info run;
    int rc = ppb_store_get_run(s, id, &run, err);
    if (rc)
        return rc;
    ppb_run_info_clean(&run);
    ppb_term_clean(run.kind, 0);
    printf("run %lld: %s (%s)\n", (long long)run.id, run.suite_name, run.suite_path);
    printf("  kind %s, status %s, %d of %d cases stored\n", run.kind, run.status, run.n_done, run.n_cases);
    if (run.shard_count > 0)
        printf("  shards %d of %d of night %s%s\n", run.n_shards, run.shard_count, run.run_group,
               run.n_shards < run.shard_count ? " (merge the others to complete it)" : "");
    printf("  started %s, finished %s\n", run.started_at, run.finished_at[0] ? run.finished_at : "-");
    ppb_run_time t;
    if (ppb_store_run_time(s, id, &t, err) == PPB_OK) {
        char line[256];
        ppb_format_run_time(&t, line, sizeof line);
        printf("  time: %s\n", line);
    }
    printf("  backend %s on %s%s; target %s\n", run.backend, run.device,
           strcmp(run.backend, "cpu") == 0 ? " (CPU timings)" : "", run.target[0] ? run.target : "none");
    printf("  commit %s, host %s, suite hash %s%s%s\n", run.git_commit, run.host, run.suite_hash,
           run.label[0] ? ", label " : "", run.label);
    if (with_env) {
        printf("environment:\n");
        if ((rc = ppb_store_each_env(s, id, print_env, NULL, err)))
            return rc;
    }
    printf("results:\n");
    return ppb_print_results(s, id, stdout, NULL, err);
}

typedef struct show_doc {
    ppb_store *s;
    int64_t id;
} show_doc;

static int show_json(void *ctx, FILE *out, ppb_err *err)
{
    const show_doc *d = ctx;
    return ppb_run_doc_json(d->s, d->id, "show", PPB_EXIT_OK, out, err);
}

int cmd_show(int argc, char **argv)
{
    static const struct option longopts[] = {PPB_CLI_OPT_DB,
                                             {"json", required_argument, NULL, 'j'},
                                             {"no-env", no_argument, NULL, 'E'},
                                             PPB_CLI_OPT_HELP_END};
    ppb_cli_opts co;
    int with_env = 1;
    int rc = ppb_cli_parse("show", argc, argv, "h", longopts, usage, &co, show_opt, &with_env, 1);
    if (rc >= 0)
        return rc;
    ppb_store *s = ppb_cli_open_readonly_store("show", co.db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    ppb_err err = {{0}};
    int64_t id = 0;
    rc = ppb_cli_run_id(s, argv[optind], &id, &err);
    if (!rc && co.json) {
        /* An unknown run is an input error (3), as for the text; the document
         * is written only for a run that exists. */
        ppb_run_info run;
        if (!(rc = ppb_store_get_run(s, id, &run, &err))) {
            show_doc d = {s, id};
            int drc = ppb_cli_write_doc("show", co.json, show_json, &d);
            ppb_store_close(s);
            return drc;
        }
    } else if (!rc) {
        rc = show_text(s, id, with_env, &err);
    }
    if (rc)
        fprintf(stderr, "ppbench show: %s\n", err.msg);
    ppb_store_close(s);
    return ppb_cli_exit(rc);
}
