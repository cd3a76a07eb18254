/* Shim: see ../../torch/all.h. Declares what vLLM's launchers name. */
#pragma once

#include <cuda_runtime_api.h>

#include "../../torch/all.h"

namespace at {
namespace cuda {
cudaStream_t getCurrentCUDAStream();
}  // namespace cuda
}  // namespace at
