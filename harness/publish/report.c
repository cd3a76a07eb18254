/* ppbench report: gather the model from the store, decide the banner, then
 * hand over to report_charts.c and report_html.c (report.h, docs/REPORTS.md). */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doc_text.h"
#include "files.h"
#include "grow.h"
#include "measured.h"
#include "provenance.h"
#include "report_charts.h"
#include "report_html.h"
#include "report_model.h"
#include "stats.h"
#include "trend_pool.h"
#include "verdict.h"

#ifndef PPB_SOURCE_DIR
#define PPB_SOURCE_DIR "."
#endif

/* ---- small helpers --------------------------------------------------------- */

#define PLURAL(n) ((n) == 1 ? "" : "s")

/* Grow a dynamic array of `size`-byte elements to hold one more. */
static int grow(void **items, int *cap, int n, size_t size, ppb_err *err)
{
    return ppb_grow(items, cap, n, size, 32) == PPB_OK
               ? PPB_OK
               : ppb_fail(err, PPB_ENOMEM, "out of memory gathering the report");
}

/* Append to a line list held in one buffer (truncates, never overflows). */
static void add_line(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_line(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 2 >= len)
        return;
    if (used)
        buf[used++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

void ppb_shell_quote(const char *arg, char *buf, size_t len)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_-.,/:=@%+";
    if (!len)
        return;
    if (arg[0] && strspn(arg, plain) == strlen(arg)) {
        snprintf(buf, len, "%s", arg);
        return;
    }
    size_t o = 0;
    buf[o++] = '\'';
    for (const char *p = arg; *p && o + 5 < len; p++) {
        if (*p == '\'') {
            memcpy(buf + o, "'\\''", 4);
            o += 4;
        } else {
            buf[o++] = *p;
        }
    }
    if (o + 1 < len)
        buf[o++] = '\'';
    buf[o] = '\0';
}

static void append_arg(char *buf, size_t len, const char *arg)
{
    char q[8300];
    ppb_shell_quote(arg, q, sizeof q);
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", used ? " " : "", q);
}

void ppb_report_command(const ppb_report_request *req, char *buf, size_t len)
{
    char num[32];
    buf[0] = '\0';
    append_arg(buf, len, "ppbench");
    append_arg(buf, len, "report");
    switch (req->kind) {
    case PPB_REPORT_PROPOSAL:
        append_arg(buf, len, "--proposal");
        snprintf(num, sizeof num, "%lld", (long long)req->id);
        append_arg(buf, len, num);
        break;
    case PPB_REPORT_TREND:
        append_arg(buf, len, "--trend");
        append_arg(buf, len, req->suite);
        if (req->since[0]) {
            append_arg(buf, len, "--since");
            append_arg(buf, len, req->since);
        }
        if (req->window > 0) {
            append_arg(buf, len, "--window");
            snprintf(num, sizeof num, "%d", req->window);
            append_arg(buf, len, num);
        }
        break;
    default:
        snprintf(num, sizeof num, "%lld", (long long)req->id);
        append_arg(buf, len, num);
        break;
    }
    if (req->db_path[0]) {
        append_arg(buf, len, "--db");
        append_arg(buf, len, req->db_path);
    }
    append_arg(buf, len, "-o");
    append_arg(buf, len, req->out_dir);
}

/* ---- gathering ----------------------------------------------------------- */

typedef struct item_sink {
    rp_report *r;
    int side;
    const ppb_proposal_case *filter;   /* proposals: keep only the proposal's keys */
    int n_filter;
    ppb_err *err;
} item_sink;

static int wanted(const item_sink *k, const char *key)
{
    if (!k->filter)
        return 1;
    for (int i = 0; i < k->n_filter; i++) {
        const char *want = k->side == RP_SIDE_BASELINE ? k->filter[i].baseline_key
                                                       : k->filter[i].candidate_key;
        if (strcmp(want, key) == 0)
            return 1;
    }
    return 0;
}

static int collect_item(void *ctx, const ppb_case *c, const ppb_result *res)
{
    item_sink *k = ctx;
    rp_report *r = k->r;
    if (!wanted(k, c->key))
        return 0;
    int rc = grow((void **)&r->items, &r->cap_items, r->n_items, sizeof *r->items, k->err);
    if (rc)
        return rc;
    rp_item *it = &r->items[r->n_items++];
    memset(it, 0, sizeof *it);
    it->c = *c;
    it->r = *res;
    it->r.samples_ms = NULL;   /* the store's; freed when we return */
    it->side = k->side;
    return 0;
}

typedef struct env_sink {
    rp_env **env;
    int *n, cap;
    ppb_err *err;
} env_sink;

static int collect_env(void *ctx, const char *key, const char *value)
{
    env_sink *k = ctx;
    int rc = grow((void **)k->env, &k->cap, *k->n, sizeof **k->env, k->err);
    if (rc)
        return rc;
    rp_env *e = &(*k->env)[(*k->n)++];
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->value, sizeof e->value, "%s", value ? value : "");
    return 0;
}

/* The value of one stored environment key (NULL: not stored). */
static const char *env_value(const rp_env *env, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(env[i].key, key) == 0)
            return env[i].value;
    return NULL;
}

static int load_run(ppb_store *s, int64_t id, ppb_run_info *run, rp_env **env, int *n_env,
                    ppb_err *err)
{
    int rc = ppb_store_get_run(s, id, run, err);
    if (rc)
        return rc;
    env_sink k = {env, n_env, 0, err};
    return ppb_store_each_env(s, id, collect_env, &k, err);
}

static int collect_pcase(void *ctx, const ppb_proposal_case *c)
{
    item_sink *k = ctx;
    rp_report *r = k->r;
    int rc = grow((void **)&r->pcases, &r->cap_pcases, r->n_pcases, sizeof *r->pcases, k->err);
    if (rc)
        return rc;
    r->pcases[r->n_pcases++] = *c;
    return 0;
}

