/* vLLM trees as ppbench judges them: a source_patch proposal names a tree
 * (the team's own, or a released version) and a change to it (a unified diff,
 * or replacements by content, the seed's own form); this module makes the
 * baseline and the changed tree, and prepares an implementation from each.
 *
 * A judged tree is never the user's tree in place: the kernel files of the
 * families ppbench knows (KNOWN_KERNEL_FILES in source_tree.c) and PKG-INFO
 * are copied into a content-addressed folder of the cache,
 *   ${PPBENCH_TREE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ppbench/trees}/VERSION-HASH/
 * where HASH is FNV-1a 64 of the copied files' paths and contents, so the same
 * content always gets the same folder and implementation name
 * (vllm-triton@VERSION-HASH8), and a changed byte gets another. */
#ifndef PPB_SOURCE_TREE_H
#define PPB_SOURCE_TREE_H

#include <stddef.h>

#include "ppb_error.h"
#include "proposal.h" /* ppb_source_change, ppb_vllm_is_version: what a source_patch proposal asks */

/* The tree `spec` names: a path, checked to hold a kernel file ppbench knows,
 * or a release, fetched once into the cache by scripts/fetch-vllm.sh
 * --version (sha256 checked against the package index). */
int ppb_vllm_tree_locate(const char *spec, char *tree, size_t len, ppb_err *err);

/* A judged tree (made by ppb_vllm_tree_make). */
typedef struct ppb_vllm_tree {
    char path[4096];           /* the cache folder */
    char version[64];          /* PKG-INFO's Version, or "unknown" */
    char label[48];            /* VERSION-HASH8 */
    char changed[512];         /* the kernel files the change touched ("" for an unchanged tree) */
    char not_judged[512];      /* files the change touched that are no kernel ppbench knows */
} ppb_vllm_tree;

/* Copy `tree`'s kernel files into the cache, with `change` applied (NULL: as
 * they are). A change that does not apply is PPB_EINPUT naming the proposal's
 * line and the tree's file (and the hunk, for a diff); one that touches no
 * kernel file ppbench knows is PPB_EINPUT saying so. */
int ppb_vllm_tree_make(const char *tree, const ppb_source_change *change, ppb_vllm_tree *out, ppb_err *err);

/* Prepare the vllm-triton implementation of a judged tree for a suite's
 * cases (kernels/vllm/triton/prepare.py --from-wrapper: each case launched as
 * the tree's own wrapper would), prefill through `prefill_kernel` (a
 * ppb_vllm_prefill_kernel), as the library DIR/libppbk_NAME.so, NAME
 * vllm-triton@LABEL (prefix prefill), vllm-triton-unified@LABEL or
 * vllm-triton-chunked@LABEL; impl_name gets "plugin:NAME". The preparation's
 * output goes to `log_fd`. */
int ppb_vllm_tree_prepare(const ppb_vllm_tree *t, const char *suite_path, int prefill_kernel, const char *plugin_dir,
                          int log_fd, char *impl_name, size_t len, ppb_err *err);

/* The folder prepared libraries go to: the cache's plugins/ folder. */
void ppb_vllm_plugin_dir(char *buf, size_t len);

#endif
