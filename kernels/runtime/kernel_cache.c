#include "kernel_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"

#define CACHE_MAGIC "PPBKCACHE 1\n"
/* Cubins of our kernels are tens to hundreds of KB; anything claiming more is a
 * damaged file, not a kernel. */
#define CACHE_MAX_IMAGE (256u << 20)

int ppb_kernel_cache_dir(const char *explicit_dir, char *buf, size_t len, ppb_err *err)
{
    const char *env = getenv("PPBENCH_KERNEL_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (explicit_dir && *explicit_dir)
        n = snprintf(buf, len, "%s", explicit_dir);
    else if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(buf, len, "%s/ppbench", xdg);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.cache/ppbench", home);
    else
        return ppb_fail(err, PPB_EINPUT,
                        "no kernel cache folder: set PPBENCH_KERNEL_CACHE (or XDG_CACHE_HOME or HOME)");
    if (n < 0 || (size_t)n >= len)
        return ppb_fail(err, PPB_EINPUT, "kernel cache folder name too long");
    return PPB_OK;
}

int ppb_kernel_cache_prepare(const char *dir, ppb_err *err)
{
    char path[4096];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path)
        return ppb_fail(err, PPB_EINPUT, "bad kernel cache folder '%s'", dir);
    memcpy(path, dir, len + 1);
    /* mkdir -p: each prefix in turn; EEXIST is fine as long as the end is a folder. */
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return ppb_fail(err, PPB_EIO, "cannot create kernel cache folder %s: %s", path,
                            strerror(errno));
        path[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ppb_fail(err, PPB_EIO, "kernel cache %s is not a folder", dir);
    return PPB_OK;
}

void ppb_kernel_cache_path(const char *dir, const char *key_text, char *buf, size_t len)
{
    size_t n = strlen(key_text);
    uint64_t h1 = ppb_fnv1a64(key_text, n);
    /* A second, independent 64 bits: the same bytes from another starting point. */
    uint64_t h2 = ppb_fnv1a64_update(PPB_FNV1A64_OFFSET ^ 0x5bd1e9955bd1e995ULL, key_text, n);
    snprintf(buf, len, "%s/%016llx%016llx.ppbk", dir, (unsigned long long)h1,
             (unsigned long long)h2);
}

/* Read one "tag value\n" header line into value (without the newline). */
static int read_header_line(FILE *f, const char *tag, char *value, size_t len)
{
    char line[8192];
    if (!fgets(line, sizeof line, f))
        return 0;
    size_t tl = strlen(tag);
    size_t ll = strlen(line);
    if (ll == 0 || line[ll - 1] != '\n' || strncmp(line, tag, tl) != 0 || line[tl] != ' ')
        return 0;
    line[ll - 1] = '\0';
    if (strlen(line + tl + 1) >= len)
        return 0;
    strcpy(value, line + tl + 1);
    return 1;
}

int ppb_kernel_cache_load(const char *dir, const char *key_text, ppb_kernel_cache_entry *e)
{
    char path[4608];
    memset(e, 0, sizeof *e);
    ppb_kernel_cache_path(dir, key_text, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int hit = 0;
    char magic[sizeof CACHE_MAGIC];
    char key[8192], size_text[32], check_text[32];
    void *image = NULL;
    if (fread(magic, 1, sizeof CACHE_MAGIC - 1, f) != sizeof CACHE_MAGIC - 1 ||
        memcmp(magic, CACHE_MAGIC, sizeof CACHE_MAGIC - 1) != 0)
        goto end;
    if (!read_header_line(f, "key", key, sizeof key) || strcmp(key, key_text) != 0)
        goto end;
    if (!read_header_line(f, "name", e->lowered_name, sizeof e->lowered_name) ||
        !read_header_line(f, "size", size_text, sizeof size_text) ||
        !read_header_line(f, "check", check_text, sizeof check_text))
        goto end;
    char *endp = NULL;
    unsigned long long size = strtoull(size_text, &endp, 10);
    if (*endp != '\0' || size == 0 || size > CACHE_MAX_IMAGE)
        goto end;
    image = malloc((size_t)size);
    if (!image) {
        fclose(f);
        return PPB_ENOMEM;
    }
    if (fread(image, 1, (size_t)size, f) != (size_t)size || fgetc(f) != EOF)
        goto end;
    char check[17];
    ppb_fnv1a64_hex(ppb_fnv1a64(image, (size_t)size), check);
    if (strcmp(check, check_text) != 0)
        goto end;
    e->image = image;
    e->size = (size_t)size;
    image = NULL;
    hit = 1;
end:
    free(image);
    fclose(f);
    if (!hit)
        e->lowered_name[0] = '\0';
    return hit;
}

int ppb_kernel_cache_store(const char *dir, const char *key_text, const ppb_kernel_cache_entry *e,
                           ppb_err *err)
{
    char path[4608], tmp[4700];
    if (strchr(key_text, '\n') || strchr(e->lowered_name, '\n'))
        return ppb_fail(err, PPB_EINPUT, "kernel cache key or name contains a newline");
    ppb_kernel_cache_path(dir, key_text, path, sizeof path);
    /* Unique per process and call: pid + a clock reading + a counter. */
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld.%u", path, (long)getpid(), (long)ts.tv_nsec,
             __atomic_fetch_add(&counter, 1u, __ATOMIC_RELAXED));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return ppb_fail(err, PPB_EIO, "cannot write kernel cache file %s: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return ppb_fail(err, PPB_EIO, "cannot write kernel cache file %s: %s", tmp, strerror(errno));
    }
    char check[17];
    ppb_fnv1a64_hex(ppb_fnv1a64(e->image, e->size), check);
    int ok = fprintf(f, "%skey %s\nname %s\nsize %zu\ncheck %s\n", CACHE_MAGIC, key_text,
                     e->lowered_name, e->size, check) > 0;
    ok = ok && fwrite(e->image, 1, e->size, f) == e->size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        return ppb_fail(err, PPB_EIO, "cannot write kernel cache file %s: %s", path, strerror(saved));
    }
    return PPB_OK;
}
