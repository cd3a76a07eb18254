/* The sequential design of a proposal's pair (harness/decide/sequential.h):
 * the look schedule and its alpha, the minimum rounds, the budget look, the
 * random sample order, the between-session widening, and the error rates the
 * design claims, simulated with correlated, bimodal and session noise. Each
 * test names the rule a broken implementation would violate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sequential.h"
#include "stats_sim.h"

/* ---- a simulated pair ---------------------------------------------------- */

typedef struct noise_model {
    double ratio;         /* true candidate / baseline */
    double sigma;         /* i.i.d. log-sd of one sample */
    double tau;           /* sd of each (side, session)'s fixed log offset */
    double drift_sd;      /* AR(1) load drift shared by all units (log scale) */
    double rho;           /* its autocorrelation per sample */
    double burst_p;       /* bimodal: a sample hit by a burst ... */
    double burst;         /* ... is this much slower (log) */
    double cost_ms;       /* budget cost of one sample */
} noise_model;

typedef struct sim_pair {
    noise_model m;
    sim_rng rng;
    double offset[2][PPB_SEQ_MAX_SESSIONS], drift;
    int calls;
    int trace_side[4096], trace_session[4096];
} sim_pair;

static int sim_sample(void *ctx, int side, int session, double *ms, double *cost_ms, ppb_err *err)
{
    (void)err;
    sim_pair *p = ctx;
    const noise_model *m = &p->m;
    p->drift = m->rho * p->drift + sqrt(1 - m->rho * m->rho) * m->drift_sd * sim_normal(&p->rng);
    double l = p->offset[side][session] + p->drift + m->sigma * sim_normal(&p->rng);
    if (m->burst_p > 0 && sim_uniform(&p->rng) < m->burst_p)
        l += m->burst;
    if (side == 1)
        l += log(m->ratio);
    if (p->calls < 4096) {
        p->trace_side[p->calls] = side;
        p->trace_session[p->calls] = session;
    }
    p->calls++;
    *ms = exp(l);
    *cost_ms = m->cost_ms;
    return 0;
}

static void sim_init(sim_pair *p, const noise_model *m, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->m = *m;
    p->rng.state = seed * 0x9E3779B97F4A7C15ull + 17;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < PPB_SEQ_MAX_SESSIONS; k++)
            p->offset[s][k] = m->tau * sim_normal(&p->rng);
}

static ppb_seq_design design(int sessions, double alpha, double threshold)
{
    return (ppb_seq_design){.samples_per_round = 5, .min_rounds = 4, .max_rounds = 40, .sessions = sessions,
                            .budget_ms = 1e12, .alpha = alpha, .threshold = threshold, .seed = 7};
}

/* Share of simulated pairs whose stopped interval says FASTER or SLOWER. */
static double flag_rate(const ppb_seq_design *d0, const noise_model *m, int pairs, double *same_rate)
{
    int flagged = 0, same = 0;
    for (int i = 0; i < pairs; i++) {
        sim_pair p;
        sim_init(&p, m, (uint64_t)i + 1);
        ppb_seq_design d = *d0;
        d.seed = (uint64_t)i * 31 + 5;
        ppb_seq_result r;
        ppb_err err;
        assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
        flagged += r.cls == PPB_AB_FASTER || r.cls == PPB_AB_SLOWER;
        same += r.cls == PPB_AB_SAME;
        ppb_seq_result_free(&r);
    }
    if (same_rate)
        *same_rate = (double)same / pairs;
    return (double)flagged / pairs;
}

/* ---- the schedule ---------------------------------------------------------- */

static void test_looks_double_from_min_rounds_and_end_at_max(void **state)
{
    (void)state;
    int r[PPB_SEQ_MAX_LOOKS];
    assert_int_equal(ppb_seq_looks(4, 40, r), 5);
    int want[] = {4, 8, 16, 32, 40};
    for (int i = 0; i < 5; i++)
        assert_int_equal(r[i], want[i]);
    assert_int_equal(ppb_seq_looks(3, 3, r), 1);
    assert_int_equal(r[0], 3);
    assert_int_equal(ppb_seq_looks(5, 6, r), 2);
    assert_int_equal(r[1], 6);
}

/* The spending function: alpha t^2, clamped to 0..alpha. */
static void test_alpha_spent_grows_with_the_square_of_information(void **state)
{
    (void)state;
    assert_true(ppb_seq_alpha_spent(0.05, 0) == 0);
    assert_true(fabs(ppb_seq_alpha_spent(0.05, 0.5) - 0.0125) < 1e-15);
    assert_true(fabs(ppb_seq_alpha_spent(0.05, 0.1) - 0.0005) < 1e-15);
    assert_true(ppb_seq_alpha_spent(0.05, 1) == 0.05);
    assert_true(ppb_seq_alpha_spent(0.05, 7) == 0.05);
    assert_true(ppb_seq_alpha_spent(0.05, -1) == 0);
}