typedef struct key_list {
    char (*keys)[PPB_CASE_KEY_MAX];
    int n, cap;
    ppb_err *err;
} key_list;

static int collect_key(void *ctx, const ppb_case *c, const ppb_result *res)
{
    (void)res;
    key_list *k = ctx;
    int rc = grow((void **)&k->keys, &k->cap, k->n, sizeof *k->keys, k->err);
    if (rc)
        return rc;
    snprintf(k->keys[k->n++], PPB_CASE_KEY_MAX, "%s", c->key);
    return 0;
}

typedef struct history_sink {
    rp_trend_case *t;
    int cap;
    ppb_err *err;
} history_sink;

static int collect_point(void *ctx, const ppb_history_point *p)
{
    history_sink *k = ctx;
    if (!(isfinite(p->median_ms) && p->median_ms > 0)) {
        k->t->n_unusable++;
        return 0;
    }
    int rc = grow((void **)&k->t->points, &k->cap, k->t->n_points, sizeof *k->t->points, k->err);
    if (rc)
        return rc;
    k->t->points[k->t->n_points++] = *p;
    return 0;
}

typedef struct night_sink {
    rp_report *r;
    ppb_err *err;
} night_sink;

/* The runs ppb_store_case_history reads: the suite's plain runs, started at
 * or after --since (the same string comparison as its SQL). */
static int collect_night(void *ctx, const ppb_run_info *run)
{
    night_sink *k = ctx;
    rp_report *r = k->r;
    if (strcmp(run->suite_name, r->req->suite) != 0 || strcmp(run->started_at, r->req->since) < 0 ||
        strcmp(run->kind, "run") != 0)
        return 0;
    int rc = grow((void **)&r->nights, &r->cap_nights, r->n_nights, sizeof *r->nights, k->err);
    if (rc)
        return rc;
    rp_night *n = &r->nights[r->n_nights++];
    n->run_id = run->id;
    snprintf(n->started_at, sizeof n->started_at, "%s", run->started_at);
    snprintf(n->commit, sizeof n->commit, "%s", run->git_commit);
    return 0;
}

/* The order of a case's history: by start time, then id. */
static int compare_night(const void *a, const void *b)
{
    const rp_night *x = a, *y = b;
    int c = strcmp(x->started_at, y->started_at);
    return c ? c : (x->run_id > y->run_id) - (x->run_id < y->run_id);
}

static int gather_nights(ppb_store *s, rp_report *r, ppb_err *err)
{
    night_sink k = {r, err};
    int rc = ppb_store_each_run(s, collect_night, &k, err);
    if (rc)
        return rc;
    if (r->n_nights > 1)   /* --since may leave none: qsort must not see NULL */
        qsort(r->nights, (size_t)r->n_nights, sizeof *r->nights, compare_night);
    r->overview_from = r->n_nights > RP_OVERVIEW_NIGHTS ? r->n_nights - RP_OVERVIEW_NIGHTS : 0;
    return PPB_OK;
}

/* What the overview measures a case's nights against: the trend's own
 * reference when it judged the case, so a cell's colour agrees with the alert;
 * with too little history to judge, the median of the runs there are. */
static double case_baseline(const rp_trend_case *t)
{
    if (t->analysed && isfinite(t->trend.reference) && t->trend.reference > 0)
        return t->trend.reference;
    if (t->n_points == 0)
        return 0;
    double *v = malloc((size_t)t->n_points * sizeof *v);
    if (!v)
        return 0;
    for (int j = 0; j < t->n_points; j++)
        v[j] = t->points[j].median_ms;
    double m = ppb_median(v, t->n_points);
    free(v);
    return isfinite(m) && m > 0 ? m : 0;
}

static int gather_trend(ppb_store *s, rp_report *r, ppb_err *err)
{
    const ppb_report_request *req = r->req;
    int64_t latest = ppb_store_latest_run_of_suite(s, req->suite, NULL);
    if (latest < 0)
        return ppb_fail(err, PPB_EIO, "reading the runs of suite '%s' failed", req->suite);
    if (latest == 0)
        return ppb_fail(err, PPB_EINPUT, "the database holds no run of suite '%s'", req->suite);
    int rc = load_run(s, latest, &r->run, &r->env, &r->n_env, err);
    if (!rc) /* the nights followed are those timed as the latest was, as `ppbench trend` follows them */
        rc = ppb_store_run_timing(s, latest, r->timing, sizeof r->timing, err);
    if (rc)
        return rc;
    r->have_run = 1;

    ppb_trend_options_default(&r->trend_opt);
    if (req->window > 0)
        r->trend_opt.window = req->window;

    rc = gather_nights(s, r, err);
    if (rc)
        return rc;
    ppb_trend_pools pools;
    ppb_trend_pools_init(&pools, r->trend_opt.window);
    key_list keys = {NULL, 0, 0, err};
    rc = ppb_store_each_result(s, latest, collect_key, &keys, err);
    for (int i = 0; !rc && i < keys.n; i++) {
        rc = grow((void **)&r->trend, &r->cap_trend, r->n_trend, sizeof *r->trend, err);
        if (rc)
            break;
        rp_trend_case *t = &r->trend[r->n_trend++];
        memset(t, 0, sizeof *t);
        t->chart = -1;
        snprintf(t->key, sizeof t->key, "%s", keys.keys[i]);
        history_sink hk = {t, 0, err};
        rc = ppb_store_case_history(s, req->suite, t->key, req->since, NULL, r->timing, collect_point, &hk, err);
        if (rc)
            break;
        ppb_trend_point *pts = calloc((size_t)t->n_points + 1, sizeof *pts);
        char(*ids)[24] = calloc((size_t)t->n_points + 1, sizeof *ids);
        const char **when = calloc((size_t)t->n_points + 1, sizeof *when);
        if (!pts || !ids || !when) {
            free(pts);
            free(ids);
            free(when);
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
            break;
        }
        for (int j = 0; j < t->n_points; j++) {
            snprintf(ids[j], sizeof ids[j], "%lld", (long long)t->points[j].run_id);
            pts[j].run_id = ids[j];
            pts[j].value = t->points[j].median_ms;
            when[j] = t->points[j].started_at;
        }
        ppb_err terr = {{0}};
        if (t->n_points == 0) {
            snprintf(t->error, sizeof t->error, "no run of this case has a median time");
        } else if (ppb_trend_analyse(pts, t->n_points, &r->trend_opt, &t->trend, &terr) == 0) {
            t->analysed = 1;
            char kernel_name[32];   /* a key starts with its kernel's name */
            ppb_kernel_kind kernel = PPB_PREFIX_PREFILL;
            snprintf(kernel_name, sizeof kernel_name, "%.*s", (int)strcspn(t->key, " "), t->key);
            ppb_kernel_parse(kernel_name, &kernel);
            rc = ppb_trend_pool_add(&pools.kernel[kernel], pts, when, t->n_points, r->trend_opt.min_change,
                                    err);
        } else {
            snprintf(t->error, sizeof t->error, "%s", terr.msg);
        }
        t->baseline = case_baseline(t);
        free(pts);
        free(ids);
        free(when);
    }
    if (!rc) /* as `ppbench trend` pools them */
        rc = ppb_trend_pools_judge(&pools, &r->trend_opt, r->pooled, &r->n_pooled, err);
    ppb_trend_pools_free(&pools);
    free(keys.keys);
    return rc;
}

