/* Shim for vLLM's csrc/attention/attention_kernels.cu, which includes
 * <torch/all.h> for its host-side launchers. The plugin launches vLLM's
 * kernels itself (../vllm_instances.cu says why) and never instantiates those
 * launchers, so this header only DECLARES the few names their template
 * bodies mention, enough for the file to parse. Nothing here is defined:
 * a use that slipped in would fail at link time, not misbehave at run time. */
#pragma once

#include <cstdint>
#include <string>

namespace c10 {
struct Device;
template <typename T>
class optional {
   public:
    explicit operator bool() const;
    const T &value() const;
};
}  // namespace c10

namespace torch {
class Tensor {
   public:
    int64_t size(int64_t dim) const;
    int64_t stride(int64_t dim) const;
    void *data_ptr() const;
    template <typename T>
    T *data_ptr() const;
};
/* at::device_of in PyTorch, found there by argument-dependent lookup. */
c10::optional<c10::Device> device_of(const Tensor &t);
}  // namespace torch

/* Only reached from the launchers and vLLM's op entry points, which the
 * plugin compiles out (vllm_instances.cu): a no-op that still parses. */
#define TORCH_CHECK(cond, ...) ((void)(cond))
