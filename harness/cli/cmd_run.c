/* ppbench run SUITE: the main job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "matrix.h"
#include "results_table.h"
#include "run_doc.h"
#include "runner.h"
#include "store.h"
#include "suite.h"
#include "workers.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench run SUITE.yaml [options]\n"
            "       ppbench run --resume RUN [--db PATH]\n\n"
            "Runs every case of the suite: target check, checked launch against the float64\n"
            "CPU reference, timing, and stores each case as it completes.\n\n"
            "  --db PATH            results database (default $PPBENCH_DB, else ./" PPB_DEFAULT_DB ")\n"
            "  --backend NAME       auto (GPU when there is one, default), cuda or cpu\n"
            "  --device N           GPU index (default 0)\n"
            "  --target NAME        judge configs against suites/targets/NAME.yaml (overrides the\n"
            "                       suite's target:; 'none' for no target)\n"
            "  --filter EXPR        only cases matching EXPR, e.g. 'head_dim=128,block_m=64|128'\n"
            "  --shard K/N          only shard K of N (stable across runs and hosts)\n"
            "  --group NAME         the night a shard belongs to: `ppbench merge` folds the shards of\n"
            "                       one group into one run (default: the commit and the UTC date)\n"
            "  --impl NAME          every case on this implementation: builtin, vllm-triton, vllm-cuda,\n"
            "                       plugin:NAME (ppbench impls lists them); --plugin PATH adds a library\n"
            "  --label TEXT         free text stored with the run (e.g. 'nightly', a PR number)\n"
            "  --kind KIND          what the run is for: run (default: a plain run, the nights trend\n"
            "                       follows), proposal or calibrate (left out of trend and compare's noise)\n"
            "  --resume RUN         complete an interrupted run: only cases not yet stored run\n"
            "  --hot                do not flush caches between samples (default: cold)\n"
            "  --cpu-max-gflop X    CPU backend: skip cases above X GFLOP (default 2)\n"
            "  --devices LIST       one worker process per device: 'all' or '0,1,..'; a worker\n"
            "                       that dies or hangs is replaced and its case stored as crashed or hung\n"
            "  --case-timeout S     with --devices: kill a worker stuck on one case for S seconds\n"
            "  --json FILE|-        the run's outcome as JSON (schema " PPB_RUN_SCHEMA ", docs/CLI.md)\n"
            "  --markdown FILE|-    the same as Markdown (with '-', the results table goes to stderr)\n"
            "  --no-progress, --quiet  no progress on stderr (default: a line kept up to date on a\n"
            "                       terminal, else a line per finished case with done/total and an ETA)\n"
            "  -h, --help           this help\n\n"
            "exit: 0 no case wrong or failed (a case the suite's expect_wrong: names must be wrong),\n"
            "      1 some case wrong/error or none timed, or an expected-wrong case correct, 2 usage,\n"
            "      3 bad input (nothing written), 4 runtime failure, 130 interrupted (resume with --resume RUN)\n");
}

/* The suite's expect_wrong: rules (docs/SUITES.md) against the stored results:
 * a wrong case they name is a deliberate fault the checks caught, not a
 * failure; one they name that came out correct is a fault not caught. */
typedef struct expected_wrong {
    const ppb_suite *suite;
    int caught, missed;
    char first_missed[PPB_CASE_KEY_MAX];
} expected_wrong;

static int tally_expected(void *ctx, const ppb_case *c, const ppb_result *r)
{
    expected_wrong *e = ctx;
    if (!ppb_suite_case_expects_wrong(e->suite, c))
        return 0;
    if (r->status == PPB_STATUS_WRONG)
        e->caught++;
    else if ((r->status == PPB_STATUS_OK || r->status == PPB_STATUS_NOISY) && e->missed++ == 0)
        snprintf(e->first_missed, sizeof e->first_missed, "%s", c->key);
    return 0;
}

/* The suite's expect_wrong: rules over the run's stored results (a resumed
 * run's too), with the suite as the run handed it over. */
