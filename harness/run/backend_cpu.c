/* The CPU backend: runs the kernels' tiled algorithms (cpu_attention.c) so the
 * whole pipeline (suites, checking, measuring, storing, verdicts) works and is
 * tested on a machine without a GPU. Its timings are CPU timings and are marked
 * so (res->timing_is_cpu); they say nothing about a GPU.
 *
 * A built-in kernel runs on one thread unless PPBENCH_CPU_KERNEL_THREADS says
 * otherwise (a count, or `all`: every thread of PPBENCH_THREADS or the cores).
 * Split over the cores, a launch waits for its slowest thread, and on a machine
 * where anything else runs (a CI runner) one of them shares its core now and
 * then: on this repository's 2-core runner with one busy process beside it a
 * case's samples spread 35-39% (IQR / median) and its medians 8-11% from run to
 * run, against 0.3-0.7% and 0.2-0.7% on one thread (docs/STATISTICS.md "CPU
 * timings on one thread"). The reference check and the inputs still use every
 * core: their speed matters, not their timing. A plugin runs its own code.
 *
 * Environment: PPBENCH_MISMATCH_PACKED=1 puts the v2 scratch buffers back to back
 * without guard zones, so a PARTITION_SIZE mismatch overrun corrupts the
 * neighbouring buffer (as it can on a GPU) instead of landing in a guard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "buffer_guard.h"
#include "cpu_attention.h"
#include "decode_plan.h"
#include "impl.h"
#include "kernel_case.h"
#include "provenance.h"
#include "reference.h"
#include "target.h"
#include "threads.h"

#define DEFAULT_SMEM_PER_BLOCK 49152 /* the 48 KB a block gets without opt-in */
#define DEFAULT_LLC_BYTES (32ll << 20)
#define GUARD_SLACK (64 << 10)

/* A plugin's v2 scratch buffer on the host, followed by a canary-filled guard
 * zone large enough for everything the kernel's partition count can reach. */
typedef struct host_guarded {
    unsigned char *ptr;
    size_t bytes, guard;
} host_guarded;

/* A plugin's copy of one input, between guard zones (buffer_guard.h): a plugin
 * is code ppbench runs, not code it trusts, so it gets copies, and after its
 * checked launch the zones and a comparison with the workload's own tensors
 * say whether it wrote outside its buffers or into its inputs. */
typedef struct host_input {
    const char *name;
    const void *original;       /* the workload's tensor (NULL: the case has none) */
    size_t bytes;
    unsigned char *block;       /* zone, copy, zone */
    void *in_layout;            /* a paged cache in the plugin's layout, when not vLLM's (`original` then) */
} host_input;

enum { N_INPUTS = 10 };

struct ppb_backend {
    ppb_backend_options opt;
    ppb_device_info info;
    int kernel_threads;         /* a built-in launch's threads (0: all), PPBENCH_CPU_KERNEL_THREADS */
    ppb_case c;                 /* the prepared case (copied: stable for cpu_attn) */
    const ppb_workload *w;
    cpu_attn *attn;             /* builtin: the kernels' algorithms */
    int use_plugin;             /* the case's impl is a plugin */
    ppb_impl_call plugin;
    host_guarded scratch[3];    /* plugin v2: tmp_out, exp_sums, max_logits */
    host_input inputs[N_INPUTS]; /* plugin: guarded copies of the workload's tensors */
    unsigned char *out_block;   /* guard zone, the output, guard zone */
    uint16_t *out;              /* the "device" output the runs write (inside out_block) */
    unsigned char *flush;       /* cold-cache buffer, 2 x last-level cache, allocated on first use */
    size_t flush_bytes;
    unsigned flush_round;
};

/* ---- machine facts --------------------------------------------------------------- */

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* Value of the first "key : value" line of /proc/cpuinfo whose key is `key`. */
static int cpuinfo_value(const char *key, char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    size_t klen = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || (line[klen] != ' ' && line[klen] != '\t' && line[klen] != ':'))
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        colon++;
        while (*colon == ' ')
            colon++;
        snprintf(buf, len, "%s", colon);
        trim(buf);
        found = 1;
    }
    fclose(f);
    return found;
}

