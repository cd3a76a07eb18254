#!/usr/bin/env bash
# Fault injection (issue 7): another process holds the database locked
# (sqlite3 CLI in BEGIN EXCLUSIVE) for longer than ppbench's 5 s busy timeout.
# A new run and a resume wait, then fail with exit 4 and a "locked" message,
# losing nothing; a run that is under way when the lock is taken stops the same
# way, keeping every case committed before. Once the lock is released the run
# resumes to what an uninterrupted run stores.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
expect_rc 0 "$PPB" run "$FAULT_SUITE" --db "$WORK/full.db" --no-progress
total=$(stored "$WORK/full.db")
db="$WORK/part.db"

# lock: a sqlite3 CLI, fed through a fifo, takes an exclusive lock on $db and
# holds it until unlock
mkfifo "$WORK/sql"
lock() {
  rm -f "$WORK/locked"
  sqlite3 "$db" <"$WORK/sql" >/dev/null &
  locker=$!
  exec 3>"$WORK/sql"
  # wait out ppbench's own short commit instead of failing on it (the CLI has no busy timeout by default)
  echo ".timeout 10000" >&3
  echo "BEGIN EXCLUSIVE;" >&3
  echo ".shell touch $WORK/locked" >&3
  for _ in $(seq 1 200); do [ -e "$WORK/locked" ] && return 0; sleep 0.02; done
  fail "sqlite3 did not take the lock"
}
unlock() { echo "COMMIT;" >&3; exec 3>&-; wait "$locker" || fail "sqlite3 holding the lock failed"; }

# 1. Locked while the run is under way: the next commit waits 5 s, then fails.
"$PPB" run "$FAULT_SUITE" --db "$db" --no-progress >"$WORK/run.out" 2>"$WORK/run.err" &
pid=$!
for _ in $(seq 1 400); do
  [ "$(sqlite3 "$db" "SELECT count(*) FROM results" 2>/dev/null || echo 0)" -ge 5 ] && break
  sleep 0.02
done
lock
t0=$SECONDS
set +e; wait "$pid"; rc=$?; set -e
# one busy timeout for the result, one for marking the run failed; not one more
# per environment entry (it took 56 s before that was fixed)
[ $((SECONDS - t0)) -le 25 ] || fail "the run took $((SECONDS - t0)) s to give up on the lock"
unlock; echo "[${SECONDS}s] unlocked"
[ "$rc" -eq 4 ] || { cat "$WORK/run.err"; fail "a run that lost its database to a lock exited $rc, expected 4"; }
grep -qi "locked\|busy" "$WORK/run.err" || { cat "$WORK/run.err"; fail "no clear 'locked' error"; }
echo "[${SECONDS}s] under way: $(grep -i "locked\|busy" "$WORK/run.err" | head -1)"
kept=$(stored "$db")
{ [ "$kept" -ge 5 ] && [ "$kept" -lt "$total" ]; } || fail "$kept of $total cases kept after the lock"

# 2. Locked before a resume and before a new run: both refused, nothing written.
lock
sum=$(sha256sum <"$db")
t0=$SECONDS
expect_rc 4 "$PPB" run --resume 1 --db "$db" --no-progress
[ $((SECONDS - t0)) -le 25 ] || fail "the resume took $((SECONDS - t0)) s to give up on the lock (was 100 s)"
grep -qi "locked\|busy" "$WORK/err" || { cat "$WORK/err"; fail "resume: no clear 'locked' error"; }
echo "[${SECONDS}s] resume: $(grep -i "locked\|busy" "$WORK/err" | head -1)"
unlock; echo "[${SECONDS}s] unlocked"
[ "$(sha256sum <"$db")" = "$sum" ] || fail "the refused resume changed the database"
[ "$(stored "$db")" -eq "$kept" ] || fail "cases lost while locked"
lock
expect_rc 4 "$PPB" run "$FAULT_SUITE" --db "$db" --no-progress
grep -qi "locked\|busy" "$WORK/err" || { cat "$WORK/err"; fail "run: no clear 'locked' error"; }
unlock; echo "[${SECONDS}s] unlocked"
[ "$(sqlite3 "$db" "SELECT count(*) FROM runs")" -eq 1 ] || fail "a refused run left a run record"

# 3. Released: the resume completes the run as if nothing had happened.
expect_rc 0 "$PPB" run --resume 1 --db "$db" --no-progress
echo "[${SECONDS}s] resumed"
same_as_full "$db"
echo "fault_locked: ok ($kept of $total cases kept through the lock, resumed to completion)"
