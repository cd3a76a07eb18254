/* ppbench compare RUN_A RUN_B: the same case in two runs (joined on case
 * keys), A as baseline, B as candidate, each case judged by its run-to-run
 * noise over the plain runs in the database(s) (harness/decide/run_compare.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "results_table.h"
#include "run_compare.h"
#include "verdict_doc.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench compare RUN_A RUN_B [--db PATH] [--baseline-db PATH|URL] [options]\n\n"
            "Joins the two runs on case keys and judges B (candidate) against A (baseline): each\n"
            "case's change of median against its run-to-run noise, measured over the case's plain\n"
            "runs in the database(s); a case with fewer than --min-history such runs is not judged\n"
            "on time (INCONCLUSIVE, never REJECT). Refuses runs from different devices or backends\n"
            "unless --allow-different-devices; warns when drivers, runtimes or clocks differ.\n\n"
            "  --threshold T        practical threshold (default 0.01)\n"
            "  --max-regression R   largest tolerated slowdown of one case (default 0.05)\n"
            "  --min-gain G         required geometric-mean gain (default 0: report only)\n"
            "  --alpha A            family-wise error (default 0.05)\n"
            "  --min-history N      plain runs of history a case needs (default 5, at least 3)\n"
            "  --allow-different-devices\n"
            "  --baseline-db PATH|URL  RUN_A comes from this database (a file, or http(s)/file URL\n"
            "                       fetched with libcurl and checked to be a ppbench database)\n"
            "  --baseline-timeout S each download try gives up after S seconds (default 120)\n"
            "  --json FILE|-        the verdict as JSON (schema " PPB_VERDICT_SCHEMA ", docs/CLI.md)\n"
            "  --markdown FILE|-    the verdict as Markdown (with '-', the table goes to stderr)\n\n"
            "exit: 0 ACCEPT (B better), 10 REJECT (B worse), 11 INCONCLUSIVE, 2 usage, 3 bad input\n");
}

typedef struct run_results {
    int n, cap;
    ppb_case *cases;
    ppb_result *results;
} run_results;

static int collect(void *ctx, const ppb_case *c, const ppb_result *r)
{
    run_results *rr = ctx;
    if (rr->n == rr->cap) {
        int cap = rr->cap ? rr->cap * 2 : 64;
        ppb_case *cs = realloc(rr->cases, sizeof *cs * (size_t)cap);
        if (cs)
            rr->cases = cs;
        ppb_result *rs = cs ? realloc(rr->results, sizeof *rs * (size_t)cap) : NULL;
        if (!rs)
            return PPB_ENOMEM;
        rr->results = rs;
        rr->cap = cap;
    }
    rr->cases[rr->n] = *c;
    ppb_result *copy = &rr->results[rr->n];
    *copy = *r;
    copy->samples_ms = NULL;
    if (r->n_samples > 0) {
        copy->samples_ms = malloc(sizeof(double) * (size_t)r->n_samples);
        if (!copy->samples_ms)
            return PPB_ENOMEM;
        memcpy(copy->samples_ms, r->samples_ms, sizeof(double) * (size_t)r->n_samples);
    }
    rr->n++;
    return 0;
}

static void free_results(run_results *rr)
{
    for (int i = 0; i < rr->n; i++)
        ppb_result_free(&rr->results[i]);
    free(rr->cases);
    free(rr->results);
}

typedef struct env_pair {
    const char *key;
    char value[256];
} env_pair;

static int find_env(void *ctx, const char *key, const char *value)
{
    env_pair *e = ctx;
    if (strcmp(e->key, key) == 0) {
        snprintf(e->value, sizeof e->value, "%s", value);
        return 1;
    }
    return 0;
}

/* Different hardware makes every difference meaningless: refuse (unless
 * overridden). Different software or clocks: say so, plainly. */
static int check_comparable(ppb_store *sa, int64_t a, ppb_store *sb, int64_t b, int allow,
                            ppb_err *err)
{
    static const struct {
        const char *key;
        int hard;
    } facts[] = {{"timings", 1}, {"device.name", 1}, {PPB_ENV_KERNEL_THREADS, 1}, {"device.driver", 0},
                 {"device.runtime", 0}, {"before.sm_clock_mhz", 0}, {"before.mem_clock_mhz", 0},
                 {"before.nvml.sm_clock_mhz", 0}, {"before.nvml.mem_clock_mhz", 0}};
    for (size_t i = 0; i < sizeof facts / sizeof *facts; i++) {
        env_pair ea = {facts[i].key, ""}, eb = {facts[i].key, ""};
        int rc = ppb_store_each_env(sa, a, find_env, &ea, err);
        if (!rc)
            rc = ppb_store_each_env(sb, b, find_env, &eb, err);
        if (rc)
            return rc;
        if (strcmp(ea.value, eb.value) == 0)
            continue;
        if (facts[i].hard && !allow)
            return ppb_fail(err, PPB_EINPUT,
                            "runs %lld and %lld differ in %s ('%s' vs '%s'): their timings are not "
                            "comparable (--allow-different-devices to compare anyway)",
                            (long long)a, (long long)b, facts[i].key, ea.value[0] ? ea.value : "not recorded",
                            eb.value[0] ? eb.value : "not recorded");
        fprintf(stderr, "ppbench compare: warning: %s differs: run %lld '%s', run %lld '%s'\n",
                facts[i].key, (long long)a, ea.value, (long long)b, eb.value);
    }
    return PPB_OK;
}

