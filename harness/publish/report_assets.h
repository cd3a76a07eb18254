/* Report assets compiled into the program (so a report needs nothing from the
 * source tree): reports/style.css and reports/style.gp, embedded at build time
 * by reports/embed.cmake into the build folder's generated/report_assets.c. */
#ifndef PPB_REPORT_ASSETS_H
#define PPB_REPORT_ASSETS_H

extern const char ppb_report_css[];            /* reports/style.css */
extern const char ppb_report_gnuplot_style[];  /* reports/style.gp */

#endif
