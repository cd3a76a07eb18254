/* ppbench show RUN: a run's provenance, environment and results. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "results_table.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench show RUN|latest [--db PATH] [--no-env]\n");
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

int cmd_show(int argc, char **argv)
{
    static const struct option longopts[] = {{"db", required_argument, NULL, 'd'},
                                             {"no-env", no_argument, NULL, 'E'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *db = NULL;
    int with_env = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'E': with_env = 0; break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_store *s = ppb_cli_open_readonly_store("show", db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    ppb_err err = {{0}};
    int64_t id = 0;
    ppb_run_info run;
    int rc = ppb_cli_run_id(s, argv[optind], &id, &err);
    if (!rc)
        rc = ppb_store_get_run(s, id, &run, &err);
    if (!rc) {
        ppb_run_info_clean(&run);
        ppb_term_clean(run.kind, 0);
        printf("run %lld: %s (%s)\n", (long long)run.id, run.suite_name, run.suite_path);
        printf("  kind %s, status %s, %d of %d cases stored\n", run.kind, run.status, run.n_done, run.n_cases);
        if (run.shard_count > 0)
            printf("  shards %d of %d of night %s%s\n", run.n_shards, run.shard_count, run.run_group,
                   run.n_shards < run.shard_count ? " (merge the others to complete it)" : "");
        printf("  started %s, finished %s\n", run.started_at,
               run.finished_at[0] ? run.finished_at : "-");
        ppb_run_time t;
        if (ppb_store_run_time(s, id, &t, &err) == PPB_OK) {
            char line[256];
            ppb_format_run_time(&t, line, sizeof line);
            printf("  time: %s\n", line);
        }
        printf("  backend %s on %s%s; target %s\n", run.backend, run.device,
               strcmp(run.backend, "cpu") == 0 ? " (CPU timings)" : "",
               run.target[0] ? run.target : "none");
        printf("  commit %s, host %s, suite hash %s%s%s\n", run.git_commit, run.host,
               run.suite_hash, run.label[0] ? ", label " : "", run.label);
        if (with_env) {
            printf("environment:\n");
            rc = ppb_store_each_env(s, id, print_env, NULL, &err);
        }
    }
    if (!rc) {
        printf("results:\n");
        rc = ppb_print_results(s, id, stdout, NULL, &err);
    }
    if (rc)
        fprintf(stderr, "ppbench show: %s\n", err.msg);
    ppb_store_close(s);
    return ppb_cli_exit(rc);
}
