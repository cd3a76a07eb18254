/* A benchmark case: which kernel, on which shape, with which config.
 *
 * Every axis of a suite is a "field" of a case (enum ppb_field); the suite
 * parser, the matrix expansion, exclusions, --filter and the canonical case key
 * all go through the same field table, so a name means the same everywhere. */
#ifndef PPB_CASE_H
#define PPB_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "ppb_error.h"
#include "ppb_kernel_params.h"

typedef enum { PPB_PREFIX_PREFILL = 0, PPB_PAGED_ATTENTION = 1 } ppb_kernel_kind;
typedef enum { PPB_FP16 = 0, PPB_BF16 = 1 } ppb_dtype;
/* Which kernel implementation: AUTO lets the backend choose (tensor cores where
 * the build and device have them), SIMT is the portable path BI-V100 builds. */
typedef enum { PPB_PATH_AUTO = 0, PPB_PATH_SIMT = 1, PPB_PATH_MMA = 2, PPB_PATH_WGMMA = 3 } ppb_code_path;

typedef struct ppb_shape {
    int batch;          /* sequences in the batch */
    int query_len;      /* prefill: new tokens per sequence (the longest one when ragged) */
    int context_len;    /* prefill: tokens already in the paged cache per sequence */
    int seq_len;        /* decode: tokens in the paged cache per sequence (includes the new one) */
    int ragged;         /* 1: sequence b gets ceil(len * (batch - b) / batch) tokens */
    int num_heads;      /* query heads */
    int num_kv_heads;   /* key/value heads (GQA when < num_heads) */
    int head_dim;
    int dtype;          /* ppb_dtype */
    int page_size;      /* tokens per KV-cache page ("block_size" in vLLM) */
    int sliding_window; /* 0 = off; else a query sees at most this many most recent keys */
    /* prefill: the first decode_seqs sequences are decode steps (one new token
     * each, their whole context cached), the rest prefill chunks: the mixed
     * batch vLLM's V1 engine hands one attention launch. 0: a plain prefill. */
    int decode_seqs;
} ppb_shape;

typedef struct ppb_config {
    /* The kernels' parameters, one member each, from their lists (ppb_kernel_params.h):
     * prefix prefill block_m, block_n, num_warps; paged attention decode version (1 or 2),
     * num_threads, partition_size (the kernel's, v2). */
    PPBK_PREFILL_PARAMS(PPBK_INT_MEMBER, )
    PPBK_DECODE_PARAMS(PPBK_INT_MEMBER, )
    /* paged attention decode: the host's side of the PARTITION_SIZE mismatch, not a kernel's */
    int host_partition_size; /* partition size the host sizes buffers with; 0 = same (no mismatch) */
    /* both */
    int path;                /* ppb_code_path */
    int impl;                /* which implementation runs the kernel: ppb_impl_name(); 0 = builtin */
} ppb_config;

#define PPB_CASE_KEY_MAX 256

typedef struct ppb_case {
    ppb_kernel_kind kernel;
    ppb_shape shape;
    ppb_config config;
    double weight;                 /* how often this shape occurs in serving (proposals) */
    char key[PPB_CASE_KEY_MAX];    /* canonical text, filled by ppb_case_make_key */
} ppb_case;

/* The fields in key order (and the store's column order). The kernels' parameters are
 * PPB_F_<NAME> from their lists (PPB_F_BLOCK_M ... PPB_F_PARTITION_SIZE). */
#define PPB_FIELD_ENUM_(ctx, name, NAME, ...) PPB_F_##NAME,
typedef enum {
    PPB_F_BATCH, PPB_F_QUERY_LEN, PPB_F_CONTEXT_LEN, PPB_F_SEQ_LEN, PPB_F_RAGGED,
    PPB_F_NUM_HEADS, PPB_F_NUM_KV_HEADS, PPB_F_HEAD_DIM, PPB_F_DTYPE, PPB_F_PAGE_SIZE,
    PPB_F_SLIDING_WINDOW, PPB_F_DECODE_SEQS,
    PPBK_PREFILL_PARAMS(PPB_FIELD_ENUM_, )
    PPBK_DECODE_PARAMS(PPB_FIELD_ENUM_, )
    PPB_F_HOST_PARTITION_SIZE,
    PPB_F_PATH,
    PPB_F_IMPL,
    PPB_F_COUNT
} ppb_field;
#undef PPB_FIELD_ENUM_

/* Which kernels a field applies to (bit set of 1 << ppb_kernel_kind). */
#define PPB_FOR_PREFILL (1u << PPB_PREFIX_PREFILL)
#define PPB_FOR_DECODE (1u << PPB_PAGED_ATTENTION)
#define PPB_FOR_BOTH (PPB_FOR_PREFILL | PPB_FOR_DECODE)