static int gather(ppb_store *s, rp_report *r, ppb_err *err)
{
    const ppb_report_request *req = r->req;
    int rc = PPB_OK;
    if (req->kind == PPB_REPORT_RUN) {
        rc = load_run(s, req->id, &r->run, &r->env, &r->n_env, err);
        if (!rc)
            rc = ppb_store_run_time(s, req->id, &r->run_time, err);
        if (rc)
            return rc;
        r->have_run = r->have_run_time = 1;
        item_sink k = {r, RP_SIDE_RUN, NULL, 0, err};
        return ppb_store_each_result(s, req->id, collect_item, &k, err);
    }
    if (req->kind == PPB_REPORT_TREND)
        return gather_trend(s, r, err);

    rc = ppb_store_get_proposal(s, req->id, &r->proposal, err);
    if (rc)
        return rc;
    item_sink pk = {r, 0, NULL, 0, err};
    rc = ppb_store_each_proposal_case(s, req->id, collect_pcase, &pk, err);
    if (rc)
        return rc;
    /* Baseline rows first, then the candidate's: the tables read left to right. */
    if (r->proposal.baseline_run > 0) {
        rc = load_run(s, r->proposal.baseline_run, &r->base_run, &r->base_env, &r->n_base_env,
                      err);
        if (rc)
            return rc;
        r->have_base_run = 1;
        item_sink k = {r, RP_SIDE_BASELINE, r->pcases, r->n_pcases, err};
        rc = ppb_store_each_result(s, r->proposal.baseline_run, collect_item, &k, err);
        if (rc)
            return rc;
    }
    if (r->proposal.candidate_run > 0) {
        rc = load_run(s, r->proposal.candidate_run, &r->run, &r->env, &r->n_env, err);
        if (rc)
            return rc;
        r->have_run = 1;
        item_sink k = {r, RP_SIDE_CANDIDATE, r->pcases, r->n_pcases, err};
        rc = ppb_store_each_result(s, r->proposal.candidate_run, collect_item, &k, err);
    }
    return rc;
}

/* ---- labels ---------------------------------------------------------------- */

static int length_field(int kernel)
{
    return kernel == PPB_PREFIX_PREFILL ? PPB_F_CONTEXT_LEN : PPB_F_SEQ_LEN;
}

/* Which fields take more than one value among the items of each kernel: a
 * label names those only (the rest go into one "same for every case" line). */
