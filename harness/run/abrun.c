#include "abrun.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab_cases.h"
#include "abtest.h"
#include "impl.h"
#include "matrix.h"
#include "measure.h"
#include "provenance.h"
#include "sequential.h"
#include "session.h"
#include "suite.h"
#include "target.h"
#include "verdict_record.h"

/* One compared pair: the two cases and what was measured on each side. */
typedef struct ab_pair {
    ppb_case side[2];          /* 0 = baseline, 1 = candidate */
    int present[2];            /* chunked_prefill: the side with fewer chunks lacks the last ones */
    ppb_result res[2];
    unsigned char *session[2]; /* each sample's session and round, as the design took it */
    int *round[2];
    int sessions;              /* as measured by the design (sequential.h); 0: not measured as a pair */
    int untimed_settled;       /* checked, not timed: an earlier pair had settled the REJECT */
    double look_share;         /* what the stopping look spent of the design's alpha */
    int looks_taken, looks_planned;
    double between_sd;         /* the sessions' spread at the last look */
    double stop_alpha;         /* the design's alpha (its stopping rule's, before looks) */
    char shape_key[PPB_CASE_KEY_MAX];
} ab_pair;

typedef struct ab_ctx {
    const ppb_proposal *p;
    const ppb_propose_options *o;
    ppb_suite suite;
    ppb_target target;
    int have_target;
    ppb_session session[2];    /* session 0 of each side: checked, stores the runs */
    ppb_session extra[2][PPB_SEQ_MAX_SESSIONS - 1];   /* sessions 1.. of each side */
    int n_extra;               /* opened per side */
    ppb_store *store;
    ppb_run_info run[2];
    ab_pair *pairs;
    int n_pairs;
    ppb_proposal_cost cost;    /* the phases' wall time so far (store.h) */
} ab_ctx;

/* The suite's shapes under one side's knobs; a side that names no knob runs
 * the suite's own configs (calibration's A/A). */
static int expand_side(ab_ctx *x, const ppb_side *side, ppb_case_list *out, ppb_err *err)
{
    if (!side->given) {
        int rc = ppb_matrix_expand(&x->suite, out, err);
        if (!rc && x->p->filter[0])
            rc = ppb_matrix_filter(out, x->p->filter, err);
        return rc;
    }
    ppb_axis_set knobs;
    memset(&knobs, 0, sizeof knobs);
    knobs.weight = 1.0;
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (side->given & (1u << f)) {
            knobs.axis[f].n = 1;
            knobs.axis[f].v[0] = side->value[f];
        }
    ppb_axis_set *saved = x->suite.configs;
    int saved_n = x->suite.n_configs;
    x->suite.configs = &knobs;
    x->suite.n_configs = 1;
    int rc = ppb_matrix_expand(&x->suite, out, err);
    x->suite.configs = saved;
    x->suite.n_configs = saved_n;
    if (!rc && x->p->filter[0])
        rc = ppb_matrix_filter(out, x->p->filter, err);
    return rc;
}

static int build_kernel_config_pairs(ab_ctx *x, ppb_err *err)
{
    ppb_case_list base = {0}, cand = {0};
    int rc = expand_side(x, &x->p->baseline, &base, err);
    if (!rc)
        rc = expand_side(x, &x->p->candidate, &cand, err);
    if (!rc && !(x->pairs = calloc((size_t)base.n + 1, sizeof *x->pairs)))
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    /* Pair by shape; when both sides run the suite's configs (A/A), by the whole key. */
    int by_key = !x->p->baseline.given && !x->p->candidate.given;
    for (int i = 0; !rc && i < base.n; i++) {
        char key[PPB_CASE_KEY_MAX], other[PPB_CASE_KEY_MAX];
        ppb_case_shape_key(&base.items[i], key, sizeof key);
        for (int j = 0; j < cand.n; j++) {
            ppb_case_shape_key(&cand.items[j], other, sizeof other);
            if (strcmp(key, other) != 0 ||
                (by_key && strcmp(base.items[i].key, cand.items[j].key) != 0))
                continue;
            ab_pair *pr = &x->pairs[x->n_pairs++];
            pr->side[0] = base.items[i];
            pr->side[1] = cand.items[j];
            pr->present[0] = pr->present[1] = 1;
            snprintf(pr->shape_key, sizeof pr->shape_key, "%s", key);
            break;
        }
    }
    if (!rc && x->n_pairs == 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s: no shape of %s is run by both sides", x->p->path,
                      x->suite.path);
    ppb_case_list_free(&base);
    ppb_case_list_free(&cand);
    return rc;
}

