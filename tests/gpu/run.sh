#!/usr/bin/env bash
# The GPU test and benchmark run (tests/gpu/README.md): on a machine with an
# NVIDIA GPU and a CUDA toolkit, build ppbench with CUDA, run the GPU tests,
# compute-sanitizer, and the benchmark suites; logs, the database and a summary
# go to OUT_DIR.
#
#   tests/gpu/run.sh [OUT_DIR] [STEP...]
#
# OUT_DIR defaults to $OUT, else ./gpu-out. STEPs (default: all, in this order):
#   env        GPU, driver, toolkit, host facts
#   build      CMake build with CUDA (system libraries, else the .debs of .deps/ unpacked to /tmp/deps)
#   precompile (implied by suites/bench) NVRTC-compile their kernels on all cores into the cache
#   kernels    the kernel engineers' standalone tests (tests/gpu/test_*_kernel.cu, built with nvcc)
#   backend    the runtime + backend test (test_cuda_backend), and a kernel fault in its own process
#   suites     ppbench run of the GPU suites (tests/gpu/suites: both code paths, 100K contexts)
#              with the float64 reference check
#   paths      every subcommand that touches the device once, on small cases: run (twice), dump of a
#              prefill and a decode case (checked in NumPy), trend over the two runs, propose, calibrate;
#              and a plugin that writes around its device buffers and into an input, caught by the guard zones
#   sanitizer  compute-sanitizer memcheck and racecheck on small matrices
#   aot        the ahead-of-time build (no NVRTC; the BI-V100's mechanism) of the smoke suites' kernels,
#              then ppbench run of both smoke suites with it
#   bench      ppbench run suites/prefill.yaml and suites/decode.yaml (PPB_BENCH_FILTER_<SUITE> narrows them)
#   proposals  ppbench propose for each of suites/proposals/seed-*.yaml (PPB_PROPOSALS: a subset)
#   multigpu   ppbench run --devices all of suites/decode.yaml (v2) and suites/nightly.yaml: one worker per GPU
#   calibrate  ppbench calibrate on 2 decode cases (>= 200 A/A pairs, known effects, repeatability), then the
#              same with the effects as real GPU work (--work-impl vllm-cuda-work: vLLM's kernels launched again
#              over 2% / 3% of the sequences)
#   noise      scripts/noise-study.sh on them: A/A and +3% by separate proposals, compare, trend on quiet nights,
#              and 3% of real GPU work each way round (vllm-cuda-work0 against -work3) by proposals and by
#              compare of separate runs, every stored verdict recomputed; PPB_NOISE_STEPS
#              chooses among those (default: all), PPB_NOISE_{PROPOSALS,KNOWN,RUNS,WORK_PROPOSALS} size them
# The production implementations (docs/KERNEL-ABI.md; need .deps/vllm-0.6.3 from scripts/fetch-vllm.sh,
# which also makes the build step build the vllm-cuda plugin, and python3 with Triton):
#   vllm       prepare vllm-triton (Triton AOT) for the smoke suite (and suites/prefill.yaml when vllm_bench,
#              fidelity or vllm_proposals run), ppbench impls, the two plugin probes
#   crosscheck smoke suites and the GPU suites on builtin and on vllm-triton / vllm-cuda, each case checked
#              against float64, then the implementations against each other (tests/gpu/crosscheck.py),
#              and compute-sanitizer memcheck of both plugins on small cases
#   vllm_bench ppbench run suites/prefill.yaml --impl vllm-triton, suites/decode.yaml --impl vllm-cuda
#   fidelity   tests/gpu/timing_fidelity.py at the goal shapes: ppbench's medians against do_bench / an event loop
#   vllm_proposals  ppbench propose suites/proposals/vllm-*.yaml
#   source_patch  the seed's PATCHES as a source_patch proposal on vLLM 0.6.3, and suites/prefill.yaml on
#              each release of PPB_VLLM_VERSIONS (trees in .deps/vllm-X, or .deps/vllm-X-triton from
#              scripts/fetch-vllm.sh --version X --triton-only: a few hundred kB to carry) as its own wrapper launches it
#   vllm_decode  vllm-triton-decode@VERSION for each release of PPB_VLLM_DECODE_VERSIONS (default 0.10.2 0.20.0
#              0.34.0; trees in .deps/vllm-X): the release's Triton unified attention for decode, the cache in
#              the FLASH layout, suites/smoke-decode.yaml (float64-checked) and suites/decode.yaml (v1 cases),
#              and the built-in v1 decode beside them, into decode-releases.db
#   vllm_unified  prefill through each release's Triton unified attention and its chunked_prefill_paged_decode
#              (PPB_VLLM_UNIFIED_VERSIONS, default 0.10.2 0.34.0; trees in .deps/vllm-X; PPB_VLLM_UNIFIED_KERNELS,
#              default "unified chunked prefix_prefill", a subset of them): vllm-triton-unified@VERSION
#              and vllm-triton-chunked@VERSION (prepare.py --prefill-kernel unified / chunked; the plugin stages
#              the new tokens into its cache, untimed) on suites/smoke.yaml
#              (float64-checked, the mixed batch included) and suites/prefill.yaml at one config (the kernel has
#              no knobs), beside the same release's prefix prefill (vllm-triton@VERSION, --from-wrapper) and the
#              built-in kernel on those prefill.yaml cases, into unified-prefill.db
#   release_fidelity  after vllm_unified / vllm_decode (and source_patch's release runs, when in the same call)
#              in the same OUT_DIR: each release's medians at the goal
#              shapes (prefill q 8192 ctx 90112 and q 512 ctx 16384 at 32/4, the mixed batch; decode b 64 ctx
#              32768 32/4) against triton.testing.do_bench of the release's own Python wrapper on the same
#              inputs (tests/gpu/timing_fidelity.py --wrapper), within 3% and float64-checked
#   vllm_cuda_releases  vllm-cuda@VERSION for each tree of PPB_VLLM_CUDA_TREES (paths, space-separated;
#              default .deps/vllm-*-cuda from scripts/fetch-vllm.sh --version X --cuda-only), built by the
#              plugin project alone into build-vllm-cuda/, then suites/smoke-decode.yaml (host_partition_size=0)
#              and suites/decode.yaml (PPB_VLLM_CUDA_RELEASE_FILTER) on each, float64-checked, into releases.db
#   clang_aot  ci/build-bi-v100.sh with clang's CUDA front end (the CoreX compiler model) for this GPU
#              (PPB_CLANG, default clang++-16 with the CUDA 11.8 tree of scripts/fetch-clang-cuda.sh
#              when .deps has it, else clang++ with the machine's toolkit), then the nightly suites with that build
#   anchor     tests/gpu/sdpa_anchor.py: torch's FlashAttention and memory-efficient attention on prefill.yaml's
#              shapes (contiguous K/V, each backend's bottom-right causal mask checked first), a lower anchor for
#              the prefill TFLOP/s, into OUT_DIR/sdpa.json
# Default: env build kernels backend suites paths sanitizer aot bench vllm crosscheck -- every GPU path
# at least once (the vLLM plugins and their cross-check included: without .deps/vllm-0.6.3 those fail,
# naming what is missing). Every step runs under `timeout`; one call may be split in two on the same
# machine (the build folder and PPBENCH_KERNEL_CACHE, default OUT_DIR/kernel-cache, carry over).
# Limits: PPB_GPU_TIMEOUT_<STEP>=seconds. Exit: 0 when every step passed.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-$PWD/gpu-out}}
[ $# -gt 0 ] && shift
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env build kernels backend suites paths sanitizer aot bench vllm crosscheck)
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${PPB_GPU_BUILD_DIR:-$root/build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
export PPBENCH_KERNEL_CACHE=${PPBENCH_KERNEL_CACHE:-$out/kernel-cache}
export PPB_SOURCE_DIR=$root
db=$out/ppbench.db
summary=$out/summary.txt
: >"$summary"
failed=0
t_all=$(date +%s)

limit() { # limit STEP DEFAULT
  local var="PPB_GPU_TIMEOUT_${1^^}"
  echo "${!var:-$2}"
}

# run NAME SECONDS CMD...: log to OUT/NAME.log, one summary line.
run() {
  local name=$1 secs=$2; shift 2
  local t0 rc
  t0=$(date +%s)
  echo "== $name: $*" | tee -a "$out/commands.txt"
  timeout --kill-after=10 "$secs" "$@" >"$out/$name.log" 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  local verdict=ok
  case $rc in
    0) ;;
    124|137) verdict="TIMEOUT after ${secs}s"; failed=1 ;;
    77) verdict="skipped" ;;
    *) verdict="FAILED (exit $rc)"; failed=1 ;;
  esac
  printf '%-28s %-22s %4ds  %s\n' "$name" "$verdict" "$dt" "$out/$name.log" | tee -a "$summary"
  tail -n 3 "$out/$name.log" | sed 's/^/      /'
  return $rc
}

want() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# ---- env -------------------------------------------------------------------------
if want env; then
  run env 30 bash -c '
    nvidia-smi || true
    nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv || true
    nvcc --version || true
    command -v compute-sanitizer || echo "no compute-sanitizer"
    uname -a; nproc; free -g || true
    cmake --version | head -1; command -v pkg-config || echo "no pkg-config"'
fi

# ---- build -----------------------------------------------------------------------
deps_env=()
if want build || [ ! -x "$build/ppbench" ]; then
  # Libraries the harness needs: the system's, else the repository's .debs.
  if ! pkg-config --exists yaml-0.1 libcurl sqlite3 cmocka 2>/dev/null && [ -d "$root/.deps" ]; then
    mkdir -p /tmp/deps
    for f in "$root"/.deps/*.deb; do dpkg -x "$f" /tmp/deps; done
  fi
fi
if [ -d /tmp/deps/usr ]; then
  multi=/tmp/deps/usr/lib/x86_64-linux-gnu
  # No pkg-config on the machine: the pkgconf of .deps (CMake's FindPkgConfig needs one).
  if ! command -v pkg-config >/dev/null && [ -x /tmp/deps/usr/bin/pkgconf ]; then
    mkdir -p /tmp/deps/bin
    ln -sf /tmp/deps/usr/bin/pkgconf /tmp/deps/bin/pkg-config
    export PATH=/tmp/deps/bin:$PATH
  fi
  export PKG_CONFIG_PATH=$multi/pkgconfig:/tmp/deps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export PKG_CONFIG_SYSROOT_DIR=/tmp/deps
  export LD_LIBRARY_PATH=$multi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LIBRARY_PATH=$multi${LIBRARY_PATH:+:$LIBRARY_PATH}
  # For builds configured by other scripts (ci/build-bi-v100.sh): the same, through the environment.
  export CMAKE_PREFIX_PATH=/tmp/deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH} LDFLAGS="-Wl,-rpath-link,$multi ${LDFLAGS:-}"
  deps_env=(-DCMAKE_PREFIX_PATH=/tmp/deps/usr -DSQLite3_INCLUDE_DIR=/tmp/deps/usr/include
            "-DSQLite3_LIBRARY=$multi/libsqlite3.so" "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$multi")
fi
if want build; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  vllm_src=${PPB_VLLM_SOURCE:-$root/.deps/vllm-0.6.3}
  [ -f "$vllm_src/csrc/attention/attention_kernels.cu" ] && gen+=("-DPPB_VLLM_SOURCE=$vllm_src")
  run build "$(limit build 240)" bash -c '
    set -e
    cmake -S "$0" -B "$1" "${@:3}" -DPPB_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$1" -j "$2" --target test_cuda_backend ppb-kernel-compile
    cmake --build "$1" -j "$2"' "$root" "$build" "$jobs" "${gen[@]}" "${deps_env[@]}"
fi
ppbench=$build/ppbench
backend_test=$build/tests/test_cuda_backend

# ---- compile the suites' kernels on all cores before anything runs them ------------------
# ppbench compiles a kernel the first time a case needs it, one at a time; this fills
# the same cache (same sources, options, architecture) with every instantiation the
# suites below use, in parallel.
if want suites || want bench || want sanitizer || want precompile || want crosscheck; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  pre=()
  want suites && pre+=(--suites-dir "$root/tests/gpu/suites")
  want bench && pre+=(--suite "$root/suites/prefill.yaml" --suite "$root/suites/decode.yaml")
  { want sanitizer || want crosscheck; } && pre+=(--suite "$root/suites/smoke.yaml" --suite "$root/suites/smoke-decode.yaml")
  [ ${#pre[@]} -eq 0 ] && pre=(--suites-dir "$root/suites")
  run precompile "$(limit precompile 300)" "$build/ppb-kernel-compile" "${pre[@]}" \
    --arch "${cc:-90}" --cache "$PPBENCH_KERNEL_CACHE" --all
fi

# ---- the kernel engineers' standalone tests -------------------------------------------
if want kernels; then
  shopt -s nullglob
  for src in "$root"/tests/gpu/test_*_kernel.cu; do
    name=$(basename "$src" .cu)
    if [ "$name" = test_prefill_kernel ]; then
      # Its kernel table is 12 translation units, compiled in parallel by its own script.
      run "${name}_build" "$(limit kernels_build 300)" bash -c \
        'BUILD="$1" "$2" build && cp "$1/test_prefill_kernel" "$3"' \
        _ "$out/prefill-build" "$root/tests/gpu/run_prefill_gpu.sh" "$out/$name" || continue
    else
      run "${name}_build" "$(limit kernels_build 300)" \
        nvcc -std=c++17 -O2 -lineinfo -arch=sm_90 -I"$root/kernels" -I"$root/harness/run" "$src" \
             "$root"/kernels/*_plan.c "$root/harness/run/reference_row.c" -o "$out/$name" || continue
    fi
    run "$name" "$(limit kernels 240)" "$out/$name"
  done
  shopt -u nullglob
fi

# ---- the runtime and backend test --------------------------------------------------------
if want backend; then
  if [ -x "$backend_test" ]; then
    run backend "$(limit backend 300)" "$backend_test" --cache "$PPBENCH_KERNEL_CACHE"
    run backend_fault 60 "$backend_test" --fault
  else
    echo "backend: $backend_test not built" | tee -a "$summary"; failed=1
  fi
fi

# ---- GPU suites through ppbench run -------------------------------------------------------
if want suites; then
  for s in "$root"/tests/gpu/suites/*.yaml; do
    name=suite_$(basename "$s" .yaml)
    run "$name" "$(limit suites 300)" "$ppbench" run "$s" --backend cuda --db "$db" --label gpu-tests --no-progress
  done
fi

# ---- every subcommand that touches the device, once, on small cases ---------------------
# CI has no GPU: this is the check that run, dump, trend, propose and calibrate still work
# on the cuda backend (dump once crashed on every cuda run and no CPU test could see it).
if want paths; then
  pdb=$out/paths.db
  for i in 1 2; do
    run "paths_run_prefill_$i" "$(limit paths 180)" "$ppbench" run "$root/suites/smoke.yaml" --backend cuda \
      --db "$pdb" --label paths --no-progress --filter "batch=1,dtype=bf16"
  done
  run paths_run_decode "$(limit paths 180)" "$ppbench" run "$root/suites/smoke-decode.yaml" --backend cuda \
    --db "$pdb" --label paths-decode --no-progress --filter "batch=3,dtype=bf16,host_partition_size=0"
  # dump: the first timed case of each kernel, reproduced on the GPU and cross-checked in NumPy
  for k in prefix_prefill paged_attention; do
    run "paths_dump_$k" "$(limit paths 180)" bash -c '
      key=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT c.key FROM results r JOIN cases c ON c.id = r.case_id WHERE r.status = '"'"'ok'"'"' AND c.key LIKE ? ORDER BY r.id LIMIT 1\", (sys.argv[2] + \" %\",)).fetchone()[0])" "$1" "$2") &&
      run_id=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT r.run_id FROM results r JOIN cases c ON c.id = r.case_id WHERE c.key = ? ORDER BY r.id LIMIT 1\", (sys.argv[2],)).fetchone()[0])" "$1" "$key") &&
      "$0" dump "$run_id" "$key" --db "$1" -o "$3" && python3 "$4/tests/e2e/check_dump.py" "$3"' \
      "$ppbench" "$pdb" "$k" "$out/dump-$k" "$root"
  done
  run paths_trend "$(limit paths 120)" bash -c '"$@"; rc=$?; [ $rc -eq 0 ] || [ $rc -eq 12 ]' _ \
    "$ppbench" trend "$root/suites/smoke.yaml" --db "$pdb"
  run paths_propose "$(limit paths 240)" bash -c '"$@"; rc=$?; [ $rc -eq 0 ] || [ $rc -eq 10 ] || [ $rc -eq 11 ]' _ \
    "$ppbench" propose "$root/tests/data/proposals/ab-smoke.yaml" --backend cuda --db "$pdb"
  run paths_calibrate "$(limit paths 300)" bash -c '"$@"; rc=$?; [ $rc -eq 0 ] || [ $rc -eq 1 ]' _ \
    "$ppbench" calibrate "$root/suites/smoke-decode.yaml" --backend cuda --db "$out/paths-calibrate.db" \
    --filter "batch=3,seq_len=100,dtype=bf16,head_dim=64,host_partition_size=0" --pairs 20 --effect-pairs 10 \
    --effects 0.05
  # A plugin that writes one byte before and one past its device output, into its input q and before
  # its block_table (tests/plugin/bad_plugins.c): the case is wrong, the reason names each buffer.
  run paths_guard_zones "$(limit paths 180)" bash -c '
    mkdir -p "$1/bad-cuda" && chmod go-w "$1/bad-cuda" &&
    nvcc -shared -Xcompiler -fPIC -DBAD_SCRIBBLE -DBAD_CUDA -I"$2/kernels" "$2/tests/plugin/bad_plugins.c" \
      -o "$1/bad-cuda/libppbk_bad_scribble_cuda.so" -lcudart || exit 2
    "$0" run "$2/suites/smoke.yaml" --backend cuda --db "$1/guard.db" --no-progress --plugin "$1/bad-cuda" \
      --impl plugin:bad-scribble-cuda --filter "batch=1,query_len=17,context_len=37,dtype=bf16,head_dim=64"
    rc=$?; echo "exit $rc"; [ $rc -eq 1 ] || exit 1
    want="impl bad-scribble-cuda wrote outside its buffers: 1 B before out, 1 B past out, 2 B before block_table; it changed its inputs q (guard zones and input checks caught it)"
    python3 -c "import sqlite3,sys; rows=sqlite3.connect(sys.argv[1]).execute(\"SELECT status, reason FROM results\").fetchall(); print(rows); sys.exit(0 if rows and all(s == \"wrong\" and r.startswith(sys.argv[2]) for s, r in rows) else 1)" "$1/guard.db" "$want"' \
    "$ppbench" "$out" "$root"
fi

# ---- compute-sanitizer ------------------------------------------------------------------
if want sanitizer; then
  if command -v compute-sanitizer >/dev/null; then
    cs=(compute-sanitizer --error-exitcode 99 --print-limit 20)
    # The harness path, small cases only: the smoke suites (tiny shapes, every code path).
    run sanitizer_memcheck_prefill "$(limit sanitizer 240)" "${cs[@]}" --tool memcheck \
      "$ppbench" run "$root/suites/smoke.yaml" --backend cuda --db "$out/sanitizer.db" --no-progress \
      --filter "batch=1,dtype=bf16"
    run sanitizer_memcheck_decode "$(limit sanitizer 240)" "${cs[@]}" --tool memcheck \
      "$ppbench" run "$root/suites/smoke-decode.yaml" --backend cuda --db "$out/sanitizer.db" --no-progress \
      --filter "batch=3,dtype=bf16,head_dim=64,host_partition_size=0"
    # The PARTITION_SIZE mismatch under memcheck: the kernel writes past the end the host
    # sized, into ppbench's guard zones (inside the allocation, so no memcheck error);
    # ppbench must report those cases WRONG with the bytes past the end; the suite expects exactly
    # them wrong (expect_wrong:), so the run exits 0 and says so.
    run sanitizer_memcheck_mismatch "$(limit sanitizer 240)" bash -c \
      '"$@" >"$0" 2>&1; rc=$?; cat "$0"
       [ $rc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$0" && grep -q "guard zones caught it" "$0" &&
       grep -q "2 cases wrong, as the suite expects" "$0"' \
      "$out/mismatch-raw.log" "${cs[@]}" --tool memcheck \
      "$ppbench" run "$root/suites/smoke-decode.yaml" --backend cuda --db "$out/sanitizer.db" --no-progress \
      --filter "batch=3,seq_len=100|257,dtype=bf16,head_dim=64,host_partition_size=64"
    run sanitizer_racecheck_prefill "$(limit sanitizer 240)" "${cs[@]}" --tool racecheck \
      "$ppbench" run "$root/suites/smoke.yaml" --backend cuda --db "$out/sanitizer.db" --no-progress \
      --filter "batch=1,query_len=17,context_len=37,dtype=bf16,head_dim=64"
    run sanitizer_racecheck_decode "$(limit sanitizer 240)" "${cs[@]}" --tool racecheck \
      "$ppbench" run "$root/suites/smoke-decode.yaml" --backend cuda --db "$out/sanitizer.db" --no-progress \
      --filter "batch=3,seq_len=100,dtype=bf16,head_dim=64,host_partition_size=0"
    shopt -s nullglob
    # The kernels' own tests on their quick matrices (every code path the card has, the
    # prefill wgmma path included on compute capability 9.0): memcheck and racecheck.
    for bin in "$out"/test_*_kernel; do
      run "sanitizer_memcheck_$(basename "$bin")" "$(limit sanitizer 240)" "${cs[@]}" --tool memcheck "$bin" --quick
      run "sanitizer_racecheck_$(basename "$bin")" "$(limit sanitizer 240)" "${cs[@]}" --tool racecheck "$bin" --quick
    done
    shopt -u nullglob
  else
    echo "sanitizer: compute-sanitizer not found" | tee -a "$summary"; failed=1
  fi
fi

# ---- the ahead-of-time build ---------------------------------------------------------------
# Kernels compiled into the program and launched through the CUDA 10.2-level runtime API, as
# on toolchains without NVRTC; here with nvcc for this GPU and the tensor-core path allowed.
if want aot; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  aot_build=${PPB_GPU_AOT_BUILD_DIR:-$root/build-gpu-aot}
  smoke=("$root/suites/smoke.yaml" "$root/suites/smoke-decode.yaml")
  run aot_build "$(limit aot 300)" bash -c '
    set -e
    "$0" --suite "$1" --suite "$2" --arch "$3" --aot --print >"$4/aot-configs.txt"
    cmake -S "$5" -B "$6" "${@:8}" -DPPB_NVRTC=OFF -DPPB_AOT_CONFIGS="$4/aot-configs.txt" -DPPB_AOT_USE_MMA=ON \
          -DCMAKE_CUDA_ARCHITECTURES="$3" -DPPB_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$6" -j "$7" --target ppbench' \
    "$build/ppb-kernel-compile" "${smoke[@]}" "${cc:-90}" "$out" "$root" "$aot_build" "$jobs" \
    "${deps_env[@]}" && {
    run aot_smoke "$(limit aot 300)" "$aot_build/ppbench" run "${smoke[0]}" --backend cuda \
      --db "$out/aot.db" --label aot --no-progress
    # (the PARTITION_SIZE mismatch cases are WRONG by design: the suites step covers them)
    run aot_smoke_decode "$(limit aot 300)" "$aot_build/ppbench" run "${smoke[1]}" --backend cuda \
      --db "$out/aot.db" --label aot --no-progress --filter host_partition_size=0
  }
fi

# ---- benchmarks ---------------------------------------------------------------------------
if want bench; then
  for s in prefill decode; do
    fvar="PPB_BENCH_FILTER_${s^^}"
    filter=()
    [ -n "${!fvar:-}" ] && filter=(--filter "${!fvar}")
    run "bench_$s" "$(limit bench 600)" "$ppbench" run "$root/suites/$s.yaml" --backend cuda --db "$db" \
      --label gpu-bench --no-progress "${filter[@]}"
  done
  [ -x "$ppbench" ] && "$ppbench" list --db "$db" >"$out/runs.txt" 2>&1
fi

# ---- the seed's proposals ------------------------------------------------------------------
# propose_each FILE...: REJECT (10) and INCONCLUSIVE (11) are answers, not failures.
propose_each() {
  local p name before
  for p in "$@"; do
    name=propose_$(basename "$p" .yaml)
    before=$failed
    run "$name" "$(limit proposals 300)" "$ppbench" propose "$p" --backend cuda --db "$db" --label gpu-bench
    case $? in 10|11) failed=$before; sed -i "s/^\($name *\)FAILED (exit 10)/\1verdict REJECT  /; s/^\($name *\)FAILED (exit 11)/\1verdict INCONCLUSIVE/" "$summary" ;; esac
  done
}
# shellcheck disable=SC2086 # lists of files
want proposals && propose_each ${PPB_PROPOSALS:-$root/suites/proposals/seed-*.yaml}

# ---- the production implementations (vLLM's own kernels) ------------------------------------
vllm_src=${PPB_VLLM_SOURCE:-$root/.deps/vllm-0.6.3}
# source_patch proposals find releases in ppbench's tree cache: the carried ones, linked in.
export PPBENCH_TREE_CACHE=$out/tree-cache
mkdir -p "$PPBENCH_TREE_CACHE/vllm"
for t in "$root"/.deps/vllm-*/; do  # a --triton-only tree (vllm-X-triton) stands for release X
  n=$(basename "$t")
  [ -f "$t/.ppb-archive.sha256" ] && ln -sfn "${t%/}" "$PPBENCH_TREE_CACHE/vllm/${n%-triton}"
