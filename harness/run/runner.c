#include "runner.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ahead.h"
#include "eta.h"
#include "impl.h"
#include "matrix.h"
#include "measure.h"
#include "provenance.h"
#include "result_writer.h"
#include "session.h"
#include "stop_signals.h"
#include "store.h"
#include "suite.h"
#include "target.h"
#include "workers.h"

/* Set by SIGINT/SIGTERM; the pipeline stops between samples and cases. */
/* Non-zero (the signal) once SIGINT/SIGTERM asked the run to stop. */
static volatile sig_atomic_t stop_requested;

/* The inputs of the shape being run and their reference rows, kept while the
 * next cases share the shape: every config of a shape runs on the same inputs
 * (ppb_case_seed), so they are built and checked against once. */
typedef struct shape_inputs {
    char shape_key[PPB_CASE_KEY_MAX];   /* "" while none are kept */
    ppb_workload w;
    ppb_reference_rows ref;
} shape_inputs;

static void shape_inputs_free(shape_inputs *in)
{
    ppb_reference_rows_free(&in->ref);
    ppb_workload_free(&in->w);
    in->shape_key[0] = '\0';
}

typedef struct run_ctx {
    const ppb_run_options *opt;
    ppb_suite suite;
    ppb_case_list cases;
    ppb_target target;
    int have_target;
    char target_ref[512];   /* what --resume loads the target from: its name, or its file's path */
    ppb_session session;
    ppb_store *store;
    ppb_run_info run;
    shape_inputs inputs;    /* of the shape being run: the cases are grouped by shape */
    ppb_ahead *ahead;       /* the coming shapes' inputs and reference rows (NULL: made in turn) */
    double busy_ms, busy_until_ms;  /* the last case's timing: how long, until when (warm-up owed) */
    double open_ms;         /* spent opening the session's device (the run's device phase; with
                               --devices the workers open theirs, counted in no phase) */
    double store_ms;        /* spent waiting to store results (the run's store phase) */
    int all_refused;        /* said once before the first case: no case line repeats it */
} run_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- resume: the options that select the cases travel with the run -------- */

/* The options as stored with the run, whole or not at all: a resumed run that
 * re-expanded a cut filter would run cases that were never part of it. */
static int encode_args(const ppb_run_options *o, const char *target, char *buf, size_t len, ppb_err *err)
{
    int n = snprintf(buf, len, "filter=%s\nshard=%d/%d\ntarget=%s\nhot=%d\ncpu_max_gflop=%.17g\nimpl=%s\n",
                     o->filter ? o->filter : "", o->shard_k, o->shard_n, target, o->hot, o->cpu_max_gflop,
                     o->impl ? o->impl : "");
    if (n < 0 || (size_t)n >= len)
        return ppb_fail(err, PPB_EINPUT,
                        "--filter, --target and --impl are stored with the run for --resume and must fit in %zu "
                        "bytes together (%d given): shorten the filter",
                        len - 1, n);
    return PPB_OK;
}

/* Each field as large as the whole stored text, so whatever was stored reads back whole. */
typedef struct stored_args {
    char filter[sizeof(((ppb_run_info *)0)->args)], target[sizeof(((ppb_run_info *)0)->args)], impl[64];
    int shard_k, shard_n, hot;
    double cpu_max_gflop;
} stored_args;

static void decode_args(const char *args, stored_args *a)
{
    memset(a, 0, sizeof *a);
    char buf[sizeof(((ppb_run_info *)0)->args)];
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
        else if (strcmp(line, "impl") == 0)
            snprintf(a->impl, sizeof a->impl, "%s", v);
        else if (strcmp(line, "shard") == 0)
            sscanf(v, "%d/%d", &a->shard_k, &a->shard_n);
        else if (strcmp(line, "hot") == 0)
            a->hot = atoi(v);
        else if (strcmp(line, "cpu_max_gflop") == 0)
            a->cpu_max_gflop = strtod(v, NULL);
    }
}

/* ---- one case ------------------------------------------------------------- */

/* The case's inputs: the kept ones when the case has their shape, else new
 * ones (kept when built; a refused or skipped shape keeps nothing). */
