#!/usr/bin/env bash
# ppbench merge: shards from two "hosts" and a second suite fold into one
# database with every result, sample and env entry intact, the two shards of
# the night as one run (a re-run shard and another night's stay apart);
# merging again adds nothing; a run that grew since it was merged gets only its new results and
# its final status; sources are never written; mismatched schemas, older
# schemas and foreign files are refused before the output is touched.
source "$(dirname "$0")/lib.bash"

run_suite() { # run_suite DB SUITE [args...]: 0 or 1 (some case wrong) is fine
  local db=$1 suite=$2; shift 2
  set +e; "$PPB" run "$SRC/suites/$suite" --backend cpu --no-progress --db "$db" "$@" >/dev/null 2>"$WORK/run.err"; local rc=$?; set -e
  [ "$rc" -le 1 ] || { cat "$WORK/run.err"; fail "run $suite exited $rc"; }
}
run_suite "$WORK/a.db" smoke.yaml --shard 1/2
run_suite "$WORK/b.db" smoke.yaml --shard 2/2
run_suite "$WORK/b.db" smoke-decode.yaml
sum_before=$(md5sum "$WORK/a.db" "$WORK/b.db")

expect_rc 0 "$PPB" merge "$WORK/a.db" "$WORK/b.db" -o "$WORK/all.db"
grep -q "all.db: 2 runs and" "$WORK/out" || fail "summary: $(cat "$WORK/out")"
grep -q "b.db: 1 run added (0 already present), 1 shard folded" "$WORK/out" || fail "fold not reported: $(cat "$WORK/out")"
[ "$sum_before" = "$(md5sum "$WORK/a.db" "$WORK/b.db")" ] || fail "merge wrote to a source"

# same_content OUT SRC...: every run (by uid), result (by uid + case key, all
# columns), sample and env entry of the sources is in OUT exactly once. A
# shard folded into its night's run counts under that run's uid, its env
# entries under "shard<K>.".
same_content() {
  "$PY" - "$@" <<'PY'
import sqlite3, sys
out, srcs = sys.argv[1], sys.argv[2:]
ocon = sqlite3.connect(out)
night = {u: u for (u,) in ocon.execute("SELECT uid FROM runs")}
night.update(ocon.execute("SELECT p.uid, r.uid FROM run_parts p JOIN runs r ON r.id = p.run_id"))
folded = {u for u, n in night.items() if u != n}
shard_of = {}
def content(path, translate):
    con = sqlite3.connect(path)
    shard_of.update(con.execute("SELECT uid, shard_index FROM runs"))
    tr = (lambda u: night.get(u, "missing:" + u)) if translate else (lambda u: u)
    cols = [r[1] for r in con.execute("PRAGMA table_info(results)") if r[1] not in ("id", "run_id", "case_id", "stored_at")]
    res = {}
    for row in con.execute("SELECT u.uid, c.key, r.id, " + ", ".join("r." + c for c in cols) +
                           " FROM results r JOIN runs u ON u.id = r.run_id JOIN cases c ON c.id = r.case_id"):
        key = (tr(row[0]), row[1])
        assert key not in res, ("duplicate", key)
        samples = [s[0] for s in con.execute("SELECT ms FROM samples WHERE result_id = ? ORDER BY idx", (row[2],))]
        res[key] = (row[3:], samples)
    runs = {r[0]: r[1:] for r in con.execute("SELECT uid, suite_name, host, started_at, status, args, n_cases FROM runs")}
    env = {(tr(u), k if tr(u) == u or not translate else "shard%d.%s" % (shard_of[u], k), v)
           for u, k, v in con.execute("SELECT u.uid, e.key, e.value FROM env e JOIN runs u ON u.id = e.run_id")}
    return runs, res, env
o_runs, o_res, o_env = content(out, False)
want_runs, want_res, want_env = {}, {}, set()
for s in srcs:
    r, res, env = content(s, True)
    want_runs.update({u: v for u, v in r.items() if u not in folded}); want_res.update(res); want_env |= env
parts = dict(ocon.execute("SELECT r.uid, count(p.uid) FROM runs r LEFT JOIN run_parts p ON p.run_id = r.id GROUP BY r.id"))
# A night's run holds the sum of its shards' cases; other runs are copied as they are.
assert {u: v for u, v in o_runs.items() if parts[u] <= 1} == {u: v for u, v in want_runs.items() if parts.get(u, 0) <= 1}
assert o_runs.keys() == want_runs.keys(), (len(o_runs), len(want_runs))
assert o_res.keys() == want_res.keys(), (len(o_res), len(want_res))
for k in want_res:
    assert o_res[k] == want_res[k], k
assert o_env == want_env
print(f"{len(o_runs)} runs, {len(o_res)} results, {sum(len(v[1]) for v in o_res.values())} samples match")
PY
}
same_content "$WORK/all.db" "$WORK/a.db" "$WORK/b.db" || fail "merged content differs from the sources"