static int label_items(rp_report *r)
{
    int varies[2][PPB_F_COUNT];
    const ppb_case **of_kernel = malloc(((size_t)r->n_items + 1) * sizeof *of_kernel);
    if (!of_kernel)
        return PPB_ENOMEM;
    for (int k = 0; k < 2; k++) {
        int n = 0;
        for (int i = 0; i < r->n_items; i++)
            if ((int)r->items[i].c.kernel == k)
                of_kernel[n++] = &r->items[i].c;
        rp_fields_varying(of_kernel, n, varies[k]);
        if (!n)
            continue;
        char fixed[256] = "";
        for (int f = 0; f < PPB_F_COUNT; f++)
            if ((ppb_field_get((ppb_field)f)->kernels & (1u << k)) && !varies[k][f])
                rp_append_field(fixed, sizeof fixed, f, ppb_case_get(of_kernel[0], (ppb_field)f));
        size_t used = strlen(r->fixed);
        snprintf(r->fixed + used, sizeof r->fixed - used, "%s%s: %s", used ? "; " : "",
                 ppb_kernel_name((ppb_kernel_kind)k), fixed[0] ? fixed : "nothing");
    }
    free(of_kernel);
    int any_config_varies[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        for (int f = 0; f < PPB_F_COUNT; f++)
            if (ppb_field_get((ppb_field)f)->is_config && varies[k][f])
                any_config_varies[k] = 1;

    int number = 0;
    for (int i = 0; i < r->n_items; i++) {
        rp_item *it = &r->items[i];
        int k = it->c.kernel, lf = length_field(k);
        it->number = ++number;
        it->series[0] = it->shape[0] = it->family[0] = '\0';
        if (r->kind == PPB_REPORT_PROPOSAL)
            snprintf(it->series, sizeof it->series, "%s",
                     it->side == RP_SIDE_BASELINE ? "baseline" : "candidate");
        for (int f = 0; f < PPB_F_COUNT; f++) {
            const ppb_field_info *fi = ppb_field_get((ppb_field)f);
            if (!(fi->kernels & (1u << k)))
                continue;
            int v = ppb_case_get(&it->c, (ppb_field)f);
            if (fi->is_config) {
                /* No config knob varies: name the whole config, so a legend
                 * still says which config the lines are. */
                if (varies[k][f] || (!any_config_varies[k] && r->kind != PPB_REPORT_PROPOSAL))
                    rp_append_field(it->series, sizeof it->series, f, v);
            } else if (varies[k][f]) {
                rp_append_field(it->shape, sizeof it->shape, f, v);
                if (f != lf)
                    rp_append_field(it->family, sizeof it->family, f, v);
            }
        }
        if (!it->shape[0])
            snprintf(it->shape, sizeof it->shape, "(one shape)");
        if (!it->family[0])
            snprintf(it->family, sizeof it->family, "all shapes");
        it->length = k == PPB_PREFIX_PREFILL
                         ? (double)it->c.shape.context_len + it->c.shape.query_len
                         : (double)it->c.shape.seq_len;
    }
    return PPB_OK;
}

/* ---- target, ceilings ------------------------------------------------------ */

static void dir_of(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(buf, len, ".");
}

/* Load a profile by name from the first suites directory that has it. */
static int load_profile(const rp_report *r, const char *name, ppb_target *t, char *note,
                        size_t len)
{
    char dirs[3][4096];
    int n = 0;
    if (r->req->suites_dir)
        snprintf(dirs[n++], sizeof dirs[0], "%s", r->req->suites_dir);
    if (r->have_run && r->run.suite_path[0])
        dir_of(r->run.suite_path, dirs[n++], sizeof dirs[0]);
    snprintf(dirs[n++], sizeof dirs[0], "%s/suites", PPB_SOURCE_DIR);
    ppb_err first = {{0}};
    for (int i = 0; i < n; i++) {
        ppb_err e = {{0}};
        if (ppb_target_load_named(dirs[i], name, t, &e) == 0)
            return 1;
        if (i == 0)
            first = e;
    }
    snprintf(note, len, "profile '%s' could not be loaded: %s", name, first.msg);
    return 0;
}

/* The feasibility table: the judgements the run stored with its results
 * (judged once, when each case ran: result.h), grouped by config and answer. */
static void collect_feasibility(rp_report *r)
{
    const char *name = r->kind == PPB_REPORT_PROPOSAL ? r->proposal.target : r->run.target;
    if (r->kind == PPB_REPORT_TREND)
        return;
    if (!name[0] || strcmp(name, "none") == 0) {
        snprintf(r->target_note, sizeof r->target_note,
                 "no target profile was named for this %s, so no config was judged "
                 "(ppbench run --target NAME, or target: in the suite)",
                 r->kind == PPB_REPORT_PROPOSAL ? "proposal" : "run");
        return;
    }
    const char *profile = env_value(r->env, r->n_env, "target.profile");
    const char *description = env_value(r->env, r->n_env, "target.description");
    snprintf(r->target_note, sizeof r->target_note, "%s (%s)", name, profile ? profile : "its profile's path was not stored");
    snprintf(r->target_description, sizeof r->target_description, "%s", description ? description : "");
    ppb_err ignored;
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        const ppb_feasibility *f = &it->r.feasibility;
        if (!f->judged)
            continue;
        rp_feasibility *row = NULL;
        for (int j = 0; j < r->n_feas && !row; j++) {
            rp_feasibility *x = &r->feas[j];
            if (x->kernel == (int)it->c.kernel && x->feasible == f->feasible &&
                strcmp(x->series, it->series) == 0 && strcmp(x->reason, f->reason) == 0 &&
                strcmp(x->flips, f->flips) == 0)
                row = x;
        }
        if (!row) {
            if (grow((void **)&r->feas, &r->cap_feas, r->n_feas, sizeof *r->feas, &ignored))
                return;
            row = &r->feas[r->n_feas++];
            memset(row, 0, sizeof *row);
            snprintf(row->series, sizeof row->series, "%s", it->series);
            row->kernel = it->c.kernel;
            row->feasible = f->feasible;
            row->blocks_per_sm = f->blocks_per_sm;
            snprintf(row->limiter, sizeof row->limiter, "%s", f->limiter);
            snprintf(row->reason, sizeof row->reason, "%s", f->reason);
            snprintf(row->flips, sizeof row->flips, "%s", f->flips);
        }
        row->n_cases++;
        if (row->n_cases <= 4) {
            size_t used = strlen(row->shapes);
            snprintf(row->shapes + used, sizeof row->shapes - used, "%s%s", used ? "; " : "",
                     it->shape);
        }
    }
    r->have_target = r->n_feas > 0;
    if (!r->have_target && r->n_items > 0)
        snprintf(r->target_note, sizeof r->target_note,
                 "target %s was named, but no result of this %s carries a judgement on it: they were stored "
                 "before ppbench judged feasibility when a case runs (store schema 17); run it again to judge them",
                 name, r->kind == PPB_REPORT_PROPOSAL ? "proposal" : "run");
}

/* The device's compute and memory ceilings, from the profile of a GPU we know
 * by name; none for the CPU backend (no figures are invented). */
