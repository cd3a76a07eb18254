#include "matrix.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"

int ppb_case_list_push(ppb_case_list *l, const ppb_case *c)
{
    if (ppb_grow((void **)&l->items, &l->cap, l->n, sizeof *l->items, 64) != PPB_OK)
        return PPB_ENOMEM;
    l->items[l->n++] = *c;
    return PPB_OK;
}

void ppb_case_list_free(ppb_case_list *l)
{
    free(l->items);
    l->items = NULL;
    l->n = l->cap = 0;
}

static int field_applies(ppb_kernel_kind k, int f) { return (ppb_field_get(f)->kernels >> k) & 1u; }

/* ---- expansion ----------------------------------------------------------- */

/* A set of keys already emitted: open addressing over indices into the list,
 * so "keep the first" costs one hash per case. */
typedef struct key_set {
    int *slots;   /* -1 = empty, else index into the case list */
    size_t mask;
} key_set;

static int key_set_init(key_set *ks, long expected)
{
    size_t size = 64;
    while (size < (size_t)expected * 2)
        size *= 2;
    ks->slots = malloc(size * sizeof *ks->slots);
    if (!ks->slots)
        return PPB_ENOMEM;
    for (size_t i = 0; i < size; i++)
        ks->slots[i] = -1;
    ks->mask = size - 1;
    return PPB_OK;
}

/* Returns 1 if `key` was already present; otherwise records `index` for it. */
static int key_set_check_insert(key_set *ks, const ppb_case_list *l, const char *key, int index)
{
    size_t i = (size_t)ppb_fnv1a64_str(key) & ks->mask;
    while (ks->slots[i] >= 0) {
        if (strcmp(l->items[ks->slots[i]].key, key) == 0)
            return 1;
        i = (i + 1) & ks->mask;
    }
    ks->slots[i] = index;
    return 0;
}

static int set_is_empty(const ppb_axis_set *set)
{
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (set->axis[f].n > 0)
            return 0;
    return 1;
}

/* Every field a set names must belong to the suite's kernel, and hold at least
 * one value (n > 0 is "given"). */
static int check_set_fields(const ppb_suite *s, const ppb_axis_set *set, const char *what,
                            ppb_err *err)
{
    for (int f = 0; f < PPB_F_COUNT; f++) {
        const ppb_axis *a = &set->axis[f];
        if (a->n < 0 || a->n > PPB_MAX_AXIS_VALUES)
            return ppb_fail(err, PPB_EINPUT, "%s:%d: %s: %s has %d values (at most %d)", s->path,
                            set->line, what, ppb_field_get(f)->name, a->n, PPB_MAX_AXIS_VALUES);
        if (a->n > 0 && !field_applies(s->kernel, f))
            return ppb_fail(err, PPB_EINPUT, "%s:%d: %s: %s does not apply to %s", s->path,
                            set->line, what, ppb_field_get(f)->name, ppb_kernel_name(s->kernel));
    }
    return PPB_OK;
}

/* The value lists one (shape set, config set) pair multiplies: axes[f] points
 * at the list to use, or at a one-value list holding the default. */
typedef struct product {
    const ppb_axis *axes[PPB_F_COUNT];
    ppb_axis defaults[PPB_F_COUNT];
    long count;
} product;

static int product_make(const ppb_suite *s, const ppb_axis_set *shape, const ppb_axis_set *config,
                        product *p, ppb_err *err)
{
    p->count = 1;
    for (int f = 0; f < PPB_F_COUNT; f++) {
        p->axes[f] = NULL;
        if (!field_applies(s->kernel, f))
            continue;
        const ppb_field_info *fi = ppb_field_get(f);
        const ppb_axis *from_shape = shape->axis[f].n > 0 ? &shape->axis[f] : NULL;
        const ppb_axis *from_config = config && config->axis[f].n > 0 ? &config->axis[f] : NULL;
        if (from_shape && from_config)
            return ppb_fail(err, PPB_EINPUT,
                            "%s:%d: %s is given both in the shape set at line %d and in the config "
                            "set at line %d; give it in one of them",
                            s->path, config->line, fi->name, shape->line, config->line);
        const ppb_axis *a = from_shape ? from_shape : from_config;
        if (!a) {
            if (fi->def < 0)
                return ppb_fail(err, PPB_EINPUT,
                                "%s:%d: the shape set gives no %s, which has no default", s->path,
                                shape->line, fi->name);
            p->defaults[f].n = 1;
            p->defaults[f].v[0] = fi->def;
            a = &p->defaults[f];
        }
        p->axes[f] = a;
        p->count *= a->n;
        if (p->count > PPB_MATRIX_MAX_CASES)
            p->count = PPB_MATRIX_MAX_CASES + 1; /* saturate: only compared with the limit */
    }
    return PPB_OK;
}

