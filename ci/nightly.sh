#!/usr/bin/env bash
# The nightly pipeline, one entry point for every CI system (ci/github,
# ci/gitlab) and for this repository's own CI on the CPU backend
# (tests/e2e/ci_nightly.sh): build -> run the nightly suites -> trend (fails
# the job on a regression) -> report (kept as an artifact) -> push.
# docs/CI.md describes it; every setting is an environment variable:
#
#   PPB_MODE         cpu | cuda | bi-v100   (default: bi-v100 when ixsmi is found,
#                    cuda when nvidia-smi is, else cpu)
#   PPBENCH          a ppbench binary already built: the build step is skipped
#   PPB_BUILD_DIR    build directory (build-nightly-<mode>)
#   PPB_SUITES       suite files (default suites/nightly.yaml suites/nightly-decode.yaml;
#                    cpu: suites/smoke.yaml, since the nightly shapes are too large for
#                    the CPU backend and are refused there; smoke-decode.yaml is left
#                    out as it holds PARTITION_SIZE mismatches that are wrong on purpose)
#   PPB_RUN_ARGS     more options for ppbench run (e.g. "--target none")
#   PPB_VLLM_TREE    the deployment's vLLM tree (a path): each night its Triton prefix prefill is
#                    prepared as its own wrapper launches it (kernels/vllm/triton/prepare.py
#                    --from-wrapper) and the prefix_prefill suites run on it instead of the built-in
#                    kernels, so the trend follows the kernels the deployment ships. The name stays
#                    PPB_VLLM_IMPL (default vllm-triton@deployed) from night to night, so a change to
#                    the tree shows as a step in the trend; the tree's checksum is in each run's
#                    environment (ppbench show RUN).
#   PPB_VLLM_PREFILL_KERNEL  which of that tree's kernels runs prefill: prefix_prefill (default),
#                    unified (the V1 engine's Triton unified attention) or chunked
#                    (chunked_prefill_paged_decode): the one the deployment serves with
#   PPB_DB           the results database. Trend needs the earlier nights: keep it on
#                    the runner (default ${PPB_STATE_DIR:-$HOME/.ppbench}/nightly-<mode>.db)
#   PPBENCH_KERNEL_CACHE  compiled kernels and float64 reference rows, reused night to
#                    night (default ${PPB_STATE_DIR:-$HOME/.ppbench}/cache: a night on
#                    unchanged shapes skips the reference rows, seconds per 32K shape)
#   PPB_REPORT_DIR   where the report goes (default reports/out/nightly); the CI
#                    files keep it as an artifact
#   PPBENCH_PUSH_URL  where to push each run (unset: no push)
#   PPBENCH_PUSH_FORMAT  prometheus (default), influx or json
#   PPBENCH_PUSH_TOKEN   the push token (a CI secret; ppbench never prints it)
#   PPB_PUSH_ARGS        more options for ppbench push (e.g. "--cacert /etc/ssl/corp.pem")
#   PPB_PUSH_REQUIRED    1: a failed push fails the job (default 0: it is queued in
#                        the database and sent by the next night's push)
#
# Exit: 0 all good; 1 some case wrong (correctness) or a suite timed no case; 12 a performance
# regression; 4 a step failed to run (build, run, trend, report). When several
# apply, the first in that order (4, 1, 12) wins; every step still runs so the
# night's data is reported and pushed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mode=${PPB_MODE:-}
if [ -z "$mode" ]; then
  if command -v ixsmi >/dev/null; then mode=bi-v100
  elif command -v nvidia-smi >/dev/null; then mode=cuda
  else mode=cpu; fi
fi
case "$mode" in cpu|cuda|bi-v100) ;; *) echo "nightly: unknown PPB_MODE '$mode' (cpu, cuda, bi-v100)" >&2; exit 2 ;; esac
backend=$([ "$mode" = cpu ] && echo cpu || echo cuda)
if [ -n "${PPB_SUITES:-}" ]; then
  read -r -a suites <<<"$PPB_SUITES"
elif [ "$mode" = cpu ]; then
  suites=(suites/smoke.yaml)
else
  suites=(suites/nightly.yaml suites/nightly-decode.yaml)
fi
db=${PPB_DB:-${PPB_STATE_DIR:-$HOME/.ppbench}/nightly-$mode.db}
export PPBENCH_KERNEL_CACHE=${PPBENCH_KERNEL_CACHE:-${PPB_STATE_DIR:-$HOME/.ppbench}/cache}
report=${PPB_REPORT_DIR:-reports/out/nightly}
mkdir -p "$(dirname "$db")" "$report"
: >"$report/summary.md"   # this night's run outcomes and trend verdicts in Markdown (the CI job summary)
summary="$report/summary.txt"
: >"$summary"

