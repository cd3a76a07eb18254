#include "ppb_builtin.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "builtin_plan.h"

/* The runtime the table launches through, and the kernels of the case last
 * prepared: launch runs in the timing loop, so it reuses them instead of
 * planning and looking up again (a config it was not prepared for is planned
 * from scratch, never launched with another's plan). */
static struct {
    ppb_kernels *rt;
    int aot;                           /* the runtime launches the ahead-of-time table (no wgmma path) */
    char source[128];
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
} g = {.kind = -1};

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

static int plan(int kind, const ppbk_device *dev, const void *cfg, const void *shape, ppb_builtin_launch *out,
                ppb_err *err)
{
    return kind == PPB_KSPEC_PREFILL ? ppb_builtin_plan_prefill(dev, g.aot, cfg, shape, out, err)
                                     : ppb_builtin_plan_decode(dev, cfg, shape, out, err);
}

static int refuse(int kind, const ppbk_device *dev, const void *cfg, const void *shape, char *why, size_t why_len)
{
    ppb_builtin_launch l;
    ppb_err err;
    int rc = plan(kind, dev, cfg, shape, &l, &err);
    if (rc == PPB_OK) {
        snprintf(why, why_len, "%s", l.note);
        return PPBK_OK;
    }
    return to_abi(rc, &err, why, why_len);
}

/* Compile or find the case's kernels and remember them for launch. */
static int prepare(int kind, const ppbk_device *dev, const void *cfg, const void *shape, ppbk_resources *res,
                   ppb_err *err)
{
    g.kind = -1;
    if (!g.rt)
        return ppb_fail(err, PPB_EFAIL, "the built-in kernels have no runtime bound");
    int rc = plan(kind, dev, cfg, shape, &g.launch, err);
    ppbk_resources main_res = {0};
    for (int i = 0; rc == PPB_OK && i < g.launch.n_specs; i++)
        rc = ppb_kernels_get(g.rt, &g.launch.spec[i], &g.kernel[i], i == 0 ? &main_res : NULL, err);
    if (rc)
        return rc;
    long need = (long)main_res.static_smem + (long)g.launch.plan[0].dynamic_smem;
    if (need > dev->smem_optin)
        return ppb_fail(err, PPB_EREFUSED,
                        "needs %ld B of shared memory per block (%d static, compiled + %u dynamic, planned); "
                        "the limit here is %ld B",
                        need, main_res.static_smem, g.launch.plan[0].dynamic_smem, dev->smem_optin);
    main_res.dynamic_smem = (int)g.launch.plan[0].dynamic_smem;
    if (res)
        *res = main_res;
    g.kind = kind;
    g.cfg_size = kind == PPB_KSPEC_PREFILL ? sizeof g.cfg.prefill : sizeof g.cfg.decode;
    memcpy(&g.cfg, cfg, g.cfg_size);
    const char *region;
    shape_region(kind, shape, &region, &g.shape_size);
    memcpy(g.shape, region, g.shape_size);
    return PPB_OK;
}

void ppb_builtin_prefetch(int kind, const ppbk_device *dev, const void *cfg, const void *shape)
{
    ppb_builtin_launch l;
    ppb_err ignored;
    if (g.rt && plan(kind, dev, cfg, shape, &l, &ignored) == PPB_OK)
        ppb_kernels_prefetch(g.rt, l.spec, l.n_specs);
}

/* Whether the last prepared case is this one (configs are all ints: no padding). */
static int prepared_for(int kind, const void *cfg, const void *args)
{
    const char *region;
    size_t len;
    shape_region(kind, args, &region, &len);
    return g.kind == kind && memcmp(cfg, &g.cfg, g.cfg_size) == 0 && len == g.shape_size &&
           memcmp(region, g.shape, len) == 0;
}

