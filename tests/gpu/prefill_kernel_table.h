/* The kernel table of the prefix-prefill GPU test: which configs are instantiated, and
 * the kernels' own shared-memory figures. prefill_kernel_table.cu is compiled once per
 * part (-DPPB_TEST_PART=0..11: dtype x head_dim x path, simt and mma), and
 * prefill_kernel_table_wgmma.cu once for sm_90a (the wgmma path); test_prefill_kernel.cu
 * looks kernels up through ppb_test_table_partN and ppb_test_table_wgmma. */
#ifndef PPB_PREFILL_KERNEL_TABLE_H
#define PPB_PREFILL_KERNEL_TABLE_H

#include "prefix_prefill.cuh"

typedef void (*prefill_fn)(ppb_prefill_args);

/* The configs this test instantiates: the plan's static rules, restated independently
 * (the test then checks the plan agrees, config by config). */
static constexpr bool test_expects_static_ok(int d, int bm, int bn, int w, int path, int ws)
{
    return path == PPB_PREFILL_PATH_WGMMA
               ? ((bm == 64 || bm == 128) && w * 16 == bm && (bn == 64 || bn == 128) && (d == 64 || d == 128) &&
                  ws == 32)
           : path == PPB_PREFILL_PATH_MMA ? (bm / w >= 16 && (bm / w / 16) * (d / 2 + bn / 2) <= 192)
                                          : (bm * d / (w * ws) <= 64 && bm * bn / (w * ws) <= 64);
}

template <int D, int BM, int BN, int W, bool MMA>
static constexpr unsigned test_layout_smem()
{
    return MMA ? ppb_prefill::mma_layout<D, BM, BN, W>::SMEM_BYTES
               : ppb_prefill::simt_layout<D, BM, BN, W * PPB_WARP_SIZE>::SMEM_BYTES;
}

struct kernel_entry {
    prefill_fn fn;      /* nullptr: not instantiated */
    unsigned smem;      /* the kernel's own layout figure */
};

#define PPB_TEST_BM_IDX(v) ((v) == 16 ? 0 : (v) == 32 ? 1 : (v) == 64 ? 2 : 3)
#define PPB_TEST_W_IDX(v) ((v) == 1 ? 0 : (v) == 2 ? 1 : (v) == 4 ? 2 : 3)

kernel_entry ppb_test_table_part0(int, int, int);
kernel_entry ppb_test_table_part1(int, int, int);
kernel_entry ppb_test_table_part2(int, int, int);
kernel_entry ppb_test_table_part3(int, int, int);
kernel_entry ppb_test_table_part4(int, int, int);
kernel_entry ppb_test_table_part5(int, int, int);
kernel_entry ppb_test_table_part6(int, int, int);
kernel_entry ppb_test_table_part7(int, int, int);
kernel_entry ppb_test_table_part8(int, int, int);
kernel_entry ppb_test_table_part9(int, int, int);
kernel_entry ppb_test_table_part10(int, int, int);
kernel_entry ppb_test_table_part11(int, int, int);
/* The wgmma path (dtype, head_dim, bm, bn, w); smem 0 where it has no layout (D 256). */
kernel_entry ppb_test_table_wgmma(int dtype, int d, int bm, int bn, int w);

#endif
