#include "result_writer.h"

#include <pthread.h>
#include <stdlib.h>

#include "provenance.h"

typedef struct pending {
    const ppb_case *c;
    ppb_result res;
} pending;

struct ppb_result_writer {
    ppb_store *store;
    int64_t run_id;
    int threaded;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;          /* queued, stored, or stopping */
    pending queue[RESULT_WRITER_QUEUE]; /* a ring: head is the next to store */
    int head, count, stop;           /* under lock */
    int rc;                          /* the first failure (under lock); nothing is stored after it */
    ppb_err err;
    double waited_ms;                /* callers' time waiting (the caller's thread only) */
};

/* One result, in whichever thread stores it. The first failure is kept. */
static void store_one(ppb_result_writer *w, const ppb_case *c, ppb_result *res, int *rc, ppb_err *err)
{
    if (*rc == PPB_OK)
        *rc = ppb_store_put_result(w->store, w->run_id, c, res, err);
    ppb_result_free(res);
}

static void *write_results(void *arg)
{
    ppb_result_writer *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->count == 0 && !w->stop)
            pthread_cond_wait(&w->changed, &w->lock);
        if (w->count == 0)
            break; /* stopping, and every result is stored */
        pending p = w->queue[w->head];
        w->head = (w->head + 1) % RESULT_WRITER_QUEUE;
        w->count--;
        int rc = w->rc;
        pthread_mutex_unlock(&w->lock);
        ppb_err err = {{0}};
        store_one(w, p.c, &p.res, &rc, &err);
        pthread_mutex_lock(&w->lock);
        if (rc && !w->rc) {
            w->rc = rc;
            w->err = err;
        }
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int ppb_result_writer_start(ppb_result_writer **out, ppb_store *s, int64_t run_id, ppb_err *err)
{
    ppb_result_writer *w = *out = calloc(1, sizeof *w);
    if (!w)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    w->store = s;
    w->run_id = run_id;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    w->threaded = pthread_create(&w->thread, NULL, write_results, w) == 0;
    return PPB_OK;
}

int ppb_result_writer_put(ppb_result_writer *w, const ppb_case *c, ppb_result *res, ppb_err *err)
{
    double t0 = ppb_monotonic_ms();
    pending p = {c, *res};
    ppb_result_init(res); /* taken over */
    int rc;
    if (!w->threaded) {
        store_one(w, c, &p.res, &w->rc, &w->err);
        if ((rc = w->rc))
            *err = w->err;
    } else {
        pthread_mutex_lock(&w->lock);
        while (w->count == RESULT_WRITER_QUEUE && !w->rc)
            pthread_cond_wait(&w->changed, &w->lock);
        if (!(rc = w->rc)) {
            w->queue[(w->head + w->count) % RESULT_WRITER_QUEUE] = p;
            w->count++;
            pthread_cond_broadcast(&w->changed);
        } else {
            ppb_result_free(&p.res);
            *err = w->err;
        }
        pthread_mutex_unlock(&w->lock);
    }
    w->waited_ms += ppb_monotonic_ms() - t0;
    return rc;
}

int ppb_result_writer_finish(ppb_result_writer *w, double *waited_ms, ppb_err *err)
{
    double t0 = ppb_monotonic_ms();
    if (w->threaded) {
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        pthread_cond_broadcast(&w->changed);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL); /* it stops once the queue is empty */
    }
    *waited_ms = w->waited_ms + (ppb_monotonic_ms() - t0);
    int rc = w->rc;
    if (rc)
        *err = w->err;
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return rc;
}
