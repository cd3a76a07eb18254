#!/usr/bin/env bash
# source_patch proposals on the CPU: a change is applied to a copy of the
# tree (never the tree itself) by content or as a unified diff; one that does
# not apply exits 3 naming the proposal's line and the tree's file (and the
# hunk); one that touches no kernel ppbench knows says so. A change that
# applies makes two content-addressed trees and prepares each (here a stand-in
# prepare.py records what it was asked; the GPU machine runs the real one).
source "$(dirname "$0")/lib.bash"
export PPBENCH_TREE_CACHE="$WORK/cache" PPBENCH_DB="$WORK/p.db"

# A tree with the seed's two lines (the real 0.6.3 file is fetched on the GPU machine).
T="$WORK/tree"
mkdir -p "$T/vllm/attention/ops"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.6.3\n' >"$T/PKG-INFO"
cat >"$T/vllm/attention/ops/prefix_prefill.py" <<'PY'
def context_attention_fwd(q):
        BLOCK = 128 if current_platform.has_device_capability(80) else 64
        NUM_WARPS = 8
        # twice: NUM_WARPS
PY
echo "max_num_batched_tokens = 8192" >"$T/vllm/config.py"
(cd "$T" && find . -type f -exec sha256sum {} + | sort) >"$WORK/tree.sum"

proposal() { # proposal NAME BODY...: a source_patch proposal on $T over the smoke suite
  local f="$WORK/$1.yaml"; shift
  { printf 'name: %s\nkind: source_patch\nsuite: %s\nvllm: %s\n' "$(basename "$f" .yaml)" "$SRC/suites/smoke.yaml" "$T"
    printf '%s\n' "$@"; } >"$f"
  echo "$f"
}
replace() { # replace FILE OLD NEW (YAML double-quoted strings)
  printf 'replace:\n  - file: %s\n    old: "%s"\n    new: "%s"\n' "$1" "$2" "$3"
}

# Text that is not there: exit 3, naming the proposal's line, the field and the file.
p=$(proposal missing "$(replace prefix_prefill.py '        BLOCK = 256' '        BLOCK = 64')")
expect_rc 3 "$PPB" propose "$p"
grep -q "missing.yaml:6: replace\[0\].old: '        BLOCK = 256' is not in $T/vllm/attention/ops/prefix_prefill.py" "$WORK/err" \
  || fail "missing text: $(cat "$WORK/err")"
# Text that is there twice: not applied by guess.
p=$(proposal twice "$(replace prefix_prefill.py 'NUM_WARPS' 'N')")
expect_rc 3 "$PPB" propose "$p"
grep -q "replace\[0\].old: 'NUM_WARPS' occurs more than once" "$WORK/err" || fail "twice: $(cat "$WORK/err")"
# A file that is not in the tree.
p=$(proposal nofile "$(replace attention.py 'a' 'b')")
expect_rc 3 "$PPB" propose "$p"
grep -q "replace\[0\].file: no file 'attention.py' in $T" "$WORK/err" || fail "no file: $(cat "$WORK/err")"
# A change to no kernel ppbench knows.
p=$(proposal serving "$(replace vllm/config.py '8192' '16384')")
expect_rc 3 "$PPB" propose "$p"
grep -q "touches no kernel file ppbench knows.*it touches vllm/config.py: nothing to judge" "$WORK/err" \
  || fail "serving-only change: $(cat "$WORK/err")"
# A diff whose hunk does not apply names the file and line (made against another text).
mkdir -p "$WORK/other/a/vllm/attention/ops" "$WORK/other/b/vllm/attention/ops"
sed 's/BLOCK = 128 if .*/BLOCK = 256/' "$T/vllm/attention/ops/prefix_prefill.py" >"$WORK/other/a/vllm/attention/ops/prefix_prefill.py"
sed 's/BLOCK = 128 if .*/BLOCK = 64/' "$T/vllm/attention/ops/prefix_prefill.py" >"$WORK/other/b/vllm/attention/ops/prefix_prefill.py"
(cd "$WORK/other" && diff -u a/vllm/attention/ops/prefix_prefill.py b/vllm/attention/ops/prefix_prefill.py) >"$WORK/bad.diff" || true
p=$(proposal baddiff "patch: $WORK/bad.diff")
expect_rc 3 "$PPB" propose "$p"
grep -q "patch $WORK/bad.diff does not apply to $T: patch failed: vllm/attention/ops/prefix_prefill.py:1" "$WORK/err" \
  || fail "bad diff: $(cat "$WORK/err")"
