#include "session.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hash.h"
#include "provenance.h"
#include "reference.h"
#include "reference_cache.h"

void ppb_session_init(ppb_session *s, const ppb_target *target)
{
    memset(s, 0, sizeof *s);
    s->target = target;
    ppb_reference_cache_dir(s->reference_cache, sizeof s->reference_cache);
}

int ppb_session_open(ppb_session *s, const char *want, int device_index,
                     const ppb_target *target, double cpu_max_gflop, FILE *log, ppb_err *err)
{
    ppb_session_init(s, target);
    return ppb_session_open_backend(s, want, device_index, cpu_max_gflop, log, err);
}

int ppb_session_open_backend(ppb_session *s, const char *want, int device_index, double cpu_max_gflop, FILE *log,
                             ppb_err *err)
{
    ppb_backend_options bo = {device_index, s->target, cpu_max_gflop};
    int rc = PPB_OK;
    if (strcmp(want, "cpu") != 0 && strcmp(want, "cuda") != 0 && strcmp(want, "auto") != 0)
        return ppb_fail(err, PPB_EINPUT, "--backend %s: expected auto, cpu or cuda", want);
#ifdef PPB_HAVE_CUDA
    if (strcmp(want, "cpu") != 0) {
        ppb_err cuda_err = {{0}};
        if (ppb_backend_cuda.open(&s->backend, &bo, &cuda_err) == PPB_OK) {
            s->ops = &ppb_backend_cuda;
            goto opened;
        }
        if (strcmp(want, "cuda") == 0)
            return ppb_fail(err, PPB_EFAIL, "CUDA backend: %s", cuda_err.msg);
        if (log)
            fprintf(log, "ppbench: no usable GPU (%s): using the CPU backend; timings are CPU "
                         "timings\n", cuda_err.msg);
    }
#else
    if (strcmp(want, "cuda") == 0)
        return ppb_fail(err, PPB_EINPUT,
                        "--backend cuda: this ppbench was built without CUDA (PPB_CUDA=OFF or no "
                        "toolkit)");
    if (strcmp(want, "auto") == 0 && log)
        fprintf(log, "ppbench: built without CUDA: using the CPU backend; timings are CPU "
                     "timings\n");
#endif
    s->ops = &ppb_backend_cpu;
    rc = ppb_backend_cpu.open(&s->backend, &bo, err);
    if (rc)
        return rc;
#ifdef PPB_HAVE_CUDA
opened:
#endif
    s->ops->device_info(s->backend, &s->device);
    return PPB_OK;
}

void ppb_session_close(ppb_session *s)
{
    if (s->backend)
        s->ops->close(s->backend);
    s->backend = NULL;
    free(s->check_out);
    s->check_out = NULL;
    s->check_out_elems = 0;
}

/* The session's output copy, at least elems long; NULL when out of memory. */
static uint16_t *check_output(ppb_session *s, size_t elems)
{
    if (elems > s->check_out_elems) {
        free(s->check_out);
        s->check_out = malloc(elems * sizeof *s->check_out);
        s->check_out_elems = s->check_out ? elems : 0;
    }
    return s->check_out;
}

uint64_t ppb_case_input_seed(uint64_t suite_seed, const char *key)
{
    return suite_seed ^ ppb_fnv1a64_str(key);
}

uint64_t ppb_case_seed(uint64_t suite_seed, const ppb_case *c)
{
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(c, shape, sizeof shape);
    return ppb_case_input_seed(suite_seed, shape);
}

uint64_t ppb_case_seed_per_config(uint64_t suite_seed, const ppb_case *c)
{
    ppb_case inputs = *c;
    inputs.config.impl = PPB_IMPL_BUILTIN;
    ppb_case_make_key(&inputs);
    return ppb_case_input_seed(suite_seed, inputs.key);
}

