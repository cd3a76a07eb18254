#include "ppb_kernels.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "attention_args.h"
#include "grow.h"
#include "hash.h"
#include "kernels_internal.h"

/* Threads that load prefetched kernels: module loads overlap the run's other work
 * instead of adding up at each case's first use (about 1.5 ms each on the H200,
 * ~28 per decode.yaml run). */
#define PPB_KERNEL_LOADERS 4

struct ppb_kernel {
    ppb_kernel_spec spec;
    int mechanism;             /* PPB_KMECH_NVRTC or PPB_KMECH_AOT */
    void *module, *function;   /* NVRTC: CUmodule, CUfunction */
    const void *aot_fn;        /* AOT: the __global__ function's host stub */
    ppbk_resources res;
    int dynamic_smem_attr;     /* current MAX_DYNAMIC_SHARED_SIZE_BYTES (0 = default 48 KB) */
    long smem_limit;           /* static + dynamic may not exceed this */
    int threads_limit;
};

struct ppb_kernels {
    int mechanism;
    int compile_only;
    int device;
    int cc;                    /* device compute capability (or the requested arch) */
    int arch;                  /* what NVRTC compiles for */
    int arch_lowered;
    int warp_size;
    long smem_limit;           /* min(device opt-in, cap) */
    int threads_limit;
    char cache_dir[4096];
    int cache_ok;              /* the folder exists and is writable enough to try */
    ppb_kernel_source *sources;     /* owned copies when read from a folder */
    int n_sources;
    int sources_owned;
    char sources_hash[17];
    char source_dir[4096];
    /* Loaded kernels and the loader threads (ppb_kernels_prefetch), under load_lock:
     * a spec is loaded by one thread at a time (loading[]), the others wait for it. */
    pthread_mutex_t load_lock;
    pthread_cond_t load_done;
    ppb_kernel **loaded;
    int n_loaded, cap_loaded;
    ppb_kernel_spec loading[PPB_KERNEL_LOADERS + 1];   /* slot 0: the caller of get; 1..: loaders */
    int loading_used[PPB_KERNEL_LOADERS + 1];
    ppb_kernel_spec *queue;    /* prefetched specs; the loaders take them in order from queue_next */
    int n_queue, cap_queue, queue_next;
    void *context;             /* the CUDA context the loaders make current */
    pthread_t loaders[PPB_KERNEL_LOADERS];
    int loader_started[PPB_KERNEL_LOADERS];   /* a thread to join */
    int loader_running[PPB_KERNEL_LOADERS];   /* it has not found the queue empty yet */
    int paused;                /* ppb_kernels_pause: loaders start nothing new */
    int stopping;
    pthread_mutex_t lock;      /* statistics (compile may run on several threads) */
    int hits, misses;
    double compile_seconds;
};


const ppb_kernel_spec *ppb_kernel_get_spec(const ppb_kernel *h) { return &h->spec; }

static int cuda_fail(ppb_err *err, cudaError_t e, const char *what)
{
    return ppb_fail(err, e == cudaErrorMemoryAllocation ? PPB_ENOMEM : PPB_EFAIL, "%s: %s (%s)", what,
                    cudaGetErrorString(e), cudaGetErrorName(e));
}

/* ------------------------------------------------------------- sources -- */

#ifdef PPB_HAVE_NVRTC

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ppb_kernel_source *)a)->name, ((const ppb_kernel_source *)b)->name);
}

