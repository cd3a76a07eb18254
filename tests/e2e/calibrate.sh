#!/usr/bin/env bash
# calibrate end to end on the CPU backend: A/A pairs counted to the asked number,
# a +50% known effect REJECTed in every proposal (and found SLOWER in its pairs),
# repeatability from two separate `ppbench run` processes, everything stored
# as kind calibrate (so no trend ever sees it).
source "$(dirname "$0")/lib.bash"
db="$WORK/cal.db"
set +e
"$PPB" calibrate "$SRC/suites/smoke.yaml" --db "$db" --backend cpu --filter "dtype=bf16,head_dim=64,page_size=16,batch=2,block_m=16" \
  --pairs 8 --effect-pairs 5 --effects 0.5 --min-case-ms 0.0001 >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
case $rc in 0|1) ;; *) cat "$WORK/out" "$WORK/err"; fail "calibrate exited $rc";; esac
cat "$WORK/out"
"$PY" - "$WORK/out" <<'PY' || fail "calibrate output"
import re, sys
out = open(sys.argv[1]).read()
aa = re.search(r"^A/A: (\d+) pairs in (\d+) proposals: (\d+) FASTER \+ (\d+) SLOWER = .*; proposals: (\d+) ACCEPT, (\d+) REJECT$", out, re.M)
assert aa, out
pairs, props = int(aa.group(1)), int(aa.group(2))
assert pairs == 10 and props == 2, (pairs, props)   # 5 cases a proposal: two proposals reach 8
eff = re.search(r"^\+50%: SLOWER in (\d+) of (\d+) pairs longer than .*; REJECT in (\d+) of (\d+) proposals$", out, re.M)
assert eff, out
# the proposal (its geometric mean over 5 pairs) always finds it; single pairs on a heavily loaded
# runner may stay unresolved (seen: 16 of 30, with separate processes 38% apart), never flagged faster
assert int(eff.group(1)) >= 1 and int(eff.group(2)) >= 5, eff.group(0)
assert eff.group(3) == eff.group(4) == "1", eff.group(0)
assert re.search(r"^minimum detectable effect .*: (above )?50%$", out, re.M), out
assert re.search(r"^repeatability \(two separate processes\): median run-to-run difference [0-9.]+%, 90th percentile [0-9.]+%, over 5 cases$", out, re.M), out
PY
# Issue 36: the proposals in all and an ETA after each one (5 cases a proposal: 2 A/A + 1 effect)
grep -q "^calibrate: A/A proposals until 8 pairs, then +50% until 5 pairs each, then two separate runs of the suite$" "$WORK/err" \
  || { cat "$WORK/err"; fail "no plan line"; }
grep -Eq "^calibrate: calibrate A/A #1: verdict [A-Z]+, 5 of 8 pairs; proposal 1 of about 3, [0-9]{2}:[0-9]{2} elapsed, ETA [0-9]{2}:[0-9]{2}" "$WORK/err" \
  || { cat "$WORK/err"; fail "no total and ETA"; }
grep -Eq "^calibrate: calibrate \+50% #1: verdict REJECT, 5 of 5 pairs; proposal 3 of about 3, .* ETA 00:00" "$WORK/err" \
  || { cat "$WORK/err"; fail "no last progress line"; }
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE kind <> 'calibrate'")" = 0 ] || fail "a calibrate run is not kind calibrate"
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE label = 'calibrate repeatability'")" = 2 ] || fail "no two separate runs"
# A suite the backend refuses whole: said once, before anything is stored; nothing to calibrate is a
# goal missed (1), not bad input (3).
expect_rc 1 "$PPB" calibrate "$SRC/suites/prefill.yaml" --filter query_len=512 --backend cpu --db "$WORK/none.db"
grep -q "^ppbench calibrate: all 24 pairs are refused on the cpu backend: 24 too large for the CPU backend" "$WORK/err" || fail "no all-refused line"
grep -q "\[1/24\]" "$WORK/err" && fail "pairs run although all are refused"
[ ! -e "$WORK/none.db" ] || fail "a database was written for a calibration that could not run"
# The README's calibrate example runs on the CPU backend (its counts cut down here; later options win).
line=$(grep -m1 '^build/ppbench calibrate ' "$SRC/README.md" | sed 's/ *#.*//')
[ -n "$line" ] || fail "no calibrate example in README.md"
read -ra args <<<"${line/build\/ppbench/$PPB}"
args=("${args[@]/#suites\//$SRC/suites/}")
set +e
"${args[@]}" --backend cpu --db "$WORK/readme.db" --pairs 1 --effect-pairs 1 --effects 0.5 --budget-ms 200 >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
case $rc in 0|1) ;; *) cat "$WORK/out" "$WORK/err"; fail "the README's calibrate example exited $rc";; esac
grep -q "^goals (" "$WORK/out" || { cat "$WORK/out" "$WORK/err"; fail "the README's calibrate example calibrated nothing"; }
# Known effects as real work (issue 37, item 7): the example plugin's build doing 50% more work a launch
# against its work0 build, A/A on work0; each side's cases run on that build.
PLUG=$(dirname "$PPB")/tests/plugins
set +e
"$PPB" calibrate "$SRC/suites/smoke.yaml" --plugin "$PLUG" --work-impl example-cpu-work --db "$WORK/work.db" --backend cpu \
  --filter "dtype=bf16,head_dim=64,page_size=16,batch=2,block_m=16,block_n=32" --pairs 2 --effect-pairs 2 --effects 0.5 \
  --min-case-ms 0.0001 >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
case $rc in 0|1) ;; *) cat "$WORK/out" "$WORK/err"; fail "calibrate --work-impl exited $rc";; esac
grep -q "^calibrate: effects as real work: plugin:example-cpu-work0 against plugin:example-cpu-workN" "$WORK/err" \
  || { cat "$WORK/err"; fail "calibrate --work-impl: not said"; }
grep -Eq "^\+50%: SLOWER in [0-9]+ of [0-9]+ pairs .*; REJECT in ([1-9][0-9]*) of \1 proposals$" "$WORK/out" \
  || { cat "$WORK/out"; fail "50% more real work not REJECTed in every proposal"; }
impls=$(sqlite3 "$WORK/work.db" "SELECT group_concat(DISTINCT c.impl) FROM results r JOIN cases c ON c.id = r.case_id
                                 JOIN runs u ON u.id = r.run_id WHERE u.label LIKE 'proposal calibrate +50% work%'")
[ "$impls" = "plugin:example-cpu-work0,plugin:example-cpu-work50" ] || fail "the work effect's sides ran on: $impls"
aa=$(sqlite3 "$WORK/work.db" "SELECT group_concat(DISTINCT c.impl) FROM results r JOIN cases c ON c.id = r.case_id
                              JOIN runs u ON u.id = r.run_id WHERE u.label LIKE 'proposal calibrate A/A%'")
[ "$aa" = "plugin:example-cpu-work0" ] || fail "the A/A of a work calibration ran on: $aa"
expect_rc 3 "$PPB" calibrate "$SRC/suites/smoke.yaml" --plugin "$PLUG" --work-impl example-cpu-work --db "$WORK/w2.db" \
  --backend cpu --filter "dtype=bf16,head_dim=64,page_size=16,batch=2,block_m=16,block_n=32" --pairs 1 --effects 0.025
grep -q "effect 0.025 is not a whole percent" "$WORK/err" || { cat "$WORK/err"; fail "a fractional work effect not refused"; }
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --pairs 0
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --effects ""
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --effects inf
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --budget-ms 0
echo "calibrate: ok"
