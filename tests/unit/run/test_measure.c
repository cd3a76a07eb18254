/* The sampling loop against a scripted fake backend: warm-up, batching of
 * short launches, the noise-based stop, and NOISY when the budget runs out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "measure.h"
#include "provenance.h"

typedef struct fake {
    double per_launch_ms;   /* what one launch takes */
    double jitter;          /* relative, alternating +- */
    int calls, last_launches;
    int sleep_us;           /* wall time a call takes */
    int step_after;         /* > 0: launches take 4x as long after this many calls */
    int change_after;       /* > 0: after this many calls, the jitter is jitter_after and */
    double jitter_after;    /* launches take level_after times as long as before (0: as long) */
    double level_after;
} fake;

static fake the_fake;

static int fake_time_sample(ppb_backend *b, int launches, int cold, double *ms, ppb_err *err)
{
    (void)b, (void)cold, (void)err;
    if (the_fake.sleep_us)
        usleep((useconds_t)the_fake.sleep_us);
    the_fake.calls++;
    the_fake.last_launches = launches;
    double sign = (the_fake.calls % 2) ? 1 : -1;
    int changed = the_fake.change_after > 0 && the_fake.calls > the_fake.change_after;
    double jitter = changed ? the_fake.jitter_after : the_fake.jitter;
    double level = changed && the_fake.level_after > 0 ? the_fake.level_after : 1;
    *ms = level * the_fake.per_launch_ms * (1 + sign * jitter * (the_fake.calls % 7) / 7.0);
    if (the_fake.step_after > 0 && the_fake.calls > the_fake.step_after)
        *ms *= 4; /* longer than the batching's guess: the replay must drop what it over-took */
    return PPB_OK;
}

static const ppb_backend_ops fake_ops = {.name = "fake", .time_sample = fake_time_sample};

/* The same fake, n samples per call (as the CUDA backend's time_samples). */
static int batches, largest_batch;
static int fake_time_samples(ppb_backend *b, int launches, int cold, int n, double *ms, ppb_err *err)
{
    batches++;
    largest_batch = n > largest_batch ? n : largest_batch;
    for (int i = 0; i < n; i++)
        fake_time_sample(b, launches, cold, &ms[i], err);
    return PPB_OK;
}
static const ppb_backend_ops batching_ops = {.name = "fake-batching", .time_sample = fake_time_sample,
                                             .time_samples = fake_time_samples};

/* The cold-L2 rule: a flush of 2 x L2 + 1 MB; none where the case's own K/V reads
 * exceed the L2 by that much; always one under a sliding window. */
static void test_cold_samples_flush_unless_the_case_reads_enough(void **state)
{
    (void)state;
    const long long l2 = 60ll << 20; /* an H200-sized L2 */
    const size_t flush = ppb_l2_flush_bytes(l2);
    assert_int_equal(flush, (size_t)(121ll << 20));
    ppb_case c;
    ppb_case_init(&c, PPB_PAGED_ATTENTION);
    c.shape.batch = 1;
    c.shape.num_heads = 8;
    c.shape.num_kv_heads = 1;
    c.shape.head_dim = 128;
    c.shape.dtype = PPB_BF16;
    /* K and V once: 512 B a token; q and out: 4 KB */
    const double threshold = (double)flush + (double)l2;
    c.shape.seq_len = (int)ceil((threshold - 4096) / 512) - 1; /* one token short */
    assert_true(ppb_case_min_bytes(&c) < threshold);
    assert_true(ppb_cold_sample_needs_flush(&c, l2));
    c.shape.seq_len += 1;
    assert_true(ppb_case_min_bytes(&c) >= threshold);
    assert_false(ppb_cold_sample_needs_flush(&c, l2));
    c.shape.sliding_window = 4096;
    assert_true(ppb_cold_sample_needs_flush(&c, l2));
    c.shape.sliding_window = 0;
    assert_true(ppb_cold_sample_needs_flush(&c, 4 * l2)); /* a larger L2 */
}

static ppb_measure_settings settings(void)
{
    ppb_measure_settings m;
    memset(&m, 0, sizeof m);
    m.warmup_ms = 0;
    m.min_samples = 10;
    m.max_samples = 200;
    m.min_time_ms = 0;
    m.budget_ms = 1e9;
    m.target_noise = 0.01;
    return m;
}

/* The warm-up's minimum launches: 1 after the checked launch (ppb_measure_case),
 * 2 for a case never launched, more while the warm-up time lasts. */
