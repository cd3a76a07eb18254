#include "case.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {"fp16", "bf16", NULL};
static const char *const path_names[] = {"auto", "simt", "mma", "wgmma", NULL};
static const char *const bool_names[] = {"false", "true", NULL};
/* Grows as plugin:NAME values are parsed; the last slot stays NULL. */
static const char *impl_names[PPB_IMPL_MAX + 1] = {"builtin", "vllm-triton", "vllm-cuda", NULL};
static char plugin_names[PPB_IMPL_MAX][PPB_FIELD_TEXT_MAX];

/* The kernels' parameters as fields: names, ranges and defaults from their lists
 * (ppb_kernel_params.h). Macro parameters end in '_' so they cannot replace the
 * designators. */
#define PARAM_FIELD(kernels_, member_, TAG_, key_, min_, max_, def_, omit_)                                   \
    [PPB_F_##TAG_] = {.name = #member_, .key_name = key_, .kernels = kernels_, .is_config = 1, .min = min_,    \
                      .max = max_, .def = def_, .names = NULL, .key_omits_default = omit_},

/* Ranges are what ppbench accepts at all; ppb_case_validate adds the rules
 * that involve several fields. Order = key order (ppb_field): a stored case's
 * key must not change, so a field added later is left out of the key at its
 * default (key_omits_default) wherever it goes; never reorder the others. */
static const ppb_field_info fields[PPB_F_COUNT] = {
    [PPB_F_BATCH] = {"batch", "b", PPB_FOR_BOTH, 0, 1, 4096, 1, NULL},
    [PPB_F_QUERY_LEN] = {"query_len", "q", PPB_FOR_PREFILL, 0, 1, 262144, -1, NULL},
    [PPB_F_CONTEXT_LEN] = {"context_len", "ctx", PPB_FOR_PREFILL, 0, 0, 1048576, 0, NULL},
    [PPB_F_SEQ_LEN] = {"seq_len", "seq", PPB_FOR_DECODE, 0, 1, 1048576, -1, NULL},
    [PPB_F_RAGGED] = {"ragged", "ragged", PPB_FOR_BOTH, 0, 0, 1, 0, bool_names},
    [PPB_F_NUM_HEADS] = {"num_heads", "h", PPB_FOR_BOTH, 0, 1, 256, -1, NULL},
    [PPB_F_NUM_KV_HEADS] = {"num_kv_heads", "kvh", PPB_FOR_BOTH, 0, 1, 256, -1, NULL},
    [PPB_F_HEAD_DIM] = {"head_dim", "d", PPB_FOR_BOTH, 0, 64, 256, 128, NULL},
    [PPB_F_DTYPE] = {"dtype", "dtype", PPB_FOR_BOTH, 0, 0, 1, PPB_BF16, dtype_names},
    [PPB_F_PAGE_SIZE] = {"page_size", "page", PPB_FOR_BOTH, 0, 8, 32, 16, NULL},
    [PPB_F_SLIDING_WINDOW] = {"sliding_window", "win", PPB_FOR_BOTH, 0, 0, 1048576, 0, NULL},
    [PPB_F_DECODE_SEQS] = {"decode_seqs", "dec", PPB_FOR_PREFILL, 0, 0, 4096, 0, NULL, 1},
    PPBK_PREFILL_PARAMS(PARAM_FIELD, PPB_FOR_PREFILL)
    PPBK_DECODE_PARAMS(PARAM_FIELD, PPB_FOR_DECODE)
    [PPB_F_HOST_PARTITION_SIZE] = {"host_partition_size", "hp", PPB_FOR_DECODE, 1, 0, 65536, 0, NULL},
    [PPB_F_PATH] = {"path", "path", PPB_FOR_BOTH, 1, 0, 3, PPB_PATH_AUTO, path_names},
    [PPB_F_IMPL] = {"impl", "impl", PPB_FOR_BOTH, 1, 0, PPB_IMPL_MAX - 1, PPB_IMPL_BUILTIN, impl_names, 1},
};
#undef PARAM_FIELD