# The two shards together hold every case of the suite exactly once.
"$PPB" list "$SRC/suites/smoke.yaml" | sort >"$WORK/want_keys"
"$PY" - "$WORK/all.db" <<'PY' | sort >"$WORK/got_keys"
import sqlite3, sys
for (k,) in sqlite3.connect(sys.argv[1]).execute(
        "SELECT c.key FROM results r JOIN runs u ON u.id = r.run_id JOIN cases c ON c.id = r.case_id WHERE u.suite_name = 'smoke'"):
    print(k)
PY
diff "$WORK/want_keys" "$WORK/got_keys" >/dev/null || fail "the shards do not cover the suite exactly once"

# The two shards are one run of the night: every case planned and stored, complete.
n_suite=$(wc -l <"$WORK/want_keys")
"$PY" - "$WORK/all.db" "$n_suite" <<'PY' || fail "the night's run"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1]); n = int(sys.argv[2])
rows = con.execute("SELECT id, n_cases, status, shard_count, (SELECT count(*) FROM results WHERE run_id = runs.id),"
                   " (SELECT count(*) FROM run_parts WHERE run_id = runs.id) FROM runs WHERE suite_name = 'smoke'").fetchall()
assert len(rows) == 1, rows
rid, planned, status, count, stored, parts = rows[0]
assert (planned, stored, status, count, parts) == (n, n, "complete", 2, 2), rows
hosts = {k for (k,) in con.execute("SELECT key FROM env WHERE run_id = ? AND key LIKE 'shard2.%'", (rid,))}
assert hosts, "shard 2's environment is missing"
PY
smoke_run=$("$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT id FROM runs WHERE suite_name='smoke'\").fetchone()[0])" "$WORK/all.db")
expect_rc 0 "$PPB" show "$smoke_run" --db "$WORK/all.db" --no-env
grep -q "$n_suite of $n_suite cases stored" "$WORK/out" || fail "show: $(head -3 "$WORK/out")"
grep -q "shards 2 of 2 of night " "$WORK/out" || fail "show: no shard line: $(head -4 "$WORK/out")"

# Shard 1 run again the same night is kept apart (its shard is already there);
# another night (--group) is its own run; both halves of --group nights fold.
run_suite "$WORK/again.db" smoke.yaml --shard 1/2
run_suite "$WORK/n2a.db" smoke.yaml --shard 1/2 --group night-2
run_suite "$WORK/n2b.db" smoke.yaml --shard 2/2 --group night-2
cp "$WORK/all.db" "$WORK/nights.db"
expect_rc 0 "$PPB" merge "$WORK/again.db" "$WORK/n2a.db" "$WORK/n2b.db" -o "$WORK/nights.db"
grep -q "again.db: 1 run added (0 already present), 0 shards folded" "$WORK/out" || fail "re-run: $(cat "$WORK/out")"
grep -q "n2b.db: 0 runs added (0 already present), 1 shard folded" "$WORK/out" || fail "night 2: $(cat "$WORK/out")"
expect_rc 2 "$PPB" run "$SRC/suites/smoke.yaml" --group x --backend cpu --db "$WORK/x.db"
grep -q -- "--group names the night of a shard" "$WORK/err" || fail "--group without --shard: $(cat "$WORK/err")"

