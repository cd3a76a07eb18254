#include "impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "doc_text.h"
#include "files.h"
#include "hash.h"
#include "kernel_case.h"
#include "ppb_kernel_abi_v2.h"
#include "stop_signals.h"

#define MAX_SEARCH_PATHS 16
#define MAX_LIBRARIES 64

/* ---- the search path --------------------------------------------------------------- */

static char *explicit_paths[MAX_SEARCH_PATHS];
static int n_explicit;

void ppb_impl_add_search_path(const char *path)
{
    char *copy = n_explicit < MAX_SEARCH_PATHS ? strdup(path) : NULL;
    if (copy)
        explicit_paths[n_explicit++] = copy;
}

int ppb_impl_search_path_count(void) { return n_explicit; }

const char *ppb_impl_search_path(int i) { return i >= 0 && i < n_explicit ? explicit_paths[i] : NULL; }

typedef struct path_list {
    char items[MAX_LIBRARIES][4096];
    int n;
} path_list;

static void add_path(path_list *l, const char *path)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->items[i], path) == 0)
            return;
    if (l->n < MAX_LIBRARIES)
        snprintf(l->items[l->n++], sizeof l->items[0], "%s", path);
}

static int is_plugin_file(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "libppbk_", 8) == 0 && n > 11 && strcmp(name + n - 3, ".so") == 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A file as given; a folder: its libppbk_*.so in name order (a stable search order). */
static void add_entry(path_list *l, const char *entry)
{
    struct stat st;
    if (!entry[0] || stat(entry, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        add_path(l, entry);
        return;
    }
    DIR *d = opendir(entry);
    if (!d)
        return;
    char *names[MAX_LIBRARIES];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_LIBRARIES)
        if (is_plugin_file(e->d_name) && (names[n] = strdup(e->d_name)) != NULL)
            n++;
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", entry, names[i]);
        add_path(l, path);
        free(names[i]);
    }
}

/* The search path's entries in order (files and folders, as given). */
static void search_entries(path_list *l)
{
    l->n = 0;
    for (int i = 0; i < n_explicit; i++)
        add_path(l, explicit_paths[i]);
    const char *env = getenv("PPBENCH_PLUGIN_PATH");
    if (env) {
        char *copy = strdup(env), *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save))
            add_path(l, tok);
        free(copy);
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 16);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            snprintf(slash, sizeof exe - (size_t)(slash - exe), "/plugins");
            add_path(l, exe);
        }
    }
    char cache[4096];
    if (ppb_user_cache_path("plugins", cache, sizeof cache) == 0)
        add_path(l, cache);
}

/* Every library on the search path: files as given, folders' libppbk_*.so. */
static void search_path(path_list *l)
{
    path_list *entries = malloc(sizeof *entries);
    l->n = 0;
    if (!entries)
        return;
    search_entries(entries);
    for (int i = 0; i < entries->n; i++)
        add_entry(l, entries->items[i]);
    free(entries);
}

/* ---- older ABI versions --------------------------------------------------------------- */

/* Versions 3 and on share one table; version 2 is called through the adapter
 * below. Version 4 appended num_stages to the prefill config, version 5
 * kv_layout to the ops tables, version 6 stage to the prefill ops (and
 * num_tokens, num_blocks to the prefill arguments, which an older plugin
 * never reads). */
#define ABI_VERSION_3 3u
#define ABI_VERSION_4 4u
#define ABI_VERSION_5 5u
#define ABI_VERSION_6 6u

/* The configs as versions 2 and 3 laid them out: dtype .. path, eight ints. A
 * later version only appends members, so these bytes are the start of the
 * current structs (the assertions below). */
#define ABI3_CONFIG_BYTES (8 * sizeof(int))

/* How many bytes of each config a plugin of ABI version `abi` reads. */
_Static_assert(PPBK_ABI_VERSION == ABI_VERSION_6,
               "a new kernel ABI version: config_bytes_seen, kv_layout_of and stage_of must say what plugins of "
               "version 6 read");
static size_t config_bytes_seen(unsigned abi, ppb_kernel_kind kernel)
{
    if (abi < ABI_VERSION_4)
        return ABI3_CONFIG_BYTES;
    return kernel == PPB_PREFIX_PREFILL ? sizeof(ppbk_prefill_config) : sizeof(ppbk_decode_config);
}

/* A plugin built before a parameter was appended to its config cannot see it:
 * it would run its own choice under a case that asks for another value. Such a
 * case is refused for it unless the parameter is at its default (which leaves
 * the choice to the implementation), naming the parameter and the fix. Expanded
 * over a parameter list inside refuse_unseen_params (c, seen, abi, impl, err). */
#define REFUSE_UNSEEN(cfg_type, name, NAME, key, min, max, def, omit)                                           \
    if (offsetof(cfg_type, name) >= seen && c->config.name != (def))                                        \
        return ppb_fail(err, PPB_EREFUSED,                                                                    \
                        "impl %s: built against kernel ABI version %u, which has no " #name ": it cannot honour " \
                        #name "=%d; rebuild it against kernels/ppb_kernel_abi.h (version %d)",                 \
                        impl, abi, c->config.name, PPBK_ABI_VERSION);