done
plugins=$build/plugins
# The prefill probe's own case (tests/gpu/probe_prefill_plugin.c).
probe_case='prefix_prefill b=2 q=100 ctx=300 ragged=false h=8 kvh=2 d=128 dtype=bf16 page=16 win=0 bm=128 bn=128 w=8 path=auto'
if want vllm; then
  if [ ! -f "$vllm_src/csrc/attention/attention_kernels.cu" ]; then
    echo "vllm: no vLLM 0.6.3 tree at $vllm_src (scripts/fetch-vllm.sh, then carry .deps)" | tee -a "$summary"
    failed=1
  fi
  # The smoke suite (crosscheck) always; the benchmark suites only for the steps that time them.
  prep=("$root/suites/smoke.yaml")
  { want vllm_bench || want fidelity || want vllm_proposals; } &&
    prep+=("$root/suites/prefill.yaml" "$root/tests/gpu/suites/gpu-prefill.yaml")
  run vllm_triton_prepare "$(limit vllm 600)" python3 "$root/kernels/vllm/triton/prepare.py" \
    "${prep[@]}" --case "$probe_case" \
    --vllm "$vllm_src" --ppbench "$ppbench" --out "$out/vllm-triton-cache" \
    --lib "$plugins/libppbk_vllm_triton.so" -j "$jobs"
  run impls 60 "$ppbench" impls
  # nvcc compiles the C probes with the host compiler and knows the toolkit's library folders.
  run probe_decode_plugin 120 bash -c 'nvcc -O2 -I"$0/kernels" "$0/tests/gpu/probe_decode_plugin.c" \
      -o "$1/probe_decode_plugin" -ldl -lm && "$1/probe_decode_plugin" "$2/libppbk_vllm_cuda.so"' \
    "$root" "$out" "$plugins"
  run probe_prefill_plugin 120 bash -c 'nvcc -O2 -I"$0/kernels" "$0/tests/gpu/probe_prefill_plugin.c" \
      -o "$1/probe_prefill_plugin" -lcuda -ldl -lm && "$1/probe_prefill_plugin" "$2/libppbk_vllm_triton.so"' \
    "$root" "$out" "$plugins"
