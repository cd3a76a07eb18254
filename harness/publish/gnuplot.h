/* Running gnuplot for report charts, safely: the program is found once (on
 * PATH, or $PPBENCH_GNUPLOT), run with a FIXED argument vector through fork/execv
 * (never a shell, never a command line built from input), in the chart
 * folder, on script files this program wrote. A missing gnuplot is a state,
 * not an error: the report says so and keeps its tables. The SVG gnuplot
 * writes is checked and rewritten before it is inlined into HTML. */
#ifndef PPB_GNUPLOT_H
#define PPB_GNUPLOT_H

#include <stddef.h>

#include "ppb_error.h"

typedef struct ppb_gnuplot {
    int available;
    char path[4096];      /* the executable that is run */
    char version[128];    /* first line of `gnuplot --version` */
    char why[512];        /* when not available: why, in one line */
} ppb_gnuplot;

/* Find gnuplot and ask its version. `program`: NULL reads $PPBENCH_GNUPLOT (unset:
 * "gnuplot"; set but empty: charts off); a name without '/' is looked up on
 * PATH, a path must be an executable file. Never fails: available = 0 and
 * `why` say what is missing. */
void ppb_gnuplot_detect(ppb_gnuplot *gp, const char *program);

/* Run `gnuplot -d SCRIPT...` (-d: no ~/.gnuplot, so the output does not depend
 * on who runs it) with the working directory `dir`; stdout and stderr go to
 * dir/log_name. Script names are relative to dir and come from this program.
 * PPB_EFAIL when gnuplot could not start, exited non-zero (the message quotes
 * the log's first error line) or ran past timeout_s (then it is killed). */
int ppb_gnuplot_run(const ppb_gnuplot *gp, const char *dir, const char *const *scripts,
                    int n_scripts, const char *log_name, int timeout_s, ppb_err *err);

/* A gnuplot single-quoted string literal of `text`, keeping letters, digits,
 * space and _ = . , : / + - ( ) % # [ ] * | ; anything else becomes '?', so a
 * label can neither end the string nor add a command, and nothing in it means
 * markup once it reaches the SVG. */
void ppb_gnuplot_string(const char *text, char *buf, size_t len);

/* An SVG as gnuplot wrote it, made fit to inline in HTML: the XML prolog and
 * DOCTYPE dropped, every id (and each #reference to one) prefixed with
 * `id_prefix` so several charts can share a page, and refused (PPB_EINPUT)
 * when it holds anything active or external: script, foreignObject, event
 * handler attributes, javascript:, links other than #fragments, url() other
 * than url(#...), style sheets, entities. *out is malloc'd. */
int ppb_svg_inline(const char *svg, const char *id_prefix, char **out, ppb_err *err);
/* The same, reading the file. */
int ppb_svg_inline_file(const char *path, const char *id_prefix, char **out, ppb_err *err);

#endif
