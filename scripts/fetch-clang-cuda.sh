#!/usr/bin/env bash
# A CUDA 11.8 tree that clang 16 accepts as --cuda-path, assembled from NVIDIA's
# pip wheels (from the package registry pip is configured with), for building
# ppbench the way the BI-V100's CoreX toolchain does (clang's CUDA front end)
# on a machine whose own toolkit is too new for its clang (tests/gpu/run.sh
# step clang_aot; clang 16 stops at CUDA 11.8, the GPU machine has CUDA 13).
#   scripts/fetch-clang-cuda.sh      -> .deps/clang-cuda/cuda-11.8-clang.tar.xz (8 MB; 41 MB unpacked)
# Unpack it where it is used: tar -C DIR -xJf ...; the tree is DIR/cuda-11.8.
# What it fixes on top of the wheels, and why:
#  - bin/fatbinary: clang 16 calls fatbinary with a syntax CUDA 13's rejects;
#    scripts/clang-cuda/fatbinary translates and runs the machine's own.
#  - bin/nvcc: a stub answering --version, which CMake needs to find the tree.
#  - crt/host_defines.h: no __noinline__ macro under clang (gcc 13's libstdc++ breaks on it).
#  - curand headers: clang's CUDA wrapper header always includes one of them.
#  - lib64/libcudadevrt.a: empty; CMake links it into every clang CUDA program.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/.deps/clang-cuda}"
mkdir -p "$OUT"
WITH_PTXAS="${WITH_PTXAS:-1}"     # 0 = rely on the GPU machine's ptxas (CUDA 13 ptxas accepts clang-16 PTX 7.8)
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
pip download --no-deps -d "$WORK/whl" \
  nvidia-cuda-runtime-cu11==11.8.89 \
  nvidia-cuda-nvcc-cu11==11.8.89 \
  nvidia-cuda-cccl-cu11==11.8.89.post1 \
  nvidia-curand-cu11==10.3.0.86          # headers only: clang's wrapper force-includes curand_mtgp32_kernel.h
for w in "$WORK"/whl/*.whl; do unzip -q -o "$w" -d "$WORK/u"; done
N="$WORK/u/nvidia"
T="$WORK/tree/cuda-11.8"; mkdir -p "$T/bin" "$T/include" "$T/lib64" "$T/nvvm/libdevice"
cp -a "$N/cuda_runtime/include/." "$T/include/"      # cuda.h cuda_runtime*.h cuda_fp16/bf16/fp8, cooperative_groups ...
cp -a "$N/cuda_nvcc/include/."    "$T/include/"      # crt/*.h(pp) (host_runtime.h, math_functions.hpp, sm_*_rt ...)
cp -a "$N/cuda_cccl/include/."    "$T/include/"      # cub/ thrust/ cuda/ (libcu++) nv/
cp -a "$N/curand/include/."       "$T/include/"      # curand*.h (the 58 MB libcurand.so is NOT copied)
# Pitfall fix: CUDA 11.8 crt/host_defines.h does `#define __noinline__ __attribute__((noinline))`, which breaks
# libstdc++ >= 12.3/13 (`__attribute__((__noinline__, __noclone__, __cold__))` in basic_string.h). Clang >= 15 knows
# __noinline__ as a CUDA keyword (CUDA 12.x/13 headers dropped the macro too), so skip the macro under clang.
sed -i 's|^#if defined(__CUDACC__) \|\| defined(__CUDA_ARCH__) \|\| defined(__CUDA_LIBDEVICE__)$|#if (defined(__CUDACC__) \|\| defined(__CUDA_ARCH__) \|\| defined(__CUDA_LIBDEVICE__)) \&\& !defined(__clang__) /* patched for clang */|' "$T/include/crt/host_defines.h"
grep -q 'patched for clang' "$T/include/crt/host_defines.h" || { echo "host_defines.h patch failed" >&2; exit 1; }
find "$T/include" -name __init__.py -delete
rm -rf "$T/include/CL"                               # OpenCL headers, not needed
cp "$N/cuda_nvcc/nvvm/libdevice/libdevice.10.bc" "$T/nvvm/libdevice/"
cp "$N/cuda_runtime/lib/libcudart.so.11.0" "$T/lib64/"
ln -s libcudart.so.11.0 "$T/lib64/libcudart.so"
# CMake (4.x) links every CUDA program of a clang build with -lcudadevrt, the
# device runtime of separable compilation, which no wheel ships; ppbench uses
# none of it, so an empty archive satisfies the link.
ar rcs "$T/lib64/libcudadevrt.a"
if [ "$WITH_PTXAS" = 1 ]; then install -m755 "$N/cuda_nvcc/bin/ptxas" "$T/bin/ptxas"; fi
install -m755 "$root/scripts/clang-cuda/fatbinary" "$T/bin/fatbinary"
install -m755 "$root/scripts/clang-cuda/nvcc" "$T/bin/nvcc"
echo "CUDA Version 11.8.89 (assembled from pip wheels for clang --cuda-path)" > "$T/version.txt"
tar -C "$WORK/tree" -cJf "$OUT/cuda-11.8-clang.tar.xz" cuda-11.8
du -sh "$T" "$OUT/cuda-11.8-clang.tar.xz"
