#!/usr/bin/env bash
# tests/gpu/timing_fidelity.py --wrapper on the CPU, up to where it needs the GPU:
# which tree file's wrapper a run's plugin is timed against, read from the run's
# impl.NAME.source row (one file, or chunked_prefill_paged_decode.py with the
# prefix_prefill.py beside it), checked unchanged by the sha256 of the files.
source "$(dirname "$0")/lib.bash"
mkdir -p "$WORK/ops"
echo "# prefix prefill" >"$WORK/ops/prefix_prefill.py"
echo "# chunked" >"$WORK/ops/chunked_prefill_paged_decode.py"
echo "# unified" >"$WORK/ops/triton_unified_attention.py"
"$PY" - "$SRC" "$WORK/ops" <<'PY' || fail "wrapper_source"
import hashlib, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/tests/gpu")
import timing_fidelity as tf
ops = Path(sys.argv[2])
pp, ch, un = ops / "prefix_prefill.py", ops / "chunked_prefill_paged_decode.py", ops / "triton_unified_attention.py"

def res(kernel, *files, sha=None):
    sha = sha or hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
    src = " + ".join(map(str, files)) + f" sha256:{sha}"
    return {"impl": "plugin:vllm-triton-x@1", "kernel": kernel, "env": {"after.impl.vllm-triton-x@1.source": src}}

def refused(r, words):
    try:
        tf.wrapper_source(r)
    except tf.CaseError as e:
        assert all(w in str(e) for w in words), (str(e), words)
        return
    raise AssertionError(f"accepted {r}")

assert tf.wrapper_source(res("prefix_prefill", pp)) == (pp, "prefix_prefill")
assert tf.wrapper_source(res("prefix_prefill", pp, ch)) == (ch, "chunked")       # --prefill-kernel chunked
assert tf.wrapper_source(res("prefix_prefill", un)) == (un, "unified")           # --prefill-kernel unified
assert tf.wrapper_source(res("paged_attention", pp, un)) == (un, "unified")      # a library with both families
refused(res("paged_attention", pp), ["no wrapper for a paged_attention case"])
refused(res("prefix_prefill", pp, ch, sha="0" * 64), ["changed since the run"])
refused(res("prefix_prefill", ops / "gone.py", sha="0" * 64), ["gone.py is not a kernel file"])
refused({"impl": "plugin:x", "kernel": "prefix_prefill", "env": {}}, ["stored no impl.x.source"])
pp.unlink()
refused(res("prefix_prefill", ch, sha="0" * 64) | {"env": {"after.impl.vllm-triton-x@1.source": f"{pp} + {ch} sha256:{'0' * 64}"}},
        ["is not on this machine"])
PY
echo "fidelity_wrapper: ok"
