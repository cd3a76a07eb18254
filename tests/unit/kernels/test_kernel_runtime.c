/* The kernel runtime without a GPU: the on-disk cubin cache (folder choice,
 * round trip, rejection of foreign, stale and damaged files) and the NVRTC
 * compile path (stand-in kernels from tests/gpu/standin_kernels: compile,
 * cache hit in a fresh runtime, invalidation when a source changes, compile
 * errors, architecture lowering). Skips when the build has no CUDA/NVRTC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef PPB_HAVE_CUDA
#include "kernel_cache.h"
#include "ppb_kernels.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppb_kruntime_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    (void)state;
    remove_tree(tmpdir);
    return 0;
}

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        n += len > sl && strcmp(e->d_name + len - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

/* ---- cache folder choice ---- */

static void test_cache_dir_precedence(void **state)
{
    (void)state;
    char buf[4096];
    ppb_err err = {{0}};
    setenv("PPBENCH_KERNEL_CACHE", "/from/env", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    assert_int_equal(ppb_kernel_cache_dir("/explicit", buf, sizeof buf, &err), PPB_OK);
    assert_string_equal(buf, "/explicit");
    assert_int_equal(ppb_kernel_cache_dir(NULL, buf, sizeof buf, &err), PPB_OK);
    assert_string_equal(buf, "/from/env");
    unsetenv("PPBENCH_KERNEL_CACHE");
    assert_int_equal(ppb_kernel_cache_dir("", buf, sizeof buf, &err), PPB_OK);
    assert_string_equal(buf, "/xdg/ppbench");
    unsetenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char saved_home[4096] = "";
    if (home)
        snprintf(saved_home, sizeof saved_home, "%s", home);
    setenv("HOME", "/home/someone", 1);
    assert_int_equal(ppb_kernel_cache_dir(NULL, buf, sizeof buf, &err), PPB_OK);
    assert_string_equal(buf, "/home/someone/.cache/ppbench");
    unsetenv("HOME");
    assert_int_equal(ppb_kernel_cache_dir(NULL, buf, sizeof buf, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "PPBENCH_KERNEL_CACHE"));
    if (saved_home[0])
        setenv("HOME", saved_home, 1);
}

/* ---- the file format ---- */

static void test_cache_round_trip_and_rejections(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/a/b/cache", tmpdir);
    ppb_err err = {{0}};
    assert_int_equal(ppb_kernel_cache_prepare(dir, &err), PPB_OK);

    unsigned char image[300];
    for (size_t i = 0; i < sizeof image; i++)
        image[i] = (unsigned char)(i * 7 + 1);
    image[10] = '\n'; /* binary content with newlines must survive */
    ppb_kernel_cache_entry e = {.image = image, .size = sizeof image};
    snprintf(e.lowered_name, sizeof e.lowered_name, "_Z6kernelI6__halfLi128EEvv");
    const char *key = "nvrtc=13.0 src=0123 name=k<__half, 128> opts=--gpu-architecture=sm_90";
    assert_int_equal(ppb_kernel_cache_store(dir, key, &e, &err), PPB_OK);
    assert_int_equal(count_files(dir, ".ppbk"), 1);
    assert_int_equal(count_files(dir, ".tmp"), 0);

    ppb_kernel_cache_entry got;
    assert_int_equal(ppb_kernel_cache_load(dir, key, &got), 1);
    assert_int_equal(got.size, sizeof image);
    assert_memory_equal(got.image, image, sizeof image);
    assert_string_equal(got.lowered_name, e.lowered_name);
    free(got.image);

    /* Another key is another file: a miss. */
    assert_int_equal(ppb_kernel_cache_load(dir, "nvrtc=13.0 other", &got), 0);
    assert_null(got.image);

    /* The same file name reached by another key (a hash collision, simulated by
     * renaming) is a miss: the full key is stored and compared. */
    char from[4608], to[4608];
    ppb_kernel_cache_path(dir, key, from, sizeof from);
    const char *key2 = "nvrtc=13.0 src=9999 name=k<__half, 128> opts=--gpu-architecture=sm_90";
    ppb_kernel_cache_path(dir, key2, to, sizeof to);
    assert_string_not_equal(from, to);
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(ppb_kernel_cache_load(dir, key2, &got), 0);
    assert_int_equal(rename(to, from), 0);

    /* A flipped byte in the image fails the checksum; a truncated file fails the size. */
    FILE *f = fopen(from, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -5, SEEK_END), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, -5, SEEK_END), 0);
    fputc(c ^ 0x40, f);
    fclose(f);
    assert_int_equal(ppb_kernel_cache_load(dir, key, &got), 0);
    assert_int_equal(ppb_kernel_cache_store(dir, key, &e, &err), PPB_OK);
    assert_int_equal(ppb_kernel_cache_load(dir, key, &got), 1);
    free(got.image);
    struct stat st;
    assert_int_equal(stat(from, &st), 0);
    assert_int_equal(truncate(from, st.st_size - 1), 0);
    assert_int_equal(ppb_kernel_cache_load(dir, key, &got), 0);

    /* Keys with newlines would break the format: refused. */
    assert_int_equal(ppb_kernel_cache_store(dir, "a\nb", &e, &err), PPB_EINPUT);

    /* A folder that cannot be created is an error naming it. */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/file", tmpdir);
    FILE *plain = fopen(bad, "w");
    assert_non_null(plain);
    fclose(plain);
    char below[4300];
    snprintf(below, sizeof below, "%s/sub", bad);
    assert_int_not_equal(ppb_kernel_cache_prepare(below, &err), PPB_OK);
    assert_non_null(strstr(err.msg, bad));
}

