/* The ahead-of-time mechanism: kernels compiled into the program (the table
 * generated from PPB_AOT_CONFIGS), launched through the CUDA runtime API at
 * the CUDA 10.2 level only (cudaLaunchKernel, cudaFuncGetAttributes,
 * cudaFuncSetAttribute), so toolchains without NVRTC or a driver API (the
 * BI-V100's CoreX) build and run it. */
#include <cuda_runtime.h>

extern "C" {
#include "kernels_internal.h"
}

static int aot_fail(ppb_err *err, cudaError_t e, const char *what)
{
    return ppb_fail(err, e == cudaErrorMemoryAllocation ? PPB_ENOMEM : PPB_EFAIL, "%s: %s (%s)", what,
                    cudaGetErrorString(e), cudaGetErrorName(e));
}

extern "C" int ppb_aot_warp_size(void) { return PPB_WARP_SIZE; }

extern "C" int ppb_aot_count(void) { return ppb_aot_entry_count; }

extern "C" const void *ppb_aot_find(const ppb_kernel_spec *spec)
{
    for (int i = 0; i < ppb_aot_entry_count; i++)
        if (ppb_kernel_spec_equal(&ppb_aot_entries[i].spec, spec))
            return ppb_aot_entries[i].fn;
    return NULL;
}

extern "C" int ppb_aot_resources(const void *fn, ppbk_resources *res, ppb_err *err)
{
    cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, fn);
    if (e != cudaSuccess)
        return aot_fail(err, e, "cudaFuncGetAttributes");
    res->registers = a.numRegs;
    res->static_smem = (int)a.sharedSizeBytes;
    res->local_bytes = (int)a.localSizeBytes;
    res->max_threads = a.maxThreadsPerBlock;
    return PPB_OK;
}

extern "C" int ppb_aot_set_dynamic_smem(const void *fn, int bytes, ppb_err *err)
{
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess)
        return aot_fail(err, e, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    return PPB_OK;
}

extern "C" int ppb_aot_launch(const void *fn, const ppb_launch_plan *plan, void **params, void *stream,
                              ppb_err *err)
{
    dim3 grid(plan->grid[0], plan->grid[1], plan->grid[2]);
    dim3 block(plan->block[0], plan->block[1], plan->block[2]);
    cudaError_t e = cudaLaunchKernel(fn, grid, block, params, plan->dynamic_smem, (cudaStream_t)stream);
    if (e != cudaSuccess)
        return aot_fail(err, e, "cudaLaunchKernel");
    return PPB_OK;
}
