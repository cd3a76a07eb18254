"""kernels/vllm/triton/capture.py on the CPU, without torch or Triton.

1. A synthetic kernel file: the launch is recorded and bound by name (pointer
   roles, integers the wrapper computed, constexprs, a grid function), a knob
   override replaces the wrapper's blocks, and what the stand-ins cannot
   follow is refused in one line naming it.
2. prepare.py's side of a knob sweep: a case key's knobs (num_stages among
   them) into the recorded launch, the variant and its compile key, and the
   generated table plugin.c reads, compiled and read back by C.
3. The prefix_prefill.py of real releases (argv: tree folders, fetched by
   scripts/fetch-vllm.sh --version): each release's own choices, as read from
   its source distribution."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRITON_DIR = REPO / "kernels" / "vllm" / "triton"
sys.path.insert(0, str(TRITON_DIR))
import capture  # noqa: E402
import prepare  # noqa: E402

GOAL = {"b": 1, "q": 8192, "ctx": 90112, "h": 32, "kvh": 4, "d": 128, "dtype": "bf16", "page": 16, "win": 0,
        "bm": 128, "bn": 128, "w": 8, "st": 0}
SMALL = dict(GOAL, b=2, q=100, ctx=300, h=8, kvh=2)

SYNTHETIC = '''
import torch
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton

BLOCK = 128 if current_platform.has_device_capability(80) else 64

@triton.jit
def _fwd_kernel(Q, K_cache, B_Loc, sm_scale, k_scale, stride_qbs, stride_cache_x, num_queries_per_kv: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EXTRA: tl.constexpr = 7):
    pass

def context_attention_fwd(q, k, v, o, kv_cache_dtype, k_cache, v_cache, b_loc, b_start_loc, b_seq_len,
                          max_input_len, k_scale: torch.Tensor, v_scale: torch.Tensor, alibi_slopes=None,
                          sliding_window=None):
    assert q.dtype is torch.bfloat16
    grid = lambda META: (b_seq_len.shape[0], q.shape[1], triton.cdiv(max_input_len, META["BLOCK_M"]))
    _fwd_kernel[grid](q, k_cache, b_loc, 1.0 / (q.shape[-1] ** 0.5), k_scale, q.stride(0), k_cache.stride(4),
                      num_queries_per_kv=q.shape[1] // k.shape[1], BLOCK_M=BLOCK, BLOCK_N=BLOCK // 2,
                      num_warps=4, num_stages=2)
'''


# vLLM's Triton unified attention as 0.10.2 shapes it, in small: a split-softmax kernel and its reduction,
# the scratch made by the wrapper, a tl.int64 stride.
SYNTHETIC_UNIFIED = '''
import torch
from vllm.triton_utils import tl, triton

@triton.jit
def kernel_split(segm_ptr, query_ptr, key_cache_ptr, block_tables_ptr, seq_lens_ptr, query_start_len_ptr, k_scale,
                 scale, stride_k_cache_0: tl.int64, stride_k_cache_1, num_seqs, BLOCK_Q: tl.constexpr,
                 NUM_SEGMENTS_PER_SEQ: tl.constexpr):
    pass

@triton.jit
def reduce_segments(output_ptr, segm_ptr, seq_lens_ptr, num_seqs, NUM_SEGMENTS_PER_SEQ: tl.constexpr):
    pass

def unified_attention(q, k, v, out, cu_seqlens_q, max_seqlen_q, seqused_k, max_seqlen_k, softmax_scale, causal,
                      window_size, block_table, softcap, q_descale, k_descale, v_descale, alibi_slopes=None):
    assert causal and max_seqlen_q == 1
    segs = 16
    segm = torch.empty(q.shape[0], q.shape[1], segs, q.shape[2], dtype=torch.float32, device=q.device)
    kernel_split[(q.shape[0], k.shape[2], segs)](segm, q, k, block_table, seqused_k, cu_seqlens_q, k_descale,
                                                 softmax_scale, k.stride(0), k.stride(1), len(seqused_k),
                                                 BLOCK_Q=2, NUM_SEGMENTS_PER_SEQ=segs, num_warps=2)
    reduce_segments[(q.shape[0], q.shape[1])](out, segm, seqused_k, len(seqused_k), NUM_SEGMENTS_PER_SEQ=segs)
'''
DECODE_SMALL = {"b": 3, "seq": 100, "h": 4, "kvh": 2, "d": 64, "dtype": "bf16", "page": 16, "win": 0}

# chunked_prefill_paged_decode as 0.10.2 shapes it, in small: the prefix prefill of the file beside it (a
# relative import) for the prompt chunks, then a paged-attention kernel over every sequence that returns early
# for those longer than one token; ROCm's own kernel asked about inside the function.
SYNTHETIC_CHUNKED_PREFIX = '''
from vllm.triton_utils import tl, triton

@triton.jit
def _fwd_kernel(Q, K, V, K_cache, V_cache, B_Loc, B_Start_Loc, B_Seqlen, stride_k_cache_bs, stride_k_cache_d,
                stride_b_loc_b, BLOCK_M: tl.constexpr, SKIP_DECODE: tl.constexpr):
    pass

def context_attention_fwd(q, k, v, o, kv_cache_dtype, k_cache, v_cache, b_loc, b_start_loc, b_seq_len, max_seq_len,
                          max_input_len, k_scale, v_scale, alibi_slopes=None, sliding_window=None, sm_scale=None,
                          skip_decode=False):
    _fwd_kernel[(b_seq_len.shape[0], q.shape[1], triton.cdiv(max_input_len, 64))](
        q, k, v, k_cache, v_cache, b_loc, b_start_loc, b_seq_len, k_cache.stride(0), k_cache.stride(2),
        b_loc.stride(0), BLOCK_M=64, SKIP_DECODE=skip_decode, num_warps=4, num_stages=1)
'''
SYNTHETIC_CHUNKED = '''
import torch
from vllm import _custom_ops as ops
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton

from .prefix_prefill import context_attention_fwd

float8_info = torch.finfo(current_platform.fp8_dtype())

@triton.jit
def kernel_paged_attention_2d(output_ptr, query_ptr, key_cache_ptr, block_tables_ptr, seq_lens_ptr, scale,
                              k_scale, block_table_stride: tl.int64, x: tl.constexpr, filter_by_query_len: tl.constexpr,
                              query_start_len_ptr):
    pass

def chunked_prefill_paged_decode(query, key, value, output, kv_cache_dtype, key_cache, value_cache, block_table,
                                 query_start_loc, seq_lens, max_seq_len, max_query_len, k_scale, v_scale,
                                 alibi_slopes=None, sliding_window=None, sm_scale=None):
    if sm_scale is None:
        sm_scale = 1.0 / (query.shape[1] ** 0.5)
    if max_query_len > 1:
        context_attention_fwd(q=query, k=key, v=value, o=output, kv_cache_dtype=kv_cache_dtype, k_cache=key_cache,
                              v_cache=value_cache, b_loc=block_table, b_start_loc=query_start_loc, b_seq_len=seq_lens,
                              max_seq_len=max_seq_len, max_input_len=max_query_len, k_scale=k_scale,
                              v_scale=v_scale, sm_scale=sm_scale, skip_decode=True)
    from vllm.platforms.rocm import use_rocm_custom_paged_attention
    if use_rocm_custom_paged_attention(query.dtype, query.shape[2]):
        ops.paged_attention_rocm(output)
    else:
        kernel_paged_attention_2d[(len(seq_lens), key.shape[1])](
            output_ptr=output, query_ptr=query, key_cache_ptr=key_cache, block_tables_ptr=block_table,
            seq_lens_ptr=seq_lens, scale=sm_scale, k_scale=k_scale, block_table_stride=block_table.stride(0),
            x=key_cache.shape[4], filter_by_query_len=True, query_start_len_ptr=query_start_loc)
'''


def write(tmp, name, text):
    p = Path(tmp) / name
    p.write_text(text)
    return p


def expect_error(src, shape, words):
    try:
        capture.capture_prefix_prefill(src, shape, 90)
    except capture.CaptureError as e:
        assert all(w in str(e) for w in words), f"'{e}' lacks {words}"
        assert "\n" not in str(e), f"not one line: {e!r}"
        return
    raise AssertionError(f"{src}: no error, expected one naming {words}")


def synthetic():
    with tempfile.TemporaryDirectory() as tmp:
        src = write(tmp, "pp.py", SYNTHETIC)
        r = capture.capture_prefix_prefill(src, SMALL, 90)
        args = {a["name"]: a for a in r["args"]}
        assert r["kernel"] == "_fwd_kernel" and r["num_warps"] == 4 and r["num_stages"] == 2, r
        assert r["grid"] == [2, 8, 1], r["grid"]  # cdiv(100, 128)
        assert args["Q"] == {"name": "Q", "kind": "ptr", "role": "q", "dtype": "torch.bfloat16"}, args["Q"]
        assert args["K_cache"]["role"] == "k_cache" and args["B_Loc"]["role"] == "block_table"
        assert args["k_scale"]["role"] == "ones"  # annotated torch.Tensor: a one-element tensor
        assert args["stride_qbs"] == {"name": "stride_qbs", "kind": "i32", "value": 8 * 128}
        assert args["stride_cache_x"]["value"] == 1
        assert abs(args["sm_scale"]["value"] - 128 ** -0.5) < 1e-12
        assert r["constexprs"] == {"num_queries_per_kv": 4, "BLOCK_M": 128, "BLOCK_N": 64, "EXTRA": 7}, r
        assert "alibi_slopes" in r["wrapper_defaults"]
        # The platform decides as on the card: below cc 8.0 the module's BLOCK is 64.
        assert capture.capture_prefix_prefill(src, SMALL, 70)["constexprs"]["BLOCK_M"] == 64
        # A knob sweep puts the case's blocks and warps in place of the wrapper's, grid recomputed.
        o = capture.override_knobs(r, dict(SMALL, bm=64, bn=32, w=2))
        assert o["constexprs"]["BLOCK_M"] == 64 and o["constexprs"]["BLOCK_N"] == 32 and o["num_warps"] == 2
        assert o["grid"] == [2, 8, 2]
        # num_stages 0 (the key's default) keeps the wrapper's 2 stages; any other value replaces them.
        assert o["num_stages"] == 2, o["num_stages"]
        assert capture.override_knobs(r, dict(SMALL, st=1))["num_stages"] == 1
        assert capture.override_knobs(r, dict(SMALL, st=4))["num_stages"] == 4
        assert r["num_stages"] == 2  # the recorded launch itself is left alone

        # What the stand-ins cannot follow is refused, naming it.
        expect_error(write(tmp, "a.py", SYNTHETIC.replace("assert q.dtype", "torch.cuda.synchronize()\n    assert q.dtype")),
                     SMALL, ["torch.cuda"])
        expect_error(write(tmp, "b.py", SYNTHETIC.replace("current_platform.has_device_capability(80)",
                                                          "current_platform.is_navi()")), SMALL, ["current_platform.is_navi"])
        expect_error(write(tmp, "c.py", SYNTHETIC.replace("_fwd_kernel[grid](q,", "_fwd_kernel[grid](torch.empty(4),")),
                     SMALL, ["argument 'Q'", "a tensor the wrapper made"])
        expect_error(write(tmp, "d.py", SYNTHETIC.replace("sliding_window=None):", "sliding_window=None, scales_table=None, mode=None, *, must):")),
                     SMALL, ["required parameter 'must'"])
        expect_error(write(tmp, "e.py", SYNTHETIC.replace("import torch", "import torch\nimport vllm.distributed")),
                     SMALL, ["imports", "vllm.distributed"])
        expect_error(write(tmp, "e2.py", SYNTHETIC.replace("import torch", "import torch\nimport vllm.envs as envs\n"
                                                           "X = envs.VLLM_USE_V2_MODEL_RUNNER")),
                     SMALL, ["vllm.envs.VLLM_USE_V2_MODEL_RUNNER"])
        expect_error(write(tmp, "f.py", SYNTHETIC.replace("def context_attention_fwd", "def other")),
                     SMALL, ["defines no context_attention_fwd"])
        expect_error(write(tmp, "g.py", SYNTHETIC.replace("b_seq_len.shape[0], q.shape[1]", "max_seq_len_x, q.shape[1]")
                           .replace("sliding_window=None):", "sliding_window=None, max_seq_len_x=None):")), SMALL,
                     ["the grid of _fwd_kernel is (None, 8, 1)"])
    print("synthetic: ok")


def synthetic_unified():
    """The decode family on a file shaped like 0.10.2's: both launches in order, the wrapper's scratch one
    numbered buffer shared by them, the query offsets and the FLASH cache by role, a tl.int64 stride as such."""
    with tempfile.TemporaryDirectory() as tmp:
        ops = Path(tmp) / "vllm/attention/ops"
        ops.mkdir(parents=True)
        write(str(ops), "triton_unified_attention.py", SYNTHETIC_UNIFIED)
        src, root = capture.find_unified(tmp)
        r = capture.capture_unified_decode(src, root, DECODE_SMALL, 90)
        split, red = r["launches"]
        assert (split["kernel"], red["kernel"]) == ("kernel_split", "reduce_segments"), r["launches"]
        assert split["grid"] == [3, 2, 16] and red["grid"] == [3, 4, 1] and split["num_warps"] == 2
        assert r["scratch_bytes"] == [3 * 4 * 16 * 64 * 4], r["scratch_bytes"]
        a = {x["name"]: x for x in split["args"]}
        b = {x["name"]: x for x in red["args"]}
        assert a["segm_ptr"]["scratch"] == b["segm_ptr"]["scratch"] == 0, (a["segm_ptr"], b["segm_ptr"])
        assert a["query_start_len_ptr"]["role"] == "query_start" and a["key_cache_ptr"]["role"] == "k_cache"
        assert a["k_scale"]["role"] == "ones" and b["output_ptr"]["role"] == "out"
        assert a["stride_k_cache_0"] == {"name": "stride_k_cache_0", "kind": "i64", "value": 16 * 2 * 64}
        assert a["stride_k_cache_1"] == {"name": "stride_k_cache_1", "kind": "i32", "value": 2 * 64}
        assert abs(a["scale"]["value"] - 64 ** -0.5) < 1e-12
        # prepare.py's side: one variant, a compile key per launch, and the case key parsed as decode
        s = prepare.parse_key("paged_attention b=3 seq=100 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 "
                              "v=1 t=128 p=512 hp=0 path=auto")
        assert s["kernel"] == "decode" and s["seq"] == 100 and s["v"] == 1, s
        v, keys = prepare.decode_variant_of(s, r)
        assert len(keys) == 2 and keys[0][1] != keys[1][1] and v["compile_ids"] == [k[1] for k in keys], keys
        # Prefill through it (prepare.py --prefill-kernel unified): a mixed batch of two decode steps and a
        # 40-token chunk, each with 37 cached tokens. The wrapper gets the staged cache (kv_append.h): its block
        # table as wide as the longest context + new tokens (77 over pages of 16: 5), ppbench's start_loc as the
        # query offsets, seq_lens (context + new) as seqused_k; the query rows are the 42 new tokens.
        prefill_file = write(str(ops), "triton_unified_attention.py",
                             SYNTHETIC_UNIFIED.replace("assert causal and max_seqlen_q == 1", "assert causal"))
        mixed = {"b": 3, "q": 40, "ctx": 37, "dec": 2, "rag": 0, "h": 4, "kvh": 2, "d": 64, "dtype": "bf16",
                 "page": 16, "win": 0}
        assert capture.sequence_lengths(mixed) == [(1, 37), (1, 37), (40, 37)]
        assert capture.sequence_lengths(dict(mixed, dec=0, rag=1)) == [(40, 37), (27, 25), (14, 13)]
        p = capture.capture_unified_prefill(prefill_file, root, mixed, 90)
        assert p["num_tokens"] == 42 and p["max_blocks_per_seq"] == 3 and p["staged_blocks_per_seq"] == 5, p
        a = {x["name"]: x for x in p["launches"][0]["args"]}
        assert a["query_start_len_ptr"]["role"] == "start_loc" and a["seq_lens_ptr"]["role"] == "seq_lens"
        assert a["block_tables_ptr"]["role"] == "block_table" and a["key_cache_ptr"]["role"] == "k_cache"
        assert p["launches"][0]["grid"] == [42, 2, 16], p["launches"][0]["grid"]
        assert a["stride_k_cache_0"]["value"] == 16 * 2 * 64 and p["scratch_bytes"] == [42 * 4 * 16 * 64 * 4], p
        key = ("prefix_prefill b=3 q=40 ctx=37 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 dec=2 bm=16 "
               "bn=32 w=4 path=auto")
        ps = prepare.parse_key(key)
        assert (ps["dec"], ps["rag"]) == (2, 0), ps
        v, keys = prepare.staged_prefill_variant_of(ps, capture.capture_unified_prefill(prefill_file, root, ps, 90))
        assert v["num_tokens"] == 42 and v["staged_blocks_per_seq"] == 5 and keys[0][0]["family"] == "decode", v
        # without a tree (one file) there is no root, and the 0.14+ backend emulation needs one
        try:
            capture.find_unified(src)
            raise AssertionError("a file is not a tree")
        except capture.CaptureError as e:
            assert "no vllm/attention/ops/triton_unified_attention.py" in str(e), e
    print("synthetic unified attention: ok")


def synthetic_chunked():
    """The chunked family on files shaped like 0.10.2's: the sibling prefix prefill loaded through the relative
    import and launched first (SKIP_DECODE), the paged-attention kernel second, both on the staged cache in
    vLLM's paged-attention layout, each launch compiled from the file that defines its kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        ops = Path(tmp) / "vllm/attention/ops"
        ops.mkdir(parents=True)
        write(str(ops), "prefix_prefill.py", SYNTHETIC_CHUNKED_PREFIX)
        write(str(ops), "chunked_prefill_paged_decode.py", SYNTHETIC_CHUNKED)
        src, root = capture.find_chunked(tmp)
        mixed = {"b": 3, "q": 40, "ctx": 37, "dec": 2, "rag": 0, "h": 4, "kvh": 2, "d": 64, "dtype": "bf16",
                 "page": 16, "win": 0}
        p = capture.capture_chunked_prefill(src, root, mixed, 90)
        assert p["num_tokens"] == 42 and p["max_blocks_per_seq"] == 3 and p["staged_blocks_per_seq"] == 5, p
        fwd, paged = p["launches"]
        assert (fwd["kernel"], fwd["file"]) == ("_fwd_kernel", "prefix_prefill.py"), fwd
        assert (paged["kernel"], paged["file"]) == ("kernel_paged_attention_2d", "chunked_prefill_paged_decode.py")
        assert fwd["grid"] == [3, 4, 1] and fwd["constexprs"] == {"BLOCK_M": 64, "SKIP_DECODE": True}, fwd
        assert paged["grid"] == [3, 2, 1] and paged["constexprs"] == {"x": 8, "filter_by_query_len": True}, paged
        a = {x["name"]: x for x in fwd["args"]}
        assert [a[n]["role"] for n in ("Q", "K", "V", "K_cache", "V_cache", "B_Loc", "B_Start_Loc", "B_Seqlen")] == \
            ["q", "k", "v", "k_cache", "v_cache", "block_table", "start_loc", "seq_lens"], a
        # vLLM's paged-attention layout: K [blocks, kvh, d / 8, page, 8]; the staged table's row of 5 pages
        assert (a["stride_k_cache_bs"]["value"], a["stride_k_cache_d"]["value"]) == (2 * 64 * 16, 16 * 8), a
        assert a["stride_b_loc_b"]["value"] == 5
        b = {x["name"]: x for x in paged["args"]}
        assert b["query_start_len_ptr"]["role"] == "start_loc" and b["k_scale"]["role"] == "ones"
        assert b["block_table_stride"] == {"name": "block_table_stride", "kind": "i64", "value": 5}
        assert abs(b["scale"]["value"] - 64 ** -0.5) < 1e-12  # given, as vLLM's backend does: not 1/sqrt(heads)
        v, keys = prepare.staged_prefill_variant_of(prepare.parse_key(
            "prefix_prefill b=3 q=40 ctx=37 ragged=false h=4 kvh=2 d=64 dtype=bf16 page=16 win=0 dec=2 path=auto"), p)
        assert [k[0]["family"] for k in keys] == ["prefill", "chunked"] and v["staged_blocks_per_seq"] == 5, keys
        # Every sequence a decode step: no prefix-prefill launch at all.
        d = capture.capture_chunked_prefill(src, root, dict(mixed, q=1, dec=3), 90)
        assert [x["kernel"] for x in d["launches"]] == ["kernel_paged_attention_2d"], d["launches"]
        # The relative import leaves nothing behind: the stand-ins and the sibling are gone from sys.modules.
        assert not [m for m in sys.modules if m.startswith(("ppbk_capture", "vllm"))], \
            [m for m in sys.modules if m.startswith(("ppbk_capture", "vllm"))]
        # prepare.py finds the prefix prefill beside the chunked file.
        assert prepare.find_sources(tmp)["prefill"][0] == ops.resolve() / "prefix_prefill.py"
    print("synthetic chunked_prefill_paged_decode: ok")


