/* The table prepare.py generates (variants_table.c) and plugin.c reads: the
 * compiled kernels with what the launch needs to know about them. */
#ifndef PPBK_VT_VARIANTS_H
#define PPBK_VT_VARIANTS_H

/* _fwd_kernel has 39 runtime arguments (prepare.py ARGS, plugin.c A_*). */
#define PPBK_VT_NARGS 39
/* A trailing kernel parameter newer Triton adds (global / profile scratch):
 * prepare.py refuses kernels that need scratch memory, so it gets 0. */
#define PPBK_VT_SCRATCH PPBK_VT_NARGS

typedef struct ppbk_vt_kernel {
    const unsigned char *cubin, *cubin_end;
    const char *name;             /* the cubin's kernel symbol */
    int shared;                   /* dynamic shared memory per block, bytes (Triton's metadata.shared) */
    int num_warps;
    int n_params;                 /* parameters of the compiled kernel */
    const unsigned char *params;  /* each one's argument index, or PPBK_VT_SCRATCH; arguments the
                                   * JIT turned into constants (integers equal to 1) are absent */
} ppbk_vt_kernel;

typedef struct ppbk_vt_variant {
    int dtype;                    /* PPB_KDTYPE_* */
    int head_dim, block, num_warps, sliding_window;
    const char *int_classes;      /* per integer argument: '1', 'D' (divisible by 16) or '.' */
    ppbk_vt_kernel k;
} ppbk_vt_variant;

extern const ppbk_vt_variant ppbk_vt_variants[];
extern const int ppbk_vt_n_variants;
extern const int ppbk_vt_target_arch, ppbk_vt_target_warp_size;
extern const char ppbk_vt_version[], ppbk_vt_source[], ppbk_vt_prepare_cmd[];

#endif
