#include "ptxas_report.h"

#include <stdio.h>
#include <string.h>

/* ptxas -v prints, per entry function (CUDA 11-13):
 *   ptxas info    : Function properties for NAME
 *   ptxas         .     24 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads
 *   ptxas info    : Used 255 registers, used 1 barriers */
void ppb_ptxas_report_parse(const char *log, ppb_ptxas_report *out)
{
    memset(out, 0, sizeof *out);
    int have_frame = 0, have_regs = 0;
    for (const char *line = log; line && *line && !(have_frame && have_regs);) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        const char *frame = strstr(buf, " bytes stack frame");
        const char *used = strstr(buf, "Used ");
        if (frame && !have_frame) {
            const char *num = frame;
            while (num > buf && num[-1] >= '0' && num[-1] <= '9')
                num--;
            have_frame = sscanf(num, "%ld bytes stack frame, %ld bytes spill stores, %ld bytes spill loads",
                                &out->stack_bytes, &out->spill_store_bytes, &out->spill_load_bytes) == 3;
        } else if (used && !have_regs) {
            have_regs = sscanf(used, "Used %d registers", &out->registers) == 1;
        }
        line = end ? end + 1 : NULL;
    }
    out->known = have_frame && have_regs;
    if (!out->known)
        memset(out, 0, sizeof *out);
}