static int refuse_unseen_params(unsigned abi, const ppb_case *c, const char *impl, ppb_err *err)
{
    size_t seen = config_bytes_seen(abi, c->kernel);
    if (c->kernel == PPB_PREFIX_PREFILL) {
        PPBK_PREFILL_PARAMS(REFUSE_UNSEEN, ppbk_prefill_config)
    } else {
        PPBK_DECODE_PARAMS(REFUSE_UNSEEN, ppbk_decode_config)
    }
    return PPB_OK;
}
#undef REFUSE_UNSEEN

/* ---- version-2 tables ---------------------------------------------------------------- */

/* A table of kernel ABI version 2 (ppb_kernel_abi_v2.h: the same table without
 * the context) as the current version: ops whose context is the adapter itself
 * and whose functions call the version-2 ones without it. Where the version-2 table has
 * NULL (no kernel, no prepare, a missing refuse or launch), so does the face,
 * so the loader's checks and the optional prepare read the same. */
typedef struct abi2_adapter {
    const ppbk_v2_impl *v2;
    ppbk_impl table;         /* what everything after loading calls */
    ppbk_prefill_ops prefill;
    ppbk_decode_ops decode_v1, decode_v2;
} abi2_adapter;

/* The adapter hands version-2 functions the current device, configs,
 * resources and argument structs as they are: right only while those are
 * version 2's, or extend them at the end (version 3 changed function types
 * only; version 4 appended num_stages to the prefill config, which a version-2
 * plugin does not read and is never asked for: refuse_unseen_params; version 6
 * num_tokens and num_blocks to the prefill arguments, facts it never reads). A
 * version that changes one otherwise must convert it here, or stop loading
 * version 2. Sizes on LP64. */
#if defined(__LP64__)
_Static_assert(sizeof(ppbk_device) == 32 && offsetof(ppbk_prefill_config, path) + sizeof(int) == ABI3_CONFIG_BYTES &&
                   sizeof(ppbk_prefill_config) >= ABI3_CONFIG_BYTES && sizeof(ppbk_decode_config) == ABI3_CONFIG_BYTES &&
                   sizeof(ppbk_resources) == 20 && offsetof(ppb_prefill_args, num_tokens) == 128 &&
                   sizeof(ppb_prefill_args) == 136 && sizeof(ppb_decode_args) == 112 &&
                   sizeof(ppbk_v2_impl) == 80 && sizeof(ppbk_v2_prefill_ops) == 24 && sizeof(ppbk_v2_decode_ops) == 24,
               "a struct version-2 plugins are handed changed: convert it in the adapter (or stop loading version 2)");
#endif

static const ppbk_v2_impl *abi2_of(void *ctx) { return ((const abi2_adapter *)ctx)->v2; }

static int abi2_prefill_refuse(void *ctx, const ppbk_device *d, const ppbk_prefill_config *c,
                               const ppb_prefill_args *s, char *w, size_t n)
{
    return abi2_of(ctx)->prefill->refuse(d, c, s, w, n);
}
static int abi2_prefill_launch(void *ctx, const ppbk_device *d, const ppbk_prefill_config *c,
                               const ppb_prefill_args *a, void *st, char *w, size_t n)
{
    return abi2_of(ctx)->prefill->launch(d, c, a, st, w, n);
}
static int abi2_prefill_prepare(void *ctx, const ppbk_device *d, const ppbk_prefill_config *c,
                                const ppb_prefill_args *s, ppbk_resources *r, char *w, size_t n)
{
    return abi2_of(ctx)->prefill->prepare(d, c, s, r, w, n);
}

/* decode_v1 and decode_v2 each forward to their own version-2 ops. */
#define ABI2_DECODE(which)                                                                                   \
    static int abi2_##which##_refuse(void *ctx, const ppbk_device *d, const ppbk_decode_config *c,          \
                                     const ppb_decode_args *s, char *w, size_t n)                           \
    {                                                                                                        \
        return abi2_of(ctx)->which->refuse(d, c, s, w, n);                                                   \
    }                                                                                                        \
    static int abi2_##which##_launch(void *ctx, const ppbk_device *d, const ppbk_decode_config *c,          \
                                     const ppb_decode_args *a, void *st, char *w, size_t n)                 \
    {                                                                                                        \
        return abi2_of(ctx)->which->launch(d, c, a, st, w, n);                                               \
    }                                                                                                        \
    static int abi2_##which##_prepare(void *ctx, const ppbk_device *d, const ppbk_decode_config *c,         \
                                      const ppb_decode_args *s, ppbk_resources *r, char *w, size_t n)       \
    {                                                                                                        \
        return abi2_of(ctx)->which->prepare(d, c, s, r, w, n);                                               \
    }
ABI2_DECODE(decode_v1)
ABI2_DECODE(decode_v2)
#undef ABI2_DECODE

