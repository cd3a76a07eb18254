/* How one kernel launch is shaped: what a kernel's plan function (prefill_plan.h,
 * the decode plan) hands the launcher. Plain C, no CUDA headers. */
#ifndef PPB_LAUNCH_PLAN_H
#define PPB_LAUNCH_PLAN_H

typedef struct ppb_launch_plan {
    unsigned grid[3], block[3];
    unsigned dynamic_smem;   /* bytes; above 48 KB the launcher must opt in (cudaFuncSetAttribute) */
} ppb_launch_plan;

#endif
