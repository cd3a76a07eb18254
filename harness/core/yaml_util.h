/* Small helpers over libyaml's document API, shared by every YAML parser
 * (suites, targets, models, proposals). A loaded document keeps each node's
 * line and column, so every error can name FILE:LINE:COLUMN and the field. */
#ifndef PPB_YAML_UTIL_H
#define PPB_YAML_UTIL_H

#include <yaml.h>

#include "ppb_error.h"

typedef struct ppb_yaml {
    yaml_document_t doc;
    int loaded;
    char path[4096];
} ppb_yaml;

/* Limits on a file before and while it is parsed (hostile input stays cheap). */
#define PPB_YAML_MAX_BYTES (1 << 20)
#define PPB_YAML_MAX_DEPTH 64

/* Load a file: a regular file of at most PPB_YAML_MAX_BYTES, one document,
 * nested at most PPB_YAML_MAX_DEPTH deep, no mapping with a key given twice.
 * Every refusal is PPB_EINPUT as FILE[:LINE:COL]: message. */
int ppb_yaml_load(ppb_yaml *y, const char *path, ppb_err *err);
void ppb_yaml_free(ppb_yaml *y);
yaml_node_t *ppb_yaml_root(ppb_yaml *y);

/* Fail with "FILE:LINE:COL: FIELD: message" at node's position (1-based). */
int ppb_yaml_fail(ppb_yaml *y, ppb_err *err, const yaml_node_t *node, const char *field,
                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Iterate a mapping: for (i = 0; ppb_yaml_pair(y, map, i, &k, &v); i++). */
int ppb_yaml_pair(ppb_yaml *y, yaml_node_t *map, int i, const char **key, yaml_node_t **value);
/* Key node of the i-th pair (for positions of unknown keys). */
yaml_node_t *ppb_yaml_pair_key_node(ppb_yaml *y, yaml_node_t *map, int i);
/* Sequence items: count and i-th item. */
int ppb_yaml_seq_len(const yaml_node_t *seq);
yaml_node_t *ppb_yaml_seq_item(ppb_yaml *y, yaml_node_t *seq, int i);
/* Lookup by key in a mapping; NULL if absent. */
yaml_node_t *ppb_yaml_get(ppb_yaml *y, yaml_node_t *map, const char *key);
/* Scalar text or NULL if the node is not a scalar. */
const char *ppb_yaml_scalar(const yaml_node_t *node);
/* "a scalar", "a list", "a mapping" or "nothing": what an error says was found. */
const char *ppb_yaml_node_kind(const yaml_node_t *n);

/* Typed readers: fail (with position and field name) on wrong type or range. */
int ppb_yaml_int(ppb_yaml *y, yaml_node_t *n, const char *field, long min, long max, long *out,
                 ppb_err *err);
int ppb_yaml_double(ppb_yaml *y, yaml_node_t *n, const char *field, double min, double max,
                    double *out, ppb_err *err);
int ppb_yaml_bool(ppb_yaml *y, yaml_node_t *n, const char *field, int *out, ppb_err *err);
int ppb_yaml_string(ppb_yaml *y, yaml_node_t *n, const char *field, char *buf, size_t len,
                    ppb_err *err);
/* Require a mapping whose keys are all in `allowed` (NULL-terminated): an
 * unknown key is an error at its own position, naming the allowed ones. */
int ppb_yaml_check_keys(ppb_yaml *y, yaml_node_t *map, const char *field,
                        const char *const *allowed, ppb_err *err);

/* The header every profile file has: a required `name`, an optional `description`. */
int ppb_yaml_profile_header(ppb_yaml *y, yaml_node_t *root, char *name, size_t name_len,
                            char *description, size_t description_len, ppb_err *err);

#endif
