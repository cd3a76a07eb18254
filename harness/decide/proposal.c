#include "proposal.h"

#include <ctype.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sequential.h"
#include "suite.h"
#include "yaml_util.h"

static const char *const kind_names[PPB_PROPOSAL_KINDS] = {"kernel_config", "chunked_prefill", "kv_capacity",
                                                            "source_patch"};

const char *ppb_proposal_kind_name(int kind)
{
    return kind >= 0 && kind < PPB_PROPOSAL_KINDS ? kind_names[kind] : "unknown";
}

void ppb_side_apply(const ppb_side *side, ppb_case *c)
{
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (side->given & (1u << f))
            ppb_case_set(c, f, side->value[f]);
    ppb_case_make_key(c);
}

static void dir_of(const char *path, char *buf, size_t len)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(buf, len, "%s", dirname(tmp));
}

void ppb_proposal_suites_dir(const ppb_proposal *p, char *buf, size_t len)
{
    char dir[4096];
    dir_of(p->path, dir, sizeof dir);
    snprintf(buf, len, "%s/..", dir);
}

/* A mapping of case fields ({block_m: 128, heads: 32/4, ...}) into `c`,
 * recording which were given. `want_config` selects config (1) or shape (0)
 * fields; extra names (chunk_tokens, ...) are handled by the caller. */
static int parse_fields(ppb_yaml *y, yaml_node_t *map, const char *where, int want_config,
                        ppb_kernel_kind kernel, ppb_case *c, unsigned *given,
                        const char *const *extra, ppb_err *err)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return ppb_yaml_fail(y, err, map, where, "expected a mapping of %s fields",
                             want_config ? "config" : "shape");
    const char *key;
    yaml_node_t *v;
    for (int i = 0; ppb_yaml_pair(y, map, i, &key, &v); i++) {
        char field[160];
        snprintf(field, sizeof field, "%s.%s", where, key);
        int is_extra = 0;
        for (int e = 0; extra && extra[e]; e++)
            is_extra |= strcmp(extra[e], key) == 0;
        if (is_extra)
            continue;
        const char *text = ppb_yaml_scalar(v);
        if (!want_config && strcmp(key, "heads") == 0) {
            int h, kv;
            char tail;
            if (!text || sscanf(text, "%d/%d%c", &h, &kv, &tail) != 2 || h <= 0 || kv <= 0)
                return ppb_yaml_fail(y, err, v, field, "expected 'num_heads/num_kv_heads', e.g. 32/4");
            c->shape.num_heads = h;
            c->shape.num_kv_heads = kv;
            *given |= 1u << PPB_F_NUM_HEADS | 1u << PPB_F_NUM_KV_HEADS;
            continue;
        }
        int f = ppb_field_lookup(key);
        const ppb_field_info *fi = f >= 0 ? ppb_field_get(f) : NULL;
        if (!fi || fi->is_config != want_config || !((fi->kernels >> kernel) & 1u))
            return ppb_yaml_fail(y, err, ppb_yaml_pair_key_node(y, map, i), field,
                                 "not a %s field of %s (docs/SUITES.md lists them)",
                                 want_config ? "config" : "shape", ppb_kernel_name(kernel));
        if (!text)
            return ppb_yaml_fail(y, err, v, field, "expected a single value");
        int value;
        ppb_err verr = {{0}};
        if (ppb_field_parse_value(f, text, &value, &verr))
            return ppb_yaml_fail(y, err, v, field, "%s", verr.msg);
        ppb_case_set(c, f, value);
        *given |= 1u << f;
    }
    return PPB_OK;
}