static void find_ceilings(rp_report *r)
{
    static const struct {
        const char *pattern, *profile;
    } known[] = {{"H200", "h200"},
                 {"A100", "a100"},
                 {"BI-V100", "bi-v100"},
                 {"Iluvatar", "bi-v100"}};
    if (!r->have_run) {
        snprintf(r->ceilings_note, sizeof r->ceilings_note, "no run: no device");
        return;
    }
    if (strcmp(r->run.backend, "cuda") != 0) {
        snprintf(r->ceilings_note, sizeof r->ceilings_note,
                 "no ceilings known: the %s backend ran on %s, and ppbench has no measured compute "
                 "or memory ceilings for it; the chart shows the achieved rates only",
                 r->run.backend[0] ? r->run.backend : "unknown", r->run.device);
        return;
    }
    const char *profile = NULL;
    for (size_t i = 0; i < sizeof known / sizeof known[0] && !profile; i++)
        if (strstr(r->run.device, known[i].pattern))
            profile = known[i].profile;
    if (!profile) {
        snprintf(r->ceilings_note, sizeof r->ceilings_note,
                 "no ceilings known: no target profile describes the device '%s'", r->run.device);
        return;
    }
    char note[600];
    if (!load_profile(r, profile, &r->ceilings, note, sizeof note)) {
        snprintf(r->ceilings_note, sizeof r->ceilings_note, "no ceilings: %s", note);
        return;
    }
    const ppb_target_value *bw = &r->ceilings.mem_bandwidth, *fl = &r->ceilings.fp16_flops;
    if (!bw->present || !fl->present) {
        snprintf(r->ceilings_note, sizeof r->ceilings_note,
                 "no ceilings: profile %s has no %s figure", r->ceilings.path,
                 !bw->present ? "mem_bandwidth" : "fp16_flops");
        return;
    }
    r->have_ceilings = 1;
    snprintf(r->ceilings_note, sizeof r->ceilings_note,
             "ceilings from %s: memory %.3g TB/s (%s: %s); fp16/bf16 %.4g TFLOP/s (%s: %s)",
             r->ceilings.path, bw->value / 1e12, bw->confidence, bw->source, fl->value / 1e12,
             fl->confidence, fl->source);
}

/* ---- verdicts ---------------------------------------------------------------- */

static double err_over_atol(const rp_item *it)
{
    if (!it->r.check.checked || !(it->r.check.atol > 0))
        return NAN;
    return it->r.check.max_abs_err / it->r.check.atol;
}

static void set_verdict(rp_report *r, const char *verdict, const char *cls)
{
    snprintf(r->verdict, sizeof r->verdict, "%s", verdict);
    snprintf(r->verdict_class, sizeof r->verdict_class, "%s", cls);
}

/* What every page says about how its run was measured: CPU timings are not a
 * GPU's, and a machine loaded past its cores moves timings more than most
 * changes do (run, proposal and trend pages alike). */
static void add_measurement_notes(rp_report *r)
{
    ppb_measured m;
    ppb_measured_of(&r->run, env_value(r->env, r->n_env, "after.loadavg"),
                    env_value(r->env, r->n_env, "after.cpu_cores"),
                    env_value(r->env, r->n_env, "after.cpu_kernel_threads"), &m);
    char note[PPB_MEASURED_NOTE_MAX];
    ppb_measured_cpu_note(&m, note, sizeof note);
    if (note[0])
        add_line(r->reasons, sizeof r->reasons, "note: %s", note);
    ppb_measured_load_note(&m, note, sizeof note);
    if (note[0])
        add_line(r->reasons, sizeof r->reasons, "note: %s", note);
}

static void decide_run(rp_report *r)
{
    int n[PPB_STATUS_COUNT] = {0}, failed = 0;
    for (int i = 0; i < r->n_items; i++)
        if (r->items[i].r.status >= 0 && r->items[i].r.status < PPB_STATUS_COUNT) {
            n[r->items[i].r.status]++;
            failed += ppb_status_failed(r->items[i].r.status);
        }
    int complete = strcmp(r->run.status, "complete") == 0 && r->n_items >= r->run.n_cases;
    char *rs = r->reasons;
    size_t len = sizeof r->reasons;
    if (failed) {
        set_verdict(r, "FAIL", "bad");
        add_line(rs, len, "FAIL: %d of %d cases failed (%d wrong, %d error, %d crashed, %d hung)", failed,
                 r->n_items, n[PPB_STATUS_WRONG], n[PPB_STATUS_ERROR], n[PPB_STATUS_CRASHED], n[PPB_STATUS_HUNG]);
        int shown = 0;
        for (int i = 0; i < r->n_items && shown < 5; i++) {
            const rp_item *it = &r->items[i];
            if (!ppb_status_failed(it->r.status))
                continue;
            add_line(rs, len, "%s #%d %s: %s", ppb_status_name(it->r.status), it->number,
                     it->c.key, it->r.reason[0] ? it->r.reason : "(no reason stored)");
            shown++;
        }
    } else if (!complete) {
        set_verdict(r, "INCOMPLETE", "warn");
        add_line(rs, len,
                 "INCOMPLETE: run %lld is %s with %d of %d cases stored (ppbench run --resume "
                 "%lld completes it)",
                 (long long)r->run.id, r->run.status, r->n_items, r->run.n_cases,
                 (long long)r->run.id);
    } else if (n[PPB_STATUS_OK] + n[PPB_STATUS_NOISY] == 0) {
        /* Nothing wrong because nothing ran is not a pass (a GPU suite on a machine without one). */
        set_verdict(r, "NOT TIMED", "bad");
        add_line(rs, len, "NOT TIMED: none of the %d cases was timed (%d refused, %d skipped): this run measured "
                          "nothing", r->n_items, n[PPB_STATUS_REFUSED], n[PPB_STATUS_SKIPPED]);
    } else {
        set_verdict(r, "PASS", "good");
        add_line(rs, len, "PASS: no case wrong, errored, crashed or hung; %d of %d timed",
                 n[PPB_STATUS_OK] + n[PPB_STATUS_NOISY], r->n_items);
    }
    if (failed && !complete)
        add_line(rs, len, "note: run %lld is %s with %d of %d cases stored", (long long)r->run.id,
                 r->run.status, r->n_items, r->run.n_cases);
    if (n[PPB_STATUS_REFUSED])
        add_line(rs, len, "note: %d case%s refused before launch (the kernel or the target cannot "
                          "run it; the feasibility table has the arithmetic)",
                 n[PPB_STATUS_REFUSED], PLURAL(n[PPB_STATUS_REFUSED]));
    if (n[PPB_STATUS_SKIPPED])
        add_line(rs, len, "note: %d case%s skipped (too large for this machine or backend)",
                 n[PPB_STATUS_SKIPPED], PLURAL(n[PPB_STATUS_SKIPPED]));
    if (n[PPB_STATUS_NOISY])
        add_line(rs, len, "note: %d case%s noisy (the noise target was not met in the budget)",
                 n[PPB_STATUS_NOISY], PLURAL(n[PPB_STATUS_NOISY]));
    add_measurement_notes(r);
}