static void describe_pair(const ppb_axis_set *shape, const ppb_axis_set *config, char *buf,
                          size_t len)
{
    if (config && config->line > 0)
        snprintf(buf, len, "the shape set at line %d and the config set at line %d", shape->line,
                 config->line);
    else
        snprintf(buf, len, "the shape set at line %d with the default config", shape->line);
}

static int expand_pair(const ppb_suite *s, const ppb_axis_set *shape, const ppb_axis_set *config,
                       const product *p, ppb_case_list *out, key_set *seen, ppb_err *err)
{
    int idx[PPB_F_COUNT] = {0};
    for (;;) {
        ppb_case c;
        ppb_case_init(&c, s->kernel);
        for (int f = 0; f < PPB_F_COUNT; f++)
            if (p->axes[f])
                ppb_case_set(&c, f, p->axes[f]->v[idx[f]]);
        ppb_case_make_key(&c);

        if (!ppb_suite_case_excluded(s, &c)) {
            ppb_err why;
            if (ppb_case_validate(&c, &why) != PPB_OK) {
                char pair[128];
                describe_pair(shape, config, pair, sizeof pair);
                return ppb_fail(err, PPB_EINPUT,
                                "%s:%d: %s, in the product of %s (exclude the combination or "
                                "change the values)",
                                s->path, shape->line, why.msg, pair);
            }
            c.weight = ppb_suite_case_weight(s, &c);
            if (!key_set_check_insert(seen, out, c.key, out->n)) {
                if (ppb_case_list_push(out, &c) != PPB_OK)
                    return ppb_fail(err, PPB_ENOMEM, "out of memory expanding %s", s->path);
            }
        }

        /* Odometer: the last field turns fastest. */
        int f = PPB_F_COUNT - 1;
        for (; f >= 0; f--) {
            if (!p->axes[f])
                continue;
            if (++idx[f] < p->axes[f]->n)
                break;
            idx[f] = 0;
        }
        if (f < 0)
            return PPB_OK;
    }
}

int ppb_matrix_expand(const ppb_suite *s, ppb_case_list *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    if (s->n_shapes <= 0 || !s->shapes)
        return ppb_fail(err, PPB_EINPUT, "%s: the suite has no shapes", s->path);

    for (int i = 0; i < s->n_shapes; i++) {
        int rc = check_set_fields(s, &s->shapes[i], "shape set", err);
        if (rc)
            return rc;
    }
    for (int i = 0; i < s->n_configs; i++) {
        int rc = check_set_fields(s, &s->configs[i], "config set", err);
        if (rc)
            return rc;
    }
    for (int i = 0; i < s->n_excludes; i++) {
        int rc = check_set_fields(s, &s->excludes[i], "exclude", err);
        if (rc)
            return rc;
        if (set_is_empty(&s->excludes[i]))
            return ppb_fail(err, PPB_EINPUT,
                            "%s:%d: exclude gives no field (it would drop every case)", s->path,
                            s->excludes[i].line);
    }
    for (int i = 0; i < s->n_weights; i++) {
        int rc = check_set_fields(s, &s->weights[i], "weight rule", err);
        if (rc)
            return rc;
        if (!(s->weights[i].weight >= 0))
            return ppb_fail(err, PPB_EINPUT, "%s:%d: weight %g must be >= 0", s->path,
                            s->weights[i].line, s->weights[i].weight);
    }

    /* Count first: refuse an oversized suite before allocating anything. */
    int n_cfg = s->n_configs > 0 ? s->n_configs : 1;
    long total = 0;
    for (int i = 0; i < s->n_shapes; i++)
        for (int j = 0; j < n_cfg; j++) {
            product p;
            int rc = product_make(s, &s->shapes[i], s->n_configs > 0 ? &s->configs[j] : NULL, &p,
                                  err);
            if (rc)
                return rc;
            total += p.count;
            if (total > PPB_MATRIX_MAX_CASES)
                return ppb_fail(err, PPB_EINPUT,
                                "%s:%d: the suite expands to more than %d cases; narrow its axes",
                                s->path, s->shapes[i].line, PPB_MATRIX_MAX_CASES);
        }

    key_set seen;
    if (key_set_init(&seen, total) != PPB_OK)
        return ppb_fail(err, PPB_ENOMEM, "out of memory expanding %s", s->path);
    int rc = PPB_OK;
    for (int i = 0; i < s->n_shapes && rc == PPB_OK; i++)
        for (int j = 0; j < n_cfg && rc == PPB_OK; j++) {
            const ppb_axis_set *config = s->n_configs > 0 ? &s->configs[j] : NULL;
            product p;
            rc = product_make(s, &s->shapes[i], config, &p, err);
            if (rc == PPB_OK)
                rc = expand_pair(s, &s->shapes[i], config, &p, out, &seen, err);
        }
    free(seen.slots);
    if (rc)
        ppb_case_list_free(out);
    return rc;
}