/* Settled: no boundary (1/(1+gain), 1/(1+t), 1+t, 1+tolerance) strictly
 * inside the interval; the gain and tolerance never below the threshold. */
static void test_settled_means_no_boundary_inside(void **state)
{
    (void)state;
    ppb_seq_design d = {.threshold = 0.01, .min_gain = 0.02, .tolerance = 0.05};
    assert_true(ppb_seq_settled(&d, 0.995, 1.005));          /* same */
    assert_true(ppb_seq_settled(&d, 0.95, 0.975));           /* surely above a 2% gain */
    assert_false(ppb_seq_settled(&d, 0.95, 0.985));          /* faster than 1%, not surely 2%: keep sampling */
    assert_true(ppb_seq_settled(&d, 0.981, 0.989));          /* faster, surely below a 2% gain */
    assert_true(ppb_seq_settled(&d, 1.02, 1.04));            /* slower, surely within the tolerance */
    assert_false(ppb_seq_settled(&d, 1.03, 1.06));           /* maybe beyond the tolerance */
    assert_true(ppb_seq_settled(&d, 1.06, 1.2));             /* surely beyond it */
    assert_false(ppb_seq_settled(&d, 0.995, 1.02));          /* straddles the threshold */
    assert_false(ppb_seq_settled(&d, 0, 1.005));             /* unbounded */
    assert_false(ppb_seq_settled(&d, 0.99, INFINITY));
    d.min_gain = 0, d.tolerance = 0; /* below the threshold: the threshold's own boundaries */
    assert_true(ppb_seq_settled(&d, 0.95, 0.985));
    assert_true(ppb_seq_settled(&d, 1.03, 1.06));
    d.threshold = 0; /* threshold 0: settled once the interval leaves 1 */
    assert_false(ppb_seq_settled(&d, 0.99, 1.01));
    assert_true(ppb_seq_settled(&d, 1.001, 1.01));
}

/* What each look spends: at a scheduled look alpha t^2 minus what was spent
 * (t the larger of the rounds' and the budget's share), at the look the
 * budget ends the rest, so the looks add up to alpha. */
static int constant_sample(void *ctx, int side, int session, double *ms, double *cost_ms, ppb_err *err)
{
    (void)session, (void)err;
    int *calls = ctx;
    (void)side;
    /* a slot's two samples alike, so the sides never differ: never settled against threshold 0 */
    *ms = 1.0 + 0.01 * ((*calls)++ / 2 % 5);
    *cost_ms = 1;
    return 0;
}

static void test_looks_spend_by_information_and_the_last_spends_the_rest(void **state)
{
    (void)state;
    ppb_seq_design d = {.samples_per_round = 1, .min_rounds = 2, .max_rounds = 32, .sessions = 1,
                        .budget_ms = 1e9, .alpha = 0.04, .threshold = 0, .seed = 3};
    int calls = 0;
    ppb_seq_result r;
    ppb_err err;
    /* no budget limit: looks at 2, 4, 8, 16, 32; the last spends 0.04 (1 - (16/32)^2) */
    assert_int_equal(ppb_seq_run(&d, constant_sample, &calls, &r, &err), PPB_OK);
    assert_int_equal(r.looks_taken, 5);
    assert_int_equal(r.stop, PPB_SEQ_STOP_MAX_ROUNDS);
    assert_true(fabs(r.look_alpha - 0.04 * 0.75) < 1e-15);
    assert_true(fabs(r.alpha_spent - 0.04) < 1e-15);
    ppb_seq_result_free(&r);
    /* the budget (2 units x 1 ms a round) ends at round 10: looks 2, 4, 8 by rounds
     * (the budget's share is 0.4 at round 4 and 0.8 at round 8: it decides), then the rest */
    d.budget_ms = 20;
    calls = 0;
    assert_int_equal(ppb_seq_run(&d, constant_sample, &calls, &r, &err), PPB_OK);
    assert_int_equal(r.stop, PPB_SEQ_STOP_BUDGET);
    assert_int_equal(r.rounds, 10);
    assert_int_equal(r.looks_taken, 4);
    assert_true(fabs(r.look_alpha - 0.04 * (1 - 0.8 * 0.8)) < 1e-15);
    assert_true(fabs(r.alpha_spent - 0.04) < 1e-15);
    ppb_seq_result_free(&r);
}

