/* Guard zones: canary bytes before and after every buffer a kernel is given
 * (its inputs, its output, the v2 scratch), on the host (cpu backend) and on
 * the device (cuda backend). A kernel implementation is code ppbench runs,
 * not code it trusts (a plugin): after the checked launch the backends read
 * the zones back, and one that wrote outside what it was given -- or into its
 * inputs, which the backends compare separately -- makes the case wrong with a
 * reason naming the buffer and how far, instead of corrupting the next case
 * or the heap without a name.
 *
 * This module holds the rules both backends share: the canary, the zone size,
 * how a zone's changed bytes are read, and the reason's wording. */
#ifndef PPB_BUFFER_GUARD_H
#define PPB_BUFFER_GUARD_H

#include <stddef.h>

#include "result.h"

#define PPB_GUARD_CANARY 0xA5
/* Bytes of canary on each side of a buffer: a multiple of 256, so the buffer
 * after its zone keeps the alignment the allocation had. */
#define PPB_GUARD_BYTES 4096

/* What one buffer's zones say: the farthest changed byte before it (counted
 * from the buffer's start) and past it (from its end), and how many changed. */
typedef struct ppb_guard_hits {
    long long before, past, changed;
} ppb_guard_hits;

/* Read the zone before a buffer (its last byte touches the buffer) and the
 * zone after it (its first byte does); either may be NULL with length 0. */
ppb_guard_hits ppb_guard_read(const unsigned char *zone_before, size_t n_before, const unsigned char *zone_after,
                              size_t n_after);

/* Findings over all the buffers of one checked launch. */
typedef struct ppb_guard_report {
    char outside[384];        /* "1 B before out, 64 B past k_cache" */
    char inputs[192];         /* "q, k_cache": inputs whose contents changed */
    long long changed;        /* canary bytes changed, all buffers */
} ppb_guard_report;

void ppb_guard_report_init(ppb_guard_report *r);
void ppb_guard_report_add(ppb_guard_report *r, const char *buffer, const ppb_guard_hits *h);
void ppb_guard_report_input_changed(ppb_guard_report *r, const char *input);

/* When anything was found: res->overrun marked (the case is then wrong, see
 * session.c), its canary count added, and res->reason saying what `impl` did.
 * Returns 1 when something was found. */
int ppb_guard_report_finish(const ppb_guard_report *r, const char *impl, ppb_result *res);

#endif
