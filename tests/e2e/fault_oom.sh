#!/usr/bin/env bash
# Fault injection (issue 7): out of host memory. Under an address-space limit
# (ulimit -v) the ~1 GiB inputs of tests/faults/oom.yaml's large case do not fit
# (refused from the arithmetic, or failing to allocate): that case is stored as
# skipped with the reason, the run goes on
# and finishes the cases after it, and the database is sound.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
suite="$SRC/tests/faults/oom.yaml"
[ "$("$PPB" list "$suite" | wc -l)" -eq 3 ] || fail "oom suite should have 3 cases"
# 600 MiB of address space: enough for ppbench and the tiny cases, not for 1 GiB
expect_rc 0 bash -c 'ulimit -v 600000; exec "$@"' _ "$PPB" run "$suite" --db "$WORK/oom.db" --no-progress
"$PPB" export 1 --db "$WORK/oom.db" --format csv >"$WORK/oom.csv"
"$PY" - "$WORK/oom.csv" <<'PYEOF' || fail "out-of-memory case not stored as expected"
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 3, f"{len(rows)} results stored, want 3"
big = [r for r in rows if "262144" in r["case_key"]]
assert len(big) == 1, "large case (context 262144) not stored"
for r in rows:
    if r is big[0]:
        assert r["status"] == "skipped", f"large case status {r['status']}"
        # refused from the arithmetic (ulimit -v counts as the host's memory), or
        # when an allocation fails
        assert re.search(r"out of host memory|needs [0-9.]+ GB of host memory", r["reason"]), f"reason: {r['reason']!r}"
        print("large case: skipped:", r["reason"])
    else:
        assert r["status"] in ("ok", "noisy"), f"{r['case_key']}: {r['status']}"
PYEOF
check_db "$WORK/oom.db"
[ "$(run_status "$WORK/oom.db")" = complete ] || fail "the run did not complete"
echo "fault_oom: ok"