/* A large effect resolves at the first look, which is min_rounds: never before. */
static void test_no_look_before_min_rounds(void **state)
{
    (void)state;
    noise_model m = {.ratio = 2.0, .sigma = 0.001};
    sim_pair p;
    sim_init(&p, &m, 1);
    ppb_seq_design d = design(2, 0.01, 0.01);
    ppb_seq_result r;
    ppb_err err;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
    assert_int_equal(r.cls, PPB_AB_SLOWER);
    assert_int_equal(r.stop, PPB_SEQ_STOP_RESOLVED);
    assert_int_equal(r.rounds, 4);
    assert_int_equal(r.looks_taken, 1);
    assert_int_equal(r.n[0], 4 * 5 * 2);   /* rounds x slots x sessions */
    assert_int_equal(r.n[1], 4 * 5 * 2);
    ppb_seq_result_free(&r);
}

/* Sampling stops only at scheduled rounds (or the budget look), its interval at
 * the level the stopping look spent: alpha ((r / max)^2 - (r_prev / max)^2). */
static void test_stops_only_at_scheduled_looks(void **state)
{
    (void)state;
    int schedule[PPB_SEQ_MAX_LOOKS];
    int k = ppb_seq_looks(4, 40, schedule);
    for (int i = 0; i < 60; i++) {
        noise_model m = {.ratio = 1.0 + 0.004 * (i % 6), .sigma = 0.02};
        sim_pair p;
        sim_init(&p, &m, (uint64_t)i + 100);
        ppb_seq_design d = design(1, 0.05, 0.01);
        ppb_seq_result r;
        ppb_err err;
        assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
        int on_schedule = 0;
        for (int j = 0; j < k; j++)
            on_schedule |= r.rounds == schedule[j];
        assert_true(on_schedule);
        assert_int_equal(r.looks_planned, k);
        assert_true(r.looks_taken >= 1 && r.looks_taken <= k);
        double t = (double)r.rounds / d.max_rounds,
               t_prev = r.looks_taken > 1 ? (double)schedule[r.looks_taken - 2] / d.max_rounds : 0;
        assert_true(fabs(r.look_alpha - 0.05 * (t * t - t_prev * t_prev)) < 1e-15);
        assert_true(fabs(r.interval.level - (1 - r.look_alpha)) < 1e-12);
        assert_true(r.alpha_spent <= 0.05 + 1e-15);
        ppb_seq_result_free(&r);
    }
}

/* The budget: looked at once when it runs out (after min_rounds), then sampling stops. */
static void test_budget_look_replaces_the_next_one(void **state)
{
    (void)state;
    noise_model m = {.ratio = 1.0, .sigma = 0.05, .cost_ms = 1};
    sim_pair p;
    sim_init(&p, &m, 3);
    ppb_seq_design d = design(1, 0.05, 0.001);
    d.budget_ms = 5 * 2 * 5.5;   /* runs out during round 6 (10 samples of 1 ms a round) */
    ppb_seq_result r;
    ppb_err err;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
    assert_int_equal(r.stop, PPB_SEQ_STOP_BUDGET);
    assert_int_equal(r.rounds, 6);
    assert_int_equal(r.looks_taken, 2);   /* round 4, then the budget */
    ppb_seq_result_free(&r);
    /* a budget spent before min_rounds still samples min_rounds */
    sim_init(&p, &m, 3);
    d.budget_ms = 1;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
    assert_int_equal(r.rounds, 4);
    assert_int_equal(r.stop == PPB_SEQ_STOP_BUDGET || r.stop == PPB_SEQ_STOP_RESOLVED, 1);
    ppb_seq_result_free(&r);
}

