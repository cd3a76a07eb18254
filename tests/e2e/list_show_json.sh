#!/usr/bin/env bash
# `list --json` (ppbench-runs/1) and `show RUN --json` (ppbench-run/1), read
# back with Python's json against what a CPU run of the smoke suite stored: a
# plain run with a label no JSON writer may leave unescaped, and the two runs
# of a proposal (their kind is what tells them apart).
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/p.db"
FILTER="batch=1,dtype=bf16,query_len=17"
LABEL=$'quote " backslash \\ tab \t newline \n bell \a <end>'
"$PPB" list "$SRC/suites/smoke.yaml" --filter "$FILTER" >"$WORK/keys.txt"
set +e; "$PPB" propose "$SRC/tests/data/proposals/ab-smoke.yaml" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "propose exited $rc";; esac   # CPU timings: any verdict
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --quiet --filter "$FILTER" --label "$LABEL"
plain=$(sqlite3 "$PPBENCH_DB" "SELECT max(id) FROM runs WHERE kind = 'run'")

expect_rc 0 "$PPB" list --json -
cp "$WORK/out" "$WORK/runs.json"
expect_rc 0 "$PPB" show "$plain" --json -
cp "$WORK/out" "$WORK/run.json"
expect_rc 0 "$PPB" show latest --json "$WORK/latest.json"
[ ! -s "$WORK/out" ] || fail "show --json FILE wrote to stdout too"

"$PY" - "$WORK/runs.json" "$WORK/run.json" "$WORK/latest.json" "$WORK/keys.txt" "$LABEL" "$plain" <<'PY' || fail "the JSON documents"
import json, math, sys
runs_doc, run_doc, latest = (json.load(open(p)) for p in sys.argv[1:4])
keys = [k.rstrip("\n") for k in open(sys.argv[4]) if k.strip()]
label, plain = sys.argv[5], int(sys.argv[6])

assert runs_doc["schema"] == "ppbench-runs/1" and runs_doc["command"] == "list" and runs_doc["exit_code"] == 0
runs = runs_doc["runs"]
assert [r["id"] for r in runs] == sorted((r["id"] for r in runs), reverse=True), "not newest first"
assert [r["kind"] for r in runs] == ["run", "proposal", "proposal"], [r["kind"] for r in runs]
fields = {"id", "kind", "label", "suite_name", "suite_path", "suite_hash", "git_commit", "host", "backend",
          "device", "target", "started_at", "finished_at", "status", "n_cases", "n_done", "impls", "counts"}
for r in runs:
    assert fields <= set(r), fields - set(r)
    assert r["status"] == "complete" and r["finished_at"] >= r["started_at"], r
    assert r["backend"] == "cpu" and r["device"] and r["suite_name"] == "smoke" and r["impls"] == ["builtin"], r
    # every status is counted, 0 included: CI reads counts["wrong"] without a default
    assert set(r["counts"]) >= {"ok", "wrong", "refused", "noisy"}, r["counts"]
    assert sum(r["counts"].values()) == r["n_done"] == r["n_cases"] > 0, r
    assert all(isinstance(v, int) and v >= 0 for v in r["counts"].values()), r["counts"]
mine = runs[0]
assert mine["id"] == plain and mine["label"] == label, (mine["label"], label)   # escaped, read back whole
# every case correct and timed; on a loaded machine one may miss its noise target (noisy)
assert mine["n_cases"] == len(keys) and mine["counts"]["ok"] + mine["counts"]["noisy"] == len(keys), mine["counts"]

assert run_doc["schema"] == "ppbench-run/1" and run_doc["command"] == "show" and run_doc["exit_code"] == 0
assert latest == run_doc, "show latest is not the newest plain run"
listed = {k: v for k, v in mine.items() if k != "counts"}
assert run_doc["run"] == listed, (run_doc["run"], listed)   # one set of run fields in both documents
assert run_doc["counts"] == mine["counts"]
dev = run_doc["device"]
assert dev["name"] == mine["device"] and dev["backend"] == "cpu" and dev["cpu_timings"] is True, dev
for k in ("compute_capability", "sm_count", "mem_total_bytes", "sm_clock_mhz", "mem_clock_mhz"):
    assert k in dev, k
assert run_doc["env"]["timings"] == "cpu", run_doc["env"].get("timings")
cases = run_doc["cases"]
assert sorted(c["key"] for c in cases) == sorted(keys), ([c["key"] for c in cases], keys)   # in the order run, grouped by shape
for c in cases:
    assert c["status"] in ("ok", "noisy") and c["impl"] == "builtin" and c["timing_is_cpu"] == 1, c
    assert c["n_samples"] >= 3 and 0 < c["q1_ms"] <= c["median_ms"] <= c["q3_ms"], c
    chk = c["check"]
    assert chk["checked"] == 1 and chk["pass"] == 1, chk
    assert math.isfinite(chk["max_abs_err"]) and chk["max_abs_err"] >= 0, chk
PY

# Refusals: an unknown run (3, nothing on stdout), a suite's keys as JSON (2),
# a document over the database (2).
expect_rc 3 "$PPB" show 999 --json -
[ ! -s "$WORK/out" ] || fail "show of an unknown run wrote a document"
grep -q "run 999 not found" "$WORK/err" || fail "show 999: $(cat "$WORK/err")"
expect_rc 2 "$PPB" list "$SRC/suites/smoke.yaml" --json -
expect_rc 2 "$PPB" list --json "$PPBENCH_DB"
expect_rc 2 "$PPB" show latest --json "$PPBENCH_DB"
[ "$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM runs")" = 3 ] || fail "the database was touched"

# A database without runs: an empty list, still a document.
: >"$WORK/empty.db"
expect_rc 0 "$PPB" list --db "$WORK/empty.db" --json -
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['runs'] == [] and d['schema'] == 'ppbench-runs/1', d" \
  "$WORK/out" || fail "list --json of an empty database"
echo "list_show_json: ok"
