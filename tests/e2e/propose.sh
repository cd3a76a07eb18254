#!/usr/bin/env bash
# propose / compare / trend end to end on the CPU backend.
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/p.db"
P="$SRC/tests/data/proposals"

# A candidate that writes past its buffers is rejected, whatever its output.
expect_rc 10 "$PPB" propose "$P/mismatch-smoke.yaml"
grep -q "^verdict: REJECT" "$WORK/out" || fail "mismatch not rejected"
grep -q "past tmp_out" "$WORK/out" || fail "overrun not named in the reasons"

# KV capacity: arithmetic only, the seed's figures shown beside the checked ones.
expect_rc 10 "$PPB" propose "$SRC/suites/proposals/seed-gpu-memory-utilization.yaml"
grep -q "the seed's arithmetic: 50 GB" "$WORK/out" || fail "seed arithmetic not shown"
grep -q "max-num-seqs is 1" "$WORK/out" || fail "capacity verdict reason missing"
# Its report shows the verdict's own reason first and the whole arithmetic; no empty per-case tables.
kv_id=$(sqlite3 "$PPBENCH_DB" "SELECT max(id) FROM proposals")
expect_rc 0 "$PPB" report --proposal "$kv_id" -o "$WORK/kv-report"
"$PY" - "$WORK/kv-report/index.html" <<'PY' || fail "kv_capacity report"
import html, re, sys
page = html.unescape(open(sys.argv[1]).read())
text = re.sub(r"<[^>]+>", " ", re.sub(r"<style.*?</style>", "", page, flags=re.S))
assert "arithmetic: the seed's arithmetic: 50 GB per GPU" in text
assert "KV per token per rank: 2 x 10 full-attention layers" in text
assert "Candidate against baseline" not in text and "Target feasibility" not in text
assert "note:" not in re.sub(r"\s+", " ", text.split("Verdict and reasons")[0]), "a note is the headline"
PY
expect_rc 10 "$PPB" propose "$SRC/suites/proposals/seed-gpu-memory-utilization.yaml" --json "$WORK/kv.json"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['verdict']=='REJECT' and d['exit_code']==10 and d['proposal']['kind']=='kv_capacity' and any('max-num-seqs is 1' in r for r in d['reasons']), d" \
  "$WORK/kv.json" || fail "kv_capacity --json"

# Timed proposals: a verdict (any of the three), both runs stored.
for p in ab-smoke chunked-smoke; do
  set +e; "$PPB" propose "$P/$p.yaml" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
  case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "propose $p exited $rc";; esac
  grep -q "^verdict: " "$WORK/out" || fail "$p printed no verdict"
  grep -q "baseline run [0-9]*, candidate run [0-9]*" "$WORK/out" || fail "$p runs not stored"
done
# A chunk only one side has is timed alone, whichever side has it: every chunk checked ok has samples.
for p in chunked-smoke chunked-smoke-finer-candidate; do
  set +e; "$PPB" propose "$P/$p.yaml" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
  case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "propose $p exited $rc";; esac
  id=$(sqlite3 "$PPBENCH_DB" "SELECT max(id) FROM proposals WHERE name = '$p'")
  [ "$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM results r JOIN proposals p ON r.run_id IN (p.baseline_run, p.candidate_run)
      WHERE p.id = $id AND r.status = 'ok' AND NOT EXISTS (SELECT 1 FROM samples s WHERE s.result_id = r.id)")" = 0 ] ||
    { cat "$WORK/err"; fail "$p: a chunk checked ok was not timed"; }
  grep -q "cannot be prepared" "$WORK/err" && { cat "$WORK/err"; fail "$p: a missing chunk was prepared"; }
done

# Known effects decide the verdict: an A/A proposal with the candidate's times x3 is REJECTed
# (slower overall), x0.3 ACCEPTed (a 50% case tolerance: wide intervals on a loaded machine stay inside it); the scaled runs are stored as kind calibrate (no trend sees them).
# x3 is settled by the first pair timed, past the tolerance (sampling.stop_when_settled): the other
# pairs are checked, not timed, so the mean is over the timed one.
expect_rc 10 "$PPB" propose "$P/aa-smoke.yaml" --scale-candidate 3
grep -Eq "^REJECT: the weighted geometric mean over [0-9]+ cases? is .* slower .*: slower overall" "$WORK/out" ||
  fail "x3 not rejected"
