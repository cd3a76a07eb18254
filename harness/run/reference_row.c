/* One row of the float64 reference attention (reference_row.h). The reference is plain
 * softmax attention in double, independent of the kernels' tiles: keys are visited in
 * chunks of at most one page (or 32 new tokens), each chunk converted to fp32 rows (exact
 * for fp16/bf16) and folded into a running max / sum / weighted V sum in double. No
 * memory beyond a few fixed buffers, one pass over K and V, so a 100K-token row costs
 * O(ctx x D). Double rounding makes the result exact to ~1e-15 relative: far below any
 * tolerance a 16-bit output is judged with. */
#include "reference_row.h"

#include <math.h>
#include <stddef.h>

#include "ppb_rng.h"

#define REF_CHUNK 32 /* keys per chunk: a page of the cache (pages up to 32) or 32 new tokens */

static inline float bits_to_f32(uint16_t h, int dtype)
{
    return dtype == 0 ? ppb_rng_fp16_to_float(h) : ppb_rng_bf16_to_float(h);
}

/* x86-64: an AVX2 copy besides the baseline (SSE2) one, picked at load time: the double loops
 * go 4 wide instead of 2. No FMA and no reassociation (CMakeLists.txt), so both copies give
 * the same bits. */
#if defined(__SANITIZE_THREAD__)
#define PPB_REF_NO_CLONES /* ThreadSanitizer instruments the load-time resolver, which then crashes */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PPB_REF_NO_CLONES
#endif
#endif
#if defined(__x86_64__) && defined(__linux__) && !defined(__CUDACC__) && !defined(PPB_REF_NO_CLONES) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define PPB_REF_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef PPB_REF_CLONES
#define PPB_REF_CLONES
#endif

/* out[i] = the input element index[i] of the tensor under `key`, as a float: one
 * loop per dtype, branch-free inside, so it vectorises. */
PPB_REF_CLONES
static void generate(uint64_t key, const uint64_t *index, int n, int dtype, float *out)
{
    if (dtype == 0)
        for (int i = 0; i < n; i++)
            out[i] = ppb_rng_fp16_to_float(ppb_rng_float_to_fp16(ppb_rng_keyed_uniform(key, index[i])));
    else
        for (int i = 0; i < n; i++)
            out[i] = ppb_rng_bf16_to_float(ppb_rng_float_to_bf16(ppb_rng_keyed_uniform(key, index[i])));
}

/* K and V rows [j - j0][D] of key positions [j0, j1), all in the cache (through the
 * block table) or all among the new tokens. */
static void load_chunk(const ppb_ref_keys *r, int kv_head, int j0, int j1, float *k, float *v)
{
    const int dim = r->head_dim;
    const size_t page = (size_t)r->page_size;
    for (int j = j0; j < j1; j++) {
        float *kd = k + (size_t)(j - j0) * dim, *vd = v + (size_t)(j - j0) * dim;
        if (j < r->cached) {
            const size_t block = (size_t)r->block_table[j / r->page_size], slot = (size_t)(j % r->page_size);
            const size_t head = block * (size_t)r->num_kv_heads + (size_t)kv_head;
            /* k: [.., D/8, page, 8] -> dim d at + (d / 8) * page * 8 + d % 8; v: [.., D, page] */
            const size_t k_at = (head * (size_t)(dim / 8) * page + slot) * 8, v_at = head * (size_t)dim * page + slot;
            if (r->k_cache) {
                for (int d = 0; d < dim; d++) {
                    kd[d] = bits_to_f32(r->k_cache[k_at + (size_t)(d / 8) * page * 8 + (size_t)(d % 8)], r->dtype);
                    vd[d] = bits_to_f32(r->v_cache[v_at + (size_t)d * page], r->dtype);
                }
            } else { /* a valid slot: never garbage */
                uint64_t k_index[PPB_REF_MAX_D], v_index[PPB_REF_MAX_D];
                for (int d = 0; d < dim; d++) {
                    k_index[d] = k_at + (size_t)(d / 8) * page * 8 + (size_t)(d % 8);
                    v_index[d] = v_at + (size_t)d * page;
                }
                generate(r->k_cache_key, k_index, dim, r->dtype, kd);
                generate(r->v_cache_key, v_index, dim, r->dtype, vd);
            }
        } else {
            const size_t at = ((size_t)(j - r->cached) * (size_t)r->num_kv_heads + (size_t)kv_head) * (size_t)dim;
            for (int d = 0; d < dim; d++) {
                kd[d] = bits_to_f32(r->k_new[at + d], r->dtype);
                vd[d] = bits_to_f32(r->v_new[at + d], r->dtype);
            }
        }
    }
}

