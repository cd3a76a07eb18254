#!/usr/bin/env bash
# ci/nightly.sh on the CPU backend, as the GPU runners call it: run -> trend ->
# report -> push to a local server (tests/e2e/fake_http.py). A first night
# passes (too little history to judge); then eight faster nights are written
# into the history and two more real nights must fail the job with a
# regression (exit 12), with reports and pushes still made.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/e2e/net.bash"

for cmd in trend report; do # the pipeline needs them; name what is missing
  "$PPB" --help | grep -qE "^  $cmd " || fail "ppbench has no '$cmd' command, which ci/nightly.sh calls"
done

start_fake gw
export PPB_MODE=cpu PPBENCH="$PPB" PPB_DB="$WORK/nightly.db"
export PPBENCH_PUSH_URL="http://127.0.0.1:$FAKE_PORT" PPBENCH_PUSH_FORMAT=prometheus
export PPBENCH_PUSH_TOKEN="nightly-secret-$$-$RANDOM$RANDOM"
export PPB_PUSH_ARGS="--retry-delay 20" # keep the down-server night short
export PPBENCH_GNUPLOT= # charts are report's business; tables are enough here

night() { # night N WANT_RC
  export PPB_REPORT_DIR="$WORK/report-$1"
  expect_rc "$2" bash "$SRC/ci/nightly.sh"
}

# A night on the deployment's own tree whose kernels cannot be prepared (no Triton as in CI, or
# no GPU) fails the job (4) and runs nothing on the built-in kernels in their place.
if ! command -v nvidia-smi >/dev/null; then
  mkdir -p "$WORK/tree/vllm/attention/ops"
  echo "def context_attention_fwd(q): pass" >"$WORK/tree/vllm/attention/ops/prefix_prefill.py"
  PPB_VLLM_TREE="$WORK/tree" PPB_DB="$WORK/deployed.db" PPB_STATE_DIR="$WORK/state" night 0 4
  grep -q "prepare: FAILED for $WORK/tree: prepare.py: " "$WORK/report-0/summary.txt" \
    || fail "deployed tree: $(cat "$WORK/report-0/summary.txt")"
  grep -q "run smoke: skipped: the deployment's kernels could not be prepared" "$WORK/report-0/summary.txt" \
    || fail "deployed tree: the suite ran anyway"
  [ ! -e "$WORK/deployed.db" ] || [ "$(sqlite3 "$WORK/deployed.db" "SELECT count(*) FROM runs")" = 0 ] \
    || fail "deployed tree: a run was stored"
  # The deployment's prefill kernel is passed on; a kernel that is none of them stops the night at once.
  PPB_VLLM_PREFILL_KERNEL=chunked PPB_VLLM_TREE="$WORK/tree" PPB_DB="$WORK/deployed.db" PPB_STATE_DIR="$WORK/state" \
    night 0 4
  head -1 "$WORK/report-0/prepare.log" | grep -q -- "--from-wrapper --prefill-kernel chunked --name vllm-triton@deployed " \
    || fail "deployed tree: the prefill kernel was not passed: $(head -1 "$WORK/report-0/prepare.log")"
  PPB_VLLM_PREFILL_KERNEL=flash PPB_VLLM_TREE="$WORK/tree" PPB_DB="$WORK/deployed.db" PPB_STATE_DIR="$WORK/state" \
    night 0 4
  grep -q "PPB_VLLM_PREFILL_KERNEL=flash: give prefix_prefill, unified or chunked" "$WORK/report-0/summary.txt" \
    || fail "a bad prefill kernel: $(cat "$WORK/report-0/summary.txt")"
fi

night 1 0
S="$WORK/report-1/summary.txt"
grep -q "run smoke: run 1, every case correct" "$S" || fail "summary: $(cat "$S")"
# Issue 36 item 7: a progress line per case in the job's log as it happens (kept in run-NAME.err)
cases=$(sqlite3 "$PPB_DB" "SELECT count(*) FROM results WHERE run_id = 1")
lines=$(grep -c '^\[[0-9]*/[0-9]*\] [0-9]*:[0-9]* elapsed, ETA ' "$WORK/report-1/run-smoke.err" || true)
[ "$cases" -gt 0 ] && [ "$lines" = "$cases" ] || fail "$lines progress lines for $cases cases in run-smoke.err"
grep -q "trend smoke: no regression" "$S" || fail "trend step: $(cat "$S")"
grep -q "push smoke: run 1 sent" "$S" || fail "push step: $(cat "$S")"
grep -q "^### ppbench run 1: smoke (exit 0)" "$WORK/report-1/summary.md" || fail "the job summary lacks the run"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['exit_code']==0 and d['run']['id']==1, d['run']" \
  "$WORK/report-1/run-smoke.json" || fail "run-smoke.json"
