/* Kernel instantiations: which template instance of which CUDA kernel a case
 * needs, as a value and as one line of text.
 *
 * The line is what `ppbench list-kernels` prints, what the ahead-of-time
 * build reads (CMake option PPB_AOT_CONFIGS) and what ppb-kernel-compile
 * compiles, so the three always agree:
 *   prefill dtype=bf16 head_dim=128 block_m=128 block_n=64 num_warps=8 mma=1   (mma=2: wgmma, sm_90a)
 *   decode dtype=bf16 head_dim=128 page_size=16 num_threads=128 partition_size=512 mma=1
 *   decode_reduce dtype=bf16 head_dim=128 num_threads=128 partition_size=512
 *   input_fill dtype=bf16
 * (decode partition_size=0 is v1; a v2 decode needs its decode_reduce too;
 * input_fill generates a case's inputs on the device, every build has both).
 *
 * Plain C, no CUDA: the CPU build lists kernels too (CI checks them). Which
 * instantiations a case needs is the built-in implementation's business
 * (builtin_plan.h). */
#ifndef PPB_KERNEL_SPEC_H
#define PPB_KERNEL_SPEC_H

#include <stddef.h>

#include "attention_args.h"
#include "ppb_error.h"

typedef enum {
    PPB_KSPEC_PREFILL = 0,       /* prefix_prefill_kernel<T, D, BLOCK_M, BLOCK_N, NUM_WARPS, PATH> */
    PPB_KSPEC_DECODE = 1,        /* paged_attention_kernel<T, D, PAGE, NUM_THREADS, PARTITION, USE_MMA> */
    PPB_KSPEC_DECODE_REDUCE = 2, /* paged_attention_v2_reduce_kernel<T, D, NUM_THREADS, PARTITION> */
    PPB_KSPEC_INPUT_FILL = 3,    /* input_fill_kernel<DTYPE> (input_fill.cuh) */
} ppb_kspec_kind;

/* Template arguments of one instantiation. Fields that do not apply to the
 * kind are 0, so equal instantiations compare equal with memcmp-free
 * ppb_kernel_spec_equal and print the same line. */
typedef struct ppb_kernel_spec {
    int kind;                 /* ppb_kspec_kind */
    int dtype;                /* PPB_KDTYPE_FP16 / PPB_KDTYPE_BF16 */
    int head_dim;
    int use_mma;              /* tensor-core level: 0 none, 1 mma.sync, 2 wgmma (prefill only; its PATH
                                 argument); 0 for the reduce kernel, which has none */
    int block_m, block_n, num_warps;             /* prefill */
    int page_size, num_threads, partition_size;  /* decode (partition_size 0 = v1); reduce */
} ppb_kernel_spec;

#define PPB_KERNEL_SPEC_TEXT_MAX 160

/* Tensor-core (mma) paths need compute capability 8.0 (bf16 mma.sync). Below
 * it, and on targets built without them, only the portable SIMT path exists.
 * Warpgroup MMA (the prefill kernel's mma=2) exists on compute capability 9.0
 * only, compiled for the architecture-specific sm_90a. */
#define PPB_MMA_MIN_CC 80
#define PPB_WGMMA_CC 90
#define PPB_KSPEC_MMA_SYNC 1    /* use_mma values: mma.sync */
#define PPB_KSPEC_MMA_WGMMA 2   /* warpgroup MMA (prefill) */

/* The fields of a kind's line, in line order: the one table behind format, parse and
 * compare, for callers that go over every template argument (ppb-kernel-compile's
 * representative subset). Count 0 for an unknown kind; name NULL and value 0 past it. */
#define PPB_KERNEL_SPEC_FIELDS_MAX 8
int ppb_kernel_spec_field_count(int kind);
const char *ppb_kernel_spec_field_name(int kind, int i);
int ppb_kernel_spec_field_value(const ppb_kernel_spec *s, int i);

const char *ppb_kspec_kind_name(int kind);   /* "prefill", "decode", "decode_reduce", "input_fill" */
void ppb_kernel_spec_format(const ppb_kernel_spec *s, char *buf, size_t len);
/* Parse one line (leading/trailing blanks ignored). Every field of the kind
 * must be given, once; PPB_EINPUT naming the problem otherwise. */
int ppb_kernel_spec_parse(const char *line, ppb_kernel_spec *s, ppb_err *err);
int ppb_kernel_spec_equal(const ppb_kernel_spec *a, const ppb_kernel_spec *b);
/* Total order (by the formatted line's fields), for sorted, deduplicated lists. */
int ppb_kernel_spec_compare(const ppb_kernel_spec *a, const ppb_kernel_spec *b);

/* The C++ name expression of the instantiation, e.g.
 * "prefix_prefill_kernel<__nv_bfloat16, 128, 64, 64, 4, 1>": what NVRTC
 * instantiates (kernels_nvrtc.c). With the spec, so the compiler reads it
 * from here rather than from the runtime (ppb_kernels.c) that calls it. */
void ppb_kernel_name_expression(const ppb_kernel_spec *spec, char *buf, size_t len);
/* The kernel header that defines it ("prefix_prefill.cuh", ...). */
const char *ppb_kernel_spec_header(const ppb_kernel_spec *spec);
/* The size of its single by-value argument (ppb_prefill_args, ...). */
size_t ppb_kernel_args_size(int kind);

/* A sorted list without duplicates. */
typedef struct ppb_kernel_spec_list {
    ppb_kernel_spec *items;
    int n, cap;
} ppb_kernel_spec_list;

/* Insert unless present (keeps the list sorted). PPB_ENOMEM if it cannot grow. */
int ppb_kernel_spec_list_add(ppb_kernel_spec_list *l, const ppb_kernel_spec *s);
void ppb_kernel_spec_list_free(ppb_kernel_spec_list *l);

/* Read a list file: one spec per line; blank lines and '#' comments ignored.
 * Errors name FILE:LINE. */
int ppb_kernel_list_read(const char *path, ppb_kernel_spec_list *out, ppb_err *err);

#endif
