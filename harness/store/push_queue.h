/* The queue of pushes that failed (table push_queue, schema v4). A row says
 * which run went where in which format, how many requests were made and the
 * last error; the body is rebuilt from the database when the row is sent, and
 * no credential is ever stored. Part of the store layer: these are the only
 * statements on that table. */
#ifndef PPB_PUSH_QUEUE_H
#define PPB_PUSH_QUEUE_H

#include <stdint.h>

#include "store.h"

typedef struct ppb_push_pending {
    int64_t id;
    int64_t run_id;
    char url[2048];
    char format[16];
    char created_at[32];
    int attempts;             /* HTTP requests made for it so far */
    char last_error[1024];
    char last_attempt_at[32];
} ppb_push_pending;

/* Queue (or re-queue) a failed push: one row per (run, url, format); a second
 * failure adds its tries to attempts and replaces last_error. */
int ppb_push_queue_record_failure(ppb_store *s, int64_t run_id, const char *url,
                                  const char *format, int tries, const char *error, ppb_err *err);
/* Remove the row for (run, url, format) if there is one (it was sent). */
int ppb_push_queue_forget(ppb_store *s, int64_t run_id, const char *url, const char *format,
                          ppb_err *err);
/* Remove one row by id (ppbench push --drop); PPB_EINPUT if there is none. */
int ppb_push_queue_drop(ppb_store *s, int64_t id, ppb_err *err);
/* Oldest first. The visitor follows store.h's convention (> 0 stops, < 0 is
 * an error passed up) and must not write to the store. */
typedef int (*ppb_push_pending_visitor)(void *ctx, const ppb_push_pending *p);
int ppb_push_queue_each(ppb_store *s, ppb_push_pending_visitor fn, void *ctx, ppb_err *err);

#endif
