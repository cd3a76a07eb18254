#!/usr/bin/env python3
"""A lower anchor for ppbench's prefix prefill: torch's own attention kernels on the
same shapes (issue 39, item 2), FlashAttention's first.

What it times is not what ppbench times: the keys and values are contiguous
[batch, heads, tokens, D] tensors (no page table), the kv heads are expanded to
the query heads beforehand (untimed: GQA by copy), and the mask must be causal
aligned to the bottom right (a query token sees the whole context and the new
tokens up to itself), which is prefix prefill's mask. So these are kernels with
none of the paging's costs, the numbers a paged kernel should get close to, not
rivals measured under the same rules. FLOPs are counted as ppbench counts them:
4 D heads (q ctx + q (q + 1) / 2) per sequence.

Two backends, each checked first on a small shape against a float32 reference
with the bottom-right mask (a backend whose mask is aligned otherwise computes
something else, and is said to, not timed):
  flash      torch.ops.aten._scaled_dot_product_flash_attention, is_causal
             (FlashAttention 2 inside torch; its causal mask is the bottom-right one
             when the query is shorter than the keys, if the check agrees)
  efficient  scaled_dot_product_attention with causal_lower_right under the
             memory-efficient backend (what torch dispatches that mask to)

Timing: CUDA events around each call after zeroing a 256 MB buffer (a cold L2,
ppbench's rule for cases below 190 MB), median of --samples calls after 3
warm-up calls. One line per shape and backend; --json writes them all.

  python3 tests/gpu/sdpa_anchor.py --json OUT/sdpa.json
  python3 tests/gpu/sdpa_anchor.py --shape 8192,90112,32,4,128   # q, ctx, heads, kv heads, D

Exit 0 when every backend passed its check and every shape ran on one; 1
otherwise; 2 no CUDA or torch.
"""

import argparse
import json
import statistics
import sys

# prefill.yaml's shapes at batch 1 (q, ctx, heads, kv heads, D); the goal case first.
SHAPES = [
    (8192, 90112, 32, 4, 128),
    (8192, 0, 32, 4, 128),
    (8192, 90112, 8, 1, 128),
    (8192, 0, 8, 1, 128),
    (512, 16384, 32, 4, 128),
    (512, 16384, 8, 1, 128),
    (16384, 0, 8, 1, 128),
    (16384, 81920, 8, 1, 128),
    (8192, 0, 16, 2, 64),
    (8192, 32768, 16, 2, 64),
    (8192, 0, 16, 2, 256),
    (8192, 32768, 16, 2, 256),
]


def flops(q, ctx, heads, d):
    return 4.0 * d * heads * (q * ctx + q * (q + 1) / 2)


def inputs(torch, shape, dtype):
    q_len, ctx, heads, kv_heads, d = shape
    gen = torch.Generator(device="cuda").manual_seed(1)
    opts = dict(device="cuda", dtype=dtype)
    q = torch.randn(1, heads, q_len, d, generator=gen, **opts)
    k = torch.randn(1, kv_heads, ctx + q_len, d, generator=gen, **opts)
    v = torch.randn(1, kv_heads, ctx + q_len, d, generator=gen, **opts)
    group = heads // kv_heads  # GQA by copy, untimed
    return q, k.repeat_interleave(group, dim=1).contiguous(), v.repeat_interleave(group, dim=1).contiguous()


def backends(torch):
    """name -> f(q, k, v) for q [1, H, q, D], k/v [1, H, ctx + q, D], the bottom-right causal mask wanted."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    def flash(q, k, v):
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)[0]

    def efficient(q, k, v):
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):  # no silent fallback to another backend
            return torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=causal_lower_right(q.shape[2], k.shape[2]))
    return {"flash": flash, "efficient": efficient}


def check(torch, fn):
    """Max abs error against float32 with the bottom-right mask, q 256 on ctx 384, 4 heads, D 128."""
    q, k, v = inputs(torch, (256, 384, 4, 4, 128), torch.bfloat16)
    q_len, kv_len = q.shape[2], k.shape[2]
    s = (q.float() @ k.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
    row = torch.arange(q_len, device="cuda")[:, None] + (kv_len - q_len)
    s = s.masked_fill(torch.arange(kv_len, device="cuda")[None, :] > row, float("-inf"))
    want = torch.softmax(s, dim=-1) @ v.float()
    return (fn(q, k, v).float() - want).abs().max().item()


def time_shape(torch, fn, shape, samples, flush):
    q_len, ctx, heads, kv_heads, d = shape
    q, k, v = inputs(torch, shape, torch.bfloat16)
    times, out = [], None
    for i in range(3 + samples):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn(q, k, v)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    return {"median_ms": ms, "tflops": flops(q_len, ctx, heads, d) / (ms * 1e-3) / 1e12,
            "finite": bool(torch.isfinite(out).all().item())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--shape", action="append", help="q,ctx,heads,kv_heads,D (repeatable; default prefill.yaml's)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("sdpa_anchor: no torch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("sdpa_anchor: no CUDA device: nothing timed", file=sys.stderr)
        return 2
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape] if args.shape else SHAPES
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, bf16, median of {args.samples}, cold L2")
    results, ok, usable = [], True, {}
    for name, fn in backends(torch).items():
        try:
            err = check(torch, fn)
        except RuntimeError as e:
            print(f"{name}: cannot run the check: {str(e).splitlines()[0]}")
            ok = False
            continue
        good = err < 2e-2
        print(f"{name}: bottom-right causal check, max abs error {err:.2e}: {'ok' if good else 'WRONG MASK, not timed'}")
        results.append({"backend": name, "check_max_abs_err": err, "check_ok": good})
        ok = ok and good
        if good:
            usable[name] = fn
    for shape in shapes:
        ran = False
        for name, fn in usable.items():
            r = {"backend": name, "q": shape[0], "ctx": shape[1], "heads": shape[2], "kv_heads": shape[3],
                 "head_dim": shape[4], "dtype": "bf16", "samples": args.samples}
            label = f"{name:9s} q {shape[0]} ctx {shape[1]} {shape[2]}/{shape[3]} D {shape[4]}"
            try:
                r.update(time_shape(torch, fn, shape, args.samples, flush))
            except RuntimeError as e:  # the backend cannot run this shape: said, not skipped silently
                r["error"] = str(e).splitlines()[0]
                print(f"{label}: refused: {r['error']}")
            else:
                ran = ran or r["finite"]
                print(f"{label}: {r['median_ms']:.3f} ms, {r['tflops']:.1f} TFLOP/s"
                      f"{'' if r['finite'] else ' NON-FINITE OUTPUT'}")
            results.append(r)
            torch.cuda.empty_cache()
        ok = ok and ran
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": results}, f,
                      indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