static const ppb_workload *case_inputs(run_ctx *x, const ppb_case *c, uint64_t seed, ppb_result *res)
{
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(c, shape, sizeof shape);
    if (x->inputs.shape_key[0] && strcmp(shape, x->inputs.shape_key) == 0) {
        x->inputs.w.c = c;
        return &x->inputs.w;
    }
    shape_inputs_free(&x->inputs);
    ppb_session_release(&x->session, 0, 0); /* the backend's copy of the inputs before */
    ppb_inputs_ahead made;
    ppb_ahead_take(x->ahead, c, &made);
    ppb_session_workload(&x->session, c, seed, &x->suite.check, &made, &x->inputs.ref, &x->inputs.w, res);
    ppb_inputs_ahead_free(&made); /* what was not taken over */
    if (res->status != PPB_STATUS_OK) {
        shape_inputs_free(&x->inputs);
        return NULL;
    }
    snprintf(x->inputs.shape_key, sizeof x->inputs.shape_key, "%s", shape);
    return &x->inputs.w;
}

static int run_case(run_ctx *x, const ppb_case *c, ppb_result *res)
{
    int prepared = 0, rc = PPB_OK;
    const ppb_suite *s = &x->suite;
    uint64_t seed = ppb_case_seed(s->measure.seed, c);

    ppb_result_init(res);
    res->timing_is_cpu = !x->session.device.is_gpu;
    double t0 = ppb_monotonic_ms();
    const ppb_workload *w = case_inputs(x, c, seed, res);
    double t1 = ppb_monotonic_ms();
    if (w)
        rc = ppb_session_check(&x->session, c, w, &s->check, seed, &x->inputs.ref, res, &prepared);
    /* rows in hand and inputs made on the device: the host tensors are done with */
    if (w && x->session.ops->makes_inputs && x->inputs.ref.w == w)
        ppb_workload_free_tensors(&x->inputs.w);
    res->phases.generate_ms = t1 - t0;
    res->phases.check_ms = ppb_monotonic_ms() - t1;
    if (rc == PPB_OK && res->status == PPB_STATUS_OK) {
        ppb_measure_settings m = s->measure;
        if (x->opt->hot)
            m.cold_l2 = 0;
        m.warmup_ms = ppb_measure_warmup_owed(m.warmup_ms, x->busy_ms, ppb_monotonic_ms() - x->busy_until_ms);
        ppb_err err = {{0}};
        rc = ppb_measure_case(x->session.ops, x->session.backend, &m, &stop_requested, res, &err);
        x->busy_until_ms = ppb_monotonic_ms();
        x->busy_ms = res->phases.warmup_ms + res->phases.sampling_ms;
        if (rc && rc != PPB_EINTR) {
            res->status = PPB_STATUS_ERROR;
            snprintf(res->reason, sizeof res->reason, "%s", err.msg);
            rc = PPB_OK;
        }
        ppb_result_summarise(res, ppb_case_flops(c), ppb_case_min_bytes(c));
    }
    ppb_session_release(&x->session, prepared, 1); /* the next case may share the inputs */
    ppb_session_judge(&x->session, c, res);
    return rc;
}

/* ---- progress ------------------------------------------------------------- */

/* The cases this process runs or hands to workers: counts, and the ETA model
 * (harness/run/eta.h) fed with each finished case's work, status and time. */
typedef struct progress {
    ppb_eta eta;
    double t0, last; /* when the cases started; when the last one finished */
    int done, total;
} progress;

static int progress_start(progress *p, const ppb_case_list *cases, const char *todo_flags,
                          ppb_err *err)
{
    int rc = ppb_eta_init(&p->eta, cases->n, err);
    p->done = p->total = 0;
    for (int i = 0; !rc && i < cases->n; i++)
        if (todo_flags[i]) {
            ppb_eta_plan(&p->eta, i, ppb_eta_case_work(&cases->items[i]));
            p->total++;
        }
    p->t0 = p->last = now_s();
    return rc;
}

/* A case's time is the time since the case before finished: in process, its
 * own run and store; with worker processes, the pool's time per case, which
 * is what the cases left will take in turn. */
static void progress_finished(progress *p, int index, const ppb_result *res)
{
    double now = now_s();
    int timed = res->status == PPB_STATUS_OK || res->status == PPB_STATUS_NOISY;
    ppb_eta_finish(&p->eta, index, timed, now - p->last);
    p->last = now;
    p->done++;
}

