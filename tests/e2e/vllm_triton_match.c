/* vllm-triton's case matching without a GPU (tests/e2e/vllm_capture.sh): the
 * library prepare.py built is loaded (libcuda resolved by the toolkit's stub,
 * which no call here reaches) and its prefill `refuse` is asked, with no
 * context, about the case it was prepared for and about that case with one
 * kernel parameter changed. The parameters are matched against the ABI config
 * by name in ppb_kernel_params.h's order (plugin.c), and a case not prepared
 * is refused with the case key's parameter text, which names the change.
 *
 *   vllm_triton_match LIB MAX_BLOCKS_PER_SEQ     (exit 0: every answer as expected)
 *
 * With --decode, a library prepared for the decode case b=3 seq=100 h=4 kvh=2
 * d=64 bf16 page 16 (tests/e2e/vllm_capture.py's SYNTHETIC_UNIFIED): its
 * decode_v1 reads the FLASH layout, accepts that case naming both launches,
 * refuses another sequence length as not prepared with its key, and there is
 * no decode_v2.
 *
 *   vllm_triton_match --decode LIB
 *
 * With --unified-prefill, a library prepared with --prefill-kernel unified for
 * the mixed batch b=3 q=40 ctx=37 dec=2 h=4 kvh=2 d=64 bf16 page 16 (42 new
 * tokens): its prefill reads the FLASH layout and stages its cache, accepts
 * that case naming the launch and refuses the same batch with another token
 * count as not prepared.
 *
 *   vllm_triton_match --unified-prefill LIB */
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

static void ask_decode(const ppbk_impl *impl, int seq, const char *want)
{
    ppbk_device dev = {.backend = PPBK_BACKEND_CUDA, .cc = 90, .warp_size = 32, .sm_count = 132,
                       .smem_optin = 232448};
    ppbk_decode_config cfg = {.dtype = PPB_KDTYPE_BF16, .head_dim = 64, .page_size = 16, .version = 1,
                              .num_threads = 128, .partition_size = 512};
    ppb_decode_args s = {.num_seqs = 3, .num_heads = 4, .num_kv_heads = 2, .head_dim = 64, .page_size = 16,
                         .max_blocks_per_seq = (seq + 15) / 16, .max_seq_len = seq};
    char why[1024] = "";
    int rc = impl->decode_v1->refuse(NULL, &dev, &cfg, &s, why, sizeof why);
    int prepared = seq == 100; /* the case the library was prepared for */
    int ok = rc == (prepared ? PPBK_OK : PPBK_REFUSED) && strstr(why, want) &&
             (prepared || strstr(why, "not prepared"));
    printf("%s decode seq=%d: %s (%s)\n", ok ? "ok  " : "FAIL", seq, rc == PPBK_OK ? "accepted" : "refused", why);
    failures += !ok;
}

static int decode_main(const ppbk_impl *impl)
{
    if (!impl->decode_v1 || impl->decode_v2)
        return fprintf(stderr, "decode_v1 %p, decode_v2 %p: want v1 only\n", (const void *)impl->decode_v1,
                       (const void *)impl->decode_v2), 1;
    if (impl->decode_v1->kv_layout != PPB_KV_LAYOUT_FLASH)
        return fprintf(stderr, "decode kv_layout %d, want FLASH\n", impl->decode_v1->kv_layout), 1;
    ask_decode(impl, 100, "kernel_split grid (3, 2, 16) 2 warps + reduce_segments grid (3, 4, 1) 4 warps");
    ask_decode(impl, 200, "--case 'paged_attention b=3 seq=200 h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 v=1'");
    return failures ? 1 : 0;
}

static void ask_unified_prefill(const ppbk_impl *impl, int num_tokens, const char *want)
{
    ppbk_device dev = {.backend = PPBK_BACKEND_CUDA, .cc = 90, .warp_size = 32, .sm_count = 132,
                       .smem_optin = 232448};
    ppbk_prefill_config cfg = {.dtype = PPB_KDTYPE_BF16, .head_dim = 64, .page_size = 16, .block_m = 16,
                               .block_n = 32, .num_warps = 4};
    ppb_prefill_args s = {.batch = 3, .max_query_len = 40, .num_heads = 4, .num_kv_heads = 2, .head_dim = 64,
                          .page_size = 16, .max_blocks_per_seq = 3, .num_tokens = num_tokens};
    char why[1024] = "";
    int rc = impl->prefill->refuse(NULL, &dev, &cfg, &s, why, sizeof why);
    int prepared = num_tokens == 42;
    int ok = rc == (prepared ? PPBK_OK : PPBK_REFUSED) && strstr(why, want);
    printf("%s unified prefill tokens=%d: %s (%s)\n", ok ? "ok  " : "FAIL", num_tokens,
           rc == PPBK_OK ? "accepted" : "refused", why);
    failures += !ok;
}

static int unified_prefill_main(const ppbk_impl *impl)
{
    if (!impl->prefill || impl->prefill->kv_layout != PPB_KV_LAYOUT_FLASH || !impl->prefill->stage)
        return fprintf(stderr, "prefill %p: want one that reads FLASH and stages\n", (const void *)impl->prefill), 1;
    ask_unified_prefill(impl, 42, "kernel_split grid (42, 2, 16) 2 warps + reduce_segments grid (42, 4, 1) 4 warps");
    ask_unified_prefill(impl, 41, "not prepared");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int decode = argc == 3 && strcmp(argv[1], "--decode") == 0;
    int unified_prefill = argc == 3 && strcmp(argv[1], "--unified-prefill") == 0;
    if (argc != 3)
        return fprintf(stderr, "usage: %s LIB MAX_BLOCKS_PER_SEQ | --decode LIB | --unified-prefill LIB\n",
                       argv[0]), 2;
    if (decode || unified_prefill)
        argv++;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fprintf(stderr, "%s\n", dlerror()), 1;
    ppbk_entry_fn entry = (ppbk_entry_fn)dlsym(h, PPBK_ENTRY_SYMBOL);
    const ppbk_impl *impl = entry ? entry() : NULL;
    if (impl && decode)
        return decode_main(impl);
    if (impl && unified_prefill)
        return unified_prefill_main(impl);
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
