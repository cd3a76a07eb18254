#!/usr/bin/env bash
# scripts/fetch-vllm.sh --version X against a fake package index on loopback
# (PEP 503 simple pages served from the test's temp dir): the archive's sha256
# is the one the index lists (#sha256=), checked before anything is extracted;
# a second run downloads nothing; a wrong or missing checksum, a release not
# listed and a malformed version are refused in one line; credentials in the
# index URL are never printed. --cuda-only keeps only what the vllm-cuda build reads, --triton-only what
# vllm-triton reads.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/e2e/net.bash"
FETCH=$SRC/scripts/fetch-vllm.sh
command -v curl >/dev/null 2>&1 || skip "curl is not installed (fetch-vllm.sh downloads with it)"
# Straight to 127.0.0.1, whatever proxy the environment names.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export no_proxy=127.0.0.1 NO_PROXY=127.0.0.1
one_line() { [ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$1: not one line"; }; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }

# A tiny source distribution: one top folder, as setuptools makes them.
mkdir -p "$WORK/src/vllm-9.9.9/vllm/attention/ops"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.9\n' >"$WORK/src/vllm-9.9.9/PKG-INFO"
echo '# not vLLM' >"$WORK/src/vllm-9.9.9/vllm/attention/ops/prefix_prefill.py"
mkdir -p "$WORK/www/files"
tar -czf "$WORK/www/files/vllm-9.9.9.tar.gz" -C "$WORK/src" vllm-9.9.9
GOOD=$(sha256 "$WORK/www/files/vllm-9.9.9.tar.gz")
WRONG=$(printf 'other' | sha256sum | cut -d' ' -f1)

# Several indexes under one server, each a folder with its own vllm/ page.
# simple: the right checksum, among links that only look alike.
page() {
  mkdir -p "$WORK/www/$1/vllm"
  { echo '<!DOCTYPE html><html><body><h1>Links for vllm</h1>'; cat; echo '</body></html>'; } >"$WORK/www/$1/vllm/index.html"
}
page simple <<EOF
<a href="../../files/vllm-9.9.90.tar.gz#sha256=$WRONG">vllm-9.9.90.tar.gz</a><br/>
<a href="../../files/vllm-9.9.9-py3-none-any.whl#sha256=$WRONG">vllm-9.9.9-py3-none-any.whl</a><br/>
<a href="../../files/vllm-9.9.9.tar.gz#sha256=$GOOD" data-requires-python="&gt;=3.8">vllm-9.9.9.tar.gz</a><br/>
EOF
page badsha <<<"<a href=\"../../files/vllm-9.9.9.tar.gz#sha256=$WRONG\">vllm-9.9.9.tar.gz</a><br/>"
page nosha <<<'<a href="../../files/vllm-9.9.9.tar.gz">vllm-9.9.9.tar.gz</a><br/>'
page md5 <<<"<a href=\"../../files/vllm-9.9.9.tar.gz#md5=0123456789abcdef0123456789abcdef\">vllm-9.9.9.tar.gz</a><br/>"
# The pinned 0.6.3 listed with another checksum than the one pinned in the script.
page pinned <<<"<a href=\"../../files/vllm-0.6.3.tar.gz#sha256=$WRONG\">vllm-0.6.3.tar.gz</a><br/>"

# The server: a free port picked by the kernel, written to a file once bound;
# every request line logged; it stops by itself after 60 s in any case.
"$PY" - "$WORK/www" "$WORK/port" "$WORK/requests.log" >"$WORK/server.out" 2>&1 <<'PY' &
import functools, http.server, os, sys, threading
root, port_file, log = sys.argv[1:4]
class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.requestline, args[1] if len(args) > 1 else "-"))
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=root))
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
threading.Timer(60, server.shutdown).start()
server.serve_forever()
PY
_PPB_PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { cat "$WORK/server.out"; fail "the fake index did not start"; }
BASE="http://127.0.0.1:$(cat "$WORK/port")"
# Credentials in the index URL (the server ignores them): they must never be printed.
CREDS=ppbuser:s3cretT0ken
index() { export PIP_INDEX_URL="http://$CREDS@${BASE#http://}/$1/"; }
downloads() { grep -c 'GET /files/' "$WORK/requests.log" || true; }
no_secret() { ! grep -q s3cretT0ken "$WORK/out" "$WORK/err" || { cat "$WORK/out" "$WORK/err"; fail "$1: credentials printed"; }; }
nothing_extracted() {
  local d=$1
  [ ! -e "$d/vllm-9.9.9" ] || fail "$2: a tree was extracted"
  [ -z "$(find "$d" -mindepth 1 -maxdepth 1 -name '.*' 2>/dev/null)" ] || { ls -la "$d"; fail "$2: temporaries left in $d"; }
}

