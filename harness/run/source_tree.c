/* vLLM trees: located, copied with a change applied, prepared (source_tree.h). */
#define _GNU_SOURCE /* memmem, nftw */
#include "source_tree.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "hash.h"
#include "run_program.h"

#ifndef PPB_SOURCE_DIR
#define PPB_SOURCE_DIR "."
#endif

/* The files of the families ppbench can judge, by where each release keeps
 * them (vLLM's source distributions): the kernel files, then files they read
 * that a change may touch too (kernels/vllm/triton/capture.py reads them from
 * the tree). A judged tree is a copy of these and PKG-INFO. */
static const char *const known_kernel_files[] = {
    "vllm/attention/ops/prefix_prefill.py",              /* prefix prefill, 0.6.3 - 0.13 */
    "vllm/v1/attention/ops/prefix_prefill.py",           /* prefix prefill, 0.14 - 0.34 */
    "vllm/attention/ops/triton_unified_attention.py",    /* decode (unified attention), 0.9.2 - 0.13 */
    "vllm/v1/attention/ops/triton_unified_attention.py", /* decode (unified attention), 0.14 on */
    "vllm/v1/attention/ops/triton_attention_helpers.py", /* the unified kernels' helpers, 0.14 on */
    "vllm/v1/attention/backends/triton_attn.py",         /* the backend's decode split (its constants) */
    "vllm/v1/kv_cache_interface.py",                     /* KVQuantMode, a constexpr of 0.14+'s kernel */
    "vllm/attention/ops/chunked_prefill_paged_decode.py",    /* chunked prefill + paged decode, 0.8.5 - 0.13 */
    "vllm/v1/attention/ops/chunked_prefill_paged_decode.py", /* the same, 0.14 on */
};
enum { N_KNOWN = sizeof known_kernel_files / sizeof *known_kernel_files, N_KERNEL_FILES = 4 };
/* How a message names them. */
#define KNOWN_KERNELS_TEXT                                                                                     \
    "prefix_prefill.py or triton_unified_attention.py under vllm/attention/ops or vllm/v1/attention/ops"
#define MAX_FILE_BYTES (16L << 20) /* a kernel file is tens of kB; anything this big is not one */
#define TREE_MARK ".ppb-tree"      /* written last into a finished cache folder */

/* ---------------------------------------------------------------- small helpers */

static const char *source_dir(void)
{
    const char *d = getenv("PPB_SOURCE_DIR");
    return d && d[0] ? d : PPB_SOURCE_DIR;
}

static void cache_path(const char *sub, char *buf, size_t len)
{
    const char *root = getenv("PPBENCH_TREE_CACHE");
    if (root && root[0]) {
        snprintf(buf, len, "%s/%s", root, sub);
        return;
    }
    if (ppb_user_cache_path(sub, buf, len) != 0)
        snprintf(buf, len, "/tmp/.cache/ppbench/%s", sub); /* no HOME: somewhere writable */
}

void ppb_vllm_plugin_dir(char *buf, size_t len) { cache_path("plugins", buf, len); }

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The whole file into a NUL-terminated buffer (bounded). */
static int read_all(const char *path, char **out, size_t *n, ppb_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ppb_fail(err, PPB_EINPUT, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
        fclose(f);
        return ppb_fail(err, PPB_EINPUT, "%s: not a regular file of at most %ld bytes", path, MAX_FILE_BYTES);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)st.st_size) {
        free(buf);
        return ppb_fail(err, buf ? PPB_EIO : PPB_ENOMEM, "%s: cannot read it", path);
    }
    buf[got] = '\0';
    *out = buf;
    *n = got;
    return PPB_OK;
}

static int write_all(const char *path, const char *data, size_t n, ppb_err *err)
{
    FILE *f = NULL;
    int rc = ppb_file_create_fresh(path, 1, &f, err);
    if (rc)
        return rc;
    int bad = fwrite(data, 1, n, f) != n;
    bad |= fclose(f) != 0;
    return bad ? ppb_fail(err, PPB_EIO, "%s: write failed", path) : PPB_OK;
}