/* `key`: the case starting now (terminal) or just finished (log). */
static void progress_line(const ppb_run_options *o, const progress *p, const char *key)
{
    if (o->progress == PPB_PROGRESS_NONE || (o->progress == PPB_PROGRESS_LOG && (!key || p->done == 0)))
        return;
    double el = now_s() - p->t0, eta = ppb_eta_remaining_s(&p->eta);
    fprintf(stderr, "%s[%d/%d] %02d:%02d elapsed, ETA %02d:%02d  %.*s%s", o->progress == PPB_PROGRESS_TERMINAL ? "\r\033[K" : "",
            p->done, p->total, (int)el / 60, (int)el % 60, (int)eta / 60, (int)eta % 60,
            o->progress == PPB_PROGRESS_TERMINAL ? 60 : 250, key ? key : "",
            o->progress == PPB_PROGRESS_LOG ? "\n" : "");
    fflush(stderr);
}

/* ---- worker processes (--devices) ----------------------------------------- */

typedef struct pool_ctx {
    run_ctx *x;
    const char *backend;
    progress prog;
} pool_ctx;

static int pool_worker_open(void *ctx, int device, ppb_device_info *info, ppb_err *err)
{
    pool_ctx *p = ctx;
    run_ctx *x = p->x;
    int rc = ppb_session_open(&x->session, p->backend, device, x->have_target ? &x->target : NULL,
                              x->opt->cpu_max_gflop, NULL, err);
    if (!rc)
        *info = x->session.device;
    return rc;
}

static int pool_worker_case(void *ctx, const ppb_case *c, ppb_result *res)
{
    return run_case(((pool_ctx *)ctx)->x, c, res);
}

static void pool_worker_close(void *ctx)
{
    run_ctx *x = ((pool_ctx *)ctx)->x;
    shape_inputs_free(&x->inputs);
    ppb_session_close(&x->session);
}

static int store_result(run_ctx *x, const ppb_case *c, ppb_result *res, ppb_err *err);

static int pool_on_result(void *ctx, int index, const ppb_case *c, ppb_result *res, ppb_err *err)
{
    pool_ctx *p = ctx;
    int rc = store_result(p->x, c, res, err);
    progress_finished(&p->prog, index, res);
    progress_line(p->x->opt, &p->prog, c->key);
    return rc;
}

/* ---- the run -------------------------------------------------------------- */

static int prepare_cases(run_ctx *x, const char *impl, const char *filter, int shard_k, int shard_n,
                         ppb_err *err)
{
    int rc = ppb_matrix_expand(&x->suite, &x->cases, err);
    if (!rc && impl && impl[0] &&
        ((rc = ppb_matrix_override(&x->cases, "impl", impl, err)) ||
         (x->cases.n > 0 && (rc = ppb_impl_require(x->cases.items[0].config.impl, err)))))
        ppb_err_prefix(err, "--impl: ");
    /* path= picks among the built-in kernels' code paths; a plugin has its own (ppb_impl_bind):
     * its cases all run at auto, so a suite's simt and mma configs become one. */
    if (!rc && impl && impl[0] && strcmp(impl, "builtin") != 0)
        rc = ppb_matrix_override(&x->cases, "path", "auto", err);
    if (!rc && filter && filter[0])
        rc = ppb_matrix_filter(&x->cases, filter, err);
    if (!rc && shard_n > 0)
        ppb_matrix_shard(&x->cases, shard_k, shard_n);
    if (!rc)
        rc = ppb_matrix_group_by_shape(&x->cases, err);
    return rc;
}

static int load_target(run_ctx *x, const char *name, int from_suite, ppb_err *err)
{
    if (!name || !name[0] || strcmp(name, "none") == 0)
        return PPB_OK;
    char dir[4096];
    ppb_suite_dir(&x->suite, dir, sizeof dir);
    /* --target and what a resumed run stored may be a file; a suite's target: is a name */
    int rc = from_suite ? ppb_target_load_named(dir, name, &x->target, err)
                        : ppb_target_load_arg(dir, name, &x->target, err);
    x->have_target = rc == PPB_OK;
    /* A profile given by path is found again by its absolute path, whatever the directory of the resume. */
    char abs[4096];
    snprintf(x->target_ref, sizeof x->target_ref, "%s",
             x->have_target && strcmp(x->target.path, name) == 0 && realpath(name, abs) ? abs
             : x->have_target ? x->target.name : name);
    return rc;
}

/* Once the device is known (opened here, or reported by the first worker):
 * check a resumed run matches, announce the backend, start or reopen the run. */
