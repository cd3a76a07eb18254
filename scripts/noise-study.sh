#!/usr/bin/env bash
# How honest are the verdicts on this (loaded) machine? The measurements behind
# docs/BENCHMARKS.md "Verdicts under load" (docs/STATISTICS.md has the design):
#
#   scripts/noise-study.sh OUT_DIR [STEP...]     STEPs below (default: calibrate independent compare trend)
#
#   calibrate    ppbench calibrate: A/A false flags over >= PAIRS pairs, known effects, repeatability
#   independent  the same claims measured without calibrate: PROPOSALS separate `ppbench propose`
#                processes of an A/A proposal (false flags per pair), then KNOWN separate ones with
#                the candidate's times x1.03 (share REJECTed)
#   compare      RUNS separate `ppbench run` processes of the same suite (A/A), then `ppbench compare`
#                of each later run against the one before it: the share of ACCEPT/REJECT
#   trend        `ppbench trend` over those plain nights (alerts on noise), then on copies of the database
#                whose last one and two nights have every median x1.03, x1.05 or x1.10 (a sustained step):
#                the cases' alerts and the pooled ones (each kernel's cases night by night) apart
#   work         a known effect of real work (not in the default steps: it needs plugins built in
#                pairs, PLUGINS): WORK_PROPOSALS separate proposals of plugin:WORK_IMPL0 against
#                plugin:WORK_IMPL<WORK_PERCENT>, the same plugin doing WORK_PERCENT% more work per
#                launch, each way round (candidate slower: share REJECTed; candidate faster: share
#                ACCEPTed), at the default rules and sampling budget, over WORK_FILTER's cases.
#                On the CPU the example plugin's extra arithmetic (example-cpu-work, the default); on a
#                GPU vLLM's paged attention launched again over that share of the sequences
#                (vllm-cuda-work, WORK_KNOBS="version: 2, partition_size: 512")
#   compare-work the same known effect seen by `compare` of separate runs: RUNS plain runs of each build,
#                alternating, each compared with the run of the other build before it (compare pairs the
#                two implementations' cases by shape): the share REJECTed (slower) and ACCEPTed (faster)
#   recompute    `ppbench verdict --recompute` of every verdict the study stored: how many agree
#
# Environment: PPB (the binary, default build/ppbench), BACKEND (cpu), SUITE (suites/smoke.yaml),
# FILTER (5 cases of it), KNOBS (the A/A proposal's config, both sides), RUN_SUITE (the plain runs'
# suite, for compare, trend and compare-work; default SUITE. On the CPU give it a suite that measures for
# timing, suites/cpu-nightly.yaml: smoke.yaml samples each case for 5 ms, which tells a run's medians
# apart by tens of percent on a loaded runner), RUN_FILTER (the plain runs' cases), WORK_RUN_FILTER
# (compare-work's cases of RUN_SUITE, default WORK_FILTER), PAIRS (500), PROPOSALS (100; the A/A tally is said every TALLY_EVERY = 10 of them, so a study
# cut short keeps a count), KNOWN (30), RUNS (16), LOAD (busy processes running beside
# the study, default 1), EFFECTS and EFFECT_PAIRS (calibrate's known effects). Writes OUT_DIR/summary.txt
# and the database. For `work`: PLUGINS (default build/tests/plugins), WORK_IMPL (example-cpu-work),
# WORK_PERCENT (10; libppbk_<WORK_IMPL, each - as _>N.so must exist for N = 0 and WORK_PERCENT:
# tests/plugin/CMakeLists.txt builds example-cpu-work 0 3 10 50, kernels/vllm/cuda vllm-cuda-work 0 2 3 10),
# WORK_KNOBS (both sides' config, default the example plugin's block_m 16, block_n 32, 4 warps),
# WORK_PROPOSALS (20), WORK_FILTER (2 of the study's cases).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/noise-study.sh OUT_DIR [STEP...]}
shift
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(calibrate independent compare trend)
mkdir -p "$out"
out=$(cd "$out" && pwd)
PPB=${PPB:-$root/build/ppbench}
BACKEND=${BACKEND:-cpu}
SUITE=${SUITE:-$root/suites/smoke.yaml}
RUN_SUITE=${RUN_SUITE:-$SUITE}
FILTER=${FILTER:-dtype=bf16,head_dim=64,page_size=16,batch=2,block_m=16}
KNOBS=${KNOBS:-"{block_m: 16, block_n: 32, num_warps: 4}"}
RUN_FILTER=${RUN_FILTER:-$FILTER,block_n=32}
EFFECTS=${EFFECTS:-0.01,0.02,0.03,0.05} EFFECT_PAIRS=${EFFECT_PAIRS:-100}
PAIRS=${PAIRS:-500} PROPOSALS=${PROPOSALS:-100} TALLY_EVERY=${TALLY_EVERY:-10} KNOWN=${KNOWN:-30} RUNS=${RUNS:-16} LOAD=${LOAD:-1}
PLUGINS=${PLUGINS:-$root/build/tests/plugins} WORK_PERCENT=${WORK_PERCENT:-10} WORK_PROPOSALS=${WORK_PROPOSALS:-20}
WORK_IMPL=${WORK_IMPL:-example-cpu-work} WORK_KNOBS=${WORK_KNOBS:-"block_m: 16, block_n: 32, num_warps: 4"}
WORK_FILTER=${WORK_FILTER:-$FILTER,block_n=32,context_len=37,ragged=false}
WORK_RUN_FILTER=${WORK_RUN_FILTER:-$WORK_FILTER}
db=$out/study.db
summary=$out/summary.txt

