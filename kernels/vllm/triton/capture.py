"""What a vLLM tree's own Python wrapper launches, for one ppbench shape.

ppbench judges the kernels a deployment ships at whatever vLLM version it runs,
including a patch to a constant in the wrapper (the seed's BLOCK 128 -> 64 sits
in `context_attention_fwd`, not in the kernel). Re-implementing each release's
wrapper would go stale with every release, so instead this module *runs* the
tree's wrapper, with stand-ins for torch, Triton and vLLM's platform object, and
records the kernel launch it makes: which @triton.jit function, the grid,
num_warps / num_stages, every argument bound *by name* to the kernel's
signature, and every constexpr. Nothing is compiled or launched here and no GPU
is needed; prepare.py compiles the recorded launch with the real Triton.

Tensors are stand-ins with ppbench's layouts (kernels/attention_args.h), each
tagged with its role (q, k_cache, block_table, ...), so the wrapper computes
every stride and size itself, and a pointer argument is bound to the buffer it
came from. Anything the wrapper does that has no stand-in (a torch function, a
vLLM module, a platform query) fails with one line naming it: a tree ppbench
cannot read is said, never guessed.

Families: prefix prefill (`context_attention_fwd`, vLLM 0.6.3 to 0.34:
vllm/attention/ops/ or, from 0.14, vllm/v1/attention/ops/;
capture_prefix_prefill), the Triton unified attention (`unified_attention`,
0.9.2 on, as vLLM's Triton backend calls it, one or two launches) for decode
(capture_unified_decode) and prefill (capture_unified_prefill), and
`chunked_prefill_paged_decode` (0.8.5 on, as vLLM's ROCm backend calls it: the
prefix prefill for the prompts' chunks, a paged-attention kernel for the
one-token sequences; capture_chunked_prefill)."""
import collections
import contextlib
import importlib.util
import inspect
import math
import sys
import types
from pathlib import Path


class CaptureError(Exception):
    """A tree ppbench cannot read, with the one line that says why."""


# ---------------------------------------------------------------- torch stand-in

class DType:
    def __init__(self, name, itemsize, is_floating):
        self.name, self.itemsize, self.is_floating_point = name, itemsize, is_floating

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__


DTYPES = {n: DType(n, s, f) for n, s, f in (
    ("float16", 2, True), ("bfloat16", 2, True), ("float32", 4, True), ("float64", 8, True),
    ("float8_e4m3fn", 1, True), ("float8_e5m2", 1, True), ("uint8", 1, False), ("int8", 1, False),
    ("int32", 4, False), ("int64", 8, False), ("bool", 1, False))}
PPB_DTYPES = {"fp16": DTYPES["float16"], "bf16": DTYPES["bfloat16"]}


class Size(tuple):
    """torch.Size: a tuple whose slices are sizes too, with numel()."""

    def __getitem__(self, k):
        v = super().__getitem__(k)
        return Size(v) if isinstance(k, slice) else v

    def numel(self):
        return math.prod(self)


class FakeTensor:
    """Shape, contiguous strides, dtype and a role: all a wrapper reads before
    it launches. A tensor the wrapper derives (another dtype, a new buffer) has
    no role and cannot be bound to one of ppbench's buffers."""

    def __init__(self, shape, dtype, role=None):
        self.shape = Size(int(s) for s in shape)
        self.dtype = dtype
        self.role = role
        st, acc = [], 1
        for s in reversed(self.shape):
            st.append(acc)
            acc *= max(s, 1)
        self._strides = tuple(reversed(st))

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    ndim = property(dim)

    def __len__(self):
        return self.shape[0]

    def numel(self):
        return math.prod(self.shape)

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return 256  # cudaMalloc alignment: what Triton's divisibility hints see in vLLM

    @property
    def device(self):
        return types.SimpleNamespace(type="cuda", index=0)

    def is_contiguous(self):
        return True

    def to(self, dtype=None, *a, **k):
        if isinstance(dtype, DType) and dtype is not self.dtype:
            return FakeTensor(self.shape, dtype)
        return self

    def view(self, *args):
        if len(args) == 1 and isinstance(args[0], DType):
            return self if args[0] is self.dtype else FakeTensor(self.shape, args[0])
        raise CaptureError(f"the wrapper reshapes the {self.role or 'derived'} tensor (view{args}), "
                           f"which ppbench's stand-in tensors do not follow")

    def __getattr__(self, name):
        raise CaptureError(f"the wrapper reads tensor.{name}, which ppbench's stand-in tensors do not have")


def _torch_stub():
    t = types.ModuleType("torch")
    for n, d in DTYPES.items():
        setattr(t, n, d)
    t.Tensor = FakeTensor
    t.dtype = DType
    t.inference_mode = lambda *a, **k: (lambda f: f)
    t.no_grad = t.inference_mode
    t.finfo = lambda d: types.SimpleNamespace(max=448.0 if "e4m3" in d.name else 57344.0, min=0.0, bits=8)
    # A buffer the wrapper allocates itself (0.10.2's split-softmax scratch): the plugin allocates one of
    # that size per case, outside timing ("scratch" role; capture() numbers them).
    t.empty = lambda *shape, dtype=None, **k: FakeTensor(shape[0] if len(shape) == 1 and isinstance(
        shape[0], (tuple, list)) else shape, dtype or DTYPES["float32"], "scratch")

    def missing(name):
        raise CaptureError(f"the wrapper calls torch.{name}, which ppbench does not stand in for")
    t.__getattr__ = missing
    return t