static int make_parent_dirs(const char *path, ppb_err *err)
{
    char buf[4200];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash)
        return PPB_OK;
    *slash = '\0';
    return ppb_make_dirs(buf, err);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

/* rm -rf of a folder of ppbench's own cache (links are removed, never followed). */
static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---------------------------------------------------------------- locating a tree */

static int has_known_kernel(const char *tree)
{
    for (int i = 0; i < N_KERNEL_FILES; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", tree, known_kernel_files[i]);
        if (is_file(p))
            return 1;
    }
    return 0;
}

int ppb_vllm_tree_locate(const char *spec, char *tree, size_t len, ppb_err *err)
{
    if (!ppb_vllm_is_version(spec)) {
        if (!ppb_is_real_dir(spec) && access(spec, F_OK) != 0)
            return ppb_fail(err, PPB_EINPUT, "vllm: %s is neither a release version nor a folder", spec);
        if (!has_known_kernel(spec))
            return ppb_fail(err, PPB_EINPUT, "vllm: %s holds no %s: not a vLLM source tree ppbench can read", spec,
                            KNOWN_KERNELS_TEXT);
        snprintf(tree, len, "%s", spec);
        return PPB_OK;
    }
    char dir[4096], script[4200];
    cache_path("vllm", dir, sizeof dir);
    snprintf(tree, len, "%s/vllm-%s", dir, spec);
    char mark[4400];
    snprintf(mark, sizeof mark, "%s/.ppb-archive.sha256", tree);
    if (is_file(mark) && has_known_kernel(tree))
        return PPB_OK;
    int rc = ppb_make_dirs(dir, err);
    if (rc)
        return rc;
    snprintf(script, sizeof script, "%s/scripts/fetch-vllm.sh", source_dir());
    char *argv[] = {"bash", script, "--version", (char *)spec, dir, NULL};
    int status = ppb_run_program("bash", argv, NULL, STDERR_FILENO, 1800, err);
    if (status < 0)
        return status;
    if (status != 0)
        return ppb_fail(err, status == 2 ? PPB_EINPUT : PPB_EFAIL,
                        "vllm: %s: scripts/fetch-vllm.sh --version %s failed (exit %d; its line above)", spec, spec,
                        status);
    if (!has_known_kernel(tree))
        return ppb_fail(err, PPB_EINPUT, "vllm %s: the release holds no %s", spec, KNOWN_KERNELS_TEXT);
    return PPB_OK;
}

/* ---------------------------------------------------------------- a tree's files */

typedef struct tree_files {
    const char *rel[N_KNOWN + 1]; /* the known files present, then PKG-INFO */
    char *data[N_KNOWN + 1];
    size_t size[N_KNOWN + 1];
    int n, n_kernels;
} tree_files;

static void tree_files_free(tree_files *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->data[i]);
    memset(t, 0, sizeof *t);
}

static int tree_files_read(const char *tree, tree_files *t, ppb_err *err)
{
    memset(t, 0, sizeof *t);
    char p[4400];
    int rc = PPB_OK;
    for (int i = 0; i < N_KNOWN && !rc; i++) {
        snprintf(p, sizeof p, "%s/%s", tree, known_kernel_files[i]);
        if (!is_file(p))
            continue;
        t->rel[t->n] = known_kernel_files[i];
        rc = read_all(p, &t->data[t->n], &t->size[t->n], err);
        t->n++;
    }
    t->n_kernels = t->n;
    snprintf(p, sizeof p, "%s/PKG-INFO", tree);
    if (!rc && is_file(p)) {
        t->rel[t->n] = "PKG-INFO";
        rc = read_all(p, &t->data[t->n], &t->size[t->n], err);
        t->n++;
    }
    if (!rc && t->n_kernels == 0)
        rc = ppb_fail(err, PPB_EINPUT, "%s holds no kernel file ppbench knows", tree);
    if (rc)
        tree_files_free(t);
    return rc;
}

static void add_name(char *list, size_t len, const char *name)
{
    if (strstr(list, name))
        return;
    size_t n = strlen(list);
    snprintf(list + n, len - n, "%s%s", n ? ", " : "", name);
}

/* ---------------------------------------------------------------- replacements by content */

