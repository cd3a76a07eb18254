#!/usr/bin/env bash
# Run kinds and honest verdicts on noisy machines (issue 14): trend follows plain
# runs only (a calibrate run's synthetic speed-up is no IMPROVEMENT); compare
# judges separate runs by each case's run-to-run noise over plain runs: too
# little history is INCONCLUSIVE, an A/A pair within the noise is not
# REJECTed even when its samples are tight, a step beyond the noise is.
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/k.db"
F="dtype=bf16,head_dim=64,batch=1,page_size=16,sliding_window=0"
run() { "$PPB" run "$SRC/suites/smoke.yaml" --filter "$F" --no-progress "$@" >/dev/null 2>&1; }

expect_rc 2 "$PPB" run "$SRC/suites/smoke.yaml" --kind nightly
grep -q "expected run, proposal or calibrate" "$WORK/err" || fail "--kind nightly not refused"

# compare before any history: INCONCLUSIVE (11), never REJECT, whatever the change
run; run
sqlite3 "$PPBENCH_DB" "UPDATE results SET row_check = NULL, median_ms = median_ms * 3 WHERE run_id = 2"
expect_rc 11 "$PPB" compare 1 2
grep -q "INCONCLUSIVE: [0-9]* cases (the first: .*) each has fewer than 5 plain runs of history" "$WORK/out" \
  || { cat "$WORK/out"; fail "no history reason"; }
grep -q "^no-history " "$WORK/out" || { cat "$WORK/out"; fail "cases not shown as no-history"; }

# eight plain nights (1-8) and two calibrate runs (9, 10), 40% faster
for i in 3 4 5 6 7 8; do run; done
run --kind calibrate; run --kind calibrate
expect_rc 0 "$PPB" show 9
grep -q "kind calibrate" "$WORK/out" || fail "show does not print the kind"
expect_rc 0 "$PPB" list
[ "$(grep -c ' calibrate ' "$WORK/out")" -eq 2 ] || { cat "$WORK/out"; fail "list does not print the kinds"; }
sqlite3 "$PPBENCH_DB" "UPDATE runs SET started_at = printf('2026-11-%02dT00:00:00Z', id);
  UPDATE results SET row_check = NULL, median_ms = 1.0 + 0.001 * (run_id % 3) WHERE run_id <= 8;
  UPDATE results SET row_check = NULL, median_ms = 0.6 WHERE run_id > 8;"
expect_rc 0 "$PPB" trend "$SRC/suites/smoke.yaml"
grep -q "latest run 8 against its history" "$WORK/out" || { cat "$WORK/out"; fail "trend judged a calibrate run"; }
grep -qE "^(improvement|outlier)" "$WORK/out" && { cat "$WORK/out"; fail "a calibrate run entered the trend"; }
grep -q " 0 improvement" "$WORK/out" || fail "trend summary"
# asked for, every kind: the calibrate runs are the latest and look like an improvement
expect_rc 0 "$PPB" trend "$SRC/suites/smoke.yaml" --all-kinds
grep -q "^improvement" "$WORK/out" || { cat "$WORK/out"; fail "--all-kinds did not take the calibrate runs"; }
expect_rc 0 "$PPB" trend smoke --kinds run,calibrate
grep -q "latest run 10 against" "$WORK/out" || fail "--kinds run,calibrate"
expect_rc 2 "$PPB" trend smoke --kinds run,nightly
expect_rc 2 "$PPB" trend smoke --kinds run --all-kinds

# the suite's trend: thresholds: a 3% step of a quiet case alerts at the 2%
# default floor, not under a suite floor of 5%
sqlite3 "$PPBENCH_DB" "UPDATE results SET row_check = NULL, median_ms = 1.03 + 0.0001 * (run_id % 3) WHERE run_id IN (7, 8)"
expect_rc 12 "$PPB" trend "$SRC/suites/smoke.yaml"
grep -q "threshold 2.00% (floor" "$WORK/out" || { cat "$WORK/out"; fail "the threshold is not named"; }
{ cat "$SRC/suites/smoke.yaml"; echo "trend: {min_change_floor: 0.05}"; } > "$WORK/smoke-5.yaml"
expect_rc 0 "$PPB" trend "$WORK/smoke-5.yaml"
grep -q " 5.0% floor " "$WORK/out" || { cat "$WORK/out"; fail "the suite floor is not used"; }
grep -Eq "^ok .* 5\.0% floor .*prefix_prefill: [0-9]+ cases pooled$" "$WORK/out" \
  || { cat "$WORK/out"; fail "the pooled line does not keep the suite's floor"; }
# per group: the head_dim 64 cases get a 1% floor back
{ cat "$SRC/suites/smoke.yaml"; echo "trend: {min_change_floor: 0.05, groups: [{match: {head_dim: 64}, min_change_floor: 0.01}]}"; } \
  > "$WORK/smoke-g.yaml"
expect_rc 12 "$PPB" trend "$WORK/smoke-g.yaml"
grep -q "threshold 1.00% (floor" "$WORK/out" || { cat "$WORK/out"; fail "the group's floor is not used"; }
{ cat "$SRC/suites/smoke.yaml"; echo "trend: {groups: [{match: {head_dim: 64}}]}"; } > "$WORK/bad.yaml"
expect_rc 3 "$PPB" trend "$WORK/bad.yaml"
grep -q "trend.groups\[0\]" "$WORK/err" || { cat "$WORK/err"; fail "bad trend group not named"; }

