#!/usr/bin/env python3
"""Prepare a `vllm-triton` ppbench implementation: a vLLM tree's Triton
prefix-prefill kernel (`_fwd_kernel` of vllm/attention/ops/prefix_prefill.py, or
vllm/v1/attention/ops/ from 0.14) and, for decode, its Triton unified attention
(triton_unified_attention.py, 0.9.2 on), compiled ahead of time into cubins and
linked with plugin.c into a library (default libppbk_vllm_triton.so).

Python and Triton are needed here only; the library launches the cubins through
the CUDA driver API.

Which cases: every prefix_prefill case, and every paged_attention case of
version 1 (decode; the tree's unified attention as its wrapper launches it:
README.md "Decode"), of the suites given (expanded by
`ppbench list SUITE`, so excludes, defaults and head pairs are ppbench's own), and
every `--case KEY` (a ppbench case key). For each, capture.py records the launch
the tree's own context_attention_fwd makes for that shape (grid, warps, stages,
every argument by name). With --from-wrapper that launch is used as it is; else
the case's block_m / block_n / num_warps, and num_stages unless 0, replace the
wrapper's (a knob sweep).

How each launch is compiled: through Triton's own JIT front end
(`JITFunction.run(..., warmup=True)`) with the recorded arguments, under a
stand-in driver that only names the target. So the specialisation (integers
equal to 1 become constants, integers and pointers divisible by 16 get
divisibility hints, which arguments an annotation exempts) is decided by the
installed Triton exactly as in vLLM, not re-implemented here; no GPU is needed
with --target. Cases whose launches differ only in argument values share a cubin.

Cache: OUT/<sha256 of the kernel files used>-triton<version>-<target>/, one .cubin +
.json per compiled kernel; a later run adds to it.
"""
import argparse
import concurrent.futures
import hashlib
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import capture  # noqa: E402 (beside this file)

REPO = HERE.parents[2]
DEFAULT_VLLM = REPO / ".deps" / "vllm-0.6.3"
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
DEFAULT_OUT = CACHE_HOME / "ppbench" / "vllm-triton"
PLUGIN_DIR = CACHE_HOME / "ppbench" / "plugins"


def default_lib(name):
    """Where a library of this name goes by default: ppbench finds plugin:NAME
    by its file name, libppbk_NAME.so with '_' for '-' (harness/run/impl.c)."""
    return PLUGIN_DIR / f"libppbk_{name.replace('-', '_')}.so"



DTYPES = {"fp16": ("torch.float16", 0), "bf16": ("torch.bfloat16", 1)}
# The buffers a recorded pointer argument can be bound to (capture.prefill_tensors' and
# capture.decode_tensors' roles); variants.h's PPBK_VT_ROLE_* enum has the same order.
ROLES = ("q", "k", "v", "k_cache", "v_cache", "out", "block_table", "start_loc", "seq_lens", "context_lens",
         "ones", "query_start", "scratch")


