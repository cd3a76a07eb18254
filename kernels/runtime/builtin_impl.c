#include "ppb_builtin.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin_plan.h"

/* The context: the runtime the table launches through, and the kernels of the
 * case last prepared: launch runs in the timing loop, so it reuses them
 * instead of planning and looking up again (a config it was not prepared for
 * is planned from scratch, never launched with another's plan). */
struct ppb_builtin {
    ppb_kernels *rt;
    int aot;                           /* the runtime launches the ahead-of-time table (no wgmma path) */
    int kind;                          /* PPB_KSPEC_PREFILL or PPB_KSPEC_DECODE; -1: none */
    union {
        ppbk_prefill_config prefill;
        ppbk_decode_config decode;
    } cfg;
    size_t cfg_size;
    char shape[sizeof(ppb_prefill_args) + sizeof(ppb_decode_args)];   /* shape_region's bytes */
    size_t shape_size;
    ppb_builtin_launch launch;
    ppb_kernel *kernel[2];
};

static int to_abi(int rc, const ppb_err *err, char *why, size_t why_len)
{
    if (rc == PPB_OK)
        return PPBK_OK;
    snprintf(why, why_len, "%s", err->msg);
    return rc == PPB_EREFUSED ? PPBK_REFUSED : PPBK_FAILED;
}

/* The scalar fields of the argument structs (batch .. sm_scale, contiguous in
 * both): what a plan depends on, without the pointers and padding. */
static void shape_region(int kind, const void *args, const char **start, size_t *len)
{
    size_t from, to;
    if (kind == PPB_KSPEC_PREFILL) {
        from = offsetof(ppb_prefill_args, batch);
        to = offsetof(ppb_prefill_args, sm_scale) + sizeof(float);
    } else {
        from = offsetof(ppb_decode_args, num_seqs);
        to = offsetof(ppb_decode_args, sm_scale) + sizeof(float);
    }
    *start = (const char *)args + from;
    *len = to - from;
}

static int plan(const ppb_builtin *bi, int kind, const ppbk_device *dev, const void *cfg, const void *shape,
                ppb_builtin_launch *out, ppb_err *err)
{
    return kind == PPB_KSPEC_PREFILL ? ppb_builtin_plan_prefill(dev, bi->aot, cfg, shape, out, err)
                                     : ppb_builtin_plan_decode(dev, cfg, shape, out, err);
}

static int no_context(ppb_err *err)
{
    return ppb_fail(err, PPB_EFAIL, "the built-in kernels were called without their context (ppb_builtin_open)");
}

static int refuse(ppb_builtin *bi, int kind, const ppbk_device *dev, const void *cfg, const void *shape, char *why,
                  size_t why_len)
{
    ppb_builtin_launch l;
    ppb_err err;
    int rc = bi ? plan(bi, kind, dev, cfg, shape, &l, &err) : no_context(&err);
    if (rc == PPB_OK) {
        snprintf(why, why_len, "%s", l.note);
        return PPBK_OK;
    }
    return to_abi(rc, &err, why, why_len);
}

/* Compile or find the case's kernels and remember them for launch. */
static int prepare(ppb_builtin *bi, int kind, const ppbk_device *dev, const void *cfg, const void *shape,
                   ppbk_resources *res, ppb_err *err)
{
    if (!bi)
        return no_context(err);
    bi->kind = -1;
    int rc = plan(bi, kind, dev, cfg, shape, &bi->launch, err);
    ppbk_resources main_res = {0};
    for (int i = 0; rc == PPB_OK && i < bi->launch.n_specs; i++)
        rc = ppb_kernels_get(bi->rt, &bi->launch.spec[i], &bi->kernel[i], i == 0 ? &main_res : NULL, err);
    if (rc)
        return rc;
    long need = (long)main_res.static_smem + (long)bi->launch.plan[0].dynamic_smem;
    if (need > dev->smem_optin)
        return ppb_fail(err, PPB_EREFUSED,
                        "needs %ld B of shared memory per block (%d static, compiled + %u dynamic, planned); "
                        "the limit here is %ld B",
                        need, main_res.static_smem, bi->launch.plan[0].dynamic_smem, dev->smem_optin);
    main_res.dynamic_smem = (int)bi->launch.plan[0].dynamic_smem;
    if (res)
        *res = main_res;
    bi->kind = kind;
    bi->cfg_size = kind == PPB_KSPEC_PREFILL ? sizeof bi->cfg.prefill : sizeof bi->cfg.decode;
    memcpy(&bi->cfg, cfg, bi->cfg_size);
    const char *region;
    shape_region(kind, shape, &region, &bi->shape_size);
    memcpy(bi->shape, region, bi->shape_size);
    return PPB_OK;
}

void ppb_builtin_prefetch(ppb_builtin *bi, int kind, const ppbk_device *dev, const void *cfg, const void *shape)
{
    ppb_builtin_launch l;
    ppb_err ignored;
    if (bi && plan(bi, kind, dev, cfg, shape, &l, &ignored) == PPB_OK)
        ppb_kernels_prefetch(bi->rt, l.spec, l.n_specs);
}

