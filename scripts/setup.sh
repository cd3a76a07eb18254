#!/usr/bin/env bash
# The README's two commands:
#   scripts/setup.sh run    install, build, run the main job (ppbench run suites/smoke.yaml)
#   scripts/setup.sh test   install, build (normal + ASan/UBSan + TSan), run every test
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
mode=${1:-}

case "$mode" in run|test) "$root/scripts/install-deps.sh" "$mode" ;; esac

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

case "$mode" in
  run)
    build build
    # The backend is chosen at run time: the GPU when there is one, else the CPU
    # backend, and ppbench says which.
    exec ./build/ppbench run suites/smoke.yaml --db "${PPBENCH_DB:-ppbench.db}"
    ;;
  test)
    build build -DPPB_WERROR=ON
    build build-asan -DPPB_WERROR=ON -DPPB_SANITIZE=ON -DPPB_CUDA=OFF
    # ThreadSanitizer: only the tests of the modules that run threads (label threads)
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON -DPPB_SANITIZE_THREAD=ON \
      -DPPB_CUDA=OFF >/dev/null
    cmake --build build-tsan -j "$jobs" --target \
      $(ctest --test-dir build-tsan -N -L threads | sed -n 's/^ *Test *#[0-9]*: //p')
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export TSAN_OPTIONS=halt_on_error=1
    # everything but the mutation test (minutes; tests/mutation/decide.sh, run on purpose)
    ctest --test-dir build --output-on-failure -j "$jobs" -LE mutation
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L threads
    ;;
  *)
    echo "usage: scripts/setup.sh run|test" >&2
    exit 2
    ;;
esac
