#!/usr/bin/env bash
# Fault injection (issue 7): kill -9 a run at random points at least 50 times,
# resuming after each kill, and end with the database an uninterrupted run
# gives: the same (case key, status) set, no duplicate results, and a database
# that passes PRAGMA integrity_check. A round ends when its run completes; new
# rounds (fresh databases) start until enough kills have landed.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
suite="$FAULT_SUITE"
want_kills=${PPB_FAULT_KILLS:-50}
seed=${PPB_FAULT_SEED:-$$}
RANDOM=$seed
total=$("$PPB" list "$suite" | wc -l)
[ "$total" -ge 50 ] || fail "kill-loop suite too small ($total cases)"

expect_rc 0 "$PPB" run "$suite" --db "$WORK/full.db" --no-progress
keys "$WORK/full.db" >"$WORK/full.keys"
[ "$(wc -l <"$WORK/full.keys")" -eq "$total" ] || fail "uninterrupted run does not hold $total cases"

kills=0 rounds=0 starts=0
while [ "$kills" -lt "$want_kills" ]; do
  rounds=$((rounds + 1))
  [ "$rounds" -le 20 ] || fail "only $kills kills landed in 20 rounds"
  db="$WORK/round$rounds.db"
  for _ in $(seq 1 400); do
    st=$(run_status "$db")
    [ "$st" = complete ] && break
    if [ -z "$st" ]; then
      "$PPB" run "$suite" --db "$db" --no-progress >/dev/null 2>&1 &
    else
      "$PPB" run --resume 1 --db "$db" --no-progress >/dev/null 2>&1 &
    fi
    pid=$! starts=$((starts + 1))
    # 10..209 ms: covers start-up, the run record, mid-case and mid-commit
    sleep "0.$(printf '%03d' $((10 + RANDOM % 200)))"
    if kill -9 "$pid" 2>/dev/null; then
      set +e; wait "$pid" 2>/dev/null; rc=$?; set -e
      if [ "$rc" -eq 137 ]; then kills=$((kills + 1)); continue; fi
    else
      set +e; wait "$pid" 2>/dev/null; rc=$?; set -e
    fi
    # the process finished on its own before the kill
    case "$rc" in 0|1) ;; *) fail "round $rounds: a run exited $rc (not killed)";; esac
  done
  [ "$(run_status "$db")" = complete ] || fail "round $rounds never completed"
  check_db "$db"
  [ "$(sqlite3 "$db" 'SELECT count(*) FROM runs')" -eq 1 ] || fail "round $rounds: more than one run recorded"
  keys "$db" >"$WORK/round.keys"
  diff "$WORK/full.keys" "$WORK/round.keys" || fail "round $rounds: resumed run differs from an uninterrupted one"
done
echo "fault_kill_loop: survived $kills kill -9s in $rounds rounds ($starts starts, $total cases, seed $seed): ok"
