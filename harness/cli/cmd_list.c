/* ppbench list [SUITE]: stored runs, or the cases a suite expands to. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "matrix.h"
#include "run_doc.h"
#include "store.h"
#include "suite.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench list [--db PATH] [--json FILE|-]   stored runs, newest first\n"
                 "       ppbench list SUITE.yaml [--filter EXPR] [--shard K/N]\n"
                 "                                                  case keys of a suite\n"
                 "  --json FILE|-   the runs as JSON (schema " PPB_RUNS_SCHEMA ", docs/CLI.md) instead of the table\n");
}

static int print_run(void *ctx, const ppb_run_info *stored)
{
    (void)ctx;
    ppb_run_info copy = *stored;
    const ppb_run_info *r = &copy;
    ppb_run_info_clean(&copy);
    ppb_term_clean(copy.kind, 0); /* a merged database's text, like the rest */
    printf("%5lld  %-20s  %-11s  %-4s  %3d/%-3d  %-16s  %-10s  %-9s  %s\n", (long long)r->id,
           r->started_at, r->status, r->backend, r->n_done, r->n_cases, r->suite_name,
           r->target[0] ? r->target : "-", r->kind, r->label);
    return 0;
}

static int list_suite(const char *path, const char *filter, int k, int n)
{
    ppb_suite suite;
    memset(&suite, 0, sizeof suite);
    ppb_case_list cases = {0};
    ppb_err err = {{0}};
    int rc = ppb_suite_load(path, &suite, &err);
    if (!rc)
        rc = ppb_matrix_expand(&suite, &cases, &err);
    if (!rc && filter)
        rc = ppb_matrix_filter(&cases, filter, &err);
    if (!rc && n > 0)
        ppb_matrix_shard(&cases, k, n);
    if (rc)
        fprintf(stderr, "ppbench list: %s\n", err.msg);
    for (int i = 0; !rc && i < cases.n; i++)
        printf("%s\n", cases.items[i].key);
    ppb_case_list_free(&cases);
    ppb_suite_free(&suite);
    return rc ? PPB_EXIT_INPUT : PPB_EXIT_OK;
}

typedef struct list_opts {
    const char *filter;
    int k, n;
} list_opts;

static int list_opt(void *ctx, int opt, char *arg)
{
    list_opts *o = ctx;
    ppb_err err = {{0}};
    switch (opt) {
    case 'f': o->filter = arg; return 0;
    case 's':
        if (!ppb_matrix_parse_shard(arg, &o->k, &o->n, &err))
            return 0;
        fprintf(stderr, "ppbench list: --shard: %s\n", err.msg);
        return -1;
    default: return 1;
    }
}

static int runs_json(void *ctx, FILE *out, ppb_err *err)
{
    return ppb_runs_doc_json(ctx, out, err);
}

static int list_runs(const ppb_cli_opts *co)
{
    ppb_store *s = ppb_cli_open_readonly_store("list", co->db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    if (co->json) {
        int rc = ppb_cli_write_doc("list", co->json, runs_json, s);
        ppb_store_close(s);
        return rc;
    }
    ppb_err err = {{0}};
    printf("%5s  %-20s  %-11s  %-4s  %7s  %-16s  %-10s  %-9s  %s\n", "run", "started (UTC)", "status",
           "bknd", "done", "suite", "target", "kind", "label");
    int rc = ppb_store_each_run(s, print_run, NULL, &err);
    if (rc)
        fprintf(stderr, "ppbench list: %s\n", err.msg);
    ppb_store_close(s);
    return rc ? PPB_EXIT_RUNTIME : PPB_EXIT_OK;
}

int cmd_list(int argc, char **argv)
{
    static const struct option longopts[] = {PPB_CLI_OPT_DB,
                                             {"json", required_argument, NULL, 'j'},
                                             {"filter", required_argument, NULL, 'f'},
                                             {"shard", required_argument, NULL, 's'},
                                             PPB_CLI_OPT_HELP_END};
    ppb_cli_opts co;
    list_opts lo = {NULL, 0, 0};
    int rc = ppb_cli_parse("list", argc, argv, "h", longopts, usage, &co, list_opt, &lo, -1);
    if (rc >= 0)
        return rc;
    if (argc - optind > 1 || (argc - optind == 1 && co.json)) {
        if (co.json)
            fprintf(stderr, "ppbench list: --json lists stored runs, not a suite's case keys\n");
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if (argc - optind == 1)
        return list_suite(ppb_cli_suite_arg(argv[optind], ""), lo.filter, lo.k, lo.n);
    return list_runs(&co);
}
