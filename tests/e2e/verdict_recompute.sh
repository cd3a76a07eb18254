#!/usr/bin/env bash
# verdict --recompute (issue 37, item 5): a stored verdict re-derived from the database alone.
# propose (kernel_config, chunked_prefill) and compare store what their verdicts used (each A/B
# sample's session and round; rules, rule version, design, looks, spreads, noise); recompute
# decides each again and agrees (exit 0), also in a merged copy; a sample edited in place fails its
# row check (4), read unchecked it is a difference (13) naming the case; proposals that cannot be
# recomputed (kv_capacity, stored before schema 13) say why (3).
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/v.db"
P="$SRC/tests/data/proposals"
F="dtype=bf16,head_dim=64,batch=1,page_size=16,sliding_window=0"
q() { sqlite3 "$PPBENCH_DB" "$@"; }
verdict_rc() { case $1 in 0|10|11) ;; *) cat "$WORK/err"; fail "$2 exited $1";; esac; }
# the rules' version this build decides under (verdict.h)
RV=$(sed -n 's/^#define PPB_VERDICT_RULE_VERSION \([0-9][0-9]*\).*/\1/p' "$SRC/harness/decide/verdict.h")
[ -n "$RV" ] || fail "no PPB_VERDICT_RULE_VERSION in verdict.h"

# propose: the CPU-sized A/B proposal and a chunked one
for p in ab-smoke chunked-smoke; do
  set +e; "$PPB" propose "$P/$p.yaml" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
  verdict_rc "$rc" "propose $p"
done
ab=$(q "SELECT id FROM proposals WHERE name = 'ab-smoke'")
ch=$(q "SELECT id FROM proposals WHERE name = 'chunked-smoke'")
expect_rc 0 "$PPB" verdict --recompute "$ab"
grep -q "^proposal $ab (ab-smoke, kernel_config): stored [A-Z]*; decided again .*(rule version $RV)" "$WORK/out" \
  || { cat "$WORK/out"; fail "recompute's first line"; }
grep -q "^the same: verdict, weighted mean, 11 cases (11 compared) and reasons agree" "$WORK/out" \
  || { cat "$WORK/out"; fail "ab-smoke not the same"; }
expect_rc 0 "$PPB" verdict --recompute "$ch"
grep -q "^the same: .* 1 case " "$WORK/out" || { cat "$WORK/out"; fail "chunked-smoke not the same"; }

# What was stored: every sample of ab-smoke's runs has a session and a round; the
# proposal its rules and design; each case its looks, sessions, look share and alpha.
runs=$(q "SELECT baseline_run || ',' || candidate_run FROM proposals WHERE id = $ab")
[ "$(q "SELECT count(*) FROM samples WHERE result_id IN (SELECT id FROM results WHERE run_id IN ($runs))
        AND (session IS NULL OR round IS NULL)")" = 0 ] || fail "untagged A/B samples"
# the default 3 sessions, and a 4th (the default max_sessions) in pairs whose sessions' spread dominated
n_sessions=$(q "SELECT count(DISTINCT session) FROM samples WHERE result_id IN (SELECT id FROM results WHERE run_id IN ($runs))")
[ "$n_sessions" = 3 ] || [ "$n_sessions" = 4 ] || fail "$n_sessions sessions in the tags, not the default 3 (or 4)"
[ "$(q "SELECT rule_version, alpha, require_correct, method, bootstrap_reps, samples_per_round, min_rounds, max_rounds,
        sessions FROM proposals WHERE id = $ab")" = "$RV|0.05|1|hodges_lehmann|2000|5|2|4|3" ] || fail "rules or design not stored"
[ "$(q "SELECT count(*) FROM proposal_cases WHERE proposal_id = $ab AND looks_planned = 2 AND looks_taken BETWEEN 1 AND 2
        AND sessions BETWEEN 3 AND 4 AND look_share > 0 AND look_share <= 1 AND abs(alpha - 0.05 / 12 * look_share) < 1e-15
        AND abs(stop_alpha - 0.05 / 12) < 1e-15")" = 11 ] \
  || fail "per-case looks, sessions and alphas"

# compare: eight plain runs (history for the noise), the last two compared
for i in 1 2 3 4 5 6 7 8; do "$PPB" run "$SRC/suites/smoke.yaml" --filter "$F" --no-progress >/dev/null 2>&1; done
q "UPDATE runs SET started_at = printf('2026-11-%02dT00:00:00Z', id) WHERE kind = 'run'"
a=$(q "SELECT max(id) - 1 FROM runs WHERE kind = 'run'"); b=$((a + 1))
set +e; "$PPB" compare "$a" "$b" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
verdict_rc "$rc" "compare"
cmp=$(q "SELECT max(id) FROM proposals")
[ "$(q "SELECT min_history, max_history FROM proposals WHERE id = $cmp")" = "5|20" ] || fail "compare's history rules"
# the runs' shifts against their history (rule 4) are stored; propose has none
[ "$(q "SELECT typeof(baseline_shift), typeof(candidate_shift) FROM proposals WHERE id = $cmp")" = "real|real" ] \
  || fail "compare's run shifts"
[ "$(q "SELECT typeof(baseline_shift), typeof(candidate_shift) FROM proposals WHERE id = $ab")" = "null|null" ] \
  || fail "propose with run shifts"
[ "$(q "SELECT count(*) FROM proposal_cases WHERE proposal_id = $cmp AND noise > 0 AND history = 6")" -gt 0 ] \
  || fail "compare's noise not stored"
