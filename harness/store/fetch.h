/* A baseline database named by URL (compare, trend): downloaded with libcurl
 * into a temporary file and checked to be a ppbench database before use.
 * docs/CI.md "Baselines over HTTP". */
#ifndef PPB_FETCH_H
#define PPB_FETCH_H

#include <stddef.h>

#include "ppb_error.h"
#include "store.h"

/* 1 when `s` looks like "scheme://..." rather than a file path. */
int ppb_fetch_is_url(const char *s);

/* A plain path is passed through: local_path = url_or_path, nothing checked
 * here (ppb_store_open does that when the caller opens it). An http, https or
 * file URL is downloaded (TLS verified; CA bundle from $PPBENCH_CACERT; token
 * from $PPBENCH_BASELINE_TOKEN as a Bearer header, https or loopback only;
 * retries with backoff; each try at most timeout_s seconds, 0 for
 * PPB_FETCH_DEFAULT_TIMEOUT_S) to a new file under $TMPDIR (else /tmp), which must be
 * a SQLite file that ppb_store_open accepts (ppbench application id, a schema
 * this binary knows, migrated if older) and passes PRAGMA quick_check;
 * anything else is refused with PPB_EINPUT ("not a ppbench database: ...")
 * and the download removed. local_path gets the file to open. Call
 * ppb_fetch_release when done. */
int ppb_fetch_baseline_db(const char *url_or_path, long timeout_s, char *local_path, size_t len, ppb_err *err);

/* ppb_fetch_baseline_db, then the file opened with ppb_store_open_readonly and
 * its SQLite work bounded (a budget of VM steps, values of at most 64 MiB, no
 * ATTACH, temporary data in memory). While a downloaded copy exists, SIGINT and
 * SIGTERM only set a flag: the download, the checks and every query stop on it
 * (PPB_EINTR), and the copy is removed; ppb_fetch_release then re-raises the
 * signal with the handlers the caller had. On failure nothing is left open or
 * on disk. Close *out with ppb_store_close, then call ppb_fetch_release. */
int ppb_fetch_open_baseline(const char *url_or_path, long timeout_s, ppb_store **out, char *local_path,
                            size_t len, ppb_err *err);

/* Seconds one try of a download may take when the caller gives 0 (each of
 * the retries has the same limit). */
#define PPB_FETCH_DEFAULT_TIMEOUT_S 120

/* Remove a downloaded copy (and its -wal/-shm); does nothing for a plain path. */
void ppb_fetch_release(const char *url_or_path, const char *local_path);

#endif