step_failed=0 wrong=0 regression=0
say() { echo "nightly: $*" | tee -a "$summary" >&2; }

# ---- build -----------------------------------------------------------------
ppb=${PPBENCH:-}
if [ -n "$ppb" ]; then
  say "build: skipped, using $ppb"
else
  build_dir=${PPB_BUILD_DIR:-build-nightly-$mode}
  case "$mode" in
    cpu) cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPPB_CUDA=OFF -DPPB_BUILD_TESTS=OFF >/dev/null &&
           cmake --build "$build_dir" -j "$(nproc)" ;;
    cuda) cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPPB_CUDA=ON -DPPB_BUILD_TESTS=OFF >/dev/null &&
            cmake --build "$build_dir" -j "$(nproc)" ;;
    bi-v100) PPB_BUILD_DIR=$build_dir ci/build-bi-v100.sh ;;
  esac || { say "build: FAILED ($mode)"; exit 4; }
  ppb="$build_dir/ppbench"
  say "build: $mode in $build_dir"
fi
[ -x "$ppb" ] || { say "no ppbench binary at $ppb"; exit 4; }
has_command() { "$ppb" --help | grep -qE "^  $1 "; }

# ---- the deployment's kernels -----------------------------------------------
impl_args=()
if [ -n "${PPB_VLLM_TREE:-}" ]; then
  impl=${PPB_VLLM_IMPL:-vllm-triton@deployed}
  plugins=${PPB_STATE_DIR:-$HOME/.ppbench}/plugins
  mkdir -p "$plugins"
  kernel=${PPB_VLLM_PREFILL_KERNEL:-prefix_prefill}
  case $kernel in
    prefix_prefill | unified | chunked) ;;
    *) say "PPB_VLLM_PREFILL_KERNEL=$kernel: give prefix_prefill, unified or chunked"; exit 4 ;;
  esac
  prepare=(python3 "$root/kernels/vllm/triton/prepare.py" --from-wrapper --prefill-kernel "$kernel" --name "$impl"
           --vllm "$PPB_VLLM_TREE" --ppbench "$ppb" --lib "$plugins/libppbk_$impl.so" "${suites[@]}")
  echo "${prepare[*]}" >"$report/prepare.log" # what ran, then what it said
  if "${prepare[@]}" >>"$report/prepare.log" 2>&1; then
    say "prepare: $impl from $PPB_VLLM_TREE ($(tail -1 "$report/prepare.log"))"
    impl_args=(--plugin "$plugins/libppbk_$impl.so" --impl "plugin:$impl")
  else
    say "prepare: FAILED for $PPB_VLLM_TREE: $(tail -1 "$report/prepare.log")"
    step_failed=1
    impl_args=(unprepared) # the prefix_prefill suites are skipped: the night is of the deployment's kernels
  fi
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
label="nightly $(date -u +%Y-%m-%d) $commit"

# ---- run -------------------------------------------------------------------
declare -A run_of
for suite in "${suites[@]}"; do
  name=$(basename "$suite" .yaml)
  if [ "${impl_args[*]}" = unprepared ] && grep -q '^kernel: *prefix_prefill' "$suite"; then
    say "run $name: skipped: the deployment's kernels could not be prepared (not run on the built-in ones)"
    continue
  fi
  # shellcheck disable=SC2086,SC2046 # PPB_RUN_ARGS is a list of options; the deployment's impl for prefill suites
  # The table for people; the outcome as JSON (schema ppbench-run/1) and Markdown for CI; a progress
  # line per case both in run-NAME.err and in the job's log as it happens, so a stuck night shows
  # as one, not as a slow one, long before the job's timeout.
  "$ppb" run "$suite" --db "$db" --backend "$backend" --label "$label" \
    --json "$report/run-$name.json" --markdown "$report/run-$name.md" \
    $(grep -q '^kernel: *prefix_prefill' "$suite" && echo "${impl_args[@]}") \
    ${PPB_RUN_ARGS:-} >"$report/run-$name.txt" 2> >(tee "$report/run-$name.err" >&2)
  rc=$?
  wait # for tee: run-NAME.err is whole before it is read
  [ -f "$report/run-$name.md" ] && { cat "$report/run-$name.md"; echo; } >>"$report/summary.md"
  # The run id from the document (ppbench-run/1 keeps run.id its first field: run_fields_json in
  # harness/publish/run_doc.c), not from the table's wording; the runner needs no JSON parser.
  id=$(sed -n 's/^{"schema":"ppbench-run\/1",.*"run":{"id":\([0-9][0-9]*\),.*/\1/p' "$report/run-$name.json" 2>/dev/null)
  case "$rc" in
    0) say "run $name: run $id, every case correct" ;;
    1) say "run $name: run $id, SOME CASE WRONG OR NONE TIMED (see run-$name.txt)"; wrong=1 ;;
    *) say "run $name: FAILED (exit $rc): $(tail -1 "$report/run-$name.err")"; step_failed=1 ;;
  esac
  [ -n "$id" ] && run_of[$name]=$id