/* max-num-batched-tokens as kernel work: a prompt of P tokens prefilled in
 * chunks of C, chunk i being a prefix-prefill call with query min(C, P - iC) on
 * a context of iC tokens. Pairs are (baseline chunk i, candidate chunk i);
 * the side with fewer chunks leaves the rest of its slots empty. */
static int build_chunked_pairs(ab_ctx *x, ppb_err *err)
{
    const ppb_proposal *p = x->p;
    int chunks[2] = {(p->prompt_len + p->baseline.chunk_tokens - 1) / p->baseline.chunk_tokens,
                     (p->prompt_len + p->candidate.chunk_tokens - 1) / p->candidate.chunk_tokens};
    int n = chunks[0] > chunks[1] ? chunks[0] : chunks[1];
    if (!(x->pairs = calloc((size_t)n, sizeof *x->pairs)))
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    x->n_pairs = n;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < 2; s++) {
            int c = s ? p->candidate.chunk_tokens : p->baseline.chunk_tokens;
            ppb_case *k = &x->pairs[i].side[s];
            *k = p->chunk_case;
            x->pairs[i].present[s] = i < chunks[s];
            if (!x->pairs[i].present[s])
                continue;
            k->shape.context_len = i * c;
            k->shape.query_len = p->prompt_len - i * c < c ? p->prompt_len - i * c : c;
            ppb_case_make_key(k);
            ppb_err verr;
            if (ppb_case_validate(k, &verr))
                return ppb_fail(err, PPB_EINPUT, "%s: chunk %d: %s", p->path, i, verr.msg);
        }
    return PPB_OK;
}

static int open_sessions(ab_ctx *x, ppb_err *err)
{
    const ppb_propose_options *o = x->o;
    const char *target = o->target ? o->target : x->p->target;
    if (target && target[0] && strcmp(target, "none") != 0) {
        char dir[4096];
        ppb_proposal_suites_dir(x->p, dir, sizeof dir);
        int rc = o->target ? ppb_target_load_arg(dir, target, &x->target, err)
                           : ppb_target_load_named(dir, target, &x->target, err);
        if (rc)
            return rc;
        x->have_target = 1;
    }
    for (int s = 0; s < 2; s++) {
        int rc = ppb_session_open(&x->session[s], o->backend ? o->backend : "auto",
                                  o->device_index, x->have_target ? &x->target : NULL,
                                  o->cpu_max_gflop, s == 0 ? o->log : NULL, err);
        if (rc)
            return rc;
    }
    /* The further sessions of each side: the same backend and device, opened
     * (and later prepared) separately, so their allocations differ. */
    const ppb_sampling *sp = &x->p->sampling;
    const int most = sp->max_sessions > sp->sessions ? sp->max_sessions : sp->sessions;
    for (; x->n_extra < most - 1; x->n_extra++)
        for (int s = 0; s < 2; s++) {
            int rc = ppb_session_open(&x->extra[s][x->n_extra], x->session[s].ops->name, o->device_index,
                                      x->have_target ? &x->target : NULL, o->cpu_max_gflop, NULL, err);
            if (rc) {
                if (s == 1)
                    ppb_session_close(&x->extra[0][x->n_extra]);
                return rc;
            }
        }
    return PPB_OK;
}

static ppb_session *session_of(ab_ctx *x, int side, int session)
{
    return session ? &x->extra[side][session - 1] : &x->session[side];
}

/* What one pair's sampling needs to take a sample. */
typedef struct pair_sampler {
    ab_ctx *x;
    int launches, cold;
} pair_sampler;

/* One timed sample of a (side, session) unit. Calibration's known slowdown
 * scales the candidate's measured time: the same launches, the same regime
 * as a proposal, with an effect of exactly that size. */
static int sample_unit(void *ctx, int side, int session, double *ms, double *cost_ms, ppb_err *err)
{
    const pair_sampler *ps = ctx;
    ppb_session *ss = session_of(ps->x, side, session);
    int rc = ss->ops->time_sample(ss->backend, ps->launches, ps->cold, ms, err);
    *cost_ms = *ms * ps->launches;
    if (side == 1)
        *ms *= 1 + ps->x->o->candidate_slowdown;
    return rc;
}

/* Sample the pair by the sequential design (ab_cases.h's ppb_ab_pair_design)
 * over `sessions` prepared sessions per side; the pair keeps the samples and
 * the spread. */
