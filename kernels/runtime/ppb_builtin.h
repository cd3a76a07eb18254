/* ppbench's own kernels as one implementation of the kernel ABI
 * (ppb_kernel_abi.h), the same table a plugin library hands over: the
 * harness runs them through exactly the code that runs vLLM's kernels.
 *
 * refuse: builtin_plan.h (code path, launch shape, or the reason not);
 * prepare: compiles or finds the instantiations in the runtime (ppb_kernels.h)
 * and checks static + dynamic shared memory against the device's limit;
 * launch: the main kernel, then the v2 reduce. */
#ifndef PPB_BUILTIN_H
#define PPB_BUILTIN_H

#include "ppb_kernel_abi.h"
#include "ppb_kernels.h"

#define PPB_BUILTIN_IMPL_NAME "builtin"

/* The table, launching through `runtime` (owned by the caller, who keeps it
 * open while the table is in use). One runtime at a time per process: a later
 * call rebinds the table; NULL unbinds it (open then fails with a reason). */
const ppbk_impl *ppb_builtin_impl(ppb_kernels *runtime);

/* Start loading the kernels the table would launch for a config
 * (ppb_kernels_prefetch), ahead of its prepare: kind PPB_KSPEC_PREFILL with a
 * ppbk_prefill_config and ppb_prefill_args, PPB_KSPEC_DECODE with the decode
 * ones. A config the plan refuses loads nothing (its prepare says why). */
void ppb_builtin_prefetch(int kind, const ppbk_device *dev, const void *cfg, const void *shape);

#endif
