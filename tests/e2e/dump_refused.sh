#!/usr/bin/env bash
# dump reproduces only what its backend runs: a stored case the CPU backend
# refuses (over its work limit) is refused by dump too, from the arithmetic,
# with nothing written; a small case still dumps.
source "$(dirname "$0")/lib.bash"
big='prefix_prefill b=1 q=512 ctx=16384 ragged=false h=8 kvh=1 d=128 dtype=fp16 page=16 win=0 bm=128 bn=128 w=8 path=auto'
set +e; "$PPB" run "$SRC/suites/prefill.yaml" --backend cpu --no-progress --db "$WORK/r.db" \
  --filter 'query_len=512,context_len=16384,head_dim=128,dtype=fp16,block_m=128,block_n=128,num_warps=8' >/dev/null 2>&1; set -e
"$PY" -c "import sqlite3,sys; k=sys.argv[2]; c=sqlite3.connect(sys.argv[1]); assert c.execute('SELECT r.status FROM results r JOIN cases c ON c.id = r.case_id WHERE c.key = ?', (k,)).fetchone()[0] == 'refused'" "$WORK/r.db" "$big" \
  || fail "the big case was not stored as refused by the CPU backend"
expect_rc 3 "$PPB" dump 1 "$big" --db "$WORK/r.db" -o "$WORK/d"
grep -q "cpu backend cannot reproduce this case" "$WORK/err" || fail "no reason: $(cat "$WORK/err")"
[ ! -e "$WORK/d" ] || fail "a refused dump wrote files"
echo "dump_refused: ok"