for f in smoke/index.html smoke-trend/index.html smoke.json trend-smoke.txt trend-smoke.json trend-smoke.md summary.md run-smoke.txt run-smoke.json run-smoke.md; do
  [ -s "$WORK/report-1/$f" ] || fail "report-1/$f is missing"
done
[ "$(requests gw)" -eq 1 ] || fail "expected 1 push, got $(requests gw)"
"$PY" - "$WORK/gw.log" "$PPBENCH_PUSH_TOKEN" <<'PY' || fail "pushes"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["method"] == "PUT" and r["headers"]["authorization"] == "Bearer " + sys.argv[2] for r in reqs)
assert "suite@base64/c21va2U=" in reqs[0]["path"], reqs[0]["path"]  # "smoke"
assert 'ppbench_run_info{run_id="1"' in reqs[0]["body"]
PY

# Eight earlier nights, ten times faster than this machine, written into the
# history before night 1: nights 1 and 2 are then a step up sustained over two
# runs, a regression from night 2 on.
"$PY" - "$PPB_DB" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA foreign_keys = ON")
cols = [r[1] for r in con.execute("PRAGMA table_info(runs)") if r[1] not in ("id", "uid")]
rcols = [r[1] for r in con.execute("PRAGMA table_info(results)") if r[1] not in ("id", "run_id")]
for night in range(8):
    for suite_run in (1,):
        cur = con.execute(f"INSERT INTO runs({','.join(cols)}) SELECT {','.join(cols)} FROM runs WHERE id = ?", (suite_run,))
        new = cur.lastrowid
        con.execute("UPDATE runs SET started_at = ? WHERE id = ?", (f"2000-01-{night + 1:02d}T00:00:00Z", new))
        con.execute(f"INSERT INTO results(run_id, {','.join(rcols)}) SELECT ?, {','.join(rcols)} FROM results WHERE run_id = ?", (new, suite_run))
        # the environment too: trend follows runs timed as the latest was (cpu_kernel_threads)
        con.execute("INSERT INTO env(run_id, key, value) SELECT ?, key, value FROM env WHERE run_id = ?", (new, suite_run))
        con.execute("UPDATE results SET row_check = NULL, median_ms = median_ms * (0.1 + 0.001 * ?) WHERE run_id = ?", (night, new))
con.commit()
PY
night 2 12
S="$WORK/report-2/summary.txt"
grep -q "trend smoke: REGRESSION" "$S" || fail "no regression found: $(cat "$S")"
grep -q "regress" "$WORK/report-2/trend-smoke.txt" || fail "trend output: $(cat "$WORK/report-2/trend-smoke.txt")"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['exit_code']==12 and d['counts']['regression']>0, d['counts']" \
  "$WORK/report-2/trend-smoke.json" || fail "the night's trend JSON does not say regression"
grep -q "^### ppbench trend: smoke: REGRESSION" "$WORK/report-2/summary.md" || fail "the job summary does not say regression"
grep -q "push smoke: run .* sent" "$S" || fail "a regression night must still push: $(cat "$S")"
[ -s "$WORK/report-2/smoke-trend/index.html" ] || fail "no trend report on the regression night"
[ "$(requests gw)" -eq 2 ] || fail "expected 2 pushes after two nights, got $(requests gw)"

# A push target that is down: the push is queued (the night's verdict is
# the trend's), and goes out first with the next night's push.
echo "503 503 503 503 503 503 503 503" >"$WORK/gw.plan"
night 3 12
grep -q "push smoke: failed, queued" "$WORK/report-3/summary.txt" || fail "$(cat "$WORK/report-3/summary.txt")"
: >"$WORK/gw.plan"
night 4 12
grep -q "sent queued push" "$WORK/report-4/push-smoke.log" || fail "the queued push was not sent: $(cat "$WORK/report-4/push-smoke.log")"

