#include "kernel_case.h"

#include <string.h>

#include "matrix.h"
#include "suite.h"

void ppb_kernel_args_point(ppb_prefill_args *pa, ppb_decode_args *da, int kernel, const ppb_tensor_ptrs *t)
{
    if (kernel == PPB_PREFIX_PREFILL) {
        /* the new tokens, the paged cache, the lengths */
        pa->q = t->q, pa->k = t->k, pa->v = t->v, pa->out = t->out;
        pa->k_cache = t->k_cache, pa->v_cache = t->v_cache, pa->block_table = t->block_table;
        pa->start_loc = t->start_loc, pa->query_lens = t->query_lens, pa->context_lens = t->context_lens;
        pa->seq_lens = t->seq_lens;
        pa->num_blocks = t->num_blocks;
        return;
    }
    da->q = t->q, da->out = t->out;
    da->k_cache = t->k_cache, da->v_cache = t->v_cache, da->block_table = t->block_table;
    da->seq_lens = t->context_lens;
}

int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc, int warp_size, unsigned smem_limit,
                           int aot, ppb_kernel_spec_list *out, long *skipped_cases, ppb_err *err)
{
    long skipped = 0;
    int rc = PPB_OK;
    for (int p = 0; p < n_paths && rc == PPB_OK; p++) {
        ppb_suite suite;
        ppb_case_list cases = {0};
        memset(&suite, 0, sizeof suite);
        rc = ppb_suite_load(suite_paths[p], &suite, err);
        if (rc == PPB_OK)
            rc = ppb_matrix_expand(&suite, &cases, err);
        for (int i = 0; rc == PPB_OK && i < cases.n; i++) {
            ppb_err why;
            /* the CUDA backend makes every case's inputs with the generator */
            const ppb_kernel_spec fill = {.kind = PPB_KSPEC_INPUT_FILL, .dtype = cases.items[i].shape.dtype};
            if (ppb_kernel_spec_list_add(out, &fill) != PPB_OK) {
                rc = ppb_fail(err, PPB_ENOMEM, "out of memory listing kernels");
                break;
            }
            if (cases.items[i].config.impl != PPB_IMPL_BUILTIN)
                continue;
            ppb_builtin_launch launch;
            int src = ppb_kernel_launch_for_case(&cases.items[i], cc, warp_size ? warp_size : 32,
                                                 smem_limit ? smem_limit : ppb_smem_optin_for_cc(cc), aot, &launch,
                                                 &why);
            if (src == PPB_EREFUSED) {
                skipped++;
                continue;
            }
            if (src) {
                rc = ppb_fail(err, src, "%s: case %s: %s", suite_paths[p], cases.items[i].key, why.msg);
                break;
            }
            for (int k = 0; k < launch.n_specs && rc == PPB_OK; k++)
                if (ppb_kernel_spec_list_add(out, &launch.spec[k]) != PPB_OK)
                    rc = ppb_fail(err, PPB_ENOMEM, "out of memory listing kernels");
        }
        ppb_case_list_free(&cases);
        ppb_suite_free(&suite);
    }
    if (skipped_cases)
        *skipped_cases = skipped;
    return rc;
}

