#!/bin/bash
# Build and run the prefix-prefill GPU test (tests/gpu/test_prefill_kernel.cu).
#
#   tests/gpu/run_prefill_gpu.sh build          build $BUILD/test_prefill_kernel (ARCH, default sm_90)
#   tests/gpu/run_prefill_gpu.sh wgmma-part     compile only the wgmma part (sm_90a), ptxas's report in
#                                               $BUILD/part_wgmma.log; no GPU needed
#   tests/gpu/run_prefill_gpu.sh portable       compile the portable (SIMT) kernels for $PORTABLE_ARCH
#                                               (sm_75: the oldest nvcc 13 has; the BI-V100 reports 7.0)
#   tests/gpu/run_prefill_gpu.sh profile        on a GPU machine: only the ncu profile (build if missing)
#   tests/gpu/run_prefill_gpu.sh device         on a GPU machine: build if the binary is missing or does
#                                               not start, then test, compute-sanitizer memcheck, benchmark,
#                                               one ncu profile, racecheck; logs under $OUT (default out/prefill)
#                                               (NCU=0 / SANITIZE=0 skip those; NCU_CASE, NCU_CFG pick the profile)
# The kernel table is split into 12 parts (dtype x head_dim x path) compiled in parallel ($JOBS), plus the
# wgmma part, always for $WGMMA_ARCH (sm_90a: the only target with warpgroup MMA).
# DEFS: extra -D flags for the kernels and the plan alike, e.g. DEFS=-DPPB_PREFILL_MAX_KV_STAGES=1 with its
# own BUILD folder for an A/B of a layout rule.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ARCH=${ARCH:-sm_90}
BUILD=${BUILD:-$ROOT/build-prefill-gpu}
JOBS=${JOBS:-$(nproc)}
PORTABLE_ARCH=${PORTABLE_ARCH:-sm_75}
SRC=$ROOT/tests/gpu/test_prefill_kernel.cu
TABLE=$ROOT/tests/gpu/prefill_kernel_table.cu
WGMMA_TABLE=$ROOT/tests/gpu/prefill_kernel_table_wgmma.cu
WGMMA_ARCH=${WGMMA_ARCH:-sm_90a}
KDEPS="$TABLE $ROOT/tests/gpu/prefill_kernel_table.h $ROOT/kernels/prefix_prefill.cuh $ROOT/kernels/prefix_prefill_wgmma.cuh $ROOT/kernels/ppb_device_common.cuh $ROOT/kernels/attention_args.h $ROOT/kernels/prefill_plan.h"
MDEPS="$SRC $ROOT/tests/gpu/prefill_kernel_table.h $ROOT/kernels/prefill_plan.h $ROOT/kernels/prefix_prefill.cuh $ROOT/kernels/ppb_rng.h $ROOT/harness/run/reference_row.h"
read -r -a DEFS <<< "${DEFS:-}"
# harness/run: the float64 reference (reference_row.h/.c, plain C with no other harness code).
NVFLAGS=(-std=c++17 -O3 -arch="$ARCH" -I"$ROOT/kernels" -I"$ROOT/harness/run" -lineinfo -Xptxas -v "${DEFS[@]}")

stale() {   # stale OUTPUT SOURCES...: true when OUTPUT is missing or older than a source
    local out=$1; shift
    [ -f "$out" ] || return 0
    for d in "$@"; do [ "$d" -nt "$out" ] && return 0; done
    return 1
}

