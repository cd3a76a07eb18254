/* The kernel runtime: "give me a launchable kernel for this config", in plain C.
 *
 * Two mechanisms sit behind one API:
 *  - NVRTC (NVIDIA, the default): the kernel sources are embedded in the
 *    program at build time; an instantiation is compiled on first use for the
 *    device's architecture, the cubin is kept in an on-disk cache
 *    (kernel_cache.h) and loaded and launched through the driver API.
 *    NVIDIA-only code lives in kernels_nvrtc.c alone.
 *  - ahead of time (toolchains without NVRTC, e.g. the BI-V100's CoreX): CMake
 *    option PPB_AOT_CONFIGS names a file of kernel spec lines (kernel_spec.h);
 *    those instantiations are compiled into the program and launched with the
 *    CUDA 10.2-level runtime API. Any other config is refused.
 *
 * Nothing here includes a CUDA header: C callers (the built-in ABI table,
 * ppb_builtin.h; the compile check) use it as is. Streams are passed as
 * void * (a cudaStream_t; NULL = the default stream). */
#ifndef PPB_KERNELS_H
#define PPB_KERNELS_H

#include <stddef.h>

#include "kernel_spec.h"
#include "launch_plan.h"
#include "ppb_error.h"
#include "ppb_kernel_abi.h"
#include "ptxas_report.h"

typedef enum {
    PPB_KMECH_AUTO = 0,   /* NVRTC when built with it, else ahead of time */
    PPB_KMECH_NVRTC = 1,
    PPB_KMECH_AOT = 2,
} ppb_kernel_mechanism;

typedef struct ppb_kernels ppb_kernels;   /* the runtime: cache, device limits, loaded kernels */
typedef struct ppb_kernel ppb_kernel;     /* one loaded kernel; owned by ppb_kernels, valid until close */

typedef struct ppb_kernels_options {
    const char *cache_dir;     /* NULL/"": $PPBENCH_KERNEL_CACHE, $XDG_CACHE_HOME/ppbench, ~/.cache/ppbench */
    int no_cache;              /* 1: always compile, read and write no cache */
    int device_index;          /* the CUDA device: architecture, warp size and limits come from it */
    int mechanism;             /* ppb_kernel_mechanism; env PPBENCH_KERNEL_MECHANISM=nvrtc|aot overrides AUTO */
    /* Opt-in dynamic shared memory is never raised above this (an emulated
     * target's smem_per_block); 0 = the device's own limit. */
    long smem_cap;
    /* Compile only, no device (ppb-kernel-compile, CPU-only tests): NVRTC for
     * compute capability `arch` (e.g. 90) with warp size `warp_size` (0 = 32).
     * get/launch are refused; ppb_kernels_compile works. */
    int compile_only;
    int arch;
    int warp_size;
    /* NULL: the sources embedded at build time. Else read every .cuh/.h of
     * this folder at open, over the embedded ones (a file of the same name
     * replaces the embedded one; the others stay): kernel development, tests
     * with stand-in kernels. Env PPBENCH_KERNEL_SOURCE_DIR does the same. */
    const char *source_dir;
} ppb_kernels_options;

int ppb_kernels_open(ppb_kernels **out, const ppb_kernels_options *opt, ppb_err *err);
void ppb_kernels_close(ppb_kernels *k);

/* What the runtime is using, for the run's environment record. */
typedef struct ppb_kernels_info {
    const char *mechanism;     /* "nvrtc" or "aot" */
    char compiler[64];         /* "NVRTC 13.0", or how the AOT table was built */
    int arch;                  /* compute capability compiled for, e.g. 90 */
    int arch_note_lowered;     /* 1: the requested arch is unsupported by this NVRTC; `arch` is the lowest it has */
    int warp_size;
    long smem_optin_limit;     /* bytes of dynamic shared memory a launch may opt in to */
    char cache_dir[4096];
    char sources_hash[17];     /* FNV-1a 64 of the kernel sources compiled from */
    char source_dir[4096];     /* "" = the sources embedded at build time */
    int cache_hits, cache_misses;
    int loaded;                /* kernels loaded (by get or a loader) */
    double compile_seconds;    /* spent in NVRTC by this runtime */
} ppb_kernels_info;
void ppb_kernels_get_info(const ppb_kernels *k, ppb_kernels_info *info);

/* Result of compiling one instantiation (compile-only and diagnostics). */
typedef struct ppb_kernel_compile_info {
    int from_cache;
    double seconds;            /* compile time (0 on a cache hit) */
    size_t image_bytes;
    char lowered_name[512];
    char log[4096];            /* the compiler's log: ptxas -v's lines, warnings (truncated) */
    ppb_ptxas_report resources; /* from that log; unknown on a cache hit */
} ppb_kernel_compile_info;

/* Compile (or find in the cache) one instantiation without loading it.
 * Thread-safe: the compile check calls it from several threads. */
int ppb_kernels_compile(ppb_kernels *k, const ppb_kernel_spec *spec, ppb_kernel_compile_info *info,
                        ppb_err *err);

/* A launchable kernel for a spec; fills `res` (registers, static shared memory,
 * local bytes, max threads; dynamic_smem 0). Loaded kernels stay until close.
 * AOT: PPB_EREFUSED "not built ahead of time; add it to PPB_AOT_CONFIGS". */
int ppb_kernels_get(ppb_kernels *k, const ppb_kernel_spec *spec, ppb_kernel **handle,
                    ppbk_resources *res, ppb_err *err);

/* Start loading these kernels on the runtime's loader threads (NVRTC only;
 * the caller's thread must have the CUDA context current): a later get of one
 * of them finds it loaded, or waits for the loader that has it in hand. A
 * kernel a loader could not load is left to that get, which reports why.
 * Thread-safe, as is get. pause returns once no loader has a kernel in hand
 * and none starts another until resume (nothing of theirs beside a timing). */
void ppb_kernels_prefetch(ppb_kernels *k, const ppb_kernel_spec *specs, int n);
void ppb_kernels_pause(ppb_kernels *k);
void ppb_kernels_resume(ppb_kernels *k);

/* Launch asynchronously on `stream` with the plan's grid, block and dynamic
 * shared memory (launch_plan.h; from ppb_prefill_plan / ppb_decode_plan). `args` points at the kernel's single
 * by-value parameter (ppb_prefill_args or ppb_decode_args), args_size its size.
 * Dynamic shared memory above the 48 KB default is opted in per kernel, never
 * above min(device limit, smem_cap): past it the launch is PPB_EREFUSED. A
 * launch error is PPB_EFAIL with the CUDA error text. */
int ppb_kernels_launch(ppb_kernel *h, const ppb_launch_plan *plan, const void *args,
                       size_t args_size, void *stream, ppb_err *err);

const ppb_kernel_spec *ppb_kernel_get_spec(const ppb_kernel *h);

#endif
