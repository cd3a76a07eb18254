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
expect_rc 2 "$PPB" run --no-such-option x.yaml
expect_rc 2 "$PPB" run --shard 3/2 "$SRC/suites/smoke.yaml"
expect_rc 2 "$PPB" export 1 --format xml
expect_rc 3 "$PPB" run "$WORK/missing.yaml" --db "$WORK/p.db"
grep -q "missing.yaml" "$WORK/err" || fail "missing suite not named"
echo "cli_usage: ok"
