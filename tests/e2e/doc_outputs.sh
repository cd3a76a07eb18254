#!/usr/bin/env bash
# --json / --markdown never destroy stored results or write through what is
# planted at their path: a document path that is the database (or one of its
# journal files, or any SQLite file) is refused before anything runs; a
# symbolic link or FIFO there is replaced, not written through or blocked on;
# two documents on stdout are a usage error.
source "$(dirname "$0")/lib.bash"
suite="$SRC/tests/data/suites/good/minimal.yaml"
run() { "$PPB" run "$suite" --backend cpu --no-progress --db "$WORK/r.db" "$@"; }
runs() { sqlite3 "$WORK/r.db" "SELECT count(*) FROM runs"; }

expect_rc 0 run
[ "$(runs)" = 1 ] || fail "the first run was not stored"
size=$(stat -c %s "$WORK/r.db")

# The database itself, by the same or another spelling, and its journal files.
mkdir "$WORK/sub"
for doc in "$WORK/r.db" "$WORK/sub/../r.db" "$WORK/r.db-wal" "$WORK/r.db-shm" "$WORK/r.db-journal"; do
  for opt in --json --markdown; do
    expect_rc 2 run "$opt" "$doc"
    grep -q "refusing to write a document over stored results" "$WORK/err" || fail "$opt $doc: $(cat "$WORK/err")"
  done
done
[ "$(runs)" = 1 ] && [ "$(stat -c %s "$WORK/r.db")" -ge "$size" ] || fail "the database lost data"
# A database the run is about to create is the database too.
expect_rc 2 "$PPB" run "$suite" --backend cpu --no-progress --db "$WORK/new.db" --json "$WORK/new.db"
[ ! -e "$WORK/new.db" ] || fail "a refused run created its database"
# Any other SQLite file.
cp "$WORK/r.db" "$WORK/other.db"
expect_rc 2 run --markdown "$WORK/other.db"
grep -q "is an SQLite database" "$WORK/err" || fail "other database: $(cat "$WORK/err")"
[ "$(sqlite3 "$WORK/other.db" "SELECT count(*) FROM runs")" = 1 ] || fail "another database was damaged"
# The read-only commands that write documents refuse it too.
expect_rc 2 "$PPB" compare 1 1 --db "$WORK/r.db" --json "$WORK/r.db"
expect_rc 2 "$PPB" trend "$suite" --db "$WORK/r.db" --markdown "$WORK/r.db-wal"
[ "$(runs)" = 1 ] || fail "the database lost data"

# Both on stdout, or both into one file.
expect_rc 2 run --json - --markdown -
grep -q "both write to standard output" "$WORK/err" || fail "two documents on stdout: $(cat "$WORK/err")"
expect_rc 2 run --json "$WORK/same" --markdown "$WORK/same"

# A planted symbolic link is replaced, its target left alone.
echo "precious" >"$WORK/target"
ln -s "$WORK/target" "$WORK/doc.json"
expect_rc 0 run --json "$WORK/doc.json"
[ "$(cat "$WORK/target")" = precious ] || fail "the link's target was overwritten"
[ ! -L "$WORK/doc.json" ] && "$PY" -c "import json,sys; json.load(open(sys.argv[1]))" "$WORK/doc.json" \
  || fail "the document did not replace the link"
# A FIFO does not block the run (timeout: a blocked open would hang here).
mkfifo "$WORK/doc.md"
expect_rc 0 timeout 60 "$PPB" run "$suite" --backend cpu --no-progress --db "$WORK/r.db" --markdown "$WORK/doc.md"
[ -f "$WORK/doc.md" ] && grep -q "ppbench run" "$WORK/doc.md" || fail "the FIFO was not replaced by the document"
# No temporary is left behind.
ls "$WORK" | grep -q "\.tmp-" && fail "a temporary document was left: $(ls "$WORK")"
[ "$(runs)" = 3 ] || fail "expected 3 stored runs, got $(runs)"
echo "doc_outputs: ok"
