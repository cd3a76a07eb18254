#!/usr/bin/env bash
# ppbench report, end to end and in a real browser: run the CPU smoke suite
# (with a hostile label, against bi-v100), check the command line and the
# terminal summary, write the report with and without gnuplot and a trend
# report over a few more runs, then open them in headless Chromium: the DOM as
# Chromium parsed it (--dump-dom), and a DevTools check of the verdict, every
# case row, every chart laid out and drawn, no script, no console error, with
# full-page screenshots kept under the build folder
# (BUILD/e2e-artifacts/report_browser/). Exit 77 (CTest: skipped) only when
# Chromium is not installed, after the checks that need no browser.
source "$(dirname "$0")/lib.bash"
ART="$(dirname "$PPB")/e2e-artifacts/report_browser"
rm -rf "$ART"
mkdir -p "$ART"

export PPBENCH_DB="$WORK/p.db"
LABEL='<script>alert(1)</script>"><img src=x onerror=alert(2)>'
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --target bi-v100 --no-progress --label "$LABEL"
"$PPB" list "$SRC/suites/smoke.yaml" > "$WORK/keys.txt"
n_cases=$(wc -l < "$WORK/keys.txt")

# The command line.
expect_rc 2 "$PPB" report
expect_rc 2 "$PPB" report 1 --proposal 1
expect_rc 2 "$PPB" report --trend smoke --since yesterday
expect_rc 2 "$PPB" report 1 --window 5
expect_rc 3 "$PPB" report 999 -o "$WORK/none"
[ ! -e "$WORK/none/index.html" ] || fail "a report was written for a run that does not exist"
expect_rc 3 "$PPB" report --proposal latest -o "$WORK/none"
expect_rc 3 "$PPB" report --trend no-such-suite -o "$WORK/none"
expect_rc 0 "$PPB" report --help

# With gnuplot: the terminal summary says where, what and which cases.
expect_rc 0 "$PPB" report latest -o "$WORK/report"
grep -q "^  verdict  PASS$" "$WORK/out" || fail "summary has no verdict: $(cat "$WORK/out")"
grep -q "^  report   $WORK/report/index.html$" "$WORK/out" || fail "summary does not say where the report is"
grep -q "^worst cases (" "$WORK/out" || fail "summary lists no worst cases"
grep -q "drawn (PNG, .gp and .dat in $WORK/report/charts)" "$WORK/out" || fail "summary does not count the charts: $(cat "$WORK/out")"
n_png=$(ls "$WORK/report/charts/"*.png | wc -l)
[ "$n_png" -gt 3 ] || fail "only $n_png PNG charts"
[ "$(ls "$WORK/report/charts/"*.gp | wc -l)" -eq $((n_png + 1)) ] || fail "every chart needs its .gp (plus style.gp)"
[ "$(ls "$WORK/report/charts/"*.dat | wc -l)" -eq "$n_png" ] || fail "every chart needs its .dat"
grep -q "ppbench report 1 --db $WORK/p.db -o $WORK/report" "$WORK/report/index.html" \
  || fail "the page does not hold the command that reproduces it"

# Without gnuplot: still written, says so, keeps every table.
PPBENCH_GNUPLOT=/nonexistent/gnuplot expect_rc 0 "$PPB" report latest -o "$WORK/report-nogp"
grep -q "gnuplot not found" "$WORK/err" || fail "no warning about the missing gnuplot"
grep -q "charts   none drawn" "$WORK/out" || fail "summary claims charts without gnuplot"

# A trend over six runs of nine cases (CPU timings: any verdict but NO HISTORY).
for i in 1 2 3 4 5; do
  expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --filter "batch=1,dtype=bf16,query_len=17"
