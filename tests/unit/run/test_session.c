/* The session's inputs for a backend that makes its own on the device: a
 * shape's inputs and rows made ahead and taken over at its turn (only then),
 * and cached rows read without building host tensors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"
#include "temp_dir.h"

static const ppb_backend_ops makes_inputs_ops = {.name = "fake-device", .makes_inputs = 1};

static int refuse_all(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_err *err)
{
    (void)b, (void)c, (void)w;
    return ppb_fail(err, PPB_EREFUSED, "this config does not fit");
}
static const ppb_backend_ops refusing_ops = {.name = "fake-refusing", .makes_inputs = 1, .refuse = refuse_all};
static const ppb_backend_ops host_inputs_ops = {.name = "fake-host", .makes_inputs = 0};

/* prefetch: the cases named, in order */
static int prefetched[8], n_prefetched;
static void record_prefetch(ppb_backend *b, const ppb_case *c)
{
    (void)b;
    if (n_prefetched < 8)
        prefetched[n_prefetched++] = c->shape.seq_len;
}
static const ppb_backend_ops prefetching_ops = {.name = "fake-prefetching", .makes_inputs = 1,
                                                .prefetch = record_prefetch};

static ppb_case make_case(int seq)
{
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = 2;
    c.shape.seq_len = seq;
    c.shape.num_heads = 4;
    c.shape.num_kv_heads = 2;
    c.shape.head_dim = 64;
    c.shape.page_size = 16;
    c.shape.dtype = PPB_BF16;
    ppb_case_make_key(&c);
    return c;
}

/* A session on a backend that makes its own inputs, its reference cache in a
 * fresh folder, and one case. */
typedef struct fixture {
    char *dir;
    ppb_suite defaults;
    ppb_session s;
    ppb_case c;
    uint64_t seed;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = temp_dir_make()))
        return -1;
    ppb_suite_defaults(&f->defaults);
    f->s.ops = &makes_inputs_ops;
    snprintf(f->s.reference_cache, sizeof f->s.reference_cache, "%s", f->dir);
    f->c = make_case(100);
    f->seed = ppb_case_seed(7, &f->c);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    temp_dir_remove(f->dir);
    free(f);
    return 0;
}

static void test_inputs_ahead_are_taken_over(void **state)
{
    fixture *f = *state;
    ppb_session *s = &f->s;
    const ppb_check_settings *cs = &f->defaults.check;

    /* ahead: computed (and cached), no host tensors kept; from a copy of the case, as the runner's thread has */
    ppb_inputs_ahead ahead;
    const ppb_case copy = f->c;
    assert_int_equal(ppb_session_inputs_ahead(s, &copy, f->seed, cs, &ahead), 1);
    assert_int_equal(s->reference_ahead, 1);
    assert_int_equal(temp_dir_count(f->dir), 1);
    assert_null(ahead.w.q);
    assert_true(ahead.rows.n > 0);
    long first_row = ahead.rows.rows[0];

    /* another shape's turn: not taken, the ahead inputs stay */
    ppb_case other = make_case(101);
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(s, &other, ppb_case_seed(7, &other), cs, &ahead, &ref, &w, &res),
                     PPB_OK);
    assert_non_null(w.q); /* not cached: the tensors, for the check's rows */
    assert_null(ref.w);
    assert_string_not_equal(ahead.shape_key, "");
    ppb_workload_free(&w);

    /* the same shape on other inputs (another seed): not taken either */
    assert_int_equal(ppb_session_workload(s, &f->c, f->seed + 1, cs, &ahead, &ref, &w, &res), PPB_OK);
    assert_null(ref.w);
    assert_string_not_equal(ahead.shape_key, "");
    ppb_workload_free(&w);

    /* its own turn: taken over whole, nothing read or computed again */
    int hits = s->reference_hits;
    assert_int_equal(ppb_session_workload(s, &f->c, f->seed, cs, &ahead, &ref, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_OK);
    assert_ptr_equal(w.c, &f->c);
    assert_null(w.q);
    assert_ptr_equal(ref.w, &w);
    assert_int_equal(ref.rows[0], first_row);
    assert_int_equal(s->reference_hits, hits);
    assert_string_equal(ahead.shape_key, "");
    ppb_reference_rows_free(&ref);
    ppb_workload_free(&w);

    /* the next run: the ahead thread reads them from the cache */
    assert_int_equal(ppb_session_inputs_ahead(s, &f->c, f->seed, cs, &ahead), 1);
    assert_int_equal(s->reference_ahead, 1);
    assert_int_equal(s->reference_hits, hits + 1);
    ppb_inputs_ahead_free(&ahead);
    assert_string_equal(ahead.shape_key, "");
}

