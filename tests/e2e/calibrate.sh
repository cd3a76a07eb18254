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
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE kind <> 'calibrate'")" = 0 ] || fail "a calibrate run is not kind calibrate"
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE label = 'calibrate repeatability'")" = 2 ] || fail "no two separate runs"
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --pairs 0
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --effects ""
expect_rc 2 "$PPB" calibrate "$SRC/suites/smoke.yaml" --effects inf
echo "calibrate: ok"