# Both forms at once, or neither: the proposal is refused at its field.
expect_rc 3 "$PPB" propose "$(proposal both "patch: $WORK/bad.diff" "$(replace a b c)")"
grep -q "replace: give patch or replace, not both" "$WORK/err" || fail "both: $(cat "$WORK/err")"
expect_rc 3 "$PPB" propose "$(proposal neither "")"
grep -q "patch: required" "$WORK/err" || fail "neither: $(cat "$WORK/err")"
[ ! -d "$WORK/cache/trees" ] || [ -z "$(ls "$WORK/cache/trees")" ] || fail "a refused change left trees: $(ls "$WORK/cache/trees")"

# A change that applies: a stand-in prepare.py (PPB_SOURCE_DIR) records its arguments.
S="$WORK/src"
mkdir -p "$S/kernels/vllm/triton"
cat >"$S/kernels/vllm/triton/prepare.py" <<'PY'
import sys, os
with open(os.environ["PREPARE_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
PY
export PPB_SOURCE_DIR="$S" PREPARE_LOG="$WORK/prepare.log"
# The same change as a diff, plus a serving option ppbench does not judge here.
cp -r "$T" "$WORK/changed"
sed -i 's/BLOCK = 128 if .*/BLOCK = 64/; s/NUM_WARPS = 8/NUM_WARPS = 4/' "$WORK/changed/vllm/attention/ops/prefix_prefill.py"
sed -i 's/8192/16384/' "$WORK/changed/vllm/config.py"
for f in vllm/attention/ops/prefix_prefill.py vllm/config.py; do
  (cd "$WORK" && diff -u --label "a/$f" --label "b/$f" "tree/$f" "changed/$f") || true
done >"$WORK/good.diff"
for form in replace diff; do
  if [ $form = replace ]; then
    p=$(proposal good "$(replace prefix_prefill.py '        BLOCK = 128 if current_platform.has_device_capability(80) else 64\n        NUM_WARPS = 8' '        BLOCK = 64\n        NUM_WARPS = 4')")
  else
    p=$(proposal good "patch: $WORK/good.diff")
  fi
  : >"$PREPARE_LOG"
  set +e; "$PPB" propose "$p" --backend cpu >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
  [ $rc -ne 0 ] || fail "$form: no implementation ran, yet exit 0"
  base=$(sed -n 's/^source_patch: baseline \([^ ]*\) .*/\1/p' "$WORK/err")
  cand=$(sed -n 's/^source_patch: candidate \([^ ]*\) .*/\1/p' "$WORK/err")
  case "$base" in 0.6.3-????????) ;; *) fail "$form: baseline label '$base': $(cat "$WORK/err")" ;; esac
  case "$cand" in 0.6.3-????????) ;; *) fail "$form: candidate label '$cand'" ;; esac
  [ "$base" != "$cand" ] || fail "$form: the change did not change the label"
  grep -q "changed: vllm/attention/ops/prefix_prefill.py" "$WORK/err" || fail "$form: changed file not named"
  if [ $form = diff ]; then
    grep -q "not judged here (no kernel ppbench knows): vllm/config.py" "$WORK/err" || fail "diff: config.py not named"
  fi
  grep -q "^        BLOCK = 64$" "$WORK/cache/trees/$cand/vllm/attention/ops/prefix_prefill.py" || fail "$form: not applied"
  cmp -s "$T/vllm/attention/ops/prefix_prefill.py" "$WORK/cache/trees/$base/vllm/attention/ops/prefix_prefill.py" \
    || fail "$form: the baseline copy differs from the tree"
  [ "$(grep -c -- "--from-wrapper --prefill-kernel prefix_prefill --name vllm-triton@" "$PREPARE_LOG")" = 2 ] \
    || fail "$form: prepare calls: $(cat "$PREPARE_LOG")"
  grep -q -- "--name vllm-triton@$cand --vllm $WORK/cache/trees/$cand " "$PREPARE_LOG" || fail "$form: candidate not prepared"
  # Nothing was prepared by the stand-in: every case is refused naming the implementation, never run on another.
  grep -q "no plugin named 'vllm-triton@$base'" "$WORK/out" "$WORK/err" || fail "$form: refusal not named: $(cat "$WORK/out")"
  echo "$form $base $cand" >>"$WORK/labels"
