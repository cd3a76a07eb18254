/* ppbench list [SUITE]: stored runs, or the cases a suite expands to. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "matrix.h"
#include "suite.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench list [--db PATH]                 stored runs, newest first\n"
                 "       ppbench list SUITE.yaml [--filter EXPR] [--shard K/N]\n"
                 "                                                  case keys of a suite\n");
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

int cmd_list(int argc, char **argv)
{
    static const struct option longopts[] = {{"db", required_argument, NULL, 'd'},
                                             {"filter", required_argument, NULL, 'f'},
                                             {"shard", required_argument, NULL, 's'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *db = NULL, *filter = NULL;
    int k = 0, n = 0, c;
    ppb_err err = {{0}};
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'f': filter = optarg; break;
        case 's':
            if (ppb_matrix_parse_shard(optarg, &k, &n, &err)) {
                fprintf(stderr, "ppbench list: --shard: %s\n", err.msg);
                return PPB_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind == argc - 1)
        return list_suite(argv[optind], filter, k, n);
    if (optind != argc) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_store *s = ppb_cli_open_readonly_store("list", db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    printf("%5s  %-20s  %-11s  %-4s  %7s  %-16s  %-10s  %-9s  %s\n", "run", "started (UTC)", "status",
           "bknd", "done", "suite", "target", "kind", "label");
    int rc = ppb_store_each_run(s, print_run, NULL, &err);
    if (rc)
        fprintf(stderr, "ppbench list: %s\n", err.msg);
    ppb_store_close(s);
    return rc ? PPB_EXIT_RUNTIME : PPB_EXIT_OK;
}
