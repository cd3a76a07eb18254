/* ppbench calibrate SUITE: how far ppbench's own word can be trusted on this
 * device (MEASUREMENT.md "How ppbench proves its own word"):
 *  - A/A: every case against itself; any FASTER/SLOWER is a false alarm, and
 *    the proposal must not come out ACCEPT or REJECT;
 *  - known effects: the candidate slowed by known amounts (it times extra
 *    launches it does not count): the share of cases detected SLOWER;
 *  - repeatability: the suite run twice, the median run-to-run difference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abrun.h"
#include "cli_util.h"
#include "commands.h"
#include "runner.h"
#include "stats.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench calibrate SUITE.yaml [options]\n\n"
            "Measures ppbench's false-alarm rate (A/A), minimum detectable effect (the candidate\n"
            "slowed by known amounts) and run-to-run repeatability on this device.\n\n"
            "  --db PATH            results database\n"
            "  --backend NAME       auto (default), cuda or cpu\n"
            "  --filter EXPR        only these cases\n"
            "  --effects LIST       slowdowns to detect, comma-separated (default 0.01,0.02,0.05,0.1)\n"
            "  --min-case-ms X      MDE counts cases longer than X ms (default 0.1)\n"
            "  --cpu-max-gflop X    CPU backend work limit\n"
            "  -h, --help\n\n"
            "exit: 0 goals met (A/A under 1%% false alarms and no A/A verdict; MDE <= 2%%;\n"
            "      repeatability under 1%%), 1 some goal missed, 2 usage, 3 bad input, 4 runtime\n");
}

typedef struct class_count {
    int compared, faster, slower, long_compared, long_slower;
    double min_case_ms;
    ppb_store *s;
    int64_t base_run;
} class_count;

typedef struct median_lookup {
    const char *key;
    double median;
} median_lookup;

static int find_median(void *ctx, const ppb_case *c, const ppb_result *r)
{
    median_lookup *m = ctx;
    if (strcmp(c->key, m->key) != 0)
        return 0;
    m->median = r->median_ms;
    return 1;
}

static int count_case(void *ctx, const ppb_proposal_case *c)
{
    class_count *k = ctx;
    if (strcmp(c->state, "compared") != 0)
        return 0;
    k->compared++;
    k->faster += strcmp(c->cls, "faster") == 0;
    k->slower += strcmp(c->cls, "slower") == 0;
    median_lookup m = {c->baseline_key, 0};
    ppb_err ignored;
    ppb_store_each_result(k->s, k->base_run, find_median, &m, &ignored);
    if (m.median >= k->min_case_ms) {
        k->long_compared++;
        k->long_slower += strcmp(c->cls, "slower") == 0;
    }
    return 0;
}

/* The database, opened once, after the first run stored something (a bad
 * suite leaves no database behind). */
static int open_once(ppb_store **s, const char *db_path, ppb_err *err)
{
    return *s ? PPB_OK : ppb_store_open(s, db_path, err);
}

static int run_effect(ppb_proposal *p, ppb_propose_options *o, double effect, class_count *k,
                      char *verdict, ppb_store **s, ppb_err *err)
{
    ppb_proposal_record rec;
    ppb_verdict_report rep;
    o->candidate_slowdown = effect;
    snprintf(p->name, sizeof p->name, effect > 0 ? "calibrate +%.0f%%" : "calibrate A/A",
             effect * 100);
    int rc = ppb_propose_run(p, o, &rec, &rep, err);
    ppb_verdict_report_free(&rep);
    if (rc)
        return rc;
    snprintf(verdict, 16, "%s", rec.verdict);
    if ((rc = open_once(s, o->db_path, err)))
        return rc;
    k->s = *s;
    k->base_run = rec.baseline_run;
    return ppb_store_each_proposal_case(*s, rec.id, count_case, k, err);
}

typedef struct repeat_ctx {
    ppb_store *s;
    int64_t other;
    double *diffs;
    int n, cap;
} repeat_ctx;

static int repeat_case(void *ctx, const ppb_case *c, const ppb_result *r)
{
    repeat_ctx *x = ctx;
    median_lookup m = {c->key, 0};
    ppb_err ignored;
    ppb_store_each_result(x->s, x->other, find_median, &m, &ignored);
    if (!(r->median_ms > 0 && m.median > 0) || x->n == x->cap)
        return 0;
    x->diffs[x->n++] = fabs(m.median / r->median_ms - 1);
    return 0;
}

static int repeatability(const char *suite, const ppb_propose_options *o, const char *filter,
                         double *median_diff, int *n_cases, ppb_store **s, ppb_err *err)
{
    ppb_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.suite_path = suite;
    ro.db_path = o->db_path;
    ro.filter = filter;
    ro.backend = o->backend;
    ro.log = o->log;
    ro.cpu_max_gflop = o->cpu_max_gflop;
    ro.label = "calibrate repeatability";
    ppb_run_summary sum[2];
    for (int i = 0; i < 2; i++) {
        int rc = ppb_run_suite(&ro, &sum[i], err);
        if (rc)
            return rc;
    }
    int rc = open_once(s, o->db_path, err);
    if (rc)
        return rc;
    repeat_ctx x = {*s, sum[1].run_id, calloc((size_t)sum[0].planned + 1, sizeof(double)), 0,
                    sum[0].planned};
    if (!x.diffs)
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (!rc)
        rc = ppb_store_each_result(*s, sum[0].run_id, repeat_case, &x, err);
    *n_cases = x.n;
    *median_diff = x.n ? ppb_median(x.diffs, x.n) : NAN;
    free(x.diffs);
    return rc;
}