static int parse_rules(ppb_yaml *y, yaml_node_t *n, ppb_verdict_rules *r, ppb_err *err)
{
    static const char *const keys[] = {"min_gain", "max_regression", "require_correct",
                                       "threshold", "alpha", "method", NULL};
    int rc = ppb_yaml_check_keys(y, n, "rules", keys, err);
    yaml_node_t *v;
    if (!rc && (v = ppb_yaml_get(y, n, "min_gain")))
        rc = ppb_yaml_double(y, v, "rules.min_gain", 0, 0.9, &r->min_gain, err);
    if (!rc && (v = ppb_yaml_get(y, n, "max_regression")))
        rc = ppb_yaml_double(y, v, "rules.max_regression", 0, 10, &r->max_regression, err);
    if (!rc && (v = ppb_yaml_get(y, n, "require_correct")))
        rc = ppb_yaml_bool(y, v, "rules.require_correct", &r->require_correct, err);
    if (!rc && (v = ppb_yaml_get(y, n, "threshold")))
        rc = ppb_yaml_double(y, v, "rules.threshold", 0, 0.5, &r->threshold, err);
    if (!rc && (v = ppb_yaml_get(y, n, "alpha")))
        rc = ppb_yaml_double(y, v, "rules.alpha", 1e-6, 0.5, &r->alpha, err);
    if (!rc && (v = ppb_yaml_get(y, n, "method"))) {
        const char *m = ppb_yaml_scalar(v);
        if (m && strcmp(m, "hodges_lehmann") == 0)
            r->method = PPB_METHOD_HODGES_LEHMANN;
        else if (m && strcmp(m, "bootstrap") == 0)
            r->method = PPB_METHOD_BOOTSTRAP;
        else
            rc = ppb_yaml_fail(y, err, v, "rules.method", "expected hodges_lehmann or bootstrap");
    }
    return rc;
}

void ppb_sampling_default(ppb_sampling *s)
{
    *s = (ppb_sampling){.samples_per_round = 5, .min_rounds = 4, .max_rounds = 160, .budget_ms = 20000,
                        .sessions = 3, .max_sessions = PPB_SEQ_MAX_SESSIONS, .stop_when_settled = 1};
}

static int parse_sampling(ppb_yaml *y, yaml_node_t *n, ppb_sampling *s, ppb_err *err)
{
    static const char *const keys[] = {"samples_per_round", "min_rounds", "max_rounds",
                                       "budget_ms", "sessions", "max_sessions", "stop_when_settled", NULL};
    int rc = ppb_yaml_check_keys(y, n, "sampling", keys, err);
    yaml_node_t *v;
    long l;
    if (!rc && (v = ppb_yaml_get(y, n, "samples_per_round")) &&
        !(rc = ppb_yaml_int(y, v, "sampling.samples_per_round", 1, 1000, &l, err)))
        s->samples_per_round = (int)l;
    if (!rc && (v = ppb_yaml_get(y, n, "min_rounds")) &&
        !(rc = ppb_yaml_int(y, v, "sampling.min_rounds", 1, 10000, &l, err)))
        s->min_rounds = (int)l;
    if (!rc && (v = ppb_yaml_get(y, n, "max_rounds")) &&
        !(rc = ppb_yaml_int(y, v, "sampling.max_rounds", 1, 100000, &l, err)))
        s->max_rounds = (int)l;
    if (!rc && (v = ppb_yaml_get(y, n, "sessions")) &&
        !(rc = ppb_yaml_int(y, v, "sampling.sessions", 1, PPB_SEQ_MAX_SESSIONS, &l, err)))
        s->sessions = (int)l;
    /* A proposal that names its sessions keeps them unless it names a maximum too. */
    if (!rc && ppb_yaml_get(y, n, "sessions"))
        s->max_sessions = s->sessions;
    if (!rc && (v = ppb_yaml_get(y, n, "max_sessions")) &&
        !(rc = ppb_yaml_int(y, v, "sampling.max_sessions", 1, PPB_SEQ_MAX_SESSIONS, &l, err)))
        s->max_sessions = (int)l;
    if (!rc && s->max_sessions < s->sessions)
        rc = ppb_yaml_fail(y, err, n, "sampling", "max_sessions %d < sessions %d", s->max_sessions, s->sessions);
    if (!rc && (v = ppb_yaml_get(y, n, "budget_ms")))
        rc = ppb_yaml_double(y, v, "sampling.budget_ms", 1, 3.6e6, &s->budget_ms, err);
    if (!rc && (v = ppb_yaml_get(y, n, "stop_when_settled")))
        rc = ppb_yaml_bool(y, v, "sampling.stop_when_settled", &s->stop_when_settled, err);
    if (!rc && s->min_rounds > s->max_rounds)
        rc = ppb_yaml_fail(y, err, n, "sampling", "min_rounds %d > max_rounds %d", s->min_rounds,
                           s->max_rounds);
    return rc;
}

