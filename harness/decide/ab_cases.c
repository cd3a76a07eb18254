#include "ab_cases.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ppb_error.h"
#include "abtest.h"

/* How the pair was sampled, as the verdict needs it. */
static void fill_sampling(ppb_verdict_case *vc, const ppb_ab_pair_view *pr)
{
    vc->look_share = pr->look_share;
    vc->sessions = pr->sessions;
    vc->between_sd = pr->between_sd;
}

void ppb_ab_pair_case(const ppb_ab_pair_view *pr, ppb_verdict_case *vc)
{
    memset(vc, 0, sizeof *vc);
    vc->key = pr->key;
    vc->weight = pr->weight;
    if (pr->sessions > 0)
        fill_sampling(vc, pr);
    if (pr->untimed_settled)
        vc->untimed = PPB_AB_UNTIMED_SETTLED, vc->in_family = 1;
    for (int s = 0; s < 2; s++) {
        const ppb_result *r = pr->res[s];
        int feasible = r->status != PPB_STATUS_REFUSED, correct = r->status != PPB_STATUS_WRONG;
        const double *samples = r->status == PPB_STATUS_OK || r->status == PPB_STATUS_NOISY
                                    ? r->samples_ms : NULL;
        if (s == 0) {
            vc->baseline = samples, vc->n_baseline = samples ? r->n_samples : 0;
            vc->baseline_feasible = feasible, vc->baseline_correct = correct;
            vc->baseline_reason = r->reason[0] ? r->reason : NULL;
        } else {
            vc->candidate = samples, vc->n_candidate = samples ? r->n_samples : 0;
            vc->candidate_feasible = feasible, vc->candidate_correct = correct;
            vc->candidate_reason = r->reason[0] ? r->reason : NULL;
        }
    }
}

/* Totals over chunks: sample j of a side's prompt = sum of sample j of each of
 * its chunks (the chunks were measured interleaved with the other side's). */
static int chunk_totals(const ppb_ab_pair_view *pairs, int n_pairs, int s, double **out, int *n_out)
{
    int n = -1;
    *out = NULL;
    *n_out = 0;
    for (int i = 0; i < n_pairs; i++) {
        const ppb_result *r = pairs[i].res[s];
        if (!pairs[i].present[s])
            continue;
        if (r->n_samples == 0)
            return PPB_OK;
        n = n < 0 || r->n_samples < n ? r->n_samples : n;
    }
    *n_out = n < 0 ? 0 : n;
    *out = calloc((size_t)(*n_out ? *n_out : 1), sizeof **out);
    if (!*out)
        return PPB_ENOMEM;
    for (int i = 0; i < n_pairs; i++)
        for (int j = 0; j < *n_out && pairs[i].present[s]; j++)
            (*out)[j] += pairs[i].res[s]->samples_ms[j];
    return PPB_OK;
}

static void side_state(const ppb_ab_pair_view *pairs, int n_pairs, int s, int *correct, int *feasible,
                       const char **why)
{
    *correct = 1, *feasible = 1, *why = NULL;
    for (int i = 0; i < n_pairs; i++) {
        const ppb_result *r = pairs[i].res[s];
        if (!pairs[i].present[s])
            continue;
        if (r->status == PPB_STATUS_WRONG && *correct)
            *correct = 0, *why = r->reason;
        if (r->status == PPB_STATUS_REFUSED && *feasible)
            *feasible = 0, *why = r->reason;
    }
}

int ppb_ab_chunked_case(const ppb_ab_pair_view *pairs, int n, const char *key, double *totals[2],
                        ppb_verdict_case *vc)
{
    memset(vc, 0, sizeof *vc);
    totals[0] = totals[1] = NULL;
    vc->key = key;
    vc->weight = 1.0;
    int m[2];
    for (int s = 0; s < 2; s++)
        if (chunk_totals(pairs, n, s, &totals[s], &m[s]))
            return PPB_ENOMEM;
    vc->baseline = totals[0], vc->n_baseline = m[0];
    vc->candidate = totals[1], vc->n_candidate = m[1];
    side_state(pairs, n, 0, &vc->baseline_correct, &vc->baseline_feasible, &vc->baseline_reason);
    side_state(pairs, n, 1, &vc->candidate_correct, &vc->candidate_feasible, &vc->candidate_reason);
    /* The prompt's total as sampled: the chunks' smallest look share, their fewest sessions, and
     * their largest session spread (a bound on the total's relative spread). */
    for (int i = 0; i < n; i++) {
        const ppb_ab_pair_view *pr = &pairs[i];
        if (pr->sessions == 0)
            continue;
        ppb_verdict_case one;
        fill_sampling(&one, pr);
        vc->look_share = vc->look_share == 0 || one.look_share < vc->look_share ? one.look_share : vc->look_share;
        vc->sessions = vc->sessions == 0 || one.sessions < vc->sessions ? one.sessions : vc->sessions;
        vc->between_sd = one.between_sd > vc->between_sd || isnan(one.between_sd) ? one.between_sd
                                                                                 : vc->between_sd;
    }
    return PPB_OK;
}

