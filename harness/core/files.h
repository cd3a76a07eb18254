/* Files ppbench writes for the user (reports, dumps): created or truncated,
 * never through a symbolic link, so a link planted where an output goes cannot
 * redirect the write to another file. */
#ifndef PPB_FILES_H
#define PPB_FILES_H

#include <stdio.h>

#include "ppb_error.h"

/* Open `path` for writing ("w" or "wb" semantics), creating it (mode 0644 less
 * the umask) or truncating a regular file; a symbolic link or anything but a
 * regular file there is refused (PPB_EIO naming the path). */
int ppb_file_create(const char *path, int binary, FILE **out, ppb_err *err);

/* Like ppb_file_create, for a temporary name that must not exist yet: a stale
 * file or link of that name is removed first (unlinking a link never touches
 * its target), then the file is created exclusively. */
int ppb_file_create_fresh(const char *path, int binary, FILE **out, ppb_err *err);

/* 1 when `path` is a directory itself, not a link to one. */
int ppb_is_real_dir(const char *path);

#endif
