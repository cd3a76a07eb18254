#!/usr/bin/env bash
# ppbench push --format prometheus against a real Prometheus Pushgateway
# (Debian's prometheus-pushgateway) started on a free loopback port with its
# storage in the test's temp dir. Every pushed value is read back from the
# gateway's /metrics (parsed by prometheus_client, the reference parser) and
# compared with the database: medians exact, statuses, the run's labels with
# characters that need escaping, grouping by suite/host/shard, and PUT
# replacing a group's previous push.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/e2e/net.bash"

GW=$(command -v prometheus-pushgateway || true)
[ -n "$GW" ] || skip "prometheus-pushgateway is not installed (Debian package prometheus-pushgateway; scripts/install-deps.sh installs it)"
"$PY" -c 'import prometheus_client' 2>/dev/null || fail "python3-prometheus-client is missing (scripts/install-deps.sh)"

start_gateway() {
  local try
  for try in 1 2 3; do
    GW_PORT=$(free_port)
    "$GW" --web.listen-address="127.0.0.1:$GW_PORT" --persistence.file="$WORK/gateway.data" \
      >"$WORK/gateway.log" 2>&1 &
    GW_PID=$!
    _PPB_PIDS+=($GW_PID)
    if wait_http "http://127.0.0.1:$GW_PORT/-/ready" 15; then
      return 0
    fi
    kill "$GW_PID" 2>/dev/null || true # the port was taken meanwhile: try another
  done
  skip "prometheus-pushgateway did not start: $(tail -3 "$WORK/gateway.log")"
}
start_gateway
GWURL="http://127.0.0.1:$GW_PORT"
export PPBENCH_DB="$WORK/p.db"

# A label with a quote, a backslash and a line break: must survive escaping.
LABEL=$'night "7" \\ C:\\tmp\nsecond line'
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --label "$LABEL"
expect_rc 0 "$PPB" push 1 --to "$GWURL" --format prometheus
grep -q "pushed run 1 as prometheus" "$WORK/out" || fail "no confirmation: $(cat "$WORK/out")"

# check_gateway RUN SUITE [SHARD]: the gateway's group for SUITE (and SHARD)
# holds exactly RUN's results.
check_gateway() {
  "$PY" - "$GWURL" "$PPBENCH_DB" "$1" "$2" "${3:-}" "$LABEL" <<'PY'
import math, sqlite3, sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
url, db, run, suite, shard, label = sys.argv[1:7]
text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
con = sqlite3.connect(db)
host, status, backend, run_label = con.execute(
    "SELECT host, status, backend, label FROM runs WHERE id = ?", (run,)).fetchone()
# A case's series carry its fields as labels (no free-text key): identify a case by them.
FIELDS = ("batch", "query_len", "context_len", "seq_len", "ragged", "num_heads", "num_kv_heads", "head_dim", "dtype",
          "page_size", "sliding_window", "block_m", "block_n", "num_warps", "version", "num_threads",
          "partition_size", "host_partition_size", "path", "impl")
con.row_factory = sqlite3.Row
rows = []
for r in con.execute("SELECT c.*, r.status AS rstatus, r.median_ms, r.n_samples FROM results r"
                     " JOIN cases c ON c.id = r.case_id WHERE r.run_id = ?", (run,)):
    ident = tuple(sorted((f, str(r[f])) for f in FIELDS if r[f] is not None)) + (("kernel", r["kernel"]),)
    rows.append((ident, r["kernel"], r["rstatus"], r["median_ms"], r["n_samples"]))
con.row_factory = None

def case_of(sample):
    return tuple(sorted((f, v) for f, v in sample.labels.items() if f in FIELDS)) + (("kernel", sample.labels["kernel"]),)
assert rows, "the run has no results"
fams = {f.name: f for f in text_string_to_metric_families(text)}

def group(sample):
    l = sample.labels
    return (l.get("job") == "ppbench" and l.get("suite") == suite and l.get("host") == host
            and l.get("shard", "") == shard)

def samples(name):
    return [s for s in fams[name].samples if s.name == name and group(s)]

info = samples("ppbench_run_info")
assert len(info) == 1, info
assert info[0].labels["run_id"] == run, info[0].labels
assert info[0].labels["status"] == status and info[0].labels["backend"] == backend
assert info[0].labels["label"] == run_label, (info[0].labels["label"], run_label)
if run == "1":
    assert run_label == label, "the label was not stored as given"

status_of = {case_of(s): s.labels["status"] for s in samples("ppbench_case_status")}
assert len(status_of) == len(rows), (len(status_of), len(rows))
medians = {case_of(s): s.value for s in samples("ppbench_case_median_seconds")}
n_samples = {case_of(s): s.value for s in samples("ppbench_case_samples")}
assert all(s.labels["backend"] == backend for s in samples("ppbench_case_status"))
checked = 0
for key, kernel, st, median, n in rows:
    assert status_of[key] == st, (key, status_of[key], st)
    assert n_samples[key] == n, (key, n_samples[key], n)
    if n == 0 or median is None or not math.isfinite(median):  # no timing to show
        assert key not in medians, key
        continue
    assert medians[key] == median * 1e-3, (key, medians[key], median)  # exact: the same product, shortest text
    checked += 1
assert checked > 0
by_status = {s.labels["status"]: s.value for s in samples("ppbench_run_results")}
for st in set(r[2] for r in rows):
    assert by_status[st] == sum(1 for r in rows if r[2] == st), (st, by_status)
print(f"gateway group suite={suite} shard={shard or '-'}: run {run}, {len(rows)} cases, {checked} medians exact")
PY
}
check_gateway 1 smoke || fail "the gateway does not hold run 1 as stored"

# A second suite goes to its own group; the first stays.
# (smoke-decode holds deliberate PARTITION_SIZE mismatches: exit 1 means "some case wrong")
set +e; "$PPB" run "$SRC/suites/smoke-decode.yaml" --backend cpu --no-progress >/dev/null 2>&1; rc=$?; set -e
[ "$rc" -le 1 ] || fail "run smoke-decode exited $rc"
expect_rc 0 "$PPB" push latest --to "$GWURL/" --format prometheus
check_gateway 2 smoke-decode || fail "second suite"
check_gateway 1 smoke || fail "the first suite's group was disturbed by the second"

# A newer run of the same suite replaces the group (PUT), no stale series left.
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --label "$LABEL"
expect_rc 0 "$PPB" push 3 --to "$GWURL" --format prometheus
check_gateway 3 smoke || fail "the newer run did not replace the group"

# A shard is its own group (two shards of one suite on one host do not collide).
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --shard 1/2
expect_rc 0 "$PPB" push 4 --to "$GWURL" --format prometheus
check_gateway 4 smoke 1/2 || fail "sharded run"
check_gateway 3 smoke || fail "the shard overwrote the unsharded group"

expect_rc 0 "$PPB" push --list
grep -q "no queued pushes" "$WORK/out" || fail "a successful push left something queued"
echo "push_pushgateway: ok"
