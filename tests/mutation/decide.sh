#!/usr/bin/env bash
# Mutation testing of the statistics (harness/decide/) and of the A/B runner that carries their design
# (harness/run/abrun.c, calibrate.c) (issue 37, item 6; docs/STATISTICS.md "Do the tests see a wrong rule?").
#
# Each line below changes one line of those files the way a plausible mistake would (a flipped
# comparison, alpha where alpha / k belongs, looks taken for looks planned, lo for hi, an off-by-one
# rank or count, the wrong side of a quantile, ...). The mutations are applied one at a time to a copy of
# the tree in a scratch folder (the real tree is never written), the decide unit tests are rebuilt and
# run there, and at least one of them must fail: the mutation is "killed". A mutation that survives is a
# rule no test pins: add the test (a mutation is removed only when it is truly equivalent, said beside it).
#
#   tests/mutation/decide.sh [SOURCE_DIR]        (default: the tree this script is in)
#
# Prints a table (mutation, killed / SURVIVED) and exits 1 when any survives, does not apply (the line it
# names has changed: update the list) or does not compile; 0 when every one is killed. PPB_MUTATION_JOBS
# (default 2) build jobs; PPB_MUTATION_KEEP=1 keeps the scratch folder. About 5 minutes on 2 cores.
# CTest: mutation_decide, label mutation, not part of a plain ctest (tests/CMakeLists.txt).
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
jobs=${PPB_MUTATION_JOBS:-2}
tests='test_(verdict|abtest|abrun|ab_cases|sequential|calibrate|run_compare|trend|proposal)'

# ---- the mutations: FILE (under harness/), sed expression (matches one line), what it breaks ----
files=() exprs=() whats=()
M() { files+=("$1"); exprs+=("$2"); whats+=("$3"); }
# abrun: the design carried into the verdict
M decide/ab_cases.c 's#{ return r->look_alpha / d->alpha; }#{ return r->alpha_spent / d->alpha; }#' \
  "ppb_ab_case_look_share: intervals claim all the looks spent, not the stopping look's share"
M run/abrun.c 's#pr->look_share = ppb_ab_case_look_share(&r, &d);#pr->look_share = 1;#' \
  "measure_pair: the case keeps no look share (the call site)"
M decide/ab_cases.c 's#\.tolerance = ppb_verdict_tolerance(&p->rules), \.seed = seed};#.tolerance = p->rules.threshold, .seed = seed};#' \
  "ppb_ab_pair_design: sampling stops before the tolerated regression is settled"
M decide/ab_cases.c 's#\.alpha = ppb_bonferroni_alpha(p->rules.alpha, n_pairs + 1),#.alpha = p->rules.alpha,#' \
  "ppb_ab_pair_design: the stopping rule at alpha, not alpha / (pairs + 1)"
M run/abrun.c 's#ppb_ab_pair_design(x->p, x->n_pairs, sessions,#ppb_ab_pair_design(x->p, 0, sessions,#' \
  "measure_pair: the design told of no other pairs (the call site)"
# what the samples cost against a fixed-sample design
M decide/sequential.c 's#double need = ceil(n \* (z / z_look) \* (z / z_look) - 1e-9);#double need = ceil(n * (z / z_look) - 1e-9);#' \
  "ppb_seq_fixed_samples: the samples scale with the quantiles' ratio, not its square"
M decide/ab_cases.c 's#out->fixed_samples = fixed > out->fixed_samples ? fixed : out->fixed_samples;#out->fixed_samples = fixed;#' \
  "ppb_ab_sampling_cost: the fixed design takes the last pair's count, not the hardest pair's"
M decide/ab_cases.c 's#return sum \* (r->batch_launches > 0 ? r->batch_launches : 1);#return sum;#' \
  "ppb_ab_sampling_cost: a sample's launches are not counted in its kernel time"
# ab_cases: measured pairs into the verdict's cases
M decide/ab_cases.c 's#one.sessions < vc->sessions ? one.sessions : vc->sessions;#one.sessions > vc->sessions ? one.sessions : vc->sessions;#' \
  "a chunked prompt claims its chunks' most sessions, not the fewest"
M decide/ab_cases.c 's#const double \*samples = r->status == PPB_STATUS_OK || r->status == PPB_STATUS_NOISY#const double *samples = r->status == PPB_STATUS_OK#' \
  "a noisy side's samples are dropped"
