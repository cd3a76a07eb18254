/* ppbench calibrate SUITE: A/A false flags and known-effect detection in the
 * proposals' own regime (harness/run/calibrate.h), then repeatability
 * between two separate `ppbench run` processes of the suite. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "calibrate.h"
#include "cli_util.h"
#include "impl.h"
#include "commands.h"

extern char **environ;

#define REPEAT_LABEL "calibrate repeatability"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench calibrate SUITE.yaml [options]\n\n"
            "Measures, in the sampling regime of `ppbench propose`, the A/A false-flag rate, the\n"
            "minimum detectable effect (the candidate's times scaled by known amounts) and the\n"
            "repeatability between two separate `ppbench run` processes on this device.\n\n"
            "  --db PATH            results database\n"
            "  --backend NAME       auto (default), cuda or cpu\n"
            "  --device N           GPU index (default 0)\n"
            "  --filter EXPR        only these cases\n"
            "  --pairs N            A/A pairs to compare, at least (default 200)\n"
            "  --effect-pairs N     pairs per known effect, at least (default 50)\n"
            "  --effects LIST       slowdowns to detect, comma-separated (default 0.01,0.02,0.03,0.05)\n"
            "  --min-case-ms X      detection counts cases longer than X ms (default 0.1)\n"
            "  --budget-ms X        each pair's time budget, as a proposal's sampling.budget_ms\n"
            "                       (default: the proposals' default, 20000)\n"
            "  --work-impl NAME     effects as real work, not scaled times: plugin:NAME0 against\n"
            "                       plugin:NAME<percent> (e.g. example-cpu-work: builds doing 3, 10, 50%%\n"
            "                       more work a launch; vllm-cuda-work: 2, 3, 10%%; whole-percent\n"
            "                       effects), A/A on plugin:NAME0\n"
            "  --cpu-max-gflop X    CPU backend work limit\n"
            "  -h, --help\n\n"
            "Prints the proposals in all and an ETA after each one. The defaults suit a GPU; on the CPU\n"
            "backend use a CPU-sized suite and fewer pairs (README \"No GPU?\").\n\n"
            "exit: 0 goals met (A/A false flags <= 1%% and no A/A ACCEPT/REJECT; a 2%% slowdown found\n"
            "      in >= 90%% of pairs; median run-to-run difference < 1%%), 1 a goal missed or nothing\n"
            "      to calibrate (every pair refused on this backend), 2 usage, 3 bad input, 4 runtime\n");
}

typedef struct calibrate_cli {
    ppb_calibrate_options co;
    char *self;                     /* this executable, for the separate runs */
} calibrate_cli;

