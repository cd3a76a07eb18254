#!/usr/bin/env bash
# Issue 15 item 5: a baseline fetched by URL is a temporary copy in $TMPDIR.
# SIGTERM or SIGINT while it downloads ends the command with the interrupt
# code (130) within seconds and leaves no copy behind. (A signal while it is
# checked or read, and the SQLite step budget, are not exercised here.)
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/e2e/net.bash"
mkdir "$WORK/serve" "$WORK/tmp"
T="$WORK/serve/base.db"
"$PPB" run "$SRC/suites/smoke.yaml" --db "$T" --filter "dtype=bf16,head_dim=64,batch=1,page_size=16,sliding_window=0" \
  --no-progress >/dev/null 2>&1 || fail "seed run"
cp "$T" "$WORK/local.db"
start_fake srv --serve-dir "$WORK/serve"

for sig in TERM INT; do
  echo "trickle:20" >"$WORK/srv.plan"
  TMPDIR="$WORK/tmp" "$PPB" compare 1 1 --db "$WORK/local.db" --baseline-db "http://127.0.0.1:$FAKE_PORT/files/base.db" \
    >"$WORK/out" 2>"$WORK/err" &
  pid=$!
  # wait until the copy exists and has bytes in it
  for i in $(seq 100); do
    f=$(ls "$WORK/tmp" 2>/dev/null | head -1)
    [ -n "$f" ] && [ -s "$WORK/tmp/$f" ] && break
    sleep 0.1
  done
  [ -n "$f" ] || { kill -9 $pid; fail "$sig: no temporary copy appeared in TMPDIR"; }
  start=$(date +%s.%N)
  kill -"$sig" $pid
  set +e; wait $pid; rc=$?; set -e
  took=$("$PY" -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
  [ "$rc" -eq 130 ] || { cat "$WORK/err"; fail "SIG$sig during the download: exit $rc, expected 130"; }
  grep -q "interrupted" "$WORK/err" || { cat "$WORK/err"; fail "SIG$sig: no message"; }
  left=$(ls -A "$WORK/tmp")
  [ -z "$left" ] || fail "SIG$sig left $left in TMPDIR"
  "$PY" -c "import sys; assert float(sys.argv[1]) < 10, sys.argv[1]" "$took" || fail "SIG$sig took ${took}s to stop"
  echo "SIG$sig during the download: exit 130 in ${took}s, TMPDIR empty"
done

# Without a signal the same fetch works and leaves nothing either.
echo "200" >"$WORK/srv.plan"
set +e; TMPDIR="$WORK/tmp" "$PPB" compare 1 1 --db "$WORK/local.db" --baseline-db "http://127.0.0.1:$FAKE_PORT/files/base.db" \
  >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "compare with a fetched baseline exited $rc";; esac
[ -z "$(ls -A "$WORK/tmp")" ] || fail "a finished compare left $(ls -A "$WORK/tmp")"
echo "baseline_signal: ok"