static void test_warmup_counts_the_checked_launch(void **state)
{
    (void)state;
    the_fake = (fake){.per_launch_ms = 50.0};
    ppb_measure_settings m = settings();
    m.min_samples = 3;
    ppb_result r;
    ppb_result_init(&r);
    ppb_err err;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(the_fake.calls, 1 + r.n_samples);
    ppb_result_free(&r);
    int launches = 0;
    the_fake.calls = 0;
    assert_int_equal(ppb_measure_warmup(&fake_ops, NULL, &m, 0, 2, NULL, &launches, &err), PPB_OK);
    assert_int_equal(the_fake.calls, 2);
    the_fake = (fake){.per_launch_ms = 50.0, .sleep_us = 2000};
    m.warmup_ms = 15;
    assert_int_equal(ppb_measure_warmup(&fake_ops, NULL, &m, 0, 1, NULL, &launches, &err), PPB_OK);
    assert_true(the_fake.calls >= 2);   /* the time, not the minimum, ended it */
}

/* With the checked launch's time known, the warm-up counts it: a launch as
 * long as the warm-up needs no other; a shorter one is topped up by time; the
 * batching follows the checked launch when no warm-up launch ran. */
static void test_warmup_counts_the_checked_launch_time(void **state)
{
    (void)state;
    ppb_measure_settings m = settings();
    m.warmup_ms = 15;
    m.min_samples = 3;
    ppb_err err;
    int launches = 0;
    the_fake = (fake){.per_launch_ms = 50.0, .sleep_us = 2000};
    assert_int_equal(ppb_measure_warmup(&fake_ops, NULL, &m, 20.0, 0, NULL, &launches, &err), PPB_OK);
    assert_int_equal(the_fake.calls, 0);
    assert_int_equal(launches, 1);
    /* topped up by time: the wall time, not a count of calls (a loaded machine sleeps longer) */
    double t0 = ppb_monotonic_ms();
    assert_int_equal(ppb_measure_warmup(&fake_ops, NULL, &m, 5.0, 0, NULL, &launches, &err), PPB_OK);
    double topped = ppb_monotonic_ms() - t0;
    assert_true(the_fake.calls >= 1 && topped >= 10.0);
    the_fake.calls = 0;
    t0 = ppb_monotonic_ms();
    assert_int_equal(ppb_measure_warmup(&fake_ops, NULL, &m, 0.002, 0, NULL, &launches, &err), PPB_OK);
    assert_true(ppb_monotonic_ms() - t0 >= 14.99); /* 2 us done: the time is the warm-up's */
    the_fake = (fake){.per_launch_ms = 0.002};
    m.warmup_ms = 0;
    assert_int_equal(ppb_measure_warmup(&fake_ops, NULL, &m, 0.002, 0, NULL, &launches, &err), PPB_OK);
    assert_int_equal(the_fake.calls, 0);
    assert_int_equal(launches, 10);    /* 20 us / the checked launch's 2 us */

    /* through ppb_measure_case: no warm-up launch after a long checked launch */
    the_fake = (fake){.per_launch_ms = 50.0};
    m.warmup_ms = 15;
    ppb_result r;
    ppb_result_init(&r);
    r.checked_launch_ms = 50.0;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(the_fake.calls, r.n_samples);
    ppb_result_free(&r);
}

/* The case before, timed until moments ago, counts toward the warm-up; after
 * a pause (or with nothing timed before) the whole warm-up is owed. */
static void test_warmup_owed(void **state)
{
    (void)state;
    assert_true(ppb_measure_warmup_owed(25, 100, 10) == 0);
    assert_true(ppb_measure_warmup_owed(25, 10, 10) == 15);
    assert_true(ppb_measure_warmup_owed(25, 100, PPB_WARM_GAP_MS) == 25);
    assert_true(ppb_measure_warmup_owed(25, 100, PPB_WARM_GAP_MS - 1) == 0);
    assert_true(ppb_measure_warmup_owed(25, 0, 10) == 25);
    assert_true(ppb_measure_warmup_owed(25, 100, -5) == 25); /* a clock that went back: no credit */
}

/* Samples taken together are the samples taken one by one: the same count,
 * the same values, the same status; only fewer waits. */