static int parse_count(const char *opt, const char *arg, int *out)
{
    char *end = NULL;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < 1 || v > 1000000) {
        fprintf(stderr, "ppbench calibrate: %s %s: expected a count from 1 to 1000000\n", opt, arg);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int calibrate_opt(void *ctx, int opt, char *arg)
{
    ppb_calibrate_options *c = &((calibrate_cli *)ctx)->co;
    char *end = NULL;
    switch (opt) {
    case 'f': c->filter = arg; return 0;
    case 'p': return parse_count("--pairs", arg, &c->aa_pairs);
    case 'P': return parse_count("--effect-pairs", arg, &c->effect_pairs);
    case 'e':
        c->n_effects = 0;
        for (char *tok = arg; *tok; tok = *end ? end + 1 : end) {
            if (c->n_effects == PPB_CALIBRATE_MAX_EFFECTS) {
                fprintf(stderr, "ppbench calibrate: --effects: at most %d\n", PPB_CALIBRATE_MAX_EFFECTS);
                return -1;
            }
            c->effects[c->n_effects] = strtod(tok, &end);
            if (end == tok || (*end && *end != ',') || !(c->effects[c->n_effects] > 0) ||
                !isfinite(c->effects[c->n_effects])) {
                fprintf(stderr, "ppbench calibrate: --effects %s: expected positive numbers\n", arg);
                return -1;
            }
            c->n_effects++;
        }
        if (c->n_effects == 0) {
            fprintf(stderr, "ppbench calibrate: --effects: at least one slowdown\n");
            return -1;
        }
        return 0;
    case 'M': return ppb_cli_positive("calibrate", "--min-case-ms", arg, &c->min_case_ms);
    case 'u': return ppb_cli_positive("calibrate", "--budget-ms", arg, &c->budget_ms);
    case 'w': c->work_impl = arg; return 0;
    default: return 1;
    }
}

/* One `ppbench run` of the suite in its own process, stored as kind calibrate. */
static int separate_run(const calibrate_cli *c, const ppb_propose_options *o, ppb_err *err)
{
    char device[16], gflop[32];
    snprintf(device, sizeof device, "%d", o->device_index);
    snprintf(gflop, sizeof gflop, "%g", o->cpu_max_gflop);
    const char *argv[24 + 2 * 16];
    int n = 0;
    argv[n++] = c->self, argv[n++] = "run", argv[n++] = c->co.suite_path, argv[n++] = "--db",
    argv[n++] = o->db_path, argv[n++] = "--backend", argv[n++] = o->backend ? o->backend : "auto",
    argv[n++] = "--device", argv[n++] = device, argv[n++] = "--kind", argv[n++] = "calibrate",
    argv[n++] = "--label", argv[n++] = REPEAT_LABEL, argv[n++] = "--no-progress";
    if (c->co.filter)
        argv[n++] = "--filter", argv[n++] = c->co.filter;
    if (o->cpu_max_gflop > 0)
        argv[n++] = "--cpu-max-gflop", argv[n++] = gflop;
    /* the plugins this process was given, so the run finds the same implementations */
    for (int i = 0; i < ppb_impl_search_path_count() && i < 16; i++)
        argv[n++] = "--plugin", argv[n++] = ppb_impl_search_path(i);
    argv[n] = NULL;
    /* its per-case lines would bury calibrate's own; errors still reach stderr */
    posix_spawn_file_actions_t quiet;
    pid_t pid;
    int status = 0, rc = posix_spawn_file_actions_init(&quiet);
    if (!rc && !(rc = posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0)))
        rc = posix_spawn(&pid, c->self, &quiet, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&quiet);
    if (rc)
        return ppb_fail(err, PPB_EIO, "cannot start %s run: %s", c->self, strerror(rc));
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (w < 0 || !WIFEXITED(status))
        return ppb_fail(err, PPB_EIO, "the separate `ppbench run` did not finish");
    /* 0: all ok; 1: some cases noisy/refused, still a run to compare */
    if (WEXITSTATUS(status) > 1)
        return ppb_fail(err, PPB_EIO, "the separate `ppbench run` exited %d", WEXITSTATUS(status));
    return PPB_OK;
}

/* The newest repeatability run stored (0: none). */
typedef struct latest_run {
    int64_t id;
} latest_run;

static int note_run(void *ctx, const ppb_run_info *run)
{
    latest_run *l = ctx;
    if (strcmp(run->label, REPEAT_LABEL) == 0 && strcmp(run->kind, "calibrate") == 0 && run->id > l->id)
        l->id = run->id;
    return 0;
}

static int latest_repeat_run(const char *db_path, int64_t *id, ppb_err *err)
{
    ppb_store *s = NULL;
    latest_run l = {0};
    int rc = ppb_store_open(&s, db_path, err);
    if (!rc)
        rc = ppb_store_each_run(s, note_run, &l, err);
    ppb_store_close(s);
    *id = l.id;
    return rc;
}

/* Two separate processes, each checked to have stored its own run, then the
 * per-case run-to-run difference (harness/run/calibrate.h). */
static int repeatability(const calibrate_cli *c, const ppb_propose_options *o, double *median_diff, double *p90,
                         int *n_cases, ppb_err *err)
{
    int64_t ids[3] = {0, 0, 0};
    int rc = latest_repeat_run(o->db_path, &ids[0], err);
    for (int i = 1; i <= 2 && !rc; i++) {
        rc = separate_run(c, o, err);
        if (!rc)
            rc = latest_repeat_run(o->db_path, &ids[i], err);
        if (!rc && ids[i] <= ids[i - 1])
            rc = ppb_fail(err, PPB_EIO, "the separate `ppbench run` stored no run in %s", o->db_path);
    }
    ppb_store *s = NULL;
    if (!rc)
        rc = ppb_store_open(&s, o->db_path, err);
    if (!rc)
        rc = ppb_calibrate_repeatability(s, ids[2], ids[1], median_diff, p90, n_cases, err);
    ppb_store_close(s);
    return rc;
}

