/* Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c): the parsers take a
 * file path, so each input is written to one per-process temporary file that
 * is reused for every execution (docs/SECURITY.md, "Fuzzing"). */
#ifndef PPB_FUZZ_COMMON_H
#define PPB_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Write data to this process's input file `/dev/shm/ppb-fuzz-PID/NAME`
 * (else under /tmp; the folder is created once) and return its path, or NULL when it cannot be
 * written (the execution is then skipped). */
const char *ppb_fuzz_write_input(const char *name, const uint8_t *data, size_t size);
/* Link the source tree's suites/ entries (suites, targets/, models/) into the
 * input folder and create its proposals/ folder, so a proposal written as
 * "proposals/input.yaml" finds "../prefill.yaml" and its target profile. */
int ppb_fuzz_link_suites(void);
/* Remove NAME and its SQLite companions (-wal, -shm, -journal) if present. */
void ppb_fuzz_remove(const char *name);
/* 1 when a rejection came with a message (not empty). */
int ppb_fuzz_message_ok(const char *msg);

#endif
