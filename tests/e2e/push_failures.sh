#!/usr/bin/env bash
# ppbench push against a scripted local server (tests/e2e/fake_http.py) that
# fails, stalls, refuses and leaks: retries with exponential backoff on 5xx,
# Retry-After, no retry on 4xx, timeouts, the queue (a failed push is kept and
# sent first by the next push to the same server, never to another), TLS
# verification with --cacert, URL and token rules, and the token never in
# ppbench's output or database.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/e2e/net.bash"

export PPBENCH_DB="$WORK/p.db"
TOKEN="tok-$("$PY" -c 'import secrets; print(secrets.token_hex(16))')"
export PPBENCH_PUSH_TOKEN="$TOKEN"
ALL_OUTPUT="$WORK/all-output"
: >"$ALL_OUTPUT"
# push_rc WANT args...: ppbench push, its stdout+stderr kept for the token check.
push_rc() {
  local want=$1; shift
  expect_rc "$want" "$PPB" push "$@"
  cat "$WORK/out" "$WORK/err" >>"$ALL_OUTPUT"
}
queued() { "$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM push_queue').fetchone()[0])" "$PPBENCH_DB"; }
# log_field NAME INDEX EXPR: a Python expression over request INDEX (0-based) of server NAME's log
log_py() {
  "$PY" - "$WORK/$1.log" "$2" <<PY
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
$3
PY
}

expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress
# One fake server per failure, so that each queued push belongs to its own
# server (a push drains only its own server's queue).
for n in a b c d e; do
  start_fake "$n"
  declare "URL_$n=http://127.0.0.1:$FAKE_PORT"
done
A=$URL_a

# 1. Two 503s, then 200: three requests, backoff 300 ms then 600 ms, token sent. Only lower
# bounds on the gaps (a loaded machine only lengthens them); the second one past twice the
# first delay is what a backoff that does not double cannot reach.
echo "503 503 200" >"$WORK/a.plan"
push_rc 0 1 --to "$A" --format prometheus --retries 3 --retry-delay 300
[ "$(requests a)" -eq 3 ] || fail "expected 3 requests, got $(requests a)"
log_py a 0 "
assert [r['method'] for r in reqs] == ['PUT'] * 3, reqs
assert all(r['path'].startswith('/metrics/job/ppbench/suite@base64/') for r in reqs), reqs[0]['path']
assert all(r['headers'].get('authorization') == 'Bearer $TOKEN' for r in reqs), 'token not sent as Bearer'
assert 'ppbench_case_median_seconds{' in reqs[2]['body']
gaps = [reqs[i + 1]['time'] - reqs[i]['time'] for i in range(2)]
assert gaps[0] >= 0.29 and gaps[1] >= 0.59, gaps
" || fail "retry sequence"
[ "$(queued)" -eq 0 ] || fail "a push that succeeded on retry was queued"

# 2. Always 500: retries exhausted, exit 4, queued with its attempts and error.
echo "500 500 500 500 500" >"$WORK/b.plan"
push_rc 4 1 --to "$URL_b" --format prometheus --retries 2 --retry-delay 10
grep -q "HTTP 500" "$WORK/err" || fail "the error does not say HTTP 500: $(cat "$WORK/err")"
grep -q "queued" "$WORK/err" || fail "the failure does not say it was queued"
[ "$(requests b)" -eq 3 ] || fail "expected 1 + 2 retries, got $(requests b)"
push_rc 0 --list
grep -q "prometheus" "$WORK/out" && grep -q "HTTP 500" "$WORK/out" || fail "queue listing: $(cat "$WORK/out")"
"$PY" - "$PPBENCH_DB" "$URL_b" <<'PY' || fail "queue row"
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT run_id, url, format, attempts, last_error FROM push_queue").fetchall()
assert rows == [(1, sys.argv[2], "prometheus", 3, rows[0][4])], rows
assert "HTTP 500" in rows[0][4]
PY

# 3. A stall past --timeout: a timeout, not a hang; queued.
echo "stall:6" >"$WORK/c.plan"
t0=$(date +%s.%N)
push_rc 4 1 --to "$URL_c" --format json --timeout 1 --retries 0
t1=$(date +%s.%N)
"$PY" -c "import sys; sys.exit(0 if $t1 - $t0 < 4.5 else 1)" || fail "a 1 s timeout took $("$PY" -c "print($t1 - $t0)") s"
grep -qi "timeout\|timed out" "$WORK/err" || fail "no timeout in: $(cat "$WORK/err")"
[ "$(queued)" -eq 2 ] || fail "the stalled push was not queued"