typedef struct compare_opts {
    ppb_run_compare_rules rules;
    int allow, bad;
} compare_opts;

static double parse_fraction(const char *opt, const char *text, int *bad)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (*end || !(v >= 0 && v < 1)) {
        fprintf(stderr, "ppbench compare: %s %s: expected a number in [0, 1)\n", opt, text);
        *bad = 1;
    }
    return v;
}

/* A bad fraction is said at once and refused with the usage after all options. */
static int compare_opt(void *ctx, int opt, char *arg)
{
    compare_opts *c = ctx;
    switch (opt) {
    case 't': c->rules.verdict.threshold = parse_fraction("--threshold", arg, &c->bad); return 0;
    case 'r': c->rules.verdict.max_regression = parse_fraction("--max-regression", arg, &c->bad); return 0;
    case 'G': c->rules.verdict.min_gain = parse_fraction("--min-gain", arg, &c->bad); return 0;
    case 'a': c->rules.verdict.alpha = parse_fraction("--alpha", arg, &c->bad); return 0;
    case 'H': {
        char *end = NULL;
        long v = strtol(arg, &end, 10);
        if (*end || v < 3 || v > c->rules.max_history) {
            fprintf(stderr, "ppbench compare: --min-history %s: expected an integer in [3, %d]\n", arg,
                    c->rules.max_history);
            c->bad = 1;
        }
        c->rules.min_history = (int)v;
        return 0;
    }
    case 'A': c->allow = 1; return 0;
    default: return 1;
    }
}

/* A case's implementation as a case key names it ("builtin", "plugin:NAME"). */
static const char *impl_of(const ppb_case *c)
{
    const char *name = ppb_impl_name(ppb_case_get(c, PPB_F_IMPL));
    return name ? name : "?";
}

/* One paired case: its own history and, when the two sides are different
 * implementations, each side's history one after the other (run_compare.h's
 * history_split). */
static int pair_case(const run_results rr[2], int i, int j, int across, const ppb_run_compare_source *src,
                     int n_src, const ppb_run_compare_rules *rules, ppb_run_compare_case *c, ppb_proposal_case *pc,
                     ppb_err *err)
{
    ppb_run_compare_case_of(&rr[0].cases[i], &rr[0].results[i], &rr[1].results[j], c);
    snprintf(pc->baseline_key, sizeof pc->baseline_key, "%s", rr[0].cases[i].key);
    snprintf(pc->candidate_key, sizeof pc->candidate_key, "%s", rr[1].cases[j].key);
    double *h[2] = {NULL, NULL};
    int nh[2] = {0, 0};
    int rc = ppb_run_compare_history(src, n_src, pc->baseline_key, rules->max_history, rules->min_history, &h[0],
                                     &nh[0], err);
    if (!rc && across)
        rc = ppb_run_compare_history(src, n_src, pc->candidate_key, rules->max_history, rules->min_history, &h[1],
                                     &nh[1], err);
    if (!rc && nh[1] > 0) {
        double *both = realloc(h[0], sizeof *both * (size_t)(nh[0] + nh[1]));
        if (!both)
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory for a case's history");
        else {
            memcpy(both + nh[0], h[1], sizeof *both * (size_t)nh[1]);
            h[0] = both;
        }
    }
    free(h[1]);
    c->history = h[0];
    c->n_history = nh[0] + nh[1];
    c->history_split = across ? nh[0] : 0;
    return rc;
}

/* The cases of run A paired with run B's, A as baseline, B as candidate: by
 * key, or, when no key is in both, by the key the case would have on the
 * built-in kernels: two implementations of the same cases (a release against
 * another, a plugin against the built-in kernels), each case then judged
 * against the noise of both implementations' own plain runs. A case of A
 * with more than one implementation in B is refused: which to pair is a
 * guess. */
