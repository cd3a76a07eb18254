/* A case as the kernels see it.
 *
 * The kernel ABI (kernels/ppb_kernel_abi.h) knows configs and argument
 * structs, not cases; this module is the one translation between the two:
 * the view every implementation (built-in or plugin) is handed for a case,
 * how the built-in kernels would launch it on a device, and the list of
 * built-in kernel instantiations a set of suites needs (what `ppbench
 * list-kernels` prints and the compile check compiles). */
#ifndef PPB_KERNEL_CASE_H
#define PPB_KERNEL_CASE_H

#include "builtin_plan.h"
#include "case.h"
#include "kernel_spec.h"
#include "ppb_error.h"
#include "ppb_kernel_abi.h"

/* The ABI's configs and the shape part of the argument structs (pointers NULL,
 * the other kernel's struct zeroed). Decode v2: max_num_partitions is the
 * kernel's own count, ceil(max_seq_len / partition_size). */
typedef struct ppb_kernel_view {
    ppbk_prefill_config prefill_cfg;
    ppbk_decode_config decode_cfg;
    ppb_prefill_args prefill;
    ppb_decode_args decode;
} ppb_kernel_view;

void ppb_kernel_view_of_case(const ppb_case *c, ppb_kernel_view *v);

/* Where a case's tensors are, as a backend holds them (host or device
 * addresses). */
typedef struct ppb_tensor_ptrs {
    const void *q, *k, *v, *k_cache, *v_cache;
    void *out;
    const int32_t *block_table, *start_loc, *query_lens, *context_lens, *seq_lens;
} ppb_tensor_ptrs;

/* Point the argument struct of `kernel` at them (its shape fields stay). The
 * decode kernel reads the context lengths as its seq_lens (vLLM's naming). */
void ppb_kernel_args_point(ppb_prefill_args *pa, ppb_decode_args *da, int kernel, const ppb_tensor_ptrs *t);

/* How the built-in kernels launch a case on a device of compute capability
 * `cc`, warp size `warp_size`, `smem_limit` bytes of shared memory per block:
 * kernels/runtime/builtin_plan.h's answer. PPB_EREFUSED with the reason. */
int ppb_kernel_launch_for_case(const ppb_case *c, int cc, int warp_size, unsigned smem_limit,
                               ppb_builtin_launch *out, ppb_err *err);

/* Every distinct instantiation the built-in cases of these suites launch on
 * compute capability `cc` (cases of other implementations instantiate none of
 * ppbench's kernels), derived through the same matrix expansion `ppbench run`
 * uses, so the list cannot drift from what runs. `warp_size` 0: 32;
 * `smem_limit` 0: the cc's opt-in (ppb_smem_optin_for_cc). Cases the built-in
 * kernels refuse there instantiate nothing and are counted in *skipped_cases
 * (may be NULL). */
int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc, int warp_size, unsigned smem_limit,
                           ppb_kernel_spec_list *out, long *skipped_cases, ppb_err *err);

#endif
