/* FNV-1a, 64-bit: a small, stable, dependency-free hash. Used where a value
 * must be the same across runs, machines and commits (suite file hashes, case
 * sharding, key sets), so never change the constants. */
#ifndef PPB_HASH_H
#define PPB_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PPB_FNV1A64_OFFSET 0xcbf29ce484222325ULL
#define PPB_FNV1A64_PRIME 0x100000001b3ULL

uint64_t ppb_fnv1a64(const void *data, size_t len);
uint64_t ppb_fnv1a64_str(const char *text);
/* Continue a hash over more bytes (start from PPB_FNV1A64_OFFSET). */
uint64_t ppb_fnv1a64_update(uint64_t hash, const void *data, size_t len);
/* 16 lower-case hex digits and a NUL. */
void ppb_fnv1a64_hex(uint64_t hash, char out[17]);

#endif