static void cpu_model(char *buf, size_t len)
{
    if (cpuinfo_value("model name", buf, len) || cpuinfo_value("Model", buf, len) ||
        cpuinfo_value("Hardware", buf, len))
        return;
    struct utsname u;
    snprintf(buf, len, "unknown %s CPU", uname(&u) == 0 ? u.machine : "");
}

/* Average "cpu MHz" over the cores (x86 lists it per core), or -1. */
static double cpu_mhz(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[512];
    double sum = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        double v;
        char *colon = strchr(line, ':');
        if (strncmp(line, "cpu MHz", 7) == 0 && colon && sscanf(colon + 1, "%lf", &v) == 1) {
            sum += v;
            n++;
        }
    }
    fclose(f);
    return n ? sum / n : -1;
}

/* "32768K" / "1M" / "524288" (sysfs cache sizes) -> bytes, or -1. */
static long long parse_size(const char *text)
{
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (end == text || v <= 0)
        return -1;
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    else if (*end == 'G' || *end == 'g')
        v <<= 30;
    return v;
}

static long long last_level_cache_bytes(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (!f)
        return DEFAULT_LLC_BYTES;
    char buf[64] = "";
    long long v = fgets(buf, sizeof buf, f) ? parse_size(buf) : -1;
    fclose(f);
    return v > 0 ? v : DEFAULT_LLC_BYTES;
}

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void compiler_text(char *buf, size_t len)
{
#if defined(__clang__)
    snprintf(buf, len, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(buf, len, "gcc %s", __VERSION__);
#else
    snprintf(buf, len, "unknown C compiler");
#endif
}

/* ---- interface ------------------------------------------------------------------------ */

#define KERNEL_THREADS_ENV "PPBENCH_CPU_KERNEL_THREADS"

/* The built-in kernels' threads from the environment: 1 unless set; `all` is 0. */
static int kernel_threads_from_env(int *threads, ppb_err *err)
{
    const char *env = getenv(KERNEL_THREADS_ENV);
    *threads = 1;
    if (!env || !*env)
        return PPB_OK;
    if (strcmp(env, "all") == 0) {
        *threads = 0;
        return PPB_OK;
    }
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1 || v > PPB_THREADS_MAX)
        return ppb_fail(err, PPB_EINPUT, "%s='%.32s': not a thread count (1 .. %d, or all)", KERNEL_THREADS_ENV, env,
                        PPB_THREADS_MAX);
    *threads = (int)v;
    return PPB_OK;
}

static int cpu_open(ppb_backend **out, const ppb_backend_options *opt, ppb_err *err)
{
    int kernel_threads;
    int rc = kernel_threads_from_env(&kernel_threads, err);
    if (rc)
        return rc;
    ppb_backend *b = calloc(1, sizeof *b);
    if (!b)
        return ppb_fail(err, PPB_ENOMEM, "cpu backend: out of host memory");
    b->kernel_threads = kernel_threads;
    if (opt)
        b->opt = *opt;
    ppb_device_info *d = &b->info;
    snprintf(d->backend, sizeof d->backend, "cpu");
    d->is_gpu = 0;
    cpu_model(d->name, sizeof d->name);
    d->sm_count = online_cores();
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    d->mem_total = pages > 0 && psz > 0 ? (long long)pages * psz : 0;
    d->mem_free = avail > 0 && psz > 0 ? (long long)avail * psz : 0;
    d->l2_bytes = last_level_cache_bytes(); /* the cache a cold sample flushes */
    *out = b;
    return PPB_OK;
}

static void cpu_release(ppb_backend *b)
{
    cpu_attn_destroy(b->attn);
    b->attn = NULL;
    for (int i = 0; i < 3; i++) {
        free(b->scratch[i].ptr);
        memset(&b->scratch[i], 0, sizeof b->scratch[i]);
    }
    for (int k = 0; k < N_INPUTS; k++) {
        free(b->inputs[k].block);
        free(b->inputs[k].in_layout);
    }
    memset(b->inputs, 0, sizeof b->inputs);
    b->use_plugin = 0;
    free(b->out_block);
    b->out_block = NULL;
    b->out = NULL;
    b->w = NULL;
}

static void cpu_close(ppb_backend *b)
{
    if (!b)
        return;
    cpu_release(b);
    free(b->flush);
    free(b);
}

