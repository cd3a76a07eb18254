#!/bin/sh
# docs/results/ is the record of GPU runs, not a results store (docs/results/README.md): text summaries and the few
# databases docs/BENCHMARKS.md cites, xz-compressed. This fails, naming the files, when what git holds there (tracked
# files, and untracked ones not ignored: what `git add` would take) exceeds 5 MB or includes an uncompressed SQLite
# database. Outside a git checkout (a source archive) it checks the files present, less the `FILE.db` copies
# decompressed beside their `FILE.db.xz`. Exit 77 (CTest: skipped) when git is not installed.
# Usage: results_budget.sh SOURCE_DIR
set -eu
root=${1:?usage: results_budget.sh SOURCE_DIR}
budget=5000000   # bytes
dir=docs/results
if ! command -v git >/dev/null 2>&1; then
  echo "results_budget: skipped: git is not installed, so the files git holds in $dir/ cannot be listed"
  exit 77
fi
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Empty prefix: SOURCE_DIR is the top of a work tree (not a folder of some other repository).
if [ "$(git rev-parse --show-prefix 2>/dev/null || echo none)" = "" ]; then
  how="git ls-files"
  git ls-files --cached --others --exclude-standard -- "$dir" > "$tmp/list"
else
  how="files present, not a git checkout"
  find "$dir" -type f | while IFS= read -r f; do
    case $f in *.db) [ -f "$f.xz" ] && continue ;; esac
    echo "$f"
  done > "$tmp/list"
fi

total=0 count=0
: > "$tmp/sizes"
: > "$tmp/dbs"
while IFS= read -r f; do
  [ -f "$f" ] || continue                   # tracked, deleted in the work tree
  size=$(wc -c < "$f")
  total=$((total + size)) count=$((count + 1))
  echo "$size $f" >> "$tmp/sizes"
  case $f in
    *.db | *.db-wal | *.db-shm | *.sqlite | *.sqlite3) echo "$f" >> "$tmp/dbs"; continue ;;
  esac
  [ "$(head -c 15 "$f" | tr -d '\000')" = "SQLite format 3" ] && echo "$f" >> "$tmp/dbs"
done < "$tmp/list"

rc=0
if [ -s "$tmp/dbs" ]; then
  echo "results_budget: uncompressed databases in $dir/ ($how); keep only those docs/BENCHMARKS.md cites, as" \
       "FILE.db.xz (xz -9 -k FILE.db), and git rm the rest (git history keeps them):"
  sed 's/^/  /' "$tmp/dbs"
  rc=1
fi
if [ "$total" -gt "$budget" ]; then
  echo "results_budget: $dir/ holds $total bytes in $count files ($how), over the budget of $budget;" \
       "the largest, enough to get under it:"
  over=$((total - budget))
  sort -rn "$tmp/sizes" | while read -r size f; do
    echo "  $size $f"
    over=$((over - size))
    [ "$over" -gt 0 ] || break
  done
  rc=1
fi
[ "$rc" -ne 0 ] || echo "results_budget: $dir/ holds $total bytes in $count files ($how), budget $budget; no uncompressed database"
exit "$rc"
