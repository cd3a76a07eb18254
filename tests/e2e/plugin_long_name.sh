#!/usr/bin/env bash
# A plugin name of 40 characters, the longest allowed, round-trips whole through
# run, the store, --resume, dump and compare (issue: keys and the store once cut
# names at 31 characters, so resume, dump and compare looked for another plugin).
source "$(dirname "$0")/lib.bash"
PLUG=$(dirname "$PPB")/tests/plugins
export PPBENCH_DB="$WORK/p.db"
NAME=example-cpu-with-a-name-of-forty-letters
[ ${#NAME} -eq 40 ] || fail "the test name is ${#NAME} characters"
[ -f "$PLUG/libppbk_$NAME.so" ] || fail "the long-named plugin was not built in $PLUG"
ARGS=(--plugin "$PLUG" --impl "plugin:$NAME" --backend cpu --no-progress
      --filter "batch=1,query_len=17,context_len=0,head_dim=64,dtype=bf16,page_size=16,sliding_window=0")

expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" "${ARGS[@]}"
n=$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM cases WHERE impl = 'plugin:$NAME' AND key LIKE '% impl=plugin:$NAME'")
[ "$n" -ge 2 ] || fail "$n cases stored under the whole name"
# Interrupted with half its results gone, resumed: the rest runs on the same plugin.
interrupt_half "$PPBENCH_DB"
expect_rc 0 "$PPB" run --resume 1 --plugin "$PLUG" --no-progress
[ "$(sqlite3 "$PPBENCH_DB" "SELECT status FROM runs WHERE id = 1")" = complete ] || fail "the resumed run is not complete"
[ "$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM results r JOIN cases c ON c.id = r.case_id WHERE r.status = 'ok'
                             AND c.impl = 'plugin:$NAME'")" -eq "$n" ] || fail "resume did not run every case on the plugin"
# dump: the case found by its key, its inputs regenerated and the plugin run again.
key=$(sqlite3 "$PPBENCH_DB" "SELECT key FROM cases WHERE impl = 'plugin:$NAME' ORDER BY id LIMIT 1")
expect_rc 0 "$PPB" dump 1 "$key" --plugin "$PLUG" -o "$WORK/dump"
ls "$WORK/dump"/*.npy >/dev/null 2>&1 || fail "dump wrote no arrays: $(cat "$WORK/err")"
# compare: more runs for history, then the last two joined on their keys, every case compared.
for _ in 1 2 3 4 5; do expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" "${ARGS[@]}"; done
set +e; "$PPB" compare 5 6 --min-history 3 --json "$WORK/c.json" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -le 11 ] && [ "$rc" -ne 2 ] && [ "$rc" -ne 3 ] || { cat "$WORK/err"; fail "compare exited $rc"; }
"$PY" - "$WORK/c.json" "$n" "$NAME" <<'PY' || fail "compare did not join the runs on the whole name"
import json, sys
d, n, name = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
cases = d["cases"]
assert len(cases) == n and all(c["state"] == "compared" for c in cases), cases
assert all(c["candidate_key"].endswith(" impl=plugin:" + name) for c in cases), cases
PY
echo "plugin_long_name: ok ($n cases)"
