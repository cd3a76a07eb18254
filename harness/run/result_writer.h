/* Results stored on a thread of their own. The run hands each finished case's
 * result over and goes on to the next case while SQLite writes it (about a
 * millisecond a case, for its hundreds of samples): the database is no longer
 * in the way of the device. Each result is still one transaction, stored in
 * the order the cases finished. An interrupted run (SIGINT, SIGTERM) still
 * stores every finished case; a killed process loses at most the
 * RESULT_WRITER_QUEUE + 1 results that were waiting or being written.
 *
 * The writer owns the store from start to finish: nothing else may use it in
 * between (SQLite's transactions belong to the connection, not the thread). */
#ifndef PPB_RESULT_WRITER_H
#define PPB_RESULT_WRITER_H

#include <stdint.h>

#include "case.h"
#include "ppb_error.h"
#include "result.h"
#include "store.h"

typedef struct ppb_result_writer ppb_result_writer;

/* Results waiting for the writer, at most: put waits beyond that. */
#define RESULT_WRITER_QUEUE 4

/* Start storing results of run run_id into s. Without a thread (none starts)
 * each put stores the result itself: the same rows, in the caller's time. */
int ppb_result_writer_start(ppb_result_writer **out, ppb_store *s, int64_t run_id, ppb_err *err);

/* Store c's result: takes *res over (left empty, safe to ppb_result_free). c
 * must outlive the writer. Fails with the first store that failed before
 * (the case it was storing named in err); from then on nothing more is stored. */
int ppb_result_writer_put(ppb_result_writer *w, const ppb_case *c, ppb_result *res, ppb_err *err);

/* Wait until every result handed over is stored, stop the thread, free w.
 * *waited_ms gets the time the callers spent waiting for the database, in put
 * and here: what storing added to the run's wall time. The first failure, if any. */
int ppb_result_writer_finish(ppb_result_writer *w, double *waited_ms, ppb_err *err);

#endif
