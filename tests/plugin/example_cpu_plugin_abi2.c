/* example-cpu-abi2: the example plugin's kernels (example_cpu_plugin.c) behind
 * a table of kernel ABI version 2 (ppb_kernel_abi_v2.h: no context), as a
 * plugin built before version 3 would hand them over. ppbench loads it
 * through its adapter (harness/run/impl.c); tests/e2e/plugin.sh runs the
 * smoke suites on it and checks every case against the reference, so the
 * adapter is shown to carry each call, the v2 scratch included.
 *
 * Version 2 had no context, so this file keeps the one its open makes at file
 * scope, as such plugins did. Not an example to follow: see
 * example_cpu_plugin.c. */
#define ppbk_entry example_cpu_v3_entry /* the included file's entry, renamed: this file exports its own */
#include "example_cpu_plugin.c"
#undef ppbk_entry

#include "ppb_kernel_abi_v2.h"

static void *v2_ctx; /* what example_open made (v2_open) */

static int v2_open(const ppbk_device *dev, char *why, size_t why_len)
{
    return example_open(dev, &v2_ctx, why, why_len);
}

static void v2_close(void)
{
    example_close(v2_ctx);
    v2_ctx = NULL;
}

static int v2_prefill_refuse(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                             char *why, size_t why_len)
{
    return prefill_refuse(v2_ctx, dev, cfg, shape, why, why_len);
}

static int v2_prefill_launch(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *a,
                             void *stream, char *why, size_t why_len)
{
    return prefill_launch(v2_ctx, dev, cfg, a, stream, why, why_len);
}

static int v2_decode_v1_refuse(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                               char *why, size_t why_len)
{
    return decode_v1_refuse(v2_ctx, dev, cfg, shape, why, why_len);
}

static int v2_decode_v1_launch(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *a,
                               void *stream, char *why, size_t why_len)
{
    return decode_v1_launch(v2_ctx, dev, cfg, a, stream, why, why_len);
}

static int v2_decode_v2_refuse(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                               char *why, size_t why_len)
{
    return decode_v2_refuse(v2_ctx, dev, cfg, shape, why, why_len);
}

static int v2_decode_v2_launch(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *a,
                               void *stream, char *why, size_t why_len)
{
    return decode_v2_launch(v2_ctx, dev, cfg, a, stream, why, why_len);
}

static const ppbk_v2_prefill_ops v2_prefill_ops = {v2_prefill_refuse, v2_prefill_launch, NULL};
static const ppbk_v2_decode_ops v2_decode_v1_ops = {v2_decode_v1_refuse, v2_decode_v1_launch, NULL};
static const ppbk_v2_decode_ops v2_decode_v2_ops = {v2_decode_v2_refuse, v2_decode_v2_launch, NULL};

static const ppbk_v2_impl example_cpu_abi2 = {
    .abi_version = PPBK_ABI_VERSION_2,
    .struct_size = sizeof(ppbk_v2_impl),
    .name = "example-cpu-abi2",
    .version = "1",
    .source = "ppbench tests/plugin/example_cpu_plugin_abi2.c",
    .backends = PPBK_BACKEND_CPU,
    .open = v2_open,
    .close = v2_close,
    .prefill = &v2_prefill_ops,
    .decode_v1 = &v2_decode_v1_ops,
    .decode_v2 = &v2_decode_v2_ops,
};

#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const ppbk_v2_impl *ppbk_entry(void);

const ppbk_v2_impl *ppbk_entry(void)
{
    (void)example_cpu_v3_entry;
    return &example_cpu_abi2;
}
