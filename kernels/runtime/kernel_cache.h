/* The on-disk cache of compiled kernels (cubins), so a kernel is compiled once
 * per (sources, options, architecture, compiler version), not once per run.
 *
 * One file per kernel: DIR/<32 hex digits>.ppbk. The file repeats the whole
 * key text and a checksum of the image: a hash collision, a truncated write or
 * a file from another version reads as a miss, never as a wrong kernel. Files
 * are written to a temporary name and renamed, so concurrent processes (shards,
 * the parallel compile check) never see half a file.
 *
 * Plain C, no CUDA: unit-tested on machines without a GPU. */
#ifndef PPB_KERNEL_CACHE_H
#define PPB_KERNEL_CACHE_H

#include <stddef.h>

#include "ppb_error.h"

#define PPB_KERNEL_CACHE_NAME_MAX 512

/* Resolve the cache folder: `explicit_dir` if non-empty, else $PPBENCH_KERNEL_CACHE,
 * else $XDG_CACHE_HOME/ppbench, else $HOME/.cache/ppbench. Does not create it. */
int ppb_kernel_cache_dir(const char *explicit_dir, char *buf, size_t len, ppb_err *err);

/* Create the folder and its parents (mode 0755 as the umask allows). */
int ppb_kernel_cache_prepare(const char *dir, ppb_err *err);

/* The cache file of a key: DIR/<hash>.ppbk (the hash is two 64-bit FNV-1a). */
void ppb_kernel_cache_path(const char *dir, const char *key_text, char *buf, size_t len);

typedef struct ppb_kernel_cache_entry {
    void *image;                                  /* cubin bytes (malloc'd on load) */
    size_t size;
    char lowered_name[PPB_KERNEL_CACHE_NAME_MAX]; /* mangled name to look up in the module */
} ppb_kernel_cache_entry;

/* 1: hit (e->image is malloc'd; free it); 0: miss, including files that do not
 * match the key or fail their checksum; PPB_ENOMEM on allocation failure. */
int ppb_kernel_cache_load(const char *dir, const char *key_text, ppb_kernel_cache_entry *e);

/* Write atomically (temporary file + rename). PPB_EIO with the reason on failure:
 * callers treat it as a warning, the compiled kernel is still good. */
int ppb_kernel_cache_store(const char *dir, const char *key_text, const ppb_kernel_cache_entry *e,
                           ppb_err *err);

#endif
