/* Writing NumPy .npy files (format 1.0), so a dumped case can be checked in
 * NumPy or PyTorch. bf16 has no NumPy dtype: it is written as '<u2' bit
 * patterns (view them as torch.bfloat16). */
#ifndef PPB_NPY_H
#define PPB_NPY_H

#include <stddef.h>

#include "ppb_error.h"

/* descr: NumPy type string ("<f2", "<u2", "<i4", "<f8"); shape: ndim sizes. */
int ppb_npy_write(const char *path, const char *descr, size_t elem_size, const size_t *shape,
                  int ndim, const void *data, ppb_err *err);

#endif