static int device_known(run_ctx *x, const ppb_backend_ops *ops, const ppb_device_info *dev,
                        ppb_run_summary *sum, ppb_err *err)
{
    const ppb_run_options *o = x->opt;
    snprintf(sum->backend, sizeof sum->backend, "%s", ops->name);
    sum->timing_is_cpu = !dev->is_gpu;
    if (o->resume_run && strcmp(x->run.backend, ops->name) != 0)
        return ppb_fail(err, PPB_EINPUT, "run %lld used the %s backend; this one is %s",
                        (long long)x->run.id, x->run.backend, ops->name);
    fprintf(o->log, "ppbench: %s backend on %s%s; %d cases%s%s%s\n", ops->name, dev->name,
            dev->is_gpu ? "" : " (CPU timings)", x->cases.n, x->have_target ? ", target " : "",
            x->have_target ? x->target.name : "", o->devices ? ", worker processes" : "");
    int rc = PPB_OK;
    if (!o->resume_run) {
        char args[sizeof x->run.args];
        if ((rc = encode_args(o, x->have_target ? x->target_ref : "none", args, sizeof args, err)))
            return rc;
        ppb_run_shard shard = {o->shard_k, o->shard_n, o->group};
        x->session.run_kind = o->run_kind;
        rc = ppb_session_begin_run(&x->session, x->store, &x->suite, &shard, o->label, args, x->cases.n,
                                   &x->run, err);
    } else {
        ppb_session_store_environment(&x->session, x->store, x->run.id, "resume.");
    }
    sum->run_id = x->run.id;
    return rc;
}

/* A case that did not run, and why, in the log as it happens (unless every
 * case's refusal was said at once, before the first: say_all_refused). */
static void log_not_run(const run_ctx *x, const ppb_case *c, const ppb_result *res)
{
    const ppb_run_options *o = x->opt;
    if (x->all_refused && (res->status == PPB_STATUS_REFUSED || res->status == PPB_STATUS_SKIPPED))
        return;
    if (res->status == PPB_STATUS_REFUSED || res->status == PPB_STATUS_SKIPPED ||
        res->status == PPB_STATUS_ERROR || res->status == PPB_STATUS_CRASHED || res->status == PPB_STATUS_HUNG)
        fprintf(o->log, "%s%s: %s: %s\n", o->progress == PPB_PROGRESS_TERMINAL ? "\r\033[K" : "", c->key,
                ppb_status_name(res->status), res->reason);
}

/* Before the first case: when the backend refuses every case to run (a GPU
 * suite on the CPU backend, every case above --cpu-max-gflop), one line says so
 * and why, instead of a line per case; the cases are still stored refused.
 * Stops at the first case that would run, so a runnable suite pays for one
 * case's lengths. */
static void say_all_refused(run_ctx *x, const char *todo_flags)
{
    ppb_refusals t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < x->cases.n; i++) {
        if (!todo_flags[i])
            continue;
        const ppb_case *c = &x->cases.items[i];
        ppb_result res;
        ppb_result_init(&res);
        int refused = ppb_session_refuses(&x->session, c, ppb_case_seed(x->suite.measure.seed, c), &res) &&
                      (res.status == PPB_STATUS_REFUSED || res.status == PPB_STATUS_SKIPPED);
        if (refused)
            ppb_refusals_add(&t, res.reason);
        ppb_result_free(&res);
        if (!refused)
            return;
    }
    if (t.n == 0)
        return;
    char line[2048];
    ppb_refusals_text(&t, "cases", &x->session, line, sizeof line);
    fprintf(x->opt->log, "ppbench: %s\n", line);
    x->all_refused = 1;
}

/* A worker process's result, stored as it arrives (the parent also stores the
 * workers' devices meanwhile: no writer thread owns the store there). */
static int store_result(run_ctx *x, const ppb_case *c, ppb_result *res, ppb_err *err)
{
    log_not_run(x, c, res);
    double t0 = ppb_monotonic_ms();
    int rc = ppb_store_put_result(x->store, x->run.id, c, res, err);
    x->store_ms += ppb_monotonic_ms() - t0;
    return rc;
}

typedef struct pool_device_ctx {
    pool_ctx pool;
    ppb_run_summary *sum;
    const int *devices;
    int n_devices;
} pool_device_ctx;