static void cpu_device_info(ppb_backend *b, ppb_device_info *info) { *info = b->info; }

static void cpu_environment(ppb_backend *b, ppb_env_sink sink, void *ctx)
{
    char buf[512];
    sink(ctx, "backend", "cpu");
    sink(ctx, "cpu_model", b->info.name);
    snprintf(buf, sizeof buf, "%d", online_cores());
    sink(ctx, "cpu_cores", buf);
    snprintf(buf, sizeof buf, "%d", ppb_thread_count());
    sink(ctx, "cpu_threads", buf);
    snprintf(buf, sizeof buf, b->kernel_threads > 0 ? "%d" : "all (%d)", cpu_attn_launch_threads(b->kernel_threads));
    sink(ctx, "cpu_kernel_threads", buf);
    double mhz = cpu_mhz();
    if (mhz > 0) {
        snprintf(buf, sizeof buf, "%.0f", mhz);
        sink(ctx, "cpu_mhz", buf);
    }
    snprintf(buf, sizeof buf, "%lld", last_level_cache_bytes());
    sink(ctx, "cpu_llc_bytes", buf);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release, u.machine);
        sink(ctx, "os_kernel", buf);
    }
    compiler_text(buf, sizeof buf);
    sink(ctx, "compiler", buf);
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        double l1, l5, l15;
        if (fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3) {
            snprintf(buf, sizeof buf, "%.2f %.2f %.2f", l1, l5, l15);
            sink(ctx, "loadavg", buf);
        }
        fclose(f);
    }
    const char *packed = getenv("PPBENCH_MISMATCH_PACKED");
    if (packed && strcmp(packed, "1") == 0)
        sink(ctx, "mismatch_packed", "1");
    ppb_impl_environment(sink, ctx);
}

static int packed_requested(void)
{
    const char *v = getenv("PPBENCH_MISMATCH_PACKED");
    return v && strcmp(v, "1") == 0;
}

/* Shared memory the built-in decode kernels need (kernels/decode_plan.c, through
 * ppb_target_kernel_smem: the same figures, warp size and code path `ppbench check`
 * uses): the main kernel's at the heads per block the plan picks (v1 holds the logits
 * of the longest sequence, v2 one partition's), and v2's reduce. Checked against the
 * target's per-block figure, else 48 KB. Knobs the built-in kernels do not have are
 * not sized here (the CPU algorithms still run them). */
static int refuse_decode_smem(const ppb_backend *b, const ppb_case *c, ppb_err *err)
{
    const ppb_config *k = &c->config;
    const ppb_target *t = b->opt.target;
    ppb_kernel_smem ks;
    ppb_target_kernel_smem(c, t, DEFAULT_SMEM_PER_BLOCK, &ks);
    if (!ks.known)
        return PPB_OK;
    char limit_text[160];
    if (t && t->smem_per_block.present)
        snprintf(limit_text, sizeof limit_text, "target %s smem_per_block", t->name);
    else
        snprintf(limit_text, sizeof limit_text, "48 KB default, %s", t ? "target gives none" : "no target given");
    const long long limit = (long long)ks.limit;
    if (ks.main_bytes > limit)
        return ppb_fail(err, PPB_EREFUSED,
                        "paged_attention v%d needs %ld B of shared memory > %lld B per block (%s): %s%s", k->version,
                        ks.main_bytes, limit, limit_text, ks.arithmetic,
                        k->version == 1 ? "; use version 2" : "");
    if (ks.reduce_bytes > limit)
        return ppb_fail(err, PPB_EREFUSED,
                        "paged_attention v2 reduce needs %ld B of shared memory for %ld partitions > %lld B per "
                        "block (%s): %s",
                        ks.reduce_bytes, ks.partitions, limit, limit_text, ks.arithmetic);
    return PPB_OK;
}