/* ---- --filter ------------------------------------------------------------ */

typedef enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE } filter_op;

#define FILTER_MAX_TERMS 32
#define FILTER_TERM_TEXT 128

typedef struct filter_term {
    int field;
    filter_op op;
    int n;
    int v[PPB_MAX_AXIS_VALUES];
    char text[FILTER_TERM_TEXT];
} filter_term;

static void trim(char **start, char **end)
{
    while (*start < *end && isspace((unsigned char)**start))
        (*start)++;
    while (*end > *start && isspace((unsigned char)(*end)[-1]))
        (*end)--;
}

static int parse_term(const char *begin, size_t len, filter_term *t, ppb_err *err)
{
    char term[FILTER_TERM_TEXT];
    if (len >= sizeof term)
        return ppb_fail(err, PPB_EINPUT, "filter term '%.40s...' is too long", begin);
    memcpy(term, begin, len);
    term[len] = '\0';
    snprintf(t->text, sizeof t->text, "%s", term);

    size_t name_len = 0;
    while (term[name_len] && (isalnum((unsigned char)term[name_len]) || term[name_len] == '_'))
        name_len++;
    const char *op = term + name_len;
    size_t op_len;
    if (strncmp(op, "!=", 2) == 0) { t->op = OP_NE; op_len = 2; }
    else if (strncmp(op, "<=", 2) == 0) { t->op = OP_LE; op_len = 2; }
    else if (strncmp(op, ">=", 2) == 0) { t->op = OP_GE; op_len = 2; }
    else if (strncmp(op, "==", 2) == 0) { t->op = OP_EQ; op_len = 2; }
    else if (*op == '=') { t->op = OP_EQ; op_len = 1; }
    else if (*op == '<') { t->op = OP_LT; op_len = 1; }
    else if (*op == '>') { t->op = OP_GT; op_len = 1; }
    else
        return ppb_fail(err, PPB_EINPUT,
                        "filter term '%s': expected FIELD=V1|V2, FIELD!=V, FIELD<V, FIELD<=V, "
                        "FIELD>V or FIELD>=V",
                        t->text);
    if (name_len == 0)
        return ppb_fail(err, PPB_EINPUT, "filter term '%s': no field name before the operator",
                        t->text);
    char name[FILTER_TERM_TEXT];
    memcpy(name, term, name_len);
    name[name_len] = '\0';
    t->field = ppb_field_lookup(name);
    if (t->field < 0) {
        char known[512] = "";
        for (int f = 0; f < PPB_F_COUNT; f++) {
            strncat(known, f ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, ppb_field_get(f)->name, sizeof known - strlen(known) - 1);
        }
        return ppb_fail(err, PPB_EINPUT, "filter term '%s': unknown field '%s' (fields: %s)",
                        t->text, name, known);
    }
    const ppb_field_info *fi = ppb_field_get(t->field);
    char *values = term + name_len + op_len;
    if (*values == '\0')
        return ppb_fail(err, PPB_EINPUT, "filter term '%s': no value after the operator",
                        t->text);

    t->n = 0;
    if (t->op == OP_EQ || t->op == OP_NE) {
        /* "a=1|" or "a=|1": an empty alternative is a typo, not "nothing". */
        if (values[0] == '|' || values[strlen(values) - 1] == '|' || strstr(values, "||"))
            return ppb_fail(err, PPB_EINPUT, "filter term '%s': empty value in the list",
                            t->text);
        char *save = NULL;
        for (char *v = strtok_r(values, "|", &save); v; v = strtok_r(NULL, "|", &save)) {
            if (t->n == PPB_MAX_AXIS_VALUES)
                return ppb_fail(err, PPB_EINPUT, "filter term '%s': more than %d values",
                                t->text, PPB_MAX_AXIS_VALUES);
            ppb_err why;
            if (ppb_field_parse_value(t->field, v, &t->v[t->n], &why) != PPB_OK)
                return ppb_fail(err, PPB_EINPUT, "filter term '%s': %s", t->text, why.msg);
            t->n++;
        }
        return PPB_OK;
    }
    if (fi->names)
        return ppb_fail(err, PPB_EINPUT,
                        "filter term '%s': %s takes = or != (its values have no order)", t->text,
                        fi->name);
    char *end = NULL;
    errno = 0;
    long v = strtol(values, &end, 10);
    if (errno || end == values || *end != '\0' || v < -2147483647L || v > 2147483647L)
        return ppb_fail(err, PPB_EINPUT, "filter term '%s': '%s' is not an integer", t->text,
                        values);
    t->v[0] = (int)v;
    t->n = 1;
    return PPB_OK;
}

