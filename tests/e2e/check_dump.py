"""Cross-check a `ppbench dump` folder with NumPy alone: rebuild the attention
rows from the dumped inputs (reading the paged caches through the block table)
and compare with both the dumped float64 reference and the kernel output."""
import json
import sys

import numpy as np

d = sys.argv[1]
meta = json.load(open(f"{d}/case.json"))
f = meta["fields"]
load = lambda n: np.load(f"{d}/{n}.npy")


def to_f64(a):
    if f["dtype"] == "bf16":  # uint16 bit patterns -> float32
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


q, out = to_f64(load("q")), to_f64(load("out"))
kc, vc = to_f64(load("k_cache")), to_f64(load("v_cache"))
table, ctx_lens = load("block_table"), load("context_lens")
start, qlens = load("start_loc"), load("query_lens")
ref, rows = load("ref"), load("ref_rows")
H, KVH, D, P = f["num_heads"], f["num_kv_heads"], f["head_dim"], f["page_size"]
prefill = meta["kernel"] == "prefix_prefill"
if prefill:
    k_new, v_new = to_f64(load("k")), to_f64(load("v"))
window = f["sliding_window"]


def cached(b, kvh, n):
    pages = table[b, (np.arange(n) // P)]
    slot = np.arange(n) % P
    keys = kc[pages, kvh, :, slot, :].reshape(n, D)
    vals = vc[pages, kvh, :, slot]
    return keys, vals


worst = 0.0
for (t, h) in rows:
    b = int(np.searchsorted(start, t, side="right") - 1)
    kvh = h // (H // KVH)
    ctx = int(ctx_lens[b])
    keys, vals = cached(b, kvh, ctx)
    if prefill:
        i = t - start[b]
        keys = np.concatenate([keys, k_new[start[b]:t + 1, kvh]])
        vals = np.concatenate([vals, v_new[start[b]:t + 1, kvh]])
    if window > 0:
        keys, vals = keys[-window:], vals[-window:]
    s = keys @ q[t, h] / np.sqrt(D)
    p = np.exp(s - s.max())
    row = (p / p.sum()) @ vals
    worst = max(worst, np.abs(row - ref[np.where((rows == (t, h)).all(1))[0][0]]).max())
    assert np.abs(out[t, h] - row).max() < 0.05, (t, h, np.abs(out[t, h] - row).max())
assert worst < 1e-9, worst
print(f"check_dump: {len(rows)} rows agree (reference diff {worst:.1e})")
