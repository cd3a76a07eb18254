#include "ppb_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ppb_fail(ppb_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
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
    snprintf(err->msg, sizeof err->msg, "%s%s", head, old);
}
