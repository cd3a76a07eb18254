/* Internals of the results database shared by store.c, store_schema.c and the
 * store's unit tests. Nothing outside the store module includes this. */
#ifndef PPB_STORE_INTERNAL_H
#define PPB_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

/* PRAGMA application_id of every ppbench database ("PPB1" in ASCII). A SQLite
 * file with tables but without this id belongs to someone else and is refused. */
#define PPB_STORE_APPLICATION_ID 0x50504231

/* One schema step: run inside one transaction, takes the database from
 * version - 1 to version. Steps are append-only: a released step never changes,
 * because databases in the field were built by it. */
typedef struct ppb_store_migration {
    int version;
    const char *summary; /* for error messages: what the step adds */
    const char *sql;     /* DDL only; never built from input */
} ppb_store_migration;

extern const ppb_store_migration ppb_store_migrations[];

/* Open like ppb_store_open, but migrate no further than `version` (tests build
 * an old database this way, then reopen it normally to exercise the upgrade). */
int ppb_store_open_at_version(ppb_store **out, const char *path, int version, ppb_err *err);

/* Called inside ppb_store_put_result after the result and its samples are
 * written and before COMMIT: lets a test die with the transaction open. */
typedef void (*ppb_store_commit_hook)(void *ctx, sqlite3 *db);
void ppb_store_set_commit_hook(ppb_store *s, ppb_store_commit_hook hook, void *ctx);

/* The connection, for tests that inspect pragmas or write old-schema rows. */
sqlite3 *ppb_store_db(ppb_store *s);

#endif
