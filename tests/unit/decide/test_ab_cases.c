/* What a proposal's samples cost against a plain fixed-sample design
 * (harness/decide/ab_cases.h ppb_ab_sampling_cost): the kernel time is each
 * sample's time per launch times its launches, both sides; the fixed design
 * gives every pair the samples its hardest pair needs; pairs not sampled as
 * pairs count in neither. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ab_cases.h"

#define N_MAX 64

typedef struct pair_fixture {
    ppb_result res[2];
    double samples[2][N_MAX];
} pair_fixture;

/* A pair of n samples a side at `ms` per launch, `launches` per sample. */
static ppb_ab_pair_view pair(pair_fixture *f, int n, double ms_base, double ms_cand, int launches, double look_share)
{
    for (int s = 0; s < 2; s++) {
        ppb_result_init(&f->res[s]);
        f->res[s].status = PPB_STATUS_OK;
        for (int i = 0; i < n; i++)
            f->samples[s][i] = s ? ms_cand : ms_base;
        f->res[s].samples_ms = f->samples[s];
        f->res[s].n_samples = n;
        f->res[s].batch_launches = launches;
    }
    return (ppb_ab_pair_view){.key = "k", .weight = 1, .present = {1, 1}, .res = {&f->res[0], &f->res[1]},
                              .sessions = 2, .look_share = look_share, .stop_alpha = 0.01,
                              .looks_taken = 2, .looks_planned = 5};
}

static void test_kernel_time_and_the_fixed_design(void **state)
{
    (void)state;
    pair_fixture f[3];
    ppb_ab_pair_view v[3];
    v[0] = pair(&f[0], 60, 0.5, 0.5, 1, 0.25);  /* the hardest: ran on, at a quarter of it */
    v[1] = pair(&f[1], 20, 1.0, 2.0, 3, 1.0);   /* stopped early, at the whole alpha */
    v[2] = pair(&f[2], 10, 9.0, 9.0, 1, 1.0);
    v[2].sessions = 0;                           /* not sampled as a pair: counts nowhere */
    ppb_ab_cost c;
    ppb_ab_sampling_cost(v, 3, &c);
    assert_int_equal(c.pairs, 2);
    /* 20 x (1 + 2) x 3 launches + 60 x (0.5 + 0.5) */
    assert_true(fabs(c.kernel_ms - (180.0 + 60.0)) < 1e-9);
    int hardest = ppb_seq_fixed_samples(60, 0.0025, 0.01);
    assert_true(hardest > ppb_seq_fixed_samples(20, 0.01, 0.01));
    assert_int_equal(c.fixed_samples, hardest);
    /* every pair at the hardest pair's count, at its own time per sample */
    assert_true(fabs(c.fixed_kernel_ms - hardest * ((1.0 + 2.0) * 3 + (0.5 + 0.5))) < 1e-9);
}

static void test_nothing_sampled_costs_nothing(void **state)
{
    (void)state;
    pair_fixture f;
    ppb_ab_pair_view v = pair(&f, 20, 1.0, 1.0, 1, 1.0);
    f.res[1].n_samples = 0; /* the candidate was refused */
    ppb_ab_cost c;
    ppb_ab_sampling_cost(&v, 1, &c);
    assert_int_equal(c.pairs, 0);
    assert_int_equal(c.fixed_samples, 0);
    assert_true(c.kernel_ms == 0 && c.fixed_kernel_ms == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_time_and_the_fixed_design),
        cmocka_unit_test(test_nothing_sampled_costs_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
