/* Between ppb_kernels.c and its two mechanisms (kernels_nvrtc.c, NVIDIA-only;
 * kernels_aot.cu, runtime API only). Not for use outside kernels/. */
#ifndef PPB_KERNELS_INTERNAL_H
#define PPB_KERNELS_INTERNAL_H

#include <stddef.h>

#include "kernel_cache.h"
#include "ppb_kernels.h"

/* One kernel source file: embedded at build time (kernel_sources.c, generated
 * by embed_sources.cmake) or read from a folder at open. */
typedef struct ppb_kernel_source {
    const char *name;   /* file name as the sources #include it, e.g. "attention_args.h" */
    const char *text;   /* NUL-terminated */
    size_t len;
} ppb_kernel_source;

extern const ppb_kernel_source ppb_embedded_kernel_sources[];
extern const int ppb_embedded_kernel_source_count;

/* Largest dynamic shared memory a block may use without opting in. */
#define PPB_SMEM_DEFAULT_LIMIT (48 * 1024)

/* The by-value argument struct size each kind of kernel takes. */
size_t ppb_kernel_args_size(int kind);

#ifdef PPB_HAVE_NVRTC
/* --- NVRTC (kernels_nvrtc.c) --- */
void ppb_nvrtc_version(int *major, int *minor);
/* The architecture to compile for when the device (or request) is `cc`:
 * cc itself if NVRTC supports it; when allow_lower and cc is below NVRTC's
 * oldest, the oldest (*lowered = 1). PPB_EREFUSED otherwise, naming what it supports. */
int ppb_nvrtc_pick_arch(int cc, int allow_lower, int *arch, int *lowered, ppb_err *err);

typedef struct ppb_nvrtc_request {
    const ppb_kernel_source *sources;
    int n_sources;
    const char *sources_hash;   /* hex, part of the cache key */
    const ppb_kernel_spec *spec;
    int arch;                   /* 90 = sm_90 */
    int warp_size;
    const char *cache_dir;      /* NULL: no disk cache */
} ppb_nvrtc_request;

/* Compile (or load from the cache) to a cubin. On success e->image is malloc'd. */
int ppb_nvrtc_build(const ppb_nvrtc_request *rq, ppb_kernel_cache_entry *e,
                    ppb_kernel_compile_info *info, ppb_err *err);

/* --- driver API, loaded with dlopen (kernels_nvrtc.c): no link-time libcuda,
 * so CPU-only machines run every program of the build. --- */
int ppb_cudrv_load_module(const void *image, const char *lowered_name, void **module,
                          void **function, ppb_err *err);
void ppb_cudrv_unload_module(void *module);
int ppb_cudrv_resources(void *function, ppb_resources *res, ppb_err *err);
int ppb_cudrv_set_dynamic_smem(void *function, int bytes, ppb_err *err);
int ppb_cudrv_launch(void *function, const ppb_kernel_dims *dims, void **params, void *stream,
                     ppb_err *err);
#endif

#ifdef PPB_HAVE_AOT
/* --- ahead of time (kernels_aot.cu, generated table) --- */
int ppb_aot_warp_size(void);          /* PPB_WARP_SIZE the table was compiled with */
int ppb_aot_count(void);
const void *ppb_aot_find(const ppb_kernel_spec *spec);   /* NULL: not built */
int ppb_aot_resources(const void *fn, ppb_resources *res, ppb_err *err);
int ppb_aot_set_dynamic_smem(const void *fn, int bytes, ppb_err *err);
int ppb_aot_launch(const void *fn, const ppb_kernel_dims *dims, void **params, void *stream,
                   ppb_err *err);
#endif

#endif