static size_t count_occurrences(const char *hay, size_t n, const char *needle, const char **first)
{
    size_t k = strlen(needle), count = 0;
    *first = NULL;
    for (const char *p = hay; k && (p = memmem(p, n - (size_t)(p - hay), needle, k)) != NULL; p += k) {
        if (!*first)
            *first = p;
        count++;
    }
    return count;
}

/* The kernel file an entry names: its path in the tree, or a bare name that
 * one present kernel file has (the seed writes "prefix_prefill.py"). */
static int resolve_file(const tree_files *t, const char *file)
{
    int found = -1;
    for (int i = 0; i < t->n_kernels; i++) {
        const char *base = strrchr(t->rel[i], '/');
        if (strcmp(t->rel[i], file) == 0 || (!strchr(file, '/') && strcmp(base + 1, file) == 0))
            found = found < 0 ? i : -2;
    }
    return found;
}

static void excerpt(const char *text, char *buf, size_t len)
{
    size_t j = 0;
    for (const char *p = text; *p && j + 8 < len; p++) {
        if (*p == '\n') {
            buf[j++] = '\\';
            buf[j++] = 'n';
        } else if ((unsigned char)*p >= 0x20 && *p != 0x7f) {
            buf[j++] = *p;
        }
        if (j >= 60) {
            memcpy(buf + j, "...", 3);
            j += 3;
            break;
        }
    }
    buf[j] = '\0';
}

static int apply_replacements(const char *tree, const ppb_source_change *c, tree_files *t, ppb_vllm_tree *out,
                              ppb_err *err)
{
    for (int r = 0; r < c->n_replace; r++) {
        const ppb_replace *e = &c->replace[r];
        int i = resolve_file(t, e->file);
        if (i == -2)
            return ppb_fail(err, PPB_EINPUT, "%s:%d: replace[%d].file: '%s' names more than one kernel file of %s: "
                            "give its path in the tree", c->proposal, e->line, r, e->file, tree);
        if (i < 0) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", tree, e->file);
            if (!is_file(p))
                return ppb_fail(err, PPB_EINPUT, "%s:%d: replace[%d].file: no file '%s' in %s", c->proposal, e->line,
                                r, e->file, tree);
            add_name(out->not_judged, sizeof out->not_judged, e->file);
            continue;
        }
        const char *at;
        size_t count = count_occurrences(t->data[i], t->size[i], e->old_text, &at);
        char ex[80];
        excerpt(e->old_text, ex, sizeof ex);
        if (count != 1)
            return ppb_fail(err, PPB_EINPUT, "%s:%d: replace[%d].old: '%s' %s %s/%s%s", c->proposal, e->line, r, ex,
                            count ? "occurs more than once in" : "is not in", tree, t->rel[i],
                            count ? " (make it unique: add a neighbouring line)" : "");
        size_t k = strlen(e->old_text), add = strlen(e->new_text), off = (size_t)(at - t->data[i]);
        size_t n = t->size[i] - k + add;
        char *next = malloc(n + 1);
        if (!next)
            return ppb_fail(err, PPB_ENOMEM, "out of memory");
        memcpy(next, t->data[i], off);
        memcpy(next + off, e->new_text, add);
        memcpy(next + off + add, t->data[i] + off + k, t->size[i] - off - k + 1);
        free(t->data[i]);
        t->data[i] = next;
        t->size[i] = n;
        add_name(out->changed, sizeof out->changed, t->rel[i]);
    }
    return PPB_OK;
}

/* ---------------------------------------------------------------- a unified diff */

/* The files a diff touches ("+++ b/PATH" lines), as paths in the tree. */
static void diff_targets(const char *diff, const tree_files *t, ppb_vllm_tree *out, unsigned *kernels)
{
    *kernels = 0;
    for (const char *p = diff; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "+++ ", 4) != 0)
            continue;
        const char *s = p + 4;
        if (strncmp(s, "b/", 2) == 0)
            s += 2;
        char path[256];
        size_t n = strcspn(s, "\t\n");
        snprintf(path, sizeof path, "%.*s", (int)(n < sizeof path ? n : sizeof path - 1), s);
        if (strcmp(path, "/dev/null") == 0)
            continue;
        int known = 0;
        for (int i = 0; i < N_KNOWN; i++)
            if (strcmp(path, known_kernel_files[i]) == 0) {
                known = 1;
                for (int j = 0; j < t->n_kernels; j++)
                    if (t->rel[j] == known_kernel_files[i])
                        *kernels |= 1u << j;
            }
        if (!known)
            add_name(out->not_judged, sizeof out->not_judged, path);
    }
}

