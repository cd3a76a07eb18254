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

# compare of separate runs on two implementations (a release against another, a plugin against the built-in
# kernels): plain runs of work0 and of work50, the latest of each compared. No key is in both, so the cases are
# paired by shape and config, each judged against both implementations' own run-to-run noise (5 plain runs of
# each); never ACCEPTed, and re-derivable from the store. (One run's median on this loaded CPU can be 1.1x where
# the work is 1.5x: the ratio is the noise study's to measure, not this test's.)
export PPBENCH_DB="$WORK/c.db"
for _ in 1 2 3 4 5 6; do
  for n in 0 50; do
    "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --impl "plugin:example-cpu-work$n" --plugin "$PLUG" \
      --filter "dtype=bf16,head_dim=64,page_size=16,batch=2,block_m=16,block_n=32,context_len=37,ragged=false" \
      --no-progress >/dev/null 2>>"$WORK/runs.err" || { cat "$WORK/runs.err"; fail "run of work$n failed"; }
  done
done
set +e; "$PPB" compare 11 12 >"$WORK/out" 2>"$WORK/err"; crc=$?; set -e
{ [ "$crc" -eq 10 ] || [ "$crc" -eq 11 ]; } && grep -q "two implementations: run 11's cases on plugin:example-cpu-work0 against run 12's on plugin:example-cpu-work50" "$WORK/err" \
  || { cat "$WORK/out" "$WORK/err"; fail "compare of work0 and work50 runs: exit $crc"; }
cratio=$(sqlite3 "$PPBENCH_DB" "SELECT geomean_ratio FROM proposals ORDER BY id DESC LIMIT 1")
split=$(sqlite3 "$PPBENCH_DB" "SELECT min(history_split) || ' ' || max(history) FROM proposal_cases")
[ "$split" = "5 10" ] || { cat "$WORK/out"; fail "compare of work0 and work50: history split/size $split (want 5 10)"; }
"$PPB" verdict --recompute latest >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "the two-implementation compare does not recompute"; }

# scripts/noise-study.sh's work, compare-work and recompute steps (what the GPU run's noise step drives with
# vllm-cuda-work): one proposal each way round, counted from its database; 3 runs of each build, compared
# alternately (5 comparisons, too little history to judge: no ACCEPT or REJECT); every stored verdict
# recomputed; a build that does not exist stops it, naming the library.
study() { env PPB="$PPB" PLUGINS="$PLUG" LOAD=0 WORK_PROPOSALS=1 RUNS=3 "$@" "$SRC/scripts/noise-study.sh" "$WORK/study" \
            work compare-work recompute; }
study WORK_PERCENT=50 >"$WORK/study.out" 2>&1 || { cat "$WORK/study.out"; fail "noise-study work exited $?"; }
sum=$WORK/study/summary.txt
grep -q "^real work, candidate 50% slower (example-cpu-work50 on that side): 1 of 1 REJECT" "$sum" \
  && grep -q "^real work, candidate 50% faster (example-cpu-work50 on that side): 1 of 1 ACCEPT" "$sum" \
  || { cat "$sum"; fail "noise-study work: 50% not found each way round"; }
grep -q "^compare of separate runs, real work: candidate 50% slower (example-cpu-work50 on that side), 3 comparisons: 0 ACCEPT, 0 REJECT, 3 INCONCLUSIVE" "$sum" \
  && grep -q "^compare of separate runs, real work: candidate 50% faster .*, 2 comparisons: 0 ACCEPT, 0 REJECT, 2 INCONCLUSIVE" "$sum" \
  && grep -q "^verdict --recompute of the study's 7 stored verdicts: 7 agree, 0 differ" "$sum" \
  || { cat "$sum"; fail "noise-study compare-work / recompute"; }
# Its independent step says the A/A tally as it goes (TALLY_EVERY), so a study cut by a time limit keeps a count.
one_case="dtype=bf16,head_dim=64,page_size=16,batch=2,block_m=16,block_n=32,context_len=37,ragged=false"
env PPB="$PPB" LOAD=0 PROPOSALS=2 TALLY_EVERY=1 KNOWN=0 FILTER="$one_case" "$SRC/scripts/noise-study.sh" "$WORK/aa" \
  independent >"$WORK/aa.out" 2>&1 || { cat "$WORK/aa.out"; fail "noise-study independent exited $?"; }
aa_sum=$WORK/aa/summary.txt
grep -q "^independent A/A (so far, 1 of 2 run): 1 separate propose processes stored, 2 pairs: " "$aa_sum" \
  && grep -Eq "^independent A/A: 2 separate propose processes stored, 4 pairs: .*verdicts [0-9]+ ACCEPT, [0-9]+ REJECT$" "$aa_sum" \
  && grep -q "^independent +3%: 0 separate propose processes (candidate times x1.03): 0 of 0 REJECT" "$aa_sum" \
  || { cat "$aa_sum"; fail "noise-study independent: the running and final A/A tallies"; }
set +e; study WORK_PERCENT=7 >"$WORK/study.out" 2>&1; src=$?; set -e
[ $src -eq 2 ] && grep -q "noise-study: no $PLUG/libppbk_example_cpu_work7.so" "$WORK/study.out" \
  || { cat "$WORK/study.out"; fail "noise-study work without a work7 build: exit $src"; }
echo "ok: 50% more work measured x$ratio and rejected, x$cratio by compare of separate runs; its A/A exit $rc; noise-study's work, compare-work, recompute and independent steps"