done
# An upgrade: the candidate is another tree (its kernel under vllm/v1/), no change needed.
T2="$WORK/tree-new"
mkdir -p "$T2/vllm/v1/attention/ops"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.34.0\n' >"$T2/PKG-INFO"
echo "def context_attention_fwd(q): pass" >"$T2/vllm/v1/attention/ops/prefix_prefill.py"
: >"$PREPARE_LOG"
p=$(proposal upgrade "candidate_vllm: $T2")
set +e; "$PPB" propose "$p" --backend cpu >"$WORK/out" 2>"$WORK/err"; set -e
grep -q "^source_patch: baseline 0.6.3-[0-9a-f]\{8\} " "$WORK/err" || fail "upgrade: baseline: $(cat "$WORK/err")"
grep -q "^source_patch: candidate 0.34.0-[0-9a-f]\{8\} " "$WORK/err" || fail "upgrade: candidate: $(cat "$WORK/err")"
grep -q -- "--name vllm-triton@0.34.0-" "$PREPARE_LOG" || fail "upgrade: the new tree was not prepared"

# Decode: a change to a tree's Triton unified attention and to its backend's split (0.14+ layout: the kernel
# file, its helpers and the backend's constants are all copied into the judged tree and may all be patched),
# over a decode suite.
T3="$WORK/tree-decode"
mkdir -p "$T3/vllm/v1/attention/ops" "$T3/vllm/v1/attention/backends"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.34.0\n' >"$T3/PKG-INFO"
echo "def unified_attention(q): pass" >"$T3/vllm/v1/attention/ops/triton_unified_attention.py"
echo "def cdiv_fn(x, y): pass" >"$T3/vllm/v1/attention/ops/triton_attention_helpers.py"
printf 'MIN_LAUNCH_GRID_SIZE_2D = 128\nNUM_PAR_SOFTMAX_SEGMENTS = 16\n' >"$T3/vllm/v1/attention/backends/triton_attn.py"
: >"$PREPARE_LOG"
p="$WORK/decode.yaml"
printf 'name: decode-split\nkind: source_patch\nsuite: %s\nvllm: %s\n%s\n' "$SRC/suites/smoke-decode.yaml" "$T3" \
  "$(replace triton_attn.py 'NUM_PAR_SOFTMAX_SEGMENTS = 16' 'NUM_PAR_SOFTMAX_SEGMENTS = 32')" >"$p"
set +e; "$PPB" propose "$p" --backend cpu >"$WORK/out" 2>"$WORK/err"; set -e
grep -q "changed: vllm/v1/attention/backends/triton_attn.py" "$WORK/err" || fail "decode: changed file not named: $(cat "$WORK/err")"
dcand=$(sed -n 's/^source_patch: candidate \([^ ]*\) .*/\1/p' "$WORK/err")
grep -q "^NUM_PAR_SOFTMAX_SEGMENTS = 32$" "$WORK/cache/trees/$dcand/vllm/v1/attention/backends/triton_attn.py" \
  && [ -f "$WORK/cache/trees/$dcand/vllm/v1/attention/ops/triton_attention_helpers.py" ] \
  || fail "decode: the judged tree lacks the change or the helpers: $(ls -R "$WORK/cache/trees/$dcand")"
grep -q -- "--name vllm-triton@$dcand .*smoke-decode.yaml" "$PREPARE_LOG" || fail "decode: not prepared: $(cat "$PREPARE_LOG")"
# Both sides run the suite's shapes as version-1 cases, the one form the unified attention takes.
keys=$(sqlite3 "$PPBENCH_DB" "SELECT baseline_key || ' | ' || candidate_key FROM proposal_cases WHERE proposal_id = (SELECT max(id) FROM proposals)")
[ -n "$keys" ] && ! grep -v " v=1 .* | .* v=1 " <<<"$keys" | grep -q . || fail "decode: not every pair is version 1: $keys"

