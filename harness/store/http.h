/* One HTTP(S) request with libcurl, retried with exponential backoff when the
 * failure is transient (timeout, refused connection, 5xx, 408, 429). Used by
 * push (results upload) and fetch (baseline databases). docs/CI.md.
 *
 * Security: TLS peer and host verification are always on (there is no option
 * to turn them off; a private CA is given as a bundle file). Redirects are not
 * followed. A token is sent as "Authorization: <scheme> <token>", only over
 * https or to a loopback host, and every message this module writes has the
 * token scrubbed out, whatever the server sent back. */
#ifndef PPB_HTTP_H
#define PPB_HTTP_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "ppb_error.h"

typedef struct ppb_http_options {
    const char *cacert;       /* CA bundle (PEM) for https; NULL: the system's */
    long timeout_s;           /* whole request, per try (30) */
    long connect_timeout_s;   /* (10) */
    int retries;              /* tries after the first, transient failures only (3) */
    long retry_delay_ms;      /* first backoff; doubles per retry, capped at 30 s (1000) */
    const char *token;        /* NULL or "": no Authorization header */
    const char *auth_scheme;  /* "Bearer" (default); InfluxDB 2 wants "Token" */
    const volatile sig_atomic_t *stop; /* NULL, or set by a signal handler: the request ends
                                           within a second with PPB_EINTR, no retry */
} ppb_http_options;

void ppb_http_options_default(ppb_http_options *o);

typedef struct ppb_http_result {
    long status;      /* HTTP status of the last try; 0 when no response came */
    int tries;        /* requests made */
    int transient;    /* the last failure was one a later try could cure */
} ppb_http_result;

/* method: "GET", "POST" or "PUT"; body NULL for GET. The response body goes to
 * `sink` (truncated before each try; NULL: kept only for the error message),
 * at most max_bytes of it (0: no limit). 0 on a 2xx answer; otherwise
 * PPB_EIO (transient failure after the last retry, or a non-2xx answer) or
 * PPB_EINPUT (bad URL or options), with a one-line message that names the URL
 * without credentials and says what the server answered. */
int ppb_http_request(const ppb_http_options *o, const char *method, const char *url,
                     const char *content_type, const char *body, size_t body_len, FILE *sink,
                     long long max_bytes, ppb_http_result *res, ppb_err *err);

/* URL checks shared by push and fetch. Refuses (PPB_EINPUT) a URL that does not
 * parse, whose scheme is not in `schemes` (comma-separated, e.g. "http,https"),
 * or that carries user:password (it would be stored in the push queue and
 * shown in messages: use the token variable). */
int ppb_http_check_url(const char *url, const char *schemes, ppb_err *err);
/* "scheme://host:port" of a URL (the port filled in from the scheme), for
 * deciding whether a queued push goes to the server that a token is meant for. */
int ppb_http_origin(const char *url, char *out, size_t len, ppb_err *err);
/* 1 when the URL's host is localhost, 127.0.0.0/8 or ::1. */
int ppb_http_is_loopback(const char *url);
/* PPB_EINPUT when o carries a token and the URL is plain http to a host that
 * is not loopback (the token would cross the network in clear text). */
int ppb_http_check_token_transport(const ppb_http_options *o, const char *url, ppb_err *err);

#endif
