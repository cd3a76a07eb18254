/* Kernel implementations behind the kernel ABI (kernels/ppb_kernel_abi.h,
 * docs/KERNEL-ABI.md): the built-in CUDA kernels and plugin libraries.
 *
 * A case's `impl` field names the implementation (case.h). Implementation 0,
 * builtin, is the table and context a backend hands to ppb_impl_bind (the
 * CUDA backend's kernels/runtime/ppb_builtin.h over its kernel runtime; the
 * CPU backend computes builtin cases itself and hands none); every other one
 * is a shared library found on the search path, loaded with dlopen, checked
 * (entry symbol, ABI version, table size, name), opened once per process and
 * called through its table with the context its open returned. A table of
 * ABI version 2 (no context) is wrapped on loading so that it looks like the
 * current version to everything else (kernels/ppb_kernel_abi_v2.h); version 3's
 * is the current table, and a plugin of either is refused the cases that set a
 * parameter its configs lack (version 4's num_stages). The backends
 * ask this module for a bound call (ppb_impl_call) and launch it on their own
 * buffers, so guard zones, poisoning, the reference check and the timing loop
 * are the same code for every implementation.
 *
 * Search path, in order: each --plugin PATH (a library or a folder), the
 * entries of $PPBENCH_PLUGIN_PATH (colon-separated, files or folders),
 * <folder of the ppbench binary>/plugins, ${XDG_CACHE_HOME:-~/.cache}/ppbench/plugins.
 * In a folder, files named libppbk_*.so are plugins. The first library whose
 * table carries a name wins; later ones of the same name are listed as shadowed. */
#ifndef PPB_IMPL_H
#define PPB_IMPL_H

#include "case.h"
#include "ppb_error.h"
#include "ppb_kernel_abi.h"
#include "result.h"

/* An implementation ready to be called: its table and the context its open
 * stored (NULL when it has none). The built-in kernels' belongs to the
 * backend that opened it (ppb_builtin_open); a plugin's to this module. */
typedef struct ppb_impl_ref {
    const ppbk_impl *table;
    void *ctx;
} ppb_impl_ref;

/* --plugin PATH: searched before everything else (and inherited by worker processes). */
void ppb_impl_add_search_path(const char *path);
/* The --plugin paths given so far, in order (i < count), for a ppbench started
 * as a new process (calibrate's separate run) to be given them too. */
int ppb_impl_search_path_count(void);
const char *ppb_impl_search_path(int i);

/* One library found on the search path, as `ppbench impls` lists it. */
typedef struct ppb_impl_info {
    char path[4096];
    char name[64];           /* the table's name; "" when the library could not be read */
    char version[128], source[512];
    unsigned abi_version, backends;
    int has_prefill, has_decode_v1, has_decode_v2;
    unsigned flash_layout;   /* bits 0, 1, 2: its prefill, decode v1, decode v2 read the paged cache in
                              * PPB_KV_LAYOUT_FLASH (ABI version 5 on) */
    int prefill_stages;      /* 1: its prefill has a stage (ABI version 6 on): it reads the new tokens from a
                              * cache it builds (kernels/kv_append.h) */
    char checksum[17];       /* FNV-1a 64 of the library file */
    int adapted;             /* 1: an ABI version-2 table, called through the adapter */
    int usable;              /* 0: `error` says why not */
    int shadowed;            /* 1: an earlier library has the same name */
    char error[512];
} ppb_impl_info;

/* Every library on the search path, each loaded and checked; a library that
 * fails is listed with its error, never skipped. *out is malloc'ed. */
int ppb_impl_scan(ppb_impl_info **out, int *n, ppb_err *err);

/* Describe an implementation's backends ("cpu,cuda") and kernels
 * ("prefix_prefill,paged_attention_v1,paged_attention_v2") into buf. */
void ppb_impl_backends_text(unsigned backends, char *buf, size_t len);
void ppb_impl_kernels_text(int prefill, int v1, int v2, char *buf, size_t len);

