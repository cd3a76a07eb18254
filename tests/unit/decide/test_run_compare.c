/* Comparing separate runs: each case against its run-to-run noise, too little
 * history never rejects, A/A runs within the noise are not rejected, a real
 * step beyond the noise is; Student's t against published values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_compare.h"
#include "stats.h"
#include "stats_sim.h"
#include "trend.h"

#define MAX_CASES 16
#define MAX_HISTORY 32

typedef struct sim {
    ppb_run_compare_case c[MAX_CASES];
    double hist[MAX_CASES][MAX_HISTORY];
    char keys[MAX_CASES][32];
    int n;
} sim;

/* n cases; each has `h` plain runs of history and the two compared runs, all
 * drawn from the same run-level distribution: median level x exp(noise z).
 * The candidate is then multiplied by `effect`. */
static void make_sim(sim *s, int n, int h, double noise, double effect, uint64_t seed)
{
    sim_rng rng = {seed};
    memset(s, 0, sizeof *s);
    s->n = n;
    for (int i = 0; i < n; i++) {
        ppb_run_compare_case *c = &s->c[i];
        snprintf(s->keys[i], sizeof s->keys[i], "case-%d", i);
        double level = 0.1 * (1 + i);
        for (int k = 0; k < h; k++)
            s->hist[i][k] = level * exp(noise * sim_normal(&rng));
        c->key = s->keys[i];
        c->weight = 1;
        c->baseline_ms = level * exp(noise * sim_normal(&rng));
        c->candidate_ms = level * exp(noise * sim_normal(&rng)) * effect;
        c->baseline_correct = c->candidate_correct = c->baseline_feasible = c->candidate_feasible = 1;
        c->history = s->hist[i];
        c->n_history = h;
    }
}

static ppb_run_compare_report decide(const sim *s, const ppb_run_compare_rules *rules)
{
    ppb_run_compare_rules defaults;
    if (!rules) {
        ppb_run_compare_rules_default(&defaults);
        rules = &defaults;
    }
    ppb_run_compare_report rep;
    ppb_err err;
    if (ppb_run_compare_decide(s->c, s->n, rules, NULL, &rep, &err))
        fail_msg("decide: %s", err.msg);
    return rep;
}

static int has_reason(const ppb_run_compare_report *r, const char *text)
{
    for (int i = 0; i < r->v.n_reasons; i++)
        if (strstr(r->v.reasons[i], text))
            return 1;
    return 0;
}

static void test_student_t(void **state)
{
    (void)state;
    /* two-sided: t_{0.975, df} etc. (R: qt(0.975, 4)) */
    assert_true(fabs(ppb_student_t_quantile(0.05, 1) - 12.706204736) < 1e-6);
    assert_true(fabs(ppb_student_t_quantile(0.05, 4) - 2.776445105) < 1e-6);
    assert_true(fabs(ppb_student_t_quantile(0.05, 10) - 2.228138852) < 1e-6);
    assert_true(fabs(ppb_student_t_quantile(0.01, 2) - 9.924843201) < 1e-6);
    assert_true(fabs(ppb_student_t_quantile(0.001, 7) - 5.407882521) < 1e-6);
    assert_true(isnan(ppb_student_t_quantile(0.05, 0)));
}

/* Fewer plain runs of history than min_history: never REJECT on time, however
 * large the change; the reason counts them (mutation: the history rule dropped
 * or a within-run interval used instead). */
static void test_too_little_history_is_inconclusive(void **state)
{
    (void)state;
    sim s;
    make_sim(&s, 4, 4, 0.001, 1.5, 1); /* 50% slower, 4 runs of history each */
    ppb_run_compare_report r = decide(&s, NULL);
    assert_int_equal(r.v.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_int_equal(r.n_short, 4);
    assert_int_equal(r.v.n_compared, 0);
    /* one line for the four, not four identical lines (issue 36) */
    int lines = 0;
    for (int i = 0; i < r.v.n_reasons; i++)
        lines += strstr(r.v.reasons[i], "has fewer than 5 plain runs of history") != NULL;
    assert_int_equal(lines, 1);
    assert_true(has_reason(&r, "INCONCLUSIVE: 4 cases (the first: 'case-0') each has fewer than 5 plain runs of history"));
    ppb_run_compare_report_free(&r);

    /* one case with history: judged (a real step), the others not */
    make_sim(&s, 3, 4, 0.001, 1.5, 2);
    s.c[1].n_history = 12;
    for (int k = 0; k < 12; k++)
        s.hist[1][k] = 0.2 * (1 + 0.001 * (k % 3));
    r = decide(&s, NULL);
    assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
    assert_int_equal(r.v.cases[1].state, PPB_CASE_COMPARED);
    assert_int_equal(r.v.cases[1].cls, PPB_AB_SLOWER);
    assert_int_equal(r.v.cases[0].state, PPB_CASE_NO_SAMPLES);
    assert_int_equal(r.short_history[0], 1);
    assert_int_equal(r.short_history[1], 0);
    assert_true(has_reason(&r, "REJECT: case 'case-1'"));
    ppb_run_compare_report_free(&r);
}

/* A/A: two separate runs of the same code, 15 cases, run-to-run noise 0.5% to
 * 3%, 12 runs of history: never REJECT in 300 simulated comparisons, and
 * hardly any case flagged (mutation: within-run intervals, or sigma without
 * the sqrt(2) of two runs, or z instead of t: more flags). */
static void test_aa_separate_runs_are_not_rejected(void **state)
{
    (void)state;
    sim s;
    int reject = 0, flagged = 0, cases = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        make_sim(&s, 15, 12, 0.005 + 0.025 * (double)(seed % 7) / 6, 1.0, seed);
        ppb_run_compare_report r = decide(&s, NULL);
        reject += r.v.verdict == PPB_VERDICT_REJECT;
        for (int i = 0; i < s.n; i++) {
            flagged += r.v.cases[i].cls == PPB_AB_SLOWER || r.v.cases[i].cls == PPB_AB_FASTER;
            cases++;
        }
        ppb_run_compare_report_free(&r);
    }
    print_message("  A/A: %d of 300 REJECT, %d of %d cases flagged\n", reject, flagged, cases);
    assert_int_equal(reject, 0);
    assert_true(flagged <= cases / 200); /* <= 0.5%; the family-wise alpha is 5% over 16 */
}

