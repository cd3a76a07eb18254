#!/usr/bin/env bash
# num_stages end to end on the CPU backend (docs/SUITES.md, docs/KERNEL-ABI.md):
# a suite sweeps it, the key names it only when set, the store keeps it in its
# column; the built-in kernels, a plugin without pipelining and a plugin of
# kernel ABI version 3 each refuse num_stages=2 with their reason, and run
# num_stages=0 (each implementation's own choice) as before.
source "$(dirname "$0")/lib.bash"
PLUG=$(dirname "$PPB")/tests/plugins
BAD=$(dirname "$PPB")/tests/plugins-bad
cat >"$WORK/st.yaml" <<'YAML'
name: stages
kernel: prefix_prefill
shapes:
  - {query_len: 17, context_len: 0, heads: 4/2, head_dim: 64, dtype: bf16}
configs:
  - {block_m: 64, block_n: 64, num_warps: 4, num_stages: [0, 2]}
measure: {warmup_ms: 1, min_samples: 3, max_samples: 5, min_time_ms: 1, budget_ms: 200}
YAML
base="prefix_prefill b=1 q=17 ctx=0 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 bm=64 bn=64 w=4"
expect_rc 0 "$PPB" list "$WORK/st.yaml"
[ "$(cat "$WORK/out")" = "$base path=auto
$base st=2 path=auto" ] || fail "keys: $(cat "$WORK/out")"
expect_rc 0 "$PPB" list "$WORK/st.yaml" --filter num_stages=2
[ "$(cat "$WORK/out")" = "$base st=2 path=auto" ] || fail "--filter num_stages=2: $(cat "$WORK/out")"

# Each implementation: (impl, --plugin, run's exit, what num_stages=0 stores, the reason num_stages=2 is refused with)
check_impl() {
  local impl=$1 plugin=$2 rc=$3 at0=$4 why=$5 db="$WORK/$1.db"
  local args=(run "$WORK/st.yaml" --db "$db" --backend cpu --no-progress)
  [ "$impl" = builtin ] || args+=(--plugin "$plugin" --impl "plugin:$impl")
  expect_rc "$rc" "$PPB" "${args[@]}"
  local rows
  rows=$(sqlite3 -separator '|' "$db" "SELECT coalesce(c.num_stages, 'null'), r.status, r.reason FROM results r
                                        JOIN cases c ON c.id = r.case_id ORDER BY c.num_stages")
  grep -Eq "^0\|$at0" <<<"$rows" || fail "$impl: num_stages=0 is not '$at0': $rows"
  grep -Fq "2|refused|$why" <<<"$rows" || fail "$impl: num_stages=2 not refused with '$why': $rows"
}
check_impl builtin "" 0 "(ok|noisy)\|" "num_stages=2: the built-in prefix_prefill kernel has no num_stages"
check_impl example-cpu "$PLUG" 0 "(ok|noisy)\|" \
  "impl plugin:example-cpu: num_stages 2: this implementation has no pipelining stages"
# The version-3 test plugin accepts every case and computes nothing: num_stages=0 reached its launch.
check_impl abi3-plugin "$BAD/libppbk_bad_abi3.so" 1 "error\|impl abi3-plugin: launch: a broken test plugin runs nothing" \
  "impl plugin:abi3-plugin: built against kernel ABI version 3, which has no num_stages: it cannot honour num_stages=2"
echo "num_stages: ok"