# A suite with wrong results fails the job with 1, after reporting and pushing.
before=$(requests gw)
# (smoke-decode's deliberate mismatches, without the expect_wrong: that makes them a pass)
sed '/^expect_wrong:/,/^$/d' "$SRC/suites/smoke-decode.yaml" >"$WORK/smoke-decode.yaml"
PPB_SUITES="$WORK/smoke-decode.yaml" night 5 1
grep -q "run smoke-decode: run .* SOME CASE WRONG" "$WORK/report-5/summary.txt" || fail "$(cat "$WORK/report-5/summary.txt")"
[ -s "$WORK/report-5/smoke-decode/index.html" ] || fail "no report for the wrong night"
[ "$(requests gw)" -eq $((before + 1)) ] || fail "the wrong night was not pushed"

# A night the backend refuses whole (the GPU nightly on the CPU) is no pass: its run and its trend say
# so, and the job fails with 1 (nothing measured), not 4 (a step that could not run).
PPB_SUITES="$SRC/suites/nightly.yaml" night 6 1
grep -q "trend nightly: NOT TIMED" "$WORK/report-6/summary.txt" || fail "$(cat "$WORK/report-6/summary.txt")"
grep -q "report nightly: .*(NOT TIMED)" "$WORK/report-6/summary.txt" || fail "$(cat "$WORK/report-6/summary.txt")"
grep -q "^### ppbench trend: nightly: NOT TIMED" "$WORK/report-6/summary.md" || fail "the job summary does not say NOT TIMED"

grep -qF "$PPBENCH_PUSH_TOKEN" -r "$WORK"/report-* && fail "the token is in a report"

# The CI files that call this on the GPU runners: valid YAML, the BI-V100
# runner labels/tags, ci/nightly.sh as the step, the report as the artifact.
"$PY" - "$SRC/ci/github/nightly.yml" "$SRC/ci/gitlab/.gitlab-ci.yml" <<'PY' || fail "CI files"
import sys, yaml
gh, gl = (yaml.safe_load(open(f)) for f in sys.argv[1:3])
job = gh["jobs"]["nightly"]
labels = [m["labels"] for m in job["strategy"]["matrix"]["include"]]
assert ["self-hosted", "linux", "bi-v100"] in labels, labels
assert any(s.get("run") == "ci/nightly.sh" for s in job["steps"]), job["steps"]
up = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
assert up and up[0]["with"]["path"] == job["env"]["PPB_REPORT_DIR"] and up[0]["if"] == "always()"
assert job["env"]["PPBENCH_PUSH_TOKEN"] == "${{ secrets.PPBENCH_PUSH_TOKEN }}"
base = gl[".ppbench-nightly"]
assert base["script"] == ["ci/nightly.sh"], base["script"]
assert base["artifacts"]["paths"] == [base["variables"]["PPB_REPORT_DIR"]] and base["artifacts"]["when"] == "always"
assert gl["nightly:bi-v100"]["tags"] == ["bi-v100"] and gl["nightly:bi-v100"]["variables"]["PPB_MODE"] == "bi-v100"
# Issue 36: an include declares no stages: (GitLab does not merge them: a host with its own breaks); the
# jobs use a stage GitLab defines by default, and the header says how a host picks its own.
assert "stages" not in gl, gl.get("stages")
assert base["stage"] in ("build", "test", "deploy", ".pre", ".post"), base["stage"]
assert all("stage" not in job or job["stage"] == base["stage"] for name, job in gl.items() if name.startswith("nightly:"))
head = open(sys.argv[2]).read().split("\n.ppbench-nightly:")[0]
assert ".ppbench-nightly:" in head and "stage:" in head, "the header does not say how to set the stage"
# The job summary on GitHub shows the night's Markdown verdicts, also when the night failed.
steps = [s for s in job["steps"] if "GITHUB_STEP_SUMMARY" in str(s.get("run", ""))]
assert steps and steps[0]["if"] == "always()" and "summary.md" in steps[0]["run"], steps
PY
# The BI-V100 build cannot run here (no CoreX SDK); its dry run must name the
# toolchain settings docs/CI.md promises.
expect_rc 0 bash "$SRC/ci/build-bi-v100.sh" --dry-run
for want in "CMAKE_CUDA_COMPILER=/usr/local/corex/bin/clang++" "CMAKE_CUDA_ARCHITECTURES=ivcore10" \
            "--cuda-path=/usr/local/corex" "PPB_WARP_SIZE=64" "PPB_AOT_CONFIGS=" "PPB_NVRTC=OFF" "list-kernels" "--aot"; do
  grep -qF -- "$want" "$WORK/out" || fail "build-bi-v100.sh --dry-run lacks $want"
done
echo "ci_nightly: ok"