static void abi2_wrap(abi2_adapter *a, const ppbk_v2_impl *v2)
{
    memset(a, 0, sizeof *a);
    a->v2 = v2;
    a->table.abi_version = PPBK_ABI_VERSION;
    a->table.struct_size = sizeof a->table;
    a->table.name = v2->name;
    a->table.version = v2->version;
    a->table.source = v2->source;
    a->table.backends = v2->backends;
    /* open and close: abi2_open / abi2_close (the face's stay NULL: they take no adapter). */
    if (v2->prefill) {
        a->prefill.refuse = v2->prefill->refuse ? abi2_prefill_refuse : NULL;
        a->prefill.launch = v2->prefill->launch ? abi2_prefill_launch : NULL;
        a->prefill.prepare = v2->prefill->prepare ? abi2_prefill_prepare : NULL;
        a->table.prefill = &a->prefill;
    }
    const struct {
        const ppbk_v2_decode_ops *from;
        ppbk_decode_ops *to, with;
        const ppbk_decode_ops **slot;
    } decode[] = {
        {v2->decode_v1, &a->decode_v1,
         {abi2_decode_v1_refuse, abi2_decode_v1_launch, abi2_decode_v1_prepare, PPB_KV_LAYOUT_VLLM},
         &a->table.decode_v1},
        {v2->decode_v2, &a->decode_v2,
         {abi2_decode_v2_refuse, abi2_decode_v2_launch, abi2_decode_v2_prepare, PPB_KV_LAYOUT_VLLM},
         &a->table.decode_v2},
    };
    for (size_t i = 0; i < sizeof decode / sizeof *decode; i++) {
        if (!decode[i].from)
            continue;
        decode[i].to->refuse = decode[i].from->refuse ? decode[i].with.refuse : NULL;
        decode[i].to->launch = decode[i].from->launch ? decode[i].with.launch : NULL;
        decode[i].to->prepare = decode[i].from->prepare ? decode[i].with.prepare : NULL;
        *decode[i].slot = decode[i].to;
    }
}

/* The version-2 open, and the adapter as the context of every later call. */
static int abi2_open(abi2_adapter *a, const ppbk_device *dev, void **ctx, char *why, size_t why_len)
{
    int rc = a->v2->open ? a->v2->open(dev, why, why_len) : PPBK_OK;
    if (rc == PPBK_OK)
        *ctx = a;
    return rc;
}

static void abi2_close(abi2_adapter *a)
{
    if (a->v2->close)
        a->v2->close();
}

/* ---- loading one library ----------------------------------------------------------- */

/* A loaded library. Kept open for the life of the process: its table and
 * functions are called until exit. */
typedef struct loaded {
    ppb_impl_info info;
    void *handle;
    const ppbk_impl *table;  /* the library's own, or &abi2.table for a version-2 one */
    int is_abi2;
    abi2_adapter abi2;
    int open_state;          /* 0 not opened, 1 opened, -1 open failed */
    void *ctx;               /* what open stored (opened) */
    char open_error[512];
} loaded;

static loaded libraries[MAX_LIBRARIES];
static int n_libraries;
static int scanned;

static void file_checksum(const char *path, char out[17])
{
    FILE *f = fopen(path, "rb");
    uint64_t h = PPB_FNV1A64_OFFSET;
    if (f) {
        unsigned char buf[1 << 16];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            h = ppb_fnv1a64_update(h, buf, n);
        fclose(f);
    }
    ppb_fnv1a64_hex(h, out);
}

/* A library someone else could have replaced is not run (its constructors run
 * at dlopen): the file and its folder must belong to this user or root and be
 * writable by nobody else, as ssh asks of a key. PPBENCH_TRUST_PLUGINS=1 lifts it. */
static int untrusted(const char *path, char *why, size_t len)
{
    const char *trust = getenv("PPBENCH_TRUST_PLUGINS");
    if (trust && strcmp(trust, "1") == 0)
        return 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    const char *checked[2] = {path, dir};
    for (int i = 0; i < 2; i++) {
        struct stat st;
        if (stat(checked[i], &st) != 0)
            return snprintf(why, len, "cannot check %s: %s", checked[i], strerror(errno)), 1;
        if (st.st_uid != getuid() && st.st_uid != 0)
            return snprintf(why, len, "not loaded: %s belongs to another user (uid %u); PPBENCH_TRUST_PLUGINS=1 "
                            "loads it anyway", checked[i], (unsigned)st.st_uid), 1;
        if (st.st_mode & (S_IWGRP | S_IWOTH))
            return snprintf(why, len, "not loaded: %s is writable by %s (chmod go-w it); PPBENCH_TRUST_PLUGINS=1 "
                            "loads it anyway", checked[i], st.st_mode & S_IWOTH ? "everyone" : "its group"), 1;
    }
    return 0;
}