static int measure_pair(ab_ctx *x, ab_pair *pr, int sessions, ppb_err *err)
{
    const ppb_measure_settings *m = &x->suite.measure;
    pair_sampler ps = {x, 1, m->cold_l2};
    double t0 = ppb_monotonic_ms();
    /* Every unit counts the same launches per sample so batching cannot bias the ratio. */
    for (int side = 0; side < 2; side++)
        for (int k = 0; k < sessions; k++) {
            ppb_session *ss = session_of(x, side, k);
            /* every session was prepared afresh (the check's was released): none has launched */
            int launches, rc = ppb_measure_warmup(ss->ops, ss->backend, m, 0, 2, NULL, &launches, err);
            if (rc)
                return rc;
            ps.launches = launches > ps.launches ? launches : ps.launches;
        }
    ppb_seq_design d = ppb_ab_pair_design(x->p, x->n_pairs, sessions, ppb_case_input_seed(m->seed, pr->shape_key));
    /* a slow pair's rounds shrink so that the rounds of its first three looks fit its budget */
    double slot_ms = 0;
    for (int side = 0; side < 2; side++)
        slot_ms += d.sessions * ps.launches * pr->res[side].checked_launch_ms;
    d.samples_per_round = ppb_ab_samples_per_round(&x->p->sampling, slot_ms);
    ppb_seq_result r;
    double t1 = ppb_monotonic_ms();
    int rc = ppb_seq_run(&d, sample_unit, &ps, &r, err);
    x->cost.warmup_ms += t1 - t0;
    x->cost.sampling_ms += ppb_monotonic_ms() - t1;
    if (!rc)
        for (int s = 0; s < 2; s++) {
            pr->res[s].samples_ms = r.samples[s], pr->res[s].n_samples = r.n[s];
            pr->session[s] = r.session[s], pr->round[s] = r.round[s];
            r.samples[s] = NULL, r.session[s] = NULL, r.round[s] = NULL;
            pr->res[s].batch_launches = ps.launches;
            ppb_result_summarise(&pr->res[s], ppb_case_flops(&pr->side[s]), ppb_case_min_bytes(&pr->side[s]));
        }
    pr->sessions = r.sessions; /* those that took samples: the design may have added some */
    pr->look_share = ppb_ab_case_look_share(&r, &d);
    pr->looks_taken = r.looks_taken, pr->looks_planned = r.looks_planned;
    pr->between_sd = r.between_sd;
    pr->stop_alpha = d.alpha;
    ppb_seq_result_free(&r);
    return rc;
}

/* Prepare session k of side s on w: 1 when it is ready, else 0 with why. */
static int prepare_session(ab_ctx *x, ab_pair *pr, int s, int k, const ppb_workload *w, ppb_err *why)
{
    ppb_session *ss = session_of(x, s, k);
    ppb_result scratch;
    ppb_result_init(&scratch);
    int ok = ss->ops->prepare(ss->backend, &pr->side[s], w, &scratch, why) == PPB_OK;
    ppb_result_free(&scratch);
    return ok;
}

/* Prepare sessions 0.. of both sides on the inputs. Returns how many
 * sessions per side are ready (0: not even the first); one that cannot be
 * prepared (e.g. no room for another copy) ends the list, said on the log. */
static int prepare_sessions(ab_ctx *x, ab_pair *pr, const ppb_workload *w[2], int prepared[2][PPB_SEQ_MAX_SESSIONS])
{
    int k = 0;
    for (; k <= x->n_extra; k++) {
        int ok = 1;
        for (int s = 0; s < 2 && ok; s++) {
            ppb_err why;
            ok = prepared[s][k] = prepare_session(x, pr, s, k, w[s], &why);
            if (!ok)
                fprintf(x->o->log ? x->o->log : stderr, "  %s: session %d of the %s cannot be prepared (%s): %d "
                        "session%s per side\n", pr->shape_key, k + 1, s ? "candidate" : "baseline", why.msg, k,
                        k == 1 ? "" : "s");
        }
        if (!ok)
            break;
    }
    return k;
}

/* 1: each side has its own inputs (a chunked prompt's chunks differ per side);
 * 0: both sides of a pair share one set, built by the first side the backend
 * does not refuse from its shape, so they are timed on the same data. */
static int distinct_inputs(const ab_ctx *x) { return x->p->kind == PPB_PROPOSAL_CHUNKED_PREFILL; }

