#!/usr/bin/env python3
"""Prepare the `vllm-triton` ppbench implementation: vLLM's Triton prefix-prefill
kernel (`_fwd_kernel` in vllm/attention/ops/prefix_prefill.py), compiled ahead of
time into cubins and linked with plugin.c into libppbk_vllm_triton.so.

Python and Triton are needed here only; the library launches the cubins through
the CUDA driver API.

Which variants: every prefix_prefill case of the suites given (expanded by
`ppbench list SUITE`, so excludes, defaults and head pairs are ppbench's own), and
every `--case KEY` (a ppbench case key). A variant is (dtype, head_dim, BLOCK,
num_warps, sliding window, the divisibility class of each integer argument);
cases with block_m != block_n are skipped (vLLM 0.6.3 has one BLOCK; the plugin
refuses them).

How each variant is compiled: through Triton's own JIT front end
(`JITFunction.run(..., warmup=True)`) with the argument values vLLM's
`context_attention_fwd` would pass for that shape, under a stand-in driver that
only names the target. So the specialisation (integers equal to 1 become
constants, integers and pointers divisible by 16 get divisibility hints, which
arguments an annotation exempts) is decided by the installed Triton exactly as
in vLLM, not re-implemented here; no GPU is needed with --target.

Cache: OUT/<sha256 of prefix_prefill.py>-triton<version>-<target>/, one .cubin +
.json per variant; a later run adds to it, and the library holds every variant
of that folder.
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
REPO = HERE.parents[2]
DEFAULT_VLLM = REPO / ".deps" / "vllm-0.6.3"
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
DEFAULT_OUT = CACHE_HOME / "ppbench" / "vllm-triton"
DEFAULT_LIB = CACHE_HOME / "ppbench" / "plugins" / "libppbk_vllm_triton.so"

# The 39 runtime arguments of _fwd_kernel in order (the 5 constexprs follow).
# plugin.c's ARG_* enum has the same order; the generated table refers to them by index.
ARGS = ("Q K V K_cache V_cache B_Loc sm_scale k_scale v_scale B_Start_Loc B_Seqlen B_Ctxlen block_size x Out "
        "stride_b_loc_b stride_b_loc_s stride_qbs stride_qh stride_qd stride_kbs stride_kh stride_kd "
        "stride_vbs stride_vh stride_vd stride_obs stride_oh stride_od stride_k_cache_bs stride_k_cache_h "
        "stride_k_cache_d stride_k_cache_bl stride_k_cache_x stride_v_cache_bs stride_v_cache_h "
        "stride_v_cache_d stride_v_cache_bl num_queries_per_kv").split()
ARG_SCRATCH = len(ARGS)  # trailing parameters newer Triton adds (global/profile scratch): passed 0
POINTERS = {"Q", "K", "V", "K_cache", "V_cache", "Out", "B_Loc", "B_Start_Loc", "B_Seqlen", "B_Ctxlen"}
FLOATS = {"sm_scale", "k_scale", "v_scale"}
DTYPES = {"fp16": ("torch.float16", 0), "bf16": ("torch.bfloat16", 1)}


def die(msg):
    print(f"prepare.py: {msg}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------- shapes -> variants

def int_args(s):
    """The integer arguments context_attention_fwd passes for shape s, in ARGS
    order: v_cache.shape[3], k_cache.shape[4], then the tensors' strides as
    torch reports them for ppbench's contiguous layouts (attention_args.h), then
    num_queries_per_kv. plugin.c (int_args) computes the same list."""
    h, kvh, d, page = s["h"], s["kvh"], s["d"], s["page"]
    ctx_max = s["ctx"]  # sequence 0 has the longest context, ragged or not
    mbps = max(1, -(-ctx_max // page))  # harness/run/kernel_case.c: max_blocks_per_seq
    return {
        "block_size": page, "x": 8,
        "stride_b_loc_b": mbps, "stride_b_loc_s": 1,
        "stride_qbs": h * d, "stride_qh": d, "stride_qd": 1,
        "stride_kbs": kvh * d, "stride_kh": d, "stride_kd": 1,
        "stride_vbs": kvh * d, "stride_vh": d, "stride_vd": 1,
        "stride_obs": h * d, "stride_oh": d, "stride_od": 1,
        # k_cache [blocks, kvh, d/8, page, 8]
        "stride_k_cache_bs": kvh * d * page, "stride_k_cache_h": d * page, "stride_k_cache_d": page * 8,
        "stride_k_cache_bl": 8, "stride_k_cache_x": 1,
        # v_cache [blocks, kvh, d, page]
        "stride_v_cache_bs": kvh * d * page, "stride_v_cache_h": d * page, "stride_v_cache_d": page,
        "stride_v_cache_bl": 1,
        "num_queries_per_kv": h // kvh,
    }


def int_classes(ints):
    """What Triton 3.x's JIT can tell integers apart by: 1, divisible by 16, other
    ('L': outside int32, which the plugin refuses). Same string in plugin.c."""
    def cls(v):
        if not -2**31 <= v < 2**31:
            return "L"
        return "1" if v == 1 else "D" if v % 16 == 0 else "."
    return "".join(cls(v) for v in ints.values())


def parse_key(key):
    """A ppbench case key ('prefix_prefill b=1 q=17 ... bm=16 bn=32 w=4') -> dict.
    Config fields at their defaults are left out of keys (harness/core/case.c)."""
    toks = key.split()
    if not toks or toks[0] != "prefix_prefill":
        return None
    s = {"b": 1, "ctx": 0, "d": 128, "dtype": "bf16", "page": 16, "win": 0, "bm": 128, "bn": 128, "w": 8}
    for t in toks[1:]:
        name, _, val = t.partition("=")
        s[name] = val
    for name in ("b", "q", "ctx", "h", "kvh", "d", "page", "win", "bm", "bn", "w"):
        if name not in s:
            die(f"case key '{key}' has no {name}=")
        s[name] = int(s[name])
    if s["dtype"] not in DTYPES:
        die(f"case key '{key}': dtype must be fp16 or bf16")
    return s


def variant_of(s):
    ints = int_args(s)
    v = {"dtype": s["dtype"], "head_dim": s["d"], "block": s["bm"], "num_warps": s["w"],
         "sliding_window": max(0, s["win"]), "int_classes": int_classes(ints), "num_stages": 1}
    v["id"] = hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16]
    return v, ints


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

def find_source(path):
    """--vllm: the kernel file itself, a vLLM source tree, or an installed `vllm` package."""
    p = Path(path).expanduser()
    for c in (p, p / "vllm/attention/ops/prefix_prefill.py", p / "attention/ops/prefix_prefill.py"):
        if c.is_file():
            return c.resolve()
    die(f"no vllm/attention/ops/prefix_prefill.py under {p}: fetch vLLM 0.6.3's source "
        f"(scripts/fetch-vllm.sh puts it in .deps/vllm-0.6.3) or pass --vllm PATH")


def vllm_version(src):
    """From the tree around prefix_prefill.py: an sdist's PKG-INFO, an installed
    package's dist-info, or a built tree's vllm/_version.py."""
    pkg = src.parents[2]  # .../vllm
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


def import_kernel_module(src, platform=None):
    """Import prefix_prefill.py without vLLM, and without torch when it is not
    installed: at load the module needs `vllm.platforms.current_platform` and
    `torch.inference_mode`, both only for context_attention_fwd, never for the
    kernel (tests/gpu/timing_fidelity.py calls context_attention_fwd's launch and
    passes a `platform` that answers from torch). The stand-ins live in
    sys.modules while the file executes only, so Triton never mistakes them for
    the real packages."""
    stubs = {"vllm": types.ModuleType("vllm"), "vllm.platforms": types.ModuleType("vllm.platforms")}
    stubs["vllm.platforms"].current_platform = platform
    stubs["vllm"].platforms = stubs["vllm.platforms"]
    if importlib.util.find_spec("torch") is None:
        stubs["torch"] = types.ModuleType("torch")
        stubs["torch"].inference_mode = lambda *a, **k: (lambda f: f)
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("ppbk_vllm_prefix_prefill", src)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        for name, m in saved.items():
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m
    if not hasattr(mod, "_fwd_kernel"):
        raise RuntimeError(f"{src} defines no _fwd_kernel")
    return mod


def _worker_init(src, target_spec, cache_dir):
    os.environ["TRITON_CACHE_DIR"] = cache_dir
    import triton
    from triton.backends.compiler import GPUTarget
    backend, arch, warp = target_spec
    target = GPUTarget(backend, int(arch), int(warp))
    triton.runtime.driver.set_active(_TargetOnlyDriver(target))
    _W.update(triton=triton, kernel=import_kernel_module(src)._fwd_kernel, target=target)


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
    ptx_types = {"ptr": ("u64",), "i32": ("u32", "s32", "b32"), "fp32": ("f32",)}
    params = []
    for i, t in enumerate(ptx):
        a = kept[i] if i < len(kept) else None  # past the arguments: scratch pointers
        if t not in ptx_types[kinds[a] if a else "ptr"]:
            raise RuntimeError(f"PTX parameter {i} is .{t}, which does not fit {a or 'a scratch pointer'}")
        params.append(a)
    return {"name": md.name, "shared": int(md.shared), "num_warps": int(md.num_warps),
            "params": params, "cubin": bytes(ck.asm["cubin"])}


def compile_variant(v, ints):
    triton = _W["triton"]
    kernel = _W["kernel"]
    dt = DTYPES[v["dtype"]][0]
    ptr = {n: _Ptr("torch.int32" if n.startswith("B_") else dt) for n in POINTERS}
    d = v["head_dim"]
    # context_attention_fwd's call, argument for argument (vLLM 0.6.3).
    args = [ptr["Q"], ptr["K"], ptr["V"], ptr["K_cache"], ptr["V_cache"], ptr["B_Loc"],
            1.0 / math.sqrt(d), 1.0, 1.0, ptr["B_Start_Loc"], ptr["B_Seqlen"], ptr["B_Ctxlen"],
            ints["block_size"], ints["x"], ptr["Out"]] + \
        [ints[a] for a in ARGS[15:38]]
    kwargs = dict(num_queries_per_kv=ints["num_queries_per_kv"], BLOCK_M=v["block"], BLOCK_DMODEL=d,
                  BLOCK_DMODEL_PADDED=triton.next_power_of_2(d), BLOCK_N=v["block"],
                  SLIDING_WINDOW=v["sliding_window"], num_warps=v["num_warps"], num_stages=1)
    t0 = time.time()
    ck = kernel.run(*args, grid=(1, 1, 1), warmup=True, **kwargs)
    kinds = {a: "ptr" if a in POINTERS else "fp32" if a in FLOATS else "i32" for a in ARGS}
    rec = _kernel_record(ck, kernel, kinds)
    rec["compile_s"] = round(time.time() - t0, 2)
    return rec


def _job(v, ints):
    try:
        return ("ok", compile_variant(v, ints))
    except Exception as e:  # reported per variant by the parent
        return ("error", f"{type(e).__name__}: {e}")


# ---------------------------------------------------------------- generating and building

def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def gen_table(key_dir, variants, info):
    """The variant table plugin.c links against (variants.h): cubins through
    .incbin, so big binaries cost the C compiler nothing."""
    arg_index = {a: i for i, a in enumerate(ARGS)}
    lines = ["/* Generated by kernels/vllm/triton/prepare.py; do not edit. */",
             '#include "variants.h"', ""]

    def blob(sym, path):
        p = str(path)
        if '"' in p or "\n" in p:
            die(f"cannot embed a file whose path has quotes or newlines: {p}")
        lines.append(f'__asm__(".section .rodata\\n.balign 16\\n{sym}:\\n.incbin \\"{p}\\"\\n'
                     f'{sym}_end:\\n.previous\\n");')
        lines.append(f"extern const unsigned char {sym}[], {sym}_end[];")

    def kernel_init(sym, rec, index):
        params = ", ".join(str(index[a]) if a is not None else "PPBK_VT_SCRATCH" for a in rec["params"])
        lines.append(f"static const unsigned char {sym}_params[] = {{{params}}};")
        return (f"{{{sym}, {sym}_end, {c_string(rec['name'])}, {rec['shared']}, {rec['num_warps']}, "
                f"{len(rec['params'])}, {sym}_params}}")

    inits = []
    for i, (v, rec) in enumerate(variants):
        sym = f"ppbk_vt_cubin_{i}"
        blob(sym, key_dir / f"{v['id']}.cubin")
        k = kernel_init(sym, rec, arg_index)
        inits.append(f"    {{{DTYPES[v['dtype']][1]}, {v['head_dim']}, {v['block']}, {v['num_warps']}, "
                     f"{v['sliding_window']}, {c_string(v['int_classes'])}, {k}}},")
    lines += ["", "const ppbk_vt_variant ppbk_vt_variants[] = {"] + inits + ["};",
              f"const int ppbk_vt_n_variants = {len(variants)};",
              f"const int ppbk_vt_target_arch = {info['arch']};",
              f"const int ppbk_vt_target_warp_size = {info['warp_size']};",
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
    ap.add_argument("suites", nargs="*", help="ppbench suite files; their prefix_prefill cases are prepared")
    ap.add_argument("--case", action="append", default=[], metavar="KEY",
                    help="a ppbench case key, e.g. 'prefix_prefill b=1 q=512 ctx=16384 h=8 kvh=1 d=128 "
                         "dtype=bf16 page=16 win=0 bm=128 bn=128 w=8' (repeatable)")
    ap.add_argument("--vllm", default=str(DEFAULT_VLLM),
                    help="vLLM source tree, installed vllm package, or prefix_prefill.py (default: %(default)s)")
    ap.add_argument("--target", help="compile for this target instead of the GPU here: cuda:ARCH[:WARP], "
                                     "e.g. cuda:90 (then no GPU is needed)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="cache of compiled variants (default: %(default)s)")
    ap.add_argument("--lib", default=str(DEFAULT_LIB), help="library to write (default: %(default)s, "
                                                            "on ppbench's plugin search path)")
    ap.add_argument("--ppbench", help="ppbench binary that expands suites (default: build/ppbench, then PATH)")
    ap.add_argument("-j", "--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 16)),
                    help="parallel compiles (default: %(default)s)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler (default: $CC or cc)")
    a = ap.parse_args()
    if not a.suites and not a.case:
        ap.error("give suite files and/or --case KEY")

    try:
        import triton
    except ImportError:
        die("Triton is not installed: pip install triton (3.x; Python and Triton are needed at prepare time only)")
    if not triton.__version__.startswith("3."):
        die(f"Triton {triton.__version__} is installed; this script needs Triton 3.x (pip install 'triton>=3,<4')")
    src = find_source(a.vllm)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()

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

    # Which variants.
    keys = list(a.case)
    if a.suites:
        ppbench = find_ppbench(a.ppbench)
        for s in a.suites:
            keys += suite_cases(s, ppbench)
    wanted, skipped = {}, 0
    for k in keys:
        s = parse_key(k)
        if s is None or s.get("impl", "vllm-triton") != "vllm-triton":
            continue  # another kernel's case, or one a suite gives to another implementation
        if s["bm"] != s["bn"]:
            skipped += 1  # vLLM 0.6.3 has one BLOCK: the plugin refuses these
            continue
        v, ints = variant_of(s)
        if "L" in v["int_classes"]:
            skipped += 1
            continue
        wanted.setdefault(v["id"], (v, ints))
    if not wanted:
        die(f"no prefix_prefill case with block_m == block_n among {len(keys)} cases")

    key_dir = Path(a.out).expanduser() / f"{sha[:16]}-triton{triton.__version__}-{tname}"
    key_dir.mkdir(parents=True, exist_ok=True)
    todo = [(vid, v, ints) for vid, (v, ints) in wanted.items() if not (key_dir / f"{vid}.json").is_file()]
    print(f"prepare.py: {len(wanted)} variants wanted ({skipped} cases skipped: block_m != block_n), "
          f"{len(todo)} to compile, Triton {triton.__version__}, target {':'.join(target_spec)}, "
          f"{src} sha256 {sha[:16]}")

    failures = run_compiles(a.jobs, src, target_spec, key_dir, todo)
    if failures:
        die(f"{failures} variant(s) failed to compile (above)")

    # Every variant of this cache folder goes into the library.
    variants = []
    for j in sorted(key_dir.glob("*.json")):
        if j.name == "manifest.json":
            continue
        rec = json.loads(j.read_text())
        variants.append((rec["variant"], rec))
    # What a "not prepared" refusal tells the user to run (options that were not defaults kept).
    prepare_cmd = "kernels/vllm/triton/prepare.py"
    for opt, val, default in (("--vllm", a.vllm, DEFAULT_VLLM), ("--out", a.out, DEFAULT_OUT),
                              ("--lib", a.lib, DEFAULT_LIB)):
        if Path(val).expanduser().resolve() != Path(default).resolve():
            prepare_cmd += f" {opt} {shlex.quote(val)}"
    info = {"arch": int(target_spec[1]), "warp_size": int(target_spec[2]),
            "version": f"vllm {vllm_version(src)} / triton {triton.__version__}",
            "source": f"{src} sha256:{sha}", "prepare_cmd": prepare_cmd}
    gen_table(key_dir, variants, info)
    manifest = dict(info, triton=triton.__version__, target=":".join(target_spec), sha256=sha,
                    variants=[dict(v, shared=r["shared"], params=len(r["params"]), compile_s=r["compile_s"])
                              for v, r in variants])
    (key_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    lib = Path(a.lib).expanduser()
    secs = build_library(key_dir, lib, a.cc, os.path.dirname(triton.__file__))
    print(f"prepare.py: {lib} ({len(variants)} variants, built in {secs:.1f} s); manifest {key_dir}/manifest.json")


def run_compiles(jobs, src, target_spec, key_dir, todo):
    init = (str(src), target_spec, str(key_dir / "triton-cache"))
    failures = 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, jobs), initializer=_worker_init,
                                                initargs=init) as pool:
        futs = {pool.submit(_job, v, ints): (vid, v) for vid, v, ints in todo}
        for f in concurrent.futures.as_completed(futs):
            vid, v = futs[f]
            status, rec = f.result()
            label = (f"{v['dtype']} d={v['head_dim']} BLOCK={v['block']} w={v['num_warps']} "
                     f"win={v['sliding_window']} ints={v['int_classes']}")
            if status != "ok":
                print(f"  FAILED {label}: {rec}", file=sys.stderr)
                failures += 1
                continue
            (key_dir / f"{vid}.cubin").write_bytes(rec.pop("cubin"))
            rec["variant"] = v
            (key_dir / f"{vid}.json").write_text(json.dumps(rec, indent=1) + "\n")
            print(f"  {label}: {rec['compile_s']} s, {rec['shared']} B shared, {len(rec['params'])} params")
    return failures


if __name__ == "__main__":
    main()
