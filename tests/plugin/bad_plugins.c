/* Plugins that are broken in one way each, for the loader's tests: the loader
 * must name the fault rather than crash or accept them. One source, one -D per
 * library (tests/plugin/CMakeLists.txt):
 *   BAD_NOSYM    exports no ppbk_entry (the entry is misspelt)
 *   BAD_VERSION  a table with abi_version 999
 *   BAD_NULL     ppbk_entry returns NULL
 *   BAD_CRASH    a valid table whose prefill launch dies of SIGSEGV
 *   BAD_NAME     a valid table named "bad name!" (outside [a-z0-9_.-])
 *   BAD_NONUL    "bad-nonul": refuse fills every byte of its message buffer, no NUL
 *   BAD_EXIT     "bad-exit": a valid table whose prefill launch calls exit(0)
 *   BAD_RESOURCES "bad-resources": prepare reports INT_MAX registers; its version string holds
 *                terminal escapes (ESC ] ... BEL, CR)
 *   BAD_SCRIBBLE "bad-scribble": a prefill launch that computes nothing right and writes one
 *                byte before its output, one past it, one into its input q and one 2 bytes
 *                before its input block_table; with BAD_CUDA too, "bad-scribble-cuda" does
 *                the same to device buffers (tests/gpu/run.sh builds it with nvcc)
 *   BAD_HANG     "bad-hang": a prefill launch that never returns
 *   BAD_ABI2     "abi2-plugin": not broken but old, a table of kernel ABI version 2 (no
 *                context; ppb_kernel_abi_v2.h) that ppbench loads through its adapter:
 *                open, prefill refuse (a note saying how often open ran), prepare (42
 *                registers), launch (fails, saying it was reached) and decode_v1 refuse
 *                (refuses, saying so); no decode_v2
 *   BAD_ABI3     "abi3-plugin": not broken but old, a table that says kernel ABI version 3,
 *                as one built before version 4 appended num_stages to the prefill config;
 *                its prefill refuse accepts everything with the note "version-3 table", so
 *                a test sees which cases ppbench refused before asking it; its ops tables
 *                end in a kv_layout of 7 and (prefill) a stage that fails, saying it was
 *                called, which a version-3 plugin's would not have
 *   BAD_LAYOUT   "bad-layout": its prefill says it reads the paged cache in layout 7, which
 *                does not exist (kernel ABI version 5's kv_layout)
 * Apart from its one fault each table is well formed, so nothing else trips. */
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ppb_kernel_abi.h"
#include "ppb_kernel_abi_v2.h"
#ifdef BAD_CUDA
#include <cuda_runtime_api.h>
#endif

#if defined(BAD_NOSYM) + defined(BAD_VERSION) + defined(BAD_NULL) + defined(BAD_CRASH) + defined(BAD_NAME) + \
        defined(BAD_NONUL) + defined(BAD_EXIT) + defined(BAD_RESOURCES) + defined(BAD_SCRIBBLE) + \
        defined(BAD_HANG) + defined(BAD_ABI2) + defined(BAD_ABI3) + defined(BAD_LAYOUT) != 1
#error "define exactly one BAD_* (see the list above)"
#endif

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

#ifdef BAD_ABI2
/* A plugin built against version 2 keeps what it needs at file scope: how
 * often open ran (its refuse reports it, so a test sees the adapter opened it). */
static int times_opened;

static int abi2_open(const ppbk_device *dev, char *why, size_t why_len)
{
    if (dev->backend != PPBK_BACKEND_CPU) {
        snprintf(why, why_len, "abi2-plugin runs on the CPU backend only");
        return PPBK_FAILED;
    }
    times_opened++;
    return PPBK_OK;
}

static void abi2_close(void)
{
    times_opened = 0;
}

static int abi2_refuse(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                       char *why, size_t why_len)
{
    (void)dev, (void)cfg, (void)shape;
    snprintf(why, why_len, "version-2 table, opened %d time(s)", times_opened);
    return PPBK_OK;
}

static int abi2_prepare(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                        ppbk_resources *out, char *why, size_t why_len)
{
    (void)dev, (void)cfg, (void)shape, (void)why, (void)why_len;
    out->registers = 42;
    out->max_threads = 128;
    return PPBK_OK;
}

