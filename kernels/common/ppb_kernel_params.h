/* The kernels' tunable parameters: one list per kernel, the one place a
 * parameter is named.
 *
 * A parameter used to be spelled out by hand in four structs (the case's
 * config, the kernel ABI's config, the plans' configs) and copied between them
 * through positional initializers, which shift silently when a member is
 * inserted. Everything that names the parameters is now expanded from these
 * lists (X-macros, like the store's column list): the case config's members,
 * the case fields (suite and --filter names, the case key, ranges, defaults),
 * the store's case columns, and every copy between the structs, always member
 * by member (designated initializers), never by position.
 *
 * The kernel ABI's structs (ppb_kernel_abi.h) and the plans' (prefill_plan.h,
 * decode_plan.h) stay hand-written: the first is what plugins compile against,
 * the second what the device code includes. kernels/runtime/builtin_plan.c ties
 * them to these lists with _Static_asserts (every listed member is an int there,
 * and nothing else is; the plans' configs hold the built-in parameters only),
 * so a parameter missing from one of them does not build. A parameter new to
 * the ABI's config goes at the end of its struct, with a new ABI version:
 * plugins of older versions read only the members before it, and
 * harness/run/impl.c refuses them a case that sets it.
 *
 * Plain C preprocessor, no includes: kernels/ and harness/ both expand it.
 *
 * Each entry: X(ctx, name, NAME, key_name, min, max, def, key_omits_default)
 *   ctx                passed through unchanged (the expanding code's own argument)
 *   name               the member of every config struct, the suite / --filter
 *                      name and the store column (never rename: stored runs and
 *                      suites use it)
 *   NAME               the case field's enum tag: PPB_F_##NAME (harness/core/case.h)
 *   key_name           its short name in the case key (never change it)
 *   min, max           the range ppbench accepts at all (inclusive); the plans
 *                      refuse what a device cannot run
 *   def                the value when a suite leaves it out
 *   key_omits_default  1: left out of the case key at its default. A parameter
 *                      added after keys were stored needs 1, so every stored key
 *                      still names the same case.
 * The order within a list is the order of the case key. */
#ifndef PPB_KERNEL_PARAMS_H
#define PPB_KERNEL_PARAMS_H

/* Each kernel's list is two: the parameters its built-in kernel takes (the plans'
 * configs hold exactly these), then those only other implementations take (a
 * Triton kernel's num_stages, say). The built-in kernels, and the CPU backend
 * that runs their algorithms, refuse a case whose plugin-only parameter is not
 * at its default (kernels/runtime/builtin_plan.c), so such a parameter's
 * default must mean "the implementation's own choice". */

/* Prefix prefill (prefix_prefill.cuh): each one a template argument. */
#define PPBK_PREFILL_BUILTIN_PARAMS(X, ctx)                                                         \
    X(ctx, block_m, BLOCK_M, "bm", 16, 128, 128, 0)   /* query rows per CTA (BLOCK_M) */           \
    X(ctx, block_n, BLOCK_N, "bn", 16, 128, 128, 0)   /* keys per tile (BLOCK_N) */                 \
    X(ctx, num_warps, NUM_WARPS, "w", 1, 8, 8, 0)     /* warps per CTA (NUM_WARPS) */
/* num_stages: Triton's software-pipelining depth (its launch option). 0 keeps
 * each implementation's own: vllm-triton the one the vLLM tree's wrapper
 * launches with (1 in 0.6.3-0.34), the built-in kernel its K/V buffering
 * (prefill_plan.h), which no value can set. */
#define PPBK_PREFILL_PLUGIN_ONLY_PARAMS(X, ctx)                                                     \
    X(ctx, num_stages, NUM_STAGES, "st", 0, 8, 0, 1)
#define PPBK_PREFILL_PARAMS(X, ctx) PPBK_PREFILL_BUILTIN_PARAMS(X, ctx) PPBK_PREFILL_PLUGIN_ONLY_PARAMS(X, ctx)

/* Paged attention decode (paged_attention.cuh), v1 and v2. */
#define PPBK_DECODE_BUILTIN_PARAMS(X, ctx)                                                          \
    X(ctx, version, VERSION, "v", 1, 2, 2, 0)                   /* 1 or 2 (v2: partitions + reduce) */ \
    X(ctx, num_threads, NUM_THREADS, "t", 32, 1024, 128, 0)     /* threads per CTA (NUM_THREADS) */    \
    X(ctx, partition_size, PARTITION_SIZE, "p", 0, 65536, 512, 0) /* v2: the kernel's PARTITION_SIZE */
#define PPBK_DECODE_PLUGIN_ONLY_PARAMS(X, ctx) /* none yet */
#define PPBK_DECODE_PARAMS(X, ctx) PPBK_DECODE_BUILTIN_PARAMS(X, ctx) PPBK_DECODE_PLUGIN_ONLY_PARAMS(X, ctx)

/* The shape facts both ABI configs carry beside the parameters (a kernel is
 * compiled for them), copied by name from the case's shape. X(ctx, name, NAME). */
#define PPBK_CONFIG_SHAPE_FACTS(X, ctx)                                                             \
    X(ctx, dtype, DTYPE) X(ctx, head_dim, HEAD_DIM) X(ctx, page_size, PAGE_SIZE)                   \
    X(ctx, sliding_window, SLIDING_WINDOW)

/* Expanders for any of the lists above. */
/* `.name = (src)->name,`: a designated initializer per entry, e.g.
 * (ppb_prefill_config){PPBK_PREFILL_PARAMS(PPBK_INIT_FROM, cfg) .use_mma = 1, ...}. */
#define PPBK_INIT_FROM(src, name, ...) .name = (src)->name,
/* `int name;`: a struct member per entry. */
#define PPBK_INT_MEMBER(ctx, name, ...) int name;
/* `+1` per entry: (0 PPBK_PREFILL_PARAMS(PPBK_COUNT_ONE, )) is the count. */
#define PPBK_COUNT_ONE(ctx, name, ...) +1

#define PPBK_PREFILL_PARAM_COUNT (0 PPBK_PREFILL_PARAMS(PPBK_COUNT_ONE, ))
#define PPBK_DECODE_PARAM_COUNT (0 PPBK_DECODE_PARAMS(PPBK_COUNT_ONE, ))
#define PPBK_PREFILL_BUILTIN_PARAM_COUNT (0 PPBK_PREFILL_BUILTIN_PARAMS(PPBK_COUNT_ONE, ))
#define PPBK_DECODE_BUILTIN_PARAM_COUNT (0 PPBK_DECODE_BUILTIN_PARAMS(PPBK_COUNT_ONE, ))
#define PPBK_CONFIG_SHAPE_FACT_COUNT (0 PPBK_CONFIG_SHAPE_FACTS(PPBK_COUNT_ONE, ))

#endif
