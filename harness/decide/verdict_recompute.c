/* A stored verdict decided again from what the store holds, and compared
 * with what it says (verdict_recompute.h). */
#include "verdict_recompute.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_cases.h"
#include "grow.h"
#include "run_compare.h"
#include "sequential.h"
#include "verdict_record.h"

/* ---- reading ------------------------------------------------------------- */

int ppb_stored_run_add(ppb_stored_run *run, const ppb_case *c, const ppb_result *r, const ppb_sample_tags *tags)
{
    if (ppb_grow((void **)&run->items, &run->cap, run->n, sizeof *run->items, 16) != PPB_OK)
        return PPB_ENOMEM;
    ppb_stored_result *it = &run->items[run->n];
    memset(it, 0, sizeof *it);
    it->c = *c;
    it->r = *r;
    it->r.samples_ms = NULL;
    size_t n = (size_t)(r->n_samples > 0 ? r->n_samples : 0);
    if (n && !(it->r.samples_ms = malloc(n * sizeof *it->r.samples_ms)))
        return PPB_ENOMEM;
    if (n)
        memcpy(it->r.samples_ms, r->samples_ms, n * sizeof *it->r.samples_ms);
    if (tags && n) {
        it->session = malloc(n);
        it->round = malloc(n * sizeof *it->round);
        if (!it->session || !it->round) {
            free(it->session);
            free(it->round);
            free(it->r.samples_ms);
            return PPB_ENOMEM;
        }
        memcpy(it->session, tags->session, n);
        memcpy(it->round, tags->round, n * sizeof *it->round);
    }
    run->n++;
    return PPB_OK;
}

static int keep_result(void *ctx, const ppb_case *c, const ppb_result *r, const ppb_sample_tags *tags)
{
    return ppb_stored_run_add(ctx, c, r, tags);
}

static int keep_case(void *ctx, const ppb_proposal_case *c)
{
    ppb_stored_verdict *sv = ctx;
    if (ppb_grow((void **)&sv->pcs, &sv->cap_cases, sv->n_cases, sizeof *sv->pcs, 16) != PPB_OK)
        return PPB_ENOMEM;
    sv->pcs[sv->n_cases++] = *c;
    return 0;
}

int ppb_stored_verdict_load(ppb_store *s, int64_t id, ppb_stored_verdict *sv, ppb_err *err)
{
    memset(sv, 0, sizeof *sv);
    if (!(sv->rec = malloc(sizeof *sv->rec)))
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    int rc = ppb_store_get_proposal(s, id, sv->rec, err);
    if (rc)
        return rc;
    const ppb_proposal_record *rec = sv->rec;
    if (strcmp(rec->kind, "kv_capacity") == 0)
        return ppb_fail(err, PPB_EINPUT,
                        "proposal %lld is a kv_capacity verdict: arithmetic on the proposal's figures, no samples, "
                        "so there is nothing to recompute",
                        (long long)id);
    if (rec->rule_version <= 0)
        return ppb_fail(err, PPB_EINPUT,
                        "proposal %lld was stored before ppbench recorded what a verdict used; it cannot be "
                        "recomputed",
                        (long long)id);
    if (rec->baseline_run <= 0 || rec->candidate_run <= 0)
        return ppb_fail(err, PPB_EINPUT,
                        "proposal %lld (%s) has its %s run in another database (compare --baseline-db): it cannot "
                        "be recomputed from this one",
                        (long long)id, rec->name, rec->baseline_run <= 0 ? "baseline" : "candidate");
    rc = ppb_store_each_proposal_case(s, id, keep_case, sv, err);
    if (rc == PPB_ENOMEM)
        return ppb_fail(err, rc, "out of memory reading proposal %lld's cases", (long long)id);
    for (int k = 0; k < 2 && !rc; k++) {
        rc = ppb_store_each_tagged_result(s, k ? rec->candidate_run : rec->baseline_run, keep_result, &sv->run[k],
                                          err);
        if (rc == PPB_ENOMEM)
            ppb_fail(err, rc, "out of memory reading run %lld", (long long)(k ? rec->candidate_run : rec->baseline_run));
        else if (rc)
            ppb_err_prefix(err, "proposal %lld's %s run: ", (long long)id, k ? "candidate" : "baseline");
    }
    return rc;
}

