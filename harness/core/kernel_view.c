#include "kernel_view.h"

#include <math.h>
#include <string.h>

#include "decode_plan.h"
#include "ppb_kernel_params.h"

/* The ABI's code-path and dtype codes are the case's (one number, two headers). */
_Static_assert(PPBK_PATH_AUTO == PPB_PATH_AUTO && PPBK_PATH_SIMT == PPB_PATH_SIMT && PPBK_PATH_MMA == PPB_PATH_MMA &&
                   PPBK_PATH_WGMMA == PPB_PATH_WGMMA,
               "code paths differ between case.h and ppb_kernel_abi.h");
_Static_assert(PPB_KDTYPE_FP16 == PPB_FP16 && PPB_KDTYPE_BF16 == PPB_BF16,
               "dtype codes differ between case.h and attention_args.h");

/* The longest context (or query) of the case's batch. */
static int max_len(const ppb_case *c, int context)
{
    int m = 0;
    for (int b = 0; b < c->shape.batch; b++) {
        int len = context ? ppb_case_context_len_of(c, b) : ppb_case_query_len_of(c, b);
        m = len > m ? len : m;
    }
    return m;
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

void ppb_kernel_view_of_case(const ppb_case *c, ppb_kernel_view *v)
{
    const ppb_shape *s = &c->shape;
    const ppb_config *k = &c->config;
    memset(v, 0, sizeof *v);
    /* Member by member from the lists (ppb_kernel_params.h): the shape facts from the shape,
     * the parameters from the config. */
    v->prefill_cfg = (ppbk_prefill_config){PPBK_CONFIG_SHAPE_FACTS(PPBK_INIT_FROM, s)
                                               PPBK_PREFILL_PARAMS(PPBK_INIT_FROM, k) .path = k->path};
    v->decode_cfg = (ppbk_decode_config){PPBK_CONFIG_SHAPE_FACTS(PPBK_INIT_FROM, s)
                                             PPBK_DECODE_PARAMS(PPBK_INIT_FROM, k) .path = k->path};
    ppb_prefill_args *pa = &v->prefill;
    ppb_decode_args *da = &v->decode;
    float sm_scale = 1.0f / sqrtf((float)s->head_dim);
    if (c->kernel == PPB_PREFIX_PREFILL) {
        pa->batch = s->batch;
        pa->max_query_len = max_len(c, 0);
        for (int b = 0; b < s->batch; b++)
            pa->num_tokens += ppb_case_query_len_of(c, b);
        pa->num_heads = s->num_heads;
        pa->num_kv_heads = s->num_kv_heads;
        pa->head_dim = s->head_dim;
        pa->page_size = s->page_size;
        pa->sliding_window = s->sliding_window;
        int max_ctx = max_len(c, 1);
        pa->max_blocks_per_seq = max_ctx > 0 ? ceil_div(max_ctx, s->page_size) : 1;
        pa->sm_scale = sm_scale;
        return;
    }
    da->num_seqs = s->batch;
    da->num_heads = s->num_heads;
    da->num_kv_heads = s->num_kv_heads;
    da->head_dim = s->head_dim;
    da->page_size = s->page_size;
    da->max_seq_len = max_len(c, 1);
    da->max_blocks_per_seq = ceil_div(da->max_seq_len, s->page_size);
    da->sliding_window = s->sliding_window;
    da->sm_scale = sm_scale;
    /* The kernel indexes the v2 scratch with its own count (vLLM's gridDim.z). */
    if (c->config.version == 2)
        da->max_num_partitions = (int)ppb_decode_num_partitions(da->max_seq_len, c->config.partition_size);
}

int ppb_kernel_launch_for_case(const ppb_case *c, int cc, int warp_size, unsigned smem_limit, int aot,
                               ppb_builtin_launch *out, ppb_err *err)
{
    ppb_kernel_view v;
    ppb_kernel_view_of_case(c, &v);
    ppbk_device dev = {.backend = PPBK_BACKEND_CUDA, .cc = cc, .warp_size = warp_size, .smem_optin = smem_limit};
    return c->kernel == PPB_PREFIX_PREFILL ? ppb_builtin_plan_prefill(&dev, aot, &v.prefill_cfg, &v.prefill, out, err)
                                           : ppb_builtin_plan_decode(&dev, &v.decode_cfg, &v.decode, out, err);
}

