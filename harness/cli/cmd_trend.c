/* ppbench trend SUITE: each case of the suite's latest run against its own
 * history of nightly runs (harness/decide/trend.h); exit 12 on a regression. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "suite.h"
#include "trend.h"
#include "trend_doc.h"
#include "trend_pool.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench trend SUITE.yaml|SUITE_NAME [--db PATH] [--since DATE] [--window N]\n"
            "                    [--kinds LIST|--all-kinds] [--baseline-db PATH|URL]\n\n"
            "Judges each case of the suite's latest plain run against the same case in earlier plain\n"
            "runs of the suite: median and MAD of a trailing window plus a step test, so one noisy\n"
            "night is an outlier, not a regression. Names the first run of a step. A case's threshold\n"
            "is max(floor, k x its night-to-night noise): the suite file's trend: (floor 2%%, k 5 when\n"
            "only a name is given). Then each kernel's cases pooled night by night (each against its\n"
            "own level; a threshold derived for 0.1%% false alerts a night): a step that moves them all\n"
            "shows there through each case's own noise, and a pooled regression exits 12 too.\n\n"
            "  --since DATE   only runs started at or after DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)\n"
            "  --window N     trailing runs in the reference (default 10)\n"
            "  --kinds LIST   runs of these kinds (default run: plain runs; also proposal, calibrate)\n"
            "  --all-kinds    runs of every kind (proposal and calibrate runs too)\n"
            "  --baseline-db PATH|URL  earlier nights from another database (fetched with libcurl\n"
            "                 and checked to be a ppbench database); their run ids print as base:N\n"
            "  --baseline-timeout S  each download try gives up after S seconds (default 120)\n"
            "  --json FILE|-  the verdict as JSON (schema " PPB_TREND_SCHEMA ", docs/CLI.md)\n"
            "  --markdown FILE|-  the verdict as Markdown (with '-', the table goes to stderr)\n\n"
            "A case the latest run did not time (refused, wrong, ...) is not-timed; when no case was\n"
            "timed the night is not a pass.\n\n"
            "exit: 0 no regression, 12 some case regressed, 1 the latest run timed no case, 2 usage,\n"
            "      3 bad input, 4 runtime\n");
}

typedef struct history {
    ppb_trend_point *pts;
    char (*ids)[24];
    char (*when)[32];
    const char *prefix;     /* "base:" for runs of the baseline database */
    int n, cap;
} history;

static int add_point(void *ctx, const ppb_history_point *p)
{
    history *h = ctx;
    if (!(strcmp(p->status, "ok") == 0 || strcmp(p->status, "noisy") == 0) ||
        !(p->median_ms > 0))
        return 0; /* only timed results have a time to follow */
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 32;
        ppb_trend_point *pts = realloc(h->pts, sizeof *pts * (size_t)cap);
        if (pts)
            h->pts = pts;
        char(*ids)[24] = pts ? realloc(h->ids, sizeof *ids * (size_t)cap) : NULL;
        if (ids)
            h->ids = ids;
        char(*when)[32] = ids ? realloc(h->when, sizeof *when * (size_t)cap) : NULL;
        if (!when)
            return PPB_ENOMEM;
        h->when = when;
        h->cap = cap;
    }
    snprintf(h->ids[h->n], sizeof h->ids[h->n], "%s%lld", h->prefix, (long long)p->run_id);
    snprintf(h->when[h->n], sizeof h->when[h->n], "%s", p->started_at);
    h->pts[h->n].value = p->median_ms;
    h->n++;
    return 0;
}

typedef struct trend_ctx {
    ppb_store *s;
    const char *kinds;      /* --kinds: the kinds of runs followed ("run") */
    const ppb_suite *suite_file;   /* the suite's trend: thresholds, or NULL (defaults) */
    ppb_store *baseline;    /* --baseline-db: older nights from another database, or NULL */
    const char *suite;
    const char *since;
    char since_utc[32];     /* --since as stored runs write it */
    ppb_trend_options opt;
    ppb_trend_doc doc;      /* every judged case, for --json / --markdown */
    ppb_trend_pools pools;  /* each kernel's cases, pooled night by night */
    FILE *human;
    int rc;
    ppb_err *err;
} trend_ctx;

