/* Target profiles and the feasibility model (docs/TARGETS.md has the formulas). */
#include "target.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_plan.h"
#include "kernel_view.h"
#include "prefill_plan.h"
#include "yaml_util.h"

/* ---- profile fields ------------------------------------------------------ */

typedef struct value_field {
    const char *name;
    size_t offset;        /* of the ppb_target_value in ppb_target */
    int integral;         /* whole numbers only */
    double min, max;
    int for_feasibility;  /* read by the judge: its alternatives can flip a verdict */
    int is_bytes;         /* shown as "N B (K KB)" */
} value_field;

#define TV(field) offsetof(ppb_target, field)
static const value_field value_fields[] = {
    {"warp_size", TV(warp_size), 1, 1, 1024, 1, 0},
    {"smem_per_block", TV(smem_per_block), 1, 1, 64.0 * 1024 * 1024, 1, 1},
    {"smem_per_sm", TV(smem_per_sm), 1, 1, 64.0 * 1024 * 1024, 1, 1},
    {"max_threads_per_block", TV(max_threads_per_block), 1, 1, 65536, 1, 0},
    {"max_threads_per_sm", TV(max_threads_per_sm), 1, 1, 1048576, 1, 0},
    {"max_blocks_per_sm", TV(max_blocks_per_sm), 1, 1, 65536, 1, 0},
    {"regs_per_sm", TV(regs_per_sm), 1, 1, 16.0 * 1024 * 1024, 1, 0},
    {"max_regs_per_thread", TV(max_regs_per_thread), 1, 1, 65536, 1, 0},
    {"sm_count", TV(sm_count), 1, 1, 1e6, 0, 0},
    {"mem_bytes", TV(mem_bytes), 1, 1, 1e15, 0, 1},
    {"mem_bandwidth", TV(mem_bandwidth), 0, 1, 1e16, 0, 0},
    {"fp16_flops", TV(fp16_flops), 0, 1, 1e18, 0, 0},
    {"smem_per_block_default", TV(smem_per_block_default), 1, 1, 64.0 * 1024 * 1024, 1, 1},
    {"smem_reserved_per_block", TV(smem_reserved_per_block), 1, 0, 1024.0 * 1024, 1, 1},
    {"compute_capability", TV(compute_capability), 0, 1, 20, 0, 0},
};
#define N_VALUE_FIELDS ((int)(sizeof value_fields / sizeof value_fields[0]))

static ppb_target_value *value_of(ppb_target *t, const value_field *vf)
{
    return (ppb_target_value *)((char *)t + vf->offset);
}

static const ppb_target_value *cvalue_of(const ppb_target *t, const value_field *vf)
{
    return (const ppb_target_value *)((const char *)t + vf->offset);
}

static const char *const confidences[] = {"measured", "vendor",     "seen",    "disputed",
                                          "estimated", "assumed", "unverified", "unknown", NULL};

int ppb_target_confidence_known(const char *word)
{
    for (int i = 0; confidences[i]; i++)
        if (strcmp(confidences[i], word) == 0)
            return 1;
    return 0;
}

/* ---- loading ------------------------------------------------------------- */

static int read_number(ppb_yaml *y, yaml_node_t *n, const value_field *vf, const char *field,
                       double *out, ppb_err *err)
{
    int rc = ppb_yaml_double(y, n, field, vf->min, vf->max, out, err);
    if (rc)
        return rc;
    if (vf->integral && *out != floor(*out))
        return ppb_yaml_fail(y, err, n, field, "%g is not a whole number", *out);
    return PPB_OK;
}