/* Refusals need the lengths, not the tensors. */
static int cpu_refuse(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err)
{
    int rc = ppb_case_validate(c, err);
    if (rc)
        return rc;
    if (!w)
        return ppb_fail(err, PPB_EINPUT, "cpu backend: no workload");
    if (c->config.path == PPB_PATH_MMA || c->config.path == PPB_PATH_WGMMA)
        return ppb_fail(err, PPB_EREFUSED, "the CPU backend has no tensor-core path (path=%s)",
                        ppb_path_name(c->config.path));
    double limit = b->opt.cpu_max_gflop > 0 ? b->opt.cpu_max_gflop : PPB_CPU_DEFAULT_MAX_GFLOP;
    double gflop = ppb_case_flops(c) / 1e9;
    if (gflop > limit)
        return ppb_fail(err, PPB_EREFUSED,
                        PPB_CPU_TOO_LARGE ": %.3g GFLOP > %.3g GFLOP limit (--cpu-max-gflop)",
                        gflop, limit);
    if (c->config.impl != PPB_IMPL_BUILTIN) {
        /* The plugin's own refusals; the rules below are the built-in kernels'. */
        ppbk_device dev = {PPBK_BACKEND_CPU, 0, 0, 1, b->info.sm_count, 0};
        return ppb_impl_bind(&b->plugin, c, &dev, NULL, err); /* NULL: no built-in table (cpu_attention) */
    }
    /* The built-in kernels' algorithms have no knob of the other implementations (num_stages). */
    ppb_kernel_view v;
    ppb_kernel_view_of_case(c, &v);
    if (c->kernel == PPB_PREFIX_PREFILL)
        return ppb_builtin_refuse_prefill_params(&v.prefill_cfg, err);
    if ((rc = ppb_builtin_refuse_decode_params(&v.decode_cfg, err)))
        return rc;
    return refuse_decode_smem(b, c, err);
}

/* The workload's tensors a plugin reads, by name, in ppb_tensor_ptrs order. */
static void plugin_inputs(const ppb_workload *w, host_input in[N_INPUTS])
{
    size_t b = (size_t)w->batch, h = sizeof(uint16_t), i = sizeof(int32_t);
    const host_input all[N_INPUTS] = {
        {"q", w->q, w->q_elems * h, NULL, NULL},
        {"k", w->k, w->kv_elems * h, NULL, NULL},
        {"v", w->v, w->kv_elems * h, NULL, NULL},
        {"k_cache", w->k_cache, w->cache_elems * h, NULL, NULL},
        {"v_cache", w->v_cache, w->cache_elems * h, NULL, NULL},
        {"block_table", w->block_table, b * (size_t)w->max_blocks_per_seq * i, NULL, NULL},
        {"start_loc", w->start_loc, (b + 1) * i, NULL, NULL},
        {"query_lens", w->query_lens, b * i, NULL, NULL},
        {"context_lens", w->context_lens, b * i, NULL, NULL},
        {"seq_lens", w->seq_lens, b * i, NULL, NULL},
    };
    memcpy(in, all, sizeof all);
}

/* The copies equal to the workload's tensors, canaries in every zone (again before each checked launch). */
static void plugin_reset_inputs(ppb_backend *b)
{
    for (int k = 0; k < N_INPUTS; k++) {
        host_input *in = &b->inputs[k];
        if (!in->block)
            continue;
        memset(in->block, PPB_GUARD_CANARY, PPB_GUARD_BYTES);
        memcpy(in->block + PPB_GUARD_BYTES, in->original, in->bytes);
        memset(in->block + PPB_GUARD_BYTES + in->bytes, PPB_GUARD_CANARY, PPB_GUARD_BYTES);
    }
}

/* Each input copied between its guard zones; the paged cache in the layout the
 * plugin's kernel reads. */
static int plugin_copy_inputs(ppb_backend *b, ppb_err *err)
{
    plugin_inputs(b->w, b->inputs);
    for (int k = 0; k < N_INPUTS; k++) {
        host_input *in = &b->inputs[k];
        if (!in->original)
            continue;
        int is_cache = in->original == b->w->k_cache || in->original == b->w->v_cache;
        if (is_cache && b->plugin.kv_layout != PPB_KV_LAYOUT_VLLM) {
            if (!(in->in_layout = ppb_workload_cache_in_layout(b->w, in->original == b->w->k_cache,
                                                               b->plugin.kv_layout)))
                return ppb_fail(err, PPB_ENOMEM, "cpu backend: out of host memory for %s in the plugin's layout",
                                in->name);
            in->original = in->in_layout;
        }
        if (!(in->block = malloc(in->bytes + 2 * PPB_GUARD_BYTES)))
            return ppb_fail(err, PPB_ENOMEM, "cpu backend: out of host memory for the plugin's copy of %s",
                            in->name);
    }
    plugin_reset_inputs(b); /* a launch may be timed before any checked one (A/B rounds) */
    return PPB_OK;
}