typedef struct ppb_field_info {
    const char *name;      /* YAML / filter / key name, e.g. "block_m" */
    const char *key_name;  /* short name in the case key, e.g. "bm" */
    unsigned kernels;      /* PPB_FOR_* */
    int is_config;         /* 1: a kernel knob; 0: a shape axis */
    int min, max;          /* valid range (inclusive) */
    int def;               /* default when a suite leaves it out; -1 = required */
    const char *const *names; /* for enum-valued fields (dtype, path): value i has names[i] */
    int key_omits_default; /* 1: left out of the key at its default (fields added after keys were stored) */
} ppb_field_info;

const ppb_field_info *ppb_field_get(ppb_field f);
/* 1 when c's key leaves field f out: a field added after keys were stored, at its default. */
int ppb_case_key_omits(const ppb_case *c, ppb_field f);
/* Returns the field with that name, or -1. */
int ppb_field_lookup(const char *name);
int ppb_case_get(const ppb_case *c, ppb_field f);
void ppb_case_set(ppb_case *c, ppb_field f, int value);
/* Parse a value for field f from text ("bf16", "128", "true"); PPB_EINPUT with a message on error. */
int ppb_field_parse_value(ppb_field f, const char *text, int *value, ppb_err *err);
/* Write a value as text (enum names for enum fields). */
/* Room for any field's text: the longest is a plugin name ("plugin:" + 40). */
#define PPB_FIELD_TEXT_MAX 64
void ppb_field_format_value(ppb_field f, int value, char *buf, size_t len);

/* Implementations (the `impl` field): 0 builtin, 1 vllm-triton, 2 vllm-cuda,
 * then "plugin:NAME" values in the order this process first parsed them.
 * Parsing a new plugin:NAME registers it (at most PPB_IMPL_MAX names in all);
 * whether a library of that name exists is decided when a case runs
 * (harness/run/impl.h). The key leaves impl out when it is builtin, so keys
 * stored before the field existed still name the same case. */
#define PPB_IMPL_BUILTIN 0
#define PPB_IMPL_VLLM_TRITON 1
#define PPB_IMPL_VLLM_CUDA 2
#define PPB_IMPL_MAX 32
const char *ppb_impl_name(int impl);   /* NULL when no such value */
/* The key c would have on the built-in kernels: what two implementations of
 * one case (same shape, same config) share. */
void ppb_case_key_builtin(const ppb_case *c, char *buf, size_t len);
/* A plugin's name, as its table and a case key carry it: 1-40 characters of
 * a-z, 0-9, '_', '.', '-', '@', and not "builtin". */
int ppb_impl_name_valid(const char *name);
/* The library name an implementation's table carries: "vllm-triton" for
 * vllm-triton, "NAME" for plugin:NAME, NULL for builtin. */
const char *ppb_impl_library_name(int impl);

const char *ppb_kernel_name(ppb_kernel_kind k);       /* "prefix_prefill" / "paged_attention" */
int ppb_kernel_parse(const char *name, ppb_kernel_kind *out);
const char *ppb_dtype_name(int dtype);                /* "fp16" / "bf16" */
const char *ppb_path_name(int path);                  /* "auto" / "simt" / "mma" / "wgmma" */
size_t ppb_dtype_size(int dtype);                     /* 2 for both */

/* Fill every field with its default (kernel-specific fields of the other kernel are 0). */
void ppb_case_init(ppb_case *c, ppb_kernel_kind kernel);
/* Canonical key: kernel name then "name=value" for every field that applies to
 * the kernel, in field order, separated by single spaces. Same case, same key,
 * across runs, shards and commits. */
void ppb_case_make_key(ppb_case *c);
/* The key without the config fields: the same shape under two configs (the
 * two sides of a proposal) has the same shape key. */
void ppb_case_shape_key(const ppb_case *c, char *buf, size_t len);
/* Inverse of make_key (for resume, dump, compare). */
int ppb_case_from_key(const char *key, ppb_case *out, ppb_err *err);
/* Structural checks that do not depend on a device (GQA divisibility, decode v1
 * vs partition, host partition a multiple of the page...). PPB_EINPUT + message. */
int ppb_case_validate(const ppb_case *c, ppb_err *err);

/* The partition size the host sizes the v2 scratch with: host_partition_size,
 * or the kernel's when that is 0 (no mismatch). The one place of this rule. */
int ppb_case_host_partition_size(const ppb_case *c);
/* 1 when a decode v2 case's host sizes the scratch with another partition size than
 * the kernel's (ppb_case_host_partition_size(c) != partition_size): the mismatch. */
int ppb_case_partition_mismatch(const ppb_case *c);

/* Per-sequence lengths, honouring `ragged`. */
int ppb_case_query_len_of(const ppb_case *c, int seq);
int ppb_case_context_len_of(const ppb_case *c, int seq);   /* prefill context, decode seq_len */

/* Work done, for roofline figures (KERNELS.md "FLOPs and bytes"). Prefill: FLOPs
 * honour per-sequence lengths; decode: minimum bytes = K+V read once + q + out. */
double ppb_case_flops(const ppb_case *c);
double ppb_case_min_bytes(const ppb_case *c);

#endif