# verdict: the rules
M decide/verdict.c 's#return c->look_share > 0 \&\& c->look_share < 1 ? out->interval_alpha \* c->look_share : out->interval_alpha;#return out->interval_alpha;#' \
  "case_alpha: the earlier looks spent nothing (alpha, not its stopping look's share)"
M decide/verdict.c 's#out->family_size = out->n_compared + untimed_in_family + 1;#out->family_size = out->n_compared + untimed_in_family;#' \
  "the family leaves the weighted mean out (off by one)"
M decide/verdict.c 's#} else if (iv->ratio_lo > 1 + tol) {#} else if (iv->ratio_hi > 1 + tol) {#' \
  "a case is rejected when its upper end, not its lower, is past the tolerance"
M decide/verdict.c 's#} else if (g->ratio_hi < 1 / (1 + t) \&\& g->ratio_hi <= 1 / (1 + rules->min_gain)) {#} else if (g->ratio_lo < 1 / (1 + t) \&\& g->ratio_hi <= 1 / (1 + rules->min_gain)) {#' \
  "ACCEPT on the mean's lower end below the threshold, not the upper"
M decide/verdict.c 's#rules->min_gain > 0 \&\& 1 / g->ratio_lo - 1 < rules->min_gain#rules->min_gain > 0 \&\& 1 / g->ratio_hi - 1 < rules->min_gain#' \
  "no meaningful gain judged on the least speedup, not the most"
M decide/verdict.c 's#mean_alpha = a < mean_alpha ? a : mean_alpha;#mean_alpha = a > mean_alpha ? a : mean_alpha;#' \
  "the mean at the loosest case level, not the strictest"
M decide/verdict.c 's#return rules->max_regression > rules->threshold ? rules->max_regression : rules->threshold;#return rules->max_regression;#' \
  "the tolerance may fall below the practical threshold"
M decide/verdict_record.c 's#pc->ratio_lo = compared ? oc->interval.ratio_lo : NAN;#pc->ratio_lo = compared ? oc->interval.ratio_hi : NAN;#' \
  "a stored case's lower end is its upper"
# abtest: one case's interval, class and the mean
M decide/abtest.c 's#double z = ppb_normal_quantile(1.0 - alpha / 2.0);#double z = ppb_normal_quantile(alpha / 2.0);#' \
  "Moses normal approximation: the z-quantile's wrong side"
M decide/abtest.c 's#k = crit + 1;#k = crit;#' \
  "Moses exact rank: off by one"
M decide/abtest.c 's#out->rank_hi = nm + 1 - k;#out->rank_hi = nm - k;#' \
  "Moses upper rank: off by one"
M decide/abtest.c 's#if (ratio_lo > up)#if (ratio_hi > up)#' \
  "classify: SLOWER on the upper end"
M decide/abtest.c 's#out->ratio_lo = exp(out->log_ratio - q \* sqrt(sum_w2v_lo / (sum_w \* sum_w) + shared));#out->ratio_lo = exp(out->log_ratio - q * sqrt(sum_w2v_hi / (sum_w * sum_w) + shared));#' \
  "weighted mean: the lower end from the cases' upper sides"
# sequential: looks, spread, widening
M decide/sequential.c 's#double look_alpha = ppb_seq_alpha_spent(d->alpha, t) - out->alpha_spent;#double look_alpha = d->alpha + 0 * t;#' \
  "every look spends all of alpha (no spending)"
M decide/sequential.c 's#double t = fmax((double)round / d->max_rounds, spent / d->budget_ms);#double t = (double)round / d->max_rounds;#' \
  "the information ignores the budget: the budget's look does not spend what is left"
M decide/sequential.c 's#return alpha \* t \* t;#return alpha * t;#' \
  "the spending function linear in the information, not its square"
M decide/sequential.c 's#if (ppb_seq_settled(d, out->interval.ratio_lo, out->interval.ratio_hi)) {#if (out->cls != PPB_AB_UNRESOLVED) {#' \
  "sampling stops once the case classifies, before the verdict's boundaries are settled"
M decide/sequential.c 's#if (ratio_lo < boundary\[i\] \&\& boundary\[i\] < ratio_hi)#if (ratio_lo < boundary[i] \&\& boundary[i] < ratio_lo)#' \
  "ppb_seq_settled: a boundary inside the interval goes unseen"
M decide/sequential.c 's#for (long r = first; r < last \&\& k < PPB_SEQ_MAX_LOOKS - 1; r \*= 2)#for (long r = first; r <= last \&\& k < PPB_SEQ_MAX_LOOKS - 1; r *= 2)#' \
  "look schedule: the last round twice (off by one)"