/* After a plugin's checked launch: bytes it wrote around its output or its
 * inputs, and inputs whose contents changed (the case is then wrong). */
static void plugin_outside_writes(const ppb_backend *b, ppb_result *res)
{
    ppb_guard_report r;
    ppb_guard_report_init(&r);
    size_t out_bytes = b->w->out_elems * sizeof(uint16_t);
    ppb_guard_hits h = ppb_guard_read(b->out_block, PPB_GUARD_BYTES, b->out_block + PPB_GUARD_BYTES + out_bytes,
                                      PPB_GUARD_BYTES);
    ppb_guard_report_add(&r, "out", &h);
    for (int k = 0; k < N_INPUTS; k++) {
        const host_input *in = &b->inputs[k];
        if (!in->block)
            continue;
        h = ppb_guard_read(in->block, PPB_GUARD_BYTES, in->block + PPB_GUARD_BYTES + in->bytes, PPB_GUARD_BYTES);
        ppb_guard_report_add(&r, in->name, &h);
        if (memcmp(in->block + PPB_GUARD_BYTES, in->original, in->bytes) != 0)
            ppb_guard_report_input_changed(&r, in->name);
    }
    ppb_guard_report_finish(&r, b->plugin.impl->name, res);
}

/* Plugin v2 scratch: sized with the host's partition count, indexed by the
 * kernel with its own (the PARTITION_SIZE mismatch), each buffer in its own
 * allocation with a guard zone that can take the whole difference. */
static int plugin_scratch(ppb_backend *b, ppb_err *err)
{
    ppb_decode_args *a = &b->plugin.decode;
    long long kernel_parts = a->max_num_partitions;
    long long host_parts = (long long)ppb_decode_num_partitions(a->max_seq_len, ppb_case_host_partition_size(&b->c));
    long long rows = (long long)a->num_seqs * a->num_heads;
    const size_t per_part[3] = {(size_t)a->head_dim * sizeof(uint16_t), sizeof(float), sizeof(float)};
    for (int i = 0; i < 3; i++) {
        host_guarded *g = &b->scratch[i];
        g->bytes = (size_t)(rows * host_parts) * per_part[i];
        size_t kernel_bytes = (size_t)(rows * kernel_parts) * per_part[i];
        g->guard = (kernel_bytes > g->bytes ? kernel_bytes - g->bytes : 0) + GUARD_SLACK;
        g->ptr = malloc(g->bytes + g->guard);
        if (!g->ptr)
            return ppb_fail(err, PPB_ENOMEM, "cpu backend: out of host memory for the v2 scratch");
    }
    a->tmp_out = b->scratch[0].ptr;
    a->exp_sums = (float *)(void *)b->scratch[1].ptr;
    a->max_logits = (float *)(void *)b->scratch[2].ptr;
    return PPB_OK;
}

static int plugin_prepare(ppb_backend *b, const ppb_workload *w, ppb_result *res, ppb_err *err)
{
    b->use_plugin = 1;
    ppb_resources resources;
    int rc = ppb_impl_prepare(&b->plugin, &resources, err);
    if (rc)
        return rc;
    if (res) {
        res->resources = resources;
        if (b->plugin.note[0])
            snprintf(res->reason, sizeof res->reason, "%s", b->plugin.note);
    }
    if ((rc = plugin_copy_inputs(b, err)))
        return rc;
    void *in[N_INPUTS];
    for (int k = 0; k < N_INPUTS; k++)
        in[k] = b->inputs[k].block ? b->inputs[k].block + PPB_GUARD_BYTES : NULL;
    const ppb_tensor_ptrs t = {.q = in[0], .k = in[1], .v = in[2], .k_cache = in[3], .v_cache = in[4],
                               .out = b->out, .block_table = in[5], .start_loc = in[6], .query_lens = in[7],
                               .context_lens = in[8], .seq_lens = in[9], .num_blocks = w->num_blocks};
    ppb_kernel_args_point(&b->plugin.prefill, &b->plugin.decode, b->c.kernel, &t);
    if (b->c.kernel == PPB_PAGED_ATTENTION && b->c.config.version == 2)
        return plugin_scratch(b, err);
    return ppb_impl_stage(&b->plugin, NULL, err); /* on the CPU done when it returns */
}