def params_list():
    """prepare.py reads the kernel parameters from ppb_kernel_params.h in its
    order, and refuses a list with an entry it cannot read (the table would
    shift under plugin.c's matching) rather than leave it out."""
    assert [k for k, _ in prepare.KNOBS][:3] == ["bm", "bn", "w"] and dict(prepare.KNOBS)["st"] == 0, prepare.KNOBS
    header = (REPO / "kernels" / "common" / "ppb_kernel_params.h").read_text()
    odd = header.replace('X(ctx, num_warps, NUM_WARPS, "w", 1, 8, 8, 0)', 'X(ctx, num_warps, NUM_WARPS, w, 1, 8, 8, 0)')
    assert odd != header, "the test's entry is no longer in ppb_kernel_params.h"
    real = prepare.REPO
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "kernels" / "common").mkdir(parents=True)
        write(str(Path(tmp) / "kernels" / "common"), "ppb_kernel_params.h", odd)
        prepare.REPO = Path(tmp)
        try:
            prepare.kernel_params()
            raise AssertionError("an unreadable entry was left out")
        except SystemExit as e:
            assert e.code == 1
        finally:
            prepare.REPO = real
    print("parameter list: ok")


def prepared_table():
    """prepare.py on a knob sweep that varies num_stages alone: the key's st=
    reaches the launch, the compile key (another cubin) and the variant's
    knobs, and the generated variants_table.c puts each value in its member
    of plugin.c's ppbk_vt_variant (its initializer is positional)."""
    key = "prefix_prefill b=2 q=100 ctx=300 ragged=false h=8 kvh=2 d=128 dtype=bf16 page=16 win=0 bm=64 bn=64 w=4"
    s0, s3 = prepare.parse_key(key + " path=auto"), prepare.parse_key(key + " st=3 path=auto")
    assert s0["st"] == 0 and s3["st"] == 3, (s0, s3)
    with tempfile.TemporaryDirectory() as tmp:
        src = write(tmp, "pp.py", SYNTHETIC.replace("BLOCK_M=BLOCK, BLOCK_N=BLOCK // 2", "BLOCK_M=BLOCK, BLOCK_N=BLOCK"))
        variants, kernels = [], {}
        for s in (s0, s3):
            launch = capture.override_knobs(capture.capture_prefix_prefill(src, s, 90), s)
            v, ck = prepare.variant_of(s, launch)
            assert v["knobs"]["st"] == s["st"] and ck["num_stages"] == (s["st"] or 2), (v["knobs"], ck)
            variants.append(v)
            (Path(tmp) / f"{v['compile_id']}.cubin").write_bytes(b"not a cubin")
            kernels[v["compile_id"]] = {"name": "_fwd_kernel", "shared": 1024, "num_warps": launch["num_warps"],
                                        "params": [a["name"] for a in launch["args"] if a["kind"] != "none"]}
        assert variants[0]["compile_id"] != variants[1]["compile_id"], "num_stages must compile another kernel"
        info = {"from_wrapper": False, "prefill_kernel": "prefix_prefill", "arch": 90, "warp_size": 32,
                "name": "vllm-triton", "version": "test",
                "source": "test", "prepare_cmd": "prepare.py"}
        prepare.gen_table(Path(tmp), variants, kernels, info)
        # the knobs by name from the ABI config's members, in the list's order, as plugin.c matches them
        main = write(tmp, "main.c", '#include <stdio.h>\n#include "variants.h"\n#include "ppb_kernel_abi.h"\n'
                     "#define VALUE(x, name, ...) (x)->knobs[i++] == cfg.name &&\n"
                     "int main(void) {\n"
                     "    for (int v = 0; v < ppbk_vt_n_variants; v++) {\n"
                     "        const ppbk_vt_variant *x = &ppbk_vt_variants[v];\n"
                     "        ppbk_prefill_config cfg = {.block_m = 64, .block_n = 64, .num_warps = 4, .num_stages = 3};\n"
                     "        int i = 0, st3 = PPBK_PREFILL_PARAMS(VALUE, x) 1;\n"
                     '        printf("%d %d %d %d %d %d %d %u %d\\n", x->knobs[0], x->knobs[1], x->knobs[2], '
                     "x->knobs[3], x->launch_warps, x->launch_stages, x->kernel, x->grid[2], st3);\n"
                     "    }\n    return 0;\n}\n")
        exe = Path(tmp) / "table"
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{TRITON_DIR}", f"-I{REPO / 'kernels'}",
                        str(main),
                        str(Path(tmp) / "variants_table.c"), "-o", str(exe)], check=True)
        rows = [r.split() for r in subprocess.run([str(exe)], check=True, capture_output=True,
                                                      text=True).stdout.splitlines()]
        # bm bn w st (ppb_kernel_params.h's order) | launch warps, launch stages, grid z = cdiv(100, 64), each
        # its own cubin | whether the knobs match a config of bm 64, bn 64, 4 warps, 3 stages member by member
        assert [r[:6] + r[7:] for r in rows] == [["64", "64", "4", "0", "4", "2", "2", "0"],
                                                 ["64", "64", "4", "3", "4", "3", "2", "1"]], rows
        assert rows[0][6] != rows[1][6], rows
    print("prepared table: ok")