static int launch(int kind, const ppbk_device *dev, const void *cfg, const void *args, void *stream, char *why,
                  size_t why_len)
{
    ppb_err err;
    int rc = PPB_OK;
    if (!prepared_for(kind, cfg, args))
        rc = prepare(kind, dev, cfg, args, NULL, &err);
    size_t size = kind == PPB_KSPEC_PREFILL ? sizeof(ppb_prefill_args) : sizeof(ppb_decode_args);
    for (int i = 0; rc == PPB_OK && i < g.launch.n_specs; i++)
        rc = ppb_kernels_launch(g.kernel[i], &g.launch.plan[i], args, size, stream, &err);
    return to_abi(rc, &err, why, why_len);
}

/* ---- the ABI entry points ------------------------------------------------------------ */

/* The ABI wants one typed function per kernel kind and step; each is a thin
 * cast onto the kind-generic refuse / prepare / launch above, so one macro
 * writes both kinds' sets and they cannot drift apart. */
#define ABI_ENTRY_POINTS(prefix, kind, config_t, args_t)                                               \
    static int prefix##_refuse(const ppbk_device *d, const config_t *c, const args_t *s, char *w,      \
                               size_t n)                                                               \
    {                                                                                                  \
        return refuse(kind, d, c, s, w, n);                                                            \
    }                                                                                                  \
    static int prefix##_prepare(const ppbk_device *d, const config_t *c, const args_t *s,              \
                                ppbk_resources *r, char *w, size_t n)                                  \
    {                                                                                                  \
        ppb_err err;                                                                                   \
        return to_abi(prepare(kind, d, c, s, r, &err), &err, w, n);                                    \
    }                                                                                                  \
    static int prefix##_launch(const ppbk_device *d, const config_t *c, const args_t *a, void *st,     \
                               char *w, size_t n)                                                      \
    {                                                                                                  \
        return launch(kind, d, c, a, st, w, n);                                                        \
    }

ABI_ENTRY_POINTS(prefill, PPB_KSPEC_PREFILL, ppbk_prefill_config, ppb_prefill_args)
ABI_ENTRY_POINTS(decode, PPB_KSPEC_DECODE, ppbk_decode_config, ppb_decode_args)
#undef ABI_ENTRY_POINTS

static int builtin_open(const ppbk_device *dev, char *why, size_t why_len)
{
    if (!g.rt) {
        snprintf(why, why_len, "the built-in kernels have no runtime bound");
        return PPBK_FAILED;
    }
    if (dev->backend != PPBK_BACKEND_CUDA) {
        snprintf(why, why_len, "the built-in CUDA kernels run on the cuda backend only");
        return PPBK_REFUSED;
    }
    return PPBK_OK;
}

static const ppbk_prefill_ops prefill_ops = {prefill_refuse, prefill_launch, prefill_prepare};
/* v1 and v2 are one kernel template; the config's version picks the instantiation. */
static const ppbk_decode_ops decode_ops = {decode_refuse, decode_launch, decode_prepare};

static ppbk_impl table = {
    .abi_version = PPBK_ABI_VERSION,
    .struct_size = sizeof(ppbk_impl),
    .name = PPB_BUILTIN_IMPL_NAME,
    .version = "ppbench kernels",
    .source = g.source,
    .backends = PPBK_BACKEND_CUDA,
    .open = builtin_open,
    .prefill = &prefill_ops,
    .decode_v1 = &decode_ops,
    .decode_v2 = &decode_ops,
};

const ppbk_impl *ppb_builtin_impl(ppb_kernels *runtime)
{
    g.rt = runtime;
    g.kind = -1;
    if (runtime) {
        ppb_kernels_info info;
        ppb_kernels_get_info(runtime, &info);
        g.aot = strcmp(info.mechanism, "aot") == 0;
        snprintf(g.source, sizeof g.source, "kernels/ (%s%s%s)", info.mechanism,
                 info.sources_hash[0] ? ", sources fnv1a64 " : "", info.sources_hash);
    }
    return &table;
}