const char *ppb_impl_name(int impl)
{
    return impl >= 0 && impl < PPB_IMPL_MAX ? impl_names[impl] : NULL;
}

const char *ppb_impl_library_name(int impl)
{
    const char *name = ppb_impl_name(impl);
    if (!name || impl == PPB_IMPL_BUILTIN)
        return NULL;
    return strncmp(name, "plugin:", 7) == 0 ? name + 7 : name;
}

int ppb_impl_name_valid(const char *name)
{
    size_t n = name ? strnlen(name, 64) : 0;
    if (n == 0 || n > 40)
        return 0;
    /* '@' joins a kernel family and the tree it was prepared from: vllm-triton@0.6.3 */
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_.-@", name[i]))
            return 0;
    return strcmp(name, "builtin") != 0;
}

/* plugin:NAME -> its value, registering the name on first sight. */
static int parse_plugin_impl(const char *text, int *value, ppb_err *err)
{
    if (!ppb_impl_name_valid(text + 7))
        return ppb_fail(err, PPB_EINPUT,
                        "impl: '%s': a plugin name is 1-40 characters of a-z, 0-9, '_', '.', '-', '@'", text);
    int i = 0;
    while (impl_names[i] && strcmp(impl_names[i], text) != 0)
        i++;
    if (!impl_names[i]) {
        if (i >= PPB_IMPL_MAX)
            return ppb_fail(err, PPB_EINPUT, "impl: '%s': more than %d implementations in one run", text,
                            PPB_IMPL_MAX);
        snprintf(plugin_names[i], sizeof plugin_names[i], "%s", text);
        impl_names[i] = plugin_names[i];
    }
    *value = i;
    return PPB_OK;
}

const ppb_field_info *ppb_field_get(ppb_field f)
{
    return (f >= 0 && f < PPB_F_COUNT) ? &fields[f] : NULL;
}

int ppb_field_lookup(const char *name)
{
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (strcmp(fields[f].name, name) == 0)
            return f;
    return -1;
}

static int *field_slot(ppb_case *c, ppb_field f)
{
    switch (f) {
    case PPB_F_BATCH: return &c->shape.batch;
    case PPB_F_QUERY_LEN: return &c->shape.query_len;
    case PPB_F_CONTEXT_LEN: return &c->shape.context_len;
    case PPB_F_SEQ_LEN: return &c->shape.seq_len;
    case PPB_F_RAGGED: return &c->shape.ragged;
    case PPB_F_NUM_HEADS: return &c->shape.num_heads;
    case PPB_F_NUM_KV_HEADS: return &c->shape.num_kv_heads;
    case PPB_F_HEAD_DIM: return &c->shape.head_dim;
    case PPB_F_DTYPE: return &c->shape.dtype;
    case PPB_F_PAGE_SIZE: return &c->shape.page_size;
    case PPB_F_SLIDING_WINDOW: return &c->shape.sliding_window;
    case PPB_F_DECODE_SEQS: return &c->shape.decode_seqs;
#define PARAM_SLOT(ctx, member, TAG, ...) case PPB_F_##TAG: return &c->config.member;
    PPBK_PREFILL_PARAMS(PARAM_SLOT, )
    PPBK_DECODE_PARAMS(PARAM_SLOT, )
#undef PARAM_SLOT
    case PPB_F_HOST_PARTITION_SIZE: return &c->config.host_partition_size;
    case PPB_F_PATH: return &c->config.path;
    case PPB_F_IMPL: return &c->config.impl;
    case PPB_F_COUNT: break;
    }
    return NULL;
}

int ppb_case_get(const ppb_case *c, ppb_field f)
{
    int *slot = field_slot((ppb_case *)c, f);
    return slot ? *slot : 0;
}

void ppb_case_set(ppb_case *c, ppb_field f, int value)
{
    int *slot = field_slot(c, f);
    if (slot)
        *slot = value;
}

