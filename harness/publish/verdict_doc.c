#include "verdict_doc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"
#include "grow.h"
#include "measured.h"
#include "results_table.h"
#include "run_doc.h"
#include "verdict.h"

/* ---- JSON ----------------------------------------------------------------------- */

static void json_run_id(FILE *out, int64_t id)
{
    if (id > 0)
        fprintf(out, "%lld", (long long)id);
    else
        fputs("null", out); /* a proposal that ran nothing, a run of another database */
}

/* One member of an object: `first` (what comes before it: "," or "{"), its name, its value. */
static void json_member_number(FILE *out, const char *first, const char *name, double v)
{
    fprintf(out, "%s\"%s\":", first, name);
    ppb_json_number(out, v);
}

static void json_member_text(FILE *out, const char *first, const char *name, const char *v)
{
    fprintf(out, "%s\"%s\":", first, name);
    ppb_json_string(out, v);
}

/* What was measured, from the candidate's run, so a verdict from a CPU job never
 * reads like one from a GPU; null when the verdict has no run here. */
static int measured_json(ppb_store *s, int64_t run_id, FILE *out, ppb_err *err)
{
    ppb_run_info *run = run_id > 0 ? malloc(sizeof *run) : NULL;
    if (run_id > 0 && !run)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    int rc = run ? ppb_store_get_run(s, run_id, run, err) : PPB_EINPUT;
    if (rc) {
        free(run);
        if (rc != PPB_EINPUT)
            return rc;
        fputs("null", out);
        return PPB_OK;
    }
    json_member_text(out, "{", "backend", run->backend);
    json_member_text(out, ",", "device", run->device);
    fprintf(out, ",\"cpu_timings\":%s", strcmp(run->backend, "cpu") == 0 ? "true" : "false");
    json_member_text(out, ",", "host", run->host);
    json_member_text(out, ",", "git_commit", run->git_commit);
    json_member_text(out, ",", "suite", run->suite_name);
    fputs(",\"device_details\":", out);
    rc = ppb_run_device_json(s, run, out, err);
    /* the machine's load as the candidate run ended: above its cores, timings were disturbed */
    ppb_measured m;
    if (!rc && !(rc = ppb_measured_read(s, run_id, &m, err))) {
        fputc(',', out);
        ppb_measured_json_load(&m, out);
    }
    fputc('}', out);
    free(run);
    return rc;
}

/* The facts (env "after.impl.NAME.*": version, source, path, checksum) a run
 * stored of the implementations its cases ran (a case's impl is NAME or
 * "plugin:NAME"), keyed "impl.NAME.*". One process runs both sides of a
 * proposal, so its environment names the other side's too. */
typedef struct impl_fact {
    char *key, *value;
} impl_fact;

typedef struct impl_facts {
    char (*names)[PPB_FIELD_TEXT_MAX];   /* the implementations' library names */
    int n_names, cap_names;
    impl_fact *facts;
    int n, cap;
} impl_facts;

static int add_impl_name(void *ctx, const char *impl)
{
    impl_facts *f = ctx;
    if (ppb_grow((void **)&f->names, &f->cap_names, f->n_names, sizeof *f->names, 4))
        return PPB_ENOMEM;
    snprintf(f->names[f->n_names++], sizeof *f->names, "%s", strncmp(impl, "plugin:", 7) == 0 ? impl + 7 : impl);
    return 0;
}

