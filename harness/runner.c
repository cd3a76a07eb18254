#include "runner.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "matrix.h"
#include "measure.h"
#include "session.h"
#include "store.h"
#include "suite.h"
#include "target.h"

/* Set by SIGINT/SIGTERM; the pipeline stops between samples and cases. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct run_ctx {
    const ppb_run_options *opt;
    ppb_suite suite;
    ppb_case_list cases;
    ppb_target target;
    int have_target;
    ppb_session session;
    ppb_store *store;
    ppb_run_info run;
} run_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- resume: the options that select the cases travel with the run -------- */

static void encode_args(const ppb_run_options *o, const char *target, char *buf, size_t len)
{
    snprintf(buf, len, "filter=%s\nshard=%d/%d\ntarget=%s\nhot=%d\ncpu_max_gflop=%.17g\n",
             o->filter ? o->filter : "", o->shard_k, o->shard_n, target, o->hot, o->cpu_max_gflop);
}

typedef struct stored_args {
    char filter[512], target[64];
    int shard_k, shard_n, hot;
    double cpu_max_gflop;
} stored_args;

static void decode_args(const char *args, stored_args *a)
{
    memset(a, 0, sizeof *a);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", args);
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *v = eq + 1;
        if (strcmp(line, "filter") == 0)
            snprintf(a->filter, sizeof a->filter, "%s", v);
        else if (strcmp(line, "target") == 0)
            snprintf(a->target, sizeof a->target, "%s", v);
        else if (strcmp(line, "shard") == 0)
            sscanf(v, "%d/%d", &a->shard_k, &a->shard_n);
        else if (strcmp(line, "hot") == 0)
            a->hot = atoi(v);
        else if (strcmp(line, "cpu_max_gflop") == 0)
            a->cpu_max_gflop = strtod(v, NULL);
    }
}

/* ---- one case ------------------------------------------------------------- */

static int run_case(run_ctx *x, const ppb_case *c, ppb_result *res)
{
    ppb_workload w;
    int prepared = 0, rc = PPB_OK;
    const ppb_suite *s = &x->suite;
    uint64_t seed = ppb_case_input_seed(s->measure.seed, c->key);

    ppb_result_init(res);
    res->timing_is_cpu = !x->session.device.is_gpu;
    ppb_session_workload(c, seed, &w, res);
    if (res->status == PPB_STATUS_OK)
        rc = ppb_session_check(&x->session, c, &w, &s->check, seed, res, &prepared);
    if (rc == PPB_OK && res->status == PPB_STATUS_OK) {
        ppb_measure_settings m = s->measure;
        if (x->opt->hot)
            m.cold_l2 = 0;
        ppb_err err = {{0}};
        rc = ppb_measure_case(x->session.ops, x->session.backend, &m, &stop_requested, res, &err);
        if (rc && rc != PPB_EINTR) {
            res->status = PPB_STATUS_ERROR;
            snprintf(res->reason, sizeof res->reason, "%s", err.msg);
            rc = PPB_OK;
        }
        ppb_result_summarise(res, ppb_case_flops(c), ppb_case_min_bytes(c));
    }
    if (prepared)
        x->session.ops->release(x->session.backend);
    ppb_workload_free(&w);
    return rc;
}

/* ---- progress ------------------------------------------------------------- */

static void progress_line(const ppb_run_options *o, int done, int total, double t0,
                          const char *key)
{
    if (!o->progress)
        return;
    double el = now_s() - t0, eta = done > 0 ? el / done * (total - done) : 0;
    fprintf(stderr, "\r\033[K[%d/%d] %02d:%02d elapsed, ETA %02d:%02d  %.60s", done, total,
            (int)el / 60, (int)el % 60, (int)eta / 60, (int)eta % 60, key ? key : "");
    fflush(stderr);
}

/* ---- the run -------------------------------------------------------------- */

static int prepare_cases(run_ctx *x, const char *filter, int shard_k, int shard_n, ppb_err *err)
{
    int rc = ppb_matrix_expand(&x->suite, &x->cases, err);
    if (!rc && filter && filter[0])
        rc = ppb_matrix_filter(&x->cases, filter, err);
    if (!rc && shard_n > 0)
        ppb_matrix_shard(&x->cases, shard_k, shard_n);
    return rc;
}

static int load_target(run_ctx *x, const char *name, ppb_err *err)
{
    if (!name || !name[0] || strcmp(name, "none") == 0)
        return PPB_OK;
    char dir[4096];
    ppb_suite_dir(&x->suite, dir, sizeof dir);
    int rc = ppb_target_load_named(dir, name, &x->target, err);
    x->have_target = rc == PPB_OK;
    return rc;
}

