/* A trend verdict as documents for CI: JSON (schema "ppbench-trend/1",
 * docs/CLI.md) and Markdown (a job summary), with the notes on how the latest
 * run was measured (measured.h). Filled by `ppbench trend` case by case as it
 * judges them. */
#ifndef PPB_TREND_DOC_H
#define PPB_TREND_DOC_H

#include <stdint.h>
#include <stdio.h>

#include "case.h"
#include "measured.h"
#include "trend.h"
#include "trend_pool.h"

#define PPB_TREND_SCHEMA "ppbench-trend/1"

typedef struct ppb_trend_row {
    char key[PPB_CASE_KEY_MAX];
    ppb_trend_result res;
} ppb_trend_row;

typedef struct ppb_trend_doc {
    char suite[128];
    int64_t latest_run;
    ppb_measured measured;                /* how the latest run was measured (CPU timings, the load) */
    int window;
    int history_left_out;                 /* the suite's runs the histories left out: timed another way */
    char timing[32];                      /* how the latest run was timed (ppb_store_run_timing; "": not recorded) */
    int counts[PPB_TREND_STATUS_COUNT];   /* by ppb_trend_status */
    ppb_trend_row *rows;
    int n, cap;
    ppb_trend_pooled pooled[PPB_TREND_POOLS];   /* each kernel with enough cases, pooled (trend_pool.h) */
    int n_pooled;
} ppb_trend_doc;

/* The verdict's word: "REGRESSION" when a case or a pooled group regressed, else "NOT TIMED"
 * when the latest run timed no case (a night that measured nothing is never a
 * pass), else "no regression". The JSON, the Markdown and the exit code follow it. */
const char *ppb_trend_doc_verdict(const ppb_trend_doc *d);

/* The note on runs left out of the histories (history_left_out > 0), in every
 * document's words; "" when none was. */
void ppb_trend_doc_left_out_note(const ppb_trend_doc *d, char *buf, size_t len);

/* Append a judged case (and count it); PPB_ENOMEM when the list cannot grow. */
int ppb_trend_doc_add(ppb_trend_doc *d, const char *key, const ppb_trend_result *res);
/* 1 when some pooled group regressed. */
int ppb_trend_doc_pooled_regressed(const ppb_trend_doc *d);
void ppb_trend_doc_free(ppb_trend_doc *d);
/* The writer checks the stream (ppb_cli_write_doc). */
void ppb_trend_doc_json(const ppb_trend_doc *d, int exit_code, FILE *out);
void ppb_trend_doc_markdown(const ppb_trend_doc *d, FILE *out);

#endif