static int term_holds(const filter_term *t, const ppb_case *c)
{
    if (!field_applies(c->kernel, t->field))
        return 0;
    int v = ppb_case_get(c, t->field);
    switch (t->op) {
    case OP_EQ:
    case OP_NE: {
        int hit = 0;
        for (int i = 0; i < t->n && !hit; i++)
            hit = t->v[i] == v;
        return t->op == OP_EQ ? hit : !hit;
    }
    case OP_LT: return v < t->v[0];
    case OP_LE: return v <= t->v[0];
    case OP_GT: return v > t->v[0];
    case OP_GE: return v >= t->v[0];
    }
    return 0;
}

int ppb_matrix_filter(ppb_case_list *list, const char *expr, ppb_err *err)
{
    filter_term terms[FILTER_MAX_TERMS];
    int n_terms = 0;
    const char *p = expr ? expr : "";
    for (int index = 1;; index++) {
        const char *comma = strchr(p, ',');
        char *start = (char *)p, *end = (char *)(comma ? comma : p + strlen(p));
        trim(&start, &end);
        if (start == end)
            return ppb_fail(err, PPB_EINPUT, "filter '%s': term %d is empty", expr ? expr : "",
                            index);
        if (n_terms == FILTER_MAX_TERMS)
            return ppb_fail(err, PPB_EINPUT, "filter '%s': more than %d terms", expr,
                            FILTER_MAX_TERMS);
        int rc = parse_term(start, (size_t)(end - start), &terms[n_terms], err);
        if (rc)
            return rc;
        n_terms++;
        if (!comma)
            break;
        p = comma + 1;
    }

    /* A term on a field no case has (block_n in a decode suite) would quietly
     * empty the list: say so instead. */
    for (int t = 0; t < n_terms && list->n > 0; t++) {
        int applies = 0;
        for (int i = 0; i < list->n && !applies; i++)
            applies = field_applies(list->items[i].kernel, terms[t].field);
        if (!applies)
            return ppb_fail(err, PPB_EINPUT, "filter term '%s': %s does not apply to %s",
                            terms[t].text, ppb_field_get(terms[t].field)->name,
                            ppb_kernel_name(list->items[0].kernel));
    }

    int kept = 0;
    for (int i = 0; i < list->n; i++) {
        int ok = 1;
        for (int t = 0; t < n_terms && ok; t++)
            ok = term_holds(&terms[t], &list->items[i]);
        if (ok)
            list->items[kept++] = list->items[i];
    }
    list->n = kept;
    return PPB_OK;
}

/* ---- --shard ------------------------------------------------------------- */

#define SHARD_MAX 100000

