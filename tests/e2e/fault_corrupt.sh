#!/usr/bin/env bash
# Fault injection (issue 7): a damaged database file. Truncated to half, its
# header overwritten, random bytes written over its middle pages: every command
# (list, show, export, run --resume, a new run) fails with exit 3 or 4 and a
# message naming the file (damaged pages are found by SQLite's quick_check when
# the file is opened, before anything reads or appends); none crashes, and the
# file stays byte-for-byte as it was. An intact file before the damage must
# work, so the test can fail.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/faults/fault.bash"
expect_rc 0 "$PPB" run "$FAULT_SUITE" --db "$WORK/good.db" --no-progress
sqlite3 "$WORK/good.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
rm -f "$WORK/good.db-wal" "$WORK/good.db-shm"
size=$(stat -c %s "$WORK/good.db")
[ "$size" -ge 65536 ] || fail "database too small to damage in the middle ($size bytes)"

# try DB WHAT: every command on DB; count clear refusals
try_all() {
  local db=$1 what=$2 sum refused=0 rc
  sum=$(sha256sum <"$db")
  for cmd in "list --db $db" "show 1 --db $db" "export 1 --db $db --format csv" \
             "run --resume 1 --db $db --no-progress" "run $FAULT_SUITE --db $db --no-progress"; do
    set +e
    # shellcheck disable=SC2086 # split the command into its words
    "$PPB" $cmd >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
    case "$rc" in
      3|4) grep -q "$(basename "$db")" "$WORK/err" || { cat "$WORK/err"; fail "$what: '$cmd': error does not name the file"; }
           refused=$((refused + 1)) ;;
      0|1) cat "$WORK/err"; fail "$what: '$cmd' exited $rc on a damaged file" ;;
      *) cat "$WORK/err"; fail "$what: '$cmd' exited $rc (crash?)" ;;
    esac
    [ "$(sha256sum <"$db")" = "$sum" ] || fail "$what: '$cmd' changed the damaged file"
    [ ! -s "$db-wal" ] || fail "$what: '$cmd' wrote a WAL next to the damaged file"
  done
  echo "$what: $refused of 5 commands refused, file unchanged: $(head -1 "$WORK/err")"
  [ "$refused" -eq 5 ] || fail "$what: only $refused of 5 commands noticed the damage"
}

cp "$WORK/good.db" "$WORK/half.db"
truncate -s $((size / 2)) "$WORK/half.db"
try_all "$WORK/half.db" truncated

cp "$WORK/good.db" "$WORK/header.db"
printf 'this is not the SQLite header!!!' | dd of="$WORK/header.db" conv=notrunc status=none
try_all "$WORK/header.db" header

cp "$WORK/good.db" "$WORK/middle.db"
# 4 KiB of random bytes at every third 4 KiB page of the second half: the
# schema reads fine, only data pages are damaged (what a plain read misses)
for off in $(seq $((size / 2 / 4096 * 4096)) 12288 $((size - 4096))); do
  head -c 4096 /dev/urandom | dd of="$WORK/middle.db" bs=1 seek="$off" conv=notrunc status=none
done
try_all "$WORK/middle.db" middle
grep -q "is damaged (SQLite quick_check" "$WORK/err" || fail "middle: the damage is not named: $(cat "$WORK/err")"

# A cell overwritten in place with a valid value (an edited median, a changed sample): SQLite sees a
# healthy file, the row check does not. Reading the run fails naming the result; a row marked as
# rewritten on purpose (row_check = NULL, as tests that fabricate histories do) is read unchecked.
for edit in "UPDATE results SET median_ms = median_ms * 0.5 WHERE id = 2" \
            "UPDATE samples SET ms = ms * 0.5 WHERE result_id = 3 AND idx = 0" \
            "UPDATE results SET reason = 'fine' WHERE id = 4"; do
  cp "$WORK/good.db" "$WORK/edited.db"
  sqlite3 "$WORK/edited.db" "$edit"
  expect_rc 4 "$PPB" show 1 --db "$WORK/edited.db"
  grep -q "was changed after ppbench wrote it (its row check no longer matches)" "$WORK/err" \
    || { cat "$WORK/err"; fail "'$edit' not detected"; }
done
sqlite3 "$WORK/edited.db" "UPDATE results SET row_check = NULL WHERE id = 4"
expect_rc 0 "$PPB" show 1 --db "$WORK/edited.db"

# the intact copy works, so the refusals above come from the damage
expect_rc 0 "$PPB" list --db "$WORK/good.db"
echo "fault_corrupt: ok"