/* The plain standard deviation of log v[0, n) (the test's own arithmetic). */
static double sd_log(const double *v, int n)
{
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++)
        mean += log(v[i]) / n;
    for (int i = 0; i < n; i++)
        ss += (log(v[i]) - mean) * (log(v[i]) - mean);
    return sqrt(ss / (n - 1));
}

/* The interval is d +- c sqrt(2) sigma: c Student's t at the Bonferroni level
 * with floor(0.37 (h - 1)) degrees of freedom, sigma the case's run-to-run
 * noise (ppb_trend_night_noise) of its latest max_history runs. */
static void test_interval_formula(void **state)
{
    (void)state;
    sim s;
    make_sim(&s, 3, 30, 0.01, 1.0, 9);
    ppb_run_compare_report r = decide(&s, NULL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r.n_history[i], 20);
        double sigma = fmax(ppb_trend_night_noise(s.hist[i] + 10, 20), sd_log(s.hist[i] + 10, 20));
        double c = ppb_student_t_quantile(0.05 / 4, 7);
        const ppb_ab_interval *iv = &r.v.cases[i].interval;
        double d = log(s.c[i].candidate_ms / s.c[i].baseline_ms);
        assert_true(fabs(r.noise[i] - sigma) < 1e-15);
        assert_true(fabs(r.crit[i] - c) < 1e-9);
        assert_true(fabs(iv->shift - d) < 1e-12);
        assert_true(fabs(iv->shift_hi - d - c * sqrt(2.0) * sigma) < 1e-12);
        assert_true(fabs(iv->ratio_lo - exp(d - c * sqrt(2.0) * sigma)) < 1e-12);
    }
    assert_true(fabs(r.v.interval_alpha - 0.05 / 4) < 1e-15);
    ppb_run_compare_report_free(&r);
}

/* The noise's degrees of freedom are floor(0.37 (h - 1)) for h runs, not
 * floor(0.37 h): 6 runs give 1, 11 give 3, 20 give 7 (at 6 and 11 the two
 * differ). */
static void test_degrees_of_freedom_follow_the_history(void **state)
{
    (void)state;
    static const int runs[3] = {6, 11, 20}, df[3] = {1, 3, 7};
    for (int k = 0; k < 3; k++) {
        sim s;
        make_sim(&s, 2, runs[k], 0.01, 1.0, 21);
        ppb_run_compare_report r = decide(&s, NULL);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(r.n_history[i], runs[k]);
            if (fabs(r.crit[i] - ppb_student_t_quantile(0.05 / 3, df[k])) > 1e-9)
                fail_msg("%d runs: critical value %.9g, want t(%d) %.9g", runs[k], r.crit[i], df[k],
                         ppb_student_t_quantile(0.05 / 3, df[k]));
        }
        ppb_run_compare_report_free(&r);
    }
}

/* A real step beyond the run-to-run noise is flagged: 8% slower on cases whose
 * runs vary 0.3% is REJECTed, and 8% faster ACCEPTed (mutation: noise
 * overestimated, e.g. from the two compared runs' samples pooled with
 * nothing, or the whole verdict forced to INCONCLUSIVE). */
