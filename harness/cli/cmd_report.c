/* ppbench report: write the HTML report of a run, a proposal or a suite's
 * trend, then a short summary on the terminal (docs/REPORTS.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "html.h"
#include "report.h"
#include "suite.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench report RUN|latest [-o DIR] [--db PATH]\n"
            "       ppbench report --proposal ID|latest [-o DIR] [--db PATH]\n"
            "       ppbench report --trend SUITE [--since DATE] [--window N] [-o DIR] [--db PATH]\n"
            "\n"
            "Writes DIR/index.html (self-contained: CSS inline, charts as inline SVG) and\n"
            "DIR/charts/ (each chart as PNG, with the .gp and .dat files that draw it).\n"
            "Default DIR: reports/out/run-ID, reports/out/proposal-ID, reports/out/trend-SUITE.\n"
            "  --trend SUITE   the suite's name (or its .yaml file): each case's history\n"
            "  --since DATE    only runs started on or after DATE (YYYY-MM-DD[THH:MM:SSZ])\n"
            "  --window N      reference runs of the trend test (default 10)\n"
            "Charts need gnuplot (apt-get install gnuplot-nox); PPBENCH_GNUPLOT=PATH picks the\n"
            "program, PPBENCH_GNUPLOT= (empty) turns charts off. Without it the tables are\n"
            "complete.\n\n"
            "exit: 0 written; 1 written, of a run that timed no case (its verdict: NOT TIMED);\n"
            "      2 usage, 3 bad input, 4 runtime\n");
}

/* YYYY-MM-DD, optionally followed by the rest of an ISO 8601 time. */
/* A suite given as its file: the name the runs are stored under. */
static int suite_name_of(const char *arg, char *name, size_t len, ppb_err *err)
{
    size_t n = strlen(arg);
    int is_file = (n > 5 && strcmp(arg + n - 5, ".yaml") == 0) || strchr(arg, '/');
    if (!is_file) {
        snprintf(name, len, "%s", arg);
        return PPB_OK;
    }
    ppb_suite suite;
    int rc = ppb_suite_load(ppb_cli_suite_arg(arg, ""), &suite, err);
    if (rc)
        return rc;
    snprintf(name, len, "%s", suite.name);
    ppb_suite_free(&suite);
    return PPB_OK;
}

