#!/usr/bin/env bash
# ppbench check: the issue's acceptance check (BLOCK_N=128 at D=128 refused on the
# BI-V100 at 48 KB, with the arithmetic, and feasible at the 128 KB figure), the
# exit codes, CSV output, --filter, --target-file and the suite-dir lookup.
source "$(dirname "$0")/lib.bash"

# record REGEX: a table row and the why wrapped under it (indented lines), as one line
record() {
  awk -v re="$1" 'on && /^ / {sub(/^ +/, " "); printf "%s", $0; next} on {exit} $0 ~ re {on = 1; printf "%s", $0}' "$WORK/out"
}

# -- the acceptance check ------------------------------------------------------
expect_rc 1 "$PPB" check "$SRC/suites/prefill.yaml" --target bi-v100
# Issue 36: the why (~700 characters of arithmetic) is wrapped under its row, no line past 170 columns.
awk 'length > 170 && !/^target / {print; bad = 1} END {exit bad}' "$WORK/out" || fail "check lines past 170 columns"
grep -qE '^    needs [0-9]+ B shared memory' "$WORK/out" || fail "no why under a row"
row=$(record '^block_m=128 block_n=128 num_warps=8 .*head_dim=128 ')
[ -n "$row" ] || { cat "$WORK/out"; fail "no row for block_m=128 block_n=128 num_warps=8 at head_dim=128"; }
echo "$row" | grep -q ' INFEASIBLE ' || fail "128/128 tiles at D 128 not refused: $row"
echo "$row" | grep -qF "portable layout (kernels/prefill_plan.c) for BLOCK_M 128, BLOCK_N 128, 8 warps of 64, D 128: 99328 B" \
  || fail "the arithmetic is missing: $row"
echo "$row" | grep -qF '> 49152 B per block (bi-v100 smem_per_block, disputed)' || fail "no 49152 B limit: $row"
echo "$row" | grep -qF 'the seed counts K+V only: 65536 B' || fail "the seed's figure is missing: $row"
echo "$row" | grep -qF 'feasible at 131072 B (128 KB, LLVM backend feature list)' || fail "no 128 KB flip: $row"
# The seed's proposal (64/64 tiles) fits at exactly 48 KB, and the 32 KB figure would refuse it.
row=$(record '^block_m=64 block_n=64 num_warps=4 .*head_dim=128 ')
[ -n "$row" ] || fail "no row for block_m=64 block_n=64 num_warps=4 at head_dim=128"
echo "$row" | grep -q ' feasible ' || fail "64/64 tiles at D 128 refused: $row"
echo "$row" | grep -qF 'infeasible at 32768 B (32 KB' || fail "no 32 KB flip for 64/64: $row"
# The assumptions are listed, and the summary counts what was refused.
grep -qE '^  smem_per_block +49152 B \(disputed; other figures: 32768, 131072\)' "$WORK/out" \
  || fail "the profile's assumptions are not listed"
grep -qE '^[1-9][0-9]* of [0-9]+ configs infeasible on bi-v100' "$WORK/out" || fail "no summary line"
[ ! -s "$WORK/err" ] || { cat "$WORK/err"; fail "unexpected stderr"; }

# -- the same suite on the H200: everything fits after opt-in ------------------------
expect_rc 0 "$PPB" check "$SRC/suites/prefill.yaml" --target h200
grep -q '^0 of [0-9]* configs infeasible on h200' "$WORK/out" || fail "h200 summary"
# path auto takes the wgmma layout there (230400 B): one block per SM
record '^block_m=128 block_n=128 num_warps=8 .*head_dim=128 ' | grep -qF '1 (smem)' \
  || fail "h200: 128/128 at D 128 should give 1 block/SM limited by smem (wgmma layout)"

# -- --filter: only head_dim 64 rows, all of which fit in 48 KB -----------------------
# The same verdict as JSON for CI (schema ppbench-check/1); with '-' only the document is on stdout.
expect_rc 1 "$PPB" check "$SRC/suites/prefill.yaml" --target bi-v100 --json -
"$PY" - "$WORK/out" <<'PY' || fail "check --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "ppbench-check/1" and d["exit_code"] == 1 and d["target"] == "bi-v100", d
c = d["counts"]
assert c["infeasible_configs"] > 0 and c["cases"] == 130 and len(d["rows"]) == c["rows"], c
bad = [r for r in d["rows"] if not r["feasible"]]
assert len(bad) == c["infeasible_rows"] and all(r["reason"] and r["smem_bytes"] > 0 for r in bad)
assert any("49152" in r["reason"] for r in bad)
PY
grep -q "configs infeasible on bi-v100" "$WORK/err" || fail "the summary did not go to stderr"
# D 64 too has an infeasible config there (128/128/8: 66560 B in the portable layout)
expect_rc 1 "$PPB" check "$SRC/suites/prefill.yaml" --target bi-v100 --filter 'head_dim=64'
grep -q 'head_dim=256\|head_dim=128' "$WORK/out" && fail "--filter head_dim=64 kept other head dims"
grep -q 'head_dim=64' "$WORK/out" || fail "--filter head_dim=64 left nothing"

# -- CSV: a header, quoted reasons, the summary on stderr ------------------------------
expect_rc 1 "$PPB" check "$SRC/suites/prefill.yaml" --target bi-v100 --format csv
head -n1 "$WORK/out" | grep -q '^config,shape,cases,smem_bytes,seed_smem_bytes,threads,seed_threads,registers,from_compiled,verdict,blocks_per_sm,limiter,reason,flips$' \
  || fail "CSV header"