static void test_step_beyond_noise_is_flagged(void **state)
{
    (void)state;
    sim s;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        make_sim(&s, 6, 10, 0.003, 1.08, seed);
        ppb_run_compare_report r = decide(&s, NULL);
        assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
        for (int i = 0; i < s.n; i++)
            assert_int_equal(r.v.cases[i].cls, PPB_AB_SLOWER);
        ppb_run_compare_report_free(&r);
        make_sim(&s, 6, 10, 0.003, 1 / 1.08, seed);
        r = decide(&s, NULL);
        assert_int_equal(r.v.verdict, PPB_VERDICT_ACCEPT);
        assert_true(has_reason(&r, "ACCEPT:"));
        ppb_run_compare_report_free(&r);
    }
    /* the same 8% on cases whose runs vary 4%: within the noise, not rejected */
    make_sim(&s, 6, 10, 0.04, 1.08, 3);
    ppb_run_compare_report r = decide(&s, NULL);
    assert_int_not_equal(r.v.verdict, PPB_VERDICT_REJECT);
    ppb_run_compare_report_free(&r);
}

/* A machine that now and then runs a whole run slow (the loaded 2-core runner:
 * a few runs 35-70% slow, the rest within 1%): 2 of 20 plain runs of history
 * 1.5x, side by side, and an A/A pair whose candidate run is one more such
 * run. The robust noise reads the two as outliers (about 3%) and would REJECT;
 * the noise is the plain deviation of the log medians where that is larger
 * (about 12% here), so the pair is not rejected, and a quiet history's noise
 * is the robust one (mutation: the plain deviation dropped, or always used). */
static void test_rare_slow_runs_widen_the_noise(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sim s;
        make_sim(&s, 1, 20, 0.003, 1.0, seed);
        s.hist[0][8] *= 1.5;
        s.hist[0][9] *= 1.5;
        s.c[0].candidate_ms *= 1.5;
        ppb_run_compare_report r = decide(&s, NULL);
        assert_int_not_equal(r.v.verdict, PPB_VERDICT_REJECT);
        assert_true(fabs(r.noise[0] - sd_log(s.hist[0], 20)) < 1e-15);
        assert_true(ppb_trend_night_noise(s.hist[0], 20) < 0.5 * r.noise[0]);
        ppb_run_compare_report_free(&r);
    }
    sim q; /* a quiet history (this seed: its robust estimate is the larger) */
    make_sim(&q, 1, 20, 0.003, 1.0, 3);
    ppb_run_compare_report r = decide(&q, NULL);
    assert_true(fabs(r.noise[0] - ppb_trend_night_noise(q.hist[0], 20)) < 1e-15);
    ppb_run_compare_report_free(&r);
}

/* Two implementations of each case (compare pairing runs of two kernels by
 * shape): the history is the baseline implementation's plain runs, then the
 * candidate's, each at its own level. The noise is pooled about each level, so
 * a candidate implementation 30% slower on runs that vary 0.3% is REJECTed
 * (mutation: the split ignored: the two levels read as noise of over 5% and
 * nothing is rejected); the second level costs a degree of freedom
 * (floor(0.37 (h - 2))); an implementation with fewer than 2 runs of its own
 * leaves its case unjudged. */
