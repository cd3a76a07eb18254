/* Suite files: YAML -> ppb_suite (schema and rules: docs/SUITES.md).
 *
 * Everything goes through the field table in case.c, so a name accepted here
 * means the same in the matrix, in --filter and in the case key. Every error is
 * one line "FILE:LINE:COLUMN: field: message" at the node that is wrong (the
 * value, or the key for unknown/duplicate/misplaced keys, or the enclosing
 * mapping for something missing). */
#include "suite.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_util.h"

/* The kinds of axis sets: which fields each may hold. */
typedef enum {
    SET_SHAPES,   /* shape fields, lists allowed, required fields checked */
    SET_CASES,    /* shape fields, one value each, required fields checked */
    SET_CONFIGS,  /* config fields */
    SET_EXCLUDE,  /* any field of the kernel, at least one (exclude:, expect_wrong:) */
    SET_MATCH,    /* weights: match:, any field of the kernel, may be empty (catch-all) */
} set_kind;

static const char *const top_level_keys[] = {"name",    "description", "kernel",  "target",
                                             "model",   "shapes",      "cases",   "configs",
                                             "exclude", "weights",     "measure", "check",
                                             "trend",   "expect_wrong", NULL};
static const char *const measure_keys[] = {"cold_l2",     "warmup_ms", "min_samples",
                                           "max_samples", "min_time_ms", "budget_ms",
                                           "target_noise", "windows",  "seed",     NULL};
static const char *const check_keys[] = {"fp16", "bf16", "full_check_max_rows", "sample_rows",
                                         NULL};
static const char *const tolerance_keys[] = {"atol", "rtol", NULL};
static const char *const weight_rule_keys[] = {"match", "weight", NULL};
static const char *const trend_keys[] = {"min_change_floor", "noise_multiplier", "groups", NULL};
static const char *const trend_group_keys[] = {"match", "min_change_floor", "noise_multiplier", NULL};

#define HEADS_KEY "heads"

static void join_path(char *buf, size_t len, const char *parent, const char *child)
{
    snprintf(buf, len, "%s%s%s", parent ? parent : "", parent && *parent ? "." : "", child);
}

/* libyaml keeps every pair of a mapping, so a repeated key would silently
 * shadow the first one; refuse it at the second occurrence. */
static int check_unique_keys(ppb_yaml *y, yaml_node_t *map, const char *where, ppb_err *err)
{
    const char *key_i, *key_j;
    yaml_node_t *value;
    for (int i = 0; ppb_yaml_pair(y, map, i, &key_i, &value); i++)
        for (int j = 0; j < i; j++) {
            ppb_yaml_pair(y, map, j, &key_j, &value);
            if (strcmp(key_i, key_j) != 0)
                continue;
            const yaml_node_t *first = ppb_yaml_pair_key_node(y, map, j);
            char field[256];
            join_path(field, sizeof field, where, key_i);
            return ppb_yaml_fail(y, err, ppb_yaml_pair_key_node(y, map, i), field,
                                 "duplicate key (first given at line %zu)",
                                 first->start_mark.line + 1);
        }
    return PPB_OK;
}

/* A mapping with only `allowed` keys, each at most once. */
static int check_mapping(ppb_yaml *y, yaml_node_t *map, const char *where,
                         const char *const *allowed, ppb_err *err)
{
    int rc = ppb_yaml_check_keys(y, map, where, allowed, err);
    if (rc == PPB_OK)
        rc = check_unique_keys(y, map, where, err);
    return rc;
}

/* ppb_field_parse_value's messages start with "FIELD: "; our messages carry the
 * field (with its path) already. */