int ppb_field_parse_value(ppb_field f, const char *text, int *value, ppb_err *err)
{
    const ppb_field_info *fi = ppb_field_get(f);
    if (!fi)
        return ppb_fail(err, PPB_EINPUT, "unknown field");
    if (f == PPB_F_IMPL && strncmp(text, "plugin:", 7) == 0)
        return parse_plugin_impl(text, value, err);
    if (fi->names) {
        for (int i = 0; fi->names[i]; i++)
            if (strcmp(fi->names[i], text) == 0) {
                *value = i;
                return PPB_OK;
            }
        char allowed[128] = "";
        for (int i = 0; fi->names[i]; i++) {
            strncat(allowed, i ? ", " : "", sizeof allowed - strlen(allowed) - 1);
            strncat(allowed, fi->names[i], sizeof allowed - strlen(allowed) - 1);
        }
        return ppb_fail(err, PPB_EINPUT, "%s: '%s' is not one of %s%s", fi->name, text, allowed,
                        f == PPB_F_IMPL ? ", plugin:NAME" : "");
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0')
        return ppb_fail(err, PPB_EINPUT, "%s: '%s' is not an integer", fi->name, text);
    if (v < fi->min || v > fi->max)
        return ppb_fail(err, PPB_EINPUT, "%s: %ld is out of range [%d, %d]", fi->name, v, fi->min,
                        fi->max);
    *value = (int)v;
    return PPB_OK;
}

void ppb_field_format_value(ppb_field f, int value, char *buf, size_t len)
{
    const ppb_field_info *fi = ppb_field_get(f);
    if (fi && fi->names && value >= 0 && value <= fi->max && fi->names[value])
        snprintf(buf, len, "%s", fi->names[value]);
    else
        snprintf(buf, len, "%d", value);
}

const char *ppb_kernel_name(ppb_kernel_kind k)
{
    return k == PPB_PREFIX_PREFILL ? "prefix_prefill" : "paged_attention";
}

int ppb_kernel_parse(const char *name, ppb_kernel_kind *out)
{
    if (strcmp(name, "prefix_prefill") == 0)
        *out = PPB_PREFIX_PREFILL;
    else if (strcmp(name, "paged_attention") == 0)
        *out = PPB_PAGED_ATTENTION;
    else
        return PPB_EINPUT;
    return PPB_OK;
}

const char *ppb_dtype_name(int dtype) { return dtype_names[dtype == PPB_FP16 ? 0 : 1]; }
const char *ppb_path_name(int path)
{
    return path >= PPB_PATH_AUTO && path <= PPB_PATH_WGMMA ? path_names[path] : "?";
}
size_t ppb_dtype_size(int dtype) { (void)dtype; return 2; }

static int field_applies(ppb_kernel_kind k, ppb_field f) { return (fields[f].kernels >> k) & 1u; }

void ppb_case_init(ppb_case *c, ppb_kernel_kind kernel)
{
    memset(c, 0, sizeof *c);
    c->kernel = kernel;
    c->weight = 1.0;
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (field_applies(kernel, f))
            ppb_case_set(c, f, fields[f].def < 0 ? 0 : fields[f].def);
}

int ppb_case_key_omits(const ppb_case *c, ppb_field f)
{
    return fields[f].key_omits_default && ppb_case_get(c, f) == fields[f].def;
}

void ppb_case_make_key(ppb_case *c)
{
    size_t n = (size_t)snprintf(c->key, sizeof c->key, "%s", ppb_kernel_name(c->kernel));
    for (int f = 0; f < PPB_F_COUNT && n < sizeof c->key; f++) {
        if (!field_applies(c->kernel, f) || ppb_case_key_omits(c, f))
            continue;
        char val[PPB_FIELD_TEXT_MAX];
        ppb_field_format_value(f, ppb_case_get(c, f), val, sizeof val);
        n += (size_t)snprintf(c->key + n, sizeof c->key - n, " %s=%s", fields[f].key_name, val);
    }
}

void ppb_case_key_builtin(const ppb_case *c, char *buf, size_t len)
{
    ppb_case t = *c;
    ppb_case_set(&t, PPB_F_IMPL, PPB_IMPL_BUILTIN);
    ppb_case_make_key(&t);
    snprintf(buf, len, "%s", t.key);
}

void ppb_case_shape_key(const ppb_case *c, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s", ppb_kernel_name(c->kernel));
    for (int f = 0; f < PPB_F_COUNT && n < len; f++) {
        if (!field_applies(c->kernel, f) || fields[f].is_config || ppb_case_key_omits(c, f))
            continue;
        char val[PPB_FIELD_TEXT_MAX];
        ppb_field_format_value(f, ppb_case_get(c, f), val, sizeof val);
        n += (size_t)snprintf(buf + n, len - n, " %s=%s", fields[f].key_name, val);
    }
}

int ppb_case_from_key(const char *key, ppb_case *out, ppb_err *err)
{
    char buf[PPB_CASE_KEY_MAX];
    if (strlen(key) >= sizeof buf)
        return ppb_fail(err, PPB_EINPUT, "case key too long");
    strcpy(buf, key);
    char *save = NULL;
    char *tok = strtok_r(buf, " ", &save);
    ppb_kernel_kind kernel;
    if (!tok || ppb_kernel_parse(tok, &kernel) != PPB_OK)
        return ppb_fail(err, PPB_EINPUT, "case key '%s' does not start with a kernel name", key);
    ppb_case_init(out, kernel);
    unsigned seen = 0;
    while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return ppb_fail(err, PPB_EINPUT, "case key: '%s' is not name=value", tok);
        *eq = '\0';
        int f = -1;
        for (int i = 0; i < PPB_F_COUNT; i++)
            if (field_applies(kernel, i) && strcmp(fields[i].key_name, tok) == 0)
                f = i;
        if (f < 0)
            return ppb_fail(err, PPB_EINPUT, "case key: unknown field '%s'", tok);
        int v;
        int rc = ppb_field_parse_value(f, eq + 1, &v, err);
        if (rc)
            return rc;
        ppb_case_set(out, f, v);
        seen |= 1u << f;
    }
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (field_applies(kernel, f) && !(seen & (1u << f)) && !fields[f].key_omits_default)
            return ppb_fail(err, PPB_EINPUT, "case key: field '%s' missing", fields[f].key_name);
    ppb_case_make_key(out);
    return PPB_OK;
}

