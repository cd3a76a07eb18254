/* Target device profiles (suites/targets/NAME.yaml) and the feasibility model:
 * what a kernel config needs (shared memory, threads, registers) against what
 * a target offers, with the arithmetic and the disputed values that would flip
 * the answer (TARGETS.md). */
#ifndef PPB_TARGET_H
#define PPB_TARGET_H

#include "case.h"
#include "ppb_error.h"
#include "result.h"

#define PPB_TARGET_MAX_ALT 8

/* One profile value with where it came from. `alternatives` are the other
 * published figures for a disputed value (e.g. BI-V100 shared memory 32/48/128 KB). */
typedef struct ppb_target_value {
    int present;
    double value;                 /* the figure ppbench uses */
    char source[256];
    char confidence[32];          /* "measured", "vendor", "disputed", "estimated", ... */
    int n_alt;
    double alternatives[PPB_TARGET_MAX_ALT];
    char alt_source[PPB_TARGET_MAX_ALT][128];  /* where each alternative comes from ("" = see source) */
} ppb_target_value;

typedef struct ppb_target {
    char name[64];
    char description[256];
    char path[4096];
    ppb_target_value warp_size;
    ppb_target_value smem_per_block;      /* bytes a block may use (after opt-in where that exists) */
    ppb_target_value smem_per_sm;         /* bytes */
    ppb_target_value max_threads_per_block;
    ppb_target_value max_threads_per_sm;
    ppb_target_value max_blocks_per_sm;
    ppb_target_value regs_per_sm;
    ppb_target_value max_regs_per_thread;
    ppb_target_value sm_count;
    ppb_target_value mem_bytes;
    ppb_target_value mem_bandwidth;       /* bytes/s */
    ppb_target_value fp16_flops;          /* FLOP/s, dense fp16/bf16 */
    ppb_target_value smem_per_block_default;   /* bytes without opt-in (48 KB on NVIDIA); optional */
    ppb_target_value smem_reserved_per_block;  /* bytes the runtime keeps per resident block; optional */
    ppb_target_value compute_capability;  /* as the device reports it, e.g. 7.0; optional (list-kernels) */
} ppb_target;

/* Confidence words a profile may use: measured, vendor, seen, disputed,
 * estimated, assumed, unverified, unknown. 1 if `word` is one of them. */
int ppb_target_confidence_known(const char *word);

int ppb_target_load(const char *path, ppb_target *t, ppb_err *err);
/* A profile by name, from the first folder that has NAME.yaml: suites_dir/targets,
 * each folder of $PPBENCH_TARGETS (colon-separated), this source tree's
 * suites/targets. Names only ([A-Za-z0-9._-], no leading '.'): a suite or
 * proposal file cannot point ppbench at another file (docs/SECURITY.md). */
int ppb_target_load_named(const char *suites_dir, const char *name, ppb_target *t, ppb_err *err);
/* What a user typed (--target): a file when it has a '/' or ends in .yaml,
 * else a name as above. Never for values read from suite or proposal files. */
int ppb_target_load_arg(const char *suites_dir, const char *arg, ppb_target *t, ppb_err *err);

/* What one config needs. From the compiled kernel's resources when `measured`
 * is non-NULL and known, else from the formula model. */
typedef struct ppb_needs {
    long smem_bytes;
    int threads;
    int registers_per_thread;     /* 0 = unknown */
    int from_compiled;            /* 1: measured from the compiled kernel */
    char arithmetic[512];         /* how smem_bytes and threads were computed */
    /* Appended: the parts of `arithmetic`, and the seed document's figures
     * (prefill K+V tiles only, 32-wide warp) so a report can show both. */
    char smem_arithmetic[320];
    char threads_arithmetic[160];
    long seed_smem_bytes;         /* 0 when the seed gives no estimate (decode) */
    int seed_threads;
} ppb_needs;

void ppb_target_needs(const ppb_case *c, const ppb_target *t, const ppb_resources *measured,
                      ppb_needs *needs);

/* The built-in kernels' dynamic shared memory for a case on a target, from the launch
 * plans' own functions (kernels/prefill_plan.h ppb_prefill_smem_bytes, kernels/decode_plan.h
 * ppb_decode_smem_need) with the target's warp size (32 when unknown), the code path the
 * built-in kernels take there (path=auto: tensor cores when the target's
 * compute_capability allows them and that path's plan accepts the config, else the
 * portable path) and its per-block limit: smem_per_block, else `fallback_limit` (0: no
 * limit). The one computation behind `ppbench check` (ppb_target_needs) and the CPU
 * backend's refusal; `t` may be NULL (a 32-wide warp, no compute capability). */
typedef struct ppb_kernel_smem {
    int known;                     /* 0: the built-in kernels have no layout for these knobs */
    int use_mma, warp_size;
    unsigned limit;                /* the per-block limit used (UINT_MAX: none known) */
    long bytes;                    /* per block: prefill the kernel; decode the larger of main and reduce */
    long main_bytes, reduce_bytes; /* decode (reduce: v2 only) */
    int heads_per_cta;             /* decode */
    long partitions;               /* decode v2: the kernel's partition count */
    char arithmetic[256];
} ppb_kernel_smem;

void ppb_target_kernel_smem(const ppb_case *c, const ppb_target *t, unsigned fallback_limit, ppb_kernel_smem *out);

/* Judge c on t (out->judged set): from the measured resources when known,
 * else the kernel's formula. */
void ppb_target_judge(const ppb_case *c, const ppb_target *t, const ppb_resources *measured,
                      ppb_feasibility *out);

#endif
