#include "runner.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "hash.h"
#include "matrix.h"
#include "measure.h"
#include "provenance.h"
#include "reference.h"
#include "store.h"
#include "suite.h"
#include "target.h"
#include "workload.h"

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
    const ppb_backend_ops *ops;
    ppb_backend *backend;
    ppb_device_info device;
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

/* ---- backend choice: never silent ----------------------------------------- */

uint64_t ppb_case_input_seed(uint64_t suite_seed, const char *case_key)
{
    return suite_seed ^ ppb_fnv1a64_str(case_key);
}

int ppb_open_backend(const char *want, const ppb_backend_options *bo, FILE *log,
                     const ppb_backend_ops **ops, ppb_backend **b, ppb_err *err)
{
    if (strcmp(want, "cpu") != 0 && strcmp(want, "cuda") != 0 && strcmp(want, "auto") != 0)
        return ppb_fail(err, PPB_EINPUT, "--backend %s: expected auto, cpu or cuda", want);
#ifdef PPB_HAVE_CUDA
    if (strcmp(want, "cpu") != 0) {
        ppb_err cuda_err = {{0}};
        if (ppb_backend_cuda.open(b, bo, &cuda_err) == PPB_OK) {
            *ops = &ppb_backend_cuda;
            return PPB_OK;
        }
        if (strcmp(want, "cuda") == 0)
            return ppb_fail(err, PPB_EFAIL, "CUDA backend: %s", cuda_err.msg);
        fprintf(log, "ppbench: no usable GPU (%s): using the CPU backend; timings are CPU "
                     "timings\n", cuda_err.msg);
    }
#else
    if (strcmp(want, "cuda") == 0)
        return ppb_fail(err, PPB_EINPUT,
                        "--backend cuda: this ppbench was built without CUDA (PPB_CUDA=OFF or no "
                        "toolkit)");
    if (strcmp(want, "auto") == 0)
        fprintf(log, "ppbench: built without CUDA: using the CPU backend; timings are CPU "
                     "timings\n");
#endif
    *ops = &ppb_backend_cpu;
    return ppb_backend_cpu.open(b, bo, err);
}

static int open_backend(run_ctx *x, ppb_err *err)
{
    const ppb_run_options *o = x->opt;
    ppb_backend_options bo = {o->device_index, x->have_target ? &x->target : NULL,
                              o->cpu_max_gflop};
    return ppb_open_backend(o->backend ? o->backend : "auto", &bo, o->log, &x->ops, &x->backend,
                            err);
}

static void env_to_store(void *ctx, const char *key, const char *value)
{
    run_ctx *x = ctx;
    ppb_err ignored;
    ppb_store_put_env(x->store, x->run.id, key, value, &ignored);
}

/* Environment facts prefixed "before." / "after." so drift across a run shows. */
typedef struct prefixed_sink {
    run_ctx *x;
    const char *prefix;
} prefixed_sink;

static void env_prefixed(void *ctx, const char *key, const char *value)
{
    prefixed_sink *p = ctx;
    char k[256];
    snprintf(k, sizeof k, "%s%s", p->prefix, key);
    env_to_store(p->x, k, value);
}

static void store_device_env(run_ctx *x)
{
    const ppb_device_info *d = &x->device;
    char v[128];
    env_to_store(x, "device.backend", d->backend);
    env_to_store(x, "device.name", d->name);
    env_to_store(x, "device.uuid", d->uuid);
    env_to_store(x, "device.driver", d->driver);
    env_to_store(x, "device.runtime", d->runtime);
    snprintf(v, sizeof v, "%d.%d", d->cc_major, d->cc_minor);
    env_to_store(x, "device.compute_capability", v);
    snprintf(v, sizeof v, "%d", d->sm_count);
    env_to_store(x, "device.sm_count", v);
    snprintf(v, sizeof v, "%lld", d->mem_total);
    env_to_store(x, "device.mem_total", v);
    env_to_store(x, "timings", d->is_gpu ? "gpu" : "cpu");
}

/* ---- one case ------------------------------------------------------------- */

static long long physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (long long)pages * page : 0;
}