/* Before a checked launch: NaN bits in the scratch (a reduce reading a partition
 * nobody wrote gives NaN), canaries in the guards. */
static void plugin_reset_scratch(ppb_backend *b)
{
    for (int i = 0; i < 3; i++)
        if (b->scratch[i].ptr) {
            memset(b->scratch[i].ptr, 0xFF, b->scratch[i].bytes);
            memset(b->scratch[i].ptr + b->scratch[i].bytes, PPB_GUARD_CANARY, b->scratch[i].guard);
        }
}

/* What the plugin wrote past each host-sized buffer, from the guard bytes. */
static void plugin_overrun(const ppb_backend *b, ppb_overrun *ov)
{
    memset(ov, 0, sizeof *ov);
    long long *past[3] = {&ov->tmp_out_bytes, &ov->exp_sums_bytes, &ov->max_logits_bytes};
    for (int i = 0; i < 3; i++) {
        const host_guarded *g = &b->scratch[i];
        if (!g->ptr)
            continue;
        ppb_guard_hits h = ppb_guard_read(NULL, 0, g->ptr + g->bytes, g->guard);
        ov->guard_bytes_changed += h.changed;
        *past[i] = h.past;
    }
    ov->detected = ov->guard_bytes_changed > 0;
}

/* One launch of whatever the case runs. */
static int cpu_launch(ppb_backend *b, ppb_err *err)
{
    return b->use_plugin ? ppb_impl_launch(&b->plugin, NULL, err) : cpu_attn_run(b->attn, b->out, err);
}

static int cpu_prepare(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_result *res,
                       ppb_err *err)
{
    cpu_release(b);
    int rc = cpu_refuse(b, c, w, err);
    if (rc)
        return rc;
    if (!w->q)
        return ppb_fail(err, PPB_EINPUT, "cpu backend: the workload has no tensors");
    b->c = *c;
    b->w = w;
    if (res) {
        res->timing_is_cpu = 1;
        res->resources.known = 0; /* no compiled kernel to measure */
    }
    b->out_block = malloc(2 * PPB_GUARD_BYTES + sizeof(uint16_t) * (w->out_elems ? w->out_elems : 1));
    b->out = b->out_block ? (uint16_t *)(void *)(b->out_block + PPB_GUARD_BYTES) : NULL;
    if (!b->out) {
        rc = ppb_fail(err, PPB_ENOMEM, "cpu backend: out of host memory for the output");
        goto fail;
    }
    rc = c->config.impl != PPB_IMPL_BUILTIN ? plugin_prepare(b, w, res, err)
                                            : cpu_attn_create(&b->attn, &b->c, w, packed_requested(), b->kernel_threads, err);
    if (rc)
        goto fail;
    return PPB_OK;
fail:
    cpu_release(b);
    return rc;
}

/* The PARTITION_SIZE mismatch in words, into res->reason. */
static void describe_mismatch(const ppb_backend *b, ppb_result *res)
{
    const ppb_config *k = &b->c.config;
    cpu_scratch_info si;
    cpu_attn_scratch_info(b->attn, &si);
    const ppb_overrun *ov = &res->overrun;
    if (ov->detected) {
        snprintf(res->reason, sizeof res->reason,
                 "PARTITION_SIZE mismatch: host %d, kernel %d: kernel wrote %lld B past tmp_out, "
                 "%lld B past exp_sums, %lld B past max_logits (%s; %lld guard canary bytes changed)",
                 k->host_partition_size, k->partition_size, ov->tmp_out_bytes, ov->exp_sums_bytes,
                 ov->max_logits_bytes,
                 si.packed ? "buffers packed back to back without guard zones: the overrun landed in "
                             "the neighbouring buffers"
                           : "guard zones caught it",
                 ov->guard_bytes_changed);
    } else {
        size_t total = si.tmp_out_bytes + si.exp_sums_bytes + si.max_logits_bytes;
        double used = si.host_partitions ? (double)si.kernel_partitions / (double)si.host_partitions : 0;
        snprintf(res->reason, sizeof res->reason,
                 "PARTITION_SIZE mismatch: host %d, kernel %d: host buffers sized for %lld partitions, "
                 "kernel indexes %lld: %zu B of scratch, %.0f%% used; no overrun",
                 k->host_partition_size, k->partition_size, si.host_partitions, si.kernel_partitions,
                 total, 100.0 * (used > 1 ? 1 : used));
    }
}