static int pool_on_device(void *ctx, const ppb_device_info *info, ppb_err *err)
{
    pool_device_ctx *p = ctx;
    run_ctx *x = p->pool.x;
    /* The parent holds no backend: a session with only the ops and the device. */
    x->session.ops = strcmp(info->backend, "cpu") == 0 ? &ppb_backend_cpu :
#ifdef PPB_HAVE_CUDA
                                                       &ppb_backend_cuda;
#else
                                                       &ppb_backend_cpu;
#endif
    x->session.device = *info;
    x->session.target = x->have_target ? &x->target : NULL;
    /* Starting the workers is not the first case's time. */
    p->pool.prog.last = now_s();
    int rc = device_known(x, x->session.ops, info, p->sum, err);
    /* The run records worker 0's device; say which devices shared the cases. */
    char list[256] = "";
    for (int i = 0, n = 0; i < p->n_devices; i++)
        n += snprintf(list + n, sizeof list - (size_t)n, "%s%d", i ? "," : "", p->devices[i]);
    ppb_err ignored;
    if (!rc)
        ppb_store_put_env(x->store, x->run.id, "workers.devices", list, &ignored);
    return rc;
}

/* Shapes made ahead and not yet run, at most: each holds its lengths, block table and
 * reference rows (megabytes), never host tensors. */
#define AHEAD_MAX_READY 8

static void start_ahead(run_ctx *x, const char *todo_flags)
{
    x->ahead = ppb_ahead_start(&x->session, x->cases.items, todo_flags, x->cases.n, x->suite.measure.seed,
                               &x->suite.check, AHEAD_MAX_READY);
}

/* A fresh run's database opens on a thread of its own while the device does:
 * the CUDA driver takes a quarter of a second to start, and a database's
 * checks on opening (PRAGMA quick_check) grow with its size. */
typedef struct store_opening {
    pthread_t thread;
    int threaded;
    const char *path;
    ppb_store *store;
    int rc;
    ppb_err err;
} store_opening;

static void *open_store(void *arg)
{
    store_opening *o = arg;
    o->rc = ppb_store_open(&o->store, o->path, &o->err);
    return NULL;
}

static void store_open_start(store_opening *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->threaded = pthread_create(&o->thread, NULL, open_store, o) == 0;
}

/* Wait for the database (opened here if no thread started). */
static int store_open_finish(store_opening *o, ppb_store **out, ppb_err *err)
{
    if (o->threaded)
        pthread_join(o->thread, NULL);
    else
        open_store(o);
    *out = o->store;
    if (o->rc)
        *err = o->err;
    return o->rc;
}

/* The case a plugin call never came back from (impl.h's abandon hook): stored
 * with its status and reason after everything finished before it, and the run
 * marked interrupted, so the database says what happened and --resume goes on. */
typedef struct abandoned_case {
    run_ctx *x;
    ppb_result_writer *writer;
    const ppb_case *current;
} abandoned_case;

static void store_abandoned(void *ctx, int status, const char *reason)
{
    abandoned_case *a = ctx;
    ppb_err ignored;
    if (a->writer && a->current) {
        ppb_result res;
        ppb_result_init(&res);
        res.status = status;
        snprintf(res.reason, sizeof res.reason, "%s", reason);
        ppb_result_writer_put(a->writer, a->current, &res, &ignored);
        double waited_ms;
        ppb_result_writer_finish(a->writer, &waited_ms, &ignored); /* the store is free after this */
    }
    ppb_store_finish_run(a->x->store, a->x->run.id, "interrupted", &ignored);
}

/* The cases in this process, one after another; each result stored on the
 * writer's thread while the next case runs. */