static int abi2_launch(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *args,
                       void *stream, char *why, size_t why_len)
{
    (void)dev, (void)cfg, (void)args, (void)stream;
    snprintf(why, why_len, "the version-2 launch was reached (it computes nothing)");
    return PPBK_FAILED;
}

static int abi2_decode_refuse(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                              char *why, size_t why_len)
{
    (void)dev, (void)shape;
    snprintf(why, why_len, "the version-2 decode_v1 refuse was reached (version %d)", cfg->version);
    return PPBK_REFUSED;
}

static int abi2_decode_launch(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *args,
                              void *stream, char *why, size_t why_len)
{
    (void)dev, (void)cfg, (void)args, (void)stream;
    snprintf(why, why_len, "never accepted");
    return PPBK_FAILED;
}

static const ppbk_v2_prefill_ops abi2_prefill = {abi2_refuse, abi2_launch, abi2_prepare};
static const ppbk_v2_decode_ops abi2_decode = {abi2_decode_refuse, abi2_decode_launch, NULL};

static const ppbk_v2_impl abi2_impl = {
    .abi_version = PPBK_ABI_VERSION_2,
    .struct_size = sizeof(ppbk_v2_impl),
    .name = "abi2-plugin",
    .version = "2",
    .source = "ppbench tests/plugin/bad_plugins.c",
    .backends = PPBK_BACKEND_CPU,
    .open = abi2_open,
    .close = abi2_close,
    .prefill = &abi2_prefill,
    .decode_v1 = &abi2_decode,
    .decode_v2 = NULL,
};

/* A version-2 plugin's entry returned a pointer to its (version-2) table. */
EXPORT const ppbk_v2_impl *ppbk_entry(void);
EXPORT const ppbk_v2_impl *ppbk_entry(void)
{
    return &abi2_impl;
}

#else /* every other BAD_*: a table of the current version (BAD_ABI3: the same table, saying 3) */

static int bad_refuse(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                      const ppb_prefill_args *shape, char *why, size_t why_len)
{
    (void)ctx, (void)dev, (void)cfg, (void)shape;
#if defined(BAD_CRASH) || defined(BAD_EXIT) || defined(BAD_RESOURCES) || defined(BAD_SCRIBBLE) || defined(BAD_HANG)
    (void)why, (void)why_len;
    return PPBK_OK; /* accept everything, so the crashing (exiting, absurd) call is reached */
#elif defined(BAD_NONUL)
    memset(why, 'A', why_len); /* all it was given, and no terminating NUL */
    return PPBK_REFUSED;
#elif defined(BAD_ABI3)
    snprintf(why, why_len, "version-3 table");
    return PPBK_OK;
#else
    if (why && why_len)
        snprintf(why, why_len, "a broken test plugin runs nothing");
    return PPBK_REFUSED;
#endif
}

static int bad_launch(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                      const ppb_prefill_args *args, void *stream, char *why, size_t why_len)
{
    (void)ctx, (void)dev, (void)cfg, (void)args, (void)stream;
#ifdef BAD_CRASH
    (void)why, (void)why_len;
    raise(SIGSEGV); /* what a wild write in a kernel ends in, without the undefined behaviour */
    return PPBK_OK;
#elif defined(BAD_EXIT)
    (void)why, (void)why_len;
    exit(0); /* "success", from inside a launch */
#elif defined(BAD_HANG)
    (void)why, (void)why_len;
    for (int forever = 1; forever;)
        sleep(1); /* a signal ends the sleep, not the loop */
    return PPBK_FAILED;
#elif defined(BAD_SCRIBBLE) && defined(BAD_CUDA)
    (void)why, (void)why_len;
    /* The same four bytes as below, through the runtime: every pointer is the device's. */
    int32_t tokens = 0;
    if (cudaMemcpy(&tokens, args->start_loc + args->batch, sizeof tokens, cudaMemcpyDeviceToHost) != cudaSuccess)
        return PPBK_FAILED;
    size_t bytes = (size_t)tokens * (size_t)args->num_heads * (size_t)args->head_dim * 2;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned char *out = args->out;
    int bad = cudaMemsetAsync(out - 1, 0, 1, s) || cudaMemsetAsync(out + bytes, 0, 1, s) ||
              cudaMemsetAsync((void *)(uintptr_t)args->q, 0x5A, 16, s) ||
              cudaMemsetAsync((unsigned char *)(uintptr_t)args->block_table - 2, 0, 1, s);
    return bad ? PPBK_FAILED : PPBK_OK;
#elif defined(BAD_SCRIBBLE)
    (void)why, (void)why_len;
    /* the output: [tokens, heads, D] 16-bit values, tokens = start_loc[batch] (host pointers on the CPU) */
    size_t bytes = (size_t)args->start_loc[args->batch] * (size_t)args->num_heads * (size_t)args->head_dim * 2;
    unsigned char *out = args->out;
    out[-1] = 0;
    out[bytes] = 0;
    ((unsigned char *)(uintptr_t)args->q)[0] ^= 1;
    ((unsigned char *)(uintptr_t)args->block_table)[-2] = 0;
    return PPBK_OK;
#else
    if (why && why_len)
        snprintf(why, why_len, "a broken test plugin runs nothing");
    return PPBK_FAILED;
#endif
}