static int parse_seed_claims(ppb_yaml *y, yaml_node_t *n, ppb_seed_claims *sc, ppb_err *err)
{
    static const char *const keys[] = {"mem_bytes", "weights_bytes_per_gpu",
                                       "kv_bytes_per_token_per_layer", "layers", NULL};
    int rc = ppb_yaml_check_keys(y, n, "seed_claims", keys, err);
    yaml_node_t *v;
    long l;
    sc->present = 1;
    if (!rc && (v = ppb_yaml_get(y, n, "mem_bytes")))
        rc = ppb_yaml_double(y, v, "seed_claims.mem_bytes", 1, 1e15, &sc->mem_bytes, err);
    if (!rc && (v = ppb_yaml_get(y, n, "weights_bytes_per_gpu")))
        rc = ppb_yaml_double(y, v, "seed_claims.weights_bytes_per_gpu", 0, 1e15,
                             &sc->weights_bytes_per_gpu, err);
    if (!rc && (v = ppb_yaml_get(y, n, "kv_bytes_per_token_per_layer")))
        rc = ppb_yaml_double(y, v, "seed_claims.kv_bytes_per_token_per_layer", 1, 1e9,
                             &sc->kv_bytes_per_token_per_layer, err);
    if (!rc && (v = ppb_yaml_get(y, n, "layers")) &&
        !(rc = ppb_yaml_int(y, v, "seed_claims.layers", 1, 10000, &l, err)))
        sc->layers = (int)l;
    return rc;
}

/* A side that is one required key (chunk_tokens, gpu_memory_utilization): its
 * value node in *v and its field name ("baseline.KEY") in `field`. */
static int side_value(ppb_yaml *y, yaml_node_t *n, const char *name, const char *key, char *field, size_t len,
                      yaml_node_t **v, ppb_err *err)
{
    const char *const keys[] = {key, NULL};
    int rc = ppb_yaml_check_keys(y, n, name, keys, err);
    *v = rc ? NULL : ppb_yaml_get(y, n, key);
    snprintf(field, len, "%s.%s", name, key);
    if (!rc && !*v)
        rc = ppb_yaml_fail(y, err, n, field, "required");
    return rc;
}

/* baseline:/candidate: of each kind. */
static int parse_side(ppb_yaml *y, yaml_node_t *n, const char *name, ppb_proposal *p,
                      ppb_side *side, ppb_err *err)
{
    if (!n)
        return ppb_yaml_fail(y, err, ppb_yaml_root(y), name, "required");
    memset(side, 0, sizeof *side);
    if (p->kind == PPB_PROPOSAL_KERNEL_CONFIG) {
        ppb_case scratch;
        ppb_case_init(&scratch, p->chunk_case.kernel);
        int rc = parse_fields(y, n, name, 1, p->chunk_case.kernel, &scratch, &side->given, NULL,
                              err);
        for (int f = 0; f < PPB_F_COUNT; f++)
            side->value[f] = ppb_case_get(&scratch, f);
        if (!rc && !side->given)
            rc = ppb_yaml_fail(y, err, n, name, "names no knob");
        return rc;
    }
    char field[64];
    long l;
    if (p->kind == PPB_PROPOSAL_CHUNKED_PREFILL) {
        yaml_node_t *v = NULL;
        int rc = side_value(y, n, name, "chunk_tokens", field, sizeof field, &v, err);
        if (!rc && !(rc = ppb_yaml_int(y, v, field, 16, 262144, &l, err)))
            side->chunk_tokens = (int)l;
        return rc;
    }
    yaml_node_t *v = NULL;
    int rc = side_value(y, n, name, "gpu_memory_utilization", field, sizeof field, &v, err);
    if (!rc)
        rc = ppb_yaml_double(y, v, field, 0.01, 1.0, &side->gpu_memory_utilization, err);
    return rc;
}

static int load_string(ppb_yaml *y, yaml_node_t *root, const char *key, char *buf, size_t len,
                       int required, ppb_err *err)
{
    yaml_node_t *v = ppb_yaml_get(y, root, key);
    if (!v)
        return required ? ppb_yaml_fail(y, err, root, key, "required") : PPB_OK;
    return ppb_yaml_string(y, v, key, buf, len, err);
}

