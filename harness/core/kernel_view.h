/* A case as the kernels see it.
 *
 * The kernel ABI (kernels/ppb_kernel_abi.h) knows configs and argument
 * structs, not cases; this module is the one translation between the two: the
 * view every implementation (built-in or plugin) is handed for a case, and how
 * the built-in kernels would launch it on a device (the code path `auto`
 * takes, its shared memory), which the target check and the backends share. */
#ifndef PPB_KERNEL_VIEW_H
#define PPB_KERNEL_VIEW_H

#include "builtin_plan.h"
#include "case.h"
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

/* How the built-in kernels launch a case on a device of compute capability
 * `cc`, warp size `warp_size`, `smem_limit` bytes of shared memory per block,
 * compiled by NVRTC or (`aot`) ahead of time: kernels/runtime/builtin_plan.h's
 * answer. PPB_EREFUSED with the reason. */
int ppb_kernel_launch_for_case(const ppb_case *c, int cc, int warp_size, unsigned smem_limit, int aot,
                               ppb_builtin_launch *out, ppb_err *err);

#endif
