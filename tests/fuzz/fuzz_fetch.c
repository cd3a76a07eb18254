/* libFuzzer target: a baseline database fetched by URL (file://, through
 * libcurl, the same path as http/https after the transfer): the download is
 * checked and either accepted (then opened and released) or refused with a
 * message and removed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "fuzz_common.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = ppb_fuzz_write_input("baseline.db", data, size);
    if (!path)
        return 0;
    char url[600];
    snprintf(url, sizeof url, "file://%s", path);
    char local[4096] = "";
    ppb_err err = {{0}};
    ppb_store *s = NULL;
    /* What compare and trend do: fetch, check, open read-only with the work bounded. */
    int rc = ppb_fetch_open_baseline(url, 0, &s, local, sizeof local, &err);
    if (rc != 0) {
        if (!ppb_fuzz_message_ok(err.msg))
            abort();   /* a refusal without a message */
        return 0;
    }
    (void)ppb_store_latest_run(s);
    ppb_store_close(s);
    ppb_fetch_release(url, local);
    return 0;
}
