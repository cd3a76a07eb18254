#include "ahead.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

enum {
    SLOT_PENDING, /* not made yet */
    SLOT_MAKING,  /* the thread is making it */
    SLOT_READY,   /* made, not taken */
    SLOT_DONE     /* taken, given up, or not made (failed, stopped) */
};

typedef struct slot {
    const ppb_case *c; /* the shape's first case to run */
    char shape_key[PPB_CASE_KEY_MAX];
    int state;
    ppb_inputs_ahead made; /* while READY */
} slot;

struct ppb_ahead {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a slot's state, `ready` or `stop` changed */
    ppb_session *session;
    uint64_t suite_seed;
    const ppb_check_settings *cs;
    slot *slots;
    int n_slots, max_ready;
    int ready, stop; /* under lock */
};

static void *make_shapes(void *arg)
{
    ppb_ahead *a = arg;
    /* leave cores to the thread that launches the timed kernels */
    int threads = ppb_thread_count() - 2;
    ppb_parallel_limit_this_thread(threads > 1 ? threads : 1);
    pthread_mutex_lock(&a->lock);
    for (int k = 0; k < a->n_slots && !a->stop; k++) {
        slot *sl = &a->slots[k];
        while (!a->stop && sl->state == SLOT_PENDING && a->ready >= a->max_ready)
            pthread_cond_wait(&a->changed, &a->lock);
        if (a->stop || sl->state != SLOT_PENDING) /* given up: the run passed it */
            continue;
        sl->state = SLOT_MAKING;
        pthread_mutex_unlock(&a->lock);
        ppb_inputs_ahead made;
        int ok = ppb_session_inputs_ahead(a->session, sl->c, ppb_case_seed(a->suite_seed, sl->c), a->cs, &made);
        pthread_mutex_lock(&a->lock);
        if (ok && sl->state == SLOT_MAKING) {
            sl->made = made;
            sl->state = SLOT_READY;
            a->ready++;
        } else {
            if (ok)
                ppb_inputs_ahead_free(&made);
            sl->state = SLOT_DONE;
        }
        pthread_cond_broadcast(&a->changed);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

ppb_ahead *ppb_ahead_start(ppb_session *s, const ppb_case *cases, const char *todo, int n, uint64_t suite_seed,
                           const ppb_check_settings *cs, int max_ready)
{
    if (n <= 0)
        return NULL;
    ppb_ahead *a = calloc(1, sizeof *a);
    if (!a || !(a->slots = calloc((size_t)n, sizeof *a->slots))) {
        free(a);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!todo[i])
            continue;
        slot *sl = &a->slots[a->n_slots];
        ppb_case_shape_key(&cases[i], sl->shape_key, sizeof sl->shape_key);
        if (a->n_slots > 0 && strcmp(sl->shape_key, a->slots[a->n_slots - 1].shape_key) == 0)
            continue; /* the cases come grouped by shape */
        sl->c = &cases[i];
        a->n_slots++;
    }
    a->session = s;
    a->suite_seed = suite_seed;
    a->cs = cs;
    a->max_ready = max_ready > 0 ? max_ready : 1;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    if (pthread_create(&a->thread, NULL, make_shapes, a) != 0) {
        pthread_cond_destroy(&a->changed);
        pthread_mutex_destroy(&a->lock);
        free(a->slots);
        free(a);
        return NULL;
    }
    return a;
}

/* Under lock: the shapes before slot k will not be asked for again. */
static void give_up_before(ppb_ahead *a, int k)
{
    int changed = 0;
    for (int j = 0; j < k; j++) {
        slot *sl = &a->slots[j];
        if (sl->state == SLOT_READY) {
            ppb_inputs_ahead_free(&sl->made);
            a->ready--;
        }
        if (sl->state != SLOT_DONE) { /* one MAKING is freed by the thread when made */
            sl->state = SLOT_DONE;
            changed = 1;
        }
    }
    if (changed)
        pthread_cond_broadcast(&a->changed);
}

int ppb_ahead_take(ppb_ahead *a, const ppb_case *c, ppb_inputs_ahead *out)
{
    memset(out, 0, sizeof *out);
    if (!a)
        return 0;
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(c, shape, sizeof shape);
    int k = 0;
    while (k < a->n_slots && strcmp(a->slots[k].shape_key, shape) != 0)
        k++;
    if (k == a->n_slots)
        return 0;
    slot *sl = &a->slots[k];
    pthread_mutex_lock(&a->lock);
    give_up_before(a, k);
    while (sl->state == SLOT_PENDING || sl->state == SLOT_MAKING)
        pthread_cond_wait(&a->changed, &a->lock);
    int taken = sl->state == SLOT_READY;
    if (taken) {
        *out = sl->made;
        a->ready--;
    }
    sl->state = SLOT_DONE;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
    return taken;
}

void ppb_ahead_stop(ppb_ahead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    for (int k = 0; k < a->n_slots; k++)
        if (a->slots[k].state == SLOT_READY)
            ppb_inputs_ahead_free(&a->slots[k].made);
    pthread_cond_destroy(&a->changed);
    pthread_mutex_destroy(&a->lock);
    free(a->slots);
    free(a);
}