# Per release: (BLOCK_M, BLOCK_N, num_warps, num_stages, runtime arguments, B_Ctxlen bound, k_scale kind)
RELEASES = {
    "0.6.3": (128, 128, 8, 1, 39, True, "fp32"),
    "0.10.2": (128, 64, 4, 1, 36, False, "ptr"),
    "0.20.0": (128, 64, 4, 1, 36, False, "ptr"),
    "0.34.0": (128, 64, 4, 1, 36, False, "ptr"),
}


def release(tree):
    version = Path(tree).name.removeprefix("vllm-")
    src = capture.find_prefix_prefill(tree)
    r = capture.capture_prefix_prefill(src, GOAL, 90)
    bm, bn, w, st, nargs, ctxlen, kscale = RELEASES[version]
    c = r["constexprs"]
    got = (c.get("BLOCK_M"), c.get("BLOCK_N"), r["num_warps"], r["num_stages"], len(r["args"]))
    assert got == (bm, bn, w, st, nargs), f"{version}: {got} != {(bm, bn, w, st, nargs)}"
    args = {a["name"]: a for a in r["args"]}
    assert args["Q"]["role"] == "q" and args["Out"]["role"] == "out" and args["B_Loc"]["role"] == "block_table"
    assert args["B_Seqlen"]["role"] == "seq_lens" and args["B_Start_Loc"]["role"] == "start_loc"
    assert ("B_Ctxlen" in args) == ctxlen, f"{version}: B_Ctxlen"
    assert args["k_scale"]["kind"] == kscale, f"{version}: k_scale {args['k_scale']}"
    assert args["stride_b_loc_b"]["value"] == 90112 // 16, args["stride_b_loc_b"]
    assert r["grid"] == [1, 32, 8192 // bm], r["grid"]
    # cc 7.0 (the BI-V100's): releases whose BLOCK follows the platform choose 64.
    low = capture.capture_prefix_prefill(src, GOAL, 70)["constexprs"]["BLOCK_M"]
    assert low == (64 if version == "0.6.3" else 128), f"{version}: BLOCK_M {low} at cc 7.0"
    print(f"{version}: {src.relative_to(tree)}: BLOCK_M {bm}, BLOCK_N {bn}, {w} warps, {nargs} arguments: ok")
    if version in UNIFIED:
        unified(tree, version)


# Decode on the Triton unified attention (0.9.2 on), called as vLLM's Triton backend calls it: per release the
# kernels launched for one sequence (the split softmax: 3D kernel and reduce_segments) and for 64 (2D), the
# 3D kernel's argument count.
UNIFIED = {
    "0.10.2": ("kernel_unified_attention_3d", "kernel_unified_attention_2d", 27),
    "0.20.0": ("kernel_unified_attention", "kernel_unified_attention", 40),
    "0.34.0": ("kernel_unified_attention", "kernel_unified_attention", 43),
}
DECODE_GOAL = {"b": 1, "seq": 32768, "h": 32, "kvh": 4, "d": 128, "dtype": "bf16", "page": 16, "win": 0}


def unified(tree, version):
    split, plain, nargs = UNIFIED[version]
    src, root = capture.find_unified(tree)
    one = capture.capture_unified_decode(src, root, DECODE_GOAL, 90)
    kernels = [x["kernel"] for x in one["launches"]]
    assert kernels == [split, "reduce_segments"], f"{version}: one sequence launches {kernels}"
    first = one["launches"][0]
    assert len(first["args"]) == nargs, f"{version}: {len(first['args'])} arguments"
    assert first["grid"] == [1, 4, 16] and first["constexprs"]["NUM_SEGMENTS_PER_SEQ"] == 16, first["grid"]
    args = {a["name"]: a for a in first["args"]}
    # The FLASH layout's strides, computed by the wrapper from ppbench's stand-in cache [blocks, page, kvh, d].
    strides = [args[n]["value"] if n in args else first["constexprs"][n] for n in
               (f"stride_k_cache_{i}" for i in range(4))]  # the last is a constexpr in the kernel
    assert strides == [16 * 4 * 128, 4 * 128, 128, 1], f"{version}: strides {strides}"
    assert args["key_cache_ptr"]["role"] == "k_cache" and args["query_start_len_ptr"]["role"] == "query_start"
    scratch = [a for x in one["launches"] for a in x["args"] if a.get("role") == "scratch"]
    assert sorted({a["scratch"] for a in scratch}) == [0, 1, 2] and len(one["scratch_bytes"]) == 3, scratch
    many = capture.capture_unified_decode(src, root, dict(DECODE_GOAL, b=64), 90)
    assert [x["kernel"] for x in many["launches"]] == [plain], many["launches"]
    assert many["launches"][0]["grid"] == [64 // 2 + 64, 4, 1] and not many["scratch_bytes"]
    # cc 7.0 (the BI-V100's): the same launches (the wrapper's choices depend on the batch, not the device).
    low = capture.capture_unified_decode(src, root, DECODE_GOAL, 70)
    assert [(x["kernel"], x["grid"], x["num_warps"]) for x in low["launches"]] == \
        [(x["kernel"], x["grid"], x["num_warps"]) for x in one["launches"]], f"{version}: cc 7.0 launches differ"
    # Prefill through it, from the staged cache: the goal shape and the max-num-batched-tokens 8192 mixed batch
    # (64 decode steps and one 8128-token chunk) each run the 2D kernel over cdiv-free query blocks of BLOCK_Q
    # rows (the wrapper's bound: tokens // BLOCK_Q + sequences), reading the new tokens through the block table.
    for shape, tokens in ((GOAL, 8192), (dict(GOAL, b=65, dec=64, q=8128, ctx=4096), 64 + 8128)):
        p = capture.capture_unified_prefill(src, root, shape, 90)
        (launch,) = p["launches"]
        assert launch["kernel"] == plain and p["num_tokens"] == tokens, f"{version}: {launch['kernel']}"
        assert launch["grid"] == [tokens // launch["constexprs"]["BLOCK_Q"] + shape["b"], 4, 1], launch["grid"]
        assert p["staged_blocks_per_seq"] == -(-(shape["ctx"] + shape["q"]) // 16), p["staged_blocks_per_seq"]
        args = {a["name"]: a for a in launch["args"]}
        assert args["query_start_len_ptr"]["role"] == "start_loc" and args["seq_lens_ptr"]["role"] == "seq_lens"
        assert args["block_tables_ptr"]["role"] == "block_table"
    print(f"{version}: {src.relative_to(tree)}: decode b=1 {' + '.join(kernels)}, b=64 {plain}; prefill and a mixed "
          f"batch {plain}: ok")
    chunked(tree, version)


def chunked(tree, version):
    """chunked_prefill_paged_decode (0.8.5 on) as vLLM's ROCm backend calls it: the mixed batch runs the
    release's prefix prefill with SKIP_DECODE over batch x heads x query blocks, then the paged-attention
    kernel over sequences x kv heads, both reading the staged cache in vLLM's paged-attention layout."""
    src, root = capture.find_chunked(tree)
    mixed = dict(GOAL, b=65, dec=64, q=8128, ctx=4096)
    p = capture.capture_chunked_prefill(src, root, mixed, 90)
    fwd, paged = p["launches"]
    assert (fwd["kernel"], paged["kernel"]) == ("_fwd_kernel", "kernel_paged_attention_2d"), p["launches"]
    assert fwd["constexprs"]["SKIP_DECODE"] is True and fwd["grid"] == [65, 32, -(-8128 // 128)], fwd["grid"]
    assert paged["grid"] == [65, 4, 1] and paged["constexprs"]["filter_by_query_len"] is True, paged["grid"]
    a = {x["name"]: x for x in fwd["args"]}
    assert a["K_cache"]["role"] == "k_cache" and a["K"]["role"] == "k" and a["B_Loc"]["role"] == "block_table"
    b = {x["name"]: x for x in paged["args"]}
    assert b["block_table_stride"]["value"] == p["staged_blocks_per_seq"] == (4096 + 8128) // 16, b
    assert b["stride_k_cache_3"]["value"] == 8 and b["stride_k_cache_2"]["value"] == 16 * 8, b  # [.., d/8, page, 8]
    goal = capture.capture_chunked_prefill(src, root, GOAL, 90)
    assert [x["grid"] for x in goal["launches"]] == [[1, 32, 64], [1, 4, 1]], goal["launches"]
    print(f"{version}: {src.relative_to(tree)}: the mixed batch _fwd_kernel grid {fwd['grid']} + "
          f"kernel_paged_attention_2d grid {paged['grid']}: ok")


if __name__ == "__main__":
    synthetic()
    synthetic_unified()
    synthetic_chunked()
    params_list()
    prepared_table()
    for t in sys.argv[1:]:
        release(t)