static void test_batched_samples_change_no_decision(void **state)
{
    (void)state;
    const fake shapes[] = {{.per_launch_ms = 1.0, .jitter = 0.001}, {.per_launch_ms = 0.3, .jitter = 0.05},
                           {.per_launch_ms = 7.0, .jitter = 0.0}, {.per_launch_ms = 1.0, .step_after = 12}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        ppb_measure_settings m = settings();
        m.min_time_ms = 100;
        m.max_samples = 500;
        ppb_err err;
        ppb_result one, many;
        ppb_result_init(&one);
        ppb_result_init(&many);
        setenv("PPBENCH_SAMPLES_PER_SYNC", "1", 1); /* the reference: one sample, one decision */
        the_fake = shapes[k];
        batches = largest_batch = 0;
        assert_int_equal(ppb_measure_case(&batching_ops, NULL, &m, NULL, &one, &err), PPB_OK);
        unsetenv("PPBENCH_SAMPLES_PER_SYNC");
        assert_int_equal(largest_batch, 1);
        assert_int_equal(batches, one.n_samples);
        the_fake = shapes[k];
        batches = largest_batch = 0;
        assert_int_equal(ppb_measure_case(&batching_ops, NULL, &m, NULL, &many, &err), PPB_OK);
        assert_int_equal(many.n_samples, one.n_samples);
        assert_memory_equal(many.samples_ms, one.samples_ms, sizeof *one.samples_ms * (size_t)one.n_samples);
        assert_int_equal(many.status, one.status);
        assert_true(largest_batch <= PPB_SAMPLES_PER_SYNC_MAX);
        if (shapes[k].jitter <= 0.001 && !shapes[k].step_after) /* quiet: the wait is per batch */
            assert_true(batches <= one.n_samples / 3); /* 100 samples in 10 waits, 15 in 5 */
        ppb_result_free(&one);
        ppb_result_free(&many);
    }
}

static void test_quiet_case_stops_at_min_samples(void **state)
{
    (void)state;
    the_fake = (fake){.per_launch_ms = 1.0, .jitter = 0};
    ppb_measure_settings m = settings();
    ppb_result r;
    ppb_result_init(&r);
    ppb_err err;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.n_samples, 10);
    assert_int_equal(r.status, PPB_STATUS_OK);
    assert_int_equal(r.batch_launches, 1);
    ppb_result_summarise(&r, 2e9, 1e9);
    assert_true(fabs(r.median_ms - 1.0) < 1e-12);
    assert_true(fabs(r.tflops - 2e9 / 1e-3 * 1e-12) < 1e-9);
    ppb_result_free(&r);
}

/* The phases a result records: warm-up (at least its 1 launch) and the
 * sampling loop (at least its 10 samples), each of a fake that takes >= 2 ms. */
static void test_phases_are_recorded(void **state)
{
    (void)state;
    the_fake = (fake){.per_launch_ms = 1.0, .jitter = 0, .sleep_us = 2000};
    ppb_measure_settings m = settings();
    ppb_result r;
    ppb_result_init(&r);
    ppb_err err;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.n_samples, 10);
    assert_true(r.phases.warmup_ms >= 2.0);
    assert_true(r.phases.sampling_ms >= 10 * 2.0);
    ppb_result_free(&r);
}

static void test_short_launches_are_batched(void **state)
{
    (void)state;
    the_fake = (fake){.per_launch_ms = 0.002, .jitter = 0};
    ppb_measure_settings m = settings();
    ppb_result r;
    ppb_result_init(&r);
    ppb_err err;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    /* 20 us / 2 us = 10 launches per sample */
    assert_int_equal(r.batch_launches, 10);
    assert_int_equal(the_fake.last_launches, 10);
    ppb_result_free(&r);
}

static void test_noisy_case_runs_to_max_and_is_marked(void **state)
{
    (void)state;
    the_fake = (fake){.per_launch_ms = 1.0, .jitter = 0.5};
    ppb_measure_settings m = settings();
    m.max_samples = 37;
    ppb_result r;
    ppb_result_init(&r);
    ppb_err err;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.n_samples, 37);
    assert_int_equal(r.status, PPB_STATUS_NOISY);
    ppb_result_free(&r);
}

/* measure.windows 2: a case that misses its target in its first window gets
 * a second, and keeps the one with the lower median, with that window's
 * status, saying so; a case that meets it takes one window. The first window
 * here: 1 warm-up call and 37 samples (max_samples), all at jitter 0.5. */