static void test_two_implementations(void **state)
{
    (void)state;
    sim s;
    make_sim(&s, 4, 12, 0.003, 1.30, 5);
    for (int i = 0; i < s.n; i++) {
        for (int k = 6; k < 12; k++)
            s.hist[i][k] *= 1.30; /* the candidate implementation's own runs */
        s.c[i].history_split = 6;
    }
    ppb_run_compare_report r = decide(&s, NULL);
    assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
    for (int i = 0; i < s.n; i++) {
        assert_int_equal(r.v.cases[i].cls, PPB_AB_SLOWER);
        assert_true(r.noise[i] < 0.01);
        assert_true(r.noise[i] >= ppb_trend_night_noise_split(s.hist[i], 12, 6) - 1e-15);
        assert_true(fabs(r.crit[i] - ppb_student_t_quantile(0.05 / 5, 3)) < 1e-9); /* not t(4): 11 runs' */
        assert_int_equal(r.n_history[i], 12);
    }
    assert_true(has_reason(&r, "slower"));
    ppb_run_compare_report_free(&r);

    for (int i = 0; i < s.n; i++)
        s.c[i].history_split = 0; /* the same runs read as one implementation's */
    r = decide(&s, NULL);
    assert_int_not_equal(r.v.verdict, PPB_VERDICT_REJECT);
    assert_true(r.noise[0] > 0.05);
    ppb_run_compare_report_free(&r);

    for (int i = 0; i < s.n; i++)
        s.c[i].history_split = i ? 6 : 11; /* case 0's candidate implementation has one run of its own */
    r = decide(&s, NULL);
    assert_int_equal(r.short_history[0], 1);
    assert_int_equal(r.short_history[1], 0);
    ppb_run_compare_report_free(&r);
    for (int i = 0; i < s.n; i++)
        s.c[i].history_split = 1; /* every baseline implementation has one */
    r = decide(&s, NULL);
    assert_int_equal(r.v.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_true(has_reason(&r, "fewer than 2 plain runs of one of its two implementations"));
    ppb_run_compare_report_free(&r);

    s.c[0].history_split = 13; /* past the history: refused */
    ppb_run_compare_rules rules;
    ppb_run_compare_rules_default(&rules);
    ppb_run_compare_report bad;
    ppb_err err;
    assert_int_equal(ppb_run_compare_decide(s.c, s.n, &rules, NULL, &bad, &err), PPB_EINPUT);
    ppb_run_compare_report_free(&bad);
}

/* Correctness and feasibility come first, as in the verdict; a case not timed
 * in one run is open; bad input is refused. */
static void test_states_and_errors(void **state)
{
    (void)state;
    sim s;
    make_sim(&s, 3, 10, 0.003, 1.0, 5);
    s.c[0].candidate_correct = 0;
    s.c[0].candidate_reason = "max abs err 1";
    s.c[1].baseline_feasible = 0;
    s.c[2].candidate_ms = 0;
    ppb_run_compare_report r = decide(&s, NULL);
    assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
    assert_int_equal(r.v.cases[0].state, PPB_CASE_WRONG);
    assert_int_equal(r.v.cases[1].state, PPB_CASE_EXCLUDED);
    assert_int_equal(r.v.cases[2].state, PPB_CASE_NO_SAMPLES);
    assert_true(has_reason(&r, "candidate's output is wrong: max abs err 1"));
    ppb_run_compare_report_free(&r);

    ppb_run_compare_rules rules;
    ppb_run_compare_rules_default(&rules);
    assert_true(rules.verdict.min_gain == 0 && rules.min_history == 5 && rules.max_history == 20);
    ppb_err err;
    rules.min_history = 2;
    assert_int_equal(ppb_run_compare_decide(s.c, s.n, &rules, NULL, &r, &err), PPB_EINPUT);
    ppb_run_compare_report_free(&r);
    ppb_run_compare_rules_default(&rules);
    s.hist[0][3] = -1;
    assert_int_equal(ppb_run_compare_decide(s.c, s.n, &rules, NULL, &r, &err), PPB_EINPUT);
    ppb_run_compare_report_free(&r);
}

/* ---- the history reader ------------------------------------------------------ */

static int64_t plain_run(ppb_store *s, const char *kind, int day, int hour)
{
    static ppb_run_info run;   /* large: off the stack */
    memset(&run, 0, sizeof run);
    snprintf(run.suite_name, sizeof run.suite_name, "nightly");
    snprintf(run.started_at, sizeof run.started_at, "2026-01-%02dT%02d:00:00Z", day, hour);
    snprintf(run.kind, sizeof run.kind, "%s", kind);
    ppb_err err;
    if (ppb_store_begin_run(s, &run, &err))
        fail_msg("begin_run: %s", err.msg);
    return run.id;
}

/* Plain runs only, timed results only (ok and noisy), oldest first, each run
 * once over sources that share runs, a compared run left out of every source,
 * the latest max_n kept. Runs are stored out of date order. */
static void test_history_reader(void **state)
{
    (void)state;
    char path[] = "/tmp/ppb-run-compare-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ppb_store *s;
    ppb_err err;
    assert_int_equal(ppb_store_open(&s, path, &err), PPB_OK);
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    c.shape.query_len = 17, c.shape.num_heads = 4, c.shape.num_kv_heads = 2;
    ppb_case_make_key(&c);
    const int day[] = {5, 1, 3, 2, 4, 6, 7};
    const char *kind[] = {"run", "run", "run", "run", "run", "proposal", "run"};
    const int status[] = {PPB_STATUS_OK, PPB_STATUS_OK, PPB_STATUS_NOISY, PPB_STATUS_OK, PPB_STATUS_OK,
                          PPB_STATUS_OK, PPB_STATUS_WRONG};
    int64_t id[7];
    for (int i = 0; i < 7; i++) {
        id[i] = plain_run(s, kind[i], day[i], 0);
        ppb_result r;
        ppb_result_init(&r);
        r.status = status[i];
        r.median_ms = day[i];   /* the day names the run */
        if (ppb_store_put_result(s, id[i], &c, &r, &err))
            fail_msg("put: %s", err.msg);
        ppb_result_free(&r);
    }
    /* a second database whose run falls between the first's (day 1.5): sources interleave in time */
    char path2[] = "/tmp/ppb-run-compare-XXXXXX";
    assert_true((fd = mkstemp(path2)) >= 0);
    close(fd);
    ppb_store *s2;
    assert_int_equal(ppb_store_open(&s2, path2, &err), PPB_OK);
    ppb_result r;
    ppb_result_init(&r);
    r.status = PPB_STATUS_OK, r.median_ms = 1.5;
    if (ppb_store_put_result(s2, plain_run(s2, "run", 1, 12), &c, &r, &err))
        fail_msg("put: %s", err.msg);
    ppb_result_free(&r);
    /* the first database twice: its runs count once; day 4 skipped in one source is skipped in both */
    ppb_run_compare_source src[3] = {
        {s, "nightly", {0, 0}, NULL}, {s2, "nightly", {0, 0}, NULL}, {s, "nightly", {id[4], 0}, NULL}};
    double *h = NULL;
    int n = 0;
    assert_int_equal(ppb_run_compare_history(src, 3, c.key, 0, 0, &h, &n, &err), PPB_OK);
    const double want[] = {1, 1.5, 2, 3, 5};   /* not 4 (skipped), 6 (a proposal), 7 (wrong) */
    assert_int_equal(n, 5);
    for (int i = 0; i < n; i++)
        assert_true(h[i] == want[i]);
    free(h);
    assert_int_equal(ppb_run_compare_history(src, 3, c.key, 2, 0, &h, &n, &err), PPB_OK);
    assert_int_equal(n, 2);
    assert_true(h[0] == 3 && h[1] == 5);
    free(h);
    assert_int_equal(ppb_run_compare_history(src, 1, "prefix_prefill b=99", 0, 0, &h, &n, &err), PPB_OK);
    assert_int_equal(n, 0);
    free(h);
    /* day 3 was noisy: left out once 4 runs measured the case to their target, kept while fewer did */
    assert_int_equal(ppb_run_compare_history(src, 3, c.key, 0, 4, &h, &n, &err), PPB_OK);
    const double measured[] = {1, 1.5, 2, 5};
    assert_int_equal(n, 4);
    for (int i = 0; i < n; i++)
        assert_true(h[i] == measured[i]);
    free(h);
    assert_int_equal(ppb_run_compare_history(src, 3, c.key, 0, 5, &h, &n, &err), PPB_OK);
    assert_int_equal(n, 5);
    free(h);
    /* runs timed another way (the CPU kernel's threads per launch) are another history: days 2 and 3 on one
     * thread, the rest not recorded */
    for (int i = 2; i <= 3; i++)
        assert_int_equal(ppb_store_put_env(s, id[i], PPB_ENV_KERNEL_THREADS, "1", &err), PPB_OK);
    const char *timing[2] = {"", "1"};
    const double want_timed[2][3] = {{1, 1.5, 5}, {2, 3, 0}};
    const int n_timed[2] = {3, 2};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 3; i++)
            src[i].timing = timing[k];
        assert_int_equal(ppb_run_compare_history(src, 3, c.key, 0, 0, &h, &n, &err), PPB_OK);
        assert_int_equal(n, n_timed[k]);
        for (int i = 0; i < n; i++)
            assert_true(h[i] == want_timed[k][i]);
        free(h);
    }
    ppb_store_close(s2);
    unlink(path2);
    ppb_store_close(s);
    unlink(path);
}

