/* Files ppbench writes for the user (reports, dumps, --json/--markdown
 * documents): created or truncated, never through a symbolic link, so a link
 * planted where an output goes cannot redirect the write to another file. */
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

/* A document written whole or not at all: ppb_file_replace_open creates a
 * fresh temporary beside `path` (PATH.tmp-PID), the caller writes to `f`, and
 * ppb_file_replace_commit closes it and renames it over `path`. A reader never
 * sees half a document, and the rename replaces whatever entry is at `path`
 * (a planted link, a FIFO) instead of writing through it or blocking on it.
 * ppb_file_replace_abort removes the temporary. */
typedef struct ppb_file_replace {
    FILE *f;
    char path[4096];
    char tmp[4200];
} ppb_file_replace;
int ppb_file_replace_open(ppb_file_replace *r, const char *path, ppb_err *err);
int ppb_file_replace_commit(ppb_file_replace *r, ppb_err *err);
void ppb_file_replace_abort(ppb_file_replace *r);

/* 1 when `path` is a regular file that starts like an SQLite database
 * ("SQLite format 3"): a document must never be written over one. */
int ppb_file_is_sqlite(const char *path);

/* 1 when `a` and `b` name the same file: the same inode where both exist, else
 * the same canonical path (the folder resolved, the last component as given),
 * so a file that does not exist yet (a database a run will create) compares too. */
int ppb_same_file(const char *a, const char *b);

/* mkdir -p: `path` and every missing folder above it (0755 less the umask);
 * PPB_EIO naming the one that could not be made, or a non-folder in the way. */
int ppb_make_dirs(const char *path, ppb_err *err);

/* ppbench's folder SUB in the user's cache, ${XDG_CACHE_HOME:-$HOME/.cache}/ppbench/SUB
 * (plugins, trees, ...): 0, or -1 when neither variable is set (buf then ""). */
int ppb_user_cache_path(const char *sub, char *buf, size_t len);

/* The folders of the suites ppbench ships, in the order they are searched: the
 * installed one beside the program (BINDIR/../share/ppbench/suites, as
 * `cmake --install` lays it out under any --prefix), then the source tree's the
 * program was built from (build/ppbench). Up to `max` of them into dirs; their count. */
int ppb_shipped_suite_dirs(char dirs[][4096], int max);

/* A suite (sub "") or proposal (sub "proposals") named on the command line:
 * `arg` itself when it holds a '/' or names a file here; else DIR/SUB/ARG or
 * DIR/SUB/ARG.yaml in the first shipped folder that has it (`ppbench run smoke`,
 * `ppbench propose cpu-seed-prefix-prefill`). 1 with out set to that path; 0
 * with out = arg (the loader then says what is missing). */
int ppb_find_shipped_suite(const char *arg, const char *sub, char *out, size_t len);

/* 1 when `path` is a directory itself, not a link to one. */
int ppb_is_real_dir(const char *path);

#endif
