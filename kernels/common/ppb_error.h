/* Status codes and the error buffer every module fills.
 *
 * Convention (see docs/ARCHITECTURE.md): functions return 0 on success or a
 * negative PPB_E* code, and write a one-line, human-readable message into the
 * caller's ppb_err. Nothing below main() prints on its own or calls exit(). */
#ifndef PPB_ERROR_H
#define PPB_ERROR_H

#include <stddef.h>

enum {
    PPB_OK = 0,
    PPB_EFAIL = -1,      /* generic failure; the message says what */
    PPB_EINPUT = -2,     /* bad user input (suite, option, key) */
    PPB_EREFUSED = -3,   /* a config or case the backend/kernel/target cannot do; message = reason */
    PPB_ENOMEM = -4,     /* host or device allocation failed */
    PPB_EIO = -5,        /* file or database I/O */
    PPB_EINTR = -6,      /* interrupted by a signal (Ctrl-C) */
};

typedef struct ppb_err {
    char msg[1024];
} ppb_err;

/* printf-style; returns `code` so callers can write `return ppb_fail(err, PPB_EINPUT, ...)`.
 * The message is kept to one printable line: control characters become '?'. */
int ppb_fail(ppb_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prepend context ("while loading X: ") to an existing message. */
void ppb_err_prefix(ppb_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