# 4. 400 is not retried (the request itself is wrong), and is queued.
echo "400 400 400" >"$WORK/d.plan"
push_rc 4 1 --to "$URL_d/write?db=ppb" --format influx --retries 3 --retry-delay 10
[ "$(requests d)" -eq 1 ] || fail "a 400 was retried"
grep -q "HTTP 400" "$WORK/err" || fail "400 not reported"
[ "$(queued)" -eq 3 ] || fail "the 400 push was not queued"

# 5. Retry-After is honoured (a 10 ms backoff waits a full second).
before=$(requests a)
echo "retry-after:503:1 200" >"$WORK/a.plan"
push_rc 0 1 --to "$A" --format json --retries 2 --retry-delay 10 --no-queue
log_py a "$before" "
i = int(sys.argv[2])
assert reqs[i + 1]['time'] - reqs[i]['time'] >= 0.95, reqs[i + 1]['time'] - reqs[i]['time']
" || fail "Retry-After not honoured"

# 6. A server that echoes the request headers into its error, as sent,
#    upper-cased or JSON-escaped: with a token sent the answer is described,
#    never shown (nor queued); no form of the token, nor its first 8
#    characters, reaches the output or the queue.
for mode in echo echoupper echojson; do
  echo "$mode:500" >"$WORK/e.plan"
  push_rc 4 1 --to "$URL_e/hook" --format json --retries 0
  grep -q "not shown: the request carried a token" "$WORK/err" || fail "$mode: answer not withheld: $(cat "$WORK/err")"
  "$PY" - "$TOKEN" "$WORK/err" "$PPBENCH_DB" <<'PY' || fail "$mode: a form of the token leaked"
import sqlite3, sys
token, err, db = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
stored = " ".join(r[0] for r in sqlite3.connect(db).execute("SELECT last_error FROM push_queue"))
for form in (token, token.upper(), token[:8], token[:8].upper()):
    assert form not in err and form not in stored, form
PY
done
[ "$(queued)" -eq 4 ] || fail "echo push not queued"

# 7. Queued pushes for other servers are not sent with this server's token.
before=$(requests a)
push_rc 0 1 --to "$A" --format prometheus
[ "$(requests a)" -eq $((before + 1)) ] || fail "A got $(( $(requests a) - before )) requests"
[ "$(requests b)$(requests c)$(requests d)$(requests e)" = "3113" ] || fail "a push to A contacted another server"
grep -q "4 queued pushes for other servers left alone" "$WORK/err" || fail "other-server note: $(cat "$WORK/err")"

# 8. The next push to a server sends its queue first, oldest first, then itself.
echo "500 500" >"$WORK/b.plan"   # queued run 1 fails again, and so does a json push
push_rc 4 1 --to "$URL_b" --format json --retries 0
[ "$(queued)" -eq 5 ] || fail "expected 5 queued, got $(queued)"
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --filter "dtype=bf16"
before=$(requests b)
: >"$WORK/b.plan"
push_rc 0 2 --to "$URL_b" --format prometheus
log_py b "$before" "
i = int(sys.argv[2])
sent = [(r['method'], r['path'], r['headers'].get('content-type', '')) for r in reqs[i:]]
assert len(sent) == 3, sent
assert sent[0][0] == 'PUT' and sent[0][2].startswith('text/plain; version=0.0.4'), sent[0]
assert sent[1] == ('POST', '/', 'application/json'), sent[1]
assert sent[2][0] == 'PUT' and sent[2][1] == sent[0][1], (sent[2], sent[0])
assert 'run_id=\"1\"' in reqs[i]['body'] and 'run_id=\"2\"' in reqs[i + 2]['body']
assert all(r['headers'].get('authorization') == 'Bearer $TOKEN' for r in reqs[i:])
" || fail "the queue was not sent in order before the new push"
[ "$(grep -c "sent queued push" "$WORK/err")" -eq 2 ] || fail "expected 2 'sent queued push' notes"
[ "$(queued)" -eq 3 ] || fail "B's queue was not emptied"

# 8b. A queued Prometheus push that fails again while a newer run of the same
#     group gets through is superseded, not kept to overwrite it later.
echo "500 500" >"$WORK/b.plan"
push_rc 4 1 --to "$URL_b" --format prometheus --retries 0
[ "$(queued)" -eq 4 ] || fail "not queued"
echo "500 200" >"$WORK/b.plan"
push_rc 0 2 --to "$URL_b" --format prometheus --retries 0
grep -q "superseded by run 2" "$WORK/err" || fail "no supersession: $(cat "$WORK/err")"
[ "$(queued)" -eq 3 ] || fail "the superseded push is still queued"

# 9. --no-queue: a failure is reported and not kept.
echo "503" >"$WORK/a.plan"
push_rc 4 2 --to "$A" --format json --retries 0 --no-queue
[ "$(queued)" -eq 3 ] || fail "--no-queue queued"

