#!/usr/bin/env bash
# Build the libFuzzer targets with clang and fuzz each one for a bounded time.
#
#   tests/fuzz/run.sh [--ci] [BUILD_DIR] [SECONDS] [TARGET...]
#
# BUILD_DIR (default build-fuzz in the source tree) gets a clang build of
# ppb_core and the fuzz_* targets (-fsanitize=fuzzer,address,undefined).
# Every file in tests/fuzz/regressions/<target>/ is replayed first (each once
# crashed or leaked); then each target runs for SECONDS (default 15) from its
# seed corpus tests/fuzz/corpus/<target>/ (read-only: new inputs go to a
# scratch folder in BUILD_DIR), two targets at a time, and the number of
# executions per target is printed. When clang or its libFuzzer runtime is
# missing it says so and exits 1, or 77 with --ci (what CTest passes: the test
# is then reported as skipped). Any crash, leak or sanitizer report fails the run; the
# crashing input is left in BUILD_DIR/artifacts/<target>/.
set -euo pipefail

ci=0
if [[ "${1:-}" == "--ci" ]]; then ci=1; shift; fi
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$src/build-fuzz}"
seconds="${2:-15}"
shift 2 2>/dev/null || shift $#
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=(suite proposal target model store fetch); fi
jobs="${PPB_FUZZ_JOBS:-2}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
bin="$build/tests/fuzz"

skip() { echo "SKIP: $*" >&2; if (( ci )); then exit 77; else exit 1; fi; }

clang="${PPB_FUZZ_CC:-clang}"
command -v "$clang" >/dev/null 2>&1 || skip "$clang not found (install clang and libclang-rt-14-dev)"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
"$clang" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1 ||
    skip "$clang cannot link -fsanitize=fuzzer (libFuzzer runtime missing: install libclang-rt-14-dev): $(tail -n 2 "$probe/log" | tr '\n' ' ')"

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
mkdir -p "$build"
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER="$clang" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DPPB_FUZZ=ON -DPPB_BUILD_TESTS=OFF -DPPB_CUDA=OFF -DCMAKE_C_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
cmake --build "$build" -j "$jobs" "${build_targets[@]}" >"$build/build.log" 2>&1 ||
    { tail -n 60 "$build/build.log"; exit 1; }

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The fetch target downloads file:// URLs: no proxy, no token from the caller.
unset PPBENCH_BASELINE_TOKEN PPBENCH_CACERT http_proxy https_proxy all_proxy
# Downloads go to $TMPDIR: memory (/dev/shm) when there is one, a disk is slow here.
if [[ -d /dev/shm && -w /dev/shm ]]; then export TMPDIR="/dev/shm/ppb-fuzz-tmp-$$"; else export TMPDIR="$build/tmp"; fi
trap 'rm -rf "$probe" "$TMPDIR"' EXIT
mkdir -p "$TMPDIR"

fail=0
# 1. Regressions: inputs that once crashed or leaked, replayed (no fuzzing).
for t in "${targets[@]}"; do
    dir="$src/tests/fuzz/regressions/$t"
    [[ -d "$dir" ]] || continue
    files=("$dir"/*)
    [[ -e "${files[0]}" ]] || continue
    if "$bin/fuzz_$t" -runs=1 "${files[@]}" >"$build/regress-$t.log" 2>&1; then
        echo "fuzz_$t: ${#files[@]} regression input(s) pass"
    else
        echo "FAIL: fuzz_$t on a regression input:"; tail -n 40 "$build/regress-$t.log"; fail=1
    fi
done

# 2. Bounded fuzzing from the seed corpus, $jobs targets at a time.
fuzz_one() {
    local t="$1" rc=0 work="$build/work/$t" art="$build/artifacts/$t/"
    rm -rf "$work"; mkdir -p "$work" "$art"
    rm -f "$build/fuzz-$t.rc"
    "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$art" "$work" "$src/tests/fuzz/corpus/$t" \
        >"$build/fuzz-$t.log" 2>&1 || rc=$?
    echo "$rc" >"$build/fuzz-$t.rc"
}
running=0
for t in "${targets[@]}"; do
    fuzz_one "$t" &
    running=$((running + 1))
    if (( running >= jobs )); then wait -n || true; running=$((running - 1)); fi
done
wait
for t in "${targets[@]}"; do
    if [[ "$(cat "$build/fuzz-$t.rc" 2>/dev/null)" == 0 ]]; then status=ok; else status=FAILED; fail=1; fi
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz-$t.log" | tail -n 1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$build/fuzz-$t.log" | tail -n 1)"
    echo "fuzz_$t: ${execs:-?} executions in ${seconds} s (${rate:-?}/s): $status"
    if [[ "$status" != ok ]]; then
        grep -E 'ERROR|SUMMARY|==[0-9]+==|artifact|#0 |#1 |#2 |#3 |#4 ' "$build/fuzz-$t.log" | head -n 40 || true
    fi
done
exit "$fail"