#ifdef PPB_HAVE_NVRTC
static void standin_dir(char *buf, size_t len)
{
    const char *root = getenv("PPB_SOURCE_DIR");
    snprintf(buf, len, "%s/tests/gpu/standin_kernels", root ? root : ".");
}

static ppb_kernel_spec prefill_spec(int block_m)
{
    ppb_kernel_spec s = {0};
    s.kind = PPB_KSPEC_PREFILL;
    s.dtype = PPB_KDTYPE_FP16;
    s.head_dim = 64;
    s.block_m = block_m;
    s.block_n = 32;
    s.num_warps = 4;
    return s;
}

static void open_compile_only(ppb_kernels **k, const char *source_dir, const char *cache, int arch)
{
    ppb_kernels_options opt = {0};
    opt.compile_only = 1;
    opt.arch = arch;
    opt.mechanism = PPB_KMECH_NVRTC;
    opt.source_dir = source_dir;
    opt.cache_dir = cache;
    ppb_err err = {{0}};
    int rc = ppb_kernels_open(k, &opt, &err);
    if (rc)
        fail_msg("ppb_kernels_open: %s", err.msg);
}

static void test_nvrtc_compile_and_disk_cache(void **state)
{
    (void)state;
    char src[4096], cache[4096];
    standin_dir(src, sizeof src);
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    ppb_kernels *k = NULL;
    ppb_err err = {{0}};
    open_compile_only(&k, src, cache, 90);

    ppb_kernel_spec s = prefill_spec(16);
    ppb_kernel_compile_info info;
    int rc = ppb_kernels_compile(k, &s, &info, &err);
    if (rc)
        fail_msg("compile: %s", err.msg);
    assert_int_equal(info.from_cache, 0);
    assert_true(info.image_bytes > 0);
    assert_non_null(strstr(info.lowered_name, "prefix_prefill_kernel"));
    assert_int_equal(count_files(cache, ".ppbk"), 1);

    /* Device-only calls are refused in compile-only mode. */
    ppb_kernel *h = NULL;
    assert_int_equal(ppb_kernels_get(k, &s, &h, NULL, &err), PPB_EREFUSED);
    ppb_kernels_info ki;
    ppb_kernels_get_info(k, &ki);
    assert_int_equal(ki.cache_misses, 1);
    assert_int_equal(ki.cache_hits, 0);
    assert_int_equal(ki.arch, 90);
    assert_string_equal(ki.mechanism, "nvrtc");
    ppb_kernels_close(k);

    /* A fresh runtime (a new process, as far as the cache knows) finds it on disk. */
    open_compile_only(&k, src, cache, 90);
    rc = ppb_kernels_compile(k, &s, &info, &err);
    if (rc)
        fail_msg("compile again: %s", err.msg);
    assert_int_equal(info.from_cache, 1);
    ppb_kernels_get_info(k, &ki);
    assert_int_equal(ki.cache_hits, 1);
    assert_int_equal(ki.cache_misses, 0);

    /* Another instantiation and another architecture are other entries. */
    ppb_kernel_spec s2 = prefill_spec(32);
    assert_int_equal(ppb_kernels_compile(k, &s2, &info, &err), PPB_OK);
    assert_int_equal(info.from_cache, 0);
    ppb_kernels_close(k);
    open_compile_only(&k, src, cache, 80);
    assert_int_equal(ppb_kernels_compile(k, &s, &info, &err), PPB_OK);
    assert_int_equal(info.from_cache, 0);
    ppb_kernels_close(k);
    assert_int_equal(count_files(cache, ".ppbk"), 3);
}

static void copy_file(const char *from, const char *to, const char *append)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    if (append)
        fputs(append, out);
    fclose(in);
    fclose(out);
}

