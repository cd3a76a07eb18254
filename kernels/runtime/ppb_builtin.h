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

/* The context the table's calls take: the runtime they launch through and
 * the kernels of the case last prepared. One per runtime; nothing is shared
 * between two (the table keeps no state of its own). */
typedef struct ppb_builtin ppb_builtin;

/* The table (constant). Its calls take a context from ppb_builtin_open as
 * `ctx`; it has no ABI open or close, since a context needs the runtime,
 * which the ABI's open cannot be given. */
const ppbk_impl *ppb_builtin_impl(void);

/* A context launching through `runtime` (owned by the caller, who keeps it
 * open until ppb_builtin_close). PPB_ENOMEM when out of memory. */
int ppb_builtin_open(ppb_kernels *runtime, ppb_builtin **out, ppb_err *err);
void ppb_builtin_close(ppb_builtin *ctx);

/* Start loading the kernels the table would launch for a config
 * (ppb_kernels_prefetch), ahead of its prepare: kind PPB_KSPEC_PREFILL with a
 * ppbk_prefill_config and ppb_prefill_args, PPB_KSPEC_DECODE with the decode
 * ones. A config the plan refuses loads nothing (its prepare says why). */
void ppb_builtin_prefetch(ppb_builtin *ctx, int kind, const ppbk_device *dev, const void *cfg, const void *shape);

#endif
