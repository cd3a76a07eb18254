#!/usr/bin/env bash
# Fetch vLLM's source distribution for the vllm-cuda plugin (kernels/vllm/cuda/):
# download vllm-VERSION.tar.gz from the Python package index pip is configured
# with, verify its sha256, and extract it into DIR (default: .deps/ at the
# repository root), giving DIR/vllm-VERSION. Idempotent: a tree this script
# extracted from the same archive is reported and left as it is.
#
#   scripts/fetch-vllm.sh [DIR]                    the pinned 0.6.3 (size and sha256 pinned here)
#   scripts/fetch-vllm.sh --version X [DIR]        any release: X is 0.10.2, 0.10.1.1, 0.6.4.post1, ...
#   scripts/fetch-vllm.sh --archive PATH --sha256 HEX [DIR]   an archive you already have
#   ... --cuda-only [DIR]                          only what the vllm-cuda build reads: DIR/vllm-VERSION-cuda
#   ... --triton-only [DIR]                        only what vllm-triton reads: DIR/vllm-VERSION-triton
#
# --triton-only keeps PKG-INFO, the mark and the Python files ppbench reads from
# a tree (the kernel files of the families it judges and what they read: the
# list of harness/run/source_tree.c, read from there), tens of kB instead of
# a 170 MB tree, for carrying to a machine without network (source_patch and
# prepare.py read such a tree as they read a whole one).
# --cuda-only keeps PKG-INFO, the archive's checksum mark and the csrc files
# the vllm-cuda plugin's build reads (kernels/vllm/cuda/vllm_tree.cmake): the
# paged-attention kernel file and its launchers, csrc/cuda_compat.h, and every
# file they #include "..." in turn (tens of kB; a list of them in
# .ppb-subset), for carrying releases to a machine without network. A release
# without CUDA paged attention (0.23.0 on) is refused.
#
# The plugin is written against 0.6.3's kernels. With --version the expected
# sha256 is the one the index lists on the archive's link (#sha256=); a link
# without one is refused. The pinned 0.6.3 must also match what the index lists.
# The index: $PIP_INDEX_URL, else pip's configured index-url, else pip's own
# default. The archive is kept in DIR, so a second run downloads nothing.
# The last line on success: "fetch-vllm: DIR/vllm-VERSION (sha256 HEX)", or
# "fetch-vllm: DIR/vllm-VERSION is already there (sha256 HEX)".
set -euo pipefail

PINNED_VERSION=0.6.3
PINNED_SIZE=2726781
PINNED_SHA256=03e69029ad9caceaab68d5c3833ae6fe57c04be678ec37f29e9df6eaf178a9c5
MARKER=.ppb-archive.sha256   # written into the extracted tree; CMake reads it for the plugin's source string
SUBSET=.ppb-subset           # in a --cuda-only / --triton-only tree: "cuda" / "triton", then the files kept

die() { echo "fetch-vllm: $*" >&2; exit 1; }
usage_error() { echo "fetch-vllm: $*" >&2; exit 2; }
# The comment block at the top of this file, without its first line.
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit "${1:-0}"; }
printable() { printf '%s' "$1" | tr -c '[:print:]' '?'; }

archive="" want_sha="" dir="" version="" version_given="" subset=""
while [ $# -gt 0 ]; do
  case "$1" in
    --archive) [ $# -ge 2 ] || die "--archive needs a path"; archive=$2; shift 2 ;;
    --sha256) [ $# -ge 2 ] || die "--sha256 needs a checksum"; want_sha=$(printf '%s' "$2" | tr 'A-F' 'a-f'); shift 2 ;;
    --version) [ $# -ge 2 ] || usage_error "--version needs a release (e.g. 0.10.2)"; version=$2 version_given=1; shift 2 ;;
    --version=*) version=${1#--version=} version_given=1; shift ;;
    --cuda-only) subset=cuda; shift ;;
    --triton-only) subset=triton; shift ;;
    -h|--help) usage 0 ;;
    -*) echo "fetch-vllm: unknown option $1" >&2; usage 2 ;;
    *) [ -z "$dir" ] || die "one DIR only"; dir=$1; shift ;;
  esac
done
if [ -n "$archive" ] && [ -z "$want_sha" ]; then die "--archive needs --sha256 (only vllm-$PINNED_VERSION.tar.gz is pinned)"; fi
if [ -z "$archive" ] && [ -n "$want_sha" ]; then die "--sha256 goes with --archive"; fi
if [ -n "$want_sha" ] && ! [[ $want_sha =~ ^[0-9a-f]{64}$ ]]; then die "--sha256: not a sha256"; fi
if [ -n "$version_given" ] && [ -n "$archive" ]; then usage_error "--version fetches from the index; --archive/--sha256 take an archive you have: one or the other"; fi
if [ -n "$version_given" ] && ! [[ $version =~ ^[0-9]+(\.[0-9]+)*(\.post[0-9]+)?$ ]]; then
  usage_error "--version: '$(printable "$version")' is not a release (digits and dots, optionally .postN: 0.6.3, 0.10.1.1, 0.6.4.post1)"
