/* Growing an array by doubling: the one place the realloc dance is written. */
#ifndef PPB_GROW_H
#define PPB_GROW_H

#include <stddef.h>

/* Make room for element `n` of *items (elements of `size` bytes, *cap of
 * them allocated): doubles *cap (from `first`) when n == *cap. PPB_OK or
 * PPB_ENOMEM (the array is left as it was). */
int ppb_grow(void **items, int *cap, int n, size_t size, int first);

#endif