static int count_expected_wrong(ppb_store *s, const ppb_suite *suite, int64_t run_id, expected_wrong *e, ppb_err *err)
{
    memset(e, 0, sizeof *e);
    e->suite = suite;
    return suite->n_expect_wrong ? ppb_store_each_result(s, run_id, tally_expected, e, err) : PPB_OK;
}

/* Interrupted, some case failed, nothing timed, or a pass; says why on stderr. */
static int run_exit_code(const ppb_run_summary *sum, const ppb_status_counts *counts, const expected_wrong *e,
                         const char *db_path)
{
    if (sum->interrupted) {
        fprintf(stderr, "ppbench run: interrupted; complete it with 'ppbench run --resume %lld --db %s'\n",
                (long long)sum->run_id, db_path);
        return PPB_EXIT_INTERRUPTED;
    }
    /* Noisy cases are correct, only not trusted for timing: reported, not failed. A wrong case the
     * suite expects (its caught fault) is not a failure either. */
    const int *n = counts->n;
    int failed = -e->caught;
    for (int st = 0; st < PPB_STATUS_COUNT; st++)
        if (ppb_status_failed(st))
            failed += n[st];
    if (failed > 0)
        return PPB_EXIT_FAILURES;
    if (e->missed) {
        fprintf(stderr, "ppbench run: %d case%s the suite expects wrong (expect_wrong:) came out correct, e.g. '%s': "
                "the fault %s for was not caught\n", e->missed, e->missed == 1 ? "" : "s", e->first_missed,
                e->missed == 1 ? "it stands" : "they stand");
        return PPB_EXIT_FAILURES;
    }
    /* A run that measured nothing answers no question: never a pass. One that only shows the
     * deliberate faults caught does answer one (do the checks catch them?). */
    if (n[PPB_STATUS_OK] + n[PPB_STATUS_NOISY] + e->caught == 0) {
        fprintf(stderr, "ppbench run: no case was timed (%d refused, %d skipped of %d): nothing was measured\n",
                n[PPB_STATUS_REFUSED], n[PPB_STATUS_SKIPPED], counts->total);
        return PPB_EXIT_FAILURES;
    }
    if (e->caught)
        fprintf(stderr, "ppbench run: %d case%s wrong, as the suite expects (expect_wrong:): the deliberate fault%s "
                "caught; no other case failed\n", e->caught, e->caught == 1 ? "" : "s",
                e->caught == 1 ? " was" : "s were");
    return PPB_EXIT_OK;
}

static int run_opt(void *ctx, int opt, char *arg)
{
    ppb_run_options *o = ctx;
    ppb_err err = {{0}};
    char *end = NULL;
    switch (opt) {
    case 't': o->target = arg; return 0;
    case 'f': o->filter = arg; return 0;
    case 'I': o->impl = arg; return 0;
    case 'l': o->label = arg; return 0;
    case 'K':
        if (!ppb_store_run_kind_valid(arg)) {
            fprintf(stderr, "ppbench run: --kind %s: expected run, proposal or calibrate\n", arg);
            return -1;
        }
        o->run_kind = arg;
        return 0;
    case 'G': o->group = arg; return 0;
    case 'H': o->hot = 1; return 0;
    case 'P': o->progress = PPB_PROGRESS_NONE; return 0;
    case 's':
        if (ppb_matrix_parse_shard(arg, &o->shard_k, &o->shard_n, &err)) {
            fprintf(stderr, "ppbench run: --shard: %s\n", err.msg);
            return -1;
        }
        return 0;
    case 'r':
        o->resume_run = strtoll(arg, &end, 10);
        if (*end || o->resume_run <= 0) {
            fprintf(stderr, "ppbench run: --resume %s: expected a run id\n", arg);
            return -1;
        }
        return 0;
    case 'V': {
        int devices[64], n;
        /* syntax only here ("all" needs the device count, which the runner finds) */
        if (strcmp(arg, "all") != 0 && ppb_pool_parse_devices(arg, 0, devices, 64, &n, &err)) {
            fprintf(stderr, "ppbench run: %s\n", err.msg);
            return -1;
        }
        o->devices = arg;
        return 0;
    }
    case 'T': return ppb_cli_positive("run", "--case-timeout", arg, &o->case_timeout_s);
    default: return 1;
    }
}

