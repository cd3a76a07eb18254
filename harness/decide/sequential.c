#include "sequential.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "ppb_rng.h"

/* The stream of the sample order (kernels/ppb_rng.h keeps input streams below 64). */
#define SEQ_RNG_STREAM_ORDER 80u

int ppb_seq_looks(int min_rounds, int max_rounds, int rounds[PPB_SEQ_MAX_LOOKS])
{
    int first = min_rounds > 0 ? min_rounds : 1, last = max_rounds > first ? max_rounds : first, k = 0;
    for (long r = first; r < last && k < PPB_SEQ_MAX_LOOKS - 1; r *= 2)
        rounds[k++] = (int)r;
    rounds[k++] = last;
    return k;
}

/* Exponent 2 spends little at the early looks, where only large effects
 * could settle anyway, and keeps most of alpha for the look the budget ends:
 * under the default design (looks at rounds 4, 8, ... of 160, a budget most
 * pairs use up within a few looks) that last look gets most of alpha instead
 * of the alpha / 7 Bonferroni gave it. */
double ppb_seq_alpha_spent(double alpha, double t)
{
    t = t > 1 ? 1 : t > 0 ? t : 0;
    return alpha * t * t;
}

int ppb_seq_settled(const ppb_seq_design *d, double ratio_lo, double ratio_hi)
{
    if (!(ratio_lo > 0) || !isfinite(ratio_hi) || !(ratio_lo <= ratio_hi))
        return 0;
    double t = d->threshold, gain = d->min_gain > t ? d->min_gain : t, tol = d->tolerance > t ? d->tolerance : t;
    const double boundary[4] = {1 / (1 + gain), 1 / (1 + t), 1 + t, 1 + tol};
    for (int i = 0; i < 4; i++)
        if (ratio_lo < boundary[i] && boundary[i] < ratio_hi)
            return 0;
    /* threshold 0: the one boundary is 1, and an interval on it is no claim */
    return !(ratio_lo <= 1 && 1 <= ratio_hi && t == 0);
}

/* A session is added when the sessions' spread exceeds this many times the
 * samples' own standard error (ppb_seq_run). */
#define SEQ_GROW_FACTOR 2.0

/* Normal quantile of the 95% Moses interval that sizes a shift's standard error. */
#define SEQ_SE_ALPHA 0.05
#define SEQ_SE_Z 1.959963984540054

/* tau^2 of one side by the method of moments: two sessions i, j differ by the
 * Hodges-Lehmann shift d_ij of their log-times, and E[d_ij^2] = 2 tau^2 +
 * se_ij^2, se_ij from the width of d_ij's Moses interval; averaged over the
 * pairs, floored at 0. The shift, not a session median, because load makes
 * samples bimodal and a median then jumps between the modes while a shift of
 * the whole distribution stays put; it is the estimator of the verdict's own
 * interval. Load shared in time by all units makes se_ij (which assumes
 * independent samples) too large and tau^2 too small, but widens the pooled
 * interval by the same token (docs/STATISTICS.md). A pair with a session of
 * too few samples for a bounded shift (one added at the last look) is left
 * out; NAN when no pair is left. */
static double side_session_variance(const double *x, const unsigned char *tag, int n, int sessions,
                                    double *logs)
{
    int start[PPB_SEQ_MAX_SESSIONS + 1] = {0}, filled[PPB_SEQ_MAX_SESSIONS] = {0};
    for (int i = 0; i < n; i++) /* logs: session s's log-times at [start[s], start[s + 1]) */
        if (tag[i] < sessions)
            start[tag[i] + 1]++;
    for (int s = 0; s < sessions; s++)
        start[s + 1] += start[s];
    for (int i = 0; i < n; i++)
        if (tag[i] < sessions)
            logs[start[tag[i]] + filled[tag[i]]++] = log(x[i]);
    double sum = 0;
    int pairs = 0;
    ppb_err err;
    for (int i = 0; i < sessions; i++)
        for (int j = i + 1; j < sessions; j++, pairs++) {
            ppb_ab_interval iv;
            if (ppb_hodges_lehmann_shift(logs + start[i], filled[i], logs + start[j], filled[j], SEQ_SE_ALPHA, &iv,
                                         &err) ||
                !iv.bounded) {
                pairs--;
                continue;
            }
            double se = (iv.shift_hi - iv.shift_lo) / (2 * SEQ_SE_Z);
            sum += (iv.shift * iv.shift - se * se) / 2;
        }
    if (pairs == 0)
        return NAN;
    double tau2 = sum / pairs;
    return tau2 > 0 ? tau2 : 0;
}

