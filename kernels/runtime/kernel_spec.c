#include "kernel_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"


static const char *const kind_names[] = {"prefill", "decode", "decode_reduce", "input_fill"};

const char *ppb_kspec_kind_name(int kind)
{
    return (kind >= 0 && kind <= PPB_KSPEC_INPUT_FILL) ? kind_names[kind] : "?";
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
static const spec_field fill_fields[] = {SF(dtype)};
#undef SF

static const spec_field *fields_of(int kind, int *n)
{
    switch (kind) {
    case PPB_KSPEC_PREFILL: *n = (int)(sizeof prefill_fields / sizeof *prefill_fields); return prefill_fields;
    case PPB_KSPEC_DECODE: *n = (int)(sizeof decode_fields / sizeof *decode_fields); return decode_fields;
    case PPB_KSPEC_DECODE_REDUCE: *n = (int)(sizeof reduce_fields / sizeof *reduce_fields); return reduce_fields;
    case PPB_KSPEC_INPUT_FILL: *n = (int)(sizeof fill_fields / sizeof *fill_fields); return fill_fields;
    default: *n = 0; return NULL;
    }
}

#define FIELD_COUNT(a) (sizeof a / sizeof *a)
_Static_assert(FIELD_COUNT(prefill_fields) <= PPB_KERNEL_SPEC_FIELDS_MAX &&
                   FIELD_COUNT(decode_fields) <= PPB_KERNEL_SPEC_FIELDS_MAX &&
                   FIELD_COUNT(reduce_fields) <= PPB_KERNEL_SPEC_FIELDS_MAX &&
                   FIELD_COUNT(fill_fields) <= PPB_KERNEL_SPEC_FIELDS_MAX,
               "a kind has more fields than PPB_KERNEL_SPEC_FIELDS_MAX (kernel_spec.h)");
#undef FIELD_COUNT

static int *field_ptr(ppb_kernel_spec *s, const spec_field *f) { return (int *)((char *)s + f->offset); }
static int field_val(const ppb_kernel_spec *s, const spec_field *f)
{
    return *(const int *)((const char *)s + f->offset);
}

int ppb_kernel_spec_field_count(int kind)
{
    int n;
    fields_of(kind, &n);
    return n;
}

const char *ppb_kernel_spec_field_name(int kind, int i)
{
    int n;
    const spec_field *f = fields_of(kind, &n);
    return i >= 0 && i < n ? f[i].name : NULL;
}

int ppb_kernel_spec_field_value(const ppb_kernel_spec *s, int i)
{
    int n;
    const spec_field *f = fields_of(s->kind, &n);
    return i >= 0 && i < n ? field_val(s, &f[i]) : 0;
}

void ppb_kernel_spec_format(const ppb_kernel_spec *s, char *buf, size_t len)
{
    int nf;
    const spec_field *f = fields_of(s->kind, &nf);
    size_t n = (size_t)snprintf(buf, len, "%s", ppb_kspec_kind_name(s->kind));
    for (int i = 0; i < nf && n < len; i++) {
        int v = field_val(s, &f[i]);
        if (strcmp(f[i].name, "dtype") == 0)
            n += (size_t)snprintf(buf + n, len - n, " dtype=%s", v == PPB_KDTYPE_FP16 ? "fp16" : "bf16");
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
    for (int k = 0; k <= PPB_KSPEC_INPUT_FILL; k++)
        if (strcmp(tok, kind_names[k]) == 0)
            s->kind = k;
    if (s->kind < 0)
        return ppb_fail(err, PPB_EINPUT,
                        "kernel spec: '%s' is not a kernel kind (prefill, decode, decode_reduce, input_fill)", tok);
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
                v = PPB_KDTYPE_FP16;
            else if (strcmp(value, "bf16") == 0)
                v = PPB_KDTYPE_BF16;
            else
                return ppb_fail(err, PPB_EINPUT, "kernel spec: dtype '%s' is not fp16 or bf16", value);
        } else {
            char *end = NULL;
            errno = 0;
            long lv = strtol(value, &end, 10);
            if (errno || end == value || *end != '\0' || lv < 0 || lv > 1 << 20)
                return ppb_fail(err, PPB_EINPUT, "kernel spec: %s='%s' is not a valid number", tok,
                                value);
            const long mma_max = s->kind == PPB_KSPEC_PREFILL ? PPB_KSPEC_MMA_WGMMA : PPB_KSPEC_MMA_SYNC;
            if (strcmp(tok, "mma") == 0 && lv > mma_max)
                return ppb_fail(err, PPB_EINPUT, "kernel spec: mma must be 0 or 1%s",
                                s->kind == PPB_KSPEC_PREFILL ? " (or 2: wgmma)" : "");
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

static const char *const type_names[] = {"__half", "__nv_bfloat16"};

void ppb_kernel_name_expression(const ppb_kernel_spec *s, char *buf, size_t len)
{
    const char *t = type_names[s->dtype == PPB_KDTYPE_FP16 ? 0 : 1];
    switch (s->kind) {
    case PPB_KSPEC_PREFILL:
        snprintf(buf, len, "prefix_prefill_kernel<%s, %d, %d, %d, %d, %d>", t, s->head_dim, s->block_m,
                 s->block_n, s->num_warps, s->use_mma);
        break;
    case PPB_KSPEC_DECODE:
        snprintf(buf, len, "paged_attention_kernel<%s, %d, %d, %d, %d, %s>", t, s->head_dim,
                 s->page_size, s->num_threads, s->partition_size, s->use_mma ? "true" : "false");
        break;
    case PPB_KSPEC_DECODE_REDUCE:
        snprintf(buf, len, "paged_attention_v2_reduce_kernel<%s, %d, %d, %d>", t, s->head_dim,
                 s->num_threads, s->partition_size);
        break;
    default:
        snprintf(buf, len, "input_fill_kernel<%d>", s->dtype);
        break;
    }
}

const char *ppb_kernel_spec_header(const ppb_kernel_spec *s)
{
    return s->kind == PPB_KSPEC_PREFILL      ? "prefix_prefill.cuh"
           : s->kind == PPB_KSPEC_INPUT_FILL ? "input_fill.cuh"
                                             : "paged_attention.cuh";
}

size_t ppb_kernel_args_size(int kind)
{
    return kind == PPB_KSPEC_PREFILL      ? sizeof(ppb_prefill_args)
           : kind == PPB_KSPEC_INPUT_FILL ? sizeof(ppb_fill_args)
                                          : sizeof(ppb_decode_args);
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
    if (ppb_grow((void **)&l->items, &l->cap, l->n, sizeof *l->items, 16) != PPB_OK)
        return PPB_ENOMEM;
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