build() {
    mkdir -p "$BUILD"
    local parts=()
    for p in $(seq 0 11); do stale "$BUILD/part$p.o" $KDEPS && parts+=("$p"); done
    local wgmma_pid=
    if stale "$BUILD/part_wgmma.o" $KDEPS "$WGMMA_TABLE"; then
        wgmma_part &
        wgmma_pid=$!
    fi
    if [ ${#parts[@]} -gt 0 ]; then
        echo "compiling kernel parts: ${parts[*]} ($JOBS jobs)"
        printf '%s\n' "${parts[@]}" | xargs -P "$JOBS" -I{} sh -c \
            'nvcc "$@" -DPPB_TEST_PART={} -c "'"$TABLE"'" -o "'"$BUILD"'/part{}.o" > "'"$BUILD"'/part{}.log" 2>&1 || { echo "part {} failed"; cat "'"$BUILD"'/part{}.log"; exit 255; }' \
            sh "${NVFLAGS[@]}" || return 1
    fi
    if stale "$BUILD/main.o" $MDEPS; then
        nvcc "${NVFLAGS[@]}" -c "$SRC" -o "$BUILD/main.o" > "$BUILD/main.log" 2>&1 || { cat "$BUILD/main.log"; return 1; }
    fi
    if [ -n "$wgmma_pid" ] && ! wait "$wgmma_pid"; then
        echo "wgmma part failed"; cat "$BUILD/part_wgmma.log"; return 1
    fi
    gcc -std=c11 -O2 -Wall -Wextra -Wshadow -Werror "${DEFS[@]}" -I"$ROOT/kernels" -c "$ROOT/kernels/prefill_plan.c" -o "$BUILD/prefill_plan.o" || return 1
    gcc -std=c11 -O2 -Wall -Wextra -Wshadow -Werror -I"$ROOT/kernels" -I"$ROOT/harness/run" -c "$ROOT/harness/run/reference_row.c" -o "$BUILD/reference_row.o" || return 1
    nvcc -arch="$ARCH" "$BUILD"/part[0-9]*.o "$BUILD/part_wgmma.o" "$BUILD/main.o" "$BUILD/prefill_plan.o" "$BUILD/reference_row.o" -o "$BUILD/test_prefill_kernel" || return 1
    grep -h -B1 -A3 "warning" "$BUILD"/part*.log "$BUILD/main.log" | head -40
    echo "built $BUILD/test_prefill_kernel"
}

# The wgmma kernels alone, ptxas's report in $BUILD/part_wgmma.log (also what the CPU-side
# check tests/lint/bench_build_matches.py compares with ppbench's NVRTC build).
wgmma_part() {
    mkdir -p "$BUILD"
    nvcc "${NVFLAGS[@]/#-arch=*/-arch=$WGMMA_ARCH}" -c "$WGMMA_TABLE" -o "$BUILD/part_wgmma.o" > "$BUILD/part_wgmma.log" 2>&1
}

portable() {
    mkdir -p "$BUILD/portable"
    for p in 0 2 4 6 8 10; do   # even parts: the SIMT path
        nvcc -std=c++17 -O3 -arch="$PORTABLE_ARCH" -DPPB_USE_MMA=0 -I"$ROOT/kernels" -Xptxas -v \
            -DPPB_TEST_PART=$p -c "$TABLE" -o "$BUILD/portable/part$p.o" > "$BUILD/portable/part$p.log" 2>&1 &
    done
    wait
    grep -l -E "error|warning" "$BUILD"/portable/*.log && return 1
    echo "portable path compiles for $PORTABLE_ARCH"
}

# One ncu profile of one launch (NCU_CFG on NCU_CASE) into $OUT/ncu.txt, key metrics printed.
profile() {
    OUT=${OUT:-$ROOT/out/prefill}
    mkdir -p "$OUT"
    command -v ncu > /dev/null || { echo "no ncu"; return 1; }
    local BIN=$BUILD/test_prefill_kernel
    [ -x "$BIN" ] || build > "$OUT/build.txt" 2>&1 || { echo "build failed"; tail -50 "$OUT/build.txt"; return 1; }
    echo "== ncu (one launch of ${NCU_CFG:-128 64 4} on ${NCU_CASE:-q8192-ctx90112-32/4})"
    local st=smsp__average_warps_issue_stalled
    timeout 60 ncu --clock-control none -k regex:prefix_prefill --launch-count 1 \
        --section SpeedOfLight --section Occupancy \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,${st}_barrier_per_issue_active.ratio,${st}_long_scoreboard_per_issue_active.ratio,${st}_short_scoreboard_per_issue_active.ratio,${st}_mio_throttle_per_issue_active.ratio,${st}_math_pipe_throttle_per_issue_active.ratio,${st}_wait_per_issue_active.ratio,${st}_not_selected_per_issue_active.ratio,${st}_selected_per_issue_active.ratio,${st}_dispatch_stall_per_issue_active.ratio,${st}_lg_throttle_per_issue_active.ratio,${st}_no_instruction_per_issue_active.ratio \
        "$BIN" --ncu ${NCU_CASE:-q8192-ctx90112-32/4} ${NCU_CFG:-128 64 4} > "$OUT/ncu.txt" 2>&1
    echo "ncu exit code $?"
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|hmma|issue_active|hit_rate|bank_conflicts|stalled|Achieved Occupancy|Registers|ERR" "$OUT/ncu.txt" | head -40
}

device() {
    OUT=${OUT:-$ROOT/out/prefill}
    mkdir -p "$OUT"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
    BIN=$BUILD/test_prefill_kernel
    if ! "$BIN" --probe > /dev/null 2>&1; then
        echo "no usable binary: building here" | tee "$OUT/build.txt"
        build >> "$OUT/build.txt" 2>&1 || { echo "build failed"; tail -50 "$OUT/build.txt"; return 1; }
    fi
    echo "== correctness"
    timeout 150 "$BIN" > "$OUT/test.txt" 2>&1
    local rc_test=$?
    grep -E "FAIL|matrix|PASSED|FAILED|device|fault|error" "$OUT/test.txt" | head -60
    echo "test exit code $rc_test"
    if command -v compute-sanitizer > /dev/null && [ "${SANITIZE:-1}" = 1 ]; then
        echo "== compute-sanitizer memcheck (--quick)"
        timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" --quick > "$OUT/memcheck.txt" 2>&1
        echo "memcheck exit code $? (9: errors found, 124: timed out)"; grep -E "ERROR SUMMARY|FAIL|PASSED" "$OUT/memcheck.txt" | head -5
    fi
    echo "== benchmark"
    timeout 120 "$BIN" --bench 20 > "$OUT/bench.txt" 2>&1
    echo "bench exit code $?"; cat "$OUT/bench.txt"
    [ "${NCU:-1}" = 1 ] && profile
    if command -v compute-sanitizer > /dev/null && [ "${SANITIZE:-1}" = 1 ]; then
        echo "== compute-sanitizer racecheck (--quick)"
        timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN" --quick > "$OUT/racecheck.txt" 2>&1
        echo "racecheck exit code $? (9: hazards found, 124: timed out)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL|PASSED" "$OUT/racecheck.txt" | head -5
    fi
    return $rc_test
}

case "${1:-build}" in
build) build ;;
wgmma-part) wgmma_part || { cat "$BUILD/part_wgmma.log"; exit 1; } ;;
profile) profile ;;
portable) portable ;;
device) device ;;
*) echo "usage: $0 build|wgmma-part|portable|profile|device" >&2; exit 2 ;;
esac