static void test_inputs_ahead_without_cache_or_device_inputs(void **state)
{
    fixture *f = *state;
    ppb_session *s = &f->s;
    s->reference_cache[0] = '\0';
    const ppb_check_settings *cs = &f->defaults.check;
    ppb_inputs_ahead ahead;

    /* no cache: still made ahead and handed over */
    assert_int_equal(ppb_session_inputs_ahead(s, &f->c, f->seed, cs, &ahead), 1);
    ppb_inputs_ahead_free(&ahead);
    /* a backend that reads host tensors (CPU timings): what was made ahead is
     * not taken over, the tensors are always made */
    assert_int_equal(ppb_session_inputs_ahead(s, &f->c, f->seed, cs, &ahead), 1);
    s->ops = &host_inputs_ops;
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(s, &f->c, f->seed, cs, &ahead, &ref, &w, &res), PPB_OK);
    assert_non_null(w.q);
    assert_non_null(w.k_cache);
    assert_string_not_equal(ahead.shape_key, "");
    ppb_inputs_ahead_free(&ahead);
    ppb_workload_free(&w);
}

/* A config the backend refuses from the shape: the inputs taken over are
 * freed with the refusal (valgrind and ASan run this too), no host tensors made. */
static void test_refused_after_taking_over(void **state)
{
    fixture *f = *state;
    ppb_session *s = &f->s;
    const ppb_check_settings *cs = &f->defaults.check;
    ppb_inputs_ahead ahead;
    assert_int_equal(ppb_session_inputs_ahead(s, &f->c, f->seed, cs, &ahead), 1);
    s->ops = &refusing_ops;
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(s, &f->c, f->seed, cs, &ahead, &ref, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_REFUSED);
    assert_non_null(strstr(res.reason, "does not fit"));
    assert_string_equal(ahead.shape_key, "");
    assert_null(ref.w);
    assert_null(ref.values);
    assert_null(w.block_table);
}

static void test_cached_rows_read_without_tensors(void **state)
{
    fixture *f = *state;
    ppb_session *s = &f->s;
    const ppb_check_settings *cs = &f->defaults.check;
    ppb_inputs_ahead ahead;
    assert_int_equal(ppb_session_inputs_ahead(s, &f->c, f->seed, cs, &ahead), 1); /* fills the cache */
    ppb_inputs_ahead_free(&ahead);

    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(s, &f->c, f->seed, cs, NULL, &ref, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_OK);
    assert_null(w.q);
    assert_ptr_equal(ref.w, &w);
    assert_int_equal(s->reference_hits, 1);
    ppb_reference_rows_free(&ref);
    ppb_workload_free(&w);
}

/* The backend hears of every case to run, once and in order, and of no other;
 * a backend without prefetch, or no backend (the parent of worker processes), is skipped. */
/* dump asks for the inputs without check settings: on a backend that makes its
 * own inputs (cuda) it still gets every host tensor, which it writes out
 * (ppb_session_workload read the NULL settings and crashed there before). */
static void test_inputs_whole_for_a_reader_without_check_settings(void **state)
{
    fixture *f = *state;
    ppb_workload w;
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_workload(&f->s, &f->c, f->seed, NULL, NULL, NULL, &w, &res), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_OK);
    assert_non_null(w.q);
    assert_non_null(w.k_cache);
    assert_non_null(w.v_cache);
    assert_int_equal(temp_dir_count(f->dir), 0); /* no reference rows were made or cached */
    ppb_workload_free(&w);
    ppb_result_free(&res);
}

static void test_prefetch_names_the_cases_to_run(void **state)
{
    (void)state;
    ppb_case cases[4] = {make_case(100), make_case(200), make_case(300), make_case(400)};
    const char todo[4] = {1, 0, 1, 1};
    ppb_session s;
    memset(&s, 0, sizeof s);
    s.ops = &prefetching_ops;
    n_prefetched = 0;
    ppb_session_prefetch(&s, cases, todo, 4);
    assert_int_equal(n_prefetched, 0); /* no backend open */
    s.backend = (ppb_backend *)&s;     /* never dereferenced by the fake */
    ppb_session_prefetch(&s, cases, todo, 4);
    assert_int_equal(n_prefetched, 3);
    assert_int_equal(prefetched[0], 100);
    assert_int_equal(prefetched[1], 300);
    assert_int_equal(prefetched[2], 400);
    s.ops = &makes_inputs_ops;         /* no prefetch op */
    ppb_session_prefetch(&s, cases, todo, 4);
    assert_int_equal(n_prefetched, 3);
}

/* check_output: a backend that "launches" and writes nothing (every element of the
 * prepared workload's output left poisoned) */
static const ppb_workload *prepared_workload;
static int prepare_ok(ppb_backend *b, const ppb_case *c, const ppb_workload *w, ppb_result *res, ppb_err *err)
{
    (void)b, (void)c, (void)res, (void)err;
    prepared_workload = w;
    return PPB_OK;
}
static int write_poison(ppb_backend *b, uint16_t *out, ppb_result *res, ppb_err *err)
{
    (void)b, (void)res, (void)err;
    for (size_t i = 0; i < prepared_workload->out_elems; i++)
        out[i] = PPB_POISON_BITS;
    return PPB_OK;
}
static const ppb_backend_ops poisoning_ops = {
    .name = "fake-poisoning", .makes_inputs = 0, .prepare = prepare_ok, .run_checked = write_poison};

