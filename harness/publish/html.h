/* A small HTML writer for reports. Two kinds of output only:
 *  - markup: tags and attribute names written by this program. The macros take
 *    a string LITERAL ("" x "" does not compile for a variable), so text from a
 *    suite, a label or the database can never reach the page as markup;
 *  - text and attribute values: always escaped (& < > " '), control characters
 *    and invalid UTF-8 replaced.
 * The one exception is ppb_html_svg, for a chart that ppb_svg_inline
 * (gnuplot.h) rendered and checked. Write errors are sticky: check once at the
 * end with ppb_html_finish. */
#ifndef PPB_HTML_H
#define PPB_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "ppb_error.h"

typedef struct ppb_html {
    FILE *out;
    int failed;       /* a write failed */
} ppb_html;

void ppb_html_init(ppb_html *h, FILE *out);
/* 0, or PPB_EIO when any write failed (flushes first). */
int ppb_html_finish(ppb_html *h, ppb_err *err);

/* Markup from this program: `literal` must be a string literal. */
#define ppb_html_markup(h, literal) ppb_html_markup_literal_((h), "" literal "")
void ppb_html_markup_literal_(ppb_html *h, const char *markup);

/* Escaped text; NULL writes nothing. */
void ppb_html_text(ppb_html *h, const char *text);
/* printf, then escaped as text (the format is ours; the arguments may be anything). */
void ppb_html_textf(ppb_html *h, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ` name="escaped value"`, inside an open tag. */
#define ppb_html_attr(h, name, value) ppb_html_attr_((h), "" name "", (value))
void ppb_html_attr_(ppb_html *h, const char *name, const char *value);
#define ppb_html_attrf(h, name, ...) ppb_html_attrf_((h), "" name "", __VA_ARGS__)
void ppb_html_attrf_(ppb_html *h, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* <tag>escaped text</tag>, and the same with a class attribute. */
#define ppb_html_element(h, tag, text) ppb_html_element_((h), "" tag "", NULL, (text))
#define ppb_html_element_class(h, tag, cls, text) \
    ppb_html_element_((h), "" tag "", "" cls "", (text))
void ppb_html_element_(ppb_html *h, const char *tag, const char *cls, const char *text);

/* <style>css</style> for the style sheet compiled into the program
 * (report_assets.h); nothing is written, and the writer fails, if the text
 * could end the element ("</style"). */
void ppb_html_style_sheet(ppb_html *h, const char *css);

/* An inline <svg> produced by ppb_svg_inline (already checked and rewritten). */
void ppb_html_svg(ppb_html *h, const char *checked_svg);

/* Escape into a buffer (for tests and callers that build strings); returns the
 * length the full escape needs, like snprintf. */
size_t ppb_html_escape(const char *text, char *buf, size_t len);
/* An id / fragment from any text: lower-case letters, digits and '-' only,
 * never empty ("x" when nothing is left). */
void ppb_html_slug(const char *text, char *buf, size_t len);

#endif
