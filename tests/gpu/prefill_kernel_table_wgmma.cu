/* The wgmma part of the prefix-prefill GPU test's kernel table (prefill_kernel_table.h):
 * compiled for sm_90a (tests/gpu/run_prefill_gpu.sh), where PPB_USE_WGMMA is 1; for any
 * other target its kernels trap, and the test fails loudly. */
#include "prefill_kernel_table.h"

template <typename T, int D, int BM, int BN, int W>
static kernel_entry pick()
{
    kernel_entry e;
    if constexpr (test_expects_static_ok(D, BM, BN, W, PPB_PREFILL_PATH_WGMMA, 32)) {
        e.fn = prefix_prefill_kernel<T, D, BM, BN, W, PPB_PREFILL_PATH_WGMMA>;
        e.smem = ppb_prefill::wgmma_layout<D, BM, BN>::SMEM_BYTES;
    } else {
        e.fn = nullptr;
        e.smem = 0;   /* no wgmma layout: the plan's figure is 0 too */
    }
    return e;
}
#define PW(T, D, BM, BN) \
    {pick<T, D, BM, BN, 1>(), pick<T, D, BM, BN, 2>(), pick<T, D, BM, BN, 4>(), pick<T, D, BM, BN, 8>()}
#define PBN(T, D, BM) {PW(T, D, BM, 16), PW(T, D, BM, 32), PW(T, D, BM, 64), PW(T, D, BM, 128)}
#define PD(T, D) {PBN(T, D, 16), PBN(T, D, 32), PBN(T, D, 64), PBN(T, D, 128)}

kernel_entry ppb_test_table_wgmma(int dtype, int d, int bm, int bn, int w)
{
    static const kernel_entry table[2][2][4][4][4] = {{PD(__half, 64), PD(__half, 128)},
                                                      {PD(__nv_bfloat16, 64), PD(__nv_bfloat16, 128)}};
    if (d != 64 && d != 128)
        return kernel_entry{nullptr, 0};
    return table[dtype][d == 128][PPB_TEST_BM_IDX(bm)][PPB_TEST_BM_IDX(bn)][PPB_TEST_W_IDX(w)];
}
