/* The CUDA backend: runs kernel implementations on a GPU, all through the
 * kernel ABI (impl.h): the built-in kernels (kernels/runtime/ppb_builtin.h,
 * over the kernel runtime this backend opens) and plugins alike.
 *
 * Host API: the CUDA runtime at the CUDA 10.2 level only (the BI-V100 builds
 * this file too). NVML is opened with dlopen when present (NVIDIA), never linked.
 *
 * The PARTITION_SIZE mismatch (config.host_partition_size != partition_size):
 * the three v2 scratch buffers are sized with the host's partition count but
 * each sits in its own allocation followed by a canary-filled guard zone big
 * enough for everything the kernel could write past it; the kernels are
 * launched with the kernel's own count, and afterwards the changed guard bytes
 * say how far past each buffer the kernel wrote. Other memory is never touched.
 *
 * A kernel fault (illegal address, ...) leaves the CUDA context unusable for
 * the rest of the process: the backend then says so on every later call. */
#ifdef PPB_HAVE_CUDA

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "attention_args.h"
#include "backend.h"
#include "buffer_guard.h"
#include "decode_plan.h"
#include "impl.h"
#include "kernel_case.h"
#include "measure.h"
#include "ppb_builtin.h"
#include "ppb_kernels.h"
#include "ppb_rng.h"
#include "reference.h"

/* Case buffers (inputs, output, scratch) come from the device's stream-ordered
 * memory pool where the runtime has one (CUDA 11.3 and later), which keeps
 * freed memory for the next case: a warm decode.yaml run on the H200 spent
 * 35 ms of its 3.2 s in 148 cudaMalloc and 149 cudaFree calls
 * (docs/BENCHMARKS.md). Every buffer is still an allocation of its own, so
 * compute-sanitizer still sees its bounds. The BI-V100's CUDA 10.2-level
 * runtime has no pools: cudaMalloc and cudaFree there. */
#if defined(CUDART_VERSION) && CUDART_VERSION >= 11030
#define PPB_POOLED_ALLOC 1
#else
#define PPB_POOLED_ALLOC 0
#endif

#define GUARD_SLACK (64 << 10)          /* guard bytes beyond the computed overrun */
#define MEMORY_MARGIN (256ll << 20)     /* left free for the context, the kernels, the driver */

/* ---- NVML, opened at run time ------------------------------------------------------ */

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;

typedef struct nvml_api {
    void *lib;
    nvml_device dev;
    int ok;
    char why[256];
    nvml_ret (*Init)(void);
    nvml_ret (*Shutdown)(void);
    nvml_ret (*GetHandleByUUID)(const char *, nvml_device *);
    nvml_ret (*GetHandleByPciBusId)(const char *, nvml_device *);
    nvml_ret (*GetTemperature)(nvml_device, int, unsigned *);
    nvml_ret (*GetPowerUsage)(nvml_device, unsigned *);
    nvml_ret (*GetClockInfo)(nvml_device, int, unsigned *);
    nvml_ret (*GetThrottleReasons)(nvml_device, unsigned long long *);
    nvml_ret (*GetPerformanceState)(nvml_device, int *);
    nvml_ret (*SystemGetDriverVersion)(char *, unsigned);
} nvml_api;

enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

static void *nvml_sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    return p || !b ? p : dlsym(lib, b);
}

/* Load and initialise NVML (about 15 ms on the H200): on a thread of its own
 * while the CUDA driver starts (cuda_open), the device looked up after it (nvml_find). */
static void nvml_load(nvml_api *n)
{
    memset(n, 0, sizeof *n);
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(n->why, sizeof n->why, "libnvidia-ml.so.1 not found");
        return;
    }
    void *p;
#define NVML_LOAD(field, a, b)                                                                     \
    p = nvml_sym(n->lib, a, b);                                                                    \
    memcpy(&n->field, &p, sizeof p);
    NVML_LOAD(Init, "nvmlInit_v2", "nvmlInit")
    NVML_LOAD(Shutdown, "nvmlShutdown", NULL)
    NVML_LOAD(GetHandleByUUID, "nvmlDeviceGetHandleByUUID", NULL)
    NVML_LOAD(GetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId")
    NVML_LOAD(GetTemperature, "nvmlDeviceGetTemperature", NULL)
    NVML_LOAD(GetPowerUsage, "nvmlDeviceGetPowerUsage", NULL)
    NVML_LOAD(GetClockInfo, "nvmlDeviceGetClockInfo", NULL)
    NVML_LOAD(GetThrottleReasons, "nvmlDeviceGetCurrentClocksEventReasons",
              "nvmlDeviceGetCurrentClocksThrottleReasons")
    NVML_LOAD(GetPerformanceState, "nvmlDeviceGetPerformanceState", NULL)
    NVML_LOAD(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", NULL)
#undef NVML_LOAD
    if (!n->Init || !n->Shutdown || (!n->GetHandleByUUID && !n->GetHandleByPciBusId)) {
        snprintf(n->why, sizeof n->why, "libnvidia-ml.so.1 lacks nvmlInit or device lookup");
        dlclose(n->lib);
        n->lib = NULL;
        return;
    }
    nvml_ret r = n->Init();
    if (r != 0) {
        snprintf(n->why, sizeof n->why, "nvmlInit failed (%d)", r);
        dlclose(n->lib);
        n->lib = NULL;
        return;
    }
}

static void *nvml_load_main(void *n)
{
    nvml_load(n);
    return NULL;
}

static void nvml_find(nvml_api *n, const char *uuid, const char *pci)
{
    if (!n->lib)
        return;
    nvml_ret r = -1;
    if (n->GetHandleByUUID && uuid[0])
        r = n->GetHandleByUUID(uuid, &n->dev);
    if (r != 0 && n->GetHandleByPciBusId && pci[0])
        r = n->GetHandleByPciBusId(pci, &n->dev);
    if (r != 0) {
        snprintf(n->why, sizeof n->why, "NVML does not know device %s (%s)", uuid, pci);
        n->Shutdown();
        dlclose(n->lib);
        n->lib = NULL;
        return;
    }
    n->ok = 1;
}

static void nvml_close(nvml_api *n)
{
    if (n->lib) {
        n->Shutdown();
        dlclose(n->lib);
    }
    memset(n, 0, sizeof *n);
}

/* NVML's clock-event (throttle) reason bits, as names. */
static void throttle_names(unsigned long long bits, char *buf, size_t len)
{
    static const struct {
        unsigned long long bit;
        const char *name;
    } names[] = {
        {0x1ull, "gpu_idle"},           {0x2ull, "applications_clocks"}, {0x4ull, "sw_power_cap"},
        {0x8ull, "hw_slowdown"},        {0x10ull, "sync_boost"},        {0x20ull, "sw_thermal"},
        {0x40ull, "hw_thermal"},        {0x80ull, "hw_power_brake"},     {0x100ull, "display_clocks"},
    };
    size_t n = (size_t)snprintf(buf, len, "0x%llx", bits);
    for (size_t i = 0; i < sizeof names / sizeof *names && n < len; i++)
        if (bits & names[i].bit)
            n += (size_t)snprintf(buf + n, len - n, " %s", names[i].name);
    if (bits == 0 && n < len)
        snprintf(buf + n, len - n, " none");
}

/* ---- the backend --------------------------------------------------------------------- */

/* A case's inputs on the device. They are a pure function of the seed and the
 * shape (ppb_workload_create), so the configs of one shape that follow each
 * other share one upload: prepare keeps them, release keeps them, and a
 * prepare for other inputs, release_inputs or close frees them. Kernels only
 * read them (their outputs and scratch are the config's own buffers). */
/* A device buffer between guard zones of PPB_GUARD_CANARY (buffer_guard.h):
 * `front` bytes before it, `back` after it (the v2 scratch's back zone is as
 * large as the kernel's partition count can overrun). */
typedef struct guarded {
    unsigned char *base;         /* the allocation: front zone, buffer, back zone */
    unsigned char *ptr;          /* the buffer a kernel gets */
    size_t bytes, front, back;
} guarded;

static const int32_t *ints(const guarded *g) { return (const int32_t *)(const void *)g->ptr; }

/* The inputs, in ppb_tensor_ptrs order; each in its own guarded allocation. */
enum { IN_Q, IN_K, IN_V, IN_K_CACHE, IN_V_CACHE, IN_BLOCK_TABLE, IN_START_LOC, IN_QUERY_LENS, IN_CONTEXT_LENS,
       IN_SEQ_LENS, N_INPUTS };
static const char *const input_names[N_INPUTS] = {"q", "k", "v", "k_cache", "v_cache", "block_table",
                                                  "start_loc", "query_lens", "context_lens", "seq_lens"};

typedef struct device_inputs {
    int loaded;
    uint64_t seed;
    char shape[PPB_CASE_KEY_MAX];
    int kv_layout;               /* the paged cache's (PPB_KV_LAYOUT_*): the layout the bound kernel reads */
    guarded t[N_INPUTS];
    /* A plugin's inputs are checked after its checked launch: their checksums
     * while unchanged (taken once, before the first plugin case on them), and
     * `tainted` once a kernel changed them, so the next case makes new ones. */
    int summed, tainted;
    uint64_t sum[N_INPUTS];
} device_inputs;

struct ppb_backend {
    ppb_backend_options opt;
    ppb_device_info info;
    int device;
    char pci[32];
    cudaStream_t stream;
#if PPB_POOLED_ALLOC
    cudaMemPool_t pool;          /* the device's default pool, set to keep what is freed */
#endif
    int pooled;                  /* case buffers come from `pool` (device_alloc) */
    /* each sample between its own pair (time_samples; the checked launch uses the first) */
    cudaEvent_t sample_start[PPB_SAMPLES_PER_SYNC_MAX], sample_stop[PPB_SAMPLES_PER_SYNC_MAX];
    ppb_kernels *kernels;
    ppb_builtin *builtin_ctx;    /* the built-in kernels' context over `kernels` */
    ppb_impl_ref builtin;        /* their table and that context, for ppb_impl_bind */
    nvml_api nvml;
    int lost;                    /* the context died of a kernel fault */
    char lost_reason[600];
    void *flush;                 /* cold-L2 buffer, >= 2x L2, allocated once */
    size_t flush_bytes;
    unsigned flush_round;

    device_inputs in;            /* kept across the configs of one input set */

    /* the prepared case */
    int prepared;
    ppb_case c;
    const ppb_workload *w;
    ppb_impl_call call;          /* the case bound to its implementation; launches on our buffers */
    guarded out;
    guarded tmp_out, exp_sums, max_logits;
    size_t kernel_tmp_bytes, kernel_es_bytes, kernel_ml_bytes;  /* what the kernel's count spans */
    int host_parts, kernel_parts;
    unsigned long long *sums;    /* the input checksums on the device (N_INPUTS): cudaMalloc on first use */
};

static int is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
        return 1;
    default:
        return 0;
    }
}

