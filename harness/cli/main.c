/* ppbench: benchmark LLM attention kernels and judge tuning proposals.
 * Subcommands are rows of one table (the git.c model); each handler lives in
 * harness/cli/cmd_<name>.c and returns the process exit code (docs/CLI.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "impl.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "run a suite: check every case against the CPU reference and time it"},
    {"check", cmd_check, "judge a suite's configs against a target device profile (no timing)"},
    {"list", cmd_list, "list stored runs, or the cases of a suite (list SUITE)"},
    {"show", cmd_show, "show a run's environment and results"},
    {"export", cmd_export, "export a run as CSV or JSON"},
    {"dump", cmd_dump, "write one case's inputs, output and reference rows as .npy files"},
    {"report", cmd_report, "write an HTML report (charts by gnuplot) of a run, a proposal or a trend"},
    {"propose", cmd_propose, "judge a tuning proposal: baseline vs candidate, ACCEPT/REJECT/INCONCLUSIVE"},
    {"compare", cmd_compare, "compare two stored runs case by case"},
    {"verdict", cmd_verdict, "re-derive a stored verdict from the database (--recompute ID) and check it"},
    {"trend", cmd_trend, "each case's latest result against its own nightly history"},
    {"push", cmd_push, "upload a run to a Pushgateway, InfluxDB or a JSON webhook (queued on failure)"},
    {"merge", cmd_merge, "merge results databases (hosts, shards) into one"},
    {"calibrate", cmd_calibrate, "measure ppbench's own false alarms, detectable effect, repeatability"},
    {"list-kernels", cmd_list_kernels, "the built-in kernel instantiations suites need on a device (ahead-of-time builds)"},
    {"impls", cmd_impls, "list kernel implementations: builtin and plugins (vllm-triton, vllm-cuda, ...)"},
};

/* --plugin PATH (or --plugin=PATH), anywhere on the command line and for every
 * command: a plugin library or folder searched first (harness/run/impl.h). Taken
 * out of argv before the command parses its own options. */
/* A --plugin path is a library file or a folder that exists: a mistyped one
 * would otherwise be skipped in silence, and a FIFO or device would block or
 * feed the loader forever. */
static int add_plugin_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "ppbench: --plugin %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ppbench: --plugin %s: neither a library file nor a folder\n", path);
        return -1;
    }
    ppb_impl_add_search_path(path);
    return 0;
}

static int take_plugin_options(int *argc, char **argv)
{
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], "--plugin") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "ppbench: --plugin needs a path\n");
                return -1;
            }
            if (add_plugin_path(argv[++i]))
                return -1;
        } else if (strncmp(argv[i], "--plugin=", 9) == 0) {
            if (add_plugin_path(argv[i] + 9))
                return -1;
        } else {
            argv[out++] = argv[i];
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench <command> [options]   (ppbench <command> --help for details)\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 ok, 1 some case failed or infeasible, 2 usage, 3 bad input, "
                 "4 runtime failure, 130 interrupted;\n            propose/compare: 0 ACCEPT, 10 REJECT, 11 INCONCLUSIVE; "
                 "trend: 12 regression;\n            verdict --recompute: 13 differs from the stored verdict\n");
}

/* Levenshtein distance, for "did you mean". Command names are short. */
static int edit_distance(const char *a, const char *b)
{
    int row[32], n = (int)strlen(b);
    if (n >= 32)
        return 99;
    for (int j = 0; j <= n; j++)
        row[j] = j;
    for (int i = 1; a[i - 1]; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= n; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[n];
}

static const command *closest(const char *name)
{
    const command *best = NULL;
    int best_d = 3; /* a typo, not another word */
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        int d = edit_distance(name, commands[i].name);
        if (d < best_d) {
            best_d = d;
            best = &commands[i];
        }
    }
    return best;
}

int main(int argc, char **argv)
{
    if (take_plugin_options(&argc, argv) != 0)
        return PPB_EXIT_USAGE;
    if (argc < 2) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc > 2) { /* ppbench help CMD = ppbench CMD --help */
            char *help_argv[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
                if (strcmp(argv[2], commands[i].name) == 0)
                    return commands[i].run(2, help_argv);
            fprintf(stderr, "ppbench: '%s' is not a command\n", argv[2]);
            return PPB_EXIT_USAGE;
        }
        usage(stdout);
        return PPB_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ppbench 0.1.0\n");
        return PPB_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    const command *guess = closest(argv[1]);
    if (guess)
        fprintf(stderr, "ppbench: '%s' is not a command; did you mean '%s'?\n\n", argv[1], guess->name);
    else
        fprintf(stderr, "ppbench: '%s' is not a command\n\n", argv[1]);
    usage(stderr);
    return PPB_EXIT_USAGE;
}
