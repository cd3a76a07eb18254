/* A fresh results database in its own temporary folder, as the document
 * tests' cmocka fixture: setup opens it, teardown closes it and removes the
 * database, its -wal and -shm and the folder. Header-only; each test program
 * includes it once. */
#ifndef PPB_TEST_STORE_FIXTURE_H
#define PPB_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store.h"

typedef struct fixture {
    char dir[256];
    char db[512];
    ppb_store *s;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ppb-doc-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/results.db", f->dir);
    ppb_err err = {{0}};
    if (ppb_store_open(&f->s, f->db, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        rmdir(f->dir);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ppb_store_close(f->s);
    const char *files[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s%s", f->db, files[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

#endif