static long long physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    long long mem = pages > 0 && page > 0 ? (long long)pages * page : 0;
    struct rlimit rl; /* ulimit -v: what this process may map, if less */
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (mem <= 0 || (long long)rl.rlim_cur < mem))
        mem = (long long)rl.rlim_cur;
    return mem;
}

static void set_status(ppb_result *r, int status, const char *reason)
{
    r->status = status;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

/* The session's target judges the case (from the compiled kernel's resources
 * when known) and the result keeps the judgement: 1 when it can run it (or
 * there is no target), else 0 with res REFUSED and the arithmetic as the
 * reason. */
static int judge_on_target(const ppb_session *s, const ppb_case *c, const ppb_resources *measured,
                           ppb_result *res)
{
    if (!s->target)
        return 1;
    const ppb_feasibility *f = &res->feasibility;
    ppb_target_judge(c, s->target, measured, &res->feasibility);
    if (f->feasible)
        return 1;
    snprintf(res->reason, sizeof res->reason, "infeasible on %s: %s%s%s", s->target->name, f->reason,
             f->flips[0] ? "; " : "", f->flips);
    res->status = PPB_STATUS_REFUSED;
    return 0;
}

void ppb_session_judge(const ppb_session *s, const ppb_case *c, ppb_result *res)
{
    if (s->target && !res->feasibility.judged)
        ppb_target_judge(c, s->target, &res->resources, &res->feasibility);
}

/* The rows' sample is seeded apart from the inputs. */
static uint64_t rows_seed(uint64_t input_seed) { return input_seed ^ 0x9e3779b97f4a7c15ull; }

static void count(int *counter, int n) { __atomic_add_fetch(counter, n, __ATOMIC_RELAXED); }

static int read_cached_rows(ppb_session *s, const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed,
                            ppb_reference_rows *ref)
{
    ppb_reference_rows_free(ref);
    int hit = ppb_reference_rows_load(w, cs, rows_seed(seed), s->reference_cache, ref);
    count(&s->reference_hits, hit);
    return hit;
}

void ppb_inputs_ahead_free(ppb_inputs_ahead *a)
{
    if (a->shape_key[0]) {
        ppb_reference_rows_free(&a->rows);
        ppb_workload_free(&a->w);
    }
    memset(a, 0, sizeof *a);
}

int ppb_session_inputs_ahead(ppb_session *s, const ppb_case *c, uint64_t seed, const ppb_check_settings *cs,
                             ppb_inputs_ahead *out)
{
    memset(out, 0, sizeof *out);
    double need = (double)ppb_workload_host_bytes(c), have = (double)physical_memory();
    if (have > 0 && need > 0.25 * have)
        return 0;
    ppb_err err = {{0}};
    ppb_workload *w = &out->w;
    if (ppb_workload_create(w, c, seed, 0, &err) != PPB_OK)
        return 0;
    int ok = 1, hit = 0;
    if (!read_cached_rows(s, w, cs, seed, &out->rows)) {
        ok = ppb_reference_fill_inputs(w, cs, rows_seed(seed), &err) == PPB_OK &&
             ppb_reference_rows_get(w, cs, rows_seed(seed), s->reference_cache, NULL, &out->rows, &hit, &err) ==
                 PPB_OK;
        ppb_workload_free_tensors(w); /* the device makes its own */
        if (ok)
            count(&s->reference_ahead, 1);
    }
    if (!ok) {
        ppb_reference_rows_free(&out->rows);
        ppb_workload_free(w);
        return 0;
    }
    out->rows.w = NULL; /* the workload moves when it is taken over */
    out->seed = seed;
    ppb_case_shape_key(c, out->shape_key, sizeof out->shape_key);
    return 1;
}

/* Take over `ahead` when it holds c's shape on these inputs: 1, with w and ref set. */
static int take_ahead(ppb_inputs_ahead *ahead, const ppb_case *c, uint64_t seed, ppb_reference_rows *ref,
                      ppb_workload *w)
{
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(c, shape, sizeof shape);
    if (!ahead || !ref || !ahead->shape_key[0] || ahead->seed != seed || strcmp(ahead->shape_key, shape) != 0)
        return 0;
    *w = ahead->w;
    w->c = c;
    ppb_reference_rows_free(ref);
    *ref = ahead->rows;
    ref->w = w;
    memset(ahead, 0, sizeof *ahead);
    return 1;
}

/* The host-memory rule: inputs (and the reference's copy of them) live on the
 * host too. Judged from the arithmetic first: even the lengths and block table
 * the backend's refusal is asked with can take gigabytes and seconds for the
 * largest shapes. 1 with res set (SKIPPED, or REFUSED on the target) when the
 * case stops here. */
static int host_memory_stops(ppb_session *s, const ppb_case *c, ppb_result *res)
{
    double need = (double)ppb_workload_host_bytes(c), have = (double)physical_memory();
    if (!(have > 0 && need > 0.5 * have))
        return 0;
    /* A case the target cannot run is refused whatever this host has: that
     * is the verdict's fact (REJECT), a small host's is not (skipped). */
    if (!judge_on_target(s, c, NULL, res))
        return 1;
    snprintf(res->reason, sizeof res->reason, "needs %.1f GB of host memory for inputs, more than half of the %.1f GB here",
             need / 1e9, have / 1e9);
    res->status = PPB_STATUS_SKIPPED;
    return 1;
}

static void set_not_run(ppb_result *res, int rc, const char *why)
{
    set_status(res, rc == PPB_EREFUSED ? PPB_STATUS_REFUSED : rc == PPB_ENOMEM ? PPB_STATUS_SKIPPED : PPB_STATUS_ERROR,
               why);
}

int ppb_session_refuses(ppb_session *s, const ppb_case *c, uint64_t seed, ppb_result *res)
{
    if (host_memory_stops(s, c, res))
        return 1;
    if (!s->ops->refuse)
        return 0;
    ppb_err err = {{0}};
    ppb_workload w;
    memset(&w, 0, sizeof w);
    int rc = ppb_workload_create(&w, c, seed, 0, &err);
    if (!rc)
        rc = s->ops->refuse(s->backend, c, &w, &err);
    ppb_workload_free(&w);
    if (rc)
        set_not_run(res, rc, err.msg);
    return rc != PPB_OK;
}

int ppb_session_workload(ppb_session *s, const ppb_case *c, uint64_t seed, const ppb_check_settings *cs,
                         ppb_inputs_ahead *ahead, ppb_reference_rows *ref, ppb_workload *w, ppb_result *res)
{
    memset(w, 0, sizeof *w);
    ppb_err err = {{0}};
    if (host_memory_stops(s, c, res))
        return PPB_OK;
    int taken = s->ops->makes_inputs && take_ahead(ahead, c, seed, ref, w);
    int rc = taken ? PPB_OK : ppb_workload_create(w, c, seed, 0, &err);
    if (!rc && s->ops->refuse)
        rc = s->ops->refuse(s->backend, c, w, &err);
    /* Host tensors only where something reads them: a backend that does not make
     * its own inputs, the caller (no check settings: it reads them whole), or the
     * reference, when its rows are not in hand or cached. */
    if (!rc && !taken) {
        if (!s->ops->makes_inputs || !cs)
            rc = ppb_workload_fill(w, &err);
        else if (!(ref && read_cached_rows(s, w, cs, seed, ref)))
            rc = ppb_reference_fill_inputs(w, cs, rows_seed(seed), &err);
    }
    if (rc) {
        set_not_run(res, rc, err.msg);
        if (taken)
            ppb_reference_rows_free(ref);
        ppb_workload_free(w);
    }
    return PPB_OK;
}

/* ---- refusals summed up ----------------------------------------------------- */

void ppb_refusals_add(ppb_refusals *t, const char *reason)
{
    /* A reason's kind is its text before the first ':' (the numbers after it
     * differ from case to case): "too large for the CPU backend: 137 GFLOP > ...". */
    size_t head = strcspn(reason, ":");
    t->n++;
    for (int i = 0; i < t->n_kinds; i++)
        if (strlen(t->kinds[i].head) == head && strncmp(t->kinds[i].head, reason, head) == 0) {
            t->kinds[i].count++;
            return;
        }
    if (t->n_kinds == PPB_REFUSAL_KINDS) {
        t->other++;
        return;
    }
    struct ppb_refusal_kind *k = &t->kinds[t->n_kinds++];
    snprintf(k->head, sizeof k->head, "%.*s", (int)(head < sizeof k->head ? head : sizeof k->head - 1), reason);
    snprintf(k->example, sizeof k->example, "%s", reason[head] ? reason + head + 1 + (reason[head + 1] == ' ') : "");
    k->count = 1;
}

void ppb_refusals_text(const ppb_refusals *t, const char *what, const ppb_session *s, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "all %d %s %s refused on the %s backend: ", t->n, what,
                                t->n == 1 ? "is" : "are", s->ops ? s->ops->name : "?");
    for (int i = 0; i < t->n_kinds && n < len; i++) {
        const struct ppb_refusal_kind *k = &t->kinds[i];
        n += (size_t)snprintf(buf + n, len - n, "%s%d %s", i ? "; " : "", k->count, k->head);
        if (k->example[0] && n < len)
            n += (size_t)snprintf(buf + n, len - n, " (%s%s)", k->count > 1 ? "e.g. " : "", k->example);
    }
    if (t->other && n < len)
        n += (size_t)snprintf(buf + n, len - n, "; %d for other reasons", t->other);
    /* The newcomer without a GPU, whose suite is too large for this backend: the suites sized for it. */
    int too_large = 0;
    for (int i = 0; i < t->n_kinds; i++)
        too_large |= strcmp(t->kinds[i].head, PPB_CPU_TOO_LARGE) == 0;
    if (too_large && n < len)
        snprintf(buf + n, len - n, "; the suites cpu-nightly and cpu-nightly-decode are sized for the CPU "
                                   "(README \"No GPU?\")");
}

