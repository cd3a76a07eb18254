# Helpers for the e2e tests that start servers on loopback (sourced after lib.bash).
# Every daemon started here is recorded and stopped on exit; nothing listens
# beyond 127.0.0.1.

_PPB_PIDS=()
_ppb_net_cleanup() {
  local pid
  for pid in "${_PPB_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${_PPB_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap _ppb_net_cleanup EXIT

# A test that cannot run here (a daemon that cannot be installed or started)
# says why and exits 77, which CTest reports as skipped.
skip() { echo "SKIP: $*"; exit 77; }

# A TCP port on 127.0.0.1 that was free a moment ago.
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_http URL SECONDS: until URL answers (any status), or fail.
wait_http() {
  "$PY" - "$1" "$2" <<'PY'
import sys, time, urllib.request, urllib.error
url, deadline = sys.argv[1], time.time() + float(sys.argv[2])
while time.time() < deadline:
    try:
        urllib.request.urlopen(url, timeout=1)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY
}

# start_fake NAME [fake_http.py options...]: starts tests/e2e/fake_http.py with
# its plan $WORK/NAME.plan and log $WORK/NAME.log; sets FAKE_PORT.
start_fake() {
  local name=$1; shift
  : >"$WORK/$name.plan"
  : >"$WORK/$name.log"
  rm -f "$WORK/$name.port"
  "$PY" "$SRC/tests/e2e/fake_http.py" --port-file "$WORK/$name.port" --plan "$WORK/$name.plan" \
    --log "$WORK/$name.log" --lifetime 300 "$@" 2>"$WORK/$name.stderr" &
  _PPB_PIDS+=($!)
  local i
  for i in $(seq 100); do
    [ -s "$WORK/$name.port" ] && break
    sleep 0.05
  done
  [ -s "$WORK/$name.port" ] || fail "the fake server $name did not start: $(cat "$WORK/$name.stderr")"
  FAKE_PORT=$(cat "$WORK/$name.port")
}

# requests NAME: how many requests the fake server NAME has logged.
requests() { wc -l <"$WORK/$1.log" | tr -d ' '; }
