#include "stop_signals.h"

#include <stdatomic.h>
#include <string.h>

/* Where the handler records a signal: the innermost catch's flag. */
static volatile sig_atomic_t *current_flag;
/* The same fact for other threads (a watchdog): lock-free, so the handler may set it. */
static atomic_int stop_seen;

static void record(int sig)
{
    if (current_flag)
        *current_flag = sig;
    atomic_store(&stop_seen, sig);
}

int ppb_stop_signalled(void) { return atomic_load(&stop_seen); }

void ppb_stop_signals_catch(ppb_stop_signals *s, volatile sig_atomic_t *flag)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record;
    sigemptyset(&sa.sa_mask);
    *flag = 0;
    atomic_store(&stop_seen, 0);
    s->saved_flag = current_flag;
    current_flag = flag;
    sigaction(SIGINT, &sa, &s->saved_int);
    sigaction(SIGTERM, &sa, &s->saved_term);
    s->active = 1;
}

void ppb_stop_signals_restore(ppb_stop_signals *s)
{
    if (!s->active)
        return;
    sigaction(SIGINT, &s->saved_int, NULL);
    sigaction(SIGTERM, &s->saved_term, NULL);
    current_flag = s->saved_flag;
    s->active = 0;
}
