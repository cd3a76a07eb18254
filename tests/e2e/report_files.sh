#!/usr/bin/env bash
# What `report -o` and `dump -o` write, and only that: never through a link
# planted where an output goes, never into a folder of someone else's files.
# Each planted link's target and each foreign file must be unchanged after.
source "$(dirname "$0")/lib.bash"
export PPBENCH_GNUPLOT=   # charts are not the point here
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --db "$WORK/r.db" --filter 'dtype=fp16,query_len=17'
echo "precious" >"$WORK/precious.txt"
unchanged() { [ "$(cat "$WORK/precious.txt")" = "precious" ] || fail "$1: the link's target was written"; }

# A folder holding files ppbench did not write is refused, left as it was.
mkdir -p "$WORK/foreign" && echo "mine" >"$WORK/foreign/notes.txt"
expect_rc 3 "$PPB" report 1 --db "$WORK/r.db" -o "$WORK/foreign"
grep -q "holds no earlier ppbench report" "$WORK/err" || fail "foreign folder: $(cat "$WORK/err")"
[ "$(ls "$WORK/foreign")" = "notes.txt" ] || fail "the foreign folder was written to"

# A new folder: the report and its mark; then again over it, with links planted.
expect_rc 0 "$PPB" report 1 --db "$WORK/r.db" -o "$WORK/rep"
[ -f "$WORK/rep/index.html" ] && [ -f "$WORK/rep/.ppbench-report" ] || fail "no report or mark"
# the run's facts say where its time went (issue 16: overhead is a number users see)
grep -q "<dt>time</dt><dd>wall [0-9.]* s = device [0-9.]* + inputs [0-9.]* + check [0-9.]* + warm-up [0-9.]* + sampling [0-9.]* + store [0-9.]* + other -\?[0-9.]* s; kernels [0-9.]* s (overhead [0-9]*%, [0-9]*% without the device&#39;s start)</dd>" \
  "$WORK/rep/index.html" || fail "report: no time fact"
ln -s "$WORK/precious.txt" "$WORK/rep/index.html.tmp"
ln -s "$WORK/precious.txt" "$WORK/rep/charts/old.png"
expect_rc 0 "$PPB" report 1 --db "$WORK/r.db" -o "$WORK/rep"
unchanged "index.html.tmp"
[ ! -L "$WORK/rep/charts/old.png" ] || fail "the old chart link was kept"
unchanged "charts/old.png"

# charts/ as a link to another folder: refused, that folder untouched.
mkdir -p "$WORK/elsewhere" && echo "keep" >"$WORK/elsewhere/a.png"
expect_rc 0 "$PPB" report 1 --db "$WORK/r.db" -o "$WORK/rep2"
rm -rf "$WORK/rep2/charts" && ln -s "$WORK/elsewhere" "$WORK/rep2/charts"
expect_rc 4 "$PPB" report 1 --db "$WORK/r.db" -o "$WORK/rep2"
grep -q "symbolic link" "$WORK/err" || fail "charts link: $(cat "$WORK/err")"
[ "$(cat "$WORK/elsewhere/a.png")" = "keep" ] || fail "a file behind the charts link was touched"

# dump: a link planted at an output name is refused, its target unchanged.
key=$("$PPB" list "$SRC/suites/smoke.yaml" --filter 'dtype=fp16,query_len=17' | head -1)
mkdir -p "$WORK/d" && ln -s "$WORK/precious.txt" "$WORK/d/q.npy"
set +e; "$PPB" dump 1 "$key" --db "$WORK/r.db" -o "$WORK/d" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "dump wrote through a link"
grep -q "symbolic link" "$WORK/err" || fail "dump: $(cat "$WORK/err")"
unchanged "dump q.npy"
# A run that timed nothing (every case refused: too large for the CPU backend) is not a PASS: the
# report says NOT TIMED and exits 1, as the run did.
set +e; "$PPB" run "$SRC/suites/prefill.yaml" --backend cpu --no-progress --db "$WORK/none.db" \
  --filter 'query_len=8192,context_len=90112' >/dev/null 2>&1; rc=$?; set -e
[ "$rc" = 1 ] || fail "a run that timed nothing exited $rc"
expect_rc 1 "$PPB" report latest --db "$WORK/none.db" -o "$WORK/none-report"
grep -q '<span class="verdict" id="verdict">NOT TIMED</span>' "$WORK/none-report/index.html" || fail "report: no NOT TIMED banner"
! grep -q '>PASS<' "$WORK/none-report/index.html" || fail "report: PASS for a run that timed nothing"
echo "report_files: ok"
