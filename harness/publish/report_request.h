/* What `ppbench report` is asked for: the kind of report and its request.
 * Apart from report.h so that the report's model (report_model.h), which the
 * charts and the page read, can hold the request without depending on the
 * module that gathers it. */
#ifndef PPB_REPORT_REQUEST_H
#define PPB_REPORT_REQUEST_H

#include <stdint.h>

typedef enum {
    PPB_REPORT_RUN = 0,
    PPB_REPORT_PROPOSAL = 1,
    PPB_REPORT_TREND = 2,
} ppb_report_kind;

typedef struct ppb_report_request {
    int kind;                  /* ppb_report_kind */
    int64_t id;                /* RUN / PROPOSAL: the id (already resolved from "latest") */
    char suite[128];           /* TREND: the suite's name as stored with its runs */
    char since[32];            /* TREND: only runs started at or after this ("" = all) */
    int window;                /* TREND: reference runs (0 = the trend default) */
    char out_dir[4096];        /* created when missing */
    char db_path[4096];        /* the database, for the command that reproduces the report */
    const char *suites_dir;    /* where targets/ lives; NULL: beside the run's suite file, else
                                  PPB_SOURCE_DIR/suites */
    const char *gnuplot;       /* NULL: $PPBENCH_GNUPLOT, else gnuplot on PATH (gnuplot.h) */
} ppb_report_request;

#endif
