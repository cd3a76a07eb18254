#include "trend_doc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"
#include "grow.h"
#include "ppb_error.h"

int ppb_trend_doc_add(ppb_trend_doc *d, const char *key, const ppb_trend_result *res)
{
    if (ppb_grow((void **)&d->rows, &d->cap, d->n, sizeof *d->rows, 64) != PPB_OK)
        return PPB_ENOMEM;
    ppb_trend_row *r = &d->rows[d->n++];
    snprintf(r->key, sizeof r->key, "%s", key);
    r->res = *res;
    if (res->status >= 0 && res->status < PPB_TREND_STATUS_COUNT)
        d->counts[res->status]++;
    return PPB_OK;
}

int ppb_trend_doc_pooled_regressed(const ppb_trend_doc *d)
{
    for (int i = 0; i < d->n_pooled; i++)
        if (d->pooled[i].result.status == PPB_TREND_REGRESSION)
            return 1;
    return 0;
}

const char *ppb_trend_doc_verdict(const ppb_trend_doc *d)
{
    if (d->counts[PPB_TREND_REGRESSION] || ppb_trend_doc_pooled_regressed(d))
        return "REGRESSION";
    return d->n > 0 && d->counts[PPB_TREND_NOT_TIMED] == d->n ? "NOT TIMED" : "no regression";
}

void ppb_trend_doc_free(ppb_trend_doc *d)
{
    free(d->rows);
    d->rows = NULL;
    d->n = d->cap = 0;
}

/* A judged series' fields, after its name: one writer for cases and pooled groups. */
static void result_json(const ppb_trend_result *r, FILE *out)
{
    fprintf(out, ",\"status\":\"%s\",\"change\":", ppb_trend_status_name(r->status));
    ppb_json_number(out, r->rel_change);
    fputs(",\"score\":", out);
    ppb_json_number(out, r->score);
    fputs(",\"reference_ms\":", out);
    ppb_json_number(out, r->reference);
    fprintf(out, ",\"reference_runs\":%d,\"threshold\":", r->n_reference);
    ppb_json_number(out, r->threshold_from ? r->threshold : NAN);
    fputs(",\"threshold_from\":", out);
    if (r->threshold_from)
        ppb_json_string(out, r->threshold_from);
    else
        fputs("null", out);
    fputs(",\"noise\":", out);
    ppb_json_number(out, r->threshold_from ? r->noise : NAN);
    fputs(",\"detectable_effect\":", out); /* the smallest sustained step it could flag */
    ppb_json_number(out, r->threshold_from ? r->detectable : NAN);
    fputs(",\"step_run\":", out);
    if (r->step_run_id[0])
        ppb_json_string(out, r->step_run_id);
    else
        fputs("null", out);
    fputs(",\"reason\":", out);
    ppb_json_string(out, r->reason);
}

void ppb_trend_doc_left_out_note(const ppb_trend_doc *d, char *buf, size_t len)
{
    if (d->history_left_out > 0)
        snprintf(buf, len,
                 "%d runs of the suite left out of the histories: their kernels were timed on other threads per "
                 "launch than the latest run's (cpu_kernel_threads %s), and one thread against every core is not one "
                 "history",
                 d->history_left_out, d->timing[0] ? d->timing : "not recorded");
    else if (len)
        buf[0] = '\0';
}

