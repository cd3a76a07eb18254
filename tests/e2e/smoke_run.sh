#!/usr/bin/env bash
# The README's main job on the CPU backend: run, list, show, export, dump.
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/p.db"
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend auto --no-progress
grep -q "CPU backend" "$WORK/err" || fail "the CPU backend was not announced"
grep -q "CPU timings" "$WORK/out" || fail "timings not labelled as CPU timings"
grep -q "^ok " "$WORK/out" || fail "no ok result in the table"
n_cases=$("$PPB" list "$SRC/suites/smoke.yaml" | wc -l)
[ "$n_cases" -gt 0 ] || fail "smoke suite expands to no cases"
grep -q "^$n_cases results:" "$WORK/out" || fail "expected $n_cases results: $(tail -1 "$WORK/out")"
# --backend cuda where no GPU is usable: an error that says why, exit 4 (3 in a build without CUDA),
# never a silent fall back to the CPU
if [ ! -e /dev/nvidia0 ]; then
  set +e; "$PPB" run "$SRC/suites/smoke.yaml" --backend cuda --no-progress --db "$WORK/nogpu.db" >"$WORK/out" 2>"$WORK/err"
  rc=$?; set -e
  { [ "$rc" -eq 4 ] || [ "$rc" -eq 3 ]; } &&
    grep -Eq "^ppbench run: (CUDA backend: no CUDA device|--backend cuda: this ppbench was built without CUDA)" "$WORK/err" ||
    { cat "$WORK/err"; fail "--backend cuda without a usable GPU exited $rc"; }
fi
# stderr is a file here, as in CI: one progress line per finished case, none with --quiet.
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --db "$WORK/progress.db"
[ "$(grep -c "^\[[0-9]*/$n_cases\] [0-9][0-9]:[0-9][0-9] elapsed, ETA [0-9][0-9]:[0-9][0-9]  prefix_prefill " "$WORK/err")" -eq "$n_cases" ] \
  || { cat "$WORK/err"; fail "not one progress line per case in a log"; }
grep -q "^\[$n_cases/$n_cases\]" "$WORK/err" || fail "no final progress line"
grep -q $'\r' "$WORK/err" && fail "terminal control characters in a log"
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --quiet --db "$WORK/q.db" --filter "batch=1,dtype=bf16,query_len=17"
grep -q "elapsed, ETA" "$WORK/err" && fail "--quiet printed progress"

expect_rc 0 "$PPB" list
grep -q "complete" "$WORK/out" || fail "run not listed as complete"
expect_rc 0 "$PPB" show latest
grep -q "timings *cpu" "$WORK/out" || fail "show does not record cpu timings in the environment"
# where the wall time went: every phase a number, the kernels' share below the wall
"$PY" - "$WORK/out" <<'PY' || fail "show: no run time line"
import re, sys
m = re.search(r"time: wall ([0-9.]+) s = device ([0-9.]+) \+ inputs ([0-9.]+) \+ check ([0-9.]+) \+ warm-up ([0-9.]+) \+ sampling ([0-9.]+)"
              r" \+ store ([0-9.]+) \+ other (-?[0-9.]+) s; kernels ([0-9.]+) s"
              r" \(overhead ([0-9]+)%, ([0-9]+)% without the device's start\)", open(sys.argv[1]).read())
assert m, "no time line"
wall, *phases, other, kernels, overhead, after_open = map(float, m.groups())
assert wall > 0 and all(p >= 0 for p in phases) and 0 < kernels <= wall and 0 <= overhead < 100, m.group(0)
assert 0 <= after_open <= overhead, m.group(0)
assert float(m.group(6)) >= kernels - 0.011, "sampling shorter than the kernel time it holds"
PY
# the device phase and the waits for the database are timed (the CPU backend opens, and the
# writer thread stores, in well under the 10 ms `show` can print)
"$PY" - "$PPBENCH_DB" <<'PY' || fail "no time spent opening the device or storing results stored"
import sqlite3, sys
open_ms, store_ms, wall_ms = sqlite3.connect(sys.argv[1]).execute(
    "SELECT open_ms, store_ms, wall_ms FROM runs WHERE id = 1").fetchone()