/* A CUDA error while running: after a kernel fault every later call fails, so
 * remember that the context is lost and say so now and later. */
static int run_fail(ppb_backend *b, ppb_err *err, cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear what can be cleared */
    int sticky = is_sticky(e) || cudaDeviceSynchronize() != cudaSuccess;
    if (sticky && !b->lost) {
        b->lost = 1;
        snprintf(b->lost_reason, sizeof b->lost_reason, "%s: %s (%s) while running %s", what,
                 cudaGetErrorString(e), cudaGetErrorName(e), b->prepared ? b->c.key : "no case");
    }
    return ppb_fail(err, PPB_EFAIL, "%s: %s (%s)%s", what, cudaGetErrorString(e), cudaGetErrorName(e),
                    sticky ? "; the CUDA context is lost: later cases in this process cannot run "
                             "(resume the run in a new process)"
                           : "");
}

static int lost_fail(const ppb_backend *b, ppb_err *err)
{
    return ppb_fail(err, PPB_EFAIL,
                    "the CUDA context was lost earlier (%s); nothing more can run in this process: "
                    "resume the run in a new process",
                    b->lost_reason);
}

static int setup_fail(ppb_err *err, cudaError_t e, const char *what)
{
    return ppb_fail(err, e == cudaErrorMemoryAllocation ? PPB_ENOMEM : PPB_EFAIL, "%s: %s (%s)", what,
                    cudaGetErrorString(e), cudaGetErrorName(e));
}