static const char *without_field_prefix(const char *msg, const char *field_name)
{
    size_t n = strlen(field_name);
    if (strncmp(msg, field_name, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        return msg + n + 2;
    return msg;
}

static int parse_field_value(ppb_yaml *y, yaml_node_t *node, ppb_field f, const char *where,
                             int *value, ppb_err *err)
{
    const char *text = ppb_yaml_scalar(node);
    if (!text)
        return ppb_yaml_fail(y, err, node, where, "expected a value, found %s", ppb_yaml_node_kind(node));
    ppb_err parse_err;
    if (ppb_field_parse_value(f, text, value, &parse_err) != PPB_OK)
        return ppb_yaml_fail(y, err, node, where, "%s",
                             without_field_prefix(parse_err.msg, ppb_field_get(f)->name));
    return PPB_OK;
}

/* The value nodes of a field: a scalar is a one-value list. */
static int value_nodes(ppb_yaml *y, yaml_node_t *node, const char *where, int single_value,
                       yaml_node_t **items, int *n_items, ppb_err *err)
{
    if (node->type == YAML_SCALAR_NODE) {
        items[0] = node;
        *n_items = 1;
        return PPB_OK;
    }
    if (node->type != YAML_SEQUENCE_NODE)
        return ppb_yaml_fail(y, err, node, where, "expected a value or a list of values, found %s",
                             ppb_yaml_node_kind(node));
    if (single_value)
        return ppb_yaml_fail(y, err, node, where,
                             "an explicit case takes one value, not a list (lists go under shapes:)");
    int n = ppb_yaml_seq_len(node);
    if (n == 0)
        return ppb_yaml_fail(y, err, node, where, "empty list: give at least one value");
    if (n > PPB_MAX_AXIS_VALUES)
        return ppb_yaml_fail(y, err, ppb_yaml_seq_item(y, node, PPB_MAX_AXIS_VALUES), where,
                             "more than %d values (%d given); split the set in two",
                             PPB_MAX_AXIS_VALUES, n);
    for (int i = 0; i < n; i++) {
        items[i] = ppb_yaml_seq_item(y, node, i);
        if (items[i]->type != YAML_SCALAR_NODE)
            return ppb_yaml_fail(y, err, items[i], where,
                                 "expected a value, found %s (lists do not nest)",
                                 ppb_yaml_node_kind(items[i]));
    }
    *n_items = n;
    return PPB_OK;
}

static int parse_axis(ppb_yaml *y, yaml_node_t *node, ppb_field f, const char *where,
                      int single_value, ppb_axis *axis, ppb_err *err)
{
    yaml_node_t *items[PPB_MAX_AXIS_VALUES];
    int n = 0;
    int rc = value_nodes(y, node, where, single_value, items, &n, err);
    if (rc)
        return rc;
    axis->n = 0;
    for (int i = 0; i < n; i++) {
        int v;
        rc = parse_field_value(y, items[i], f, where, &v, err);
        if (rc)
            return rc;
        for (int j = 0; j < axis->n; j++)
            if (axis->v[j] == v)
                return ppb_yaml_fail(y, err, items[i], where, "value '%s' is listed twice",
                                     ppb_yaml_scalar(items[i]));
        axis->v[axis->n++] = v;
    }
    return PPB_OK;
}

/* "32/4" -> num_heads 32, num_kv_heads 4. */
static int parse_heads_pair(ppb_yaml *y, yaml_node_t *node, const char *where, int *heads,
                            int *kv_heads, ppb_err *err)
{
    const char *text = ppb_yaml_scalar(node);
    const char *slash = text ? strchr(text, '/') : NULL;
    char left[32], right[32];
    if (!slash || strchr(slash + 1, '/') || (size_t)(slash - text) >= sizeof left ||
        strlen(slash + 1) >= sizeof right)
        return ppb_yaml_fail(y, err, node, where,
                             "'%s' is not a NUM_HEADS/NUM_KV_HEADS pair such as 32/4", text);
    snprintf(left, sizeof left, "%.*s", (int)(slash - text), text);
    snprintf(right, sizeof right, "%s", slash + 1);
    ppb_err parse_err;
    if (ppb_field_parse_value(PPB_F_NUM_HEADS, left, heads, &parse_err) != PPB_OK ||
        ppb_field_parse_value(PPB_F_NUM_KV_HEADS, right, kv_heads, &parse_err) != PPB_OK)
        return ppb_yaml_fail(y, err, node, where, "'%s': %s", text, parse_err.msg);
    if (*heads % *kv_heads != 0)
        return ppb_yaml_fail(y, err, node, where,
                             "'%s': num_heads %d is not a multiple of num_kv_heads %d (GQA needs "
                             "whole groups)",
                             text, *heads, *kv_heads);
    return PPB_OK;
}

typedef struct heads_list {
    int n;
    int heads[PPB_MAX_AXIS_VALUES], kv_heads[PPB_MAX_AXIS_VALUES];
} heads_list;

static int parse_heads(ppb_yaml *y, yaml_node_t *node, const char *where, int single_value,
                       heads_list *out, ppb_err *err)
{
    yaml_node_t *items[PPB_MAX_AXIS_VALUES];
    int n = 0;
    int rc = value_nodes(y, node, where, single_value, items, &n, err);
    if (rc)
        return rc;
    out->n = 0;
    for (int i = 0; i < n; i++) {
        int h, kv;
        rc = parse_heads_pair(y, items[i], where, &h, &kv, err);
        if (rc)
            return rc;
        for (int j = 0; j < out->n; j++)
            if (out->heads[j] == h && out->kv_heads[j] == kv)
                return ppb_yaml_fail(y, err, items[i], where, "pair '%s' is listed twice",
                                     ppb_yaml_scalar(items[i]));
        out->heads[out->n] = h;
        out->kv_heads[out->n] = kv;
        out->n++;
    }
    return PPB_OK;
}

static int field_applies(ppb_kernel_kind kernel, int f)
{
    return (ppb_field_get(f)->kernels >> kernel) & 1u;
}

/* Whether a field that applies to the kernel belongs in this kind of set. */
static int field_allowed_in(set_kind kind, int f)
{
    int is_config = ppb_field_get(f)->is_config;
    switch (kind) {
    case SET_SHAPES:
    case SET_CASES: return !is_config;
    case SET_CONFIGS: return is_config;
    case SET_EXCLUDE:
    case SET_MATCH: return 1;
    }
    return 0;
}

/* A key that names no field at all: report it with the keys this set accepts. */
static int fail_unknown_field(ppb_yaml *y, yaml_node_t *map, set_kind kind,
                              ppb_kernel_kind kernel, const char *where, ppb_err *err)
{
    const char *allowed[PPB_F_COUNT + 2];
    int n = 0;
    if (kind != SET_CONFIGS)
        allowed[n++] = HEADS_KEY;
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (field_applies(kernel, f) && field_allowed_in(kind, f))
            allowed[n++] = ppb_field_get(f)->name;
    allowed[n] = NULL;
    /* Every key before this one was accepted, so the first unknown key is this one. */
    int rc = ppb_yaml_check_keys(y, map, where, allowed, err);
    return rc ? rc : ppb_yaml_fail(y, err, map, where, "unknown key");
}

static int append_set(ppb_yaml *y, yaml_node_t *at, const char *where, ppb_axis_set **sets,
                      int *n_sets, const ppb_axis_set *set, ppb_err *err)
{
    if (*n_sets >= PPB_MAX_AXIS_SETS)
        return ppb_yaml_fail(y, err, at, where, "more than %d sets in this section",
                             PPB_MAX_AXIS_SETS);
    ppb_axis_set *grown = realloc(*sets, (size_t)(*n_sets + 1) * sizeof *grown);
    if (!grown)
        return ppb_fail(err, PPB_ENOMEM, "%s: out of memory", y->path);
    grown[*n_sets] = *set;
    *sets = grown;
    (*n_sets)++;
    return PPB_OK;
}

/* Parse one axis set at `map` and append it to sets (one set per heads pair
 * when heads: is given: pairs are not a product of two independent axes). */
static int parse_axis_set(ppb_yaml *y, yaml_node_t *map, ppb_kernel_kind kernel, set_kind kind,
                          const char *where, double weight, ppb_axis_set **sets, int *n_sets,
                          ppb_err *err)
{
    if (map->type != YAML_MAPPING_NODE)
        return ppb_yaml_fail(y, err, map, where, "expected a mapping of field: values, found %s",
                             ppb_yaml_node_kind(map));
    int rc = check_unique_keys(y, map, where, err);
    if (rc)
        return rc;

    ppb_axis_set set;
    memset(&set, 0, sizeof set);
    set.weight = weight;
    set.line = (int)map->start_mark.line + 1;
    heads_list heads = {0};
    yaml_node_t *heads_key = NULL;
    const int single_value = kind == SET_CASES;
    const char *key;
    yaml_node_t *value;
    char field[256];

    for (int i = 0; ppb_yaml_pair(y, map, i, &key, &value); i++) {
        yaml_node_t *key_node = ppb_yaml_pair_key_node(y, map, i);
        join_path(field, sizeof field, where, key);
        if (strcmp(key, HEADS_KEY) == 0) {
            if (kind == SET_CONFIGS)
                return ppb_yaml_fail(y, err, key_node, field,
                                     "heads is a shape field: it belongs under shapes: or cases:");
            rc = parse_heads(y, value, field, single_value, &heads, err);
            if (rc)
                return rc;
            heads_key = key_node;
            continue;
        }
        int f = ppb_field_lookup(key);
        if (f < 0)
            return fail_unknown_field(y, map, kind, kernel, where, err);
        const ppb_field_info *fi = ppb_field_get(f);
        if (!field_applies(kernel, f))
            return ppb_yaml_fail(y, err, key_node, field,
                                 "%s applies to %s only, and this suite's kernel is %s", key,
                                 ppb_kernel_name(kernel == PPB_PREFIX_PREFILL ? PPB_PAGED_ATTENTION
                                                                              : PPB_PREFIX_PREFILL),
                                 ppb_kernel_name(kernel));
        if (!field_allowed_in(kind, f))
            return ppb_yaml_fail(y, err, key_node, field,
                                 fi->is_config
                                     ? "%s is a config field (a kernel knob): it belongs under configs:"
                                     : "%s is a shape field: it belongs under shapes: or cases:",
                                 key);
        rc = parse_axis(y, value, f, field, single_value, &set.axis[f], err);
        if (rc)
            return rc;
    }

    if (heads_key && (set.axis[PPB_F_NUM_HEADS].n || set.axis[PPB_F_NUM_KV_HEADS].n)) {
        join_path(field, sizeof field, where, HEADS_KEY);
        return ppb_yaml_fail(y, err, heads_key, field,
                             "give either heads: or num_heads:/num_kv_heads:, not both");
    }
    if (kind == SET_SHAPES || kind == SET_CASES) {
        for (int f = 0; f < PPB_F_COUNT; f++) {
            const ppb_field_info *fi = ppb_field_get(f);
            if (fi->def >= 0 || !field_applies(kernel, f) || set.axis[f].n)
                continue;
            int via_heads = f == PPB_F_NUM_HEADS || f == PPB_F_NUM_KV_HEADS;
            if (via_heads && heads_key)
                continue;
            join_path(field, sizeof field, where, fi->name);
            return ppb_yaml_fail(y, err, map, field,
                                 "required in every shape set of a %s suite (it has no "
                                 "default)%s",
                                 ppb_kernel_name(kernel),
                                 via_heads ? "; give heads: H/KV, or num_heads: and num_kv_heads:"
                                           : "");
        }
    }
    if (kind == SET_EXCLUDE && !heads_key) {
        int given = 0;
        for (int f = 0; f < PPB_F_COUNT; f++)
            given += set.axis[f].n > 0;
        if (!given)
            return ppb_yaml_fail(y, err, map, where,
                                 "a rule needs at least one field (an empty one would match "
                                 "every case)");
    }

    if (!heads_key)
        return append_set(y, map, where, sets, n_sets, &set, err);
    for (int i = 0; i < heads.n; i++) {
        set.axis[PPB_F_NUM_HEADS].n = 1;
        set.axis[PPB_F_NUM_HEADS].v[0] = heads.heads[i];
        set.axis[PPB_F_NUM_KV_HEADS].n = 1;
        set.axis[PPB_F_NUM_KV_HEADS].v[0] = heads.kv_heads[i];
        rc = append_set(y, map, where, sets, n_sets, &set, err);
        if (rc)
            return rc;
    }
    return PPB_OK;
}

static yaml_node_t *nonempty_list(ppb_yaml *y, yaml_node_t *root, const char *key, int *rc,
                                  ppb_err *err)
{
    yaml_node_t *node = ppb_yaml_get(y, root, key);
    *rc = PPB_OK;
    if (!node)
        return NULL;
    if (node->type != YAML_SEQUENCE_NODE)
        *rc = ppb_yaml_fail(y, err, node, key, "expected a list, found %s", ppb_yaml_node_kind(node));
    else if (ppb_yaml_seq_len(node) == 0)
        *rc = ppb_yaml_fail(y, err, node, key, "empty list (leave the key out instead)");
    return *rc ? NULL : node;
}

/* shapes:, cases:, configs:, exclude: */
static int parse_set_section(ppb_yaml *y, yaml_node_t *root, const char *key, set_kind kind,
                             ppb_kernel_kind kernel, ppb_axis_set **sets, int *n_sets,
                             ppb_err *err)
{
    int rc;
    yaml_node_t *list = nonempty_list(y, root, key, &rc, err);
    if (!list)
        return rc;
    char where[64];
    for (int i = 0; i < ppb_yaml_seq_len(list); i++) {
        snprintf(where, sizeof where, "%s[%d]", key, i);
        rc = parse_axis_set(y, ppb_yaml_seq_item(y, list, i), kernel, kind, where, 1.0, sets,
                            n_sets, err);
        if (rc)
            return rc;
    }
    return PPB_OK;
}

static int parse_weights(ppb_yaml *y, yaml_node_t *root, ppb_suite *suite, ppb_err *err)
{
    int rc;
    yaml_node_t *list = nonempty_list(y, root, "weights", &rc, err);
    if (!list)
        return rc;
    char where[64], field[96];
    for (int i = 0; i < ppb_yaml_seq_len(list); i++) {
        yaml_node_t *rule = ppb_yaml_seq_item(y, list, i);
        snprintf(where, sizeof where, "weights[%d]", i);
        rc = check_mapping(y, rule, where, weight_rule_keys, err);
        if (rc)
            return rc;
        yaml_node_t *match = ppb_yaml_get(y, rule, "match");
        yaml_node_t *weight_node = ppb_yaml_get(y, rule, "weight");
        if (!match || !weight_node) {
            join_path(field, sizeof field, where, match ? "weight" : "match");
            return ppb_yaml_fail(y, err, rule, field, "required in every weights rule");
        }
        double weight;
        join_path(field, sizeof field, where, "weight");
        rc = ppb_yaml_double(y, weight_node, field, 1e-6, 1e6, &weight, err);
        if (rc)
            return rc;
        join_path(field, sizeof field, where, "match");
        rc = parse_axis_set(y, match, suite->kernel, SET_MATCH, field, weight, &suite->weights,
                            &suite->n_weights, err);
        if (rc)
            return rc;
    }
    return PPB_OK;
}

/* min_change_floor: and noise_multiplier: of the trend: mapping or a group, over `t`. */
static int parse_trend_values(ppb_yaml *y, yaml_node_t *map, const char *where, ppb_trend_settings *t,
                              ppb_err *err)
{
    char field[96];
    yaml_node_t *n;
    int rc = PPB_OK;
    join_path(field, sizeof field, where, "min_change_floor");
    if ((n = ppb_yaml_get(y, map, "min_change_floor")) &&
        (rc = ppb_yaml_double(y, n, field, 0, 1, &t->min_change_floor, err)))
        return rc;
    join_path(field, sizeof field, where, "noise_multiplier");
    if ((n = ppb_yaml_get(y, map, "noise_multiplier")) &&
        (rc = ppb_yaml_double(y, n, field, 0, 100, &t->noise_multiplier, err)))
        return rc;
    return PPB_OK;
}

/* trend: {min_change_floor, noise_multiplier, groups: [{match, min_change_floor, noise_multiplier}]}.
 * A group's values not given are the suite's. */
static int parse_trend(ppb_yaml *y, yaml_node_t *root, ppb_suite *suite, ppb_err *err)
{
    yaml_node_t *node = ppb_yaml_get(y, root, "trend");
    if (!node)
        return PPB_OK;
    int rc = check_mapping(y, node, "trend", trend_keys, err);
    if (!rc)
        rc = parse_trend_values(y, node, "trend", &suite->trend, err);
    if (rc)
        return rc;
    yaml_node_t *list = nonempty_list(y, node, "groups", &rc, err);
    if (!list)
        return rc;
    char where[64], field[96];
    for (int i = 0; i < ppb_yaml_seq_len(list); i++) {
        yaml_node_t *rule = ppb_yaml_seq_item(y, list, i);
        snprintf(where, sizeof where, "trend.groups[%d]", i);
        if ((rc = check_mapping(y, rule, where, trend_group_keys, err)))
            return rc;
        yaml_node_t *match = ppb_yaml_get(y, rule, "match");
        if (!match || (!ppb_yaml_get(y, rule, "min_change_floor") && !ppb_yaml_get(y, rule, "noise_multiplier"))) {
            join_path(field, sizeof field, where, match ? "min_change_floor" : "match");
            return ppb_yaml_fail(y, err, rule, field,
                                 match ? "a trend group sets min_change_floor or noise_multiplier (or both)"
                                       : "required in every trend group");
        }
        ppb_trend_settings t = suite->trend;
        if ((rc = parse_trend_values(y, rule, where, &t, err)))
            return rc;
        int before = suite->n_trend_groups;
        join_path(field, sizeof field, where, "match");
        if ((rc = parse_axis_set(y, match, suite->kernel, SET_MATCH, field, 1.0, &suite->trend_groups,
                                 &suite->n_trend_groups, err)))
            return rc;
        /* heads: pairs make one set each: every one gets the group's values */
        ppb_trend_settings *grown =
            realloc(suite->trend_group_settings, sizeof *grown * (size_t)suite->n_trend_groups);
        if (!grown)
            return ppb_fail(err, PPB_ENOMEM, "%s: out of memory", y->path);
        suite->trend_group_settings = grown;
        for (int k = before; k < suite->n_trend_groups; k++)
            grown[k] = t;
    }
    return PPB_OK;
}

/* Decimal, 0 .. 2^64-1 (strtoull alone would take "-1" as 2^64-1). */
static int parse_seed(ppb_yaml *y, yaml_node_t *node, const char *field, uint64_t *out,
                      ppb_err *err)
{
    const char *s = ppb_yaml_scalar(node);
    if (!s)
        return ppb_yaml_fail(y, err, node, field, "expected an integer, found %s", ppb_yaml_node_kind(node));
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || errno || *end != '\0')
        return ppb_yaml_fail(y, err, node, field, "'%s' is not an integer in [0, 2^64-1]", s);
    *out = (uint64_t)v;
    return PPB_OK;
}

static int parse_measure(ppb_yaml *y, yaml_node_t *root, ppb_measure_settings *m, ppb_err *err)
{
    yaml_node_t *node = ppb_yaml_get(y, root, "measure");
    if (!node)
        return PPB_OK;
    int rc = check_mapping(y, node, "measure", measure_keys, err);
    if (rc)
        return rc;
    yaml_node_t *n;
    long v;
    if ((n = ppb_yaml_get(y, node, "cold_l2")) &&
        (rc = ppb_yaml_bool(y, n, "measure.cold_l2", &m->cold_l2, err)))
        return rc;
    if ((n = ppb_yaml_get(y, node, "warmup_ms")) &&
        (rc = ppb_yaml_double(y, n, "measure.warmup_ms", 0, 600000, &m->warmup_ms, err)))
        return rc;
    if ((n = ppb_yaml_get(y, node, "min_samples"))) {
        if ((rc = ppb_yaml_int(y, n, "measure.min_samples", 1, 1000000, &v, err)))
            return rc;
        m->min_samples = (int)v;
    }
    if ((n = ppb_yaml_get(y, node, "max_samples"))) {
        if ((rc = ppb_yaml_int(y, n, "measure.max_samples", 1, 1000000, &v, err)))
            return rc;
        m->max_samples = (int)v;
    }
    if ((n = ppb_yaml_get(y, node, "min_time_ms")) &&
        (rc = ppb_yaml_double(y, n, "measure.min_time_ms", 0, 3600000, &m->min_time_ms, err)))
        return rc;
    if ((n = ppb_yaml_get(y, node, "budget_ms")) &&
        (rc = ppb_yaml_double(y, n, "measure.budget_ms", 1, 3600000, &m->budget_ms, err)))
        return rc;
    if ((n = ppb_yaml_get(y, node, "target_noise")) &&
        (rc = ppb_yaml_double(y, n, "measure.target_noise", 0, 1, &m->target_noise, err)))
        return rc;
    if ((n = ppb_yaml_get(y, node, "windows"))) {
        if ((rc = ppb_yaml_int(y, n, "measure.windows", 1, 2, &v, err)))
            return rc;
        m->windows = (int)v;
    }
    if ((n = ppb_yaml_get(y, node, "seed")) &&
        (rc = parse_seed(y, n, "measure.seed", &m->seed, err)))
        return rc;

    /* Pairs that contradict each other; blame the key the file gave (the later one if both). */
    if (m->min_samples > m->max_samples) {
        yaml_node_t *at = ppb_yaml_get(y, node, "max_samples");
        const char *which = at ? "measure.max_samples" : "measure.min_samples";
        return ppb_yaml_fail(y, err, at ? at : ppb_yaml_get(y, node, "min_samples"), which,
                             "min_samples %d is larger than max_samples %d", m->min_samples,
                             m->max_samples);
    }
    if (m->min_time_ms > m->budget_ms) {
        yaml_node_t *at = ppb_yaml_get(y, node, "budget_ms");
        const char *which = at ? "measure.budget_ms" : "measure.min_time_ms";
        return ppb_yaml_fail(y, err, at ? at : ppb_yaml_get(y, node, "min_time_ms"), which,
                             "min_time_ms %g is larger than budget_ms %g (the budget would always "
                             "end sampling first)",
                             m->min_time_ms, m->budget_ms);
    }
    return PPB_OK;
}

static int parse_check(ppb_yaml *y, yaml_node_t *root, ppb_check_settings *c, ppb_err *err)
{
    yaml_node_t *node = ppb_yaml_get(y, root, "check");
    if (!node)
        return PPB_OK;
    int rc = check_mapping(y, node, "check", check_keys, err);
    if (rc)
        return rc;
    char field[64];
    for (int dtype = PPB_FP16; dtype <= PPB_BF16; dtype++) {
        const char *name = ppb_dtype_name(dtype);
        yaml_node_t *tol = ppb_yaml_get(y, node, name);
        if (!tol)
            continue;
        snprintf(field, sizeof field, "check.%s", name);
        if ((rc = check_mapping(y, tol, field, tolerance_keys, err)))
            return rc;
        yaml_node_t *n;
        snprintf(field, sizeof field, "check.%s.atol", name);
        if ((n = ppb_yaml_get(y, tol, "atol")) &&
            (rc = ppb_yaml_double(y, n, field, 0, 1, &c->atol[dtype], err)))
            return rc;
        snprintf(field, sizeof field, "check.%s.rtol", name);
        if ((n = ppb_yaml_get(y, tol, "rtol")) &&
            (rc = ppb_yaml_double(y, n, field, 0, 1, &c->rtol[dtype], err)))
            return rc;
    }
    yaml_node_t *n;
    long v;
    if ((n = ppb_yaml_get(y, node, "full_check_max_rows"))) {
        if ((rc = ppb_yaml_int(y, n, "check.full_check_max_rows", 0, 1000000000L, &v, err)))
            return rc;
        c->full_check_max_rows = v;
    }
    if ((n = ppb_yaml_get(y, node, "sample_rows"))) {
        if ((rc = ppb_yaml_int(y, n, "check.sample_rows", 1, 1000000, &v, err)))
            return rc;
        c->sample_rows = (int)v;
    }
    return PPB_OK;
}

/* Names become file names (suites/targets/NAME.yaml) and labels in reports. */
static int parse_name(ppb_yaml *y, yaml_node_t *node, const char *field, char *buf, size_t len,
                      ppb_err *err)
{
    int rc = ppb_yaml_string(y, node, field, buf, len, err);
    if (rc)
        return rc;
    if (!buf[0])
        return ppb_yaml_fail(y, err, node, field, "must not be empty");
    if (strspn(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
        strlen(buf))
        return ppb_yaml_fail(y, err, node, field,
                             "'%s' may only contain letters, digits, '.', '_' and '-'", buf);
    return PPB_OK;
}

static int parse_header(ppb_yaml *y, yaml_node_t *root, ppb_suite *suite, ppb_err *err)
{
    yaml_node_t *n = ppb_yaml_get(y, root, "kernel");
    if (!n)
        return ppb_yaml_fail(y, err, root, "kernel",
                             "required (prefix_prefill or paged_attention)");
    const char *kernel = ppb_yaml_scalar(n);
    if (!kernel)
        return ppb_yaml_fail(y, err, n, "kernel", "expected prefix_prefill or paged_attention, "
                                                  "found %s", ppb_yaml_node_kind(n));
    if (ppb_kernel_parse(kernel, &suite->kernel) != PPB_OK)
        return ppb_yaml_fail(y, err, n, "kernel",
                             "'%s' is not one of prefix_prefill, paged_attention", kernel);

    n = ppb_yaml_get(y, root, "name");
    if (!n)
        return ppb_yaml_fail(y, err, root, "name", "required ([A-Za-z0-9._-]+)");
    int rc = parse_name(y, n, "name", suite->name, sizeof suite->name, err);
    if (rc)
        return rc;
    if ((n = ppb_yaml_get(y, root, "description")) &&
        (rc = ppb_yaml_string(y, n, "description", suite->description, sizeof suite->description,
                              err)))
        return rc;
    if ((n = ppb_yaml_get(y, root, "target")) &&
        (rc = parse_name(y, n, "target", suite->target, sizeof suite->target, err)))
        return rc;
    if ((n = ppb_yaml_get(y, root, "model")) &&
        (rc = parse_name(y, n, "model", suite->model, sizeof suite->model, err)))
        return rc;
    return PPB_OK;
}

static int hash_file(const char *path, char out[17], ppb_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ppb_fail(err, PPB_EIO, "%s: cannot open: %s", path, strerror(errno));
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 offset basis */
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) {
            h ^= buf[i];
            h *= 0x100000001b3ULL; /* FNV-1a 64 prime */
        }
    int failed = ferror(f);
    fclose(f);
    if (failed)
        return ppb_fail(err, PPB_EIO, "%s: read error", path);
    snprintf(out, 17, "%016" PRIx64, h);
    return PPB_OK;
}

void ppb_suite_defaults(ppb_suite *suite)
{
    ppb_measure_settings *m = &suite->measure;
    m->cold_l2 = 1;
    m->warmup_ms = 25;
    m->min_samples = 10;
    m->max_samples = 500;
    m->min_time_ms = 100;
    m->budget_ms = 5000;
    m->target_noise = 0.01;
    m->windows = 1;
    m->seed = 20261129;
    /* Outputs are fp32-accumulated and rounded once to the storage type; see
     * docs/SUITES.md "check" for why these bounds hold with room to spare. */
    ppb_check_settings *c = &suite->check;
    c->atol[PPB_FP16] = 2e-3;
    c->rtol[PPB_FP16] = 1e-2;
    c->atol[PPB_BF16] = 1.6e-2;
    c->rtol[PPB_BF16] = 5e-2;
    c->full_check_max_rows = 4096;
    c->sample_rows = 256;
    suite->trend.min_change_floor = PPB_TREND_DEFAULT_FLOOR;
    suite->trend.noise_multiplier = PPB_TREND_DEFAULT_NOISE_K;
}

void ppb_suite_free(ppb_suite *suite)
{
    if (!suite)
        return;
    free(suite->shapes);
    free(suite->configs);
    free(suite->excludes);
    free(suite->expect_wrong);
    free(suite->weights);
    free(suite->trend_groups);
    free(suite->trend_group_settings);
    suite->shapes = suite->configs = suite->excludes = suite->expect_wrong = suite->weights = suite->trend_groups = NULL;
    suite->trend_group_settings = NULL;
    suite->n_shapes = suite->n_configs = suite->n_excludes = suite->n_expect_wrong = suite->n_weights =
        suite->n_trend_groups = 0;
}

int ppb_suite_load(const char *path, ppb_suite *suite, ppb_err *err)
{
    ppb_yaml y;
    int rc;
    memset(suite, 0, sizeof *suite);
    ppb_suite_defaults(suite);
    if (strlen(path) >= sizeof suite->path)
        return ppb_fail(err, PPB_EINPUT, "%s: path too long", path);
    snprintf(suite->path, sizeof suite->path, "%s", path);

    rc = ppb_yaml_load(&y, path, err);
    if (rc)
        return rc;
    yaml_node_t *root = ppb_yaml_root(&y);
    if (root->type != YAML_MAPPING_NODE) {
        rc = ppb_yaml_fail(&y, err, root, "suite",
                           "the top level must be a mapping (name:, kernel:, shapes:, ...), found "
                           "%s",
                           ppb_yaml_node_kind(root));
        goto end;
    }
    /* A proposal file (baseline: / candidate:) given where a suite belongs: say which command takes it. */
    if (ppb_yaml_get(&y, root, "baseline") && ppb_yaml_get(&y, root, "candidate")) {
        rc = ppb_yaml_fail(&y, err, root, "suite",
                           "this is a proposal file (it has baseline: and candidate:): judge it with "
                           "'ppbench propose %s'",
                           path);
        goto end;
    }
    if ((rc = check_mapping(&y, root, NULL, top_level_keys, err)))
        goto end;
    if ((rc = parse_header(&y, root, suite, err)))
        goto end;
    if ((rc = parse_measure(&y, root, &suite->measure, err)))
        goto end;
    if ((rc = parse_check(&y, root, &suite->check, err)))
        goto end;

    if ((rc = parse_set_section(&y, root, "shapes", SET_SHAPES, suite->kernel, &suite->shapes,
                                &suite->n_shapes, err)))
        goto end;
    if ((rc = parse_set_section(&y, root, "cases", SET_CASES, suite->kernel, &suite->shapes,
                                &suite->n_shapes, err)))
        goto end;
    if (suite->n_shapes == 0) {
        rc = ppb_yaml_fail(&y, err, root, "shapes",
                           "at least one shape set is required (shapes: or cases:)");
        goto end;
    }
    if ((rc = parse_set_section(&y, root, "configs", SET_CONFIGS, suite->kernel, &suite->configs,
                                &suite->n_configs, err)))
        goto end;
    if ((rc = parse_set_section(&y, root, "exclude", SET_EXCLUDE, suite->kernel,
                                &suite->excludes, &suite->n_excludes, err)))
        goto end;
    if ((rc = parse_set_section(&y, root, "expect_wrong", SET_EXCLUDE, suite->kernel, &suite->expect_wrong,
                                &suite->n_expect_wrong, err)))
        goto end;
    if ((rc = parse_weights(&y, root, suite, err)))
        goto end;
    if ((rc = parse_trend(&y, root, suite, err)))
        goto end;
    rc = hash_file(path, suite->hash, err);

end:
    ppb_yaml_free(&y);
    if (rc)
        ppb_suite_free(suite);
    return rc;
}

void ppb_suite_dir(const ppb_suite *suite, char *buf, size_t len)
{
    const char *slash = strrchr(suite->path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == suite->path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - suite->path), suite->path);
}