static void set_status(ppb_result *r, int status, const char *reason)
{
    r->status = status;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

static int run_case(run_ctx *x, const ppb_case *c, ppb_result *res)
{
    ppb_err err = {{0}};
    ppb_workload w;
    memset(&w, 0, sizeof w);
    uint16_t *out = NULL;
    int prepared = 0, rc = PPB_OK;
    const ppb_suite *s = &x->suite;
    uint64_t seed = ppb_case_input_seed(s->measure.seed, c->key);

    ppb_result_init(res);
    res->timing_is_cpu = !x->device.is_gpu;

    /* Inputs (and the reference's copy of them) live on the host too. */
    double need = (double)ppb_workload_host_bytes(c), have = (double)physical_memory();
    if (have > 0 && need > 0.5 * have) {
        snprintf(res->reason, sizeof res->reason,
                 "needs %.1f GB of host memory for inputs, more than half of the %.1f GB here",
                 need / 1e9, have / 1e9);
        res->status = PPB_STATUS_SKIPPED;
        goto end;
    }
    rc = ppb_workload_create(&w, c, seed, 1, &err);
    if (rc) {
        set_status(res, rc == PPB_ENOMEM ? PPB_STATUS_SKIPPED : PPB_STATUS_ERROR, err.msg);
        rc = PPB_OK;
        goto end;
    }
    rc = x->ops->prepare(x->backend, c, &w, res, &err);
    if (rc) {
        set_status(res, rc == PPB_EREFUSED || rc == PPB_ENOMEM ? PPB_STATUS_REFUSED : PPB_STATUS_ERROR,
                   err.msg);
        rc = PPB_OK;
        goto end;
    }
    prepared = 1;
    /* Feasibility on the target, from the compiled kernel's resources when the
     * backend knows them, else from the formula. */
    if (x->have_target) {
        ppb_feasibility f;
        ppb_target_judge(c, &x->target, &res->resources, &f);
        if (!f.feasible) {
            snprintf(res->reason, sizeof res->reason, "infeasible on %s: %s%s%s", x->target.name,
                     f.reason, f.flips[0] ? "; " : "", f.flips);
            res->status = PPB_STATUS_REFUSED;
            goto end;
        }
    }
    out = malloc(w.out_elems * sizeof *out);
    if (!out) {
        set_status(res, PPB_STATUS_SKIPPED, "out of host memory for the output copy");
        goto end;
    }
    rc = x->ops->run_checked(x->backend, out, res, &err);
    if (rc == PPB_EINTR)
        goto end;
    if (rc) {
        set_status(res, PPB_STATUS_ERROR, err.msg);
        rc = PPB_OK;
        goto end;
    }
    rc = ppb_reference_check(&w, out, &s->check, seed ^ 0x9e3779b97f4a7c15ull, &res->check, &err);
    if (rc) {
        set_status(res, PPB_STATUS_ERROR, err.msg);
        rc = PPB_OK;
        goto end;
    }
    /* A kernel that writes past its buffers is wrong even when its output
     * happens to be right (the PARTITION_SIZE mismatch, KERNELS.md). */
    if (res->overrun.detected && res->check.pass) {
        size_t n = strlen(res->reason);
        snprintf(res->reason + n, sizeof res->reason - n,
                 "%sthe output was still within tolerance (max abs err %.3g)", n ? "; " : "",
                 res->check.max_abs_err);
        res->status = PPB_STATUS_WRONG;
        goto end;
    }
    if (!res->check.pass) {
        char why[400];
        snprintf(why, sizeof why,
                 "output wrong: max abs err %.3g, rel L2 %.3g (atol %.3g, rtol %.3g), %ld "
                 "non-finite, %ld unwritten, %ld of %ld rows checked",
                 res->check.max_abs_err, res->check.rel_l2_err, res->check.atol, res->check.rtol,
                 res->check.nonfinite, res->check.unwritten, res->check.rows_checked,
                 res->check.rows_total);
        /* Keep what the backend said (e.g. the mismatch report) in front. */
        if (res->reason[0]) {
            size_t n = strlen(res->reason);
            snprintf(res->reason + n, sizeof res->reason - n, "; %s", why);
        } else {
            snprintf(res->reason, sizeof res->reason, "%s", why);
        }
        res->status = PPB_STATUS_WRONG;
        goto end;
    }
    ppb_measure_settings m = s->measure;
    if (x->opt->hot)
        m.cold_l2 = 0;
    rc = ppb_measure_case(x->ops, x->backend, &m, &stop_requested, res, &err);
    if (rc == PPB_EINTR)
        goto end;
    if (rc) {
        set_status(res, PPB_STATUS_ERROR, err.msg);
        rc = PPB_OK;
        goto end;
    }
    ppb_result_summarise(res, ppb_case_flops(c), ppb_case_min_bytes(c));
end:
    if (prepared)
        x->ops->release(x->backend);
    free(out);
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
    rc = open_backend(&x, err);
    if (rc)
        goto end;
    x.ops->device_info(x.backend, &x.device);
    snprintf(sum->backend, sizeof sum->backend, "%s", x.ops->name);
    sum->timing_is_cpu = !x.device.is_gpu;
    if (opt->resume_run && strcmp(x.run.backend, x.ops->name) != 0) {
        rc = ppb_fail(err, PPB_EINPUT, "run %lld used the %s backend; this one is %s",
                      (long long)x.run.id, x.run.backend, x.ops->name);
        goto end;
    }
    fprintf(opt->log, "ppbench: %s backend on %s%s; %d cases%s%s\n", x.ops->name, x.device.name,
            x.device.is_gpu ? "" : " (CPU timings)", x.cases.n,
            x.have_target ? ", target " : "", x.have_target ? x.target.name : "");

    if (!opt->resume_run) {
        rc = ppb_store_open(&x.store, opt->db_path, err);
        if (rc)
            goto end;
        ppb_run_info *r = &x.run;
        snprintf(r->suite_path, sizeof r->suite_path, "%s", x.suite.path);
        snprintf(r->suite_name, sizeof r->suite_name, "%s", x.suite.name);
        snprintf(r->suite_hash, sizeof r->suite_hash, "%s", x.suite.hash);
        ppb_git_commit(r->git_commit, sizeof r->git_commit);
        ppb_hostname(r->host, sizeof r->host);
        snprintf(r->backend, sizeof r->backend, "%s", x.ops->name);
        snprintf(r->device, sizeof r->device, "%s", x.device.name);
        snprintf(r->target, sizeof r->target, "%s", x.have_target ? x.target.name : "");
        snprintf(r->label, sizeof r->label, "%s", opt->label ? opt->label : "");
        ppb_utc_now(r->started_at, sizeof r->started_at);
        snprintf(r->status, sizeof r->status, "running");
        encode_args(&effective, x.have_target ? x.target.name : "none", r->args, sizeof r->args);
        r->n_cases = x.cases.n;
        rc = ppb_store_begin_run(x.store, r, err);
        if (rc)
            goto end;
        store_device_env(&x);
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)x.suite.measure.seed);
        env_to_store(&x, "suite.seed", seed); /* dump regenerates a case's inputs from it */
    }
    sum->run_id = x.run.id;
    sum->planned = x.cases.n;
    prefixed_sink before = {&x, "before."}, after = {&x, "after."};
    x.ops->environment(x.backend, env_prefixed, opt->resume_run ? (void *)&after : (void *)&before);

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

    x.ops->environment(x.backend, env_prefixed, &after);
    sum->interrupted = stop_requested != 0;
    if (rc == PPB_OK) {
        ppb_err ferr;
        int frc = ppb_store_finish_run(x.store, x.run.id,
                                       sum->interrupted ? "interrupted" : "complete", &ferr);
        if (frc)
            rc = ppb_fail(err, frc, "%s", ferr.msg);
    }
end:
    if (x.backend)
        x.ops->close(x.backend);
    if (x.store)
        ppb_store_close(x.store);
    ppb_case_list_free(&x.cases);
    ppb_suite_free(&x.suite);
    return rc;
}
