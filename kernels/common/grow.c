#include "grow.h"

#include <stdlib.h>

#include "ppb_error.h"

int ppb_grow(void **items, int *cap, int n, size_t size, int first)
{
    if (n < *cap)
        return PPB_OK;
    int ncap = *cap ? *cap * 2 : first;
    void *p = realloc(*items, (size_t)ncap * size);
    if (!p)
        return PPB_ENOMEM;
    *items = p;
    *cap = ncap;
    return PPB_OK;
}
