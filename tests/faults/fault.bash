# Helpers shared by tests/e2e/fault_*.sh (sourced after tests/e2e/lib.bash).
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3 CLI (scripts/debian-packages.txt)"; exit 77; }
# Many tiny cases, ~2 s on the CPU backend with one thread: long enough to
# interrupt, short enough for CI.
FAULT_SUITE="$SRC/tests/faults/kill_loop.yaml"
export PPBENCH_THREADS=1

# keys DB [RUN]: "case_key status" lines of a run, sorted; noisy counts as ok
# (a timing verdict that may differ between two runs, unlike wrong/refused/...).
keys() {
  "$PPB" export "${2:-1}" --db "$1" --format csv | "$PY" -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    print(r["case_key"], "ok" if r["status"] == "noisy" else r["status"])' | sort
}

# run_status DB: status of run 1 read with the sqlite3 CLI, empty when none
run_status() { sqlite3 "$1" "SELECT status FROM runs WHERE id = 1" 2>/dev/null || true; }

# stored DB: results stored for run 1
stored() { sqlite3 "$1" "SELECT count(*) FROM results WHERE run_id = 1"; }

# check_db DB: integrity_check ok, no case stored twice, every sample array whole
check_db() {
  [ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ] || fail "$1: integrity_check failed"
  local n
  n=$(sqlite3 "$1" "SELECT count(*) FROM (SELECT 1 FROM results GROUP BY run_id, case_id HAVING count(*) > 1)")
  [ "$n" -eq 0 ] || fail "$1: $n cases stored twice"
  n=$(sqlite3 "$1" "SELECT count(*) FROM results r WHERE n_samples != (SELECT count(*) FROM samples s WHERE s.result_id = r.id)")
  [ "$n" -eq 0 ] || fail "$1: $n results with a partial sample array"
}

# as_user CMD...: run CMD as an unprivileged user, so file permissions bind
# (root ignores chmod 444). Not root: CMD as is.
as_user() {
  if [ "$(id -u)" -ne 0 ]; then "$@"; return; fi
  setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
# need_user_dir: when root, make $WORK usable by that user, or skip (77)
need_user_dir() {
  [ "$(id -u)" -ne 0 ] && return 0
  command -v setpriv >/dev/null || { echo "SKIP: root and no setpriv to drop privileges"; exit 77; }
  chmod 755 "$WORK"
  chown -R 65534 "$WORK"
  as_user test -w "$WORK" || { echo "SKIP: cannot give $WORK to an unprivileged user"; exit 77; }
}

# partial_run DB: start run 1 of $FAULT_SUITE into DB and kill -9 it once at
# least 10 cases (and not all) are stored
partial_run() {
  local db=$1 pid n=0
  "$PPB" run "$FAULT_SUITE" --db "$db" --no-progress >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 400); do
    n=$(sqlite3 "$db" "SELECT count(*) FROM results" 2>/dev/null || echo 0)
    [ "$n" -ge 10 ] && break
    sleep 0.02
  done
  kill -9 "$pid" 2>/dev/null || fail "the run ended before it could be interrupted"
  wait "$pid" 2>/dev/null || true
  [ "$n" -ge 10 ] || fail "no cases stored before the kill"
}

# same_as_full DB: run 1 of DB holds the cases and statuses of $WORK/full.db
same_as_full() {
  [ -f "$WORK/full.keys" ] || keys "$WORK/full.db" >"$WORK/full.keys"
  keys "$1" >"$WORK/cmp.keys"
  diff "$WORK/full.keys" "$WORK/cmp.keys" || fail "$1 differs from an uninterrupted run"
  check_db "$1"
}