done

# ---- trend -----------------------------------------------------------------
if has_command trend; then
  for suite in "${suites[@]}"; do
    name=$(basename "$suite" .yaml)
    [ -n "${run_of[$name]:-}" ] || continue
    # The table for people, the same verdict as JSON (schema ppbench-trend/1) and Markdown for CI.
    "$ppb" trend "$suite" --db "$db" --json "$report/trend-$name.json" --markdown "$report/trend-$name.md" \
      >"$report/trend-$name.txt" 2>&1
    rc=$?
    [ -f "$report/trend-$name.md" ] && { cat "$report/trend-$name.md"; echo; } >>"$report/summary.md"
    case "$rc" in
      0) say "trend $name: no regression" ;;
      12) say "trend $name: REGRESSION (see trend-$name.txt)"; regression=1 ;;
      # the night timed no case of the suite (all refused, wrong, ...): not a pass, as its run said
      1) say "trend $name: NOT TIMED, nothing to follow (see trend-$name.txt)"; wrong=1 ;;
      *) say "trend $name: FAILED (exit $rc): $(tail -1 "$report/trend-$name.txt")"; step_failed=1 ;;
    esac
  done
else
  say "trend: this ppbench has no 'trend' command: step skipped"
fi

# ---- report ----------------------------------------------------------------
if has_command report; then
  for suite in "${suites[@]}"; do
    name=$(basename "$suite" .yaml)
    id=${run_of[$name]:-}
    [ -n "$id" ] || continue
    # report RUN exits 1 for a run that timed no case (its page says NOT TIMED): written, not failed
    "$ppb" report "$id" --db "$db" -o "$report/$name" >"$report/report-$name.log" 2>&1
    rc=$?
    if { [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && [ -s "$report/$name/index.html" ]; }; } &&
       "$ppb" report --trend "$suite" --db "$db" -o "$report/$name-trend" >>"$report/report-$name.log" 2>&1; then
      say "report $name: $report/$name/index.html, $report/$name-trend/index.html$([ "$rc" -eq 1 ] && echo " (NOT TIMED)")"
    else
      say "report $name: FAILED: $(tail -1 "$report/report-$name.log")"; step_failed=1
    fi
  done
else
  say "report: this ppbench has no 'report' command: step skipped"
fi
for suite in "${suites[@]}"; do # the raw data goes with the report
  name=$(basename "$suite" .yaml)
  id=${run_of[$name]:-}
  [ -n "$id" ] && "$ppb" export "$id" --db "$db" --format json -o "$report/$name.json"
done

# ---- push ------------------------------------------------------------------
if [ -n "${PPBENCH_PUSH_URL:-}" ]; then
  for suite in "${suites[@]}"; do
    name=$(basename "$suite" .yaml)
    id=${run_of[$name]:-}
    [ -n "$id" ] || continue
    # shellcheck disable=SC2086 # PPB_PUSH_ARGS is a list of options
    if "$ppb" push "$id" --db "$db" --to "$PPBENCH_PUSH_URL" --format "${PPBENCH_PUSH_FORMAT:-prometheus}" \
         ${PPB_PUSH_ARGS:-} >"$report/push-$name.log" 2>&1; then
      say "push $name: run $id sent"
    else
      say "push $name: failed, queued for the next night: $(tail -1 "$report/push-$name.log")"
      [ "${PPB_PUSH_REQUIRED:-0}" = 1 ] && step_failed=1
    fi
  done
else
  say "push: PPBENCH_PUSH_URL not set: step skipped"
fi

if [ "$step_failed" = 1 ]; then exit 4; fi
if [ "$wrong" = 1 ]; then exit 1; fi
if [ "$regression" = 1 ]; then exit 12; fi
exit 0
