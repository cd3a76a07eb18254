#include "eta.h"

#include <math.h>
#include <stdlib.h>

/* Bytes weigh as this many FLOPs in a case's work: between the CPU backend's
 * balance (~10) and a GPU's (~200), and a byte also costs host time (inputs,
 * copy, reference). Only the mix matters: the fit scales work to seconds. */
#define FLOP_PER_BYTE 64.0
/* Inputs are clamped to these so that squares and sums stay finite (the
 * largest real case is ~1e16 FLOP; no case takes 30 years). */
#define WORK_MAX 1e30
#define SECONDS_MAX 1e9

enum { UNPLANNED = 0, PLANNED, TIMED, UNTIMED };

struct ppb_eta_slot {
    double work, seconds;
    int state;
};

/* NaN and negatives to 0, huge values to hi. */
static double clamp(double x, double hi)
{
    return x > 0 ? (x < hi ? x : hi) : 0;
}

int ppb_eta_init(ppb_eta *e, int n, ppb_err *err)
{
    e->n = n > 0 ? n : 0;
    e->slots = calloc((size_t)e->n + 1, sizeof *e->slots);
    if (!e->slots) {
        e->n = 0;
        return ppb_fail(err, PPB_ENOMEM, "out of memory for the ETA of %d cases", n);
    }
    return PPB_OK;
}

void ppb_eta_free(ppb_eta *e)
{
    free(e->slots);
    e->slots = NULL;
    e->n = 0;
}

double ppb_eta_case_work(const ppb_case *c)
{
    return ppb_case_flops(c) + FLOP_PER_BYTE * ppb_case_min_bytes(c);
}

void ppb_eta_plan(ppb_eta *e, int i, double work)
{
    if (i >= 0 && i < e->n)
        e->slots[i] = (struct ppb_eta_slot){clamp(work, WORK_MAX), 0, PLANNED};
}

void ppb_eta_finish(ppb_eta *e, int i, int timed, double seconds)
{
    if (i >= 0 && i < e->n && e->slots[i].state == PLANNED) {
        e->slots[i].seconds = clamp(seconds, SECONDS_MAX);
        e->slots[i].state = timed ? TIMED : UNTIMED;
    }
}

/* What the finished cases say. */
typedef struct model {
    int timed, untimed;
    double a, b;          /* seconds = a + b * work for a timed case */
    double untimed_each;  /* mean time of a case not timed */
    double limit;         /* cases of at least this work are expected refused */
    double p_refused;     /* below the limit, the share of cases not timed */
} model;

/* seconds = a + b * work over the timed cases, least squares, both >= 0. */
static void fit(const ppb_eta *e, model *m)
{
    double mean_w = 0, mean_s = 0, s_ww = 0, s_ws = 0;
    for (int i = 0; i < e->n; i++)
        if (e->slots[i].state == TIMED) {
            mean_w += e->slots[i].work / m->timed;
            mean_s += e->slots[i].seconds / m->timed;
        }
    for (int i = 0; i < e->n; i++)
        if (e->slots[i].state == TIMED) {
            double dw = e->slots[i].work - mean_w;
            s_ww += dw * dw;
            s_ws += dw * (e->slots[i].seconds - mean_s);
        }
    /* The mean (b = 0) unless the timed cases differ in work: one point, or
     * points at one work, say nothing about how time grows with it. */
    m->a = mean_s;
    m->b = 0;
    if (!(s_ww > 1e-12 * m->timed * mean_w * mean_w))
        return;
    double slope = s_ws / s_ww;
    if (!(slope > 0))
        return; /* time falling with work is noise: more work never costs less */
    double intercept = mean_s - slope * mean_w;
    if (intercept >= 0) {
        m->a = intercept;
        m->b = slope;
        return;
    }
    /* A negative fixed cost would predict negative times for small cases: the
     * line through the origin instead (ratio estimator, total s / total work). */
    m->a = 0;
    m->b = mean_s / mean_w;
}

/* Refusals that grow with work (the CPU backend's --cpu-max-gflop, device
 * memory) show as untimed cases heavier than every timed one: the lightest of
 * them is the limit, and a timed case above it later moves it out of the way.
 * Below the limit, refusals (of configs) are spread over all work at the rate
 * seen. What no work can tell: a config refused on every shape that runs
 * first reads as a limit until the next config's timed cases pass it. */
static void refusals(const ppb_eta *e, model *m)
{
    double heaviest_timed = -1, lightest_above = INFINITY;
    for (int i = 0; i < e->n; i++)
        if (e->slots[i].state == TIMED && e->slots[i].work > heaviest_timed)
            heaviest_timed = e->slots[i].work;
    for (int i = 0; i < e->n; i++)
        if (e->slots[i].state == UNTIMED && e->slots[i].work > heaviest_timed &&
            e->slots[i].work < lightest_above)
            lightest_above = e->slots[i].work;
    m->limit = lightest_above;
    int below = 0, below_untimed = 0;
    for (int i = 0; i < e->n; i++)
        if ((e->slots[i].state == TIMED || e->slots[i].state == UNTIMED) &&
            e->slots[i].work < m->limit) {
            below++;
            below_untimed += e->slots[i].state == UNTIMED;
        }
    m->p_refused = below ? (double)below_untimed / below : 1;
}

double ppb_eta_remaining_s(const ppb_eta *e)
{
    model m = {0};
    double untimed_s = 0;
    for (int i = 0; i < e->n; i++) {
        m.timed += e->slots[i].state == TIMED;
        m.untimed += e->slots[i].state == UNTIMED;
        untimed_s += e->slots[i].state == UNTIMED ? e->slots[i].seconds : 0;
    }
    if (m.timed + m.untimed == 0)
        return 0;
    m.untimed_each = m.untimed ? untimed_s / m.untimed : 0;
    if (m.timed) {
        fit(e, &m);
        refusals(e, &m);
    } else {
        m.limit = INFINITY;
        m.p_refused = 1; /* all refused so far: the cases left at their mean */
    }
    double eta = 0;
    for (int i = 0; i < e->n; i++) {
        if (e->slots[i].state != PLANNED)
            continue;
        double w = e->slots[i].work, p = w >= m.limit ? 1 : m.p_refused;
        eta += p * m.untimed_each + (1 - p) * (m.a + m.b * w);
    }
    return clamp(eta, PPB_ETA_MAX_S);
}
