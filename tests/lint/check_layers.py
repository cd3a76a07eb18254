#!/usr/bin/env python3
"""The layering rules of docs/ARCHITECTURE.md, checked on the source tree.

1. kernels/ includes nothing from harness/ (the kernel ABI is the seam).
2. harness/<stage>/ includes only its own and earlier stages:
   core < store < decide < run < publish < cli (harness/tools/ may use any).
   So decide/ (statistics: A/B intervals, verdicts, trends, proposals) uses
   nothing of run/ (the device, sessions, the A/B runner).
3. store_internal.h is included by harness/store/ alone (all SQL lives there).
4. No include circle between modules (a module is a .c/.h pair; its own
   X_internal.h counts as part of it).

Usage: check_layers.py SOURCE_DIR. Exit 0 when every rule holds, else 1 with
one line per breach."""
import os
import re
import sys

STAGES = ["core", "store", "decide", "run", "publish", "cli"]
# Internal headers named after their module's family rather than the module.
INTERNAL_OWNER = {"kernels_internal": "ppb_kernels"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root, top):
    for dirpath, _dirs, files in os.walk(os.path.join(root, top)):
        for name in files:
            if name.endswith((".c", ".h", ".cu", ".cuh")):
                yield os.path.join(dirpath, name)


def module_of(path):
    base = os.path.splitext(os.path.basename(path))[0]
    if base in INTERNAL_OWNER:
        return INTERNAL_OWNER[base]
    return base[: -len("_internal")] if base.endswith("_internal") else base


def stage_of(root, path):
    rel = os.path.relpath(path, os.path.join(root, "harness")).split(os.sep)
    return rel[0] if len(rel) > 1 else None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    harness = {}  # header basename -> its path under harness/
    for p in sources(root, "harness"):
        if p.endswith(".h"):
            harness[os.path.basename(p)] = p
    kernel_headers = {os.path.basename(p) for p in sources(root, "kernels") if p.endswith((".h", ".cuh"))}
    breaches = []
    edges = {}
    for top in ("kernels", "harness"):
        for p in sources(root, top):
            rel = os.path.relpath(p, root)
            with open(p, encoding="utf-8", errors="replace") as f:
                includes = [os.path.basename(i) for i in INCLUDE.findall(f.read())]
            for inc in includes:
                if top == "kernels":
                    if inc in harness and inc not in kernel_headers:
                        breaches.append(f"{rel}: includes {inc} from harness/ (kernels/ is the layer below)")
                    continue
                if inc not in harness:
                    continue
                st, ist = stage_of(root, p), stage_of(root, harness[inc])
                if st in STAGES and ist in STAGES and STAGES.index(ist) > STAGES.index(st):
                    breaches.append(f"{rel}: includes {inc} of stage {ist}, which comes after {st}")
                if inc == "store_internal.h" and st != "store":
                    breaches.append(f"{rel}: includes store_internal.h outside harness/store/")
            mod = module_of(p)
            for inc in includes:
                target = module_of(inc)
                if target != mod:
                    edges.setdefault(mod, set()).add(target)
    # Circles: a depth-first search over the module graph.
    state, stack, circles = {}, [], set()

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                cyc = stack[stack.index(n):]
                circles.add(" -> ".join(cyc + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    breaches += [f"include circle: {c}" for c in sorted(circles)]
    for b in breaches:
        print(b)
    print(f"layers: {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