static int is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

int ppb_case_validate(const ppb_case *c, ppb_err *err)
{
    const ppb_shape *s = &c->shape;
    const ppb_config *k = &c->config;
    for (int f = 0; f < PPB_F_COUNT; f++) {
        if (!field_applies(c->kernel, f))
            continue;
        int v = ppb_case_get(c, f);
        if (v < fields[f].min || v > fields[f].max)
            return ppb_fail(err, PPB_EINPUT, "%s=%d is out of range [%d, %d]", fields[f].name, v,
                            fields[f].min, fields[f].max);
    }
    if (!ppb_impl_name(k->impl))
        return ppb_fail(err, PPB_EINPUT, "impl=%d names no implementation", k->impl);
    if (s->num_heads % s->num_kv_heads != 0)
        return ppb_fail(err, PPB_EINPUT,
                        "num_heads=%d is not a multiple of num_kv_heads=%d (GQA needs whole groups)",
                        s->num_heads, s->num_kv_heads);
    if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256)
        return ppb_fail(err, PPB_EINPUT, "head_dim=%d: only 64, 128 and 256 are supported",
                        s->head_dim);
    if (s->page_size != 8 && s->page_size != 16 && s->page_size != 32)
        return ppb_fail(err, PPB_EINPUT, "page_size=%d: only 8, 16 and 32 are supported",
                        s->page_size);
    if (c->kernel == PPB_PREFIX_PREFILL) {
        if (s->decode_seqs > s->batch)
            return ppb_fail(err, PPB_EINPUT, "decode_seqs=%d is more than batch=%d sequences", s->decode_seqs,
                            s->batch);
        if (!is_pow2(k->block_m) || !is_pow2(k->block_n) || !is_pow2(k->num_warps))
            return ppb_fail(err, PPB_EINPUT,
                            "block_m=%d, block_n=%d, num_warps=%d: each must be a power of two",
                            k->block_m, k->block_n, k->num_warps);
    } else {
        if (k->version == 2) {
            if (k->partition_size <= 0 || k->partition_size % s->page_size != 0)
                return ppb_fail(err, PPB_EINPUT,
                                "partition_size=%d must be a positive multiple of page_size=%d",
                                k->partition_size, s->page_size);
            if (k->host_partition_size != 0 && k->host_partition_size % s->page_size != 0)
                return ppb_fail(err, PPB_EINPUT,
                                "host_partition_size=%d must be a multiple of page_size=%d",
                                k->host_partition_size, s->page_size);
        } else if (k->host_partition_size != 0) {
            return ppb_fail(err, PPB_EINPUT,
                            "host_partition_size applies to version 2 only (v1 has no partitions)");
        }
        if (k->num_threads % 32 != 0)
            return ppb_fail(err, PPB_EINPUT, "num_threads=%d must be a multiple of 32",
                            k->num_threads);
    }
    return PPB_OK;
}

