/* The report's charts (report_charts.c), over the model of report_model.h. */
#ifndef PPB_REPORT_CHARTS_H
#define PPB_REPORT_CHARTS_H

#include "ppb_error.h"
#include "report_model.h"

/* Write every chart's .dat and .gp, run gnuplot, inline the SVGs. Failures
 * are recorded per chart; only file errors fail. */
int rp_charts_make(rp_report *r, ppb_err *err);

#endif