static void test_second_window_keeps_the_faster(void **state)
{
    (void)state;
    ppb_measure_settings m = settings();
    m.max_samples = 37;
    m.windows = 2;
    ppb_err err;
    ppb_result r;
    /* the first window slowed and spread by load that then passes: the quiet second is kept, ok */
    the_fake = (fake){.per_launch_ms = 1.3, .jitter = 0.5, .change_after = 38, .jitter_after = 0, .level_after = 1 / 1.3};
    ppb_result_init(&r);
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.status, PPB_STATUS_OK);
    assert_int_equal(the_fake.calls, 38 + 10);
    assert_int_equal(r.n_samples, 10);
    for (int i = 0; i < r.n_samples; i++)
        assert_true(fabs(r.samples_ms[i] - 1.0) < 1e-12);
    assert_non_null(strstr(r.reason, "sampled twice: first window median "));
    assert_non_null(strstr(r.reason, "the second kept"));
    ppb_result_free(&r);

    /* a second window slowed throughout, as tight as a quiet one: the first stays, and the case is noisy */
    the_fake = (fake){.per_launch_ms = 1.0, .jitter = 0.5, .change_after = 38, .jitter_after = 0, .level_after = 1.5};
    ppb_result_init(&r);
    snprintf(r.reason, sizeof r.reason, "a backend's note");
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.status, PPB_STATUS_NOISY);
    assert_int_equal(the_fake.calls, 38 + 10);
    assert_int_equal(r.n_samples, 37);
    for (int i = 0; i < r.n_samples; i++)
        assert_true(r.samples_ms[i] < 1.5);
    assert_non_null(strstr(r.reason, "a backend's note; sampled twice"));
    assert_non_null(strstr(r.reason, "the first kept"));
    ppb_result_free(&r);

    /* quiet from the start: one window, no note */
    the_fake = (fake){.per_launch_ms = 1.0};
    ppb_result_init(&r);
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.status, PPB_STATUS_OK);
    assert_int_equal(the_fake.calls, 1 + 10);
    assert_string_equal(r.reason, "");
    ppb_result_free(&r);

    /* one window (the default): noisy, as before */
    m.windows = 1;
    the_fake = (fake){.per_launch_ms = 1.3, .jitter = 0.5, .change_after = 38, .jitter_after = 0, .level_after = 1 / 1.3};
    ppb_result_init(&r);
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
    assert_int_equal(r.status, PPB_STATUS_NOISY);
    assert_int_equal(the_fake.calls, 38);
    ppb_result_free(&r);
}

/* Out of samples before min_time_ms: a quiet case is ok, only a spread above
 * the target is noisy (any case that ran out of samples was marked noisy, so
 * 6%-spread cases read "noisy" beside 49%-spread ones that were "ok"). */
static void test_out_of_samples_is_noisy_only_when_spread(void **state)
{
    (void)state;
    ppb_measure_settings m = settings();
    m.max_samples = 12;
    m.min_time_ms = 1e6; /* never reached: every case runs out of samples */
    m.target_noise = 0.05;
    const struct {
        double jitter;
        int status;
    } want[] = {{0.0, PPB_STATUS_OK}, {0.02, PPB_STATUS_OK}, {0.6, PPB_STATUS_NOISY}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        the_fake = (fake){.per_launch_ms = 1.0, .jitter = want[i].jitter};
        ppb_result r;
        ppb_result_init(&r);
        ppb_err err;
        assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, NULL, &r, &err), PPB_OK);
        assert_int_equal(r.n_samples, 12);
        assert_int_equal(r.status, want[i].status);
        ppb_result_free(&r);
    }
}

static void test_stop_flag_interrupts(void **state)
{
    (void)state;
    the_fake = (fake){.per_launch_ms = 1.0, .jitter = 0.5};
    ppb_measure_settings m = settings();
    volatile sig_atomic_t stop = 1;
    ppb_result r;
    ppb_result_init(&r);
    ppb_err err;
    assert_int_equal(ppb_measure_case(&fake_ops, NULL, &m, &stop, &r, &err), PPB_EINTR);
    ppb_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warmup_counts_the_checked_launch),
        cmocka_unit_test(test_warmup_counts_the_checked_launch_time),
        cmocka_unit_test(test_warmup_owed),
        cmocka_unit_test(test_batched_samples_change_no_decision),
        cmocka_unit_test(test_quiet_case_stops_at_min_samples),
        cmocka_unit_test(test_phases_are_recorded),
        cmocka_unit_test(test_short_launches_are_batched),
        cmocka_unit_test(test_noisy_case_runs_to_max_and_is_marked),
        cmocka_unit_test(test_out_of_samples_is_noisy_only_when_spread),
        cmocka_unit_test(test_second_window_keeps_the_faster),
        cmocka_unit_test(test_stop_flag_interrupts),
        cmocka_unit_test(test_cold_samples_flush_unless_the_case_reads_enough),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