static int cpu_run_checked(ppb_backend *b, uint16_t *out, ppb_result *res, ppb_err *err)
{
    if (!b->attn && !b->use_plugin)
        return ppb_fail(err, PPB_EINPUT, "cpu backend: run before prepare");
    size_t n = b->w->out_elems;
    for (size_t i = 0; i < n; i++)
        b->out[i] = PPB_POISON_BITS;
    memset(b->out_block, PPB_GUARD_CANARY, PPB_GUARD_BYTES);
    memset(b->out_block + PPB_GUARD_BYTES + n * sizeof(uint16_t), PPB_GUARD_CANARY, PPB_GUARD_BYTES);
    if (b->use_plugin) {
        plugin_reset_scratch(b);
        plugin_reset_inputs(b);
    } else {
        cpu_attn_reset_scratch(b->attn);
    }
    double t0 = ppb_monotonic_ms();
    int rc = cpu_launch(b, err);
    if (rc)
        return rc;
    if (res) /* the warm-up counts this run (ppb_measure_case) */
        res->checked_launch_ms = ppb_monotonic_ms() - t0;
    memcpy(out, b->out, sizeof(uint16_t) * n);
    if (res && b->use_plugin) {
        plugin_overrun(b, &res->overrun);
        if (res->overrun.detected)
            snprintf(res->reason, sizeof res->reason,
                     "v2 scratch overrun (host partition %d, kernel %d): kernel wrote %lld B past tmp_out, "
                     "%lld B past exp_sums, %lld B past max_logits (guard zones caught it: %lld canary bytes "
                     "changed)",
                     b->c.config.host_partition_size, b->c.config.partition_size, res->overrun.tmp_out_bytes,
                     res->overrun.exp_sums_bytes, res->overrun.max_logits_bytes,
                     res->overrun.guard_bytes_changed);
        plugin_outside_writes(b, res);
    } else if (res) {
        cpu_attn_overrun(b->attn, &res->overrun);
        if (ppb_case_partition_mismatch(&b->c))
            describe_mismatch(b, res);
    }
    return PPB_OK;
}

/* Evict the caches: write then read every cache line of a buffer twice the
 * last-level cache (the value changes each round so no write is redundant). */
static int flush_caches(ppb_backend *b, ppb_err *err)
{
    if (!b->flush) {
        b->flush_bytes = (size_t)(2 * b->info.l2_bytes);
        b->flush = malloc(b->flush_bytes);
        if (!b->flush)
            return ppb_fail(err, PPB_ENOMEM, "cpu backend: out of host memory for the cache flush (%zu B)",
                            b->flush_bytes);
    }
    b->flush_round++;
    memset(b->flush, (int)(b->flush_round & 0xFF), b->flush_bytes);
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < b->flush_bytes; i += 64)
        sink ^= b->flush[i];
    (void)sink;
    return PPB_OK;
}


static int cpu_time_sample(ppb_backend *b, int launches, int cold, double *ms, ppb_err *err)
{
    if (!b->attn && !b->use_plugin)
        return ppb_fail(err, PPB_EINPUT, "cpu backend: timing before prepare");
    if (launches < 1)
        return ppb_fail(err, PPB_EINPUT, "cpu backend: launches must be >= 1 (got %d)", launches);
    if (cold) {
        int rc = flush_caches(b, err);
        if (rc)
            return rc;
    }
    double t0 = ppb_monotonic_ms();
    for (int i = 0; i < launches; i++) {
        int rc = cpu_launch(b, err);
        if (rc)
            return rc;
    }
    *ms = (ppb_monotonic_ms() - t0) / launches;
    return PPB_OK;
}

const ppb_backend_ops ppb_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .device_info = cpu_device_info,
    .environment = cpu_environment,
    .refuse = cpu_refuse,
    .prepare = cpu_prepare,
    .run_checked = cpu_run_checked,
    .time_sample = cpu_time_sample,
    .release = cpu_release,
};
