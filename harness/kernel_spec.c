#include "kernel_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "suite.h"

static const char *const kind_names[] = {"prefill", "decode", "decode_reduce"};

const char *ppb_kspec_kind_name(int kind)
{
    return (kind >= 0 && kind <= PPB_KSPEC_DECODE_REDUCE) ? kind_names[kind] : "?";
}

/* The fields of each kind, in line order. Offsets into ppb_kernel_spec keep the
 * format, the parser and the comparison on one table. */
typedef struct spec_field {
    const char *name;
    size_t offset;
} spec_field;

#define SF(name) {#name, offsetof(ppb_kernel_spec, name)}
static const spec_field prefill_fields[] = {SF(dtype),   SF(head_dim),  SF(block_m),
                                            SF(block_n), SF(num_warps), {"mma", offsetof(ppb_kernel_spec, use_mma)}};
static const spec_field decode_fields[] = {SF(dtype),       SF(head_dim),       SF(page_size),
                                           SF(num_threads), SF(partition_size), {"mma", offsetof(ppb_kernel_spec, use_mma)}};
static const spec_field reduce_fields[] = {SF(dtype), SF(head_dim), SF(num_threads), SF(partition_size)};
#undef SF

static const spec_field *fields_of(int kind, int *n)
{
    switch (kind) {
    case PPB_KSPEC_PREFILL: *n = (int)(sizeof prefill_fields / sizeof *prefill_fields); return prefill_fields;
    case PPB_KSPEC_DECODE: *n = (int)(sizeof decode_fields / sizeof *decode_fields); return decode_fields;
    case PPB_KSPEC_DECODE_REDUCE: *n = (int)(sizeof reduce_fields / sizeof *reduce_fields); return reduce_fields;
    default: *n = 0; return NULL;
    }
}

static int *field_ptr(ppb_kernel_spec *s, const spec_field *f) { return (int *)((char *)s + f->offset); }
static int field_val(const ppb_kernel_spec *s, const spec_field *f)
{
    return *(const int *)((const char *)s + f->offset);
}

void ppb_kernel_spec_format(const ppb_kernel_spec *s, char *buf, size_t len)
{
    int nf;
    const spec_field *f = fields_of(s->kind, &nf);
    size_t n = (size_t)snprintf(buf, len, "%s", ppb_kspec_kind_name(s->kind));
    for (int i = 0; i < nf && n < len; i++) {
        int v = field_val(s, &f[i]);
        if (strcmp(f[i].name, "dtype") == 0)
            n += (size_t)snprintf(buf + n, len - n, " dtype=%s", v == PPB_FP16 ? "fp16" : "bf16");
        else
            n += (size_t)snprintf(buf + n, len - n, " %s=%d", f[i].name, v);
    }
}

int ppb_kernel_spec_parse(const char *line, ppb_kernel_spec *s, ppb_err *err)
{
    char buf[512];
    size_t len = strlen(line);
    if (len >= sizeof buf)
        return ppb_fail(err, PPB_EINPUT, "kernel spec line too long");
    memcpy(buf, line, len + 1);
    memset(s, 0, sizeof *s);

    char *save = NULL;
    char *tok = strtok_r(buf, " \t\r\n", &save);
    if (!tok)
        return ppb_fail(err, PPB_EINPUT, "empty kernel spec");
    s->kind = -1;
    for (int k = 0; k <= PPB_KSPEC_DECODE_REDUCE; k++)
        if (strcmp(tok, kind_names[k]) == 0)
            s->kind = k;
    if (s->kind < 0)
        return ppb_fail(err, PPB_EINPUT,
                        "kernel spec: '%s' is not a kernel kind (prefill, decode, decode_reduce)", tok);
    int nf;
    const spec_field *f = fields_of(s->kind, &nf);
    unsigned seen = 0;
    while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return ppb_fail(err, PPB_EINPUT, "kernel spec: '%s' is not name=value", tok);
        *eq = '\0';
        const char *value = eq + 1;
        int idx = -1;
        for (int i = 0; i < nf; i++)
            if (strcmp(f[i].name, tok) == 0)
                idx = i;
        if (idx < 0)
            return ppb_fail(err, PPB_EINPUT, "kernel spec: '%s' is not a field of %s", tok,
                            kind_names[s->kind]);
        if (seen & (1u << idx))
            return ppb_fail(err, PPB_EINPUT, "kernel spec: '%s' given twice", tok);
        seen |= 1u << idx;
        int v;
        if (strcmp(tok, "dtype") == 0) {
            if (strcmp(value, "fp16") == 0)
                v = PPB_FP16;
            else if (strcmp(value, "bf16") == 0)
                v = PPB_BF16;
            else
                return ppb_fail(err, PPB_EINPUT, "kernel spec: dtype '%s' is not fp16 or bf16", value);
        } else {
            char *end = NULL;
            errno = 0;
            long lv = strtol(value, &end, 10);
            if (errno || end == value || *end != '\0' || lv < 0 || lv > 1 << 20)
                return ppb_fail(err, PPB_EINPUT, "kernel spec: %s='%s' is not a valid number", tok,
                                value);
            if (strcmp(tok, "mma") == 0 && lv > 1)
                return ppb_fail(err, PPB_EINPUT, "kernel spec: mma must be 0 or 1");
            v = (int)lv;
        }
        *field_ptr(s, &f[idx]) = v;
    }
    for (int i = 0; i < nf; i++)
        if (!(seen & (1u << i)))
            return ppb_fail(err, PPB_EINPUT, "kernel spec: %s needs %s=", kind_names[s->kind],
                            f[i].name);
    return PPB_OK;
}