expect_rc 0 "$PPB" verdict --recompute latest
grep -q "^the same: " "$WORK/out" || { cat "$WORK/out"; fail "compare not the same"; }

# A merged copy holds the same verdicts (tags and all).
expect_rc 0 "$PPB" merge "$PPBENCH_DB" -o "$WORK/m.db"
for id in $(sqlite3 "$WORK/m.db" "SELECT id FROM proposals"); do
  expect_rc 0 "$PPB" verdict --recompute "$id" --db "$WORK/m.db"
done

# One stored sample edited in place: the row check refuses the result (runtime error, 4) ...
cp "$PPBENCH_DB" "$WORK/d.db"
r0=$(sqlite3 "$WORK/d.db" "SELECT min(id) FROM results WHERE run_id = (SELECT baseline_run FROM proposals WHERE id = $ab)")
sqlite3 "$WORK/d.db" "UPDATE samples SET ms = ms * 1.5 WHERE result_id = $r0 AND idx = 0"
expect_rc 4 "$PPB" verdict --recompute "$ab" --db "$WORK/d.db"
grep -q "result $r0 .* was changed after ppbench wrote it" "$WORK/err" || { cat "$WORK/err"; fail "edited sample not refused"; }
# ... and read unchecked (as rows before schema 11) it is a difference naming the case (13).
sqlite3 "$WORK/d.db" "UPDATE samples SET ms = ms * 1.5 WHERE result_id = $r0;
                      UPDATE results SET row_check = NULL WHERE id = $r0"
expect_rc 13 "$PPB" verdict --recompute "$ab" --db "$WORK/d.db"
grep -q "^DIFFERENT from what was stored: case [0-9]* (.*): " "$WORK/out" || { cat "$WORK/out"; fail "difference not named"; }
# Tags edited (unchecked): a sample said to be of a fourth session, or of a round past the design's
# last look. (A session swapped between two of the three can leave the spread as it was: the
# between-session variance is floored at 0.)
cp "$PPBENCH_DB" "$WORK/s.db"
sqlite3 "$WORK/s.db" "UPDATE samples SET session = 3 WHERE result_id = $r0 AND idx = 1;
                      UPDATE results SET row_check = NULL WHERE id = $r0"
expect_rc 13 "$PPB" verdict --recompute "$ab" --db "$WORK/s.db"
grep -q "^DIFFERENT from what was stored: case [0-9]* (.*): sessions: stored 3, recomputed 4" "$WORK/out" \
  || { cat "$WORK/out"; fail "edited session not found"; }
cp "$PPBENCH_DB" "$WORK/s.db"
sqlite3 "$WORK/s.db" "UPDATE samples SET round = 9 WHERE result_id = $r0 AND idx = 1;
                      UPDATE results SET row_check = NULL WHERE id = $r0"
expect_rc 13 "$PPB" verdict --recompute "$ab" --db "$WORK/s.db"
grep -q "^DIFFERENT from what was stored: case [0-9]* (.*): looks taken: stored [12], recomputed 3" "$WORK/out" \
  || { cat "$WORK/out"; fail "edited round not found"; }
# A stored interval edited: named.
cp "$PPBENCH_DB" "$WORK/i.db"
sqlite3 "$WORK/i.db" "UPDATE proposal_cases SET ratio_hi = ratio_hi * 1.001 WHERE proposal_id = $ab AND idx = 3"
expect_rc 13 "$PPB" verdict --recompute "$ab" --db "$WORK/i.db"
grep -q "^DIFFERENT from what was stored: case 3 (.*): interval's upper end: stored " "$WORK/out" \
  || { cat "$WORK/out"; fail "edited interval not named"; }
# A compared run's median edited (unchecked): the compare's case differs.
cp "$PPBENCH_DB" "$WORK/c.db"
sqlite3 "$WORK/c.db" "UPDATE results SET median_ms = median_ms * 2, row_check = NULL WHERE id =
                      (SELECT min(id) FROM results WHERE run_id = $b)"
expect_rc 13 "$PPB" verdict --recompute "$cmp" --db "$WORK/c.db"
grep -q "^DIFFERENT from what was stored: case 0 (.*): ratio: " "$WORK/out" || { cat "$WORK/out"; fail "edited median"; }

# What cannot be recomputed says why (3); usage errors are 2.
expect_rc 10 "$PPB" propose "$SRC/suites/proposals/seed-gpu-memory-utilization.yaml"
expect_rc 3 "$PPB" verdict --recompute latest
grep -q "kv_capacity verdict: arithmetic" "$WORK/err" || { cat "$WORK/err"; fail "kv_capacity"; }
q "UPDATE proposals SET rule_version = NULL WHERE id = $ab"
expect_rc 3 "$PPB" verdict --recompute "$ab"
grep -q "proposal $ab was stored before ppbench recorded what a verdict used; it cannot be recomputed" "$WORK/err" \
  || { cat "$WORK/err"; fail "pre-schema-13 proposal"; }
expect_rc 3 "$PPB" verdict --recompute 999
expect_rc 3 "$PPB" verdict --recompute x1
expect_rc 2 "$PPB" verdict
expect_rc 2 "$PPB" verdict --recompute 1 2
expect_rc 0 "$PPB" verdict --help
grep -q "13 a difference" "$WORK/out" || fail "usage does not give the exit codes"
echo "verdict_recompute: ok"