#ifdef BAD_RESOURCES
static int bad_prepare(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg,
                       const ppb_prefill_args *shape, ppbk_resources *out, char *why, size_t why_len)
{
    (void)ctx, (void)dev, (void)cfg, (void)shape, (void)why, (void)why_len;
    out->registers = INT_MAX;
    out->static_smem = -1;
    return PPBK_OK;
}
static const ppbk_prefill_ops bad_prefill = {bad_refuse, bad_launch, bad_prepare, PPB_KV_LAYOUT_VLLM, NULL};
#else
#if defined(BAD_LAYOUT) || defined(BAD_ABI3)
#define BAD_KV_LAYOUT 7 /* no such layout; in a version-3 table, bytes ppbench must never read */
#else
#define BAD_KV_LAYOUT PPB_KV_LAYOUT_VLLM
#endif
#ifdef BAD_ABI3
static int bad_stage(void *ctx, const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *args,
                     void *stream, char *why, size_t why_len)
{
    (void)ctx, (void)dev, (void)cfg, (void)args, (void)stream;
    snprintf(why, why_len, "the stage of a version-3 table was called");
    return PPBK_FAILED;
}
#define BAD_STAGE bad_stage /* in a version-3 table, bytes ppbench must never read */
#else
#define BAD_STAGE NULL
#endif
static const ppbk_prefill_ops bad_prefill = {bad_refuse, bad_launch, NULL, BAD_KV_LAYOUT, BAD_STAGE};
#endif

static const ppbk_impl bad_impl = {
#ifdef BAD_VERSION
    .abi_version = 999,
#elif defined(BAD_ABI3)
    .abi_version = 3,
#else
    .abi_version = PPBK_ABI_VERSION,
#endif
    .struct_size = sizeof(ppbk_impl),
#ifdef BAD_NAME
    .name = "bad name!",
#elif defined(BAD_NONUL)
    .name = "bad-nonul",
#elif defined(BAD_EXIT)
    .name = "bad-exit",
#elif defined(BAD_RESOURCES)
    .name = "bad-resources",
#elif defined(BAD_SCRIBBLE) && defined(BAD_CUDA)
    .name = "bad-scribble-cuda",
#elif defined(BAD_SCRIBBLE)
    .name = "bad-scribble",
#elif defined(BAD_HANG)
    .name = "bad-hang",
#elif defined(BAD_ABI3)
    .name = "abi3-plugin",
#elif defined(BAD_LAYOUT)
    .name = "bad-layout",
#else
    .name = "bad-plugin",
#endif
#ifdef BAD_RESOURCES
    .version = "1\x1b]0;owned\x07\r2",
#else
    .version = "0",
#endif
    .source = "ppbench tests/plugin/bad_plugins.c",
#ifdef BAD_CUDA
    .backends = PPBK_BACKEND_CUDA,
#else
    .backends = PPBK_BACKEND_CPU,
#endif
    .prefill = &bad_prefill,
};

#ifdef BAD_NOSYM
EXPORT const ppbk_impl *ppbk_entry_point(void); /* not PPBK_ENTRY_SYMBOL */
EXPORT const ppbk_impl *ppbk_entry_point(void)
#else
EXPORT const ppbk_impl *ppbk_entry(void);
EXPORT const ppbk_impl *ppbk_entry(void)
#endif
{
#ifdef BAD_NULL
    (void)bad_impl; /* a table exists; it is just not handed out */
    return NULL;
#else
    return &bad_impl;
#endif
}

#endif /* BAD_ABI2 */