int ppb_run_suite(const ppb_run_options *opt, ppb_run_summary *sum, ppb_err *err)
{
    run_ctx x;
    memset(&x, 0, sizeof x);
    memset(sum, 0, sizeof *sum);
    x.opt = opt;
    int rc = PPB_OK;
    stored_args resumed;
    const char *filter = opt->filter, *target = opt->target;
    int shard_k = opt->shard_k, shard_n = opt->shard_n;
    ppb_run_options effective = *opt;

    /* Everything that can fail on bad input happens before the database is
     * written, so a malformed suite leaves no trace in it. */
    if (opt->resume_run) {
        rc = ppb_store_open(&x.store, opt->db_path, err);
        if (rc)
            goto end;
        rc = ppb_store_get_run(x.store, opt->resume_run, &x.run, err);
        if (rc)
            goto end;
        if (strcmp(x.run.status, "complete") == 0) {
            rc = ppb_fail(err, PPB_EINPUT, "run %lld is already complete", (long long)x.run.id);
            goto end;
        }
        decode_args(x.run.args, &resumed);
        filter = resumed.filter;
        target = resumed.target;
        shard_k = resumed.shard_k;
        shard_n = resumed.shard_n;
        effective.hot = resumed.hot;
        effective.cpu_max_gflop = resumed.cpu_max_gflop;
        effective.suite_path = x.run.suite_path;
    }
    x.opt = &effective;
    rc = ppb_suite_load(effective.suite_path, &x.suite, err);
    if (rc)
        goto end;
    if (opt->resume_run && strcmp(x.suite.hash, x.run.suite_hash) != 0) {
        rc = ppb_fail(err, PPB_EINPUT,
                      "%s changed since run %lld was started (hash %s, was %s): start a new run",
                      x.suite.path, (long long)x.run.id, x.suite.hash, x.run.suite_hash);
        goto end;
    }
    if (!opt->resume_run && !target)
        target = x.suite.target;
    rc = prepare_cases(&x, filter, shard_k, shard_n, err);
    if (rc)
        goto end;
    rc = load_target(&x, target, err);
    if (rc)
        goto end;
    rc = ppb_session_open(&x.session, effective.backend ? effective.backend : "auto",
                          effective.device_index, x.have_target ? &x.target : NULL,
                          effective.cpu_max_gflop, opt->log, err);
    if (rc)
        goto end;
    const ppb_backend_ops *ops = x.session.ops;
    const ppb_device_info *dev = &x.session.device;
    snprintf(sum->backend, sizeof sum->backend, "%s", ops->name);
    sum->timing_is_cpu = !dev->is_gpu;
    if (opt->resume_run && strcmp(x.run.backend, ops->name) != 0) {
        rc = ppb_fail(err, PPB_EINPUT, "run %lld used the %s backend; this one is %s",
                      (long long)x.run.id, x.run.backend, ops->name);
        goto end;
    }
    fprintf(opt->log, "ppbench: %s backend on %s%s; %d cases%s%s\n", ops->name, dev->name,
            dev->is_gpu ? "" : " (CPU timings)", x.cases.n,
            x.have_target ? ", target " : "", x.have_target ? x.target.name : "");

    if (!opt->resume_run) {
        rc = ppb_store_open(&x.store, opt->db_path, err);
        if (rc)
            goto end;
        char args[1024];
        encode_args(&effective, x.have_target ? x.target.name : "none", args, sizeof args);
        rc = ppb_session_begin_run(&x.session, x.store, &x.suite, opt->label, args, x.cases.n,
                                   &x.run, err);
        if (rc)
            goto end;
    } else {
        ppb_session_store_environment(&x.session, x.store, x.run.id, "resume.");
    }
    sum->run_id = x.run.id;
    sum->planned = x.cases.n;

    /* Resume: which cases are stored already (a database error is an error,
     * not "done"). */
    char *stored = calloc((size_t)x.cases.n + 1, 1);
    if (!stored) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    int todo = 0;
    for (int i = 0; i < x.cases.n; i++) {
        int has = ppb_store_has_result(x.store, x.run.id, x.cases.items[i].key);
        if (has < 0) {
            free(stored);
            rc = ppb_fail(err, PPB_EIO, "database error while looking up '%s'",
                          x.cases.items[i].key);
            goto end;
        }
        stored[i] = (char)has;
        todo += !has;
    }
    sum->already_done = x.cases.n - todo;

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    double t0 = now_s();
    int done = 0;
    for (int i = 0; i < x.cases.n && !stop_requested; i++) {
        const ppb_case *c = &x.cases.items[i];
        if (stored[i])
            continue;
        progress_line(&effective, done, todo, t0, c->key);
        ppb_result res;
        int crc = run_case(&x, c, &res);
        if (crc == PPB_EINTR || stop_requested) {
            ppb_result_free(&res);
            break;
        }
        if (res.status == PPB_STATUS_REFUSED || res.status == PPB_STATUS_SKIPPED ||
            res.status == PPB_STATUS_ERROR)
            fprintf(opt->log, "%s%s: %s: %s\n", effective.progress ? "\r\033[K" : "", c->key,
                    ppb_status_name(res.status), res.reason);
        rc = ppb_store_put_result(x.store, x.run.id, c, &res, err);
        ppb_result_free(&res);
        if (rc)
            break;
        done++;
    }
    free(stored);
    progress_line(&effective, done, todo, t0, NULL);
    if (effective.progress)
        fputc('\n', stderr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);

    ppb_session_store_environment(&x.session, x.store, x.run.id, "after.");
    sum->interrupted = stop_requested != 0;
    if (rc == PPB_OK) {
        ppb_err ferr;
        int frc = ppb_store_finish_run(x.store, x.run.id,
                                       sum->interrupted ? "interrupted" : "complete", &ferr);
        if (frc)
            rc = ppb_fail(err, frc, "%s", ferr.msg);
    }
end:
    ppb_session_close(&x.session);
    if (x.store)
        ppb_store_close(x.store);
    ppb_case_list_free(&x.cases);
    ppb_suite_free(&x.suite);
    return rc;
}
