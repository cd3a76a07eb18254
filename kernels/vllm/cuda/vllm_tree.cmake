# Which form of vLLM's CUDA paged attention a source tree holds, read from
# its files' content (never from its version string), for CMakeLists.txt.
#
# Forms known (the released source distributions 0.6.3 to 0.22.1; 0.23.0
# dropped the CUDA paged attention):
#   layout 1  csrc/attention/attention_kernels.cu holds the kernels, the torch
#             launchers and the op entry points (0.6.3)
#   layout 2  csrc/attention/attention_kernels.cuh holds the kernels; the
#             launchers are csrc/attention/paged_attention_v1.cu and _v2.cu
#             (0.6.4 to 0.22.1)
#   scales    the kernels' k_scale / v_scale: `const float` (to 0.6.6.post1)
#             or `const float*`, device pointers (0.7.0 on)
# Anything else is refused here, at configure time, naming the file and what
# was looked for. vllm_instances.cu checks the kernels' full parameter lists
# against what the plugin packs at compile time (static_assert).
#
#   ppb_vllm_cuda_detect(TREE WHAT OUT)
# TREE: the tree's absolute path; WHAT: the option that named it, for messages.
# Sets, in the caller's scope: OUT_layout (1 or 2), OUT_scales_by_pointer (0 or
# 1), OUT_quant_utils (layout 1: the fp8 helper header the kernel file includes,
# relative to csrc/), OUT_kernel_file and OUT_form (one line saying what was
# found), OUT_version (PKG-INFO's Version, "" without one), OUT_sha (the
# archive's sha256 from scripts/fetch-vllm.sh's mark, "" without one).

# A regex matching TEXT literally, any run of blanks in TEXT matching any
# whitespace (none included), so line breaks and alignment do not matter.
function(ppb_vllm_literal_regex text out)
  string(REGEX REPLACE "([][.*+?^$()|\\\\])" "\\\\\\1" rx "${text}")
  string(REGEX REPLACE "[ ]+" "[ \t\r\n]*" rx "${rx}")
  set(${out} "${rx}" PARENT_SCOPE)
endfunction()