/* One check of case c in session s: every checked element is found unwritten. */
static void check_unwritten(ppb_session *s, const ppb_suite *defaults, const ppb_case *c)
{
    ppb_workload w;
    ppb_reference_rows ref = {0};
    ppb_result res;
    ppb_result_init(&res);
    const uint64_t seed = ppb_case_seed(7, c);
    assert_int_equal(ppb_session_workload(s, c, seed, &defaults->check, NULL, &ref, &w, &res), PPB_OK);
    int prepared = 0;
    assert_int_equal(ppb_session_check(s, c, &w, &defaults->check, seed, &ref, &res, &prepared), PPB_OK);
    assert_int_equal(res.status, PPB_STATUS_WRONG);
    assert_true(res.check.rows_checked > 0);
    assert_int_equal(res.check.unwritten, res.check.rows_checked * c->shape.head_dim);
    assert_true(s->check_out_elems >= w.out_elems);
    ppb_reference_rows_free(&ref);
    ppb_workload_free(&w);
}

/* The output copy is kept from case to case: grown for a larger output, reused for a
 * smaller one, freed with the session. */
static void test_check_output_kept_across_cases(void **state)
{
    fixture *f = *state;
    ppb_session *s = &f->s;
    s->ops = &poisoning_ops;
    s->reference_cache[0] = '\0';
    ppb_case small = make_case(100), large = make_case(100);
    large.shape.batch = 8; /* decode: the output is batch x heads x head_dim */
    ppb_case_make_key(&large);
    check_unwritten(s, &f->defaults, &small);
    const size_t small_elems = s->check_out_elems;
    check_unwritten(s, &f->defaults, &large);
    assert_true(s->check_out_elems > small_elems);
    const uint16_t *kept = s->check_out;
    const size_t large_elems = s->check_out_elems;
    check_unwritten(s, &f->defaults, &small);
    assert_ptr_equal(s->check_out, kept);
    assert_int_equal(s->check_out_elems, large_elems);
    ppb_session_close(s);
    assert_null(s->check_out);
    assert_int_equal(s->check_out_elems, 0);
}

/* ppb_session_refuses asks the backend's refusal without building inputs;
 * a backend without one never refuses ahead. */
static void test_refuses_ahead(void **state)
{
    fixture *f = *state;
    ppb_session *s = &f->s;
    ppb_result res;
    ppb_result_init(&res);
    assert_int_equal(ppb_session_refuses(s, &f->c, f->seed, &res), 0);
    assert_int_equal(res.status, PPB_STATUS_OK);
    s->ops = &refusing_ops;
    assert_int_equal(ppb_session_refuses(s, &f->c, f->seed, &res), 1);
    assert_int_equal(res.status, PPB_STATUS_REFUSED);
    assert_string_equal(res.reason, "this config does not fit");
}

/* Reasons summed up by their text before ':' into one line; a kind past the
 * fourth is only counted; the CPU suites are named only for the CPU's size limit. */
static void test_refusals_line(void **state)
{
    (void)state;
    ppb_session s;
    memset(&s, 0, sizeof s);
    static const ppb_backend_ops cpu = {.name = "cpu"};
    s.ops = &cpu;
    ppb_refusals t;
    memset(&t, 0, sizeof t);
    ppb_refusals_add(&t, PPB_CPU_TOO_LARGE ": 137 GFLOP > 2 GFLOP limit (--cpu-max-gflop)");
    ppb_refusals_add(&t, PPB_CPU_TOO_LARGE ": 550 GFLOP > 2 GFLOP limit (--cpu-max-gflop)");
    ppb_refusals_add(&t, "infeasible on bi-v100: needs 65 KB");
    char line[1024];
    ppb_refusals_text(&t, "cases", &s, line, sizeof line);
    assert_string_equal(line, "all 3 cases are refused on the cpu backend: 2 too large for the CPU backend (e.g. 137 "
                              "GFLOP > 2 GFLOP limit (--cpu-max-gflop)); 1 infeasible on bi-v100 (needs 65 KB); the "
                              "suites cpu-nightly and cpu-nightly-decode are sized for the CPU (README \"No GPU?\")");
    memset(&t, 0, sizeof t);
    const char *kinds[] = {"a: 1", "b: 2", "c", "d: 4", "e: 5", "f: 6"};
    for (int i = 0; i < 6; i++)
        ppb_refusals_add(&t, kinds[i]);
    ppb_refusals_text(&t, "pairs", &s, line, sizeof line);
    assert_string_equal(line, "all 6 pairs are refused on the cpu backend: 1 a (1); 1 b (2); 1 c; 1 d (4); 2 for other "
                              "reasons");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inputs_ahead_are_taken_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inputs_ahead_without_cache_or_device_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_after_taking_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cached_rows_read_without_tensors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inputs_whole_for_a_reader_without_check_settings, setup, teardown),
        cmocka_unit_test(test_prefetch_names_the_cases_to_run),
        cmocka_unit_test_setup_teardown(test_check_output_kept_across_cases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_ahead, setup, teardown),
        cmocka_unit_test(test_refusals_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