/* A compared run unusual as a whole: a baseline whose every case is 40% slower
 * than its history is said to be (the machine changed, not the code); plain
 * A/A runs almost never are (3 x the noise); the candidate's side is measured
 * the same way; fewer than 3 judged cases say nothing. */
static void test_an_unusual_run_is_seen_as_a_whole(void **state)
{
    (void)state;
    sim s;
    int flagged = 0;
    for (int rep_i = 0; rep_i < 200; rep_i++) {
        make_sim(&s, 6, 12, 0.03, 1.0, 500 + (uint64_t)rep_i);
        ppb_run_compare_report rep = decide(&s, NULL);
        assert_int_equal(rep.baseline_level.cases, 6);
        flagged += rep.baseline_level.unusual;
        ppb_run_compare_report_free(&rep);
    }
    if (flagged > 2)
        fail_msg("plain baselines called unusual in %d of 200 comparisons", flagged);

    make_sim(&s, 6, 12, 0.03, 1.0, 77);
    for (int i = 0; i < s.n; i++)
        s.c[i].baseline_ms *= 1.4;
    s.c[0].baseline_ms /= 1.4 * 1.4; /* one case the other way: the midmean is not moved by it */
    ppb_run_compare_report rep = decide(&s, NULL);
    const ppb_run_level *lv = &rep.baseline_level;
    assert_true(lv->unusual);
    assert_true(fabs(lv->shift - log(1.4)) < 0.06);
    assert_true(lv->noise > 0.01 && lv->noise < 0.06);
    assert_false(rep.candidate_level.unusual); /* the candidate run is as usual */
    ppb_run_compare_report_free(&rep);
    /* two cases, both 40% slower: too few to call a whole run unusual */
    make_sim(&s, 2, 12, 0.03, 1.0, 78);
    s.c[0].baseline_ms *= 1.4, s.c[1].baseline_ms *= 1.4;
    rep = decide(&s, NULL);
    lv = &rep.baseline_level;
    assert_int_equal(lv->cases, 2);
    assert_true(fabs(lv->shift) > PPB_RUN_COMPARE_UNUSUAL * lv->noise); /* it would be, with more cases */
    assert_false(lv->unusual);
    ppb_run_compare_report_free(&rep);
}

