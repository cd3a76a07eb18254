/* Results stored on the writer's thread (harness/run/result_writer.h): every
 * result handed over is stored, in order, with its samples; the caller's copy
 * is emptied; after the first failed store nothing more is, and the failure
 * (naming its case) comes back from put and from finish. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "result_writer.h"

/* More cases than the queue holds, so put has to wait for the writer. */
#define N_CASES (3 * RESULT_WRITER_QUEUE)

typedef struct fixture {
    ppb_store *store;
    int64_t run_id;
    ppb_case cases[N_CASES];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    ppb_err err = {{0}};
    if (!f || ppb_store_open(&f->store, ":memory:", &err))
        return -1;
    ppb_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "writer");
    snprintf(run.backend, sizeof run.backend, "cpu");
    run.n_cases = N_CASES;
    if (ppb_store_begin_run(f->store, &run, &err))
        return -1;
    f->run_id = run.id;
    for (int i = 0; i < N_CASES; i++) {
        ppb_case *c = &f->cases[i];
        ppb_case_init(c, PPB_PAGED_ATTENTION);
        c->shape.batch = 1;
        c->shape.seq_len = 16 * (i + 1);
        c->shape.num_heads = 4;
        c->shape.num_kv_heads = 2;
        c->shape.head_dim = 64;
        c->shape.page_size = 16;
        c->shape.dtype = PPB_BF16;
        ppb_case_make_key(c);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ppb_store_close(f->store);
    free(f);
    return 0;
}

/* Case i's result: i + 1 samples of i + 1 ms. */
static ppb_result result_of(int i)
{
    ppb_result r;
    ppb_result_init(&r);
    r.status = PPB_STATUS_OK;
    r.n_samples = i + 1;
    r.samples_ms = malloc(sizeof *r.samples_ms * (size_t)r.n_samples);
    for (int k = 0; k < r.n_samples; k++)
        r.samples_ms[k] = i + 1;
    ppb_result_summarise(&r, 1e9, 1e6);
    return r;
}

typedef struct stored {
    int n;
    int seq_len[N_CASES], n_samples[N_CASES];
    double sample[N_CASES];
} stored;

static int collect(void *ctx, const ppb_case *c, const ppb_result *r)
{
    stored *s = ctx;
    if (s->n >= N_CASES)
        return -1;
    s->seq_len[s->n] = c->shape.seq_len;
    s->n_samples[s->n] = r->n_samples;
    s->sample[s->n] = r->n_samples ? r->samples_ms[r->n_samples - 1] : 0;
    s->n++;
    return 0;
}

static stored read_back(fixture *f)
{
    stored s = {0};
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_each_result(f->store, f->run_id, collect, &s, &err), PPB_OK);
    return s;
}

static void test_every_result_stored_in_order(void **state)
{
    fixture *f = *state;
    ppb_result_writer *w = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_result_writer_start(&w, f->store, f->run_id, &err), PPB_OK);
    for (int i = 0; i < N_CASES; i++) {
        ppb_result r = result_of(i);
        assert_int_equal(ppb_result_writer_put(w, &f->cases[i], &r, &err), PPB_OK);
        assert_null(r.samples_ms); /* taken over */
        assert_int_equal(r.n_samples, 0);
        ppb_result_free(&r);
    }
    double waited = -1;
    assert_int_equal(ppb_result_writer_finish(w, &waited, &err), PPB_OK);
    assert_true(waited >= 0);

    stored s = read_back(f);
    assert_int_equal(s.n, N_CASES);
    for (int i = 0; i < N_CASES; i++) { /* results come back in the order stored */
        assert_int_equal(s.seq_len[i], 16 * (i + 1));
        assert_int_equal(s.n_samples[i], i + 1);
        assert_true(s.sample[i] == i + 1);
    }
}

/* Case 2's result cannot be stored (a status the store refuses): cases 0 and 1
 * are stored, none after 2, and the failure names case 2. */
static void test_nothing_stored_after_a_failure(void **state)
{
    fixture *f = *state;
    ppb_result_writer *w = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_result_writer_start(&w, f->store, f->run_id, &err), PPB_OK);
    int failed_put = 0;
    for (int i = 0; i < N_CASES; i++) {
        ppb_result r = result_of(i);
        if (i == 2)
            r.status = (ppb_status)99;
        ppb_err put_err = {{0}};
        int rc = ppb_result_writer_put(w, &f->cases[i], &r, &put_err);
        if (rc) { /* once failed, every later put says so */
            assert_int_equal(rc, PPB_EINPUT);
            assert_non_null(strstr(put_err.msg, "unknown status"));
            failed_put = 1;
        } else {
            assert_false(failed_put);
        }
        ppb_result_free(&r);
    }
    double waited = 0;
    assert_int_equal(ppb_result_writer_finish(w, &waited, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "unknown status"));

    stored s = read_back(f);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.seq_len[0], 16);
    assert_int_equal(s.seq_len[1], 32);
}

/* A run whose row is gone: the first store fails and says why. */
static void test_missing_run_fails(void **state)
{
    fixture *f = *state;
    ppb_result_writer *w = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_result_writer_start(&w, f->store, f->run_id + 100, &err), PPB_OK);
    ppb_result r = result_of(0);
    ppb_result_writer_put(w, &f->cases[0], &r, &err); /* may fail already, or queue */
    ppb_result_free(&r);
    double waited = 0;
    assert_int_not_equal(ppb_result_writer_finish(w, &waited, &err), PPB_OK);
    assert_non_null(strstr(err.msg, "not found"));
    assert_int_equal(read_back(f).n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_result_stored_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_stored_after_a_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_run_fails, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