PPB_REF_CLONES
void ppb_reference_attend_group(const ppb_ref_keys *keys, int kv_head, int n_rows, const uint16_t *const *q_rows,
                                double scale, int query_pos, int sliding_window, double *const *out_rows)
{
    const int dim = keys->head_dim;
    const int first = ppb_reference_first_key(query_pos, sliding_window), last = query_pos;

    /* each row's state, as one row alone would keep it: the same operations
     * in the same order, so a row's result does not depend on its group */
    double q[PPB_REF_MAX_GROUP][PPB_REF_MAX_D], max_logit[PPB_REF_MAX_GROUP], sum[PPB_REF_MAX_GROUP];
    float k[REF_CHUNK * PPB_REF_MAX_D], v[REF_CHUNK * PPB_REF_MAX_D];
    for (int r = 0; r < n_rows; r++) {
        for (int d = 0; d < dim; d++) {
            q[r][d] = bits_to_f32(q_rows[r][d], keys->dtype) * scale;
            out_rows[r][d] = 0;
        }
        max_logit[r] = -INFINITY;
        sum[r] = 0;
    }
    for (int j0 = first; j0 <= last;) {
        /* a chunk never crosses a page or the cached / new boundary */
        int j1 = j0 < keys->cached ? (j0 / keys->page_size + 1) * keys->page_size : j0 + REF_CHUNK;
        if (j0 < keys->cached && j1 > keys->cached)
            j1 = keys->cached;
        if (j1 > j0 + REF_CHUNK)
            j1 = j0 + REF_CHUNK;
        if (j1 > last + 1)
            j1 = last + 1;
        load_chunk(keys, kv_head, j0, j1, k, v); /* once for the whole group */
        for (int r = 0; r < n_rows; r++) {
            double *out = out_rows[r];
            double logit[REF_CHUNK], chunk_max = -INFINITY;
            int j = 0;
            /* four keys at a time: four independent sums in flight instead of one
             * chain of adds; each key's sum in the same order as alone */
            for (; j + 4 <= j1 - j0; j += 4) {
                const float *kj = k + (size_t)j * dim;
                double lane[4][4] = {{0}};
                for (int d = 0; d < dim; d += 4)
                    for (int t = 0; t < 4; t++)
                        for (int l = 0; l < 4; l++)
                            lane[t][l] += q[r][d + l] * kj[(size_t)t * dim + d + l];
                for (int t = 0; t < 4; t++)
                    logit[j + t] = (lane[t][0] + lane[t][1]) + (lane[t][2] + lane[t][3]);
            }
            for (; j < j1 - j0; j++) {
                const float *kj = k + (size_t)j * dim;
                double lane[4] = {0, 0, 0, 0};
                for (int d = 0; d < dim; d += 4)
                    for (int l = 0; l < 4; l++)
                        lane[l] += q[r][d + l] * kj[d + l];
                logit[j] = (lane[0] + lane[1]) + (lane[2] + lane[3]);
            }
            for (j = 0; j < j1 - j0; j++)
                if (logit[j] > chunk_max)
                    chunk_max = logit[j];
            if (chunk_max > max_logit[r]) {
                double rescale = exp(max_logit[r] - chunk_max); /* 0 on the first chunk */
                sum[r] *= rescale;
                for (int d = 0; d < dim; d++)
                    out[d] *= rescale;
                max_logit[r] = chunk_max;
            }
            for (j = 0; j < j1 - j0; j++) {
                double p = exp(logit[j] - max_logit[r]);
                const float *vj = v + (size_t)j * dim;
                sum[r] += p;
                for (int d = 0; d < dim; d++)
                    out[d] += p * vj[d];
            }
        }
        j0 = j1;
    }
    for (int r = 0; r < n_rows; r++)
        if (sum[r] > 0)
            for (int d = 0; d < dim; d++)
                out_rows[r][d] /= sum[r];
}

void ppb_reference_attend(const ppb_ref_keys *keys, int kv_head, const uint16_t *q_row, double scale,
                          int query_pos, int sliding_window, double *out_row)
{
    ppb_reference_attend_group(keys, kv_head, 1, &q_row, scale, query_pos, sliding_window, &out_row);
}