static int read_alternative(ppb_yaml *y, yaml_node_t *item, const value_field *vf,
                            ppb_target_value *tv, ppb_err *err)
{
    char field[96];
    snprintf(field, sizeof field, "%s.alternatives", vf->name);
    int i = tv->n_alt;
    tv->alt_source[i][0] = '\0';
    if (item->type == YAML_MAPPING_NODE) {
        static const char *const keys[] = {"value", "source", NULL};
        int rc = ppb_yaml_check_keys(y, item, field, keys, err);
        if (rc)
            return rc;
        yaml_node_t *v = ppb_yaml_get(y, item, "value");
        if (!v)
            return ppb_yaml_fail(y, err, item, field, "an alternative needs a value");
        rc = read_number(y, v, vf, field, &tv->alternatives[i], err);
        if (rc)
            return rc;
        yaml_node_t *src = ppb_yaml_get(y, item, "source");
        if (src) {
            rc = ppb_yaml_string(y, src, field, tv->alt_source[i], sizeof tv->alt_source[i], err);
            if (rc)
                return rc;
        }
    } else {
        int rc = read_number(y, item, vf, field, &tv->alternatives[i], err);
        if (rc)
            return rc;
    }
    if (tv->present && tv->alternatives[i] == tv->value)
        return ppb_yaml_fail(y, err, item, field, "%g repeats the value itself",
                             tv->alternatives[i]);
    for (int j = 0; j < i; j++)
        if (tv->alternatives[j] == tv->alternatives[i])
            return ppb_yaml_fail(y, err, item, field, "%g is listed twice", tv->alternatives[i]);
    tv->n_alt++;
    return PPB_OK;
}


/* A key of a judged figure that must be there, read as text ("NAME.KEY" in errors). */
static int read_text_key(ppb_yaml *y, yaml_node_t *node, const char *name, const char *key, const char *missing,
                         char *buf, size_t len, yaml_node_t **found, ppb_err *err)
{
    char field[96];
    snprintf(field, sizeof field, "%s.%s", name, key);
    *found = ppb_yaml_get(y, node, key);
    if (!*found)
        return ppb_yaml_fail(y, err, node, name, "%s %s", key, missing);
    return ppb_yaml_string(y, *found, field, buf, len, err);
}
static int read_value(ppb_yaml *y, yaml_node_t *node, const value_field *vf, ppb_target_value *tv,
                      ppb_err *err)
{
    static const char *const keys[] = {"value", "source", "confidence", "alternatives", NULL};
    int rc = ppb_yaml_check_keys(y, node, vf->name, keys, err);
    if (rc)
        return rc;
    memset(tv, 0, sizeof *tv);

    char field[96];
    yaml_node_t *conf = NULL, *src = NULL;
    if ((rc = read_text_key(y, node, vf->name, "confidence",
                            "is missing (measured, vendor, seen, disputed, estimated, assumed, unverified or unknown)",
                            tv->confidence, sizeof tv->confidence, &conf, err)))
        return rc;
    snprintf(field, sizeof field, "%s.confidence", vf->name);
    if (!ppb_target_confidence_known(tv->confidence))
        return ppb_yaml_fail(y, err, conf, field,
                             "'%s' is not one of measured, vendor, seen, disputed, estimated, "
                             "assumed, unverified, unknown",
                             tv->confidence);
    if ((rc = read_text_key(y, node, vf->name, "source",
                            "is missing: say where the figure comes from (or why it is unknown)", tv->source,
                            sizeof tv->source, &src, err)))
        return rc;
    snprintf(field, sizeof field, "%s.source", vf->name);
    if (tv->source[0] == '\0')
        return ppb_yaml_fail(y, err, src, field, "must not be empty");

    int unknown = strcmp(tv->confidence, "unknown") == 0;
    yaml_node_t *val = ppb_yaml_get(y, node, "value");
    snprintf(field, sizeof field, "%s.value", vf->name);
    if (unknown && val)
        return ppb_yaml_fail(y, err, val, field,
                             "a value marked unknown must not carry a figure (use assumed, "
                             "estimated or unverified and say why in source)");
    if (!unknown) {
        if (!val)
            return ppb_yaml_fail(y, err, node, vf->name,
                                 "value is missing (mark the confidence unknown if no figure is "
                                 "known)");
        rc = read_number(y, val, vf, field, &tv->value, err);
        if (rc)
            return rc;
        tv->present = 1;
    }

    yaml_node_t *alts = ppb_yaml_get(y, node, "alternatives");
    snprintf(field, sizeof field, "%s.alternatives", vf->name);
    if (alts) {
        if (unknown)
            return ppb_yaml_fail(y, err, alts, field,
                                 "an unknown value has no alternatives (mark it disputed)");
        if (alts->type != YAML_SEQUENCE_NODE)
            return ppb_yaml_fail(y, err, alts, field, "expected a list");
        int n = ppb_yaml_seq_len(alts);
        if (n > PPB_TARGET_MAX_ALT)
            return ppb_yaml_fail(y, err, alts, field, "more than %d alternatives",
                                 PPB_TARGET_MAX_ALT);
        for (int i = 0; i < n; i++) {
            rc = read_alternative(y, ppb_yaml_seq_item(y, alts, i), vf, tv, err);
            if (rc)
                return rc;
        }
    }
    if (strcmp(tv->confidence, "disputed") == 0 && tv->n_alt == 0)
        return ppb_yaml_fail(y, err, node, vf->name,
                             "a disputed value needs its alternatives (the other published "
                             "figures)");
    return PPB_OK;
}