/* The banner's headline is the first reason: make it the one that decides the
 * proposal, the weighted geometric mean against the rules, when the verdict is
 * that line's word (a per-case line first read as if one case had decided). */
static void lead_with_the_decision(char *reasons)
{
    char *line = reasons;
    while (line && *line && !(strstr(line, "the weighted geometric mean") &&
                              strstr(line, "the weighted geometric mean") < line + strcspn(line, "\n")))
        line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL;
    if (!line || !*line || line == reasons)
        return;
    size_t len = strcspn(line, "\n"), before = (size_t)(line - reasons);
    if (strncmp(line, reasons, strcspn(reasons, ":")) != 0)
        return; /* another verdict word (a correctness REJECT leads): keep the order */
    char moved[1024];
    if (len >= sizeof moved)
        return;
    memcpy(moved, line, len);
    memmove(reasons + len + 1, reasons, before - 1); /* the lines before it, after it */
    memcpy(reasons, moved, len);
    reasons[len] = '\n';
}

static void decide_proposal(rp_report *r)
{
    const char *v = r->proposal.verdict;
    set_verdict(r, v[0] ? v : "UNKNOWN",
                strcmp(v, "ACCEPT") == 0 ? "good" : strcmp(v, "REJECT") == 0 ? "bad" : "warn");
    /* The stored reasons, one per line, lead with the verdict's own. */
    snprintf(r->reasons, sizeof r->reasons, "%s", r->proposal.reasons);
    size_t n = strlen(r->reasons);
    while (n && r->reasons[n - 1] == '\n')
        r->reasons[--n] = '\0';
    if (!r->reasons[0])
        add_line(r->reasons, sizeof r->reasons, "%s: (no reasons stored)", r->verdict);
    lead_with_the_decision(r->reasons);
    if (isfinite(r->proposal.geomean_ratio)) {
        char iv[120], what[160];
        const ppb_proposal_record *pr = &r->proposal;
        ppb_format_interval(iv, sizeof iv, pr->geomean_ratio, pr->geomean_lo, pr->geomean_hi);
        ppb_verdict_describe_ratio(what, sizeof what, pr->geomean_ratio, pr->geomean_lo, pr->geomean_hi,
                                   isfinite(pr->geomean_lo) && isfinite(pr->geomean_hi));
        add_line(r->reasons, sizeof r->reasons, "note: weighted geometric mean of candidate/baseline time %s: %s",
                 iv, what);
    }
    if (r->have_run)
        add_measurement_notes(r);
}

static int trend_rank(const rp_trend_case *t)
{
    if (!t->analysed)
        return 5;
    switch (t->trend.status) {
    case PPB_TREND_REGRESSION: return 0;
    case PPB_TREND_IMPROVEMENT: return 1;
    case PPB_TREND_OUTLIER: return 2;
    case PPB_TREND_OK: return 3;
    default: return 4;
    }
}

static int compare_trend(const void *a, const void *b)
{
    const rp_trend_case *x = a, *y = b;
    int rx = trend_rank(x), ry = trend_rank(y);
    if (rx != ry)
        return rx - ry;
    double dx = x->analysed ? fabs(x->trend.rel_change) : 0,
           dy = y->analysed ? fabs(y->trend.rel_change) : 0;
    return dx < dy ? 1 : dx > dy ? -1 : 0;
}

