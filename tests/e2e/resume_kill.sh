#!/usr/bin/env bash
# kill -9 half way, resume, and end with exactly the cases (and statuses) of an
# uninterrupted run.
source "$(dirname "$0")/lib.bash"
suite="$SRC/suites/smoke.yaml"
total=$("$PPB" list "$suite" | wc -l)
[ "$total" -ge 6 ] || fail "smoke suite too small for this test ($total cases)"

expect_rc 0 "$PPB" run "$suite" --db "$WORK/full.db" --no-progress

# Started with a relative suite path from one folder, resumed from another: the run stores the
# suite's absolute path.
mkdir -p "$WORK/from" "$WORK/elsewhere"
cp "$suite" "$WORK/suite.yaml"
(cd "$WORK/from" && exec "$PPB" run ../suite.yaml --db "$WORK/killed.db" --no-progress) >/dev/null 2>&1 &
pid=$!
# wait until some but not all cases are stored, then kill -9
for _ in $(seq 1 600); do
  # (list refuses a database that does not exist yet: the run may not have created it)
  done_n=$({ "$PPB" list --db "$WORK/killed.db" 2>/dev/null || true; } | awk 'NR==2 {split($5, a, "/"); print a[1]}')
  [ -n "${done_n:-}" ] && [ "$done_n" -ge $((total / 3)) ] && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || fail "the run finished before it could be killed ($total cases)"
wait "$pid" 2>/dev/null || true
stored=$("$PPB" list --db "$WORK/killed.db" | awk 'NR==2 {split($5, a, "/"); print a[1]}')
[ "$stored" -lt "$total" ] || fail "nothing left to resume ($stored of $total stored)"
echo "killed with $stored of $total cases stored"

[ "$(sqlite3 "$WORK/killed.db" "SELECT suite_path FROM runs WHERE id = 1")" = "$WORK/suite.yaml" ] \
  || fail "the stored suite path is not absolute: $(sqlite3 "$WORK/killed.db" "SELECT suite_path FROM runs")"
cd "$WORK/elsewhere"
expect_rc 0 "$PPB" run --resume 1 --db "$WORK/killed.db" --no-progress
expect_rc 3 "$PPB" run --resume 1 --db "$WORK/killed.db" --no-progress   # already complete
cd "$WORK"

keys() { "$PPB" export 1 --db "$1" --format csv | "$PY" -c '
import csv, sys
# noisy vs ok is a timing verdict that may differ between two runs; every other
# status (wrong, refused, skipped...) must match exactly.
for r in csv.DictReader(sys.stdin):
    print(r["case_key"], "ok" if r["status"] == "noisy" else r["status"])' | sort; }
diff <(keys "$WORK/full.db") <(keys "$WORK/killed.db") || fail "resumed run differs from an uninterrupted one"
[ "$(keys "$WORK/killed.db" | wc -l)" -eq "$total" ] || fail "resumed run does not hold $total cases"
echo "resume_kill: ok"
