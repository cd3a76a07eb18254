#include "files.h"

#include <errno.h>
#include <fcntl.h>
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

int ppb_is_real_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