/* Read every *.cuh and *.h of `dir` (not recursive). */
static int read_source_dir(ppb_kernels *k, const char *dir, ppb_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return ppb_fail(err, PPB_EIO, "kernel source folder %s: %s", dir, strerror(errno));
    int rc = PPB_OK, cap = 0;
    struct dirent *ent;
    while (rc == PPB_OK && (ent = readdir(d)) != NULL) {
        if (!has_suffix(ent->d_name, ".cuh") && !has_suffix(ent->d_name, ".h"))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) {
            rc = ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
            break;
        }
        char *text = NULL;
        long size = -1;
        if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            text = malloc((size_t)size + 1);
            if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
                free(text);
                text = NULL;
            }
        }
        fclose(f);
        if (!text) {
            rc = ppb_fail(err, PPB_EIO, "cannot read %s", path);
            break;
        }
        text[size] = '\0';
        if (ppb_grow((void **)&k->sources, &cap, k->n_sources, sizeof *k->sources, 16) != PPB_OK) {
            free(text);
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory reading kernel sources");
            break;
        }
        char *name = strdup(ent->d_name);
        if (!name) {
            free(text);
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory reading kernel sources");
            break;
        }
        k->sources[k->n_sources].name = name;
        k->sources[k->n_sources].text = text;
        k->sources[k->n_sources].len = (size_t)size;
        k->n_sources++;
    }
    closedir(d);
    if (rc == PPB_OK && k->n_sources == 0)
        rc = ppb_fail(err, PPB_EINPUT, "kernel source folder %s holds no .cuh or .h files", dir);
    /* The folder overlays the embedded sources: files it lacks (attention_args.h
     * next to a stand-in kernel, say) come from the build. */
    for (int e = 0; rc == PPB_OK && e < ppb_embedded_kernel_source_count; e++) {
        const ppb_kernel_source *src = &ppb_embedded_kernel_sources[e];
        int present = 0;
        for (int i = 0; i < k->n_sources && !present; i++)
            present = strcmp(k->sources[i].name, src->name) == 0;
        if (present)
            continue;
        if (ppb_grow((void **)&k->sources, &cap, k->n_sources, sizeof *k->sources, 16) != PPB_OK) {
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory reading kernel sources");
            break;
        }
        char *name = strdup(src->name), *text = malloc(src->len + 1);
        if (!name || !text) {
            free(name);
            free(text);
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory reading kernel sources");
            break;
        }
        memcpy(text, src->text, src->len + 1);
        k->sources[k->n_sources].name = name;
        k->sources[k->n_sources].text = text;
        k->sources[k->n_sources].len = src->len;
        k->n_sources++;
    }
    if (rc == PPB_OK)
        qsort(k->sources, (size_t)k->n_sources, sizeof *k->sources, by_name);
    return rc;
}

static void hash_sources(ppb_kernels *k)
{
    uint64_t h = PPB_FNV1A64_OFFSET;
    for (int i = 0; i < k->n_sources; i++) {
        h = ppb_fnv1a64_update(h, k->sources[i].name, strlen(k->sources[i].name) + 1);
        uint64_t len = k->sources[i].len;
        h = ppb_fnv1a64_update(h, &len, sizeof len);
        h = ppb_fnv1a64_update(h, k->sources[i].text, k->sources[i].len);
    }
    ppb_fnv1a64_hex(h, k->sources_hash);
}
#endif /* PPB_HAVE_NVRTC */

/* ---------------------------------------------------------------- open -- */

static int pick_mechanism(int requested, int *out, ppb_err *err)
{
    if (requested == PPB_KMECH_AUTO) {
        const char *env = getenv("PPBENCH_KERNEL_MECHANISM");
        if (env && strcmp(env, "nvrtc") == 0)
            requested = PPB_KMECH_NVRTC;
        else if (env && strcmp(env, "aot") == 0)
            requested = PPB_KMECH_AOT;
        else if (env && *env && strcmp(env, "auto") != 0)
            return ppb_fail(err, PPB_EINPUT, "PPBENCH_KERNEL_MECHANISM='%s': use nvrtc, aot or auto", env);
    }
#ifdef PPB_HAVE_NVRTC
    const int have_nvrtc = 1;
#else
    const int have_nvrtc = 0;
#endif
#ifdef PPB_HAVE_AOT
    const int have_aot = 1;
#else
    const int have_aot = 0;
#endif
    if (requested == PPB_KMECH_AUTO)
        requested = have_nvrtc ? PPB_KMECH_NVRTC : PPB_KMECH_AOT;
    if (requested == PPB_KMECH_NVRTC && !have_nvrtc)
        return ppb_fail(err, PPB_EREFUSED, "this build has no NVRTC (configure with PPB_NVRTC=ON)");
    if (requested == PPB_KMECH_AOT && !have_aot)
        return ppb_fail(err, PPB_EREFUSED,
                        "this build has no ahead-of-time kernels (configure with PPB_AOT_CONFIGS=FILE)");
    *out = requested;
    return PPB_OK;
}

