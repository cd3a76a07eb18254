#include "verdict_doc.h"

#include <math.h>
#include <string.h>

#include "doc_text.h"
#include "verdict.h"

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

static int md_case(void *ctx, const ppb_proposal_case *c)
{
    FILE *out = ctx;
    fprintf(out, "| %s | %s | ", c->state, c->cls[0] ? c->cls : "-");
    md_ratio(out, c->ratio, c->ratio_lo, c->ratio_hi);
    fputs(" | `", out);
    ppb_md_code(out, c->candidate_key);
    fputs("` |\n", out);
    return 0;
}

int ppb_verdict_markdown(ppb_store *s, int64_t proposal_id, FILE *out, ppb_err *err)
{
    ppb_proposal_record rec;
    int rc = ppb_store_get_proposal(s, proposal_id, &rec, err);
    if (rc)
        return rc;
    fprintf(out, "### ppbench: %s: ", rec.verdict);
    ppb_md_text(out, rec.name);
    fprintf(out, "\n\nProposal %lld (%s)", (long long)rec.id, rec.kind);
    if (rec.baseline_run)
        fprintf(out, ", baseline run %lld, candidate run %lld", (long long)rec.baseline_run,
                (long long)rec.candidate_run);
    if (rec.target[0])
        fprintf(out, ", target %s", rec.target);
    fputs(".\n", out);
    ppb_run_info run;
    if (rec.candidate_run && ppb_store_get_run(s, rec.candidate_run, &run, err) == PPB_OK) {
        int cpu = strcmp(run.backend, "cpu") == 0;
        fprintf(out, "Measured on the %s backend, ", run.backend);
        ppb_md_text(out, run.device);
        fputs(", commit ", out);
        ppb_md_text(out, run.git_commit[0] ? run.git_commit : "unknown");
        fputs(cpu ? ": **CPU timings**, which say nothing about a GPU.\n" : ".\n", out);
    }
    if (!isnan(rec.geomean_ratio)) {
        char iv[120];
        ppb_format_interval(iv, sizeof iv, rec.geomean_ratio, rec.geomean_lo, rec.geomean_hi);
        fprintf(out, "Weighted geometric mean of candidate / baseline time: %s.\n", iv);
    }
    if (isfinite(rec.detectable) && rec.detectable >= 1)
        fputs("This run could not see even a 2x change of the mean: its interval is too wide to judge any real "
              "effect.\n", out);
    else if (isfinite(rec.detectable))
        fprintf(out, "This run could see a change of the mean of %.1f%% or more (%.0f%% power); smaller effects "
                     "read as no difference.\n", 100 * rec.detectable, 100 * PPB_DETECT_POWER);
    fputs("\n| state | class | time ratio | interval | candidate case |\n| --- | --- | --- | --- | --- |\n", out);
    if ((rc = ppb_store_each_proposal_case(s, proposal_id, md_case, out, err)))
        return rc;
    fputs("\nReasons:\n", out);
    for (char *line = rec.reasons, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!*line)
            continue;
        fputs("- ", out);
        ppb_md_text(out, line);
        fputc('\n', out);
    }
    return PPB_OK;
}

typedef struct run_md {
    FILE *out;
    int counts[8];
    int rows;
    int pass;        /* 0: count; 1: write the rows of cases not timed */
} run_md;

static int md_result(void *ctx, const ppb_case *c, const ppb_result *r)
{
    run_md *m = ctx;
    if (m->pass == 0) {
        if (r->status >= 0 && r->status < 8)
            m->counts[r->status]++;
        return 0;
    }
    if (r->status == PPB_STATUS_OK || r->status == PPB_STATUS_NOISY)
        return 0;
    if (!m->rows++)
        fputs("\n| status | case | reason |\n| --- | --- | --- |\n", m->out);
    fprintf(m->out, "| %s | `", ppb_status_name(r->status));
    ppb_md_code(m->out, c->key);
    fputs("` | ", m->out);
    ppb_md_text(m->out, r->reason);
    fputs(" |\n", m->out);
    return 0;
}

int ppb_run_markdown(ppb_store *s, int64_t run_id, int exit_code, FILE *out, ppb_err *err)
{
    ppb_run_info run;
    run_md m = {.out = out};
    int rc = ppb_store_get_run(s, run_id, &run, err);
    if (!rc)
        rc = ppb_store_each_result(s, run_id, md_result, &m, err);
    if (rc)
        return rc;
    fprintf(out, "### ppbench run %lld: ", (long long)run_id);
    ppb_md_text(out, run.suite_name);
    fprintf(out, " (exit %d)\n\n", exit_code);
    fprintf(out, "%s backend on ", run.backend);
    ppb_md_text(out, run.device);
    fputs(": ", out);
    int first = 1;
    for (int st = 0; st < 8; st++)
        if (m.counts[st]) {
            fprintf(out, "%s%d %s", first ? "" : ", ", m.counts[st], ppb_status_name(st));
            first = 0;
        }
    fputs(".\n", out);
    m.pass = 1;
    return ppb_store_each_result(s, run_id, md_result, &m, err);
}