/* One line of the table (and the reason under an alert): a case, or a kernel's pooled cases. */
static void print_row(FILE *out, const ppb_trend_result *res, const char *name)
{
    char thr[24] = "-", sees[16] = "-";
    if (res->threshold_from) {
        snprintf(thr, sizeof thr, "%.1f%% %s", 100 * res->threshold, res->threshold_from);
        ppb_format_fixed(sees, sizeof sees, 100 * res->detectable, 1);
        strncat(sees, "%", sizeof sees - strlen(sees) - 1);
    }
    char change[24] = "-", score[24] = "-";   /* not timed: nothing measured tonight */
    if (res->status != PPB_TREND_NOT_TIMED) {
        snprintf(change, sizeof change, "%+.1f%%", isfinite(res->rel_change) ? res->rel_change * 100 : 0.0);
        snprintf(score, sizeof score, "%.1f", isfinite(res->score) ? res->score : 0.0);
    }
    fprintf(out, "%-12s %8s %8s  %-11s  %7s  %-8s %s\n", ppb_trend_status_name(res->status), change, score, thr, sees,
            res->step_run_id[0] ? res->step_run_id : "-", name);
    if (res->status == PPB_TREND_REGRESSION || res->status == PPB_TREND_IMPROVEMENT || res->status == PPB_TREND_OUTLIER)
        fprintf(out, "             -> %s\n", res->reason);
}

static int judge_case(void *ctx, const ppb_case *c, const ppb_result *r)
{
    trend_ctx *t = ctx;
    history h = {0};
    int rc = PPB_OK;
    ppb_trend_result res;
    /* Not timed tonight (refused, skipped, wrong, failed): its history's last
     * time is an earlier night's, so there is nothing to judge. */
    int timed = (r->status == PPB_STATUS_OK || r->status == PPB_STATUS_NOISY) && r->median_ms > 0;
    if (!timed)
        ppb_trend_not_timed(ppb_status_name(r->status), r->reason, &res);
    if (timed && t->baseline) {
        h.prefix = "base:";
        rc = ppb_store_case_history(t->baseline, t->suite, c->key, t->since, t->kinds, t->doc.timing, add_point, &h,
                                    t->err);
    }
    h.prefix = "";
    int n_base = h.n;
    if (timed && !rc)
        rc = ppb_store_case_history(t->s, t->suite, c->key, t->since, t->kinds, t->doc.timing, add_point, &h, t->err);
    ppb_trend_options opt = t->opt;
    if (t->suite_file) {
        ppb_trend_settings ts;
        ppb_suite_case_trend(t->suite_file, c, &ts);
        opt.min_change = ts.min_change_floor;
        opt.noise_multiplier = ts.noise_multiplier;
    }
    if (timed && !rc) {
        /* baseline nights first, then ours: each list is in time order; keep
         * only baseline nights older than our first run */
        int keep = 0;
        for (int i = 0; i < n_base; i++)
            if (h.n == n_base || strcmp(h.when[i], h.when[n_base]) < 0)
                keep = i + 1;
        int m = 0;
        for (int i = 0; i < h.n; i++) {
            if (i >= keep && i < n_base)
                continue;
            h.pts[m] = h.pts[i];
            memmove(h.ids[m], h.ids[i], sizeof h.ids[m]);
            memmove(h.when[m], h.when[i], sizeof h.when[m]);
            m++;
        }
        h.n = m;
        for (int i = 0; i < h.n; i++)
            h.pts[i].run_id = h.ids[i]; /* ids may have moved while growing */
        rc = ppb_trend_analyse(h.pts, h.n, &opt, &res, t->err);
        const char **when = rc ? NULL : malloc(sizeof *when * (size_t)(h.n ? h.n : 1));
        for (int i = 0; when && i < h.n; i++)
            when[i] = h.when[i];
        if (!rc)
            rc = when ? ppb_trend_pool_add(&t->pools.kernel[c->kernel], h.pts, when, h.n, opt.min_change, t->err)
                      : ppb_fail(t->err, PPB_ENOMEM, "out of memory");
        free(when);
    }
    if (!rc)
        rc = ppb_trend_doc_add(&t->doc, c->key, &res) ? ppb_fail(t->err, PPB_ENOMEM, "out of memory") : PPB_OK;
    if (!rc)
        print_row(t->human, &res, strchr(c->key, ' ') ? strchr(c->key, ' ') + 1 : c->key);
    free(h.pts);
    free(h.ids);
    free(h.when);
    t->rc = rc;
    return rc ? rc : 0;
}

/* Each kernel's cases pooled night by night (trend_pool.h): a step that moves
 * them all is seen where each case's own noise hides it. */
