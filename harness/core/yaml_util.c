#include "yaml_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int syntax_error(const char *path, const yaml_parser_t *parser, ppb_err *err)
{
    yaml_mark_t m = parser->problem_mark;
    return ppb_fail(err, PPB_EINPUT, "%s:%zu:%zu: YAML syntax error: %s%s%s", path, m.line + 1, m.column + 1,
                    parser->problem ? parser->problem : "unknown", parser->context ? " " : "",
                    parser->context ? parser->context : "");
}

/* A regular file of bounded size, opened without blocking: a FIFO or a device
 * would make the read wait forever, a huge file cost memory before any check. */
static int open_input(const char *path, FILE **out, ppb_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ppb_fail(err, PPB_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = PPB_OK;
    if (fstat(fd, &st) != 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = ppb_fail(err, PPB_EINPUT, "%s: not a regular file", path);
    else if (st.st_size > PPB_YAML_MAX_BYTES)
        rc = ppb_fail(err, PPB_EINPUT, "%s: %lld bytes; a ppbench YAML file holds at most %d", path,
                      (long long)st.st_size, PPB_YAML_MAX_BYTES);
    if (rc == PPB_OK && !(*out = fdopen(fd, "rb")))
        rc = ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    if (rc)
        close(fd);
    return rc;
}

/* One pass over the events before the document is built: exactly one
 * document, nested at most PPB_YAML_MAX_DEPTH deep (building a deeply nested
 * document costs time quadratic in its depth). */
static int check_shape(const char *path, FILE *f, ppb_err *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return ppb_fail(err, PPB_ENOMEM, "%s: cannot initialise the YAML parser", path);
    yaml_parser_set_input_file(&parser, f);
    int rc = PPB_OK, depth = 0, documents = 0, done = 0;
    while (rc == PPB_OK && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(path, &parser, err);
            break;
        }
        size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1)
                rc = ppb_fail(err, PPB_EINPUT, "%s:%zu:%zu: a second YAML document: a ppbench file holds one", path,
                              line, col);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > PPB_YAML_MAX_DEPTH)
                rc = ppb_fail(err, PPB_EINPUT, "%s:%zu:%zu: nested more than %d levels deep", path, line, col,
                              PPB_YAML_MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_STREAM_END_EVENT: done = 1; break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

typedef struct key_at {
    const char *key;
    const yaml_node_t *node;
} key_at;

static int by_key(const void *a, const void *b)
{
    const key_at *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    /* equal keys in file order, so the second one is reported */
    return c ? c : (x->node->start_mark.index > y->node->start_mark.index) -
                       (x->node->start_mark.index < y->node->start_mark.index);
}

/* No mapping gives a key twice: libyaml keeps both and a reader would take the
 * first, which may not be the one a reviewer reads. Sorted, so a map of many
 * keys costs n log n. */
static int check_duplicate_keys(ppb_yaml *y, ppb_err *err)
{
    for (yaml_node_t *n = y->doc.nodes.start; n < y->doc.nodes.top; n++) {
        if (n->type != YAML_MAPPING_NODE)
            continue;
        size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start), used = 0;
        if (count < 2)
            continue;
        key_at *keys = malloc(count * sizeof *keys);
        if (!keys)
            return ppb_fail(err, PPB_ENOMEM, "%s: out of memory checking keys", y->path);
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(&y->doc, p->key);
            if (k && ppb_yaml_scalar(k))
                keys[used++] = (key_at){ppb_yaml_scalar(k), k};
        }
        qsort(keys, used, sizeof *keys, by_key);
        int rc = PPB_OK;
        for (size_t i = 1; i < used && rc == PPB_OK; i++)
            if (strcmp(keys[i].key, keys[i - 1].key) == 0)
                rc = ppb_yaml_fail(y, err, keys[i].node, keys[i].key, "given twice (first at line %zu)",
                                   keys[i - 1].node->start_mark.line + 1);
        free(keys);
        if (rc)
            return rc;
    }
    return PPB_OK;
}

