#!/usr/bin/env bash
# A malformed suite: one clear line naming file:line:column and the field,
# exit 3, and the database is left exactly as it was.
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/p.db"
# a first run so the database has content to lose
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --filter "dtype=fp16" --no-progress
before=$(sha256sum "$PPBENCH_DB" | cut -d' ' -f1)

cat > bad.yaml <<'YAML'
name: bad
kernel: prefix_prefill
shapes:
  - query_len: [16]
    heads: ["4/2"]
    dtype: [fp8]
YAML
expect_rc 3 "$PPB" run bad.yaml --no-progress
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "expected exactly one error line"; }
grep -q "bad.yaml:6:13: .*dtype" "$WORK/err" || { cat "$WORK/err"; fail "error does not name bad.yaml:6:13 and dtype"; }
after=$(sha256sum "$PPBENCH_DB" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "the database changed after a rejected suite"

# same for a fresh database path: it must not even be created
expect_rc 3 "$PPB" run bad.yaml --db "$WORK/fresh.db" --no-progress
[ ! -e "$WORK/fresh.db" ] || fail "a rejected suite created a database"
echo "bad_suite: ok"
