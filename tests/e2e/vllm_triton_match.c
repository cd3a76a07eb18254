/* vllm-triton's case matching without a GPU (tests/e2e/vllm_capture.sh): the
 * library prepare.py built is loaded (libcuda resolved by the toolkit's stub,
 * which no call here reaches) and its prefill `refuse` is asked, with no
 * context, about the case it was prepared for and about that case with one
 * kernel parameter changed. The parameters are matched against the ABI config
 * by name in ppb_kernel_params.h's order (plugin.c), and a case not prepared
 * is refused with the case key's parameter text, which names the change.
 *
 *   vllm_triton_match LIB MAX_BLOCKS_PER_SEQ     (exit 0: every answer as expected) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppb_kernel_abi.h"

static int failures;

/* Ask about the prepared shape (b=2 q=100 h=8 kvh=2 d=128 bf16 page 16) at these
 * parameters; `want` NULL: accepted, else refused with `want` in the reason. */
static void ask(const ppbk_impl *impl, int mbps, int bm, int bn, int w, int st, const char *want)
{
    ppbk_device dev = {.backend = PPBK_BACKEND_CUDA, .cc = 90, .warp_size = 32, .sm_count = 132,
                       .smem_optin = 232448};
    ppbk_prefill_config cfg = {.dtype = PPB_KDTYPE_BF16, .head_dim = 128, .page_size = 16, .block_m = bm,
                               .block_n = bn, .num_warps = w, .num_stages = st};
    ppb_prefill_args s = {.batch = 2, .max_query_len = 100, .num_heads = 8, .num_kv_heads = 2, .head_dim = 128,
                          .page_size = 16, .max_blocks_per_seq = mbps};
    char why[1024] = "";
    int rc = impl->prefill->refuse(NULL, &dev, &cfg, &s, why, sizeof why);
    int ok = want ? rc == PPBK_REFUSED && strstr(why, want) : rc == PPBK_OK;
    printf("%s bm=%d bn=%d w=%d st=%d: %s (%s)\n", ok ? "ok  " : "FAIL", bm, bn, w, st,
           rc == PPBK_OK ? "accepted" : "refused", why);
    failures += !ok;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return fprintf(stderr, "usage: %s LIB MAX_BLOCKS_PER_SEQ\n", argv[0]), 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fprintf(stderr, "%s\n", dlerror()), 1;
    ppbk_entry_fn entry = (ppbk_entry_fn)dlsym(h, PPBK_ENTRY_SYMBOL);
    const ppbk_impl *impl = entry ? entry() : NULL;
    if (!impl || !impl->prefill)
        return fprintf(stderr, "%s: no prefill table\n", argv[1]), 1;
    int mbps = atoi(argv[2]);
    ask(impl, mbps, 128, 128, 8, 0, NULL); /* prepared: the wrapper's stages */
    ask(impl, mbps, 128, 128, 8, 3, NULL); /* prepared: 3 stages */
    ask(impl, mbps, 128, 128, 8, 2, "d=128 dtype=bf16 page=16 win=0 bm=128 bn=128 w=8 st=2'");
    ask(impl, mbps, 64, 64, 8, 0, "win=0 bm=64 bn=64 w=8'"); /* st at its default: left out, as keys do */
    ask(impl, mbps, 128, 128, 4, 0, "bm=128 bn=128 w=4'");
    return failures ? 1 : 0;
}
