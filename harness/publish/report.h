/* `ppbench report`: a folder with one self-contained HTML page (CSS inline,
 * charts as inline SVG from gnuplot, nothing loaded from anywhere) for a run, a
 * proposal verdict or a suite's nightly trend, plus each chart as PNG with the
 * .gp and .dat files that re-render it. What the page shows and why:
 * docs/REPORTS.md. The model is gathered from the store (report.c), charts are
 * written by report_charts.c, the page by report_html.c. */
#ifndef PPB_REPORT_H
#define PPB_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ppb_error.h"
#include "report_request.h"
#include "store.h"

#define PPB_REPORT_MAX_WORST 5

/* What the terminal summary prints. */
typedef struct ppb_report_outcome {
    char html_path[4200];
    char charts_dir[4200];
    char verdict[32];          /* run: PASS / FAIL / INCOMPLETE; proposal: ACCEPT / REJECT /
                                  INCONCLUSIVE; trend: OK / REGRESSION / IMPROVEMENT
                                  / NO HISTORY */
    char headline[512];        /* the verdict's first reason */
    int n_cases;
    int n_charts, n_charts_failed;
    int gnuplot_available;
    char gnuplot_note[512];    /* version, or why there are no charts */
    char worst_title[96];      /* what the worst list holds */
    int n_worst;
    char worst[PPB_REPORT_MAX_WORST][600];
} ppb_report_outcome;

/* Gather, render the charts, write the page. Unknown run / proposal / suite:
 * PPB_EINPUT; database or file errors: PPB_EIO. A missing gnuplot or a chart
 * that fails to render is not an error: the page says so. */
int ppb_report_write(ppb_store *s, const ppb_report_request *req, ppb_report_outcome *out,
                     ppb_err *err);

/* The command line that writes this report again (ids resolved, arguments
 * quoted for a POSIX shell). */
void ppb_report_command(const ppb_report_request *req, char *buf, size_t len);

/* Quote one argument for a POSIX shell ('...' with ' as '\''), only when it
 * needs it. */
void ppb_shell_quote(const char *arg, char *buf, size_t len);

#endif
