#!/usr/bin/env bash
# Run a suite as N shards of a Slurm array job, then merge them:
#   ci/slurm/submit.sh --suite suites/nightly.yaml --shards 4 --out /shared/ppbench/$(date +%F)
#       [--ppbench PATH] [--backend auto|cpu|cuda] [--run-args "..."] [--gres gpu:1]
#       [--partition P] [--merged all.db] [-- more sbatch options]
# Prints the two job ids ("array JOB" and "merge JOB") on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite="" shards="" out="" gres="" partition=""
export PPBENCH=${PPBENCH:-$(command -v ppbench || true)} PPB_BACKEND=${PPB_BACKEND:-auto}
export PPB_RUN_ARGS=${PPB_RUN_ARGS:-} PPB_MERGED=${PPB_MERGED:-all.db}
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ppbench) PPBENCH=$2; shift 2 ;;
    --backend) PPB_BACKEND=$2; shift 2 ;;
    --run-args) PPB_RUN_ARGS=$2; shift 2 ;;
    --gres) gres=$2; shift 2 ;;
    --partition) partition=$2; shift 2 ;;
    --merged) PPB_MERGED=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "submit.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$suite" ] && [ -n "$out" ] && [[ "$shards" =~ ^[1-9][0-9]*$ ]] ||
  { echo "usage: submit.sh --suite FILE --shards N --out DIR [options]" >&2; exit 2; }
[ -x "$PPBENCH" ] || { echo "submit.sh: no ppbench binary (--ppbench PATH)" >&2; exit 2; }
mkdir -p "$out"
export PPBENCH=$(realpath "$PPBENCH") PPB_SUITE=$(realpath "$suite") PPB_OUT=$(realpath "$out") PPB_SHARDS=$shards
common=(--parsable --chdir "$PPB_OUT")
[ -n "$partition" ] && common+=(--partition "$partition")
shard_opts=(--array "1-$shards" --output "$PPB_OUT/shard-%a-of-$shards.log")
[ -n "$gres" ] && shard_opts+=(--gres "$gres")
array=$(sbatch "${common[@]}" "${shard_opts[@]}" "$@" "$here/ppbench-array.sbatch")
array=${array%%;*}
merge=$(sbatch "${common[@]}" --dependency "afterany:$array" --output "$PPB_OUT/merge.log" "$@" "$here/merge.sh")
merge=${merge%%;*}
echo "array $array"
echo "merge $merge"