static int query_device(ppb_kernels *k, const ppb_kernels_options *opt, ppb_err *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return ppb_fail(err, PPB_EFAIL, "no CUDA device: %s", cudaGetErrorString(e));
    if (opt->device_index < 0 || opt->device_index >= count)
        return ppb_fail(err, PPB_EINPUT, "CUDA device %d does not exist (%d found)", opt->device_index,
                        count);
    k->device = opt->device_index;
    if ((e = cudaSetDevice(k->device)) != cudaSuccess)
        return cuda_fail(err, e, "cudaSetDevice");
    /* Make the primary context current: the driver API loads modules into it. */
    if ((e = cudaFree(NULL)) != cudaSuccess)
        return cuda_fail(err, e, "creating the CUDA context");
    int major = 0, minor = 0, warp = 0, optin = 0, plain = 0, threads = 0;
    if ((e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, k->device)) ||
        (e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, k->device)) ||
        (e = cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, k->device)) ||
        (e = cudaDeviceGetAttribute(&plain, cudaDevAttrMaxSharedMemoryPerBlock, k->device)) ||
        (e = cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerBlock, k->device)))
        return cuda_fail(err, e, "cudaDeviceGetAttribute");
    /* Devices without opt-in (and toolchains that do not report it) keep the plain limit. */
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, k->device) != cudaSuccess ||
        optin < plain) {
        cudaGetLastError();
        optin = plain;
    }
    k->cc = major * 10 + minor;
    k->warp_size = warp;
    k->smem_limit = optin;
    k->threads_limit = threads;
    return PPB_OK;
}

int ppb_kernels_open(ppb_kernels **out, const ppb_kernels_options *opt, ppb_err *err)
{
    *out = NULL;
    ppb_kernels *k = calloc(1, sizeof *k);
    if (!k)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    pthread_mutex_init(&k->lock, NULL);
    pthread_mutex_init(&k->load_lock, NULL);
    pthread_cond_init(&k->load_done, NULL);
    int rc = pick_mechanism(opt->mechanism, &k->mechanism, err);
    if (rc)
        goto fail;
    k->compile_only = opt->compile_only;
    if (k->compile_only) {
        if (k->mechanism != PPB_KMECH_NVRTC) {
            rc = ppb_fail(err, PPB_EREFUSED, "compile-only needs NVRTC");
            goto fail;
        }
        k->cc = opt->arch > 0 ? opt->arch : 90;
        k->warp_size = opt->warp_size > 0 ? opt->warp_size : 32;
        k->smem_limit = 0;
    } else {
        rc = query_device(k, opt, err);
        if (rc)
            goto fail;
    }
    if (opt->smem_cap > 0 && (k->smem_limit == 0 || opt->smem_cap < k->smem_limit))
        k->smem_limit = opt->smem_cap;

    if (k->mechanism == PPB_KMECH_AOT) {
#ifdef PPB_HAVE_AOT
        if (ppb_aot_warp_size() != k->warp_size) {
            rc = ppb_fail(err, PPB_EREFUSED,
                          "the ahead-of-time kernels were built with PPB_WARP_SIZE=%d but the device's "
                          "warp is %d lanes: rebuild with -DPPB_WARP_SIZE=%d",
                          ppb_aot_warp_size(), k->warp_size, k->warp_size);
            goto fail;
        }
#endif
        k->arch = k->cc;
    }
#ifdef PPB_HAVE_NVRTC
    if (k->mechanism == PPB_KMECH_NVRTC) {
        rc = ppb_nvrtc_pick_arch(k->cc, k->compile_only, &k->arch, &k->arch_lowered, err);
        if (rc)
            goto fail;
        const char *dir = opt->source_dir;
        if (!dir || !*dir)
            dir = getenv("PPBENCH_KERNEL_SOURCE_DIR");
        if (dir && *dir) {
            k->sources_owned = 1;
            snprintf(k->source_dir, sizeof k->source_dir, "%s", dir);
            rc = read_source_dir(k, dir, err);
            if (rc)
                goto fail;
        } else {
            k->sources = (ppb_kernel_source *)ppb_embedded_kernel_sources;
            k->n_sources = ppb_embedded_kernel_source_count;
        }
        hash_sources(k);
        if (!opt->no_cache) {
            rc = ppb_kernel_cache_dir(opt->cache_dir, k->cache_dir, sizeof k->cache_dir, err);
            if (rc)
                goto fail;
            ppb_err cerr;
            /* No cache is slower, not wrong: compile every time if the folder cannot be made. */
            k->cache_ok = ppb_kernel_cache_prepare(k->cache_dir, &cerr) == PPB_OK;
        }
    }
#endif
    *out = k;
    return PPB_OK;
fail:
    ppb_kernels_close(k);
    return rc;
}