/* `git apply` of the diff's hunks for the kernel files, in `dir` (a copy of
 * them): it checks every hunk's context and names the one that fails. */
static int apply_diff(const ppb_source_change *c, const char *dir, const tree_files *t, ppb_vllm_tree *out,
                      ppb_err *err)
{
    char *diff = NULL;
    size_t n = 0;
    int rc = read_all(c->patch_path, &diff, &n, err);
    if (rc)
        return ppb_fail(err, PPB_EINPUT, "%s: patch: %s", c->proposal, err->msg);
    unsigned kernels = 0;
    diff_targets(diff, t, out, &kernels);
    free(diff);
    if (!kernels)
        return PPB_OK; /* the caller says that no known kernel is touched */
    char log[4400];
    snprintf(log, sizeof log, "%s/.git-apply.log", dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return ppb_fail(err, PPB_EIO, "%s: %s", log, strerror(errno));
    char *argv[8 + N_KNOWN] = {"git", "apply", "--verbose"};
    int a = 3;
    char include[N_KNOWN][300];
    for (int j = 0; j < t->n_kernels; j++)
        if (kernels & (1u << j)) {
            snprintf(include[j], sizeof include[j], "--include=%s", t->rel[j]);
            argv[a++] = include[j];
            add_name(out->changed, sizeof out->changed, t->rel[j]);
        }
    argv[a++] = (char *)c->patch_path;
    argv[a] = NULL;
    /* git apply outside a repository patches like `patch`; the ceiling keeps
     * it from finding a repository above the cache folder. */
    setenv("GIT_CEILING_DIRECTORIES", dir, 1);
    int status = ppb_run_program("git", argv, dir, fd, 120, err);
    unsetenv("GIT_CEILING_DIRECTORIES");
    close(fd);
    if (status < 0)
        return status;
    if (status != 0) {
        char *text = NULL;
        size_t tn = 0;
        char why[600] = "";
        if (read_all(log, &text, &tn, err) == PPB_OK) {
            /* git's "error:" lines name the file and the hunk's line */
            for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
                if (strncmp(l, "error: ", 7) == 0 && l[strlen(l) - 1] != ':') /* not "while searching for:" */
                    snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", why[0] ? "; " : "", l + 7);
            free(text);
        }
        unlink(log);
        return ppb_fail(err, PPB_EINPUT, "%s: patch %s does not apply to %s: %s", c->proposal, c->patch_path,
                        c->vllm, why[0] ? why : "git apply failed");
    }
    unlink(log);
    return PPB_OK;
}

/* ---------------------------------------------------------------- making a judged tree */

static void read_version(const tree_files *t, char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    for (int i = t->n_kernels; i < t->n; i++) {
        const char *v = strstr(t->data[i], "\nVersion:");
        if (!v)
            continue;
        v += 9;
        while (*v == ' ')
            v++;
        size_t n = 0;
        while (n + 1 < len && n < 16 && (isalnum((unsigned char)v[n]) || v[n] == '.' || v[n] == '-' || v[n] == '_'))
            n++;
        if (n) {
            for (size_t k = 0; k < n; k++)
                buf[k] = (char)tolower((unsigned char)v[k]);
            buf[n] = '\0';
        }
    }
}

static int write_files(const char *dir, const tree_files *t, ppb_err *err)
{
    int rc = ppb_make_dirs(dir, err);
    for (int i = 0; i < t->n && !rc; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, t->rel[i]);
        if (!(rc = make_parent_dirs(p, err)))
            rc = write_all(p, t->data[i], t->size[i], err);
    }
    return rc;
}

