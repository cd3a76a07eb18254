/* Text in what ppbench writes for machines, pull requests and terminals: JSON
 * strings and numbers, Markdown table cells, terminal lines. One rule each,
 * for every writer. */
#ifndef PPB_DOC_TEXT_H
#define PPB_DOC_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Shortest decimal text that reads back as exactly x (at most 17 digits). */
void ppb_format_double_exact(double x, char *buf, size_t cap);
/* A number for people, in a bounded width: "%.*f" while |v| < 1e5, else
 * three significant digits ("1.23e+200"), and "inf", "-inf" or "nan", so a
 * degenerate interval cannot print hundreds of digits or push the rest of a
 * line out of its buffer. */
void ppb_format_fixed(char *buf, size_t len, double v, int decimals);
/* A time ratio and its interval, "R [LO, HI]", each as ppb_format_fixed(.., 4). */
void ppb_format_interval(char *buf, size_t len, double r, double lo, double hi);
/* RFC 8259: quote, backslash and control characters escaped (\b \f \n \r \t in
 * their short form, as SQLite's JSON functions write them; the rest \u00XX). */
void ppb_json_string(FILE *out, const char *s);
/* Exact, or null for NaN and infinities (JSON has neither). */
void ppb_json_number(FILE *out, double v);
/* Prose in a Markdown table cell or list item (a PR comment): HTML's < > &
 * as entities and Markdown's punctuation backslash-escaped, so a proposal name
 * or a reason cannot open a tag, a link or an image, hide text or end the cell
 * ('|') or the row (a line break, written as a space). */
void ppb_md_text(FILE *out, const char *s);
/* Inside a `code span` (case keys): backslashes do not escape there, so '`'
 * becomes ' and a line break a space; '|' is still escaped (a table cell). */
void ppb_md_code(FILE *out, const char *s);
/* For a terminal, in place: control characters (ESC, BEL, CR, ...) in text
 * that came from a file or the database become '?', so it cannot move the
 * cursor or recolour the screen; keep_newlines keeps '\n' (multi-line reasons). */
void ppb_term_clean(char *s, int keep_newlines);
/* Prose for a terminal, wrapped: each line starts with `indent` spaces (the
 * first with `lead` instead, when not NULL: "    why: ") and breaks at the
 * last space before `width` columns; a word longer than a line is not cut. */
void ppb_term_wrap(FILE *out, const char *lead, int indent, int width, const char *text);

#endif