/* Every slot samples each (side, session) once, in a seeded random order. */
static void test_order_is_a_fresh_random_permutation_per_slot(void **state)
{
    (void)state;
    noise_model m = {.ratio = 1.0, .sigma = 0.01};
    ppb_seq_design d = design(2, 0.05, 0.0);
    d.min_rounds = d.max_rounds = 40;   /* 200 slots of 4 units */
    sim_pair a, b;
    sim_init(&a, &m, 9);
    sim_init(&b, &m, 9);
    ppb_seq_result r;
    ppb_err err;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &a, &r, &err), PPB_OK);
    ppb_seq_result_free(&r);
    assert_int_equal(a.calls, 800);
    int base_first = 0, same_lead = 0, prev_lead = -1;
    for (int slot = 0; slot < 200; slot++) {
        int seen = 0;
        for (int u = 0; u < 4; u++)
            seen |= 1 << (a.trace_side[4 * slot + u] + 2 * a.trace_session[4 * slot + u]);
        assert_int_equal(seen, 15);   /* a permutation of the four units */
        int lead = a.trace_side[4 * slot];
        base_first += lead == 0;
        same_lead += lead == prev_lead;
        prev_lead = lead;
    }
    /* neither side owns the first place, and the lead is not a fixed alternation */
    assert_true(base_first > 70 && base_first < 130);
    assert_true(same_lead > 60 && same_lead < 140);
    /* reproducible from the seed, different for another */
    d.seed = 7;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &b, &r, &err), PPB_OK);
    ppb_seq_result_free(&r);
    assert_memory_equal(a.trace_side, b.trace_side, sizeof a.trace_side);
    sim_init(&b, &m, 9);
    d.seed = 8;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &b, &r, &err), PPB_OK);
    ppb_seq_result_free(&r);
    assert_memory_not_equal(a.trace_side, b.trace_side, sizeof a.trace_side);
}

/* ---- intervals ------------------------------------------------------------ */

/* Samples in ppb_seq_run's layout (slot after slot, one per (side, session)
 * unit): log-time = the slot's load + the unit's session offset + noise,
 * where noise is normal (sigma) or, with `modes`, a second mode `modes` above
 * the first taken by half the samples (a loaded machine). */
#define SLOTS 40
typedef struct slot_samples {
    double x[2][SLOTS * PPB_SEQ_MAX_SESSIONS];
    unsigned char tag[2][SLOTS * PPB_SEQ_MAX_SESSIONS];
    int n;
} slot_samples;

static void fill_slots(slot_samples *o, int sessions, double load_sd, const double offset[2][PPB_SEQ_MAX_SESSIONS],
                       double sigma, double modes, sim_rng *rng)
{
    o->n = SLOTS * sessions;
    for (int r = 0; r < SLOTS; r++) {
        double load = load_sd * sim_normal(rng);
        for (int side = 0; side < 2; side++)
            for (int k = 0; k < sessions; k++) {
                int i = r * sessions + (k + r) % sessions;   /* the sessions' order varies by slot */
                double l = load + offset[side][k] + sigma * sim_normal(rng);
                if (modes > 0 && sim_uniform(rng) < 0.5)
                    l += modes;
                o->x[side][i] = exp(l);
                o->tag[side][i] = (unsigned char)k;
            }
    }
}

static double between_sd_of(const slot_samples *o, int sessions)
{
    return ppb_seq_between_sd(o->x[0], o->tag[0], o->n, o->x[1], o->tag[1], o->n, sessions);
}

/* Sessions 0 and 1 of each side sit exactly 2% apart (log), without noise:
 * tau^2 = 0.02^2 / 2 per side and the ratio's sd is sqrt(2 tau^2 / 2). */
static void test_between_sd_and_widening(void **state)
{
    (void)state;
    sim_rng rng = {.state = 3};
    const double offset[2][PPB_SEQ_MAX_SESSIONS] = {{0, 0.02}, {0.1, 0.12}};
    slot_samples o;
    fill_slots(&o, 2, 0, offset, 0, 0, &rng);
    assert_true(fabs(between_sd_of(&o, 2) - sqrt(2 * (0.0004 / 2) / 2)) < 1e-9);
    assert_true(ppb_seq_between_sd(o.x[0], o.tag[0], o.n, o.x[1], o.tag[1], o.n, 1) == 0);
    /* a session without samples on a side: unknown */
    memset(o.tag[1], 0, sizeof o.tag[1]);
    assert_true(isnan(between_sd_of(&o, 2)));

    ppb_ab_interval iv = {.shift = 0.01, .shift_lo = 0.0, .shift_hi = 0.03, .level = 0.99, .level_achieved = 0.995,
                          .bounded = 1, .exact = 1};
    ppb_seq_widen(&iv, 0.01, 0.004, 3);
    double w = 4.604095 * 0.004;   /* Student's t, 4 degrees of freedom, 99.5% (R: qt(0.995, 4)) */
    assert_true(fabs(iv.shift_lo - (0.01 - sqrt(0.01 * 0.01 + w * w))) < 1e-8);
    assert_true(fabs(iv.shift_hi - (0.01 + sqrt(0.02 * 0.02 + w * w))) < 1e-8);
    assert_true(fabs(iv.ratio_lo - exp(iv.shift_lo)) < 1e-15 && fabs(iv.ratio_hi - exp(iv.shift_hi)) < 1e-15);
    assert_true(iv.level_achieved == iv.level && iv.exact == 0);
    /* an unknown spread makes the interval claim nothing */
    ppb_seq_widen(&iv, 0.01, NAN, 3);
    assert_false(iv.bounded);
    assert_int_equal(ppb_ab_classify(iv.ratio_lo, iv.ratio_hi, 0.01), PPB_AB_UNRESOLVED);
}

