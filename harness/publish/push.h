/* Upload a stored run: Prometheus Pushgateway text format, InfluxDB line
 * protocol, or the JSON export for any webhook (docs/CI.md "Push"). A push
 * that fails is queued in the database (push_queue.h) and sent by the next
 * push to the same server, so nothing is lost. */
#ifndef PPB_PUSH_H
#define PPB_PUSH_H

#include <stdint.h>
#include <stdio.h>

#include "http.h"
#include "store.h"

typedef enum {
    PPB_PUSH_PROMETHEUS = 0,
    PPB_PUSH_INFLUX = 1,
    PPB_PUSH_JSON = 2,
} ppb_push_format;

int ppb_push_format_parse(const char *name, ppb_push_format *out, ppb_err *err);
const char *ppb_push_format_name(ppb_push_format f);   /* "prometheus", "influx", "json" */

/* What one push sends: built from the database each time (never stored). */
typedef struct ppb_push_request {
    char url[4096];            /* --to, plus the Pushgateway grouping path for prometheus */
    const char *method;        /* PUT (prometheus: replaces the group), POST otherwise */
    const char *content_type;
    char *body;                /* malloc'ed */
    size_t body_len;
} ppb_push_request;

/* The request for one run. Prometheus: a --to URL whose path holds no
 * "/metrics/job/" gets "/metrics/job/ppbench/suite@base64/S/host@base64/H"
 * (and "/shard@base64/K/N" for a sharded run) appended. Influx: a URL with a
 * precision other than ns is refused (timestamps are written in ns). */
int ppb_push_build(ppb_store *s, int64_t run_id, ppb_push_format f, const char *to,
                   ppb_push_request *req, ppb_err *err);
void ppb_push_request_free(ppb_push_request *req);

/* Escaping, exposed for the unit tests. */
/* Prometheus label value: backslash, double quote and newline escaped. */
void ppb_push_prom_label_value(FILE *out, const char *s);
/* Influx tag key/value or field key: comma, equals sign, space and backslash
 * escaped; a line break (which line protocol cannot carry) becomes a space. */
void ppb_push_influx_tag(FILE *out, const char *s);
/* Influx string field value, quotes included: backslash and double quote
 * escaped; a line break becomes a space. */
void ppb_push_influx_string(FILE *out, const char *s);
/* Base64url with padding (the Pushgateway's "label@base64/value"; "=" for ""). */
void ppb_push_base64url(const char *s, char *out, size_t len);

/* One line of progress for the caller to print (never holds the token). */
typedef void (*ppb_push_note)(void *ctx, const char *line);

typedef struct ppb_push_outcome {
    int sent;              /* this run's push got through */
    int queued_now;        /* this run's push failed and is queued */
    int backlog_sent;      /* queued pushes for this server, sent now */
    int backlog_failed;    /* queued pushes for this server that failed again (still queued) */
    int backlog_elsewhere; /* queued pushes for other servers, not tried (another token) */
    int backlog_expired;   /* dropped: PPB_PUSH_QUEUE_MAX_ATTEMPTS reached */
    int backlog_later;     /* past PPB_PUSH_BACKLOG_PER_PUSH: left for the next push */
} ppb_push_outcome;

/* A queued push is tried at most this many HTTP requests in all, then dropped
 * (and said so): a dead entry must not cost every later push forever. */
#define PPB_PUSH_QUEUE_MAX_ATTEMPTS 20
/* Queued pushes sent before one push, each with one try of at most
 * PPB_PUSH_BACKLOG_TIMEOUT_S seconds: what the backlog can add to a healthy push is bounded. */
#define PPB_PUSH_BACKLOG_PER_PUSH 8
#define PPB_PUSH_BACKLOG_TIMEOUT_S 15

/* Send the queued pushes whose URL has the same origin (scheme, host, port) as
 * `to`, oldest first (at most PPB_PUSH_BACKLOG_PER_PUSH, one short try each),
 * then run `run_id` (0: only the queue). Every failure is queued or re-queued
 * (queue_failures 0: not queued, for a one-off); an entry that reached
 * PPB_PUSH_QUEUE_MAX_ATTEMPTS is dropped with a note. Returns 0 when run_id's push got through (or, with run_id 0,
 * every queued push for that server did); PPB_EIO when something is left
 * queued; PPB_EINPUT for a bad URL, format or run, before anything is sent. */
int ppb_push_run(ppb_store *s, int64_t run_id, ppb_push_format f, const char *to,
                 const ppb_http_options *http, int queue_failures, ppb_push_note note, void *ctx,
                 ppb_push_outcome *out, ppb_err *err);

#endif
