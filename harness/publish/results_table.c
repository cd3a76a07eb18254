#include "results_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"
#include "verdict.h"

typedef struct table_ctx {
    FILE *out;
    ppb_status_counts *counts;
} table_ctx;

/* The key minus its kernel name: the columns say what the row is. */
static const char *short_key(const char *key)
{
    const char *space = strchr(key, ' ');
    return space ? space + 1 : key;
}

static int print_row(void *ctx, const ppb_case *c, const ppb_result *r)
{
    table_ctx *t = ctx;
    if (r->status >= 0 && r->status < PPB_STATUS_COUNT)
        t->counts->n[r->status]++;
    t->counts->total++;
    char timing[64] = "-", rate[32] = "-", err[32] = "-";
    if (r->n_samples > 0) {
        snprintf(timing, sizeof timing, "%10.4f ms %s", r->median_ms, r->timing_is_cpu ? "(CPU)" : "");
        if (c->kernel == PPB_PREFIX_PREFILL && r->tflops >= 0.1)
            snprintf(rate, sizeof rate, "%8.2f TFLOP/s", r->tflops);
        else if (c->kernel == PPB_PREFIX_PREFILL) /* CPU backend, tiny cases */
            snprintf(rate, sizeof rate, "%8.2f GFLOP/s", r->tflops * 1e3);
        else
            snprintf(rate, sizeof rate, "%8.1f GB/s", r->gbps);
    }
    if (r->check.checked)
        snprintf(err, sizeof err, "%.2e", r->check.max_abs_err);
    char key[sizeof c->key], reason[sizeof r->reason];
    snprintf(key, sizeof key, "%s", short_key(c->key));
    snprintf(reason, sizeof reason, "%s", r->reason);
    ppb_term_clean(key, 0);
    ppb_term_clean(reason, 0);
    fprintf(t->out, "%-7s %-22s %-18s %-9s %s\n", ppb_status_name(r->status), timing, rate, err, key);
    if (reason[0])
        fprintf(t->out, "        -> %s\n", reason);
    return 0;
}

int ppb_print_results(ppb_store *s, int64_t run_id, FILE *out, ppb_status_counts *counts,
                      ppb_err *err)
{
    ppb_status_counts local;
    if (!counts)
        counts = &local;
    memset(counts, 0, sizeof *counts);
    fprintf(out, "%-7s %-22s %-18s %-9s %s\n", "status", "median", "rate", "max err", "case");
    table_ctx t = {out, counts};
    int rc = ppb_store_each_result(s, run_id, print_row, &t, err);
    if (rc)
        return rc;
    fprintf(out, "%d results:", counts->total);
    for (int i = 0; i < PPB_STATUS_COUNT; i++)
        if (counts->n[i])
            fprintf(out, " %d %s", counts->n[i], ppb_status_name(i));
    fputc('\n', out);
    return 0;
}

static void print_interval(FILE *out, double r, double lo, double hi)
{
    char a[32], b[32], c[32];
    ppb_format_fixed(a, sizeof a, r, 4);
    ppb_format_fixed(b, sizeof b, lo, 4);
    ppb_format_fixed(c, sizeof c, hi, 4);
    if (isnan(r))
        fprintf(out, "%-26s", "-");
    else if (isfinite(lo) && isfinite(hi))
        fprintf(out, "%7s [%7s, %7s]", a, b, c);
    else
        fprintf(out, "%7s [ unbounded       ]", a);
}

static void print_proposal_case(FILE *out, const ppb_proposal_case *c)
{
    fprintf(out, "%-11s %-10s ", c->state, c->cls[0] ? c->cls : "-");
    print_interval(out, c->ratio, c->ratio_lo, c->ratio_hi);
    char sees[16];
    fprintf(out, " %7s %s\n", ppb_format_case_detectable(c, sees, sizeof sees), short_key(c->candidate_key));
}

/* Text from a file or the database, made safe for the terminal (a copy). */
static char *term_text(const char *text, int keep_newlines)
{
    char *copy = strdup(text);
    if (copy)
        ppb_term_clean(copy, keep_newlines);
    return copy;
}