/* The estimate's own rules, over 300 draws of 3 sessions x 40 slots:
 *  - sampling noise and load shared in time are not counted as sessions (the
 *    shift's own part, se^2, is subtracted): without session offsets many
 *    estimates are 0 and the mean tau^2 is small;
 *  - it is unbiased for real offsets (tau 5%): the mean tau^2 is within 20%;
 *  - bimodal samples (half of them 50% slower, at random) are not sessions: a
 *    session median jumps between the modes and would report tau near 25%. */
static void test_between_sd_counts_sessions_not_sampling_noise(void **state)
{
    (void)state;
    enum { DRAWS = 300, S = 3 };
    sim_rng rng = {.state = 11};
    double zero[2][PPB_SEQ_MAX_SESSIONS] = {{0}}, offset[2][PPB_SEQ_MAX_SESSIONS];
    slot_samples o;
    int zeros = 0;
    double sum_null = 0, sum_tau = 0, sum_bimodal = 0;
    for (int d = 0; d < DRAWS; d++) {
        fill_slots(&o, S, 0.1, zero, 0.05, 0, &rng);
        double sd = between_sd_of(&o, S);
        zeros += sd == 0;
        sum_null += sd * sd * S / 2;   /* back to tau^2 */
        for (int side = 0; side < 2; side++)
            for (int k = 0; k < S; k++)
                offset[side][k] = 0.05 * sim_normal(&rng);
        fill_slots(&o, S, 0, offset, 0.02, 0, &rng);
        sd = between_sd_of(&o, S);
        sum_tau += sd * sd * S / 2;
        fill_slots(&o, S, 0, zero, 0.01, log(1.5), &rng);
        sd = between_sd_of(&o, S);
        sum_bimodal += sd * sd * S / 2;
    }
    assert_true(zeros >= DRAWS / 5);   /* about 30%; none if se^2 were not subtracted */
    assert_true(sqrt(sum_null / DRAWS) < 0.007);   /* 0.005; 0.008 without the subtraction */
    assert_true(fabs(sum_tau / DRAWS / (0.05 * 0.05) - 1) < 0.2);
    assert_true(sqrt(sum_bimodal / DRAWS) < 0.03);
}

/* ---- error rates ------------------------------------------------------------ */

/* A/A, threshold 0 (every look is a test of "no difference"): over the five looks
 * the chance of ever flagging stays under alpha, with load drift and bursts.
 * Spending alpha at every look (no correction) flags about twice as often. */
static void test_optional_stopping_keeps_alpha_under_correlated_bimodal_noise(void **state)
{
    (void)state;
    noise_model m = {.ratio = 1.0, .sigma = 0.01, .drift_sd = 0.03, .rho = 0.95, .burst_p = 0.1, .burst = 0.25};
    ppb_seq_design d = design(1, 0.05, 0.0);
    d.min_rounds = 2, d.max_rounds = 32;   /* looks 2, 4, 8, 16, 32 */
    double rate = flag_rate(&d, &m, 600, NULL);
    assert_true(rate <= 0.05);
}

/* Coverage where the sessions dominate: A/A with session offsets (tau 2%) ten
 * times the sample noise, threshold 0, so any interval that misses 1 is a false
 * flag. Over 400 pairs the share stays within alpha plus two binomial standard
 * errors. The normal quantile in place of Student's t (4 degrees of freedom)
 * or no widening at all flag several times alpha. */
static void test_session_effects_widen_instead_of_flagging(void **state)
{
    (void)state;
    noise_model m = {.ratio = 1.0, .sigma = 0.002, .tau = 0.02};
    ppb_seq_design d = design(3, 0.05, 0.0);
    d.min_rounds = 2, d.max_rounds = 8;   /* looks 2, 4, 8 */
    const int pairs = 400;
    assert_true(flag_rate(&d, &m, pairs, NULL) <= 0.05 + 2 * sqrt(0.05 * 0.95 / pairs));
    /* the same pairs with one session: nothing to widen with, and it shows */
    d.sessions = 1;
    assert_true(flag_rate(&d, &m, pairs, NULL) > 0.5);
}

