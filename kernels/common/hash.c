#include "hash.h"

#include <stdio.h>
#include <string.h>

uint64_t ppb_fnv1a64_update(uint64_t hash, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        hash ^= p[i];
        hash *= PPB_FNV1A64_PRIME;
    }
    return hash;
}

uint64_t ppb_fnv1a64(const void *data, size_t len)
{
    return ppb_fnv1a64_update(PPB_FNV1A64_OFFSET, data, len);
}

uint64_t ppb_fnv1a64_str(const char *text) { return ppb_fnv1a64(text, strlen(text)); }

void ppb_fnv1a64_hex(uint64_t hash, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)hash);
}
