#!/usr/bin/env bash
# A known effect of real work (issue 37, item 7): the example plugin against its
# build that adds 50% of each launch's own CPU time in extra arithmetic
# (tests/plugin/CMakeLists.txt, example-cpu-workN). The proposal must see it: a
# weighted mean between 1.25x and 2x slower and a REJECT; and the A/A partner
# (work0 against itself) must find no difference: INCONCLUSIVE, neither ACCEPT nor REJECT.
source "$(dirname "$0")/lib.bash"
PLUG=$(dirname "$PPB")/tests/plugins
for n in 0 50; do
  [ -f "$PLUG/libppbk_example_cpu_work$n.so" ] || fail "libppbk_example_cpu_work$n.so was not built in $PLUG"
done
export PPBENCH_DB="$WORK/k.db"
proposal=$SRC/tests/data/proposals/known-effect-work.yaml

set +e; "$PPB" propose "$proposal" --plugin "$PLUG" --backend cpu >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -eq 10 ] || { cat "$WORK/out" "$WORK/err"; fail "50% more work: exit $rc, expected 10 (REJECT)"; }
ratio=$(sqlite3 "$PPBENCH_DB" "SELECT geomean_ratio FROM proposals ORDER BY id DESC LIMIT 1")
awk -v r="$ratio" 'BEGIN { exit !(r >= 1.25 && r <= 2.0) }' \
  || { cat "$WORK/out"; fail "50% more work measured as a ratio of $ratio"; }

# The A/A partner: the same build on both sides, no ACCEPT or REJECT.
sed 's/example-cpu-work50/example-cpu-work0/; s/^name: .*/name: known-effect-work-aa/' "$proposal" >"$WORK/aa.yaml"
sed -i "s#^suite: .*#suite: $SRC/suites/smoke.yaml#" "$WORK/aa.yaml"
set +e; "$PPB" propose "$WORK/aa.yaml" --plugin "$PLUG" --backend cpu >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -eq 11 ] || { cat "$WORK/out" "$WORK/err"; fail "A/A of the work0 build: exit $rc, expected 11 (INCONCLUSIVE: no difference)"; }

# scripts/noise-study.sh's work step (what the GPU run's noise step drives with vllm-cuda-work): one proposal each
# way round, counted from its database; a build that does not exist stops it, naming the library.
study() { env PPB="$PPB" PLUGINS="$PLUG" LOAD=0 WORK_PROPOSALS=1 "$@" "$SRC/scripts/noise-study.sh" "$WORK/study" work; }
study WORK_PERCENT=50 >"$WORK/study.out" 2>&1 || { cat "$WORK/study.out"; fail "noise-study work exited $?"; }
grep -q "^real work, candidate 50% slower (example-cpu-work50 on that side): 1 of 1 REJECT" "$WORK/study/summary.txt" \
  && grep -q "^real work, candidate 50% faster (example-cpu-work50 on that side): 1 of 1 ACCEPT" "$WORK/study/summary.txt" \
  || { cat "$WORK/study/summary.txt"; fail "noise-study work: 50% not found each way round"; }
set +e; study WORK_PERCENT=7 >"$WORK/study.out" 2>&1; src=$?; set -e
[ $src -eq 2 ] && grep -q "noise-study: no $PLUG/libppbk_example_cpu_work7.so" "$WORK/study.out" \
  || { cat "$WORK/study.out"; fail "noise-study work without a work7 build: exit $src"; }
echo "ok: 50% more work measured x$ratio and rejected; its A/A exit $rc; noise-study's work step each way round"