static int valid_name(const char *name)
{
    if (!name[0])
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return 0;
    return name[0] != '.';
}

/* A limit that cannot hold (more per block than per SM) is a typo. */
static int check_order(ppb_yaml *y, yaml_node_t *root, const ppb_target *t,
                       const ppb_target_value *small, const char *small_name,
                       const ppb_target_value *big, const char *big_name, ppb_err *err)
{
    if (!small->present || !big->present || small->value <= big->value)
        return PPB_OK;
    return ppb_yaml_fail(y, err, ppb_yaml_get(y, root, small_name), small_name,
                         "%.0f is more than %s %.0f in profile '%s'", small->value, big_name,
                         big->value, t->name);
}

int ppb_target_load(const char *path, ppb_target *t, ppb_err *err)
{
    ppb_yaml y;
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    int rc = ppb_yaml_load(&y, path, err);
    if (rc)
        return rc;
    yaml_node_t *root = ppb_yaml_root(&y);

    const char *allowed[N_VALUE_FIELDS + 3];
    allowed[0] = "name";
    allowed[1] = "description";
    for (int i = 0; i < N_VALUE_FIELDS; i++)
        allowed[2 + i] = value_fields[i].name;
    allowed[N_VALUE_FIELDS + 2] = NULL;
    rc = ppb_yaml_check_keys(&y, root, NULL, allowed, err);
    if (rc)
        goto end;

    rc = ppb_yaml_profile_header(&y, root, t->name, sizeof t->name, t->description,
                                 sizeof t->description, err);
    if (rc)
        goto end;
    if (!valid_name(t->name)) {
        rc = ppb_yaml_fail(&y, err, ppb_yaml_get(&y, root, "name"), "name",
                           "'%s' must be letters, digits, '-', '_' or '.'", t->name);
        goto end;
    }
    for (int i = 0; i < N_VALUE_FIELDS; i++) {
        yaml_node_t *node = ppb_yaml_get(&y, root, value_fields[i].name);
        if (!node)
            continue;   /* absent = unknown */
        rc = read_value(&y, node, &value_fields[i], value_of(t, &value_fields[i]), err);
        if (rc)
            goto end;
    }
    rc = check_order(&y, root, t, &t->smem_per_block, "smem_per_block", &t->smem_per_sm,
                     "smem_per_sm", err);
    if (!rc)
        rc = check_order(&y, root, t, &t->smem_per_block_default, "smem_per_block_default",
                         &t->smem_per_block, "smem_per_block", err);
    if (!rc)
        rc = check_order(&y, root, t, &t->max_threads_per_block, "max_threads_per_block",
                         &t->max_threads_per_sm, "max_threads_per_sm", err);
    if (!rc)
        rc = check_order(&y, root, t, &t->max_regs_per_thread, "max_regs_per_thread",
                         &t->regs_per_sm, "regs_per_sm", err);
end:
    ppb_yaml_free(&y);
    return rc;
}

/* Names of the profiles in a directory, for the "no such target" message. */
static void list_profiles(const char *dir, char *buf, size_t len)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    const char *names[64];
    char store[64][64];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 64;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && l < 64 + 5 && strcmp(e->d_name + l - 5, ".yaml") == 0) {
            snprintf(store[n], sizeof store[n], "%.*s", (int)(l - 5), e->d_name);
            names[n] = store[n];
            n++;
        }
    }
    closedir(d);
    for (int i = 1; i < n; i++)   /* insertion sort: readdir order is arbitrary */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *tmp = names[j];
            names[j] = names[j - 1];
            names[j - 1] = tmp;
        }
    for (int i = 0; i < n; i++) {
        strncat(buf, i ? ", " : "", len - strlen(buf) - 1);
        strncat(buf, names[i], len - strlen(buf) - 1);
    }
}