fi

# latest_run DB LABEL: the id of the newest run with that label
latest_run() { sqlite3 "$1" "SELECT max(id) FROM runs WHERE label = '$2'" 2>/dev/null || python3 -c \
  "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT max(id) FROM runs WHERE label=?', (sys.argv[2],)).fetchone()[0])" "$1" "$2"; }

if want crosscheck; then
  xdb=$out/crosscheck.db
  for pair in ${PPB_CROSSCHECK:-"smoke:vllm-triton" "smoke-decode:vllm-cuda"}; do
    set -- ${pair/:/ }
    suite=$root/suites/$1.yaml; [ -f "$suite" ] || suite=$root/tests/gpu/suites/$1.yaml
    impl=$2; name=$1
    # The PARTITION_SIZE mismatch cases are WRONG by design on every implementation (the sanitizer
    # steps cover them): here the cases whose outputs can agree.
    xf=(); [[ $name == *decode* ]] && xf=(--filter host_partition_size=0)
    run "xcheck_${name}_builtin" "$(limit crosscheck 300)" "$ppbench" run "$suite" --backend cuda --db "$xdb" \
      --label "x-$name-builtin" --no-progress "${xf[@]}"
    run "xcheck_${name}_$impl" "$(limit crosscheck 300)" "$ppbench" run "$suite" --backend cuda --db "$xdb" \
      --label "x-$name-$impl" --no-progress --impl "$impl" "${xf[@]}"
    run "xcheck_${name}_agree" "$(limit crosscheck 300)" python3 "$root/tests/gpu/crosscheck.py" "$ppbench" "$xdb" \
      "$(latest_run "$xdb" "x-$name-builtin")" "$(latest_run "$xdb" "x-$name-$impl")" --out "$out/xcheck_$name.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    cs=(compute-sanitizer --error-exitcode 99 --print-limit 20 --tool memcheck)
    run sanitizer_memcheck_vllm_triton "$(limit sanitizer 300)" "${cs[@]}" "$ppbench" run "$root/suites/smoke.yaml" \
      --backend cuda --db "$out/sanitizer.db" --no-progress --impl vllm-triton --filter "batch=1,dtype=bf16"
    run sanitizer_memcheck_vllm_cuda "$(limit sanitizer 300)" "${cs[@]}" "$ppbench" run "$root/suites/smoke-decode.yaml" \
      --backend cuda --db "$out/sanitizer.db" --no-progress --impl vllm-cuda --filter "dtype=bf16,host_partition_size=0"
  fi