int ppb_axis_set_matches(const ppb_axis_set *set, const ppb_case *c)
{
    for (int f = 0; f < PPB_F_COUNT; f++) {
        const ppb_axis *a = &set->axis[f];
        if (a->n == 0)
            continue;
        int value = ppb_case_get(c, f), found = 0;
        for (int i = 0; i < a->n && !found; i++)
            found = a->v[i] == value;
        if (!found)
            return 0;
    }
    return 1;
}

int ppb_suite_case_excluded(const ppb_suite *suite, const ppb_case *c)
{
    for (int i = 0; i < suite->n_excludes; i++)
        if (ppb_axis_set_matches(&suite->excludes[i], c))
            return 1;
    return 0;
}

int ppb_suite_case_expects_wrong(const ppb_suite *suite, const ppb_case *c)
{
    for (int i = 0; i < suite->n_expect_wrong; i++)
        if (ppb_axis_set_matches(&suite->expect_wrong[i], c))
            return 1;
    return 0;
}

double ppb_suite_case_weight(const ppb_suite *suite, const ppb_case *c)
{
    for (int i = 0; i < suite->n_weights; i++)
        if (ppb_axis_set_matches(&suite->weights[i], c))
            return suite->weights[i].weight;
    return 1.0;
}

int ppb_suite_case_trend(const ppb_suite *suite, const ppb_case *c, ppb_trend_settings *out)
{
    for (int i = 0; i < suite->n_trend_groups; i++)
        if (ppb_axis_set_matches(&suite->trend_groups[i], c)) {
            *out = suite->trend_group_settings[i];
            return i;
        }
    *out = suite->trend;
    return -1;
}
