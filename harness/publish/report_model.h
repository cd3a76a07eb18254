/* The report's model: what report.c gathers from the store and decides, and
 * the lookups on it that report_charts.c (charts) and report_html.c (the page)
 * share. Those two read the model only, never report.c, so the report's
 * modules depend one way: report -> {report_charts, report_html} -> report_model.
 * Not for other modules. */
#ifndef PPB_REPORT_MODEL_H
#define PPB_REPORT_MODEL_H

#include <stdint.h>

#include "case.h"
#include "gnuplot.h"
#include "report_request.h"
#include "result.h"
#include "store.h"
#include "target.h"
#include "trend.h"
#include "trend_pool.h"

/* Charts shown per kernel against sequence length (the shape groups with most
 * points), and trend charts per report: the tables always hold everything. */
#define RP_MAX_FAMILY_CHARTS 12
#define RP_MAX_TREND_CHARTS 60
/* The trend overview: the last nights as columns (a month of nightly runs fits
 * a screen), and at most this many cases as rows of its chart (the HTML table
 * has every case). Labelled tics per history chart: more would overlap. */
#define RP_OVERVIEW_NIGHTS 30
#define RP_OVERVIEW_MAX_CHART_ROWS 250
#define RP_TREND_TICS 8

enum { RP_SIDE_RUN = 0, RP_SIDE_CANDIDATE = 0, RP_SIDE_BASELINE = 1 };

/* One stored result (samples not kept) and the labels the page groups it by. */
typedef struct rp_item {
    ppb_case c;
    ppb_result r;              /* samples_ms is NULL */
    int side;                  /* RP_SIDE_* */
    int number;                /* 1-based row number in the page's tables and charts */
    char series[192];          /* config fields that vary ("bm=64 w=4"); proposals: side first */
    char shape[256];           /* shape fields that vary */
    char family[256];          /* shape without the length axis: one line of the time charts */
    double length;             /* x of the time charts: prefill context_len + query_len; seq_len */
} rp_item;

typedef struct rp_env {
    char key[256];
    char value[1024];
} rp_env;

typedef struct rp_trend_case {
    char key[PPB_CASE_KEY_MAX];
    ppb_history_point *points;  /* runs with a usable median, oldest first */
    int n_points;
    int n_unusable;             /* runs of this case without a median (failed, refused) */
    int analysed;
    ppb_trend_result trend;
    char error[256];            /* why it was not analysed */
    int chart;                  /* index into the chart list, -1 if none */
    double baseline;            /* the overview's reference: the trend's reference median, else
                                   (too little history) the median of the case's runs; 0: none */
} rp_trend_case;

/* One run of the trend's suite ("a night"), oldest first: a column of the
 * overview, and what a history chart's tics name (date and commit). */
typedef struct rp_night {
    int64_t run_id;
    char started_at[32];
    char commit[64];            /* as stored with the run; may be anything */
} rp_night;

/* Change classes of the overview, shared by its chart (colour) and table
 * (CSS class): beyond twice the trend's min_change, beyond it, within it. */
enum { RP_CHANGE_FASTER2 = -2, RP_CHANGE_FASTER = -1, RP_CHANGE_FLAT = 0, RP_CHANGE_SLOWER = 1,
       RP_CHANGE_SLOWER2 = 2 };

/* One cell of the overview: a case's median in a night against its baseline. */
typedef struct rp_cell {
    double median_ms;
    double change;              /* median / baseline - 1 */
    int bucket;                 /* RP_CHANGE_* */
    int alert;                  /* the run is part of the case's alert (step or outlier) */
    char text[16];              /* the change in whole percent, as both show it */
} rp_cell;

typedef struct rp_feasibility {
    char series[192];
    int kernel;
    int feasible, blocks_per_sm;
    char limiter[32];
    char reason[1024];
    char flips[512];
    int n_cases;
    char shapes[600];           /* the first few shapes it applies to */
} rp_feasibility;

typedef struct rp_chart {
    char name[96];              /* file stem: [a-z0-9-] */
    char title[320];            /* lines apart by '\n' (the PNG's title; the page shows it as one line) */
    char note[600];             /* shown under the chart */
    char error[600];            /* why it is missing */
    char *svg;                  /* checked inline SVG, NULL when not rendered */
} rp_chart;