void ppb_stored_verdict_free(ppb_stored_verdict *sv)
{
    if (!sv)
        return;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < sv->run[k].n; i++) {
            ppb_result_free(&sv->run[k].items[i].r);
            free(sv->run[k].items[i].session);
            free(sv->run[k].items[i].round);
        }
        free(sv->run[k].items);
    }
    free(sv->pcs);
    free(sv->rec);
    memset(sv, 0, sizeof *sv);
}

/* ---- rebuilding ---------------------------------------------------------- */

static const ppb_stored_result *find_result(const ppb_stored_run *run, const char *key)
{
    for (int i = 0; i < run->n; i++)
        if (strcmp(run->items[i].c.key, key) == 0)
            return &run->items[i];
    return NULL;
}

static int rules_of(const ppb_proposal_record *rec, ppb_verdict_rules *rules, ppb_err *err)
{
    ppb_verdict_rules_default(rules);
    rules->min_gain = rec->min_gain;
    rules->max_regression = rec->max_regression;
    rules->threshold = rec->threshold;
    rules->alpha = rec->alpha;
    rules->require_correct = rec->require_correct;
    rules->bootstrap_reps = rec->bootstrap_reps;
    rules->seed = rec->seed;
    rules->budget_ms = rec->budget_ms > 0 ? rec->budget_ms : 0;
    rules->method = ppb_interval_method_parse(rec->method);
    if (rules->method < 0)
        return ppb_fail(err, PPB_EINPUT, "proposal %lld: unknown interval method '%s'", (long long)rec->id,
                        rec->method);
    return PPB_OK;
}

/* The sampling of one pair, re-derived from its samples' tags and the stored
 * design: the sessions that took samples, the looks the design planned and
 * those taken (every look but the last is a scheduled one, the last is after
 * the last round: ppb_seq_run), the spread at the last look (the samples are
 * those of the last look) and the stopping rule's alpha. The share of it the
 * stopping look spent depends on the budget used at each look, which the
 * store does not keep: it is taken as the stored case has it (stored_share);
 * verdicts of rule version 1 spent alpha / the looks planned. Untagged: not
 * sampled as a pair. */
static int pair_sampling(const ppb_stored_verdict *sv, const ppb_stored_result *r[2], int n_pairs,
                         double stored_share, ppb_ab_pair_view *v, ppb_proposal *design, ppb_err *err)
{
    const ppb_proposal_record *rec = sv->rec;
    v->sessions = v->looks_taken = v->looks_planned = 0;
    v->between_sd = v->look_share = 0;
    v->stop_alpha = NAN;
    if (!r[0] || !r[1] || !r[0]->session || !r[1]->session)
        return PPB_OK;
    int sessions = 0, rounds = 0;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < r[s]->r.n_samples; k++) {
            sessions = r[s]->session[k] + 1 > sessions ? r[s]->session[k] + 1 : sessions;
            rounds = r[s]->round[k] > rounds ? r[s]->round[k] : rounds;
        }
    if (sessions > PPB_SEQ_MAX_SESSIONS)
        return ppb_fail(err, PPB_EINPUT, "%s: samples of session %d (at most %d)", r[0]->c.key, sessions - 1,
                        PPB_SEQ_MAX_SESSIONS - 1);
    int schedule[PPB_SEQ_MAX_LOOKS];
    ppb_seq_result seq;
    memset(&seq, 0, sizeof seq);
    seq.looks_planned = ppb_seq_looks(rec->min_rounds, rec->max_rounds, schedule);
    for (int j = 0; j < seq.looks_planned && schedule[j] < rounds; j++)
        seq.looks_taken++;
    seq.looks_taken++;
    v->sessions = sessions;
    v->look_share = rec->rule_version == 1 ? 1.0 / seq.looks_planned : stored_share;
    v->looks_taken = seq.looks_taken;
    v->looks_planned = seq.looks_planned;
    v->between_sd = ppb_seq_between_sd(r[0]->r.samples_ms, r[0]->session, r[0]->r.n_samples, r[1]->r.samples_ms,
                                       r[1]->session, r[1]->r.n_samples, sessions);
    v->stop_alpha = ppb_ab_pair_design(design, n_pairs, sessions, 0).alpha;
    return PPB_OK;
}

static int by_context(const void *a, const void *b)
{
    const ppb_stored_result *x = *(const ppb_stored_result *const *)a, *y = *(const ppb_stored_result *const *)b;
    return (x->c.shape.context_len > y->c.shape.context_len) - (x->c.shape.context_len < y->c.shape.context_len);
}