static void load_library(loaded *l, const char *path)
{
    memset(l, 0, sizeof *l);
    ppb_impl_info *info = &l->info;
    snprintf(info->path, sizeof info->path, "%s", path);
    file_checksum(path, info->checksum);
    if (untrusted(path, info->error, sizeof info->error))
        return;
    dlerror();
    l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!l->handle) {
        const char *why = dlerror();
        snprintf(info->error, sizeof info->error, "cannot load: %s", why ? why : "dlopen failed");
        return;
    }
    void *sym = dlsym(l->handle, PPBK_ENTRY_SYMBOL);
    if (!sym) {
        snprintf(info->error, sizeof info->error, "no symbol %s: not a ppbench kernel plugin",
                 PPBK_ENTRY_SYMBOL);
        return;
    }
    ppbk_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const ppbk_impl *t = entry();
    if (!t) {
        snprintf(info->error, sizeof info->error, "%s returned no table", PPBK_ENTRY_SYMBOL);
        return;
    }
    /* abi_version and struct_size lead the table in every version. */
    info->abi_version = t->abi_version;
    if (t->abi_version < PPBK_ABI_VERSION_2 || t->abi_version > PPBK_ABI_VERSION) {
        snprintf(info->error, sizeof info->error,
                 "kernel ABI version %u; this ppbench loads versions %d to %d: rebuild the plugin against "
                 "kernels/ppb_kernel_abi.h",
                 t->abi_version, PPBK_ABI_VERSION_2, PPBK_ABI_VERSION);
        return;
    }
    size_t need = t->abi_version >= ABI_VERSION_3 ? sizeof(ppbk_impl) : sizeof(ppbk_v2_impl);
    if (t->struct_size < need) {
        snprintf(info->error, sizeof info->error, "table of %u bytes, version %u needs %zu", t->struct_size,
                 t->abi_version, need);
        return;
    }
    if (t->abi_version == PPBK_ABI_VERSION_2) {
        /* From here on the library is called as the current version, through the adapter. */
        abi2_wrap(&l->abi2, (const ppbk_v2_impl *)(const void *)t);
        l->is_abi2 = 1;
        info->adapted = 1;
        t = &l->abi2.table;
    }
    if (!ppb_impl_name_valid(t->name)) {
        snprintf(info->error, sizeof info->error,
                 "invalid implementation name (1-40 characters of a-z, 0-9, '_', '.', '-', '@'; not 'builtin')");
        return;
    }
    snprintf(info->name, sizeof info->name, "%s", t->name);
    snprintf(info->version, sizeof info->version, "%s", t->version ? t->version : "");
    snprintf(info->source, sizeof info->source, "%s", t->source ? t->source : "");
    /* A plugin's strings reach terminals, reports and the store: no control characters. */
    ppb_term_clean(info->version, 0);
    ppb_term_clean(info->source, 0);
    info->backends = t->backends;
    const struct {
        const void *ops;
        int *flag;
        const char *what;
    } kernels[] = {{t->prefill, &info->has_prefill, "prefill"},
                   {t->decode_v1, &info->has_decode_v1, "decode_v1"},
                   {t->decode_v2, &info->has_decode_v2, "decode_v2"}};
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
        if (!kernels[i].ops)
            continue;
        /* refuse and launch lead every ops table; prepare is optional. */
        const ppbk_prefill_ops *ops = kernels[i].ops;
        if (!ops->refuse || !ops->launch) {
            snprintf(info->error, sizeof info->error, "%s: refuse or launch is NULL", kernels[i].what);
            return;
        }
        *kernels[i].flag = 1;
        /* the ops tables end in kv_layout from version 5 on (decode's where prefill's is: asserted below) */
        if (t->abi_version >= ABI_VERSION_5)
            info->flash_layout |= (unsigned)(ops->kv_layout == PPB_KV_LAYOUT_FLASH) << i;
    }
    info->prefill_stages = t->abi_version >= ABI_VERSION_6 && t->prefill && t->prefill->stage;
    if (!info->has_prefill && !info->has_decode_v1 && !info->has_decode_v2) {
        snprintf(info->error, sizeof info->error, "provides no kernel");
        return;
    }
    l->table = t;
    info->usable = 1;
}

_Static_assert(offsetof(ppbk_prefill_ops, kv_layout) == offsetof(ppbk_decode_ops, kv_layout),
               "the library check reads every ops table's kv_layout through the prefill type");

static loaded *loaded_path(const char *path)
{
    for (int i = 0; i < n_libraries; i++)
        if (strcmp(libraries[i].info.path, path) == 0)
            return &libraries[i];
    return NULL;
}

/* Load everything on the search path once per process (dlopen is not undone:
 * a plugin's functions may still be referenced, and reloading gains nothing). */
static void scan_once(void)
{
    if (scanned)
        return;
    scanned = 1;
    path_list *paths = malloc(sizeof *paths);
    if (!paths)
        return;
    search_path(paths);
    for (int i = 0; i < paths->n && n_libraries < MAX_LIBRARIES; i++) {
        if (loaded_path(paths->items[i]))
            continue; /* already loaded by name (find_library) */
        loaded *l = &libraries[n_libraries++];
        load_library(l, paths->items[i]);
        for (int j = 0; j < n_libraries - 1; j++)
            if (l->info.usable && libraries[j].info.usable && strcmp(libraries[j].info.name, l->info.name) == 0)
                l->info.shadowed = 1;
    }
    free(paths);
}

int ppb_impl_scan(ppb_impl_info **out, int *n, ppb_err *err)
{
    scan_once();
    *n = 0;
    *out = malloc(sizeof **out * (size_t)(n_libraries ? n_libraries : 1));
    if (!*out)
        return ppb_fail(err, PPB_ENOMEM, "out of memory listing implementations");
    for (int i = 0; i < n_libraries; i++)
        (*out)[(*n)++] = libraries[i].info;
    return PPB_OK;
}

static loaded *loaded_named(const char *name)
{
    for (int i = 0; i < n_libraries; i++)
        if (libraries[i].info.usable && !libraries[i].info.shadowed && strcmp(libraries[i].info.name, name) == 0)
            return &libraries[i];
    return NULL;
}