# Prefill on the V1 engine's kernel: one tree, its prefix prefill against its Triton unified attention (no change
# needed: the kernel is the change), each side prepared with its kernel under its own name.
T4="$WORK/tree-v1"
mkdir -p "$T4/vllm/v1/attention/ops"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.34.0\n' >"$T4/PKG-INFO"
echo "def context_attention_fwd(q): pass" >"$T4/vllm/v1/attention/ops/prefix_prefill.py"
echo "def unified_attention(q): pass" >"$T4/vllm/v1/attention/ops/triton_unified_attention.py"
: >"$PREPARE_LOG"
p="$WORK/v1.yaml"
printf 'name: v1-prefill\nkind: source_patch\nsuite: %s\nvllm: %s\ncandidate_prefill_kernel: unified\n' \
  "$SRC/suites/smoke.yaml" "$T4" >"$p"
set +e; "$PPB" propose "$p" --backend cpu >"$WORK/out" 2>"$WORK/err"; set -e
grep -q "^source_patch: prefill through the baseline's prefix_prefill, the candidate's unified$" "$WORK/err" \
  || fail "v1 prefill: $(cat "$WORK/err")"
grep -q -- "--prefill-kernel prefix_prefill --name vllm-triton@0.34.0-[0-9a-f]\{8\} " "$PREPARE_LOG" \
  && grep -q -- "--prefill-kernel unified --name vllm-triton-unified@0.34.0-[0-9a-f]\{8\} " "$PREPARE_LOG" \
  || fail "v1 prefill: prepare calls: $(cat "$PREPARE_LOG")"
keys=$(sqlite3 "$PPBENCH_DB" "SELECT baseline_key || ' | ' || candidate_key FROM proposal_cases WHERE proposal_id = (SELECT max(id) FROM proposals)")
[ -n "$keys" ] && ! grep -v "impl=plugin:vllm-triton@0.34.0-.* | .*impl=plugin:vllm-triton-unified@0.34.0-" <<<"$keys" | grep -q . \
  || fail "v1 prefill: the sides do not run their own kernels: $keys"
# The same tree's chunked_prefill_paged_decode as the candidate: prepared as vllm-triton-chunked@LABEL.
sed 's/candidate_prefill_kernel: unified/candidate_prefill_kernel: chunked/' "$p" >"$WORK/chunked.yaml"
: >"$PREPARE_LOG"
set +e; "$PPB" propose "$WORK/chunked.yaml" --backend cpu >"$WORK/out" 2>"$WORK/err"; set -e
grep -q "^source_patch: prefill through the baseline's prefix_prefill, the candidate's chunked$" "$WORK/err" &&
  grep -q -- "--prefill-kernel chunked --name vllm-triton-chunked@0.34.0-[0-9a-f]\{8\} " "$PREPARE_LOG" \
  || fail "chunked prefill: $(cat "$WORK/err" "$PREPARE_LOG")"
# A kernel that is not one, or a decode suite (whose kernel is the unified attention already): refused at the field.
printf 'name: bad-kernel\nkind: source_patch\nsuite: %s\nvllm: %s\nprefill_kernel: flash\n' "$SRC/suites/smoke.yaml" "$T4" >"$p"
expect_rc 3 "$PPB" propose "$p"
grep -q "v1.yaml:5.*prefill_kernel: 'flash' is not prefix_prefill, unified or chunked" "$WORK/err" || fail "bad kernel: $(cat "$WORK/err")"
printf 'name: decode-kernel\nkind: source_patch\nsuite: %s\nvllm: %s\ncandidate_prefill_kernel: unified\n' \
  "$SRC/suites/smoke-decode.yaml" "$T4" >"$p"
expect_rc 3 "$PPB" propose "$p"
grep -q "candidate_prefill_kernel: applies to a prefill suite, and this one's kernel is paged_attention" "$WORK/err" \
  || fail "decode suite: $(cat "$WORK/err")"

# The same content gives the same labels: replace and diff made the same candidate.
[ "$(awk '{print $3}' "$WORK/labels" | sort -u | wc -l)" = 1 ] || fail "two spellings of one change: $(cat "$WORK/labels")"
# The user's tree is never touched.
(cd "$T" && find . -type f -exec sha256sum {} + | sort) | cmp -s - "$WORK/tree.sum" || fail "the tree was modified"
echo "source_patch: ok"