/* A propose's cases: a pair per stored case (kernel_config, source_patch), or
 * the prompt's chunks, in chunk order (chunked_prefill). */
static int propose_cases(const ppb_stored_verdict *sv, ppb_verdict_case *vcs, ppb_proposal_case *pcs,
                         char (*keys)[PPB_CASE_KEY_MAX], double *totals[2], ppb_ab_pair_view **views_out,
                         int *n_pairs_out, const ppb_stored_result ***chunks_out, ppb_err *err)
{
    const ppb_proposal_record *rec = sv->rec;
    int chunked = strcmp(rec->kind, "chunked_prefill") == 0, rc = PPB_OK;
    int n_pairs = *n_pairs_out = chunked ? (sv->run[0].n > sv->run[1].n ? sv->run[0].n : sv->run[1].n) : sv->n_cases;
    ppb_proposal *design = calloc(1, sizeof *design);
    ppb_ab_pair_view *views = *views_out = calloc((size_t)(n_pairs > 0 ? n_pairs : 1), sizeof *views);
    const ppb_stored_result **chunk = *chunks_out =
        calloc((size_t)(sv->run[0].n + sv->run[1].n + 1), sizeof *chunk);
    if (!design || !views || !chunk) {
        free(design);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    if (chunked && sv->n_cases != 1) {
        free(design);
        return ppb_fail(err, PPB_EINPUT, "proposal %lld: a chunked_prefill verdict has one case, not %d",
                        (long long)rec->id, sv->n_cases);
    }
    design->rules.alpha = rec->alpha;
    design->rules.threshold = rec->threshold;
    design->sampling = (ppb_sampling){.samples_per_round = rec->samples_per_round, .min_rounds = rec->min_rounds,
                                      .max_rounds = rec->max_rounds, .budget_ms = rec->budget_ms,
                                      .sessions = rec->sessions};
    if (chunked) {
        /* chunk i of each side, by its context (i chunks before it) */
        const ppb_stored_result **side[2] = {chunk, chunk + sv->run[0].n};
        for (int s = 0; s < 2; s++) {
            for (int i = 0; i < sv->run[s].n; i++)
                side[s][i] = &sv->run[s].items[i];
            qsort(side[s], (size_t)sv->run[s].n, sizeof *side[s], by_context);
        }
        for (int i = 0; i < n_pairs && !rc; i++) {
            const ppb_stored_result *r[2] = {i < sv->run[0].n ? side[0][i] : NULL,
                                             i < sv->run[1].n ? side[1][i] : NULL};
            views[i] = (ppb_ab_pair_view){.key = rec->name, .weight = 1.0, .present = {r[0] != NULL, r[1] != NULL},
                                          .res = {r[0] ? &r[0]->r : NULL, r[1] ? &r[1]->r : NULL}};
            rc = pair_sampling(sv, r, n_pairs, sv->pcs[0].look_share, &views[i], design, err);
        }
        if (!rc && ppb_ab_chunked_case(views, n_pairs, rec->name, totals, &vcs[0]))
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        if (!rc)
            ppb_ab_case_design(views, n_pairs, &pcs[0]);
        free(design);
        return rc;
    }
    for (int i = 0; i < sv->n_cases && !rc; i++) {
        const ppb_proposal_case *pc = &sv->pcs[i];
        const ppb_stored_result *r[2] = {find_result(&sv->run[0], pc->baseline_key),
                                         find_result(&sv->run[1], pc->candidate_key)};
        for (int s = 0; s < 2 && !rc; s++)
            if (!r[s])
                rc = ppb_fail(err, PPB_EINPUT, "proposal %lld, case %d: its %s run %lld has no result for '%s'",
                              (long long)rec->id, i, s ? "candidate" : "baseline",
                              (long long)(s ? rec->candidate_run : rec->baseline_run),
                              s ? pc->candidate_key : pc->baseline_key);
        if (rc)
            break;
        ppb_case_shape_key(&r[0]->c, keys[i], PPB_CASE_KEY_MAX);
        /* once a pair had settled a REJECT, a pair whose sides both passed their check and were then
         * skipped was left untimed (abrun; a side skipped for memory was never checked) */
        int untimed = rec->cost.settled_by_pair > 0;
        for (int s = 0; s < 2; s++)
            untimed = untimed && r[s]->r.status == PPB_STATUS_SKIPPED && r[s]->r.check.checked && r[s]->r.check.pass;
        views[i] = (ppb_ab_pair_view){.key = keys[i], .weight = r[0]->c.weight, .present = {1, 1},
                                      .res = {&r[0]->r, &r[1]->r}, .untimed_settled = untimed};
        if (!(rc = pair_sampling(sv, r, n_pairs, pc->look_share, &views[i], design, err))) {
            ppb_ab_pair_case(&views[i], &vcs[i]);
            ppb_ab_case_design(&views[i], 1, &pcs[i]);
        }
    }
    free(design);
    return rc;
}

/* A comparison's cases: each key's results in the two runs, judged against
 * the run-to-run noise it was judged against (the history that noise came from
 * may have grown since: it is taken as stored). */
static int compare_cases(const ppb_stored_verdict *sv, ppb_run_compare_case *rcs, ppb_err *err)
{
    for (int i = 0; i < sv->n_cases; i++) {
        const ppb_proposal_case *pc = &sv->pcs[i];
        const ppb_stored_result *r[2] = {find_result(&sv->run[0], pc->baseline_key),
                                         find_result(&sv->run[1], pc->candidate_key)};
        for (int s = 0; s < 2; s++)
            if (!r[s])
                return ppb_fail(err, PPB_EINPUT, "proposal %lld, case %d: its %s run %lld has no result for '%s'",
                                (long long)sv->rec->id, i, s ? "candidate" : "baseline",
                                (long long)(s ? sv->rec->candidate_run : sv->rec->baseline_run),
                                s ? pc->candidate_key : pc->baseline_key);
        ppb_run_compare_case_of(&r[0]->c, &r[0]->r, &r[1]->r, &rcs[i]);
        if (sv->rec->rule_version < 3) /* before rule 3 a noisy run's own spread did not count */
            rcs[i].baseline_spread = rcs[i].candidate_spread = 0;
        rcs[i].n_history = pc->history;
        rcs[i].history_split = pc->history_split;
        rcs[i].noise_given = 1;
        rcs[i].noise = isfinite(pc->noise) ? pc->noise : 0;
        /* before rule 5 a baseline case off its level widened nothing */
        rcs[i].baseline_offset = sv->rec->rule_version >= 5 && isfinite(pc->baseline_offset) ? pc->baseline_offset : 0;
    }
    return PPB_OK;
}

/* ---- comparing ------------------------------------------------------------ */

static int same_real(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (a == b)
        return 1;
    return fabs(a - b) <= PPB_RECOMPUTE_TOLERANCE * fmax(fabs(a), fabs(b));
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int differ(ppb_verdict_recheck *out, const char *fmt, ...)
{
    if (!out->agree)
        return 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->difference, sizeof out->difference, fmt, ap);
    va_end(ap);
    out->agree = 0;
    return 1;
}

static int check_real(ppb_verdict_recheck *out, const char *where, const char *what, double stored, double now)
{
    return same_real(stored, now) ? 0
                                  : differ(out, "%s%s: stored %.17g, recomputed %.17g", where, what, stored, now);
}

static int check_int(ppb_verdict_recheck *out, const char *where, const char *what, long long stored, long long now)
{
    return stored == now ? 0 : differ(out, "%s%s: stored %lld, recomputed %lld", where, what, stored, now);
}

static int check_text(ppb_verdict_recheck *out, const char *where, const char *what, const char *stored,
                      const char *now)
{
    return strcmp(stored, now) == 0 ? 0
                                    : differ(out, "%s%s: stored '%s', recomputed '%s'", where, what, stored, now);
}

/* The first line where two reason texts differ. */
static void check_reasons(ppb_verdict_recheck *out, const char *stored, const char *now)
{
    for (int line = 1;; line++) {
        const char *a = strchr(stored, '\n'), *b = strchr(now, '\n');
        size_t la = a ? (size_t)(a - stored) : strlen(stored), lb = b ? (size_t)(b - now) : strlen(now);
        if (la != lb || memcmp(stored, now, la) != 0 || !a != !b) {
            differ(out, "reasons, line %d: stored '%.*s', recomputed '%.*s'", line, (int)(la > 400 ? 400 : la),
                   stored, (int)(lb > 400 ? 400 : lb), now);
            return;
        }
        if (!a)
            return;
        stored = a + 1, now = b + 1;
    }
}

/* What a recomputed case must reproduce, in the order a difference is
 * reported: what its interval used, then what it is. */
typedef struct case_field {
    const char *what;
    size_t offset;                 /* in ppb_proposal_case */
    enum { FIELD_REAL, FIELD_INT, FIELD_TEXT } kind;
    int since_rule;                /* compared from this rule version on */
} case_field;

#define CASE_FIELD(what, member, kind, since) {what, offsetof(ppb_proposal_case, member), kind, since}
static const case_field case_fields[] = {
    CASE_FIELD("weight", weight, FIELD_REAL, 0), CASE_FIELD("state", state, FIELD_TEXT, 0),
    CASE_FIELD("sessions", sessions, FIELD_INT, 0), CASE_FIELD("looks planned", looks_planned, FIELD_INT, 0),
    CASE_FIELD("looks taken", looks_taken, FIELD_INT, 0),
    CASE_FIELD("stopping rule's alpha", stop_alpha, FIELD_REAL, 0),
    /* version 1 stored none: it spent alpha / looks planned */
    CASE_FIELD("share of it the stopping look spent", look_share, FIELD_REAL, 2),
    CASE_FIELD("between-session sd", between_sd, FIELD_REAL, 0), CASE_FIELD("run-to-run noise", noise, FIELD_REAL, 0),
    CASE_FIELD("runs of history", history, FIELD_INT, 0), CASE_FIELD("alpha its interval spent", alpha, FIELD_REAL, 0),
    CASE_FIELD("ratio", ratio, FIELD_REAL, 0), CASE_FIELD("interval's lower end", ratio_lo, FIELD_REAL, 0),
    CASE_FIELD("interval's upper end", ratio_hi, FIELD_REAL, 0), CASE_FIELD("class", cls, FIELD_TEXT, 0),
    CASE_FIELD("Holm-adjusted p", p_holm, FIELD_REAL, 0),
    CASE_FIELD("baseline's offset from its usual level", baseline_offset, FIELD_REAL, 5),
};
#undef CASE_FIELD

static void check_field(ppb_verdict_recheck *out, const char *where, const case_field *f, const ppb_proposal_case *a,
                        const ppb_proposal_case *b)
{
    const char *x = (const char *)a + f->offset, *y = (const char *)b + f->offset;
    if (f->kind == FIELD_REAL)
        check_real(out, where, f->what, *(const double *)(const void *)x, *(const double *)(const void *)y);
    else if (f->kind == FIELD_INT)
        check_int(out, where, f->what, *(const int *)(const void *)x, *(const int *)(const void *)y);
    else
        check_text(out, where, f->what, x, y);
}

static void compare_records(const ppb_stored_verdict *sv, const ppb_proposal_record *rec,
                            const ppb_proposal_case *pcs, ppb_verdict_recheck *out)
{
    const ppb_proposal_record *st = sv->rec;
    /* the cases first: a difference there is what changes the mean and the verdict */
    for (int i = 0; i < sv->n_cases && out->agree; i++) {
        char where[PPB_CASE_KEY_MAX + 32];
        snprintf(where, sizeof where, "case %d (%s): ", i, sv->pcs[i].candidate_key);
        for (size_t f = 0; f < sizeof case_fields / sizeof *case_fields; f++)
            if (st->rule_version >= case_fields[f].since_rule)
                check_field(out, where, &case_fields[f], &sv->pcs[i], &pcs[i]);
    }
    check_real(out, "", "weighted mean", st->geomean_ratio, rec->geomean_ratio);
    check_real(out, "", "weighted mean's lower end", st->geomean_lo, rec->geomean_lo);
    check_real(out, "", "weighted mean's upper end", st->geomean_hi, rec->geomean_hi);
    check_real(out, "", "detectable effect", st->detectable, rec->detectable);
    if (st->cost.wall_ms > 0) { /* what the samples cost (schema 18), from the samples as stored */
        check_real(out, "", "the samples' kernel time", st->cost.kernel_ms, rec->cost.kernel_ms);
        /* a prompt's chunks keep one look share between them: their fixed design is not re-derivable */
        if (strcmp(st->kind, "chunked_prefill") != 0) {
            check_real(out, "", "the fixed design's kernel time", st->cost.fixed_kernel_ms, rec->cost.fixed_kernel_ms);
            check_int(out, "", "the fixed design's samples", st->cost.fixed_samples, rec->cost.fixed_samples);
        }
        if (st->cost.settled_by_pair > 0)
            check_int(out, "", "the pair that settled the REJECT", st->cost.settled_by_pair, rec->cost.settled_by_pair);
    }
    check_text(out, "", "verdict", st->verdict, rec->verdict);
    if (out->agree)
        check_reasons(out, st->reasons, rec->reasons);
}

int ppb_verdict_recompute(const ppb_stored_verdict *sv, ppb_verdict_recheck *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    out->agree = 1;
    const ppb_proposal_record *st = sv->rec;
    out->rule_version = st->rule_version;
    int is_compare = strcmp(st->kind, "compare") == 0, n = sv->n_cases, rc;
    if (n < 1)
        return ppb_fail(err, PPB_EINPUT, "proposal %lld has no cases", (long long)st->id);
    ppb_verdict_rules rules;
    if ((rc = rules_of(st, &rules, err)))
        return rc;
    ppb_proposal_record *rec = calloc(1, sizeof *rec);
    ppb_proposal_case *pcs = calloc((size_t)n, sizeof *pcs);
    ppb_verdict_case *vcs = calloc((size_t)n, sizeof *vcs);
    ppb_run_compare_case *rcs = calloc((size_t)n, sizeof *rcs);
    char(*keys)[PPB_CASE_KEY_MAX] = calloc((size_t)n, sizeof *keys);
    double *totals[2] = {NULL, NULL};
    ppb_ab_pair_view *views = NULL;
    const ppb_stored_result **chunks = NULL;
    ppb_run_compare_report crep;
    ppb_verdict_report vrep;
    memset(&crep, 0, sizeof crep);
    memset(&vrep, 0, sizeof vrep);
    if (!rec || !pcs || !vcs || !rcs || !keys) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    for (int i = 0; i < n; i++) {
        memcpy(pcs[i].baseline_key, sv->pcs[i].baseline_key, sizeof pcs[i].baseline_key);
        memcpy(pcs[i].candidate_key, sv->pcs[i].candidate_key, sizeof pcs[i].candidate_key);
        pcs[i].noise = pcs[i].baseline_offset = NAN;
    }
    if (is_compare) {
        ppb_run_compare_rules crules = {.verdict = rules, .min_history = st->min_history,
                                        .max_history = st->max_history};
        /* the runs' levels as stored: before rule 4 they widened nothing and said nothing */
        double shift[2] = {NAN, NAN};
        if (st->rule_version >= 4)
            shift[0] = st->baseline_shift, shift[1] = st->candidate_shift;
        if (!(rc = compare_cases(sv, rcs, err)) && !(rc = ppb_run_compare_decide(rcs, n, &crules, shift, &crep, err)))
            rc = ppb_run_compare_record(&crep, rcs, n, &crules, rec, pcs, err);
        out->n_compared = crep.v.n_compared;
    } else {
        int n_pairs = 0;
        if (!(rc = propose_cases(sv, vcs, pcs, keys, totals, &views, &n_pairs, &chunks, err)) &&
            !(rc = ppb_verdict_decide(vcs, n, &rules, &vrep, err)))
            rc = ppb_verdict_record(&vrep, vcs, n, &rules, rec, pcs, err);
        if (!rc) {
            ppb_ab_cost cost;
            ppb_ab_sampling_cost(views, n_pairs, &cost);
            rec->cost.kernel_ms = cost.kernel_ms, rec->cost.fixed_kernel_ms = cost.fixed_kernel_ms;
            rec->cost.fixed_samples = cost.fixed_samples;
            /* the case that settled a REJECT alone, by the rule propose applied after each pair (stored
             * only where sampling.stop_when_settled was on and pairs were left to time): the pairs timed
             * before it did not settle and those after it were not timed, so it is the only one */
            for (int i = 0; i < n && st->cost.settled_by_pair > 0 && !rec->cost.settled_by_pair; i++)
                if (ppb_verdict_case_settles_reject(&vcs[i], &rules, n))
                    rec->cost.settled_by_pair = i + 1;
        }
        out->n_compared = vrep.n_compared;
    }
    if (rc)
        goto end;
    out->n_cases = n;
    snprintf(out->verdict, sizeof out->verdict, "%s", rec->verdict);
    snprintf(out->stored_verdict, sizeof out->stored_verdict, "%s", st->verdict);
    compare_records(sv, rec, pcs, out);
end:
    ppb_run_compare_report_free(&crep);
    ppb_verdict_report_free(&vrep);
    free(totals[0]);
    free(totals[1]);
    free(views);
    free(chunks);
    free(keys);
    free(rcs);
    free(vcs);
    free(pcs);
    free(rec);
    return rc;
}