static void print_summary(const ppb_report_request *req, const ppb_report_outcome *o)
{
    printf("ppbench report: %s\n", o->headline[0] ? o->headline : o->verdict);
    printf("  verdict  %s\n", o->verdict);
    printf("  report   %s\n", o->html_path);
    if (o->gnuplot_available && o->n_charts_failed)
        printf("  charts   %d drawn, %d failed (the page says why; PNG, .gp and .dat in %s); %s\n",
               o->n_charts, o->n_charts_failed, o->charts_dir, o->gnuplot_note);
    else if (o->gnuplot_available)
        printf("  charts   %d drawn (PNG, .gp and .dat in %s); %s\n", o->n_charts, o->charts_dir,
               o->gnuplot_note);
    else
        printf("  charts   none drawn: %s (.gp and .dat in %s; tables complete)\n",
               o->gnuplot_note, o->charts_dir);
    const char *what = req->kind == PPB_REPORT_TREND ? "cases in the trend" : "cases";
    printf("  %d %s\n", o->n_cases, what);
    if (o->n_worst) {
        printf("worst cases (%s):\n", o->worst_title);
        for (int i = 0; i < o->n_worst; i++)
            printf("  %s\n", o->worst[i]);
    }
}

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB, {"output", required_argument, NULL, 'o'}, {"proposal", required_argument, NULL, 'p'},
        {"trend", required_argument, NULL, 't'}, {"since", required_argument, NULL, 's'},
        {"window", required_argument, NULL, 'w'}, PPB_CLI_OPT_HELP_END};
    const char *db = NULL, *out = NULL, *proposal = NULL, *trend = NULL, *since = NULL;
    int window = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'o': out = optarg; break;
        case 'p': proposal = optarg; break;
        case 't': trend = optarg; break;
        case 's': since = optarg; break;
        case 'w': {
            char *end = NULL;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 1000) {
                fprintf(stderr, "ppbench report: --window wants a number of runs, 1 to 1000\n");
                return PPB_EXIT_USAGE;
            }
            window = (int)v;
            break;
        }
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    int positional = argc - optind;
    int modes = (proposal != NULL) + (trend != NULL) + (positional > 0);
    if (modes != 1 || positional > 1) {
        if (modes > 1)
            fprintf(stderr, "ppbench report: give one of RUN, --proposal ID or --trend SUITE\n");
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if ((since || window) && !trend) {
        fprintf(stderr, "ppbench report: --since and --window go with --trend\n");
        return PPB_EXIT_USAGE;
    }
    char since_utc[32] = "";
    if (since && ppb_cli_date("report", "--since", since, since_utc, sizeof since_utc))
        return PPB_EXIT_USAGE;
    if (out && !out[0]) {
        fprintf(stderr, "ppbench report: -o wants a folder\n");
        return PPB_EXIT_USAGE;
    }

    ppb_report_request *req = calloc(1, sizeof *req);
    ppb_report_outcome *outcome = calloc(1, sizeof *outcome);
    ppb_err err = {{0}};
    int rc = PPB_OK;
    ppb_store *s = NULL;
    if (!req || !outcome) {
        rc = ppb_fail(&err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    snprintf(req->db_path, sizeof req->db_path, "%s", ppb_store_default_path(db));
    if (trend) {
        req->kind = PPB_REPORT_TREND;
        rc = suite_name_of(trend, req->suite, sizeof req->suite, &err);
        if (rc)
            goto end;
        snprintf(req->since, sizeof req->since, "%s", since_utc);
        req->window = window;
    }
    s = ppb_cli_open_readonly_store("report", db);
    if (!s) {
        free(req);
        free(outcome);
        return PPB_EXIT_RUNTIME;
    }
    if (proposal) {
        req->kind = PPB_REPORT_PROPOSAL;
        if (strcmp(proposal, "latest") == 0) {
            req->id = ppb_store_latest_proposal(s);
            if (req->id <= 0) {
                rc = ppb_fail(&err, PPB_EINPUT, "the database holds no proposal");
                goto end;
            }
        } else {
            char *end = NULL;
            long long v = strtoll(proposal, &end, 10);
            if (!*proposal || *end || v <= 0) {
                rc = ppb_fail(&err, PPB_EINPUT, "'%s' is not a proposal id (a number, or "
                                                "'latest')",
                              proposal);
                goto end;
            }
            req->id = v;
        }
    } else if (!trend) {
        req->kind = PPB_REPORT_RUN;
        rc = ppb_cli_run_id(s, argv[optind], &req->id, &err);
        if (rc)
            goto end;
    }
    if (out) {
        snprintf(req->out_dir, sizeof req->out_dir, "%s", out);
    } else if (req->kind == PPB_REPORT_TREND) {
        char slug[128];
        ppb_html_slug(req->suite, slug, sizeof slug);
        snprintf(req->out_dir, sizeof req->out_dir, "reports/out/trend-%s", slug);
    } else {
        snprintf(req->out_dir, sizeof req->out_dir, "reports/out/%s-%lld",
                 req->kind == PPB_REPORT_PROPOSAL ? "proposal" : "run", (long long)req->id);
    }

    rc = ppb_report_write(s, req, outcome, &err);
    if (!rc) {
        print_summary(req, outcome);
        if (!outcome->gnuplot_available)
            fprintf(stderr, "ppbench report: warning: %s; the report has no charts (install "
                            "gnuplot: apt-get install gnuplot-nox)\n",
                    outcome->gnuplot_note);
    }
end:
    if (rc)
        fprintf(stderr, "ppbench report: %s\n", err.msg);
    /* A report of a run that measured nothing is written, and says so in its exit
     * code as `run` did (1), so a CI step cannot take it for a pass. */
    int nothing_timed = !rc && strcmp(outcome->verdict, "NOT TIMED") == 0;
    ppb_store_close(s);
    free(req);
    free(outcome);
    return nothing_timed ? PPB_EXIT_FAILURES : ppb_cli_exit(rc);
}