# (a) the release is downloaded, checked against the listed sha256, extracted with the marker.
index simple
D=$WORK/deps
expect_rc 0 "$FETCH" --version 9.9.9 "$D"
no_secret "first fetch"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.9 (sha256 $GOOD)" ] || { cat "$WORK/out"; fail "first fetch: last line"; }
grep -q '^fetch-vllm: downloading vllm-9.9.9.tar.gz from http://\*\*\*@127.0.0.1:' "$WORK/out" || { cat "$WORK/out"; fail "no download line"; }
[ "$(cat "$D/vllm-9.9.9/.ppb-archive.sha256")" = "$GOOD  vllm-9.9.9.tar.gz" ] || fail "marker: $(cat "$D/vllm-9.9.9/.ppb-archive.sha256")"
grep -q '^Version: 9.9.9$' "$D/vllm-9.9.9/PKG-INFO" || fail "PKG-INFO not extracted"
[ -f "$D/vllm-9.9.9/vllm/attention/ops/prefix_prefill.py" ] || fail "prefix_prefill.py not extracted"
[ "$(sha256 "$D/vllm-9.9.9.tar.gz")" = "$GOOD" ] || fail "the archive is not kept in DIR"
[ "$(downloads)" -eq 1 ] || { cat "$WORK/requests.log"; fail "first fetch: $(downloads) downloads"; }
[ -z "$(find "$D" -mindepth 1 -maxdepth 1 -name '.*')" ] || { ls -la "$D"; fail "temporaries left in DIR"; }
# the --version=X spelling, and --help
expect_rc 0 "$FETCH" --version=9.9.9 "$D"
expect_rc 0 "$FETCH" --help
grep -q -- '--version X \[DIR\]' "$WORK/out" || { cat "$WORK/out"; fail "--help does not show --version"; }
grep -q '^set -euo\|^#' "$WORK/out" && fail "--help prints more than the usage block"

# (b) a second run downloads nothing and says the tree is there.
expect_rc 0 "$FETCH" --version 9.9.9 "$D"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.9 is already there (sha256 $GOOD)" ] || { cat "$WORK/out"; fail "second fetch: last line"; }
! grep -q downloading "$WORK/out" || fail "second fetch downloaded"
[ "$(downloads)" -eq 1 ] || { cat "$WORK/requests.log"; fail "second fetch: a download"; }
# Without the tree, the kept archive is extracted again, still without a download.
rm -rf "$D/vllm-9.9.9"
expect_rc 0 "$FETCH" --version 9.9.9 "$D"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.9 (sha256 $GOOD)" ] || { cat "$WORK/out"; fail "re-extract: last line"; }
[ "$(downloads)" -eq 1 ] || fail "re-extract from the kept archive: a download"
# A folder of that name that this script did not extract is left alone.
mkdir -p "$WORK/other/vllm-9.9.9"
expect_rc 1 "$FETCH" --version 9.9.9 "$WORK/other"
one_line "foreign tree"
grep -q "exists but was not extracted" "$WORK/err" || { cat "$WORK/err"; fail "foreign tree not named"; }

