#!/usr/bin/env python3
"""Is ppbench's time for a production kernel the kernel's own time? (goal: within 3%)

For each case key: ppbench's stored median (results database), then the same
kernel on the same inputs (`ppbench dump`) timed outside ppbench, cold L2 like
ppbench, and checked against the dumped float64 reference rows.

  vllm-triton (prefix_prefill): vLLM's `_fwd_kernel` imported from the vLLM
      source tree and launched from Python with the case's BLOCK and num_warps,
      timed with triton.testing.do_bench (median; it clears L2 before each run).
  vllm-cuda (paged_attention): the plugin library libppbk_vllm_cuda.so through
      ctypes (its `launch`, as ppbench calls it), timed with CUDA events around
      each launch after an L2 flush.
  --wrapper (a plugin prepare.py built --from-wrapper from a vLLM tree:
      vllm-triton@0.34.0, vllm-triton-decode@0.20.0, vllm-triton-unified@0.10.2,
      a team's tree): the tree's own Python wrapper (context_attention_fwd,
      unified_attention or chunked_prefill_paged_decode, found from the run's
      impl.NAME.source and checked unchanged), called with real tensors as vLLM
      calls it (capture.py's argument tables), the new tokens written into the
      cache first for the staged families' prefill; timed with do_bench. Each release's time is so
      checked against that release's own launch, not against 0.6.3's.
Both are also timed with the other method (own event loop / do_bench) as a
second opinion; --timer picks which one the verdict uses.

  tests/gpu/timing_fidelity.py --ppbench build-gpu/ppbench --db OUT/ppbench.db \\
      --vllm .deps/vllm-0.6.3 --plugin-dir build-gpu/plugins --out fidelity.json \\
      --cases-from-run latest --filter impl=vllm-
  tests/gpu/timing_fidelity.py --wrapper --ppbench build-gpu/ppbench --db OUT/unified-prefill.db \
      --plugin-dir build-gpu/plugins --out f.json --cases-from-run label=prefill-unified-0.34.0 \
      --filter 'q=8192 ctx=90112 ragged=false h=32 kvh=4|dec=64'

Exit: 0 every case within 3% and correct, 1 otherwise, 2 usage or missing inputs.
--dry-run does everything but the GPU part (numpy only); --self-test-layout
checks the ctypes mirrors of the ABI structs against the C headers (needs cc).
"""
import argparse
import ctypes
import functools
import hashlib
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 0.03
torch = triton = np = None  # imported in main(): --self-test-layout needs neither


def die(msg, code=2):
    print(f"timing_fidelity: {msg}", file=sys.stderr)
    sys.exit(code)


class CaseError(Exception):
    """This case cannot be compared (reason printed, counted as a failure)."""


# ---------------------------------------------------------------- ABI mirrors
# kernels/ppb_kernel_abi.h and kernels/attention_args.h, field for field (the
# names are the C names, so --self-test-layout can compare offsets by name).
c_int, c_uint, c_long, c_float, c_vp, c_char_p, c_size_t = (ctypes.c_int, ctypes.c_uint, ctypes.c_long,
                                                            ctypes.c_float, ctypes.c_void_p, ctypes.c_char_p,
                                                            ctypes.c_size_t)


class Device(ctypes.Structure):  # ppbk_device
    _fields_ = [("backend", c_uint), ("device_index", c_int), ("cc", c_int), ("warp_size", c_int),
                ("sm_count", c_int), ("smem_optin", c_long)]


class DecodeConfig(ctypes.Structure):  # ppbk_decode_config
    _fields_ = [(n, c_int) for n in ("dtype", "head_dim", "page_size", "sliding_window", "version",
                                     "num_threads", "partition_size", "path")]


class DecodeArgs(ctypes.Structure):  # ppb_decode_args
    _fields_ = [("q", c_vp), ("k_cache", c_vp), ("v_cache", c_vp), ("out", c_vp), ("block_table", c_vp),
                ("seq_lens", c_vp), ("tmp_out", c_vp), ("exp_sums", c_vp), ("max_logits", c_vp)] + \
               [(n, c_int) for n in ("num_seqs", "num_heads", "num_kv_heads", "head_dim", "page_size",
                                     "max_blocks_per_seq", "max_seq_len", "max_num_partitions",
                                     "sliding_window")] + [("sm_scale", c_float)]


_P = ctypes.POINTER
# Kernel ABI version 3 on: every call takes the context open stored first.
DECODE_FN = ctypes.CFUNCTYPE(c_int, c_vp, _P(Device), _P(DecodeConfig), _P(DecodeArgs), c_char_p, c_size_t)
LAUNCH_FN = ctypes.CFUNCTYPE(c_int, c_vp, _P(Device), _P(DecodeConfig), _P(DecodeArgs), c_vp, c_char_p, c_size_t)
OPEN_FN = ctypes.CFUNCTYPE(c_int, _P(Device), _P(c_vp), c_char_p, c_size_t)


class DecodeOps(ctypes.Structure):  # ppbk_decode_ops
    _fields_ = [("refuse", DECODE_FN), ("launch", LAUNCH_FN), ("prepare", c_vp), ("kv_layout", c_int)]


class Impl(ctypes.Structure):  # ppbk_impl
    _fields_ = [("abi_version", c_uint), ("struct_size", c_uint), ("name", c_char_p), ("version", c_char_p),
                ("source", c_char_p), ("backends", c_uint), ("open", OPEN_FN), ("close", c_vp),
                ("prefill", c_vp), ("decode_v1", _P(DecodeOps)), ("decode_v2", _P(DecodeOps))]