def die(msg):
    print(f"prepare.py: {msg}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------- shapes -> variants

def int_class(v):
    """What Triton 3.x's JIT can tell integers apart by: 1, divisible by 16,
    other; 'L' outside int32, which the plugin cannot pass as an int32
    parameter (a tl.int64 one, kind "i64", takes it)."""
    if not -2**31 <= v < 2**31:
        return "L"
    return "1" if v == 1 else "D" if v % 16 == 0 else "."


def kernel_params(kernel="PREFILL"):
    """The kernel's tunable parameters as kernels/common/ppb_kernel_params.h
    lists them, in its order (built-in, then plugin-only): [(key name,
    default)]. The one list ppbench, the plans and this table all follow."""
    text = (REPO / "kernels" / "common" / "ppb_kernel_params.h").read_text()
    params = []
    for part in ("BUILTIN", "PLUGIN_ONLY"):
        body = re.search(rf"#define PPBK_{kernel}_{part}_PARAMS\(X, ctx\)((?:[^\n]*\\\n)*[^\n]*)", text)
        if not body:
            die(f"kernels/common/ppb_kernel_params.h: no PPBK_{kernel}_{part}_PARAMS list")
        found = [(e[1], int(e[2])) for e in
                 re.finditer(r'X\(ctx, \w+, \w+, "(\w+)", -?\d+, -?\d+, (-?\d+), [01]\)', body[1])]
        if len(found) != body[1].count("X(ctx,"):  # an entry this reader cannot parse would shift the table
            die(f"kernels/common/ppb_kernel_params.h: PPBK_{kernel}_{part}_PARAMS has an entry prepare.py cannot read")
        params += found
    return params


KNOBS = kernel_params()      # [("bm", 128), ("bn", 128), ("w", 8), ("st", 0)]


def parse_key(key):
    """A ppbench case key -> dict, its "kernel" "prefill" ('prefix_prefill b=1
    q=17 ... bm=16 bn=32 w=4') or "decode" ('paged_attention b=8 seq=4096 ...
    v=1 ...'); None for another kernel. Config fields at their defaults are
    left out of keys (harness/core/case.c)."""
    toks = key.split()
    kinds = {"prefix_prefill": ("prefill", {"ctx": 0, **dict(KNOBS)}, ("q", "ctx", *(k for k, _ in KNOBS))),
             "paged_attention": ("decode", {"v": 1}, ("seq", "v"))}
    if not toks or toks[0] not in kinds:
        return None
    kernel, defaults, fields = kinds[toks[0]]
    s = {"kernel": kernel, "b": 1, "d": 128, "dtype": "bf16", "page": 16, "win": 0, **defaults}
    for t in toks[1:]:
        name, _, val = t.partition("=")
        s[name] = val
    for name in ("b", "h", "kvh", "d", "page", "win", *fields):
        if name not in s:
            die(f"case key '{key}' has no {name}=")
        s[name] = int(s[name])
    if s["dtype"] not in DTYPES:
        die(f"case key '{key}': dtype must be fp16 or bf16")
    s["rag"] = int(s.get("ragged") == "true")  # left out of hand-written keys: false
    s["dec"] = int(s.get("dec", 0))            # left out of keys at its default, 0
    return s


# --prefill-kernel -> the family whose wrapper a prefill case runs through; its index is variants.h's
# PPBK_VT_PREFILL_KERNEL_*.
PREFILL_KERNELS = {"prefix_prefill": "prefill", "unified": "decode", "chunked": "chunked"}
FAMILY_FILES = {"prefill": capture.PREFIX_PREFILL_FILES, "decode": capture.UNIFIED_FILES,
                "chunked": capture.CHUNKED_FILES}
# The file a recorded launch's kernel is defined in -> the family whose module compiles it.
FAMILY_OF_FILE = {"prefix_prefill.py": "prefill", "triton_unified_attention.py": "decode",
                  "chunked_prefill_paged_decode.py": "chunked"}


def compile_key(launch, family=None):
    """A recorded launch -> (compile key, its id). The compile key is what the
    compiled kernel depends on: the family's file (by default the one that
    defines the launch's kernel), kernel, constexprs, launch options, the
    dtypes of its pointers and the class of each integer; launches that share
    it share one cubin and differ only in argument values and grid."""
    family = family or FAMILY_OF_FILE[launch["file"]]
    ints = "".join(int_class(a["value"]) for a in launch["args"] if a["kind"] in ("i32", "i64"))
    ck = {"family": family, "kernel": launch["kernel"], "constexprs": launch["constexprs"],
          "num_warps": launch["num_warps"], "num_stages": launch["num_stages"], "options": launch["options"],
          "int_classes": ints, "args": [(a["name"], a["kind"], a.get("dtype")) for a in launch["args"]]}
    return ck, hashlib.sha256(json.dumps(ck, sort_keys=True).encode()).hexdigest()[:16]


def variant_of(s, launch):
    """A prefill case's recorded launch -> (variant, compile key)."""
    ck, cid = compile_key(launch, "prefill")
    v = {"shape": {k: s[k] for k in ("b", "q", "h", "kvh", "d", "dtype", "page", "win")},
         "max_blocks_per_seq": launch["max_blocks_per_seq"], "knobs": {k: s[k] for k, _ in KNOBS},
         "launch": launch, "compile_id": cid}
    return v, ck


def decode_variant_of(s, rec):
    """A decode case's recorded launches (capture.capture_unified_decode) ->
    (variant, [(compile key, id) per launch])."""
    keys = [compile_key(x) for x in rec["launches"]]
    v = {"shape": {k: s[k] for k in ("b", "seq", "h", "kvh", "d", "dtype", "page", "win")},
         "max_blocks_per_seq": rec["max_blocks_per_seq"], "launches": rec["launches"],
         "compile_ids": [cid for _, cid in keys], "scratch_bytes": rec["scratch_bytes"]}
    return v, keys


def staged_prefill_variant_of(s, rec):
    """A prefill case's recorded launches on the staged cache
    (capture.capture_unified_prefill / capture_chunked_prefill) -> (variant,
    [(compile key, id) per launch]), each compiled from the file of its kernel."""
    keys = [compile_key(x) for x in rec["launches"]]
    v = {"shape": {k: s[k] for k in ("b", "q", "h", "kvh", "d", "dtype", "page", "win")},
         "num_tokens": rec["num_tokens"], "max_blocks_per_seq": rec["max_blocks_per_seq"],
         "staged_blocks_per_seq": rec["staged_blocks_per_seq"], "launches": rec["launches"],
         "compile_ids": [cid for _, cid in keys], "scratch_bytes": rec["scratch_bytes"]}
    return v, keys


def suite_cases(suite, ppbench):
    r = subprocess.run([ppbench, "list", str(suite)], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{ppbench} list {suite}: {r.stderr.strip() or r.stdout.strip()}")
    return [line.strip() for line in r.stdout.splitlines() if line.strip()]


def find_ppbench(given):
    for p in ([given] if given else []) + [REPO / "build" / "ppbench", shutil.which("ppbench")]:
        if p and Path(p).is_file() and os.access(p, os.X_OK):
            return str(p)
    die("suites are expanded by `ppbench list SUITE`: build ppbench first (scripts/setup.sh) "
        "or pass --ppbench PATH (or give --case KEY instead of suites)")


# ---------------------------------------------------------------- the vLLM source

def find_sources(path):
    """--vllm: a vLLM source tree, an installed `vllm` package, or the prefix-prefill
    kernel file itself -> {family: (its file, the tree's root) or None} for
    "prefill" (prefix_prefill.py), "decode" (triton_unified_attention.py) and
    "chunked" (chunked_prefill_paged_decode.py); at least one."""
    p = Path(path).expanduser()
    found = {"prefill": None, "decode": None, "chunked": None}
    finders = {"prefill": lambda c: (capture.find_prefix_prefill(c), None), "decode": capture.find_unified,
               "chunked": capture.find_chunked}
    for c in (p, p.parent) if p.name == "vllm" else (p,):
        for family, find in finders.items():
            try:
                found[family] = found[family] or find(c)
            except capture.CaptureError:
                pass
    if not any(found.values()):
        die(f"no {' or '.join(f for files in FAMILY_FILES.values() for f in files)} under {p}: fetch vLLM's "
            f"source (scripts/fetch-vllm.sh [--version X] puts it in .deps/vllm-X) or pass --vllm PATH")
    if found["chunked"]:  # its prefix prefill is the one beside it, whatever else the tree holds
        found["prefill"] = (found["chunked"][0].parent / "prefix_prefill.py", None)
    return found


def vllm_version(src):
    """From the tree around the kernel file: an sdist's PKG-INFO, an installed
    package's dist-info, or a built tree's vllm/_version.py."""
    pkg = next((d for d in src.parents if d.name == "vllm"), src.parent)
    cands = [pkg.parent / "PKG-INFO"] + sorted(pkg.parent.glob("vllm-*.dist-info/METADATA"))
    for c in cands:
        if c.is_file():
            m = re.search(r"^Version:\s*(\S+)", c.read_text(errors="replace"), re.M)
            if m:
                return m.group(1)
    vf = pkg / "_version.py"
    if vf.is_file():
        m = re.search(r"version\s*=\s*['\"]([^'\"]+)", vf.read_text())
        if m:
            return m.group(1)
    return "unknown"


# ---------------------------------------------------------------- compiling (worker side)

class _DType:
    """Stands for a torch dtype: the JIT reads its str(). One object per name,
    kept alive: Triton's specialiser caches by dtype object."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


_DTYPE_OBJS = {}


class _Ptr:
    """What Triton's JIT reads from a tensor argument: data_ptr() and dtype.
    The address is a multiple of 256, as cudaMalloc returns (ppbench allocates
    every tensor so); plugin.c checks that at launch."""

    def __init__(self, dtype):
        self.dtype = _DTYPE_OBJS.setdefault(dtype, _DType(dtype))

    def data_ptr(self):
        return 256


class _TargetOnlyDriver:
    """Stands in for Triton's CUDA driver while compiling: the JIT asks it for
    the device, the stream and the target, and nothing else before compiling."""

    def __init__(self, target):
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def set_current_device(self, device):
        pass

    def get_device_capability(self, device=0):
        return divmod(int(self.target.arch), 10) if isinstance(self.target.arch, int) else (0, 0)


_W = {}


def import_kernel_module(src, platform, root=None):
    """Import a kernel file with the real Triton and without vLLM: the module
    needs `vllm.platforms.current_platform` (and, from 0.8, the
    `vllm.triton_utils` re-export of Triton) at load, later releases vLLM's
    logger, envs and helper modules of the tree at `root` (capture.vllm_stubs),
    and torch only for dtypes and decorators, stood in for when it is not
    installed. tests/gpu/timing_fidelity.py passes a `platform` that answers
    from torch."""
    import triton
    import triton.language as tl
    stubs = capture.vllm_stubs(triton, tl, platform, root)
    if importlib.util.find_spec("torch") is None:
        stubs["torch"] = capture._torch_stub()
    return capture.exec_file_with(src, stubs, "ppbk_vllm." + Path(src).stem)


def _worker_init(srcs, target_spec, cache_dir):
    os.environ["TRITON_CACHE_DIR"] = cache_dir
    import triton
    from triton.backends.compiler import GPUTarget
    backend, arch, warp = target_spec
    target = GPUTarget(backend, int(arch), int(warp))
    triton.runtime.driver.set_active(_TargetOnlyDriver(target))
    # Module-level code may ask torch about the platform's fp8 type (0.34: torch.finfo of it).
    fp8 = None
    if importlib.util.find_spec("torch") is not None:
        import torch
        fp8 = getattr(torch, "float8_e4m3fn", None)
    platform = capture.Platform(int(arch), fp8)
    _W.update(triton=triton, target=target,
              modules={family: import_kernel_module(src, platform, root) for family, (src, root) in srcs.items()})


def _ptx_params(ptx, name):
    """The .param types of kernel `name` in its PTX, e.g. ['u64', 'u32', 'f32']."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    if not m:
        raise RuntimeError(f"no .entry {name} in the PTX")
    return re.findall(r"\.param\s+\.(\w+)", m.group(1))


def _constexpr_names(ck, names):
    """Parameters the JIT turned into constants (declared constexprs and
    specialised values), from the compiled kernel's source description."""
    src = ck.src
    sig = getattr(src, "signature", {}) or {}
    out = {k for k, t in sig.items() if t == "constexpr"} if isinstance(sig, dict) else set()
    for attr in ("constexprs", "constants"):  # Triton >= 3.3 / older
        for k in (getattr(src, attr, None) or {}):
            k = k[0] if isinstance(k, tuple) and len(k) == 1 else k
            out.add(names[k] if isinstance(k, int) else k)
    return out


def _kernel_record(ck, jitfn, kinds):
    """Binary, shared memory and the exact parameter list of one compiled kernel.
    kinds: runtime argument name -> 'ptr' | 'i32' | 'fp32', in argument order."""
    md = ck.metadata
    for field in ("global_scratch_size", "profile_scratch_size"):
        if getattr(md, field, 0):
            raise RuntimeError(f"the kernel needs {field}={getattr(md, field)}: not supported by the plugin")
    const = _constexpr_names(ck, list(jitfn.arg_names))
    kept = [a for a in kinds if a not in const]
    ptx = _ptx_params(ck.asm["ptx"], md.name)
    if len(ptx) < len(kept):
        raise RuntimeError(f"PTX has {len(ptx)} parameters, expected at least {len(kept)}")
    ptx_types = {"ptr": ("u64",), "i32": ("u32", "s32", "b32"), "i64": ("u64", "s64", "b64"), "fp32": ("f32",)}
    kinds = dict(kinds)
    params = []
    for i, t in enumerate(ptx):
        a = kept[i] if i < len(kept) else None  # past the arguments: scratch pointers
        if t not in ptx_types[kinds[a] if a else "ptr"]:
            raise RuntimeError(f"PTX parameter {i} is .{t}, which does not fit {a or 'a scratch pointer'}")
        params.append(a)
    return {"name": md.name, "shared": int(md.shared), "num_warps": int(md.num_warps),
            "params": params, "cubin": bytes(ck.asm["cubin"])}


def compile_variant(ck, launch):
    """Compile one recorded launch (any case of its compile key) with the real
    Triton: every argument by name, as the wrapper passed it, pointers as
    stand-ins of their dtype."""
    kernel = getattr(_W["modules"][ck["family"]], launch["kernel"])
    args = {}
    for a in launch["args"]:
        args[a["name"]] = _Ptr(a["dtype"]) if a["kind"] == "ptr" else None if a["kind"] == "none" else a["value"]
    t0 = time.time()
    compiled = kernel.run(grid=(1, 1, 1), warmup=True, num_warps=launch["num_warps"],
                          num_stages=launch["num_stages"], **launch["options"], **args, **launch["constexprs"])
    kinds = {a["name"]: a["kind"] for a in launch["args"] if a["kind"] != "none"}
    rec = _kernel_record(compiled, kernel, kinds)
    rec["compile_s"] = round(time.time() - t0, 2)
    return rec


def _job(ck, launch):
    try:
        return ("ok", compile_variant(ck, launch))
    except Exception as e:  # reported per variant by the parent
        return ("error", f"{type(e).__name__}: {e}")


# ---------------------------------------------------------------- generating and building

def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def gen_table(key_dir, variants, kernels, info, decode_variants=(), staged_prefill_variants=()):
    """The table plugin.c links against (variants.h): the compiled kernels
    (cubins through .incbin, so big binaries cost the C compiler nothing) and,
    per case, the recorded launch: grid and each kernel parameter's value,
    bound by name (a buffer's role, or the literal the wrapper passed); per
    decode case its launches in order and its scratch buffers' sizes."""
    lines = ["/* Generated by kernels/vllm/triton/prepare.py; do not edit. */",
             '#include "variants.h"', ""]
    kindex, kinits = {}, []
    for i, (cid, rec) in enumerate(sorted(kernels.items())):
        sym = f"ppbk_vt_cubin_{i}"
        p = str(key_dir / f"{cid}.cubin")
        if '"' in p or "\n" in p:
            die(f"cannot embed a file whose path has quotes or newlines: {p}")
        lines.append(f'__asm__(".section .rodata\\n.balign 16\\n{sym}:\\n.incbin \\"{p}\\"\\n'
                     f'{sym}_end:\\n.previous\\n");')
        lines.append(f"extern const unsigned char {sym}[], {sym}_end[];")
        kindex[cid] = i
        kinits.append(f"    {{{sym}, {sym}_end, {c_string(rec['name'])}, {rec['shared']}, {rec['num_warps']}}},")
    def params(name, rec, launch):
        """The compiled kernel's parameters, each bound by name to what the launch passed."""
        by_name = {a["name"]: a for a in launch["args"]}
        slots = []
        for pname in rec["params"]:
            a = by_name.get(pname)
            if a is None:  # past the arguments: a scratch pointer newer Triton appends
                slots.append("{PPBK_VT_NULL, 0, 0, 0.0f}")
            elif a["kind"] == "ptr":  # a scratch buffer's number in the int member
                slots.append(f"{{PPBK_VT_PTR, {ROLES.index(a['role'])}, {int(a.get('scratch', 0))}, 0.0f}}")
            elif a["kind"] in ("i32", "i64"):
                slots.append(f"{{PPBK_VT_{a['kind'].upper()}, 0, {int(a['value'])}ll, 0.0f}}")
            else:
                slots.append(f"{{PPBK_VT_F32, 0, 0, {float(a['value'])!r}f}}")
        lines.append(f"static const ppbk_vt_param {name}[] = {{{', '.join(slots) or '{0}'}}};")

    def facts(sh):
        """variants.h's ppbk_vt_facts of a case's shape"""
        return f"{{{DTYPES[sh['dtype']][1]}, {sh['d']}, {sh['h']}, {sh['kvh']}, {sh['page']}, {max(0, sh['win'])}}}"

    vinits = []
    for i, v in enumerate(variants):
        rec, launch = kernels[v["compile_id"]], v["launch"]
        params(f"ppbk_vt_params_{i}", rec, launch)
        sh, c, kn = v["shape"], launch["constexprs"], v["knobs"]
        g = launch["grid"]
        vinits.append(
            f"    {{{facts(sh)}, {sh['b']}, {sh['q']}, {v['max_blocks_per_seq']}, {{{', '.join(str(kn[k]) for k, _ in KNOBS)}}}, "
            f"{int(c.get('BLOCK_M', 0) or 0)}, {int(c.get('BLOCK_N', 0) or 0)}, {launch['num_warps']}, "
            f"{launch['num_stages']}, {{{g[0]}, {g[1]}, {g[2]}}}, {kindex[v['compile_id']]}, "
            f"{len(rec['params'])}, ppbk_vt_params_{i}}},")
    def launches_of(tag, i, v):
        """A unified-attention case's launches and scratch sizes as tables; the
        initializer's tail they make (n_launches .. refusal of variants.h)."""
        launches = []
        for j, (cid, launch) in enumerate(zip(v["compile_ids"], v["launches"])):
            if v.get("refusal"):
                break  # its kernels did not compile: the case is refused with the reason
            rec = kernels[cid]
            params(f"ppbk_vt_{tag}params_{i}_{j}", rec, launch)
            g = launch["grid"]
            launches.append(f"{{{{{g[0]}, {g[1]}, {g[2]}}}, {kindex[cid]}, {len(rec['params'])}, "
                            f"ppbk_vt_{tag}params_{i}_{j}}}")
        lines.append(f"static const ppbk_vt_launch ppbk_vt_{tag}launches_{i}[] = "
                     f"{{{', '.join(launches) or '{{0}}'}}};")
        sizes = ", ".join(f"{int(n)}ull" for n in v["scratch_bytes"]) or "0"
        lines.append(f"static const unsigned long long ppbk_vt_{tag}scratch_{i}[] = {{{sizes}}};")
        return (f"{len(launches)}, ppbk_vt_{tag}launches_{i}, {len(v['scratch_bytes'])}, ppbk_vt_{tag}scratch_{i}, "
                f"{c_string(v['refusal']) if v.get('refusal') else '0'}")

    dinits = []
    for i, v in enumerate(decode_variants):
        tail = launches_of("d", i, v)
        sh = v["shape"]
        dinits.append(f"    {{{facts(sh)}, {sh['b']}, {sh['seq']}, {v['max_blocks_per_seq']}, {tail}}},")
    uinits = []
    for i, v in enumerate(staged_prefill_variants):
        tail = launches_of("u", i, v)
        sh = v["shape"]
        uinits.append(f"    {{{facts(sh)}, {sh['b']}, {sh['q']}, {v['num_tokens']}, {v['max_blocks_per_seq']}, "
                      f"{v['staged_blocks_per_seq']}, {tail}}},")
    lines += ["", "const ppbk_vt_kernel ppbk_vt_kernels[] = {"] + kinits + ["};",
              f"const int ppbk_vt_n_kernels = {len(kernels)};",
              "const ppbk_vt_variant ppbk_vt_variants[] = {"] + (vinits or ["    {.facts = {0}},"]) + ["};",
              f"const int ppbk_vt_n_variants = {len(variants)};",
              "const ppbk_vt_decode_variant ppbk_vt_decode_variants[] = {"] + (dinits or ["    {.facts = {0}},"]) + ["};",
              f"const int ppbk_vt_n_decode_variants = {len(decode_variants)};",
              "const ppbk_vt_staged_prefill_variant ppbk_vt_staged_prefill_variants[] = {"]
    lines += (uinits or ["    {.facts = {0}},"]) + ["};",
              f"const int ppbk_vt_n_staged_prefill_variants = {len(staged_prefill_variants)};",
              f"const int ppbk_vt_prefill_kernel = {list(PREFILL_KERNELS).index(info['prefill_kernel'])};",
              f"const int ppbk_vt_from_wrapper = {int(info['from_wrapper'])};",
              f"const int ppbk_vt_target_arch = {info['arch']};",
              f"const int ppbk_vt_target_warp_size = {info['warp_size']};",
              f"const char ppbk_vt_name[] = {c_string(info['name'])};",
              f"const char ppbk_vt_version[] = {c_string(info['version'])};",
              f"const char ppbk_vt_source[] = {c_string(info['source'])};",
              f"const char ppbk_vt_prepare_cmd[] = {c_string(info['prepare_cmd'])};", ""]
    (key_dir / "variants_table.c").write_text("\n".join(lines))


def cuda_include_dirs(triton_dir):
    """cuda.h: $CUDA_HOME / /usr/local/cuda, else the copy Triton ships for its own launcher."""
    cands = [Path(os.environ[e]) / "include" for e in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(e)]
    cands += [Path("/usr/local/cuda/include"), Path(triton_dir) / "backends/nvidia/include"]
    for c in cands:
        if (c / "cuda.h").is_file():
            return [str(c)]
    die("no cuda.h: install the CUDA toolkit headers or set CUDA_HOME")


def libcuda_link_args():
    """Link against libcuda.so where one exists (the driver's, or the toolkit's stub:
    both have soname libcuda.so.1, which the driver provides at run time)."""
    dirs = [Path(os.environ[e]) / "lib64/stubs" for e in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(e)]
    dirs += [Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path("/usr/local/cuda/lib64/stubs"),
             Path("/usr/lib/wsl/lib")]
    for d in dirs:
        if (d / "libcuda.so").exists():
            return [f"-L{d}", "-lcuda"]
    for d in dirs:
        if (d / "libcuda.so.1").exists():
            return [f"-L{d}", "-l:libcuda.so.1"]
    return ["-lcuda"]


def build_library(key_dir, lib, cc, triton_dir):
    lib.parent.mkdir(parents=True, exist_ok=True)
    tmp = lib.with_name(lib.name + ".tmp")
    cmd = [cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-fPIC", "-shared", "-fvisibility=hidden",
           f"-I{REPO / 'kernels'}", f"-I{HERE}"] + [f"-I{d}" for d in cuda_include_dirs(triton_dir)] + \
        [str(HERE / "plugin.c"), str(key_dir / "variants_table.c"), "-o", str(tmp)] + libcuda_link_args()
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die("building the library failed:\n" + " ".join(map(shlex.quote, cmd)) + "\n" + r.stderr)
    os.replace(tmp, lib)  # atomic: a running ppbench never sees half a library
    return time.time() - t0


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suites", nargs="*", help="ppbench suite files; their prefix_prefill and version-1 paged_attention cases are prepared")
    ap.add_argument("--case", action="append", default=[], metavar="KEY",
                    help="a ppbench case key, e.g. 'prefix_prefill b=1 q=512 ctx=16384 h=8 kvh=1 d=128 "
                         "dtype=bf16 page=16 win=0 bm=128 bn=128 w=8' (repeatable)")
    ap.add_argument("--vllm", default=str(DEFAULT_VLLM),
                    help="vLLM source tree, installed vllm package, or prefix_prefill.py (default: %(default)s)")
    ap.add_argument("--target", help="compile for this target instead of the GPU here: cuda:ARCH[:WARP], "
                                     "e.g. cuda:90 (then no GPU is needed)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="cache of compiled variants (default: %(default)s)")
    ap.add_argument("--lib", help=f"library to write (default: {PLUGIN_DIR}/libppbk_NAME.so with '_' for '-', "
                                  "on ppbench's plugin search path, named as ppbench looks for it)")
    ap.add_argument("--ppbench", help="ppbench binary that expands suites (default: build/ppbench, then PATH)")
    ap.add_argument("-j", "--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 16)),
                    help="parallel compiles (default: %(default)s)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler (default: $CC or cc)")
    ap.add_argument("--from-wrapper", action="store_true",
                    help="launch each case exactly as the tree's own context_attention_fwd would (its BLOCK, "
                         "warps, stages, grid), ignoring the case's block_m/block_n/num_warps/num_stages; without "
                         "it those knobs replace the wrapper's choice (a knob sweep; num_stages 0 keeps the "
                         "wrapper's)")
    ap.add_argument("--prefill-kernel", choices=tuple(PREFILL_KERNELS), default="prefix_prefill",
                    help="which of the tree's kernels runs the prefill cases: context_attention_fwd's (default), "
                         "the Triton unified attention of vLLM's V1 engine (unified, 0.9.2 on), or "
                         "chunked_prefill_paged_decode (chunked, 0.8.5 on: the prefix prefill for prompt chunks, "
                         "a paged-attention kernel for one-token sequences); the last two as the tree's wrapper "
                         "launches them, reading keys from a cache staged before the launch, untimed (implies "
                         "--from-wrapper)")
    ap.add_argument("--name", default="vllm-triton",
                    help="the implementation's name in ppbench (default: %(default)s; e.g. vllm-triton@0.10.2)")
    ap.add_argument("--print-launches", action="store_true",
                    help="print the recorded launch of each case as JSON and stop (needs no Triton with --target)")
    a = ap.parse_args()
    if not a.suites and not a.case:
        ap.error("give suite files and/or --case KEY")

    staged = a.prefill_kernel != "prefix_prefill"
    a.from_wrapper = a.from_wrapper or staged  # the staged families have no knobs ppbench overrides
    if not re.fullmatch(r"[a-z0-9_.@-]{1,40}", a.name):
        die(f"--name {a.name}: 1-40 characters of a-z, 0-9, '_', '.', '-', '@'")
    if not a.lib:
        a.lib = str(default_lib(a.name))
    triton = None
    if not (a.print_launches and a.target):
        try:
            import triton
        except ImportError:
            die("Triton is not installed: pip install triton (3.x; Python and Triton are needed at prepare time only)")
        if not triton.__version__.startswith("3."):
            die(f"Triton {triton.__version__} is installed; this script needs Triton 3.x (pip install 'triton>=3,<4')")
    srcs = find_sources(a.vllm)

    if a.target:
        parts = a.target.split(":")
        if len(parts) not in (2, 3) or parts[0] != "cuda" or not parts[1].isdigit():
            die(f"--target {a.target}: expected cuda:ARCH[:WARP_SIZE], e.g. cuda:90")
        target_spec = (parts[0], parts[1], parts[2] if len(parts) == 3 else "32")
    else:
        try:
            t = triton.runtime.driver.active.get_current_target()
        except Exception as e:
            die(f"no GPU target from Triton's driver ({type(e).__name__}: {e}); pass --target cuda:ARCH")
        target_spec = (t.backend, str(t.arch), str(t.warp_size))
    if target_spec[0] != "cuda" or not target_spec[1].isdigit():
        die(f"target {':'.join(target_spec)}: the plugin loads NVIDIA cubins for a compute capability "
            f"(cuda:ARCH); other targets are not supported (README.md)")
    tname = f"{target_spec[0]}{target_spec[1]}w{target_spec[2]}"

    # Which cases, and the launch the tree's wrapper makes for each.
    keys = list(a.case)
    if a.suites:
        ppbench = find_ppbench(a.ppbench)
        for s in a.suites:
            keys += suite_cases(s, ppbench)
    variants, dvariants, uvariants, todo, skipped = {}, {}, {}, {}, []
    for k in keys:
        s = parse_key(k)
        if s is None or s.get("impl", a.name) != a.name:
            continue  # another kernel's case, or one a suite gives to another implementation
        family = s["kernel"]
        if family == "decode" and s["v"] != 1:
            continue  # unified attention has no v2: the split is the backend's choice (README.md)
        # the source file a case's wrapper comes from: "decode" is the unified attention file
        file_of = "decode" if family == "decode" else PREFILL_KERNELS[a.prefill_kernel]
        if srcs[file_of] is None:
            skipped.append(f"{k}: the tree has no " + " or ".join(FAMILY_FILES[file_of]))
            continue
        try:
            if file_of != "prefill":
                capture_fn = capture.capture_unified_decode if family == "decode" else {
                    "decode": capture.capture_unified_prefill, "chunked": capture.capture_chunked_prefill}[file_of]
                rec = capture_fn(*srcs[file_of], s, int(target_spec[1]))
                launches = rec["launches"]
            else:
                launch = capture.capture_prefix_prefill(srcs["prefill"][0], s, int(target_spec[1]))
                if not a.from_wrapper:
                    launch = capture.override_knobs(launch, s)
                launches = [launch]
        except capture.CaptureError as e:
            if not a.from_wrapper and "cannot override" in str(e):
                skipped.append(f"{k}: {e}")
                continue
            die(f"{srcs[file_of][0]}: {e}")
        bad = [x for launch in launches for x in launch["args"] if x["kind"] == "i32" and int_class(x["value"]) == "L"]
        if bad:
            skipped.append(f"{k}: argument {bad[0]['name']} = {bad[0]['value']} does not fit int32")
            continue
        if file_of != "prefill":
            if family == "decode":
                v, keys_ = decode_variant_of(s, rec)
                dvariants.setdefault(json.dumps([v["shape"], v["max_blocks_per_seq"]], sort_keys=True), v)
            else:
                v, keys_ = staged_prefill_variant_of(s, rec)
                uvariants.setdefault(json.dumps([v["shape"], v["num_tokens"], v["max_blocks_per_seq"]],
                                                sort_keys=True), v)
            for (ck, cid), launch in zip(keys_, launches):
                todo.setdefault(cid, (ck, launch))
            continue
        v, ck = variant_of(s, launch)
        vkey = json.dumps([v["shape"], v["max_blocks_per_seq"], v["knobs"] if not a.from_wrapper else None],
                          sort_keys=True)
        variants.setdefault(vkey, v)
        todo.setdefault(v["compile_id"], (ck, launch))
    if not variants and not dvariants and not uvariants:
        die(f"no prefix_prefill or paged_attention v1 case to prepare among {len(keys)} cases" +
            (f" ({len(skipped)} skipped: {skipped[0]})" if skipped else ""))
    if a.print_launches:
        json.dump([dict(v["launch"], shape=v["shape"], knobs=v["knobs"]) for v in variants.values()] +
                  [dict(launches=v["launches"], shape=v["shape"], scratch_bytes=v["scratch_bytes"])
                   for v in dvariants.values()] +
                  [dict(launches=v["launches"], shape=v["shape"], num_tokens=v["num_tokens"],
                        staged_blocks_per_seq=v["staged_blocks_per_seq"], scratch_bytes=v["scratch_bytes"])
                   for v in uvariants.values()], sys.stdout, indent=1)
        print()
        return
    # The files the kernels came from (those of the families with cases), and their one checksum.
    families = {ck["family"] for ck, _ in todo.values()}
    used = {f: srcs[f][0] for f in FAMILY_FILES if f in families}
    sha = hashlib.sha256(b"".join(p.read_bytes() for p in used.values())).hexdigest()
    src = next(iter(used.values()))

    mode = "wrapper" if a.from_wrapper else "knobs"
    key_dir = Path(a.out).expanduser() / f"{sha[:16]}-triton{triton.__version__}-{tname}"
    key_dir.mkdir(parents=True, exist_ok=True)
    missing = {cid: x for cid, x in todo.items() if not (key_dir / f"{cid}.json").is_file()}
    print(f"prepare.py: {len(variants) + len(uvariants)} prefill cases ("
          f"{'' if not staged else a.prefill_kernel + ', '}{mode}: "
          f"{'the launch the tree wrapper makes' if a.from_wrapper else 'the case knobs in place of the wrapper choice'}), "
          f"{len(dvariants)} decode cases (unified attention as the wrapper launches it), "
          f"{len(todo)} kernels, {len(missing)} to compile, {len(skipped)} skipped, Triton {triton.__version__}, "
          f"target {':'.join(target_spec)}, {' + '.join(map(str, used.values()))} sha256 {sha[:16]}")
    for line in skipped[:5]:
        print(f"  skipped {line}")

    errors = run_compiles(a.jobs, {f: srcs[f] for f in used}, target_spec, key_dir, missing)
    if any(v["compile_id"] in errors for v in variants.values()):
        die(f"{len(errors)} kernel(s) failed to compile (above)")
    # A release's decode kernel that this Triton cannot compile for a shape (0.10.2's 2D kernel at page 8:
    # a tl.dot with K < 16) refuses that case with the reason, and the rest are prepared.
    for v in [*dvariants.values(), *uvariants.values()]:
        bad = [(x["kernel"], errors[cid]) for x, cid in zip(v["launches"], v["compile_ids"]) if cid in errors]
        if bad:
            v["refusal"] = (f"the tree's {bad[0][0]} does not compile for this shape with Triton "
                            f"{triton.__version__}: {bad[0][1]}")
    kernels = {cid: json.loads((key_dir / f"{cid}.json").read_text()) for cid in todo if cid not in errors}

    # What a "not prepared" refusal tells the user to run (options that were not defaults kept).
    prepare_cmd = "kernels/vllm/triton/prepare.py"
    for opt, val, default in (("--vllm", a.vllm, DEFAULT_VLLM), ("--out", a.out, DEFAULT_OUT),
                              ("--lib", a.lib, default_lib(a.name))):
        if Path(val).expanduser().resolve() != Path(default).resolve():
            prepare_cmd += f" {opt} {shlex.quote(val)}"
    if staged:
        prepare_cmd += f" --prefill-kernel {a.prefill_kernel}"
    if a.from_wrapper:
        prepare_cmd += f" --from-wrapper --name {shlex.quote(a.name)}"
    info = {"arch": int(target_spec[1]), "warp_size": int(target_spec[2]), "name": a.name,
            "from_wrapper": a.from_wrapper, "prefill_kernel": a.prefill_kernel,
            "version": f"vllm {vllm_version(src)} / triton {triton.__version__}",
            "source": " + ".join(map(str, used.values())) + f" sha256:{sha}", "prepare_cmd": prepare_cmd}
    ordered = sorted(variants.values(), key=lambda v: json.dumps([v["shape"], v["knobs"]], sort_keys=True))
    dordered = sorted(dvariants.values(), key=lambda v: json.dumps(v["shape"], sort_keys=True))
    uordered = sorted(uvariants.values(), key=lambda v: json.dumps([v["shape"], v["num_tokens"]], sort_keys=True))
    gen_table(key_dir, ordered, kernels, info, dordered, uordered)
    manifest = dict(info, triton=triton.__version__, target=":".join(target_spec), sha256=sha, mode=mode,
                    cases=[{"shape": v["shape"], "knobs": v["knobs"], "kernel": v["launch"]["kernel"],
                            "grid": v["launch"]["grid"], "num_warps": v["launch"]["num_warps"],
                            "num_stages": v["launch"]["num_stages"],
                            "BLOCK_M": v["launch"]["constexprs"].get("BLOCK_M"),
                            "BLOCK_N": v["launch"]["constexprs"].get("BLOCK_N"),
                            "compile_id": v["compile_id"]} for v in ordered],
                    decode_cases=[{"shape": v["shape"], "scratch_bytes": v["scratch_bytes"], "refusal": v.get("refusal"),
                                   "launches": [{"kernel": x["kernel"], "grid": x["grid"], "num_warps": x["num_warps"],
                                                 "num_stages": x["num_stages"], "compile_id": cid}
                                                for x, cid in zip(v["launches"], v["compile_ids"])]}
                                  for v in dordered],
                    staged_prefill_cases=[{"shape": v["shape"], "num_tokens": v["num_tokens"],
                                            "staged_blocks_per_seq": v["staged_blocks_per_seq"],
                                            "scratch_bytes": v["scratch_bytes"], "refusal": v.get("refusal"),
                                            "launches": [{"kernel": x["kernel"], "grid": x["grid"],
                                                          "num_warps": x["num_warps"], "num_stages": x["num_stages"],
                                                          "compile_id": cid}
                                                         for x, cid in zip(v["launches"], v["compile_ids"])]}
                                           for v in uordered])
    (key_dir / f"manifest-{a.name}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    lib = Path(a.lib).expanduser()
    secs = build_library(key_dir, lib, a.cc, os.path.dirname(triton.__file__))
    print(f"prepare.py: {lib} ({len(ordered) + len(uordered)} prefill and {len(dordered)} decode cases, "
          f"{len(kernels)} kernels, "
          f"built in {secs:.1f} s); "
          f"manifest {key_dir}/manifest-{a.name}.json")


def run_compiles(jobs, srcs, target_spec, key_dir, todo):
    """Compile `todo` (id -> (compile key, launch)) in worker processes; srcs:
    family -> (kernel file, tree root or None). Returns {id: the error's last
    line} for those that failed (printed in full)."""
    if not todo:
        return {}
    init = ({f: (str(src), root and str(root)) for f, (src, root) in srcs.items()}, target_spec,
            str(key_dir / "triton-cache"))
    failures = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, min(jobs, len(todo))),
                                                initializer=_worker_init, initargs=init) as pool:
        futs = {pool.submit(_job, ck, launch): (cid, ck) for cid, (ck, launch) in todo.items()}
        for f in concurrent.futures.as_completed(futs):
            cid, ck = futs[f]
            status, rec = f.result()
            c = ck["constexprs"]
            label = (f"{ck['kernel']} BLOCK_M={c.get('BLOCK_M')} BLOCK_N={c.get('BLOCK_N')} w={ck['num_warps']} "
                     f"stages={ck['num_stages']} d={c.get('BLOCK_DMODEL')} ints={ck['int_classes']}")
            if status != "ok":
                print(f"  FAILED {label}: {rec}", file=sys.stderr)
                failures[cid] = rec.strip().splitlines()[-1].strip()
                continue
            (key_dir / f"{cid}.cubin").write_bytes(rec.pop("cubin"))
            rec["compile_key"] = ck
            (key_dir / f"{cid}.json").write_text(json.dumps(rec, indent=1) + "\n")
            print(f"  {label}: {rec['compile_s']} s, {rec['shared']} B shared, {len(rec['params'])} params")
    return failures


if __name__ == "__main__":
    main()