/* Append to the reason, keeping what the backend said (e.g. the mismatch report) in front. */
static void append_reason(ppb_result *res, const char *text)
{
    size_t n = strlen(res->reason);
    snprintf(res->reason + n, sizeof res->reason - n, "%s%s", n ? "; " : "", text);
}

int ppb_session_check(ppb_session *s, const ppb_case *c, const ppb_workload *w,
                      const ppb_check_settings *cs, uint64_t seed, ppb_reference_rows *ref,
                      ppb_result *res, int *prepared)
{
    ppb_err err = {{0}};
    *prepared = 0;
    res->timing_is_cpu = !s->device.is_gpu;
    int rc = s->ops->prepare(s->backend, c, w, res, &err);
    if (rc) {
        set_status(res, rc == PPB_EREFUSED || rc == PPB_ENOMEM ? PPB_STATUS_REFUSED
                                                               : PPB_STATUS_ERROR,
                   err.msg);
        return PPB_OK;
    }
    *prepared = 1;
    if (!judge_on_target(s, c, &res->resources, res))
        return PPB_OK;
    uint16_t *out = check_output(s, w->out_elems);
    if (!out) {
        set_status(res, PPB_STATUS_SKIPPED, "out of host memory for the output copy");
        return PPB_OK;
    }
    rc = s->ops->run_checked(s->backend, out, res, &err);
    ppb_reference_rows own = {0};
    ppb_reference_rows *rows = ref ? ref : &own;
    if (rc == PPB_OK && rows->w != w) {
        ppb_reference_rows_free(rows);
        int hit = 0;
        rc = ppb_reference_rows_get(w, cs, rows_seed(seed), s->reference_cache, stderr, rows, &hit, &err);
        count(hit ? &s->reference_hits : &s->reference_misses, 1);
    }
    if (rc == PPB_OK)
        rc = ppb_reference_compare(rows, out, cs, &res->check, &err);
    ppb_reference_rows_free(&own);
    if (rc == PPB_EINTR)
        return rc;
    if (rc) {
        set_status(res, PPB_STATUS_ERROR, err.msg);
        return PPB_OK;
    }
    char why[400];
    /* A kernel that writes past its buffers is wrong even when its output
     * happens to be right (the PARTITION_SIZE mismatch, KERNELS.md). */
    if (res->overrun.detected && res->check.pass) {
        snprintf(why, sizeof why, "the output was still within tolerance (max abs err %.3g)",
                 res->check.max_abs_err);
        append_reason(res, why);
        res->status = PPB_STATUS_WRONG;
    } else if (!res->check.pass) {
        snprintf(why, sizeof why,
                 "output wrong: max abs err %.3g, rel L2 %.3g (atol %.3g, rtol %.3g), %ld "
                 "non-finite, %ld unwritten, %ld of %ld rows checked",
                 res->check.max_abs_err, res->check.rel_l2_err, res->check.atol, res->check.rtol,
                 res->check.nonfinite, res->check.unwritten, res->check.rows_checked,
                 res->check.rows_total);
        append_reason(res, why);
        res->status = PPB_STATUS_WRONG;
    }
    return PPB_OK;
}