int ppb_matrix_override(ppb_case_list *list, const char *field, const char *text, ppb_err *err)
{
    int f = ppb_field_lookup(field), value;
    if (f < 0)
        return ppb_fail(err, PPB_EINPUT, "no case field '%s'", field);
    int rc = ppb_field_parse_value(f, text, &value, err);
    if (rc)
        return rc;
    int kept = 0;
    for (int i = 0; i < list->n; i++) {
        ppb_case c = list->items[i];
        ppb_case_set(&c, f, value);
        ppb_case_make_key(&c);
        int dup = 0;
        for (int j = 0; j < kept && !dup; j++)
            dup = strcmp(list->items[j].key, c.key) == 0;
        if (!dup)
            list->items[kept++] = c;
    }
    list->n = kept;
    return PPB_OK;
}

int ppb_matrix_parse_shard(const char *text, int *k, int *n, ppb_err *err)
{
    const char *slash = text ? strchr(text, '/') : NULL;
    if (!slash)
        return ppb_fail(err, PPB_EINPUT, "shard '%s': expected K/N, e.g. 2/8",
                        text ? text : "");
    char *end = NULL;
    errno = 0;
    long kk = strtol(text, &end, 10);
    if (errno || end == text || end != slash)
        return ppb_fail(err, PPB_EINPUT, "shard '%s': K is not an integer", text);
    errno = 0;
    long nn = strtol(slash + 1, &end, 10);
    if (errno || end == slash + 1 || *end != '\0')
        return ppb_fail(err, PPB_EINPUT, "shard '%s': N is not an integer", text);
    if (nn < 1 || nn > SHARD_MAX)
        return ppb_fail(err, PPB_EINPUT, "shard '%s': N must be between 1 and %d", text,
                        SHARD_MAX);
    if (kk < 1 || kk > nn)
        return ppb_fail(err, PPB_EINPUT, "shard '%s': K must be between 1 and N (%ld)", text,
                        nn);
    *k = (int)kk;
    *n = (int)nn;
    return PPB_OK;
}

void ppb_matrix_shard(ppb_case_list *list, int k, int n)
{
    if (n < 1 || k < 1 || k > n)
        return;
    int kept = 0;
    for (int i = 0; i < list->n; i++) {
        ppb_case *c = &list->items[i];
        if (c->key[0] == '\0')
            ppb_case_make_key(c);
        if ((int)(ppb_fnv1a64_str(c->key) % (uint64_t)n) == k - 1)
            list->items[kept++] = *c;
    }
    list->n = kept;
}

typedef struct shape_slot {
    uint64_t hash;
    int index, first;   /* position in the list; first position of its shape */
} shape_slot;

static int by_hash_then_index(const void *a, const void *b)
{
    const shape_slot *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int by_first_then_index(const void *a, const void *b)
{
    const shape_slot *x = a, *y = b;
    if (x->first != y->first)
        return (x->first > y->first) - (x->first < y->first);
    return (x->index > y->index) - (x->index < y->index);
}

int ppb_matrix_group_by_shape(ppb_case_list *list, ppb_err *err)
{
    if (list->n < 2)
        return PPB_OK;
    shape_slot *slot = malloc(sizeof *slot * (size_t)list->n);
    ppb_case *sorted = malloc(sizeof *sorted * (size_t)list->n);
    if (!slot || !sorted) {
        free(slot);
        free(sorted);
        return ppb_fail(err, PPB_ENOMEM, "out of memory ordering %d cases by shape", list->n);
    }
    for (int i = 0; i < list->n; i++) {
        char key[PPB_CASE_KEY_MAX];
        ppb_case_shape_key(&list->items[i], key, sizeof key);
        slot[i] = (shape_slot){.hash = ppb_fnv1a64_str(key), .index = i};
    }
    /* Equal hashes are taken for one shape: a collision only puts two shapes
     * side by side, and whoever shares inputs compares the whole key. */
    qsort(slot, (size_t)list->n, sizeof *slot, by_hash_then_index);
    for (int i = 0; i < list->n; i++)
        slot[i].first = i > 0 && slot[i].hash == slot[i - 1].hash ? slot[i - 1].first : slot[i].index;
    qsort(slot, (size_t)list->n, sizeof *slot, by_first_then_index);
    for (int i = 0; i < list->n; i++)
        sorted[i] = list->items[slot[i].index];
    memcpy(list->items, sorted, sizeof *sorted * (size_t)list->n);
    free(slot);
    free(sorted);
    return PPB_OK;
}
