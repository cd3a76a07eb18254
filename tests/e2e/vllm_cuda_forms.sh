#!/usr/bin/env bash
# The vllm-cuda build reads a vLLM tree's form from its files, not its version
# (kernels/vllm/cuda/vllm_tree.cmake): the plugin project is configured on its
# own for fixture trees of each form (tests/data/vllm-cuda: only the lines the
# detection looks for, no vLLM code), and each must be told apart; trees in no
# known form are refused at configure time with a message naming the file and
# what was looked for. Configuring enables CUDA: skipped (77) without nvcc.
source "$(dirname "$0")/lib.bash"
command -v nvcc >/dev/null 2>&1 || { echo "SKIP: nvcc is not installed (configuring the plugin enables CUDA)"; exit 77; }
command -v cmake >/dev/null 2>&1 || { echo "SKIP: cmake is not installed"; exit 77; }
FIX=$SRC/tests/data/vllm-cuda
PLUGIN=$SRC/kernels/vllm/cuda
# configure BUILD ARGS...: the plugin project alone, Makefiles (their flags.make files are read below).
configure() { local b=$1; shift; cmake -S "$PLUGIN" -B "$b" -G "Unix Makefiles" -DCMAKE_CUDA_ARCHITECTURES=90 "$@"; }
# The output on one line, CMake's wrapping undone, so a message can be matched whole.
flat() { tr '\n' ' ' <"$1" | tr -s ' '; }
says() { flat "$WORK/$1" | grep -qF -- "$2" || { cat "$WORK/$1"; fail "$3: no '$2'"; }; }
# flags TARGET: the compile definitions of one instance object of TARGET.
flags() { cat "$WORK/b/CMakeFiles/${1}_fp16_64.dir/flags.make"; }

# (a) one configure, every form: the 0.6.3 tree as the default vllm-cuda and
# as vllm-cuda@0.6.3, beside the two split forms.
expect_rc 0 configure "$WORK/b" -DPPB_VLLM_SOURCE="$FIX/one-file" \
  "-DPPB_VLLM_CUDA_TREES=$FIX/one-file;$FIX/split-by-value;$FIX/split-by-pointer"
one="csrc/attention/attention_kernels.cu (kernels and launchers in one file)"
split="csrc/attention/attention_kernels.cuh (kernels; launchers in paged_attention_v1.cu, paged_attention_v2.cu)"
says out "vllm-cuda plugin: vllm-cuda: $FIX/one-file: $one, k_scale/v_scale by value -> plugins/libppbk_vllm_cuda.so" "default"
says out "vllm-cuda plugin: vllm-cuda@0.6.3: $FIX/one-file: $one, k_scale/v_scale by value -> plugins/libppbk_vllm-cuda@0.6.3.so" "one file"
says out "vllm-cuda plugin: vllm-cuda@9.2.0: $FIX/split-by-value: $split, k_scale/v_scale by value -> plugins/libppbk_vllm-cuda@9.2.0.so" "split, by value"
says out "vllm-cuda plugin: vllm-cuda@9.3.0: $FIX/split-by-pointer: $split, k_scale/v_scale by pointer -> plugins/libppbk_vllm-cuda@9.3.0.so" "split, by pointer"
# What each compilation is told (vllm_instances.cu), and each plugin's name and source.
flags ppbk_vllm_cuda | grep -q 'PPB_VLLM_LAYOUT=1 .*PPB_VLLM_QUANT_UTILS=\\"quantization/fp8/nvidia/quant_utils.cuh\\" .*PPB_VLLM_SCALES_BY_POINTER=0' ||
  { flags ppbk_vllm_cuda; fail "default: compile definitions"; }
flags ppbk_vllm_cuda_at_9_2_0 | grep -q 'PPB_VLLM_LAYOUT=2 .*PPB_VLLM_SCALES_BY_POINTER=0' || { flags ppbk_vllm_cuda_at_9_2_0; fail "9.2.0: compile definitions"; }
flags ppbk_vllm_cuda_at_9_3_0 | grep -q 'PPB_VLLM_LAYOUT=2 .*PPB_VLLM_SCALES_BY_POINTER=1' || { flags ppbk_vllm_cuda_at_9_3_0; fail "9.3.0: compile definitions"; }
! flags ppbk_vllm_cuda_at_9_3_0 | grep -q PPB_VLLM_QUANT_UTILS || fail "9.3.0: a quant_utils header for the split form"
plugin_flags() { cat "$WORK/b/CMakeFiles/$1.dir/flags.make"; }
plugin_flags ppbk_vllm_cuda_at_9_3_0 | grep -qF 'PPB_VLLM_IMPL_NAME=\"vllm-cuda@9.3.0\"' || { plugin_flags ppbk_vllm_cuda_at_9_3_0; fail "9.3.0: name"; }
plugin_flags ppbk_vllm_cuda_at_9_3_0 | grep -qF "vLLM 9.3.0 source distribution at $FIX/split-by-pointer, archive sha256 unknown" ||
  { plugin_flags ppbk_vllm_cuda_at_9_3_0; fail "9.3.0: source"; }