/* Power: a 3% slowdown under 1% noise is found in every pair, a quiet A/A is SAME. */
static void test_known_effect_is_found_and_quiet_aa_is_same(void **state)
{
    (void)state;
    noise_model slow = {.ratio = 1.03, .sigma = 0.01, .tau = 0.001};
    ppb_seq_design d = design(3, 0.05 / 6, 0.01);
    assert_true(flag_rate(&d, &slow, 100, NULL) >= 0.99);
    noise_model quiet = {.ratio = 1.0, .sigma = 0.005};
    double same = 0;
    assert_true(flag_rate(&d, &quiet, 100, &same) == 0);
    assert_true(same >= 0.95);
}

/* ---- stopping aimed at the decision ---------------------------------------- */

/* The rule this design replaced, for comparison: looks on the same schedule
 * at alpha / K each, stop at the first look whose interval classifies against
 * the threshold, or when the budget runs out. Its stopped interval. */
static void bonferroni_classify_run(const ppb_seq_design *d, sim_pair *p, double *lo, double *hi)
{
    int schedule[PPB_SEQ_MAX_LOOKS], k = ppb_seq_looks(d->min_rounds, d->max_rounds, schedule), next = 0;
    double *x[2] = {malloc(sizeof(double) * 20000), malloc(sizeof(double) * 20000)}, spent = 0;
    int n = 0;
    ppb_err err;
    *lo = 0, *hi = INFINITY;
    for (int round = 1; round <= d->max_rounds && n < 20000 - d->samples_per_round; round++) {
        for (int s = 0; s < d->samples_per_round; s++, n++)
            for (int side = 0; side < 2; side++) {
                double cost;
                sim_sample(p, side, 0, &x[side][n], &cost, &err);
                spent += cost;
            }
        int broke = round >= d->min_rounds && spent >= d->budget_ms;
        if (!(next < k && round == schedule[next]) && !broke)
            continue;
        next++;
        ppb_ab_interval iv;
        assert_int_equal(ppb_ab_hodges_lehmann(x[0], n, x[1], n, d->alpha / k, &iv, &err), PPB_OK);
        *lo = iv.ratio_lo, *hi = iv.ratio_hi;
        if (ppb_ab_classify(*lo, *hi, d->threshold) != PPB_AB_UNRESOLVED || broke)
            break;
    }
    free(x[0]);
    free(x[1]);
}

/* A budget-bound design as proposals run it: one session, 5 slots a round,
 * looks at 4, 8, 16 and the budget's at round 20; the verdict's boundaries
 * 1% (threshold), 2% (gain), 5% (tolerance); a case's alpha of 6 (5 pairs and
 * the mean); drifting, bimodal noise. */
static const noise_model rough = {.ratio = 1.0, .sigma = 0.03, .drift_sd = 0.02, .rho = 0.9, .burst_p = 0.1,
                                  .burst = 0.2, .cost_ms = 1};

static ppb_seq_design budget_design(void)
{
    return (ppb_seq_design){.samples_per_round = 5, .min_rounds = 4, .max_rounds = 160, .sessions = 1,
                            .budget_ms = 200, .alpha = 0.05 / 6, .threshold = 0.01, .min_gain = 0.02,
                            .tolerance = 0.05, .seed = 1};
}

/* Power: a true 4% speedup. Stopping at the first look that classifies
 * against 1% leaves many intervals straddling the 2% gain the verdict needs;
 * sampling until settled, with most of alpha at the budget's look, clears it
 * far more often. */
static void test_stopping_at_the_decision_raises_power(void **state)
{
    (void)state;
    noise_model m = rough;
    m.ratio = 1 / 1.04;
    const int pairs = 300;
    int cleared_new = 0, cleared_old = 0;
    for (int i = 0; i < pairs; i++) {
        ppb_seq_design d = budget_design();
        d.seed = (uint64_t)i * 31 + 5;
        sim_pair p;
        sim_init(&p, &m, (uint64_t)i + 1);
        ppb_seq_result r;
        ppb_err err;
        assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
        cleared_new += r.interval.ratio_hi <= 1 / 1.02;
        ppb_seq_result_free(&r);
        double lo, hi;
        sim_init(&p, &m, (uint64_t)i + 1);
        bonferroni_classify_run(&d, &p, &lo, &hi);
        cleared_old += hi <= 1 / 1.02;
    }
    print_message("4%% speedup cleared the 2%% gain: %d of %d (Bonferroni, stop at classification: %d)\n", cleared_new,
                  pairs, cleared_old);
    assert_true(cleared_new >= cleared_old + pairs / 10);
}

