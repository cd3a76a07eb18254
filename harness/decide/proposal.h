/* A tuning proposal (suites/proposals/NAME.yaml; schema in docs/PROPOSALS.md):
 * what changes (kernel knobs, a kernel path, or a serving option), on which
 * cases, and the rules that decide it. */
#ifndef PPB_PROPOSAL_H
#define PPB_PROPOSAL_H

#include "case.h"
#include "ppb_error.h"
#include "verdict.h"

/* A source_patch proposal's change to a vLLM tree (harness/run/source_tree.h
 * makes and prepares the trees). */
#define PPB_REPLACE_MAX 16
#define PPB_REPLACE_TEXT_MAX 2048

/* One replacement: `old` must occur exactly once in `file` (a path in the
 * tree, or a bare file name that one known kernel file has). */
typedef struct ppb_replace {
    char file[256];
    char old_text[PPB_REPLACE_TEXT_MAX], new_text[PPB_REPLACE_TEXT_MAX];
    int line;                  /* of the entry in the proposal, for messages */
} ppb_replace;

/* A source_patch proposal's trees and change (docs/PROPOSALS.md). */
typedef struct ppb_source_change {
    char proposal[4096];       /* the proposal file, named in messages */
    char vllm[4096];           /* the baseline: a release ("0.6.3") or a tree's path (absolute) */
    char candidate_vllm[4096]; /* "" : the candidate is the baseline tree with the change */
    char patch_path[4096];     /* a unified diff (absolute); "" when none */
    int n_replace;
    ppb_replace replace[PPB_REPLACE_MAX];
    /* Which of the tree's kernels runs a prefill suite on each side (prefill_kernel:,
     * candidate_prefill_kernel:): a ppb_vllm_prefill_kernel. */
    int baseline_prefill_kernel, candidate_prefill_kernel;
} ppb_source_change;

/* The kernels of a vLLM tree a prefill suite can run through, as prepare.py's
 * --prefill-kernel names them (kernels/vllm/triton/README.md): its prefix
 * prefill, its Triton unified attention (the V1 engine's, 0.9.2 on), its
 * chunked_prefill_paged_decode (0.8.5 on). */
typedef enum { PPB_VLLM_PREFIX_PREFILL, PPB_VLLM_UNIFIED, PPB_VLLM_CHUNKED, PPB_VLLM_N_PREFILL_KERNELS } ppb_vllm_prefill_kernel;
extern const char *const ppb_vllm_prefill_kernel_names[PPB_VLLM_N_PREFILL_KERNELS];

/* 1 when `text` reads as a release version (digits and dots, optional .postN). */
int ppb_vllm_is_version(const char *text);

typedef enum {
    PPB_PROPOSAL_KERNEL_CONFIG = 0,   /* baseline vs candidate kernel knobs over a suite's shapes */
    PPB_PROPOSAL_CHUNKED_PREFILL = 1, /* max-num-batched-tokens: a whole prompt in chunks of C tokens */
    PPB_PROPOSAL_KV_CAPACITY = 2,     /* gpu-memory-utilization: KV-cache capacity arithmetic */
    PPB_PROPOSAL_SOURCE_PATCH = 3,    /* a change to a vLLM tree (or an upgrade), its kernels judged as written */
    PPB_PROPOSAL_KINDS
} ppb_proposal_kind;

const char *ppb_proposal_kind_name(int kind);

/* Knobs one side sets; knobs not given take their defaults (a side that
 * gives none runs the suite's own configs). */
typedef struct ppb_side {
    unsigned given;          /* bit f set: field f given */
    int value[PPB_F_COUNT];
    int chunk_tokens;        /* chunked_prefill */
    double gpu_memory_utilization;   /* kv_capacity */
} ppb_side;

/* The seed's own figures, shown next to the checked ones (kv_capacity). */
typedef struct ppb_seed_claims {
    int present;
    double mem_bytes, weights_bytes_per_gpu, kv_bytes_per_token_per_layer;
    int layers;
} ppb_seed_claims;

typedef struct ppb_sampling {
    int samples_per_round;   /* per side, per round */
    int min_rounds, max_rounds;
    double budget_ms;        /* per case pair, measured time of both sides */
    int sessions;            /* separately prepared sessions per side (sequential.h) */
    int max_sessions;        /* the most it may grow to where the sessions' spread dominates (>= sessions) */
    /* 1: once a pair's case settles a REJECT alone (ppb_verdict_case_settles_reject),
     * the pairs not timed by then are checked only (every pair is checked
     * before any is timed): their times cannot change the word. 0: every pair
     * timed to its own end. */
    int stop_when_settled;
} ppb_sampling;

/* The sampling every proposal (and calibrate) starts from. */
void ppb_sampling_default(ppb_sampling *s);

typedef struct ppb_proposal {
    char path[4096];
    char name[128];
    char description[512];
    int kind;
    char suite_path[4096];   /* resolved against the proposal's folder */
    ppb_kernel_kind suite_kernel; /* the suite's kernel (prefix prefill where there is no suite) */
    char filter[512];
    char target[64];
    ppb_side baseline, candidate;
    ppb_verdict_rules rules;
    ppb_sampling sampling;
    /* chunked_prefill: the prompt and the kernel it runs on */
    int prompt_len;
    ppb_case chunk_case;     /* shape and config; query/context lengths set per chunk */
    /* kv_capacity */
    char model[64];
    int tensor_parallel;
    int max_model_len;
    double reserve_bytes;    /* per GPU inside vLLM's budget, neither weights nor KV (activations, graphs) */
    double outside_bytes;    /* per GPU outside the budget (CUDA context, NCCL); < 0 = unknown */
    int max_num_seqs;        /* the deployment's max-num-seqs; 0 = not given */
    ppb_seed_claims seed;
    /* source_patch: the trees and the change; the sides' impl are set once
     * the trees are prepared (ppb_propose_source_patch) */
    ppb_source_change change;
} ppb_proposal;

/* Parse and validate; errors name FILE:LINE:COLUMN and the field. */
int ppb_proposal_load(const char *path, ppb_proposal *p, ppb_err *err);
/* Apply a side's knobs to a case (and re-key it). */
void ppb_side_apply(const ppb_side *side, ppb_case *c);
/* Folder of the proposal file ("suites/proposals"), and of its suites ("suites"). */
void ppb_proposal_suites_dir(const ppb_proposal *p, char *buf, size_t len);

#endif