load_pids=()
stop_load() { [ ${#load_pids[@]} -gt 0 ] && kill "${load_pids[@]}" 2>/dev/null; load_pids=(); }
trap stop_load EXIT
for _ in $(seq 1 "$LOAD"); do (while :; do :; done) & load_pids+=($!); done

say() { echo "$*" | tee -a "$summary"; }
say "noise study $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
    "$(nproc) cores, $LOAD busy process(es) beside it, backend $BACKEND, suite $(basename "$SUITE") filter '$FILTER'," \
    "plain runs: $(basename "$RUN_SUITE") filter '$RUN_FILTER'"

# An A/A proposal over the filtered cases: both sides the same config.
aa=$out/aa.yaml
cat >"$aa" <<EOF
name: noise-study-aa
kind: kernel_config
suite: $SUITE
filter: "$FILTER"
baseline: $KNOBS
candidate: $KNOBS
rules: {min_gain: 0.0, max_regression: 0.10, require_correct: true, threshold: 0.01, alpha: 0.05}
EOF

# sqlite3's CLI where there is one (the GPU machine has only python3's module)
sqlf() {
  if command -v sqlite3 >/dev/null; then sqlite3 "$1" "$2"; return; fi
  python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for row in c.execute(sys.argv[2]): print("|".join("" if v is None else str(v) for v in row))
c.commit()' "$1" "$2"
}
sql() { sqlf "$db" "$1"; }
# What the proposals named $1 with id > $2 cost on average (store schema 18): the
# study's own time, so a call can be sized from the last one.
cost() {
  say "  $1: $(sql "SELECT count(*) || ' proposals, mean wall ' || printf('%.1f', avg(wall_ms) / 1000) ||
      ' s = setup ' || printf('%.1f', avg(setup_ms) / 1000) || ' + check ' || printf('%.1f', avg(check_ms) / 1000) ||
      ' + warm-up ' || printf('%.1f', avg(warmup_ms) / 1000) || ' + sampling ' || printf('%.1f', avg(sampling_ms) / 1000) ||
      ' s (kernels ' || printf('%.1f', avg(kernel_ms) / 1000) || ' s)' FROM proposals WHERE name = '$1' AND id > $2");" \
      "$((SECONDS - step_t0)) s since the step began (processes' start included)"
}
# The work and compare-work steps need both builds of WORK_IMPL.
need_work_builds() {
  for percent in 0 "$WORK_PERCENT"; do
    lib=$PLUGINS/libppbk_${WORK_IMPL//-/_}$percent.so
    [ -f "$lib" ] || { echo "noise-study: no $lib" >&2; exit 2; }
  done
}

for step in "${steps[@]}"; do
  step_t0=$SECONDS
  case $step in
  calibrate)
    "$PPB" calibrate "$SUITE" --db "$db" --backend "$BACKEND" --filter "$FILTER" --pairs "$PAIRS" \
      --effect-pairs "$EFFECT_PAIRS" --effects "$EFFECTS" >"$out/calibrate.txt" 2>"$out/calibrate.log" || true
    sed 's/^/calibrate: /' "$out/calibrate.txt" | tee -a "$summary"
    ;;
  independent)
    first=$(sql "SELECT coalesce(max(id), 0) FROM proposals" 2>/dev/null || echo 0)
    # The tally is said every TALLY_EVERY proposals as well as at the end, so a
    # study cut by a time limit (a GPU call's) still leaves its count in the summary.
    aa_tally() {
      read -r stored pairs flags accept reject < <(sql "SELECT
          (SELECT count(*) FROM proposals WHERE id > $first AND name = 'noise-study-aa'),
          (SELECT count(*) FROM proposal_cases c JOIN proposals p ON p.id = c.proposal_id
            WHERE p.id > $first AND p.name = 'noise-study-aa' AND c.state = 'compared'),
          (SELECT count(*) FROM proposal_cases c JOIN proposals p ON p.id = c.proposal_id
            WHERE p.id > $first AND p.name = 'noise-study-aa' AND c.class IN ('faster', 'slower')),
          (SELECT count(*) FROM proposals WHERE id > $first AND name = 'noise-study-aa' AND verdict = 'ACCEPT'),
          (SELECT count(*) FROM proposals WHERE id > $first AND name = 'noise-study-aa' AND verdict = 'REJECT')" |
        tr '|' ' ')
      say "independent A/A$1: $stored separate propose processes stored, $pairs pairs: $flags flagged" \
          "($(awk -v f="$flags" -v p="$pairs" 'BEGIN { printf "%.2f", p ? 100 * f / p : 0 }')%);" \
          "verdicts $accept ACCEPT, $reject REJECT"
    }
    for i in $(seq 1 "$PROPOSALS"); do
      "$PPB" propose "$aa" --db "$db" --backend "$BACKEND" >/dev/null 2>&1 || true
      if [ $((i % TALLY_EVERY)) -eq 0 ] && [ "$i" -lt "$PROPOSALS" ]; then aa_tally " (so far, $i of $PROPOSALS run)"; fi
    done
    aa_tally ""
    cost noise-study-aa "$first"
    first=$(sql "SELECT coalesce(max(id), 0) FROM proposals" 2>/dev/null || echo 0)
    for _ in $(seq 1 "$KNOWN"); do
      "$PPB" propose "$aa" --db "$db" --backend "$BACKEND" --scale-candidate 1.03 >/dev/null 2>&1 || true
    done
    read -r n rej < <(sql "SELECT count(*), coalesce(sum(verdict = 'REJECT'), 0) FROM proposals
        WHERE id > $first AND name = 'noise-study-aa'" | tr '|' ' ')
    say "independent +3%: $KNOWN separate propose processes (candidate times x1.03): $rej of $n REJECT"
    ;;
  compare)
    first=$(sql "SELECT coalesce(max(id), 0) FROM runs" 2>/dev/null || echo 0)
    for _ in $(seq 1 "$RUNS"); do
      "$PPB" run "$RUN_SUITE" --db "$db" --backend "$BACKEND" --filter "$RUN_FILTER" --no-progress \
        --label noise-study >/dev/null 2>&1 || true
    done
    mapfile -t ids < <(sql "SELECT id FROM runs WHERE id > $first AND label = 'noise-study' ORDER BY id")
    declare -A verdicts=([ACCEPT]=0 [REJECT]=0 [INCONCLUSIVE]=0)
    for ((i = 1; i < ${#ids[@]}; i++)); do
      set +e
      "$PPB" compare "${ids[i - 1]}" "${ids[i]}" --db "$db" >"$out/compare-${ids[i]}.txt" 2>&1
      rc=$?
      set -e
      case $rc in 0) verdicts[ACCEPT]=$((verdicts[ACCEPT] + 1));; 10) verdicts[REJECT]=$((verdicts[REJECT] + 1));;
                  11) verdicts[INCONCLUSIVE]=$((verdicts[INCONCLUSIVE] + 1));;
                  *) say "compare ${ids[i - 1]} ${ids[i]} exited $rc"; cat "$out/compare-${ids[i]}.txt";; esac
    done
    say "compare of separate A/A runs: ${#ids[@]} runs, $(( ${#ids[@]} - 1 )) comparisons (each run against the" \
        "one before): ${verdicts[ACCEPT]} ACCEPT, ${verdicts[REJECT]} REJECT, ${verdicts[INCONCLUSIVE]} INCONCLUSIVE"
    ;;
  trend)
    mapfile -t ids < <(sql "SELECT id FROM runs WHERE label = 'noise-study' AND kind = 'run' ORDER BY id")
    set +e
    "$PPB" trend "$RUN_SUITE" --db "$db" >"$out/trend-plain.txt" 2>&1
    rc=$?
    set -e
    # Per-case alerts, then each pooled line (status change score threshold sees>= step@ kernel: N cases pooled).
    alerts() { echo "$(grep -E "^$1 " "$2" | grep -vc 'cases pooled$' || true) case(s); pooled:" \
                    "$(grep -E 'cases pooled$' "$2" | tr -s ' ' | tr '\n' ';')"; }
    say "trend over ${#ids[@]} plain nights: exit $rc, alerts: $(alerts '(regression|improvement)' "$out/trend-plain.txt")"
    for pct in 3 5 10; do
      for nights in 1 2; do
        f=$out/step$pct-$nights
        cp "$db" "$f.db"
        last=$(IFS=,; echo "${ids[*]: -$nights}")
        sqlf "$f.db" "UPDATE results SET row_check = NULL, median_ms = median_ms * (1 + $pct / 100.0) WHERE run_id IN ($last)"
        set +e
        "$PPB" trend "$RUN_SUITE" --db "$f.db" >"$f.txt" 2>&1
        rc=$?
        set -e
        say "trend with a $pct% step in the last $nights night(s): exit $rc, regressions: $(alerts regression "$f.txt")"
      done
    done
    ;;
  work)
    need_work_builds
    for way in slower faster; do
      base=0 cand=$WORK_PERCENT want=REJECT
      [ $way = faster ] && base=$WORK_PERCENT cand=0 want=ACCEPT
      name=noise-study-work$WORK_PERCENT-$way
      cat >"$out/$name.yaml" <<EOF