/* Load one file (once) and say whether its table has this name. */
static loaded *try_file(const char *path, const char *name)
{
    loaded *l = loaded_path(path);
    if (!l) {
        if (n_libraries >= MAX_LIBRARIES)
            return NULL;
        l = &libraries[n_libraries++];
        load_library(l, path);
    }
    return l->info.usable && strcmp(l->info.name, name) == 0 ? l : NULL;
}

/* The library of a name: a --plugin file as given, else in each folder of the
 * search path only the file named for it (libppbk_NAME.so, or with '_' for
 * '-'), so asking for one plugin never runs the code of the others there. */
static loaded *find_library(const char *name)
{
    loaded *l = loaded_named(name);
    if (l)
        return l;
    path_list *entries = malloc(sizeof *entries);
    if (!entries)
        return NULL;
    search_entries(entries);
    char underscored[64];
    snprintf(underscored, sizeof underscored, "%s", name);
    for (char *c = underscored; *c; c++)
        if (*c == '-')
            *c = '_';
    for (int i = 0; i < entries->n && !l; i++) {
        const char *e = entries->items[i];
        struct stat st;
        if (stat(e, &st) != 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            l = try_file(e, name);
            continue;
        }
        const char *files[2] = {name, underscored};
        for (int k = 0; k < 2 && !l; k++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/libppbk_%s.so", e, files[k]);
            struct stat fst;
            if (stat(path, &fst) == 0 && S_ISREG(fst.st_mode))
                l = try_file(path, name);
        }
    }
    free(entries);
    return l;
}

/* Why no library of that name was found: say where we looked and what to do. */
static int missing(const char *impl, const char *name, ppb_err *err)
{
    const char *hint = "pass --plugin PATH or add its folder to PPBENCH_PLUGIN_PATH";
    if (strcmp(name, "vllm-triton") == 0)
        hint = "build it with kernels/vllm/triton/prepare.py (docs/KERNEL-ABI.md), then pass --plugin";
    else if (strcmp(name, "vllm-cuda") == 0)
        hint = "build ppbench with -DPPB_VLLM_SOURCE=<vLLM source tree> (scripts/fetch-vllm.sh fetches it)";
    /* A library of that file name that failed to load says more than "not found". */
    char file[64];
    snprintf(file, sizeof file, "/libppbk_%s.so", name);
    for (char *p = file; *p; p++)
        *p = *p == '-' ? '_' : *p;
    for (int i = 0; i < n_libraries; i++)
        if (!libraries[i].info.usable && strstr(libraries[i].info.path, file))
            return ppb_fail(err, PPB_EREFUSED, "impl %s: %s: %s", impl, libraries[i].info.path,
                            libraries[i].info.error);
    char looked[1024] = "";
    path_list *entries = malloc(sizeof *entries);
    if (entries) {
        search_entries(entries);
        size_t at = 0;
        for (int i = 0; i < entries->n && at < sizeof looked; i++)
            at += (size_t)snprintf(looked + at, sizeof looked - at, "%s%s", i ? ", " : "", entries->items[i]);
        free(entries);
    }
    return ppb_fail(err, PPB_EREFUSED, "impl %s: no plugin named '%s' on the search path (%s): %s", impl, name,
                    looked[0] ? looked : "empty", hint);
}

/* ---- crash reports ------------------------------------------------------------------ */

/* A plugin that crashes takes the process with it (in a worker, only the worker:
 * --devices). Before it goes, say which plugin and which call it was. */
static atomic_int in_call; /* read by the crash handler, the exit hook and the watchdog */
static char crash_note[256];

