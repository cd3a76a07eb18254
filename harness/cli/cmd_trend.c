/* ppbench trend SUITE: each case of the suite's latest run against its own
 * history of nightly runs (harness/trend.h); exit 12 on a regression. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "suite.h"
#include "trend.h"
#include "trend_doc.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench trend SUITE.yaml|SUITE_NAME [--db PATH] [--since DATE] [--window N]\n"
            "                    [--baseline-db PATH|URL]\n\n"
            "Judges each case of the suite's latest run against the same case in earlier runs of\n"
            "the suite: median and MAD of a trailing window plus a step test, so one noisy night is\n"
            "an outlier, not a regression. Names the first run of a step.\n\n"
            "  --since DATE   only runs started at or after DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)\n"
            "  --window N     trailing runs in the reference (default 10)\n"
            "  --baseline-db PATH|URL  earlier nights from another database (fetched with libcurl\n"
            "                 and checked to be a ppbench database); their run ids print as base:N\n"
            "  --json FILE|-  the verdict as JSON (schema " PPB_TREND_SCHEMA ", docs/CLI.md)\n"
            "  --markdown FILE|-  the verdict as Markdown (with '-', the table goes to stderr)\n\n"
            "exit: 0 no regression, 12 some case regressed, 2 usage, 3 bad input, 4 runtime\n");
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
    ppb_store *baseline;    /* --baseline-db: older nights from another database, or NULL */
    const char *suite;
    const char *since;
    ppb_trend_options opt;
    ppb_trend_doc doc;      /* every judged case, for --json / --markdown */
    FILE *human;
    int rc;
    ppb_err *err;
} trend_ctx;

static int judge_case(void *ctx, const ppb_case *c, const ppb_result *r)
{
    (void)r;
    trend_ctx *t = ctx;
    history h = {0};
    int rc = PPB_OK;
    if (t->baseline) {
        h.prefix = "base:";
        rc = ppb_store_case_history(t->baseline, t->suite, c->key, t->since, add_point, &h, t->err);
    }
    h.prefix = "";
    int n_base = h.n;
    if (!rc)
        rc = ppb_store_case_history(t->s, t->suite, c->key, t->since, add_point, &h, t->err);
    ppb_trend_result res;
    if (!rc) {
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
            m++;
        }
        h.n = m;
        for (int i = 0; i < h.n; i++)
            h.pts[i].run_id = h.ids[i]; /* ids may have moved while growing */
        rc = ppb_trend_analyse(h.pts, h.n, &t->opt, &res, t->err);
    }
    if (!rc)
        rc = ppb_trend_doc_add(&t->doc, c->key, &res) ? ppb_fail(t->err, PPB_ENOMEM, "out of memory") : PPB_OK;
    if (!rc) {
        fprintf(t->human, "%-12s %+7.1f%% %8.1f  %-8s %s\n", ppb_trend_status_name(res.status),
               isfinite(res.rel_change) ? res.rel_change * 100 : 0.0,
               isfinite(res.score) ? res.score : 0.0, res.step_run_id[0] ? res.step_run_id : "-",
               strchr(c->key, ' ') ? strchr(c->key, ' ') + 1 : c->key);
        if (res.status == PPB_TREND_REGRESSION || res.status == PPB_TREND_IMPROVEMENT ||
            res.status == PPB_TREND_OUTLIER)
            fprintf(t->human, "             -> %s\n", res.reason);
    }
    free(h.pts);
    free(h.ids);
    free(h.when);
    t->rc = rc;
    return rc ? rc : 0;
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