M decide/sequential.c 's#int broke = round >= d->min_rounds \&\& spent >= d->budget_ms;#int broke = spent >= d->budget_ms;#' \
  "the budget stops a pair before min_rounds"
M decide/sequential.c 's#sum += (iv.shift \* iv.shift - se \* se) / 2;#sum += iv.shift * iv.shift - se * se;#' \
  "between-session tau^2: E[d^2] = 2 tau^2 + se^2 read as tau^2 + se^2"
M decide/sequential.c 's#double w = ppb_student_t_quantile(alpha, 2 \* (sessions > 1 ? sessions - 1 : 1)) \* between_sd;#double w = ppb_student_t_quantile(alpha, sessions > 1 ? sessions - 1 : 1) * between_sd;#' \
  "widening: Student t with half the degrees of freedom"
M decide/sequential.c 's#return sqrt(2 \* ((vb + vc) / 2) / sessions);#return sqrt(((vb + vc) / 2) / sessions);#' \
  "between_sd: one side's tau^2 in the ratio, not both"
# run_compare: separate runs
M decide/run_compare.c 's#out->shift = given ? \*given : ppb_midmean(shift, k);#out->shift = given ? *given : ppb_mean(shift, k);#' \
  "run level: a plain mean over the cases, which one case moving the other way pulls"
M decide/run_compare.c 's#out->unusual = !rc && k >= 3 &&#out->unusual = !rc \&\& k >= 1 \&\&#' \
  "run level: one or two cases called a whole run unusual"
M decide/run_compare.c 's#(h - 1 - (c->history_split > 0)));#(h - (c->history_split > 0)));#' \
  "the noise's degrees of freedom: off by one"
M decide/run_compare.c 's#(h - 1 - (c->history_split > 0)));#(h - 1));#' \
  "two implementations: the second level costs no degree of freedom"
M decide/run_compare.c 's#    int split = c->history_split;#    int split = 0;#' \
  "two implementations: the gap between their levels read as noise"
M decide/run_compare.c 's#int split_short = c->history_split \&\& #int split_short = 0 \&\& #' \
  "two implementations: one with a single run of its own judged"
M decide/run_compare.c 's#{ return lv->unusual ? fabs(lv->shift) : 0; }#{ return 0 * lv->unusual; }#' \
  "rule 4: a baseline run off as a whole widens nothing"
M decide/run_compare.c 's#            if (level\[side\]->unusual)#            if (side == 0 \&\& level[side]->unusual)#' \
  "rule 4: a candidate run moved as a whole goes unsaid"
M decide/run_compare.c 's#    vrules.shared_sd = offset;#    vrules.shared_sd = 0;#' \
  "rule 4: the mean averages the baseline's offset down over the cases"
M decide/run_compare.c 's#    return off > crit \* sqrt(sigma \* sigma + own \* own) ? off : 0;#    return 0 * off;#' \
  "rule 5: a baseline case off its usual level widens nothing"
M decide/run_compare.c 's#    return off > crit \* sqrt(sigma \* sigma + own \* own) ? off : 0;#    return off > sqrt(sigma * sigma + own * own) ? off : 0;#' \
  "rule 5: a baseline case called off at one SD, not at its interval's reach"
M decide/run_compare.c 's#            double widen = fmax(offset, out->baseline_offset\[i\]);#            double widen = offset;#' \
  "rule 5: a baseline case's offset found but not carried into its interval"
M decide/verdict_recompute.c 's#rcs\[i\].baseline_offset = sv->rec->rule_version >= 5 \&\& #rcs[i].baseline_offset = sv->rec->rule_version >= 4 \&\& #' \
  "recompute: a rule-4 compare decided with rule 5's case offsets"
M decide/abtest.c 's#(1.0 - sum_w2 / (sum_w \* sum_w));#(sum_w2 / (sum_w * sum_w));#' \
  "weighted mean: a shared SD counted once more as if independent, not held whole"
M decide/run_compare.c 's#    return side ? ppb_median(c->history + c->history_split#    return 0 ? ppb_median(c->history + c->history_split#' \
  "run level of two implementations: the candidate's side measured against the baseline's level"
M decide/run_compare.c 's#    if (!c->history_split)$#    if (1)#' \
  "run level of two implementations: against the median of both levels"
M decide/verdict_recompute.c 's#        if (st->rule_version >= 4)$#        if (1)#' \
  "recompute: a rule-3 compare decided with rule 4's widening"