static int add_impl_fact(void *ctx, const char *key, const char *value)
{
    static const char prefix[] = "after.impl.";
    impl_facts *f = ctx;
    if (strncmp(key, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *rest = key + sizeof prefix - 1;
    int ran = 0;
    for (int i = 0; i < f->n_names && !ran; i++) {
        size_t len = strlen(f->names[i]);
        ran = strncmp(rest, f->names[i], len) == 0 && rest[len] == '.';
    }
    if (!ran)
        return 0;
    if (ppb_grow((void **)&f->facts, &f->cap, f->n, sizeof *f->facts, 8))
        return PPB_ENOMEM;
    impl_fact *fact = &f->facts[f->n++];
    fact->key = strdup(key + sizeof "after." - 1);
    fact->value = strdup(value);
    return fact->key && fact->value ? 0 : PPB_ENOMEM;
}

static int compare_facts(const void *a, const void *b)
{
    return strcmp(((const impl_fact *)a)->key, ((const impl_fact *)b)->key);
}

/* A JSON object, {} for no run (a proposal that ran nothing). */
static int impl_facts_json(ppb_store *s, int64_t run_id, FILE *out, ppb_err *err)
{
    impl_facts f;
    memset(&f, 0, sizeof f);
    int rc = run_id > 0 ? ppb_store_each_run_impl(s, run_id, add_impl_name, &f, err) : PPB_OK;
    if (!rc && run_id > 0)
        rc = ppb_store_each_env(s, run_id, add_impl_fact, &f, err);
    if (rc == PPB_ENOMEM)
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (!rc) {
        /* in key order: where a fact stands does not depend on when it was stored */
        if (f.n)
            qsort(f.facts, (size_t)f.n, sizeof *f.facts, compare_facts);
        fputc('{', out);
        for (int i = 0; i < f.n; i++) {
            fputs(i ? "," : "", out);
            ppb_json_string(out, f.facts[i].key);
            fputc(':', out);
            ppb_json_string(out, f.facts[i].value);
        }
        fputc('}', out);
    }
    for (int i = 0; i < f.n; i++) {
        free(f.facts[i].key);
        free(f.facts[i].value);
    }
    free(f.facts);
    free(f.names);
    return rc;
}


/* Each stored line of the reasons, in order, the empty ones left out. */
static int reasons_json(const char *reasons, FILE *out, ppb_err *err)
{
    char *copy = strdup(reasons);
    if (!copy)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    int n = 0;
    fputc('[', out);
    for (char *line = copy, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!*line)
            continue;
        fputs(n++ ? "," : "", out);
        ppb_json_string(out, line);
    }
    fputc(']', out);
    free(copy);
    return PPB_OK;
}

int ppb_verdict_json(ppb_store *s, const ppb_proposal_record *rec, const ppb_proposal_case *cases, int n_cases,
                     const char *command, int exit_code, FILE *out, ppb_err *err)
{
    fputs("{\"schema\":\"" PPB_VERDICT_SCHEMA "\",\"command\":", out);
    ppb_json_string(out, command);
    fprintf(out, ",\"exit_code\":%d,\"proposal\":{\"id\":%lld", exit_code, (long long)rec->id);
    const struct {
        const char *name, *value;
    } text[] = {{"name", rec->name}, {"path", rec->path}, {"kind", rec->kind}, {"target", rec->target},
                {"created_at", rec->created_at}};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++)
        json_member_text(out, ",", text[i].name, text[i].value);
    json_member_text(out, "},", "verdict", rec->verdict);
    fputs(",\"baseline_run\":", out);
    json_run_id(out, rec->baseline_run);
    fputs(",\"candidate_run\":", out);
    json_run_id(out, rec->candidate_run);
    fputs(",\"measured\":", out);
    int rc = measured_json(s, rec->candidate_run, out, err);
    if (rc)
        return rc;
    fputs(",\"implementations\":{\"baseline\":", out);
    if ((rc = impl_facts_json(s, rec->baseline_run, out, err)))
        return rc;
    fputs(",\"candidate\":", out);
    if ((rc = impl_facts_json(s, rec->candidate_run, out, err)))
        return rc;
    json_member_number(out, "},\"geomean\":{", "ratio", rec->geomean_ratio);
    json_member_number(out, ",", "lo", rec->geomean_lo);
    json_member_number(out, ",", "hi", rec->geomean_hi);
    /* what it was judged against; null when not stored (before schema 12, kv_capacity) */
    json_member_number(out, "},\"rules\":{", "min_gain", rec->min_gain);
    json_member_number(out, ",", "max_regression", rec->max_regression);
    json_member_number(out, ",", "threshold", rec->threshold);
    /* the smallest change of the mean this run could see (80% power), a fraction */
    json_member_number(out, "},", "detectable_effect", rec->detectable);
    /* what the verdict cost (store.h ppb_proposal_cost); null when not measured */
    const ppb_proposal_cost *cost = &rec->cost;
    if (cost->wall_ms > 0) {
        json_member_number(out, ",\"cost\":{", "wall_ms", cost->wall_ms);
        const struct {
            const char *name;
            double v;
        } part[] = {{"setup_ms", cost->setup_ms},     {"inputs_ms", cost->inputs_ms},
                    {"check_ms", cost->check_ms},     {"warmup_ms", cost->warmup_ms},
                    {"sampling_ms", cost->sampling_ms}, {"kernel_ms", cost->kernel_ms},
                    {"fixed_kernel_ms", cost->fixed_kernel_ms}};
        for (size_t i = 0; i < sizeof part / sizeof *part; i++)
            json_member_number(out, ",", part[i].name, part[i].v);
        fprintf(out, ",\"fixed_samples\":%d", cost->fixed_samples);
        /* 0: none; else the pair (1-based) after which the pairs were checked, not timed */
        fprintf(out, ",\"settled_by_pair\":%d}", cost->settled_by_pair);
    } else
        fputs(",\"cost\":null", out);
    fputs(",\"reasons\":", out);
    if ((rc = reasons_json(rec->reasons, out, err)))
        return rc;
    fputs(",\"cases\":[", out);
    for (int i = 0; i < n_cases; i++) {
        const ppb_proposal_case *c = &cases[i];
        json_member_text(out, i ? ",{" : "{", "baseline_key", c->baseline_key);
        json_member_text(out, ",", "candidate_key", c->candidate_key);
        json_member_number(out, ",", "weight", c->weight);
        json_member_text(out, ",", "state", c->state);
        json_member_text(out, ",", "class", c->cls);
        json_member_number(out, ",", "ratio", c->ratio);
        json_member_number(out, ",", "ratio_lo", c->ratio_lo);
        json_member_number(out, ",", "ratio_hi", c->ratio_hi);
        json_member_number(out, ",", "p_holm", c->p_holm);
        double d = ppb_proposal_case_detectable(c); /* the case's "could see" */
        json_member_number(out, ",", "detectable_effect", d > 0 ? d : NAN);
        fputc('}', out);
    }
    fputs("]}\n", out);
    return PPB_OK;
}

