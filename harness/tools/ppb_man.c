/* ppb-man CLI.md VERSION OUT: the man page ppbench.1, made from docs/CLI.md at
 * build time, so the command line is written down once (docs/CLI.md) and the
 * man page cannot drift from it. A small Markdown subset, the one CLI.md uses:
 * headings, paragraphs, "- " lists, two-column tables (a row: the first cell
 * as the tag, the second as its text), ``` blocks, `code`, **bold** and
 * [links](...) (their text). Everything else is text, escaped for troff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inline Markdown of s[0..n) as troff on out. */
static void inline_text(FILE *out, const char *s, size_t n)
{
    int code = 0, bold = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '`') {
            code = !code;
            fputs(code ? "\\fB" : "\\fR", out);
            continue;
        }
        if (!code && c == '*' && i + 1 < n && s[i + 1] == '*') {
            bold = !bold;
            fputs(bold ? "\\fB" : "\\fR", out);
            i++;
            continue;
        }
        if (!code && c == '[') {   /* [text](target): the text */
            const char *close = memchr(s + i, ']', n - i);
            if (close && (size_t)(close - s) + 1 < n && close[1] == '(' && memchr(close, ')', n - (size_t)(close - s))) {
                inline_text(out, s + i + 1, (size_t)(close - s) - i - 1);
                i = (size_t)((const char *)memchr(close, ')', n - (size_t)(close - s)) - s);
                continue;
            }
        }
        if (c == '\\' && i + 1 < n && s[i + 1] == '|') {   /* a table's escaped pipe */
            fputc('|', out);
            i++;
            continue;
        }
        unsigned char u = (unsigned char)c;
        if (u >= 0xc0 && u < 0xf8) {   /* UTF-8: groff's \[uXXXX], which every device renders */
            int more = u >= 0xf0 ? 3 : u >= 0xe0 ? 2 : 1;
            unsigned cp = u & (0x3f >> more);
            for (int k = 0; k < more && i + 1 < n; k++)
                cp = cp << 6 | ((unsigned char)s[++i] & 0x3f);
            fprintf(out, "\\[u%04X]", cp);
        } else if (c == '\\')
            fputs("\\e", out);
        else if (c == '-')
            fputs("\\-", out);
        else
            fputc(c, out);
    }
    if (code || bold)
        fputs("\\fR", out);
}

/* A line of text: troff takes a leading '.' or '\'' as a request. */
static void text_line(FILE *out, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    if (n && (*s == '.' || *s == '\''))
        fputs("\\&", out);
    inline_text(out, s, n);
    fputc('\n', out);
}

/* The cells of "| a | b |": split at '|' not escaped by '\'. */
static int cells(const char *line, const char *cell[], size_t len[], int max)
{
    int n = 0;
    const char *p = line + 1, *start = p;
    for (; *p && *p != '\n'; p++) {
        if (*p == '|' && p[-1] != '\\') {
            if (n < max) {
                while (*start == ' ')
                    start++;
                size_t l = (size_t)(p - start);
                while (l && start[l - 1] == ' ')
                    l--;
                cell[n] = start, len[n] = l, n++;
            }
            start = p + 1;
        }
    }
    return n;
}

static void upper(FILE *out, const char *s)
{
    for (; *s && *s != '\n'; s++)
        fputc(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s, out);
    fputc('\n', out);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: ppb-man CLI.md VERSION OUT\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[3], "w");
    if (!in || !out) {
        fprintf(stderr, "ppb-man: cannot open %s\n", !in ? argv[1] : argv[3]);
        return 1;
    }
    fprintf(out, ".\\\" Made from docs/CLI.md by ppb-man (harness/tools/ppb_man.c): edit that file.\n"
                 ".TH PPBENCH 1 \"\" \"ppbench %s\" \"ppbench manual\"\n"
                 ".SH NAME\n"
                 "ppbench \\- judge LLM attention-kernel tuning changes from measurements\n"
                 ".SH SYNOPSIS\n"
                 ".B ppbench\n.I command\n[\\fIoptions\\fR]\n.br\n"
                 ".B ppbench help\n.I command\n"
                 ".SH DESCRIPTION\n",
            argv[2]);
    char line[8192];
    /* fresh: the next text line starts a paragraph (after a blank line, a heading, a table, a block) */
    int in_table = 0, in_code = 0, in_list = 0, header_rows = 0, fresh = 1;
    while (fgets(line, sizeof line, in)) {
        size_t n = strcspn(line, "\n");
        line[n] = '\0';
        if (strncmp(line, "```", 3) == 0) {
            fputs(in_code ? ".fi\n.RE\n" : ".PP\n.RS 4\n.nf\n", out);
            in_code = !in_code;
            fresh = 1;
            continue;
        }
        if (in_code) {
            text_line(out, line, n);
            continue;
        }
        if (line[0] == '|') {
            const char *cell[8];
            size_t len[8];
            int k = cells(line, cell, len, 8);
            if (!in_table)
                in_table = 1, header_rows = 0;
            fresh = 1;
            if (header_rows++ < 2)   /* the header and the --- row */
                continue;
            fputs(".TP\n", out);
            text_line(out, cell[0], k > 0 ? len[0] : 0);
            for (int c = 1; c < k; c++)
                text_line(out, cell[c], len[c]);
            continue;
        }
        in_table = 0;
        if (n == 0) {
            in_list = 0;
            fresh = 1;
            continue;
        }
        if (line[0] == '#' && line[1] == ' ')   /* the page's title: NAME says it */
            continue;
        if (strncmp(line, "## ", 3) == 0 || strncmp(line, "### ", 4) == 0) {
            int sub = line[2] == '#';
            fputs(sub ? ".SS " : ".SH ", out);
            if (sub)
                text_line(out, line + 4, n - 4);
            else
                upper(out, line + 3);
            fresh = 1, in_list = 0;
            continue;
        }
        if (line[0] == '-' && line[1] == ' ') {
            fputs(".IP \\(bu 2\n", out);
            text_line(out, line + 2, n - 2);
            in_list = 1, fresh = 0;
            continue;
        }
        if (fresh && !in_list)
            fputs(".PP\n", out);
        fresh = 0;
        text_line(out, line, n);   /* a paragraph's or a list item's next line */
    }
    fprintf(out, ".SH FILES\n"
                 ".TP\n.I PREFIX/share/ppbench/suites\n"
                 "The suites, target and model profiles and proposals ppbench ships; a suite or proposal that is not a "
                 "path is found there by name (\\fBppbench run smoke\\fR, \\fBppbench propose "
                 "cpu\\-seed\\-prefix\\-prefill\\fR).\n"
                 ".TP\n.I ./ppbench.db\n"
                 "The results database when neither \\fB\\-\\-db\\fR nor \\fBPPBENCH_DB\\fR names one.\n"
                 ".SH SEE ALSO\n"
                 "README.md and docs/*.md in PREFIX/share/doc/ppbench; \\fBpkg\\-config \\-\\-cflags "
                 "ppbench\\-kernel\\-abi\\fR for plugin authors (docs/KERNEL\\-ABI.md).\n");
    int bad = ferror(in) || fclose(out) != 0;
    fclose(in);
    if (bad) {
        fprintf(stderr, "ppb-man: could not write %s\n", argv[3]);
        return 1;
    }
    return 0;
}