assert 0 < open_ms < wall_ms and 0 < store_ms < wall_ms, (open_ms, store_ms, wall_ms)
PY

expect_rc 0 "$PPB" export 1 --format csv -o "$WORK/r.csv"
rows=$("$PY" -c "import csv,sys; print(sum(1 for _ in csv.DictReader(open('$WORK/r.csv'))))")
[ "$rows" -eq "$n_cases" ] || fail "csv has $rows rows, expected $n_cases"
expect_rc 0 "$PPB" export 1 --format json -o "$WORK/r.json"
"$PY" - "$WORK/r.json" "$n_cases" <<'PY' || fail "json export"
import json, sys
doc = json.load(open(sys.argv[1]))
assert len(doc["results"]) == int(sys.argv[2]), len(doc["results"])
PY

# dump one checked case and cross-check it independently in NumPy
key=$("$PPB" list "$SRC/suites/smoke.yaml" | sed -n 1p)  # sed reads it all: no SIGPIPE under pipefail
expect_rc 0 "$PPB" dump 1 "$key" -o "$WORK/dump"
"$PY" "$SRC/tests/e2e/check_dump.py" "$WORK/dump" || fail "dump does not cross-check in NumPy"

# A run that timed nothing is not a pass: on the CPU backend every case of the decode suite is too
# large (refused), so the run exits 1 and says so.
expect_rc 1 "$PPB" run "$SRC/suites/decode.yaml" --backend cpu --no-progress
grep -q "no case was timed (30 refused, 0 skipped of 30)" "$WORK/err" || { cat "$WORK/err"; fail "an all-refused run passed"; }

# The run's outcome for CI: JSON (ppbench-run/1) on stdout, Markdown in a file, the table on stderr.
set +e; "$PPB" run "$SRC/suites/smoke-decode.yaml" --backend cpu --quiet --db "$WORK/j.db" --json - --markdown "$WORK/r.md" \
  --filter "batch=3,seq_len=257,dtype=bf16,head_dim=64" >"$WORK/r.json" 2>"$WORK/err"; rc=$?; set -e
"$PY" - "$WORK/r.json" "$WORK/r.md" "$rc" <<'PY' || fail "run documents"
import json, sys
d = json.load(open(sys.argv[1]))
md = open(sys.argv[2]).read()
rc = int(sys.argv[3])
assert d["schema"] == "ppbench-run/1" and d["exit_code"] == rc == 0, (d["exit_code"], rc)  # wrong as the suite expects
assert sum(d["counts"].values()) == len(d["cases"]) == d["run"]["n_cases"], d["counts"]
wrong = [c for c in d["cases"] if c["status"] == "wrong"]
assert wrong and all("past tmp_out" in c["reason"] for c in wrong), wrong
assert all(c["impl"] == "builtin" and c["median_ms"] > 0 for c in d["cases"] if c["status"] == "ok")
assert md.startswith("### ppbench run 1: smoke-decode (exit 0)"), md[:60]
m = d["measured"]   # how to read the timings: CPU timings; disturbed when the load was past the cores
assert m["run"] == d["run"]["id"] and m["cpu_timings"] is True and m["load_warning"] is (m["load_average"] > m["cpu_cores"]), m
assert m["notes"][0].startswith("CPU backend on ") and len(m["notes"]) == 1 + m["load_warning"], m["notes"]
assert "\n**Note:** CPU backend on " in md and ("**Note:** the load average was" in md) is m["load_warning"], md
assert md.count("\n| wrong | `paged_attention") == len(wrong)
PY
grep -q "results:" "$WORK/err" || fail "with --json -, the results table did not go to stderr"
grep -q "^ppbench run: 2 cases wrong, as the suite expects (expect_wrong:)" "$WORK/err" || { cat "$WORK/err"; fail "expected wrong cases not said"; }
# Issue 36: smoke-decode's deliberate mismatches are expected wrong (expect_wrong:): the whole suite
# exits 0 when exactly they are wrong; 1 when another case fails, or when one of them comes out
# correct (the fault not caught).
expect_rc 0 "$PPB" run "$SRC/suites/smoke-decode.yaml" --backend cpu --quiet --db "$WORK/sd.db"
grep -q "^ppbench run: 3 cases wrong, as the suite expects" "$WORK/err" || { cat "$WORK/err"; fail "smoke-decode: not said"; }
# Only the deliberate faults (what tests/gpu/run.sh's memcheck step runs): caught, an answer, exit 0.
expect_rc 0 "$PPB" run "$SRC/suites/smoke-decode.yaml" --backend cpu --quiet --db "$WORK/sd1.db" \
  --filter "batch=3,seq_len=100|257,dtype=bf16,head_dim=64,host_partition_size=64"