"$PY" - "$WORK/out" <<'PYEOF' || fail "CSV content"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows, "no rows"
r = [x for x in rows if x["config"].startswith("block_m=128 block_n=128 num_warps=8 ")
     and "head_dim=128 " in x["shape"]]
assert len(r) == 1, r
r = r[0]
assert r["verdict"] == "infeasible" and r["smem_bytes"] == "99328" and r["seed_smem_bytes"] == "65536", r
assert r["threads"] == "512" and r["seed_threads"] == "256", r
assert "feasible at 131072 B" in r["flips"], r
assert all(len(x) == 14 for x in csv.reader(open(sys.argv[1]))), "ragged CSV"
PYEOF
grep -q 'configs infeasible on bi-v100' "$WORK/err" || fail "CSV mode: no summary on stderr"

# -- targets are found next to the suite; the suite's own target: is the default ------
cat > suite.yaml <<'YAML'
name: tiny
kernel: prefix_prefill
shapes:
  - query_len: 128
    heads: "8/1"
    head_dim: 128
configs:
  - block_m: 128
    block_n: [64, 128]
    num_warps: 4
YAML
expect_rc 2 "$PPB" check suite.yaml
grep -q 'names no target' "$WORK/err" || fail "no-target message"
expect_rc 3 "$PPB" check suite.yaml --target bi-v200
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "expected one error line"; }
grep -q "no target profile 'bi-v200' (looked in ./targets, .*/suites/targets; known: a100, bi-v100, h200)" "$WORK/err" \
  || { cat "$WORK/err"; fail "missing profile message"; }
# Profiles are found beside the suite, in $PPBENCH_TARGETS, then in the source tree; a path is a file.
expect_rc 1 "$PPB" check suite.yaml --target bi-v100
grep -q '^2 of 2 configs infeasible on bi-v100' "$WORK/out" || { cat "$WORK/out"; fail "profile not found in the source tree"; }
mkdir mine && sed 's/^name: bi-v100/name: mycard/' "$SRC/suites/targets/bi-v100.yaml" > mine/mycard.yaml
PPBENCH_TARGETS="$WORK/mine" expect_rc 1 "$PPB" check suite.yaml --target mycard
grep -q 'configs infeasible on mycard' "$WORK/out" || fail "\$PPBENCH_TARGETS not searched"
expect_rc 1 "$PPB" check suite.yaml --target "$WORK/mine/mycard.yaml"
grep -q 'configs infeasible on mycard' "$WORK/out" || fail "--target PATH not loaded"
mkdir targets && cp "$SRC"/suites/targets/*.yaml targets/
expect_rc 1 "$PPB" check suite.yaml --target bi-v100
grep -q '^2 of 2 configs infeasible on bi-v100' "$WORK/out" || { cat "$WORK/out"; fail "tiny suite on bi-v100"; }
sed -i '1a target: h200' suite.yaml
expect_rc 0 "$PPB" check suite.yaml
grep -q '^0 of 2 configs infeasible on h200' "$WORK/out" || fail "the suite's target: was not used"

# -- --target-file, and a bad profile: one line with file:line:column and the field ----
sed 's/^name: bi-v100/name: custom/; s/value: 49152/value: 131072/; s/- {value: 131072, source: "LLVM backend feature list"}/- {value: 49152, source: "the seed"}/' \
  "$SRC/suites/targets/bi-v100.yaml" > custom.yaml
expect_rc 0 "$PPB" check suite.yaml --target-file custom.yaml
grep -q '^0 of 2 configs infeasible on custom' "$WORK/out" || { cat "$WORK/out"; fail "--target-file"; }
expect_rc 3 "$PPB" check suite.yaml --target-file "$SRC/tests/data/targets/bad/missing_source.yaml"
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "expected one error line"; }
grep -q 'missing_source.yaml:3:3: sm_count: source is missing' "$WORK/err" || { cat "$WORK/err"; fail "bad profile message"; }

# -- a bad suite: exit 3, one line --------------------------------------------------
printf 'name: bad\nkernel: prefix_prefill\nshapes:\n  - query_len: [16]\n    heads: ["4/2"]\n    dtype: [fp8]\n' > bad.yaml
expect_rc 3 "$PPB" check bad.yaml --target-file custom.yaml
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "expected one error line"; }
grep -q 'bad.yaml:6:' "$WORK/err" || { cat "$WORK/err"; fail "bad suite message lacks its position"; }

expect_rc 3 "$PPB" check "$WORK/missing.yaml" --target h200
grep -q 'missing.yaml' "$WORK/err" || fail "missing suite message"

# -- usage errors: exit 2 ----------------------------------------------------------
expect_rc 2 "$PPB" check
expect_rc 2 "$PPB" check suite.yaml extra.yaml
expect_rc 2 "$PPB" check suite.yaml --format xml
expect_rc 2 "$PPB" check suite.yaml --target h200 --target-file custom.yaml
expect_rc 2 "$PPB" check suite.yaml --bogus
expect_rc 2 "$PPB" check suite.yaml --filter 'blok_n=64'
grep -q "unknown field 'blok_n'" "$WORK/err" || fail "bad filter message"
expect_rc 0 "$PPB" check --help
grep -q 'usage: ppbench check' "$WORK/out" || fail "--help"
echo "check: ok"