fi

if want vllm_bench; then
  for s in ${PPB_VLLM_BENCH:-prefill decode}; do
    impl=vllm-triton; [ "$s" = decode ] && impl=vllm-cuda
    fvar="PPB_BENCH_FILTER_${s^^}"
    run "bench_${s}_$impl" "$(limit bench 600)" "$ppbench" run "$root/suites/$s.yaml" --backend cuda --db "$db" \
      --label gpu-bench --impl "$impl" --no-progress ${!fvar:+--filter "${!fvar}"}
  done
fi

# The goal shapes of the timing-fidelity check: prefill q 8192 ctx 90112 and q 512 ctx 16384 at 32/4
# heads, D 128, bf16 (vLLM's 128/8 and the seed's 64/4, among others); decode batch 64 ctx 32768 32/4.
fidelity_filter_prefill="query_len=8192|512,context_len=90112|16384,num_heads=32,head_dim=128,dtype=bf16,block_m=64|128"
fidelity_filter_decode="batch=64,seq_len=32768,num_heads=32,dtype=bf16,page_size=16"
if want fidelity; then
  fdb=$out/fidelity.db
  for s in ${PPB_FIDELITY_SUITES:-prefill decode}; do
    impl=vllm-triton; [ $s = decode ] && impl=vllm-cuda
    fvar=fidelity_filter_$s
    run "fidelity_${s}_ppbench" "$(limit fidelity 300)" "$ppbench" run "$root/suites/$s.yaml" --backend cuda \
      --db "$fdb" --label fidelity --impl "$impl" --filter "${!fvar}" --no-progress
    run "fidelity_$s" "$(limit fidelity 300)" python3 "$root/tests/gpu/timing_fidelity.py" --ppbench "$ppbench" \
      --db "$fdb" --vllm "$vllm_src" --plugin-dir "$plugins" --out "$out/fidelity_$s.json" \
      --triton-cache "$out/vllm-triton-cache" \
      --cases-from-run latest ${PPB_FIDELITY_ARGS:-}
  done
