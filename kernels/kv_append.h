/* The paged cache as a serving engine hands it to a kernel that reads every key
 * from the cache: each sequence's context, then its new tokens. vLLM writes
 * the new tokens' K/V into the cache in a step of its own before attention
 * (reshape_and_cache_flash); the Triton unified attention kernel (vLLM 0.9.2
 * on) then reads positions 0 .. context + new - 1 through the block table, and
 * chunked_prefill_paged_decode's decode kernel (0.8.5 on) a one-token
 * sequence's new key.
 * ppbench's inputs keep the new tokens apart (k, v), as the prefix-prefill
 * kernel reads them, so such an implementation builds this staged copy in its
 * `stage` (kernel ABI 6, untimed), with the same values at every position: one
 * float64 reference serves both kinds of kernel.
 *
 * The staged cache, described in the FLASH layout [pages, page_size, kv_heads,
 * head_dim] (a page is page_size rows of kv_heads x head_dim, and so is a token
 * of k/v; a cache in vLLM's paged-attention layout has the same pages, and
 * its copy function puts each row's elements where kv_layout.h says, as
 * vllm-triton's chunked_prefill_paged_decode does):
 *   - pages 0 .. num_blocks - 1: ppbench's cache, copied whole, so the context
 *     keeps its page numbers (the seeded permutation, never the identity);
 *   - then, sequence by sequence, the pages its new tokens need beyond its
 *     last context page; new tokens first fill the rest of that page, as
 *     vLLM's slot mapping does.
 * Plain C, `static inline`, no allocation: the caller allocates from the sizes
 * below and copies rows with its own memcpy (host or device). */
#ifndef PPB_KV_APPEND_H
#define PPB_KV_APPEND_H

#include <stddef.h>

#include "attention_args.h"
#include "kv_layout.h"

static inline long long ppb_kv_append_pages(long long tokens, int page_size)
{
    return (tokens + page_size - 1) / page_size;
}

/* Pages per sequence in the staged block table (its row length): the longest
 * sequence's context + new tokens. */
static inline int ppb_kv_append_blocks_per_seq(const int32_t *context_lens, const int32_t *query_lens, int batch,
                                               int page_size)
{
    long long most = 1;
    for (int b = 0; b < batch; b++) {
        long long pages = ppb_kv_append_pages((long long)context_lens[b] + query_lens[b], page_size);
        most = pages > most ? pages : most;
    }
    return (int)most;
}

/* Pages of the staged cache: ppbench's num_blocks, then the appended ones. */
static inline long long ppb_kv_append_num_blocks(const int32_t *context_lens, const int32_t *query_lens, int batch,
                                                 int page_size, int num_blocks)
{
    long long pages = num_blocks;
    for (int b = 0; b < batch; b++)
        pages += ppb_kv_append_pages((long long)context_lens[b] + query_lens[b], page_size) -
                 ppb_kv_append_pages(context_lens[b], page_size);
    return pages;
}

/* The staged block table [batch, staged_mbps] (unused entries 0) from
 * ppbench's [batch, mbps]: the context pages as they are, then the appended. */
static inline void ppb_kv_append_block_table(const int32_t *table, int mbps, const int32_t *context_lens,
                                             const int32_t *query_lens, int batch, int page_size, int num_blocks,
                                             int staged_mbps, int32_t *out)
{
    long long next = num_blocks;
    for (int b = 0; b < batch; b++) {
        int32_t *row = out + (size_t)b * (size_t)staged_mbps;
        long long ctx_pages = ppb_kv_append_pages(context_lens[b], page_size);
        long long all = ppb_kv_append_pages((long long)context_lens[b] + query_lens[b], page_size);
        for (long long p = 0; p < staged_mbps; p++)
            row[p] = p < ctx_pages ? table[(size_t)b * (size_t)mbps + (size_t)p] : p < all ? (int32_t)next++ : 0;
    }
}

/* One copy of `rows` token rows: from ppbench's cache (from_new 0: row
 * src_row of the cache) or from its new tokens (from_new 1: row src_row of k
 * and of v) to row dst_row of the staged cache. Returns 0, or nonzero to stop. */
typedef int (*ppb_kv_append_copy_fn)(void *user, int from_new, size_t dst_row, size_t src_row, size_t rows);

/* Every copy the staged cache needs, in as few runs as the pages allow: the
 * whole of ppbench's cache, then each sequence's new tokens (contiguous in the
 * staged cache within a page, and across its appended pages). `staged_table`
 * is ppb_kv_append_block_table's; start_loc [batch + 1] the first new token of
 * each sequence in k/v. Returns the first nonzero `copy` result, else 0. */
static inline int ppb_kv_append_copies(const int32_t *staged_table, int staged_mbps, const int32_t *context_lens,
                                       const int32_t *query_lens, const int32_t *start_loc, int batch, int page_size,
                                       int num_blocks, ppb_kv_append_copy_fn copy, void *user)
{
    int rc = copy(user, 0, 0, 0, (size_t)num_blocks * (size_t)page_size);
    for (int b = 0; b < batch && !rc; b++) {
        const int32_t *row = staged_table + (size_t)b * (size_t)staged_mbps;
        size_t run_dst = 0, run_src = 0, run_rows = 0;
        for (long long pos = context_lens[b]; pos < (long long)context_lens[b] + query_lens[b] && !rc;) {
            long long slot = pos % page_size, n = page_size - slot;
            if (n > (long long)context_lens[b] + query_lens[b] - pos)
                n = (long long)context_lens[b] + query_lens[b] - pos;
            size_t dst = (size_t)row[pos / page_size] * (size_t)page_size + (size_t)slot;
            size_t src = (size_t)start_loc[b] + (size_t)(pos - context_lens[b]);
            if (run_rows && dst == run_dst + run_rows) {
                run_rows += (size_t)n; /* the next page follows in memory: one run */
            } else {
                if (run_rows)
                    rc = copy(user, 1, run_dst, run_src, run_rows);
                run_dst = dst, run_src = src, run_rows = (size_t)n;
            }
            pos += n;
        }
        if (run_rows && !rc)
            rc = copy(user, 1, run_dst, run_src, run_rows);
    }
    return rc;
}

/* For a staged cache in vLLM's paged-attention layout, where a token's key
 * and value are spread over its page: `rows` token rows of `src` (k or v, each
 * row kv_heads x head_dim) written at positions first_pos .. first_pos + rows - 1
 * of `pages` (whole pages of K (is_k) or V, position p on page p / page_size,
 * slot p % page_size), each element where kv_layout.h puts it. The copy
 * function calls this on a host copy of the pages a run of new tokens covers
 * (they follow one another in the staged cache). */
static inline void ppb_kv_append_rows_paged(uint16_t *pages, const uint16_t *src, size_t first_pos, size_t rows,
                                            int is_k, size_t page_size, size_t kv_heads, size_t head_dim)
{
    const size_t row = kv_heads * head_dim;
    for (size_t t = 0; t < rows; t++)
        for (size_t e = 0; e < row; e++)
            pages[ppb_kv_flash_to_vllm((first_pos + t) * row + e, is_k, page_size, kv_heads, head_dim)] =
                src[t * row + e];
}

#endif