typedef struct calibrate_opts {
    const char *filter;
    double effects[16], min_case_ms;
    int n_effects;
} calibrate_opts;

static int calibrate_opt(void *ctx, int opt, char *arg)
{
    calibrate_opts *c = ctx;
    char *end = NULL;
    switch (opt) {
    case 'f': c->filter = arg; return 0;
    case 'e':
        c->n_effects = 0;
        for (char *tok = arg; *tok && c->n_effects < 16; tok = *end ? end + 1 : end) {
            c->effects[c->n_effects] = strtod(tok, &end);
            if (end == tok || (*end && *end != ',') || !(c->effects[c->n_effects] > 0)) {
                fprintf(stderr, "ppbench calibrate: --effects %s: expected positive numbers\n", arg);
                return -1;
            }
            c->n_effects++;
        }
        return 0;
    case 'M': return ppb_cli_positive("calibrate", "--min-case-ms", arg, &c->min_case_ms);
    default: return 1;
    }
}

/* The three measurements and their goals; exit 0 when all are met. */
static int calibrate(const char *suite, ppb_propose_options *o, const calibrate_opts *co, ppb_store **s,
                     ppb_err *err)
{
    ppb_proposal p;
    memset(&p, 0, sizeof p);
    snprintf(p.path, sizeof p.path, "%s", suite);
    snprintf(p.suite_path, sizeof p.suite_path, "%s", suite);
    snprintf(p.filter, sizeof p.filter, "%s", co->filter ? co->filter : "");
    p.kind = PPB_PROPOSAL_KERNEL_CONFIG;
    ppb_verdict_rules_default(&p.rules);
    p.rules.min_gain = 0;          /* A/A must be INCONCLUSIVE, never REJECT for "no gain" */
    p.rules.max_regression = 10;   /* known slowdowns are counted, not rejected */
    p.sampling = (ppb_sampling){.samples_per_round = 5, .min_rounds = 3, .max_rounds = 30,
                                .budget_ms = 10000};

    const double *effects = co->effects, min_case_ms = co->min_case_ms;
    const int n_effects = co->n_effects;
    char verdict[16];
    class_count aa = {.min_case_ms = min_case_ms};
    int rc = run_effect(&p, o, 0, &aa, verdict, s, err);
    if (rc)
        return rc;
    double false_alarm = aa.compared ? (double)(aa.faster + aa.slower) / aa.compared : NAN;
    int aa_ok = false_alarm < 0.01 && strcmp(verdict, "INCONCLUSIVE") == 0;
    printf("A/A: %d cases compared, %d FASTER + %d SLOWER = %.2f%% false alarms; verdict %s%s\n",
           aa.compared, aa.faster, aa.slower, false_alarm * 100, verdict,
           aa_ok ? "" : "  <- goal missed");
    double mde = NAN;
    for (int i = 0; i < n_effects; i++) {
        class_count k = {.min_case_ms = min_case_ms};
        if ((rc = run_effect(&p, o, effects[i], &k, verdict, s, err)))
            return rc;
        double detected = k.long_compared ? (double)k.long_slower / k.long_compared : NAN;
        printf("+%.1f%%: detected SLOWER in %d of %d cases longer than %.3g ms (%.1f%%), %d of %d "
               "in all\n",
               effects[i] * 100, k.long_slower, k.long_compared, min_case_ms, detected * 100,
               k.slower, k.compared);
        if (isnan(mde) && detected >= 0.95)
            mde = effects[i];
    }
    double rep_diff;
    int rep_n;
    if ((rc = repeatability(suite, o, co->filter, &rep_diff, &rep_n, s, err)))
        return rc;
    printf("minimum detectable effect (>= 95%% of cases > %.3g ms): %s%.1f%%\n", min_case_ms,
           isnan(mde) ? "above " : "", (isnan(mde) ? effects[n_effects - 1] : mde) * 100);
    printf("repeatability: median run-to-run difference %.2f%% over %d cases\n", rep_diff * 100,
           rep_n);
    int ok = aa_ok && !isnan(mde) && mde <= 0.02 && rep_diff < 0.01;
    printf("goals (A/A < 1%% and no A/A verdict; MDE <= 2%%; repeatability < 1%%): %s\n",
           ok ? "met" : "NOT met");
    return ok ? PPB_EXIT_OK : PPB_EXIT_FAILURES;
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB,          PPB_CLI_OPT_BACKEND, {"filter", required_argument, NULL, 'f'},
        {"effects", required_argument, NULL, 'e'}, {"min-case-ms", required_argument, NULL, 'M'},
        PPB_CLI_OPT_CPU_MAX_GFLOP, PPB_CLI_OPT_HELP_END};
    ppb_cli_opts o;
    calibrate_opts co = {.effects = {0.01, 0.02, 0.05, 0.10}, .min_case_ms = 0.1, .n_effects = 4};
    int xrc = ppb_cli_parse("calibrate", argc, argv, "h", longopts, usage, &o, calibrate_opt, &co, 1);
    if (xrc >= 0)
        return xrc;
    ppb_propose_options po;
    memset(&po, 0, sizeof po);
    ppb_cli_session_opts(&o, &po.backend, &po.device_index, &po.cpu_max_gflop, &po.log, &po.db_path);
    ppb_err err = {{0}};
    ppb_store *s = NULL;
    int rc = calibrate(argv[optind], &po, &co, &s, &err);
    ppb_store_close(s);
    return rc < 0 ? ppb_cli_fail("calibrate", rc, &err) : rc;
}