static void print_tally(const ppb_calibrate_tally *t, double min_case_ms)
{
    if (t->effect == 0) {
        int k = t->faster + t->slower;
        printf("A/A: %d pairs in %d proposals: %d FASTER + %d SLOWER = %.2f%% false flags (95%% upper bound "
               "%.2f%%); proposals: %d ACCEPT, %d REJECT\n",
               t->pairs, t->proposals, t->faster, t->slower, 100 * ppb_calibrate_flag_rate(t, 0),
               100 * ppb_wilson_upper(k, t->pairs), t->accept, t->reject);
        return;
    }
    printf("+%g%%: SLOWER in %d of %d pairs longer than %.3g ms (%.1f%%), %d of %d in all; REJECT in %d of %d "
           "proposals\n",
           t->effect * 100, t->long_slower, t->long_pairs, min_case_ms, 100 * ppb_calibrate_flag_rate(t, 1),
           t->slower, t->pairs, t->reject, t->proposals);
}

static int calibrate(calibrate_cli *c, ppb_propose_options *o, ppb_err *err)
{
    ppb_calibration cal;
    int rc = ppb_calibrate(&c->co, o, &cal, err);
    if (rc)
        return rc;
    print_tally(&cal.aa, c->co.min_case_ms);
    for (int i = 0; i < cal.n_effects; i++)
        print_tally(&cal.effect[i], c->co.min_case_ms);
    double mde = ppb_calibrate_mde(&cal, 0.90);
    printf("minimum detectable effect (SLOWER in >= 90%% of pairs longer than %.3g ms): ", c->co.min_case_ms);
    if (isnan(mde))
        printf("above %g%%\n", 100 * c->co.effects[c->co.n_effects - 1]);
    else
        printf("%g%%\n", 100 * mde);
    double rep_median, rep_p90;
    int rep_n;
    if ((rc = repeatability(c, o, &rep_median, &rep_p90, &rep_n, err)))
        return rc;
    printf("repeatability (two separate processes): median run-to-run difference %.2f%%, 90th percentile "
           "%.2f%%, over %d cases\n",
           100 * rep_median, 100 * rep_p90, rep_n);
    double aa_rate = ppb_calibrate_flag_rate(&cal.aa, 0);
    int ok = aa_rate <= 0.01 && cal.aa.accept + cal.aa.reject == 0 && !isnan(mde) && mde <= 0.02 &&
             rep_median < 0.01;
    printf("goals (A/A <= 1%% and no A/A ACCEPT/REJECT; MDE <= 2%%; repeatability < 1%%): %s\n",
           ok ? "met" : "NOT met");
    return ok ? PPB_EXIT_OK : PPB_EXIT_FAILURES;
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB,
        PPB_CLI_OPT_BACKEND,
        PPB_CLI_OPT_DEVICE,
        {"filter", required_argument, NULL, 'f'},
        {"pairs", required_argument, NULL, 'p'},
        {"effect-pairs", required_argument, NULL, 'P'},
        {"effects", required_argument, NULL, 'e'},
        {"min-case-ms", required_argument, NULL, 'M'},
        {"budget-ms", required_argument, NULL, 'u'},
        {"work-impl", required_argument, NULL, 'w'},
        PPB_CLI_OPT_CPU_MAX_GFLOP,
        PPB_CLI_OPT_HELP_END};
    calibrate_cli c = {.co = {.aa_pairs = 200, .effect_pairs = 50, .effects = {0.01, 0.02, 0.03, 0.05},
                              .n_effects = 4, .min_case_ms = 0.1}};
    ppb_cli_opts o;
    int xrc = ppb_cli_parse("calibrate", argc, argv, "h", longopts, usage, &o, calibrate_opt, &c, 1);
    if (xrc >= 0)
        return xrc;
    c.co.suite_path = ppb_cli_suite_arg(argv[optind], "");
    ppb_propose_options po;
    memset(&po, 0, sizeof po);
    ppb_cli_session_opts(&o, &po.backend, &po.device_index, &po.cpu_max_gflop, &po.log, &po.db_path);
    po.run_kind = "calibrate";
    ppb_err err = {{0}};
    /* The separate runs are this very executable (not whatever `ppbench` is on PATH). */
    c.self = realpath("/proc/self/exe", NULL);
    int rc = c.self ? calibrate(&c, &po, &err)
                    : ppb_fail(&err, PPB_EIO, "cannot locate this executable (/proc/self/exe)");
    free(c.self);
    /* every pair refused (or none compared): nothing was calibrated, a goal missed, not bad input */
    if (rc == PPB_EREFUSED) {
        fprintf(stderr, "ppbench calibrate: %s\n", err.msg);
        return PPB_EXIT_FAILURES;
    }
    return rc < 0 ? ppb_cli_fail("calibrate", rc, &err) : rc;
}