# 10. --flush sends a server's queue without a new run (C: the stalled json;
#     D: the influx body, in line protocol, with its query string kept).
push_rc 0 --flush --to "$URL_c"
grep -q "sent 1 queued push" "$WORK/out" || fail "flush: $(cat "$WORK/out")"
: >"$WORK/d.plan"
push_rc 0 --flush --to "$URL_d/anything"
log_py d 1 "
r = reqs[1]
assert r['method'] == 'POST' and r['path'] == '/write?db=ppb', r['path']
assert r['body'].startswith('ppbench_run,suite=smoke,'), r['body'][:60]
assert '\\ ' in r['body'] or 'case=' in r['body']
" || fail "influx flush"
push_rc 0 --flush --to "$URL_e"
[ "$(queued)" -eq 0 ] || fail "flush left $(queued) queued"

# 11. Refusals before anything is sent: credentials in the URL, the token over
#     plain http to a non-loopback host, an unknown run, influx precision.
before=$(requests a)
push_rc 3 1 --to "http://user:hunter2@127.0.0.1:$FAKE_PORT/" --format json
grep -q "user name or password" "$WORK/err" || fail "credentials in URL not refused"
grep -q "hunter2" "$WORK/err" && fail "the URL's password was printed"
push_rc 3 1 --to "http://push.example.invalid/hook" --format json
grep -q "clear text" "$WORK/err" || fail "token over http not refused: $(cat "$WORK/err")"
push_rc 3 99 --to "$A" --format json
push_rc 3 1 --to "$A/write?db=x&precision=s" --format influx
push_rc 2 1 --to "$A" --format xml
[ "$(requests a)" -eq "$before" ] || fail "a refused push reached the server"
[ "$(queued)" -eq 0 ] || fail "a refused push was queued"

# 12. TLS: a self-signed server is refused, then trusted through --cacert.
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
    -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1 ||
    fail "openssl could not make a test certificate"
  start_fake tls --cert "$WORK/cert.pem" --key "$WORK/key.pem"
  T="https://127.0.0.1:$FAKE_PORT"
  push_rc 4 1 --to "$T" --format json --retries 0 --no-queue
  grep -qi "certificate\|SSL" "$WORK/err" || fail "untrusted certificate not reported: $(cat "$WORK/err")"
  [ "$(requests tls)" -eq 0 ] || fail "a request got through an unverified TLS connection"
  push_rc 0 1 --to "$T" --format json --cacert "$WORK/cert.pem"
  [ "$(requests tls)" -eq 1 ] || fail "--cacert push did not arrive"
else
  echo "push_failures: openssl not found, TLS part not run"
fi

# 12a. A queued push that reached the attempt limit is dropped, with a note,
#      at the next push to its server.
echo "500" >"$WORK/c.plan"
push_rc 4 1 --to "$URL_c/dead" --format json --retries 0
n_before=$(queued)
"$PY" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE push_queue SET attempts = 20 WHERE url LIKE '%/dead'\"); c.commit()" "$PPBENCH_DB"
: >"$WORK/c.plan"
push_rc 0 1 --to "$URL_c" --format json
grep -q "dropped queued push .* after 20 attempts" "$WORK/out" "$WORK/err" || fail "the dead entry was not dropped: $(cat "$WORK/out" "$WORK/err")"
[ "$(queued)" -eq $((n_before - 1)) ] || fail "the queue did not shrink by the dead entry"

# 12b. A proxy from the environment never sees a token sent over plain http
#      (loopback): the push goes direct, the would-be proxy gets nothing.
start_fake proxy
proxy_url="http://127.0.0.1:$FAKE_PORT"
before=$(requests a)
set +e; http_proxy="$proxy_url" HTTP_PROXY="$proxy_url" no_proxy="" NO_PROXY="" \
  "$PPB" push 1 --to "$A" --format json --no-queue >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
cat "$WORK/out" "$WORK/err" >>"$ALL_OUTPUT"
[ "$rc" -eq 0 ] || fail "push with a proxy in the environment exited $rc: $(cat "$WORK/err")"
[ "$(requests proxy)" -eq 0 ] || fail "the token went through the proxy"
[ "$(requests a)" -eq $((before + 1)) ] || fail "the push did not reach the server directly"

# 13. The token never appeared in ppbench's output, nor in the database.
grep -qF "$TOKEN" "$ALL_OUTPUT" && fail "the token appeared in ppbench's output"
for f in "$PPBENCH_DB" "$PPBENCH_DB-wal"; do
  [ -e "$f" ] || continue
  grep -aqF "$TOKEN" "$f" && fail "the token is stored in $f"
done
echo "push_failures: ok"
