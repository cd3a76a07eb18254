/* NVIDIA-only: NVRTC compilation and the driver API (module load, launch,
 * attributes). Everything that names nvrtc* or cu* is in this file; the AOT
 * build for other toolchains leaves it out.
 *
 * libcuda is opened with dlopen at first use instead of being linked: the
 * build then runs on machines without the driver (CI, the compile check),
 * where NVRTC still works. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cuda.h>
#include <nvrtc.h>

#include "kernels_internal.h"

/* ---------------------------------------------------------------- NVRTC -- */

void ppb_nvrtc_version(int *major, int *minor)
{
    if (nvrtcVersion(major, minor) != NVRTC_SUCCESS)
        *major = *minor = 0;
}

int ppb_nvrtc_pick_arch(int cc, int allow_lower, int *arch, int *lowered, ppb_err *err)
{
    int n = 0;
    int archs[64];
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 64 ||
        nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS)
        return ppb_fail(err, PPB_EFAIL, "NVRTC did not list its supported architectures");
    *lowered = 0;
    for (int i = 0; i < n; i++)
        if (archs[i] == cc) {
            *arch = cc;
            return PPB_OK;
        }
    int lo = archs[0], hi = archs[0];
    for (int i = 1; i < n; i++) {
        lo = archs[i] < lo ? archs[i] : lo;
        hi = archs[i] > hi ? archs[i] : hi;
    }
    int major, minor;
    ppb_nvrtc_version(&major, &minor);
    if (cc < lo && allow_lower) {
        *arch = lo;
        *lowered = 1;
        return PPB_OK;
    }
    return ppb_fail(err, PPB_EREFUSED,
                    "NVRTC %d.%d cannot compile for sm_%d (it supports sm_%d .. sm_%d); "
                    "use a toolkit that has it, or an ahead-of-time build (PPB_AOT_CONFIGS)",
                    major, minor, cc, lo, hi);
}

/* Where cuda_fp16.h / cuda_bf16.h live: NVRTC does not carry them, the
 * toolkit does. First hit of: $PPBENCH_CUDA_INCLUDE, $CUDA_HOME/include,
 * $CUDA_PATH/include, the toolkit this was built with, /usr/local/cuda/include. */
static void find_cuda_include(char *buf, size_t len)
{
    const char *cands[5];
    char a[4096], b[4096];
    int n = 0;
    const char *env = getenv("PPBENCH_CUDA_INCLUDE");
    if (env && *env)
        cands[n++] = env;
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(a, sizeof a, "%s/include", home);
        cands[n++] = a;
    }
    const char *path = getenv("CUDA_PATH");
    if (path && *path) {
        snprintf(b, sizeof b, "%s/include", path);
        cands[n++] = b;
    }
#ifdef PPB_CUDA_INCLUDE_DIR
    cands[n++] = PPB_CUDA_INCLUDE_DIR;
#endif
    cands[n++] = "/usr/local/cuda/include";
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char probe[4200];
        struct stat st;
        snprintf(probe, sizeof probe, "%s/cuda_fp16.h", cands[i]);
        if (stat(probe, &st) == 0) {
            snprintf(buf, len, "%s", cands[i]);
            return;
        }
    }
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first lines of a compiler log, on one line, for an error message. */
static void log_excerpt(const char *log, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *p = log; *p && n + 1 < len; p++) {
        if (*p == '\n') {
            if (n > 0 && buf[n - 1] != ' ' && n + 3 < len) {
                buf[n++] = ' ';
                buf[n++] = '|';
                buf[n++] = ' ';
            }
            continue;
        }
        buf[n++] = *p;
    }
    buf[n] = '\0';
}