plugin_flags ppbk_vllm_cuda | grep -qF 'PPB_VLLM_IMPL_NAME=\"vllm-cuda\"' || fail "default: name"
plugin_flags ppbk_vllm_cuda | grep -qF 'PPB_VLLM_VERSION=\"0.6.3\"' || fail "default: version"

# (b) trees in no known form: refused before anything is built, naming the file and what was looked for.
mk() { rm -rf "$WORK/t/$1"; mkdir -p "$WORK/t"; cp -r "$FIX/$2" "$WORK/t/$1"; }
refused() { # NAME WHAT TEXT: configuring tree t/NAME through option WHAT fails, names it and says TEXT
  expect_rc 1 configure "$WORK/b-$1" "-D$2=$WORK/t/$1"
  says err "$2=$WORK/t/$1" "$1"
  says err "$3" "$1"
}
mk none split-by-pointer
rm "$WORK/t/none/csrc/attention/"*_kernels.cuh
refused none PPB_VLLM_CUDA_TREES "no CUDA paged attention this plugin knows: looked for csrc/attention/attention_kernels.cu"
says err "csrc/attention/attention_kernels.cuh (the kernels, with paged_attention_v1.cu / paged_attention_v2.cu" "none"
mk emptied split-by-pointer
echo '// nothing here' >"$WORK/t/emptied/csrc/attention/attention_kernels.cuh"
refused emptied PPB_VLLM_CUDA_TREES "csrc/attention/attention_kernels.cuh is there but defines no paged_attention_v1_kernel"
mk nolauncher split-by-pointer
rm "$WORK/t/nolauncher/csrc/attention/paged_attention_v1.cu"
refused nolauncher PPB_VLLM_CUDA_TREES "csrc/attention/attention_kernels.cuh holds the kernels, but csrc/attention/paged_attention_v1.cu, their launcher, is not there"
mk kvscale split-by-pointer   # one scale for both caches (as 0.5.x had it)
sed -i 's/const float\* k_scale, const float\* v_scale/const float kv_scale/' "$WORK/t/kvscale/csrc/attention/attention_kernels.cuh"
refused kvscale PPB_VLLM_CUDA_TREES "csrc/attention/attention_kernels.cuh: paged_attention_v1_kernel's parameters have neither \`const float k_scale, const float v_scale\`"
mk nosparse split-by-value
sed -i 's/const int blocksparse_head_sliding_step//' "$WORK/t/nosparse/csrc/attention/attention_kernels.cuh"
refused nosparse PPB_VLLM_CUDA_TREES "csrc/attention/attention_kernels.cuh: paged_attention_v1_kernel's parameters do not end with the block-sparse ones"
mk reduce split-by-pointer
sed -i '/2 \* max_num_partitions/d' "$WORK/t/reduce/csrc/attention/paged_attention_v2.cu"
refused reduce PPB_VLLM_CUDA_TREES "csrc/attention/paged_attention_v2.cu: no \`2 * max_num_partitions * sizeof(float)\` in the v2 launcher"
mk threads one-file
sed -i 's/NUM_THREADS = 128/NUM_THREADS = 256/' "$WORK/t/threads/csrc/attention/attention_kernels.cu"
refused threads PPB_VLLM_SOURCE "csrc/attention/attention_kernels.cu: no \`int NUM_THREADS = 128\` in the v1 launcher"
mk noquant one-file
sed -i '/quant_utils/d' "$WORK/t/noquant/csrc/attention/attention_kernels.cu"
refused noquant PPB_VLLM_SOURCE "csrc/attention/attention_kernels.cu includes no ../quantization/.../nvidia/quant_utils.cuh"
# The name comes from PKG-INFO, and the default is 0.6.3 whatever its form.
mk nopkg split-by-pointer
rm "$WORK/t/nopkg/PKG-INFO"
refused nopkg PPB_VLLM_CUDA_TREES "no PKG-INFO with a Version: line, which names the plugin"
refused nopkg PPB_VLLM_SOURCE "has no PKG-INFO, and its kernels are not in 0.6.3's form"
mk other split-by-pointer
refused other PPB_VLLM_SOURCE "is 'Version: 9.3.0'; the vllm-cuda plugin is 0.6.3 (build other releases as vllm-cuda@VERSION"
expect_rc 1 configure "$WORK/b-twice" "-DPPB_VLLM_CUDA_TREES=$FIX/split-by-pointer;$WORK/t/other"
says err "two trees are version 9.3.0 (the second: $WORK/t/other)" "the same version twice"
# Nothing of a refused tree was generated.
for d in "$WORK"/b-*; do [ ! -e "$d/Makefile" ] || fail "$d: generated for a refused tree"; done
echo "vllm_cuda_forms: ok"