# The version the plugins are built with, read from the header (version 4 appended num_stages to the prefill
# config, which is not mirrored; version 5 kv_layout to the ops tables; --self-test-layout checks the mirrors).
PPBK_ABI_VERSION = int(re.search(r"^#define PPBK_ABI_VERSION (\d+)$", (REPO / "kernels" / "ppb_kernel_abi.h").read_text(),
                                 re.M).group(1))
PPBK_BACKEND_CUDA, PPBK_OK = 2, 0
LAYOUT = {"ppbk_device": (Device, 32), "ppbk_decode_config": (DecodeConfig, 32),
          "ppbk_decode_ops": (DecodeOps, 32), "ppbk_impl": (Impl, 80), "ppb_decode_args": (DecodeArgs, 112)}
# Sizes measured with gcc on x86-64 Linux from the headers (LP64).
for _name, (_cls, _size) in LAYOUT.items():
    assert ctypes.sizeof(_cls) == _size, (_name, ctypes.sizeof(_cls), _size)


def self_test_layout():
    """Compile a C program printing sizeof/offsetof of every mirrored field and
    compare it with ctypes: catches a header change the mirrors missed."""
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "ppb_kernel_abi.h"', 'int main(void) {']
    want = []
    for cname, (cls, _) in LAYOUT.items():
        lines.append(f'printf("{cname} %zu\\n", sizeof({cname}));')
        want.append(f"{cname} {ctypes.sizeof(cls)}")
        for f, _t in cls._fields_:
            lines.append(f'printf("{cname}.{f} %zu\\n", offsetof({cname}, {f}));')
            want.append(f"{cname}.{f} {getattr(cls, f).offset}")
    lines.append("return 0; }")
    with tempfile.TemporaryDirectory() as d:
        src, exe = Path(d) / "layout.c", Path(d) / "layout"
        src.write_text("\n".join(lines) + "\n")
        cc = os.environ.get("CC", "cc")
        r = subprocess.run([cc, "-std=c11", "-I", str(REPO / "kernels"), str(src), "-o", str(exe)],
                           capture_output=True, text=True)
        if r.returncode:
            die(f"{cc} failed on the layout check:\n{r.stderr}")
        got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    bad = [f"  C: {g}   ctypes: {w}" for g, w in zip(got, want) if g != w]
    if len(got) != len(want):
        bad.append(f"  {len(got)} C lines, {len(want)} expected")
    if bad:
        print("layout mismatch:\n" + "\n".join(bad))
        return 1
    print(f"layout: {len(want)} sizes and offsets agree with kernels/*.h")
    return 0


# ---------------------------------------------------------------- the database

def open_db(path):
    if not Path(path).is_file():
        die(f"no database {path}")
    con = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)  # never writes
    con.row_factory = sqlite3.Row
    return con


def run_id_of(con, run):
    if run.startswith("label="):  # the latest run of that label (one database, several steps' runs)
        row = con.execute("SELECT max(id) FROM runs WHERE label = ?", (run[6:],)).fetchone()
        if row[0] is None:
            die(f"the database has no run labelled '{run[6:]}'")
        return row[0]
    if run == "latest":
        row = con.execute("SELECT max(id) FROM runs").fetchone()
        if row[0] is None:
            die("the database has no runs")
        return row[0]
    if not re.fullmatch(r"\d+", run):
        die(f"run must be a number, 'latest' or 'label=LABEL', not '{run}'")
    return int(run)


def keys_of_run(con, run, filters, wrapper):
    """Production-kernel cases of a run whose key contains every filter
    (with --wrapper: cases of plugins, "plugin:NAME")."""
    rows = con.execute("SELECT c.key, c.impl, r.status FROM results r JOIN cases c ON c.id = r.case_id "
                       "WHERE r.run_id = ? ORDER BY c.id", (run,)).fetchall()
    hit = [r for r in rows if all(any(alt in r["key"] for alt in f.split("|")) for f in filters)]
    timed = [r for r in hit if r["status"] in ("ok", "noisy")]
    if len(timed) < len(hit):  # refused configs (e.g. BLOCK_M != BLOCK_N on vllm-triton) have no time to compare
        print(f"({len(hit) - len(timed)} matching cases of run {run} left out: not timed by ppbench)")
    hit = timed
    keys = [r["key"] for r in hit if (r["impl"].startswith("plugin:") if wrapper else
                                      r["impl"] in ("vllm-triton", "vllm-cuda"))]
    if len(keys) < len(hit):
        print(f"({len(hit) - len(keys)} matching cases of run {run} left out: "
              f"{'not a plugin' if wrapper else 'not vllm-triton / vllm-cuda'})")
    return keys


def ppbench_result(con, key, run):
    """ppbench's result for `key` in `run` (default: the latest run holding it),
    with the case's field columns."""
    sql = ("SELECT c.*, r.run_id, r.status, r.reason, r.median_ms, r.n_samples, r.batch_launches, "
           "r.timing_is_cpu, r.check_atol, r.check_rtol FROM results r JOIN cases c ON c.id = r.case_id "
           "WHERE c.key = ?" + (" AND r.run_id = ?" if run else "") + " ORDER BY r.run_id DESC LIMIT 1")
    row = con.execute(sql, (key, run) if run else (key,)).fetchone()
    if row is None:
        raise CaseError("no such case in " + (f"run {run}" if run else "the database"))
    res = dict(row)
    res.setdefault("impl", "builtin")  # schema < 5
    res["env"] = {r[0]: r[1] for r in con.execute("SELECT key, value FROM env WHERE run_id = ?", (res["run_id"],))}
    return res


# ---------------------------------------------------------------- inputs

