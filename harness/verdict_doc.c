#include "verdict_doc.h"

#include <math.h>
#include <string.h>

#include "doc_text.h"

static void md_ratio(FILE *out, double r, double lo, double hi)
{
    if (isnan(r))
        fputs("- | -", out);
    else
        fprintf(out, "%.4f | [%.4f, %.4f]", r, lo, hi);
}

static int md_case(void *ctx, const ppb_proposal_case *c)
{
    FILE *out = ctx;
    fprintf(out, "| %s | %s | ", c->state, c->cls[0] ? c->cls : "-");
    md_ratio(out, c->ratio, c->ratio_lo, c->ratio_hi);
    fputs(" | `", out);
    ppb_md_text(out, c->candidate_key);
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
    if (!isnan(rec.geomean_ratio))
        fprintf(out, "Weighted geometric mean of candidate / baseline time: **%.4f** [%.4f, %.4f].\n",
                rec.geomean_ratio, rec.geomean_lo, rec.geomean_hi);
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
