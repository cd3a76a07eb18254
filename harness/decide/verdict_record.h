/* A verdict as the store keeps it: the proposal row (verdict, geometric mean,
 * reasons) and one row per case (state, class, ratio and interval). The one
 * place `propose` (abrun) and `compare` turn a verdict into what they store. */
#ifndef PPB_VERDICT_RECORD_H
#define PPB_VERDICT_RECORD_H

#include "store.h"
#include "verdict.h"

/* Fill rec's verdict, geomean_* and reasons, the rules it was decided under
 * (all of them, and PPB_VERDICT_RULE_VERSION), and for each of the n cases
 * pcs[i]'s weight, sessions and between_sd (cases[i]'s), state, cls, ratio,
 * ratio_lo, ratio_hi, p_holm and alpha from a decided report. Leaves the rest
 * as the caller set it: rec's name, path, kind, target, runs and sampling
 * design or history rules; the cases' keys, looks, stop_alpha, noise and
 * history. No I/O. */
int ppb_verdict_record(const ppb_verdict_report *rep, const ppb_verdict_case *cases, int n,
                       const ppb_verdict_rules *rules, ppb_proposal_record *rec, ppb_proposal_case *pcs,
                       ppb_err *err);

/* Decide the n cases under `rules`, fill the record (ppb_verdict_record) and
 * store the proposal row and its cases in one transaction (rec->id). `rep` gets
 * the full verdict: free it with ppb_verdict_report_free, also after an error. */
int ppb_verdict_store(ppb_store *s, const ppb_verdict_case *cases, int n, const ppb_verdict_rules *rules,
                      ppb_proposal_record *rec, ppb_proposal_case *pcs, ppb_verdict_report *rep, ppb_err *err);

#endif