typedef struct rp_report {
    const ppb_report_request *req;
    int kind;

    ppb_run_info run;           /* the run; proposal: the candidate run; trend: the latest run */
    int have_run;
    char timing[32];            /* trend: how the latest run was timed (ppb_store_run_timing) */
    ppb_run_time run_time;      /* a run report: where its time went */
    int have_run_time;
    ppb_run_info base_run;      /* proposal: the baseline run */
    int have_base_run;
    rp_env *env, *base_env;
    int n_env, n_base_env;

    rp_item *items;
    int n_items, cap_items;

    ppb_proposal_record proposal;
    ppb_proposal_case *pcases;
    int n_pcases, cap_pcases;

    rp_trend_case *trend;
    int n_trend, cap_trend;
    ppb_trend_pooled pooled[PPB_TREND_POOLS];   /* each kernel's cases pooled (trend_pool.h) */
    int n_pooled;
    ppb_trend_options trend_opt;
    rp_night *nights;           /* every run of the suite in the history, oldest first */
    int n_nights, cap_nights;
    int overview_from;          /* first night the overview shows */

    int have_target;            /* some result carries a judgement on the target */
    char target_note[1200];     /* the profile judged against, or why no table */
    char target_description[256];
    ppb_target ceilings;        /* roofline */
    int have_ceilings;
    char ceilings_note[1200];

    rp_feasibility *feas;
    int n_feas, cap_feas;

    char fixed[512];            /* fields every case shares ("d=64 page=16") */
    char verdict[32];
    char verdict_class[16];     /* good, bad, warn */
    char reasons[PPB_PROPOSAL_REASONS_MAX + 4096];   /* the stored reasons and the report's own lines */

    ppb_gnuplot gp;
    rp_chart *charts;
    int n_charts, cap_charts;
    char charts_dir[4200];
    char command[8192];
    char generated_at[32];
} rp_report;

/* Case labels that tell cases apart: only the fields that take more than one
 * value among them (the rest is said once, or is in the full key). */
/* varies[f] = 1 for each field with more than one value among the n cases. */
void rp_fields_varying(const ppb_case *const *cases, int n, int varies[PPB_F_COUNT]);
/* Append "name=value" of field f to buf (space-separated), as the key writes it. */
void rp_append_field(char *buf, size_t len, int f, int value);
/* The fields of c's kernel that vary, in key order ("q=17 ctx=37"); "" when none. */
void rp_case_label(const ppb_case *c, const int varies[PPB_F_COUNT], char *buf, size_t len);

/* Items that carry a usable time. */
int rp_item_timed(const rp_item *it);
/* The kernels present in the items, as a bit set of 1 << ppb_kernel_kind. */
unsigned rp_kernels(const rp_report *r);
/* Row number of the proposal case's candidate / baseline items, NULL if none. */
const rp_item *rp_find_item(const rp_report *r, int side, const char *key);

/* The night of a run id, NULL if not among them. */
const rp_night *rp_night_of(const rp_report *r, int64_t run_id);
/* A night's labels: "MM-DD" of its start and the commit's first 7 characters
 * ("-" when none was stored). Raw text: escape for where it goes. */
void rp_night_labels(const rp_night *n, char *day, size_t day_len, char *commit, size_t commit_len);
/* First point of a trend case that its alert covers (the step's first run, or
 * the outlier: the latest), -1 when it has no alert. */
int rp_trend_alert_from(const rp_trend_case *t);
/* What a change class covers, for the chart's colour box and the table's
 * legend ("+5% to +10%"). */
void rp_change_label(int bucket, double min_change, char *buf, size_t len);
/* The overview cell of trend case `row` in night `night`: 1 and *cell filled
 * when the case has a time that night and a baseline, else 0. */
int rp_overview_cell(const rp_report *r, int row, int night, rp_cell *cell);

/* The chart with that name, or NULL (the page places charts by name). */
const rp_chart *rp_chart_named(const rp_report *r, const char *name);

#endif