void ppb_ab_case_design(const ppb_ab_pair_view *pairs, int n, ppb_proposal_case *pc)
{
    pc->looks_taken = pc->looks_planned = 0;
    pc->stop_alpha = pc->look_share = NAN;
    for (int i = 0; i < n; i++) {
        const ppb_ab_pair_view *pr = &pairs[i];
        if (pr->sessions == 0)
            continue;
        pc->looks_taken = pr->looks_taken > pc->looks_taken ? pr->looks_taken : pc->looks_taken;
        pc->looks_planned = pr->looks_planned > pc->looks_planned ? pr->looks_planned : pc->looks_planned;
        pc->stop_alpha = isnan(pc->stop_alpha) || pr->stop_alpha > pc->stop_alpha ? pr->stop_alpha : pc->stop_alpha;
        pc->look_share = isnan(pc->look_share) || pr->look_share < pc->look_share ? pr->look_share : pc->look_share;
    }
}

ppb_seq_design ppb_ab_pair_design(const ppb_proposal *p, int n_pairs, int sessions, uint64_t seed)
{
    const ppb_sampling *sp = &p->sampling;
    return (ppb_seq_design){.samples_per_round = sp->samples_per_round, .min_rounds = sp->min_rounds,
                            .max_rounds = sp->max_rounds, .sessions = sessions < sp->sessions ? sessions : sp->sessions,
                            .max_sessions = sessions, .budget_ms = sp->budget_ms,
                            .alpha = ppb_bonferroni_alpha(p->rules.alpha, n_pairs + 1),
                            .threshold = p->rules.threshold, .min_gain = ppb_verdict_gain_needed(&p->rules),
                            .tolerance = ppb_verdict_tolerance(&p->rules), .seed = seed};
}

int ppb_ab_samples_per_round(const ppb_sampling *sp, double slot_ms)
{
    if (!(slot_ms > 0) || sp->samples_per_round <= 1 || sp->min_rounds < 1)
        return sp->samples_per_round;
    int looks[PPB_SEQ_MAX_LOOKS];
    int k = ppb_seq_looks(sp->min_rounds, sp->max_rounds, looks);
    double fit = floor(sp->budget_ms / (looks[k < 3 ? k - 1 : 2] * slot_ms));
    return fit >= sp->samples_per_round ? sp->samples_per_round : fit < 1 ? 1 : (int)fit;
}

double ppb_ab_case_look_share(const ppb_seq_result *r, const ppb_seq_design *d) { return r->look_alpha / d->alpha; }

/* The kernel time of a side's samples: each sample is a time per launch. */
static double side_kernel_ms(const ppb_result *r)
{
    double sum = 0;
    for (int j = 0; j < r->n_samples; j++)
        sum += r->samples_ms[j];
    return sum * (r->batch_launches > 0 ? r->batch_launches : 1);
}

static int sampled_as_pair(const ppb_ab_pair_view *pr)
{
    return pr->sessions > 0 && pr->res[0]->n_samples > 0 && pr->res[1]->n_samples > 0;
}

void ppb_ab_sampling_cost(const ppb_ab_pair_view *pairs, int n, ppb_ab_cost *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        const ppb_ab_pair_view *pr = &pairs[i];
        if (!sampled_as_pair(pr))
            continue;
        int most = pr->res[0]->n_samples > pr->res[1]->n_samples ? pr->res[0]->n_samples : pr->res[1]->n_samples;
        int fixed = ppb_seq_fixed_samples(most, pr->stop_alpha * pr->look_share, pr->stop_alpha);
        out->fixed_samples = fixed > out->fixed_samples ? fixed : out->fixed_samples;
        out->pairs++;
    }
    for (int i = 0; i < n; i++) {
        const ppb_ab_pair_view *pr = &pairs[i];
        if (!sampled_as_pair(pr))
            continue;
        for (int s = 0; s < 2; s++) {
            double ms = side_kernel_ms(pr->res[s]);
            out->kernel_ms += ms;
            out->fixed_kernel_ms += ms / pr->res[s]->n_samples * out->fixed_samples;
        }
    }
}