static void version_text(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void uuid_text(const cudaUUID_t *u, char *buf, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(buf, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static void cuda_release(ppb_backend *b);
static void cuda_release_inputs(ppb_backend *b);

static void destroy_events(ppb_backend *b)
{
    for (int i = 0; i < PPB_SAMPLES_PER_SYNC_MAX; i++) {
        if (b->sample_start[i])
            cudaEventDestroy(b->sample_start[i]);
        if (b->sample_stop[i])
            cudaEventDestroy(b->sample_stop[i]);
    }
}

/* The device's default pool, made to keep what is freed (the release threshold:
 * by default it gives memory back at every synchronisation). Without one (no
 * pool support, or an older runtime) case buffers are plain allocations. */
static void open_pool(ppb_backend *b)
{
#if PPB_POOLED_ALLOC
    int supported = 0;
    unsigned long long keep = ~0ull;
    b->pooled = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, b->device) == cudaSuccess &&
                supported && cudaDeviceGetDefaultMemPool(&b->pool, b->device) == cudaSuccess &&
                cudaMemPoolSetAttribute(b->pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
    cudaGetLastError();
#else
    b->pooled = 0;
#endif
}

/* Device memory free for a case: what the driver has free, and what the pool
 * keeps unused (allocations are served from it first). */
static cudaError_t free_memory(ppb_backend *b, size_t *free_b, size_t *total_b)
{
    cudaError_t e = cudaMemGetInfo(free_b, total_b);
#if PPB_POOLED_ALLOC
    unsigned long long reserved = 0, used = 0;
    if (e == cudaSuccess && b->pooled &&
        cudaMemPoolGetAttribute(b->pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
        cudaMemPoolGetAttribute(b->pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess && reserved > used)
        *free_b += (size_t)(reserved - used);
#else
    (void)b;
#endif
    return e;
}

static int cuda_open(ppb_backend **out, const ppb_backend_options *opt, ppb_err *err)
{
    *out = NULL;
    ppb_backend *b = calloc(1, sizeof *b);
    if (!b)
        return ppb_fail(err, PPB_ENOMEM, "cuda backend: out of host memory");
    /* NVML starts while the CUDA driver does (nvml_load); without a thread, after it. */
    pthread_t nvml_thread;
    int nvml_threaded = pthread_create(&nvml_thread, NULL, nvml_load_main, &b->nvml) == 0;
    int rc = PPB_OK, count = 0;
    int dev = opt ? opt->device_index : 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        rc = ppb_fail(err, PPB_EFAIL, "no CUDA device: %s",
                      e != cudaSuccess ? cudaGetErrorString(e) : "the runtime found none");
        goto fail;
    }
    if (dev < 0 || dev >= count) {
        rc = ppb_fail(err, PPB_EINPUT, "no CUDA device %d: %d device(s) found", dev, count);
        goto fail;
    }
    if (opt)
        b->opt = *opt;
    b->device = dev;
    if ((e = cudaSetDevice(dev)) != cudaSuccess) {
        rc = setup_fail(err, e, "cudaSetDevice");
        goto fail;
    }
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
        rc = setup_fail(err, e, "cudaGetDeviceProperties");
        goto fail;
    }
    ppb_device_info *d = &b->info;
    snprintf(d->backend, sizeof d->backend, "cuda");
    d->is_gpu = 1;
    /* prop.name is 256 bytes; names are far shorter, keep what fits. */
    memcpy(d->name, prop.name, sizeof d->name - 1);
    d->name[sizeof d->name - 1] = '\0';
    uuid_text(&prop.uuid, d->uuid, sizeof d->uuid);
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    version_text(drv, d->driver, sizeof d->driver);
    version_text(rt, d->runtime, sizeof d->runtime);
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->sm_count = prop.multiProcessorCount;
    d->warp_size = prop.warpSize;
    d->l2_bytes = prop.l2CacheSize;
    d->smem_per_block = (int)prop.sharedMemPerBlock;
    d->smem_per_block_optin = (int)prop.sharedMemPerBlockOptin;
    if (cudaDeviceGetPCIBusId(b->pci, sizeof b->pci, dev) != cudaSuccess)
        b->pci[0] = '\0';
    size_t free_b = 0, total_b = 0;
    if ((e = cudaMemGetInfo(&free_b, &total_b)) != cudaSuccess) {
        rc = setup_fail(err, e, "cudaMemGetInfo");
        goto fail;
    }
    d->mem_total = (long long)total_b;
    d->mem_free = (long long)free_b;
    if ((e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        rc = setup_fail(err, e, "creating the stream");
        goto fail;
    }
    for (int i = 0; i < PPB_SAMPLES_PER_SYNC_MAX; i++)
        if ((e = cudaEventCreate(&b->sample_start[i])) != cudaSuccess ||
            (e = cudaEventCreate(&b->sample_stop[i])) != cudaSuccess) {
            rc = setup_fail(err, e, "creating the timing events");
            goto fail;
        }
    /* Emulating a target: never opt in past its shared memory per block. */
    ppb_kernels_options ko = {0};
    ko.device_index = dev;
    ko.mechanism = PPB_KMECH_AUTO;
    const ppb_target *t = b->opt.target;
    if (t && t->smem_per_block.present && t->smem_per_block.value > 0 &&
        t->smem_per_block.value < (double)d->smem_per_block_optin)
        ko.smem_cap = (long)t->smem_per_block.value;
    rc = ppb_kernels_open(&b->kernels, &ko, err);
    if (rc) {
        ppb_err_prefix(err, "kernel runtime: ");
        goto fail;
    }
    rc = ppb_builtin_open(b->kernels, &b->builtin_ctx, err);
    if (rc) {
        ppb_kernels_close(b->kernels);
        goto fail;
    }
    b->builtin = (ppb_impl_ref){.table = ppb_builtin_impl(), .ctx = b->builtin_ctx};
    open_pool(b);
    if (nvml_threaded)
        pthread_join(nvml_thread, NULL);
    else
        nvml_load(&b->nvml);
    nvml_find(&b->nvml, d->uuid, b->pci);
    *out = b;
    return PPB_OK;
fail:
    if (nvml_threaded)
        pthread_join(nvml_thread, NULL);
    nvml_close(&b->nvml);
    destroy_events(b);
    if (b->stream)
        cudaStreamDestroy(b->stream);
    free(b);
    return rc;
}

static void cuda_close(ppb_backend *b)
{
    if (!b)
        return;
    cuda_release(b);
    cuda_release_inputs(b);
    ppb_builtin_close(b->builtin_ctx);
    ppb_kernels_close(b->kernels);
    if (b->flush)
        cudaFree(b->flush);
#if PPB_POOLED_ALLOC
    if (b->pooled && cudaStreamSynchronize(b->stream) == cudaSuccess)
        cudaMemPoolTrimTo(b->pool, 0);   /* the next backend opened in this process starts from nothing kept */
#endif
    destroy_events(b);
    cudaStreamDestroy(b->stream);
    nvml_close(&b->nvml);
    if (b->sums)
        cudaFree(b->sums);
    free(b);
}

static void cuda_device_info(ppb_backend *b, ppb_device_info *info)
{
    size_t free_b, total_b;
    if (!b->lost && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        b->info.mem_free = (long long)free_b;
    *info = b->info;
}

static void sink_int(ppb_env_sink sink, void *ctx, const char *key, long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    sink(ctx, key, buf);
}

static void cuda_environment(ppb_backend *b, ppb_env_sink sink, void *ctx)
{
    const ppb_device_info *d = &b->info;
    char buf[512];
    sink(ctx, "backend", "cuda");
    sink(ctx, "gpu_name", d->name);
    sink(ctx, "gpu_uuid", d->uuid);
    sink(ctx, "gpu_pci_bus", b->pci);
    sink(ctx, "cuda_driver", d->driver);
    sink(ctx, "cuda_runtime", d->runtime);
    snprintf(buf, sizeof buf, "%d.%d", d->cc_major, d->cc_minor);
    sink(ctx, "compute_capability", buf);
    sink_int(sink, ctx, "sm_count", d->sm_count);
    sink_int(sink, ctx, "warp_size", d->warp_size);
    sink_int(sink, ctx, "l2_bytes", d->l2_bytes);
    snprintf(buf, sizeof buf, "%zu B written before each sample; none for a case reading >= %zu B of K/V",
             ppb_l2_flush_bytes(d->l2_bytes), ppb_l2_flush_bytes(d->l2_bytes) + (size_t)d->l2_bytes);
    sink(ctx, "cold_l2_flush", buf);
    sink_int(sink, ctx, "smem_per_block_optin", d->smem_per_block_optin);
    if (b->lost) {
        sink(ctx, "cuda_context", b->lost_reason);
        return;
    }
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, b->device) == cudaSuccess)
        sink_int(sink, ctx, "sm_clock_max_mhz", v / 1000);
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, b->device) == cudaSuccess)
        sink_int(sink, ctx, "mem_clock_max_mhz", v / 1000);
    if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, b->device) == cudaSuccess)
        sink_int(sink, ctx, "mem_bus_width_bits", v);
    cudaGetLastError();
    size_t free_b, total_b;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        sink_int(sink, ctx, "mem_free_bytes", (long long)free_b);

    ppb_kernels_info ki;
    ppb_kernels_get_info(b->kernels, &ki);
    sink(ctx, "kernels.mechanism", ki.mechanism);
    sink(ctx, "kernels.compiler", ki.compiler);
    snprintf(buf, sizeof buf, "sm_%d", ki.arch);
    sink(ctx, "kernels.arch", buf);
    sink(ctx, "kernels.sources_hash", ki.sources_hash);
    /* Kernels read from a folder (PPBENCH_KERNEL_SOURCE_DIR) instead of this build's: say so. */
    sink(ctx, "kernels.source_dir", ki.source_dir[0] ? ki.source_dir : "(embedded)");
    sink(ctx, "kernels.cache_dir", ki.cache_dir[0] ? ki.cache_dir : "(none)");
    sink_int(sink, ctx, "kernels.cache_hits", ki.cache_hits);
    sink_int(sink, ctx, "kernels.cache_misses", ki.cache_misses);
    snprintf(buf, sizeof buf, "%.2f", ki.compile_seconds);
    sink(ctx, "kernels.compile_seconds", buf);
    sink_int(sink, ctx, "kernels.smem_limit", ki.smem_optin_limit);

    ppb_impl_environment(sink, ctx);

    nvml_api *n = &b->nvml;
    if (!n->ok) {
        sink(ctx, "nvml", n->why);
        return;
    }
    unsigned u;
    if (n->SystemGetDriverVersion && n->SystemGetDriverVersion(buf, 80) == 0)
        sink(ctx, "nvml.driver", buf);
    if (n->GetTemperature && n->GetTemperature(n->dev, NVML_TEMPERATURE_GPU, &u) == 0)
        sink_int(sink, ctx, "nvml.temperature_c", u);
    if (n->GetPowerUsage && n->GetPowerUsage(n->dev, &u) == 0) {
        snprintf(buf, sizeof buf, "%.1f", u / 1000.0);
        sink(ctx, "nvml.power_w", buf);
    }
    if (n->GetClockInfo && n->GetClockInfo(n->dev, NVML_CLOCK_SM, &u) == 0)
        sink_int(sink, ctx, "nvml.sm_clock_mhz", u);
    if (n->GetClockInfo && n->GetClockInfo(n->dev, NVML_CLOCK_MEM, &u) == 0)
        sink_int(sink, ctx, "nvml.mem_clock_mhz", u);
    int pstate;
    if (n->GetPerformanceState && n->GetPerformanceState(n->dev, &pstate) == 0) {
        snprintf(buf, sizeof buf, "P%d", pstate);
        sink(ctx, "nvml.pstate", buf);
    }
    unsigned long long reasons;
    if (n->GetThrottleReasons && n->GetThrottleReasons(n->dev, &reasons) == 0) {
        throttle_names(reasons, buf, sizeof buf);
        sink(ctx, "nvml.throttle_reasons", buf);
    }
}