static void decide_trend(rp_report *r)
{
    qsort(r->trend, (size_t)r->n_trend, sizeof *r->trend, compare_trend);
    int n[6] = {0}, pooled_regressed = 0;
    for (int i = 0; i < r->n_trend; i++)
        n[trend_rank(&r->trend[i])]++;
    for (int i = 0; i < r->n_pooled; i++)
        pooled_regressed += r->pooled[i].result.status == PPB_TREND_REGRESSION;
    char *rs = r->reasons;
    size_t len = sizeof r->reasons;
    if (pooled_regressed && !n[0]) {
        /* Each case within its own noise, the kernel's cases together not. */
        set_verdict(r, "REGRESSION", "bad");
        add_line(rs, len, "REGRESSION: the cases of %d kernel%s slowed down together in a sustained step, "
                          "though no case alone shows it past its own noise",
                 pooled_regressed, PLURAL(pooled_regressed));
    } else if (n[0] + n[1] + n[2] + n[3] == 0) {
        /* Nothing reached a judgement: saying OK would claim what was not checked. */
        set_verdict(r, "NO HISTORY", "warn");
        add_line(rs, len, "NO HISTORY: none of %d cases has enough runs to judge (at least %d "
                          "with a time)",
                 r->n_trend, r->trend_opt.min_history);
    } else if (n[0]) {
        set_verdict(r, "REGRESSION", "bad");
        add_line(rs, len, "REGRESSION: %d of %d cases slowed down in a sustained step", n[0],
                 r->n_trend);
    } else if (n[1]) {
        set_verdict(r, "IMPROVEMENT", "good");
        add_line(rs, len, "IMPROVEMENT: %d of %d cases sped up in a sustained step, none slowed "
                          "down",
                 n[1], r->n_trend);
    } else {
        set_verdict(r, "OK", "good");
        add_line(rs, len, "OK: no sustained step in any of %d cases", r->n_trend);
    }
    for (int i = 0; i < r->n_pooled; i++)
        if (r->pooled[i].result.status == PPB_TREND_REGRESSION || r->pooled[i].result.status == PPB_TREND_IMPROVEMENT)
            add_line(rs, len, "%s, %d cases pooled: %s", r->pooled[i].group, r->pooled[i].n_cases,
                     r->pooled[i].result.reason);
    int shown = 0;
    for (int i = 0; i < r->n_trend && shown < 8; i++) {
        const rp_trend_case *t = &r->trend[i];
        if (trend_rank(t) > 2)
            break;
        add_line(rs, len, "%s: %s", t->key, t->trend.reason);   /* the reason names the status */
        shown++;
    }
    if (n[2])
        add_line(rs, len, "note: %d case%s with a latest run beyond the thresholds alone (an "
                          "outlier, not a step: no alert)",
                 n[2], PLURAL(n[2]));
    if (n[4])
        add_line(rs, len, "note: %d case%s too little history to judge (fewer than %d runs)",
                 n[4], n[4] == 1 ? " has" : "s have", r->trend_opt.min_history);
    if (n[5])
        add_line(rs, len, "note: %d case%s could not be analysed (no usable times)", n[5],
                 PLURAL(n[5]));
    add_line(rs, len, "note: cases of the latest run %lld of suite '%s'%s%s", (long long)r->run.id,
             r->req->suite, r->req->since[0] ? ", history since " : "", r->req->since);
    add_measurement_notes(r);
}

/* ---- the terminal summary's worst cases ---------------------------------------- */

static void worst_run(const rp_report *r, ppb_report_outcome *out)
{
    snprintf(out->worst_title, sizeof out->worst_title, "failed cases, then the largest errors");
    /* Failed cases first, then the largest error against atol. */
    int *used = calloc((size_t)r->n_items + 1, sizeof *used);
    if (!used)
        return;
    for (int i = 0; i < r->n_items && out->n_worst < PPB_REPORT_MAX_WORST; i++) {
        const rp_item *it = &r->items[i];
        if (!ppb_status_failed(it->r.status))
            continue;
        used[i] = 1;
        snprintf(out->worst[out->n_worst++], sizeof out->worst[0], "%-7s #%d %s: %s",
                 ppb_status_name(it->r.status), it->number, it->c.key, it->r.reason);
    }
    if (out->n_worst == 0)
        snprintf(out->worst_title, sizeof out->worst_title,
                 "no case failed; the largest errors against atol");
    while (out->n_worst < PPB_REPORT_MAX_WORST) {
        int best = -1;
        for (int i = 0; i < r->n_items; i++) {
            double e = err_over_atol(&r->items[i]);
            if (used[i] || !isfinite(e))
                continue;
            if (best < 0 || e > err_over_atol(&r->items[best]))
                best = i;
        }
        if (best < 0)
            break;
        used[best] = 1;
        const rp_item *it = &r->items[best];
        snprintf(out->worst[out->n_worst++], sizeof out->worst[0],
                 "%-7s #%d max err %.3g = %.3g x atol: %s", ppb_status_name(it->r.status),
                 it->number, it->r.check.max_abs_err, err_over_atol(it), it->c.key);
    }
    free(used);
}

static double pcase_badness(const ppb_proposal_case *c)
{
    if (strcmp(c->state, "compared") != 0)
        return 1e300;   /* wrong, infeasible: always worth a look */
    return isfinite(c->ratio) ? c->ratio : 0;
}

static void worst_proposal(const rp_report *r, ppb_report_outcome *out)
{
    snprintf(out->worst_title, sizeof out->worst_title,
             "cases not compared, then the slowest candidate/baseline ratios");
    int *used = calloc((size_t)r->n_pcases + 1, sizeof *used);
    if (!used)
        return;
    while (out->n_worst < PPB_REPORT_MAX_WORST) {
        int best = -1;
        for (int i = 0; i < r->n_pcases; i++)
            if (!used[i] && (best < 0 || pcase_badness(&r->pcases[i]) >
                                             pcase_badness(&r->pcases[best])))
                best = i;
        if (best < 0)
            break;
        used[best] = 1;
        const ppb_proposal_case *c = &r->pcases[best];
        char iv[120];
        ppb_format_interval(iv, sizeof iv, c->ratio, c->ratio_lo, c->ratio_hi);
        if (strcmp(c->state, "compared") == 0)
            snprintf(out->worst[out->n_worst++], sizeof out->worst[0], "#%d %-10s ratio %s: %s", best + 1,
                     c->cls[0] ? c->cls : "-", iv, c->candidate_key);
        else
            snprintf(out->worst[out->n_worst++], sizeof out->worst[0], "#%d %-10s %s", best + 1,
                     c->state, c->candidate_key);
    }
    free(used);
}