int ppb_vllm_tree_make(const char *tree, const ppb_source_change *change, ppb_vllm_tree *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    tree_files t;
    int rc = tree_files_read(tree, &t, err);
    if (rc)
        return rc;
    char trees[4096], tmp[4400];
    cache_path("trees", trees, sizeof trees);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%ld", trees, (long)getpid());
    /* A diff is applied to a copy on disk and read back; replacements in memory. */
    if (change && change->patch_path[0]) {
        remove_tree(tmp);
        if (!(rc = write_files(tmp, &t, err)))
            rc = apply_diff(change, tmp, &t, out, err);
        tree_files reread;
        if (!rc && out->changed[0] && !(rc = tree_files_read(tmp, &reread, err))) {
            tree_files_free(&t);
            t = reread;
        }
    }
    if (!rc && change && change->n_replace)
        rc = apply_replacements(tree, change, &t, out, err);
    if (!rc && change && !out->changed[0])
        rc = ppb_fail(err, PPB_EINPUT, "%s: the change touches no kernel file ppbench knows (%s)%s%s: nothing "
                      "to judge", change->proposal, KNOWN_KERNELS_TEXT, out->not_judged[0] ? "; it touches " : "",
                      out->not_judged);
    if (!rc) {
        uint64_t h = PPB_FNV1A64_OFFSET;
        for (int i = 0; i < t.n; i++) {
            h = ppb_fnv1a64_update(h, t.rel[i], strlen(t.rel[i]) + 1);
            h = ppb_fnv1a64_update(h, t.data[i], t.size[i] + 1);
        }
        char hex[17];
        ppb_fnv1a64_hex(h, hex);
        read_version(&t, out->version, sizeof out->version);
        snprintf(out->label, sizeof out->label, "%s-%.8s", out->version, hex);
        snprintf(out->path, sizeof out->path, "%s/%s", trees, out->label);
        char mark[4400];
        snprintf(mark, sizeof mark, "%s/" TREE_MARK, out->path);
        if (!is_file(mark)) {
            /* Written whole, then renamed into place: a folder with the mark is complete. */
            remove_tree(tmp);
            rc = write_files(tmp, &t, err);
            snprintf(mark, sizeof mark, "%s/" TREE_MARK, tmp);
            if (!rc)
                rc = write_all(mark, tree, strlen(tree), err);
            remove_tree(out->path);
            if (!rc && rename(tmp, out->path) != 0)
                rc = ppb_fail(err, PPB_EIO, "%s: %s", out->path, strerror(errno));
        }
    }
    remove_tree(tmp);
    tree_files_free(&t);
    return rc;
}

/* ---------------------------------------------------------------- preparing its implementation */

int ppb_vllm_tree_prepare(const ppb_vllm_tree *t, const char *suite_path, int prefill_kernel, const char *plugin_dir,
                          int log_fd, char *impl_name, size_t len, ppb_err *err)
{
    char name[64], lib[4400], out[4096], script[4200], self[PATH_MAX];
    const char *kernel = ppb_vllm_prefill_kernel_names[prefill_kernel];
    /* vllm-triton@L for its prefix prefill, vllm-triton-unified@L, vllm-triton-chunked@L */
    snprintf(name, sizeof name, "vllm-triton%s%s@%s", prefill_kernel ? "-" : "", prefill_kernel ? kernel : "",
             t->label);
    snprintf(lib, sizeof lib, "%s/libppbk_%s.so", plugin_dir, name);
    cache_path("vllm-triton", out, sizeof out);
    snprintf(script, sizeof script, "%s/kernels/vllm/triton/prepare.py", source_dir());
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    int rc = ppb_make_dirs(plugin_dir, err);
    if (rc)
        return rc;
    char *argv[] = {"python3", script, "--from-wrapper", "--prefill-kernel", (char *)kernel,
                    "--name", name, "--vllm", (char *)t->path, "--lib", lib, "--out", out, "--ppbench", self,
                    (char *)suite_path, NULL};
    int status = ppb_run_program("python3", argv, NULL, log_fd, 3600, err);
    if (status < 0)
        return status;
    if (status != 0)
        return ppb_fail(err, PPB_EFAIL, "preparing %s from %s failed (prepare.py exit %d; its output above)", name,
                        t->path, status);
    snprintf(impl_name, len, "plugin:%s", name);
    return PPB_OK;
}