static void test_nvrtc_source_change_invalidates(void **state)
{
    (void)state;
    char src[4096], edited[4096], cache[4096], from[4200], to[4200];
    standin_dir(src, sizeof src);
    snprintf(edited, sizeof edited, "%s/edited", tmpdir);
    snprintf(cache, sizeof cache, "%s/cache2", tmpdir);
    assert_int_equal(mkdir(edited, 0755), 0);
    snprintf(from, sizeof from, "%s/prefix_prefill.cuh", src);
    snprintf(to, sizeof to, "%s/prefix_prefill.cuh", edited);
    copy_file(from, to, NULL);

    ppb_kernels *k = NULL;
    ppb_kernel_compile_info info;
    ppb_err err = {{0}};
    ppb_kernel_spec s = prefill_spec(16);
    open_compile_only(&k, edited, cache, 90);
    assert_int_equal(ppb_kernels_compile(k, &s, &info, &err), PPB_OK);
    assert_int_equal(info.from_cache, 0);
    ppb_kernels_close(k);

    /* One comment more in one source: a different kernel as far as the cache goes. */
    copy_file(from, to, "\n/* edited */\n");
    open_compile_only(&k, edited, cache, 90);
    assert_int_equal(ppb_kernels_compile(k, &s, &info, &err), PPB_OK);
    assert_int_equal(info.from_cache, 0);
    ppb_kernels_close(k);

    /* A syntax error is a failure carrying the compiler's words and the instance. */
    copy_file(from, to, "\nthis is not C++;\n");
    open_compile_only(&k, edited, cache, 90);
    assert_int_equal(ppb_kernels_compile(k, &s, &info, &err), PPB_EFAIL);
    assert_non_null(strstr(err.msg, "prefix_prefill_kernel<__half, 64, 16, 32, 4, 0>"));
    assert_non_null(strstr(err.msg, "error"));
    ppb_kernels_close(k);
}

static void test_nvrtc_arch_lowering_and_mma_rule(void **state)
{
    (void)state;
    char src[4096];
    standin_dir(src, sizeof src);
    ppb_kernels *k = NULL;
    ppb_err err = {{0}};
    ppb_kernels_options opt = {0};
    opt.compile_only = 1;
    opt.arch = 60; /* older than any NVRTC this project supports */
    opt.mechanism = PPB_KMECH_NVRTC;
    opt.source_dir = src;
    opt.no_cache = 1;
    assert_int_equal(ppb_kernels_open(&k, &opt, &err), PPB_OK);
    ppb_kernels_info ki;
    ppb_kernels_get_info(k, &ki);
    assert_int_equal(ki.arch_note_lowered, 1);
    assert_true(ki.arch > 60 && ki.arch < PPB_MMA_MIN_CC);
    assert_string_equal(ki.cache_dir, "");
    /* The mma path is never compiled below sm_80. */
    ppb_kernel_spec s = prefill_spec(16);
    s.use_mma = 1;
    ppb_kernel_compile_info info;
    assert_int_equal(ppb_kernels_compile(k, &s, &info, &err), PPB_EREFUSED);
    s.use_mma = 0;
    assert_int_equal(ppb_kernels_compile(k, &s, &info, &err), PPB_OK);
    ppb_kernels_close(k);

    /* An architecture newer than NVRTC knows is refused, naming what it has. */
    opt.arch = 990;
    assert_int_equal(ppb_kernels_open(&k, &opt, &err), PPB_EREFUSED);
    assert_non_null(strstr(err.msg, "cannot compile for sm_990"));
    assert_null(k);
}

static void test_name_expressions(void **state)
{
    (void)state;
    char buf[256];
    ppb_kernel_spec s = prefill_spec(64);
    s.dtype = PPB_KDTYPE_BF16;
    s.use_mma = 1;
    ppb_kernel_name_expression(&s, buf, sizeof buf);
    assert_string_equal(buf, "prefix_prefill_kernel<__nv_bfloat16, 64, 64, 32, 4, 1>");
    s.use_mma = 2;   /* the wgmma path: the template's PATH is the level itself */
    ppb_kernel_name_expression(&s, buf, sizeof buf);
    assert_string_equal(buf, "prefix_prefill_kernel<__nv_bfloat16, 64, 64, 32, 4, 2>");
    ppb_kernel_spec d = {0};
    d.kind = PPB_KSPEC_DECODE;
    d.dtype = PPB_KDTYPE_FP16;
    d.head_dim = 128;
    d.page_size = 16;
    d.num_threads = 128;
    d.partition_size = 512;
    ppb_kernel_name_expression(&d, buf, sizeof buf);
    assert_string_equal(buf, "paged_attention_kernel<__half, 128, 16, 128, 512, false>");
    d.kind = PPB_KSPEC_DECODE_REDUCE;
    ppb_kernel_name_expression(&d, buf, sizeof buf);
    assert_string_equal(buf, "paged_attention_v2_reduce_kernel<__half, 128, 128, 512>");
}
#endif /* PPB_HAVE_NVRTC */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_dir_precedence),
        cmocka_unit_test(test_cache_round_trip_and_rejections),
#ifdef PPB_HAVE_NVRTC
        cmocka_unit_test(test_name_expressions),
        cmocka_unit_test(test_nvrtc_compile_and_disk_cache),
        cmocka_unit_test(test_nvrtc_source_change_invalidates),
        cmocka_unit_test(test_nvrtc_arch_lowering_and_mma_rule),
#endif
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

#else /* no CUDA in this build */

static void test_skipped_without_cuda(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skipped_without_cuda),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