grep -q "^ppbench run: 2 cases wrong, as the suite expects" "$WORK/err" || { cat "$WORK/err"; fail "the faults alone: not said"; }
sed '/^expect_wrong:/,/^$/d' "$SRC/suites/smoke-decode.yaml" >"$WORK/smoke-decode.yaml"
expect_rc 1 "$PPB" run "$WORK/smoke-decode.yaml" --backend cpu --quiet --db "$WORK/sd2.db" --filter "batch=3,seq_len=257,dtype=bf16,head_dim=64"
sed 's/^  - {partition_size: 32, host_partition_size: 64}$/  - {partition_size: 32, host_partition_size: 64}\n  - {partition_size: 64, host_partition_size: 32}/' \
  "$SRC/suites/smoke-decode.yaml" >"$WORK/smoke-decode.yaml"
grep -q "partition_size: 64, host_partition_size: 32}" "$WORK/smoke-decode.yaml" || fail "test suite not made"
expect_rc 1 "$PPB" run "$WORK/smoke-decode.yaml" --backend cpu --quiet --db "$WORK/sd3.db" --filter "batch=3,seq_len=257,dtype=bf16,head_dim=64"
grep -q "1 case the suite expects wrong (expect_wrong:) came out correct, e.g. '.*p=64 hp=32.*': the fault it stands for was not caught" "$WORK/err" \
  || { cat "$WORK/err"; fail "an expected-wrong case that came out correct passed"; }

# A target profile given as a file is stored for --resume by its absolute path.
sed 's/^name: h200/name: mine/' "$SRC/suites/targets/h200.yaml" > "$WORK/mine.yaml"
(cd "$WORK" && expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --quiet --db "$WORK/t.db" --target mine.yaml \
  --filter "batch=1,query_len=17,dtype=bf16")
sqlite3 "$WORK/t.db" "SELECT args FROM runs" | grep -qx "target=$WORK/mine.yaml" || fail "target path not stored for resume"
# Each case is judged on the target when it runs, and the judgement stored with
# its result (every result of the run, with its arithmetic), and the profile judged against.
judged=$(sqlite3 "$WORK/t.db" "SELECT count(*) FROM results WHERE feasible IS NOT NULL AND feasibility_reason LIKE '%shared memory%'")
total=$(sqlite3 "$WORK/t.db" "SELECT count(*) FROM results")
[ "$total" -gt 0 ] && [ "$judged" = "$total" ] || fail "$judged of $total results carry their judgement on the target"
sqlite3 "$WORK/t.db" "SELECT value FROM env WHERE key = 'target.profile'" | grep -qx "$WORK/mine.yaml" \
  || fail "the profile judged against not stored"

expect_rc 3 "$PPB" dump 1 "prefix_prefill b=1" -o "$WORK/dump2"
expect_rc 3 "$PPB" show 999
echo "smoke_run: ok ($n_cases cases)"