# (c) a listed sha256 the file does not have: downloaded, refused, nothing kept or extracted.
index badsha
D=$WORK/deps-badsha
expect_rc 1 "$FETCH" --version 9.9.9 "$D"
one_line "wrong sha256"
no_secret "wrong sha256"
grep -q "^fetch-vllm: vllm-9.9.9.tar.gz: sha256 $GOOD, expected $WRONG; refusing it$" "$WORK/err" || { cat "$WORK/err"; fail "wrong sha256 not refused"; }
nothing_extracted "$D" "wrong sha256"
[ ! -e "$D/vllm-9.9.9.tar.gz" ] || fail "a refused archive was kept"
# ... and the good tree elsewhere is not taken for it.
expect_rc 1 "$FETCH" --version 9.9.9 "$WORK/deps"
grep -q "exists but was not extracted" "$WORK/err" || { cat "$WORK/err"; fail "wrong sha256 vs an extracted tree"; }

# (d) a release the index does not list: one line naming the file and the page, credentials redacted.
index simple
D=$WORK/deps-missing
expect_rc 1 "$FETCH" --version 9.9.8 "$D"
one_line "not listed"
no_secret "not listed"
[ "$(cat "$WORK/err")" = "fetch-vllm: vllm-9.9.8.tar.gz is not listed on http://***@${BASE#http://}/simple/vllm/" ] ||
  { cat "$WORK/err"; fail "not listed: message"; }
nothing_extracted "$D" "not listed"

# (e) a malformed version: usage error (2), one line, nothing fetched.
n=$(wc -l <"$WORK/requests.log")
for v in '9.9;rm' '' '9.9.9 ' $'9.9.9\nrm' 'v9.9.9' '9..9' '9.9.9.post' '9.9.9-rc1' '../9.9.9'; do
  expect_rc 2 "$FETCH" --version "$v" "$WORK/deps-bad"
  one_line "malformed version '$v'"
  grep -q "is not a release" "$WORK/err" || { cat "$WORK/err"; fail "malformed version '$v': message"; }
done
expect_rc 2 "$FETCH" --version
one_line "--version without a value"
expect_rc 2 "$FETCH" --version 9.9.9 --archive "$WORK/www/files/vllm-9.9.9.tar.gz" --sha256 "$GOOD" "$WORK/deps-bad"
one_line "--version with --archive"
[ "$(wc -l <"$WORK/requests.log")" -eq "$n" ] || fail "a malformed version reached the index"
[ ! -e "$WORK/deps-bad/vllm-9.9.9" ] || fail "a malformed version extracted something"

# (f) a link without a sha256 (none, or another hash only): refused before downloading.
for idx in nosha md5; do
  index $idx
  D=$WORK/deps-$idx
  expect_rc 1 "$FETCH" --version 9.9.9 "$D"
  one_line "$idx"
  no_secret "$idx"
  grep -q "^fetch-vllm: the index lists vllm-9.9.9.tar.gz without a sha256 .*; refusing it$" "$WORK/err" || { cat "$WORK/err"; fail "$idx: not refused"; }
  nothing_extracted "$D" "$idx"
done
[ "$(downloads)" -eq 2 ] || { cat "$WORK/requests.log"; fail "$(downloads) downloads, expected 2 (a and c)"; }

# (g) the pinned 0.6.3, default or --version 0.6.3: the index must list the pinned checksum.
index pinned
for args in "" "--version=0.6.3"; do
  expect_rc 1 "$FETCH" ${args:+"$args"} "$WORK/deps-pinned"
  one_line "pinned ($args)"
  grep -q "^fetch-vllm: the index lists vllm-0.6.3.tar.gz with sha256 $WRONG, expected 03e69029ad9caceaab68d5c3833ae6fe57c04be678ec37f29e9df6eaf178a9c5$" "$WORK/err" ||
    { cat "$WORK/err"; fail "pinned ($args): another listed checksum not refused"; }
  [ ! -e "$WORK/deps-pinned/vllm-0.6.3" ] || fail "pinned ($args): extracted"
done