void ppb_kernels_close(ppb_kernels *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->load_lock);
    k->stopping = 1;   /* the loaders finish the kernel in hand and stop, paused or not */
    pthread_cond_broadcast(&k->load_done);
    pthread_mutex_unlock(&k->load_lock);
    for (int i = 0; i < PPB_KERNEL_LOADERS; i++)
        if (k->loader_started[i])
            pthread_join(k->loaders[i], NULL);
    free(k->queue);
    for (int i = 0; i < k->n_loaded; i++) {
#ifdef PPB_HAVE_NVRTC
        if (k->loaded[i]->mechanism == PPB_KMECH_NVRTC)
            ppb_cudrv_unload_module(k->loaded[i]->module);
#endif
        free(k->loaded[i]);
    }
    free(k->loaded);
    if (k->sources_owned) {
        for (int i = 0; i < k->n_sources; i++) {
            free((char *)k->sources[i].name);
            free((char *)k->sources[i].text);
        }
        free(k->sources);
    }
    pthread_mutex_destroy(&k->lock);
    pthread_mutex_destroy(&k->load_lock);
    pthread_cond_destroy(&k->load_done);
    free(k);
}

void ppb_kernels_get_info(const ppb_kernels *k, ppb_kernels_info *info)
{
    memset(info, 0, sizeof *info);
    info->mechanism = k->mechanism == PPB_KMECH_NVRTC ? "nvrtc" : "aot";
#ifdef PPB_HAVE_NVRTC
    if (k->mechanism == PPB_KMECH_NVRTC) {
        int major, minor;
        ppb_nvrtc_version(&major, &minor);
        snprintf(info->compiler, sizeof info->compiler, "NVRTC %d.%d", major, minor);
    }
#endif
#ifdef PPB_HAVE_AOT
    if (k->mechanism == PPB_KMECH_AOT)
        snprintf(info->compiler, sizeof info->compiler, "ahead of time, %d kernels", ppb_aot_count());
#endif
    info->arch = k->arch;
    info->arch_note_lowered = k->arch_lowered;
    info->warp_size = k->warp_size;
    info->smem_optin_limit = k->smem_limit;
    snprintf(info->cache_dir, sizeof info->cache_dir, "%s", k->cache_ok ? k->cache_dir : "");
    memcpy(info->sources_hash, k->sources_hash, sizeof info->sources_hash);
    memcpy(info->source_dir, k->source_dir, sizeof info->source_dir);
    pthread_mutex_lock((pthread_mutex_t *)&k->load_lock);   /* never held together with `lock` */
    info->loaded = k->n_loaded;
    pthread_mutex_unlock((pthread_mutex_t *)&k->load_lock);
    pthread_mutex_lock((pthread_mutex_t *)&k->lock);
    info->cache_hits = k->hits;
    info->cache_misses = k->misses;
    info->compile_seconds = k->compile_seconds;
    pthread_mutex_unlock((pthread_mutex_t *)&k->lock);
}

