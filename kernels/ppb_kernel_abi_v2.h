/* Kernel ABI version 2, frozen: the table of ppb_kernel_abi.h before version 3
 * added the context pointer, under other names (ppbk_v2_*), so that ppbench
 * can still load a plugin built against it (harness/run/impl.c wraps such a
 * table so that everything after loading sees the current version) and so
 * that a test can build one. Not for new plugins: write against ppb_kernel_abi.h.
 *
 * The device, config, resource and argument structs did not change in
 * version 3, and version 4 only appended a member to the prefill config (the
 * adapter hands them over as they are, and refuses a version-2 plugin the
 * cases that set a member it lacks; a _Static_assert in impl.c fails the
 * build if one changes otherwise); only the function types did (no
 * `ctx`; `open` without an out-pointer, `close` without an argument). The
 * layout is the version-2 header's, member for member (LP64: ops 24 bytes,
 * table 80). */
#ifndef PPB_KERNEL_ABI_V2_H
#define PPB_KERNEL_ABI_V2_H

#include "ppb_kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PPBK_ABI_VERSION_2 2

typedef struct ppbk_v2_prefill_ops {
    int (*refuse)(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                  char *why, size_t why_len);
    int (*launch)(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *args,
                  void *stream, char *why, size_t why_len);
    int (*prepare)(const ppbk_device *dev, const ppbk_prefill_config *cfg, const ppb_prefill_args *shape,
                   ppbk_resources *out, char *why, size_t why_len);
} ppbk_v2_prefill_ops;

typedef struct ppbk_v2_decode_ops {
    int (*refuse)(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                  char *why, size_t why_len);
    int (*launch)(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *args,
                  void *stream, char *why, size_t why_len);
    int (*prepare)(const ppbk_device *dev, const ppbk_decode_config *cfg, const ppb_decode_args *shape,
                   ppbk_resources *out, char *why, size_t why_len);
} ppbk_v2_decode_ops;

typedef struct ppbk_v2_impl {
    unsigned abi_version;  /* 2 */
    unsigned struct_size;  /* sizeof(ppbk_v2_impl) as the plugin was built */
    const char *name;
    const char *version;
    const char *source;
    unsigned backends;
    int (*open)(const ppbk_device *dev, char *why, size_t why_len);
    void (*close)(void);
    const ppbk_v2_prefill_ops *prefill;
    const ppbk_v2_decode_ops *decode_v1;
    const ppbk_v2_decode_ops *decode_v2;
} ppbk_v2_impl;

#ifdef __cplusplus
}
#endif

#endif