void ppb_trend_doc_json(const ppb_trend_doc *d, int exit_code, FILE *out)
{
    fprintf(out, "{\"schema\":\"" PPB_TREND_SCHEMA "\",\"command\":\"trend\",\"exit_code\":%d,\"suite\":", exit_code);
    ppb_json_string(out, d->suite);
    /* The one word a CI step reads, as the Markdown headline says it. */
    fprintf(out, ",\"verdict\":\"%s\"", ppb_trend_doc_verdict(d));
    fprintf(out, ",\"latest_run\":%lld,\"window\":%d,\"history_left_out\":%d,\"counts\":{", (long long)d->latest_run,
            d->window, d->history_left_out);
    for (int s = 0; s < PPB_TREND_STATUS_COUNT; s++)
        fprintf(out, "%s\"%s\":%d", s ? "," : "", ppb_trend_status_name(s), d->counts[s]);
    fputs("},\"measured\":", out);
    ppb_measured_json(&d->measured, out);
    fputs(",\"cases\":[", out);
    for (int i = 0; i < d->n; i++) {
        fputs(i ? ",{\"key\":" : "{\"key\":", out);
        ppb_json_string(out, d->rows[i].key);
        result_json(&d->rows[i].res, out);
        fputc('}', out);
    }
    fputs("],\"pooled\":[", out);
    for (int i = 0; i < d->n_pooled; i++) {
        const ppb_trend_pooled *p = &d->pooled[i];
        fputs(i ? ",{\"group\":" : "{\"group\":", out);
        ppb_json_string(out, p->group);
        fprintf(out, ",\"cases\":%d,\"case_noise\":", p->n_cases);
        ppb_json_number(out, p->case_noise);
        result_json(&p->result, out);
        fputc('}', out);
    }
    fputs("]}\n", out);
}

void ppb_trend_doc_markdown(const ppb_trend_doc *d, FILE *out)
{
    fprintf(out, "### ppbench trend: %s: %s\n\nLatest run %lld against its last %d nights: ", d->suite,
            ppb_trend_doc_verdict(d), (long long)d->latest_run, d->window);
    for (int s = 0; s < PPB_TREND_STATUS_COUNT; s++)
        fprintf(out, "%s%d %s", s ? ", " : "", d->counts[s], ppb_trend_status_name(s));
    fputs(".\n", out);
    ppb_measured_markdown(&d->measured, 1, out);
    char note[320];
    ppb_trend_doc_left_out_note(d, note, sizeof note);
    if (note[0]) {
        fputs("\n**Note:** ", out);
        ppb_md_text(out, note);
        fputs(".\n", out);
    }
    if (strcmp(ppb_trend_doc_verdict(d), "NOT TIMED") == 0) {
        fputs("\nThe latest run timed no case: nothing to follow. The first: ", out);
        ppb_md_text(out, d->rows[0].res.reason);
        fputs("\n", out);
    }
    int shown = 0;
    for (int i = 0; i < d->n; i++) {
        const ppb_trend_result *r = &d->rows[i].res;
        if (r->status != PPB_TREND_REGRESSION && r->status != PPB_TREND_IMPROVEMENT && r->status != PPB_TREND_OUTLIER &&
            !(r->status == PPB_TREND_NOT_TIMED && d->counts[PPB_TREND_NOT_TIMED] < d->n))
            continue;
        if (!shown++)
            fputs("\n| status | change | first run of the step | case | why |\n| --- | --- | --- | --- | --- |\n", out);
        fprintf(out, "| %s | %+.1f%% | %s | `", ppb_trend_status_name(r->status),
                isfinite(r->rel_change) ? r->rel_change * 100 : 0.0, r->step_run_id[0] ? r->step_run_id : "-");
        ppb_md_code(out, d->rows[i].key);
        fputs("` | ", out);
        ppb_md_text(out, r->reason);
        fputs(" |\n", out);
    }
    if (d->n_pooled)
        fputs("\nPooled (each kernel's cases night by night, each against its own level):\n\n"
              "| status | change | sees >= | first run of the step | kernel | why |\n"
              "| --- | --- | --- | --- | --- | --- |\n", out);
    for (int i = 0; i < d->n_pooled; i++) {
        const ppb_trend_result *r = &d->pooled[i].result;
        fprintf(out, "| %s | %+.1f%% | ", ppb_trend_status_name(r->status),
                isfinite(r->rel_change) ? r->rel_change * 100 : 0.0);
        if (r->threshold_from)
            fprintf(out, "%.1f%%", 100 * r->detectable);
        else
            fputs("-", out);
        fprintf(out, " | %s | %s, %d cases | ", r->step_run_id[0] ? r->step_run_id : "-", d->pooled[i].group,
                d->pooled[i].n_cases);
        ppb_md_text(out, r->reason);
        fputs(" |\n", out);
    }
}
