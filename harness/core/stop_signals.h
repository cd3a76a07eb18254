/* SIGINT and SIGTERM as a request to stop: while caught, the handler only
 * records the signal number in the caller's flag; the work polls the flag and
 * cleans up on its way out (a run stores what it finished, a fetch removes its
 * temporary copy). Catches nest: restore puts back what was there before. */
#ifndef PPB_STOP_SIGNALS_H
#define PPB_STOP_SIGNALS_H

#include <signal.h>

typedef struct ppb_stop_signals {
    struct sigaction saved_int, saved_term;
    volatile sig_atomic_t *saved_flag;
    int active;
} ppb_stop_signals;

/* Route SIGINT and SIGTERM to *flag (set to 0 first). */
void ppb_stop_signals_catch(ppb_stop_signals *s, volatile sig_atomic_t *flag);

/* The signal caught since the last catch began (0: none), readable from any
 * thread: for a watchdog that must act when the work cannot poll (a plugin
 * call that does not return). */
int ppb_stop_signalled(void);

/* Put the previous handlers back (nothing if not active). */
void ppb_stop_signals_restore(ppb_stop_signals *s);

#endif