int cmd_run(int argc, char **argv)
{
    ppb_run_options o;
    memset(&o, 0, sizeof o);
    o.progress = isatty(STDERR_FILENO) ? PPB_PROGRESS_TERMINAL : PPB_PROGRESS_LOG;
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB,                             PPB_CLI_OPT_BACKEND,
        PPB_CLI_OPT_DEVICE,                         {"target", required_argument, NULL, 't'},
        {"filter", required_argument, NULL, 'f'},   {"shard", required_argument, NULL, 's'},
        {"label", required_argument, NULL, 'l'},    {"resume", required_argument, NULL, 'r'},
        {"hot", no_argument, NULL, 'H'},            PPB_CLI_OPT_CPU_MAX_GFLOP,
        {"no-progress", no_argument, NULL, 'P'},    {"quiet", no_argument, NULL, 'P'},
        PPB_CLI_OPT_DOCS,
        {"devices", required_argument, NULL, 'V'},  {"case-timeout", required_argument, NULL, 'T'},
        {"impl", required_argument, NULL, 'I'},     {"group", required_argument, NULL, 'G'},
        {"kind", required_argument, NULL, 'K'},     PPB_CLI_OPT_HELP_END};
    ppb_cli_opts co;
    int xrc = ppb_cli_parse("run", argc, argv, "h", longopts, usage, &co, run_opt, &o, -1);
    if (xrc >= 0)
        return xrc;
    if (o.resume_run ? optind != argc : optind != argc - 1) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if (o.group && (!o.shard_n || o.resume_run)) {
        fprintf(stderr, "ppbench run: --group names the night of a shard: give it with --shard K/N\n");
        return PPB_EXIT_USAGE;
    }
    if (o.group && (!o.group[0] || strlen(o.group) > 100 || strpbrk(o.group, "\n\r\t"))) {
        fprintf(stderr, "ppbench run: --group: 1 to 100 characters on one line\n");
        return PPB_EXIT_USAGE;
    }
    if (!o.resume_run)
        o.suite_path = ppb_cli_suite_arg(argv[optind], "");
    ppb_cli_session_opts(&co, &o.backend, &o.device_index, &o.cpu_max_gflop, &o.log, &o.db_path);

    ppb_err err = {{0}};
    ppb_run_summary sum;
    int rc = ppb_run_suite(&o, &sum, &err);
    if (rc) {
        fprintf(stderr, "ppbench run: %s\n", err.msg);
        if (sum.run_id)
            fprintf(stderr, "ppbench run: run %lld is stored; complete it with "
                            "'ppbench run --resume %lld --db %s'\n",
                    (long long)sum.run_id, (long long)sum.run_id, o.db_path);
        return ppb_cli_exit(rc);
    }

    /* The table and the documents read the run through the connection the runner
     * handed over: a resumed run's hold what the earlier process stored too. */
    FILE *human = ppb_cli_human(&co);
    ppb_status_counts counts;
    expected_wrong expected;
    rc = ppb_print_results(sum.store, sum.run_id, human, &counts, &err);
    if (!rc) {
        fprintf(human, "run %lld (%s backend%s) stored in %s\n", (long long)sum.run_id, sum.backend,
                sum.timing_is_cpu ? ", CPU timings" : "", o.db_path);
        ppb_cli_load_note(sum.store, sum.run_id, human);
        rc = count_expected_wrong(sum.store, sum.suite, sum.run_id, &expected, &err);
    }
    if (rc) {
        ppb_run_summary_close(&sum);
        return ppb_cli_fail("run", PPB_EIO, &err);
    }
    int exit_code = run_exit_code(&sum, &counts, &expected, o.db_path);
    if (ppb_cli_run_docs("run", sum.store, sum.run_id, exit_code, co.json, co.md))
        exit_code = PPB_EXIT_RUNTIME;
    ppb_run_summary_close(&sum);
    return exit_code;
}