/* Error at a decision boundary: a true effect of exactly the 2% gain, or
 * exactly the 5% tolerance, is claimed beyond it (the interval wholly past
 * it) in at most alpha of the pairs, under drift and bursts, whatever look
 * stopped them. */
static void test_no_boundary_is_crossed_more_often_than_alpha(void **state)
{
    (void)state;
    const double at[2] = {1 / 1.02, 1.05};
    const int pairs = 1500;
    for (int b = 0; b < 2; b++) {
        noise_model m = rough;
        m.ratio = at[b];
        int crossed = 0;
        for (int i = 0; i < pairs; i++) {
            ppb_seq_design d = budget_design();
            d.alpha = 0.05;   /* the least strict a case can be, so crossings are frequent enough to count */
            d.seed = (uint64_t)i * 17 + 3;
            sim_pair p;
            sim_init(&p, &m, (uint64_t)i + 7);
            ppb_seq_result r;
            ppb_err err;
            assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
            crossed += b == 0 ? r.interval.ratio_hi < at[b] : r.interval.ratio_lo > at[b];
            ppb_seq_result_free(&r);
        }
        print_message("true ratio %.4f: interval wholly past it in %d of %d pairs\n", at[b], crossed, pairs);
        /* one-sided: alpha / 2 of them, with two binomial standard errors of room */
        assert_true(crossed <= pairs * (0.025 + 2 * sqrt(0.025 * 0.975 / pairs)));
    }
}

/* ---- sessions where their spread dominates ----------------------------------- */

/* Sessions differ by 3% (tau), samples by 0.3%: more rounds cannot narrow the
 * interval, more sessions can. Starting at 2 with room for 4, the design adds
 * them and its intervals come out narrower than with the 2 kept, while an A/A
 * interval still misses 1 in at most alpha of the pairs (plus two binomial
 * standard errors). With no session spread nothing is added. */
static void test_sessions_grow_where_their_spread_dominates(void **state)
{
    (void)state;
    const int pairs = 300;
    noise_model m = {.ratio = 1.0, .sigma = 0.003, .tau = 0.03};
    double width[2] = {0, 0};
    int grew = 0, flagged = 0;
    for (int grow = 0; grow < 2; grow++)
        for (int i = 0; i < pairs; i++) {
            ppb_seq_design d = design(2, 0.05, 0.0);
            d.min_rounds = 2, d.max_rounds = 16, d.max_sessions = grow ? 4 : 2;
            d.seed = (uint64_t)i * 13 + 1;
            sim_pair p;
            sim_init(&p, &m, (uint64_t)i + 500);
            ppb_seq_result r;
            ppb_err err;
            assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
            width[grow] += log(r.interval.ratio_hi / r.interval.ratio_lo) / pairs;
            if (grow) {
                grew += r.sessions > 2;
                flagged += r.cls == PPB_AB_FASTER || r.cls == PPB_AB_SLOWER;
                for (int s = 0; s < 2; s++) /* every session counted took samples */
                    for (int k = 0; k < r.sessions; k++) {
                        int n = 0;
                        for (int j = 0; j < r.n[s]; j++)
                            n += r.session[s][j] == k;
                        assert_true(n > 0);
                    }
            } else {
                assert_int_equal(r.sessions, 2);
            }
            ppb_seq_result_free(&r);
        }
    print_message("sessions grew in %d of %d pairs; mean log width %.4f (kept at 2: %.4f); A/A flagged %d\n", grew,
                  pairs, width[1], width[0], flagged);
    assert_true(grew > pairs / 2);
    assert_true(width[1] < 0.8 * width[0]);
    assert_true(flagged <= pairs * (0.05 + 2 * sqrt(0.05 * 0.95 / pairs)));
    /* no spread between sessions: added only where the spread's estimate comes out
     * at twice the samples' standard error by chance, rarely */
    noise_model quiet = {.ratio = 1.0, .sigma = 0.01};
    int quiet_grew = 0;
    for (int i = 0; i < 100; i++) {
        ppb_seq_design d = design(2, 0.05, 0.0);
        d.min_rounds = 2, d.max_rounds = 16, d.max_sessions = 4;
        sim_pair p;
        sim_init(&p, &quiet, (uint64_t)i + 900);
        ppb_seq_result r;
        ppb_err err;
        assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_OK);
        quiet_grew += r.sessions > 2;
        ppb_seq_result_free(&r);
    }
    print_message("without a session spread: grew in %d of 100 pairs\n", quiet_grew);
    assert_true(quiet_grew <= 10);
}

