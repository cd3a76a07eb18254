/* The kernel ABI: how a shared library hands ppbench an implementation of the
 * attention kernels (prefix prefill, paged attention v1 / v2).
 *
 * A plugin exports one C symbol, PPBK_ENTRY_SYMBOL, a function returning a
 * pointer to a static ppbk_impl table. ppbench dlopen()s the library, calls the
 * entry, refuses a table whose abi_version it does not load (or whose
 * struct_size is smaller than the version's table), calls `open` once, and
 * from then on treats each kernel exactly like a built-in one: the target
 * check first, the plugin's `refuse`, poisoned output, guard zones after the
 * v2 scratch, one checked launch against the float64 reference, then timing
 * of `launch`.
 *
 * Rules a plugin follows (docs/KERNEL-ABI.md says why):
 *  - Plain C, no globals shared with ppbench: everything arrives as arguments.
 *    What the implementation keeps between calls (loaded modules, a runtime,
 *    the last prepared kernel) lives in the context `open` returns, which
 *    every later call receives first (`ctx`) and `close` frees: no mutable
 *    file-scope state is needed, so two opens never share any.
 *  - Tensors are laid out as vLLM lays them out (attention_args.h); ppbench
 *    owns and allocates every buffer. On PPBK_BACKEND_CUDA pointers are device
 *    pointers and `stream` is a cudaStream_t / CUstream (the same object);
 *    on PPBK_BACKEND_CPU pointers are host pointers and `stream` is NULL.
 *  - `launch` is asynchronous on the stream (CPU: returns when done). It never
 *    synchronises the device, allocates, or prints; ppbench times it.
 *  - `refuse` answers from the shape and config alone (the argument struct's
 *    pointers are NULL then): PPBK_REFUSED with a one-line reason for anything
 *    the kernel cannot compute correctly. A plugin never returns garbage for a
 *    config it accepted. On PPBK_OK it may leave a one-line note in `why`
 *    (which variant it will run, say); ppbench stores it with the result.
 *  - `prepare` (optional) runs once per case, after `refuse` and before the
 *    first launch, never timed: the place to compile or load what the config
 *    needs and to say what it costs. PPBK_REFUSED there refuses the case.
 *  - Every message goes into the caller's buffer (`why`, `why_len`), one line.
 *
 * Versioning: any change to a struct or a function type below is a new
 * PPBK_ABI_VERSION. A config member is only ever appended, so a plugin of an
 * older version reads the members it knows and ppbench refuses it the cases
 * that set a newer one (version 3 has no num_stages). An ops table is only
 * ever extended at its end too (version 5's kv_layout, version 6's prefill
 * stage), read by ppbench only from a plugin of that version on; so is the
 * prefill argument struct (version 6's num_tokens, num_blocks), which an
 * older plugin reads the start of. ppbench loads this version, versions 5, 4
 * and 3 (the same table, shorter ops) and version 2 (the same table without
 * the context: an adapter calls it, ppb_kernel_abi_v2.h); any other version
 * is refused by name. */
#ifndef PPB_KERNEL_ABI_H
#define PPB_KERNEL_ABI_H

#include <stddef.h>

#include "attention_args.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PPBK_ABI_VERSION 6
#define PPBK_ENTRY_SYMBOL "ppbk_entry"

/* Which pointers a launch receives (bit set in ppbk_impl.backends). */
#define PPBK_BACKEND_CPU 1u
#define PPBK_BACKEND_CUDA 2u

/* Code paths a config may ask for (the `path` field of the configs). An
 * implementation refuses the paths it does not have. */
#define PPBK_PATH_AUTO 0   /* the implementation's best for this device */
#define PPBK_PATH_SIMT 1   /* the portable path (plain FMA, no tensor cores) */
#define PPBK_PATH_MMA 2    /* the tensor-core path (mma.sync) */
#define PPBK_PATH_WGMMA 3  /* Hopper warpgroup MMA (built-in prefill kernel on compute capability 9.0) */

/* Return codes of every function below. */
#define PPBK_OK 0
#define PPBK_REFUSED 1   /* the config cannot run here; `why` says why */
#define PPBK_FAILED 2    /* something broke (driver error, missing file); `why` says what */

/* The device a call is for. ppbench fills it once per process. */
typedef struct ppbk_device {
    unsigned backend;      /* PPBK_BACKEND_CPU or PPBK_BACKEND_CUDA */
    int device_index;      /* CUDA ordinal (0 on the CPU) */
    int cc;                /* compute capability, major * 10 + minor (0 on the CPU) */
    int warp_size;         /* 32 on NVIDIA, 64 on the BI-V100; 1 on the CPU */
    int sm_count;
    long smem_optin;       /* bytes of shared memory per block a launch may use (a target profile may cap it) */
} ppbk_device;

/* The kernel knobs ppbench sweeps, plus the shape facts a kernel is compiled
 * for. dtype: PPB_KDTYPE_FP16 / PPB_KDTYPE_BF16 (attention_args.h). Members
 * added in a later version are appended (see Versioning above). */
