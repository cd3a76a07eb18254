#!/usr/bin/env bash
# Fetch vLLM's source distribution for the vllm-cuda plugin (kernels/vllm/cuda/):
# download vllm-0.6.3.tar.gz from the Python package index pip is configured
# with, verify its size and sha256, and extract it into DIR (default: .deps/
# at the repository root), giving DIR/vllm-0.6.3. Idempotent: a tree this
# script extracted from the same archive is left as it is.
#
#   scripts/fetch-vllm.sh [DIR]
#   scripts/fetch-vllm.sh --archive PATH --sha256 HEX [DIR]   an archive you already have
#
# Only 0.6.3 is pinned (the plugin is written against its kernels); another
# version needs its archive and checksum given with --archive/--sha256.
# The index: $PIP_INDEX_URL, else pip's configured index-url, else pip's own
# default. The archive is kept in DIR, so a second run downloads nothing.
set -euo pipefail

NAME=vllm-0.6.3.tar.gz
SIZE=2726781
SHA256=03e69029ad9caceaab68d5c3833ae6fe57c04be678ec37f29e9df6eaf178a9c5
MARKER=.ppb-archive.sha256   # written into the extracted tree; CMake reads it for the plugin's source string

die() { echo "fetch-vllm: $*" >&2; exit 1; }
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

archive="" want_sha="" dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --archive) [ $# -ge 2 ] || die "--archive needs a path"; archive=$2; shift 2 ;;
    --sha256) [ $# -ge 2 ] || die "--sha256 needs a checksum"; want_sha=$(printf '%s' "$2" | tr 'A-F' 'a-f'); shift 2 ;;
    -h|--help) usage 0 ;;
    -*) echo "fetch-vllm: unknown option $1" >&2; usage 2 ;;
    *) [ -z "$dir" ] || die "one DIR only"; dir=$1; shift ;;
  esac
done
if [ -n "$archive" ] && [ -z "$want_sha" ]; then die "--archive needs --sha256 (only $NAME is pinned)"; fi
if [ -z "$archive" ] && [ -n "$want_sha" ]; then die "--sha256 goes with --archive"; fi
if [ -n "$want_sha" ] && ! printf '%s' "$want_sha" | grep -Eq '^[0-9a-f]{64}$'; then die "--sha256: not a sha256"; fi

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${dir:-$root/.deps}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  else python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; fi
}
size_of() { wc -c <"$1" | tr -d ' '; }
# URLs may carry credentials (user:token@host): never print those.
redact() { printf '%s' "$1" | sed -E 's#(://)[^/@]*@#\1***@#'; }

# The tree extracted from an archive with this checksum, if one is already in DIR.
extracted_tree() {
  local m
  for m in "$dir"/*/"$MARKER"; do
    [ -f "$m" ] || continue
    if [ "$(cut -d' ' -f1 "$m")" = "$1" ]; then dirname "$m"; return 0; fi
  done
  return 1
}

if [ -z "$archive" ]; then
  want_sha=$SHA256
  if tree=$(extracted_tree "$SHA256"); then echo "fetch-vllm: $tree is already there (sha256 $SHA256)"; exit 0; fi
  [ ! -e "$dir/${NAME%.tar.gz}" ] ||
    die "$dir/${NAME%.tar.gz} exists but was not extracted from $NAME by this script; move it away first"
  archive=$dir/$NAME
  # A kept archive is reused only if it verifies; anything else is fetched again.
  if [ -f "$archive" ] && { [ "$(size_of "$archive")" != "$SIZE" ] || [ "$(sha256_of "$archive")" != "$SHA256" ]; }; then
    rm -f "$archive"
  fi
  if [ ! -f "$archive" ]; then
    command -v curl >/dev/null 2>&1 || die "needs curl to download $NAME"
    index=${PIP_INDEX_URL:-}
    if [ -z "$index" ]; then
      index=$(python3 -m pip config get global.index-url 2>/dev/null || python3 -m pip config get install.index-url 2>/dev/null || true)
    fi
    if [ -z "$index" ]; then
      index=$(python3 -c 'from pip._internal.models.index import PyPI; print(PyPI.simple_url)' 2>/dev/null) ||
        die "no package index: set PIP_INDEX_URL, or install pip"
    fi
    curl_opts=(-fsSL --retry 3 --connect-timeout 30)
    cert=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
    if [ -n "$cert" ] && [ -f "$cert" ]; then curl_opts+=(--cacert "$cert"); fi
    page=${index%/}/vllm/
    # The index's simple page (PEP 503): the link whose file name is exactly $NAME.
    html=$(curl "${curl_opts[@]}" -H 'Accept: application/vnd.pypi.simple.v1+html, text/html;q=0.1' "$page") ||
      die "cannot read the package index page $(redact "$page")"
    url=$(printf '%s' "$html" | python3 -c '
import html.parser, sys, urllib.parse
page, name = sys.argv[1], sys.argv[2]
class Links(html.parser.HTMLParser):
    found = None
    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href") if tag == "a" else None
        if href and not self.found:
            url = urllib.parse.urljoin(page, href)
            if urllib.parse.unquote(urllib.parse.urlsplit(url).path).rsplit("/", 1)[-1] == name:
                self.found = url
p = Links(); p.feed(sys.stdin.read())
print(p.found or "")' "$page" "$NAME")
    [ -n "$url" ] || die "$NAME is not listed on $(redact "$page")"
    case "$url" in
      *'#sha256='*) [ "${url##*#sha256=}" = "$SHA256" ] || die "the index lists $NAME with sha256 ${url##*#sha256=}, expected $SHA256" ;;
    esac
    echo "fetch-vllm: downloading $NAME from $(redact "${url%%#*}")"
    part=$(mktemp "$dir/.$NAME.XXXXXX")
    trap 'rm -f "$part"' EXIT
    curl "${curl_opts[@]}" -o "$part" "${url%%#*}" || die "download of $NAME failed"
    got_size=$(size_of "$part")
    [ "$got_size" = "$SIZE" ] || die "$NAME: $got_size bytes, expected $SIZE; refusing it"
    got_sha=$(sha256_of "$part")
    [ "$got_sha" = "$SHA256" ] || die "$NAME: sha256 $got_sha, expected $SHA256; refusing it"
    chmod "$(printf '%o' $((0666 & ~0$(umask))))" "$part"   # mktemp made it private
    mv "$part" "$archive"
    trap - EXIT
  fi
else
  [ -f "$archive" ] || die "$archive: no such file"
  got_sha=$(sha256_of "$archive")
  [ "$got_sha" = "$want_sha" ] || die "$archive: sha256 $got_sha, expected $want_sha; refusing it"
  if tree=$(extracted_tree "$want_sha"); then echo "fetch-vllm: $tree is already there (sha256 $want_sha)"; exit 0; fi
fi

# Extract next to the destination, then move the one top-level folder into place,
# so an interrupted run never leaves a half tree under the final name.
tmp=$(mktemp -d "$dir/.extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$archive" -C "$tmp" --no-same-owner || die "$archive: tar could not extract it"
tops=("$tmp"/*)
if [ ${#tops[@]} -ne 1 ] || [ ! -d "${tops[0]}" ]; then die "$archive: expected one top-level folder"; fi
top=$(basename "${tops[0]}")
dest=$dir/$top
[ ! -e "$dest" ] || die "$dest exists but was not extracted from this archive by this script; move it away first"
printf '%s  %s\n' "$want_sha" "$(basename "$archive")" >"${tops[0]}/$MARKER"
mv "${tops[0]}" "$dest"
echo "fetch-vllm: $dest (sha256 $want_sha)"