/* Check both sides of a pair against the float64 reference, each prepared,
 * launched once and released: whether the pair can be timed, and the checked
 * launches' times (the order of timing and a slow pair's rounds use them). */
static int check_pair(ab_ctx *x, ab_pair *pr, ppb_err *err)
{
    ppb_workload w[2];
    ppb_reference_rows ref[2] = {{0}};   /* of w[i]: both sides of a kernel_config pair check against one */
    int prepared[2] = {0, 0}, rc = PPB_OK;
    memset(w, 0, sizeof w);
    for (int s = 0; s < 2 && !rc; s++) {
        ppb_result_init(&pr->res[s]);
        if (!pr->present[s]) {
            pr->res[s].status = PPB_STATUS_SKIPPED;
            continue;
        }
        int wi = distinct_inputs(x) ? s : 0;
        uint64_t seed = ppb_case_seed(x->suite.measure.seed, &pr->side[s]);
        double t0 = ppb_monotonic_ms();
        if (!w[wi].c)
            ppb_session_workload(&x->session[s], &pr->side[s], seed, &x->suite.check, NULL, &ref[wi], &w[wi],
                                 &pr->res[s]);
        double t1 = ppb_monotonic_ms();
        if (pr->res[s].status == PPB_STATUS_OK)
            rc = ppb_session_check(&x->session[s], &pr->side[s], &w[wi], &x->suite.check, seed, &ref[wi],
                                   &pr->res[s], &prepared[s]);
        x->cost.inputs_ms += t1 - t0;
        x->cost.check_ms += ppb_monotonic_ms() - t1;
    }
    for (int s = 0; s < 2; s++) {
        if (pr->present[s])
            ppb_session_judge(&x->session[s], &pr->side[s], &pr->res[s]);
        ppb_session_release(&x->session[s], prepared[s], 0);
        ppb_reference_rows_free(&ref[s]);
        ppb_workload_free(&w[s]);
    }
    return rc ? ppb_fail(err, rc, "interrupted") : PPB_OK;
}

/* Time a checked pair: its inputs again (the same seed, so the same inputs),
 * every session of both sides prepared afresh, then sampled by the design; a
 * chunk only one side has is timed alone. */
static int time_pair(ab_ctx *x, ab_pair *pr, ppb_err *err)
{
    ppb_workload w[2];
    ppb_reference_rows ref[2] = {{0}};
    int prepared[2][PPB_SEQ_MAX_SESSIONS] = {{0}}, rc = PPB_OK, timable[2];
    memset(w, 0, sizeof w);
    double t0 = ppb_monotonic_ms();
    for (int s = 0; s < 2; s++) {
        timable[s] = pr->res[s].status == PPB_STATUS_OK;
        int wi = distinct_inputs(x) ? s : 0;
        if (timable[s] && !w[wi].c) {
            ppb_result scratch;
            ppb_result_init(&scratch);
            ppb_session_workload(&x->session[s], &pr->side[s], ppb_case_seed(x->suite.measure.seed, &pr->side[s]),
                                 &x->suite.check, NULL, &ref[wi], &w[wi], &scratch);
            if (scratch.status != PPB_STATUS_OK) /* it was built for the check: only memory taken since */
                rc = ppb_fail(err, PPB_EINPUT, "%s: the inputs built for its check cannot be built again: %s",
                              pr->shape_key, scratch.reason);
            ppb_result_free(&scratch);
        }
    }
    const ppb_workload *ws[2] = {&w[0], &w[distinct_inputs(x) ? 1 : 0]};
    double t1 = ppb_monotonic_ms();
    x->cost.inputs_ms += t1 - t0;
    if (!rc && timable[0] && timable[1]) {
        int sessions = prepare_sessions(x, pr, ws, prepared);
        x->cost.warmup_ms += ppb_monotonic_ms() - t1; /* getting the timing sessions ready */
        rc = sessions > 0 ? measure_pair(x, pr, sessions, err)
                          : ppb_fail(err, PPB_EINPUT, "%s: its sessions cannot be prepared again", pr->shape_key);
    } else if (!rc) { /* a chunk only one side has: that side alone, in its session 0 */
        for (int s = 0; s < 2 && !rc; s++) {
            ppb_err why;
            if (!timable[s])
                continue;
            if (!(prepared[s][0] = prepare_session(x, pr, s, 0, ws[s], &why))) {
                rc = ppb_fail(err, PPB_EINPUT, "%s: the %s cannot be prepared again: %s", pr->shape_key,
                              s ? "candidate" : "baseline", why.msg);
                break;
            }
            x->cost.warmup_ms += ppb_monotonic_ms() - t1;
            pr->res[s].checked_launch_ms = 0; /* prepared afresh: its warm-up starts from nothing */
            rc = ppb_measure_case(x->session[s].ops, x->session[s].backend, &x->suite.measure, NULL,
                                  &pr->res[s], err);
        }
    }
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k <= x->n_extra; k++)
            ppb_session_release(session_of(x, s, k), prepared[s][k], 0);
        ppb_reference_rows_free(&ref[s]);
        ppb_workload_free(&w[s]);
    }
    return rc;
}