M decide/run_compare.c 's#return plain > robust ? plain : robust;#return robust;#' \
  "compare's noise: rare whole-run slowdowns read as outliers"
M decide/run_compare.c 's#\*sd = sqrt(2.0 \* sigma \* sigma + #*sd = sqrt(sigma * sigma + #' \
  "a difference of two runs with one run's noise"
M decide/run_compare.c 's#return spread > 0 \&\& isfinite(spread) ? spread / 1.349 : 0;#return 0;#' \
  "compare: a noisy run's own spread ignored (the loaded runner's outlier runs REJECTed)"
M decide/run_compare.c 's#c->baseline_spread = ra->status == PPB_STATUS_NOISY ? ra->rel_noise : 0;#c->baseline_spread = ra->rel_noise;#' \
  "compare: a run measured to its target widens the case too"
M decide/run_compare.c 's#\*sd = sqrt(2.0 \* sigma \* sigma + own_a \* own_a + own_b \* own_b + offset \* offset);#*sd = sqrt(2.0 * sigma * sigma + own_b * own_b + offset * offset);#' \
  "compare: only the candidate run's spread counts"
M decide/run_compare.c 's#if (!drop\[i\] \&\& !(h.p\[i\].noisy \&\& min_measured > 0 \&\& measured >= min_measured))#if (!drop[i])#' \
  "compare's history: the noisy runs kept when enough runs met their target"
M decide/verdict_recompute.c 's#if (sv->rec->rule_version < 3) /\* before rule 3#if (0) /* before rule 3#' \
  "recompute: a rule-2 compare decided again with rule 3's spread"
M decide/run_compare.c 's#ppb_bonferroni_alpha(rules->verdict.alpha, judged + 1);#ppb_bonferroni_alpha(rules->verdict.alpha, judged);#' \
  "compare's family leaves the mean out"
# trend, calibrate
M decide/trend.c 's#if (fabs(rel) >= r->threshold \&\& fabs(z) >= o->min_score)#if (fabs(rel) >= r->threshold || fabs(z) >= o->min_score)#' \
  "beyond: the change OR the score, not both"
M decide/trend_pool.c 's#^    double shrink = (1 - clip_rho(rho)) / (1 + clip_rho(rho));#    double shrink = 1;#' \
  "pooled trend: drifting nights counted as independent"
M decide/trend_pool.c 's#^    if (case_noise > 0) {#    if (0) {#' \
  "pooled trend: the cases' spread within a night ignored"
M core/stats.c 's#^    int cut = n / 4;#    int cut = 0;#' \
  "pooled trend: a plain mean over the cases, not the trimmed one"
M decide/trend_pool.c 's#^    double level = ppb_median(v, n);#    double level = v[0];#' \
  "pooled trend: each case against its first night, not its usual level"
M run/calibrate.c 's#const double z = 1.6448536269514722,#const double z = 1.959963984540054,#' \
  "Wilson bound: two-sided 95% z for a one-sided bound"
# a REJECT settled by one pair cuts the later pairs short
M decide/verdict.c 's#one.interval_alpha = ppb_bonferroni_alpha(rules->alpha, cases_most + 1);#one.interval_alpha = rules->alpha;#' \
  "ppb_verdict_case_settles_reject: the case judged at alpha, not at the verdict's strictest family level"
M decide/verdict.c 's#           o.interval.ratio_lo > 1 + ppb_verdict_tolerance(rules);#           o.interval.ratio > 1 + ppb_verdict_tolerance(rules);#' \
  "ppb_verdict_case_settles_reject: the estimate past the tolerance, not the whole interval"
M run/abrun.c 's#        if (x->cost.settled_by_pair) { /\* never for chunks#        if (0) { /* never for chunks#' \
  "check_then_time: a settled verdict does not leave the pairs not yet timed untimed (the call site)"
M run/abrun.c 's#        return x->apparent < y->apparent ? 1 : -1;#        return x->apparent < y->apparent ? -1 : 1;#' \
  "timing_order: the smallest apparent difference timed first"
M decide/ab_cases.c 's#vc->untimed = PPB_AB_UNTIMED_SETTLED, vc->in_family = 1;#vc->untimed = PPB_AB_UNTIMED_SETTLED;#' \
  "ppb_ab_pair_case: a pair left untimed by a settled REJECT drops out of the family of intervals"
M decide/verdict.c 's#out->family_size = out->n_compared + untimed_in_family + 1;#out->family_size = out->n_compared + 1;#' \
  "ppb_verdict_decide: untimed in_family cases not counted in the family"
