/* Shim: see ../../torch/all.h. Declares what vLLM's launchers name. */
#pragma once

#include "../../torch/all.h"

namespace at {
namespace cuda {
class OptionalCUDAGuard {
   public:
    explicit OptionalCUDAGuard(const c10::optional<c10::Device> &device);
};
}  // namespace cuda
}  // namespace at