/* A checked pair the verdict no longer needs timed (note_settled): stored as
 * skipped, saying which pair settled it. */
static void leave_untimed(ab_ctx *x, ab_pair *pr)
{
    pr->untimed_settled = 1;
    for (int s = 0; s < 2; s++) {
        pr->res[s].status = PPB_STATUS_SKIPPED;
        snprintf(pr->res[s].reason, sizeof pr->res[s].reason,
                 "checked, not timed: pair %d had settled the proposal's REJECT", x->cost.settled_by_pair);
    }
}

/* The pair as the verdict takes it (ab_cases.h). */
static ppb_ab_pair_view pair_view(const ab_pair *pr)
{
    return (ppb_ab_pair_view){.key = pr->shape_key, .weight = pr->side[0].weight,
                              .present = {pr->present[0], pr->present[1]}, .res = {&pr->res[0], &pr->res[1]},
                              .sessions = pr->sessions, .untimed_settled = pr->untimed_settled,
                              .look_share = pr->look_share, .between_sd = pr->between_sd,
                              .looks_taken = pr->looks_taken, .looks_planned = pr->looks_planned,
                              .stop_alpha = pr->stop_alpha};
}

/* After pair i (checked, or timed): when its case alone settles a REJECT
 * (verdict.h) and `left` pairs could still be timed, none of them will be
 * (sampling.stop_when_settled); the log and the verdict's cost say so. A
 * chunk is not a case: chunked prompts go on. */
static void note_settled(ab_ctx *x, int i, int left, FILE *log)
{
    if (x->cost.settled_by_pair || !x->p->sampling.stop_when_settled || x->p->kind == PPB_PROPOSAL_CHUNKED_PREFILL ||
        left < 1)
        return;
    ppb_ab_pair_view view = pair_view(&x->pairs[i]);
    ppb_verdict_case vc;
    ppb_ab_pair_case(&view, &vc);
    if (!ppb_verdict_case_settles_reject(&vc, &x->p->rules, x->n_pairs))
        return;
    x->cost.settled_by_pair = i + 1;
    fprintf(log, "  the verdict is REJECT whatever the other pairs show (pair %d): ", i + 1);
    if (left == 1)
        fprintf(log, "the pair left is checked, not timed\n");
    else
        fprintf(log, "the %d pairs left are checked, not timed\n", left);
}

/* candidate / baseline of the checked launches, one each: where to look first,
 * not a measurement; 0 when either is unknown. */
static double checked_ratio(const ab_pair *pr)
{
    double b = pr->res[0].checked_launch_ms, c = pr->res[1].checked_launch_ms;
    return b > 0 && c > 0 ? c / b : 0;
}

typedef struct timing_slot {
    int pair;
    double apparent;   /* |log ratio| of the checked launches; 0 when either is unknown */
} timing_slot;

static int by_apparent_difference(const void *a, const void *b)
{
    const timing_slot *x = a, *y = b;
    if (x->apparent != y->apparent)
        return x->apparent < y->apparent ? 1 : -1;
    return (x->pair > y->pair) - (x->pair < y->pair);
}

/* Both sides checked ok; for a chunk, either side (one only one side has is timed alone). */
static int timable(const ab_ctx *x, const ab_pair *pr)
{
    int ok0 = pr->res[0].status == PPB_STATUS_OK, ok1 = pr->res[1].status == PPB_STATUS_OK;
    return distinct_inputs(x) ? ok0 || ok1 : ok0 && ok1;
}

/* The order pairs are timed in: the largest difference their checked launches
 * showed first (|log(candidate / baseline)|; suite order among equals), so a
 * pair that settles a REJECT alone most likely comes first and the others need
 * no timing. One launch a side is no measurement, only a guess at where to look:
 * the order is fixed before any sample, so no interval depends on it. Chunks
 * keep their order. Returns how many pairs are to be timed. */