function(ppb_vllm_cuda_detect tree what out)
  set(att "${tree}/csrc/attention")
  set(where "${what}=${tree}")

  # The kernel file: the first of these that defines the v1 kernel.
  ppb_vllm_literal_regex("__global__ void paged_attention_v1_kernel(" v1_rx)
  set(kernel_file "")
  set(looked "")
  foreach(candidate IN ITEMS attention_kernels.cu attention_kernels.cuh)
    if(EXISTS "${att}/${candidate}")
      file(READ "${att}/${candidate}" text)
      if(text MATCHES "${v1_rx}")
        set(kernel_file "${candidate}")
        set(kernel_text "${text}")
        break()
      endif()
      string(APPEND looked "; csrc/attention/${candidate} is there but defines no paged_attention_v1_kernel")
    endif()
  endforeach()
  if(NOT kernel_file)
    message(FATAL_ERROR "${where}: no CUDA paged attention this plugin knows: looked for "
            "csrc/attention/attention_kernels.cu (kernels and launchers in one file, as in vLLM 0.6.3) and "
            "csrc/attention/attention_kernels.cuh (the kernels, with paged_attention_v1.cu / paged_attention_v2.cu, "
            "as in 0.6.4 to 0.22.1), each defining `__global__ void paged_attention_v1_kernel(`${looked}")
  endif()
  set(kf "csrc/attention/${kernel_file}")

  # The other kernels, and what vllm_instances.cu instantiates them with.
  foreach(kernel IN ITEMS paged_attention_v2_kernel paged_attention_v2_reduce_kernel)
    ppb_vllm_literal_regex("__global__ void ${kernel}(" rx)
    if(NOT kernel_text MATCHES "${rx}")
      message(FATAL_ERROR "${where}: ${kf} defines paged_attention_v1_kernel but not ${kernel}")
    endif()
  endforeach()
  foreach(param IN ITEMS "vllm::Fp8KVCacheDataType KV_DTYPE" "bool IS_BLOCK_SPARSE")
    ppb_vllm_literal_regex("${param}" rx)
    if(NOT kernel_text MATCHES "${rx}")
      message(FATAL_ERROR "${where}: ${kf}: no template parameter `${param}`; the plugin instantiates the kernels "
              "as <T, CACHE_T, HEAD_SIZE, BLOCK_SIZE, NUM_THREADS, KV_DTYPE, IS_BLOCK_SPARSE[, PARTITION_SIZE]>")
    endif()
  endforeach()

  # The v1 kernel's parameter list (from its name to the body's brace).
  string(FIND "${kernel_text}" "paged_attention_v1_kernel(" at)
  string(SUBSTRING "${kernel_text}" ${at} -1 sig)
  string(FIND "${sig}" "{" brace)
  string(SUBSTRING "${sig}" 0 ${brace} sig)
  ppb_vllm_literal_regex("const float* k_scale, const float* v_scale" ptr_rx)
  ppb_vllm_literal_regex("const float k_scale, const float v_scale" val_rx)
  if(sig MATCHES "${ptr_rx}")
    set(by_pointer 1)
    set(scales "k_scale/v_scale by pointer")
  elseif(sig MATCHES "${val_rx}")
    set(by_pointer 0)
    set(scales "k_scale/v_scale by value")
  else()
    message(FATAL_ERROR "${where}: ${kf}: paged_attention_v1_kernel's parameters have neither "
            "`const float k_scale, const float v_scale` (to 0.6.6.post1) nor "
            "`const float* k_scale, const float* v_scale` (0.7.0 on)")
  endif()
  ppb_vllm_literal_regex("const int blocksparse_head_sliding_step" rx)
  if(NOT sig MATCHES "${rx}")
    message(FATAL_ERROR "${where}: ${kf}: paged_attention_v1_kernel's parameters do not end with the block-sparse "
            "ones (`const int blocksparse_head_sliding_step`), which the plugin passes")
  endif()

  # The launchers: the lines whose arithmetic the plugin's launches repeat.
  set(quant "")
  if(kernel_file STREQUAL "attention_kernels.cu")
    set(layout 1)
    set(v1_file "${kernel_file}")
    set(v2_file "${kernel_file}")
    set(form "${kf} (kernels and launchers in one file), ${scales}")
    # vllm_instances.cu includes the fp8 helpers first, to empty their dispatch
    # macro before the op entry points in the same file use it.
    if(NOT kernel_text MATCHES "#[ \t]*include[ \t]*\"\\.\\./(quantization/[^\"]*nvidia/quant_utils\\.cuh)\"")
      message(FATAL_ERROR "${where}: ${kf} includes no ../quantization/.../nvidia/quant_utils.cuh, the fp8 helpers "
              "whose DISPATCH_BY_KV_CACHE_DTYPE the plugin empties")
    endif()
    set(quant "${CMAKE_MATCH_1}")
    foreach(entry IN ITEMS "DISPATCH_BY_KV_CACHE_DTYPE(" "void paged_attention_v1(" "void paged_attention_v2(")
      ppb_vllm_literal_regex("${entry}" rx)
      if(NOT kernel_text MATCHES "${rx}")
        message(FATAL_ERROR "${where}: ${kf}: no `${entry}`, the op entry point the plugin compiles out")
      endif()
    endforeach()
  else()
    set(layout 2)
    set(v1_file paged_attention_v1.cu)
    set(v2_file paged_attention_v2.cu)
    foreach(f IN ITEMS ${v1_file} ${v2_file})
      if(NOT EXISTS "${att}/${f}")
        message(FATAL_ERROR "${where}: ${kf} holds the kernels, but csrc/attention/${f}, their launcher, is not there")
      endif()
    endforeach()
    set(form "${kf} (kernels; launchers in paged_attention_v1.cu, paged_attention_v2.cu), ${scales}")
  endif()
  set(v1_lines "paged_attention_v1_launcher(" "int NUM_THREADS = 128"
      "DIVIDE_ROUND_UP(max_seq_len, BLOCK_SIZE) * BLOCK_SIZE" "(NUM_WARPS / 2) * head_size * sizeof(float)"
      "std::max(logits_size, outputs_size)" "dim3 grid(num_heads, num_seqs, 1)")
  set(v2_lines "paged_attention_v2_launcher(" "int NUM_THREADS = 128"
      "DIVIDE_ROUND_UP(max_seq_len, PARTITION_SIZE)" "int logits_size = PARTITION_SIZE * sizeof(float)"
      "(NUM_WARPS / 2) * head_size * sizeof(float)" "dim3 grid(num_heads, num_seqs, max_num_partitions)"
      "dim3 reduce_grid(num_heads, num_seqs)" "2 * max_num_partitions * sizeof(float)")
  foreach(v IN ITEMS v1 v2)
    file(READ "${att}/${${v}_file}" text)
    foreach(line IN LISTS ${v}_lines)
      ppb_vllm_literal_regex("${line}" rx)
      if(NOT text MATCHES "${rx}")
        message(FATAL_ERROR "${where}: csrc/attention/${${v}_file}: no `${line}` in the ${v} launcher; the "
                "plugin's launches repeat that line (vllm_cuda_plugin.c), so it cannot build this tree")
      endif()
    endforeach()
  endforeach()

  set(version "")
  if(EXISTS "${tree}/PKG-INFO")
    file(STRINGS "${tree}/PKG-INFO" version_line REGEX "^Version: " LIMIT_COUNT 1)
    string(REGEX REPLACE "^Version: *" "" version "${version_line}")
    string(STRIP "${version}" version)
  endif()
  set(sha "")
  if(EXISTS "${tree}/.ppb-archive.sha256")
    file(STRINGS "${tree}/.ppb-archive.sha256" sha_line LIMIT_COUNT 1)
    string(REGEX MATCH "^[0-9a-f]+" sha "${sha_line}")
  endif()

  set(${out}_layout ${layout} PARENT_SCOPE)
  set(${out}_scales_by_pointer ${by_pointer} PARENT_SCOPE)
  set(${out}_quant_utils "${quant}" PARENT_SCOPE)
  set(${out}_kernel_file "${kf}" PARENT_SCOPE)
  set(${out}_form "${form}" PARENT_SCOPE)
  set(${out}_version "${version}" PARENT_SCOPE)
  set(${out}_sha "${sha}" PARENT_SCOPE)
endfunction()
