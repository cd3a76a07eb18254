#!/usr/bin/env bash
# Fault injection (issue 7): the disk fills up during a run. RLIMIT_FSIZE
# (ulimit -f) with SIGXFSZ ignored makes writes past the limit fail with EFBIG,
# as on a full disk, without root. The run must stop with exit 4 and an I/O
# error, keep every case it committed before, leave a database that passes
# integrity_check, and resume to what an uninterrupted run stores once there
# is room again. Several limits hit the fault at different points.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
expect_rc 0 "$PPB" run "$FAULT_SUITE" --db "$WORK/full.db" --no-progress
total=$(stored "$WORK/full.db")

# full_run DB KIB: a run of the suite into DB with files limited to KIB KiB
full_run() {
  bash -c 'trap "" XFSZ; ulimit -f "$1"; shift; exec "$@"' _ "$2" \
    "$PPB" run "$FAULT_SUITE" --db "$1" --no-progress
}

# No room at all: the database cannot even start its journal; the advice is about space, not about
# the file system.
# (through a pipe: the file size limit would stop the message too if stderr were a file)
set +e; full_run "$WORK/full_0.db" 0 2>&1 | cat >"$WORK/err"; rc=${PIPESTATUS[0]}; set -e
[ "$rc" = 4 ] || { cat "$WORK/err"; fail "no room: exit $rc, expected 4"; }
grep -q "cannot switch to WAL journal mode .*; writing beside the database failed: check the free space" "$WORK/err" \
  || { cat "$WORK/err"; fail "no room: misleading advice"; }
! grep -q "use a local file system" "$WORK/err" || fail "no room: file system advice"

mid=0
for kib in 60 300 600 900; do
  db="$WORK/full_$kib.db"
  expect_rc 4 full_run "$db" "$kib"
  grep -qi "disk I/O error\|database or disk is full\|file too large" "$WORK/err" ||
    { cat "$WORK/err"; fail "limit $kib KiB: no clear I/O error"; }
  msg=$(grep -i "disk I/O error\|disk is full\|file too large" "$WORK/err" | head -1)
  if [ "$(run_status "$db")" = "" ]; then
    # full before the run was recorded: nothing to resume, the file is usable
    echo "limit ${kib} KiB: no run recorded: $msg"
    expect_rc 0 "$PPB" list --db "$db"
    continue
  fi
  kept=$(stored "$db")
  check_db "$db"
  # what was committed before the failure is kept, and is what the full run has
  keys "$db" >"$WORK/part.keys"
  [ "$(wc -l <"$WORK/part.keys")" -eq "$kept" ] || fail "limit $kib KiB: export shows a different count"
  comm -23 "$WORK/part.keys" <(keys "$WORK/full.db") | grep -q . && fail "limit $kib KiB: stored a case the full run does not have"
  [ "$kept" -gt 0 ] && [ "$kept" -lt "$total" ] && mid=$((mid + 1))
  echo "limit ${kib} KiB: $kept of $total cases kept: $msg"
  expect_rc 0 "$PPB" run --resume 1 --db "$db" --no-progress
  same_as_full "$db"
done
[ "$mid" -ge 1 ] || fail "no limit interrupted the run part-way (suite or page size changed?)"
echo "fault_disk_full: ok ($mid runs filled the disk mid-run and were resumed)"
