/* One part of the prefix-prefill GPU test's kernel table (prefill_kernel_table.h):
 * compiled with -DPPB_TEST_PART=p, p = (dtype * 3 + head_dim index) * 2 + use_mma. */
#include "prefill_kernel_table.h"

#ifndef PPB_TEST_PART
#error "compile with -DPPB_TEST_PART=0..11"
#endif
/* ---- one part of the kernel table ---------------------------------------------- */
#define PART_DTYPE (PPB_TEST_PART / 6)
#define PART_D (PPB_TEST_PART / 2 % 3 == 0 ? 64 : PPB_TEST_PART / 2 % 3 == 1 ? 128 : 256)
#define PART_MMA (PPB_TEST_PART % 2 == 1)
#if PART_DTYPE == 0
typedef __half PartT;
#else
typedef __nv_bfloat16 PartT;
#endif

template <int BM, int BN, int W>
static kernel_entry pick()
{
    kernel_entry e;
    e.smem = test_layout_smem<PART_D, BM, BN, W, PART_MMA>();
    if constexpr (test_expects_static_ok(PART_D, BM, BN, W, PART_MMA, PPB_WARP_SIZE))
        e.fn = prefix_prefill_kernel<PartT, PART_D, BM, BN, W, PART_MMA>;
    else
        e.fn = nullptr;
    return e;
}
#define PW(BM, BN) {pick<BM, BN, 1>(), pick<BM, BN, 2>(), pick<BM, BN, 4>(), pick<BM, BN, 8>()}
#define PBN(BM) {PW(BM, 16), PW(BM, 32), PW(BM, 64), PW(BM, 128)}
#define PPB_PART_FN2(p) ppb_test_table_part##p
#define PPB_PART_FN(p) PPB_PART_FN2(p)
kernel_entry PPB_PART_FN(PPB_TEST_PART)(int bm, int bn, int w)
{
    static const kernel_entry table[4][4][4] = {PBN(16), PBN(32), PBN(64), PBN(128)};
    return table[PPB_TEST_BM_IDX(bm)][PPB_TEST_BM_IDX(bn)][PPB_TEST_W_IDX(w)];
}

