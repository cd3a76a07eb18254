#include "kernel_case.h"

#include <string.h>

#include "matrix.h"
#include "suite.h"

void ppb_kernel_args_point(ppb_prefill_args *pa, ppb_decode_args *da, int kernel, const ppb_tensor_ptrs *t)
{
    if (kernel == PPB_PREFIX_PREFILL) {
        ppb_prefill_args *a = pa;
        a->q = t->q;
        a->k = t->k;
        a->v = t->v;
        a->k_cache = t->k_cache;
        a->v_cache = t->v_cache;
        a->out = t->out;
        a->block_table = t->block_table;
        a->start_loc = t->start_loc;
        a->query_lens = t->query_lens;
        a->context_lens = t->context_lens;
        a->seq_lens = t->seq_lens;
        return;
    }
    ppb_decode_args *a = da;
    a->q = t->q;
    a->k_cache = t->k_cache;
    a->v_cache = t->v_cache;
    a->out = t->out;
    a->block_table = t->block_table;
    a->seq_lens = t->context_lens;
}

int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc, int warp_size, unsigned smem_limit,
                           ppb_kernel_spec_list *out, long *skipped_cases, ppb_err *err)
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
            if (cases.items[i].config.impl != PPB_IMPL_BUILTIN)
                continue;
            ppb_builtin_launch launch;
            int src = ppb_kernel_launch_for_case(&cases.items[i], cc, warp_size ? warp_size : 32,
                                                 smem_limit ? smem_limit : ppb_smem_optin_for_cc(cc), &launch, &why);
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

