/* Shapes' inputs made ahead of their turn. One thread walks the shapes a run
 * will time, in the run's order, and makes each one's lengths, block table and
 * reference rows (ppb_session_inputs_ahead) while the device times the shapes
 * before it; the run takes each shape's when it gets there. Nothing about a
 * check changes, only when its rows were made: a shape the thread did not make
 * is made in turn, as without it. */
#ifndef PPB_AHEAD_H
#define PPB_AHEAD_H

#include "session.h"

typedef struct ppb_ahead ppb_ahead;

/* Start on the shapes of the cases whose todo flag is set, cases[0..n) in
 * order (grouped by shape), at most max_ready made and not yet taken, for a
 * session from ppb_session_init whose backend makes its inputs on its device
 * (or will: it may still be opening). The cases, todo and cs must outlive it.
 * NULL (nothing made ahead) when there are no cases or no thread starts. */
ppb_ahead *ppb_ahead_start(ppb_session *s, const ppb_case *cases, const char *todo, int n, uint64_t suite_seed,
                           const ppb_check_settings *cs, int max_ready);

/* Case c's shape's inputs: 1 with *out filled (the caller frees it with
 * ppb_inputs_ahead_free), waiting while the thread makes them; 0 when it did
 * not make them (not among its shapes, or they failed). The shapes before c's
 * are given up: the run has passed them. a may be NULL. */
int ppb_ahead_take(ppb_ahead *a, const ppb_case *c, ppb_inputs_ahead *out);

/* Stop after the shape in progress, join the thread, free what was not taken. */
void ppb_ahead_stop(ppb_ahead *a);

#endif