M decide/verdict_recompute.c 's#int untimed = rec->cost.settled_by_pair > 0;#int untimed = 0;#' \
  "recompute: the pairs a settled REJECT left untimed are not known as such"
# a slow pair's rounds fit its budget
M run/abrun.c 's#    d.samples_per_round = ppb_ab_samples_per_round(&x->p->sampling, slot_ms);#    (void)slot_ms;#' \
  "measure_pair: a slow pair keeps the proposal's samples per round (the call site)"
M decide/ab_cases.c 's#looks\[k < 3 ? k - 1 : 2\] \* slot_ms#looks[0] * slot_ms#' \
  "ppb_ab_samples_per_round: the first look's rounds, not the first three looks', fitted to the budget"
# verdict_recompute: the check of a stored verdict
M decide/verdict_recompute.c 's#return fabs(a - b) <= PPB_RECOMPUTE_TOLERANCE \* fmax(fabs(a), fabs(b));#return 1;#' \
  "recompute: every real agrees"
M decide/verdict_recompute.c 's#^    seq.looks_taken++;$#    ;#' \
  "recompute: the last look is not counted (off by one)"

# ---- a scratch copy of the tree, built once ----
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ppb-mutation.XXXXXX")
[ "${PPB_MUTATION_KEEP:-0}" = 1 ] && echo "scratch folder: $scratch" || trap 'rm -rf "$scratch"' EXIT
tree=$scratch/tree build=$scratch/build
mkdir -p "$tree"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
  # tracked and untracked files as they are now, ignored ones (builds, .deps, databases) left out
  (cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree" 2>/dev/null) || true
else
  (cd "$src" && tar --exclude='./build*' --exclude=./.deps --exclude='*.db' -cf - .) | (cd "$tree" && tar -xf -)
fi
[ -f "$tree/harness/decide/verdict.c" ] || { echo "mutation: no harness/decide in $src" >&2; exit 2; }
echo "mutation: building the decide unit tests in $scratch (CPU only)"
cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_CUDA=OFF >"$scratch/cmake.log" 2>&1 \
  || { cat "$scratch/cmake.log"; exit 2; }
mapfile -t targets < <(ctest --test-dir "$build" -N -L unit -R "$tests" | sed -n 's/^ *Test *#[0-9]*: //p')
[ "${#targets[@]}" -ge 8 ] || { echo "mutation: only ${#targets[@]} decide tests found" >&2; exit 2; }
build_tests() { cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$scratch/build.log" 2>&1; }
run_tests() { ctest --test-dir "$build" -L unit -R "$tests" -j "$jobs" --timeout 300 >"$scratch/test.log" 2>&1; }
build_tests || { tail -30 "$scratch/build.log"; echo "mutation: the unmutated tree does not build" >&2; exit 2; }
run_tests || { tail -30 "$scratch/test.log"; echo "mutation: the decide tests fail without a mutation" >&2; exit 2; }

# ---- one mutation at a time ----
n=${#files[@]} killed=0 bad=0
printf '%-4s %-22s %-11s %s\n' "#" "file" "result" "mutation"
for ((i = 0; i < n; i++)); do
  f=$tree/harness/${files[i]}
  cp "$f" "$scratch/original"
  sed -i -e "${exprs[i]}" "$f"
  changed=$(diff "$scratch/original" "$f" | grep -c '^<' || true)
  if [ "$changed" -ne 1 ]; then
    result="NOT APPLIED" # the line is not there (or more than one): the list is stale
    bad=$((bad + 1))
  elif ! build_tests; then
    result="NO BUILD"
    bad=$((bad + 1))
  elif run_tests; then
    result="SURVIVED"
    bad=$((bad + 1))
  else
    result="killed"
    killed=$((killed + 1))
    # the tests that failed, for the table
    who=$(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([a-z_]*\) .*\*\*\*.*/\1/p' "$scratch/test.log" | sort | paste -sd, -)
  fi
  cp "$scratch/original" "$f"
  printf '%-4s %-22s %-11s %s%s\n' "$((i + 1))" "${files[i]}" "$result" "${whats[i]}" \
    "${who:+ (by $who)}"
  who=
done
build_tests || true # leave the scratch build as the tree is
echo "mutation: $killed of $n killed$([ "$bad" -gt 0 ] && echo ", $bad not: tests are missing (or the list is stale)")"
[ "$bad" -eq 0 ]