grep -Eq "^cost: .*; pair [0-9]+ settled the REJECT alone, so the pairs not timed by then were checked only$" "$WORK/out" ||
  fail "x3's settled REJECT not said in its cost"
[ "$(grep -c ": timed (" "$WORK/err")" = 1 ] && grep -q "the 10 pairs left are checked, not timed$" "$WORK/err" ||
  fail "x3's pairs were timed after the first settled it"
expect_rc 0 "$PPB" propose "$P/aa-smoke.yaml" --scale-candidate 0.3
grep -q "^ACCEPT: the weighted geometric mean over 11 cases is .* faster" "$WORK/out" || fail "x0.3 not accepted"
[ "$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM runs WHERE kind='calibrate' AND label LIKE 'proposal aa-smoke:%'")" = 4 ] \
  || fail "scaled proposal runs not stored as kind calibrate"
sqlite3 "$PPBENCH_DB" "SELECT label FROM runs WHERE label LIKE '%(times x0.3)%'" | grep -q candidate \
  || fail "the scaled side's label does not say so"
expect_rc 2 "$PPB" propose "$P/aa-smoke.yaml" --scale-candidate 0
# Its report headlines the decision (the weighted mean against the rules), not the first case's line.
x3=$(sqlite3 "$PPBENCH_DB" "SELECT min(id) FROM proposals WHERE name = 'aa-smoke'")
expect_rc 0 "$PPB" report --proposal "$x3" -o "$WORK/x3-report"
grep -Eq 'id="headline"[^>]*>REJECT: the weighted geometric mean over [0-9]+ cases?' "$WORK/x3-report/index.html" \
  || fail "the x3 report's headline is not the decision"
grep -q '<dt>change</dt><dd>none: both sides run the same configuration (an A/A)</dd>' "$WORK/x3-report/index.html" \
  || fail "the A/A report does not say there is no change"

# Verdict documents CI reads: JSON (schema ppbench-verdict/1) and Markdown, the same verdict and exit code.
set +e; "$PPB" propose "$P/ab-smoke.yaml" --json - --markdown "$WORK/v.md" >"$WORK/v.json" 2>"$WORK/err"; rc=$?; set -e
"$PY" - "$WORK/v.json" "$WORK/v.md" "$rc" <<'PY' || fail "verdict documents"
import json, sys
doc = json.load(open(sys.argv[1]))          # stdout holds the document alone
md = open(sys.argv[2]).read()
rc = int(sys.argv[3])
assert doc["schema"] == "ppbench-verdict/1", doc["schema"]
assert doc["command"] == "propose" and doc["exit_code"] == rc, (doc["command"], doc["exit_code"], rc)
assert {"ACCEPT": 0, "REJECT": 10, "INCONCLUSIVE": 11}[doc["verdict"]] == rc
assert doc["baseline_run"] > 0 and doc["candidate_run"] > doc["baseline_run"]
assert doc["rules"] == {"min_gain": 0, "max_regression": 0.5, "threshold": 0.01}, doc["rules"]   # ab-smoke.yaml's
assert len(doc["cases"]) == 11 and all(c["state"] for c in doc["cases"]), len(doc["cases"])
assert doc["reasons"] and all(r.strip() for r in doc["reasons"])
m = doc["measured"]   # what was measured: a CPU job's verdict never reads like a GPU's
assert m["backend"] == "cpu" and m["cpu_timings"] is True and m["device"] and len(m["git_commit"]) >= 7, m
assert isinstance(m["load_average"], float) and m["load_average"] >= 0 and m["cpu_cores"] >= 1, m
assert m["load_warning"] is (m["load_average"] > m["cpu_cores"]), m   # measured.c's rule
assert m["notes"][0].startswith("CPU backend on ") and len(m["notes"]) == 1 + m["load_warning"], m["notes"]
assert m["device_details"]["cpu_timings"] is True and m["device_details"]["name"] == m["device"], m
assert "Measured on the cpu backend" in md and "**CPU timings**" in md, md[:400]
assert ("\n**Note:** the load average was" in md) is m["load_warning"], md
# What the run could have seen: a figure in the JSON, the same in the Markdown and the reasons.
d = doc["detectable_effect"]
assert isinstance(d, float) and 0 < d < 10, d
assert "This run could see a change of the mean of %.1f%% or more (80%% power)" % (100 * d) in md, md
assert any(r.startswith("note: this run could see a change of the weighted mean of %.1f%%" % (100 * d)) for r in doc["reasons"]), doc["reasons"]
# Each compared case says what it could see, in the JSON and in the Markdown's column.
compared = [c for c in doc["cases"] if c["state"] == "compared"]
assert compared and all(isinstance(c["detectable_effect"], float) and c["detectable_effect"] > 0 for c in compared), compared
assert "| interval | could see | candidate case |" in md, md
# What the verdict cost: phases that add up to at most the wall time, the samples' kernel time within
# sampling, a fixed design of at least 4 samples a side; the Markdown says the same.
c = doc["cost"]
phases = c["setup_ms"] + c["inputs_ms"] + c["check_ms"] + c["warmup_ms"] + c["sampling_ms"]
assert 0 < phases <= c["wall_ms"] and 0 < c["kernel_ms"] <= c["sampling_ms"], c
assert c["fixed_samples"] >= 4 and c["fixed_kernel_ms"] > 0, c
assert "Cost: wall %.1f s = setup" % (c["wall_ms"] / 1e3) in md, md
assert md.startswith("### ppbench: %s: ab-smoke" % doc["verdict"]), md[:80]
assert md.count("\n| compared |") + md.count("\n| wrong |") == 11, md
# Markdown escapes prose (HTML's < > &, Markdown's punctuation); read back, it is the reason itself.
import html, re
plain = html.unescape(re.sub(r"\\([\\`*_\[\]()#!|~])", r"\1", md))
assert all("- " + r in plain for r in doc["reasons"]), (doc["reasons"], md)
PY
grep -q "^verdict: " "$WORK/err" || fail "with --json -, the human output did not go to stderr"
grep -q "^state  *class  *time ratio cand/base \[CI\]  *sees>= candidate case" "$WORK/err" || fail "the case table has no sees>= column"
grep -q "^cost: wall [0-9.]* s = setup .* a fixed-sample design at the same resolution: [0-9]* samples a side" "$WORK/err" \
  || fail "propose does not say what the verdict cost"
# The report states the change the proposal judges.
ab=$(sqlite3 "$PPBENCH_DB" "SELECT max(id) FROM proposals WHERE name = 'ab-smoke'")
expect_rc 0 "$PPB" report --proposal "$ab" -o "$WORK/ab-report"
grep -q '<dt>change</dt><dd>bm: 16 -&gt; 32, bn: 32 -&gt; 16</dd>' "$WORK/ab-report/index.html" \
  || fail "the report does not state the change"
grep -q '<dt>cost</dt><dd>wall [0-9.]* s = setup .*a fixed-sample design at the same resolution' "$WORK/ab-report/index.html" \
  || fail "the report does not say what the verdict cost"
# One effect, one wording: the page says the mean as the verdict does ("x% faster [a%, b%]").
! grep -q "faster by\|slower by" "$WORK/ab-report/index.html" || fail "the report words an effect a second way"

# A proposal name cannot inject HTML or Markdown into a PR comment.
sed -e 's/^name: .*/name: "<img src=x onerror=alert(1)> [x](javascript:y)"/' -e "s#^suite: .*#suite: $SRC/suites/smoke.yaml#" \
  "$P/ab-smoke.yaml" >"$WORK/inject.yaml"
set +e; "$PPB" propose "$WORK/inject.yaml" --markdown "$WORK/inject.md" >/dev/null 2>&1; set -e
grep -qF '&lt;img src=x onerror=alert\(1\)&gt; \[x\]\(javascript:y\)' "$WORK/inject.md" || fail "name not escaped: $(head -1 "$WORK/inject.md")"
! grep -q "<img" "$WORK/inject.md" || fail "raw HTML in the Markdown verdict"

# A bad proposal: one line with file:line:column and the field.
printf 'name: x\nsuite: %s/suites/smoke.yaml\nbaseline: {block_m: 7}\ncandidate: {num_warps: 4}\n' "$SRC" > "$WORK/bad.yaml"
expect_rc 3 "$PPB" propose "$WORK/bad.yaml"
grep -q "bad.yaml:[0-9]*:[0-9]*: " "$WORK/err" || { cat "$WORK/err"; fail "no position in the error"; }

# compare: two runs of the same suite; refused across devices unless overridden.
"$PPB" run "$SRC/suites/smoke.yaml" --filter "dtype=bf16,head_dim=64" --no-progress >/dev/null 2>&1
"$PPB" run "$SRC/suites/smoke.yaml" --filter "dtype=bf16,head_dim=64" --no-progress >/dev/null 2>&1
a=$("$PPB" list | awk 'NR==3 {print $1}'); b=$("$PPB" list | awk 'NR==2 {print $1}')
set +e; "$PPB" compare "$a" "$b" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "compare exited $rc";; esac
grep -q "^verdict: " "$WORK/out" || fail "compare printed no verdict"
# Issue 36: two runs and no history: one line for the cases not judged (not one each), and what to do.
[ "$rc" -eq 11 ] || fail "compare without history exited $rc, expected 11"
[ "$(grep -c "fewer than 5 plain runs of history" "$WORK/out")" = 1 ] || { cat "$WORK/out"; fail "identical lines per case"; }
grep -q "^INCONCLUSIVE: [0-9]* cases (the first: '.*') each has fewer than 5 plain runs of history" "$WORK/out" || fail "no summed line"
grep -q "too few runs to judge: .* at least 5 earlier plain runs of the suite .* run \`ppbench run\` of suite smoke 5 more times" "$WORK/err" \
  || { cat "$WORK/err"; fail "compare says not what it needs"; }
set +e; "$PPB" compare "$a" "$b" --json "$WORK/c.json" >/dev/null 2>&1; crc=$?; set -e
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['command']=='compare' and d['exit_code']==int(sys.argv[2]) and d['cases'] and d['cost'] is None, d" \
  "$WORK/c.json" "$crc" || fail "compare --json"
sqlite3 "$PPBENCH_DB" "UPDATE env SET value='Other GPU' WHERE run_id=$b AND key='device.name'"
expect_rc 3 "$PPB" compare "$a" "$b"
grep -q "differ in device.name" "$WORK/err" || fail "different devices not refused"
set +e; "$PPB" compare "$a" "$b" --allow-different-devices >/dev/null 2>&1; rc=$?; set -e
case $rc in 0|10|11) ;; *) fail "compare --allow-different-devices exited $rc";; esac