void ppb_session_prefetch(ppb_session *s, const ppb_case *cases, const char *todo, int n)
{
    if (!s->backend || !s->ops->prefetch)
        return;
    for (int i = 0; i < n; i++)
        if (todo[i])
            s->ops->prefetch(s->backend, &cases[i]);
}

void ppb_session_release(ppb_session *s, int prepared, int keep_inputs)
{
    if (!s->backend)
        return;
    if (prepared)
        s->ops->release(s->backend);
    if (!keep_inputs && s->ops->release_inputs)
        s->ops->release_inputs(s->backend);
}

static void put_env(ppb_store *store, int64_t run, const char *key, const char *value)
{
    ppb_err ignored; /* environment facts are best effort: a run is worth more */
    ppb_store_put_env(store, run, key, value, &ignored);
}

typedef struct env_ctx {
    ppb_store *store;
    int64_t run;
    const char *prefix;
    int failed; /* one entry failed to store: skip the rest */
} env_ctx;

/* Once one entry fails (database locked past the busy timeout, disk full,
 * read-only), the rest would too, a locked database only after another busy
 * timeout each: stop writing. */
static void env_sink(void *ctx, const char *key, const char *value)
{
    env_ctx *e = ctx;
    if (e->failed)
        return;
    char k[256];
    ppb_err ignored; /* environment facts are best effort: a run is worth more */
    snprintf(k, sizeof k, "%s%s", e->prefix, key);
    e->failed = ppb_store_put_env(e->store, e->run, k, value, &ignored) != PPB_OK;
}

