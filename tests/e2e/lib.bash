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
# interrupt_half DB: make the database's runs look interrupted with the later half of their results gone, as a
# run killed midway leaves them, for `run --resume` to finish.
interrupt_half() {
  "$PY" - "$1" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1]); con.execute("PRAGMA foreign_keys = ON")
n = con.execute("SELECT count(*) FROM results").fetchone()[0]
con.execute("DELETE FROM results WHERE id IN (SELECT id FROM results ORDER BY id DESC LIMIT ?)", (n // 2,))
con.execute("UPDATE runs SET status = 'interrupted', finished_at = NULL")
con.commit()
PY
}
