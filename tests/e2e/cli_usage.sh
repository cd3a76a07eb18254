#!/usr/bin/env bash
# Every subcommand answers --help; misuse gets the documented exit codes.
source "$(dirname "$0")/lib.bash"
for cmd in run check list show export dump; do
  expect_rc 0 "$PPB" "$cmd" --help
  grep -q "usage: ppbench $cmd" "$WORK/out" || fail "$cmd --help prints no usage"
done
expect_rc 0 "$PPB" --help
expect_rc 2 "$PPB"
expect_rc 2 "$PPB" frobnicate
grep -q "did you mean" "$WORK/err" && fail "a far-off word got a suggestion"
expect_rc 2 "$PPB" rnu
grep -q "'rnu' is not a command; did you mean 'run'?" "$WORK/err" || fail "no suggestion for a typo"
expect_rc 0 "$PPB" help run
grep -q "usage: ppbench run" "$WORK/out" || fail "help run"
expect_rc 2 "$PPB" help nope
expect_rc 2 "$PPB" run "$SRC/suites/smoke.yaml" --backend cdua --db "$WORK/p.db"
grep -q "expected auto, cpu or cuda" "$WORK/err" || fail "bad backend not explained"
expect_rc 3 "$PPB" run "$SRC/suites/proposals/seed-prefill-bi-v100.yaml" --db "$WORK/p.db"
grep -q "this is a proposal file.*ppbench propose" "$WORK/err" || fail "a proposal given to run: no hint"
[ ! -e "$WORK/p.db" ] || fail "bad input created the database"
expect_rc 2 "$PPB" run --no-such-option x.yaml
expect_rc 2 "$PPB" run --shard 3/2 "$SRC/suites/smoke.yaml"
expect_rc 2 "$PPB" export 1 --format xml
expect_rc 3 "$PPB" run "$WORK/missing.yaml" --db "$WORK/p.db"
grep -q "missing.yaml" "$WORK/err" || fail "missing suite not named"

# Read-only commands never create a database: a mistyped --db is refused, naming the path.
for cmd in "list" "show latest" "export latest --format csv" "report latest -o $WORK/r" "trend smoke" "compare 1 2" "verdict --recompute 1"; do
  expect_rc 4 "$PPB" $cmd --db "$WORK/typo.db"
  grep -q "no database at $WORK/typo.db" "$WORK/err" || { cat "$WORK/err"; fail "$cmd did not name the missing database"; }
  [ ! -e "$WORK/typo.db" ] || fail "$cmd created $WORK/typo.db"
done

# Dates are parsed, never compared as text: a word, an impossible day or hour is a usage error,
# and a date-time selects by time (runs are stored as YYYY-MM-DDTHH:MM:SSZ).
for bad in yesterday 2026-02-31 2026-13-01 2026-11-01T25:00:00Z 20261101; do
  expect_rc 2 "$PPB" trend smoke --since "$bad" --db "$WORK/p.db"
  grep -q "is not a date" "$WORK/err" || fail "trend --since $bad"
  expect_rc 2 "$PPB" report --trend smoke --since "$bad" --db "$WORK/p.db"
done
"$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/d.db" --backend cpu --no-progress --filter "batch=1,query_len=17,context_len=0,dtype=bf16,block_m=64" >/dev/null 2>&1
expect_rc 0 "$PPB" trend smoke --since 2000-01-01 --db "$WORK/d.db"
grep -q "latest run 1 against its history" "$WORK/out" || fail "trend --since 2000-01-01 lost the run"
expect_rc 0 "$PPB" trend smoke --since "$(date -u -d '+1 day' +%Y-%m-%d)T00:00:00Z" --db "$WORK/d.db"
grep -q "1 insufficient history" "$WORK/out" || fail "trend --since tomorrow still had a history"
echo "cli_usage: ok"