done
"$PPB" list "$SRC/suites/smoke.yaml" --filter "batch=1,dtype=bf16,query_len=17" > "$WORK/trend-keys.txt"
expect_rc 0 "$PPB" report --trend "$SRC/suites/smoke.yaml" -o "$WORK/trend"
grep -q "^  9 cases in the trend$" "$WORK/out" || fail "trend summary: $(cat "$WORK/out")"
grep -q "note: CPU backend on .*: these are CPU timings" "$WORK/trend/index.html" || fail "trend: CPU timings not said"
# A night on a machine loaded beyond its cores is said to be disturbed.
sqlite3 "$PPBENCH_DB" "UPDATE env SET value = '6.85 4.10 3.00' WHERE key = 'after.loadavg' AND run_id = (SELECT max(id) FROM runs);
  UPDATE env SET value = '2' WHERE key = 'after.cpu_cores' AND run_id = (SELECT max(id) FROM runs)"
expect_rc 0 "$PPB" report --trend "$SRC/suites/smoke.yaml" -o "$WORK/trend-loaded"
grep -q "note: the load average was 6.85 on 2 cores when run [0-9]* ended: its timings were disturbed" \
  "$WORK/trend-loaded/index.html" || fail "trend: a loaded night not said"
# ... and on that run's own page: one rule for every page (report.c's measurement notes).
expect_rc 0 "$PPB" report latest -o "$WORK/run-loaded"
grep -q "note: the load average was 6.85 on 2 cores when run [0-9]* ended: its timings were disturbed" \
  "$WORK/run-loaded/index.html" || fail "run page: a loaded run not said"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (Debian: apt-get install chromium; listed in scripts/debian-packages-test.txt)"
  exit 77
fi

# The DOM as Chromium parsed it (the page's own scripts would have run by now:
# there must be none, and the hostile label must be text).
timeout 60 "$CHROMIUM" --headless --disable-gpu --no-sandbox --no-first-run \
  --user-data-dir="$WORK/chromium-dump" --dump-dom "file://$WORK/report/index.html" \
  > "$WORK/dom.html" 2> "$WORK/chromium.log" || fail "chromium --dump-dom failed: $(tail -5 "$WORK/chromium.log")"
grep -q 'id="verdict">PASS</span>' "$WORK/dom.html" || fail "no verdict in the DOM"
rows=$(grep -o '<tr class="case"' "$WORK/dom.html" | wc -l)
[ "$rows" -eq "$n_cases" ] || fail "$rows case rows in the DOM, $n_cases cases in the suite"
if grep -qi '<script\|<img' "$WORK/dom.html"; then fail "a label became markup"; fi
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$WORK/dom.html" || fail "the hostile label is not shown as text"
cp "$WORK/dom.html" "$ART/dom.html"

# DevTools: rendering, console, screenshots.
"$PY" - "$WORK/keys.txt" "$WORK/trend-keys.txt" "$WORK" "$ART" "$LABEL" > "$WORK/spec.json" <<'PY'
import json, sys
read = lambda p: [k.rstrip("\n") for k in open(p) if k.strip()]
keys, trend_keys = read(sys.argv[1]), read(sys.argv[2])
work, art, label = sys.argv[3], sys.argv[4], sys.argv[5]
print(json.dumps({"screenshot_dir": art, "pages": [
    {"name": "report", "path": work + "/report/index.html", "verdict": "PASS",
     "cases": keys, "charts": "all", "label": label},
    {"name": "report-no-gnuplot", "path": work + "/report-nogp/index.html", "verdict": "PASS",
     "cases": keys, "charts": "none", "label": label},
    {"name": "trend", "path": work + "/trend/index.html",
     "verdict": ["OK", "REGRESSION", "IMPROVEMENT"], "cases": trend_keys, "charts": "all",
     "label": None}]}))
PY
"$PY" "$SRC/tests/e2e/report_browser.py" "$CHROMIUM" "$WORK/spec.json" || fail "the browser check failed"
cp -r "$WORK/report" "$ART/report"
echo "report_browser: ok ($n_cases cases; screenshots in $ART)"