# trend: eight nightly runs of a small suite, medians rewritten to a known
# history: flat, then a sustained +30% step from run 6 on -> regression named
# at run 6; then a single slow night -> outlier, not a regression.
T="$WORK/trend.db"
for i in $(seq 1 8); do
  "$PPB" run "$SRC/suites/smoke.yaml" --db "$T" --filter "dtype=bf16,head_dim=64,batch=1,page_size=16,sliding_window=0" --no-progress >/dev/null 2>&1
done
sqlite3 "$T" "UPDATE results SET row_check = NULL, median_ms = 1.0 + 0.001 * (run_id % 3) WHERE run_id <= 5;
              UPDATE results SET row_check = NULL, median_ms = 1.3 + 0.001 * (run_id % 3) WHERE run_id > 5;"
expect_rc 12 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$T"
grep -q "^regression" "$WORK/out" || fail "step not reported as a regression"
grep -qE "^regression +\+30\.[0-9]%.* 6 " "$WORK/out" || { cat "$WORK/out"; fail "first run of the step not named as run 6"; }
grep -qE "^regression +\+30\.[0-9]%.* 6 +prefix_prefill: [0-9]+ cases pooled$" "$WORK/out" \
  || { cat "$WORK/out"; fail "the kernel's cases pooled: no regression named at run 6"; }
