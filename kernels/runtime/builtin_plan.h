/* How ppbench's own kernels run a config: the code path (tensor-core or
 * portable), the template instantiations (kernel_spec.h) and the launch
 * shapes (prefill_plan.h, decode_plan.h), or why they cannot.
 *
 * One function per kernel answers for every caller: the built-in ABI table
 * (ppb_builtin.h) when it refuses and launches, `ppbench list-kernels`, the
 * ahead-of-time build's list and the compile check, so what is compiled is
 * exactly what would run. Plain C, no CUDA: CPU builds list kernels too. */
#ifndef PPB_BUILTIN_PLAN_H
#define PPB_BUILTIN_PLAN_H

#include "decode_plan.h"
#include "kernel_spec.h"
#include "launch_plan.h"
#include "ppb_error.h"
#include "ppb_kernel_abi.h"
#include "prefill_plan.h"

typedef struct ppb_builtin_launch {
    int use_mma;                 /* 0 portable, 1 mma.sync, 2 wgmma (kernel_spec.h PPB_KSPEC_MMA_*) */
    char note[400];              /* path auto fell back to the portable path: why; else "" */
    ppb_kernel_spec spec[2];     /* the main kernel; [1]: the v2 reduce */
    int n_specs;
    ppb_launch_plan plan[2];
} ppb_builtin_launch;

/* Which tensor-core level a path asks for on a device of compute capability
 * `cc` (major * 10 + minor): SIMT 0, MMA 1 (PPB_EREFUSED below PPB_MMA_MIN_CC),
 * WGMMA 2 (PPB_EREFUSED unless cc is PPB_WGMMA_CC), AUTO 1 when cc allows it
 * (the prefill plan may then prefer 2: builtin_plan.c, auto_prefers_wgmma). */
int ppb_builtin_use_mma(int path, int cc, int *use_mma, ppb_err *err);

/* Plan a config on a device (its cc, warp size and smem_optin). PATH_AUTO
 * takes the tensor-core path when cc allows it and its plan accepts the case
 * (prefill on compute capability 9.0: wgmma for the configs it was measured
 * faster on, unless `aot`: kernels from the ahead-of-time table, which has no
 * wgmma path; path=wgmma is then refused), else the portable one (and says
 * why in out->note). PPB_EREFUSED with the
 * plan's one-line reason when the config cannot run. `shape` carries the
 * argument struct's shape fields (decode v2: max_num_partitions is the
 * kernel's own count); its pointers are not read. */
int ppb_builtin_plan_prefill(const ppbk_device *dev, int aot, const ppbk_prefill_config *cfg,
                             const ppb_prefill_args *shape, ppb_builtin_launch *out, ppb_err *err);
int ppb_builtin_plan_decode(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                            ppb_builtin_launch *out, ppb_err *err);

/* The parameters the built-in kernels do not have (ppb_kernel_params.h's
 * *_PLUGIN_ONLY_PARAMS: prefill num_stages): PPB_EREFUSED, naming it, unless
 * each is at its default. The plans above ask first; the CPU backend, which
 * runs the built-in kernels' algorithms without planning them, asks too. */
int ppb_builtin_refuse_prefill_params(const ppbk_prefill_config *cfg, ppb_err *err);
int ppb_builtin_refuse_decode_params(const ppbk_decode_config *cfg, ppb_err *err);

/* The plans' config of an ABI config: the parameters copied member by member
 * (ppb_kernel_params.h), with the code path the plan is for (use_mma:
 * PPB_PREFILL_PATH_* / decode 0 or 1) and the warp size the kernel is compiled
 * with. The one conversion: the plans here and the harness's target check
 * (`ppbench check`) both go through it. */
ppb_prefill_config ppb_builtin_prefill_plan_config(const ppbk_prefill_config *cfg, int use_mma, int warp_size);
ppb_decode_config ppb_builtin_decode_plan_config(const ppbk_decode_config *cfg, int use_mma, int warp_size);

/* Per-block shared memory a device of compute capability cc can opt in to:
 * the stand-in for a device that is not here (list-kernels, the compile check). */
unsigned ppb_smem_optin_for_cc(int cc);

#endif