static int join_cases(const run_results rr[2], const ppb_run_compare_source *src, int n_src,
                      const ppb_run_compare_rules *rules, ppb_run_compare_case *rcs, ppb_proposal_case *pcs,
                      int *n_out, int *across_out, ppb_err *err)
{
    int n = 0, rc = PPB_OK, across = 0;
    char (*builtin[2])[PPB_CASE_KEY_MAX] = {NULL, NULL}; /* across: each case's key on the built-in kernels */
    for (;;) {
        for (int i = 0; i < rr[0].n && !rc; i++) {
            const char *ka = across ? builtin[0][i] : rr[0].cases[i].key;
            int match = -1;
            for (int j = 0; j < rr[1].n && !rc; j++) {
                if (strcmp(ka, across ? builtin[1][j] : rr[1].cases[j].key) != 0)
                    continue;
                if (match >= 0)
                    rc = ppb_fail(err, PPB_EINPUT,
                                  "case '%s' of the baseline run is in the candidate run on two implementations "
                                  "('%s' and '%s'): compare runs of one implementation each",
                                  rr[0].cases[i].key, rr[1].cases[match].key, rr[1].cases[j].key);
                match = j;
                if (!across)
                    break; /* a key is in a run once */
            }
            if (match >= 0 && !rc) {
                rc = pair_case(rr, i, match, across, src, n_src, rules, &rcs[n], &pcs[n], err);
                n++;
            }
        }
        if (n > 0 || rc || across)
            break;
        across = 1; /* no key in common: the same cases on two implementations? */
        for (int s = 0; s < 2 && !rc; s++) {
            builtin[s] = malloc(sizeof *builtin[s] * (size_t)(rr[s].n + 1));
            if (!builtin[s])
                rc = ppb_fail(err, PPB_ENOMEM, "out of memory pairing the runs' cases");
            for (int i = 0; i < rr[s].n && !rc; i++)
                ppb_case_key_builtin(&rr[s].cases[i], builtin[s][i], sizeof builtin[s][i]);
        }
        if (rc)
            break;
    }
    free(builtin[0]);
    free(builtin[1]);
    *n_out = n;
    *across_out = across;
    return rc;
}

/* Where the noise comes from: the plain runs of both runs' suites in both
 * databases timed as the compared runs were (`timing`, check_comparable having
 * refused two runs timed apart), the compared runs left out. */
static int history_sources(ppb_store *sa, int64_t a, ppb_store *s, int64_t b, ppb_run_compare_source src[4],
                           char names[2][128], char timing[32], int *n_src, ppb_err *err)
{
    ppb_run_info *run = malloc(sizeof *run);
    if (!run)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    int rc = ppb_store_get_run(sa, a, run, err);
    if (!rc)
        snprintf(names[0], 128, "%s", run->suite_name);
    if (!rc && !(rc = ppb_store_get_run(s, b, run, err)))
        snprintf(names[1], 128, "%s", run->suite_name);
    free(run);
    if (!rc)
        rc = ppb_store_run_timing(s, b, timing, 32, err);
    if (rc)
        return rc;
    int n = 0, n_names = strcmp(names[0], names[1]) ? 2 : 1;
    for (int d = 0; d < (sa == s ? 1 : 2); d++)
        for (int k = 0; k < n_names; k++)
            src[n++] = (ppb_run_compare_source){d ? sa : s, names[k], {d || sa == s ? a : 0, d ? 0 : b}, timing};
    *n_src = n;
    return PPB_OK;
}

/* Too few runs for any case to be judged: what compare needs and how to get
 * it, once, after the verdict's own reasons. */
static void say_history_short(const ppb_run_compare_report *rep, int n, const ppb_run_compare_rules *rules,
                              const char *suite, long long a, long long b)
{
    if (rep->n_short == 0 || rep->v.n_compared > 0)
        return;
    int most = 0;
    for (int i = 0; i < n; i++)
        if (rep->short_history[i] && rep->n_history[i] > most)
            most = rep->n_history[i];
    fprintf(stderr,
            "ppbench compare: too few runs to judge: compare weighs each case's change against its run-to-run "
            "noise over at least %d earlier plain runs of the suite (runs %lld and %lld not counted), and these "
            "cases have at most %d: run `ppbench run` of suite %s %d more time%s, or lower --min-history (at "
            "least 3)\n",
            rules->min_history, a, b, most, suite, rules->min_history - most,
            rules->min_history - most == 1 ? "" : "s");
}

int cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB, {"threshold", required_argument, NULL, 't'}, {"max-regression", required_argument, NULL, 'r'},
        {"min-gain", required_argument, NULL, 'G'}, {"alpha", required_argument, NULL, 'a'},
        {"allow-different-devices", no_argument, NULL, 'A'}, {"min-history", required_argument, NULL, 'H'},
        PPB_CLI_OPT_BASELINE_DB, PPB_CLI_OPT_DOCS, PPB_CLI_OPT_HELP_END};
    ppb_cli_opts o;
    compare_opts co = {.allow = 0};
    ppb_run_compare_rules_default(&co.rules); /* no gain required: two runs are not a proposal */
    int xrc = ppb_cli_parse("compare", argc, argv, "h", longopts, usage, &o, compare_opt, &co, 2);
    if (xrc >= 0)
        return xrc;
    if (co.bad) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    /* RUN_A from a baseline database (a nightly artifact, say) when given. */
    ppb_cli_stores st;
    if ((xrc = ppb_cli_open_stores("compare", &o, &st)))
        return xrc;
    ppb_store *s = st.s, *sa = st.baseline ? st.baseline : st.s;
    ppb_err err = {{0}};
    int docs_rc = 0;
    int64_t id[2] = {0, 0};
    run_results rr[2];
    memset(rr, 0, sizeof rr);
    ppb_run_compare_case *rcs = NULL;
    ppb_proposal_case *pcs = NULL;
    ppb_run_compare_report rep;
    memset(&rep, 0, sizeof rep);
    ppb_proposal_record rec;
    memset(&rec, 0, sizeof rec);
    int rc = ppb_cli_run_id(sa, argv[optind], &id[0], &err);
    if (!rc)
        rc = ppb_cli_run_id(s, argv[optind + 1], &id[1], &err);
    for (int k = 0; k < 2 && !rc; k++)
        rc = ppb_store_each_result(k ? s : sa, id[k], collect, &rr[k], &err);
    if (!rc)
        rc = check_comparable(sa, id[0], s, id[1], co.allow, &err);
    if (rc)
        goto end;
    rcs = calloc((size_t)rr[0].n + 1, sizeof *rcs);
    pcs = calloc((size_t)rr[0].n + 1, sizeof *pcs);
    if (!rcs || !pcs) {
        rc = ppb_fail(&err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    ppb_run_compare_source src[4];
    char names[2][128], timing[32];
    int n_src = 0, n = 0, across = 0;
    if ((rc = history_sources(sa, id[0], s, id[1], src, names, timing, &n_src, &err)) ||
        (rc = join_cases(rr, src, n_src, &co.rules, rcs, pcs, &n, &across, &err)))
        goto end;
    if (n == 0) {
        rc = ppb_fail(&err, PPB_EINPUT, "runs %lld and %lld have no case in common (by key, or by shape and "
                      "config on two implementations)", (long long)id[0], (long long)id[1]);
        goto end;
    }
    if (across)
        fprintf(stderr,
                "ppbench compare: two implementations: run %lld's cases on %s against run %lld's on %s, each "
                "case's noise pooled over both implementations' own plain runs\n",
                (long long)id[0], impl_of(&rr[0].cases[0]), (long long)id[1], impl_of(&rr[1].cases[0]));
    if (n < rr[0].n || n < rr[1].n)
        fprintf(stderr, "ppbench compare: %d cases in common (run %lld has %d, run %lld has %d)\n",
                n, (long long)id[0], rr[0].n, (long long)id[1], rr[1].n);
    snprintf(rec.name, sizeof rec.name, "compare %s%s%lld %lld", o.baseline_db ? o.baseline_db : "",
             o.baseline_db ? "#" : "", (long long)id[0], (long long)id[1]);
    snprintf(rec.kind, sizeof rec.kind, "compare");
    rec.baseline_run = sa == s ? id[0] : 0; /* a run of another database has no row here */
    rec.candidate_run = id[1];
    if (!(rc = ppb_run_compare_store(s, rcs, n, &co.rules, &rec, pcs, &rep, &err)))
        rc = ppb_print_proposal(&rec, pcs, n, ppb_cli_human(&o), &err);
    if (!rc)
        say_history_short(&rep, n, &co.rules, names[1], (long long)id[0], (long long)id[1]);
    docs_rc = rc ? 0
                 : ppb_cli_verdict_docs("compare", s, &rec, pcs, n, ppb_cli_verdict_exit(rec.verdict), o.json, o.md);
end:
    if (rc)
        fprintf(stderr, "ppbench compare: %s\n", err.msg);
    ppb_run_compare_report_free(&rep);
    for (int i = 0; rcs && i < rr[0].n; i++)
        free((double *)rcs[i].history);
    free(rcs);
    free(pcs);
    free_results(&rr[0]);
    free_results(&rr[1]);
    ppb_cli_close_stores(&st);
    if (rc)
        return ppb_cli_exit(rc);
    return docs_rc ? docs_rc : ppb_cli_verdict_exit(rec.verdict);
}
