#include "model.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "target.h"
#include "yaml_util.h"

typedef struct model_field {
    const char *name;
    size_t offset;
    long long min, max;
} model_field;

#define MV(field) offsetof(ppb_model, field)
static const model_field model_fields[] = {
    {"layers", MV(layers), 1, 100000},
    {"full_attention_layers", MV(full_attention_layers), 1, 100000},
    {"num_heads", MV(num_heads), 1, 4096},
    {"num_kv_heads", MV(num_kv_heads), 1, 4096},
    {"head_dim", MV(head_dim), 1, 4096},
    {"params_bytes", MV(params_bytes), 1, 1000000000000000LL},
};
#define N_MODEL_FIELDS ((int)(sizeof model_fields / sizeof model_fields[0]))

static ppb_model_value *field_of(ppb_model *m, const model_field *f)
{
    return (ppb_model_value *)((char *)m + f->offset);
}

static int read_field(ppb_yaml *y, yaml_node_t *node, const model_field *f, ppb_model_value *v,
                      ppb_err *err)
{
    static const char *const keys[] = {"value", "source", "confidence", NULL};
    int rc = ppb_yaml_check_keys(y, node, f->name, keys, err);
    if (rc)
        return rc;
    char field[96];
    yaml_node_t *val = ppb_yaml_get(y, node, "value");
    if (!val)
        return ppb_yaml_fail(y, err, node, f->name, "value is missing");
    /* params_bytes is larger than a 32-bit long on some hosts: read as a double
     * and insist on a whole number. */
    double d;
    snprintf(field, sizeof field, "%s.value", f->name);
    rc = ppb_yaml_double(y, val, field, (double)f->min, (double)f->max, &d, err);
    if (rc)
        return rc;
    if (d != (double)(long long)d)
        return ppb_yaml_fail(y, err, val, field, "%g is not a whole number", d);
    v->value = (long long)d;

    yaml_node_t *src = ppb_yaml_get(y, node, "source");
    snprintf(field, sizeof field, "%s.source", f->name);
    if (!src)
        return ppb_yaml_fail(y, err, node, f->name,
                             "source is missing: say where the figure comes from");
    rc = ppb_yaml_string(y, src, field, v->source, sizeof v->source, err);
    if (rc)
        return rc;
    if (!v->source[0])
        return ppb_yaml_fail(y, err, src, field, "must not be empty");

    yaml_node_t *conf = ppb_yaml_get(y, node, "confidence");
    if (conf) {
        snprintf(field, sizeof field, "%s.confidence", f->name);
        rc = ppb_yaml_string(y, conf, field, v->confidence, sizeof v->confidence, err);
        if (rc)
            return rc;
        if (!ppb_target_confidence_known(v->confidence) || strcmp(v->confidence, "unknown") == 0)
            return ppb_yaml_fail(y, err, conf, field,
                                 "'%s' is not one of measured, vendor, seen, disputed, estimated, "
                                 "assumed, unverified",
                                 v->confidence);
    }
    return PPB_OK;
}

int ppb_model_load(const char *path, ppb_model *m, ppb_err *err)
{
    ppb_yaml y;
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    int rc = ppb_yaml_load(&y, path, err);
    if (rc)
        return rc;
    yaml_node_t *root = ppb_yaml_root(&y);
    const char *allowed[N_MODEL_FIELDS + 3];
    allowed[0] = "name";
    allowed[1] = "description";
    for (int i = 0; i < N_MODEL_FIELDS; i++)
        allowed[2 + i] = model_fields[i].name;
    allowed[N_MODEL_FIELDS + 2] = NULL;
    rc = ppb_yaml_check_keys(&y, root, NULL, allowed, err);
    if (rc)
        goto end;

    rc = ppb_yaml_profile_header(&y, root, m->name, sizeof m->name, m->description,
                                 sizeof m->description, err);
    if (rc)
        goto end;
    for (int i = 0; i < N_MODEL_FIELDS; i++) {
        yaml_node_t *node = ppb_yaml_get(&y, root, model_fields[i].name);
        if (!node) {
            rc = ppb_yaml_fail(&y, err, root, model_fields[i].name,
                               "missing (every field is required)");
            goto end;
        }
        rc = read_field(&y, node, &model_fields[i], field_of(m, &model_fields[i]), err);
        if (rc)
            goto end;
    }
    if (m->full_attention_layers.value > m->layers.value) {
        rc = ppb_yaml_fail(&y, err, ppb_yaml_get(&y, root, "full_attention_layers"),
                           "full_attention_layers", "%lld is more than layers (%lld)",
                           m->full_attention_layers.value, m->layers.value);
        goto end;
    }
    if (m->num_heads.value % m->num_kv_heads.value != 0) {
        rc = ppb_yaml_fail(&y, err, ppb_yaml_get(&y, root, "num_kv_heads"), "num_kv_heads",
                           "num_heads %lld is not a multiple of num_kv_heads %lld",
                           m->num_heads.value, m->num_kv_heads.value);
        goto end;
    }
end:
    ppb_yaml_free(&y);
    return rc;
}

int ppb_model_load_named(const char *suites_dir, const char *name, ppb_model *m, ppb_err *err)
{
    memset(m, 0, sizeof *m);
    if (!name[0] || strchr(name, '/') || name[0] == '.')
        return ppb_fail(err, PPB_EINPUT, "model name '%s' is not a plain name", name);
    char path[4096 + 128];
    snprintf(path, sizeof path, "%s/models/%s.yaml",
             suites_dir && suites_dir[0] ? suites_dir : ".", name);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return ppb_fail(err, PPB_EINPUT, "no model profile '%s' (looked for %s)", name, path);
    fclose(probe);
    int rc = ppb_model_load(path, m, err);
    if (rc)
        return rc;
    if (strcmp(m->name, name) != 0)
        return ppb_fail(err, PPB_EINPUT, "%s: the profile is named '%s', not '%s'", path, m->name,
                        name);
    return PPB_OK;
}

int ppb_model_heads_per_rank(const ppb_model *m, int tp, int *num_heads, int *num_kv_heads,
                             ppb_err *err)
{
    long long h = m->num_heads.value, kv = m->num_kv_heads.value;
    if (tp < 1)
        return ppb_fail(err, PPB_EINPUT, "tensor-parallel degree %d must be at least 1", tp);
    if (h % tp != 0)
        return ppb_fail(err, PPB_EINPUT, "%s: %lld query heads do not split over %d ranks", m->name,
                        h, tp);
    if (tp <= kv) {
        if (kv % tp != 0)
            return ppb_fail(err, PPB_EINPUT, "%s: %lld KV heads do not split over %d ranks",
                            m->name, kv, tp);
        *num_kv_heads = (int)(kv / tp);
    } else {
        if (tp % kv != 0)
            return ppb_fail(err, PPB_EINPUT,
                            "%s: %d ranks is not a multiple of %lld KV heads (each rank must "
                            "replicate a whole head)",
                            m->name, tp, kv);
        *num_kv_heads = 1;
    }
    *num_heads = (int)(h / tp);
    return PPB_OK;
}

long long ppb_model_kv_bytes_per_token(const ppb_model *m, int tp_degree, int elem_bytes)
{
    int h, kv;
    ppb_err err;
    if (elem_bytes < 1)
        return PPB_EINPUT;
    int rc = ppb_model_heads_per_rank(m, tp_degree, &h, &kv, &err);
    if (rc)
        return rc;
    return 2LL * m->full_attention_layers.value * kv * m->head_dim.value * elem_bytes;
}
