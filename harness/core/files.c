#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_flags(const char *path, int flags, int binary, FILE **out, ppb_err *err)
{
    *out = NULL;
    int fd = open(path, flags | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return ppb_fail(err, PPB_EIO, "%s: %s", path,
                        errno == ELOOP ? "a symbolic link: refusing to write through it" : strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ppb_fail(err, PPB_EIO, "%s: not a regular file: refusing to write to it", path);
    }
    /* O_TRUNC only once it is known to be a regular file (a FIFO or device is left alone). */
    if ((flags & O_EXCL) == 0 && ftruncate(fd, 0) != 0) {
        int e = errno;
        close(fd);
        return ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(e));
    }
    if (!(*out = fdopen(fd, binary ? "wb" : "w"))) {
        int e = errno;
        close(fd);
        return ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(e));
    }
    return PPB_OK;
}

int ppb_file_create(const char *path, int binary, FILE **out, ppb_err *err)
{
    return open_flags(path, O_CREAT | O_NONBLOCK, binary, out, err);
}

int ppb_file_create_fresh(const char *path, int binary, FILE **out, ppb_err *err)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    return open_flags(path, O_CREAT | O_EXCL, binary, out, err);
}

int ppb_file_replace_open(ppb_file_replace *r, const char *path, ppb_err *err)
{
    memset(r, 0, sizeof *r);
    if (strlen(path) >= sizeof r->path)
        return ppb_fail(err, PPB_EIO, "%.200s...: path too long", path);
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->tmp, sizeof r->tmp, "%s.tmp-%ld", path, (long)getpid());
    return ppb_file_create_fresh(r->tmp, 0, &r->f, err);
}

int ppb_file_replace_commit(ppb_file_replace *r, ppb_err *err)
{
    int failed = fflush(r->f) != 0 || ferror(r->f);
    int e = errno;
    failed |= fclose(r->f) != 0;
    r->f = NULL;
    if (!failed && ppb_file_is_sqlite(r->path)) {
        unlink(r->tmp);
        return ppb_fail(err, PPB_EIO, "%s is an SQLite database: refusing to replace it with a document", r->path);
    }
    if (failed || rename(r->tmp, r->path) != 0) {
        e = failed ? e : errno;
        unlink(r->tmp);
        return ppb_fail(err, PPB_EIO, "%s: %s", r->path, strerror(e ? e : EIO));
    }
    return PPB_OK;
}

void ppb_file_replace_abort(ppb_file_replace *r)
{
    if (r->f)
        fclose(r->f);
    r->f = NULL;
    if (r->tmp[0])
        unlink(r->tmp);
}

int ppb_file_is_sqlite(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char head[16] = {0};
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n == (ssize_t)sizeof head && memcmp(head, "SQLite format 3", 16) == 0;
}

/* The folder of `path` resolved (realpath), then its last component as given. */
static int canonical(const char *path, char *out, size_t len)
{
    char copy_dir[PATH_MAX], copy_base[PATH_MAX], dir[PATH_MAX];
    if (snprintf(copy_dir, sizeof copy_dir, "%s", path) >= (int)sizeof copy_dir)
        return -1;
    snprintf(copy_base, sizeof copy_base, "%s", path);
    if (!realpath(dirname(copy_dir), dir))
        return -1;
    return snprintf(out, len, "%s/%s", dir, basename(copy_base)) < (int)len ? 0 : -1;
}

int ppb_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
    return canonical(a, ca, sizeof ca) == 0 && canonical(b, cb, sizeof cb) == 0 && strcmp(ca, cb) == 0;
}

int ppb_make_dirs(const char *path, ppb_err *err)
{
    char buf[4200];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return ppb_fail(err, PPB_EIO, "cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return ppb_fail(err, PPB_EIO, "cannot create %s: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return ppb_fail(err, PPB_EIO, "%s is not a directory", buf);
    return PPB_OK;
}

int ppb_user_cache_path(const char *sub, char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0])
        snprintf(buf, len, "%s/ppbench/%s", xdg, sub);
    else if (home && home[0])
        snprintf(buf, len, "%s/.cache/ppbench/%s", home, sub);
    else
        return buf[0] = '\0', -1;
    return 0;
}

static int ppb_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int ppb_is_real_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where the installed suites lie relative to the installed program (CMake
 * computes it from the install directories; this default is GNUInstallDirs'). */
#ifndef PPB_INSTALL_SUITES_REL
#define PPB_INSTALL_SUITES_REL "../share/ppbench/suites"
#endif

int ppb_shipped_suite_dirs(char dirs[][4096], int max)
{
    int n = 0;
    char exe[4096];
    ssize_t got = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (got > 0 && n < max) {
        exe[got] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(dirs[n], sizeof dirs[n], "%s/%s", exe, PPB_INSTALL_SUITES_REL);
            n += ppb_is_dir(dirs[n]);
        }
    }
#ifdef PPB_SOURCE_DIR
    if (n < max) {
        snprintf(dirs[n], sizeof dirs[n], "%s/suites", PPB_SOURCE_DIR);
        n += ppb_is_dir(dirs[n]);
    }
#endif
    return n;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int ppb_find_shipped_suite(const char *arg, const char *sub, char *out, size_t len)
{
    snprintf(out, len, "%s", arg);
    if (!arg[0] || strchr(arg, '/') || is_file(arg))
        return 0;
    char dirs[2][4096];
    int n = ppb_shipped_suite_dirs(dirs, 2);
    static const char *const ext[] = {"", ".yaml"};
    for (int i = 0; i < n; i++)
        for (int e = 0; e < 2; e++) {
            char path[8400];
            snprintf(path, sizeof path, "%s%s%s/%s%s", dirs[i], sub[0] ? "/" : "", sub, arg, ext[e]);
            char *real = is_file(path) ? realpath(path, NULL) : NULL;   /* no "bin/../share" in what is stored */
            if (real && strlen(real) < len) {
                snprintf(out, len, "%s", real);
                free(real);
                return 1;
            }
            free(real);
        }
    return 0;
}