int ppb_case_host_partition_size(const ppb_case *c)
{
    return c->config.host_partition_size ? c->config.host_partition_size : c->config.partition_size;
}

int ppb_case_partition_mismatch(const ppb_case *c)
{
    return c->kernel == PPB_PAGED_ATTENTION && c->config.version == 2 &&
           ppb_case_host_partition_size(c) != c->config.partition_size;
}

static int ragged_len(const ppb_case *c, int len, int seq)
{
    if (!c->shape.ragged || c->shape.batch <= 1)
        return len;
    long long b = c->shape.batch;
    long long v = ((long long)len * (b - seq) + b - 1) / b;
    return (int)v;
}

int ppb_case_query_len_of(const ppb_case *c, int seq)
{
    if (c->kernel == PPB_PAGED_ATTENTION)
        return 1;
    if (seq < c->shape.decode_seqs)
        return 1; /* a decode step in a mixed batch */
    int q = ragged_len(c, c->shape.query_len, seq);
    return q < 1 ? 1 : q;
}

int ppb_case_context_len_of(const ppb_case *c, int seq)
{
    if (c->kernel == PPB_PAGED_ATTENTION) {
        int s = ragged_len(c, c->shape.seq_len, seq);
        return s < 1 ? 1 : s;
    }
    return ragged_len(c, c->shape.context_len, seq);
}

double ppb_case_flops(const ppb_case *c)
{
    const ppb_shape *s = &c->shape;
    double total = 0;
    for (int b = 0; b < s->batch; b++) {
        double q = ppb_case_query_len_of(c, b), ctx = ppb_case_context_len_of(c, b);
        if (c->kernel == PPB_PREFIX_PREFILL)
            total += 4.0 * s->num_heads * s->head_dim * (q * ctx + q * q / 2.0);
        else
            total += 4.0 * s->num_heads * s->head_dim * ctx;
    }
    return total;
}

double ppb_case_min_bytes(const ppb_case *c)
{
    const ppb_shape *s = &c->shape;
    double elem = (double)ppb_dtype_size(s->dtype), total = 0;
    for (int b = 0; b < s->batch; b++) {
        double q = ppb_case_query_len_of(c, b), ctx = ppb_case_context_len_of(c, b);
        double kv_tokens = c->kernel == PPB_PREFIX_PREFILL ? ctx + q : ctx;
        total += 2.0 * kv_tokens * s->num_kv_heads * s->head_dim * elem; /* K and V once */
        total += 2.0 * q * s->num_heads * s->head_dim * elem;             /* q in, out */
    }
    return total;
}
