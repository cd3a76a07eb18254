#include "kernel_spec.h"

#include <errno.h>
#include <math.h>
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

static int max_len(const ppb_case *c, int decode)
{
    int m = 0;
    for (int b = 0; b < c->shape.batch; b++) {
        int v = decode ? ppb_case_context_len_of(c, b) : ppb_case_query_len_of(c, b);
        m = v > m ? v : m;
    }
    return m;
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

void ppb_kernel_args_for_case(const ppb_case *c, ppb_prefill_args *pa, ppb_decode_args *da)
{
    const ppb_shape *s = &c->shape;
    memset(pa, 0, sizeof *pa);
    memset(da, 0, sizeof *da);
    float sm_scale = 1.0f / sqrtf((float)s->head_dim);
    if (c->kernel == PPB_PREFIX_PREFILL) {
        pa->batch = s->batch;
        pa->max_query_len = max_len(c, 0);
        pa->num_heads = s->num_heads;
        pa->num_kv_heads = s->num_kv_heads;
        pa->head_dim = s->head_dim;
        pa->page_size = s->page_size;
        pa->sliding_window = s->sliding_window;
        int max_ctx = 0;
        for (int b = 0; b < s->batch; b++) {
            int v = ppb_case_context_len_of(c, b);
            max_ctx = v > max_ctx ? v : max_ctx;
        }
        pa->max_blocks_per_seq = max_ctx > 0 ? ceil_div(max_ctx, s->page_size) : 1;
        pa->sm_scale = sm_scale;
        return;
    }
    da->num_seqs = s->batch;
    da->num_heads = s->num_heads;
    da->num_kv_heads = s->num_kv_heads;
    da->head_dim = s->head_dim;
    da->page_size = s->page_size;
    da->max_seq_len = max_len(c, 1);
    da->max_blocks_per_seq = ceil_div(da->max_seq_len, s->page_size);
    da->sliding_window = s->sliding_window;
    da->sm_scale = sm_scale;
    /* The kernel indexes the v2 scratch with its own count (vLLM's gridDim.z). */
    if (c->config.version == 2)
        da->max_num_partitions = ceil_div(da->max_seq_len, c->config.partition_size);
}

#ifdef PPB_HAVE_CUDA
#include "decode_plan.h"
#include "prefill_plan.h"

unsigned ppb_kernel_smem_optin_for_cc(int cc)
{
    if (cc >= 90)
        return 232448; /* 227 KB: Hopper */
    if (cc == 80 || cc == 87)
        return 166912; /* 163 KB: A100, Orin */
    if (cc >= 86)
        return 101376; /* 99 KB: GA10x, Ada */
    if (cc >= 75)
        return 65536;  /* Turing */
    if (cc >= 70)
        return 98304;  /* 96 KB: Volta */
    return 49152;
}

/* Plan with a fixed path; 0 or -1 with reason (the plans' convention). */
static int plan_path(const ppb_case *c, int use_mma, int warp_size, unsigned smem_limit, ppb_kernel_launch *l,
                     char *reason, unsigned reason_len)
{
    const ppb_shape *s = &c->shape;
    const ppb_config *k = &c->config;
    memset(l->plan, 0, sizeof l->plan);
    ppb_kernel_args_for_case(c, &l->prefill, &l->decode);
    if (c->kernel == PPB_PREFIX_PREFILL) {
        ppb_prefill_config pc = {k->block_m, k->block_n, k->num_warps, use_mma, warp_size};
        return ppb_prefill_plan(&pc, &l->prefill, s->head_dim, s->dtype, smem_limit, &l->plan[0], reason, reason_len);
    }
    ppb_decode_args *a = &l->decode;
    l->kernel_parts = l->host_parts = 0;
    if (k->version == 2) {
        int host_p = ppb_case_host_partition_size(c);
        l->kernel_parts = (int)ppb_decode_num_partitions(a->max_seq_len, k->partition_size);
        l->host_parts = (int)ppb_decode_num_partitions(a->max_seq_len, host_p);
    }
    ppb_decode_config dc = {k->version, k->num_threads, k->partition_size, use_mma, warp_size};
    return ppb_decode_plan(&dc, a, s->head_dim, s->page_size, s->dtype, smem_limit, &l->plan[0], &l->plan[1],
                           reason, reason_len);
}

int ppb_kernel_launch_for_case(const ppb_case *c, int cc, int warp_size, unsigned smem_limit,
                               ppb_kernel_launch *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    int use_mma = 0;
    int rc = ppb_kernel_use_mma(c->config.path, cc, &use_mma, err);
    if (rc)
        return rc;
    char reason[400] = "";
    if (plan_path(c, use_mma, warp_size, smem_limit, out, reason, sizeof reason) != 0) {
        if (!(c->config.path == PPB_PATH_AUTO && use_mma))
            return ppb_fail(err, PPB_EREFUSED, "%s", reason);
        /* auto asked for "the best this device has": the portable path is next. */
        char simt_reason[400] = "";
        if (plan_path(c, 0, warp_size, smem_limit, out, simt_reason, sizeof simt_reason) != 0)
            return ppb_fail(err, PPB_EREFUSED, "mma path: %s; simt path: %s", reason, simt_reason);
        use_mma = 0;
        out->auto_fell_back = 1;
        snprintf(out->auto_reason, sizeof out->auto_reason, "%s", reason);
    }
    out->use_mma = use_mma;
    ppb_case chosen = *c;
    chosen.config.path = use_mma ? PPB_PATH_MMA : PPB_PATH_SIMT;
    return ppb_kernel_specs_for_case(&chosen, cc, out->spec, &out->n_specs, err);
}
#endif

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

int ppb_kernel_list_suites(const char *const *suite_paths, int n_paths, int cc, int warp_size, unsigned smem_limit,
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
            if (cases.items[i].config.impl != PPB_IMPL_BUILTIN)
                continue;
#ifdef PPB_HAVE_CUDA
            ppb_kernel_launch launch;
            int src = ppb_kernel_launch_for_case(&cases.items[i], cc, warp_size ? warp_size : 32,
                                                 smem_limit ? smem_limit : ppb_kernel_smem_optin_for_cc(cc),
                                                 &launch, &why);
            n = launch.n_specs;
            memcpy(specs, launch.spec, sizeof specs);
#else
            int src = ppb_kernel_specs_for_case(&cases.items[i], cc, specs, &n, &why);
#endif
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