int ppb_nvrtc_build(const ppb_nvrtc_request *rq, ppb_kernel_cache_entry *e,
                    ppb_kernel_compile_info *info, ppb_err *err)
{
    memset(e, 0, sizeof *e);
    memset(info, 0, sizeof *info);
    const ppb_kernel_spec *spec = rq->spec;
    const char *main_header = ppb_kernel_spec_header(spec);
    int have_header = 0;
    for (int i = 0; i < rq->n_sources; i++)
        have_header |= strcmp(rq->sources[i].name, main_header) == 0;
    if (!have_header)
        return ppb_fail(err, PPB_EREFUSED, "kernel source %s is not part of this build", main_header);

    char name_expr[256], include_dir[4096];
    ppb_kernel_name_expression(spec, name_expr, sizeof name_expr);
    find_cuda_include(include_dir, sizeof include_dir);

    char opt_arch[64], opt_warp[64], opt_mma[64], opt_inc[4200];
    /* wgmma (the prefill kernel's mma=2) exists only in the architecture-specific target */
    const int wgmma = spec->kind == PPB_KSPEC_PREFILL && spec->use_mma == PPB_KSPEC_MMA_WGMMA;
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=sm_%d%s", rq->arch, wgmma ? "a" : "");
    snprintf(opt_warp, sizeof opt_warp, "-DPPB_WARP_SIZE=%d", rq->warp_size);
    /* The preprocessor switch that lets mma/ldmatrix code exist at all (gpu.md:
     * the portable build never sees it); the template's path argument picks the path. */
    snprintf(opt_mma, sizeof opt_mma, "-DPPB_USE_MMA=%d", rq->arch >= PPB_MMA_MIN_CC ? 1 : 0);
    snprintf(opt_inc, sizeof opt_inc, "-I%s", include_dir);
    const char *opts[10];
    int n_opts = 0;
    opts[n_opts++] = opt_arch;
    opts[n_opts++] = "-std=c++17";
    opts[n_opts++] = opt_warp;
    opts[n_opts++] = opt_mma;
    opts[n_opts++] = "-lineinfo";   /* source lines in compute-sanitizer reports; no code change */
    /* registers and spills in the log (ptxas_report.h): the compile check reads them without a GPU */
    opts[n_opts++] = "--ptxas-options=-v";
    /* NVRTC rejects unannotated (host) functions, e.g. constexpr helpers that
     * nvcc happily evaluates at compile time: treat them as device functions. */
    opts[n_opts++] = "-default-device";
    if (include_dir[0])
        opts[n_opts++] = opt_inc;

    int major, minor;
    ppb_nvrtc_version(&major, &minor);
    char key[2048];
    size_t kn = (size_t)snprintf(key, sizeof key, "nvrtc=%d.%d src=%s name=%s opts=", major, minor,
                                 rq->sources_hash, name_expr);
    for (int i = 0; i < n_opts && kn < sizeof key; i++)
        kn += (size_t)snprintf(key + kn, sizeof key - kn, "%s%s", i ? " " : "", opts[i]);

    if (rq->cache_dir) {
        int hit = ppb_kernel_cache_load(rq->cache_dir, key, e);
        if (hit < 0)
            return ppb_fail(err, hit, "out of memory reading the kernel cache");
        if (hit) {
            info->from_cache = 1;
            info->image_bytes = e->size;
            snprintf(info->lowered_name, sizeof info->lowered_name, "%s", e->lowered_name);
            return PPB_OK;
        }
    }

    char main_src[128];
    snprintf(main_src, sizeof main_src, "#include \"%s\"\n", main_header);
    const char **hdr_text = malloc((size_t)rq->n_sources * sizeof *hdr_text);
    const char **hdr_name = malloc((size_t)rq->n_sources * sizeof *hdr_name);
    nvrtcProgram prog = NULL;
    char *log = NULL;
    int rc = PPB_OK;
    if (!hdr_text || !hdr_name) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory compiling %s", name_expr);
        goto end;
    }
    for (int i = 0; i < rq->n_sources; i++) {
        hdr_text[i] = rq->sources[i].text;
        hdr_name[i] = rq->sources[i].name;
    }
    nvrtcResult nr = nvrtcCreateProgram(&prog, main_src, "ppb_kernel.cu", rq->n_sources, hdr_text, hdr_name);
    if (nr != NVRTC_SUCCESS) {
        rc = ppb_fail(err, PPB_EFAIL, "nvrtcCreateProgram: %s", nvrtcGetErrorString(nr));
        goto end;
    }
    nr = nvrtcAddNameExpression(prog, name_expr);
    if (nr != NVRTC_SUCCESS) {
        rc = ppb_fail(err, PPB_EFAIL, "nvrtcAddNameExpression(%s): %s", name_expr, nvrtcGetErrorString(nr));
        goto end;
    }
    double t0 = now_seconds();
    nvrtcResult compiled = nvrtcCompileProgram(prog, n_opts, opts);
    info->seconds = now_seconds() - t0;
    size_t log_size = 0;
    if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        log = malloc(log_size);
        if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
            snprintf(info->log, sizeof info->log, "%s", log);
            ppb_ptxas_report_parse(log, &info->resources);
        }
    }
    if (compiled != NVRTC_SUCCESS) {
        char excerpt[760];
        log_excerpt(log ? log : "", excerpt, sizeof excerpt);
        rc = ppb_fail(err, PPB_EFAIL, "NVRTC %d.%d could not compile %s for sm_%d: %s", major, minor,
                      name_expr, rq->arch, excerpt[0] ? excerpt : nvrtcGetErrorString(compiled));
        goto end;
    }
    const char *lowered = NULL;
    nr = nvrtcGetLoweredName(prog, name_expr, &lowered);
    if (nr != NVRTC_SUCCESS || !lowered) {
        rc = ppb_fail(err, PPB_EFAIL, "nvrtcGetLoweredName(%s): %s", name_expr, nvrtcGetErrorString(nr));
        goto end;
    }
    if (strlen(lowered) >= sizeof e->lowered_name) {
        rc = ppb_fail(err, PPB_EFAIL, "mangled name of %s is too long", name_expr);
        goto end;
    }
    snprintf(e->lowered_name, sizeof e->lowered_name, "%s", lowered);
    size_t size = 0;
    nr = nvrtcGetCUBINSize(prog, &size);
    if (nr != NVRTC_SUCCESS || size == 0) {
        rc = ppb_fail(err, PPB_EFAIL, "nvrtcGetCUBINSize: %s", nvrtcGetErrorString(nr));
        goto end;
    }
    e->image = malloc(size);
    if (!e->image) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory for a %zu-byte cubin", size);
        goto end;
    }
    nr = nvrtcGetCUBIN(prog, e->image);
    if (nr != NVRTC_SUCCESS) {
        rc = ppb_fail(err, PPB_EFAIL, "nvrtcGetCUBIN: %s", nvrtcGetErrorString(nr));
        goto end;
    }
    e->size = size;
    info->image_bytes = size;
    snprintf(info->lowered_name, sizeof info->lowered_name, "%s", e->lowered_name);
    if (rq->cache_dir) {
        ppb_err werr;
        /* A cache that cannot be written costs time on the next run, not
         * correctness: say so in the info log and carry on. */
        if (ppb_kernel_cache_store(rq->cache_dir, key, e, &werr) != PPB_OK) {
            size_t used = strlen(info->log);
            snprintf(info->log + used, sizeof info->log - used, "%swarning: %s", used ? "\n" : "",
                     werr.msg);
        }
    }
