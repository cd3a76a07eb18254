#include "provenance.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef PPB_SOURCE_DIR
#define PPB_SOURCE_DIR "."
#endif

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

/* A ref not in its own file lives in packed-refs as "<sha> <ref>". */
static int packed_ref(const char *git_dir, const char *ref, char *buf, size_t len)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/packed-refs", git_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *space = strchr(line, ' ');
        if (line[0] != '#' && line[0] != '^' && space && strcmp(space + 1, ref) == 0) {
            *space = '\0';
            snprintf(buf, len, "%s", line);
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

void ppb_git_commit(char *buf, size_t len)
{
    char git_dir[4096], head[512], path[4096 + 600];
    snprintf(git_dir, sizeof git_dir, "%s/.git", PPB_SOURCE_DIR);
    snprintf(path, sizeof path, "%s/HEAD", git_dir);
    snprintf(buf, len, "unknown");
    if (read_line(path, head, sizeof head))
        return;
    if (strncmp(head, "ref: ", 5) != 0) { /* detached HEAD holds the sha itself */
        snprintf(buf, len, "%s", head);
        return;
    }
    snprintf(path, sizeof path, "%s/%s", git_dir, head + 5);
    if (read_line(path, buf, len) && packed_ref(git_dir, head + 5, buf, len))
        snprintf(buf, len, "unknown");
}

void ppb_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0)
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
}

void ppb_utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

double ppb_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
