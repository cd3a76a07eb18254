#!/usr/bin/env bash
# Issue 15 item 11: the commands that only read (list, show, export, report,
# trend, dump, compare's baseline) open the database read-only: they create no
# -wal/-shm/-journal file next to it, never change its bytes, and work when the
# database and its folder are read-only (as an unprivileged user when root).
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
need_user_dir
ppb() { as_user "$PPB" "$@"; }
mkdir "$WORK/d"; chown 65534 "$WORK/d" 2>/dev/null || true
db="$WORK/d/r.db"
S="$SRC/suites/smoke.yaml"
F="dtype=bf16,head_dim=64,batch=1,page_size=16,sliding_window=0"
for i in 1 2; do expect_rc 0 ppb run "$S" --db "$db" --filter "$F" --no-progress; done
[ -z "$(ls "$WORK/d" | grep -v '^r.db$')" ] || fail "a finished run left $(ls "$WORK/d")"
sum=$(sha256sum <"$db")
# reads LABEL: every reading command succeeds; no side file appears, the bytes stay
reads() {
  expect_rc 0 ppb list --db "$db"
  grep -q smoke "$WORK/out" || fail "$1: list shows no run"
  expect_rc 0 ppb show latest --db "$db"
  expect_rc 0 ppb export 1 --db "$db" --format csv
  [ "$(wc -l <"$WORK/out")" -gt 1 ] || fail "$1: export is empty"
  expect_rc 0 ppb export 1 --db "$db" --format json
  rm -rf "$WORK/rep"; mkdir "$WORK/rep"; chown 65534 "$WORK/rep" 2>/dev/null || true
  expect_rc 0 ppb report 1 --db "$db" -o "$WORK/rep/x"
  set +e; ppb trend "$S" --db "$db" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
  case $rc in 0|12) ;; *) cat "$WORK/err"; fail "$1: trend exited $rc";; esac
  set +e; ppb compare 1 2 --db "$WORK/c.db" --baseline-db "$db" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
  case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "$1: compare --baseline-db exited $rc";; esac
  local side; side=$(ls -A "$WORK/d" | grep -v '^r.db$' || true)
  [ -z "$side" ] || fail "$1: reading created $side next to the database"
  [ "$(sha256sum <"$db")" = "$sum" ] || fail "$1: reading changed the database"
  echo "$1: list, show, export, report, trend, compare's baseline: ok, no side file, bytes unchanged"
}
cp "$db" "$WORK/c.db"; chown 65534 "$WORK/c.db" 2>/dev/null || true
reads "writable folder"
chmod a-w "$db" "$WORK/d"
reads "read-only file and folder"
chmod u+w "$db" "$WORK/d"
# A database with a -wal file (a writer has it open, or was killed) is read
# through it: the results only the -wal holds are seen.
w="$WORK/d/w.db"
as_user bash -c "$(declare -f partial_run fail); PPB='$PPB' FAULT_SUITE='$FAULT_SUITE'; partial_run '$w'"
[ -s "$w-wal" ] || fail "the killed run left no -wal to read through"
n=$(stored "$w")
expect_rc 0 ppb export 1 --db "$w" --format csv
[ "$(($(wc -l <"$WORK/out") - 1))" -eq "$n" ] || fail "export through the -wal shows $(($(wc -l <"$WORK/out") - 1)) of $n results"
echo "a database with a -wal: its $n results read"
echo "readonly_read: ok"