static int is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".yaml") == 0);
}

int ppb_target_load_named(const char *suites_dir, const char *name, ppb_target *t, ppb_err *err)
{
    memset(t, 0, sizeof *t);
    if (!valid_name(name))
        return ppb_fail(err, PPB_EINPUT,
                        "target name '%s' must be letters, digits, '-', '_' or '.' (a profile's path is "
                        "accepted on the command line only)",
                        name);
    /* The search path, in order. */
    char dirs[8][4096];
    int n = 0;
    snprintf(dirs[n++], sizeof dirs[0], "%s/targets", suites_dir && suites_dir[0] ? suites_dir : ".");
    const char *env = getenv("PPBENCH_TARGETS");
    char *copy = env ? strdup(env) : NULL, *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && n < 7; tok = strtok_r(NULL, ":", &save))
        snprintf(dirs[n++], sizeof dirs[0], "%s", tok);
    free(copy);
#ifdef PPB_SOURCE_DIR
    snprintf(dirs[n++], sizeof dirs[0], "%s/suites/targets", PPB_SOURCE_DIR);
#endif
    char path[4096 + 128], looked[1024] = "", known[1024] = "";
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s.yaml", dirs[i], name);
        FILE *probe = fopen(path, "rb");
        if (!probe) {
            char here[512];
            list_profiles(dirs[i], here, sizeof here);
            size_t l = strlen(looked);
            snprintf(looked + l, sizeof looked - l, "%s%s", l ? ", " : "", dirs[i]);
            l = strlen(known);
            if (here[0])
                snprintf(known + l, sizeof known - l, "%s%s", l ? ", " : "", here);
            continue;
        }
        fclose(probe);
        int rc = ppb_target_load(path, t, err);
        if (!rc && strcmp(t->name, name) != 0)
            rc = ppb_fail(err, PPB_EINPUT, "%s: the profile is named '%s', not '%s'", path, t->name, name);
        return rc;
    }
    return ppb_fail(err, PPB_EINPUT, "no target profile '%s' (looked in %s; known: %s)", name, looked,
                    known[0] ? known : "none");
}

int ppb_target_load_arg(const char *suites_dir, const char *arg, ppb_target *t, ppb_err *err)
{
    if (!is_path(arg))
        return ppb_target_load_named(suites_dir, arg, t, err);
    memset(t, 0, sizeof *t);
    return ppb_target_load(arg, t, err);
}

/* ---- needs --------------------------------------------------------------- */

#define SEED_WARP 32

static int target_warp(const ppb_target *t)
{
    return t && t->warp_size.present ? (int)t->warp_size.value : SEED_WARP;
}

/* Compute capability as major * 10 + minor (0: unknown). */
static int target_cc(const ppb_target *t)
{
    return t && t->compute_capability.present ? (int)lround(t->compute_capability.value * 10.0) : 0;
}

