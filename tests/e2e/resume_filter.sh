#!/usr/bin/env bash
# The options that select a run's cases are stored whole or refused (issue:
# a filter cut at 511 characters made a resumed run take in cases that were
# never part of it): a 700-character filter resumes to exactly its own cases;
# one too long for the stored options is refused before the database exists.
source "$(dirname "$0")/lib.bash"

# A term selecting 2 of smoke.yaml's query lengths, padded with values no case
# has to about 120 characters (a term's limit is 127), repeated to 700+.
long=$("$PY" -c '
term = "query_len=" + "|".join(["17", "40"] + [str(100000 + i) for i in range(15)])
print(",".join([term] * 6))')
[ "${#long}" -gt 600 ] || fail "the test filter is only ${#long} characters"
"$PPB" list "$SRC/suites/smoke.yaml" --filter "$long" >"$WORK/want" || fail "list with the long filter"
n_want=$(wc -l <"$WORK/want")
[ "$n_want" -gt 0 ] || fail "the long filter selects no case"

set +e; "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --filter "$long" --db "$WORK/r.db" >/dev/null 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -le 1 ] || { cat "$WORK/err"; fail "run exited $rc"; }
# Make it an interrupted run with half its results gone, then resume it.
interrupt_half "$WORK/r.db"
set +e; "$PPB" run --resume 1 --db "$WORK/r.db" --no-progress >/dev/null 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -le 1 ] || { cat "$WORK/err"; fail "resume exited $rc"; }
"$PY" - "$WORK/r.db" "$WORK/want" "$long" <<'PY' || fail "the resumed run is not exactly the filter's cases"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
want = sorted(l.strip() for l in open(sys.argv[2]) if l.strip())
got = sorted(k for (k,) in con.execute("SELECT c.key FROM results r JOIN cases c ON c.id = r.case_id"))
status, n_cases, args = con.execute("SELECT status, n_cases, args FROM runs").fetchone()
assert ("filter=" + sys.argv[3] + "\n") in args, "the filter was not stored whole"
assert got == want and n_cases == len(want) and status == "complete", (status, n_cases, len(got), len(want))
PY

# Too long to store: refused up front (exit 3), no database written.
huge=$("$PY" -c '
term = "query_len=" + "|".join(["17", "40"] + [str(100000 + i) for i in range(15)])
print(",".join([term] * 10))')
expect_rc 3 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --filter "$huge" --db "$WORK/huge.db"
grep -q "stored with the run for --resume" "$WORK/err" || fail "no reason: $(cat "$WORK/err")"
[ ! -e "$WORK/huge.db" ] || fail "a refused run wrote a database"
echo "resume_filter: ok ($n_want cases, filter of ${#long} characters)"