# The same verdict as documents for CI (schema ppbench-trend/1), the table on stderr with '-'.
expect_rc 12 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$T" --json - --markdown "$WORK/t.md"
"$PY" - "$WORK/out" "$WORK/t.md" <<'PY' || fail "trend documents"
import json, sys
doc = json.load(open(sys.argv[1]))
md = open(sys.argv[2]).read()
assert doc["schema"] == "ppbench-trend/1" and doc["exit_code"] == 12 and doc["latest_run"] == 8, doc
assert doc["verdict"] == "REGRESSION", doc["verdict"]
reg = [c for c in doc["cases"] if c["status"] == "regression"]
assert reg and doc["counts"]["regression"] == len(reg) and all(c["step_run"] == "6" for c in reg), reg
assert all(abs(c["change"] - 0.30) < 0.01 for c in reg), [c["change"] for c in reg]
assert sum(doc["counts"].values()) == len(doc["cases"])
assert md.startswith("### ppbench trend: smoke: REGRESSION"), md[:60]
# The kernel's cases pooled night by night (each against its own level) step as one, named at run 6.
pooled = doc["pooled"]
assert [p["group"] for p in pooled] == ["prefix_prefill"] and pooled[0]["cases"] == len(doc["cases"]), pooled
assert pooled[0]["status"] == "regression" and pooled[0]["step_run"] == "6", pooled
assert abs(pooled[0]["change"] - 0.30) < 0.01 and pooled[0]["detectable_effect"] > 0, pooled
assert md.count("\n| regression |") == len(reg) + 1 and "| prefix_prefill, %d cases |" % len(reg) in md, md
PY
grep -q "^regression" "$WORK/err" || fail "with --json -, the table did not go to stderr"
# Issue 36: a latest night on a machine loaded beyond its cores is said to be disturbed in the documents CI
# reads, as on the pages (one rule: harness/publish/measured.c), and so is that run's own document.
sqlite3 "$T" "UPDATE env SET value = '6.85 4.10 3.00' WHERE key = 'after.loadavg' AND run_id = 8;
              UPDATE env SET value = '2' WHERE key = 'after.cpu_cores' AND run_id = 8"