int ppb_yaml_load(ppb_yaml *y, const char *path, ppb_err *err)
{
    memset(y, 0, sizeof *y);
    snprintf(y->path, sizeof y->path, "%s", path);
    FILE *f = NULL;
    int rc = open_input(path, &f, err);
    if (rc)
        return rc;
    if ((rc = check_shape(path, f, err))) {
        fclose(f);
        return rc;
    }
    rewind(f);
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return ppb_fail(err, PPB_ENOMEM, "%s: cannot initialise the YAML parser", path);
    }
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &y->doc)) {
        rc = syntax_error(path, &parser, err);
        goto end;
    }
    y->loaded = 1;
    if (!yaml_document_get_root_node(&y->doc))
        rc = ppb_fail(err, PPB_EINPUT, "%s:1:1: the file is empty", path);
    else
        rc = check_duplicate_keys(y, err);
end:
    yaml_parser_delete(&parser);
    fclose(f);
    if (rc)
        ppb_yaml_free(y);
    return rc;
}

void ppb_yaml_free(ppb_yaml *y)
{
    if (y->loaded)
        yaml_document_delete(&y->doc);
    y->loaded = 0;
}

yaml_node_t *ppb_yaml_root(ppb_yaml *y) { return yaml_document_get_root_node(&y->doc); }

int ppb_yaml_fail(ppb_yaml *y, ppb_err *err, const yaml_node_t *node, const char *field,
                  const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t line = node ? node->start_mark.line + 1 : 1, col = node ? node->start_mark.column + 1 : 1;
    return ppb_fail(err, PPB_EINPUT, "%s:%zu:%zu: %s%s%s", y->path, line, col, field ? field : "",
                    field ? ": " : "", what);
}

int ppb_yaml_pair(ppb_yaml *y, yaml_node_t *map, int i, const char **key, yaml_node_t **value)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return 0;
    yaml_node_pair_t *p = map->data.mapping.pairs.start + i;
    if (p >= map->data.mapping.pairs.top)
        return 0;
    yaml_node_t *k = yaml_document_get_node(&y->doc, p->key);
    *key = ppb_yaml_scalar(k);
    if (!*key)
        *key = "";
    *value = yaml_document_get_node(&y->doc, p->value);
    return 1;
}

yaml_node_t *ppb_yaml_pair_key_node(ppb_yaml *y, yaml_node_t *map, int i)
{
    yaml_node_pair_t *p = map->data.mapping.pairs.start + i;
    return yaml_document_get_node(&y->doc, p->key);
}

