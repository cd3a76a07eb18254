#include "verdict_record.h"

#include <math.h>
#include <stdio.h>

int ppb_verdict_record(const ppb_verdict_report *rep, const ppb_verdict_case *cases, int n,
                       const ppb_verdict_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                       ppb_err *err)
{
    snprintf(rec->verdict, sizeof rec->verdict, "%s", ppb_verdict_name(rep->verdict));
    rec->min_gain = rules->min_gain;
    rec->max_regression = rules->max_regression;
    rec->threshold = rules->threshold;
    rec->rule_version = PPB_VERDICT_RULE_VERSION;
    rec->alpha = rules->alpha;
    rec->require_correct = rules->require_correct;
    snprintf(rec->method, sizeof rec->method, "%s", ppb_interval_method_name(rules->method));
    rec->bootstrap_reps = rules->bootstrap_reps;
    rec->seed = rules->seed;
    rec->geomean_ratio = rep->have_geomean ? rep->geomean.ratio : NAN;
    rec->geomean_lo = rep->have_geomean ? rep->geomean.ratio_lo : NAN;
    rec->geomean_hi = rep->have_geomean ? rep->geomean.ratio_hi : NAN;
    rec->detectable = rep->detectable > 0 ? rep->detectable : NAN;
    rec->baseline_shift = rec->candidate_shift = NAN; /* a comparison's (run_compare.h) */
    int rc = ppb_verdict_reasons_text(rep, rec->reasons, sizeof rec->reasons, err);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++) {
        const ppb_verdict_outcome *oc = &rep->cases[i];
        ppb_proposal_case *pc = &pcs[i];
        int compared = oc->state == PPB_CASE_COMPARED;
        pc->weight = cases[i].weight;
        snprintf(pc->state, sizeof pc->state, "%s", ppb_case_state_name(oc->state));
        snprintf(pc->cls, sizeof pc->cls, "%s", compared ? ppb_ab_class_name(oc->cls) : "");
        pc->ratio = compared ? oc->interval.ratio : NAN;
        pc->ratio_lo = compared ? oc->interval.ratio_lo : NAN;
        pc->ratio_hi = compared ? oc->interval.ratio_hi : NAN;
        pc->p_holm = compared ? oc->p_holm : NAN;
        pc->sessions = cases[i].sessions;
        pc->between_sd = cases[i].between_sd;
        pc->alpha = compared ? oc->alpha : NAN;
    }
    return PPB_OK;
}

int ppb_verdict_store(ppb_store *s, const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules,
                      ppb_proposal_record *rec, ppb_proposal_case *pcs, ppb_verdict_report *rep, ppb_err *err)
{
    int rc = ppb_verdict_decide(cases, n, rules, rep, err);
    if (!rc)
        rc = ppb_verdict_record(rep, cases, n, rules, rec, pcs, err);
    if (!rc)
        rc = ppb_store_put_proposal(s, rec, pcs, n, err);
    return rc;
}