name: $name
kind: kernel_config
suite: $SUITE
filter: "$WORK_FILTER"
baseline: {impl: "plugin:$WORK_IMPL$base", $WORK_KNOBS}
candidate: {impl: "plugin:$WORK_IMPL$cand", $WORK_KNOBS}
EOF
      for _ in $(seq 1 "$WORK_PROPOSALS"); do
        "$PPB" propose "$out/$name.yaml" --db "$db" --backend "$BACKEND" --plugin "$PLUGINS" >/dev/null 2>&1 || true
      done
      read -r n hit acc rej ratios < <(sql "SELECT count(*), sum(verdict = '$want'), sum(verdict = 'ACCEPT'),
          sum(verdict = 'REJECT'), group_concat(printf('%.3f', geomean_ratio), ' ') FROM proposals WHERE name = '$name'" |
        tr '|' ' ')
      say "real work, candidate $WORK_PERCENT% $way ($WORK_IMPL$WORK_PERCENT on that side): $hit of $n $want" \
          "($acc ACCEPT, $rej REJECT in all); weighted means: $ratios"
      cost "$name" 0
    done
    ;;
  compare-work)
    need_work_builds
    # RUNS plain runs of each build, alternating, then compare (paired by shape across the two
    # implementations): each work<N> run against the work0 run before it (slower: REJECT wanted) and each
    # work0 run against the work<N> run before it (faster: ACCEPT wanted).
    first=$(sql "SELECT coalesce(max(id), 0) FROM runs" 2>/dev/null || echo 0)
    for _ in $(seq 1 "$RUNS"); do
      for percent in 0 "$WORK_PERCENT"; do
        "$PPB" run "$RUN_SUITE" --db "$db" --backend "$BACKEND" --filter "$WORK_RUN_FILTER" --no-progress \
          --impl "plugin:$WORK_IMPL$percent" --plugin "$PLUGINS" --label noise-study-work >/dev/null 2>&1 || true
      done
    done
    # each run with its implementation (a run that failed leaves none: the pairs around it are skipped)
    mapfile -t ids < <(sql "SELECT id FROM runs WHERE id > $first AND label = 'noise-study-work' ORDER BY id")
    mapfile -t impls < <(sql "SELECT (SELECT min(c.impl) FROM results r JOIN cases c ON c.id = r.case_id
        WHERE r.run_id = runs.id) FROM runs WHERE id > $first AND label = 'noise-study-work' ORDER BY id")
    declare -A got=([slower]="0 0 0" [faster]="0 0 0")  # ACCEPT REJECT INCONCLUSIVE
    for ((i = 1; i < ${#ids[@]}; i++)); do
      [ -n "${impls[i]}" ] && [ -n "${impls[i - 1]}" ] && [ "${impls[i]}" != "${impls[i - 1]}" ] || continue
      way=faster; [ "${impls[i]}" = "plugin:$WORK_IMPL$WORK_PERCENT" ] && way=slower
      set +e
      "$PPB" compare "${ids[i - 1]}" "${ids[i]}" --db "$db" >"$out/compare-work-${ids[i]}.txt" 2>&1
      rc=$?
      set -e
      read -r a r n <<<"${got[$way]}"
      case $rc in 0) a=$((a + 1));; 10) r=$((r + 1));; 11) n=$((n + 1));;
                  *) say "compare ${ids[i - 1]} ${ids[i]} exited $rc"; cat "$out/compare-work-${ids[i]}.txt";; esac
      got[$way]="$a $r $n"
    done
    for way in slower faster; do
      read -r a r n <<<"${got[$way]}"
      say "compare of separate runs, real work: candidate $WORK_PERCENT% $way ($WORK_IMPL$WORK_PERCENT on that" \
          "side), $((a + r + n)) comparisons: $a ACCEPT, $r REJECT, $n INCONCLUSIVE"
    done
    ;;
  recompute)
    # every stored verdict of the study decided again from the store (`ppbench verdict --recompute`)
    agree=0 differ=0
    for id in $(sql "SELECT id FROM proposals ORDER BY id"); do
      if "$PPB" verdict --recompute "$id" --db "$db" >"$out/recompute.txt" 2>&1; then agree=$((agree + 1))
      else differ=$((differ + 1)); say "recompute $id: $(tail -n 1 "$out/recompute.txt")"; fi
    done
    say "verdict --recompute of the study's $((agree + differ)) stored verdicts: $agree agree, $differ differ"
    ;;
  *) echo "unknown step $step" >&2; exit 2;;
  esac
done
