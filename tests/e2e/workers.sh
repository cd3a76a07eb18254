#!/usr/bin/env bash
# run --devices: worker processes (CPU backend here), one writer; a worker that
# crashes or hangs is replaced, its case stored as crashed or hung, the run goes on.
source "$(dirname "$0")/lib.bash"
suite="$SRC/suites/smoke.yaml"
total=$("$PPB" list "$suite" | wc -l)

expect_rc 0 "$PPB" run "$suite" --db "$WORK/a.db" --devices 0,1 --backend cpu --no-progress
grep -q "^$total results:" "$WORK/out" || fail "workers did not store all $total cases"
grep -q "worker processes" "$WORK/err" || fail "worker mode not announced"

# one crashing shape (abort in the worker) and one hanging shape (watchdog)
export PPBENCH_FAULT_INJECT="crash:b=1 q=40 ctx=37 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0"
expect_rc 1 "$PPB" run "$suite" --db "$WORK/b.db" --devices 0,1 --backend cpu --no-progress
grep -q "^$total results:" "$WORK/out" || fail "the run did not go on after a crash"
n_crashed=$(grep -c "^crashed" "$WORK/out")
[ "$n_crashed" -eq 3 ] || fail "expected 3 crashed cases (the three configs of the shape), got $n_crashed"
grep -q "died: signal 6" "$WORK/out" || fail "crash reason not recorded"

export PPBENCH_FAULT_INJECT="hang:b=2 q=17 ctx=0 ragged=false h=4 kvh=2 d=64 dtype=fp16"
expect_rc 1 timeout 120 "$PPB" run "$suite" --db "$WORK/c.db" --devices 0,1 --backend cpu --case-timeout 2 --no-progress
grep -q "^$total results:" "$WORK/out" || fail "the run did not go on after a hang"
grep -q "^hung " "$WORK/out" || { cat "$WORK/out"; fail "hang not stored as hung"; }
grep -q "hung past the 2 s watchdog" "$WORK/out" "$WORK/err" || fail "hang reason not recorded"
unset PPBENCH_FAULT_INJECT

expect_rc 2 "$PPB" run "$suite" --db "$WORK/d.db" --devices 0,x
echo "workers: ok"