expect_rc 12 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$T" --json "$WORK/tl.json" --markdown "$WORK/tl.md"
grep -q "^note: the load average was 6.85 on 2 cores when run 8 ended: its timings were disturbed" "$WORK/out" \
  || { cat "$WORK/out"; fail "trend's terminal output does not say the latest night was loaded"; }
expect_rc 0 "$PPB" show 8 --db "$T" --json "$WORK/rl.json"
"$PY" - "$WORK/tl.json" "$WORK/tl.md" "$WORK/rl.json" <<'PY' || fail "a loaded night's documents"
import json, sys
trend, md, run = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
warning = "the load average was 6.85 on 2 cores when run 8 ended: its timings were disturbed"
for m in (trend["measured"], run["measured"]):
    assert m["run"] == 8 and m["load_average"] == 6.85 and m["cpu_cores"] == 2 and m["load_warning"] is True, m
    assert m["cpu_timings"] is True and any(n.startswith("CPU backend on ") for n in m["notes"]), m["notes"]
    assert any(n.startswith(warning) for n in m["notes"]), m["notes"]
assert "\n**Note:** " + warning in md, md
PY
sqlite3 "$T" "UPDATE results SET row_check = NULL, median_ms = 1.0 + 0.001 * (run_id % 3) WHERE run_id < 8;
              UPDATE results SET row_check = NULL, median_ms = 2.0 WHERE run_id = 8;"
expect_rc 0 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$T"
grep -q "^outlier" "$WORK/out" || { cat "$WORK/out"; fail "one slow night not reported as an outlier"; }
# Issue 36: a case the latest night did not time is not-timed (its history's last time is an earlier
# night's, not tonight's); a night that timed no case is not a pass: exit 1, said why, verdict NOT TIMED.
cp "$T" "$WORK/untimed.db"
sqlite3 "$WORK/untimed.db" "UPDATE results SET status = 'refused', reason = 'too large for the test', median_ms = NULL
                            WHERE run_id = 8 AND id = (SELECT min(id) FROM results WHERE run_id = 8)"
expect_rc 0 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$WORK/untimed.db"
[ "$(grep -c "^not-timed " "$WORK/out")" = 1 ] || { cat "$WORK/out"; fail "one untimed case not reported not-timed"; }
grep -q ", 1 not timed$" "$WORK/out" || fail "no not-timed count"
sqlite3 "$WORK/untimed.db" "UPDATE results SET status = 'refused', reason = 'too large for the test', median_ms = NULL WHERE run_id = 8"
expect_rc 1 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$WORK/untimed.db" --json "$WORK/nt.json" --markdown "$WORK/nt.md"
grep -q "ppbench trend: the latest run 8 of suite smoke timed no case (.* not timed): nothing to follow, not a pass (the first case: .*refused: too large for the test)" "$WORK/err" \
  || { cat "$WORK/err"; fail "an untimed night is not said to be no pass"; }
"$PY" - "$WORK/nt.json" "$WORK/nt.md" <<'PY' || fail "untimed night's documents"
import json, sys
doc = json.load(open(sys.argv[1]))
md = open(sys.argv[2]).read()
assert doc["verdict"] == "NOT TIMED" and doc["exit_code"] == 1, (doc["verdict"], doc["exit_code"])
assert doc["counts"]["not-timed"] == len(doc["cases"]) > 0, doc["counts"]
assert all(c["status"] == "not-timed" and c["change"] is None for c in doc["cases"])
assert md.startswith("### ppbench trend: smoke: NOT TIMED"), md[:60]
PY
# Baselines from another database (issue: baselines over HTTP; file:// here,
# http in push_failures.sh's server tests): runs 1-5 live only in the baseline.
sqlite3 "$T" "UPDATE runs SET started_at = printf('2026-11-%02dT00:00:00Z', id);
              UPDATE results SET row_check = NULL, median_ms = 1.0 + 0.001 * (run_id % 3) WHERE run_id <= 5;
              UPDATE results SET row_check = NULL, median_ms = 1.3 + 0.001 * (run_id % 3) WHERE run_id > 5;"
