#!/usr/bin/env bash
# Reference rows cached between runs (harness/run/reference_cache.h): the
# second run of the same cases reads them, checks exactly as the first did,
# and says so; PPBENCH_REFERENCE_CACHE=off reads and writes nothing.
source "$(dirname "$0")/lib.bash"
export PPBENCH_KERNEL_CACHE="$WORK/cache"
filter="batch=1,dtype=bf16"
n=$("$PPB" list "$SRC/suites/smoke.yaml" --filter "$filter" | wc -l)
[ "$n" -gt 1 ] || fail "the filter selects $n cases"
shapes=$("$PPB" list "$SRC/suites/smoke.yaml" --filter "$filter" | sed 's/ bm=.*//' | sort -u | wc -l)

run_and_show() { # $1: database
  expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --quiet --db "$1" --filter "$filter"
  expect_rc 0 "$PPB" show latest --db "$1"
}
run_and_show "$WORK/first.db"
grep -q "reference.cache  *$WORK/cache" "$WORK/out" || fail "the cache folder is not in the run's environment"
grep -q "after.reference.rows  *0 read, $shapes computed" "$WORK/out" || { cat "$WORK/out"; fail "first run: rows not computed once per shape ($shapes)"; }
[ "$(ls "$WORK/cache" | wc -l)" -eq "$shapes" ] || fail "not one cache file per shape"
run_and_show "$WORK/second.db"
grep -q "after.reference.rows  *$shapes read, 0 computed" "$WORK/out" || { cat "$WORK/out"; fail "second run: rows not read from the cache"; }
# the same verdicts and the same errors against the reference, case by case
for db in first second; do
  expect_rc 0 "$PPB" export 1 --db "$WORK/$db.db" --format csv -o "$WORK/$db.csv"
done
"$PY" - "$WORK/first.csv" "$WORK/second.csv" <<'PY' || fail "cached rows checked differently"
import csv, sys
# the check, not the timing: a loaded machine may make a case noisy in one run only
cols = ("case_key", "check_pass", "check_max_abs_err", "check_rel_l2_err", "check_rows_checked")
rows = [list(csv.DictReader(open(p))) for p in sys.argv[1:3]]
a, b = ([tuple(r[c] for c in cols) for r in rs] for rs in rows)
assert a == b and a, (a, b)
assert all(r["status"] in ("ok", "noisy") and r["check_pass"] == "1" for rs in rows for r in rs), rows
PY

# a damaged file is computed again (and said by the counts), never used
# (the last byte: a float64 of the rows, under the file's checksum)
"$PY" - "$WORK"/cache/* <<'PY'
import sys
for p in sys.argv[1:]:
    data = bytearray(open(p, "rb").read())
    data[-1] ^= 0x40
    open(p, "wb").write(bytes(data))
PY
run_and_show "$WORK/third.db"
grep -q "after.reference.rows  *0 read, $shapes computed" "$WORK/out" || { cat "$WORK/out"; fail "damaged files were read"; }

PPBENCH_REFERENCE_CACHE=off run_and_show "$WORK/off.db"
grep -q "reference.cache  *off" "$WORK/out" || fail "an off cache is not recorded as off"
grep -q "after.reference.rows  *0 read, $shapes computed" "$WORK/out" || fail "the cache was read while off"
