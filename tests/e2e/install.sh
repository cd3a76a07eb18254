#!/usr/bin/env bash
# cmake --install: the program, its suites (targets, models, proposals) and docs
# land under the prefix, and the installed program runs an installed suite.
source "$(dirname "$0")/lib.bash"
build=$(dirname "$PPB")
expect_rc 0 cmake --install "$build" --prefix "$WORK/inst"
inst=$WORK/inst
[ -x "$inst/bin/ppbench" ] || fail "no bin/ppbench"
for f in share/ppbench/suites/smoke.yaml share/ppbench/suites/targets/bi-v100.yaml \
         share/ppbench/suites/proposals/seed-prefill-bi-v100.yaml share/doc/ppbench/README.md \
         share/doc/ppbench/KERNEL-ABI.md share/doc/ppbench/ppb_kernel_abi.h share/bash-completion/completions/ppbench; do
  [ -s "$inst/$f" ] || fail "$f was not installed"
done
[ ! -e "$inst/share/doc/ppbench/results" ] || fail "benchmark databases installed with the docs"
expect_rc 0 "$inst/bin/ppbench" run "$inst/share/ppbench/suites/smoke.yaml" --backend cpu --quiet --db "$WORK/i.db" \
  --filter "batch=1,query_len=17,dtype=bf16"
expect_rc 1 "$inst/bin/ppbench" check "$inst/share/ppbench/suites/prefill.yaml" --target bi-v100
grep -q "configs infeasible on bi-v100" "$WORK/out" || fail "installed target profile not found"
echo "install: ok"