static void crash_handler(int sig)
{
    if (in_call) {
        ssize_t w = write(STDERR_FILENO, crash_note, strnlen(crash_note, sizeof crash_note));
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A plugin that calls exit() inside a call would end ppbench with the
 * plugin's status (exit(0): "success" to CI) and the run unfinished: the exit
 * is turned into a failure that names it. */
static char exit_note[256];

static ppb_impl_abandon_hook abandon_hook;
static void *abandon_ctx;
static atomic_int abandoning; /* the process is on its way out: the call's thread stays where it is */

void ppb_impl_set_abandon_hook(ppb_impl_abandon_hook hook, void *ctx)
{
    abandon_ctx = ctx;
    abandon_hook = hook;
}

/* Say why on stderr, let the hook store the case, end the process. Only the
 * first caller does it (the exit hook and the watchdog could both come). */
static void abandon(int status, const char *note, int exit_code)
{
    if (atomic_exchange(&abandoning, 1))
        for (;;)
            pause();
    ssize_t w = write(STDERR_FILENO, note, strnlen(note, 256));
    (void)w;
    if (abandon_hook) {
        char reason[256];
        snprintf(reason, sizeof reason, "%s", note + strlen("ppbench: "));
        reason[strcspn(reason, "\n")] = '\0';
        abandon_hook(abandon_ctx, status, reason);
    }
    _exit(exit_code);
}

static void exit_in_call(void)
{
    if (in_call)
        abandon(PPB_STATUS_CRASHED, exit_note, 4); /* PPB_EXIT_RUNTIME (cli/commands.h; run/ does not include cli/) */
}

/* A plugin call that does not return cannot poll the stop flag, so Ctrl-C or
 * SIGTERM would not stop ppbench. The watchdog (one thread, started with the
 * first call) ends the process with 130, naming the plugin, when a stop has
 * been asked for and the call is still running WATCHDOG_GRACE_MS later. */
#define WATCHDOG_GRACE_MS 3000
static char hang_note[256];

static void *watchdog(void *arg)
{
    (void)arg;
    int waited_ms = 0;
    for (;;) {
        struct timespec tick = {0, 100 * 1000 * 1000};
        nanosleep(&tick, NULL);
        waited_ms = atomic_load(&in_call) && ppb_stop_signalled() ? waited_ms + 100 : 0;
        if (waited_ms >= WATCHDOG_GRACE_MS)
            abandon(PPB_STATUS_HUNG, hang_note, 130); /* PPB_EXIT_INTERRUPTED (cli/commands.h) */
    }
    return NULL;
}

static void enter_call(const ppb_impl_call *call, const char *what)
{
    static int installed;
    if (!installed) {
        installed = 1;
        atexit(exit_in_call);
        pthread_t t;
        if (pthread_create(&t, NULL, watchdog, NULL) == 0)
            pthread_detach(t);
        const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = crash_handler;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESETHAND;
            sigaction(sigs[i], &sa, NULL);
        }
    }
    snprintf(crash_note, sizeof crash_note,
             "ppbench: kernel implementation '%s' crashed in %s; use --devices to run cases in worker processes\n",
             call->impl->name, what);
    snprintf(hang_note, sizeof hang_note,
             "ppbench: stopped while kernel implementation '%s' was still in %s (it did not return within %d s of "
             "the stop); the run did not finish\n",
             call->impl->name, what, WATCHDOG_GRACE_MS / 1000);
    snprintf(exit_note, sizeof exit_note,
             "ppbench: kernel implementation '%s' called exit() in %s: the run did not finish\n", call->impl->name,
             what);
    in_call = 1;
}

static void leave_call(void)
{
    in_call = 0;
    /* A call that returns while the watchdog is storing it as hung: stay, the process is ending. */
    while (atomic_load(&abandoning))
        pause();
}

/* ---- binding a case ------------------------------------------------------------------ */

/* The length a plugin is told its message buffer has: one byte short of it.
 * The buffer starts zeroed, so a plugin that fills all it was given without a
 * NUL still leaves a terminated string (it is code ppbench runs, not trusted). */
#define PLUGIN_MSG_LEN(buf) (sizeof(buf) - 1)

/* A refusal or failure from a table, as a ppbench error. A plugin's messages
 * name it; the built-in kernels' read as they always have, without a prefix. */
static int call_fail(const ppb_impl_call *call, const char *name, int rc, char *why, const char *step,
                     const char *fallback, ppb_err *err)
{
    ppb_term_clean(why, 0);
    int code = rc == PPBK_REFUSED ? PPB_EREFUSED : PPB_EFAIL;
    if (call->builtin)
        return ppb_fail(err, code, "%s", why[0] ? why : fallback);
    return ppb_fail(err, code, "impl %s: %s%s", name, step, why[0] ? why : fallback);
}

static int call_open(loaded *l, const ppbk_device *dev, const char *impl, ppb_err *err)
{
    if (l->open_state == 0) {
        l->open_state = 1;
        if (l->is_abi2 || l->table->open) {
            char why[512] = "";
            void *ctx = NULL;
            ppb_impl_call probe = {.impl = l->table};
            enter_call(&probe, "open");
            int rc = l->is_abi2 ? abi2_open(&l->abi2, dev, &ctx, why, PLUGIN_MSG_LEN(why))
                                : l->table->open(dev, &ctx, why, PLUGIN_MSG_LEN(why));
            leave_call();
            if (rc == PPBK_OK) {
                l->ctx = ctx; /* passed to every later call and to close */
            } else {
                l->open_state = -1; /* close is not called: a failed open cleans up after itself */
                ppb_term_clean(why, 0);
                snprintf(l->open_error, sizeof l->open_error, "%s", why[0] ? why : "open failed");
            }
        }
    }
    if (l->open_state < 0)
        return ppb_fail(err, PPB_EREFUSED, "impl %s: %s", impl, l->open_error);
    return PPB_OK;
}

/* The library that runs a case's implementation (not builtin). */
static int find_implementation(const ppb_case *c, loaded **out, ppb_err *err)
{
    const char *impl = ppb_impl_name(c->config.impl);
    const char *name = ppb_impl_library_name(c->config.impl);
    if (!name)
        return ppb_fail(err, PPB_EINPUT, "impl %s is not a plugin", impl ? impl : "?");
    if (c->config.path != PPB_PATH_AUTO)
        return ppb_fail(err, PPB_EREFUSED, "impl %s: path= chooses among the built-in kernels' code paths; "
                                           "leave it at auto for a plugin", impl);
    *out = find_library(name);
    return *out ? PPB_OK : missing(impl, name, err);
}

int ppb_impl_require(int impl, ppb_err *err)
{
    const char *name = ppb_impl_library_name(impl);
    if (impl == PPB_IMPL_BUILTIN || !name)
        return PPB_OK;
    if (find_library(name))
        return PPB_OK;
    missing(ppb_impl_name(impl), name, err); /* its reason; for the caller, the input was wrong */
    return PPB_EINPUT;
}

static const ppbk_decode_ops *decode_ops(const ppb_impl_call *call)
{
    return call->decode_cfg.version == 1 ? call->impl->decode_v1 : call->impl->decode_v2;
}

/* The cache layout the call's kernel reads: its ops table says from version 5
 * on; an older table ends before that member (reading it would run past the
 * plugin's struct), and its kernels read vLLM's layout, the only one there was. */
static int kv_layout_of(unsigned abi, const ppb_impl_call *call)
{
    if (abi < ABI_VERSION_5)
        return PPB_KV_LAYOUT_VLLM;
    return call->kernel == PPB_PREFIX_PREFILL ? call->impl->prefill->kv_layout : decode_ops(call)->kv_layout;
}

/* The prefill ops' stage: from version 6 on (an older table ends before it). */
static ppbk_prefill_stage_fn stage_of(unsigned abi, const ppb_impl_call *call)
{
    return abi >= ABI_VERSION_6 && call->kernel == PPB_PREFIX_PREFILL ? call->impl->prefill->stage : NULL;
}

int ppb_impl_bind(ppb_impl_call *call, const ppb_case *c, const ppbk_device *dev, const ppb_impl_ref *builtin,
                  ppb_err *err)
{
    memset(call, 0, sizeof *call);
    const char *impl = ppb_impl_name(c->config.impl);
    loaded *l = NULL;
    int rc = PPB_OK;
    if (c->config.impl == PPB_IMPL_BUILTIN) {
        if (!builtin || !builtin->table)
            return ppb_fail(err, PPB_EINPUT, "impl builtin: this backend runs its built-in kernels itself");
        call->impl = builtin->table;
        call->ctx = builtin->ctx; /* opened by the backend */
        call->builtin = 1;
    } else {
        if ((rc = find_implementation(c, &l, err)))
            return rc;
        call->impl = l->table;
    }
    const ppbk_impl *t = call->impl;
    call->dev = *dev;
    call->kernel = c->kernel;
    if (!(t->backends & dev->backend))
        return ppb_fail(err, PPB_EREFUSED, "impl %s has no %s backend (it runs on %s)", impl,
                        dev->backend == PPBK_BACKEND_CPU ? "cpu" : "cuda",
                        t->backends & PPBK_BACKEND_CUDA ? "cuda" : "cpu");
    const ppb_config *k = &c->config;
    const char *missing_kernel = NULL;
    if (c->kernel == PPB_PREFIX_PREFILL && !t->prefill)
        missing_kernel = "prefix_prefill";
    else if (c->kernel == PPB_PAGED_ATTENTION && k->version == 1 && !t->decode_v1)
        missing_kernel = "paged_attention v1";
    else if (c->kernel == PPB_PAGED_ATTENTION && k->version == 2 && !t->decode_v2)
        missing_kernel = "paged_attention v2";
    if (missing_kernel)
        return ppb_fail(err, PPB_EREFUSED, "impl %s provides no %s kernel", impl, missing_kernel);
    call->decode_cfg.version = k->version; /* decode_ops() before the view below */
    const unsigned abi = l ? l->info.abi_version : PPBK_ABI_VERSION;
    call->kv_layout = kv_layout_of(abi, call);
    call->stage = stage_of(abi, call);
    if (call->kv_layout != PPB_KV_LAYOUT_VLLM && call->kv_layout != PPB_KV_LAYOUT_FLASH)
        return ppb_fail(err, PPB_EREFUSED,
                        "impl %s: its kernel reads the paged cache in layout %d, which this ppbench does not know "
                        "(PPB_KV_LAYOUT_*, kernels/attention_args.h)",
                        impl, call->kv_layout);
    if (l) {
        if ((rc = refuse_unseen_params(l->info.abi_version, c, impl, err)) || (rc = call_open(l, dev, impl, err)))
            return rc;
        call->ctx = l->ctx;
    }
    ppb_kernel_view v;
    ppb_kernel_view_of_case(c, &v);
    call->prefill_cfg = v.prefill_cfg;
    call->decode_cfg = v.decode_cfg;
    call->prefill = v.prefill;
    call->decode = v.decode;
    char why[sizeof call->note] = "";
    enter_call(call, "refuse");
    if (c->kernel == PPB_PREFIX_PREFILL)
        rc = t->prefill->refuse(call->ctx, dev, &call->prefill_cfg, &call->prefill, why, PLUGIN_MSG_LEN(why));
    else
        rc = (k->version == 1 ? t->decode_v1 : t->decode_v2)
                 ->refuse(call->ctx, dev, &call->decode_cfg, &call->decode, why, PLUGIN_MSG_LEN(why));
    leave_call();
    if (rc == PPBK_OK) {
        memcpy(call->note, why, sizeof call->note);
        call->note[sizeof call->note - 1] = '\0';
        return PPB_OK;
    }
    return call_fail(call, impl, rc, why, "", "refused without a reason", err);
}


int ppb_impl_launch(const ppb_impl_call *call, void *stream, ppb_err *err)
{
    char why[512] = "";
    enter_call(call, "launch");
    int rc = call->kernel == PPB_PREFIX_PREFILL
                 ? call->impl->prefill->launch(call->ctx, &call->dev, &call->prefill_cfg, &call->prefill, stream, why,
                                               PLUGIN_MSG_LEN(why))
                 : decode_ops(call)->launch(call->ctx, &call->dev, &call->decode_cfg, &call->decode, stream, why,
                                            PLUGIN_MSG_LEN(why));
    leave_call();
    return rc == PPBK_OK ? PPB_OK : call_fail(call, call->impl->name, rc, why, "launch: ", "failed without a reason", err);
}

int ppb_impl_stage(const ppb_impl_call *call, void *stream, ppb_err *err)
{
    if (!call->stage)
        return PPB_OK;
    char why[512] = "";
    enter_call(call, "stage");
    int rc = call->stage(call->ctx, &call->dev, &call->prefill_cfg, &call->prefill, stream, why, PLUGIN_MSG_LEN(why));
    leave_call();
    return rc == PPBK_OK ? PPB_OK : call_fail(call, call->impl->name, rc, why, "stage: ", "failed without a reason", err);
}

int ppb_impl_prepare(const ppb_impl_call *call, ppb_resources *res, ppb_err *err)
{
    memset(res, 0, sizeof *res);
    ppbk_resources r = {0};
    char why[512] = "";
    int rc = PPBK_OK, known = 0;
    enter_call(call, "prepare");
    if (call->kernel == PPB_PREFIX_PREFILL && call->impl->prefill->prepare) {
        rc = call->impl->prefill->prepare(call->ctx, &call->dev, &call->prefill_cfg, &call->prefill, &r, why,
                                          PLUGIN_MSG_LEN(why));
        known = 1;
    } else if (call->kernel == PPB_PAGED_ATTENTION && decode_ops(call)->prepare) {
        rc = decode_ops(call)->prepare(call->ctx, &call->dev, &call->decode_cfg, &call->decode, &r, why,
                                       PLUGIN_MSG_LEN(why));
        known = 1;
    }
    leave_call();
    if (rc != PPBK_OK)
        return call_fail(call, call->impl->name, rc, why, "prepare: ", "failed without a reason", err);
    /* Figures a kernel cannot have would be stored and judged against the target as if measured. */
    if (r.registers < 0 || r.registers > 65536 || r.static_smem < 0 || r.dynamic_smem < 0 ||
        r.static_smem > (1 << 30) || r.dynamic_smem > (1 << 30) || r.local_bytes < 0 || r.local_bytes > (1 << 30) ||
        r.max_threads < 0 || r.max_threads > 65536)
        return ppb_fail(err, PPB_EFAIL,
                        "impl %s: prepare: reported resources no kernel has (registers %d, shared %d + %d B, local "
                        "%d B, max threads %d)",
                        call->impl->name, r.registers, r.static_smem, r.dynamic_smem, r.local_bytes, r.max_threads);
    res->known = known;
    res->registers = r.registers;
    res->static_smem = r.static_smem;
    res->dynamic_smem = r.dynamic_smem;
    res->local_bytes = r.local_bytes;
    res->max_threads = r.max_threads;
    return PPB_OK;
}

void ppb_impl_backends_text(unsigned backends, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", backends & PPBK_BACKEND_CPU ? "cpu" : "",
             (backends & PPBK_BACKEND_CPU) && (backends & PPBK_BACKEND_CUDA) ? "," : "",
             backends & PPBK_BACKEND_CUDA ? "cuda" : "");
}