/* Top-level keys of one kind only: given to another kind they would be
 * silently ignored, so they are an error at the key naming the kinds. */
static const struct {
    const char *key;
    unsigned kinds; /* bit set of 1 << PPB_PROPOSAL_* */
} kind_keys[] = {
    {"suite", 11u}, {"filter", 9u}, {"kernel", 3u}, {"rules", 11u}, {"sampling", 11u},
    {"baseline", 7u}, {"candidate", 7u}, {"vllm", 8u}, {"candidate_vllm", 8u}, {"patch", 8u}, {"replace", 8u},
    {"prefill_kernel", 8u}, {"candidate_prefill_kernel", 8u},
    {"prompt_len", 2u}, {"shape", 2u}, {"config", 2u}, {"model", 4u}, {"tensor_parallel", 4u},
    {"max_model_len", 4u}, {"reserve_bytes", 4u}, {"outside_bytes", 4u}, {"max_num_seqs", 4u},
    {"seed_claims", 4u},
};

static int check_kind_keys(ppb_yaml *y, yaml_node_t *root, int kind, ppb_err *err)
{
    const char *key;
    yaml_node_t *value;
    for (int i = 0; ppb_yaml_pair(y, root, i, &key, &value); i++)
        for (size_t k = 0; k < sizeof kind_keys / sizeof *kind_keys; k++) {
            if (strcmp(key, kind_keys[k].key) != 0 || (kind_keys[k].kinds >> kind) & 1u)
                continue;
            char kinds[64] = "";
            for (int j = 0; j < PPB_PROPOSAL_KINDS; j++)
                if ((kind_keys[k].kinds >> j) & 1u)
                    snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", kinds[0] ? " and " : "",
                             kind_names[j]);
            return ppb_yaml_fail(y, err, ppb_yaml_pair_key_node(y, root, i), key,
                                 "applies to %s proposals only, and this one is %s", kinds, kind_names[kind]);
        }
    return PPB_OK;
}

/* vllm:, candidate_vllm: a release or a tree's path (against the proposal's
 * folder). */
static int parse_tree_spec(ppb_yaml *y, yaml_node_t *root, const char *key, const char *dir, char *out, size_t len,
                           int required, ppb_err *err)
{
    char text[4096] = "";
    int rc = load_string(y, root, key, text, sizeof text, required, err);
    if (rc || !text[0])
        return rc;
    if (ppb_vllm_is_version(text) || text[0] == '/')
        snprintf(out, len, "%s", text);
    else
        snprintf(out, len, "%s/%s", dir, text);
    return PPB_OK;
}

/* replace: a list of {file, old, new}: the seed's PATCHES form, applied by content. */
static int parse_replace(ppb_yaml *y, yaml_node_t *list, ppb_source_change *c, ppb_err *err)
{
    static const char *const keys[] = {"file", "old", "new", NULL};
    int n = list->type == YAML_SEQUENCE_NODE ? ppb_yaml_seq_len(list) : -1;
    if (n < 1 || n > PPB_REPLACE_MAX)
        return ppb_yaml_fail(y, err, list, "replace", "expected a list of 1 to %d {file, old, new} entries",
                             PPB_REPLACE_MAX);
    for (int i = 0; i < n; i++) {
        yaml_node_t *e = ppb_yaml_seq_item(y, list, i);
        ppb_replace *r = &c->replace[i];
        char field[64];
        snprintf(field, sizeof field, "replace[%d]", i);
        int rc = e && e->type == YAML_MAPPING_NODE ? ppb_yaml_check_keys(y, e, field, keys, err)
                                                   : ppb_yaml_fail(y, err, e ? e : list, field, "expected a mapping");
        const struct {
            const char *key;
            char *buf;
            size_t len;
        } parts[] = {{"file", r->file, sizeof r->file},
                     {"old", r->old_text, sizeof r->old_text},
                     {"new", r->new_text, sizeof r->new_text}};
        for (int k = 0; k < 3 && !rc; k++) {
            snprintf(field, sizeof field, "replace[%d].%s", i, parts[k].key);
            yaml_node_t *v = ppb_yaml_get(y, e, parts[k].key);
            rc = v ? ppb_yaml_string(y, v, field, parts[k].buf, parts[k].len, err)
                   : ppb_yaml_fail(y, err, e, field, "required");
        }
        if (!rc && !r->old_text[0])
            rc = ppb_yaml_fail(y, err, ppb_yaml_get(y, e, "old"), field, "empty: the text to replace");
        if (rc)
            return rc;
        r->line = (int)e->start_mark.line + 1;
    }
    c->n_replace = n;
    return PPB_OK;
}

