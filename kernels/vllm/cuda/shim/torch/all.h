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
/* Named by the fp8 helpers of later releases (quant_utils.cuh, 0.22 for one):
 * a full specialization vec_conversion<c10::Float8_e4m3fn, float>, an inline
 * device function for an fp8 cache that no "auto" kernel calls. */
struct Float8_e4m3fn {
    struct from_bits_t {};
    __host__ __device__ static from_bits_t from_bits();
    __host__ __device__ Float8_e4m3fn(uint8_t bits, from_bits_t);
    __host__ __device__ explicit Float8_e4m3fn(float value);
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
 * plugin compiles out (vllm_instances.cu), and from host helpers no kernel
 * calls (get_fp8_kv_cache_data_type in later releases): a failed check calls a
 * function that is declared, never defined, and does not return, so such a
 * helper still parses without a missing-return warning, and a call that
 * slipped in would fail at link time. */
[[noreturn]] void ppb_vllm_shim_torch_check_failed();
#define TORCH_CHECK(cond, ...)                     \
    do {                                           \
        if (!(cond))                               \
            ppb_vllm_shim_torch_check_failed();    \
    } while (0)