static int judge_pools(trend_ctx *t)
{
    int rc = ppb_trend_pools_judge(&t->pools, &t->opt, t->doc.pooled, &t->doc.n_pooled, t->err);
    if (!rc && t->doc.n_pooled)
        fprintf(t->human, "pooled: each kernel's cases night by night, each against its own level (threshold "
                          "derived for %.1f%% false alerts a night)\n", 100 * PPB_TREND_POOL_ALERT_RATE);
    for (int i = 0; i < t->doc.n_pooled && !rc; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s: %d cases pooled", t->doc.pooled[i].group, t->doc.pooled[i].n_cases);
        print_row(t->human, &t->doc.pooled[i].result, name);
    }
    return rc;
}

typedef struct trend_doc_ctx {
    const ppb_trend_doc *doc;
    int exit_code;
} trend_doc_ctx;

static int trend_json(void *ctx, FILE *out, ppb_err *err)
{
    (void)err; /* a stream error: the caller reports it */
    trend_doc_ctx *t = ctx;
    ppb_trend_doc_json(t->doc, t->exit_code, out);
    return 0;
}

static int trend_markdown(void *ctx, FILE *out, ppb_err *err)
{
    (void)err;
    ppb_trend_doc_markdown(((trend_doc_ctx *)ctx)->doc, out);
    return 0;
}

static int trend_opt(void *ctx, int opt, char *arg)
{
    trend_ctx *t = ctx;
    char *end = NULL;
    switch (opt) {
    case 's':
        if (ppb_cli_date("trend", "--since", arg, t->since_utc, sizeof t->since_utc))
            return -1;
        t->since = t->since_utc;
        return 0;
    case 'k':
        if (t->kinds && strcmp(t->kinds, "all") == 0) {
            fprintf(stderr, "ppbench trend: give --kinds or --all-kinds, not both\n");
            return -1;
        }
        if (ppb_store_run_kinds_check(arg, t->err)) {
            fprintf(stderr, "ppbench trend: --kinds %s: %s\n", arg, t->err->msg);
            return -1;
        }
        t->kinds = arg;
        return 0;
    case 'K':
        if (t->kinds && strcmp(t->kinds, "all") != 0) {
            fprintf(stderr, "ppbench trend: give --kinds or --all-kinds, not both\n");
            return -1;
        }
        t->kinds = "all";
        return 0;
    case 'w':
        t->opt.window = (int)strtol(arg, &end, 10);
        if (*end || t->opt.window < 3) {
            fprintf(stderr, "ppbench trend: --window %s: expected an integer >= 3\n", arg);
            return -1;
        }
        return 0;
    default: return 1;
    }
}

/* A suite file names the suite and gives its thresholds (*loaded = 1);
 * anything else is taken as the name. */
static int suite_name(const char *arg, char *name, size_t len, ppb_suite *suite, int *loaded, ppb_err *err)
{
    snprintf(name, len, "%s", arg);
    size_t n = strlen(arg);
    *loaded = 0;
    if (n > 5 && strcmp(arg + n - 5, ".yaml") == 0) {
        if (ppb_suite_load(ppb_cli_suite_arg(arg, ""), suite, err))
            return PPB_EINPUT;
        snprintf(name, len, "%s", suite->name);
        *loaded = 1;
    }
    return PPB_OK;
}