static int timing_order(const ab_ctx *x, timing_slot *order)
{
    int n = 0;
    for (int i = 0; i < x->n_pairs; i++) {
        if (!timable(x, &x->pairs[i]))
            continue;
        double ratio = checked_ratio(&x->pairs[i]);
        order[n++] = (timing_slot){i, ratio > 0 ? fabs(log(ratio)) : 0};
    }
    if (!distinct_inputs(x))
        qsort(order, (size_t)n, sizeof *order, by_apparent_difference);
    return n;
}

static int store_pair(ab_ctx *x, ab_pair *pr, ppb_err *err)
{
    int rc = PPB_OK;
    for (int s = 0; s < 2 && !rc; s++)
        if (pr->present[s]) {
            ppb_sample_tags tags = {pr->session[s], pr->round[s]};
            rc = ppb_store_put_tagged_result(x->store, x->run[s].id, &pr->side[s], &pr->res[s],
                                             pr->session[s] ? &tags : NULL, err);
        }
    return rc;
}

static const char *pair_key(const ab_pair *pr) { return pr->shape_key[0] ? pr->shape_key : pr->side[0].key; }

/* Every pair checked, then the timable ones timed in timing_order; each pair
 * stored once its last state is known. */
static int check_then_time(ab_ctx *x, FILE *log, ppb_err *err)
{
    int rc = PPB_OK;
    for (int i = 0; i < x->n_pairs && !rc; i++) {
        ab_pair *pr = &x->pairs[i];
        double t0 = ppb_monotonic_ms();
        rc = check_pair(x, pr, err);
        fprintf(log, "  [%d/%d] %s: baseline %s, candidate %s (checked in %.2f s", i + 1, x->n_pairs, pair_key(pr),
                ppb_status_name(pr->res[0].status), ppb_status_name(pr->res[1].status),
                (ppb_monotonic_ms() - t0) / 1e3);
        if (checked_ratio(pr) > 0)
            fprintf(log, "; one launch each: candidate x%.3f", checked_ratio(pr));
        fprintf(log, ")\n");
        if (!rc && !timable(x, pr))
            rc = store_pair(x, pr, err); /* nothing to time: its state is final */
        if (!rc)
            note_settled(x, i, x->n_pairs - 1, log);
    }
    timing_slot *order = rc ? NULL : calloc((size_t)(x->n_pairs > 0 ? x->n_pairs : 1), sizeof *order);
    if (!rc && !order)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    int n = rc ? 0 : timing_order(x, order);
    if (n > 0 && !x->cost.settled_by_pair)
        fprintf(log, "  timing %d pair%s, %s\n", n, n == 1 ? "" : "s",
                distinct_inputs(x) ? "chunk by chunk" : "the largest difference the checked launches showed first");
    for (int k = 0; k < n && !rc; k++) {
        ab_pair *pr = &x->pairs[order[k].pair];
        if (x->cost.settled_by_pair) { /* never for chunks: a prompt is one case (note_settled) */
            leave_untimed(x, pr);
        } else {
            const ppb_proposal_cost before = x->cost;
            rc = time_pair(x, pr, err);
            fprintf(log, "  [%d/%d] %s: timed (%.2f s: warm-up %.2f, sampling %.2f)\n", k + 1, n, pair_key(pr),
                    (x->cost.inputs_ms + x->cost.warmup_ms + x->cost.sampling_ms - before.inputs_ms -
                     before.warmup_ms - before.sampling_ms) / 1e3,
                    (x->cost.inputs_ms + x->cost.warmup_ms - before.inputs_ms - before.warmup_ms) / 1e3,
                    (x->cost.sampling_ms - before.sampling_ms) / 1e3);
        }
        if (!rc)
            rc = store_pair(x, pr, err);
        if (!rc)
            note_settled(x, order[k].pair, n - k - 1, log);
    }
    free(order);
    return rc;
}

