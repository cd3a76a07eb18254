#!/usr/bin/env bash
# The charts that decide, read in the gnuplot scripts the report writes (what
# is drawn, not how it looks; report_browser.sh looks):
# - the proposal's forest plot (propose and compare share it): round ratio tics
#   on its log axis, the rules' limits where the verdict puts them (read back
#   from the database), the geometric mean on a row of its own, rows named by
#   the fields that vary; a proposal stored without its rules draws none;
# - the trend's history charts over ten nights, several of them in one second:
#   one x position per night labelled with its run id, thinned, the axis title
#   below the tics, the legend outside the plot, the case in the PNG's title.
source "$(dirname "$0")/lib.bash"
export PPBENCH_DB="$WORK/p.db"
command -v gnuplot >/dev/null || echo "note: no gnuplot: the scripts are checked, not rendered"

# ---- the forest plot -------------------------------------------------------
set +e; "$PPB" propose "$SRC/tests/data/proposals/ab-smoke.yaml" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err"; fail "propose exited $rc";; esac   # CPU timings: any verdict
prop=$(sqlite3 "$PPBENCH_DB" "SELECT max(id) FROM proposals")
expect_rc 0 "$PPB" report --proposal "$prop" -o "$WORK/prop"

# forest.py GP DAT DB PROPOSAL [norules]: the script's tics, limits and rows.
cat >"$WORK/forest.py" <<'PY'
import math, re, sqlite3, sys
gp, dat, db, prop = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3], int(sys.argv[4])
norules = len(sys.argv) > 5
con = sqlite3.connect(db)
mg, mr, t = con.execute("SELECT min_gain, max_regression, threshold FROM proposals WHERE id = ?", (prop,)).fetchone()
keys = [k for (k,) in con.execute("SELECT candidate_key FROM proposal_cases WHERE proposal_id = ? ORDER BY idx", (prop,))]
n = len(keys)

lo, hi = map(float, re.search(r"^set xrange \[([^:]+):([^\]]+)\]$", gp, re.M).groups())
assert "set logscale x" in gp
tics = [float(v) for v in re.search(r"^set xtics \(([^)]*)\)$", gp, re.M).group(1).split(",")]
assert len(tics) >= 3 and 1.0 in tics and tics == sorted(tics), tics          # several, not a lone "1"
assert all(lo <= v <= hi for v in tics), (tics, lo, hi)
assert all(abs(math.log(b / a)) > math.log(hi / lo) / 10 for a, b in zip(tics, tics[1:])), tics  # none crowded

def value(name):
    m = re.search(r"^%s = ([0-9.eE+-]+)$" % name, gp, re.M)
    return float(m.group(1)) if m else None
if norules:
    assert mg is None and value("reject_at") is None and value("accept_below") is None, "limits without rules"
else:
    # where the verdict judges: 1 + max(max_regression, threshold); 1 / (1 + max(min_gain, threshold))
    reject, accept = 1 + max(mr, t), 1 / (1 + max(mg, t))
    assert abs(value("reject_at") - reject) < 1e-6 and abs(value("accept_below") - accept) < 1e-6, \
        (value("reject_at"), reject, value("accept_below"), accept)
    assert re.search(r"^set object \d+ rect from reject_at, graph 0 to graph 1, graph 1 ", gp, re.M)
    assert re.search(r"^set object \d+ rect from graph 0, graph 0 to accept_below, graph 1 ", gp, re.M)
    assert re.search(r"^set arrow \d+ from reject_at, graph 0 to reject_at, graph 1 ", gp, re.M)
    assert re.search(r"^set arrow \d+ from accept_below, graph 0 to accept_below, graph 1 ", gp, re.M)
    assert lo < accept and reject < hi, "a limit off the axis"

# rows: case i at y = i, named "#i FIELDS"; the mean alone, below them
ytics = re.findall(r"'((?:[^']|'')*)' (\d+)", re.search(r"^set ytics \((.*)\) noenhanced", gp, re.M).group(1))
rows = {int(y): label for label, y in ytics}
assert len(rows) == len(ytics), "two labels on one row"
mean_y = [y for y, label in rows.items() if label == "geometric mean"]
assert len(mean_y) == 1 and mean_y[0] > n, (mean_y, n)
assert sorted(y for y in rows if y != mean_y[0]) == list(range(1, n + 1)), rows
blocks = [b for b in dat.split("\n\n\n")]
mean_rows = [l.split() for l in blocks[-1].splitlines() if l and not l.startswith("#")]
assert len(mean_rows) == 1 and int(mean_rows[0][3]) == mean_y[0], mean_rows   # drawn where it is named
labels = [rows[i] for i in range(1, n + 1)]
assert all(l.startswith("#%d" % (i + 1)) for i, l in enumerate(labels)), labels
if n > 1:
    assert len(set(labels)) == n, labels                              # they tell the cases apart
    fields = [dict(f.split("=", 1) for f in k.split()[1:]) for k in keys]
    same = [f for f in fields[0] if all(x[f] == fields[0][f] for x in fields)]
    assert same and not any(re.search(r"(^| )%s=" % re.escape(f), l) for f in same for l in labels), (same, labels)
    assert max(map(len, labels)) < min(map(len, keys)), labels      # shorter than the keys
