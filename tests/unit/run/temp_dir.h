/* Temporary folders for the run stage's tests (cache folders): create, count
 * the files in, empty, remove. Header-only; each test program includes it once. */
#ifndef PPB_TEST_TEMP_DIR_H
#define PPB_TEST_TEMP_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A new empty folder under /tmp (malloc'd name; temp_dir_remove frees it), NULL on failure. */
static inline char *temp_dir_make(void)
{
    char *d = strdup("/tmp/ppb_test_XXXXXX");
    if (d && !mkdtemp(d)) {
        free(d);
        return NULL;
    }
    return d;
}

/* Visible files in dir (entries not starting with '.'). */
static inline int temp_dir_count(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Unlink the visible files of dir (not folders). */
static inline void temp_dir_clear(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
}

/* Empty, remove and free a temp_dir_make folder. */
static inline void temp_dir_remove(char *dir)
{
    temp_dir_clear(dir);
    rmdir(dir);
    free(dir);
}

#endif
