#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[256];

static int linked_suites;

/* Calls fn(source, link) for each entry of the source tree's suites/. */
static void each_suite_entry(void (*fn)(const char *source, const char *link))
{
    char src_dir[4096];
    snprintf(src_dir, sizeof src_dir, "%s/suites", PPB_SOURCE_DIR);
    DIR *d = opendir(src_dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        /* Not proposals/: the input gets its own folder of that name, which
         * must never be the source tree's (the fuzzer writes into it). */
        if (e->d_name[0] == '.' || strcmp(e->d_name, "proposals") == 0)
            continue;
        char source[4400], link[600];
        snprintf(source, sizeof source, "%s/%s", src_dir, e->d_name);
        snprintf(link, sizeof link, "%s/%s", fuzz_dir, e->d_name);
        fn(source, link);
    }
    closedir(d);
}

static void make_link(const char *source, const char *link)
{
    /* One already there is fine; one that cannot be made only costs coverage. */
    int ignored = symlink(source, link);
    (void)ignored;
}

static void remove_link(const char *source, const char *link)
{
    (void)source;
    unlink(link);
}

static void remove_input_dir(void)
{
    ppb_fuzz_remove("proposals/input.yaml");
    if (fuzz_dir[0]) {
        char sub[300];
        snprintf(sub, sizeof sub, "%s/proposals", fuzz_dir);
        rmdir(sub);
    }
    if (linked_suites)
        each_suite_entry(remove_link);
    ppb_fuzz_remove("input.yaml");
    ppb_fuzz_remove("input.db");
    ppb_fuzz_remove("baseline.db");
    if (fuzz_dir[0])
        rmdir(fuzz_dir);
}

static const char *input_dir(void)
{
    if (!fuzz_dir[0]) {
        /* /dev/shm when there is one: truncating a file on a disk file
         * system costs milliseconds, which would cap the executions/s. */
        static const char *roots[] = {"/dev/shm", "/tmp"};
        for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
            snprintf(fuzz_dir, sizeof fuzz_dir, "%s/ppb-fuzz-%ld", roots[i], (long)getpid());
            if (mkdir(fuzz_dir, 0700) == 0 || errno == EEXIST) {
                atexit(remove_input_dir);
                return fuzz_dir;
            }
        }
        fuzz_dir[0] = '\0';
        return NULL;
    }
    return fuzz_dir;
}

int ppb_fuzz_link_suites(void)
{
    const char *dir = input_dir();
    if (!dir)
        return -1;
    if (!linked_suites) {
        each_suite_entry(make_link);
        linked_suites = 1;
        char sub[300];
        snprintf(sub, sizeof sub, "%s/proposals", dir);
        struct stat st;
        if ((mkdir(sub, 0700) != 0 && errno != EEXIST) || lstat(sub, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            return -1;   /* never write through a link left there */
    }
    return 0;
}

const char *ppb_fuzz_write_input(const char *name, const uint8_t *data, size_t size)
{
    static char path[512];
    const char *dir = input_dir();
    if (!dir)
        return NULL;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    size_t written = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || written != size)
        return NULL;
    return path;
}

void ppb_fuzz_remove(const char *name)
{
    static const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
    const char *dir = input_dir();
    if (!dir)
        return;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s%s", dir, name, suffixes[i]);
        unlink(path);
    }
}

int ppb_fuzz_message_ok(const char *msg)
{
    /* A message quotes input, which may hold any byte (a YAML string may
     * hold a newline); what is checked is that a rejection says something. */
    return msg && msg[0] != '\0';
}