PY
"$PY" "$WORK/forest.py" "$WORK/prop/charts/proposal-ratios.gp" "$WORK/prop/charts/proposal-ratios.dat" \
  "$PPBENCH_DB" "$prop" || fail "the proposal's forest plot"
if command -v gnuplot >/dev/null; then
  [ -s "$WORK/prop/charts/proposal-ratios.png" ] && [ -s "$WORK/prop/charts/proposal-ratios.svg" ] \
    || fail "gnuplot drew no forest plot: $(cat "$WORK/prop/charts/gnuplot.log")"
fi

# A proposal stored before its rules were (schema < 12): the plot draws no limits and says why.
sqlite3 "$PPBENCH_DB" "UPDATE proposals SET min_gain = NULL, max_regression = NULL, threshold = NULL WHERE id = $prop"
expect_rc 0 "$PPB" report --proposal "$prop" -o "$WORK/prop-old"
"$PY" "$WORK/forest.py" "$WORK/prop-old/charts/proposal-ratios.gp" "$WORK/prop-old/charts/proposal-ratios.dat" \
  "$PPBENCH_DB" "$prop" norules || fail "the forest plot of a proposal without stored rules"
grep -q "were not stored (a database from before schema 12): no limits drawn" "$WORK/prop-old/index.html" \
  || fail "the page does not say why no limits are drawn"

# ---- the trend's charts ----------------------------------------------------
# Ten nights of three cases; several start in the same second, as CI's do.
FILTER="batch=1,dtype=bf16,query_len=17,block_m=16"
for i in 1 2 3 4 5 6 7 8 9 10; do
  expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --quiet --filter "$FILTER"
done
"$PPB" list "$SRC/suites/smoke.yaml" --filter "$FILTER" >"$WORK/keys.txt"
expect_rc 0 "$PPB" list --json "$WORK/runs.json"
expect_rc 0 "$PPB" report --trend smoke -o "$WORK/trend"
"$PY" - "$WORK/trend/charts" "$WORK/runs.json" "$WORK/keys.txt" <<'PY' || fail "the trend's charts"
import glob, json, os, re, sys
charts, runs, keys = sys.argv[1], json.load(open(sys.argv[2]))["runs"], [k.strip() for k in open(sys.argv[3]) if k.strip()]
nights = sorted((r for r in runs if r["kind"] == "run" and r["suite_name"] == "smoke"),
                key=lambda r: (r["started_at"], r["id"]))
assert len(nights) == 10 and len({r["started_at"] for r in nights}) < 10, "no two nights in one second"
TICS = 8   # RP_TREND_TICS
scripts = sorted(glob.glob(charts + "/trend-[0-9]*.gp"))
assert len(scripts) == len(keys), (scripts, keys)
titled = set()
for path in scripts:
    gp = open(path).read()
    assert "xdata time" not in gp, path                                  # no dates to collide
    tics = re.findall(r"('run (\d+)'\.nl\.'[^']*'|'') (\d+)( 1)?", re.search(r"^set xtics \((.*)\) noenhanced", gp, re.M).group(1))
    xs = [int(x) for _, _, x, _ in tics]
    assert xs == sorted(set(xs)) and xs == list(range(len(nights))), xs   # one position per night, each marked
    labelled = [(int(run), int(x)) for label, run, x, minor in tics if run]
    assert 3 <= len(labelled) <= TICS, labelled                         # thinned
    assert all(nights[x]["id"] == run for run, x in labelled), labelled  # each the run of its night
    assert all(minor == " 1" for label, run, x, minor in tics if not run), "an unlabelled tic is not minor"
    assert labelled[-1][1] == len(nights) - 1, "the latest night is not named"
    x0, x1 = map(float, re.search(r"^set xrange \[([^:]+):([^\]]+)\]$", gp, re.M).groups())
    assert x0 < 0 < len(nights) - 1 < x1, (x0, x1)
    # the axis title apart from the two-line tics; the legend outside the plot
    assert re.search(r"^set xlabel '[^']+' offset 0, -", gp, re.M) and re.search(r"^set bmargin [5-9]$", gp, re.M), path
    assert re.search(r"^set key outside ", gp, re.M) and not re.search(r"^set key inside", gp, re.M), path
    # the PNG's title names the case, whole
    title = re.search(r"^chart_title = (.*)$", gp, re.M).group(1)
    named = [k for k in keys if "'%s'" % k in title]
    assert len(named) == 1, title
    titled.add(named[0])
    assert re.search(r"^set title chart_title font 'sans,\d+'$", gp, re.M), "the title's font does not fit it"
    dat = open(path[:-3] + ".dat").read().split("\n\n\n")[0]
    rows = [l.split() for l in dat.splitlines() if l and not l.startswith("#")]
    assert all(nights[int(x)]["id"] == int(run) for x, _, run, _ in rows), rows   # the points at their nights
assert titled == set(keys), titled
ov = open(charts + "/trend-overview.gp").read()
assert all("'run %d'" % r["id"] in ov for r in nights), "the overview does not name every night by run id"
PY
if command -v gnuplot >/dev/null; then
  [ "$(ls "$WORK/trend/charts/"trend-*.png | wc -l)" -eq 4 ] || fail "gnuplot drew $(ls "$WORK/trend/charts/"*.png | wc -l) trend PNGs"
fi
echo "report_charts: ok"
