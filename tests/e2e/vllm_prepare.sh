#!/usr/bin/env bash
# The production kernels' preparation fails in one line naming what to install
# or fetch (docs/KERNEL-ABI.md): no Triton, no vLLM source, a wrong archive.
# The GPU machine runs the successful paths (tests/gpu/run.sh vllm).
source "$(dirname "$0")/lib.bash"
KEY='prefix_prefill b=1 q=17 ctx=0 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 bm=64 bn=64 w=4 path=auto'
one_line() { [ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$1: not one line"; }; }

# Whichever is missing first is named: Triton (CI has none) or the vLLM tree.
expect_rc 1 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --case "$KEY" --vllm "$WORK/no-vllm" --out "$WORK/c" --lib "$WORK/l.so"
one_line prepare
grep -Eq "pip install triton|fetch vLLM 0.6.3's source \(scripts/fetch-vllm.sh" "$WORK/err" || { cat "$WORK/err"; fail "prepare names nothing to install"; }

# A vLLM archive whose checksum is not the pinned one is refused, and nothing is extracted.
echo "not vllm" >"$WORK/vllm-0.6.3.tar.gz"
expect_rc 1 "$SRC/scripts/fetch-vllm.sh" --archive "$WORK/vllm-0.6.3.tar.gz" \
  --sha256 03e69029ad9caceaab68d5c3833ae6fe57c04be678ec37f29e9df6eaf178a9c5 "$WORK/deps"
one_line fetch-vllm
grep -q "refusing it" "$WORK/err" || fail "wrong archive not refused"
[ ! -e "$WORK/deps/vllm-0.6.3" ] || fail "a refused archive was extracted"

# ppbench without the libraries: --impl names what is missing and what to do (exit 3), nothing run.
expect_rc 3 "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/r.db" --backend cpu --impl vllm-triton --no-progress --filter "batch=1,query_len=17,context_len=0,dtype=bf16,block_m=64"
grep -q "^ppbench run: --impl: impl vllm-triton: no plugin named 'vllm-triton'.*kernels/vllm/triton/prepare.py" "$WORK/err" || { cat "$WORK/err"; fail "vllm-triton missing: no hint"; }
expect_rc 3 "$PPB" run "$SRC/suites/smoke-decode.yaml" --db "$WORK/r.db" --backend cpu --impl vllm-cuda --no-progress --filter "batch=1,seq_len=100,version=1"
grep -q "impl vllm-cuda: no plugin named 'vllm-cuda'.*PPB_VLLM_SOURCE" "$WORK/err" || { cat "$WORK/err"; fail "vllm-cuda missing: no hint"; }
echo "vllm_prepare: ok"
