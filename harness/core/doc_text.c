#include "doc_text.h"

#include <string.h>

#include <math.h>
#include <stdlib.h>

void ppb_format_double_exact(double x, char *buf, size_t cap)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

void ppb_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    static const char short_escape[0x20] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 && short_escape[*p])
            fprintf(out, "\\%c", short_escape[*p]);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void ppb_json_number(FILE *out, double v)
{
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    char buf[32];
    ppb_format_double_exact(v, buf, sizeof buf);
    fputs(buf, out);
}

void ppb_format_fixed(char *buf, size_t len, double v, int decimals)
{
    if (isnan(v))
        snprintf(buf, len, "nan");
    else if (isinf(v))
        snprintf(buf, len, v > 0 ? "inf" : "-inf");
    else if (fabs(v) < 1e5)
        snprintf(buf, len, "%.*f", decimals, v);
    else
        snprintf(buf, len, "%.3g", v);
}

void ppb_format_interval(char *buf, size_t len, double r, double lo, double hi)
{
    char a[32], b[32], c[32];
    ppb_format_fixed(a, sizeof a, r, 4);
    ppb_format_fixed(b, sizeof b, lo, 4);
    ppb_format_fixed(c, sizeof c, hi, 4);
    snprintf(buf, len, "%s [%s, %s]", a, b, c);
}

void ppb_md_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '&')
            fputs("&amp;", out);
        else if (strchr("\\`*_[]()#!|~", c))
            fprintf(out, "\\%c", c);
        else if (c == '\n' || c == '\r' || c == '\t')
            fputc(' ', out);
        else
            fputc(c < 0x20 || c == 0x7f ? '?' : c, out);
    }
}

void ppb_md_code(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '|')
            fputs("\\|", out);
        else
            fputc(c == '`' ? '\'' : c < 0x20 || c == 0x7f ? ' ' : c, out);
    }
}

void ppb_term_clean(char *s, int keep_newlines)
{
    for (unsigned char *p = (unsigned char *)s; *p; p++)
        if ((*p < 0x20 && !(keep_newlines && *p == '\n')) || *p == 0x7f)
            *p = '?';
}

void ppb_term_wrap(FILE *out, const char *lead, int indent, int width, const char *text)
{
    int col = lead ? fprintf(out, "%s", lead) : fprintf(out, "%*s", indent, ""), on_line = 0;
    for (const char *p = text; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        int word = (int)strcspn(p, " ");
        if (on_line && col + 1 + word > width) {   /* the next line; a line holds at least one word */
            col = fprintf(out, "\n%*s", indent, "") - 1;
            on_line = 0;
        }
        col += fprintf(out, "%s%.*s", on_line ? " " : "", word, p);
        on_line = 1;
        p += word;
    }
    fputc('\n', out);
}