void ppb_target_kernel_smem(const ppb_case *c, const ppb_target *t, unsigned fallback_limit, ppb_kernel_smem *out)
{
    memset(out, 0, sizeof *out);
    const ppb_shape *s = &c->shape;
    const ppb_config *k = &c->config;
    out->warp_size = target_warp(t);
    out->limit = t && t->smem_per_block.present ? (unsigned)t->smem_per_block.value
                                                : (fallback_limit ? fallback_limit : UINT_MAX);
    /* The path the built-in kernels would take, compiled by NVRTC (kernel_view.h: auto =
     * the tensor-core path where the compute capability allows it and its plan accepts
     * the case). A case no path can run is measured on the one asked for (auto: the
     * portable one). */
    ppb_builtin_launch launch;
    ppb_err refused;
    int use_mma;
    if (ppb_kernel_launch_for_case(c, target_cc(t), out->warp_size, out->limit, 0, &launch, &refused) == PPB_OK)
        use_mma = launch.use_mma;
    else if (k->path == PPB_PATH_WGMMA)   /* decode has no wgmma layout: its tensor-core one */
        use_mma = c->kernel == PPB_PREFIX_PREFILL ? PPB_KSPEC_MMA_WGMMA : 1;
    else
        use_mma = k->path == PPB_PATH_MMA;
    /* The plans' configs come from the case as the kernels see it (kernel_view.h), by name. */
    ppb_kernel_view view;
    ppb_kernel_view_of_case(c, &view);
    const char *path_name;
    if (c->kernel == PPB_PREFIX_PREFILL) {
        ppb_prefill_config cfg = ppb_builtin_prefill_plan_config(&view.prefill_cfg, use_mma, out->warp_size);
        out->use_mma = cfg.use_mma;
        out->bytes = (long)ppb_prefill_smem_bytes(&cfg, s->head_dim);
        out->known = out->bytes > 0;
        path_name = cfg.use_mma == PPB_KSPEC_MMA_WGMMA ? "wgmma" : cfg.use_mma ? "tensor-core" : "portable";
        if (out->known)
            snprintf(out->arithmetic, sizeof out->arithmetic,
                     "built-in kernel's %s layout (kernels/prefill_plan.c) for BLOCK_M %d, BLOCK_N %d, %d warps of "
                     "%d, D %d: %ld B",
                     path_name, k->block_m, k->block_n, k->num_warps, cfg.use_mma ? 32 : out->warp_size, s->head_dim,
                     out->bytes);
        else
            snprintf(out->arithmetic, sizeof out->arithmetic,
                     "the built-in kernel has no %s layout for BLOCK_M %d, BLOCK_N %d, %d warps, D %d", path_name,
                     k->block_m, k->block_n, k->num_warps, s->head_dim);
        return;
    }
    ppb_decode_config cfg = ppb_builtin_decode_plan_config(&view.decode_cfg, use_mma, out->warp_size);
    ppb_decode_smem need;
    out->use_mma = cfg.use_mma;
    path_name = cfg.use_mma ? "tensor-core" : "portable";
    if (ppb_decode_smem_need(&cfg, s->head_dim, s->page_size, s->num_heads, s->num_kv_heads, s->seq_len, out->limit,
                             &need) != 0) {
        snprintf(out->arithmetic, sizeof out->arithmetic,
                 "the built-in kernels have no %s layout for version %d, %d threads in warps of %d, "
                 "partition_size %d",
                 path_name, k->version, k->num_threads, out->warp_size, k->partition_size);
        return;
    }
    out->known = 1;
    out->heads_per_cta = need.heads_per_cta;
    out->main_bytes = (long)need.main_bytes;
    out->reduce_bytes = (long)need.reduce_bytes;
    out->partitions = (long)need.partitions;
    out->bytes = out->main_bytes > out->reduce_bytes ? out->main_bytes : out->reduce_bytes;
    int len = snprintf(out->arithmetic, sizeof out->arithmetic,
                       "built-in kernel's %s layout (kernels/decode_plan.c), %d threads in warps of %d: main kernel "
                       "%ld B for %d heads per block (%s %d tokens)",
                       path_name, k->num_threads, out->warp_size, out->main_bytes, out->heads_per_cta,
                       k->version == 1 ? "v1: the logits of all" : "v2: the logits of a partition of",
                       k->version == 1 ? s->seq_len : k->partition_size);
    if (k->version == 2 && len > 0 && (size_t)len < sizeof out->arithmetic)
        snprintf(out->arithmetic + len, sizeof out->arithmetic - (size_t)len, "; reduce %ld B for %ld partitions",
                 out->reduce_bytes, out->partitions);
}

static void prefill_needs(const ppb_case *c, const ppb_target *t, ppb_needs *n)
{
    long elem = (long)ppb_dtype_size(c->shape.dtype);
    long d = c->shape.head_dim, bn = c->config.block_n;
    ppb_kernel_smem ks;
    ppb_target_kernel_smem(c, t, 0, &ks);
    /* The seed document's estimate, shown beside the kernel's figure: K and V tiles only. */
    long kv = 2 * bn * d * elem;
    n->smem_bytes = ks.bytes;
    n->seed_smem_bytes = kv;
    snprintf(n->smem_arithmetic, sizeof n->smem_arithmetic,
             "%s; the seed counts K+V only: %ld B (K+V tiles 2 x %ld x %ld x %ld B = %ld B)", ks.arithmetic, kv, bn,
             d, elem, kv);

    int warp = target_warp(t);
    n->threads = c->config.num_warps * warp;
    n->seed_threads = c->config.num_warps * SEED_WARP;
    int len = snprintf(n->threads_arithmetic, sizeof n->threads_arithmetic,
                       "threads %d warps x %d = %d", c->config.num_warps, warp, n->threads);
    if (!t->warp_size.present)
        snprintf(n->threads_arithmetic + len, sizeof n->threads_arithmetic - (size_t)len,
                 " (warp size unknown on %s: 32 assumed)", t->name);
    else if (warp != SEED_WARP)
        snprintf(n->threads_arithmetic + len, sizeof n->threads_arithmetic - (size_t)len,
                 " (the seed assumes a 32-wide warp: %d)", n->seed_threads);
}