const char *const ppb_vllm_prefill_kernel_names[PPB_VLLM_N_PREFILL_KERNELS] = {
    [PPB_VLLM_PREFIX_PREFILL] = "prefix_prefill", [PPB_VLLM_UNIFIED] = "unified", [PPB_VLLM_CHUNKED] = "chunked"};

/* prefill_kernel:, candidate_prefill_kernel: one of ppb_vllm_prefill_kernel_names, on a prefill suite. */
static int parse_prefill_kernel(ppb_yaml *y, yaml_node_t *root, const char *key, const ppb_proposal *p, int *kernel,
                                ppb_err *err)
{
    char text[32] = "";
    yaml_node_t *v = ppb_yaml_get(y, root, key);
    int rc = load_string(y, root, key, text, sizeof text, 0, err);
    if (rc || !v)
        return rc;
    int k = 0;
    while (k < PPB_VLLM_N_PREFILL_KERNELS && strcmp(text, ppb_vllm_prefill_kernel_names[k]) != 0)
        k++;
    if (k == PPB_VLLM_N_PREFILL_KERNELS)
        return ppb_yaml_fail(y, err, v, key, "'%s' is not prefix_prefill, unified or chunked", text);
    if (p->suite_kernel != PPB_PREFIX_PREFILL)
        return ppb_yaml_fail(y, err, v, key, "applies to a prefill suite, and this one's kernel is %s",
                             ppb_kernel_name(p->suite_kernel));
    *kernel = k;
    return PPB_OK;
}

static int parse_source_change(ppb_yaml *y, yaml_node_t *root, const char *dir, ppb_proposal *p, ppb_err *err)
{
    ppb_source_change *c = &p->change;
    snprintf(c->proposal, sizeof c->proposal, "%s", p->path);
    int rc = parse_tree_spec(y, root, "vllm", dir, c->vllm, sizeof c->vllm, 1, err);
    if (!rc)
        rc = parse_tree_spec(y, root, "candidate_vllm", dir, c->candidate_vllm, sizeof c->candidate_vllm, 0, err);
    if (!rc)
        rc = parse_tree_spec(y, root, "patch", dir, c->patch_path, sizeof c->patch_path, 0, err);
    yaml_node_t *v = ppb_yaml_get(y, root, "replace");
    if (!rc && v && c->patch_path[0])
        rc = ppb_yaml_fail(y, err, v, "replace", "give patch or replace, not both");
    if (!rc && v)
        rc = parse_replace(y, v, c, err);
    if (!rc)
        rc = parse_prefill_kernel(y, root, "prefill_kernel", p, &c->baseline_prefill_kernel, err);
    c->candidate_prefill_kernel = c->baseline_prefill_kernel;
    if (!rc)
        rc = parse_prefill_kernel(y, root, "candidate_prefill_kernel", p, &c->candidate_prefill_kernel, err);
    if (!rc && !c->patch_path[0] && !c->n_replace && !c->candidate_vllm[0] &&
        c->candidate_prefill_kernel == c->baseline_prefill_kernel)
        rc = ppb_yaml_fail(y, err, root, "patch", "required: a patch, a replace list, a candidate_vllm (an "
                           "upgrade) or a candidate_prefill_kernel; without one there is no change to judge");
    return rc;
}