/* ---- prepare ------------------------------------------------------------------------- */

/* A device buffer for a case (from the pool where there is one). */
static cudaError_t device_alloc(ppb_backend *b, void **p, size_t bytes)
{
#if PPB_POOLED_ALLOC
    if (b->pooled) {
        cudaError_t e = cudaMallocAsync(p, bytes, b->stream);
        if (e != cudaErrorMemoryAllocation)
            return e;
        /* What the pool keeps may be in pieces too small: give it all back, then try once more. */
        cudaGetLastError();
        if ((e = cudaStreamSynchronize(b->stream)) != cudaSuccess || (e = cudaMemPoolTrimTo(b->pool, 0)) != cudaSuccess)
            return e;
        return cudaMallocAsync(p, bytes, b->stream);
    }
#endif
    return cudaMalloc(p, bytes);
}

static void device_free(ppb_backend *b, void **p)
{
    if (*p) {
#if PPB_POOLED_ALLOC
        if (b->pooled)
            cudaFreeAsync(*p, b->stream);
        else
#endif
            cudaFree(*p);
    }
    *p = NULL;
}

static void free_guarded(ppb_backend *b, guarded *g)
{
    device_free(b, (void **)&g->base);
    memset(g, 0, sizeof *g);
}

static void cuda_release_inputs(ppb_backend *b)
{
    device_inputs *in = &b->in;
    for (int k = 0; k < N_INPUTS; k++)
        free_guarded(b, &in->t[k]);
    memset(in, 0, sizeof *in);
}

static void cuda_release(ppb_backend *b)
{
    free_guarded(b, &b->out);
    free_guarded(b, &b->tmp_out);
    free_guarded(b, &b->exp_sums);
    free_guarded(b, &b->max_logits);
    ppb_kernels_resume(b->kernels);   /* paused while the case was timed */
    b->prepared = 0;
    b->w = NULL;
}

static size_t guard_for(size_t host_bytes, size_t kernel_bytes)
{
    size_t over = kernel_bytes > host_bytes ? kernel_bytes - host_bytes : 0;
    return (over + GUARD_SLACK + 255) / 256 * 256;
}

/* Allocate and, with src, copy in. On the backend's stream: the stream is
 * non-blocking, so a copy on the legacy default stream could still be in
 * flight when a kernel on it starts (a pageable cudaMemcpy returns once the
 * bytes are staged); stream order makes every later launch see the data. */
static int alloc_upload(ppb_backend *b, void **dst, const void *src, size_t bytes, ppb_err *err, const char *what)
{
    cudaError_t e = device_alloc(b, dst, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *dst = NULL;
        return ppb_fail(err, PPB_ENOMEM, "allocating %s (%zu B): %s", what, bytes, cudaGetErrorString(e));
    }
    if (src && bytes && (e = cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, b->stream)) != cudaSuccess)
        return setup_fail(err, e, "uploading the inputs");
    return PPB_OK;
}

/* Canaries in both zones of g. */
static cudaError_t fill_zones(const guarded *g, cudaStream_t stream)
{
    cudaError_t e = cudaSuccess;
    if (g->base && g->front)
        e = cudaMemsetAsync(g->base, PPB_GUARD_CANARY, g->front, stream);
    if (e == cudaSuccess && g->base && g->back)
        e = cudaMemsetAsync(g->ptr + g->bytes, PPB_GUARD_CANARY, g->back, stream);
    return e;
}

/* A buffer of `bytes` between a PPB_GUARD_BYTES front zone and a `back` one,
 * with src (if any) copied in. */
static int alloc_guarded(ppb_backend *b, guarded *g, const void *src, size_t bytes, size_t back, ppb_err *err,
                         const char *what)
{
    g->bytes = bytes;
    g->front = PPB_GUARD_BYTES;
    g->back = back;
    int rc = alloc_upload(b, (void **)&g->base, NULL, g->front + bytes + back, err, what);
    if (rc)
        return rc;
    g->ptr = g->base + g->front;
    cudaError_t e = fill_zones(g, b->stream);
    if (e == cudaSuccess && src && bytes)
        e = cudaMemcpyAsync(g->ptr, src, bytes, cudaMemcpyHostToDevice, b->stream);
    return e == cudaSuccess ? PPB_OK : setup_fail(err, e, "filling a guarded buffer");
}