void ppb_session_store_environment(ppb_session *s, ppb_store *store, int64_t run_id,
                                   const char *prefix)
{
    if (!s->backend) /* the parent of worker processes holds no backend */
        return;
    env_ctx e = {store, run_id, prefix, 0};
    s->ops->environment(s->backend, env_sink, &e);
    int hits = __atomic_load_n(&s->reference_hits, __ATOMIC_RELAXED),
        misses = __atomic_load_n(&s->reference_misses, __ATOMIC_RELAXED),
        ahead = __atomic_load_n(&s->reference_ahead, __ATOMIC_RELAXED);
    if (hits + misses + ahead > 0) { /* why a check took milliseconds, or seconds */
        char v[64];
        int n = snprintf(v, sizeof v, "%d read, %d computed", hits, misses);
        if (ahead > 0) /* computed by the run itself, beside the timing of the shape before */
            snprintf(v + n, sizeof v - (size_t)n, "; %d computed ahead", ahead);
        env_sink(&e, "reference.rows", v);
    }
}

int ppb_session_begin_run(ppb_session *s, ppb_store *store, const ppb_suite *suite, const ppb_run_shard *shard,
                          const char *label, const char *args, int n_cases, ppb_run_info *r,
                          ppb_err *err)
{
    memset(r, 0, sizeof *r);
    /* Absolute, so `run --resume` finds the suite from any folder. */
    char absolute[PATH_MAX];
    snprintf(r->suite_path, sizeof r->suite_path, "%s", realpath(suite->path, absolute) ? absolute : suite->path);
    snprintf(r->suite_name, sizeof r->suite_name, "%s", suite->name);
    snprintf(r->suite_hash, sizeof r->suite_hash, "%s", suite->hash);
    ppb_git_commit(r->git_commit, sizeof r->git_commit);
    ppb_hostname(r->host, sizeof r->host);
    snprintf(r->backend, sizeof r->backend, "%s", s->ops->name);
    snprintf(r->device, sizeof r->device, "%s", s->device.name);
    snprintf(r->target, sizeof r->target, "%s", s->target ? s->target->name : "");
    snprintf(r->label, sizeof r->label, "%s", label ? label : "");
    snprintf(r->kind, sizeof r->kind, "%s", s->run_kind ? s->run_kind : "run");
    ppb_utc_now(r->started_at, sizeof r->started_at);
    snprintf(r->status, sizeof r->status, "running");
    snprintf(r->args, sizeof r->args, "%s", args ? args : "");
    r->n_cases = n_cases;
    if (shard && shard->count > 0) {
        r->shard_index = shard->index;
        r->shard_count = shard->count;
        /* The shards of one night, run on several hosts at about the same time,
         * share the commit and the UTC date; --group names the night exactly. */
        if (shard->group && shard->group[0])
            snprintf(r->run_group, sizeof r->run_group, "%s", shard->group);
        else
            snprintf(r->run_group, sizeof r->run_group, "%.12s@%.10s", r->git_commit, r->started_at);
    }
    int rc = ppb_store_begin_run(store, r, err);
    if (rc)
        return rc;
    const ppb_device_info *d = &s->device;
    char v[128];
    put_env(store, r->id, "device.backend", d->backend);
    put_env(store, r->id, "device.name", d->name);
    put_env(store, r->id, "device.uuid", d->uuid);
    put_env(store, r->id, "device.driver", d->driver);
    put_env(store, r->id, "device.runtime", d->runtime);
    snprintf(v, sizeof v, "%d.%d", d->cc_major, d->cc_minor);
    put_env(store, r->id, "device.compute_capability", v);
    snprintf(v, sizeof v, "%d", d->sm_count);
    put_env(store, r->id, "device.sm_count", v);
    snprintf(v, sizeof v, "%lld", d->mem_total);
    put_env(store, r->id, "device.mem_total", v);
    put_env(store, r->id, "timings", d->is_gpu ? "gpu" : "cpu");
    snprintf(v, sizeof v, "%llu", (unsigned long long)suite->measure.seed);
    put_env(store, r->id, "suite.seed", v); /* dump regenerates a case's inputs from it */
    put_env(store, r->id, PPB_ENV_INPUTS_SEEDED_BY, "shape");
    put_env(store, r->id, "reference.cache", s->reference_cache[0] ? s->reference_cache : "off");
    if (s->target) { /* what the stored judgements were judged against */
        char profile[PATH_MAX];
        put_env(store, r->id, "target.profile", realpath(s->target->path, profile) ? profile : s->target->path);
        put_env(store, r->id, "target.description", s->target->description);
    }
    ppb_session_store_environment(s, store, r->id, "before.");
    return PPB_OK;
}