/* ------------------------------------------------------------- compile -- */

static int check_spec(const ppb_kernel_spec *s, ppb_err *err)
{
    char text[PPB_KERNEL_SPEC_TEXT_MAX];
    ppb_kernel_spec_format(s, text, sizeof text);
    if (s->kind < PPB_KSPEC_PREFILL || s->kind > PPB_KSPEC_INPUT_FILL)
        return ppb_fail(err, PPB_EINPUT, "bad kernel kind %d", s->kind);
    if (s->dtype != PPB_KDTYPE_FP16 && s->dtype != PPB_KDTYPE_BF16)
        return ppb_fail(err, PPB_EINPUT, "%s: bad dtype", text);
    if (s->kind == PPB_KSPEC_INPUT_FILL)
        return PPB_OK;
    if (s->head_dim <= 0 || (s->kind == PPB_KSPEC_PREFILL && (s->block_m <= 0 || s->block_n <= 0 ||
                                                               s->num_warps <= 0)) ||
        (s->kind != PPB_KSPEC_PREFILL && s->num_threads <= 0) ||
        (s->kind == PPB_KSPEC_DECODE && s->page_size <= 0) ||
        (s->kind == PPB_KSPEC_DECODE_REDUCE && s->partition_size <= 0))
        return ppb_fail(err, PPB_EINPUT, "%s: incomplete kernel spec", text);
    return PPB_OK;
}

static int nvrtc_build_for(ppb_kernels *k, const ppb_kernel_spec *spec, ppb_kernel_cache_entry *e,
                           ppb_kernel_compile_info *info, ppb_err *err)
{
#ifdef PPB_HAVE_NVRTC
    if (spec->use_mma && k->arch < PPB_MMA_MIN_CC)
        return ppb_fail(err, PPB_EREFUSED, "the mma path needs sm_%d or newer; compiling for sm_%d",
                        PPB_MMA_MIN_CC, k->arch);
    if (spec->use_mma == PPB_KSPEC_MMA_WGMMA && k->arch != PPB_WGMMA_CC)
        return ppb_fail(err, PPB_EREFUSED, "the wgmma path exists on sm_%d only (sm_%da); compiling for sm_%d",
                        PPB_WGMMA_CC, PPB_WGMMA_CC, k->arch);
    ppb_nvrtc_request rq = {
        .sources = k->sources,
        .n_sources = k->n_sources,
        .sources_hash = k->sources_hash,
        .spec = spec,
        .arch = k->arch,
        .warp_size = k->warp_size,
        .cache_dir = k->cache_ok ? k->cache_dir : NULL,
    };
    int rc = ppb_nvrtc_build(&rq, e, info, err);
    if (rc == PPB_OK) {
        pthread_mutex_lock(&k->lock);
        if (info->from_cache)
            k->hits++;
        else
            k->misses++;
        k->compile_seconds += info->seconds;
        pthread_mutex_unlock(&k->lock);
    }
    return rc;
#else
    (void)k; (void)spec; (void)e; (void)info;
    return ppb_fail(err, PPB_EREFUSED, "this build has no NVRTC");
#endif
}

int ppb_kernels_compile(ppb_kernels *k, const ppb_kernel_spec *spec, ppb_kernel_compile_info *info,
                        ppb_err *err)
{
    int rc = check_spec(spec, err);
    if (rc)
        return rc;
    if (k->mechanism != PPB_KMECH_NVRTC)
        return ppb_fail(err, PPB_EREFUSED, "compiling needs NVRTC (this runtime is ahead of time)");
    ppb_kernel_cache_entry e = {0};
    rc = nvrtc_build_for(k, spec, &e, info, err);
    free(e.image);
    return rc;
}