static int max_of(const int32_t *v, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* This device as the kernel ABI describes it. */
static ppbk_device abi_device(const ppb_backend *b)
{
    ppb_kernels_info ki;
    ppb_kernels_get_info(b->kernels, &ki);
    int cc = b->info.cc_major * 10 + b->info.cc_minor;
    return (ppbk_device){PPBK_BACKEND_CUDA, b->device, cc, b->info.warp_size, b->info.sm_count, ki.smem_optin_limit};
}

/* Bind the case to its implementation (the target's shared-memory cap is the
 * device's limit it sees) and check the shape it will be handed against the
 * workload the kernel reads. */
static int bind_case(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err)
{
    ppbk_device dev = abi_device(b);
    int rc = ppb_impl_bind(&b->call, c, &dev, &b->builtin, err);
    if (rc)
        return rc;
    b->host_parts = b->kernel_parts = 0;
    if (c->kernel == PPB_PAGED_ATTENTION && c->config.version == 2) {
        b->kernel_parts = b->call.decode.max_num_partitions;
        b->host_parts = (int)ppb_decode_num_partitions(b->call.decode.max_seq_len, ppb_case_host_partition_size(c));
    }
    const ppb_prefill_args *pa = &b->call.prefill;
    const ppb_decode_args *da = &b->call.decode;
    int agree = c->kernel == PPB_PREFIX_PREFILL
                    ? pa->max_query_len == max_of(w->query_lens, w->batch) && pa->batch == w->batch &&
                          pa->max_blocks_per_seq == w->max_blocks_per_seq
                    : da->max_seq_len == max_of(w->context_lens, w->batch) && da->num_seqs == w->batch &&
                          da->max_blocks_per_seq == w->max_blocks_per_seq;
    if (!agree)
        return ppb_fail(err, PPB_EFAIL, "cuda backend: the workload's lengths differ from the case's (%s)", c->key);
    return PPB_OK;
}

/* The v2 scratch sizes (tmp_out, exp_sums, max_logits) for a partition size: the
 * host's (ppb_case_host_partition_size) or the kernel's. */
static void v2_scratch_bytes(const ppb_decode_args *a, int partition_size, size_t elem, size_t out[3])
{
    out[0] = ppb_decode_tmp_out_bytes(a->num_seqs, a->num_heads, a->head_dim, a->max_seq_len, partition_size,
                                      (int)elem);
    out[1] = ppb_decode_exp_sums_bytes(a->num_seqs, a->num_heads, a->max_seq_len, partition_size);
    out[2] = ppb_decode_max_logits_bytes(a->num_seqs, a->num_heads, a->max_seq_len, partition_size);
}

static size_t input_bytes(const ppb_workload *w)
{
    return (w->q_elems + 2 * w->kv_elems + 2 * w->cache_elems) * sizeof(uint16_t) +
           sizeof(int32_t) * ((size_t)w->batch * (size_t)w->max_blocks_per_seq + 4 * (size_t)w->batch + 1) +
           2 * PPB_GUARD_BYTES * N_INPUTS;
}

/* 1 when the loaded inputs are those of (w, c): same seed, same shape. */
static int inputs_loaded_for(const ppb_backend *b, const ppb_case *c, const ppb_workload *w)
{
    if (!b->in.loaded || b->in.seed != w->seed || b->in.kv_layout != b->call.kv_layout)
        return 0;
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(c, shape, sizeof shape);
    return strcmp(shape, b->in.shape) == 0;
}

/* Device bytes the case still needs (inputs unless loaded, output, scratch
 * with guards, the flush buffer if it does not exist yet). */
static size_t device_bytes(ppb_backend *b, const ppb_case *c, const ppb_workload *w)
{
    size_t e = sizeof(uint16_t), n = w->out_elems * e + 2 * PPB_GUARD_BYTES;
    if (!inputs_loaded_for(b, c, w))
        n += input_bytes(w);
    if (c->kernel == PPB_PAGED_ATTENTION && c->config.version == 2) {
        const ppb_decode_args *a = &b->call.decode;
        size_t host[3], kern[3];
        v2_scratch_bytes(a, ppb_case_host_partition_size(c), e, host);
        v2_scratch_bytes(a, c->config.partition_size, e, kern);
        b->kernel_tmp_bytes = kern[0];
        b->kernel_es_bytes = kern[1];
        b->kernel_ml_bytes = kern[2];
        n += host[0] + guard_for(host[0], b->kernel_tmp_bytes) + host[1] + guard_for(host[1], b->kernel_es_bytes) +
             host[2] + guard_for(host[2], b->kernel_ml_bytes) + 3 * PPB_GUARD_BYTES;
    }
    if (!b->flush)
        n += (size_t)(2 * b->info.l2_bytes) + (1u << 20);
    return n;
}

static int check_memory(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err)
{
    size_t need = device_bytes(b, c, w), free_b = 0, total_b = 0;
    cudaError_t e = free_memory(b, &free_b, &total_b);
    if (e != cudaSuccess)
        return run_fail(b, err, e, "cudaMemGetInfo");
    if ((long long)need + MEMORY_MARGIN > (long long)free_b)
        return ppb_fail(err, PPB_EREFUSED, "needs %.2f GB of device memory, %.2f GB free (of %.2f GB)",
                        need / 1e9, free_b / 1e9, total_b / 1e9);
    return PPB_OK;
}

/* The implementation's refusals and the memory check need only the lengths. */
static int cuda_refuse(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err)
{
    if (b->lost)
        return lost_fail(b, err);
    int rc = ppb_case_validate(c, err);
    if (rc)
        return rc;
    if ((rc = bind_case(b, c, w, err)))
        return rc;
    return check_memory(b, c, w, err);
}

static ppb_kernel_spec fill_spec(const ppb_case *c)
{
    return (ppb_kernel_spec){.kind = PPB_KSPEC_INPUT_FILL,
                             .dtype = c->shape.dtype == PPB_FP16 ? PPB_KDTYPE_FP16 : PPB_KDTYPE_BF16};
}

/* The built-in kernels a case will launch (and its input generator), loaded on
 * the kernel runtime's threads while earlier cases run. A plugin's kernels
 * load in its own prepare. */
static void cuda_prefetch(ppb_backend *b, const ppb_case *c)
{
    ppb_err ignored;
    ppb_impl_call call;
    ppbk_device dev = abi_device(b);
    if (b->lost || ppb_case_validate(c, &ignored) || ppb_impl_bind(&call, c, &dev, &b->builtin, &ignored))
        return;
    const ppb_kernel_spec fill = fill_spec(c);
    ppb_kernels_prefetch(b->kernels, &fill, 1);
    if (!call.builtin)
        return;
    if (c->kernel == PPB_PREFIX_PREFILL)
        ppb_builtin_prefetch(b->builtin_ctx, PPB_KSPEC_PREFILL, &call.dev, &call.prefill_cfg, &call.prefill);
    else
        ppb_builtin_prefetch(b->builtin_ctx, PPB_KSPEC_DECODE, &call.dev, &call.decode_cfg, &call.decode);
}

/* The input generator's grid over n elements: grid-stride beyond 16 blocks an SM. */
static ppb_launch_plan fill_plan(const ppb_backend *b, size_t n)
{
    size_t blocks = (n + PPB_FILL_THREADS - 1) / PPB_FILL_THREADS, most = (size_t)b->info.sm_count * 16;
    return (ppb_launch_plan){{(unsigned)(blocks < most ? blocks : most), 1, 1}, {PPB_FILL_THREADS, 1, 1}, 0};
}

/* One tensor generated on the device (kernels/input_fill.cuh), bit for bit
 * what ppb_workload_fill makes on the host; a paged cache (valid set) in the
 * bound kernel's layout, the same values at the same places. */
static int fill_tensor(ppb_backend *b, guarded *dst, size_t n, uint32_t tensor, const int32_t *valid,
                       int slot_shift, const ppb_workload *w, ppb_err *err)
{
    int rc = alloc_guarded(b, dst, NULL, n * sizeof(uint16_t), PPB_GUARD_BYTES, err, "inputs");
    if (rc || n == 0)
        return rc;
    ppb_kernel_spec spec = fill_spec(w->c);
    ppb_kernel *fill;
    ppbk_resources kres;
    if ((rc = ppb_kernels_get(b->kernels, &spec, &fill, &kres, err))) {
        ppb_err_prefix(err, "the input generator: ");
        return rc;
    }
    const ppb_shape *s = &w->c->shape;
    ppb_fill_args a = {.data = dst->ptr, .n = n, .key = ppb_rng_key(w->seed, tensor), .valid_tokens = valid,
                       .page_elems = (unsigned long long)s->num_kv_heads * (unsigned long long)s->head_dim *
                                     (unsigned long long)s->page_size,
                       .page_size = s->page_size, .slot_shift = slot_shift,
                       .layout = valid ? b->call.kv_layout : PPB_KV_LAYOUT_VLLM, .num_kv_heads = s->num_kv_heads,
                       .head_dim = s->head_dim};
    const ppb_launch_plan plan = fill_plan(b, n);
    return ppb_kernels_launch(fill, &plan, &a, sizeof a, b->stream, err);
}

/* Make the workload's inputs on the device: lengths and the block table
 * uploaded, tensors generated there. They stay loaded (device_inputs). */
static int make_inputs(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err)
{
    device_inputs *in = &b->in;
    size_t n = (size_t)w->batch;
    int32_t *valid = NULL; /* the pages' valid tokens, for the cache tensors' garbage slots */
    int rc;
    const size_t g = PPB_GUARD_BYTES;
    if ((rc = alloc_guarded(b, &in->t[IN_BLOCK_TABLE], w->block_table,
                            sizeof(int32_t) * n * (size_t)w->max_blocks_per_seq, g, err, "block_table")) ||
        (rc = alloc_guarded(b, &in->t[IN_CONTEXT_LENS], w->context_lens, sizeof(int32_t) * n, g, err,
                            "context_lens")) ||
        (rc = alloc_upload(b, (void **)&valid, w->valid_tokens, sizeof(int32_t) * (size_t)w->num_blocks, err,
                           "valid_tokens")) ||
        (rc = fill_tensor(b, &in->t[IN_Q], w->q_elems, PPB_T_Q, NULL, 0, w, err)) ||
        (rc = fill_tensor(b, &in->t[IN_K_CACHE], w->cache_elems, PPB_T_K_CACHE, valid, 3, w, err)) ||
        (rc = fill_tensor(b, &in->t[IN_V_CACHE], w->cache_elems, PPB_T_V_CACHE, valid, 0, w, err)))
        goto end;
    if (c->kernel == PPB_PREFIX_PREFILL &&
        ((rc = fill_tensor(b, &in->t[IN_K], w->kv_elems, PPB_T_K, NULL, 0, w, err)) ||
         (rc = fill_tensor(b, &in->t[IN_V], w->kv_elems, PPB_T_V, NULL, 0, w, err)) ||
         (rc = alloc_guarded(b, &in->t[IN_START_LOC], w->start_loc, sizeof(int32_t) * (n + 1), g, err,
                             "start_loc")) ||
         (rc = alloc_guarded(b, &in->t[IN_QUERY_LENS], w->query_lens, sizeof(int32_t) * n, g, err,
                             "query_lens")) ||
         (rc = alloc_guarded(b, &in->t[IN_SEQ_LENS], w->seq_lens, sizeof(int32_t) * n, g, err, "seq_lens"))))
        goto end;
    cudaError_t e = cudaStreamSynchronize(b->stream);
    if (e != cudaSuccess)
        rc = run_fail(b, err, e, "generating the inputs");
end:
    device_free(b, (void **)&valid);
    if (rc) {
        cuda_release_inputs(b);
        return rc;
    }
    in->loaded = 1;
    in->seed = w->seed;
    in->kv_layout = b->call.kv_layout;
    ppb_case_shape_key(c, in->shape, sizeof in->shape);
    return PPB_OK;
}

static int is_plugin(const ppb_backend *b) { return !b->call.builtin; }

/* Every loaded input's checksum into sum[] (0 for an input the case has none
 * of), computed on the device by the input generator's kernel in its sum mode
 * (input_fill.cuh): a change-detecting sum, not a defence against a plugin
 * built to collide, only against one that writes where it should not. On the
 * device, because before it the inputs were read back to the host and summed
 * there in every session a plugin proposal prepares, and a plugin decode
 * proposal on an H100 spent 7.4 of its 8.2 s in its check and warm-up, 1 GiB
 * of KV cache a case (docs/BENCHMARKS.md "The harness's own cost"). */
static int sum_inputs(ppb_backend *b, uint64_t sum[N_INPUTS], ppb_err *err)
{
    cudaError_t e = cudaSuccess;
    if (!b->sums && (e = cudaMalloc((void **)&b->sums, sizeof(unsigned long long) * N_INPUTS)) != cudaSuccess) {
        cudaGetLastError();
        b->sums = NULL;
        return ppb_fail(err, PPB_ENOMEM, "allocating the input checksums: %s", cudaGetErrorString(e));
    }
    ppb_kernel_spec spec = fill_spec(&b->c);
    ppb_kernel *fill;
    ppbk_resources kres;
    int rc = ppb_kernels_get(b->kernels, &spec, &fill, &kres, err);
    if (rc) {
        ppb_err_prefix(err, "the input checksum: ");
        return rc;
    }
    if ((e = cudaMemsetAsync(b->sums, 0, sizeof(unsigned long long) * N_INPUTS, b->stream)) != cudaSuccess)
        return run_fail(b, err, e, "clearing the input checksums");
    for (int k = 0; k < N_INPUTS && !rc; k++) {
        const guarded *g = &b->in.t[k];
        if (!g->ptr || g->bytes < 2)
            continue;
        ppb_fill_args a = {.data = g->ptr, .n = g->bytes / 2, .sum = b->sums + k}; /* every input is 16/32-bit */
        const ppb_launch_plan plan = fill_plan(b, a.n);
        rc = ppb_kernels_launch(fill, &plan, &a, sizeof a, b->stream, err);
    }
    unsigned long long host[N_INPUTS];
    if (!rc && (e = cudaMemcpyAsync(host, b->sums, sizeof host, cudaMemcpyDeviceToHost, b->stream)) == cudaSuccess)
        e = cudaStreamSynchronize(b->stream);
    if (rc)
        return rc;
    if (e != cudaSuccess)
        return run_fail(b, err, e, "summing the inputs");
    for (int k = 0; k < N_INPUTS; k++)
        sum[k] = b->in.t[k].ptr ? host[k] : 0;
    return PPB_OK;
}

static int cuda_prepare(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_result *res,
                        ppb_err *err)
{
    cuda_release(b);
    if (b->lost)
        return lost_fail(b, err);
    int rc = ppb_case_validate(c, err);
    if (rc)
        return rc;
    if (!w)
        return ppb_fail(err, PPB_EINPUT, "cuda backend: no workload");
    b->c = *c;
    b->w = w;
    if ((rc = bind_case(b, c, w, err)))
        return rc;
    if (res && b->call.note[0])
        snprintf(res->reason, sizeof res->reason, "%s", b->call.note);

    /* Other inputs loaded, or these changed by a kernel: freed first, so the memory check sees their room. */
    if (b->in.loaded && (b->in.tainted || !inputs_loaded_for(b, c, w)))
        cuda_release_inputs(b);
    /* Memory first: a case that cannot fit is refused before anything is allocated. */
    if ((rc = check_memory(b, c, w, err)))
        return rc;

    /* The kernels compiled or loaded now, so that never lands in a timing. */
    ppb_resources main_res = {0};
    if ((rc = ppb_impl_prepare(&b->call, &main_res, err)))
        goto fail;
    if (res) {
        res->resources = main_res;
        res->timing_is_cpu = 0;
    }

    if (!b->in.loaded && (rc = make_inputs(b, c, w, err)))
        goto fail;
    if (is_plugin(b) && !b->in.summed && (rc = sum_inputs(b, b->in.sum, err)))
        goto fail;
    b->in.summed |= is_plugin(b);
    if ((rc = alloc_guarded(b, &b->out, NULL, w->out_elems * sizeof(uint16_t), PPB_GUARD_BYTES, err, "out")))
        goto fail;
    const guarded *in = b->in.t;
    const ppb_tensor_ptrs t = {.q = in[IN_Q].ptr, .k = in[IN_K].ptr, .v = in[IN_V].ptr, .k_cache = in[IN_K_CACHE].ptr,
                               .v_cache = in[IN_V_CACHE].ptr, .out = b->out.ptr, .block_table = ints(&in[IN_BLOCK_TABLE]),
                               .start_loc = ints(&in[IN_START_LOC]), .query_lens = ints(&in[IN_QUERY_LENS]),
                               .context_lens = ints(&in[IN_CONTEXT_LENS]), .seq_lens = ints(&in[IN_SEQ_LENS]),
                               .num_blocks = w->num_blocks};
    ppb_kernel_args_point(&b->call.prefill, &b->call.decode, c->kernel, &t);
    /* What the implementation builds from the inputs before its first launch (vLLM's cache write), untimed. */
    if ((rc = ppb_impl_stage(&b->call, b->stream, err)))
        goto fail;
    cudaError_t staged = b->call.stage ? cudaStreamSynchronize(b->stream) : cudaSuccess;
    if (staged != cudaSuccess) {
        rc = run_fail(b, err, staged, "waiting for the implementation's stage");
        goto fail;
    }
    if (c->kernel == PPB_PAGED_ATTENTION) {
        ppb_decode_args *a = &b->call.decode;
        if (c->config.version == 2) {
            size_t host[3];
            v2_scratch_bytes(a, ppb_case_host_partition_size(c), sizeof(uint16_t), host);
            const size_t ht = host[0], he = host[1], hm = host[2];
            if ((rc = alloc_guarded(b, &b->tmp_out, NULL, ht, guard_for(ht, b->kernel_tmp_bytes), err, "tmp_out")) ||
                (rc = alloc_guarded(b, &b->exp_sums, NULL, he, guard_for(he, b->kernel_es_bytes), err, "exp_sums")) ||
                (rc = alloc_guarded(b, &b->max_logits, NULL, hm, guard_for(hm, b->kernel_ml_bytes), err,
                                    "max_logits")))
                goto fail;
            a->tmp_out = b->tmp_out.ptr;
            a->exp_sums = (float *)b->exp_sums.ptr;
            a->max_logits = (float *)b->max_logits.ptr;
        }
    }
    b->prepared = 1;
    return PPB_OK;
fail:
    cuda_release(b);
    return rc;
}

/* ---- run ----------------------------------------------------------------------------- */

/* One launch of the case (a v2 decode: the main kernel, then its reduce). */
static int launch_once(ppb_backend *b, ppb_err *err)
{
    return ppb_impl_launch(&b->call, b->stream, err);
}

/* After a launch error from the runtime layer, find out whether the context survived. */
static int launch_failed(ppb_backend *b, int rc, ppb_err *err)
{
    if (rc == PPB_EREFUSED || rc == PPB_EINPUT)
        return rc;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(b->stream);
    if (e != cudaSuccess) {
        ppb_err detail;
        run_fail(b, &detail, e, "kernel launch");
        return ppb_fail(err, PPB_EFAIL, "%s; %s", err->msg, detail.msg);
    }
    return rc;
}

/* What g's zones say (the front one, the back one, or both), read back. */
static int read_zones(ppb_backend *b, const guarded *g, int front, int back, ppb_guard_hits *h, ppb_err *err)
{
    *h = (ppb_guard_hits){0, 0, 0};
    size_t nf = front && g->base ? g->front : 0, nb = back && g->base ? g->back : 0;
    if (!nf && !nb)
        return PPB_OK;
    unsigned char *host = malloc(nf + nb);
    if (!host)
        return ppb_fail(err, PPB_ENOMEM, "out of host memory reading a guard zone");
    cudaError_t e = cudaSuccess;
    if (nf)
        e = cudaMemcpy(host, g->base, nf, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && nb)
        e = cudaMemcpy(host + nf, g->ptr + g->bytes, nb, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        *h = ppb_guard_read(nf ? host : NULL, nf, nb ? host + nf : NULL, nb);
    free(host);
    return e == cudaSuccess ? PPB_OK : run_fail(b, err, e, "reading a guard zone");
}

/* Before the checked launch: canaries back in the guard zones, and the
 * scratch itself set to NaN bits (0xFF.. is NaN in fp16, bf16 and fp32), so a
 * reduce that reads a partition nobody wrote produces NaN, not stale values. */
static cudaError_t reset_scratch(const guarded *g, cudaStream_t stream)
{
    if (!g->ptr)
        return cudaSuccess;
    cudaError_t e = cudaMemsetAsync(g->ptr, 0xFF, g->bytes, stream);
    return e == cudaSuccess ? fill_zones(g, stream) : e;
}

/* After the checked launch: every buffer's zones (the v2 scratch's back zones
 * are the mismatch check's), and a plugin's inputs against their checksums.
 * Inputs a kernel changed or wrote around are made anew for the next case. */
static int check_outside_writes(ppb_backend *b, ppb_result *res, ppb_err *err)
{
    ppb_guard_report r;
    ppb_guard_report_init(&r);
    ppb_guard_hits h;
    int rc = read_zones(b, &b->out, 1, 1, &h, err);
    if (rc)
        return rc;
    ppb_guard_report_add(&r, "out", &h);
    const guarded *scratch[3] = {&b->tmp_out, &b->exp_sums, &b->max_logits};
    const char *scratch_names[3] = {"tmp_out", "exp_sums", "max_logits"};
    for (int i = 0; i < 3; i++) {
        if ((rc = read_zones(b, scratch[i], 1, 0, &h, err)))
            return rc;
        ppb_guard_report_add(&r, scratch_names[i], &h);
    }
    for (int k = 0; k < N_INPUTS; k++) {
        if ((rc = read_zones(b, &b->in.t[k], 1, 1, &h, err)))
            return rc;
        ppb_guard_report_add(&r, input_names[k], &h);
    }
    if (is_plugin(b)) {
        uint64_t now[N_INPUTS];
        if ((rc = sum_inputs(b, now, err)))
            return rc;
        for (int k = 0; k < N_INPUTS; k++)
            if (now[k] != b->in.sum[k])
                ppb_guard_report_input_changed(&r, input_names[k]);
    }
    if (ppb_guard_report_finish(&r, b->call.impl->name, res))
        b->in.tainted = 1;
    return PPB_OK;
}

static int cuda_run_checked(ppb_backend *b, uint16_t *out, ppb_result *res, ppb_err *err)
{
    if (b->lost)
        return lost_fail(b, err);
    if (!b->prepared)
        return ppb_fail(err, PPB_EINPUT, "cuda backend: run before prepare");
    const ppb_workload *w = b->w;
    size_t out_bytes = w->out_elems * sizeof(uint16_t);
    /* Poison the output: PPB_POISON_BITS is 0x7E7E, one byte pattern. */
    cudaError_t e = cudaMemsetAsync(b->out.ptr, (int)(PPB_POISON_BITS & 0xFF), out_bytes, b->stream);
    if (e == cudaSuccess)
        e = fill_zones(&b->out, b->stream);
    for (int k = 0; k < N_INPUTS && e == cudaSuccess; k++)
        e = fill_zones(&b->in.t[k], b->stream);
    if (e == cudaSuccess && (e = reset_scratch(&b->tmp_out, b->stream)) == cudaSuccess &&
        (e = reset_scratch(&b->exp_sums, b->stream)) == cudaSuccess)
        e = reset_scratch(&b->max_logits, b->stream);
    if (e != cudaSuccess)
        return run_fail(b, err, e, "poisoning the output");
    /* timed: the warm-up counts this launch (ppb_measure_case) */
    if ((e = cudaEventRecord(b->sample_start[0], b->stream)) != cudaSuccess)
        return run_fail(b, err, e, "cudaEventRecord");
    int rc = launch_once(b, err);
    if (rc)
        return launch_failed(b, rc, err);
    if ((e = cudaEventRecord(b->sample_stop[0], b->stream)) != cudaSuccess ||
        (e = cudaStreamSynchronize(b->stream)) != cudaSuccess || (e = cudaGetLastError()) != cudaSuccess)
        return run_fail(b, err, e, "running the kernel");
    float launch_ms = 0;
    if (res && cudaEventElapsedTime(&launch_ms, b->sample_start[0], b->sample_stop[0]) == cudaSuccess)
        res->checked_launch_ms = launch_ms;
    if ((e = cudaMemcpy(out, b->out.ptr, out_bytes, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return run_fail(b, err, e, "copying the output back");

    const ppb_config *k = &b->c.config;
    int mismatch = ppb_case_partition_mismatch(&b->c);
    if (res && b->tmp_out.ptr) {
        ppb_overrun *ov = &res->overrun;
        memset(ov, 0, sizeof *ov);
        ppb_guard_hits h1, h2, h3;
        if ((rc = read_zones(b, &b->tmp_out, 0, 1, &h1, err)) || (rc = read_zones(b, &b->exp_sums, 0, 1, &h2, err)) ||
            (rc = read_zones(b, &b->max_logits, 0, 1, &h3, err)))
            return rc;
        ov->tmp_out_bytes = h1.past;
        ov->exp_sums_bytes = h2.past;
        ov->max_logits_bytes = h3.past;
        ov->guard_bytes_changed = h1.changed + h2.changed + h3.changed;
        ov->detected = ov->guard_bytes_changed > 0;
        char head[128];
        if (mismatch)
            snprintf(head, sizeof head, "PARTITION_SIZE mismatch: host %d, kernel %d", k->host_partition_size,
                     k->partition_size);
        else
            snprintf(head, sizeof head, "v2 scratch overrun with matching partition sizes (%d)",
                     k->partition_size);
        if (ov->detected) {
            snprintf(res->reason, sizeof res->reason,
                     "%s: kernel wrote %lld B past tmp_out, %lld B past exp_sums, %lld B past max_logits "
                     "(guard zones caught it: %lld canary bytes changed)",
                     head, ov->tmp_out_bytes, ov->exp_sums_bytes, ov->max_logits_bytes,
                     ov->guard_bytes_changed);
        } else if (mismatch) {
            size_t total = b->tmp_out.bytes + b->exp_sums.bytes + b->max_logits.bytes;
            int used = b->kernel_parts < b->host_parts ? b->kernel_parts : b->host_parts;
            snprintf(res->reason, sizeof res->reason,
                     "%s: host buffers sized for %d partitions, kernel indexes %d: %zu B of scratch, %.0f%% "
                     "used; no overrun",
                     head, b->host_parts, b->kernel_parts, total,
                     b->host_parts ? 100.0 * used / b->host_parts : 0.0);
        }
    }
    return res ? check_outside_writes(b, res, err) : PPB_OK;
}

/* ---- timing -------------------------------------------------------------------------- */

static int flush_l2(ppb_backend *b, ppb_err *err)
{
    cudaError_t e;
    if (!b->flush) {
        b->flush_bytes = ppb_l2_flush_bytes(b->info.l2_bytes);
        if ((e = cudaMalloc(&b->flush, b->flush_bytes)) != cudaSuccess) {
            cudaGetLastError();
            b->flush = NULL;
            return ppb_fail(err, PPB_ENOMEM, "cudaMalloc of the %zu B cold-L2 buffer: %s", b->flush_bytes,
                            cudaGetErrorString(e));
        }
    }
    /* A new value each round: no write is redundant, every line is evicted. */
    b->flush_round++;
    e = cudaMemsetAsync(b->flush, (int)(b->flush_round & 0xFF), b->flush_bytes, b->stream);
    return e == cudaSuccess ? PPB_OK : run_fail(b, err, e, "flushing L2");
}

/* n samples, each between its own pair of events (after the flush when cold),
 * queued back to back and waited for once. */
static int cuda_time_samples(ppb_backend *b, int launches, int cold, int n, double *ms, ppb_err *err)
{
    if (b->lost)
        return lost_fail(b, err);
    if (!b->prepared)
        return ppb_fail(err, PPB_EINPUT, "cuda backend: timing before prepare");
    if (launches < 1)
        return ppb_fail(err, PPB_EINPUT, "cuda backend: launches must be >= 1 (got %d)", launches);
    if (n < 1 || n > PPB_SAMPLES_PER_SYNC_MAX)
        return ppb_fail(err, PPB_EINPUT, "cuda backend: %d samples at once (1 .. %d)", n, PPB_SAMPLES_PER_SYNC_MAX);
    ppb_kernels_pause(b->kernels);   /* no module loads beside a timing (resumed at release) */
    int rc;
    cudaError_t e;
    const int flush = cold && ppb_cold_sample_needs_flush(&b->c, b->info.l2_bytes);
    for (int s = 0; s < n; s++) {
        if (flush && (rc = flush_l2(b, err)) != PPB_OK)
            return rc;
        if ((e = cudaEventRecord(b->sample_start[s], b->stream)) != cudaSuccess)
            return run_fail(b, err, e, "cudaEventRecord");
        for (int i = 0; i < launches; i++)
            if ((rc = launch_once(b, err)) != PPB_OK)
                return launch_failed(b, rc, err);
        if ((e = cudaEventRecord(b->sample_stop[s], b->stream)) != cudaSuccess)
            return run_fail(b, err, e, "cudaEventRecord");
    }
    if ((e = cudaEventSynchronize(b->sample_stop[n - 1])) != cudaSuccess)
        return run_fail(b, err, e, "timing the kernel");
    for (int s = 0; s < n; s++) {
        float elapsed = 0;
        if ((e = cudaEventElapsedTime(&elapsed, b->sample_start[s], b->sample_stop[s])) != cudaSuccess)
            return run_fail(b, err, e, "cudaEventElapsedTime");
        ms[s] = (double)elapsed / launches;
    }
    return PPB_OK;
}

static int cuda_time_sample(ppb_backend *b, int launches, int cold, double *ms, ppb_err *err)
{
    return cuda_time_samples(b, launches, cold, 1, ms, err);
}

const ppb_backend_ops ppb_backend_cuda = {
    .name = "cuda",
    .makes_inputs = 1,
    .open = cuda_open,
    .close = cuda_close,
    .device_info = cuda_device_info,
    .environment = cuda_environment,
    .refuse = cuda_refuse,
    .prefetch = cuda_prefetch,
    .prepare = cuda_prepare,
    .run_checked = cuda_run_checked,
    .time_sample = cuda_time_sample,
    .time_samples = cuda_time_samples,
    .release = cuda_release,
    .release_inputs = cuda_release_inputs,
};

#endif /* PPB_HAVE_CUDA */
