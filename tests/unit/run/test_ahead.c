/* Shapes' inputs made ahead (harness/run/ahead.h): made in the run's order,
 * taken at their turn, passed shapes given up, at most max_ready waiting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ahead.h"
#include "temp_dir.h"

/* Three shapes (contexts 100, 200, 300), two configs each, grouped by shape. */
typedef struct fixture {
    char *dir;
    ppb_suite defaults;
    ppb_session s;
    ppb_case cases[6];
    char todo[6];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = temp_dir_make()))
        return -1;
    ppb_suite_defaults(&f->defaults);
    /* as a run starts it: before the device's backend opens */
    ppb_session_init(&f->s, NULL);
    snprintf(f->s.reference_cache, sizeof f->s.reference_cache, "%s", f->dir);
    for (int i = 0; i < 6; i++) {
        ppb_case *c = &f->cases[i];
        ppb_case_init(c, PPB_PAGED_ATTENTION);
        c->shape.batch = 2;
        c->shape.seq_len = 100 * (i / 2 + 1);
        c->shape.num_heads = 4;
        c->shape.num_kv_heads = 2;
        c->shape.head_dim = 64;
        c->shape.page_size = 16;
        c->shape.dtype = PPB_BF16;
        c->config.partition_size = i % 2 ? 256 : 512;
        ppb_case_make_key(c);
        f->todo[i] = 1;
    }
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

static ppb_ahead *start(fixture *f, int max_ready)
{
    return ppb_ahead_start(&f->s, f->cases, f->todo, 6, 7, &f->defaults.check, max_ready);
}

static int made_count(fixture *f) { return __atomic_load_n(&f->s.reference_ahead, __ATOMIC_RELAXED); }

/* Poll until `n` shapes were made, for up to 30 s (valgrind is slow). */
static void wait_made(fixture *f, int n)
{
    for (int i = 0; i < 3000 && made_count(f) < n; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    assert_int_equal(made_count(f), n);
}

static void test_taken_in_turn(void **state)
{
    fixture *f = *state;
    ppb_ahead *a = start(f, 8);
    assert_non_null(a);
    ppb_inputs_ahead made;
    /* the first shape, asked for by its second config: its inputs, seeded by the shape */
    assert_int_equal(ppb_ahead_take(a, &f->cases[1], &made), 1);
    char shape[PPB_CASE_KEY_MAX];
    ppb_case_shape_key(&f->cases[0], shape, sizeof shape);
    assert_string_equal(made.shape_key, shape);
    assert_true(made.seed == ppb_case_seed(7, &f->cases[0]));
    assert_true(made.rows.n > 0);
    assert_null(made.w.q); /* no host tensors kept */
    ppb_inputs_ahead_free(&made);
    /* taken once only */
    assert_int_equal(ppb_ahead_take(a, &f->cases[0], &made), 0);
    /* the third shape; the second, passed, is given up */
    assert_int_equal(ppb_ahead_take(a, &f->cases[4], &made), 1);
    assert_int_equal(made.w.context_lens[0], 300);
    ppb_inputs_ahead_free(&made);
    assert_int_equal(ppb_ahead_take(a, &f->cases[2], &made), 0);
    assert_string_equal(made.shape_key, "");
    ppb_ahead_stop(a);
}

static void test_waits_at_max_ready(void **state)
{
    fixture *f = *state;
    ppb_ahead *a = start(f, 1);
    wait_made(f, 1);
    nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    assert_int_equal(made_count(f), 1); /* one made and not taken: it waits */
    ppb_inputs_ahead made;
    assert_int_equal(ppb_ahead_take(a, &f->cases[0], &made), 1);
    ppb_inputs_ahead_free(&made);
    wait_made(f, 2);
    /* stopped with a shape made and not taken: freed (ASan and valgrind watch) */
    ppb_ahead_stop(a);
    assert_int_equal(made_count(f), 2);
}

static void test_only_the_todo_shapes(void **state)
{
    fixture *f = *state;
    f->todo[2] = f->todo[3] = 0; /* the second shape is stored already */
    ppb_ahead *a = start(f, 8);
    ppb_inputs_ahead made;
    assert_int_equal(ppb_ahead_take(a, &f->cases[0], &made), 1);
    ppb_inputs_ahead_free(&made);
    assert_int_equal(ppb_ahead_take(a, &f->cases[2], &made), 0); /* not among its shapes */
    assert_int_equal(ppb_ahead_take(a, &f->cases[5], &made), 1);
    assert_int_equal(made.w.context_lens[0], 300);
    ppb_inputs_ahead_free(&made);
    ppb_ahead_stop(a);
    assert_int_equal(made_count(f), 2); /* the second shape never made */
}

static void test_none(void **state)
{
    fixture *f = *state;
    ppb_inputs_ahead made;
    assert_int_equal(ppb_ahead_take(NULL, &f->cases[0], &made), 0);
    assert_string_equal(made.shape_key, "");
    ppb_ahead_stop(NULL);
    f->todo[0] = 1;
    assert_null(ppb_ahead_start(&f->s, f->cases, f->todo, 0, 7, &f->defaults.check, 8)); /* no cases */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_taken_in_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waits_at_max_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_the_todo_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_none, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