static int decide_and_store(ab_ctx *x, double started_ms, ppb_propose_outcome *out, ppb_err *err)
{
    ppb_proposal_record *rec = &out->rec;
    const int chunked = x->p->kind == PPB_PROPOSAL_CHUNKED_PREFILL;
    int n_cases = chunked ? 1 : x->n_pairs, rc = PPB_OK;
    ppb_verdict_case *vcs = calloc((size_t)n_cases, sizeof *vcs);
    ppb_proposal_case *pcs = calloc((size_t)n_cases, sizeof *pcs);
    ppb_ab_pair_view *views = calloc((size_t)x->n_pairs, sizeof *views);
    double *totals[2] = {NULL, NULL};
    if (!vcs || !pcs || !views) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    for (int i = 0; i < x->n_pairs; i++)
        views[i] = pair_view(&x->pairs[i]);
    for (int i = 0; i < n_cases; i++)
        pcs[i].noise = pcs[i].baseline_offset = NAN;
    if (chunked) {
        if (ppb_ab_chunked_case(views, x->n_pairs, x->p->name, totals, &vcs[0])) {
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
            goto end;
        }
        ppb_ab_case_design(views, x->n_pairs, &pcs[0]);
    } else {
        for (int i = 0; i < n_cases; i++) {
            ppb_ab_pair_case(&views[i], &vcs[i]);
            ppb_ab_case_design(&views[i], 1, &pcs[i]);
        }
    }
    snprintf(rec->name, sizeof rec->name, "%s", x->p->name);
    snprintf(rec->path, sizeof rec->path, "%s", x->p->path);
    snprintf(rec->kind, sizeof rec->kind, "%s", ppb_proposal_kind_name(x->p->kind));
    snprintf(rec->target, sizeof rec->target, "%s", x->have_target ? x->target.name : "");
    rec->baseline_run = x->run[0].id;
    rec->candidate_run = x->run[1].id;
    const ppb_sampling *sp = &x->p->sampling;
    rec->samples_per_round = sp->samples_per_round, rec->min_rounds = sp->min_rounds;
    rec->max_rounds = sp->max_rounds, rec->sessions = sp->sessions, rec->budget_ms = sp->budget_ms;
    for (int i = 0; i < n_cases; i++) {
        ppb_proposal_case *pc = &pcs[i];
        snprintf(pc->baseline_key, sizeof pc->baseline_key, "%s",
                 chunked ? "(all baseline chunks)" : x->pairs[i].side[0].key);
        snprintf(pc->candidate_key, sizeof pc->candidate_key, "%s",
                 chunked ? "(all candidate chunks)" : x->pairs[i].side[1].key);
    }
    ppb_ab_cost sc;
    ppb_ab_sampling_cost(views, x->n_pairs, &sc);
    x->cost.kernel_ms = sc.kernel_ms, x->cost.fixed_kernel_ms = sc.fixed_kernel_ms;
    x->cost.fixed_samples = sc.fixed_samples;
    x->cost.wall_ms = ppb_monotonic_ms() - started_ms;
    rec->cost = x->cost;
    ppb_verdict_rules rules = x->p->rules;
    rules.budget_ms = sp->budget_ms;
    rc = ppb_verdict_store(x->store, vcs, n_cases, &rules, rec, pcs, &out->report, err);
    if (!rc) {
        out->cases = pcs, out->n_cases = n_cases;
        pcs = NULL;
    }
end:
    free(vcs);
    free(pcs);
    free(views);
    free(totals[0]);
    free(totals[1]);
    return rc;
}

/* Before anything is stored: when the backend refuses a side of every pair,
 * one line says so and why (ppb_refusals_text), instead of a verdict reached
 * on nothing after a line per pair. Stops at the first pair both sides of
 * which would go on to prepare. */
static int check_all_refused(ab_ctx *x, FILE *log, ppb_err *err)
{
    ppb_refusals t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < x->n_pairs; i++) {
        ab_pair *pr = &x->pairs[i];
        int refused = 0;
        for (int s = 0; s < 2 && !refused; s++) {
            if (!pr->present[s])
                continue;
            ppb_result res;
            ppb_result_init(&res);
            refused = ppb_session_refuses(&x->session[s], &pr->side[s],
                                          ppb_case_seed(x->suite.measure.seed, &pr->side[s]), &res) &&
                      (res.status == PPB_STATUS_REFUSED || res.status == PPB_STATUS_SKIPPED);
            if (refused)
                ppb_refusals_add(&t, res.reason);
            ppb_result_free(&res);
        }
        if (!refused)
            return PPB_OK;
    }
    char line[2048];
    ppb_refusals_text(&t, "pairs", &x->session[0], line, sizeof line);
    if (x->o->fail_if_all_refused)
        return ppb_fail(err, PPB_EREFUSED, "%s", line);
    fprintf(log, "ppbench propose %s: %s\n", x->p->name, line);
    return PPB_OK;
}

