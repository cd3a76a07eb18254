#include "builtin_plan.h"

#include <stdio.h>
#include <string.h>

#include "decode_plan.h"
#include "ppb_kernel_params.h"
#include "prefill_plan.h"

/* A spec's tensor-core level is the prefill kernel's PATH argument (one number, two headers). */
_Static_assert(PPB_KSPEC_MMA_SYNC == PPB_PREFILL_PATH_MMA && PPB_KSPEC_MMA_WGMMA == PPB_PREFILL_PATH_WGMMA,
               "tensor-core levels differ between kernel_spec.h and prefill_plan.h");

/* The hand-written config structs against the parameter lists (ppb_kernel_params.h): every
 * listed member is an int of the struct (a missing one does not compile), and the struct holds
 * nothing but the listed members and the ones named below (a member added to a struct alone
 * fails its size). The plans' configs hold the built-in kernels' parameters only. The
 * conversions here and in harness/core/kernel_view.c copy by name. */
#define ASSERT_INT_MEMBER(type, name, ...)                                                                  \
    _Static_assert(sizeof(((type *)0)->name) == sizeof(int), #type "." #name ": the parameter lists "    \
                                                                   "(ppb_kernel_params.h) name it, as an int");
PPBK_CONFIG_SHAPE_FACTS(ASSERT_INT_MEMBER, ppbk_prefill_config)
PPBK_PREFILL_PARAMS(ASSERT_INT_MEMBER, ppbk_prefill_config)
PPBK_CONFIG_SHAPE_FACTS(ASSERT_INT_MEMBER, ppbk_decode_config)
PPBK_DECODE_PARAMS(ASSERT_INT_MEMBER, ppbk_decode_config)
PPBK_PREFILL_BUILTIN_PARAMS(ASSERT_INT_MEMBER, ppb_prefill_config)
PPBK_DECODE_BUILTIN_PARAMS(ASSERT_INT_MEMBER, ppb_decode_config)
#undef ASSERT_INT_MEMBER
_Static_assert(sizeof(ppbk_prefill_config) ==
                   sizeof(int) * (PPBK_CONFIG_SHAPE_FACT_COUNT + PPBK_PREFILL_PARAM_COUNT + 1 /* path */),
               "ppbk_prefill_config and the parameter list (ppb_kernel_params.h) differ");
_Static_assert(sizeof(ppbk_decode_config) ==
                   sizeof(int) * (PPBK_CONFIG_SHAPE_FACT_COUNT + PPBK_DECODE_PARAM_COUNT + 1 /* path */),
               "ppbk_decode_config and the parameter list (ppb_kernel_params.h) differ");
_Static_assert(sizeof(ppb_prefill_config) ==
                   sizeof(int) * (PPBK_PREFILL_BUILTIN_PARAM_COUNT + 2 /* use_mma, warp_size */),
               "ppb_prefill_config and the built-in parameter list (ppb_kernel_params.h) differ");
_Static_assert(sizeof(ppb_decode_config) ==
                   sizeof(int) * (PPBK_DECODE_BUILTIN_PARAM_COUNT + 2 /* use_mma, warp_size */),
               "ppb_decode_config and the built-in parameter list (ppb_kernel_params.h) differ");

ppb_prefill_config ppb_builtin_prefill_plan_config(const ppbk_prefill_config *cfg, int use_mma, int warp_size)
{
    return (ppb_prefill_config){PPBK_PREFILL_BUILTIN_PARAMS(PPBK_INIT_FROM, cfg) .use_mma = use_mma,
                                .warp_size = warp_size};
}

ppb_decode_config ppb_builtin_decode_plan_config(const ppbk_decode_config *cfg, int use_mma, int warp_size)
{
    return (ppb_decode_config){PPBK_DECODE_BUILTIN_PARAMS(PPBK_INIT_FROM, cfg) .use_mma = use_mma,
                               .warp_size = warp_size};
}

/* A parameter only other implementations take, set to anything but its default: the built-in
 * kernels cannot honour it, and running the case anyway would store their own behaviour
 * under a config that asked for another. */
#define REFUSE_UNLESS_DEFAULT(kernel, name, NAME, key, min, max, def, omit)                                   \
    if (cfg->name != (def))                                                                                   \
        return ppb_fail(err, PPB_EREFUSED,                                                                    \
                        #name "=%d: the built-in " kernel " kernel has no " #name " (a knob of other "         \
                        "implementations, such as vllm-triton's); it runs " #name "=%d only, its own choice",  \
                        cfg->name, (def));