/* ----------------------------------------------------------------- get -- */

/* Load one kernel (compile or read the cache, load the module); no lock held. */
static int load_kernel(ppb_kernels *k, const ppb_kernel_spec *spec, ppb_kernel **out, ppb_err *err)
{
    int rc = PPB_OK;
    ppb_kernel *h = calloc(1, sizeof *h);
    if (!h)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    h->spec = *spec;
    h->mechanism = k->mechanism;
    h->smem_limit = k->smem_limit;
    h->threads_limit = k->threads_limit;
    if (k->mechanism == PPB_KMECH_NVRTC) {
#ifdef PPB_HAVE_NVRTC
        ppb_kernel_cache_entry e;
        ppb_kernel_compile_info info;
        rc = nvrtc_build_for(k, spec, &e, &info, err);
        if (rc == PPB_OK) {
            rc = ppb_cudrv_load_module(e.image, e.lowered_name, &h->module, &h->function, err);
            free(e.image);
        }
        if (rc == PPB_OK)
            rc = ppb_cudrv_resources(h->function, &h->res, err);
#endif
    } else {
#ifdef PPB_HAVE_AOT
        h->aot_fn = ppb_aot_find(spec);
        if (!h->aot_fn) {
            char text[PPB_KERNEL_SPEC_TEXT_MAX];
            ppb_kernel_spec_format(spec, text, sizeof text);
            rc = ppb_fail(err, PPB_EREFUSED, "%s: not built ahead of time; add it to PPB_AOT_CONFIGS", text);
        } else {
            rc = ppb_aot_resources(h->aot_fn, &h->res, err);
        }
#endif
    }
    if (rc) {
#ifdef PPB_HAVE_NVRTC
        ppb_cudrv_unload_module(h->module);
#endif
        free(h);
        return rc;
    }
    *out = h;
    return PPB_OK;
}

/* Under load_lock. */
static ppb_kernel *find_loaded(const ppb_kernels *k, const ppb_kernel_spec *spec)
{
    for (int i = 0; i < k->n_loaded; i++)
        if (ppb_kernel_spec_equal(&k->loaded[i]->spec, spec))
            return k->loaded[i];
    return NULL;
}

/* Under load_lock: whether some thread is loading the spec now. */
static int being_loaded(const ppb_kernels *k, const ppb_kernel_spec *spec)
{
    for (int i = 0; i <= PPB_KERNEL_LOADERS; i++)
        if (k->loading_used[i] && ppb_kernel_spec_equal(&k->loading[i], spec))
            return 1;
    return 0;
}

/* Load `spec` as slot `slot` of loading[] (taken under load_lock, which is
 * released while loading) and add it to the loaded kernels. */