def dump_case(a, res, key, out_dir):
    """The case's tensors as ppbench generated them (`ppbench dump`), as numpy arrays."""
    cmd = [a.ppbench, "dump", str(res["run_id"]), key, "--db", a.db, "-o", str(out_dir)]
    for d in a.plugin_dir:
        cmd += ["--plugin", d]  # dump reruns the case, so it needs the plugin as the run did
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise CaseError(f"ppbench dump failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()}")
    meta = json.loads((out_dir / "case.json").read_text())
    arrays = {}
    for f in meta["files"]:
        arr = np.load(out_dir / f["name"])
        if list(arr.shape) != f["shape"] or arr.dtype.str != f["dtype"]:
            raise CaseError(f"{f['name']}: {arr.dtype.str} {list(arr.shape)}, case.json: {f['dtype']} {f['shape']}")
        arrays[f["name"][:-4]] = arr
    f = meta["fields"]
    T, H, KVH, D, P = len(arrays["q"]), f["num_heads"], f["num_kv_heads"], f["head_dim"], f["page_size"]
    B = len(arrays["query_lens"])
    # The dump describes the case the database describes, in vLLM's layouts.
    checks = [(arrays["q"].shape, (T, H, D)), (arrays["k_cache"].shape[1:], (KVH, D // 8, P, 8)),
              (arrays["v_cache"].shape[1:], (KVH, D, P)), (B, res["batch"]),
              (int(arrays["query_lens"].sum()), T), (int(arrays["start_loc"][-1]), T),
              ((H, KVH, D, f["dtype"]), (res["num_heads"], res["num_kv_heads"], res["head_dim"], res["dtype"]))]
    for got, want in checks:
        if tuple(np.atleast_1d(got)) != tuple(np.atleast_1d(want)):
            raise CaseError(f"dumped inputs do not fit the case: {got} != {want}")
    return meta, arrays


def half_to_f64(a):
    """fp16 arrays are float16; bf16 arrays are uint16 bit patterns."""
    if a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def check_rows(out, ref, rows, atol, rtol):
    """ppbench's check on the dumped reference rows: |out - ref| <= atol + rtol |ref|
    per element (harness/run/reference.c). out: float64 [tokens, heads, D]."""
    got = out[rows[:, 0], rows[:, 1]]
    diff = np.abs(got - ref)
    finite = bool(np.isfinite(got).all())
    return {"max_abs_err": float(np.nanmax(diff)) if finite else float("inf"),
            "correct": finite and bool((diff <= atol + rtol * np.abs(ref)).all()),
            "rows": int(len(rows))}


def to_cuda(a):
    if a.dtype == np.uint16:  # bf16 bits: torch reads them through int16
        return torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(a).cuda()


# ---------------------------------------------------------------- vllm-triton

def import_prefix_prefill(vllm):
    """vLLM's prefix_prefill.py without the rest of vLLM: at load it imports
    vllm.platforms.current_platform (context_attention_fwd asks it
    has_device_capability(80)); a stand-in answers from torch."""
    p = Path(vllm).expanduser()
    src = next((c for c in (p, p / "vllm/attention/ops/prefix_prefill.py") if c.is_file()), None)
    if src is None:
        die(f"no vllm/attention/ops/prefix_prefill.py under {p}: give --vllm the extracted vLLM 0.6.3 tree")

    class Platform:
        @staticmethod
        def get_device_capability(device_id=0):
            return torch.cuda.get_device_capability(device_id)

        @classmethod
        def has_device_capability(cls, capability, device_id=0):
            major, minor = cls.get_device_capability(device_id)
            want = capability if isinstance(capability, int) else capability[0] * 10 + capability[1]
            return major * 10 + minor >= want

    sys.path.insert(0, str(REPO / "kernels" / "vllm" / "triton"))
    from prepare import import_kernel_module  # the one way ppbench imports vLLM's file
    mod = import_kernel_module(src, platform=Platform())
    mod.source_path = src
    return mod


def triton_case(mod, res, arrays):
    """The launch context_attention_fwd (vLLM 0.6.3) makes, with the case's
    BLOCK (= block_m = block_n) and num_warps instead of vLLM's 128 / 8."""
    if res["block_m"] != res["block_n"]:
        raise CaseError("block_m != block_n: vLLM 0.6.3 has one BLOCK")
    t = {n: to_cuda(arrays[n]) for n in ("q", "k", "v", "k_cache", "v_cache", "block_table", "start_loc",
                                         "query_lens", "context_lens")}
    q, k, v, kc, vc, b_loc = t["q"], t["k"], t["v"], t["k_cache"], t["v_cache"], t["block_table"]
    o = torch.full_like(q, float("nan"))  # unwritten rows show as errors
    b_seq_len = t["context_lens"] + t["query_lens"]  # vLLM's b_seq_len: context + new tokens
    BLOCK, D, H = res["block_m"], q.shape[-1], q.shape[1]
    grid = (len(t["query_lens"]), H, triton.cdiv(int(arrays["query_lens"].max()), BLOCK))

    def launch():
        return mod._fwd_kernel[grid](
            q, k, v, kc, vc, b_loc, 1.0 / (D ** 0.5), 1.0, 1.0,  # sm_scale, k_scale, v_scale
            t["start_loc"], b_seq_len, t["context_lens"], vc.shape[3], kc.shape[4], o,
            b_loc.stride(0), b_loc.stride(1), q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
            o.stride(0), o.stride(1), o.stride(2),
            kc.stride(0), kc.stride(1), kc.stride(2), kc.stride(3), kc.stride(4),
            vc.stride(0), vc.stride(1), vc.stride(2), vc.stride(3),
            num_queries_per_kv=H // k.shape[1], BLOCK_M=BLOCK, BLOCK_DMODEL=D,
            BLOCK_DMODEL_PADDED=triton.next_power_of_2(D), BLOCK_N=BLOCK,
            SLIDING_WINDOW=max(0, res["sliding_window"] or 0), num_warps=res["num_warps"], num_stages=1)

    return launch, o


def compare_binary(ck, cache_dir):
    """Is the kernel vLLM's call JIT-compiles here byte for byte one that
    prepare.py compiled ahead of time (the plugin's)? If not, what differs:
    the JIT's metadata and PTX entry against the AOT variants of that tile."""
    jit = bytes(ck.asm["cubin"])
    digest = hashlib.sha256(jit).hexdigest()
    for c in Path(cache_dir).rglob("*.cubin"):
        if hashlib.sha256(c.read_bytes()).hexdigest() == digest:
            return {"same_binary": True, "aot_variant": c.stem}
    md = ck.metadata
    want = (int(md.num_warps), int(md.shared))
    ptx = ck.asm.get("ptx", "")
    entry = re.search(r"\.entry[^(]*\(([^)]*)\)", ptx)
    aot = [json.loads(j.read_text()) for j in Path(cache_dir).rglob("*.json") if not j.name.startswith("manifest")]
    return {"same_binary": False,
            "jit": {"num_warps": want[0], "shared": want[1], "num_stages": int(getattr(md, "num_stages", 0)),
                    "ptx_params": [p.strip() for p in entry.group(1).split(",")] if entry else None},
            "aot_same_shape": [{k: v for k, v in rec.items() if k != "cubin"} for rec in aot
                               if (int(rec.get("num_warps", 0)), int(rec.get("shared", 0))) == want]}


# ---------------------------------------------------------------- a release's own wrapper (--wrapper)
# An implementation prepare.py built --from-wrapper (vllm-triton@0.34.0, vllm-triton-decode@0.20.0,
# vllm-triton-unified@0.10.2, a team's tree ...) launches what the tree's Python wrapper would launch.
# Its independent time is that wrapper itself, called with real tensors the way vLLM calls it
# (capture.py's argument tables, the stand-in tensors swapped for the dump's arrays by role), so the
# comparison also covers capture.py's reading of the wrapper.

WRAPPER_FILES = {"prefix_prefill.py": "prefix_prefill", "triton_unified_attention.py": "unified",
                 "chunked_prefill_paged_decode.py": "chunked"}


def wrapper_source(res):
    """The kernel file whose wrapper the run's plugin launches as, checked
    unchanged: (path, family). The plugin's env row impl.NAME.source is
    "PATH [+ PATH ...] sha256:HEX", every file prepare.py compiled from
    (chunked_prefill_paged_decode.py with the prefix_prefill.py beside it) and
    the sha256 of their bytes together; a decode case's wrapper is the unified
    attention's, a prefill case's the chunked file's where it was used, else
    the one prefill file."""
    name = res["impl"].removeprefix("plugin:")
    env = res["env"]
    src = env.get(f"after.impl.{name}.source") or env.get(f"before.impl.{name}.source")
    if not src or " sha256:" not in src:
        raise CaseError(f"the run stored no impl.{name}.source: cannot tell which tree it was prepared from")
    paths, _, sha = src.rpartition(" sha256:")
    paths = [Path(x) for x in paths.split(" + ")]
    for path in paths:
        if path.name not in WRAPPER_FILES:
            raise CaseError(f"{path.name} is not a kernel file ppbench calls a wrapper of ({', '.join(WRAPPER_FILES)})")
        if not path.is_file():
            raise CaseError(f"{path} (the run's kernel file) is not on this machine")
    if hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest() != sha:
        raise CaseError(f"{' + '.join(map(str, paths))} changed since the run (sha256 differs from the run's)")
    families = {WRAPPER_FILES[p.name]: p for p in paths}
    want = ("unified",) if res["kernel"] == "paged_attention" else ("chunked", "prefix_prefill", "unified")
    family = next((f for f in want if f in families), None)
    if family is None:
        raise CaseError(f"no wrapper for a {res['kernel']} case among {' + '.join(map(str, paths))}")
    return families[family], family


@functools.lru_cache(maxsize=None)
def wrapper_module(path):
    """The kernel file with the real torch and Triton, as prepare.py imports it; its tree root (the file's
    own imports come from there); the stand-ins a wrapper that imports in its body needs at call time."""
    from prepare import import_kernel_module
    import capture
    rel = next((r for r in capture.PREFIX_PREFILL_FILES + capture.UNIFIED_FILES + capture.CHUNKED_FILES
                if str(path).endswith(r)), None)
    if rel is None:
        raise CaseError(f"{path} is not at a path vLLM keeps its kernels at")
    root = Path(str(path)[:-len(rel)])
    major, minor = torch.cuda.get_device_capability()
    platform = capture.Platform(major * 10 + minor, fp8=torch.float8_e4m3fn)
    stubs = capture.vllm_stubs(triton, triton.language, platform, root)
    return import_kernel_module(path, platform, root), root, stubs


def flash_layout(k_cache, v_cache):
    """vLLM's x-split K [pages, kvh, D/8, page, 8] and V [pages, kvh, D, page] -> the FLASH layout
    [pages, page, kvh, D] (kernels/kv_layout.h: the same value at each (page, slot, head, d))."""
    n, kvh, d8, page, x = k_cache.shape
    return (k_cache.permute(0, 3, 1, 2, 4).reshape(n, page, kvh, d8 * x).contiguous(),
            v_cache.permute(0, 3, 1, 2).contiguous())


def paged_layout(kf, vf):
    """flash_layout's inverse: FLASH [pages, page, kvh, D] -> vLLM's x-split K and V."""
    n, page, kvh, d = kf.shape
    return (kf.view(n, page, kvh, d // 8, 8).permute(0, 2, 3, 1, 4).contiguous(),
            vf.permute(0, 2, 3, 1).contiguous())


def staged_cache(kf, vf, t, page):
    """The cache after vLLM's cache write, as kernels/kv_append.h stages it: ppbench's pages whole,
    then each sequence's new tokens after its context on pages appended in sequence order.
    Returns (k, v, block table)."""
    ctx, ql, start = (t[n].tolist() for n in ("context_lens", "query_lens", "start_loc"))
    table = t["block_table"].tolist()
    pages = lambda n: -(-n // page)  # noqa: E731
    staged_mbps = max(1, max(pages(c + q) for c, q in zip(ctx, ql)))
    rows, nxt = [], kf.shape[0]
    for b, (c, q) in enumerate(zip(ctx, ql)):
        extra = pages(c + q) - pages(c)
        row = table[b][:pages(c)] + list(range(nxt, nxt + extra))
        nxt += extra
        rows.append(row + [0] * (staged_mbps - len(row)))
    k = torch.cat([kf, kf.new_zeros((nxt - kf.shape[0],) + kf.shape[1:])])
    v = torch.cat([vf, vf.new_zeros((nxt - vf.shape[0],) + vf.shape[1:])])
    bt = torch.tensor(rows, dtype=torch.int32, device="cuda")
    for b, (c, q) in enumerate(zip(ctx, ql)):
        pos = torch.arange(c, c + q, device="cuda")
        pg = bt[b][pos // page].long()
        k[pg, pos % page] = t["k"][start[b]:start[b] + q]
        v[pg, pos % page] = t["v"][start[b]:start[b] + q]
    return k, v, bt


def wrapper_case(res, arrays):
    """A launch closure calling the tree's wrapper on the dumped inputs, and the output tensor."""
    import capture
    from prepare import parse_key
    path, family = wrapper_source(res)
    mod, root, stubs = wrapper_module(path)
    s = parse_key(res["key"])
    t = {n: to_cuda(arrays[n]) for n in ("q", "k", "v", "k_cache", "v_cache", "block_table", "start_loc",
                                         "query_lens", "context_lens") if n in arrays}  # decode: no k, v
    out = torch.full_like(t["q"], float("nan"))  # unwritten rows show as errors
    decode = s["kernel"] == "decode"
    roles = dict(t, out=out, seq_lens=t["context_lens"] if decode else t["context_lens"] + t["query_lens"])
    max_q, max_k = int(arrays["query_lens"].max()), int(roles["seq_lens"].max())
    if family == "prefix_prefill":  # wrapper_source gives decode cases the unified attention
        fakes, _ = capture.prefill_tensors(s)
        kwargs, _ = capture.prefix_prefill_kwargs(mod.context_attention_fwd, s, fakes, max_k)
        if "max_input_len" in kwargs:  # the longest query of these inputs (a mixed batch's prefill chunk)
            kwargs["max_input_len"] = max_q
    elif family == "chunked":
        k, v, roles["block_table"] = staged_cache(*flash_layout(t["k_cache"], t["v_cache"]), t, s["page"])
        roles["k_cache"], roles["v_cache"] = paged_layout(k, v)
        kwargs = capture.chunked_kwargs(mod.chunked_prefill_paged_decode, s, capture.chunked_tensors(s)[0], max_q,
                                        max_k)
    else:
        roles["k_cache"], roles["v_cache"] = flash_layout(t["k_cache"], t["v_cache"])
        if decode:
            roles["query_start"] = torch.arange(len(out) + 1, dtype=torch.int32, device="cuda")
            fakes, _ = capture.decode_tensors(s)
        else:
            roles["k_cache"], roles["v_cache"], roles["block_table"] = staged_cache(
                roles["k_cache"], roles["v_cache"], t, s["page"])
            fakes = capture.unified_prefill_tensors(s)[0]
        kwargs = capture.unified_kwargs(mod.unified_attention, root, s, fakes, max_q, max_k)

    def real(v):
        if not isinstance(v, capture.FakeTensor):
            return v
        if v.role in ("scratch", "ones"):
            return (torch.empty if v.role == "scratch" else torch.ones)(
                v.shape, dtype=getattr(torch, v.dtype.name), device="cuda")
        if v.role not in roles:
            raise CaseError(f"the wrapper takes a '{v.role}' buffer this check does not make")
        return roles[v.role]
    kwargs = {k: real(v) for k, v in kwargs.items()}
    fn = {"prefix_prefill": getattr(mod, "context_attention_fwd", None), "unified": getattr(mod, "unified_attention", None),
          "chunked": getattr(mod, "chunked_prefill_paged_decode", None)}[family]

    def launch():
        with capture.stand_ins(stubs):  # chunked_prefill_paged_decode imports vllm.platforms.rocm when called
            fn(**kwargs)
    launch.buffers = kwargs
    return launch, out


# ---------------------------------------------------------------- vllm-cuda

@functools.lru_cache(maxsize=None)
def fnv1a64_file(path):
    """The checksum ppbench stores for a plugin library (harness/run/impl.c)."""
    h = 0xcbf29ce484222325
    for b in Path(path).read_bytes():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def find_cuda_plugin(a, env):
    """The library the run used (its env row) if it is here, else ppbench's search order."""
    dirs = [Path(d) for d in a.plugin_dir + os.environ.get("PPBENCH_PLUGIN_PATH", "").split(":") if d]
    dirs += [Path(a.ppbench).resolve().parent / "plugins",
             Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ppbench" / "plugins"]
    cands = ([Path(env["impl.vllm-cuda.path"])] if env.get("impl.vllm-cuda.path") else []) + \
            [d if d.is_file() else d / "libppbk_vllm_cuda.so" for d in dirs]
    lib = next((c for c in cands if c.is_file()), None)
    if lib is None:
        raise CaseError("libppbk_vllm_cuda.so not found: give --plugin-dir")
    return lib


_plugins = {}


def cuda_plugin(path):
    """ppbk_entry() of the library, checked as ppbench checks it, opened once."""
    if path in _plugins:
        return _plugins[path]
    lib = ctypes.CDLL(str(path))
    lib.ppbk_entry.restype = _P(Impl)
    ptr = lib.ppbk_entry()
    if not ptr:
        raise CaseError(f"{path}: ppbk_entry returned NULL")
    tab = ptr.contents
    if tab.abi_version != PPBK_ABI_VERSION or tab.struct_size < ctypes.sizeof(Impl):
        raise CaseError(f"{path}: ABI version {tab.abi_version}, struct size {tab.struct_size}")
    if tab.name != b"vllm-cuda":
        raise CaseError(f"{path} is the implementation '{tab.name.decode(errors='replace')}', not vllm-cuda")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    # What ppbench fills; smem_optin matters to `refuse` only, which we do not call.
    dev = Device(PPBK_BACKEND_CUDA, torch.cuda.current_device(), props.major * 10 + props.minor,
                 getattr(props, "warp_size", 32), props.multi_processor_count,
                 getattr(props, "shared_memory_per_block_optin", 0))
    why = ctypes.create_string_buffer(1024)
    ctx = c_vp()  # the plugin's context (vllm-cuda keeps none: NULL), passed to every call
    if tab.open and tab.open(ctypes.byref(dev), ctypes.byref(ctx), why, len(why)) != PPBK_OK:
        raise CaseError(f"{path}: open failed: {why.value.decode(errors='replace')}")
    _plugins[path] = (lib, tab, dev, ctx)
    return _plugins[path]


def cuda_case(path, res, arrays):
    lib, tab, dev, ctx = cuda_plugin(path)
    version = res["version"]
    ops = tab.decode_v1 if version == 1 else tab.decode_v2
    if not ops:
        raise CaseError(f"{path} has no decode_v{version}")
    ops = ops.contents
    t = {n: to_cuda(arrays[n]) for n in ("q", "k_cache", "v_cache", "block_table", "context_lens")}
    q = t["q"]
    S, H, D = q.shape
    o = torch.full_like(q, float("nan"))
    max_seq = int(arrays["context_lens"].max())  # decode: context_lens are the sequence lengths
    psize = res["partition_size"] or 0
    parts = -(-max_seq // psize) if version == 2 else 1  # vLLM's max_num_partitions
    # v2 scratch, sized for the kernel's own partition count (as vLLM sizes it).
    tmp = torch.empty((S, H, parts, D), dtype=q.dtype, device="cuda")
    es = torch.empty((S, H, parts), dtype=torch.float32, device="cuda")
    ml = torch.empty_like(es)
    cfg = DecodeConfig(0 if res["dtype"] == "fp16" else 1, D, res["page_size"], res["sliding_window"] or 0,
                       version, res["num_threads"], psize)
    args = DecodeArgs(q.data_ptr(), t["k_cache"].data_ptr(), t["v_cache"].data_ptr(), o.data_ptr(),
                      t["block_table"].data_ptr(), t["context_lens"].data_ptr(), tmp.data_ptr(), es.data_ptr(),
                      ml.data_ptr(), S, H, res["num_kv_heads"], D, res["page_size"],
                      arrays["block_table"].shape[1], max_seq, parts, res["sliding_window"] or 0,
                      1.0 / math.sqrt(D))
    why = ctypes.create_string_buffer(1024)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def launch():
        if ops.launch(ctx, ctypes.byref(dev), ctypes.byref(cfg), ctypes.byref(args), stream, why,
                      len(why)) != PPBK_OK:
            raise CaseError(f"launch: {why.value.decode(errors='replace')}")

    launch.buffers = (t, tmp, es, ml)  # args holds raw pointers: keep the tensors alive with the launch
    return launch, o


# ---------------------------------------------------------------- timing

SPIN_CYCLES_PER_US = 2000  # ~ the H200's SM clock; a slower clock only spins longer


def time_events(launch, batch, samples, warmup):
    """ppbench's sample (harness/run/backend_cuda.c cuda_time_sample): flush L2 with a
    buffer of 2 x L2 + 1 MiB written with a new value, event, `batch` launches,
    event; ms / batch. A GPU-side spin between flush and start event keeps the
    GPU busy while Python enqueues, so host launch cost (Triton's dispatcher,
    ctypes) stays outside the events as ppbench's C launch does behind its memset."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0) or 64 << 20  # older torch: more than any current L2
    flush = torch.empty(2 * l2 + (1 << 20), dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        launch()
    spin = int(SPIN_CYCLES_PER_US * (200 + 60 * batch))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
    for i, (start, end) in enumerate(ev):
        flush.fill_(i & 0xFF)
        torch.cuda._sleep(spin)
        start.record()
        for _ in range(batch):
            launch()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev) / batch


def time_do_bench(launch, batch, rep_ms):
    def fn():
        for _ in range(batch):
            launch()
    return triton.testing.do_bench(fn, warmup=max(25, rep_ms // 4), rep=rep_ms, return_mode="median") / batch


# ---------------------------------------------------------------- one case

def run_case(a, res, r, workdir, mod):
    """Fills r (so a failure keeps what was found before it)."""
    key = r["key"]
    if isinstance(res, CaseError):
        raise res
    r.update(impl=res["impl"], kernel=res["kernel"], run=res["run_id"], status=res["status"],
             ppbench_ms=res["median_ms"], batch_launches=res["batch_launches"], n_samples=res["n_samples"])
    want = {"vllm-triton": "prefix_prefill", "vllm-cuda": "paged_attention"}.get(res["impl"])
    if a.wrapper:
        if not res["impl"].startswith("plugin:"):
            raise CaseError(f"--wrapper: impl {res['impl']} is not a plugin prepared from a tree")
    elif want != res["kernel"] and not (a.dry_run and res["impl"] == "builtin"):  # dry run: any inputs
        raise CaseError(f"impl {res['impl']} / {res['kernel']}: only vllm-triton prefill and vllm-cuda "
                        "decode are production kernels here")
    if res["status"] not in ("ok", "noisy") or not res["median_ms"]:
        raise CaseError(f"ppbench has no timing for it (status {res['status']}: {res['reason']})")
    if res["timing_is_cpu"] and not a.dry_run:
        raise CaseError("the run timed on the CPU backend")
    d = workdir / hashlib.sha1(key.encode()).hexdigest()[:12]
    meta, arrays = dump_case(a, res, key, d)
    atol, rtol = res["check_atol"] or 2e-2, res["check_rtol"] or 0.0
    if a.dry_run:  # everything but the GPU: the checker against ppbench's own dumped output
        r["dump_check"] = check_rows(half_to_f64(arrays["out"]), arrays["ref"], arrays["ref_rows"], atol, rtol)
        r["output_from"] = meta["output_from"]
        return

    env = res["env"]
    if a.wrapper:
        launch, out = wrapper_case(res, arrays)
        r["wrapper_of"] = str(wrapper_source(res)[0])
    elif res["impl"] == "vllm-triton":
        # The kernel ppbench ran was compiled from this file with this Triton? (plugin's source/version)
        sha = hashlib.sha256(mod.source_path.read_bytes()).hexdigest()
        src, ver = env.get("after.impl.vllm-triton.source"), env.get("after.impl.vllm-triton.version")
        if src is None:
            r["warning"] = "the run stored no impl.vllm-triton.source: cannot tell it is the same kernel file"
        elif sha not in src:
            r["warning"] = f"{mod.source_path} (sha256 {sha[:16]}) is not the run's source '{src}'"
        elif f"triton {triton.__version__}" not in (ver or ""):
            r["warning"] = f"triton {triton.__version__} here, the run's plugin: '{ver}'"
        launch, out = triton_case(mod, res, arrays)
    else:
        lib = find_cuda_plugin(a, env)
        stored = env.get("after.impl.vllm-cuda.checksum_fnv1a64")
        if stored is None:
            r["warning"] = "the run stored no impl.vllm-cuda.checksum_fnv1a64: cannot tell it is the same library"
        elif stored != fnv1a64_file(lib):
            r["warning"] = (f"{lib} (fnv1a64 {fnv1a64_file(lib)}) is not the library the run used "
                            f"({env.get('after.impl.vllm-cuda.path')}, {stored})")
        launch, out = cuda_case(lib, res, arrays)
        r["library"] = str(lib)

    compiled = launch()  # compile / first use, then the checked output
    torch.cuda.synchronize()
    if res["impl"] == "vllm-triton" and a.triton_cache and not a.wrapper:
        r.update(compare_binary(compiled, a.triton_cache))
    got = out.double().cpu().numpy()
    r.update(check_rows(got, arrays["ref"], arrays["ref_rows"], atol, rtol))
    if meta["output_from"] == "cuda backend":  # same kernel, same inputs: should match ppbench's output
        r["max_diff_vs_ppbench_out"] = float(np.nanmax(np.abs(got - half_to_f64(arrays["out"]))))
    batch = res["batch_launches"] or 1
    r["events_ms"] = time_events(launch, batch, a.samples, a.warmup)
    r["do_bench_ms"] = time_do_bench(launch, batch, a.rep_ms) if triton else None
    timer = a.timer if a.timer != "auto" else "do_bench" if res["impl"] == "vllm-triton" or a.wrapper else "events"
    r["timer"], r["indep_ms"] = timer, r[f"{timer}_ms"]
    r["ratio"] = res["median_ms"] / r["indep_ms"]
    r["within"] = abs(r["ratio"] - 1) <= LIMIT


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("keys", nargs="*", help="case keys")
    p.add_argument("--ppbench", default=str(REPO / "build" / "ppbench"))
    p.add_argument("--db")
    p.add_argument("--vllm", default=str(REPO / ".deps" / "vllm-0.6.3"), help="vLLM 0.6.3 source tree")
    p.add_argument("--plugin-dir", action="append", default=[],
                   help="plugin folder or library, given to `ppbench dump` too; libppbk_vllm_cuda.so is taken from "
                        "the run's recorded path when it exists, else from here (repeatable)")
    p.add_argument("--out", help="JSON results file")
    p.add_argument("--run", help="take ppbench's median from this run (default: the latest holding each key)")
    p.add_argument("--cases-from-run", metavar="RUN",
                   help="every vllm-triton/vllm-cuda case of RUN (a number, 'latest' or 'label=LABEL')")
    p.add_argument("--wrapper", action="store_true",
                   help="the cases' plugins were prepared --from-wrapper: time the tree's own Python wrapper "
                        "(found from the run's impl.NAME.source), do_bench by default")
    p.add_argument("--filter", action="append", default=[],
                   help="with --cases-from-run: key substrings, 'A|B' for either (repeatable: all must match)")
    p.add_argument("--timer", choices=("auto", "do_bench", "events"), default="auto",
                   help="which independent time the verdict uses (auto: do_bench for Triton, events for CUDA)")
    p.add_argument("--samples", type=int, default=200, help="event-loop samples per case")
    p.add_argument("--warmup", type=int, default=20, help="event-loop warm-up launches")
    p.add_argument("--rep-ms", type=int, default=300, help="do_bench's rep (ms)")
    p.add_argument("--triton-cache", help="prepare.py's --out folder: check the JIT kernel is one of its cubins")
    p.add_argument("--dry-run", action="store_true", help="database, dump and loading only (no GPU, numpy only)")
    p.add_argument("--self-test-layout", action="store_true", help="check the ctypes ABI mirrors with cc")
    a = p.parse_args()
    if a.self_test_layout:
        sys.exit(self_test_layout())
    if not a.db or not a.out:
        p.error("--db and --out are required")
    if bool(a.keys) == bool(a.cases_from_run):
        p.error("give case keys or --cases-from-run RUN (not both)")
    if a.filter and not a.cases_from_run:
        p.error("--filter goes with --cases-from-run")
    if not (Path(a.ppbench).is_file() and os.access(a.ppbench, os.X_OK)):
        die(f"no ppbench binary at {a.ppbench}: give --ppbench")
    global np, torch, triton
    try:
        import numpy as np
    except ImportError:
        die("needs numpy: install numpy")
    con = open_db(a.db)
    if a.run:
        a.run = run_id_of(con, a.run)
    if a.cases_from_run:
        a.run = run_id_of(con, a.cases_from_run)
        a.keys = keys_of_run(con, a.run, a.filter, a.wrapper)
        if not a.keys:
            die(f"run {a.run} has no vllm-triton / vllm-cuda case matching {a.filter}")
    found = {}  # key -> ppbench's result, or why there is none
    for key in a.keys:
        try:
            found[key] = ppbench_result(con, key, a.run)
        except CaseError as e:
            found[key] = e
    need_vllm = not a.wrapper and any(isinstance(f, dict) and f["impl"] == "vllm-triton" for f in found.values())
    need_triton = need_vllm or a.wrapper or a.timer == "do_bench"
    if a.wrapper:
        sys.path.insert(0, str(REPO / "kernels" / "vllm" / "triton"))  # capture.py, prepare.py
    mod = None
    if not a.dry_run:
        try:
            import torch
        except ImportError:
            die("needs PyTorch with CUDA: install torch")
        if not torch.cuda.is_available():
            die("torch sees no CUDA device")
        try:
            import triton
            import triton.testing
        except ImportError:
            if need_triton:
                die("needs Triton for vllm-triton cases and do_bench: install triton")
            triton = None
        if need_vllm:
            mod = import_prefix_prefill(a.vllm)

    results = []
    with tempfile.TemporaryDirectory(prefix="ppb-fidelity-") as tmp:
        for key in a.keys:
            r = {"key": key}
            try:
                run_case(a, found[key], r, Path(tmp), mod)
            except CaseError as e:
                r["error"] = str(e)
            except Exception as e:  # a compile error, out of memory...: reported with the case, next case
                r["error"] = f"{type(e).__name__}: {e}"
            results.append(r)
            if "error" in r:
                print(f"FAIL {key}: {r['error']}", flush=True)
            elif a.dry_run:
                print(f"ok   {key}: dumped, inputs fit; reference check of ppbench's {r['output_from']} output: "
                      f"{r['dump_check']}", flush=True)
            else:
                print(f"     {key}: ppbench {r['ppbench_ms']:.4f} ms, events {r['events_ms']:.4f} ms, "
                      f"do_bench {r['do_bench_ms'] or float('nan'):.4f} ms, max err {r['max_abs_err']:.2e}"
                      + (f", same binary as {r['aot_variant']}" if r.get("same_binary") else "")
                      + (f", NOT the plugin's binary: {json.dumps({k: r[k] for k in ('jit', 'aot_same_shape')})}"
                         if r.get("same_binary") is False else "")
                      + (f"  WARNING {r['warning']}" if r.get("warning") else ""), flush=True)

    ok = [r for r in results if "error" not in r]
    summary = {"cases": len(results), "limit": LIMIT, "dry_run": a.dry_run}
    if a.dry_run:
        summary["inputs_ok"] = len(ok)
    else:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        summary.update(device=props.name, l2_bytes=getattr(props, "L2_cache_size", None), torch=torch.__version__,
                       triton=triton.__version__ if triton else None,
                       within=sum(r["within"] for r in ok), correct=sum(r["correct"] for r in ok))
        w = max([12] + [len(r.get("impl", "")) + 1 for r in results])
        print(f"\n{'impl':<{w}}{'ppbench ms':>12}{'indep ms':>12}  {'timer':<9}{'ratio':>7}  {'3%':<4}"
              f"{'max err':>9}  {'ok':<4}{'batch':>6}  key")
        for r in results:
            if "error" in r:
                print(f"{r.get('impl', '-'):<{w}}{'':>12}{'':>12}  {'':<9}{'':>7}  {'no':<4}{'':>9}  {'no':<4}"
                      f"{'':>6}  {r['key']}")
                continue
            print(f"{r['impl']:<{w}}{r['ppbench_ms']:>12.4f}{r['indep_ms']:>12.4f}  {r['timer']:<9}"
                  f"{r['ratio']:>7.3f}  {'yes' if r['within'] else 'NO':<4}{r['max_abs_err']:>9.2e}  "
                  f"{'yes' if r['correct'] else 'NO':<4}{r['batch_launches']:>6}  {r['key']}")
        for r in results:
            if r.get("warning"):
                print(f"warning: {r['key']}: {r['warning']}")
        print(f"within 3%: {summary['within']} of {len(results)}")
    Path(a.out).write_text(json.dumps({"summary": summary, "cases": results}, indent=1) + "\n")
    good = len(ok) == len(results) and (a.dry_run or all(r["within"] and r["correct"] for r in ok))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
