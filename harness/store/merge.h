/* ppbench merge: fold results databases (one per host or shard) into one.
 * Runs are matched by their uid (schema v4), cases by their canonical key,
 * results by (run, case key): merging the same file twice adds nothing, and a
 * run that grew since the last merge (resumed) gets only its new results.
 * The shards of one night are one run: a shard (--shard K/N) whose group
 * already has a run in the output with the same suite, shard count, backend
 * and filter, and without shard K, is folded into that run (schema v6,
 * run_parts) instead of becoming a run of its own.
 * Sources are opened read-only and must have exactly this binary's schema.
 * docs/CI.md "Several hosts". This module works on whole databases with SQL
 * (ATTACH), so it belongs to the store layer. */
#ifndef PPB_MERGE_H
#define PPB_MERGE_H

#include "store.h"

typedef struct ppb_merge_stats {
    int runs_added, runs_present, runs_completed;   /* completed: present, now finished */
    int shards_folded;                               /* shards that joined their night's run */
    int cases_added;
    int results_added, results_present;
    int env_added;
    int proposals_added, proposals_present;
} ppb_merge_stats;

/* Read-only: is `path` a ppbench database of exactly PPB_STORE_SCHEMA_VERSION?
 * PPB_EINPUT with the reason (missing, not SQLite, not ppbench, older or newer
 * schema: an older one is migrated by opening it once with this ppbench). */
int ppb_merge_check_source(const char *path, ppb_err *err);

/* Merge one source into dst, in one transaction (all of it or none). The
 * source's schema must match dst's table by table (PPB_EINPUT otherwise). */
int ppb_merge_into(ppb_store *dst, const char *src_path, ppb_merge_stats *stats, ppb_err *err);

#endif