static int load_as(ppb_kernels *k, int slot, const ppb_kernel_spec *spec, ppb_kernel **out, ppb_err *err)
{
    k->loading[slot] = *spec;
    k->loading_used[slot] = 1;
    pthread_mutex_unlock(&k->load_lock);
    ppb_kernel *h = NULL;
    int rc = load_kernel(k, spec, &h, err);
    pthread_mutex_lock(&k->load_lock);
    k->loading_used[slot] = 0;
    if (rc == PPB_OK && ppb_grow((void **)&k->loaded, &k->cap_loaded, k->n_loaded, sizeof *k->loaded, 8) != PPB_OK) {
#ifdef PPB_HAVE_NVRTC
        ppb_cudrv_unload_module(h->module);
#endif
        free(h);
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    if (rc == PPB_OK)
        k->loaded[k->n_loaded++] = h;
    pthread_cond_broadcast(&k->load_done);
    *out = h;
    return rc;
}

int ppb_kernels_get(ppb_kernels *k, const ppb_kernel_spec *spec, ppb_kernel **handle,
                    ppbk_resources *res, ppb_err *err)
{
    *handle = NULL;
    int rc = check_spec(spec, err);
    if (rc)
        return rc;
    if (k->compile_only)
        return ppb_fail(err, PPB_EREFUSED, "this kernel runtime is compile-only (no device)");
    pthread_mutex_lock(&k->load_lock);
    ppb_kernel *h;
    /* Wait while a loader has this kernel in hand, or another caller is loading (slot 0 is the callers'). */
    while (!(h = find_loaded(k, spec)) && (being_loaded(k, spec) || k->loading_used[0]))
        pthread_cond_wait(&k->load_done, &k->load_lock);
    if (!h)
        rc = load_as(k, 0, spec, &h, err);   /* a loader that failed left it to us, with the error */
    pthread_mutex_unlock(&k->load_lock);
    if (rc)
        return rc;
    *handle = h;
    if (res)
        *res = h->res;
    return PPB_OK;
}

/* ------------------------------------------------------------ prefetch -- */

typedef struct loader_arg {
    ppb_kernels *k;
    int slot;
} loader_arg;

static void *loader_main(void *p)
{
    loader_arg a = *(loader_arg *)p;
    free(p);
    ppb_kernels *k = a.k;
    ppb_err ignored;
    int usable = ppb_cudrv_use_context(k->context, &ignored) == PPB_OK;
    pthread_mutex_lock(&k->load_lock);
    while (usable && !k->stopping && k->queue_next < k->n_queue) {
        if (k->paused) {
            pthread_cond_wait(&k->load_done, &k->load_lock);
            continue;
        }
        const ppb_kernel_spec spec = k->queue[k->queue_next++];
        ppb_kernel *h;
        /* Failures stay unloaded: the case's own get tries again and reports them. */
        if (!find_loaded(k, &spec) && !being_loaded(k, &spec))
            load_as(k, a.slot, &spec, &h, &ignored);
    }
    k->loader_running[a.slot - 1] = 0;
    pthread_cond_broadcast(&k->load_done);
    pthread_mutex_unlock(&k->load_lock);
    return NULL;
}

void ppb_kernels_prefetch(ppb_kernels *k, const ppb_kernel_spec *specs, int n)
{
#ifdef PPB_HAVE_NVRTC
    if (k->compile_only || k->mechanism != PPB_KMECH_NVRTC || n <= 0)
        return;
    pthread_mutex_lock(&k->load_lock);
    if (!k->context)
        k->context = ppb_cudrv_current_context();
    for (int i = 0; i < n && k->context; i++) {
        ppb_err ignored;
        if (check_spec(&specs[i], &ignored) == PPB_OK &&
            ppb_grow((void **)&k->queue, &k->cap_queue, k->n_queue, sizeof *k->queue, 16) == PPB_OK)
            k->queue[k->n_queue++] = specs[i];
    }
    /* A loader stops when it finds the queue empty; one that has is joined
     * (it holds no lock past that point) and started again for new work. */
    for (int i = 0; i < PPB_KERNEL_LOADERS && k->context && k->queue_next < k->n_queue; i++) {
        if (k->loader_running[i])
            continue;
        if (k->loader_started[i])
            pthread_join(k->loaders[i], NULL);
        k->loader_started[i] = 0;
        loader_arg *a = malloc(sizeof *a);
        if (!a)
            break;
        *a = (loader_arg){k, i + 1};
        if (pthread_create(&k->loaders[i], NULL, loader_main, a) != 0) {
            free(a);
            break;
        }
        k->loader_started[i] = k->loader_running[i] = 1;
    }
    pthread_mutex_unlock(&k->load_lock);
#else
    (void)k; (void)specs; (void)n;
#endif
}

void ppb_kernels_pause(ppb_kernels *k)
{
    pthread_mutex_lock(&k->load_lock);
    k->paused = 1;
    for (int i = 1; i <= PPB_KERNEL_LOADERS; i++)
        while (k->loading_used[i])
            pthread_cond_wait(&k->load_done, &k->load_lock);
    pthread_mutex_unlock(&k->load_lock);
}

void ppb_kernels_resume(ppb_kernels *k)
{
    pthread_mutex_lock(&k->load_lock);
    k->paused = 0;
    pthread_cond_broadcast(&k->load_done);
    pthread_mutex_unlock(&k->load_lock);
}

/* -------------------------------------------------------------- launch -- */

int ppb_kernels_launch(ppb_kernel *h, const ppb_launch_plan *plan, const void *args,
                       size_t args_size, void *stream, ppb_err *err)
{
    char text[PPB_KERNEL_SPEC_TEXT_MAX];
    if (args_size != ppb_kernel_args_size(h->spec.kind)) {
        ppb_kernel_spec_format(&h->spec, text, sizeof text);
        return ppb_fail(err, PPB_EINPUT, "%s: argument struct of %zu bytes, the kernel takes %zu", text,
                        args_size, ppb_kernel_args_size(h->spec.kind));
    }
    long threads = (long)plan->block[0] * plan->block[1] * plan->block[2];
    long grid = (long)plan->grid[0] * plan->grid[1] * plan->grid[2];
    if (threads <= 0 || grid <= 0) {
        ppb_kernel_spec_format(&h->spec, text, sizeof text);
        return ppb_fail(err, PPB_EINPUT, "%s: empty launch (grid %ld blocks, block %ld threads)", text,
                        grid, threads);
    }
    if (threads > h->res.max_threads || (h->threads_limit > 0 && threads > h->threads_limit)) {
        ppb_kernel_spec_format(&h->spec, text, sizeof text);
        return ppb_fail(err, PPB_EREFUSED,
                        "%s: %ld threads per block; the compiled kernel allows %d (device limit %d)", text,
                        threads, h->res.max_threads, h->threads_limit);
    }
    long need = (long)h->res.static_smem + (long)plan->dynamic_smem;
    if (h->smem_limit > 0 && need > h->smem_limit) {
        ppb_kernel_spec_format(&h->spec, text, sizeof text);
        return ppb_fail(err, PPB_EREFUSED,
                        "%s: needs %ld B of shared memory per block (%d static + %u dynamic); the "
                        "limit is %ld B",
                        text, need, h->res.static_smem, plan->dynamic_smem, h->smem_limit);
    }
    int rc = PPB_OK;
    /* Opt in only past the 48 KB (static + dynamic) every block may use, and
     * only as far as this launch needs: the attribute stays at the largest
     * value asked so far, never past smem_limit (checked above). */
    if (need > PPB_SMEM_DEFAULT_LIMIT && (int)plan->dynamic_smem > h->dynamic_smem_attr) {
#ifdef PPB_HAVE_NVRTC
        if (h->mechanism == PPB_KMECH_NVRTC)
            rc = ppb_cudrv_set_dynamic_smem(h->function, (int)plan->dynamic_smem, err);
#endif
#ifdef PPB_HAVE_AOT
        if (h->mechanism == PPB_KMECH_AOT)
            rc = ppb_aot_set_dynamic_smem(h->aot_fn, (int)plan->dynamic_smem, err);
#endif
        if (rc)
            return rc;
        h->dynamic_smem_attr = (int)plan->dynamic_smem;
    }
    void *params[1] = {(void *)args};
#ifdef PPB_HAVE_NVRTC
    if (h->mechanism == PPB_KMECH_NVRTC)
        rc = ppb_cudrv_launch(h->function, plan, params, stream, err);
#endif
#ifdef PPB_HAVE_AOT
    if (h->mechanism == PPB_KMECH_AOT)
        rc = ppb_aot_launch(h->aot_fn, plan, params, stream, err);
#endif
    if (rc == PPB_OK)
        h->res.dynamic_smem = (int)plan->dynamic_smem;
    return rc;
}
