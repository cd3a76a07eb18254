#include "buffer_guard.h"

#include <stdio.h>
#include <string.h>

ppb_guard_hits ppb_guard_read(const unsigned char *zone_before, size_t n_before, const unsigned char *zone_after,
                              size_t n_after)
{
    ppb_guard_hits h = {0, 0, 0};
    for (size_t i = 0; zone_before && i < n_before; i++)
        if (zone_before[i] != PPB_GUARD_CANARY) {
            h.changed++;
            if (!h.before)
                h.before = (long long)(n_before - i); /* the first changed byte is the farthest */
        }
    for (size_t i = 0; zone_after && i < n_after; i++)
        if (zone_after[i] != PPB_GUARD_CANARY) {
            h.changed++;
            h.past = (long long)i + 1;
        }
    return h;
}

void ppb_guard_report_init(ppb_guard_report *r) { memset(r, 0, sizeof *r); }

/* Append "sep item" to buf, keeping it a string whatever its length. */
static void append(char *buf, size_t len, const char *item)
{
    size_t n = strlen(buf);
    if (n + 1 < len)
        snprintf(buf + n, len - n, "%s%s", n ? ", " : "", item);
}

void ppb_guard_report_add(ppb_guard_report *r, const char *buffer, const ppb_guard_hits *h)
{
    char item[96];
    r->changed += h->changed;
    if (h->before) {
        snprintf(item, sizeof item, "%lld B before %s", h->before, buffer);
        append(r->outside, sizeof r->outside, item);
    }
    if (h->past) {
        snprintf(item, sizeof item, "%lld B past %s", h->past, buffer);
        append(r->outside, sizeof r->outside, item);
    }
}

void ppb_guard_report_input_changed(ppb_guard_report *r, const char *input)
{
    append(r->inputs, sizeof r->inputs, input);
}

int ppb_guard_report_finish(const ppb_guard_report *r, const char *impl, ppb_result *res)
{
    if (!r->outside[0] && !r->inputs[0])
        return 0;
    res->overrun.detected = 1;
    res->overrun.guard_bytes_changed += r->changed;
    snprintf(res->reason, sizeof res->reason, "impl %s wrote outside its buffers: %s%s%s (guard zones and input checks caught it)",
             impl, r->outside[0] ? r->outside : "nothing outside them",
             r->inputs[0] ? "; it changed its inputs " : "", r->inputs);
    return 1;
}
