#include "reference_cache.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "kernel_cache.h"
#include "reference_sources.h" /* generated: PPB_REFERENCE_SOURCES_HASH */

/* The file's image: three int64 (n, head_dim, rows_total), n int64 row ids,
 * then n * head_dim doubles, in this machine's byte order (the key says so). */
#define HEADER_WORDS 3

void ppb_reference_cache_dir(char *buf, size_t len)
{
    const char *setting = getenv(PPB_REFERENCE_CACHE_ENV);
    ppb_err ignored;
    buf[0] = '\0';
    if (setting && strcmp(setting, "off") == 0)
        return;
    if (ppb_kernel_cache_dir(NULL, buf, len, &ignored) != PPB_OK)
        buf[0] = '\0';
}

/* The lengths and the block table: they follow from the shape through case.c's
 * ragged rules, which are not among the hashed sources. */
static uint64_t layout_hash(const ppb_workload *w)
{
    size_t n = (size_t)w->batch;
    uint64_t h = ppb_fnv1a64(w->query_lens, n * sizeof(int32_t));
    h = ppb_fnv1a64_update(h, w->context_lens, n * sizeof(int32_t));
    h = ppb_fnv1a64_update(h, w->start_loc, (n + 1) * sizeof(int32_t));
    return ppb_fnv1a64_update(h, w->block_table, n * (size_t)w->max_blocks_per_seq * sizeof(int32_t));
}

void ppb_reference_cache_key(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, char *buf,
                             size_t len)
{
    char shape[PPB_CASE_KEY_MAX], layout[17];
    ppb_case_shape_key(w->c, shape, sizeof shape);
    ppb_fnv1a64_hex(layout_hash(w), layout);
    const uint16_t one = 1;
    snprintf(buf, len, "reference-rows 1 sources=%s %s inputs=%016llx rows=%016llx full<=%ld sample=%d layout=%s %s",
             PPB_REFERENCE_SOURCES_HASH, shape, (unsigned long long)w->seed, (unsigned long long)seed,
             cs->full_check_max_rows, cs->sample_rows, layout, *(const unsigned char *)&one ? "le" : "be");
}

/* Rows from a cache image, when it is whole and fits the workload. */
static int rows_from_image(const ppb_workload *w, const void *image, size_t size, ppb_reference_rows *out)
{
    const long dim = w->c->shape.head_dim, total = (long)w->total_tokens * w->c->shape.num_heads;
    int64_t head[HEADER_WORDS];
    if (size < sizeof head)
        return 0;
    memcpy(head, image, sizeof head);
    int64_t n = head[0];
    if (n < 0 || n > total || head[1] != dim || head[2] != total ||
        size != sizeof head + (size_t)n * (sizeof(int64_t) + (size_t)dim * sizeof(double)))
        return 0;
    const unsigned char *p = (const unsigned char *)image + sizeof head;
    out->rows = malloc(sizeof *out->rows * (size_t)(n ? n : 1));
    out->values = malloc(sizeof *out->values * (size_t)(n ? n : 1) * (size_t)dim);
    if (!out->rows || !out->values)
        goto bad;
    for (int64_t i = 0; i < n; i++) {
        int64_t row;
        memcpy(&row, p + (size_t)i * sizeof row, sizeof row);
        if (row < 0 || row >= total || (i > 0 && row <= out->rows[i - 1]))
            goto bad;
        out->rows[i] = (long)row;
    }
    memcpy(out->values, p + (size_t)n * sizeof(int64_t), (size_t)n * (size_t)dim * sizeof(double));
    out->n = (long)n;
    out->w = w;
    return 1;
bad:
    ppb_reference_rows_free(out);
    return 0;
}

static int store_rows(const ppb_reference_rows *r, const char *dir, const char *key, ppb_err *err)
{
    const long dim = r->w->c->shape.head_dim;
    const int64_t head[HEADER_WORDS] = {r->n, dim, (int64_t)r->w->total_tokens * r->w->c->shape.num_heads};
    ppb_kernel_cache_entry e = {.size = sizeof head + (size_t)r->n * (sizeof(int64_t) + (size_t)dim * sizeof(double))};
    snprintf(e.lowered_name, sizeof e.lowered_name, "reference rows");
    unsigned char *p = e.image = malloc(e.size);
    if (!p)
        return ppb_fail(err, PPB_ENOMEM, "out of memory for the reference cache file");
    memcpy(p, head, sizeof head);
    p += sizeof head;
    for (long i = 0; i < r->n; i++, p += sizeof(int64_t)) {
        int64_t row = r->rows[i];
        memcpy(p, &row, sizeof row);
    }
    memcpy(p, r->values, (size_t)r->n * (size_t)dim * sizeof(double));
    int rc = ppb_kernel_cache_prepare(dir, err);
    if (!rc)
        rc = ppb_kernel_cache_store(dir, key, &e, err);
    free(e.image);
    return rc;
}

/* The rows under `key` in dir, when whole and fitting the workload. */
static int load_by_key(const ppb_workload *w, const char *dir, const char *key, ppb_reference_rows *out)
{
    ppb_kernel_cache_entry e;
    if (ppb_kernel_cache_load(dir, key, &e) != 1) /* out of memory too: the caller computes */
        return 0;
    int hit = rows_from_image(w, e.image, e.size, out);
    free(e.image);
    return hit;
}

int ppb_reference_rows_load(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, const char *dir,
                            ppb_reference_rows *out)
{
    memset(out, 0, sizeof *out);
    if (!dir || !dir[0])
        return 0;
    char key[2048];
    ppb_reference_cache_key(w, cs, seed, key, sizeof key);
    return load_by_key(w, dir, key, out);
}

int ppb_reference_rows_get(const ppb_workload *w, const ppb_check_settings *cs, uint64_t seed, const char *dir,
                           FILE *log, ppb_reference_rows *out, int *from_cache, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    *from_cache = 0;
    const int cached = dir && dir[0];
    char key[2048];
    if (cached) {
        ppb_reference_cache_key(w, cs, seed, key, sizeof key);
        if ((*from_cache = load_by_key(w, dir, key, out)))
            return PPB_OK;
    }
    int rc = ppb_reference_rows_compute(w, cs, seed, out, err);
    if (rc || !cached)
        return rc;
    ppb_err store_err = {{0}};
    static int said; /* once per process: every later write would fail alike */
    if (store_rows(out, dir, key, &store_err) != PPB_OK && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) && log)
        fprintf(log, "ppbench: reference rows not cached (%s); computing them each run\n", store_err.msg);
    return PPB_OK;
}