double ppb_seq_between_sd(const double *base, const unsigned char *base_session, int n, const double *cand,
                          const unsigned char *cand_session, int m, int sessions)
{
    if (sessions < 2 || sessions > PPB_SEQ_MAX_SESSIONS)
        return 0;
    double *logs = malloc(sizeof *logs * (size_t)(n > m ? n : m > 0 ? m : 1));
    if (!logs)
        return NAN;
    double vb = side_session_variance(base, base_session, n, sessions, logs);
    double vc = side_session_variance(cand, cand_session, m, sessions, logs);
    free(logs);
    /* tau^2 per side; the pooled ratio carries tau^2 / sessions from each side. */
    return sqrt(2 * ((vb + vc) / 2) / sessions);
}

void ppb_seq_widen(ppb_ab_interval *iv, double alpha, double between_sd, int sessions)
{
    if (isnan(between_sd)) { /* the spread could not be computed: the interval claims nothing */
        iv->shift_lo = -INFINITY;
        iv->shift_hi = iv->ratio_hi = INFINITY;
        iv->ratio_lo = 0;
        iv->bounded = 0;
        return;
    }
    if (!(between_sd > 0) || !iv->bounded)
        return;
    double w = ppb_student_t_quantile(alpha, 2 * (sessions > 1 ? sessions - 1 : 1)) * between_sd;
    double below = iv->shift - iv->shift_lo, above = iv->shift_hi - iv->shift;
    iv->shift_lo = iv->shift - sqrt(below * below + w * w);
    iv->shift_hi = iv->shift + sqrt(above * above + w * w);
    iv->ratio_lo = exp(iv->shift_lo);
    iv->ratio_hi = exp(iv->shift_hi);
    iv->level_achieved = iv->level;
    iv->exact = 0;
}

int ppb_seq_fixed_samples(int n, double look_alpha, double alpha)
{
    if (n < 1 || !(look_alpha > 0 && look_alpha < 1) || !(alpha > 0 && alpha < 1))
        return 0;
    double z = ppb_normal_quantile(1 - alpha / 2), z_look = ppb_normal_quantile(1 - look_alpha / 2);
    double need = ceil(n * (z / z_look) * (z / z_look) - 1e-9);
    int fewest = 1; /* a bounded Moses interval: the exact critical value exists */
    while (fewest < PPB_MWU_EXACT_MAX && ppb_mwu_critical_value(fewest, fewest, alpha) < 0)
        fewest++;
    return need < fewest ? fewest : need > INT_MAX ? INT_MAX : (int)need;
}

void ppb_seq_result_free(ppb_seq_result *r)
{
    for (int s = 0; s < 2; s++) {
        free(r->samples[s]);
        free(r->session[s]);
        free(r->round[s]);
    }
    memset(r, 0, sizeof *r);
}

static int check_design(const ppb_seq_design *d, ppb_err *err)
{
    if (d->samples_per_round < 1 || d->min_rounds < 1 || d->max_rounds < d->min_rounds)
        return ppb_fail(err, PPB_EINPUT, "sampling: need samples_per_round >= 1 and 1 <= min_rounds <= max_rounds");
    if (d->sessions < 1 || d->sessions > PPB_SEQ_MAX_SESSIONS)
        return ppb_fail(err, PPB_EINPUT, "sampling: sessions %d is outside 1..%d", d->sessions, PPB_SEQ_MAX_SESSIONS);
    if (d->max_sessions != 0 && (d->max_sessions < d->sessions || d->max_sessions > PPB_SEQ_MAX_SESSIONS))
        return ppb_fail(err, PPB_EINPUT, "sampling: max_sessions %d is outside %d..%d", d->max_sessions, d->sessions,
                        PPB_SEQ_MAX_SESSIONS);
    if (!(d->alpha > 0 && d->alpha < 1) || !(d->threshold >= 0) || !(d->budget_ms > 0) || !(d->min_gain >= 0) ||
        !(d->tolerance >= 0))
        return ppb_fail(err, PPB_EINPUT, "sampling: alpha, threshold, min_gain, tolerance or budget out of range");
    return PPB_OK;
}

/* Append a sample and its session and round tags (the arrays share one capacity). */
static int push(ppb_seq_result *r, int side, int *cap, double ms, int session, int round)
{
    int tag_cap = cap[side], round_cap = cap[side];
    if (ppb_grow((void **)&r->samples[side], &cap[side], r->n[side], sizeof(double), 64) != PPB_OK ||
        ppb_grow((void **)&r->session[side], &tag_cap, r->n[side], 1, 64) != PPB_OK ||
        ppb_grow((void **)&r->round[side], &round_cap, r->n[side], sizeof(int), 64) != PPB_OK)
        return PPB_ENOMEM;
    r->samples[side][r->n[side]] = ms;
    r->round[side][r->n[side]] = round;
    r->session[side][r->n[side]++] = (unsigned char)session;
    return PPB_OK;
}

