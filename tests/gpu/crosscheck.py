#!/usr/bin/env python3
"""Cross-check two implementations on the same inputs (GPU machine).

    crosscheck.py PPBENCH DB RUN_A RUN_B [--out FILE]

For every case that is `ok` (or `noisy`) in both runs and differs only in its
`impl` (and `path`, which picks among the built-in kernels' code paths: a
plugin case is compared with each built-in path of its config), dump both (ppbench dump regenerates the inputs from the seed, which
depends on the shape only, and reruns the case) and compare the two outputs
element by element with the tolerance of ppbench's reference check
(|a - b| <= atol + rtol * |b|, the stored atol/rtol of the case). Each output was
already checked against the float64 reference by the run; this says the two
implementations agree with each other. Exit 0 when every pair agrees and at
least one pair was compared, 1 otherwise."""
import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile

import numpy as np


def to_f64(bits, dtype):
    if dtype == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.view(np.float16).astype(np.float64)


def strip_impl(key):
    return " ".join(t for t in key.split() if not t.startswith(("impl=", "path=")))


def results(db, run):
    q = ("SELECT c.key, c.impl, r.status, r.check_atol, r.check_rtol, c.dtype FROM results r "
         "JOIN cases c ON c.id = r.case_id WHERE r.run_id = ?")
    out = {}
    for row in db.execute(q, (run,)):
        out.setdefault(strip_impl(row[0]), []).append(row)
    return out


def dump(ppbench, dbpath, run, key, d):
    subprocess.run([ppbench, "dump", str(run), key, "--db", dbpath, "-o", d], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return np.load(f"{d}/out.npy")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ppbench")
    ap.add_argument("db")
    ap.add_argument("run_a", type=int)
    ap.add_argument("run_b", type=int)
    ap.add_argument("--out", help="JSON summary")
    a = ap.parse_args()
    db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    ra, rb = results(db, a.run_a), results(db, a.run_b)
    rows, bad = [], 0
    pairs = [(a_row, b_row) for k in sorted(set(ra) & set(rb)) for a_row in ra[k] for b_row in rb[k]]
    for (ka, ia, sa, atol, rtol, dtype), (kb, ib, sb, _, _, _) in pairs:
        shape_key = ka
        if sa not in ("ok", "noisy") or sb not in ("ok", "noisy"):
            rows.append({"case": shape_key, "skipped": f"{ia}: {sa}, {ib}: {sb}"})
            continue
        with tempfile.TemporaryDirectory() as da, tempfile.TemporaryDirectory() as dbd:
            oa = to_f64(dump(a.ppbench, a.db, a.run_a, ka, da), dtype)
            ob = to_f64(dump(a.ppbench, a.db, a.run_b, kb, dbd), dtype)
        diff = np.abs(oa - ob)
        over = int(np.count_nonzero(~(diff <= atol + rtol * np.abs(ob))))
        bad += over > 0
        rows.append({"case": shape_key, "impls": [ia, ib], "max_abs_diff": float(diff.max()),
                     "elements_outside_tolerance": over, "atol": atol, "rtol": rtol})
        print(f"{'AGREE' if over == 0 else 'DIFFER'}  max|a-b| {diff.max():.3g}  "
              f"({over} outside atol {atol:g} + rtol {rtol:g})  {ia} vs {ib}  {shape_key}")
    compared = sum(1 for r in rows if "impls" in r)
    skipped = len(rows) - compared
    print(f"crosscheck: {compared - bad} of {compared} pairs agree; {skipped} not compared (not ok in both runs)")
    if a.out:
        json.dump({"run_a": a.run_a, "run_b": a.run_b, "pairs": rows}, open(a.out, "w"), indent=1)
    return 0 if compared and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
