#!/usr/bin/env bash
# Build ppbench for the Iluvatar BI-V100 with its CoreX toolchain: clang in
# CUDA mode for the ivcore10 architecture (the toolchain's nvcc is a stub and
# there is no NVRTC), 64-wide warps, and the kernels compiled ahead of time
# from a list of kernel spec lines (kernels/CMakeLists.txt, PPB_AOT_CONFIGS).
#
# This cannot run on the machines this repository is developed and tested on
# (no CoreX SDK there); `--dry-run` prints what it would do, and this
# repository's CI checks that. On a BI-V100 runner ci/nightly.sh calls it.
#
#   ci/build-bi-v100.sh [--dry-run]
#   COREX=/usr/local/corex       the SDK (clang++, CUDA headers and runtime)
#   PPB_BUILD_DIR=build-bi-v100  where to build
#   PPB_AOT_CONFIGS=FILE         kernel spec lines to build (default: listed from the
#                                nightly suites by a host build's `ppbench list-kernels`)
#   PPB_AOT_SUITES="..."         the suites to list kernels from (default: the nightly ones)
# The same clang-built flow on an NVIDIA GPU (how tests/gpu/run.sh checks this script on the H200):
#   PPB_CUDA_COMPILER=clang++    the CUDA compiler (default: $COREX/bin/clang++)
#   PPB_CUDA_ARCH=90             CMAKE_CUDA_ARCHITECTURES (default: ivcore10)
#   PPB_AOT_TARGET=h200          the profile list-kernels reads the device from (default: bi-v100)
#   PPB_AOT_WARP=32              the warp size the kernels are compiled for (default: 64)
#   PPB_AOT_USE_MMA=ON           the tensor-core path too (sm_80+; the BI-V100 has none: default OFF)
#   PPB_CUDA_EXTRA_FLAGS="..."   more CUDA compiler flags (e.g. -isystem COREX/include where another
#                                toolkit's headers sit in /usr/local/include and would be found first)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
corex=${COREX:-/usr/local/corex}
build=${PPB_BUILD_DIR:-build-bi-v100}
suites=${PPB_AOT_SUITES:-suites/nightly.yaml suites/nightly-decode.yaml}
case $build in /*) build_abs=$build ;; *) build_abs=$root/$build ;; esac
aot=${PPB_AOT_CONFIGS:-$build_abs/aot-bi-v100.txt}
cuda_compiler=${PPB_CUDA_COMPILER:-$corex/bin/clang++}
cuda_arch=${PPB_CUDA_ARCH:-ivcore10}
aot_target=${PPB_AOT_TARGET:-bi-v100}
aot_warp=${PPB_AOT_WARP:-64}
aot_mma=${PPB_AOT_USE_MMA:-OFF}
run() { echo "+ $*"; [ "$dry" = 1 ] || "$@"; }

if [ "$dry" = 0 ]; then
  command -v "$cuda_compiler" >/dev/null || { echo "build-bi-v100: no CUDA compiler $cuda_compiler (set COREX to the CoreX SDK, or PPB_CUDA_COMPILER)" >&2; exit 4; }
  export PATH="$corex/bin:$PATH" LD_LIBRARY_PATH="$corex/lib64:$corex/lib:${LD_LIBRARY_PATH:-}"
fi

# 1. The kernel list. A host-only build of ppbench (no CUDA) lists the
#    instantiations the suites need on the BI-V100 (target bi-v100: 64-wide
#    warps, 48 KB of shared memory, no tensor-core path).
if [ -z "${PPB_AOT_CONFIGS:-}" ]; then
  run cmake -S . -B "$build-host" -DCMAKE_BUILD_TYPE=Release -DPPB_CUDA=OFF -DPPB_BUILD_TESTS=OFF
  run cmake --build "$build-host" -j "$(nproc)" --target ppbench
  if [ "$dry" = 0 ] && ! "$build-host/ppbench" --help | grep -qE '^  list-kernels '; then
    echo "build-bi-v100: this ppbench has no list-kernels command; give the list in PPB_AOT_CONFIGS" >&2
    exit 4
  fi
  echo "+ $build-host/ppbench list-kernels $suites --target $aot_target --aot > $aot"
  if [ "$dry" = 0 ]; then
    mkdir -p "$(dirname "$aot")"
    # shellcheck disable=SC2086 # a list of suite files
    "$build-host/ppbench" list-kernels $suites --target "$aot_target" --aot >"$aot"
    [ -s "$aot" ] || { echo "build-bi-v100: the suites list no kernels for the BI-V100" >&2; exit 4; }
  fi
fi

# 2. The device build: clang -x cuda --cuda-gpu-arch=ivcore10 --cuda-path=$COREX
#    (CMake adds -x cuda and the arch flag from CMAKE_CUDA_ARCHITECTURES).
run cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPPB_BUILD_TESTS=OFF \
  -DPPB_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$cuda_compiler" \
  -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" \
  -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared \
  -DCMAKE_CUDA_FLAGS="--cuda-path=$corex ${PPB_CUDA_EXTRA_FLAGS:-}" \
  -DCUDAToolkit_ROOT="$corex" \
  -DPPB_NVRTC=OFF \
  -DPPB_AOT_CONFIGS="$aot" \
  -DPPB_WARP_SIZE="$aot_warp" \
  -DPPB_AOT_USE_MMA="$aot_mma"
run cmake --build "$build" -j "$(nproc)" --target ppbench
echo "build-bi-v100: $build/ppbench"