/* Look: the interval a stopped comparison may claim (Hodges-Lehmann / Moses
 * on the pooled samples, widened by the between-session component) at the
 * look's alpha, its two parts, and its class. */
static int look(const ppb_seq_design *d, double look_alpha, ppb_seq_result *r, ppb_err *err)
{
    r->looks_taken++;
    r->between_sd = ppb_seq_between_sd(r->samples[0], r->session[0], r->n[0], r->samples[1], r->session[1], r->n[1],
                                       r->sessions);
    /* NaN (sessions too short for a spread): the widened interval claims nothing */
    int rc = ppb_ab_hodges_lehmann(r->samples[0], r->n[0], r->samples[1], r->n[1], look_alpha, &r->interval, err);
    if (rc)
        return rc;
    /* the samples' own standard error, from the unwidened interval's half-width */
    r->within_se = r->interval.bounded ? (r->interval.shift_hi - r->interval.shift_lo) / 2 /
                                             ppb_normal_quantile(1 - look_alpha / 2)
                                       : INFINITY;
    ppb_seq_widen(&r->interval, look_alpha, r->between_sd, r->sessions);
    r->look_alpha = look_alpha;
    r->alpha_spent += look_alpha;
    r->cls = ppb_ab_classify(r->interval.ratio_lo, r->interval.ratio_hi, d->threshold);
    return PPB_OK;
}

int ppb_seq_run(const ppb_seq_design *d, ppb_seq_sample_fn sample, void *ctx, ppb_seq_result *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_design(d, err);
    if (rc)
        return rc;
    int schedule[PPB_SEQ_MAX_LOOKS], cap[2] = {0, 0};
    const int k = ppb_seq_looks(d->min_rounds, d->max_rounds, schedule);
    const int max_sessions = d->max_sessions > d->sessions ? d->max_sessions : d->sessions;
    const uint64_t order_key = ppb_rng_key(d->seed, SEQ_RNG_STREAM_ORDER);
    uint64_t draws = 0;
    double spent = 0;
    int next_look = 0;
    out->looks_planned = k;
    out->sessions = d->sessions;
    out->cls = PPB_AB_UNRESOLVED;
    for (int round = 1; round <= d->max_rounds; round++) {
        const int units = 2 * out->sessions;
        for (int slot = 0; slot < d->samples_per_round; slot++) {
            int order[2 * PPB_SEQ_MAX_SESSIONS];
            for (int u = 0; u < units; u++)
                order[u] = u;
            for (int u = units - 1; u > 0; u--) { /* Fisher-Yates */
                int j = (int)(ppb_rng_keyed_u64(order_key, draws++) % (uint64_t)(u + 1));
                int t = order[u];
                order[u] = order[j], order[j] = t;
            }
            for (int u = 0; u < units; u++) {
                int side = order[u] % 2, session = order[u] / 2;
                double ms = 0, cost = 0;
                if ((rc = sample(ctx, side, session, &ms, &cost, err)))
                    return rc;
                if (push(out, side, cap, ms, session, round))
                    return ppb_fail(err, PPB_ENOMEM, "out of memory for samples");
                spent += cost;
            }
        }
        out->rounds = round;
        int scheduled = next_look < k && round == schedule[next_look];
        int broke = round >= d->min_rounds && spent >= d->budget_ms;
        if (!scheduled && !broke)
            continue;
        next_look++;
        /* the information so far; at the last look (the budget used up, or
         * max_rounds) it is 1 and the look spends what is left */
        double t = fmax((double)round / d->max_rounds, spent / d->budget_ms);
        double look_alpha = ppb_seq_alpha_spent(d->alpha, t) - out->alpha_spent;
        if (!(look_alpha > 0)) /* no information since the last look (samples that cost nothing) */
            continue;
        if ((rc = look(d, look_alpha, out, err)))
            return rc;
        if (ppb_seq_settled(d, out->interval.ratio_lo, out->interval.ratio_hi)) {
            out->stop = PPB_SEQ_STOP_RESOLVED;
            return PPB_OK;
        }
        if (broke) {
            out->stop = PPB_SEQ_STOP_BUDGET;
            return PPB_OK;
        }
        /* the sessions' spread outweighs the samples' own: another session, not more rounds, narrows it
         * (twice: a spread estimated from two or three sessions is itself rough, and by chance alone
         * comes out above the samples' standard error in about a third of pairs without any) */
        if (out->sessions < max_sessions && out->between_sd > SEQ_GROW_FACTOR * out->within_se &&
            round < d->max_rounds)
            out->sessions++;
    }
    out->stop = PPB_SEQ_STOP_MAX_ROUNDS;
    return PPB_OK;
}