cp "$T" "$WORK/recent.db"
sqlite3 "$WORK/recent.db" "PRAGMA foreign_keys=ON; DELETE FROM runs WHERE id <= 5;"
expect_rc 0 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$WORK/recent.db"   # 3 runs: too short a history
grep -q "insufficient" "$WORK/out" || fail "3 runs should be insufficient history"
expect_rc 12 "$PPB" trend "$SRC/suites/smoke.yaml" --db "$WORK/recent.db" --baseline-db "file://$T"
grep -qE "^regression .* 6 " "$WORK/out" || { cat "$WORK/out"; fail "baseline history not used"; }
set +e; "$PPB" compare 6 7 --db "$WORK/recent.db" --baseline-db "file://$T" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "compare --baseline-db exited $rc";; esac
echo "not a database" > "$WORK/junk.db"
expect_rc 3 "$PPB" compare 6 7 --db "$WORK/recent.db" --baseline-db "file://$WORK/junk.db"
# "latest" is the newest plain run, not a proposal's candidate run: run, then propose, then report latest.
L="$WORK/latest.db"
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --db "$L" --no-progress --filter "batch=1,dtype=bf16,head_dim=64,page_size=16"
set +e; "$PPB" propose "$P/ab-smoke.yaml" --db "$L" >/dev/null 2>&1; set -e
[ "$(sqlite3 "$L" "SELECT max(id) FROM runs")" -gt 1 ] || fail "the proposal stored no runs"
expect_rc 0 "$PPB" show latest --db "$L"
grep -q "^run 1: smoke" "$WORK/out" || { head -3 "$WORK/out"; fail "'latest' is not the plain run"; }
set +e; "$PPB" propose "$P/ab-smoke.yaml" --db "$WORK/only-proposal.db" >/dev/null 2>&1; set -e
expect_rc 3 "$PPB" show latest --db "$WORK/only-proposal.db"   # a proposal's runs only: no plain run
grep -q "no plain run for 'latest'" "$WORK/err" || fail "latest without a plain run: $(cat "$WORK/err")"
# Issue 36: compare over a history whose medians jump by 10^6 from run to run gives intervals spanning many
# orders of magnitude; no number a person reads -- terminal, Markdown, the page's reasons -- may run past 12 digits
# (once 100-230), and the reasons end whole.
W="$WORK/wide.db"
for i in $(seq 1 8); do
  "$PPB" run "$SRC/suites/smoke.yaml" --db "$W" --filter "dtype=bf16,head_dim=64,batch=1,page_size=16,sliding_window=0" --no-progress >/dev/null 2>&1
done
sqlite3 "$W" "UPDATE results SET row_check = NULL, median_ms = CASE run_id % 2 WHEN 0 THEN 1e-3 ELSE 1e3 END * (1 + id % 7)"
set +e; "$PPB" compare 7 8 --db "$W" --markdown "$WORK/wide.md" >"$WORK/wide.out" 2>&1; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/wide.out"; fail "compare over the jumpy history exited $rc";; esac
grep -q "could not see even a 2x change of the weighted mean" "$WORK/wide.out" || { cat "$WORK/wide.out"; fail "no 'could not see'"; }
expect_rc 0 "$PPB" report --proposal latest --db "$W" -o "$WORK/wide-report"
sed -n '/<h2[^>]*>Verdict and reasons/,/<\/ul>/p' "$WORK/wide-report/index.html" | sed 's/<[^>]*>//g' >"$WORK/wide.html.txt"
[ -s "$WORK/wide.html.txt" ] || fail "the page's reasons were not found"
for f in "$WORK/wide.out" "$WORK/wide.md" "$WORK/wide.html.txt"; do
  ! grep -Eq '[0-9]{13,}' "$f" || { grep -Eo '.{30}[0-9]{13,}.{10}' "$f" | head -3; fail "a number of 13+ digits in $f"; }
done
echo "propose: ok"