int ppb_builtin_refuse_prefill_params(const ppbk_prefill_config *cfg, ppb_err *err)
{
    PPBK_PREFILL_PLUGIN_ONLY_PARAMS(REFUSE_UNLESS_DEFAULT, "prefix_prefill")
    (void)cfg, (void)err;
    return PPB_OK;
}

int ppb_builtin_refuse_decode_params(const ppbk_decode_config *cfg, ppb_err *err)
{
    PPBK_DECODE_PLUGIN_ONLY_PARAMS(REFUSE_UNLESS_DEFAULT, "paged_attention")
    (void)cfg, (void)err;
    return PPB_OK;
}
#undef REFUSE_UNLESS_DEFAULT

int ppb_builtin_use_mma(int path, int cc, int *use_mma, ppb_err *err)
{
    switch (path) {
    case PPBK_PATH_SIMT: *use_mma = 0; return PPB_OK;
    case PPBK_PATH_AUTO: *use_mma = cc >= PPB_MMA_MIN_CC; return PPB_OK;
    case PPBK_PATH_MMA:
        if (cc < PPB_MMA_MIN_CC)
            return ppb_fail(err, PPB_EREFUSED,
                            "path=mma needs compute capability %d.%d (tensor-core mma); this device is %d.%d",
                            PPB_MMA_MIN_CC / 10, PPB_MMA_MIN_CC % 10, cc / 10, cc % 10);
        *use_mma = 1;
        return PPB_OK;
    case PPBK_PATH_WGMMA:
        if (cc != PPB_WGMMA_CC)
            return ppb_fail(err, PPB_EREFUSED,
                            "path=wgmma needs compute capability %d.%d (warpgroup MMA, sm_%da); this device is %d.%d",
                            PPB_WGMMA_CC / 10, PPB_WGMMA_CC % 10, PPB_WGMMA_CC, cc / 10, cc % 10);
        *use_mma = PPB_KSPEC_MMA_WGMMA;
        return PPB_OK;
    default: return ppb_fail(err, PPB_EINPUT, "path=%d is not a code path", path);
    }
}

/* path=auto on the prefill kernel: the wgmma path on compute capability 9.0 for every
 * config it can run (128/128/8, 128/64/8, 64/128/4, 64/64/4 at D 64 and 128), where it was
 * measured faster than mma.sync: 128-row configs on all four kernel-bench anchors, and the
 * 64-row ones on every shape of suites/prefill.yaml it runs, by 8-74% (H200, ppbench run of
 * both paths side by side; docs/BENCHMARKS.md, prefill). Other configs keep mma.sync. */
static int auto_prefers_wgmma(const ppbk_prefill_config *cfg, const ppbk_device *dev)
{
    if (dev->cc != PPB_WGMMA_CC)
        return 0;
    ppb_prefill_config pc = ppb_builtin_prefill_plan_config(cfg, PPB_PREFILL_PATH_WGMMA, dev->warp_size);
    return ppb_prefill_config_check(&pc, cfg->head_dim, cfg->dtype, (unsigned)dev->smem_optin, NULL, 0) == 0;
}

unsigned ppb_smem_optin_for_cc(int cc)
{
    if (cc >= 90)
        return 232448; /* 227 KB: Hopper */
    if (cc == 80 || cc == 87)
        return 166912; /* 163 KB: A100, Orin */
    if (cc >= 86)
        return 101376; /* 99 KB: GA10x, Ada */
    if (cc >= 75)
        return 65536;  /* Turing */
    if (cc >= 70)
        return 98304;  /* 96 KB: Volta */
    return 49152;
}

/* One path's plan: 0, or -1 with the plan's reason (the plans' convention). */
typedef int (*plan_fn)(const void *cfg, const void *shape, const ppbk_device *dev, int use_mma,
                       ppb_builtin_launch *out, char *reason, unsigned reason_len);

static int plan_prefill_path(const void *cfgp, const void *shapep, const ppbk_device *dev, int use_mma,
                             ppb_builtin_launch *out, char *reason, unsigned reason_len)
{
    const ppbk_prefill_config *cfg = cfgp;
    ppb_prefill_config pc = ppb_builtin_prefill_plan_config(cfg, use_mma, dev->warp_size);
    memset(out->plan, 0, sizeof out->plan);
    if (ppb_prefill_plan(&pc, shapep, cfg->head_dim, cfg->dtype, (unsigned)dev->smem_optin, &out->plan[0], reason,
                         reason_len) != 0)
        return -1;
    memset(out->spec, 0, sizeof out->spec);
    out->spec[0] = (ppb_kernel_spec){.kind = PPB_KSPEC_PREFILL, .dtype = cfg->dtype, .head_dim = cfg->head_dim,
                                     .use_mma = use_mma, .block_m = cfg->block_m, .block_n = cfg->block_n,
                                     .num_warps = cfg->num_warps};
    out->n_specs = 1;
    return 0;
}

