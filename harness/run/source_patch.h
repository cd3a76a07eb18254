/* A source_patch proposal made into an A/B of two implementations: the
 * baseline tree and the changed one (or the upgrade's tree), each copied into
 * the cache and prepared as vllm-triton@LABEL (source_tree.h); the proposal's
 * sides then name those implementations, and the interleaved A/B of abrun.h
 * judges them like any kernel_config proposal. */
#ifndef PPB_SOURCE_PATCH_H
#define PPB_SOURCE_PATCH_H

#include <stdio.h>

#include "proposal.h"

/* Make and prepare both trees and set p's baseline / candidate impl. What was
 * made is said on `log` (a tree's label, the files the change touched, those
 * it touched that ppbench does not judge). PPB_EINPUT for a change that does
 * not apply; PPB_EFAIL when a tree cannot be fetched or prepared. */
int ppb_source_patch_sides(ppb_proposal *p, FILE *log, ppb_err *err);

#endif
