#include "ppb_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages quote untrusted text (file contents, stored labels) and end on a
 * terminal: control characters (ESC, BEL, CR, newlines) become '?', so a
 * message is one line that cannot move the cursor or recolour the screen. */
static void one_line(char *msg)
{
    for (unsigned char *p = (unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
}

/* A message longer than the buffer keeps its start and its end, with " ... "
 * between: the reason is usually last ("PATH: No space left on device"), so a
 * very long path in the middle must not push it out. */
#define KEEP_HEAD 300

static void put_elided(ppb_err *err, const char *text, size_t n)
{
    size_t cap = sizeof err->msg - 1;
    if (n <= cap) {
        memcpy(err->msg, text, n + 1);
    } else {
        static const char gap[] = " ... ";
        size_t tail = cap - KEEP_HEAD - (sizeof gap - 1);
        memcpy(err->msg, text, KEEP_HEAD);
        memcpy(err->msg + KEEP_HEAD, gap, sizeof gap - 1);
        memcpy(err->msg + KEEP_HEAD + sizeof gap - 1, text + n - tail, tail + 1);
    }
    one_line(err->msg);
}

static void put_formatted(ppb_err *err, const char *fmt, va_list ap)
{
    char small[sizeof err->msg * 4];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= 0 && (size_t)n < sizeof small) {
        put_elided(err, small, (size_t)n);
    } else {
        char *big = n > 0 ? malloc((size_t)n + 1) : NULL;
        if (big && vsnprintf(big, (size_t)n + 1, fmt, again) == n)
            put_elided(err, big, (size_t)n);
        else
            put_elided(err, small, strlen(small)); /* no memory: the start, as before */
        free(big);
    }
    va_end(again);
}

int ppb_fail(ppb_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        put_formatted(err, fmt, ap);
        va_end(ap);
    }
    return code;
}

void ppb_err_prefix(ppb_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    ppb_fail(err, 0, "%s%s", head, old);
}