# Idempotent: merging the same files again adds nothing.
expect_rc 0 "$PPB" merge "$WORK/a.db" "$WORK/b.db" -o "$WORK/all.db"
grep -q "all.db: 0 runs and 0 results added" "$WORK/out" || fail "second merge added something: $(cat "$WORK/out")"
same_content "$WORK/all.db" "$WORK/a.db" "$WORK/b.db" >/dev/null || fail "second merge changed the content"
# A merged file merged again (into another output) is the same content.
expect_rc 0 "$PPB" merge "$WORK/all.db" "$WORK/a.db" -o "$WORK/all2.db"
same_content "$WORK/all2.db" "$WORK/all.db" >/dev/null || fail "merging a merged file"
# The output may be named among the sources: skipped, not doubled.
expect_rc 0 "$PPB" merge "$WORK/all.db" "$WORK/b.db" -o "$WORK/all.db"
grep -q "is the output: skipped" "$WORK/err" || fail "output as source not skipped"

# A run merged while incomplete, merged again once complete: only the new
# results are added, and its status follows.
cp "$WORK/a.db" "$WORK/partial.db"
"$PY" - "$WORK/partial.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA foreign_keys = ON")
con.execute("DELETE FROM results WHERE id IN (SELECT id FROM results ORDER BY id DESC LIMIT 5)")
con.execute("UPDATE runs SET status = 'running', finished_at = NULL")
con.commit()
PY
expect_rc 0 "$PPB" merge "$WORK/partial.db" -o "$WORK/grow.db"
expect_rc 0 "$PPB" merge "$WORK/a.db" -o "$WORK/grow.db"
grep -q "0 runs added (1 already present, some now finished), 0 shards folded into the night.s run, 5 results added" "$WORK/out" ||
  fail "growth merge: $(cat "$WORK/out")"
same_content "$WORK/grow.db" "$WORK/a.db" >/dev/null || fail "grown run differs"

# Refusals, before anything is written.
cp "$WORK/a.db" "$WORK/old.db"
"$PY" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 3'); c.commit()" "$WORK/old.db"
expect_rc 3 "$PPB" merge "$WORK/a.db" "$WORK/old.db" -o "$WORK/new.db"
grep -q "schema version 3" "$WORK/err" || fail "older schema: $(cat "$WORK/err")"
[ ! -e "$WORK/new.db" ] || fail "a refused merge created the output"
cp "$WORK/a.db" "$WORK/odd.db"
"$PY" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE extra(x)'); c.commit()" "$WORK/odd.db"
expect_rc 3 "$PPB" merge "$WORK/odd.db" -o "$WORK/new.db"
grep -q "schema differs" "$WORK/err" || fail "mismatched schema: $(cat "$WORK/err")"
echo "not a database" >"$WORK/text.db"
expect_rc 3 "$PPB" merge "$WORK/a.db" "$WORK/text.db" -o "$WORK/all.db"
grep -q "not a SQLite database" "$WORK/err" || fail "text file: $(cat "$WORK/err")"
"$PY" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE t(x)'); c.commit()" "$WORK/foreign.db"
expect_rc 3 "$PPB" merge "$WORK/foreign.db" -o "$WORK/all.db"
grep -q "not a ppbench database" "$WORK/err" || fail "foreign database: $(cat "$WORK/err")"
expect_rc 3 "$PPB" merge "$WORK/missing.db" -o "$WORK/all.db"
expect_rc 2 "$PPB" merge "$WORK/a.db"
same_content "$WORK/all.db" "$WORK/a.db" "$WORK/b.db" >/dev/null || fail "a refused merge changed the output"
echo "merge: ok"