# An archive whose one top folder is not vllm-X is not extracted under another name.
cp "$WORK/www/files/vllm-9.9.9.tar.gz" "$WORK/www/files/vllm-9.9.7.tar.gz"
page wrongtop <<<"<a href=\"../../files/vllm-9.9.7.tar.gz#sha256=$GOOD\">vllm-9.9.7.tar.gz</a><br/>"
index wrongtop
expect_rc 1 "$FETCH" --version 9.9.7 "$WORK/deps-top"
one_line "wrong top folder"
grep -q "its top-level folder is vllm-9.9.9, expected vllm-9.9.7$" "$WORK/err" || { cat "$WORK/err"; fail "wrong top folder: message"; }
[ -z "$(find "$WORK/deps-top" -mindepth 1 -maxdepth 1 ! -name vllm-9.9.7.tar.gz)" ] || { ls -la "$WORK/deps-top"; fail "wrong top folder: extracted"; }

# --archive PATH --sha256 HEX still works, and is idempotent.
expect_rc 0 "$FETCH" --archive "$WORK/www/files/vllm-9.9.9.tar.gz" --sha256 "$GOOD" "$WORK/deps-archive"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $WORK/deps-archive/vllm-9.9.9 (sha256 $GOOD)" ] || { cat "$WORK/out"; fail "--archive: last line"; }
expect_rc 0 "$FETCH" --archive "$WORK/www/files/vllm-9.9.9.tar.gz" --sha256 "$GOOD" "$WORK/deps-archive"
grep -q "is already there" "$WORK/out" || { cat "$WORK/out"; fail "--archive: second run"; }
# (h) --cuda-only: PKG-INFO, the mark and the files the vllm-cuda build reads (the kernel file, its
# launchers, what they #include in turn, found beside them or under csrc/), nothing else; idempotent,
# and told apart from a whole tree of the same archive. A fixture tree (tests/data/vllm-cuda), no vLLM code.
T=$WORK/src-cuda/vllm-9.9.5
mkdir -p "$WORK/src-cuda"
cp -r "$SRC/tests/data/vllm-cuda/split-by-pointer" "$T"
sed -i 's/^Version: .*/Version: 9.9.5/' "$T/PKG-INFO"
mkdir -p "$T/vllm/attention/ops" "$T/csrc/moe"
echo '# not vLLM' >"$T/vllm/attention/ops/prefix_prefill.py"
echo '// not included' >"$T/csrc/moe/topk.cu"
echo '// not included' >"$T/csrc/attention/merge_attn_states.cu"
tar -czf "$WORK/vllm-9.9.5.tar.gz" -C "$WORK/src-cuda" vllm-9.9.5
CUDA_SHA=$(sha256 "$WORK/vllm-9.9.5.tar.gz")
D=$WORK/deps-cuda
expect_rc 0 "$FETCH" --archive "$WORK/vllm-9.9.5.tar.gz" --sha256 "$CUDA_SHA" --cuda-only "$D"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.5-cuda (sha256 $CUDA_SHA)" ] || { cat "$WORK/out"; fail "--cuda-only: last line"; }
got=$(cd "$D/vllm-9.9.5-cuda" && find . -type f | sort | tr '\n' ' ')
want="./.ppb-archive.sha256 ./.ppb-subset ./PKG-INFO ./csrc/attention/attention_dtypes.h ./csrc/attention/attention_kernels.cuh \
./csrc/attention/paged_attention_v1.cu ./csrc/attention/paged_attention_v2.cu ./csrc/cuda_compat.h \
./csrc/quantization/fp8/nvidia/quant_utils.cuh ./csrc/torch_utils.h "
[ "$got" = "$want" ] || fail "--cuda-only kept: $got"
[ "$(cat "$D/vllm-9.9.5-cuda/.ppb-archive.sha256")" = "$CUDA_SHA  vllm-9.9.5.tar.gz" ] || fail "--cuda-only: marker"
[ "$(head -n 1 "$D/vllm-9.9.5-cuda/.ppb-subset" | cut -d' ' -f1)" = cuda ] || fail "--cuda-only: .ppb-subset"
expect_rc 0 "$FETCH" --archive "$WORK/vllm-9.9.5.tar.gz" --sha256 "$CUDA_SHA" --cuda-only "$D"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.5-cuda is already there (sha256 $CUDA_SHA)" ] || { cat "$WORK/out"; fail "--cuda-only: second run"; }
# The whole tree of the same archive is not the subset, nor the subset the whole tree.
expect_rc 0 "$FETCH" --archive "$WORK/vllm-9.9.5.tar.gz" --sha256 "$CUDA_SHA" "$D"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.5 (sha256 $CUDA_SHA)" ] || { cat "$WORK/out"; fail "whole tree beside --cuda-only"; }
[ -f "$D/vllm-9.9.5/csrc/moe/topk.cu" ] || fail "whole tree: not whole"
expect_rc 0 "$FETCH" --archive "$WORK/vllm-9.9.5.tar.gz" --sha256 "$CUDA_SHA" --cuda-only "$D"
grep -q "vllm-9.9.5-cuda is already there" "$WORK/out" || { cat "$WORK/out"; fail "--cuda-only beside the whole tree"; }
# A release without CUDA paged attention: refused in one line, nothing extracted.
expect_rc 1 "$FETCH" --archive "$WORK/www/files/vllm-9.9.9.tar.gz" --sha256 "$GOOD" --cuda-only "$WORK/deps-nocuda"
one_line "--cuda-only without kernels"
grep -q "no csrc/attention/attention_kernels.cu or attention_kernels.cuh: this release has no CUDA paged attention" "$WORK/err" ||
  { cat "$WORK/err"; fail "--cuda-only without kernels: message"; }