int ppb_kernel_spec_compare(const ppb_kernel_spec *a, const ppb_kernel_spec *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    int nf;
    const spec_field *f = fields_of(a->kind, &nf);
    for (int i = 0; i < nf; i++) {
        int va = field_val(a, &f[i]), vb = field_val(b, &f[i]);
        if (va != vb)
            return va < vb ? -1 : 1;
    }
    return 0;
}

int ppb_kernel_spec_equal(const ppb_kernel_spec *a, const ppb_kernel_spec *b)
{
    return ppb_kernel_spec_compare(a, b) == 0;
}

int ppb_kernel_use_mma(int path, int cc, int *use_mma, ppb_err *err)
{
    switch (path) {
    case PPB_PATH_SIMT: *use_mma = 0; return PPB_OK;
    case PPB_PATH_AUTO: *use_mma = cc >= PPB_MMA_MIN_CC; return PPB_OK;
    case PPB_PATH_MMA:
        if (cc < PPB_MMA_MIN_CC)
            return ppb_fail(err, PPB_EREFUSED,
                            "path=mma needs compute capability %d.%d (tensor-core mma); this device is %d.%d",
                            PPB_MMA_MIN_CC / 10, PPB_MMA_MIN_CC % 10, cc / 10, cc % 10);
        *use_mma = 1;
        return PPB_OK;
    default: return ppb_fail(err, PPB_EINPUT, "path=%d is not a code path", path);
    }
}

int ppb_kernel_specs_for_case(const ppb_case *c, int cc, ppb_kernel_spec out[2], int *n, ppb_err *err)
{
    int use_mma = 0;
    int rc = ppb_kernel_use_mma(c->config.path, cc, &use_mma, err);
    if (rc)
        return rc;
    memset(out, 0, 2 * sizeof *out);
    out[0].dtype = c->shape.dtype;
    out[0].head_dim = c->shape.head_dim;
    out[0].use_mma = use_mma;
    *n = 1;
    if (c->kernel == PPB_PREFIX_PREFILL) {
        out[0].kind = PPB_KSPEC_PREFILL;
        out[0].block_m = c->config.block_m;
        out[0].block_n = c->config.block_n;
        out[0].num_warps = c->config.num_warps;
        return PPB_OK;
    }
    out[0].kind = PPB_KSPEC_DECODE;
    out[0].page_size = c->shape.page_size;
    out[0].num_threads = c->config.num_threads;
    out[0].partition_size = c->config.version == 2 ? c->config.partition_size : 0;
    if (c->config.version == 2) {
        out[1].kind = PPB_KSPEC_DECODE_REDUCE;
        out[1].dtype = c->shape.dtype;
        out[1].head_dim = c->shape.head_dim;
        out[1].num_threads = c->config.num_threads;
        out[1].partition_size = c->config.partition_size;
        *n = 2;
    }
    return PPB_OK;
}

int ppb_kernel_spec_list_add(ppb_kernel_spec_list *l, const ppb_kernel_spec *s)
{
    int lo = 0, hi = l->n;
    while (lo < hi) { /* first index whose item is >= s */
        int mid = (lo + hi) / 2;
        if (ppb_kernel_spec_compare(&l->items[mid], s) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < l->n && ppb_kernel_spec_equal(&l->items[lo], s))
        return PPB_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        ppb_kernel_spec *items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items)
            return PPB_ENOMEM;
        l->items = items;
        l->cap = cap;
    }
    memmove(&l->items[lo + 1], &l->items[lo], (size_t)(l->n - lo) * sizeof *l->items);
    l->items[lo] = *s;
    l->n++;
    return PPB_OK;
}

void ppb_kernel_spec_list_free(ppb_kernel_spec_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}

int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc,
                           ppb_kernel_spec_list *out, long *skipped_cases, ppb_err *err)
{
    long skipped = 0;
    int rc = PPB_OK;
    for (int p = 0; p < n_paths && rc == PPB_OK; p++) {
        ppb_suite suite;
        ppb_case_list cases = {0};
        memset(&suite, 0, sizeof suite);
        rc = ppb_suite_load(suite_paths[p], &suite, err);
        if (rc == PPB_OK)
            rc = ppb_matrix_expand(&suite, &cases, err);
        for (int i = 0; rc == PPB_OK && i < cases.n; i++) {
            ppb_kernel_spec specs[2];
            int n = 0;
            ppb_err why;
            int src = ppb_kernel_specs_for_case(&cases.items[i], cc, specs, &n, &why);
            if (src == PPB_EREFUSED) {
                skipped++;
                continue;
            }
            if (src) {
                rc = ppb_fail(err, src, "%s: case %s: %s", suite_paths[p], cases.items[i].key, why.msg);
                break;
            }
            for (int k = 0; k < n && rc == PPB_OK; k++)
                if (ppb_kernel_spec_list_add(out, &specs[k]) != PPB_OK)
                    rc = ppb_fail(err, PPB_ENOMEM, "out of memory listing kernels");
        }
        ppb_case_list_free(&cases);
        ppb_suite_free(&suite);
    }
    if (skipped_cases)
        *skipped_cases = skipped;
    return rc;
}

int ppb_kernel_list_read(const char *path, ppb_kernel_spec_list *out, ppb_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    char line[512];
    int lineno = 0, rc = PPB_OK;
    while (rc == PPB_OK && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (*p == '\0')
            continue;
        ppb_kernel_spec s;
        rc = ppb_kernel_spec_parse(p, &s, err);
        if (rc) {
            ppb_err_prefix(err, "%s:%d: ", path, lineno);
            break;
        }
        if (ppb_kernel_spec_list_add(out, &s) != PPB_OK)
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory reading %s", path);
    }
    fclose(f);
    return rc;
}
