#!/usr/bin/env bash
# tests/gpu/sdpa_anchor.py (the `anchor` step of tests/gpu/run.sh) on a machine without a GPU:
# it says so and exits 2, never an empty success; --help describes it. Where torch sees a CUDA
# device the GPU step measures it instead: skipped (77).
source "$(dirname "$0")/lib.bash"
script=$SRC/tests/gpu/sdpa_anchor.py
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "skip: torch sees a CUDA device here (tests/gpu/run.sh OUT anchor measures it)"; exit 77
fi
python3 "$script" --help >"$WORK/help" 2>&1 || { cat "$WORK/help"; fail "--help exited $?"; }
grep -q -- "--shape" "$WORK/help" || { cat "$WORK/help"; fail "--help does not list --shape"; }
set +e; python3 "$script" --json "$WORK/sdpa.json" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ $rc -eq 2 ] && grep -Eq "^sdpa_anchor: (no torch|no CUDA device: nothing timed)$" "$WORK/err" \
  || { cat "$WORK/out" "$WORK/err"; fail "without a GPU: exit $rc, expected 2 saying why"; }
[ ! -e "$WORK/sdpa.json" ] || fail "wrote $WORK/sdpa.json with nothing timed"
echo "ok: without a GPU sdpa_anchor says '$(cat "$WORK/err")' and exits 2"