int ppb_yaml_seq_len(const yaml_node_t *seq)
{
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return 0;
    return (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

yaml_node_t *ppb_yaml_seq_item(ppb_yaml *y, yaml_node_t *seq, int i)
{
    if (i < 0 || i >= ppb_yaml_seq_len(seq))
        return NULL;
    return yaml_document_get_node(&y->doc, seq->data.sequence.items.start[i]);
}

yaml_node_t *ppb_yaml_get(ppb_yaml *y, yaml_node_t *map, const char *key)
{
    const char *k;
    yaml_node_t *v;
    for (int i = 0; ppb_yaml_pair(y, map, i, &k, &v); i++)
        if (strcmp(k, key) == 0)
            return v;
    return NULL;
}

const char *ppb_yaml_scalar(const yaml_node_t *node)
{
    if (!node || node->type != YAML_SCALAR_NODE)
        return NULL;
    return (const char *)node->data.scalar.value;
}

const char *ppb_yaml_node_kind(const yaml_node_t *n)
{
    switch (n ? n->type : YAML_NO_NODE) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

int ppb_yaml_int(ppb_yaml *y, yaml_node_t *n, const char *field, long min, long max, long *out,
                 ppb_err *err)
{
    const char *s = ppb_yaml_scalar(n);
    if (!s)
        return ppb_yaml_fail(y, err, n, field, "expected an integer, found %s", ppb_yaml_node_kind(n));
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return ppb_yaml_fail(y, err, n, field, "'%s' is not an integer", s);
    if (v < min || v > max)
        return ppb_yaml_fail(y, err, n, field, "%ld is out of range [%ld, %ld]", v, min, max);
    *out = v;
    return PPB_OK;
}

int ppb_yaml_double(ppb_yaml *y, yaml_node_t *n, const char *field, double min, double max,
                    double *out, ppb_err *err)
{
    const char *s = ppb_yaml_scalar(n);
    if (!s)
        return ppb_yaml_fail(y, err, n, field, "expected a number, found %s", ppb_yaml_node_kind(n));
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v))
        return ppb_yaml_fail(y, err, n, field, "'%s' is not a finite number", s);
    if (v < min || v > max)
        return ppb_yaml_fail(y, err, n, field, "%g is out of range [%g, %g]", v, min, max);
    *out = v;
    return PPB_OK;
}

int ppb_yaml_bool(ppb_yaml *y, yaml_node_t *n, const char *field, int *out, ppb_err *err)
{
    const char *s = ppb_yaml_scalar(n);
    if (s && (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "on") == 0))
        *out = 1;
    else if (s && (strcmp(s, "false") == 0 || strcmp(s, "no") == 0 || strcmp(s, "off") == 0))
        *out = 0;
    else
        return ppb_yaml_fail(y, err, n, field, "expected true or false, found %s",
                             s ? s : ppb_yaml_node_kind(n));
    return PPB_OK;
}

int ppb_yaml_string(ppb_yaml *y, yaml_node_t *n, const char *field, char *buf, size_t len,
                    ppb_err *err)
{
    const char *s = ppb_yaml_scalar(n);
    if (!s)
        return ppb_yaml_fail(y, err, n, field, "expected a string, found %s", ppb_yaml_node_kind(n));
    if (strlen(s) >= len)
        return ppb_yaml_fail(y, err, n, field, "longer than %zu characters", len - 1);
    snprintf(buf, len, "%s", s);
    return PPB_OK;
}

int ppb_yaml_check_keys(ppb_yaml *y, yaml_node_t *map, const char *field,
                        const char *const *allowed, ppb_err *err)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return ppb_yaml_fail(y, err, map, field, "expected a mapping, found %s", ppb_yaml_node_kind(map));
    const char *k;
    yaml_node_t *v;
    for (int i = 0; ppb_yaml_pair(y, map, i, &k, &v); i++) {
        int ok = 0;
        for (int j = 0; allowed[j] && !ok; j++)
            ok = strcmp(allowed[j], k) == 0;
        if (ok)
            continue;
        char list[512] = "";
        for (int j = 0; allowed[j]; j++) {
            strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, allowed[j], sizeof list - strlen(list) - 1);
        }
        char where[256];
        snprintf(where, sizeof where, "%s%s%s", field ? field : "", field ? "." : "", k);
        return ppb_yaml_fail(y, err, ppb_yaml_pair_key_node(y, map, i), where,
                             "unknown key (allowed: %s)", list);
    }
    return PPB_OK;
}

int ppb_yaml_profile_header(ppb_yaml *y, yaml_node_t *root, char *name, size_t name_len,
                            char *description, size_t description_len, ppb_err *err)
{
    yaml_node_t *n = ppb_yaml_get(y, root, "name");
    if (!n)
        return ppb_yaml_fail(y, err, root, "name", "the profile has no name");
    int rc = ppb_yaml_string(y, n, "name", name, name_len, err);
    yaml_node_t *d = rc ? NULL : ppb_yaml_get(y, root, "description");
    if (d)
        rc = ppb_yaml_string(y, d, "description", description, description_len, err);
    return rc;
}