void ppb_impl_kernels_text(int prefill, int v1, int v2, char *buf, size_t len)
{
    size_t n = 0;
    const struct {
        int on;
        const char *name;
    } k[] = {{prefill, "prefix_prefill"}, {v1, "paged_attention_v1"}, {v2, "paged_attention_v2"}};
    buf[0] = '\0';
    for (size_t i = 0; i < 3 && n < len; i++)
        if (k[i].on)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", k[i].name);
}

void ppb_impl_environment(ppb_impl_env_sink sink, void *ctx)
{
    for (int i = 0; i < n_libraries; i++) {
        const loaded *l = &libraries[i];
        if (l->open_state == 0)
            continue; /* loaded but never used in this process */
        char key[128];
        const ppb_impl_info *info = &l->info;
        const struct {
            const char *field, *value;
        } facts[] = {{"version", info->version},   {"source", info->source},
                     {"path", info->path},         {"checksum_fnv1a64", info->checksum},
                     {"open", l->open_state > 0 ? "ok" : l->open_error}};
        for (size_t f = 0; f < sizeof facts / sizeof *facts; f++) {
            snprintf(key, sizeof key, "impl.%s.%s", info->name, facts[f].field);
            sink(ctx, key, facts[f].value);
        }
    }
}

void ppb_impl_unload_all(void)
{
    for (int i = 0; i < n_libraries; i++) {
        loaded *l = &libraries[i];
        if (l->open_state > 0 && l->is_abi2)
            abi2_close(&l->abi2);
        else if (l->open_state > 0 && l->table && l->table->close)
            l->table->close(l->ctx);
        if (l->handle)
            dlclose(l->handle);
    }
    memset(libraries, 0, sizeof libraries);
    n_libraries = 0;
    scanned = 0;
    for (int i = 0; i < n_explicit; i++)
        free(explicit_paths[i]);
    n_explicit = 0;
}
