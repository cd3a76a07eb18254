#!/usr/bin/env python3
"""The kernel bench builds what ppbench runs.

A prefill kernel change is measured in the kernel bench (tests/gpu/run_prefill_gpu.sh,
built with nvcc) before ppbench runs it (built with NVRTC). The two must compile the
same code: in session 16 they did not (nvcc folded shared-memory address conversions
that NVRTC kept), and a reorder that ran 2.5% faster in the bench spilled and ran
9-11% slower in ppbench (docs/results/h200-2026-12-02-copies-after-gemms.txt). This
check compiles the wgmma kernels both ways, no GPU needed, and compares what ptxas
reports for every wgmma instantiation of suites/prefill.yaml: registers and stack.

Usage: bench_build_matches.py PPB_KERNEL_COMPILE SOURCE_DIR. Exit 0 when every one
matches, 1 with one line per difference, 77 (skipped) without nvcc."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# ppb-kernel-compile: "ok   sm_90 prefill dtype=bf16 head_dim=128 block_m=128 block_n=128
# num_warps=8 mma=2  1.8 s  252 registers, 0 B stack"
NVRTC_LINE = re.compile(r"^ok\s+sm_90 prefill dtype=(\w+) head_dim=(\d+) block_m=(\d+) block_n=(\d+) "
                        r"num_warps=(\d+) mma=2\b.*?(\d+) registers, (\d+) B stack")
# nvcc -Xptxas -v, per entry: its mangled name, then its stack frame and registers.
ENTRY = re.compile(r"Compiling entry function '_Z\d+prefix_prefill_kernelI(13__nv_bfloat16|6__half)"
                   r"Li(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi2E")
STACK = re.compile(r"(\d+) bytes stack frame")
REGS = re.compile(r"Used (\d+) registers")
DTYPE = {"13__nv_bfloat16": "bf16", "6__half": "fp16"}


def nvrtc_report(compile_tool, root):
    out = subprocess.run([compile_tool, "--suite", os.path.join(root, "suites", "prefill.yaml"), "--arch", "90",
                          "--jobs", "2"], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = NVRTC_LINE.match(line)
        if m:
            found[m.groups()[:5]] = (int(m.group(6)), int(m.group(7)))
    return found


def nvcc_report(root):
    with tempfile.TemporaryDirectory() as build:
        env = dict(os.environ, BUILD=build)
        subprocess.run(["bash", os.path.join(root, "tests", "gpu", "run_prefill_gpu.sh"), "wgmma-part"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        log = open(os.path.join(build, "part_wgmma.log")).read()
    found, key, stack = {}, None, None
    for line in log.splitlines():
        m = ENTRY.search(line)
        if m:
            key, stack = (DTYPE[m.group(1)],) + m.groups()[1:], None
            continue
        m = STACK.search(line)
        if m and key:
            stack = int(m.group(1))
        m = REGS.search(line)
        if m and key:
            found[key] = (int(m.group(1)), stack)
            key = None
    return found


def main():
    if len(sys.argv) != 3:
        print("usage: bench_build_matches.py PPB_KERNEL_COMPILE SOURCE_DIR", file=sys.stderr)
        return 2
    if shutil.which("nvcc") is None:
        print("no nvcc: the bench's build cannot be checked here")
        return 77
    nvrtc = nvrtc_report(sys.argv[1], sys.argv[2])
    nvcc = nvcc_report(sys.argv[2])
    if not nvrtc:
        print("no wgmma instantiation found in ppb-kernel-compile's output")
        return 1
    bad = 0
    for key, (regs, stack) in sorted(nvrtc.items()):
        name = "%s D%s %s/%s/%s" % key
        if key not in nvcc:
            print("%s: compiled by ppbench (NVRTC) but not in the bench's wgmma table" % name)
            bad += 1
        elif nvcc[key] != (regs, stack):
            print("%s: NVRTC %d registers, %d B stack; nvcc %d registers, %s B stack" % ((name, regs, stack) + nvcc[key]))
            bad += 1
        else:
            print("%s: %d registers, %d B stack in both" % (name, regs, stack))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