int cmd_trend(int argc, char **argv)
{
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB, {"since", required_argument, NULL, 's'}, {"window", required_argument, NULL, 'w'},
        {"kinds", required_argument, NULL, 'k'}, {"all-kinds", no_argument, NULL, 'K'},
        PPB_CLI_OPT_BASELINE_DB, PPB_CLI_OPT_DOCS, PPB_CLI_OPT_HELP_END};
    ppb_cli_opts o;
    trend_ctx t;
    memset(&t, 0, sizeof t);
    t.since = "";
    ppb_trend_options_default(&t.opt);
    ppb_err err = {{0}};
    t.err = &err;
    int xrc = ppb_cli_parse("trend", argc, argv, "h", longopts, usage, &o, trend_opt, &t, 1);
    if (xrc >= 0)
        return xrc;
    char name[128];
    ppb_suite suite;
    int have_suite = 0;
    if (suite_name(argv[optind], name, sizeof name, &suite, &have_suite, &err))
        return ppb_cli_fail("trend", PPB_EINPUT, &err);
    t.suite_file = have_suite ? &suite : NULL;
    t.suite = name;
    t.human = ppb_cli_human(&o);
    snprintf(t.doc.suite, sizeof t.doc.suite, "%s", name);
    t.doc.window = t.opt.window;
    ppb_trend_pools_init(&t.pools, t.opt.window);
    ppb_cli_stores st;
    if ((xrc = ppb_cli_open_stores("trend", &o, &st))) {
        if (have_suite)
            ppb_suite_free(&suite);
        return xrc;
    }
    t.s = st.s;
    t.baseline = st.baseline;
    int64_t latest = ppb_store_latest_run_of_suite(t.s, name, t.kinds);
    int rc = PPB_OK;
    if (latest <= 0) {
        rc = ppb_fail(&err, latest < 0 ? PPB_EIO : PPB_EINPUT, "no %s run of suite '%s' in the database",
                      t.kinds ? t.kinds : "plain", name);
    } else if (!(rc = ppb_measured_read(t.s, latest, &t.doc.measured, &err)) &&
               !(rc = ppb_store_run_timing(t.s, latest, t.doc.timing, sizeof t.doc.timing, &err))) {
        t.doc.latest_run = latest;
        fprintf(t.human, "suite %s: latest run %lld against its history (window %d, runs of kind %s)\n", name,
                (long long)latest, t.opt.window, t.kinds ? t.kinds : "run");
        fprintf(t.human, "%-12s %8s %8s  %-11s  %7s  %-8s %s\n", "status", "change", "score", "threshold", "sees>=",
                "step@", "case");
        rc = ppb_store_each_result(t.s, latest, judge_case, &t, &err);
        if (!rc)
            rc = judge_pools(&t);
        int left_out[2] = {0, 0};   /* here and in the baseline database */
        if (!rc)
            rc = ppb_store_runs_timed_otherwise(t.s, name, t.since, t.kinds, t.doc.timing, &left_out[0], &err);
        if (!rc && t.baseline)
            rc = ppb_store_runs_timed_otherwise(t.baseline, name, t.since, t.kinds, t.doc.timing, &left_out[1], &err);
        t.doc.history_left_out = left_out[0] + left_out[1];
    }
    if (rc)
        fprintf(stderr, "ppbench trend: %s\n", err.msg);
    else
        fprintf(t.human, "%d ok, %d regression, %d improvement, %d outlier, %d insufficient history, %d not timed\n",
                t.doc.counts[PPB_TREND_OK], t.doc.counts[PPB_TREND_REGRESSION], t.doc.counts[PPB_TREND_IMPROVEMENT],
                t.doc.counts[PPB_TREND_OUTLIER], t.doc.counts[PPB_TREND_INSUFFICIENT_HISTORY],
                t.doc.counts[PPB_TREND_NOT_TIMED]);
    char note[320];
    ppb_trend_doc_left_out_note(&t.doc, note, sizeof note);
    if (!rc && note[0])
        fprintf(t.human, "note: %s\n", note);
    if (!rc)
        ppb_cli_load_note(t.s, t.doc.latest_run, t.human);
    ppb_cli_close_stores(&st);
    if (have_suite)
        ppb_suite_free(&suite);
    /* A night that timed nothing is never a pass: it says why and exits 1, as its run did. */
    int nothing = !rc && strcmp(ppb_trend_doc_verdict(&t.doc), "NOT TIMED") == 0;
    if (nothing)
        fprintf(stderr, "ppbench trend: the latest run %lld of suite %s timed no case (%d not timed): nothing to "
                "follow, not a pass (the first case: %s)\n", (long long)t.doc.latest_run, name, t.doc.n,
                t.doc.rows[0].res.reason);
    int exit_code = rc ? ppb_cli_exit(rc)
                    : t.doc.counts[PPB_TREND_REGRESSION] || ppb_trend_doc_pooled_regressed(&t.doc) ? PPB_EXIT_REGRESSION
                    : nothing                            ? PPB_EXIT_FAILURES
                                                         : PPB_EXIT_OK;
    trend_doc_ctx dc = {&t.doc, exit_code};
    if (!rc && (ppb_cli_write_doc("trend", o.json, trend_json, &dc) || ppb_cli_write_doc("trend", o.md, trend_markdown, &dc)))
        exit_code = PPB_EXIT_RUNTIME;
    ppb_trend_doc_free(&t.doc);
    ppb_trend_pools_free(&t.pools);
    return exit_code;
}