/* The built-in decode kernels (kernels/decode_plan.c): the main kernel's dynamic shared
 * memory at the heads per block the plan picks, and for v2 the reduce's; the larger one. */
static void decode_needs(const ppb_case *c, const ppb_target *t, ppb_needs *n)
{
    int warp = target_warp(t);
    n->threads = c->config.num_threads;
    n->seed_threads = c->config.num_threads;
    long warps = (n->threads + warp - 1) / warp;
    snprintf(n->threads_arithmetic, sizeof n->threads_arithmetic,
             "threads %d (num_threads; %ld warps of %d%s)", n->threads, warps, warp,
             t->warp_size.present ? "" : ", warp size unknown: 32 assumed");

    ppb_kernel_smem ks;
    ppb_target_kernel_smem(c, t, 0, &ks);
    n->smem_bytes = ks.bytes;
    n->seed_smem_bytes = 0;
    snprintf(n->smem_arithmetic, sizeof n->smem_arithmetic, "%s", ks.arithmetic);
}

void ppb_target_needs(const ppb_case *c, const ppb_target *t, const ppb_resources *measured,
                      ppb_needs *needs)
{
    memset(needs, 0, sizeof *needs);
    if (c->kernel == PPB_PREFIX_PREFILL)
        prefill_needs(c, t, needs);
    else
        decode_needs(c, t, needs);

    if (measured && measured->known) {
        long formula = needs->smem_bytes;
        needs->smem_bytes = (long)measured->static_smem + measured->dynamic_smem;
        needs->registers_per_thread = measured->registers;
        needs->from_compiled = 1;
        snprintf(needs->smem_arithmetic, sizeof needs->smem_arithmetic,
                 "measured from the compiled kernel: %d B static + %d B dynamic = %ld B, %d "
                 "registers/thread; the formula says %ld B",
                 measured->static_smem, measured->dynamic_smem, needs->smem_bytes,
                 measured->registers, formula);
    }
    snprintf(needs->arithmetic, sizeof needs->arithmetic, "%s; %s", needs->smem_arithmetic,
             needs->threads_arithmetic);
}

/* ---- judging ------------------------------------------------------------- */

