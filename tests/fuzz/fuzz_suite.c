/* libFuzzer target: ppb_suite_load on arbitrary bytes. Every input must either
 * load or be refused with a message; ASan/UBSan/LeakSanitizer catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = ppb_fuzz_write_input("input.yaml", data, size);
    if (!path)
        return 0;
    static ppb_suite v;
    memset(&v, 0, sizeof v);
    ppb_err err = {{0}};
    int rc = ppb_suite_load(path, &v, &err);
    if (rc != 0 && !ppb_fuzz_message_ok(err.msg))
        abort();   /* a rejection without a message */
    if (rc == 0) {
        ppb_suite_free(&v);
    }
    return 0;
}
