#!/usr/bin/env bash
# What a vLLM tree's wrapper launches, recorded on the CPU without torch or
# Triton (kernels/vllm/triton/capture.py): a synthetic kernel file (binding by
# name, knob overrides, one-line refusals), then prepare.py --print-launches
# on it as a user would call it.
source "$(dirname "$0")/lib.bash"
"$PY" "$SRC/tests/e2e/vllm_capture.py" || fail "capture.py"
mkdir -p "$WORK/tree/vllm/attention/ops"
"$PY" -c "import sys; sys.path.insert(0, sys.argv[1]); import vllm_capture; print(vllm_capture.SYNTHETIC)" \
  "$SRC/tests/e2e" >"$WORK/tree/vllm/attention/ops/prefix_prefill.py"
key='prefix_prefill b=2 q=100 ctx=300 h=8 kvh=2 d=128 dtype=bf16 page=16 win=0 bm=128 bn=128 w=8'
expect_rc 0 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --print-launches --from-wrapper \
  --vllm "$WORK/tree" --case "$key"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d)==1 and d[0]['grid']==[2,8,1] and d[0]['constexprs']['BLOCK_N']==64, d" \
  "$WORK/out" || fail "prepare.py --print-launches: $(cat "$WORK/out")"
# A knob sweep (no --from-wrapper): a key's st=3 is launched with 3 stages, the key without st= with the wrapper's 2.
expect_rc 0 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --print-launches \
  --vllm "$WORK/tree" --case "$key" --case "$key st=3"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); got=sorted((x['knobs']['st'], x['num_stages']) for x in d); \
assert got == [(0, 2), (3, 3)], got" "$WORK/out" || fail "prepare.py num_stages: $(cat "$WORK/out")"
# A tree without the kernel file: one line naming what was looked for.
expect_rc 1 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --print-launches --vllm "$WORK" --case "$key"
[ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q "no vllm/attention/ops/prefix_prefill.py or vllm/v1/attention/ops/prefix_prefill.py under" "$WORK/err" \
  || fail "missing tree: $(cat "$WORK/err")"
echo "vllm_capture: ok"