static int plan_decode_path(const void *cfgp, const void *shapep, const ppbk_device *dev, int use_mma,
                            ppb_builtin_launch *out, char *reason, unsigned reason_len)
{
    const ppbk_decode_config *cfg = cfgp;
    if (use_mma == PPB_KSPEC_MMA_WGMMA) {
        snprintf(reason, reason_len, "path=wgmma: the decode kernels have no wgmma path (prefill only)");
        return -1;
    }
    ppb_decode_config dc = ppb_builtin_decode_plan_config(cfg, use_mma, dev->warp_size);
    memset(out->plan, 0, sizeof out->plan);
    if (ppb_decode_plan(&dc, shapep, cfg->head_dim, cfg->page_size, cfg->dtype, (unsigned)dev->smem_optin,
                        &out->plan[0], &out->plan[1], reason, reason_len) != 0)
        return -1;
    int v2 = cfg->version == 2;
    memset(out->spec, 0, sizeof out->spec);
    out->spec[0] = (ppb_kernel_spec){.kind = PPB_KSPEC_DECODE, .dtype = cfg->dtype, .head_dim = cfg->head_dim,
                                     .use_mma = use_mma, .page_size = cfg->page_size,
                                     .num_threads = cfg->num_threads,
                                     .partition_size = v2 ? cfg->partition_size : 0};
    if (v2)
        out->spec[1] = (ppb_kernel_spec){.kind = PPB_KSPEC_DECODE_REDUCE, .dtype = cfg->dtype,
                                         .head_dim = cfg->head_dim, .num_threads = cfg->num_threads,
                                         .partition_size = cfg->partition_size};
    out->n_specs = v2 ? 2 : 1;
    return 0;
}

/* The path rule, for both kernels: an explicit path is planned as asked; auto
 * asks for "the best this device has" (prefer_wgmma: the prefill rule above),
 * so the portable path is next when the tensor-core plan refuses. */
static int plan_with_path(plan_fn plan, const void *cfg, const void *shape, int path, int prefer_wgmma,
                          const ppbk_device *dev, ppb_builtin_launch *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    int use_mma = 0;
    int rc = ppb_builtin_use_mma(path, dev->cc, &use_mma, err);
    if (rc)
        return rc;
    if (path == PPBK_PATH_AUTO && prefer_wgmma)
        use_mma = PPB_KSPEC_MMA_WGMMA;
    char reason[400] = "";
    if (plan(cfg, shape, dev, use_mma, out, reason, sizeof reason) == 0) {
        out->use_mma = use_mma;
        return PPB_OK;
    }
    if (!(path == PPBK_PATH_AUTO && use_mma))
        return ppb_fail(err, PPB_EREFUSED, "%s", reason);
    char simt_reason[400] = "";
    const char *tried = use_mma == PPB_KSPEC_MMA_WGMMA ? "wgmma" : "mma";
    if (plan(cfg, shape, dev, 0, out, simt_reason, sizeof simt_reason) != 0)
        return ppb_fail(err, PPB_EREFUSED, "%s path: %s; simt path: %s", tried, reason, simt_reason);
    out->use_mma = 0;
    snprintf(out->note, sizeof out->note, "path auto ran simt: the %s path refused (%s)", tried, reason);
    return PPB_OK;
}

int ppb_builtin_plan_prefill(const ppbk_device *dev, int aot, const ppbk_prefill_config *cfg,
                             const ppb_prefill_args *shape, ppb_builtin_launch *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = ppb_builtin_refuse_prefill_params(cfg, err);
    if (rc)
        return rc;
    if (aot && cfg->path == PPBK_PATH_WGMMA)
        return ppb_fail(err, PPB_EREFUSED,
                        "path=wgmma: ahead-of-time kernels have no wgmma path (NVRTC compiles it for sm_%da)",
                        PPB_WGMMA_CC);
    return plan_with_path(plan_prefill_path, cfg, shape, cfg->path, !aot && auto_prefers_wgmma(cfg, dev), dev, out,
                          err);
}

int ppb_builtin_plan_decode(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                            ppb_builtin_launch *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = ppb_builtin_refuse_decode_params(cfg, err);
    if (rc)
        return rc;
    return plan_with_path(plan_decode_path, cfg, shape, cfg->path, 0, dev, out, err);
}
