/* Model profiles (suites/models/NAME.yaml): the attention shapes of a served
 * model and its weights, each figure with its source, so suites and the
 * KV-cache arithmetic use checked numbers rather than the seed's guesses. */
#ifndef PPB_MODEL_H
#define PPB_MODEL_H

#include "ppb_error.h"

typedef struct ppb_model_value {
    long long value;
    char source[256];
    char confidence[32];    /* as in target profiles; "" when the file gives none */
} ppb_model_value;

typedef struct ppb_model {
    char name[64];
    char description[256];
    char path[4096];
    ppb_model_value layers;                /* all decoder layers */
    ppb_model_value full_attention_layers; /* layers with a KV cache (the rest: linear attention) */
    ppb_model_value num_heads;             /* query heads */
    ppb_model_value num_kv_heads;
    ppb_model_value head_dim;
    ppb_model_value params_bytes;          /* weights in fp16/bf16 */
} ppb_model;

/* Parse a profile; errors are "FILE:LINE:COLUMN: field: what". Unknown keys are errors. */
int ppb_model_load(const char *path, ppb_model *m, ppb_err *err);
/* Load suites_dir/models/NAME.yaml; the file's name: must be NAME. */
int ppb_model_load_named(const char *suites_dir, const char *name, ppb_model *m, ppb_err *err);

/* Heads one rank holds at tensor-parallel degree tp: query heads split evenly;
 * KV heads split when tp <= num_kv_heads, else each rank keeps one replicated
 * KV head (vLLM's rule; tp must then be a multiple of num_kv_heads). */
int ppb_model_heads_per_rank(const ppb_model *m, int tp_degree, int *num_heads, int *num_kv_heads,
                             ppb_err *err);

/* KV-cache bytes per token on one rank: 2 (K and V) x full-attention layers x
 * KV heads per rank x head_dim x elem_bytes. Negative PPB_EINPUT when tp does
 * not divide the heads (see ppb_model_heads_per_rank). */
long long ppb_model_kv_bytes_per_token(const ppb_model *m, int tp_degree, int elem_bytes);

#endif
