/* What ptxas -v says about a compiled kernel: its registers and its stack
 * (local memory), the spills in it. Every NVRTC compile passes
 * --ptxas-options=-v (kernels_nvrtc.c), so a machine without a GPU learns what
 * the driver would report as a kernel's local bytes: the compile check
 * (ppb-kernel-compile) refuses a wgmma kernel that spills. Plain C. */
#ifndef PPB_PTXAS_REPORT_H
#define PPB_PTXAS_REPORT_H

typedef struct ppb_ptxas_report {
    int known;                /* the log held both lines below */
    int registers;            /* "Used N registers" */
    long stack_bytes;         /* "N bytes stack frame, ..." */
    long spill_store_bytes;   /* "..., N bytes spill stores, ..." */
    long spill_load_bytes;    /* "..., N bytes spill loads" */
} ppb_ptxas_report;

/* The first kernel's figures in a ptxas -v log (NULL or no such lines: known 0). */
void ppb_ptxas_report_parse(const char *log, ppb_ptxas_report *out);

#endif