/* Append "; "-separated clauses to a fixed buffer (truncates, never overflows). */
static void clause(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void clause(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 3 >= len)
        return;
    if (used) {
        memcpy(buf + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

static void describe_value(const ppb_target *t, const char *field, const ppb_target_value *v,
                           char *buf, size_t len)
{
    snprintf(buf, len, "%s %s, %s", t->name, field, v->confidence);
}

static void judge_needs(const ppb_case *c, const ppb_target *t, const ppb_needs *n,
                        ppb_feasibility *out)
{
    (void)c;
    char violations[1024] = "", fine[1024] = "", unchecked[256] = "";
    char what[160];
    snprintf(out->limiter, sizeof out->limiter, "unknown");
    out->blocks_per_sm = 0;

    const ppb_target_value *spb = &t->smem_per_block;
    if (spb->present) {
        describe_value(t, "smem_per_block", spb, what, sizeof what);
        if (n->smem_bytes > (long)spb->value)
            clause(violations, sizeof violations,
                   "needs %ld B shared memory (%s) > %.0f B per block (%s)", n->smem_bytes,
                   n->smem_arithmetic, spb->value, what);
        else {
            clause(fine, sizeof fine, "needs %ld B shared memory (%s) <= %.0f B per block (%s)",
                   n->smem_bytes, n->smem_arithmetic, spb->value, what);
            const ppb_target_value *def = &t->smem_per_block_default;
            if (def->present && n->smem_bytes > (long)def->value)
                clause(fine, sizeof fine, "over the %.0f B default: the launch must opt in",
                       def->value);
        }
    } else {
        clause(unchecked, sizeof unchecked, "smem_per_block");
    }

    const ppb_target_value *tpb = &t->max_threads_per_block;
    if (tpb->present) {
        describe_value(t, "max_threads_per_block", tpb, what, sizeof what);
        if (n->threads > (long)tpb->value)
            clause(violations, sizeof violations, "needs %d threads (%s) > %.0f per block (%s)",
                   n->threads, n->threads_arithmetic, tpb->value, what);
        else
            clause(fine, sizeof fine, "%d threads (%s) <= %.0f per block", n->threads,
                   n->threads_arithmetic, tpb->value);
    } else {
        clause(unchecked, sizeof unchecked, "max_threads_per_block");
    }

    long regs = n->registers_per_thread;
    if (regs > 0) {
        const ppb_target_value *mrt = &t->max_regs_per_thread, *rsm = &t->regs_per_sm;
        if (mrt->present && regs > (long)mrt->value) {
            describe_value(t, "max_regs_per_thread", mrt, what, sizeof what);
            clause(violations, sizeof violations, "needs %ld registers/thread > %.0f (%s)", regs,
                   mrt->value, what);
        }
        if (rsm->present && regs * n->threads > (long)rsm->value) {
            describe_value(t, "regs_per_sm", rsm, what, sizeof what);
            clause(violations, sizeof violations,
                   "needs %ld registers x %d threads = %ld registers > %.0f per SM (%s)", regs,
                   n->threads, regs * n->threads, rsm->value, what);
        }
    }

    long reserved = t->smem_reserved_per_block.present ? (long)t->smem_reserved_per_block.value : 0;
    long smem_on_sm = n->smem_bytes + reserved;
    const ppb_target_value *ssm = &t->smem_per_sm;
    if (ssm->present && smem_on_sm > (long)ssm->value) {
        describe_value(t, "smem_per_sm", ssm, what, sizeof what);
        clause(violations, sizeof violations, "needs %ld B shared memory%s > %.0f B per SM (%s)",
               smem_on_sm, reserved ? " (with the runtime's reserve)" : "", ssm->value, what);
    }
    const ppb_target_value *tsm = &t->max_threads_per_sm;
    if (tsm->present && n->threads > (long)tsm->value) {
        describe_value(t, "max_threads_per_sm", tsm, what, sizeof what);
        clause(violations, sizeof violations, "needs %d threads > %.0f per SM (%s)", n->threads,
               tsm->value, what);
    }

    out->feasible = violations[0] == '\0';
    out->reason[0] = '\0';
    if (!out->feasible) {
        snprintf(out->reason, sizeof out->reason, "%s", violations);
        return;
    }

    /* Occupancy: the fewest blocks any one resource allows. */
    long best = -1;
    char how[200] = "", missing[160] = "";
    if (ssm->present && smem_on_sm > 0) {
        long b = (long)ssm->value / smem_on_sm;
        best = b;
        snprintf(out->limiter, sizeof out->limiter, "smem");
        if (reserved)
            snprintf(how, sizeof how, "%.0f B per SM / (%ld + %ld reserved) B", ssm->value,
                     n->smem_bytes, reserved);
        else
            snprintf(how, sizeof how, "%.0f B per SM / %ld B", ssm->value, n->smem_bytes);
    } else if (!ssm->present) {
        clause(missing, sizeof missing, "smem_per_sm");
    }
    if (tsm->present && n->threads > 0) {
        long b = (long)tsm->value / n->threads;
        if (best < 0 || b < best) {
            best = b;
            snprintf(out->limiter, sizeof out->limiter, "threads");
            snprintf(how, sizeof how, "%.0f threads per SM / %d", tsm->value, n->threads);
        }
    } else if (!tsm->present) {
        clause(missing, sizeof missing, "max_threads_per_sm");
    }
    if (regs > 0 && t->regs_per_sm.present) {
        long b = (long)t->regs_per_sm.value / (regs * n->threads);
        if (best < 0 || b < best) {
            best = b;
            snprintf(out->limiter, sizeof out->limiter, "registers");
            snprintf(how, sizeof how, "%.0f registers per SM / (%ld x %d)",
                     t->regs_per_sm.value, regs, n->threads);
        }
    } else {
        clause(missing, sizeof missing, regs > 0 ? "regs_per_sm" : "registers/thread");
    }
    if (t->max_blocks_per_sm.present) {
        long b = (long)t->max_blocks_per_sm.value;
        if (best < 0 || b < best) {
            best = b;
            snprintf(out->limiter, sizeof out->limiter, "blocks");
            snprintf(how, sizeof how, "at most %ld blocks per SM", b);
        }
    } else {
        clause(missing, sizeof missing, "max_blocks_per_sm");
    }

    snprintf(out->reason, sizeof out->reason, "%s", fine);
    if (best >= 0) {
        out->blocks_per_sm = (int)best;
        clause(out->reason, sizeof out->reason, "%ld blocks/SM, limited by %s (%s)%s%s%s", best,
               out->limiter, how, missing[0] ? " (an upper bound: " : "", missing,
               missing[0] ? " unknown)" : "");
    } else {
        clause(out->reason, sizeof out->reason, "blocks/SM unknown (%s unknown on %s)", missing,
               t->name);
    }
    if (unchecked[0])
        clause(out->reason, sizeof out->reason, "not checked: %s unknown on %s", unchecked,
               t->name);
}

static void format_figure(const value_field *vf, double v, const char *source, char *buf,
                          size_t len)
{
    char amount[64];
    if (vf->is_bytes) {
        if (fmod(v, 1024.0 * 1024 * 1024) == 0)
            snprintf(amount, sizeof amount, "%.0f B (%.0f GiB", v, v / (1024.0 * 1024 * 1024));
        else if (fmod(v, 1024.0) == 0)
            snprintf(amount, sizeof amount, "%.0f B (%.0f KB", v, v / 1024.0);
        else
            snprintf(amount, sizeof amount, "%.0f B (%.1f KB", v, v / 1024.0);
        snprintf(buf, len, "%s%s%s)", amount, source[0] ? ", " : "", source);
    } else {
        snprintf(buf, len, "%.0f%s%s%s", v, source[0] ? " (" : "", source, source[0] ? ")" : "");
    }
}

void ppb_target_judge(const ppb_case *c, const ppb_target *t, const ppb_resources *measured,
                      ppb_feasibility *out)
{
    memset(out, 0, sizeof *out);
    out->judged = 1;
    ppb_needs n;
    ppb_target_needs(c, t, measured, &n);
    judge_needs(c, t, &n, out);

    /* Flips: put each alternative of a value the judge reads in place of the
     * value, judge again, and say which ones change the answer. */
    char flips[512] = "", checked[256] = "";
    ppb_target *alt = malloc(sizeof *alt);
    if (!alt)
        return;
    for (int i = 0; i < N_VALUE_FIELDS; i++) {
        const value_field *vf = &value_fields[i];
        const ppb_target_value *tv = cvalue_of(t, vf);
        if (!vf->for_feasibility || tv->n_alt == 0)
            continue;
        for (int a = 0; a < tv->n_alt; a++) {
            *alt = *t;
            ppb_target_value *av = value_of(alt, vf);
            av->value = tv->alternatives[a];
            av->present = 1;
            ppb_needs an;
            ppb_feasibility af;
            ppb_target_needs(c, alt, measured, &an);
            judge_needs(c, alt, &an, &af);
            char fig[256];
            format_figure(vf, tv->alternatives[a], tv->alt_source[a], fig, sizeof fig);
            if (af.feasible != out->feasible) {
                if (strcmp(vf->name, "smem_per_block") == 0)
                    clause(flips, sizeof flips, "%s at %s", af.feasible ? "feasible" : "infeasible",
                           fig);
                else
                    clause(flips, sizeof flips, "%s at %s %s",
                           af.feasible ? "feasible" : "infeasible", vf->name, fig);
            } else {
                char brief[96];
                snprintf(brief, sizeof brief, "%s %.0f", vf->name, tv->alternatives[a]);
                clause(checked, sizeof checked, "%s", brief);
            }
        }
    }
    free(alt);
    if (flips[0])
        snprintf(out->flips, sizeof out->flips, "%s", flips);
    else if (checked[0])
        snprintf(out->flips, sizeof out->flips, "no disputed figure flips it (tried %s)", checked);
}