[ -z "$(ls -A "$WORK/deps-nocuda")" ] || { ls -la "$WORK/deps-nocuda"; fail "--cuda-only without kernels: something left"; }
# (i) --triton-only: PKG-INFO, the mark and the files vllm-triton reads (harness/run/source_tree.c's list: here the
# one prefix_prefill.py), nothing else; an archive without a kernel file of the list refused, nothing left.
expect_rc 0 "$FETCH" --archive "$WORK/vllm-9.9.5.tar.gz" --sha256 "$CUDA_SHA" --triton-only "$D"
[ "$(tail -n 1 "$WORK/out")" = "fetch-vllm: $D/vllm-9.9.5-triton (sha256 $CUDA_SHA)" ] || { cat "$WORK/out"; fail "--triton-only: last line"; }
got=$(cd "$D/vllm-9.9.5-triton" && find . -type f | sort | tr '\n' ' ')
[ "$got" = "./.ppb-archive.sha256 ./.ppb-subset ./PKG-INFO ./vllm/attention/ops/prefix_prefill.py " ] || fail "--triton-only kept: $got"
[ "$(head -n 1 "$D/vllm-9.9.5-triton/.ppb-subset" | cut -d' ' -f1)" = triton ] || fail "--triton-only: .ppb-subset"
expect_rc 0 "$FETCH" --archive "$WORK/vllm-9.9.5.tar.gz" --sha256 "$CUDA_SHA" --triton-only "$D"
grep -q "vllm-9.9.5-triton is already there" "$WORK/out" || { cat "$WORK/out"; fail "--triton-only: second run"; }
mkdir -p "$WORK/src-none/vllm-9.9.4/vllm" && printf 'Version: 9.9.4\n' >"$WORK/src-none/vllm-9.9.4/PKG-INFO"
echo "# not a kernel" >"$WORK/src-none/vllm-9.9.4/vllm/config.py"
tar -czf "$WORK/vllm-9.9.4.tar.gz" -C "$WORK/src-none" vllm-9.9.4
expect_rc 1 "$FETCH" --archive "$WORK/vllm-9.9.4.tar.gz" --sha256 "$(sha256 "$WORK/vllm-9.9.4.tar.gz")" --triton-only "$WORK/deps-notriton"
one_line "--triton-only without kernels"
grep -q "no prefix_prefill.py or triton_unified_attention.py: nothing vllm-triton can prepare" "$WORK/err" ||
  { cat "$WORK/err"; fail "--triton-only without kernels: message"; }
[ -z "$(ls -A "$WORK/deps-notriton")" ] || { ls -la "$WORK/deps-notriton"; fail "--triton-only without kernels: something left"; }
echo "fetch_vllm_version: ok"
