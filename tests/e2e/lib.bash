# Shared helpers for the end-to-end tests (sourced by each tests/e2e/*.sh).
set -euo pipefail
PPB=$(realpath "$1")
SRC=$(realpath "$2")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_rc WANT cmd... : run, capture stdout/stderr in $WORK/out, $WORK/err, check the exit code
expect_rc() {
  local want=$1; shift
  set +e; "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?; set -e
  if [ "$rc" -ne "$want" ]; then
    echo "--- stdout"; cat "$WORK/out"; echo "--- stderr"; cat "$WORK/err"
    fail "'$*' exited $rc, expected $want"
  fi
}
# Debian's python3 (with python3-numpy from scripts/debian-packages.txt), not a
# pyenv or venv python that lacks it.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