/* Rule 5: a baseline case alone off its usual level beyond its interval's
 * reach of one run's noise, its samples tight, widens that case by its
 * offset, with a note; the candidate's case so far off is a change, not
 * widened. The loaded runner's false A/A ACCEPT: one case 7.7% off against
 * 0.3% noise (mutations: the guard dropped, applied to the candidate too, the
 * threshold without crit, the offset not carried into the sd). */
static void test_a_baseline_case_off_its_level_widens_it(void **state)
{
    (void)state;
    sim s;
    make_sim(&s, 4, 20, 0.003, 1.0, 41);
    s.c[2].baseline_ms *= 1.077;
    ppb_run_compare_report r = decide(&s, NULL);
    assert_false(r.baseline_level.unusual);
    assert_int_equal(r.n_baseline_off, 1);
    assert_true(fabs(r.baseline_offset[2] - log(s.c[2].baseline_ms / ppb_median(s.hist[2], 20))) < 1e-12);
    for (int i = 0; i < s.n; i++) {
        double off = i == 2 ? r.baseline_offset[2] : 0;
        assert_true(i == 2 || r.baseline_offset[i] == 0);
        assert_true(fabs(r.sd[i] - sqrt(2 * r.noise[i] * r.noise[i] + off * off)) < 1e-15);
    }
    assert_int_equal(r.v.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_true(has_reason(&r, "note: 1 case of the baseline run lies off its usual level beyond its run-to-run "
                               "noise (by up to 7."));
    ppb_run_compare_report_free(&r);

    /* just inside its reach: not widened (the threshold is crit x one run's SD) */
    make_sim(&s, 4, 20, 0.003, 1.0, 41);
    r = decide(&s, NULL);
    double usual = ppb_median(s.hist[2], 20), reach = r.crit[2] * r.noise[2];
    ppb_run_compare_report_free(&r);
    s.c[2].baseline_ms = usual * exp(0.95 * reach);
    r = decide(&s, NULL);
    assert_int_equal(r.n_baseline_off, 0);
    ppb_run_compare_report_free(&r);
    s.c[2].baseline_ms = usual * exp(1.05 * reach);
    r = decide(&s, NULL);
    assert_int_equal(r.n_baseline_off, 1);
    ppb_run_compare_report_free(&r);

    /* the candidate's case as far off: a change of one shape, REJECTed, not widened */
    make_sim(&s, 4, 20, 0.003, 1.0, 41);
    s.c[2].candidate_ms *= 1.077;
    r = decide(&s, NULL);
    assert_int_equal(r.n_baseline_off, 0);
    assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
    assert_true(fabs(r.sd[2] - sqrt(2.0) * r.noise[2]) < 1e-15);
    ppb_run_compare_report_free(&r);

    /* In simulation: 200 A/A compares, one baseline case 5-15% off (tight), 0 ACCEPT or REJECT; a real 10%
     * slowdown of every case against a usual baseline is still REJECTed every time. */
    int decided = 0, rejected = 0;
    for (uint64_t k = 0; k < 200; k++) {
        make_sim(&s, 4, 20, 0.003, 1.0, 1000 + k);
        s.c[k % 4].baseline_ms *= 1.05 + 0.10 * (double)(k % 11) / 10;
        r = decide(&s, NULL);
        decided += r.v.verdict != PPB_VERDICT_INCONCLUSIVE;
        ppb_run_compare_report_free(&r);
        make_sim(&s, 4, 20, 0.003, 1.10, 5000 + k);
        r = decide(&s, NULL);
        rejected += r.v.verdict == PPB_VERDICT_REJECT;
        ppb_run_compare_report_free(&r);
    }
    assert_int_equal(decided, 0);
    assert_int_equal(rejected, 200);
}

/* A run that could not measure a case to its noise target (noisy) carries its
 * own spread into the case's interval: s = sqrt(2 sigma^2 + (spread_a / 1.349)^2
 * + (spread_b / 1.349)^2). The loaded runner's outlier runs: a case 17% slower
 * than its level, its samples spread 30%, against 0.3% run-to-run noise, is not
 * REJECTed; the same 17% measured by a run that met its target is (mutations:
 * the spread dropped, taken from one side only, divided by sqrt(n), or counted
 * for a run that was not noisy). */
static void test_a_noisy_run_widens_its_case(void **state)
{
    (void)state;
    for (int side = 0; side < 2; side++) {
        sim s;
        make_sim(&s, 4, 20, 0.003, 1.0, 31 + (uint64_t)side);
        s.c[0].candidate_ms *= 1.17; /* the baseline at its level: a baseline off it is widened anyway (rule 5) */
        ppb_run_compare_report r = decide(&s, NULL); /* measured to target: REJECTed */
        assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
        assert_int_equal(r.v.cases[0].cls, PPB_AB_SLOWER);
        ppb_run_compare_report_free(&r);
        double *spread = side ? &s.c[0].candidate_spread : &s.c[0].baseline_spread;
        *spread = 0.30;
        r = decide(&s, NULL);
        assert_int_not_equal(r.v.verdict, PPB_VERDICT_REJECT);
        assert_int_equal(r.v.cases[0].cls, PPB_AB_UNRESOLVED);
        double own = 0.30 / 1.349, sd = sqrt(2 * r.noise[0] * r.noise[0] + own * own);
        assert_true(fabs(r.sd[0] - sd) < 1e-12);
        const ppb_ab_interval *iv = &r.v.cases[0].interval;
        assert_true(fabs(iv->shift_hi - iv->shift - r.crit[0] * sd) < 1e-12);
        /* the other cases, measured to target, keep the history's noise alone */
        assert_true(fabs(r.sd[1] - sqrt(2.0) * r.noise[1]) < 1e-15);
        ppb_run_compare_report_free(&r);
        /* a noisy run whose spread leaves the step clear: still REJECTed, the reason saying the spread counted */
        *spread = 0.01;
        r = decide(&s, NULL);
        assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
        assert_true(has_reason(&r, side ? "; the candidate run's samples spread 1.0% (noisy))"
                                        : "; the baseline run's samples spread 1.0% (noisy))"));
        ppb_run_compare_report_free(&r);
    }
    /* where the spread comes from: a noisy result's (q3 - q1) / median, nothing from an ok one */
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    ppb_result ra, rb;
    ppb_result_init(&ra);
    ppb_result_init(&rb);
    ra.status = PPB_STATUS_OK, rb.status = PPB_STATUS_NOISY;
    ra.median_ms = rb.median_ms = 1.0;
    ra.rel_noise = 0.01, rb.rel_noise = 0.12;
    ppb_run_compare_case cc;
    ppb_run_compare_case_of(&c, &ra, &rb, &cc);
    assert_true(cc.baseline_spread == 0 && cc.candidate_spread == 0.12);
    ra.status = PPB_STATUS_NOISY, rb.status = PPB_STATUS_OK;
    ppb_run_compare_case_of(&c, &ra, &rb, &cc);
    assert_true(cc.baseline_spread == 0.01 && cc.candidate_spread == 0);
}

/* A baseline run off as a whole (rule 4). On the loaded runner, 2 plain runs in
 * 100 had every case 2-4% slow with tight samples against 0.25% run-to-run
 * noise; as the baseline each made an A/A compare ACCEPT. Such a baseline
 * widens every case by its shift, s = sqrt(2 sigma^2 + shift^2), and the
 * weighted mean keeps the shift whole: the A/A compare is INCONCLUSIVE, with a
 * note; given no shift (as a rule-3 recompute) the same runs ACCEPT; a given
 * shift decides as the measured one. A candidate off as a whole (a real
 * change of every case) is not widened and is REJECTed. */
static void test_a_baseline_off_as_a_whole_widens_every_case(void **state)
{
    (void)state;
    sim s;
    make_sim(&s, 4, 20, 0.0025, 1.0, 91);
    for (int i = 0; i < s.n; i++)
        s.c[i].baseline_ms *= 1.03;
    ppb_run_compare_report r = decide(&s, NULL);
    const ppb_run_level *lv = &r.baseline_level;
    assert_true(lv->unusual);
    assert_int_equal(lv->cases, 4);
    assert_true(fabs(lv->shift - log(1.03)) < 0.004);
    assert_int_equal(r.v.verdict, PPB_VERDICT_INCONCLUSIVE);
    for (int i = 0; i < s.n; i++)
        assert_true(fabs(r.sd[i] - sqrt(2 * r.noise[i] * r.noise[i] + lv->shift * lv->shift)) < 1e-15);
    assert_true(r.v.geomean.log_se >= lv->shift); /* the mean holds the shift whole */
    assert_true(r.v.geomean.ratio_hi > 1);
    assert_true(has_reason(&r, "note: the baseline run is off as a whole: its 4 judged cases are together"));
    assert_true(has_reason(&r, "; the baseline run off as a whole by 3.0%"));
    double measured = lv->shift, hi = r.v.geomean.ratio_hi;
    ppb_run_compare_report_free(&r);

    ppb_run_compare_rules rules;
    ppb_run_compare_rules_default(&rules);
    const double none[2][2] = {{0, 0}, {NAN, NAN}};
    ppb_err err;
    for (int k = 0; k < 2; k++) { /* no shift given: each case is caught alone (rule 5), by its own offset */
        assert_int_equal(ppb_run_compare_decide(s.c, s.n, &rules, none[k], &r, &err), PPB_OK);
        assert_false(r.baseline_level.unusual);
        assert_int_equal(r.n_baseline_off, 4);
        assert_int_equal(r.v.verdict, PPB_VERDICT_INCONCLUSIVE);
        for (int i = 0; i < s.n; i++) {
            assert_true(fabs(r.baseline_offset[i] - log(1.03)) < 0.01);
            double want = sqrt(2 * r.noise[i] * r.noise[i] + r.baseline_offset[i] * r.baseline_offset[i]);
            assert_true(fabs(r.sd[i] - want) < 1e-15);
        }
        assert_true(has_reason(&r, "note: 4 cases of the baseline run lie off their usual level beyond their"));
        ppb_run_compare_report_free(&r);
    }
    const double given[2] = {measured, 0};
    assert_int_equal(ppb_run_compare_decide(s.c, s.n, &rules, given, &r, &err), PPB_OK);
    assert_true(r.baseline_level.unusual && r.baseline_level.shift == measured);
    assert_int_equal(r.v.verdict, PPB_VERDICT_INCONCLUSIVE);
    assert_true(r.v.geomean.ratio_hi == hi);
    ppb_run_compare_report_free(&r);

    /* the candidate off as a whole: a real change, or the machine's; not widened, said in a note */
    make_sim(&s, 4, 20, 0.0025, 1.10, 92);
    r = decide(&s, NULL);
    assert_false(r.baseline_level.unusual);
    assert_true(r.candidate_level.unusual && fabs(r.candidate_level.shift - log(1.10)) < 0.004);
    assert_int_equal(r.v.verdict, PPB_VERDICT_REJECT);
    assert_true(fabs(r.sd[0] - sqrt(2.0) * r.noise[0]) < 1e-15);
    assert_true(has_reason(&r, "note: the candidate run is off as a whole: its 4 judged cases are together"));
    assert_true(has_reason(&r, "a second candidate run tells them apart"));
    assert_false(has_reason(&r, "note: the baseline run is off as a whole"));
    ppb_run_compare_report_free(&r);
    /* a candidate as usual: no note */
    make_sim(&s, 4, 20, 0.0025, 1.0, 93);
    r = decide(&s, NULL);
    assert_false(r.candidate_level.unusual);
    assert_false(has_reason(&r, "off as a whole"));
    ppb_run_compare_report_free(&r);
}

/* In simulation: 200 A/A compares whose baseline is off as a whole by 2-5%
 * (each case 0.25% noise), none ACCEPT or REJECT; a real 10% slowdown against a
 * usual baseline is still REJECTed 200 of 200 times; two implementations at
 * levels 30% apart each judged about its own part of the history (the whole
 * history's median would call a baseline at its own level 13% off). */
static void test_whole_run_offsets_in_simulation(void **state)
{
    (void)state;
    sim s;
    int wrong = 0, found = 0;
    for (int k = 0; k < 200; k++) {
        make_sim(&s, 4, 20, 0.0025, 1.0, 1000 + (uint64_t)k);
        double off = 1 + (k % 2 ? 1 : -1) * (0.02 + 0.03 * (k % 7) / 6.0);
        for (int i = 0; i < s.n; i++)
            s.c[i].baseline_ms *= off;
        ppb_run_compare_report r = decide(&s, NULL);
        wrong += r.v.verdict != PPB_VERDICT_INCONCLUSIVE;
        ppb_run_compare_report_free(&r);
        make_sim(&s, 4, 20, 0.0025, 1.10, 2000 + (uint64_t)k);
        r = decide(&s, NULL);
        found += r.v.verdict == PPB_VERDICT_REJECT;
        ppb_run_compare_report_free(&r);
    }
    if (wrong > 0 || found < 200)
        fail_msg("baselines off as a whole: %d of 200 decided; real 10%%: REJECT %d of 200", wrong, found);

    make_sim(&s, 4, 20, 0.0025, 1.3, 3000);
    for (int i = 0; i < s.n; i++) {
        s.c[i].history_split = 10;
        for (int h = 10; h < 20; h++)
            s.hist[i][h] *= 1.3;
    }
    ppb_run_compare_report r = decide(&s, NULL);
    assert_false(r.baseline_level.unusual);
    assert_true(fabs(r.baseline_level.shift) < 0.01);
    assert_false(r.candidate_level.unusual);
    assert_true(fabs(r.candidate_level.shift) < 0.01);
    ppb_run_compare_report_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_student_t),
        cmocka_unit_test(test_too_little_history_is_inconclusive),
        cmocka_unit_test(test_aa_separate_runs_are_not_rejected),
        cmocka_unit_test(test_interval_formula),
        cmocka_unit_test(test_degrees_of_freedom_follow_the_history),
        cmocka_unit_test(test_step_beyond_noise_is_flagged),
        cmocka_unit_test(test_rare_slow_runs_widen_the_noise),
        cmocka_unit_test(test_two_implementations),
        cmocka_unit_test(test_states_and_errors),
        cmocka_unit_test(test_history_reader),
        cmocka_unit_test(test_an_unusual_run_is_seen_as_a_whole),
        cmocka_unit_test(test_a_noisy_run_widens_its_case),
        cmocka_unit_test(test_a_baseline_case_off_its_level_widens_it),
        cmocka_unit_test(test_a_baseline_off_as_a_whole_widens_every_case),
        cmocka_unit_test(test_whole_run_offsets_in_simulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