/* Whether the last prepared case is this one (configs are all ints: no padding). */
static int prepared_for(const ppb_builtin *bi, int kind, const void *cfg, const void *args)
{
    const char *region;
    size_t len;
    shape_region(kind, args, &region, &len);
    return bi->kind == kind && memcmp(cfg, &bi->cfg, bi->cfg_size) == 0 && len == bi->shape_size &&
           memcmp(region, bi->shape, len) == 0;
}

static int launch(ppb_builtin *bi, int kind, const ppbk_device *dev, const void *cfg, const void *args, void *stream,
                  char *why, size_t why_len)
{
    ppb_err err;
    int rc = !bi ? no_context(&err) : prepared_for(bi, kind, cfg, args) ? PPB_OK
                                                                        : prepare(bi, kind, dev, cfg, args, NULL, &err);
    size_t size = kind == PPB_KSPEC_PREFILL ? sizeof(ppb_prefill_args) : sizeof(ppb_decode_args);
    for (int i = 0; rc == PPB_OK && i < bi->launch.n_specs; i++)
        rc = ppb_kernels_launch(bi->kernel[i], &bi->launch.plan[i], args, size, stream, &err);
    return to_abi(rc, &err, why, why_len);
}

/* ---- the ABI entry points ------------------------------------------------------------ */

/* The ABI wants one typed function per kernel kind and step; each is a thin
 * cast onto the kind-generic refuse / prepare / launch above, so one macro
 * writes both kinds' sets and they cannot drift apart. */
#define ABI_ENTRY_POINTS(prefix, kind, config_t, args_t)                                               \
    static int prefix##_refuse(void *ctx, const ppbk_device *d, const config_t *c, const args_t *s,    \
                               char *w, size_t n)                                                      \
    {                                                                                                  \
        return refuse(ctx, kind, d, c, s, w, n);                                                       \
    }                                                                                                  \
    static int prefix##_prepare(void *ctx, const ppbk_device *d, const config_t *c, const args_t *s,   \
                                ppbk_resources *r, char *w, size_t n)                                  \
    {                                                                                                  \
        ppb_err err;                                                                                   \
        return to_abi(prepare(ctx, kind, d, c, s, r, &err), &err, w, n);                               \
    }                                                                                                  \
    static int prefix##_launch(void *ctx, const ppbk_device *d, const config_t *c, const args_t *a,    \
                               void *st, char *w, size_t n)                                            \
    {                                                                                                  \
        return launch(ctx, kind, d, c, a, st, w, n);                                                   \
    }

ABI_ENTRY_POINTS(prefill, PPB_KSPEC_PREFILL, ppbk_prefill_config, ppb_prefill_args)
ABI_ENTRY_POINTS(decode, PPB_KSPEC_DECODE, ppbk_decode_config, ppb_decode_args)
#undef ABI_ENTRY_POINTS

static const ppbk_prefill_ops prefill_ops = {prefill_refuse, prefill_launch, prefill_prepare, PPB_KV_LAYOUT_VLLM, NULL};
/* v1 and v2 are one kernel template; the config's version picks the instantiation. */
static const ppbk_decode_ops decode_ops = {decode_refuse, decode_launch, decode_prepare, PPB_KV_LAYOUT_VLLM};

/* No open or close: ppb_builtin_open makes the context over the caller's
 * runtime (the mechanism and sources hash are the run's kernels.* facts). */
static const ppbk_impl table = {
    .abi_version = PPBK_ABI_VERSION,
    .struct_size = sizeof(ppbk_impl),
    .name = PPB_BUILTIN_IMPL_NAME,
    .version = "ppbench kernels",
    .source = "kernels/ (NVRTC or the ahead-of-time table)",
    .backends = PPBK_BACKEND_CUDA,
    .open = NULL,
    .close = NULL,
    .prefill = &prefill_ops,
    .decode_v1 = &decode_ops,
    .decode_v2 = &decode_ops,
};

const ppbk_impl *ppb_builtin_impl(void)
{
    return &table;
}

int ppb_builtin_open(ppb_kernels *runtime, ppb_builtin **out, ppb_err *err)
{
    *out = NULL;
    if (!runtime)
        return ppb_fail(err, PPB_EINPUT, "the built-in kernels need a kernel runtime");
    ppb_builtin *bi = calloc(1, sizeof *bi);
    if (!bi)
        return ppb_fail(err, PPB_ENOMEM, "out of memory for the built-in kernels' context");
    bi->rt = runtime;
    bi->kind = -1;
    ppb_kernels_info info;
    ppb_kernels_get_info(runtime, &info);
    bi->aot = strcmp(info.mechanism, "aot") == 0;
    *out = bi;
    return PPB_OK;
}

void ppb_builtin_close(ppb_builtin *bi)
{
    free(bi);
}