fi

# shellcheck disable=SC2086
want vllm_proposals && propose_each ${PPB_VLLM_PROPOSALS:-$root/suites/proposals/vllm-*.yaml}

# ---- source_patch: the team's change on each release, and the releases side by side ------------
# Trees: .deps/vllm-X (scripts/fetch-vllm.sh --version X; the GPU machine has no network, so they
# are carried: the kernel files, PKG-INFO and the archive's checksum mark are all ppbench reads).
if want source_patch; then
  # shellcheck disable=SC2086
  propose_each ${PPB_SOURCE_PATCH_PROPOSALS:-$root/suites/proposals/vllm-seed-patch.yaml}
  # The null patch, several times: no ACCEPT or REJECT on speed is allowed (the summary counts them).
  for i in $(seq 1 "${PPB_NULL_PATCH_REPEATS:-5}"); do
    run "null_patch_$i" "$(limit source_patch 300)" bash -c '"$@"; rc=$?; echo "exit $rc"; [ $rc -eq 11 ]' _ \
      "$ppbench" propose "$root/suites/proposals/vllm-comment-patch.yaml" --backend cuda --db "$out/null-patch.db"
  done
  # Each release's prefix prefill as its own wrapper launches it, on suites/prefill.yaml's shapes.
  for v in ${PPB_VLLM_VERSIONS:-0.6.3 0.10.2 0.20.0 0.34.0}; do
    tree=$PPBENCH_TREE_CACHE/vllm/vllm-$v
    [ -d "$tree" ] || { echo "source_patch: no tree for vLLM $v in .deps" | tee -a "$summary"; failed=1; continue; }
    run "release_prepare_$v" "$(limit source_patch 600)" python3 "$root/kernels/vllm/triton/prepare.py" \
      --from-wrapper --name "vllm-triton@$v" --vllm "$tree" --ppbench "$ppbench" --out "$out/vllm-triton-cache" \
      --lib "$plugins/libppbk_vllm-triton@$v.so" -j "$jobs" "$root/suites/prefill.yaml" &&
    run "release_run_$v" "$(limit source_patch 600)" "$ppbench" run "$root/suites/prefill.yaml" --backend cuda \
      --db "$out/releases.db" --label "release-$v" --impl "plugin:vllm-triton@$v" --no-progress \
      --filter "block_m=128,block_n=128,num_warps=8${PPB_RELEASE_FILTER:+,$PPB_RELEASE_FILTER}"
  done
fi

# ---- vllm-triton@VERSION decode: each release's Triton unified attention, the cache in the FLASH layout ----
# As the tree's wrapper launches it when called as vLLM's Triton backend calls it (capture.py), v1 cases only
# (the unified kernel has no PARTITION_SIZE); smoke-decode.yaml float64-checked case by case, decode.yaml timed,
# the built-in v1 decode beside them in the same database.
if want vllm_decode; then
  run decode_builtin "$(limit vllm_decode 300)" "$ppbench" run "$root/suites/decode.yaml" --backend cuda \
    --db "$out/decode-releases.db" --label decode-builtin --no-progress --filter "version=1"
  for v in ${PPB_VLLM_DECODE_VERSIONS:-0.10.2 0.20.0 0.34.0}; do
    tree=$PPBENCH_TREE_CACHE/vllm/vllm-$v
    [ -d "$tree" ] || { echo "vllm_decode: no tree for vLLM $v in .deps" | tee -a "$summary"; failed=1; continue; }
    run "decode_prepare_$v" "$(limit vllm_decode 600)" python3 "$root/kernels/vllm/triton/prepare.py" \
      --from-wrapper --name "vllm-triton-decode@$v" --vllm "$tree" --ppbench "$ppbench" \
      --out "$out/vllm-triton-cache" --lib "$plugins/libppbk_vllm-triton-decode@$v.so" -j "$jobs" \
      "$root/suites/smoke-decode.yaml" "$root/suites/decode.yaml" &&
    for suite in smoke-decode decode; do
      run "decode_${suite}_$v" "$(limit vllm_decode 600)" "$ppbench" run "$root/suites/$suite.yaml" --backend cuda \
        --db "$out/decode-releases.db" --label "decode-$v" --impl "plugin:vllm-triton-decode@$v" --no-progress \
        --filter "version=1"
    done
  done
fi

