/* Where a run came from: the git commit of the sources, the host, the time. */
#ifndef PPB_PROVENANCE_H
#define PPB_PROVENANCE_H

#include <stddef.h>

/* Commit of the source tree ppbench was built from (PPB_SOURCE_DIR), read from
 * .git without running git; "unknown" when there is none. */
void ppb_git_commit(char *buf, size_t len);
void ppb_hostname(char *buf, size_t len);
/* Current UTC time as ISO 8601 ("2026-11-29T22:27:26Z"). */
void ppb_utc_now(char *buf, size_t len);

/* Milliseconds on the monotonic clock (intervals only: phases, samples on the CPU). */
double ppb_monotonic_ms(void);

#endif