/* ---- Markdown ------------------------------------------------------------------- */

static void md_ratio(FILE *out, double r, double lo, double hi)
{
    if (isnan(r))
        fputs("- | -", out);
    else {
        char iv[120];
        ppb_format_interval(iv, sizeof iv, r, lo, hi);
        char *gap = strchr(iv, ' '); /* "R [LO, HI]" -> "R | [LO, HI]" */
        fprintf(out, "%.*s | %s", (int)(gap - iv), iv, gap + 1);
    }
}

static void md_case(FILE *out, const ppb_proposal_case *c)
{
    fprintf(out, "| %s | %s | ", c->state, c->cls[0] ? c->cls : "-");
    md_ratio(out, c->ratio, c->ratio_lo, c->ratio_hi);
    char sees[16];
    fprintf(out, " | %s | `", ppb_format_case_detectable(c, sees, sizeof sees));
    ppb_md_code(out, c->candidate_key);
    fputs("` |\n", out);
}

int ppb_verdict_markdown(ppb_store *s, const ppb_proposal_record *rec, const ppb_proposal_case *cases, int n_cases,
                         FILE *out, ppb_err *err)
{
    char *reasons = strdup(rec->reasons);
    ppb_run_info *run = malloc(sizeof *run);
    if (!reasons || !run) {
        free(reasons);
        free(run);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    fprintf(out, "### ppbench: %s: ", rec->verdict);
    ppb_md_text(out, rec->name);
    fprintf(out, "\n\nProposal %lld (%s)", (long long)rec->id, rec->kind);
    if (rec->baseline_run)
        fprintf(out, ", baseline run %lld, candidate run %lld", (long long)rec->baseline_run,
                (long long)rec->candidate_run);
    if (rec->target[0])
        fprintf(out, ", target %s", rec->target);
    fputs(".\n", out);
    ppb_measured m;
    int measured = 0;
    if (rec->candidate_run && ppb_store_get_run(s, rec->candidate_run, run, err) == PPB_OK) {
        int cpu = strcmp(run->backend, "cpu") == 0;
        fprintf(out, "Measured on the %s backend, ", run->backend);
        ppb_md_text(out, run->device);
        fputs(", commit ", out);
        ppb_md_text(out, run->git_commit[0] ? run->git_commit : "unknown");
        fputs(cpu ? ": **CPU timings**, which say nothing about a GPU.\n" : ".\n", out);
        measured = ppb_measured_read(s, rec->candidate_run, &m, err) == PPB_OK;
    }
    if (!isnan(rec->geomean_ratio)) {
        char iv[120];
        ppb_format_interval(iv, sizeof iv, rec->geomean_ratio, rec->geomean_lo, rec->geomean_hi);
        fprintf(out, "Weighted geometric mean of candidate / baseline time: %s.\n", iv);
    }
    if (isfinite(rec->detectable) && rec->detectable >= 1)
        fputs("This run could not see even a 2x change of the mean: its interval is too wide to judge any real "
              "effect.\n", out);
    else if (isfinite(rec->detectable))
        fprintf(out, "This run could see a change of the mean of %.1f%% or more (%.0f%% power); smaller effects "
                     "read as no difference.\n", 100 * rec->detectable, 100 * PPB_DETECT_POWER);
    char cost[512];
    if (ppb_format_proposal_cost(&rec->cost, cost, sizeof cost))
        fprintf(out, "Cost: %s.\n", cost);
    if (measured)
        ppb_measured_markdown(&m, 0, out); /* CPU timings are said above, their own way */
    fputs("\n| state | class | time ratio | interval | could see | candidate case |\n"
          "| --- | --- | --- | --- | --- | --- |\n", out);
    for (int i = 0; i < n_cases; i++)
        md_case(out, &cases[i]);
    fputs("\nReasons:\n", out);
    for (char *line = reasons, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!*line)
            continue;
        fputs("- ", out);
        ppb_md_text(out, line);
        fputc('\n', out);
    }
    free(reasons);
    free(run);
    return PPB_OK;
}