# ---- prefill through the unified attention, beside the release's prefix prefill and the built-in kernel -----
if want vllm_unified; then
  one_config="block_m=128,block_n=128,num_warps=8"  # prefill.yaml's vLLM 0.6.3 config: one case per shape
  run unified_builtin "$(limit vllm_unified 300)" "$ppbench" run "$root/suites/prefill.yaml" --backend cuda \
    --db "$out/unified-prefill.db" --label prefill-builtin --no-progress --filter "$one_config"
  for v in ${PPB_VLLM_UNIFIED_VERSIONS:-0.10.2 0.34.0}; do
    tree=$PPBENCH_TREE_CACHE/vllm/vllm-$v
    [ -d "$tree" ] || { echo "vllm_unified: no tree for vLLM $v in .deps" | tee -a "$summary"; failed=1; continue; }
    for kernel in ${PPB_VLLM_UNIFIED_KERNELS:-unified chunked prefix_prefill}; do
      name=vllm-triton-$kernel@$v
      [ $kernel = prefix_prefill ] && name=vllm-triton@$v
      suites=("$root/suites/prefill.yaml")
      # the staged kernels float64-checked on every smoke case
      [ $kernel != prefix_prefill ] && suites+=("$root/suites/smoke.yaml")
      run "unified_prepare_${kernel}_$v" "$(limit vllm_unified 600)" python3 "$root/kernels/vllm/triton/prepare.py" \
        --from-wrapper --prefill-kernel $kernel --name "$name" --vllm "$tree" --ppbench "$ppbench" \
        --out "$out/vllm-triton-cache" --lib "$plugins/libppbk_$name.so" -j "$jobs" "${suites[@]}" || continue
      [ $kernel != prefix_prefill ] && run "unified_smoke_${kernel}_$v" "$(limit vllm_unified 600)" "$ppbench" run \
        "$root/suites/smoke.yaml" --backend cuda --db "$out/unified-prefill.db" --label "smoke-$kernel-$v" \
        --impl "plugin:$name" --no-progress --filter "block_m=16,block_n=32,num_warps=4"
      run "unified_prefill_${kernel}_$v" "$(limit vllm_unified 600)" "$ppbench" run "$root/suites/prefill.yaml" \
        --backend cuda --db "$out/unified-prefill.db" --label "prefill-$kernel-$v" --impl "plugin:$name" \
        --no-progress --filter "$one_config"
    done
  done
fi

