/* Cases meet the kernels' memory: where a backend's tensors are pointed into
 * the argument structs, and the built-in kernel instantiations a set of
 * suites needs (what `ppbench list-kernels` prints and the compile check
 * compiles). The case-to-ABI view itself is core/kernel_view.h. */
#ifndef PPB_KERNEL_CASE_H
#define PPB_KERNEL_CASE_H

#include "kernel_spec.h"
#include "kernel_view.h"

/* Where a case's tensors are, as a backend holds them (host or device
 * addresses). */
typedef struct ppb_tensor_ptrs {
    const void *q, *k, *v, *k_cache, *v_cache;
    void *out;
    const int32_t *block_table, *start_loc, *query_lens, *context_lens, *seq_lens;
    int num_blocks; /* the paged cache's physical pages (ppb_workload.num_blocks) */
} ppb_tensor_ptrs;

/* Point the argument struct of `kernel` at them (its shape fields stay). The
 * decode kernel reads the context lengths as its seq_lens (vLLM's naming). */
void ppb_kernel_args_point(ppb_prefill_args *pa, ppb_decode_args *da, int kernel, const ppb_tensor_ptrs *t);

/* Every distinct instantiation the cases of these suites launch on compute
 * capability `cc` (kernels compiled by NVRTC, or `aot`: ahead of time, no wgmma
 * path): the input generator of each dtype, and the built-in cases'
 * kernels (cases of other implementations instantiate no other of ppbench's
 * kernels), derived through the same matrix expansion `ppbench run`
 * uses, so the list cannot drift from what runs. `warp_size` 0: 32;
 * `smem_limit` 0: the cc's opt-in (ppb_smem_optin_for_cc). Cases the built-in
 * kernels refuse there instantiate nothing and are counted in *skipped_cases
 * (may be NULL). */
int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc, int warp_size, unsigned smem_limit,
                           int aot, ppb_kernel_spec_list *out, long *skipped_cases, ppb_err *err);

#endif
