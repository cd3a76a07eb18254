#!/usr/bin/env bash
# Screenshots of the four report pages for docs/REPORTS.md: a run, a proposal
# (propose), a comparison (compare) and a suite's trend, each written by
# `ppbench report` from DB and photographed by headless Chromium (the top of
# the page: banner, reasons and the first chart, what a reviewer sees first).
#
#   scripts/report-screenshots.sh DB RUN PROPOSAL COMPARE SUITE [OUT_DIR]
#
#   DB        a results database (docs/results/*.db.xz: xz -dk first)
#   RUN       the run for the run page; PROPOSAL and COMPARE: proposal ids
#             (a propose verdict and a compare verdict); SUITE: the trend's suite
#   OUT_DIR   where report-{run,proposal,compare,trend}.png go (default docs/images)
#
# Needs the built ppbench (PPB, default build/ppbench), gnuplot and chromium.
set -euo pipefail

[ $# -ge 5 ] || { sed -n '2,14s/^# \{0,1\}//p' "$0" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
db=$1 run=$2 proposal=$3 compare=$4 suite=$5 out=${6:-$root/docs/images}
ppb=${PPB:-$root/build/ppbench}
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "report-screenshots: chromium is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shoot() { # NAME REPORT-ARGS...: write the report, photograph its top
  local name=$1; shift
  "$ppb" report "$@" --db "$db" -o "$work/$name" >/dev/null
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
    --user-data-dir="$work/profile" --screenshot="$out/report-$name.png" "file://$work/$name/index.html" \
    >/dev/null 2>&1
  echo "report-screenshots: $out/report-$name.png"
}

mkdir -p "$out"
shoot run "$run"
shoot proposal --proposal "$proposal"
shoot compare --proposal "$compare"
shoot trend --trend "$suite"