# compare, history of 8 plain runs (calibrate runs left out: their wild medians
# would hide the step below): run-to-run noise about 5%
sqlite3 "$PPBENCH_DB" "UPDATE results SET row_check = NULL, median_ms = 1.0 * (CASE run_id % 4 WHEN 0 THEN 1.0 WHEN 1 THEN 1.09
    WHEN 2 THEN 0.96 ELSE 1.05 END) WHERE run_id <= 8;
  UPDATE results SET row_check = NULL, median_ms = 5.0 WHERE run_id = 9; UPDATE results SET row_check = NULL, median_ms = 0.1 WHERE run_id = 10;"
# A/A within the noise: run 12 is run 11, 8% slower, to the last sample, so a
# within-run interval is tight around +8% and would REJECT
run; run
sqlite3 "$PPBENCH_DB" "PRAGMA foreign_keys=ON;
  DELETE FROM samples WHERE result_id IN (SELECT id FROM results WHERE run_id = 12);
  INSERT INTO samples(result_id, idx, ms) SELECT r12.id, s.idx, s.ms * 1.08 FROM results r11
    JOIN results r12 ON r12.case_id = r11.case_id AND r12.run_id = 12 JOIN samples s ON s.result_id = r11.id
    WHERE r11.run_id = 11;
  UPDATE results SET row_check = NULL, n_samples = (SELECT r11.n_samples FROM results r11 WHERE r11.run_id = 11
    AND r11.case_id = results.case_id) WHERE run_id = 12;
  UPDATE results SET row_check = NULL, median_ms = 1.0 WHERE run_id = 11; UPDATE results SET row_check = NULL, median_ms = 1.08 WHERE run_id = 12;"
set +e; "$PPB" compare 11 12 >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -eq 11 ] || { cat "$WORK/out" "$WORK/err"; fail "A/A within the run-to-run noise: exit $rc, expected 11"; }
grep -q "note: separate runs" "$WORK/out" || fail "compare does not say how it judged"
# a step beyond the noise: quiet history, 50% slower -> REJECT (10)
sqlite3 "$PPBENCH_DB" "UPDATE results SET row_check = NULL, median_ms = 1.0 + 0.002 * (run_id % 3) WHERE run_id <= 8;
  UPDATE results SET row_check = NULL, median_ms = 1.5 WHERE run_id = 12;"
expect_rc 10 "$PPB" compare 11 12
grep -q "REJECT: case .*(run-to-run noise" "$WORK/out" || { cat "$WORK/out"; fail "step not rejected on its noise"; }
# the same against a copy of the database as baseline: the same runs count once
cp "$PPBENCH_DB" "$WORK/base.db"
expect_rc 10 "$PPB" compare 11 12 --baseline-db "$WORK/base.db"
grep -q "from 8 plain runs" "$WORK/out" || { cat "$WORK/out"; fail "a copied baseline database doubled the history"; }

# the CPU kernel on every core (run 13) against runs on one thread (the default): compare refuses the pair,
# trend leaves the one-thread runs out of the latest run's history and says so; a bad setting is refused by name
# before anything is stored
PPBENCH_CPU_KERNEL_THREADS=all run
[ "$(sqlite3 "$PPBENCH_DB" "SELECT value FROM env WHERE run_id = 13 AND key = 'before.cpu_kernel_threads'")" != 1 ] \
  || fail "run 13 did not record its kernel threads"
expect_rc 3 "$PPB" compare 12 13
grep -q "differ in before.cpu_kernel_threads ('1' vs 'all (" "$WORK/err" || { cat "$WORK/err"; fail "compare across kernel threads"; }
expect_rc 0 "$PPB" trend "$SRC/suites/smoke.yaml"
grep -q "latest run 13 against" "$WORK/out" || { cat "$WORK/out"; fail "trend's latest run"; }
grep -q "note: 10 runs of the suite left out of the histories: their kernels were timed on other threads" "$WORK/out" \
  || { cat "$WORK/out"; fail "trend did not leave out the runs timed on one thread"; }
grep -qE "^(regression|improvement|outlier) " "$WORK/out" && { cat "$WORK/out"; fail "trend judged across kernel threads"; }
"$PPB" trend "$SRC/suites/smoke.yaml" --json "$WORK/t.json" --markdown "$WORK/t.md" >/dev/null
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert d['history_left_out'] == 10, d['history_left_out']" \
  "$WORK/t.json" || fail "trend JSON: history_left_out"
grep -q "^\*\*Note:\*\* 10 runs of the suite left out of the histories" "$WORK/t.md" || { cat "$WORK/t.md"; fail "trend Markdown note"; }
expect_rc 3 env PPBENCH_CPU_KERNEL_THREADS=lots "$PPB" run "$SRC/suites/smoke.yaml" --filter "$F" --no-progress
grep -q "PPBENCH_CPU_KERNEL_THREADS='lots': not a thread count" "$WORK/err" || { cat "$WORK/err"; fail "bad kernel threads"; }
[ "$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM runs")" -eq 13 ] || fail "a refused setting stored a run"
echo "run_kinds: ok"
