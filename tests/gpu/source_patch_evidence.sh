#!/usr/bin/env bash
# The source_patch figures of docs/BENCHMARKS.md in one call, on a machine where
# tests/gpu/run.sh build has run: the seed's PATCHES on vLLM 0.6.3 (per shape),
# the null patch N times, and each carried release's prefix prefill at the
# prefill.yaml shapes. Trees: .deps/vllm-X (the kernel files, PKG-INFO, the mark).
#   tests/gpu/source_patch_evidence.sh OUT [NULL_REPEATS]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1; repeats=${2:-3}
ppb=$root/build-gpu/ppbench
export PPBENCH_TREE_CACHE=$out/tree-cache PPB_SOURCE_DIR=$root
mkdir -p "$PPBENCH_TREE_CACHE/vllm"
for t in "$root"/.deps/vllm-*/; do
  [ -f "$t/.ppb-archive.sha256" ] && ln -sfn "${t%/}" "$PPBENCH_TREE_CACHE/vllm/$(basename "$t")"
done
[ -d /tmp/deps/usr ] && export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log=$out/evidence.log
{
  echo "== seed patch"; "$ppb" propose "$root/suites/proposals/vllm-seed-patch.yaml" --backend cuda --db "$out/seed.db" 2>&1 | grep -v "^  \["
  for i in $(seq 1 "$repeats"); do
    echo "== null patch $i"; "$ppb" propose "$root/suites/proposals/vllm-comment-patch.yaml" --backend cuda --db "$out/null.db" 2>&1 | grep -E "^(verdict|weighted|REJECT|ACCEPT|INCONCLUSIVE)"
  done
  for v in ${PPB_VLLM_VERSIONS:-0.6.3 0.10.2 0.34.0}; do
    lib=$root/build-gpu/plugins/libppbk_vllm-triton@$v.so
    [ -f "$lib" ] || python3 "$root/kernels/vllm/triton/prepare.py" --from-wrapper --name "vllm-triton@$v" \
      --vllm "$PPBENCH_TREE_CACHE/vllm/vllm-$v" --ppbench "$ppb" --lib "$lib" "$root/suites/prefill.yaml" 2>&1 | tail -1
    echo "== release $v"; "$ppb" run "$root/suites/prefill.yaml" --backend cuda --db "$out/releases.db" --label "release-$v" \
      --impl "plugin:vllm-triton@$v" --no-progress --filter "block_m=128,block_n=128,num_warps=8,dtype=bf16" 2>&1 | tail -25
  done
} >"$log" 2>&1
rm -rf "$PPBENCH_TREE_CACHE"
cat "$log"
