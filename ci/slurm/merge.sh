#!/usr/bin/env bash
#SBATCH --job-name=ppbench-merge
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --time=00:30:00
#
# Merge the shard databases of one array job into one:
#   $PPB_OUT/shard-1-of-N.db ... shard-N-of-N.db  ->  $PPB_OUT/$PPB_MERGED (all.db)
# Queued by ci/slurm/submit.sh to run after every shard (afterany: a shard
# with wrong cases still has results); runs as well by hand on any machine.
# Fails, naming them, when shards are missing, so a lost task is never
# mistaken for a complete night.
#
# Environment: PPBENCH (binary), PPB_OUT, PPB_SHARDS (N), PPB_MERGED (all.db).
set -euo pipefail
: "${PPB_OUT:?set PPB_OUT}" "${PPB_SHARDS:?set PPB_SHARDS}"
ppbench=${PPBENCH:-ppbench}
merged="$PPB_OUT/${PPB_MERGED:-all.db}"
dbs=()
missing=()
for k in $(seq 1 "$PPB_SHARDS"); do
  db="$PPB_OUT/shard-$k-of-$PPB_SHARDS.db"
  if [ -f "$db" ]; then dbs+=("$db"); else missing+=("$k"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "merge: shard(s) ${missing[*]} of $PPB_SHARDS produced no database (see their job logs)" >&2
  [ ${#dbs[@]} -gt 0 ] && "$ppbench" merge "${dbs[@]}" -o "$merged.partial" >&2 &&
    echo "merge: what there is was merged into $merged.partial" >&2
  exit 1
fi
"$ppbench" merge "${dbs[@]}" -o "$merged"
echo "merged $PPB_SHARDS shards into $merged"