static void worst_trend(const rp_report *r, ppb_report_outcome *out)
{
    snprintf(out->worst_title, sizeof out->worst_title, "alerts and outliers, largest first");
    for (int i = 0; i < r->n_trend && out->n_worst < PPB_REPORT_MAX_WORST; i++) {
        const rp_trend_case *t = &r->trend[i];
        if (trend_rank(t) > 2)
            break;
        snprintf(out->worst[out->n_worst++], sizeof out->worst[0], "%-11s %+.1f%%%s%s: %s",
                 ppb_trend_status_name(t->trend.status), t->trend.rel_change * 100,
                 t->trend.step_run_id[0] ? " since run " : "", t->trend.step_run_id, t->key);
    }
}

/* ---- writing ----------------------------------------------------------------- */

/* The folder a report goes to is ppbench's: new, empty, or marked by an
 * earlier report. A folder of someone else's files is refused (the report
 * replaces index.html and clears old charts). */
#define REPORT_MARK ".ppbench-report"

static int claim_out_dir(const char *dir, ppb_err *err)
{
    char mark[4300];
    snprintf(mark, sizeof mark, "%s/" REPORT_MARK, dir);
    struct stat st;
    if (lstat(mark, &st) != 0) {
        DIR *d = opendir(dir);
        if (!d)
            return ppb_fail(err, PPB_EIO, "%s: %s", dir, strerror(errno));
        int foreign = 0;
        struct dirent *e;
        while (!foreign && (e = readdir(d)) != NULL)
            foreign = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        closedir(d);
        if (foreign)
            return ppb_fail(err, PPB_EINPUT,
                            "%s is not empty and holds no earlier ppbench report: give a new or empty folder", dir);
    } else if (!S_ISREG(st.st_mode)) {
        return ppb_fail(err, PPB_EIO, "%s: not a regular file", mark);
    }
    FILE *f = NULL;
    int rc = ppb_file_create(mark, 0, &f, err);
    if (rc)
        return rc;
    fputs("A ppbench report folder: `ppbench report -o` may replace what is here.\n", f);
    return fclose(f) == 0 ? PPB_OK : ppb_fail(err, PPB_EIO, "%s: %s", mark, strerror(errno));
}

static void free_report(rp_report *r)
{
    free(r->items);
    free(r->env);
    free(r->base_env);
    free(r->pcases);
    for (int i = 0; i < r->n_trend; i++)
        free(r->trend[i].points);
    free(r->trend);
    free(r->nights);
    free(r->feas);
    for (int i = 0; i < r->n_charts; i++)
        free(r->charts[i].svg);
    free(r->charts);
    free(r);
}

int ppb_report_write(ppb_store *s, const ppb_report_request *req, ppb_report_outcome *out,
                     ppb_err *err)
{
    memset(out, 0, sizeof *out);
    if (!req->out_dir[0])
        return ppb_fail(err, PPB_EINPUT, "no output folder");
    if (req->kind == PPB_REPORT_TREND && !req->suite[0])
        return ppb_fail(err, PPB_EINPUT, "no suite named for the trend");
    rp_report *r = calloc(1, sizeof *r);
    if (!r)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    r->req = req;
    r->kind = req->kind;
    ppb_utc_now(r->generated_at, sizeof r->generated_at);
    ppb_report_command(req, r->command, sizeof r->command);

    int rc = gather(s, r, err);
    if (rc)
        goto end;
    if (label_items(r)) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    collect_feasibility(r);
    find_ceilings(r);
    if (r->kind == PPB_REPORT_RUN)
        decide_run(r);
    else if (r->kind == PPB_REPORT_PROPOSAL)
        decide_proposal(r);
    else
        decide_trend(r);

    if ((rc = ppb_make_dirs(req->out_dir, err)) || (rc = claim_out_dir(req->out_dir, err)))
        goto end;
    snprintf(r->charts_dir, sizeof r->charts_dir, "%s/charts", req->out_dir);
    if ((rc = ppb_make_dirs(r->charts_dir, err)))
        goto end;
    if (!ppb_is_real_dir(r->charts_dir)) {
        rc = ppb_fail(err, PPB_EIO, "%s is a symbolic link: refusing to write charts through it", r->charts_dir);
        goto end;
    }
    ppb_gnuplot_detect(&r->gp, req->gnuplot);
    rc = rp_charts_make(r, err);
    if (rc)
        goto end;

    char tmp[4300];
    snprintf(out->html_path, sizeof out->html_path, "%s/index.html", req->out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", out->html_path);
    rc = rp_html_write(r, tmp, err);
    if (!rc && rename(tmp, out->html_path) != 0)
        rc = ppb_fail(err, PPB_EIO, "%s: %s", out->html_path, strerror(errno));
    if (rc) {
        unlink(tmp);
        goto end;
    }

    snprintf(out->charts_dir, sizeof out->charts_dir, "%s", r->charts_dir);
    snprintf(out->verdict, sizeof out->verdict, "%s", r->verdict);
    snprintf(out->headline, sizeof out->headline, "%.*s", (int)strcspn(r->reasons, "\n"),
             r->reasons);
    out->n_cases = r->kind == PPB_REPORT_PROPOSAL ? r->n_pcases
                   : r->kind == PPB_REPORT_TREND  ? r->n_trend
                                                  : r->n_items;
    for (int i = 0; i < r->n_charts; i++) {
        if (r->charts[i].svg)
            out->n_charts++;
        else
            out->n_charts_failed++;
    }
    out->gnuplot_available = r->gp.available;
    snprintf(out->gnuplot_note, sizeof out->gnuplot_note, "%s",
             r->gp.available ? r->gp.version : r->gp.why);
    if (r->kind == PPB_REPORT_RUN)
        worst_run(r, out);
    else if (r->kind == PPB_REPORT_PROPOSAL)
        worst_proposal(r, out);
    else
        worst_trend(r, out);
end:
    free_report(r);
    return rc;
}
