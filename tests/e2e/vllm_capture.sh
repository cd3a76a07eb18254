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
# The whole preparation, where Triton is installed (it compiles for the target without a GPU): the library
# builds, and its table holds each case's kernel parameters as kernels/common/ppb_kernel_params.h lists them
# (bm, bn, w, st), which plugin.c matches against the ABI config by name.
TPY=""   # an interpreter with Triton: the system's, or the first python3 on the PATH
for p in "$PY" python3; do "$p" -c "import triton" 2>/dev/null && { TPY=$p; break; }; done
if [ -n "$TPY" ]; then
  expect_rc 0 "$TPY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --vllm "$WORK/tree" --case "$key" \
    --case "$key st=3" --out "$WORK/vt" --lib "$WORK/vt/libppbk_vllm_triton.so"
  [ -s "$WORK/vt/libppbk_vllm_triton.so" ] || fail "prepare.py built no library"
  table=$(echo "$WORK"/vt/*/variants_table.c)
  grep -q ", {128, 128, 8, 0}, " "$table" && grep -q ", {128, 128, 8, 3}, " "$table" \
    || fail "the table's kernel parameters: $(grep -A3 'ppbk_vt_variants\[\]' "$table")"
  # The library's own matching, asked through the ABI without a GPU: libcuda.so.1 resolved by the toolkit's stub.
  stub=$(ls /usr/local/cuda*/lib*/stubs/libcuda.so 2>/dev/null | head -n 1)
  if [ -n "$stub" ]; then
    mkdir -p "$WORK/stub" && ln -s "$stub" "$WORK/stub/libcuda.so.1"
    cc -std=c11 -Wall -Wextra -Werror -I"$SRC/kernels" "$SRC/tests/e2e/vllm_triton_match.c" -o "$WORK/match" -ldl \
      || fail "vllm_triton_match.c does not build"
    # the shape's block table: ctx 300 over pages of 16
    LD_LIBRARY_PATH="$WORK/stub" "$WORK/match" "$WORK/vt/libppbk_vllm_triton.so" 19 >"$WORK/match.out" 2>&1 \
      || fail "the library's case matching: $(cat "$WORK/match.out")"
    # Decode through vLLM's unified attention (a synthetic tree shaped like 0.10.2's): prepared, compiled,
    # and the library's decode_v1 asked the same way.
    mkdir -p "$WORK/utree/vllm/attention/ops"
    "$PY" -c "import sys; sys.path.insert(0, sys.argv[1]); import vllm_capture; print(vllm_capture.SYNTHETIC_UNIFIED)" \
      "$SRC/tests/e2e" >"$WORK/utree/vllm/attention/ops/triton_unified_attention.py"
    dkey='paged_attention b=3 seq=100 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 v=1 t=128 p=512 hp=0 path=auto'
    expect_rc 0 "$TPY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --from-wrapper --vllm "$WORK/utree" \
      --case "$dkey" --case "${dkey/v=1/v=2}" --out "$WORK/vtu" --lib "$WORK/vtu/libppbk_vllm_triton.so"
    grep -q "0 prefill cases.*1 decode cases" "$WORK/out" || fail "decode preparation: $(cat "$WORK/out")"
    LD_LIBRARY_PATH="$WORK/stub" "$WORK/match" --decode "$WORK/vtu/libppbk_vllm_triton.so" >"$WORK/match.out" 2>&1 \
      || fail "the library's decode matching: $(cat "$WORK/match.out")"
    # Prefill through the same kernels (--prefill-kernel unified): a mixed batch, its cache staged by the plugin.
    mkdir -p "$WORK/ptree/vllm/attention/ops"
    "$PY" -c "import sys; sys.path.insert(0, sys.argv[1]); import vllm_capture; \
print(vllm_capture.SYNTHETIC_UNIFIED.replace('assert causal and max_seqlen_q == 1', 'assert causal'))" \
      "$SRC/tests/e2e" >"$WORK/ptree/vllm/attention/ops/triton_unified_attention.py"
    pkey='prefix_prefill b=3 q=40 ctx=37 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 dec=2 bm=16 bn=32 w=4'
    expect_rc 0 "$TPY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --prefill-kernel unified \
      --vllm "$WORK/ptree" --case "$pkey" --out "$WORK/vtp" --lib "$WORK/vtp/libppbk_vllm_triton.so"
    grep -q "1 prefill cases (unified attention, wrapper" "$WORK/out" || fail "unified prefill preparation: $(cat "$WORK/out")"
    LD_LIBRARY_PATH="$WORK/stub" "$WORK/match" --unified-prefill "$WORK/vtp/libppbk_vllm_triton.so" >"$WORK/match.out" 2>&1 \
      || fail "the library's unified prefill matching: $(cat "$WORK/match.out")"
  else
    echo "vllm_capture: no CUDA toolkit stub of libcuda: the library's matching was not asked"
  fi
else
  echo "vllm_capture: no Triton here: the whole preparation was not tried"
fi
# A tree without the kernel file: one line naming what was looked for.
expect_rc 1 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --print-launches --vllm "$WORK" --case "$key"
[ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q "no vllm/attention/ops/prefix_prefill.py or vllm/v1/attention/ops/prefix_prefill.py or vllm/attention/ops/triton_unified_attention.py or vllm/v1/attention/ops/triton_unified_attention.py or vllm/attention/ops/chunked_prefill_paged_decode.py or vllm/v1/attention/ops/chunked_prefill_paged_decode.py under" "$WORK/err" \
  || fail "missing tree: $(cat "$WORK/err")"
# A tree with one family asked for the other's case: one line naming the file it lacks.
mkdir -p "$WORK/only-unified/vllm/attention/ops"
"$PY" -c "import sys; sys.path.insert(0, sys.argv[1]); import vllm_capture; print(vllm_capture.SYNTHETIC_UNIFIED)" \
  "$SRC/tests/e2e" >"$WORK/only-unified/vllm/attention/ops/triton_unified_attention.py"
expect_rc 1 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --print-launches --vllm "$WORK/only-unified" --case "$key"
[ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q "the tree has no vllm/attention/ops/prefix_prefill.py" "$WORK/err" \
  || fail "a tree without the prefill file: $(cat "$WORK/err")"
# chunked_prefill_paged_decode (--prefill-kernel chunked) on a tree shaped like 0.10.2's: the prefix prefill
# beside it and the paged-attention kernel, recorded in that order for a mixed batch.
mkdir -p "$WORK/ctree/vllm/attention/ops"
for f in prefix_prefill:SYNTHETIC_CHUNKED_PREFIX chunked_prefill_paged_decode:SYNTHETIC_CHUNKED; do
  "$PY" -c "import sys; sys.path.insert(0, sys.argv[1]); import vllm_capture; print(getattr(vllm_capture, sys.argv[2]))" \
    "$SRC/tests/e2e" "${f#*:}" >"$WORK/ctree/vllm/attention/ops/${f%%:*}.py"
done
ckey='prefix_prefill b=3 q=40 ctx=37 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 dec=2 bm=16 bn=32 w=4'
expect_rc 0 "$PY" "$SRC/kernels/vllm/triton/prepare.py" --target cuda:90 --print-launches --prefill-kernel chunked \
  --vllm "$WORK/ctree" --case "$ckey"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); k=[x['kernel'] for x in d[0]['launches']]; \
assert len(d)==1 and k==['_fwd_kernel','kernel_paged_attention_2d'] and d[0]['staged_blocks_per_seq']==5, d" \
  "$WORK/out" || fail "prepare.py --prefill-kernel chunked: $(cat "$WORK/out")"
echo "vllm_capture: ok"
