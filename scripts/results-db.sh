#!/bin/sh
# Restore a results database the docs name, so ppbench can read it. docs/results/ keeps only the databases
# docs/BENCHMARKS.md cites, xz-compressed; the rest are in git history (docs/results/README.md). This writes
# docs/results/NAME (git ignores *.db) from NAME.xz, else from the last commit that held it (or COMMIT), and
# prints its path:  ppbench show 5 --db "$(scripts/results-db.sh h200-2026-12-01.db)"
# Usage: scripts/results-db.sh NAME.db [COMMIT]
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 NAME.db [COMMIT]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
name=$(basename "$1" .xz)
path=docs/results/$name
out=$root/$path
trap 'rm -f "$out.part"' EXIT
if [ $# -eq 2 ]; then
  git -C "$root" show "$2:$path" > "$out.part"
elif [ -f "$out" ]; then
  echo "$out"; exit 0                       # restored before
elif [ -f "$out.xz" ]; then
  xz -dc "$out.xz" > "$out.part"
else
  # The newest commit that touched the path: the one that removed it (then its parent has the file), or the
  # last one to change it, if the work tree lacks a file HEAD still has.
  c=$(git -C "$root" rev-list -n 1 HEAD -- "$path")
  [ -n "$c" ] || { echo "$name: not in docs/results/ nor in its git history (a shallow clone? git fetch --unshallow)" >&2; exit 1; }
  git -C "$root" cat-file -e "$c:$path" 2>/dev/null || c=$c^
  git -C "$root" show "$c:$path" > "$out.part"
fi
mv "$out.part" "$out"
echo "$out"