/* An implementation a user asked for by name (--impl, a proposal side's impl:)
 * must exist before anything runs: PPB_OK for builtin or a plugin library of
 * that name that loads on the search path (loaded once, as ppb_impl_bind
 * would); else PPB_EINPUT saying where it looked, for the caller to name the
 * option or field. */
int ppb_impl_require(int impl, ppb_err *err);

/* A case bound to one plugin kernel on one device: the table, the config and
 * the shape part of the argument struct. The backend fills the pointers of
 * `prefill` / `decode` and then launches. */
typedef struct ppb_impl_call {
    const ppbk_impl *impl;
    void *ctx;               /* what the implementation's open stored: every call gets it */
    int builtin;             /* the backend's built-in kernels (their messages carry no "impl NAME: ") */
    ppbk_device dev;
    ppb_kernel_kind kernel;
    ppbk_prefill_config prefill_cfg;
    ppbk_decode_config decode_cfg;
    ppb_prefill_args prefill;
    ppb_decode_args decode;
    int kv_layout;           /* PPB_KV_LAYOUT_* the kernel reads the paged cache in: the backend fills that one */
    ppbk_prefill_stage_fn stage; /* the prefill ops' stage (kernel ABI 6 on), or NULL: ppb_impl_stage */
    char note[400];          /* what refuse said when it accepted ("" = nothing) */
} ppb_impl_call;

/* Load the case's implementation (once per process), open it for `dev` (once),
 * check that it provides the case's kernel on this backend, fill the call and
 * ask the plugin's refuse. `builtin`: the backend's built-in kernels, opened
 * by it, for `impl: builtin` (NULL: this backend runs them itself).
 * PPB_EREFUSED with a reason naming the implementation when it cannot run the
 * case; PPB_EFAIL for a broken library. */
int ppb_impl_bind(ppb_impl_call *call, const ppb_case *c, const ppbk_device *dev, const ppb_impl_ref *builtin,
                  ppb_err *err);

/* Launch (asynchronously on `stream` for CUDA). */
int ppb_impl_launch(const ppb_impl_call *call, void *stream, ppb_err *err);

/* Once per case, before the first launch and outside timing: the
 * implementation's prepare (compile, load), with its resource figures where it
 * gives them (res->known = 0 otherwise). PPB_EREFUSED / PPB_EFAIL with its reason. */
int ppb_impl_prepare(const ppb_impl_call *call, ppb_resources *res, ppb_err *err);

/* Once the case's inputs exist and the call's pointers are set, before the
 * checked launch and outside timing: the implementation's stage (kernel ABI
 * 6's prefill ops), if it has one; the caller then waits for `stream`.
 * PPB_EREFUSED / PPB_EFAIL with its reason. */
int ppb_impl_stage(const ppb_impl_call *call, void *stream, ppb_err *err);

/* Environment facts for a run that used an implementation: name, version,
 * source, path and checksum of its library ("impl.<name>.*"). */
typedef void (*ppb_impl_env_sink)(void *ctx, const char *key, const char *value);
void ppb_impl_environment(ppb_impl_env_sink sink, void *ctx);

/* A plugin call that never ends the process cleanly -- it calls exit(), or it
 * is still running when a stop was asked for (the watchdog then ends the
 * process) -- leaves the run's last case unrecorded. The hook, set by whoever
 * runs the cases, is called once on the way out, on the calling or the
 * watchdog's thread, with PPB_STATUS_CRASHED or PPB_STATUS_HUNG and the
 * reason, to store that case and mark the run interrupted. The thread that
 * was in the call never leaves it. NULL: none. */
typedef void (*ppb_impl_abandon_hook)(void *ctx, int status, const char *reason);
void ppb_impl_set_abandon_hook(ppb_impl_abandon_hook hook, void *ctx);

/* Close every opened implementation and unload the libraries (end of process, tests). */
void ppb_impl_unload_all(void);

#endif