/* A side that names an implementation this machine does not have is a mistake
 * in the proposal (or a missing --plugin), said before anything runs, not a
 * proposal whose every case is left out. (A source_patch's sides run the
 * plugins prepared from its trees just before: a missing one is refused case
 * by case, naming it.) */
static int require_side_impls(const ppb_proposal *p, ppb_err *err)
{
    const ppb_side *sides[2] = {&p->baseline, &p->candidate};
    if (p->kind == PPB_PROPOSAL_SOURCE_PATCH)
        return PPB_OK;
    for (int s = 0; s < 2; s++) {
        if (!(sides[s]->given & (1u << PPB_F_IMPL)) || ppb_impl_require(sides[s]->value[PPB_F_IMPL], err) == PPB_OK)
            continue;
        ppb_err_prefix(err, "%s: %s.impl: ", p->path, s ? "candidate" : "baseline");
        return PPB_EINPUT;
    }
    return PPB_OK;
}

int ppb_propose_run(const ppb_proposal *p, const ppb_propose_options *o, ppb_propose_outcome *out, ppb_err *err)
{
    ab_ctx x;
    memset(&x, 0, sizeof x);
    memset(out, 0, sizeof *out);
    x.p = p;
    x.o = o;
    const double started_ms = o->started_ms > 0 ? o->started_ms : ppb_monotonic_ms();
    FILE *log = o->log ? o->log : stderr;
    int rc = require_side_impls(p, err);
    if (!rc)
        rc = ppb_suite_load(p->suite_path, &x.suite, err);
    if (!rc)
        rc = p->kind == PPB_PROPOSAL_CHUNKED_PREFILL ? build_chunked_pairs(&x, err)
                                                     : build_kernel_config_pairs(&x, err);
    if (!rc)
        rc = open_sessions(&x, err);
    if (!rc)
        rc = check_all_refused(&x, log, err);
    if (!rc)
        rc = ppb_store_open(&x.store, o->db_path, err);
    for (int s = 0; s < 2 && !rc; s++) {
        char label[256], args[256];
        char scaled[48] = "";
        if (s == 1 && o->candidate_slowdown != 0)   /* a known effect: the label says so */
            snprintf(scaled, sizeof scaled, " (times x%.4g)", 1 + o->candidate_slowdown);
        snprintf(label, sizeof label, "proposal %s: %s%s%s%s", p->name, s ? "candidate" : "baseline", scaled,
                 o->label ? " " : "", o->label ? o->label : "");
        snprintf(args, sizeof args, "proposal=%s\n", p->path);
        x.session[s].run_kind = o->run_kind ? o->run_kind : "proposal";
        rc = ppb_session_begin_run(&x.session[s], x.store, &x.suite, NULL, label, args, x.n_pairs,
                                   &x.run[s], err);
    }
    if (rc)
        goto end;
    x.cost.setup_ms = ppb_monotonic_ms() - started_ms;
    fprintf(log, "ppbench propose %s: %d pairs, %s backend on %s%s\n", p->name, x.n_pairs,
            x.session[0].ops->name, x.session[0].device.name,
            x.session[0].device.is_gpu ? "" : " (CPU timings)");
    rc = check_then_time(&x, log, err);
    if (!rc)
        rc = decide_and_store(&x, started_ms, out, err);
    for (int s = 0; s < 2; s++)
        if (x.run[s].id) {
            ppb_err ferr;
            ppb_session_store_environment(&x.session[s], x.store, x.run[s].id, "after.");
            ppb_store_finish_run(x.store, x.run[s].id, rc ? "failed" : "complete", &ferr);
        }
end:
    for (int i = 0; i < x.n_pairs; i++)
        for (int s = 0; s < 2; s++) {
            ppb_result_free(&x.pairs[i].res[s]);
            free(x.pairs[i].session[s]);
            free(x.pairs[i].round[s]);
        }
    free(x.pairs);
    for (int s = 0; s < 2; s++) {
        ppb_session_close(&x.session[s]);
        for (int k = 0; k < x.n_extra; k++)
            ppb_session_close(&x.extra[s][k]);
    }
    out->store = x.store; /* the caller's now, closed with the outcome */
    ppb_suite_free(&x.suite);
    return rc;
}

void ppb_propose_outcome_free(ppb_propose_outcome *out)
{
    free(out->cases);
    ppb_verdict_report_free(&out->report);
    if (out->store)
        ppb_store_close(out->store);
    memset(out, 0, sizeof *out);
}