typedef struct ppbk_prefill_config {
    int dtype, head_dim, page_size, sliding_window;
    int block_m, block_n, num_warps;
    int path;              /* PPBK_PATH_* */
    /* Since version 4: the software-pipelining depth (Triton's num_stages);
     * 0 = the implementation's own choice. One without such a knob refuses
     * any other value. */
    int num_stages;
} ppbk_prefill_config;

typedef struct ppbk_decode_config {
    int dtype, head_dim, page_size, sliding_window;
    int version;           /* 1 or 2 */
    int num_threads;
    int partition_size;    /* the kernel's PARTITION_SIZE (v2); the scratch may be sized for another */
    int path;              /* PPBK_PATH_* */
} ppbk_decode_config;

/* What the main kernel of a launch costs, where the implementation knows it
 * (0 = unknown): the compiled function's attributes and the launch's dynamic
 * shared memory. */
typedef struct ppbk_resources {
    int registers;         /* per thread */
    int static_smem;       /* bytes */
    int dynamic_smem;      /* bytes */
    int local_bytes;       /* per thread (spills) */
    int max_threads;       /* most threads per block the compiled kernel can launch with */
} ppbk_resources;

/* The prefill ops' `stage` (version 6), below. */
typedef int (*ppbk_prefill_stage_fn)(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                                     const ppb_prefill_args *args, void *stream, char *why, size_t why_len);

/* `ctx`, first in every call: what the implementation's `open` stored (NULL
 * when it has no `open`). */
typedef struct ppbk_prefill_ops {
    int (*refuse)(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                  char *why, size_t why_len);
    int (*launch)(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *args,
                  void *stream, char *why, size_t why_len);
    /* Optional (NULL): get the kernel `launch` will run ready and fill *out (zeroed by ppbench). */
    int (*prepare)(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                   ppbk_resources *out, char *why, size_t why_len);
    /* Since version 5: the paged cache layout these kernels read
     * (PPB_KV_LAYOUT_*, attention_args.h; 0 = vLLM's paged-attention layout). */
    int kv_layout;
    /* Since version 6, optional (NULL): called once the case's inputs exist
     * (`args` points at them), after `prepare` and before the checked launch,
     * never timed; ppbench waits for `stream` after it. The place to build
     * what the kernel reads beyond ppbench's buffers, as the serving engine
     * does in a step of its own before attention: vLLM's reshape_and_cache,
     * the new tokens' K/V written into the kernel's own copy of the paged cache
     * (kv_append.h), for a kernel that reads every key from the cache. It
     * never writes ppbench's buffers (their checksums are compared after the
     * checked launch); what it allocates lives in the context until `close`. */
    ppbk_prefill_stage_fn stage;
} ppbk_prefill_ops;

/* One entry for v1 and v2: cfg->version says which. v2 launches the main
 * kernel and its reduce. args->max_num_partitions is the kernel's own count
 * (ceil(max_seq_len / cfg->partition_size)); the scratch buffers were sized
 * by the host, possibly with another partition size (the mismatch cases). */
typedef struct ppbk_decode_ops {
    int (*refuse)(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                  char *why, size_t why_len);
    int (*launch)(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *args,
                  void *stream, char *why, size_t why_len);
    int (*prepare)(void *ctx, const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                   ppbk_resources *out, char *why, size_t why_len);
    int kv_layout;         /* since version 5, as in ppbk_prefill_ops */
} ppbk_decode_ops;

typedef struct ppbk_impl {
    unsigned abi_version;  /* PPBK_ABI_VERSION */
    unsigned struct_size;  /* sizeof(ppbk_impl) as the plugin was built */
    const char *name;      /* "vllm-triton", "vllm-cuda", or a plugin's own name ([a-z0-9_.-]+) */
    const char *version;   /* of the kernels, e.g. "vllm 0.6.3" */
    const char *source;    /* where the kernels came from: archive, path, checksum */
    unsigned backends;     /* PPBK_BACKEND_* bits */
    /* Optional: get ready for `dev` (load prepared binaries, check files) and
     * store in *ctx (NULL on entry) what the later calls need; each of them,
     * and `close`, gets that pointer as `ctx`. Called once before any
     * refuse/launch; PPBK_FAILED + why makes every case of this implementation
     * refused with that reason, and `close` is not called then (free what a
     * failing open made before returning). */
    int (*open)(const ppbk_device *dev, void **ctx, char *why, size_t why_len);
    /* Optional: free the context. Called at most once, after the last call,
     * and only when open succeeded; a process may exit without it. */
    void (*close)(void *ctx);
    /* NULL: the implementation does not provide that kernel. */
    const ppbk_prefill_ops *prefill;
    const ppbk_decode_ops *decode_v1;
    const ppbk_decode_ops *decode_v2;
} ppbk_impl;

typedef const ppbk_impl *(*ppbk_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