int cmd_trend(int argc, char **argv)
{
    static const struct option longopts[] = {{"db", required_argument, NULL, 'd'},
                                             {"since", required_argument, NULL, 's'},
                                             {"window", required_argument, NULL, 'w'},
                                             {"baseline-db", required_argument, NULL, 'B'},
                                             {"json", required_argument, NULL, 'j'},
                                             {"markdown", required_argument, NULL, 'm'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *db = NULL, *baseline_db = NULL, *json = NULL, *md = NULL;
    trend_ctx t;
    memset(&t, 0, sizeof t);
    t.since = "";
    char since_utc[32] = "";
    ppb_trend_options_default(&t.opt);
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'd': db = optarg; break;
        case 's':
            if (ppb_cli_date("trend", "--since", optarg, since_utc, sizeof since_utc))
                return PPB_EXIT_USAGE;
            t.since = since_utc;
            break;
        case 'B': baseline_db = optarg; break;
        case 'j': json = optarg; break;
        case 'm': md = optarg; break;
        case 'w':
            t.opt.window = (int)strtol(optarg, &end, 10);
            if (*end || t.opt.window < 3) {
                fprintf(stderr, "ppbench trend: --window %s: expected an integer >= 3\n", optarg);
                return PPB_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_err err = {{0}};
    t.err = &err;
    /* A suite file names the suite; anything else is taken as the name. */
    char name[128];
    snprintf(name, sizeof name, "%s", argv[optind]);
    size_t len = strlen(argv[optind]);
    if (len > 5 && strcmp(argv[optind] + len - 5, ".yaml") == 0) {
        ppb_suite suite;
        if (ppb_suite_load(argv[optind], &suite, &err)) {
            fprintf(stderr, "ppbench trend: %s\n", err.msg);
            return PPB_EXIT_INPUT;
        }
        snprintf(name, sizeof name, "%s", suite.name);
        ppb_suite_free(&suite);
    }
    t.suite = name;
    t.human = (json && strcmp(json, "-") == 0) || (md && strcmp(md, "-") == 0) ? stderr : stdout;
    snprintf(t.doc.suite, sizeof t.doc.suite, "%s", name);
    t.doc.window = t.opt.window;
    ppb_store *s = ppb_cli_open_existing_store("trend", db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    t.s = s;
    char baseline_path[4096] = "";
    if (baseline_db) {
        int xrc = ppb_cli_open_baseline("trend", baseline_db, &t.baseline, baseline_path,
                                        sizeof baseline_path);
        if (xrc) {
            ppb_store_close(s);
            return xrc;
        }
    }
    int64_t latest = ppb_store_latest_run_of_suite(s, name);
    int rc = PPB_OK;
    if (latest <= 0) {
        rc = ppb_fail(&err, latest < 0 ? PPB_EIO : PPB_EINPUT, "no run of suite '%s' in the database",
                      name);
    } else {
        t.doc.latest_run = latest;
        fprintf(t.human, "suite %s: latest run %lld against its history (window %d)\n", name, (long long)latest,
                t.opt.window);
        fprintf(t.human, "%-12s %8s %8s  %-8s %s\n", "status", "change", "score", "step@", "case");
        rc = ppb_store_each_result(s, latest, judge_case, &t, &err);
    }
    if (rc)
        fprintf(stderr, "ppbench trend: %s\n", err.msg);
    else
        fprintf(t.human, "%d ok, %d regression, %d improvement, %d outlier, %d insufficient history\n",
                t.doc.counts[PPB_TREND_OK], t.doc.counts[PPB_TREND_REGRESSION], t.doc.counts[PPB_TREND_IMPROVEMENT],
                t.doc.counts[PPB_TREND_OUTLIER], t.doc.counts[PPB_TREND_INSUFFICIENT_HISTORY]);
    ppb_store_close(s);
    if (t.baseline)
        ppb_cli_close_baseline(t.baseline, baseline_db, baseline_path);
    int exit_code = rc ? (rc == PPB_EINPUT ? PPB_EXIT_INPUT : PPB_EXIT_RUNTIME)
                       : t.doc.counts[PPB_TREND_REGRESSION] ? PPB_EXIT_REGRESSION : PPB_EXIT_OK;
    trend_doc_ctx dc = {&t.doc, exit_code};
    if (!rc && (ppb_cli_write_doc("trend", json, trend_json, &dc) || ppb_cli_write_doc("trend", md, trend_markdown, &dc)))
        exit_code = PPB_EXIT_RUNTIME;
    ppb_trend_doc_free(&t.doc);
    return exit_code;
}