static int run_in_process(run_ctx *x, const char *todo_flags, ppb_err *err)
{
    progress prog;
    ppb_result_writer *writer = NULL;
    abandoned_case abandoned = {x, NULL, NULL};
    int rc = progress_start(&prog, &x->cases, todo_flags, err);
    if (!rc)
        rc = ppb_result_writer_start(&writer, x->store, x->run.id, err);
    abandoned.writer = writer;
    ppb_impl_set_abandon_hook(store_abandoned, &abandoned);
    ppb_session_prefetch(&x->session, x->cases.items, todo_flags, x->cases.n);
    if (!x->ahead && x->session.ops->makes_inputs)
        start_ahead(x, todo_flags);
    for (int i = 0; i < x->cases.n && !stop_requested && !rc; i++) {
        const ppb_case *c = &x->cases.items[i];
        if (!todo_flags[i])
            continue;
        if (x->opt->progress == PPB_PROGRESS_TERMINAL)
            progress_line(x->opt, &prog, c->key);
        ppb_result res;
        abandoned.current = c;
        int crc = run_case(x, c, &res);
        abandoned.current = NULL;
        if (crc == PPB_EINTR || stop_requested) {
            ppb_result_free(&res);
            break;
        }
        log_not_run(x, c, &res);
        progress_finished(&prog, i, &res);
        rc = ppb_result_writer_put(writer, c, &res, err);
        if (x->opt->progress == PPB_PROGRESS_LOG)
            progress_line(x->opt, &prog, c->key);
    }
    ppb_impl_set_abandon_hook(NULL, NULL);
    ppb_ahead_stop(x->ahead);
    x->ahead = NULL;
    if (writer) {
        ppb_err werr;
        double waited_ms = 0;
        int wrc = ppb_result_writer_finish(writer, &waited_ms, &werr);
        x->store_ms += waited_ms;
        if (wrc && !rc)
            rc = ppb_fail(err, wrc, "%s", werr.msg);
    }
    progress_line(x->opt, &prog, NULL);
    ppb_eta_free(&prog.eta);
    return rc;
}

/* How many GPUs `--devices all` means, without initialising CUDA in the parent
 * (a CUDA context does not survive fork). */
static int count_gpu_device_files(void)
{
    int n = 0;
    char path[32];
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof path, "/dev/nvidia%d", i);
        n += access(path, F_OK) == 0;
    }
    return n;
}