int ppb_proposal_load(const char *path, ppb_proposal *p, ppb_err *err)
{
    static const char *const common[] = {"name", "description", "kind", "suite", "filter",
                                         "target", "baseline", "candidate", "rules", "sampling",
                                         "prompt_len", "shape", "config", "model",
                                         "tensor_parallel", "max_model_len", "reserve_bytes", "outside_bytes", "max_num_seqs",
                                         "seed_claims", "kernel", "vllm", "candidate_vllm", "patch", "replace",
                                         "prefill_kernel", "candidate_prefill_kernel", NULL};
    memset(p, 0, sizeof *p);
    ppb_verdict_rules_default(&p->rules);
    ppb_sampling_default(&p->sampling);
    snprintf(p->path, sizeof p->path, "%s", path);
    ppb_yaml y;
    int rc = ppb_yaml_load(&y, path, err);
    if (rc)
        return rc;
    yaml_node_t *root = ppb_yaml_root(&y), *v;
    char text[64] = "";
    long l;
    if ((rc = ppb_yaml_check_keys(&y, root, NULL, common, err)) ||
        (rc = load_string(&y, root, "name", p->name, sizeof p->name, 1, err)) ||
        (rc = load_string(&y, root, "description", p->description, sizeof p->description, 0, err)) ||
        (rc = load_string(&y, root, "kind", text, sizeof text, 0, err)) ||
        (rc = load_string(&y, root, "filter", p->filter, sizeof p->filter, 0, err)) ||
        (rc = load_string(&y, root, "target", p->target, sizeof p->target, 0, err)))
        goto end;
    p->kind = PPB_PROPOSAL_KERNEL_CONFIG;
    if (text[0]) {
        p->kind = -1;
        for (int k = 0; k < PPB_PROPOSAL_KINDS; k++)
            if (strcmp(text, kind_names[k]) == 0)
                p->kind = k;
        if (p->kind < 0) {
            rc = ppb_yaml_fail(&y, err, ppb_yaml_get(&y, root, "kind"), "kind",
                               "'%s' is not kernel_config, chunked_prefill, kv_capacity or source_patch", text);
            goto end;
        }
    }
    if ((rc = check_kind_keys(&y, root, p->kind, err)))
        goto end;
    /* The kernel a kernel_config proposal tunes: prefix_prefill unless said. */
    ppb_kernel_kind kernel = PPB_PREFIX_PREFILL;
    if ((v = ppb_yaml_get(&y, root, "kernel"))) {
        const char *k = ppb_yaml_scalar(v);
        if (!k || ppb_kernel_parse(k, &kernel)) {
            rc = ppb_yaml_fail(&y, err, v, "kernel", "expected prefix_prefill or paged_attention");
            goto end;
        }
    }
    ppb_case_init(&p->chunk_case, kernel);
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    if (p->kind != PPB_PROPOSAL_KV_CAPACITY) {
        char rel[4096] = "";
        if ((rc = load_string(&y, root, "suite", rel, sizeof rel, 1, err)))
            goto end;
        if (rel[0] == '/')
            snprintf(p->suite_path, sizeof p->suite_path, "%s", rel);
        else
            snprintf(p->suite_path, sizeof p->suite_path, "%s/%s", dir, rel);
        /* The suite decides the kernel a kernel_config proposal tunes. */
        if (p->kind == PPB_PROPOSAL_KERNEL_CONFIG || p->kind == PPB_PROPOSAL_SOURCE_PATCH) {
            ppb_suite suite;
            if ((rc = ppb_suite_load(p->suite_path, &suite, err))) {
                ppb_err_prefix(err, "%s: suite: ", path);
                goto end;
            }
            ppb_suite_free(&suite);
            if ((v = ppb_yaml_get(&y, root, "kernel")) && kernel != suite.kernel) {
                rc = ppb_yaml_fail(&y, err, v, "kernel", "%s, but the suite's kernel is %s (the suite decides it)",
                                   ppb_kernel_name(kernel), ppb_kernel_name(suite.kernel));
                goto end;
            }
            kernel = p->suite_kernel = suite.kernel;
            ppb_case_init(&p->chunk_case, kernel);
        }
    }
    if ((v = ppb_yaml_get(&y, root, "rules")) && (rc = parse_rules(&y, v, &p->rules, err)))
        goto end;
    if ((v = ppb_yaml_get(&y, root, "sampling")) && (rc = parse_sampling(&y, v, &p->sampling, err)))
        goto end;
    if (p->kind == PPB_PROPOSAL_CHUNKED_PREFILL) {
        if (kernel != PPB_PREFIX_PREFILL) {
            rc = ppb_yaml_fail(&y, err, root, "kernel", "chunked_prefill runs prefix_prefill");
            goto end;
        }
        unsigned given = 0;
        if (!(v = ppb_yaml_get(&y, root, "prompt_len"))) {
            rc = ppb_yaml_fail(&y, err, root, "prompt_len", "required for chunked_prefill");
            goto end;
        }
        if ((rc = ppb_yaml_int(&y, v, "prompt_len", 1, 1048576, &l, err)))
            goto end;
        p->prompt_len = (int)l;
        if (!(v = ppb_yaml_get(&y, root, "shape"))) {
            rc = ppb_yaml_fail(&y, err, root, "shape", "required for chunked_prefill");
            goto end;
        }
        if ((rc = parse_fields(&y, v, "shape", 0, kernel, &p->chunk_case, &given, NULL, err)))
            goto end;
        if (!(given & (1u << PPB_F_NUM_HEADS))) {
            rc = ppb_yaml_fail(&y, err, v, "shape.heads", "required (e.g. heads: 32/4)");
            goto end;
        }
        if ((v = ppb_yaml_get(&y, root, "config")) &&
            (rc = parse_fields(&y, v, "config", 1, kernel, &p->chunk_case, &given, NULL, err)))
            goto end;
    }
    if (p->kind == PPB_PROPOSAL_KV_CAPACITY) {
        p->tensor_parallel = 1;
        p->max_model_len = 100000;
        if ((rc = load_string(&y, root, "model", p->model, sizeof p->model, 1, err)))
            goto end;
        if (!p->target[0]) {
            rc = ppb_yaml_fail(&y, err, root, "target", "required for kv_capacity (device memory)");
            goto end;
        }
        if ((v = ppb_yaml_get(&y, root, "tensor_parallel"))) {
            if ((rc = ppb_yaml_int(&y, v, "tensor_parallel", 1, 64, &l, err)))
                goto end;
            p->tensor_parallel = (int)l;
        }
        if ((v = ppb_yaml_get(&y, root, "max_model_len"))) {
            if ((rc = ppb_yaml_int(&y, v, "max_model_len", 1, 10000000, &l, err)))
                goto end;
            p->max_model_len = (int)l;
        }
        if ((v = ppb_yaml_get(&y, root, "reserve_bytes")) &&
            (rc = ppb_yaml_double(&y, v, "reserve_bytes", 0, 1e13, &p->reserve_bytes, err)))
            goto end;
        p->outside_bytes = -1;
        if ((v = ppb_yaml_get(&y, root, "outside_bytes")) &&
            (rc = ppb_yaml_double(&y, v, "outside_bytes", 0, 1e13, &p->outside_bytes, err)))
            goto end;
        if ((v = ppb_yaml_get(&y, root, "max_num_seqs"))) {
            if ((rc = ppb_yaml_int(&y, v, "max_num_seqs", 1, 100000, &l, err)))
                goto end;
            p->max_num_seqs = (int)l;
        }
        if ((v = ppb_yaml_get(&y, root, "seed_claims")) &&
            (rc = parse_seed_claims(&y, v, &p->seed, err)))
            goto end;
    }
    if (p->kind == PPB_PROPOSAL_SOURCE_PATCH) {
        /* Both kernels have a vLLM family ppbench prepares: prefix prefill, and decode
         * through the Triton unified attention (version-1 cases; kernels/vllm/triton/README.md). */
        rc = parse_source_change(&y, root, dir, p, err);
        goto end;
    }
    if ((rc = parse_side(&y, ppb_yaml_get(&y, root, "baseline"), "baseline", p, &p->baseline,
                         err)) ||
        (rc = parse_side(&y, ppb_yaml_get(&y, root, "candidate"), "candidate", p, &p->candidate,
                         err)))
        goto end;
end:
    ppb_yaml_free(&y);
    return rc;
}

int ppb_vllm_is_version(const char *text)
{
    const char *p = text;
    int parts = 0;
    while (isdigit((unsigned char)*p)) {
        while (isdigit((unsigned char)*p))
            p++;
        parts++;
        if (*p != '.')
            break;
        p++;
    }
    if (parts >= 2 && strncmp(p, "post", 4) == 0 && p[-1] == '.' && isdigit((unsigned char)p[4])) {
        for (p += 4; isdigit((unsigned char)*p); p++) {
        }
    }
    return parts >= 2 && *p == '\0' && p[-1] != '.' && strlen(text) < 32;
}
