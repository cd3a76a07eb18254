/* ppbench export RUN --format csv|json */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench export RUN|latest --format csv|json [--db PATH] [-o FILE]\n");
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {PPB_CLI_OPT_DB,
                                             {"format", required_argument, NULL, 'F'},
                                             {"output", required_argument, NULL, 'o'},
                                             PPB_CLI_OPT_HELP_END};
    const char *db = NULL, *format = "csv", *output = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'F': format = optarg; break;
        case 'o': output = optarg; break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || (strcmp(format, "csv") != 0 && strcmp(format, "json") != 0)) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_store *s = ppb_cli_open_readonly_store("export", db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    ppb_err err = {{0}};
    int64_t id = 0;
    FILE *out = stdout;
    int rc = ppb_cli_run_id(s, argv[optind], &id, &err);
    if (!rc && output && !(out = fopen(output, "w")))
        rc = ppb_fail(&err, PPB_EIO, "%s: %s", output, strerror(errno));
    if (!rc)
        rc = ppb_store_export(s, id, format, out, &err);
    if (out && out != stdout && fclose(out) != 0 && !rc)
        rc = ppb_fail(&err, PPB_EIO, "%s: %s", output, strerror(errno));
    if (rc)
        fprintf(stderr, "ppbench export: %s\n", err.msg);
    ppb_store_close(s);
    return ppb_cli_exit(rc);
}