# ---------------------------------------------------------------- Triton stand-in: recording launches

class Launch:
    """One recorded kernel launch."""

    def __init__(self, jit, grid, bound, options):
        self.jit, self.kernel, self.grid, self.bound, self.options = jit, jit.__name__, grid, bound, options


LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "kpack", "waves_per_eu", "matrix_instr_nonkdim",
                  "enable_fp_fusion", "launch_cooperative_grid")


class RecordingKernel:
    """Stands for a @triton.jit function: kernel[grid](...) records the launch."""

    def __init__(self, fn, launches):
        self.fn, self.__name__, self._launches = fn, fn.__name__, launches
        self.signature = inspect.signature(fn)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            options = {k: kwargs.pop(k) for k in list(kwargs) if k in LAUNCH_OPTIONS}
            try:
                bound = self.signature.bind(*args, **kwargs)
            except TypeError as e:
                raise CaptureError(f"the wrapper's call of {self.__name__} does not fit its signature: {e}")
            bound.apply_defaults()
            self._launches.append(Launch(self, grid, dict(bound.arguments), options))
        return launch

    def __call__(self, *a, **k):  # a @triton.jit helper called from another kernel: never at capture time
        raise CaptureError(f"{self.__name__} was called outside a kernel")


def _int64_annotation(p):
    """tl.int64 (the stand-in's "int64"), also as a string under `from __future__ import annotations`."""
    a = p.annotation
    return a == "int64" or (isinstance(a, str) and a.replace(" ", "") in ("tl.int64", "int64"))


def _constexpr_annotation(p, tl):
    a = p.annotation
    return a is tl.constexpr or (isinstance(a, str) and a.replace(" ", "") in ("tl.constexpr", "constexpr"))


