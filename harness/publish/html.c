/* The HTML writer (html.h): markup only from literals, everything else escaped. */
#include "html.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char replacement[] = "\xEF\xBF\xBD";   /* U+FFFD */

/* Length of a valid UTF-8 sequence at p (2..4), or 0: overlong forms,
 * surrogates and code points past U+10FFFF are invalid (RFC 3629). */
static int utf8_sequence(const unsigned char *p)
{
    unsigned char c = p[0];
    int n;
    unsigned long cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)   /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

typedef void (*emit_fn)(void *ctx, const char *s, size_t n);

static void escape_with(const char *text, emit_fn emit, void *ctx)
{
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        /* Runs of plain characters go out in one piece. */
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x7F && *p != '&' && *p != '<' && *p != '>' && *p != '"' &&
               *p != '\'')
            p++;
        if (p > run)
            emit(ctx, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        switch (*p) {
        case '&': emit(ctx, "&amp;", 5); p++; continue;
        case '<': emit(ctx, "&lt;", 4); p++; continue;
        case '>': emit(ctx, "&gt;", 4); p++; continue;
        case '"': emit(ctx, "&quot;", 6); p++; continue;
        case '\'': emit(ctx, "&#39;", 5); p++; continue;
        case '\t': case '\n': case '\r': emit(ctx, (const char *)p, 1); p++; continue;
        default: break;
        }
        if (*p < 0x80) {   /* other control characters, DEL */
            emit(ctx, replacement, 3);
            p++;
            continue;
        }
        int n = utf8_sequence(p);
        if (n) {
            emit(ctx, (const char *)p, (size_t)n);
            p += n;
        } else {
            emit(ctx, replacement, 3);
            p++;
        }
    }
}

static void emit_file(void *ctx, const char *s, size_t n)
{
    ppb_html *h = ctx;
    if (n && fwrite(s, 1, n, h->out) != n)
        h->failed = 1;
}

typedef struct buf_sink {
    char *buf;
    size_t len, used, kept;
    int full;
} buf_sink;

/* Entities and multi-byte characters are never cut: a truncated escape ends
 * before the piece that does not fit (plain ASCII runs may be cut anywhere). */
static void emit_buf(void *ctx, const char *s, size_t n)
{
    buf_sink *b = ctx;
    b->used += n;
    if (b->full || !b->len)
        return;
    size_t room = b->len - 1 - b->kept, k = n;
    if (n > room) {
        b->full = 1;
        if (s[0] == '&' || (unsigned char)s[0] >= 0x80)
            return;
        k = room;
    }
    memcpy(b->buf + b->kept, s, k);
    b->kept += k;
    b->buf[b->kept] = '\0';
}

size_t ppb_html_escape(const char *text, char *buf, size_t len)
{
    buf_sink b = {buf, len, 0, 0, 0};
    if (len)
        buf[0] = '\0';
    if (text)
        escape_with(text, emit_buf, &b);
    return b.used;
}

void ppb_html_slug(const char *text, char *buf, size_t len)
{
    size_t o = 0;
    int dash = 0;
    if (!len)
        return;
    for (const char *p = text ? text : ""; *p && o + 1 < len; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (dash && o > 0) {
                if (o + 2 >= len)
                    break;   /* no room for "-c": stop rather than join words */
                buf[o++] = '-';
            }
            buf[o++] = c;
            dash = 0;
        } else {
            dash = 1;
        }
    }
    if (o == 0 && len > 1)
        buf[o++] = 'x';
    buf[o] = '\0';
}

void ppb_html_init(ppb_html *h, FILE *out)
{
    h->out = out;
    h->failed = 0;
}

int ppb_html_finish(ppb_html *h, ppb_err *err)
{
    if (fflush(h->out) != 0 || ferror(h->out))
        h->failed = 1;
    return h->failed ? ppb_fail(err, PPB_EIO, "writing the HTML failed") : PPB_OK;
}

void ppb_html_markup_literal_(ppb_html *h, const char *markup)
{
    emit_file(h, markup, strlen(markup));
}

void ppb_html_text(ppb_html *h, const char *text)
{
    if (text)
        escape_with(text, emit_file, h);
}

static void textv(ppb_html *h, const char *fmt, va_list ap)
{
    char small[512];
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(small, sizeof small, fmt, copy);
    va_end(copy);
    if (n < 0) {
        h->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        escape_with(small, emit_file, h);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        h->failed = 1;
        return;
    }
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    escape_with(big, emit_file, h);
    free(big);
}

void ppb_html_textf(ppb_html *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    textv(h, fmt, ap);
    va_end(ap);
}

void ppb_html_attr_(ppb_html *h, const char *name, const char *value)
{
    emit_file(h, " ", 1);
    emit_file(h, name, strlen(name));
    emit_file(h, "=\"", 2);
    ppb_html_text(h, value);
    emit_file(h, "\"", 1);
}

void ppb_html_attrf_(ppb_html *h, const char *name, const char *fmt, ...)
{
    emit_file(h, " ", 1);
    emit_file(h, name, strlen(name));
    emit_file(h, "=\"", 2);
    va_list ap;
    va_start(ap, fmt);
    textv(h, fmt, ap);
    va_end(ap);
    emit_file(h, "\"", 1);
}

void ppb_html_element_(ppb_html *h, const char *tag, const char *cls, const char *text)
{
    emit_file(h, "<", 1);
    emit_file(h, tag, strlen(tag));
    if (cls)
        ppb_html_attr_(h, "class", cls);
    emit_file(h, ">", 1);
    ppb_html_text(h, text);
    emit_file(h, "</", 2);
    emit_file(h, tag, strlen(tag));
    emit_file(h, ">", 1);
}

void ppb_html_style_sheet(ppb_html *h, const char *css)
{
    for (const char *p = css; (p = strchr(p, '<')) != NULL; p++)
        if (strncasecmp(p, "</style", 7) == 0) {
            h->failed = 1;
            return;
        }
    emit_file(h, "<style>\n", 8);
    emit_file(h, css, strlen(css));
    emit_file(h, "</style>\n", 9);
}

void ppb_html_svg(ppb_html *h, const char *checked_svg)
{
    if (checked_svg)
        emit_file(h, checked_svg, strlen(checked_svg));
}
