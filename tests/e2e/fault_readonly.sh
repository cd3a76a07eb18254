#!/usr/bin/env bash
# Fault injection (issue 7): a read-only database (file chmod 444, or its
# directory read-only so the WAL cannot be created) when a run starts or
# resumes. Every command that writes fails with exit 4 and a message saying
# so; the file is not changed; reading still works; once writable again the
# run resumes to what an uninterrupted run stores.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
need_user_dir
ppb() { as_user "$PPB" "$@"; }

expect_rc 0 ppb run "$FAULT_SUITE" --db "$WORK/full.db" --no-progress
mkdir "$WORK/d"; chown 65534 "$WORK/d" 2>/dev/null || true
db="$WORK/d/part.db"
as_user bash -c "$(declare -f partial_run fail); PPB='$PPB' FAULT_SUITE='$FAULT_SUITE'; partial_run '$db'"
before=$(stored "$db")
[ "$before" -lt "$(wc -l <<<"$(ppb list "$FAULT_SUITE")")" ] || fail "nothing left to resume"

clear_error='readonly\|read-only\|permission\|unable to open'
# check_refused WHAT: resume and a new run both refused with exit 4 and a
# clear message, the file unchanged; list and export still work (opened read-only)
check_refused() {
  local sum msg; sum=$(sha256sum <"$db")
  expect_rc 4 ppb run --resume 1 --db "$db" --no-progress
  grep -qi "$clear_error" "$WORK/err" || { cat "$WORK/err"; fail "$1: resume: no clear error"; }
  msg=$(grep -i "$clear_error" "$WORK/err" | head -1)
  expect_rc 4 ppb run "$FAULT_SUITE" --db "$db" --no-progress
  grep -qi "$clear_error" "$WORK/err" || { cat "$WORK/err"; fail "$1: run: no clear error"; }
  [ "$(sha256sum <"$db")" = "$sum" ] || fail "$1: the database changed"
  echo "$1: refused with: $msg"
  # Reading needs no -shm file: a read-only directory can still be listed.
  expect_rc 0 ppb list --db "$db"
  expect_rc 0 ppb export 1 --db "$db" --format csv
  [ "$(($(wc -l <"$WORK/out") - 1))" -eq "$before" ] || fail "$1: export does not show the $before stored cases"
}

chmod 444 "$db"
check_refused "file 444"
chmod 644 "$db"
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
rm -f "$db-wal" "$db-shm"
chmod 555 "$WORK/d"
check_refused "directory 555"
chmod 755 "$WORK/d"

expect_rc 0 ppb run --resume 1 --db "$db" --no-progress
same_as_full "$db"
echo "fault_readonly: ok ($before cases kept, resumed to completion)"
