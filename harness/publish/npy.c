#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "files.h"

int ppb_npy_write(const char *path, const char *descr, size_t elem_size, const size_t *shape,
                  int ndim, const void *data, ppb_err *err)
{
    char dict[256], dims[160] = "";
    size_t count = 1, n = 0;
    for (int i = 0; i < ndim; i++) {
        n += (size_t)snprintf(dims + n, sizeof dims - n, "%zu,%s", shape[i],
                              i + 1 < ndim ? " " : "");
        count *= shape[i];
    }
    if (ndim > 1) /* "(3,)" is a 1-tuple; "(3, 4)" needs no trailing comma */
        dims[strlen(dims) - 1] = '\0';
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                       descr, dims);
    /* magic(6) + version(2) + header length(2) + dict + padding + '\n' is a multiple of 64 */
    size_t total = 10 + (size_t)len + 1;
    size_t pad = (64 - total % 64) % 64;
    FILE *f = NULL;
    int rc = ppb_file_create(path, 1, &f, err);
    if (rc)
        return rc;
    unsigned short hlen = (unsigned short)(len + pad + 1);
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                              (unsigned char)(hlen >> 8)};
    int ok = fwrite(head, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && (count == 0 || fwrite(data, elem_size, count, f) == count);
    if (fclose(f) != 0)
        ok = 0;
    return ok ? PPB_OK : ppb_fail(err, PPB_EIO, "%s: write failed: %s", path, strerror(errno));
}