# ---- each release's time against its own wrapper's, at the goal shapes ------------------------------
# The databases of vllm_unified and vllm_decode (run before, same OUT_DIR); one fidelity file per run label.
release_fidelity_prefill="q=8192 ctx=90112 ragged=false h=32 kvh=4 d=128 dtype=bf16|q=512 ctx=16384 ragged=false h=32 kvh=4 d=128 dtype=bf16|dec=64"
release_fidelity_decode="b=64 seq=32768 ragged=false h=32 kvh=4 d=128 dtype=bf16 page=16"
if want release_fidelity; then
  fid=()  # (database, label, filter) triples
  for v in ${PPB_VLLM_UNIFIED_VERSIONS:-0.10.2 0.34.0}; do
    for k in ${PPB_VLLM_UNIFIED_KERNELS:-unified chunked prefix_prefill}; do fid+=(unified-prefill.db "prefill-$k-$v" "$release_fidelity_prefill"); done
  done
  for v in ${PPB_VLLM_DECODE_VERSIONS:-0.10.2 0.20.0 0.34.0}; do
    fid+=(decode-releases.db "decode-$v" "$release_fidelity_decode")
  done
  if [ -f "$out/releases.db" ] && want source_patch; then  # each release's prefill.yaml run of that step
    for v in ${PPB_VLLM_VERSIONS:-0.6.3 0.10.2 0.20.0 0.34.0}; do
      fid+=(releases.db "release-$v" "$release_fidelity_prefill")
    done
  fi
  for ((i = 0; i < ${#fid[@]}; i += 3)); do
    run "release_fidelity_${fid[i+1]}" "$(limit release_fidelity 300)" python3 "$root/tests/gpu/timing_fidelity.py" \
      --wrapper --ppbench "$ppbench" --db "$out/${fid[i]}" --plugin-dir "$plugins" \
      --out "$out/fidelity_${fid[i+1]}.json" --cases-from-run "label=${fid[i+1]}" --filter "${fid[i+2]}" --samples 30
  done
fi

# ---- vllm-cuda@VERSION: each release's CUDA paged attention, from its own tree ---------------------
# The plugin project alone (kernels/vllm/cuda, no harness libraries) reads each tree's form from its files
# and builds libppbk_vllm-cuda@VERSION.so (VERSION: the tree's PKG-INFO) into build-vllm-cuda/plugins.
if want vllm_cuda_releases; then
  vc_trees=()
  if [ -n "${PPB_VLLM_CUDA_TREES:-}" ]; then
    read -ra vc_trees <<<"$PPB_VLLM_CUDA_TREES"
  else
    for t in "$root"/.deps/vllm-*-cuda/; do [ -f "$t/PKG-INFO" ] && vc_trees+=("${t%/}"); done
  fi
  if [ ${#vc_trees[@]} -eq 0 ]; then
    echo "vllm_cuda_releases: no trees (.deps/vllm-X-cuda: scripts/fetch-vllm.sh --version X --cuda-only, then carry .deps)" |
      tee -a "$summary"
    failed=1
  else
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
    vc_build=${PPB_GPU_VLLM_CUDA_BUILD_DIR:-$root/build-vllm-cuda}
    vc_gen=(); command -v ninja >/dev/null && [ ! -f "$vc_build/Makefile" ] && vc_gen=(-G Ninja)
    vc_list=$(IFS=';'; echo "${vc_trees[*]}")
    run vllm_cuda_releases_build "$(limit vllm_cuda_releases 600)" bash -c '
      set -e
      cmake -S "$0/kernels/vllm/cuda" -B "$1" "${@:5}" -DPPB_VLLM_CUDA_TREES="$2" -DCMAKE_CUDA_ARCHITECTURES="$3"
      cmake --build "$1" -j "$4" --target ppbk_vllm_cuda_releases' \
      "$root" "$vc_build" "$vc_list" "${cc:-90}" "$jobs" "${vc_gen[@]}" &&
    run vllm_cuda_releases_impls 60 "$ppbench" impls --plugin "$vc_build/plugins" && {
      for t in "${vc_trees[@]}"; do
        v=$(sed -n 's/^Version: *//p' "$t/PKG-INFO" | head -n 1)
        run "vllm_cuda_${v}_smoke_decode" "$(limit vllm_cuda_releases 600)" "$ppbench" run "$root/suites/smoke-decode.yaml" \
          --backend cuda --db "$out/releases.db" --label "release-cuda-$v" --impl "plugin:vllm-cuda@$v" \
          --plugin "$vc_build/plugins" --no-progress --filter host_partition_size=0
        run "vllm_cuda_${v}_decode" "$(limit vllm_cuda_releases 600)" "$ppbench" run "$root/suites/decode.yaml" \
          --backend cuda --db "$out/releases.db" --label "release-cuda-$v" --impl "plugin:vllm-cuda@$v" \
          --plugin "$vc_build/plugins" --no-progress ${PPB_VLLM_CUDA_RELEASE_FILTER:+--filter "$PPB_VLLM_CUDA_RELEASE_FILTER"}
      done
    }
  fi
fi

# ---- the BI-V100 build flow with clang, on this GPU -------------------------------------------
if want clang_aot; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  # clang's CUDA support trails the toolkits: the tree of scripts/fetch-clang-cuda.sh
  # (CUDA 11.8, what clang 16 takes) when it was carried, else the machine's own toolkit.
  cuda_root=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
  clang=${PPB_CLANG:-clang++}
  tree=$root/.deps/clang-cuda/cuda-11.8-clang.tar.xz
  if [ -f "$tree" ]; then
    mkdir -p /tmp/clang-cuda && tar -C /tmp/clang-cuda -xJf "$tree" && cuda_root=/tmp/clang-cuda/cuda-11.8
    command -v clang++-16 >/dev/null && clang=${PPB_CLANG:-clang++-16}
  fi
  mma=OFF; [ "${cc:-0}" -ge 80 ] && mma=ON
  clang_build=$root/build-clang
  run clang_aot_build "$(limit clang_aot 420)" env COREX="$cuda_root" PPB_CUDA_COMPILER="$clang" \
    PPB_CUDA_ARCH="${cc:-90}" PPB_AOT_TARGET=h200 PPB_AOT_WARP=32 PPB_AOT_USE_MMA=$mma PPB_BUILD_DIR=build-clang \
    "$root/ci/build-bi-v100.sh" && {
    for s in nightly nightly-decode; do
      run "clang_aot_$s" "$(limit clang_aot 300)" "$clang_build/ppbench" run "$root/suites/$s.yaml" --backend cuda \
        --target none --db "$out/clang-aot.db" --label clang-aot --no-progress
    done
  }
fi

# ---- a lower anchor for prefill: torch's own attention kernels on the same shapes -------------
if want anchor; then
  run sdpa_anchor "$(limit anchor 300)" python3 "$root/tests/gpu/sdpa_anchor.py" --json "$out/sdpa.json"
fi

# ---- several GPUs in one host ---------------------------------------------------------------
if want multigpu; then
  run multigpu_decode "$(limit multigpu 240)" "$ppbench" run "$root/suites/decode.yaml" --backend cuda \
    --devices all --case-timeout 120 --filter "version=2" --db "$db" --label multi-gpu --no-progress
fi

# ---- calibration ------------------------------------------------------------------------
# calibrate's and the noise study's decode cases: 2 of decode.yaml's v2 / PARTITION_SIZE 512 configs, one kv head
study_filter="version=2,partition_size=512,dtype=bf16,num_heads=8,seq_len<=32768"
if want calibrate; then
  run calibrate_decode "$(limit calibrate 540)" "$ppbench" calibrate "$root/suites/decode.yaml" --backend cuda \
    --db "$out/calibrate.db" --filter "${PPB_CALIBRATE_FILTER_DECODE:-$study_filter}" \
    --pairs "${PPB_CALIBRATE_PAIRS:-200}" --effect-pairs 40 --effects 0.02,0.03
  # The same effects as real GPU work: vLLM 0.6.3's paged attention launched again over 2% / 3% of the
  # sequences (vllm-cuda-workN, built beside the vllm-cuda plugin), against its work0 build.
  if [ -f "$plugins/libppbk_vllm_cuda_work0.so" ]; then
    run calibrate_decode_work "$(limit calibrate 540)" "$ppbench" calibrate "$root/suites/decode.yaml" \
      --backend cuda --db "$out/calibrate.db" --work-impl vllm-cuda-work \
      --filter "${PPB_CALIBRATE_FILTER_DECODE:-$study_filter}" \
      --pairs "${PPB_CALIBRATE_PAIRS:-200}" --effect-pairs 40 --effects 0.02,0.03
  else
    echo "calibrate_decode_work: no vllm-cuda-work plugins in $plugins (the build step builds them with .deps/vllm-0.6.3)" |
      tee -a "$summary"
    failed=1
  fi
fi
# The same claims measured without calibrate (separate proposals, A/A and a scaled +3%), compare and trend
# on quiet plain nights, and a known effect of real GPU work each way round (scripts/noise-study.sh).
if want noise; then
  # shellcheck disable=SC2086
  run noise "$(limit noise 600)" env PPB="$ppbench" BACKEND=cuda SUITE="$root/suites/decode.yaml" \
    FILTER="${PPB_CALIBRATE_FILTER_DECODE:-$study_filter}" KNOBS="{partition_size: 512}" RUN_FILTER="$study_filter" \
    PROPOSALS="${PPB_NOISE_PROPOSALS:-20}" KNOWN="${PPB_NOISE_KNOWN:-10}" RUNS="${PPB_NOISE_RUNS:-12}" LOAD=0 \
    PLUGINS="$plugins" WORK_IMPL=vllm-cuda-work WORK_PERCENT="${PPB_NOISE_WORK_PERCENT:-3}" \
    WORK_PROPOSALS="${PPB_NOISE_WORK_PROPOSALS:-10}" WORK_FILTER="$study_filter" \
    WORK_KNOBS="version: 2, partition_size: 512" \
    "$root/scripts/noise-study.sh" "$out/noise" ${PPB_NOISE_STEPS:-independent compare trend work compare-work recompute}
fi

echo "---- summary ($(( $(date +%s) - t_all )) s; logs and $db in $out)" >>"$summary"
echo; cat "$summary"
exit $failed