fi
# The pinned release with or without --version: its pinned size and sha256 apply.
[ "$version" != "$PINNED_VERSION" ] || version=""
pinned=0
if [ -z "$archive" ] && [ -z "$version" ]; then pinned=1; version=$PINNED_VERSION; fi
NAME=vllm-$version.tar.gz

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

# The tree extracted from an archive with this checksum, if one is already in
# DIR: a whole one, or with --cuda-only one of that subset.
extracted_tree() {
  local m t kind
  for m in "$dir"/*/"$MARKER"; do
    [ -f "$m" ] || continue
    t=$(dirname "$m") kind=""
    [ ! -f "$t/$SUBSET" ] || kind=$(head -n 1 "$t/$SUBSET" | cut -d' ' -f1)
    if [ "$(cut -d' ' -f1 "$m")" = "$1" ] && [ "$kind" = "$subset" ]; then echo "$t"; return 0; fi
  done
  return 1
}
# The name a tree of this archive gets in DIR.
suffix=${subset:+-$subset}

# --cuda-only: the files of the tree $1 that the vllm-cuda build reads, one a
# line, relative to it: the kernel files and launchers of every form
# vllm_tree.cmake knows, csrc/cuda_compat.h, and what they #include "...",
# recursively (resolved beside the including file, then under csrc/, the
# build's include path; inside the tree only).
cuda_files() {
  local t=$1 f inc cand
  local -a queue=()
  local -A seen=()
  for f in csrc/cuda_compat.h csrc/attention/attention_kernels.cu csrc/attention/attention_kernels.cuh \
           csrc/attention/paged_attention_v1.cu csrc/attention/paged_attention_v2.cu; do
    [ ! -f "$t/$f" ] || queue+=("$f")
  done
  while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]} queue=("${queue[@]:1}")
    [ -z "${seen[$f]:-}" ] || continue
    seen[$f]=1
    printf '%s\n' "$f"
    while IFS= read -r inc; do
      for cand in "$(dirname "$f")/$inc" "csrc/$inc"; do
        cand=$(realpath -ms --relative-to="$t" "$t/$cand")
        case $cand in ../*|/*|..) continue ;; esac
        if [ -f "$t/$cand" ]; then queue+=("$cand"); break; fi
      done
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$t/$f")
  done
}

# Reads the index's simple page for vllm (PEP 503) and sets url (the link whose
# file name is exactly $NAME, without its fragment) and listed_sha (the link's
# #sha256=, lower case; empty if it has none).
curl_opts=(-fsSL --retry 3 --connect-timeout 30)
index_link() {
  local index cert html link
  command -v curl >/dev/null 2>&1 || die "needs curl to download $NAME"
  index=${PIP_INDEX_URL:-}
  if [ -z "$index" ]; then
    index=$(python3 -m pip config get global.index-url 2>/dev/null || python3 -m pip config get install.index-url 2>/dev/null || true)
  fi
  if [ -z "$index" ]; then
    index=$(python3 -c 'from pip._internal.models.index import PyPI; print(PyPI.simple_url)' 2>/dev/null) ||
      die "no package index: set PIP_INDEX_URL, or install pip"
  fi
  cert=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
  if [ -n "$cert" ] && [ -f "$cert" ]; then curl_opts+=(--cacert "$cert"); fi
  page=${index%/}/vllm/
  html=$(curl "${curl_opts[@]}" -H 'Accept: application/vnd.pypi.simple.v1+html, text/html;q=0.1' "$page") ||
    die "cannot read the package index page $(redact "$page")"
  link=$(printf '%s' "$html" | python3 -c '
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
if p.found:
    url, frag = urllib.parse.urldefrag(p.found)
    sha = ""
    for part in frag.split("&"):
        k, _, v = part.partition("=")
        if k == "sha256":
            sha = v.lower()
    print(url.replace("\n", "")); print(sha.replace("\n", ""))' "$page" "$NAME") ||
    die "cannot parse the package index page $(redact "$page")"
  url="" listed_sha=""
  { IFS= read -r url || true; IFS= read -r listed_sha || true; } <<<"$link"
  [ -n "$url" ] || die "$NAME is not listed on $(redact "$page")"
  case "$url" in
    http://*|https://*) ;;
    *) die "the index links $NAME to a URL that is not http(s); refusing it" ;;
  esac
  if [ -n "$listed_sha" ] && ! [[ $listed_sha =~ ^[0-9a-f]{64}$ ]]; then
    die "the index lists $NAME with a #sha256= that is not a sha256; refusing it"
  fi
}

if [ -z "$archive" ]; then
  if [ "$pinned" = 1 ]; then
    want_sha=$PINNED_SHA256 want_size=$PINNED_SIZE
  else
    # Any other release: its checksum is the one the index lists.
    index_link
    [ -n "$listed_sha" ] ||
      die "the index lists $NAME without a sha256 (no #sha256= on its link on $(redact "$page")); refusing it"
    want_sha=$listed_sha want_size=""
  fi
  if tree=$(extracted_tree "$want_sha"); then echo "fetch-vllm: $tree is already there (sha256 $want_sha)"; exit 0; fi
  [ ! -e "$dir/${NAME%.tar.gz}$suffix" ] ||
    die "$dir/${NAME%.tar.gz}$suffix exists but was not extracted from $NAME by this script; move it away first"
  archive=$dir/$NAME
  # A kept archive is reused only if it verifies; anything else is fetched again.
  if [ -f "$archive" ] && { { [ -n "$want_size" ] && [ "$(size_of "$archive")" != "$want_size" ]; } ||
                            [ "$(sha256_of "$archive")" != "$want_sha" ]; }; then
    rm -f "$archive"
  fi
  if [ ! -f "$archive" ]; then
    if [ "$pinned" = 1 ]; then
      index_link
      [ -z "$listed_sha" ] || [ "$listed_sha" = "$want_sha" ] ||
        die "the index lists $NAME with sha256 $listed_sha, expected $want_sha"
    fi
    echo "fetch-vllm: downloading $NAME from $(redact "$url")"
    part=$(mktemp "$dir/.$NAME.XXXXXX")
    trap 'rm -f "$part"' EXIT
    curl "${curl_opts[@]}" -o "$part" "$url" || die "download of $NAME failed"
    if [ -n "$want_size" ]; then
      got_size=$(size_of "$part")
      [ "$got_size" = "$want_size" ] || die "$NAME: $got_size bytes, expected $want_size; refusing it"
    fi
    got_sha=$(sha256_of "$part")
    [ "$got_sha" = "$want_sha" ] || die "$NAME: sha256 $got_sha, expected $want_sha; refusing it"
    chmod "$(printf '%o' $((0666 & ~0$(umask))))" "$part"   # mktemp made it private
    mv "$part" "$archive"
    trap - EXIT
  fi
  want_top=${NAME%.tar.gz}
else
  [ -f "$archive" ] || die "$archive: no such file"
  got_sha=$(sha256_of "$archive")
  [ "$got_sha" = "$want_sha" ] || die "$archive: sha256 $got_sha, expected $want_sha; refusing it"
  if tree=$(extracted_tree "$want_sha"); then echo "fetch-vllm: $tree is already there (sha256 $want_sha)"; exit 0; fi
  want_top=""
fi

# Extract next to the destination, then move the one top-level folder into place,
# so an interrupted run never leaves a half tree under the final name.
tmp=$(mktemp -d "$dir/.extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$archive" -C "$tmp" --no-same-owner || die "$archive: tar could not extract it"
tops=("$tmp"/*)
if [ ${#tops[@]} -ne 1 ] || [ ! -d "${tops[0]}" ]; then die "$archive: expected one top-level folder"; fi
top=$(basename "${tops[0]}")
[ -z "$want_top" ] || [ "$top" = "$want_top" ] || die "$archive: its top-level folder is $top, expected $want_top"
dest=$dir/$top$suffix
[ ! -e "$dest" ] || die "$dest exists but was not extracted from this archive by this script; move it away first"
src=${tops[0]}
# The subset `files` (one a line, relative to $src) with PKG-INFO, copied into
# $tmp/$top$suffix with a $SUBSET file naming it ($1: what it is for); $src then
# points there.
keep_subset() {
  [ -f "$src/PKG-INFO" ] && files=$(printf 'PKG-INFO\n%s' "$files")
  mkdir "$tmp/$top$suffix"
  (cd "$src" && printf '%s\n' "$files" | tar -cf - -T -) | tar -xf - -C "$tmp/$top$suffix" --no-same-owner ||
    die "$archive: could not copy the $subset files out of it"
  { echo "$subset  scripts/fetch-vllm.sh --$subset-only: PKG-INFO, the mark and $1"
    grep -v '^PKG-INFO$' <<<"$files"; } >"$tmp/$top$suffix/$SUBSET"
  src=$tmp/$top$suffix
}
if [ "$subset" = triton ]; then
  # The one list of the files ppbench reads from a tree (kernel files first).
  known=$(sed -n '/known_kernel_files\[\] = {/,/};/p' "$root/harness/run/source_tree.c" | grep -o '"vllm/[^"]*"' | tr -d '"')
  [ -n "$known" ] || die "no known_kernel_files list in $root/harness/run/source_tree.c"
  files=$(cd "$src" && for f in $known; do [ ! -f "$f" ] || echo "$f"; done)
  grep -q 'prefix_prefill\.py$\|triton_unified_attention\.py$' <<<"$files" ||
    die "$archive: no prefix_prefill.py or triton_unified_attention.py: nothing vllm-triton can prepare"
  keep_subset "the files vllm-triton reads"
elif [ "$subset" = cuda ]; then
  files=$(cuda_files "$src")
  grep -q '^csrc/attention/attention_kernels\.cuh\?$' <<<"$files" ||
    die "$archive: no csrc/attention/attention_kernels.cu or attention_kernels.cuh: this release has no CUDA paged attention for vllm-cuda (0.23.0 dropped it)"
  keep_subset "the files the vllm-cuda build reads"
fi
printf '%s  %s\n' "$want_sha" "$(basename "$archive")" >"$src/$MARKER"
mv "$src" "$dest"
echo "fetch-vllm: $dest (sha256 $want_sha)"
