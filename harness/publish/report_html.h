/* The report's page (report_html.c), over the model of report_model.h. */
#ifndef PPB_REPORT_HTML_H
#define PPB_REPORT_HTML_H

#include "ppb_error.h"
#include "report_model.h"

/* Write the self-contained HTML page of the report to `path`. */
int rp_html_write(const rp_report *r, const char *path, ppb_err *err);

#endif