static void test_design_is_checked(void **state)
{
    (void)state;
    noise_model m = {.ratio = 1.0, .sigma = 0.01};
    sim_pair p;
    sim_init(&p, &m, 1);
    ppb_seq_result r;
    ppb_err err;
    ppb_seq_design d = design(PPB_SEQ_MAX_SESSIONS + 1, 0.05, 0.01);
    assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_EINPUT);
    assert_non_null(strstr(err.msg, "sessions"));
    d = design(1, 0.05, 0.01);
    d.min_rounds = 5, d.max_rounds = 4;
    assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_EINPUT);
    d = design(1, 0, 0.01);
    assert_int_equal(ppb_seq_run(&d, sim_sample, &p, &r, &err), PPB_EINPUT);
    ppb_seq_result_free(&r);
}

/* The fixed design's samples: one look at the whole alpha needs fewer samples
 * than a look that spent part of it, by the squared ratio of the normal
 * quantiles; never fewer than a bounded Moses interval needs; and the interval
 * it gives is as wide as the sequential look's (the meaning, checked on
 * simulated samples, not only the formula). */
static void test_fixed_design_samples_match_the_sequential_width(void **state)
{
    (void)state;
    assert_int_equal(ppb_seq_fixed_samples(40, 0.01, 0.01), 40);
    double z = ppb_normal_quantile(1 - 0.01 / 2), zl = ppb_normal_quantile(1 - 0.0025 / 2);
    assert_int_equal(ppb_seq_fixed_samples(40, 0.0025, 0.01), (int)ceil(40 * (z / zl) * (z / zl)));
    assert_true(ppb_seq_fixed_samples(40, 0.0025, 0.01) < 40);
    /* 4 a side is the fewest with a bounded 95% Moses interval (P(U = 0) = 1/70) */
    assert_int_equal(ppb_seq_fixed_samples(1, 0.05, 0.05), 4);
    assert_int_equal(ppb_seq_fixed_samples(0, 0.01, 0.01), 0);
    assert_int_equal(ppb_seq_fixed_samples(10, 0, 0.01), 0);
    assert_int_equal(ppb_seq_fixed_samples(10, 0.01, 1), 0);

    sim_rng rng = {0x5eed};
    const int n = 80;
    const double alpha = 0.01, look = 0.0015;
    int fixed = ppb_seq_fixed_samples(n, look, alpha);
    double ratio_sum = 0;
    const int reps = 40;
    for (int r = 0; r < reps; r++) {
        double a[80], b[80];
        sim_lognormal(&rng, 1.0, 0.05, a, n);
        sim_lognormal(&rng, 1.0, 0.05, b, n);
        ppb_ab_interval seq, fix;
        ppb_err err;
        assert_int_equal(ppb_ab_hodges_lehmann(a, n, b, n, look, &seq, &err), PPB_OK);
        assert_int_equal(ppb_ab_hodges_lehmann(a, fixed, b, fixed, alpha, &fix, &err), PPB_OK);
        ratio_sum += (fix.shift_hi - fix.shift_lo) / (seq.shift_hi - seq.shift_lo);
    }
    double mean_ratio = ratio_sum / reps;
    if (fabs(mean_ratio - 1) > 0.08)
        fail_msg("the fixed design's %d samples give %.3f of the sequential look's width", fixed, mean_ratio);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_looks_double_from_min_rounds_and_end_at_max),
        cmocka_unit_test(test_alpha_spent_grows_with_the_square_of_information),
        cmocka_unit_test(test_settled_means_no_boundary_inside),
        cmocka_unit_test(test_looks_spend_by_information_and_the_last_spends_the_rest),
        cmocka_unit_test(test_no_look_before_min_rounds),
        cmocka_unit_test(test_stops_only_at_scheduled_looks),
        cmocka_unit_test(test_budget_look_replaces_the_next_one),
        cmocka_unit_test(test_order_is_a_fresh_random_permutation_per_slot),
        cmocka_unit_test(test_between_sd_and_widening),
        cmocka_unit_test(test_between_sd_counts_sessions_not_sampling_noise),
        cmocka_unit_test(test_optional_stopping_keeps_alpha_under_correlated_bimodal_noise),
        cmocka_unit_test(test_session_effects_widen_instead_of_flagging),
        cmocka_unit_test(test_known_effect_is_found_and_quiet_aa_is_same),
        cmocka_unit_test(test_stopping_at_the_decision_raises_power),
        cmocka_unit_test(test_no_boundary_is_crossed_more_often_than_alpha),
        cmocka_unit_test(test_sessions_grow_where_their_spread_dominates),
        cmocka_unit_test(test_design_is_checked),
        cmocka_unit_test(test_fixed_design_samples_match_the_sequential_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