int ppb_run_suite(const ppb_run_options *opt, ppb_run_summary *sum, ppb_err *err)
{
    const double wall_start = ppb_monotonic_ms();
    run_ctx x;
    memset(&x, 0, sizeof x);
    memset(sum, 0, sizeof *sum);
    int rc = PPB_OK;
    stored_args resumed;
    const char *filter = opt->filter, *target = opt->target, *impl = opt->impl;
    int shard_k = opt->shard_k, shard_n = opt->shard_n;
    ppb_run_options effective = *opt;
    x.opt = &effective;
    char *todo_flags = NULL;
    int devices[64], n_devices = 0;

    /* Everything that can fail on bad input happens before the database is
     * written, so a malformed suite leaves no trace in it. */
    if (opt->devices &&
        (rc = ppb_pool_parse_devices(opt->devices, count_gpu_device_files(), devices, 64,
                                     &n_devices, err)))
        goto end;
    if (opt->resume_run) {
        if ((rc = ppb_store_open(&x.store, opt->db_path, err)) ||
            (rc = ppb_store_get_run(x.store, opt->resume_run, &x.run, err)))
            goto end;
        if (strcmp(x.run.status, "complete") == 0) {
            rc = ppb_fail(err, PPB_EINPUT, "run %lld is already complete", (long long)x.run.id);
            goto end;
        }
        decode_args(x.run.args, &resumed);
        filter = resumed.filter;
        target = resumed.target;
        impl = resumed.impl;
        shard_k = resumed.shard_k;
        shard_n = resumed.shard_n;
        effective.hot = resumed.hot;
        effective.cpu_max_gflop = resumed.cpu_max_gflop;
        effective.suite_path = x.run.suite_path;
    }
    if ((rc = ppb_suite_load(effective.suite_path, &x.suite, err)))
        goto end;
    if (opt->resume_run && strcmp(x.suite.hash, x.run.suite_hash) != 0) {
        rc = ppb_fail(err, PPB_EINPUT,
                      "%s changed since run %lld was started (hash %s, was %s): start a new run",
                      x.suite.path, (long long)x.run.id, x.suite.hash, x.run.suite_hash);
        goto end;
    }
    int target_from_suite = !opt->resume_run && !target;
    if (target_from_suite)
        target = x.suite.target;
    char stored[sizeof x.run.args];
    if ((rc = prepare_cases(&x, impl, filter, shard_k, shard_n, err)) ||
        (rc = load_target(&x, target, target_from_suite, err)) ||
        (!opt->resume_run &&
         (rc = encode_args(&effective, x.have_target ? x.target_ref : "none", stored, sizeof stored, err))))
        goto end;
    sum->planned = x.cases.n;

    ppb_stop_signals signals;
    ppb_stop_signals_catch(&signals, &stop_requested);

    const char *backend = effective.backend ? effective.backend : "auto";
    if (!(todo_flags = calloc((size_t)x.cases.n + 1, 1))) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto restore;
    }
    /* Resume: which cases are stored already (a database error is an error,
     * not "done"). A fresh run has none. */
    int todo = 0;
    for (int i = 0; i < x.cases.n; i++) {
        int has = x.run.id ? ppb_store_has_result(x.store, x.run.id, x.cases.items[i].key) : 0;
        if (has < 0) {
            rc = ppb_fail(err, PPB_EIO, "database error while looking up '%s'",
                          x.cases.items[i].key);
            goto restore;
        }
        todo_flags[i] = !has;
        todo += !has;
    }
    sum->already_done = x.cases.n - todo;
    store_opening opening;
    if (!x.store)
        store_open_start(&opening, opt->db_path);
    if (n_devices == 0) {
        ppb_session_init(&x.session, x.have_target ? &x.target : NULL);
        /* The CUDA backend makes its inputs on the device: the first shapes' reference
         * rows are made while its driver starts (a quarter of a second) */
        if (strcmp(backend, "cuda") == 0)
            start_ahead(&x, todo_flags);
        double t0 = ppb_monotonic_ms();
        rc = ppb_session_open_backend(&x.session, backend, effective.device_index, effective.cpu_max_gflop,
                                      opt->log, err);
        x.open_ms = ppb_monotonic_ms() - t0;
    }
    if (!x.store) {
        ppb_err store_err;
        int src = store_open_finish(&opening, &x.store, &store_err);
        if (src) /* the user's file, before whatever the device said */
            rc = ppb_fail(err, src, "%s", store_err.msg);
    }
    if (rc || (n_devices == 0 && (rc = device_known(&x, x.session.ops, &x.session.device, sum, err))))
        goto restore;
    if (n_devices == 0) {
        say_all_refused(&x, todo_flags);
        rc = run_in_process(&x, todo_flags, err);
    } else {
        pool_device_ctx pc = {.pool = {.x = &x, .backend = backend}, .sum = sum,
                              .devices = devices, .n_devices = n_devices};
        ppb_pool_callbacks cb = {&pc, pool_worker_open, pool_worker_case, pool_worker_close,
                                 pool_on_device, pool_on_result};
        ppb_pool_options po = {n_devices, devices, effective.case_timeout_s};
        if (!(rc = progress_start(&pc.pool.prog, &x.cases, todo_flags, err)))
            rc = ppb_pool_run(&po, x.cases.items, todo_flags, x.cases.n, &cb, &stop_requested, err);
        ppb_eta_free(&pc.pool.prog.eta);
    }
    if (effective.progress == PPB_PROGRESS_TERMINAL)
        fputc('\n', stderr);
    if (x.run.id) {
        /* After a failed database write (locked past the busy timeout, disk
         * full, read-only) each environment entry would fail again, a locked
         * one only after another busy timeout: skip them, only mark the run. */
        if (rc != PPB_EIO)
            ppb_session_store_environment(&x.session, x.store, x.run.id, "after.");
        sum->interrupted = stop_requested != 0;
        ppb_err ferr;
        const char *status = rc ? "failed" : sum->interrupted ? "interrupted" : "complete";
        int frc = ppb_store_finish_run(x.store, x.run.id, status, &ferr);
        if (!frc)
            frc = ppb_store_add_run_wall(
                x.store, x.run.id, &(ppb_run_wall){ppb_monotonic_ms() - wall_start, x.open_ms, x.store_ms}, &ferr);
        if (frc && !rc)
            rc = ppb_fail(err, frc, "%s", ferr.msg);
    }
restore:
    ppb_stop_signals_restore(&signals);
end:
    ppb_ahead_stop(x.ahead); /* when the device did not open */
    free(todo_flags);
    shape_inputs_free(&x.inputs);
    ppb_session_close(&x.session);
    /* What the caller reads of the run, it reads through this connection and this suite. */
    if (!rc && (sum->suite = malloc(sizeof *sum->suite)) != NULL) {
        sum->store = x.store;
        *sum->suite = x.suite;
        x.store = NULL;
        memset(&x.suite, 0, sizeof x.suite);
    } else if (!rc) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    if (x.store)
        ppb_store_close(x.store);
    ppb_case_list_free(&x.cases);
    ppb_suite_free(&x.suite);
    return rc;
}

void ppb_run_summary_close(ppb_run_summary *sum)
{
    ppb_store_close(sum->store);
    ppb_suite_free(sum->suite);
    free(sum->suite);
    sum->store = NULL;
    sum->suite = NULL;
}
