/* The paged cache in the FLASH layout, element by element: where each element
 * sits in vLLM's layout (attention_args.h, PPB_KV_LAYOUT_*). The input
 * generator defines the cache's values in vLLM's layout (ppb_rng.h); a cache
 * asked for in the FLASH layout takes, at each (page, slot, kv head, d), the
 * value vLLM's layout has there, so both layouts hold the same numbers and one
 * float64 reference serves every implementation. Used by the device fill
 * (input_fill.cuh) and the host copy (harness/run/workload.c) alike.
 *
 * Plain C, `static inline`, __host__ __device__ under nvcc (PPB_HD). */
#ifndef PPB_KV_LAYOUT_H
#define PPB_KV_LAYOUT_H

#include "attention_args.h"
#include "ppb_rng.h"

/* Element i of a FLASH-layout cache [pages, page_size, kv_heads, head_dim]:
 * its index in vLLM's k_cache [pages, kv_heads, head_dim / 8, page_size, 8]
 * (is_k) or v_cache [pages, kv_heads, head_dim, page_size]. head_dim is a
 * multiple of 8 (every case's is). The page is the same in both layouts, and
 * so is each page's element count. */
static inline PPB_HD uint64_t ppb_kv_flash_to_vllm(uint64_t i, int is_k, uint64_t page_size, uint64_t kv_heads,
                                                   uint64_t head_dim)
{
    const uint64_t d = i % head_dim, head = i / head_dim % kv_heads, slot = i / (head_dim * kv_heads) % page_size;
    const uint64_t page = i / (head_dim * kv_heads * page_size);
    const uint64_t row = page * kv_heads + head; /* [page, kv head] */
    if (is_k)
        return ((row * (head_dim / 8) + d / 8) * page_size + slot) * 8 + d % 8;
    return (row * head_dim + d) * page_size + slot;
}

#endif
