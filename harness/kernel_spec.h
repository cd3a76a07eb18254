/* Kernel instantiations: which template instance of which CUDA kernel a case
 * needs, as a value and as one line of text.
 *
 * The line is what `ppbench list-kernels` prints, what the ahead-of-time
 * build reads (CMake option PPB_AOT_CONFIGS) and what ppb-kernel-compile
 * compiles, so the three always agree:
 *   prefill dtype=bf16 head_dim=128 block_m=128 block_n=64 num_warps=8 mma=1
 *   decode dtype=bf16 head_dim=128 page_size=16 num_threads=128 partition_size=512 mma=1
 *   decode_reduce dtype=bf16 head_dim=128 num_threads=128 partition_size=512
 * (decode partition_size=0 is v1; a v2 decode needs its decode_reduce too).
 *
 * Plain C, no CUDA: the CPU build lists kernels too (CI checks them). */
#ifndef PPB_KERNEL_SPEC_H
#define PPB_KERNEL_SPEC_H

#include <stddef.h>

#include "attention_args.h"
#include "case.h"
#include "ppb_error.h"

typedef enum {
    PPB_KSPEC_PREFILL = 0,       /* prefix_prefill_kernel<T, D, BLOCK_M, BLOCK_N, NUM_WARPS, USE_MMA> */
    PPB_KSPEC_DECODE = 1,        /* paged_attention_kernel<T, D, PAGE, NUM_THREADS, PARTITION, USE_MMA> */
    PPB_KSPEC_DECODE_REDUCE = 2, /* paged_attention_v2_reduce_kernel<T, D, NUM_THREADS, PARTITION> */
} ppb_kspec_kind;

/* Tensor-core (mma) paths need compute capability 8.0 (bf16 mma.sync). Below
 * it, and on targets built without them, only the portable SIMT path exists. */
#define PPB_MMA_MIN_CC 80

/* Template arguments of one instantiation. Fields that do not apply to the
 * kind are 0, so equal instantiations compare equal with memcmp-free
 * ppb_kernel_spec_equal and print the same line. */
typedef struct ppb_kernel_spec {
    int kind;                 /* ppb_kspec_kind */
    int dtype;                /* ppb_dtype */
    int head_dim;
    int use_mma;              /* USE_MMA (0 for the reduce kernel, which has none) */
    int block_m, block_n, num_warps;             /* prefill */
    int page_size, num_threads, partition_size;  /* decode (partition_size 0 = v1); reduce */
} ppb_kernel_spec;

#define PPB_KERNEL_SPEC_TEXT_MAX 160

const char *ppb_kspec_kind_name(int kind);   /* "prefill", "decode", "decode_reduce" */
void ppb_kernel_spec_format(const ppb_kernel_spec *s, char *buf, size_t len);
/* Parse one line (leading/trailing blanks ignored). Every field of the kind
 * must be given, once; PPB_EINPUT naming the problem otherwise. */
int ppb_kernel_spec_parse(const char *line, ppb_kernel_spec *s, ppb_err *err);
int ppb_kernel_spec_equal(const ppb_kernel_spec *a, const ppb_kernel_spec *b);
/* Total order (by the formatted line's fields), for sorted, deduplicated lists. */
int ppb_kernel_spec_compare(const ppb_kernel_spec *a, const ppb_kernel_spec *b);

/* Whether a case runs the tensor-core path on a device of compute capability
 * `cc` (major * 10 + minor): path=simt no, path=mma yes (refused below
 * PPB_MMA_MIN_CC with PPB_EREFUSED), path=auto when cc allows it. */
int ppb_kernel_use_mma(int path, int cc, int *use_mma, ppb_err *err);

/* The instantiations a case launches on a device of compute capability `cc`:
 * out[0] the main kernel, out[1] the v2 reduce (decode version 2 only).
 * *n is 1 or 2. PPB_EREFUSED when the case's path cannot run at that cc. */
int ppb_kernel_specs_for_case(const ppb_case *c, int cc, ppb_kernel_spec out[2], int *n,
                              ppb_err *err);

/* The shape part of the kernels' argument structs for a case (pointers NULL,
 * the struct of the other kernel zeroed). Every implementation, built-in or
 * plugin, is handed these same figures. Decode v2: max_num_partitions is the
 * kernel's own count, ceil(max_seq_len / partition_size). */
void ppb_kernel_args_for_case(const ppb_case *c, ppb_prefill_args *pa, ppb_decode_args *da);

#ifdef PPB_HAVE_CUDA
#include "launch_plan.h"

/* How a case launches on a device, short of the device pointers: the code path,
 * the instantiations, the kernel plans (kernels/prefill_plan.h, decode_plan.h)
 * and the shape part of the argument struct. Shared by the CUDA backend and
 * the kernel list, so the compile check compiles exactly what would run. */
typedef struct ppb_kernel_launch {
    int use_mma;
    int auto_fell_back;            /* path=auto chose simt because the mma plan refused */
    char auto_reason[256];         /* ... and why */
    ppb_kernel_spec spec[2];       /* main kernel; [1]: the v2 reduce */
    int n_specs;
    ppb_launch_plan plan[2];
    ppb_prefill_args prefill;      /* shape fields only (pointers NULL) */
    ppb_decode_args decode;        /* shape fields; max_num_partitions = the kernel's count */
    int kernel_parts, host_parts;  /* v2 partitions: the kernel's and the host's count */
} ppb_kernel_launch;

/* Plan a case for a device of compute capability `cc` and warp size `warp_size`
 * that may opt in to `smem_limit` bytes of dynamic shared memory per block.
 * path=auto takes the tensor-core path when cc allows it and its plan accepts
 * the case, else the portable path (noted in auto_fell_back / auto_reason).
 * PPB_EREFUSED with the plan's reason when the case cannot run. */
int ppb_kernel_launch_for_case(const ppb_case *c, int cc, int warp_size, unsigned smem_limit,
                               ppb_kernel_launch *out, ppb_err *err);

/* Per-block shared memory a device of compute capability cc can opt in to (the
 * compile check's stand-in for a device it does not have). */
unsigned ppb_kernel_smem_optin_for_cc(int cc);
#endif

/* A sorted list without duplicates. */
typedef struct ppb_kernel_spec_list {
    ppb_kernel_spec *items;
    int n, cap;
} ppb_kernel_spec_list;

/* Insert unless present (keeps the list sorted). PPB_ENOMEM if it cannot grow. */
int ppb_kernel_spec_list_add(ppb_kernel_spec_list *l, const ppb_kernel_spec *s);
void ppb_kernel_spec_list_free(ppb_kernel_spec_list *l);

/* Every distinct instantiation the built-in cases of these suites launch on
 * compute capability `cc` (cases of other implementations instantiate none of
 * ppbench's kernels). Derived from the suites through the same matrix
 * expansion `ppbench run` uses, so the list cannot drift from what runs. In
 * CUDA builds each case goes through ppb_kernel_launch_for_case with
 * `warp_size` (0: 32) and `smem_limit` bytes of shared memory per block (0: the
 * cc's opt-in): cases the kernel plans refuse instantiate nothing and are
 * counted in *skipped_cases (may be NULL), as are path=mma cases below
 * PPB_MMA_MIN_CC. CPU builds (no plans linked) map cases structurally. */
int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc, int warp_size, unsigned smem_limit,
                           ppb_kernel_spec_list *out, long *skipped_cases, ppb_err *err);

/* Read a list file: one spec per line; blank lines and '#' comments ignored.
 * Errors name FILE:LINE. */
int ppb_kernel_list_read(const char *path, ppb_kernel_spec_list *out, ppb_err *err);

#endif
