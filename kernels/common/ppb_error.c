#include "ppb_error.h"

#include <stdarg.h>
#include <stdio.h>
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

int ppb_fail(ppb_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        one_line(err->msg);
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
    snprintf(err->msg, sizeof err->msg, "%s%s", head, old);
    one_line(err->msg);
}