def _triton_stub(launches):
    triton = types.ModuleType("triton")
    tl = types.ModuleType("triton.language")

    class constexpr:  # noqa: N801 (Triton's name)
        pass
    tl.constexpr = constexpr
    for n in ("float16", "bfloat16", "float32", "int32", "int64", "float8e4nv", "float8e5"):
        setattr(tl, n, n)

    def jit(fn=None, **kw):
        if fn is None:
            return lambda f: RecordingKernel(f, launches)
        return RecordingKernel(fn, launches)

    def refuse(name):
        def f(*a, **k):
            raise CaptureError(f"the tree uses triton.{name}: ppbench cannot tell which config it would pick")
        return f
    triton.jit = jit
    triton.autotune = refuse("autotune")
    triton.heuristics = refuse("heuristics")
    triton.Config = lambda *a, **k: None
    triton.cdiv = lambda a, b: -(-a // b)
    triton.next_power_of_2 = lambda n: 1 if n <= 1 else 1 << (int(n) - 1).bit_length()
    triton.__version__ = "3.0.0"
    triton.language = tl
    return triton, tl


# ---------------------------------------------------------------- vLLM's platform stand-in

class DeviceCapability(collections.namedtuple("DeviceCapability", "major minor")):
    """vLLM's (major, minor) tuple; compares equal to (7, 5)."""

    def to_int(self):
        return self.major * 10 + self.minor


class Platform:
    """vllm.platforms.current_platform for a CUDA target of compute capability `cc` (e.g. 90)."""

    def __init__(self, cc, fp8=None):
        self.cc = cc
        self.fp8 = fp8 or DTYPES["float8_e4m3fn"]  # the real torch's dtype when the module imports real torch

    def has_device_capability(self, cap, device_id=0):
        if isinstance(cap, tuple):
            cap = cap[0] * 10 + cap[1]
        return self.cc >= cap

    def get_device_capability(self, device_id=0):
        return DeviceCapability(self.cc // 10, self.cc % 10)

    def is_device_capability_family(self, cap, device_id=0):
        return self.cc // 10 == cap // 10

    def is_rocm(self):
        return False

    def is_cuda(self):
        return True

    def is_cuda_alike(self):
        return True

    def is_xpu(self):
        return False

    def is_cpu(self):
        return False

    def fp8_dtype(self):
        return self.fp8

    def __getattr__(self, name):
        raise CaptureError(f"the tree asks current_platform.{name}, which ppbench does not stand in for")


# ---------------------------------------------------------------- loading a tree's module

def exec_file_with(src, modules, name):
    """Execute the Python file `src` as a module named `name`, with `modules`
    standing in sys.modules while it runs only (restored after), so nothing
    else ever mistakes a stand-in for the real package. A dotted name
    (PKG.stem) makes the file's folder the package PKG, so that its relative
    imports (chunked_prefill_paged_decode.py: `from .prefix_prefill import
    ...`) load its siblings, with the same stand-ins, gone from sys.modules
    with it."""
    package = name.rpartition(".")[0]
    if package:
        pkg = types.ModuleType(package)
        pkg.__path__ = [str(Path(src).resolve().parent)]
        modules = dict(modules, **{package: pkg})
    with stand_ins(modules):
        try:
            spec = importlib.util.spec_from_file_location(name, src)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
        finally:
            for n in [n for n in sys.modules if package and n.startswith(package + ".")]:
                sys.modules.pop(n)


@contextlib.contextmanager
def stand_ins(modules):
    """`modules` (sys.modules names -> modules) in sys.modules for the block
    only: loading a kernel file, or calling a wrapper that imports inside its
    body (chunked_prefill_paged_decode's `from vllm.platforms.rocm import`)."""
    saved = {n: sys.modules.get(n) for n in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


class _NullLogger:
    """vllm.logger's logger: every call does nothing (the wrapper's debug_once, warning, ...)."""

    def __getattr__(self, name):
        return lambda *a, **k: None


class _Envs(types.ModuleType):
    """vllm.envs: the settings the kernel files read, at vLLM's defaults; any
    other is refused, naming it."""
    KNOWN = {"VLLM_BATCH_INVARIANT": False}

    def __getattr__(self, name):
        if name in self.KNOWN:
            return self.KNOWN[name]
        raise CaptureError(f"the tree reads vllm.envs.{name}, which ppbench does not stand in for")


def _int_enum_from(path, cls_name):
    """An IntEnum `cls_name` as the tree's file defines it (NAME = integer lines of
    the class body), read without executing the file (it imports half of vLLM);
    None when the file has no such class."""
    import ast
    import enum
    tree = ast.parse(Path(path).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            members = {t.id: v.value for st in node.body if isinstance(st, ast.Assign)
                       for t in st.targets if isinstance(t, ast.Name)
                       for v in [st.value] if isinstance(v, ast.Constant) and isinstance(v.value, int)}
            return enum.IntEnum(cls_name, members)
    return None  # an older tree: nothing imports it


# Modules of the tree a kernel file imports, executed from the tree with the same stand-ins
# (Triton helpers shared by the unified-attention kernels, from 0.14).
TREE_MODULES = ("vllm.v1.attention.ops.triton_attention_helpers",)


def vllm_stubs(triton, tl, platform, root=None):
    """The modules a vLLM kernel file imports, as stand-ins: vllm.platforms'
    current_platform (`platform`), vllm.triton_utils (the given Triton: the
    recording stand-in here, the real one in prepare.py), vllm.logger,
    vllm.envs, KVQuantMode (from the tree at `root`), and TREE_MODULES from
    the tree itself. sys.modules names -> modules."""
    mods = {n: types.ModuleType(n) for n in ("vllm", "vllm.platforms", "vllm.triton_utils", "vllm.logger",
                                                "vllm.v1", "vllm.v1.kv_cache_interface", "vllm._custom_ops",
                                                "vllm.platforms.rocm")}
    mods["vllm.envs"] = _Envs("vllm.envs")
    mods["vllm.platforms"].current_platform = platform
    mods["vllm.triton_utils"].triton, mods["vllm.triton_utils"].tl = triton, tl
    mods["vllm.logger"].init_logger = lambda name: _NullLogger()
    # chunked_prefill_paged_decode asks whether ROCm's own paged attention (a C++ op) takes decode: not on
    # this platform, so its Triton kernel does, as on every GPU but AMD's.
    mods["vllm.platforms.rocm"].use_rocm_custom_paged_attention = lambda *a, **k: False
    mods["vllm.platforms.rocm"].on_rdna = lambda *a, **k: False
    for n, m in mods.items():  # each module an attribute of its parent (import a.b binds a)
        parent, _, leaf = n.rpartition(".")
        if parent in mods:
            setattr(mods[parent], leaf, m)
    if root is not None:
        kv = Path(root) / "vllm/v1/kv_cache_interface.py"
        quant = _int_enum_from(kv, "KVQuantMode") if kv.is_file() else None
        if quant is not None:
            mods["vllm.v1.kv_cache_interface"].KVQuantMode = quant
        for name in TREE_MODULES:
            f = Path(root) / (name.replace(".", "/") + ".py")
            if f.is_file():
                mods[name] = exec_file_with(f, dict(mods, triton=triton, **{"triton.language": tl}), name)
    return mods


def load_module(src, cc, launches, root=None):
    """Execute the kernel file with the stand-ins (root: the tree it belongs to, for the modules of the
    tree it imports): (the module, the stand-in triton.language, the stand-ins for stand_ins())."""
    triton, tl = _triton_stub(launches)
    stubs = dict(vllm_stubs(triton, tl, Platform(cc), root), torch=_torch_stub(), triton=triton)
    stubs["triton.language"] = tl
    try:
        mod = exec_file_with(src, stubs, "ppbk_capture." + Path(src).stem)
    except CaptureError:
        raise
    except ImportError as e:
        raise CaptureError(f"{src} imports {e.name or e}, which ppbench does not stand in for")
    except Exception as e:
        raise CaptureError(f"{src}: loading it failed: {type(e).__name__}: {e}")
    return mod, tl, stubs


# ---------------------------------------------------------------- the prefix-prefill family

PREFIX_PREFILL_FILES = ("vllm/attention/ops/prefix_prefill.py", "vllm/v1/attention/ops/prefix_prefill.py")


def find_prefix_prefill(tree):
    """The family's file in a tree (or the file itself)."""
    p = Path(tree)
    if p.is_file():
        return p.resolve()
    for rel in PREFIX_PREFILL_FILES:
        if (p / rel).is_file():
            return (p / rel).resolve()
    raise CaptureError(f"no {' or '.join(PREFIX_PREFILL_FILES)} under {p}")


def prefill_tensors(s):
    """ppbench's prefill buffers for shape s (prepare.py parse_key's fields) in
    the layouts of kernels/attention_args.h, as the wrapper's arguments."""
    dt = PPB_DTYPES[s["dtype"]]
    b, q, h, kvh, d, page = s["b"], s["q"], s["h"], s["kvh"], s["d"], s["page"]
    mbps = max(1, -(-s["ctx"] // page))  # harness/run/kernel_case.c: blocks of the longest context
    tokens = b * q
    blocks = b * mbps + 1
    i32 = DTYPES["int32"]
    return {
        "q": FakeTensor((tokens, h, d), dt, "q"), "k": FakeTensor((tokens, kvh, d), dt, "k"),
        "v": FakeTensor((tokens, kvh, d), dt, "v"), "o": FakeTensor((tokens, h, d), dt, "out"),
        "k_cache": FakeTensor((blocks, kvh, d // 8, page, 8), dt, "k_cache"),
        "v_cache": FakeTensor((blocks, kvh, d, page), dt, "v_cache"),
        "b_loc": FakeTensor((b, mbps), i32, "block_table"),
        "b_start_loc": FakeTensor((b + 1,), i32, "start_loc"),
        "b_seq_len": FakeTensor((b,), i32, "seq_lens"),
        "b_ctx_len": FakeTensor((b,), i32, "context_lens"),
    }, mbps


def prefix_prefill_kwargs(fn, s, tensors, max_seq_len):
    """context_attention_fwd's arguments by name, as vLLM calls it, for shape
    s and its buffers `tensors` (prefill_tensors' roles; tests/gpu/
    timing_fidelity.py swaps each stand-in for the real tensor of its role).
    A parameter this table does not know is left at its default; one without
    a default is refused, naming it. Returns (kwargs, the names defaulted)."""
    known = dict(tensors)
    known.update(kv_cache_dtype="auto", max_input_len=s["q"], max_seq_len=max_seq_len,
                 sliding_window=s["win"] if s["win"] > 0 else None)
    ones = FakeTensor((1,), DTYPES["float32"], "ones")
    out, defaulted = {}, []
    for name, p in inspect.signature(fn).parameters.items():
        if name in ("k_scale", "v_scale"):
            # 0.6.x: `k_scale: float = 1.0`; later releases: a one-element tensor
            out[name] = ones if p.annotation is FakeTensor or "Tensor" in str(p.annotation) else 1.0
        elif name in known:
            out[name] = known[name]
        elif p.default is not inspect.Parameter.empty:
            defaulted.append(name)
        else:
            raise CaptureError(f"{fn.__name__} has a required parameter '{name}' that ppbench does not know "
                               f"how to fill")
    return out, defaulted


def _one_line(src, fn, *args):
    """fn(*args), with anything unforeseen turned into one CaptureError line
    naming `src`, never a traceback."""
    try:
        return fn(*args)
    except CaptureError:
        raise
    except Exception as e:
        raise CaptureError(f"{src}: {type(e).__name__}: {e}")


def _call_wrapper(src, root, cc, name, kwargs_of):
    """Load the file `src` (tree `root`) with the recording stand-ins and call
    its wrapper `name` with kwargs_of(the function), under the stand-ins (a
    wrapper may import in its body): (the stand-in triton.language, the
    launches it made, at least one). What the stand-ins cannot follow is one
    CaptureError line."""
    launches = []
    mod, tl, stubs = load_module(src, cc, launches, root)
    fn = getattr(mod, name, None)
    if fn is None:
        raise CaptureError(f"{src} defines no {name}")
    kwargs = kwargs_of(fn)
    try:
        with stand_ins(stubs):
            fn(**kwargs)
    except CaptureError:
        raise
    except Exception as e:
        raise CaptureError(f"{src}: {name} failed under ppbench's stand-ins: {type(e).__name__}: {e}")
    if not launches:
        raise CaptureError(f"{name} launched no kernel")
    return tl, launches


def capture_prefix_prefill(src, s, cc):
    """The launch `context_attention_fwd` of the file `src` makes for shape s
    on a device of compute capability cc: a dict (see _record)."""
    tensors, mbps = prefill_tensors(s)

    def once(max_seq_len):
        defaulted = []

        def kwargs_of(fn):
            kwargs, names = prefix_prefill_kwargs(fn, s, tensors, max_seq_len)
            defaulted.extend(names)
            return kwargs
        tl, launches = _call_wrapper(src, None, cc, "context_attention_fwd", kwargs_of)
        if len(launches) != 1:
            raise CaptureError(f"context_attention_fwd launched {len(launches)} kernels; ppbench expects one")
        return _record(tl, launches[0], s, mbps, defaulted)

    # The kernel ABI carries max_blocks_per_seq, not the longest sequence: a
    # launch that would differ between the two is refused rather than guessed.
    r1 = _one_line(src, once, s["ctx"] + s["q"])
    r2 = _one_line(src, once, r1["max_blocks_per_seq"] * s["page"] + s["q"] + 1)
    if r1["grid"] != r2["grid"] or r1["args"] != r2["args"] or r1["constexprs"] != r2["constexprs"]:
        raise CaptureError("the launch depends on the longest sequence's exact length, which ppbench's kernel "
                           "ABI does not carry")
    return r1


def _plain(v):
    """A constexpr as JSON and pickle take it: an IntEnum member (KVQuantMode) as its int."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return int(v)
    return float(v) if isinstance(v, float) else str(v)


def _record(tl, launch, s, mbps, defaulted, scratch=None):
    """One launch as a dict. scratch: None where the family has no scratch
    buffers (a tensor the wrapper made is refused), else the list the
    wrapper-made tensors are numbered in (the same tensor, the same number
    across the launches of one call)."""
    params = launch.jit.signature.parameters
    grid = launch.grid
    constexprs = {n: v for n, v in launch.bound.items() if _constexpr_annotation(params[n], tl)}
    if callable(grid):
        grid = grid(dict(constexprs, **launch.options))
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3 or \
            not all(isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in grid):
        raise CaptureError(f"the grid of {launch.kernel} is {grid!r}, not 1 to 3 positive integers")
    grid = tuple(grid) + (1,) * (3 - len(grid))
    args = []
    for name, v in launch.bound.items():
        if name in constexprs:
            continue
        if isinstance(v, FakeTensor):
            if v.role is None or (v.role == "scratch" and scratch is None):
                raise CaptureError(f"argument '{name}' of {launch.kernel} is a tensor the wrapper made "
                                   f"({v.dtype}, shape {v.shape}), not one of ppbench's buffers")
            arg = {"name": name, "kind": "ptr", "role": v.role, "dtype": str(v.dtype)}
            if v.role == "scratch":
                if not any(t is v for t in scratch):
                    scratch.append(v)
                arg.update(scratch=next(i for i, t in enumerate(scratch) if t is v),
                           bytes=v.numel() * v.element_size())
            args.append(arg)
        elif v is None:
            args.append({"name": name, "kind": "none"})
        elif isinstance(v, bool):
            args.append({"name": name, "kind": "i32", "value": int(v)})
        elif isinstance(v, int):  # a 64-bit parameter where the kernel annotates it tl.int64 (strides, 0.14 on)
            args.append({"name": name, "kind": "i64" if _int64_annotation(params[name]) else "i32", "value": int(v)})
        elif isinstance(v, float):
            args.append({"name": name, "kind": "fp32", "value": v})
        else:
            raise CaptureError(f"argument '{name}' of {launch.kernel} is a {type(v).__name__}, which ppbench "
                               f"cannot pass")
    return {"kernel": launch.kernel, "file": Path(launch.jit.fn.__code__.co_filename).name,
            "grid": list(grid), "args": args,
            "constexprs": {k: _plain(v) for k, v in constexprs.items()},
            "num_warps": int(launch.options.get("num_warps", 4)),
            "num_stages": int(launch.options.get("num_stages", 3)),
            "options": {k: v for k, v in launch.options.items() if k not in ("num_warps", "num_stages")},
            "wrapper_defaults": defaulted, "max_blocks_per_seq": mbps}


def override_knobs(rec, s):
    """A knob sweep on the tree (block_m, block_n, num_warps and num_stages of
    the case key): the recorded launch with those values in place of the
    wrapper's; num_stages 0 (the key's default, `st` left out) keeps the
    wrapper's own. The grid is the family's (batch, heads, cdiv(max query
    length, BLOCK_M)); a tree whose recorded grid is not that refuses the
    override."""
    c = dict(rec["constexprs"])
    if "BLOCK_M" not in c or "BLOCK_N" not in c:
        raise CaptureError("the kernel has no BLOCK_M / BLOCK_N constexprs to override")
    if c["BLOCK_M"] == c["BLOCK_N"] and s["bm"] != s["bn"]:
        raise CaptureError(f"the wrapper passes one BLOCK ({c['BLOCK_M']}) as BLOCK_M and BLOCK_N, as vLLM 0.6.x "
                           f"does: ppbench cannot override them apart (block_m {s['bm']} != block_n {s['bn']})")
    expect = [s["b"], s["h"], -(-s["q"] // c["BLOCK_M"])]
    if rec["grid"] != expect:
        raise CaptureError(f"the wrapper's grid {rec['grid']} is not (batch, heads, cdiv(q, BLOCK_M)) = {expect}: "
                           f"ppbench cannot override its blocks")
    out = dict(rec, constexprs=dict(c, BLOCK_M=s["bm"], BLOCK_N=s["bn"]), num_warps=s["w"],
               num_stages=s["st"] or rec["num_stages"])
    out["grid"] = [s["b"], s["h"], -(-s["q"] // s["bm"])]
    return out


# ---------------------------------------------------------------- the unified-attention family (decode, prefill)

UNIFIED_FILES = ("vllm/attention/ops/triton_unified_attention.py",
                 "vllm/v1/attention/ops/triton_unified_attention.py")
TRITON_BACKEND_FILE = "vllm/v1/attention/backends/triton_attn.py"


def find_in_tree(tree, files, what):
    """The first of a family's `files` (paths a release keeps it at) in a tree,
    and the tree's root (the file's own imports come from there)."""
    p = Path(tree)
    for rel in files:
        if (p / rel).is_file():
            return (p / rel).resolve(), p.resolve()
    raise CaptureError(f"no {' or '.join(files)} under {p} ({what})")


def find_unified(tree):
    return find_in_tree(tree, UNIFIED_FILES, "vLLM's Triton unified attention, 0.9.2 on")


def decode_tensors(s):
    """ppbench's decode buffers for shape s (a paged_attention case: b, seq, h,
    kvh, d, dtype, page) as the unified wrapper takes them: the cache in the
    FLASH layout (kernels/attention_args.h), one query token per sequence, and
    `query_start` [b + 1] = 0, 1, ..., b, which the plugin provides (the kernel
    ABI's decode has no query offsets: every sequence has one token)."""
    dt, i32 = PPB_DTYPES[s["dtype"]], DTYPES["int32"]
    b, h, kvh, d, page = s["b"], s["h"], s["kvh"], s["d"], s["page"]
    mbps = max(1, -(-s["seq"] // page))  # harness/run/kernel_case.c: blocks of the longest sequence
    blocks = b * mbps + 1
    return {"q": FakeTensor((b, h, d), dt, "q"), "out": FakeTensor((b, h, d), dt, "out"),
            "k": FakeTensor((blocks, page, kvh, d), dt, "k_cache"),
            "v": FakeTensor((blocks, page, kvh, d), dt, "v_cache"),
            "block_table": FakeTensor((b, mbps), i32, "block_table"),
            "seqused_k": FakeTensor((b,), i32, "seq_lens"),
            "cu_seqlens_q": FakeTensor((b + 1,), i32, "query_start")}, mbps


def _backend_constant(root, name):
    """An integer constant of the tree's Triton attention backend (triton_attn.py)."""
    import re
    f = Path(root) / TRITON_BACKEND_FILE
    m = re.search(rf"^{name}\s*=\s*(\d+)", f.read_text(), re.M) if f.is_file() else None
    if not m:
        raise CaptureError(f"no {name} = N in {f}: ppbench cannot tell how the backend splits decode")
    return int(m.group(1))


def _split_softmax_args(root, s):
    """What vLLM's Triton attention backend hands unified_attention for decode
    from 0.14 on (TritonAttentionMetadataBuilder): split-softmax scratch for at
    most seq_threshold_3D = MIN_LAUNCH_GRID_SIZE_2D // kv_heads sequences, in
    NUM_PAR_SOFTMAX_SEGMENTS segments; the wrapper then runs the split (3D)
    kernel and reduce_segments for batches up to that size, the 2D kernel
    above it. Assumed, as at the backend's defaults on cc 9.0: max_num_seqs >=
    the threshold, and a CUDA-graph capture size equal to it (vLLM moves the
    threshold to the nearest one; the default sizes include every power of 2
    up to 512, so a power-of-2 threshold stays)."""
    threshold = max(1, _backend_constant(root, "MIN_LAUNCH_GRID_SIZE_2D") // s["kvh"])
    segments = _backend_constant(root, "NUM_PAR_SOFTMAX_SEGMENTS")
    hdp = 1 << (s["d"] - 1).bit_length()
    f32 = DTYPES["float32"]
    return {"seq_threshold_3D": threshold, "num_par_softmax_segments": segments,
            "softmax_segm_output": FakeTensor((threshold, s["h"], segments, hdp), f32, "scratch"),
            "softmax_segm_max": FakeTensor((threshold, s["h"], segments), f32, "scratch"),
            "softmax_segm_expsum": FakeTensor((threshold, s["h"], segments), f32, "scratch")}


def sequence_lengths(s):
    """A prefill shape's per-sequence (query, context) lengths, exactly as
    harness/core/case.c gives them: `rag` 1 gives sequence i of b
    ceil(len * (b - i) / b) tokens; the first `dec` sequences are decode steps
    of one new token (a mixed batch)."""
    b = s["b"]

    def ragged(n, i):
        return -(-n * (b - i) // b) if s.get("rag", 0) and b > 1 else n
    return [(1 if i < s.get("dec", 0) else max(1, ragged(s["q"], i)), ragged(s["ctx"], i)) for i in range(b)]


def staged_sizes(s):
    """A prefill shape's sizes after vLLM's cache write (kernels/kv_append.h):
    (tokens, ppbench's max_blocks_per_seq, the staged one, the staged cache's
    pages, the longest query, the longest sequence)."""
    lens = sequence_lengths(s)
    page = s["page"]
    mbps = max(1, max(-(-c // page) for _, c in lens))        # harness/core/kernel_view.c
    staged_mbps = max(1, max(-(-(q + c) // page) for q, c in lens))  # kv_append.h
    blocks = sum(-(-c // page) for _, c in lens) + 1 + sum(-(-(q + c) // page) - -(-c // page) for q, c in lens)
    return (sum(q for q, _ in lens), mbps, staged_mbps, blocks, max(q for q, _ in lens),
            max(q + c for q, c in lens))


def unified_prefill_tensors(s):
    """ppbench's prefill buffers for shape s as the unified wrapper takes them
    after vLLM's cache write: the staged cache of kernels/kv_append.h (FLASH
    layout; each sequence's context, then its new tokens), its block table,
    `query_start` = ppbench's start_loc [b + 1] and `seqused_k` = its seq_lens
    (context + new). Returns (tensors, ppbench's max_blocks_per_seq, the staged
    one, the longest query, the longest sequence)."""
    dt, i32 = PPB_DTYPES[s["dtype"]], DTYPES["int32"]
    b, h, kvh, d, page = s["b"], s["h"], s["kvh"], s["d"], s["page"]
    tokens, mbps, staged_mbps, blocks, max_q, max_k = staged_sizes(s)
    return {"q": FakeTensor((tokens, h, d), dt, "q"), "out": FakeTensor((tokens, h, d), dt, "out"),
            "k": FakeTensor((blocks, page, kvh, d), dt, "k_cache"),
            "v": FakeTensor((blocks, page, kvh, d), dt, "v_cache"),
            "block_table": FakeTensor((b, staged_mbps), i32, "block_table"),
            "seqused_k": FakeTensor((b,), i32, "seq_lens"),
            "cu_seqlens_q": FakeTensor((b + 1,), i32, "start_loc")}, mbps, staged_mbps, max_q, max_k


def unified_kwargs(fn, root, s, tensors, max_seqlen_q, max_seqlen_k):
    """unified_attention's arguments by name, as vLLM's Triton attention
    backend calls it (tree `root`), for shape s and its buffers `tensors`
    (decode_tensors' or unified_prefill_tensors' roles; the split-softmax
    scratch and the one-element scales are stand-ins of roles "scratch" and
    "ones"). A required parameter this table does not know is refused, naming it."""
    ones = FakeTensor((1,), DTYPES["float32"], "ones")
    known = dict(tensors, max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, softmax_scale=s["d"] ** -0.5,
                 causal=True, window_size=(s["win"] - 1, 0) if s["win"] > 0 else (-1, -1), softcap=0.0,
                 q_descale=None, k_descale=ones, v_descale=ones)
    if "seq_threshold_3D" in inspect.signature(fn).parameters:
        known.update(_split_softmax_args(root, s))
    return _bind(fn, known)


def _bind(fn, known):
    """fn's arguments by name from `known`; a parameter it does not name is
    left at its default, one without a default is refused, naming it."""
    kwargs = {}
    for name, p in inspect.signature(fn).parameters.items():
        if name in known:
            kwargs[name] = known[name]
        elif p.default is inspect.Parameter.empty:
            raise CaptureError(f"{fn.__name__} has a required parameter '{name}' that ppbench does not know how "
                               f"to fill")
    return kwargs


def _capture_unified(src, root, s, cc, tensors, mbps, max_seqlen_q, max_seqlen_k):
    """The launches `unified_attention` of the file `src` (tree `root`) makes
    for these buffers on a device of compute capability cc, called as vLLM's
    Triton attention backend calls it: {"launches": [one dict per kernel
    launch, in order (see _record)], "max_blocks_per_seq": mbps,
    "scratch_bytes": [bytes of each scratch buffer]}."""
    def once():
        tl, launches = _call_wrapper(src, root, cc, "unified_attention", lambda fn: unified_kwargs(
            fn, root, s, tensors, max_seqlen_q, max_seqlen_k))
        scratch = []
        recs = [_record(tl, x, s, mbps, [], scratch) for x in launches]
        return {"launches": recs, "max_blocks_per_seq": mbps,
                "scratch_bytes": [t.numel() * t.element_size() for t in scratch]}
    return _one_line(src, once)


def capture_unified_decode(src, root, s, cc):
    """unified_attention's launches for the decode shape s (one token per
    sequence): see _capture_unified."""
    tensors, mbps = decode_tensors(s)
    return _capture_unified(src, root, s, cc, tensors, mbps, 1, s["seq"])


def capture_unified_prefill(src, root, s, cc):
    """unified_attention's launches for the prefill shape s (prefill chunks, a
    mixed batch's decode steps among them), reading the staged cache:
    _capture_unified's dict plus "staged_blocks_per_seq" and "num_tokens".
    The kernel ABI carries the longest query, the token count and the longest
    context's pages, not each length: a launch that would differ with the
    longest sequence's exact length is refused rather than guessed."""
    tensors, mbps, staged_mbps, max_q, max_k = unified_prefill_tensors(s)
    return _staged_capture(lambda longest: _capture_unified(src, root, s, cc, tensors, mbps, max_q, longest), s)


def _staged_capture(capture_once, s):
    """A staged family's launches (capture_once(longest sequence) -> dict with
    "launches"), recorded at the shape's longest sequence and at the longest
    its staged pages allow: the kernel ABI carries the longest query, the
    token count and the pages, not each length, so a launch that would differ
    between the two is refused rather than guessed. The dict gains
    "staged_blocks_per_seq" and "num_tokens"."""
    tokens, _, staged_mbps, _, _, max_k = staged_sizes(s)
    rec, again = capture_once(max_k), capture_once(staged_mbps * s["page"])
    if [(x["grid"], x["args"], x["constexprs"]) for x in rec["launches"]] != \
            [(x["grid"], x["args"], x["constexprs"]) for x in again["launches"]]:
        raise CaptureError("the launch depends on the longest sequence's exact length, which ppbench's kernel "
                           "ABI does not carry")
    return dict(rec, staged_blocks_per_seq=staged_mbps, num_tokens=tokens)


# ---------------------------------------------------------------- chunked_prefill_paged_decode (0.8.5 on)

CHUNKED_FILES = ("vllm/attention/ops/chunked_prefill_paged_decode.py",
                 "vllm/v1/attention/ops/chunked_prefill_paged_decode.py")


def find_chunked(tree):
    return find_in_tree(tree, CHUNKED_FILES, "vLLM's chunked_prefill_paged_decode, 0.8.5 on")


def chunked_tensors(s):
    """ppbench's prefill buffers for shape s as chunked_prefill_paged_decode
    takes them after vLLM's cache write: the new tokens' q/k/v as ppbench
    packs them (its prefix-prefill call reads k/v there), the staged cache of
    kernels/kv_append.h in vLLM's paged-attention layout (its decode kernel
    reads each one-token sequence's key from the cache), the staged block
    table, `query_start_loc` = ppbench's start_loc [b + 1], `seq_lens` =
    context + new. Returns (tensors, ppbench's max_blocks_per_seq, the longest
    query)."""
    dt, i32 = PPB_DTYPES[s["dtype"]], DTYPES["int32"]
    b, h, kvh, d, page = s["b"], s["h"], s["kvh"], s["d"], s["page"]
    tokens, mbps, staged_mbps, blocks, max_q, _ = staged_sizes(s)
    return {"query": FakeTensor((tokens, h, d), dt, "q"), "key": FakeTensor((tokens, kvh, d), dt, "k"),
            "value": FakeTensor((tokens, kvh, d), dt, "v"), "output": FakeTensor((tokens, h, d), dt, "out"),
            "key_cache": FakeTensor((blocks, kvh, d // 8, page, 8), dt, "k_cache"),
            "value_cache": FakeTensor((blocks, kvh, d, page), dt, "v_cache"),
            "block_table": FakeTensor((b, staged_mbps), i32, "block_table"),
            "query_start_loc": FakeTensor((b + 1,), i32, "start_loc"),
            "seq_lens": FakeTensor((b,), i32, "seq_lens")}, mbps, max_q


def chunked_kwargs(fn, s, tensors, max_query_len, max_seq_len):
    """chunked_prefill_paged_decode's arguments by name, as vLLM's ROCm
    attention backend calls it (rocm_attn.py, its caller): the scales as
    one-element tensors, the window as its full length (0: none), sm_scale
    given (0.10.2's own default divides by the number of heads)."""
    ones = FakeTensor((1,), DTYPES["float32"], "ones")
    known = dict(tensors, kv_cache_dtype="auto", max_seq_len=max_seq_len, max_query_len=max_query_len,
                 k_scale=ones, v_scale=ones, sliding_window=s["win"] if s["win"] > 0 else None,
                 sm_scale=s["d"] ** -0.5)
    return _bind(fn, known)


def capture_chunked_prefill(src, root, s, cc):
    """The launches chunked_prefill_paged_decode of the file `src` (tree
    `root`) makes for the prefill shape s: the tree's prefix prefill
    (`_fwd_kernel` with SKIP_DECODE, when a query is longer than one token)
    for the prefill chunks, then `kernel_paged_attention_2d` for the one-token
    sequences, both on the staged cache. A dict as capture_unified_prefill's."""
    tensors, mbps, max_q = chunked_tensors(s)

    def once(longest):
        tl, launches = _call_wrapper(src, root, cc, "chunked_prefill_paged_decode",
                                     lambda fn: chunked_kwargs(fn, s, tensors, max_q, longest))
        return {"launches": [_record(tl, x, s, mbps, []) for x in launches], "max_blocks_per_seq": mbps,
                "scratch_bytes": []}
    return _staged_capture(lambda longest: _one_line(src, once, longest), s)
