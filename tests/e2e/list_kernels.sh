#!/usr/bin/env bash
# ppbench list-kernels: the built-in kernel instantiations the suites need on a
# device, in the format the ahead-of-time build reads (ci/build-bi-v100.sh).
source "$(dirname "$0")/lib.bash"
nightly=("$SRC/suites/nightly.yaml" "$SRC/suites/nightly-decode.yaml")
spec='^(prefill dtype=(fp16|bf16) head_dim=[0-9]+ block_m=[0-9]+ block_n=[0-9]+ num_warps=[0-9]+ mma=[01]|decode dtype=(fp16|bf16) head_dim=[0-9]+ page_size=[0-9]+ num_threads=[0-9]+ partition_size=[0-9]+ mma=[01]|decode_reduce dtype=(fp16|bf16) head_dim=[0-9]+ num_threads=[0-9]+ partition_size=[0-9]+|input_fill dtype=(fp16|bf16))$'

# The BI-V100 (compute capability 7.0 from its profile): spec lines only, the portable path only.
expect_rc 0 "$PPB" list-kernels "${nightly[@]}" --target bi-v100
cp "$WORK/out" "$WORK/bi-v100.txt"
n=$(wc -l <"$WORK/bi-v100.txt")
[ "$n" -gt 0 ] || fail "no kernels listed for the BI-V100"
grep -Evq "$spec" "$WORK/bi-v100.txt" && { grep -Ev "$spec" "$WORK/bi-v100.txt"; fail "a line is not a kernel spec"; }
grep -q "mma=1" "$WORK/bi-v100.txt" && fail "tensor-core instantiations listed for compute capability 7.0"
grep -q "^ppbench list-kernels: $n instantiations for compute capability 7.0, warp 64" "$WORK/err" || { cat "$WORK/err"; fail "summary"; }
[ "$(sort -u "$WORK/bi-v100.txt" | wc -l)" -eq "$n" ] || fail "duplicate lines"

# An sm_90 device takes the tensor-core paths (wgmma for the 128-row, 8-warp tiles); an
# ahead-of-time build has no wgmma, so --aot lists mma.sync there; the build's own reader
# accepts the list.
expect_rc 0 "$PPB" list-kernels "$SRC/suites/prefill.yaml" --arch 90
grep -q "mma=1" "$WORK/out" || fail "no tensor-core instantiation at sm_90"
grep -q "block_m=128 block_n=128 num_warps=8 mma=2" "$WORK/out" || fail "no wgmma instantiation at sm_90"
expect_rc 0 "$PPB" list-kernels "$SRC/suites/prefill.yaml" --arch 90 --aot
grep -q "mma=2" "$WORK/out" && fail "--aot lists a wgmma instantiation"
grep -q "block_m=128 block_n=128 num_warps=8 mma=1" "$WORK/out" || fail "--aot: no mma.sync 128/128/8"
compile=$(dirname "$PPB")/ppb-kernel-compile
if [ -x "$compile" ]; then
  expect_rc 0 "$compile" --list "$WORK/bi-v100.txt" --arch 70 --print
  [ "$(grep -Ec "$spec" "$WORK/out")" -eq "$n" ] || { cat "$WORK/out"; fail "ppb-kernel-compile does not read the list back"; }
fi

# Misuse: no device, an unknown target.
expect_rc 2 "$PPB" list-kernels "${nightly[@]}"
expect_rc 3 "$PPB" list-kernels "${nightly[@]}" --target no-such-card
grep -q "no-such-card" "$WORK/err" || fail "unknown target not named"
echo "list_kernels: ok ($n instantiations for the BI-V100)"
