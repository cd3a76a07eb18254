/* ppbench merge A.db B.db ... -o ALL.db: fold per-host (per-shard) databases
 * into one. Idempotent; refuses mismatched schemas before writing anything. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "commands.h"
#include "merge.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench merge A.db [B.db ...] -o ALL.db\n\n"
            "Copies every run, case, result (with its samples), environment entry and proposal\n"
            "of the sources into ALL.db (created if missing). Runs are matched by their uid and\n"
            "results by (run, case key), so merging a file again adds only what is new. The\n"
            "sources are only read, and must have this ppbench's schema; any that does not is\n"
            "refused before anything is written. The push queue is not merged.\n\n"
            "exit: 0 merged; 2 usage; 3 a source is missing, not a ppbench database or of\n"
            "another schema; 4 runtime failure\n");
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cmd_merge(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             PPB_CLI_OPT_HELP_END};
    const char *output = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (!output || !*output || optind >= argc) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_err err = {{0}};
    /* Every source is checked before the output is touched. */
    int bad = 0;
    for (int i = optind; i < argc; i++) {
        if (same_file(argv[i], output))
            continue;
        if (ppb_merge_check_source(argv[i], &err) != PPB_OK) {
            fprintf(stderr, "ppbench merge: %s\n", err.msg);
            bad = 1;
        }
    }
    if (bad) {
        fprintf(stderr, "ppbench merge: nothing merged\n");
        return PPB_EXIT_INPUT;
    }
    ppb_store *s = ppb_cli_open_store("merge", output);
    if (!s)
        return PPB_EXIT_RUNTIME;
    int rc = PPB_OK;
    ppb_merge_stats total = {0};
    for (int i = optind; i < argc && rc == PPB_OK; i++) {
        if (same_file(argv[i], output)) {
            fprintf(stderr, "ppbench merge: %s is the output: skipped\n", argv[i]);
            continue;
        }
        ppb_merge_stats st;
        rc = ppb_merge_into(s, argv[i], &st, &err);
        if (rc)
            break;
        printf("%s: %d run%s added (%d already present%s), %d shard%s folded into the night's run, %d "
               "result%s added (%d already present), %d proposal%s added\n",
               argv[i], st.runs_added, st.runs_added == 1 ? "" : "s", st.runs_present,
               st.runs_completed ? ", some now finished" : "", st.shards_folded, st.shards_folded == 1 ? "" : "s",
               st.results_added, st.results_added == 1 ? "" : "s", st.results_present, st.proposals_added,
               st.proposals_added == 1 ? "" : "s");
        total.runs_added += st.runs_added;
        total.results_added += st.results_added;
    }
    if (rc == PPB_OK)
        printf("%s: %d run%s and %d result%s added\n", output, total.runs_added,
               total.runs_added == 1 ? "" : "s", total.results_added,
               total.results_added == 1 ? "" : "s");
    else
        fprintf(stderr, "ppbench merge: %s\n", err.msg);
    ppb_store_close(s);
    return ppb_cli_exit(rc);
}