end:
    if (rc != PPB_OK) {
        free(e->image);
        e->image = NULL;
        e->size = 0;
    }
    if (prog)
        nvrtcDestroyProgram(&prog);
    free(log);
    free(hdr_text);
    free(hdr_name);
    return rc;
}

/* ----------------------------------------------------------- driver API -- */

typedef CUresult (*fn_cuInit)(unsigned int);
typedef CUresult (*fn_cuGetErrorString)(CUresult, const char **);
typedef CUresult (*fn_cuCtxGetCurrent)(CUcontext *);
typedef CUresult (*fn_cuCtxSetCurrent)(CUcontext);
typedef CUresult (*fn_cuModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*fn_cuModuleUnload)(CUmodule);
typedef CUresult (*fn_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*fn_cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
typedef CUresult (*fn_cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
typedef CUresult (*fn_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, CUstream, void **, void **);

static struct {
    void *lib;
    fn_cuInit Init;
    fn_cuGetErrorString GetErrorString;
    fn_cuCtxGetCurrent CtxGetCurrent;
    fn_cuCtxSetCurrent CtxSetCurrent;
    fn_cuModuleLoadData ModuleLoadData;
    fn_cuModuleUnload ModuleUnload;
    fn_cuModuleGetFunction ModuleGetFunction;
    fn_cuFuncGetAttribute FuncGetAttribute;
    fn_cuFuncSetAttribute FuncSetAttribute;
    fn_cuLaunchKernel LaunchKernel;
    char error[512];
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void drv_open_once(void)
{
    drv.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv.lib) {
        const char *why = dlerror();
        snprintf(drv.error, sizeof drv.error, "cannot load the CUDA driver (libcuda.so.1): %s",
                 why ? why : "not found");
        return;
    }
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cuInit", (void **)&drv.Init},
        {"cuGetErrorString", (void **)&drv.GetErrorString},
        {"cuCtxGetCurrent", (void **)&drv.CtxGetCurrent},
        {"cuCtxSetCurrent", (void **)&drv.CtxSetCurrent},
        {"cuModuleLoadData", (void **)&drv.ModuleLoadData},
        {"cuModuleUnload", (void **)&drv.ModuleUnload},
        {"cuModuleGetFunction", (void **)&drv.ModuleGetFunction},
        {"cuFuncGetAttribute", (void **)&drv.FuncGetAttribute},
        {"cuFuncSetAttribute", (void **)&drv.FuncSetAttribute},
        {"cuLaunchKernel", (void **)&drv.LaunchKernel},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        void *p = dlsym(drv.lib, syms[i].name);
        if (!p) {
            snprintf(drv.error, sizeof drv.error, "the CUDA driver has no %s", syms[i].name);
            drv.LaunchKernel = NULL;
            return;
        }
        memcpy(syms[i].slot, &p, sizeof p);   /* object -> function pointer, as POSIX allows */
    }
    CUresult r = drv.Init(0);
    if (r != CUDA_SUCCESS) {
        snprintf(drv.error, sizeof drv.error, "cuInit failed (CUresult %d)", (int)r);
        drv.LaunchKernel = NULL;
    }
}

static int drv_ready(ppb_err *err)
{
    pthread_once(&drv_once, drv_open_once);
    if (!drv.LaunchKernel)
        return ppb_fail(err, PPB_EFAIL, "%s", drv.error);
    return PPB_OK;
}

static int drv_fail(ppb_err *err, CUresult r, const char *what)
{
    const char *text = NULL;
    if (drv.GetErrorString)
        drv.GetErrorString(r, &text);
    return ppb_fail(err, PPB_EFAIL, "%s: %s (CUresult %d)", what, text ? text : "unknown error", (int)r);
}

int ppb_cudrv_load_module(const void *image, const char *lowered_name, void **module,
                          void **function, ppb_err *err)
{
    int rc = drv_ready(err);
    if (rc)
        return rc;
    CUcontext ctx = NULL;
    if (drv.CtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return ppb_fail(err, PPB_EFAIL,
                        "no current CUDA context on this thread (open the kernel runtime on the "
                        "thread that launches)");
    CUmodule mod = NULL;
    CUresult r = drv.ModuleLoadData(&mod, image);
    if (r != CUDA_SUCCESS)
        return drv_fail(err, r, "cuModuleLoadData");
    CUfunction fn = NULL;
    r = drv.ModuleGetFunction(&fn, mod, lowered_name);
    if (r != CUDA_SUCCESS) {
        drv.ModuleUnload(mod);
        return drv_fail(err, r, "cuModuleGetFunction");
    }
    *module = mod;
    *function = fn;
    return PPB_OK;
}

void *ppb_cudrv_current_context(void)
{
    ppb_err ignored;
    CUcontext ctx = NULL;
    if (drv_ready(&ignored) || drv.CtxGetCurrent(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

int ppb_cudrv_use_context(void *ctx, ppb_err *err)
{
    int rc = drv_ready(err);
    if (rc)
        return rc;
    CUresult r = drv.CtxSetCurrent((CUcontext)ctx);
    return r == CUDA_SUCCESS ? PPB_OK : drv_fail(err, r, "cuCtxSetCurrent");
}

void ppb_cudrv_unload_module(void *module)
{
    if (module && drv.ModuleUnload)
        drv.ModuleUnload((CUmodule)module);   /* fails harmlessly once the context is gone */
}

int ppb_cudrv_resources(void *function, ppbk_resources *res, ppb_err *err)
{
    int rc = drv_ready(err);
    if (rc)
        return rc;
    struct {
        CUfunction_attribute attr;
        int *out;
        const char *name;
    } q[] = {
        {CU_FUNC_ATTRIBUTE_NUM_REGS, &res->registers, "NUM_REGS"},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &res->static_smem, "SHARED_SIZE_BYTES"},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &res->local_bytes, "LOCAL_SIZE_BYTES"},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &res->max_threads, "MAX_THREADS_PER_BLOCK"},
    };
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        CUresult r = drv.FuncGetAttribute(q[i].out, q[i].attr, (CUfunction)function);
        if (r != CUDA_SUCCESS)
            return drv_fail(err, r, q[i].name);
    }
    return PPB_OK;
}

int ppb_cudrv_set_dynamic_smem(void *function, int bytes, ppb_err *err)
{
    int rc = drv_ready(err);
    if (rc)
        return rc;
    CUresult r = drv.FuncSetAttribute((CUfunction)function,
                                      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    if (r != CUDA_SUCCESS)
        return drv_fail(err, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    return PPB_OK;
}

int ppb_cudrv_launch(void *function, const ppb_launch_plan *plan, void **params, void *stream,
                     ppb_err *err)
{
    int rc = drv_ready(err);
    if (rc)
        return rc;
    CUresult r = drv.LaunchKernel((CUfunction)function, plan->grid[0], plan->grid[1], plan->grid[2],
                                  plan->block[0], plan->block[1], plan->block[2],
                                  (unsigned)plan->dynamic_smem, (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return drv_fail(err, r, "cuLaunchKernel");
    return PPB_OK;
}