int ppb_print_proposal(const ppb_proposal_record *rec, const ppb_proposal_case *cases, int n_cases, FILE *out,
                       ppb_err *err)
{
    char *name = term_text(rec->name, 0), *kind = term_text(rec->kind, 0), *target = term_text(rec->target, 0),
         *reasons = term_text(rec->reasons, 1), *verdict = term_text(rec->verdict, 0);
    int rc = name && kind && target && reasons && verdict ? PPB_OK : ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (!rc) {
        fprintf(out, "proposal %lld: %s (%s%s%s)\n", (long long)rec->id, name, kind, target[0] ? ", target " : "",
                target);
        fprintf(out, "%-11s %-10s %-26s %7s %s\n", "state", "class", "time ratio cand/base [CI]", "sees>=",
                "candidate case");
        for (int i = 0; i < n_cases; i++)
            print_proposal_case(out, &cases[i]);
        if (!isnan(rec->geomean_ratio)) {
            fprintf(out, "%-22s ", "weighted geometric mean");
            print_interval(out, rec->geomean_ratio, rec->geomean_lo, rec->geomean_hi);
            fputc('\n', out);
        }
        fprintf(out, "%sverdict: %s\n", reasons, verdict);
        char cost[512];
        if (ppb_format_proposal_cost(&rec->cost, cost, sizeof cost))
            fprintf(out, "cost: %s\n", cost);
    }
    free(name);
    free(kind);
    free(target);
    free(reasons);
    free(verdict);
    return rc;
}

void ppb_format_run_time(const ppb_run_time *t, char *buf, size_t len)
{
    double phases = t->open_s + t->generate_s + t->check_s + t->warmup_s + t->sampling_s + t->store_s;
    int n = snprintf(buf, len,
                     "wall %.2f s = device %.2f + inputs %.2f + check %.2f + warm-up %.2f + sampling %.2f + store %.2f"
                     " + other %.2f s; kernels %.2f s",
                     t->wall_s, t->open_s, t->generate_s, t->check_s, t->warmup_s, t->sampling_s, t->store_s,
                     t->wall_s - phases, t->kernel_s);
    if (t->wall_s > 0 && n > 0 && (size_t)n < len) {
        /* The device's start (the CUDA driver and its context: 0.2-0.35 s on the H200 for
         * any program) is a per-process cost the harness cannot shorten; apart, what the
         * harness does per case is a number of its own. */
        char apart[64] = "";
        if (t->open_s > 0 && t->wall_s > t->open_s)
            snprintf(apart, sizeof apart, ", %.0f%% without the device's start",
                     100 * (1 - t->kernel_s / (t->wall_s - t->open_s)));
        snprintf(buf + n, len - (size_t)n, " (overhead %.0f%%%s)", 100 * (1 - t->kernel_s / t->wall_s), apart);
    }
}

double ppb_proposal_case_detectable(const ppb_proposal_case *c)
{
    return ppb_detectable_change(c->ratio, c->ratio_lo, c->ratio_hi, 1 - c->alpha, PPB_DETECT_POWER);
}

const char *ppb_format_case_detectable(const ppb_proposal_case *c, char *buf, size_t len)
{
    double d = ppb_proposal_case_detectable(c);
    if (d > 0)
        snprintf(buf, len, d < 1 ? "%.1f%%" : ">=100%%", 100 * d);
    else
        snprintf(buf, len, "-");
    return buf;
}

int ppb_format_proposal_cost(const ppb_proposal_cost *c, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!(c->wall_ms > 0))
        return 0;
    double phases = c->setup_ms + c->inputs_ms + c->check_ms + c->warmup_ms + c->sampling_ms;
    int n = snprintf(buf, len,
                     "wall %.1f s = setup %.1f + inputs %.1f + check %.1f + warm-up %.1f + sampling %.1f + other %.1f s;"
                     " kernels %.2f s in the samples",
                     c->wall_ms / 1e3, c->setup_ms / 1e3, c->inputs_ms / 1e3, c->check_ms / 1e3, c->warmup_ms / 1e3,
                     c->sampling_ms / 1e3, (c->wall_ms - phases) / 1e3, c->kernel_ms / 1e3);
    /* the fixed design is the yardstick of the sequential one's samples, so it is said beside them */
    if (c->fixed_samples > 0 && c->kernel_ms > 0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n,
                      "; a fixed-sample design at the same resolution: %d samples a side in every pair, kernels %.2f s"
                      " (%.2fx)", c->fixed_samples, c->fixed_kernel_ms / 1e3, c->fixed_kernel_ms / c->kernel_ms);
    /* why the later pairs have no times */
    if (c->settled_by_pair > 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 "; pair %d settled the REJECT alone, so the pairs not timed by then were checked only",
                 c->settled_by_pair);
    return 1;
}
