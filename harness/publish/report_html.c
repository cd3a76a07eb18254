/* The report page: one HTML file, CSS inline, charts as inline SVG, nothing
 * loaded from anywhere (a Content-Security-Policy says so to the browser as
 * well). Every string from the database, a suite or a label goes through
 * html.h's escaping. Layout: docs/REPORTS.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"
#include "files.h"
#include "html.h"
#include "report_assets.h"
#include "report_html.h"
#include "results_table.h"
#include "verdict.h"

typedef struct section {
    char id[64];
    char title[160];
    char link[32];      /* its name in the banner */
} section;

#define MAX_SECTIONS 16

typedef struct page {
    ppb_html h;
    const rp_report *r;
    section sections[MAX_SECTIONS];
    int n_sections;
} page;

static void add_section(page *p, const char *id, const char *title, const char *link)
{
    if (p->n_sections >= MAX_SECTIONS)
        return;
    section *s = &p->sections[p->n_sections++];
    snprintf(s->id, sizeof s->id, "%s", id);
    snprintf(s->title, sizeof s->title, "%s", title);
    snprintf(s->link, sizeof s->link, "%s", link);
}

static void section_start(page *p, const char *id, const char *title)
{
    ppb_html *h = &p->h;
    ppb_html_markup(h, "\n<section");
    ppb_html_attr(h, "id", id);
    ppb_html_markup(h, "><h2>");
    ppb_html_text(h, title);
    ppb_html_markup(h, "</h2>\n");
}

static void section_end(page *p)
{
    ppb_html_markup(&p->h, "</section>\n");
}

/* A section that opens with a note paragraph, as most do: the caller writes
 * the note's text and closes it with "</p>". */
static void note_section_start(page *p, const char *id, const char *title)
{
    section_start(p, id, title);
    ppb_html_markup(&p->h, "<p class=\"note\">");
}

/* The end of a section whose last part is a table. */
static void table_section_end(page *p)
{
    ppb_html_markup(&p->h, "</tbody></table></div>\n");
    section_end(p);
}

/* A note paragraph of plain text ("No night to show."). */
static void note(ppb_html *h, const char *text)
{
    ppb_html_markup(h, "<p class=\"note\">");
    ppb_html_text(h, text);
    ppb_html_markup(h, "</p>\n");
}

/* ---- cells ----------------------------------------------------------------------- */

static void td_num(ppb_html *h, const char *fmt, double v)
{
    ppb_html_markup(h, "<td class=\"num\">");
    if (isfinite(v))
        ppb_html_textf(h, fmt, v);
    else
        ppb_html_text(h, "-");
    ppb_html_markup(h, "</td>");
}

static void td_text(ppb_html *h, const char *text)
{
    ppb_html_element(h, "td", text && text[0] ? text : "-");
}

/* A status badge: the class is a slug of our own status word. */
static void badge(ppb_html *h, const char *word)
{
    char slug[64], cls[80];
    ppb_html_slug(word && word[0] ? word : "none", slug, sizeof slug);
    snprintf(cls, sizeof cls, "st st-%s", slug);
    ppb_html_markup(h, "<span");
    ppb_html_attr(h, "class", cls);
    ppb_html_markup(h, ">");
    ppb_html_text(h, word && word[0] ? word : "-");
    ppb_html_markup(h, "</span>");
}

static void td_badge(ppb_html *h, const char *word)
{
    ppb_html_markup(h, "<td>");
    badge(h, word);
    ppb_html_markup(h, "</td>");
}

static void case_link(ppb_html *h, int number)
{
    ppb_html_markup(h, "<a");
    ppb_html_attrf(h, "href", "#case-%d", number);
    ppb_html_markup(h, ">");
    ppb_html_textf(h, "#%d", number);
    ppb_html_markup(h, "</a>");
}

/* A reason cell: free text, wrapped by the page's CSS. */
static void td_reason(ppb_html *h, const char *text)
{
    ppb_html_markup(h, "<td class=\"reason\">");
    ppb_html_text(h, text);
    ppb_html_markup(h, "</td>");
}

/* A case key cell, in code type (the tables' last column). */
static void td_key(ppb_html *h, const char *key)
{
    ppb_html_markup(h, "<td><code class=\"key\">");
    ppb_html_text(h, key);
    ppb_html_markup(h, "</code></td>");
}

/* The start of a trend table's row: its class, the case key the page's
 * script filters on, and the row number linked to the case. */
static void case_row_start(ppb_html *h, const char *cls, const char *key, int number)
{
    ppb_html_markup(h, "<tr");
    ppb_html_attr(h, "class", cls);
    ppb_html_attr(h, "data-case-key", key);
    ppb_html_markup(h, "><td class=\"num\">");
    case_link(h, number);
    ppb_html_markup(h, "</td>");
}

static void lines_as_list(ppb_html *h, const char *text, int first_is_lead)
{
    ppb_html_markup(h, "<ul class=\"reasons\">\n");
    const char *p = text;
    int first = 1;
    while (*p) {
        size_t n = strcspn(p, "\n");
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        if (line[0]) {
            if (first && first_is_lead)
                ppb_html_markup(h, "<li class=\"lead\">");
            else
                ppb_html_markup(h, "<li>");
            ppb_html_text(h, line);
            ppb_html_markup(h, "</li>\n");
            first = 0;
        }
        p += n;
        if (*p == '\n')
            p++;
    }
    ppb_html_markup(h, "</ul>\n");
}

/* ---- charts ----------------------------------------------------------------------- */

static void chart_figure(page *p, const rp_chart *c, int wide)
{
    ppb_html *h = &p->h;
    char id[128];
    snprintf(id, sizeof id, "chart-%s", c->name);
    ppb_html_markup(h, "<figure");
    ppb_html_attr(h, "class", wide ? "chart wide" : "chart");
    ppb_html_attr(h, "id", id);
    ppb_html_attr(h, "data-chart", c->name);
    ppb_html_markup(h, ">\n");
    if (c->svg) {
        ppb_html_svg(h, c->svg);
    } else {
        ppb_html_markup(h, "<div class=\"chart-missing\">");
        ppb_html_text(h, "chart not drawn: ");
        /* Without gnuplot the notice at the top says why, once. */
        ppb_html_text(h, !p->r->gp.available ? "no gnuplot (see the top of the page)"
                         : c->error[0]       ? c->error
                                             : "unknown reason");
        ppb_html_markup(h, "</div>");
    }
    ppb_html_markup(h, "\n<figcaption><b>");
    ppb_html_text(h, c->title);
    ppb_html_markup(h, "</b>");
    if (c->note[0]) {
        ppb_html_text(h, ". ");
        ppb_html_text(h, c->note);
    }
    ppb_html_text(h, ". Files: ");
    static const char *const exts[] = {"png", "gp", "dat"};
    for (int i = c->svg ? 0 : 1; i < 3; i++) {   /* no PNG when nothing was drawn */
        char href[160];
        snprintf(href, sizeof href, "charts/%s.%s", c->name, exts[i]);
        ppb_html_markup(h, "<a");
        ppb_html_attr(h, "href", href);
        ppb_html_markup(h, ">");
        ppb_html_text(h, exts[i]);
        ppb_html_markup(h, "</a> ");
    }
    ppb_html_markup(h, "</figcaption></figure>\n");
}

/* Every chart whose name starts with `prefix`, in a grid. Returns how many. */
static int charts_with_prefix(page *p, const char *prefix, int wide)
{
    int n = 0;
    for (int i = 0; i < p->r->n_charts; i++)
        if (strncmp(p->r->charts[i].name, prefix, strlen(prefix)) == 0) {
            if (!n)
                ppb_html_markup(&p->h, "<div class=\"charts\">\n");
            chart_figure(p, &p->r->charts[i], wide);
            n++;
        }
    if (n)
        ppb_html_markup(&p->h, "</div>\n");
    return n;
}

static void gnuplot_notice(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    if (r->gp.available || r->n_charts == 0)
        return;
    ppb_html_markup(h, "<p class=\"notice\" id=\"no-gnuplot\"><b>");
    ppb_html_text(h, "No charts: ");
    ppb_html_markup(h, "</b>");
    ppb_html_text(h, r->gp.why);
    ppb_html_text(h, ". Every table below is complete. Each chart's .gp and .dat files are in the "
                     "charts folder: install gnuplot (Debian/Ubuntu: apt-get install gnuplot-nox) "
                     "and run the command at the end of this page again, or render one chart with "
                     "`gnuplot -d NAME.gp` in that folder.");
    ppb_html_markup(h, "</p>\n");
}

/* ---- results tables ------------------------------------------------------------------- */

static void rate_cell(ppb_html *h, const rp_item *it)
{
    if (!rp_item_timed(it)) {
        td_text(h, NULL);
        return;
    }
    ppb_html_markup(h, "<td class=\"num\">");
    if (it->c.kernel == PPB_PREFIX_PREFILL && it->r.tflops >= 0.1)
        ppb_html_textf(h, "%.2f TFLOP/s", it->r.tflops);
    else if (it->c.kernel == PPB_PREFIX_PREFILL)
        ppb_html_textf(h, "%.3g GFLOP/s", it->r.tflops * 1e3);
    else
        ppb_html_textf(h, "%.3g GB/s", it->r.gbps);
    ppb_html_markup(h, "</td>");
}

static double err_ratio(const rp_item *it)
{
    const ppb_check_result *k = &it->r.check;
    return k->checked && k->atol > 0 ? k->max_abs_err / k->atol : NAN;
}

static void results_table(page *p, int kernel)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    int proposal = r->kind == PPB_REPORT_PROPOSAL;
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"results\"");
    ppb_html_attr(h, "data-kernel", ppb_kernel_name((ppb_kernel_kind)kernel));
    ppb_html_markup(h, "><thead><tr><th class=\"num\">#</th>");
    if (proposal)
        ppb_html_markup(h, "<th>side</th>");
    ppb_html_markup(h, "<th>status</th><th>config</th><th>shape</th>"
                       "<th class=\"num\">median ms</th>"
                       "<th class=\"num\">q1 to q3 ms</th><th class=\"num\">samples</th>"
                       "<th class=\"num\">rate</th><th class=\"num\">max err / atol</th>"
                       "<th>reason</th><th>case key</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel)
            continue;
        ppb_html_markup(h, "<tr class=\"case\"");
        ppb_html_attrf(h, "id", "case-%d", it->number);
        ppb_html_attr(h, "data-case-key", it->c.key);
        ppb_html_attr(h, "data-status", ppb_status_name(it->r.status));
        if (proposal)
            ppb_html_attr(h, "data-side", it->side == RP_SIDE_BASELINE ? "baseline" : "candidate");
        ppb_html_markup(h, "><td class=\"num\">");
        ppb_html_textf(h, "%d", it->number);
        ppb_html_markup(h, "</td>");
        if (proposal)
            td_text(h, it->side == RP_SIDE_BASELINE ? "baseline" : "candidate");
        td_badge(h, ppb_status_name(it->r.status));
        td_text(h, it->series);
        td_text(h, it->shape);
        int timed = rp_item_timed(it);
        td_num(h, "%.4g", timed ? it->r.median_ms : NAN);
        ppb_html_markup(h, "<td class=\"num\">");
        if (timed)
            ppb_html_textf(h, "%.4g to %.4g", it->r.q1_ms, it->r.q3_ms);
        else
            ppb_html_text(h, "-");
        ppb_html_markup(h, "</td><td class=\"num\">");
        ppb_html_textf(h, "%d", it->r.n_samples);
        ppb_html_markup(h, "</td>");
        rate_cell(h, it);
        td_num(h, "%.3g", err_ratio(it));
        td_reason(h, it->r.reason);
        td_key(h, it->c.key);
        ppb_html_markup(h, "</tr>\n");
    }
    ppb_html_markup(h, "</tbody></table></div>\n");
}

static void kernel_sections(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    unsigned kernels = rp_kernels(r);
    for (int k = 0; k < 2; k++) {
        if (!(kernels & (1u << k)))
            continue;
        const char *slug = k == PPB_PREFIX_PREFILL ? "prefill" : "decode";
        char id[64], prefix[64];
        snprintf(id, sizeof id, "kernel-%s", slug);
        note_section_start(p, id, ppb_kernel_name((ppb_kernel_kind)k));
        ppb_html_text(h, "Same for every case (");
        ppb_html_text(h, r->fixed);
        ppb_html_text(h, "). Labels name only the fields that vary.");
        ppb_html_markup(h, "</p>\n<h3>");
        ppb_html_textf(h, "Time and %s against sequence length",
                       k == PPB_PREFIX_PREFILL ? "FLOP/s" : "GB/s");
        ppb_html_markup(h, "</h3>\n");
        snprintf(prefix, sizeof prefix, "%s-time-", slug);
        int any = 0;
        /* time and rate of one shape group side by side */
        for (int i = 0; i < r->n_charts; i++) {
            const rp_chart *c = &r->charts[i];
            if (strncmp(c->name, prefix, strlen(prefix)) != 0)
                continue;
            if (!any)
                ppb_html_markup(h, "<div class=\"charts\">\n");
            any = 1;
            chart_figure(p, c, 0);
            char rate_name[96];
            snprintf(rate_name, sizeof rate_name, "%s-rate-%s", slug, c->name + strlen(prefix));
            const rp_chart *rate = rp_chart_named(r, rate_name);
            if (rate)
                chart_figure(p, rate, 0);
        }
        if (any)
            ppb_html_markup(h, "</div>\n");
        else {
            note(h, "No shape group has timed cases at two or more sequence lengths, so "
                    "there is no line to draw; the heatmap and the table below have "
                    "every time.");
        }

        ppb_html_markup(h, "<h3>Configs relative to the best, per shape</h3>\n");
        snprintf(prefix, sizeof prefix, "%s-heatmap", slug);
        if (!charts_with_prefix(p, prefix, 1)) {
            note(h, "One config (or no timed case): there is nothing to rank.");
        }

        ppb_html_markup(h, "<h3>Roofline</h3>\n<p class=\"note\">");
        ppb_html_text(h, r->ceilings_note);
        ppb_html_markup(h, "</p>\n");
        snprintf(prefix, sizeof prefix, "%s-roofline", slug);
        if (!charts_with_prefix(p, prefix, 0)) {
            note(h, "No timed case: nothing to place.");
        }

        ppb_html_markup(h, "<h3>Results</h3>\n");
        results_table(p, k);
        section_end(p);
    }
}

/* ---- correctness, feasibility ---------------------------------------------------------- */

static void correctness_section(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    section_start(p, "correctness", "Correctness");
    note(h, "Each output is checked against a float64 CPU reference: an element passes "
            "when |out - ref| <= atol + rtol x |ref|; NaN/Inf and unwritten elements "
            "fail, and so does a kernel that writes past its buffers (overrun).");
    charts_with_prefix(p, "correctness", 1);
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"correctness\"><thead><tr>"
                       "<th class=\"num\">#</th><th>check</th><th class=\"num\">max abs err</th>"
                       "<th class=\"num\">atol</th><th class=\"num\">rtol</th>"
                       "<th class=\"num\">max err / atol</th><th class=\"num\">rel L2 err</th>"
                       "<th class=\"num\">rows checked</th><th class=\"num\">non-finite</th>"
                       "<th class=\"num\">unwritten</th><th>overrun</th><th>config</th>"
                       "<th>shape</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        const ppb_check_result *k = &it->r.check;
        ppb_html_markup(h, "<tr><td class=\"num\">");
        case_link(h, it->number);
        ppb_html_markup(h, "</td>");
        if (!k->checked) {
            td_badge(h, "none");
            ppb_html_markup(h, "<td colspan=\"9\" class=\"muted\">");
            ppb_html_text(h, "not checked");
            ppb_html_markup(h, "</td>");
        } else {
            td_badge(h, k->pass ? "pass" : "fail");
            td_num(h, "%.3g", k->max_abs_err);
            td_num(h, "%.3g", k->atol);
            td_num(h, "%.3g", k->rtol);
            td_num(h, "%.3g", err_ratio(it));
            td_num(h, "%.3g", k->rel_l2_err);
            ppb_html_markup(h, "<td class=\"num\">");
            ppb_html_textf(h, "%ld of %ld", k->rows_checked, k->rows_total);
            ppb_html_markup(h, "</td>");
            td_num(h, "%.0f", (double)k->nonfinite);
            td_num(h, "%.0f", (double)k->unwritten);
            if (it->r.overrun.detected) {
                ppb_html_markup(h, "<td>");
                badge(h, "fail");
                ppb_html_textf(h, " %lld B past tmp_out, %lld B past exp_sums, %lld B past "
                                  "max_logits",
                               it->r.overrun.tmp_out_bytes, it->r.overrun.exp_sums_bytes,
                               it->r.overrun.max_logits_bytes);
                ppb_html_markup(h, "</td>");
            } else {
                td_text(h, "none");
            }
        }
        td_text(h, it->series);
        td_text(h, it->shape);
        ppb_html_markup(h, "</tr>\n");
    }
    table_section_end(p);
}

static void feasibility_section(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    note_section_start(p, "feasibility", "Target feasibility");
    if (r->have_target) {
        ppb_html_text(h, "Each config as the run judged it against the target profile ");
        ppb_html_text(h, r->target_note);
        ppb_html_text(h, " when its cases ran: what it needs (shared memory, threads, registers; from the "
                         "compiled kernel when its resources were measured, else the formula), against "
                         "what the target offers, with the arithmetic, and which disputed "
                         "figures of the profile would flip the answer.");
    } else {
        ppb_html_text(h, r->target_note);
    }
    ppb_html_markup(h, "</p>\n");
    if (!r->have_target) {
        section_end(p);
        return;
    }
    if (r->target_description[0]) {
        ppb_html_markup(h, "<p class=\"muted\">");
        ppb_html_text(h, r->target_description);
        ppb_html_markup(h, "</p>\n");
    }
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"feasibility\"><thead><tr>"
                       "<th>kernel</th><th>config</th><th>on the target</th>"
                       "<th class=\"num\">blocks/SM</th><th>limited by</th><th class=\"num\">cases"
                       "</th><th>shapes</th><th>arithmetic</th><th>what would flip it</th></tr>"
                       "</thead>\n<tbody>\n");
    for (int i = 0; i < r->n_feas; i++) {
        const rp_feasibility *f = &r->feas[i];
        ppb_html_markup(h, "<tr>");
        td_text(h, ppb_kernel_name((ppb_kernel_kind)f->kernel));
        td_text(h, f->series);
        td_badge(h, f->feasible ? "feasible" : "infeasible");
        td_num(h, "%.0f", f->feasible && f->blocks_per_sm > 0 ? (double)f->blocks_per_sm : NAN);
        td_text(h, f->feasible ? f->limiter : "");
        td_num(h, "%.0f", (double)f->n_cases);
        ppb_html_markup(h, "<td class=\"shapes\">");
        ppb_html_text(h, f->shapes);
        if (f->n_cases > 4)
            ppb_html_textf(h, "; and %d more", f->n_cases - 4);
        ppb_html_markup(h, "</td><td class=\"reason\">");
        ppb_html_text(h, f->reason);
        ppb_html_markup(h, "</td><td class=\"reason\">");
        ppb_html_text(h, f->flips[0] ? f->flips : "-");
        ppb_html_markup(h, "</td></tr>\n");
    }
    table_section_end(p);
}

/* ---- proposal ------------------------------------------------------------------------ */

/* The change a proposal judges, from its first pair of case keys: each field
 * whose value differs, "name: baseline -> candidate" (the shape is the same on
 * both sides, so only the configuration shows). */
static void describe_change(const char *base_key, const char *cand_key, char *buf, size_t len)
{
    buf[0] = '\0';
    char b[512], c[512];
    snprintf(b, sizeof b, "%s", base_key);
    snprintf(c, sizeof c, "%s", cand_key);
    char *save_c = NULL;
    for (char *tok = strtok_r(c, " ", &save_c); tok; tok = strtok_r(NULL, " ", &save_c)) {
        size_t name_len = strcspn(tok, "=");
        if (!tok[name_len])
            continue;
        const char *old = "(default)";
        char copy[512], *save_b = NULL;
        snprintf(copy, sizeof copy, "%s", b);
        for (char *t = strtok_r(copy, " ", &save_b); t; t = strtok_r(NULL, " ", &save_b))
            if (strncmp(t, tok, name_len + 1) == 0)
                old = t + name_len + 1;
        if (strcmp(old, tok + name_len + 1) != 0)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%.*s: %s -> %s", buf[0] ? ", " : "", (int)name_len,
                     tok, old, tok + name_len + 1);
    }
}

static void proposal_section(page *p)
{
    const rp_report *r = p->r;
    const ppb_proposal_record *pr = &r->proposal;
    ppb_html *h = &p->h;
    section_start(p, "comparison", "Candidate against baseline, per case");
    ppb_html_markup(h, "<dl class=\"facts\">");
    ppb_html_element(h, "dt", "proposal");
    ppb_html_markup(h, "<dd>");
    ppb_html_textf(h, "%lld: %s (%s)", (long long)pr->id, pr->name, pr->kind);
    ppb_html_markup(h, "</dd>");
    if (r->n_pcases > 0) {
        char change[600];
        describe_change(r->pcases[0].baseline_key, r->pcases[0].candidate_key, change, sizeof change);
        ppb_html_element(h, "dt", "change");
        ppb_html_element(h, "dd", change[0] ? change : "none: both sides run the same configuration (an A/A)");
    }
    ppb_html_element(h, "dt", "file");
    ppb_html_element(h, "dd", pr->path[0] ? pr->path : "-");
    ppb_html_element(h, "dt", "target");
    ppb_html_element(h, "dd", pr->target[0] ? pr->target : "none");
    ppb_html_element(h, "dt", "runs");
    ppb_html_markup(h, "<dd>");
    ppb_html_textf(h, "baseline %lld, candidate %lld", (long long)pr->baseline_run,
                   (long long)pr->candidate_run);
    ppb_html_markup(h, "</dd>");
    ppb_html_element(h, "dt", "geometric mean");
    ppb_html_markup(h, "<dd>");
    if (isfinite(pr->geomean_ratio)) {
        char iv[120], what[160];
        ppb_format_interval(iv, sizeof iv, pr->geomean_ratio, pr->geomean_lo, pr->geomean_hi);
        ppb_verdict_describe_ratio(what, sizeof what, pr->geomean_ratio, pr->geomean_lo, pr->geomean_hi,
                                   isfinite(pr->geomean_lo) && isfinite(pr->geomean_hi));
        ppb_html_textf(h, "candidate/baseline time %s: %s", iv, what);
    }
    else
        ppb_html_text(h, "none (no compared case)");
    ppb_html_markup(h, "</dd>");
    char cost[512];
    if (ppb_format_proposal_cost(&pr->cost, cost, sizeof cost)) {
        ppb_html_element(h, "dt", "cost");
        ppb_html_element(h, "dd", cost);
    }
    ppb_html_element(h, "dt", "stored");
    ppb_html_element(h, "dd", pr->created_at);
    ppb_html_markup(h, "</dl>\n");
    charts_with_prefix(p, "proposal-", 1);

    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"proposal-cases\"><thead><tr>"
                       "<th class=\"num\">#</th><th>state</th><th>class</th>"
                       "<th class=\"num\">ratio</th><th class=\"num\">interval</th>"
                       "<th class=\"num\" title=\"the smallest true change this case resolves from none, 80% power\">"
                       "could see</th><th class=\"num\">p (Holm)</th><th class=\"num\">weight</th>"
                       "<th class=\"num\">baseline ms</th><th class=\"num\">candidate ms</th>"
                       "<th>baseline check</th><th>candidate check</th><th>rows</th>"
                       "<th>baseline key</th><th>candidate key</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->n_pcases; i++) {
        const ppb_proposal_case *c = &r->pcases[i];
        const rp_item *b = rp_find_item(r, RP_SIDE_BASELINE, c->baseline_key);
        const rp_item *k = rp_find_item(r, RP_SIDE_CANDIDATE, c->candidate_key);
        ppb_html_markup(h, "<tr class=\"pcase\"");
        ppb_html_attrf(h, "id", "pcase-%d", i + 1);
        ppb_html_attr(h, "data-case-key", c->candidate_key);
        ppb_html_attr(h, "data-baseline-key", c->baseline_key);
        ppb_html_markup(h, "><td class=\"num\">");
        ppb_html_textf(h, "%d", i + 1);
        ppb_html_markup(h, "</td>");
        td_badge(h, c->state);
        td_badge(h, c->cls);
        char iv[120];
        ppb_format_interval(iv, sizeof iv, c->ratio, c->ratio_lo, c->ratio_hi);
        char *bounds = strchr(iv, ' '); /* "R [LO, HI]": the ratio, then its interval */
        *bounds++ = '\0';
        ppb_html_markup(h, "<td class=\"num\">");
        ppb_html_text(h, isfinite(c->ratio) ? iv : "-");
        ppb_html_markup(h, "</td><td class=\"num\">");
        if (isfinite(c->ratio_lo) && isfinite(c->ratio_hi))
            ppb_html_text(h, bounds);
        else
            ppb_html_text(h, "-");
        ppb_html_markup(h, "</td>");
        char sees[16];
        ppb_html_markup(h, "<td class=\"num\">");
        ppb_html_text(h, ppb_format_case_detectable(c, sees, sizeof sees));
        ppb_html_markup(h, "</td>");
        td_num(h, "%.3g", c->p_holm);
        td_num(h, "%.3g", c->weight);
        td_num(h, "%.4g", b && rp_item_timed(b) ? b->r.median_ms : NAN);
        td_num(h, "%.4g", k && rp_item_timed(k) ? k->r.median_ms : NAN);
        td_badge(h, b && b->r.check.checked ? (b->r.check.pass ? "pass" : "fail") : "none");
        td_badge(h, k && k->r.check.checked ? (k->r.check.pass ? "pass" : "fail") : "none");
        ppb_html_markup(h, "<td>");
        if (b)
            case_link(h, b->number);
        if (b && k)
            ppb_html_text(h, " ");
        if (k)
            case_link(h, k->number);
        ppb_html_markup(h, "</td>");
        td_key(h, c->baseline_key);
        td_key(h, c->candidate_key);
        ppb_html_markup(h, "</tr>\n");
    }
    table_section_end(p);
}

/* ---- trend ----------------------------------------------------------------------------- */

/* A trend case's status as the page's badges and attributes name it. */
static const char *trend_word(const rp_trend_case *t)
{
    return t->analysed ? ppb_trend_status_name(t->trend.status) : "not analysed";
}

/* The CSS class of an overview cell: one per change class (style.css colours
 * them as style.gp's palette_change does the chart). */
static const char *change_class(int bucket)
{
    switch (bucket) {
    case RP_CHANGE_FASTER2: return "chg chg-m2";
    case RP_CHANGE_FASTER: return "chg chg-m1";
    case RP_CHANGE_SLOWER: return "chg chg-p1";
    case RP_CHANGE_SLOWER2: return "chg chg-p2";
    default: return "chg chg-0";
    }
}

/* "run 8 (2026-11-08T02:00:00Z, commit abc...)": what a column or cell is. */
static void night_title(const rp_night *n, char *buf, size_t len)
{
    snprintf(buf, len, "run %lld (started %s, commit %s)", (long long)n->run_id, n->started_at,
             n->commit[0] ? n->commit : "not stored");
}

static void overview_head(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    ppb_html_markup(h, "<thead><tr><th class=\"num\">#</th><th>status</th>");
    for (int n = r->overview_from; n < r->n_nights; n++) {
        char title[300], day[16], commit[16];
        night_title(&r->nights[n], title, sizeof title);
        rp_night_labels(&r->nights[n], day, sizeof day, commit, sizeof commit);
        ppb_html_markup(h, "<th class=\"night\"");
        ppb_html_attr(h, "title", title);
        ppb_html_attrf(h, "data-run", "%lld", (long long)r->nights[n].run_id);
        ppb_html_markup(h, ">");
        /* the run id first: nights of one day and one commit would read alike */
        ppb_html_textf(h, "#%lld", (long long)r->nights[n].run_id);
        ppb_html_markup(h, "<br>");
        ppb_html_text(h, day);
        ppb_html_markup(h, "<br><code>");
        ppb_html_text(h, commit);
        ppb_html_markup(h, "</code></th>");
    }
    ppb_html_markup(h, "<th>case key</th></tr></thead>\n");
}

static void overview_cell(page *p, int row, int night)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    char title[600], run[300];
    rp_cell cell;
    night_title(&r->nights[night], run, sizeof run);
    if (!rp_overview_cell(r, row, night, &cell)) {
        snprintf(title, sizeof title, "#%d, %s: no time", row + 1, run);
        ppb_html_markup(h, "<td class=\"chg chg-none\"");
        ppb_html_attr(h, "title", title);
        ppb_html_markup(h, ">-</td>");
        return;
    }
    char cls[48];
    snprintf(cls, sizeof cls, "%s%s", change_class(cell.bucket), cell.alert ? " alert" : "");
    snprintf(title, sizeof title, "#%d, %s: %.4g ms, %+.1f%% against the reference %.4g ms%s",
             row + 1, run, cell.median_ms, cell.change * 100, r->trend[row].baseline,
             cell.alert ? "; part of the alert" : "");
    ppb_html_markup(h, "<td");
    ppb_html_attr(h, "class", cls);
    ppb_html_attr(h, "title", title);
    ppb_html_markup(h, ">");
    ppb_html_text(h, cell.text);
    ppb_html_markup(h, "</td>");
}

static void overview_legend(page *p)
{
    ppb_html *h = &p->h;
    ppb_html_markup(h, "<p class=\"legend\">");
    for (int b = RP_CHANGE_FASTER2; b <= RP_CHANGE_SLOWER2; b++) {
        char label[64];
        rp_change_label(b, p->r->trend_opt.min_change, label, sizeof label);
        ppb_html_markup(h, "<span");
        ppb_html_attr(h, "class", change_class(b));
        ppb_html_markup(h, ">");
        ppb_html_text(h, label);
        ppb_html_markup(h, "</span> ");
    }
    ppb_html_markup(h, "<span class=\"chg chg-none\">- no time</span> "
                       "<span class=\"chg chg-0 alert\">outlined: a run of an alert</span></p>\n");
}

/* Change per case per night: the page's first view of a suite of any size.
 * The table stands alone (colour classes, numbers, titles); the chart is the
 * same picture from gnuplot, when there is one. */
static void overview_section(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    note_section_start(p, "trend-overview", "Overview: change per case per night");
    ppb_html_textf(h,
                   "One row per case (#N as in the tables below, alerts first), one column per "
                   "night: the last %d of %d runs of suite '%s', headed by the date its run "
                   "started (UTC) and the first 7 characters of its commit (hover for the run "
                   "id and the full commit). A cell is that night's median time against the "
                   "case's reference median, in whole percent: the trend test's reference (the "
                   "median of the window before the step, or before the latest run) or, for a "
                   "case with too little history to judge, the median of its runs.",
                   r->n_nights - r->overview_from, r->n_nights, r->req->suite);
    ppb_html_markup(h, "</p>\n");
    overview_legend(p);
    charts_with_prefix(p, "trend-overview", 1);
    if (r->n_nights == 0 || r->n_trend == 0) {
        note(h, "No night to show.");
        section_end(p);
        return;
    }
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"overview\">");
    overview_head(p);
    ppb_html_markup(h, "<tbody>\n");
    for (int i = 0; i < r->n_trend; i++) {
        const rp_trend_case *t = &r->trend[i];
        case_row_start(h, "overview-row", t->key, i + 1);
        td_badge(h, trend_word(t));
        for (int n = r->overview_from; n < r->n_nights; n++)
            overview_cell(p, i, n);
        td_key(h, t->key);
        ppb_html_markup(h, "</tr>\n");
    }
    table_section_end(p);
}

/* The run an alert starts at: "run 8 (11-08, abc1234)". */
static void alert_run(const rp_report *r, const rp_trend_case *t, char *buf, size_t len)
{
    int from = rp_trend_alert_from(t);
    const rp_night *n = from >= 0 ? rp_night_of(r, t->points[from].run_id) : NULL;
    if (!n) {
        snprintf(buf, len, "-");
        return;
    }
    char day[16], commit[16];
    rp_night_labels(n, day, sizeof day, commit, sizeof commit);
    snprintf(buf, len, "run %lld (%s, %s)", (long long)n->run_id, day, commit);
}

/* Each kernel's cases pooled night by night (trend_pool.h): the suite-wide
 * step no single case's noise shows. */
static void pooled_table(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    if (r->n_pooled == 0)
        return;
    ppb_html_markup(h, "<p>");
    ppb_html_text(h, "Each kernel's cases pooled night by night, each case against its own usual level: a step "
                     "that moves them all shows here even where each case's own noise hides it. Its threshold "
                     "is derived for 0.1% false alerts a night; sees >= is the smallest sustained step it could "
                     "flag.");
    ppb_html_markup(h, "</p>\n<div class=\"table-wrap\"><table class=\"pooled\"><thead><tr><th>kernel</th>"
                       "<th class=\"num\">cases</th><th>status</th><th class=\"num\">change</th>"
                       "<th class=\"num\">sees &gt;=</th><th>from run</th><th>reason</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->n_pooled; i++) {
        const ppb_trend_pooled *row = &r->pooled[i];
        ppb_html_markup(h, "<tr>");
        td_text(h, row->group);
        td_num(h, "%.0f", (double)row->n_cases);
        td_badge(h, ppb_trend_status_name(row->result.status));
        td_num(h, "%+.1f%%", isfinite(row->result.rel_change) ? 100 * row->result.rel_change : 0.0);
        td_num(h, "%.1f%%", row->result.threshold_from ? 100 * row->result.detectable : NAN);
        td_text(h, row->result.step_run_id[0] ? row->result.step_run_id : "-");
        td_reason(h, row->result.reason);
        ppb_html_markup(h, "</tr>\n");
    }
    ppb_html_markup(h, "</tbody></table></div>\n");
}

/* The cases the trend flags, with its reasons; the cases are sorted alerts
 * first, so they lead the list. */
static void alerts_section(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    note_section_start(p, "trend-alerts", "Alerts");
    ppb_html_textf(h, "A regression or an improvement is a step that the last %d runs sustain: "
                      "it alerts. An outlier is the latest run alone beyond the thresholds: shown, "
                      "never alerted on.",
                   r->trend_opt.sustain);
    ppb_html_markup(h, "</p>\n");
    pooled_table(p);
    int n = 0;
    for (int i = 0; i < r->n_trend && rp_trend_alert_from(&r->trend[i]) >= 0; i++)
        n++;
    if (n == 0) {
        ppb_html_markup(h, "<p class=\"note\" id=\"no-alerts\">");
        ppb_html_text(h, "No alerts: no case has a sustained step, and no latest run is an "
                         "outlier.");
        ppb_html_markup(h, "</p>\n");
        section_end(p);
        return;
    }
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"alerts\"><thead><tr>"
                       "<th class=\"num\">#</th><th>status</th><th class=\"num\">change</th>"
                       "<th class=\"num\">score</th><th>from run (date, commit)</th>"
                       "<th>reason</th><th>case key</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < n; i++) {
        const rp_trend_case *t = &r->trend[i];
        char from[200];
        alert_run(r, t, from, sizeof from);
        case_row_start(h, "alert-row", t->key, i + 1);
        td_badge(h, ppb_trend_status_name(t->trend.status));
        td_num(h, "%+.1f%%", t->trend.rel_change * 100);
        td_num(h, "%.1f", t->trend.score);
        td_text(h, from);
        td_reason(h, t->trend.reason);
        td_key(h, t->key);
        ppb_html_markup(h, "</tr>\n");
    }
    table_section_end(p);
}

static void trend_sections(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    note_section_start(p, "trend-charts", "History per case");
    ppb_html_textf(h,
                   "Each case's plain runs of suite '%s', oldest first. A run is beyond the "
                   "thresholds when it differs from the reference median by at least the case's "
                   "threshold, the larger of %.0f%% and %g times its night-to-night noise, and by "
                   "%.0f robust standard deviations; a step alerts when the last %d runs hold it "
                   "(window %d runs, at least %d runs of history). Alerts come first.",
                   r->req->suite, r->trend_opt.min_change * 100, r->trend_opt.noise_multiplier,
                   r->trend_opt.min_score, r->trend_opt.sustain, r->trend_opt.window, r->trend_opt.min_history);
    int charted = 0;
    for (int i = 0; i < r->n_trend; i++)
        charted += r->trend[i].chart >= 0;
    if (charted < r->n_trend)
        ppb_html_textf(h, " Charts for %d of %d cases (at most %d, alerts first); the table has "
                          "every case.",
                       charted, r->n_trend, RP_MAX_TREND_CHARTS);
    ppb_html_markup(h, "</p>\n<div class=\"charts\">\n");
    for (int i = 0; i < r->n_trend; i++) {
        const rp_trend_case *t = &r->trend[i];
        if (t->chart < 0)
            continue;
        rp_chart c = r->charts[t->chart];
        /* The caption names the case in full (the chart itself says #N). */
        snprintf(c.title, sizeof c.title, "#%d %s", i + 1, t->key);
        if (t->analysed) {
            char note[600];
            snprintf(note, sizeof note, "%s: %s. %s", ppb_trend_status_name(t->trend.status),
                     t->trend.reason, r->charts[t->chart].note);
            snprintf(c.note, sizeof c.note, "%s", note);
        }
        chart_figure(p, &c, 0);
    }
    ppb_html_markup(h, "</div>\n");
    section_end(p);

    section_start(p, "trend-table", "Every case");
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"trend\"><thead><tr>"
                       "<th class=\"num\">#</th><th>status</th><th class=\"num\">runs</th>"
                       "<th class=\"num\">latest ms</th><th class=\"num\">reference ms</th>"
                       "<th class=\"num\">change</th><th class=\"num\">score</th>"
                       "<th class=\"num\">step began at run</th><th>reason</th><th>case key</th>"
                       "</tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->n_trend; i++) {
        const rp_trend_case *t = &r->trend[i];
        ppb_html_markup(h, "<tr class=\"case\"");
        ppb_html_attrf(h, "id", "case-%d", i + 1);
        ppb_html_attr(h, "data-case-key", t->key);
        ppb_html_attr(h, "data-status", trend_word(t));
        ppb_html_markup(h, "><td class=\"num\">");
        if (t->chart >= 0) {
            ppb_html_markup(h, "<a");
            ppb_html_attrf(h, "href", "#chart-%s", r->charts[t->chart].name);
            ppb_html_markup(h, ">");
            ppb_html_textf(h, "%d", i + 1);
            ppb_html_markup(h, "</a>");
        } else {
            ppb_html_textf(h, "%d", i + 1);
        }
        ppb_html_markup(h, "</td>");
        td_badge(h, trend_word(t));
        ppb_html_markup(h, "<td class=\"num\">");
        ppb_html_textf(h, "%d", t->n_points);
        if (t->n_unusable)
            ppb_html_textf(h, " (+%d without a time)", t->n_unusable);
        ppb_html_markup(h, "</td>");
        td_num(h, "%.4g", t->n_points ? t->points[t->n_points - 1].median_ms : NAN);
        td_num(h, "%.4g", t->analysed ? t->trend.reference : NAN);
        td_num(h, "%+.1f%%", t->analysed ? t->trend.rel_change * 100 : NAN);
        td_num(h, "%.1f", t->analysed ? t->trend.score : NAN);
        td_text(h, t->analysed ? t->trend.step_run_id : "");
        td_reason(h, t->analysed ? t->trend.reason : t->error);
        td_key(h, t->key);
        ppb_html_markup(h, "</tr>\n");
    }
    table_section_end(p);
}

/* ---- environment, command --------------------------------------------------------------- */

static void run_facts(page *p, const ppb_run_info *run, const ppb_run_time *time, const rp_env *env, int n_env,
                      const char *what)
{
    ppb_html *h = &p->h;
    char num[64];
    ppb_html_markup(h, "<h3>");
    ppb_html_textf(h, "%s run %lld", what, (long long)run->id);
    ppb_html_markup(h, "</h3>\n<dl class=\"facts\">");
    const struct {
        const char *k, *v;
    } facts[] = {{"suite", run->suite_name},     {"suite file", run->suite_path},
                 {"suite hash", run->suite_hash}, {"git commit", run->git_commit},
                 {"host", run->host},             {"backend", run->backend},
                 {"device", run->device},         {"target", run->target[0] ? run->target : "none"},
                 {"label", run->label},           {"started", run->started_at},
                 {"finished", run->finished_at},  {"status", run->status},
                 {"run options", run->args}};
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        ppb_html_element(h, "dt", facts[i].k);
        ppb_html_markup(h, "<dd");
        if (strcmp(facts[i].k, "label") == 0)
            ppb_html_attr(h, "class", "run-label");
        ppb_html_markup(h, ">");
        ppb_html_text(h, facts[i].v[0] ? facts[i].v : "-");
        ppb_html_markup(h, "</dd>");
    }
    snprintf(num, sizeof num, "%d of %d stored", run->n_done, run->n_cases);
    ppb_html_element(h, "dt", "cases");
    ppb_html_element(h, "dd", num);
    if (time) {
        char line[256];
        ppb_format_run_time(time, line, sizeof line);
        ppb_html_element(h, "dt", "time");
        ppb_html_element(h, "dd", line);
    }
    ppb_html_markup(h, "</dl>\n");
    if (n_env == 0)
        return;
    ppb_html_markup(h, "<div class=\"table-wrap\"><table class=\"env\"><thead><tr><th>key</th>"
                       "<th>value</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < n_env; i++) {
        ppb_html_markup(h, "<tr><td><code>");
        ppb_html_text(h, env[i].key);
        ppb_html_markup(h, "</code></td>");
        td_text(h, env[i].value);
        ppb_html_markup(h, "</tr>\n");
    }
    ppb_html_markup(h, "</tbody></table></div>\n");
}

static void environment_section(page *p)
{
    const rp_report *r = p->r;
    ppb_html *h = &p->h;
    section_start(p, "environment", "Environment");
    if (r->have_run)
        run_facts(p, &r->run, r->have_run_time ? &r->run_time : NULL, r->env, r->n_env,
                  r->kind == PPB_REPORT_PROPOSAL ? "candidate"
                  : r->kind == PPB_REPORT_TREND  ? "latest"
                                                 : "this");
    if (r->have_base_run && !(r->have_run && r->base_run.id == r->run.id))
        run_facts(p, &r->base_run, NULL, r->base_env, r->n_base_env, "baseline");
    if (!r->have_run && !r->have_base_run) {
        note(h, "No run is attached (the proposal measured nothing).");
    }
    ppb_html_markup(h, "<h3>This report</h3>\n<dl class=\"facts\">");
    ppb_html_element(h, "dt", "generated");
    ppb_html_element(h, "dd", r->generated_at);
    ppb_html_element(h, "dt", "gnuplot");
    ppb_html_element(h, "dd", r->gp.available ? r->gp.version : r->gp.why);
    ppb_html_element(h, "dt", "gnuplot program");
    ppb_html_element(h, "dd", r->gp.available ? r->gp.path : "-");
    ppb_html_element(h, "dt", "charts");
    ppb_html_element(h, "dd", r->charts_dir);
    ppb_html_markup(h, "</dl>\n");
    section_end(p);
}

static void command_section(page *p)
{
    ppb_html *h = &p->h;
    section_start(p, "reproduce", "Reproduce this report");
    ppb_html_markup(h, "<pre class=\"command\" id=\"command\"><code>");
    ppb_html_text(h, p->r->command);
    ppb_html_markup(h, "</code></pre>\n<p class=\"note\">");
    ppb_html_text(h, "Restyle every chart by editing charts/style.gp, then in the charts folder: "
                     "for f in *.gp; do [ \"$f\" = style.gp ] || gnuplot -d \"$f\"; done");
    ppb_html_markup(h, "</p>\n");
    section_end(p);
}

/* ---- the page ------------------------------------------------------------------------------ */

static void subject(const rp_report *r, char *buf, size_t len)
{
    if (r->kind == PPB_REPORT_PROPOSAL)
        snprintf(buf, len, "proposal %lld %s", (long long)r->proposal.id, r->proposal.name);
    else if (r->kind == PPB_REPORT_TREND)
        snprintf(buf, len, "trend of suite %s (%d cases, latest run %lld)", r->req->suite,
                 r->n_trend, (long long)r->run.id);
    else
        snprintf(buf, len, "run %lld %s on %s (%s)", (long long)r->run.id, r->run.suite_name,
                 r->run.device, r->run.backend);
}

/* A kv_capacity proposal is arithmetic (its reasons carry it): no cases, no
 * per-case table, no configs to judge against the target. */
static int has_cases(const rp_report *r)
{
    return !(r->kind == PPB_REPORT_PROPOSAL && strcmp(r->proposal.kind, "kv_capacity") == 0);
}

static void plan_sections(page *p)
{
    const rp_report *r = p->r;
    add_section(p, "summary", "Verdict and reasons", "verdict");
    if (r->kind == PPB_REPORT_TREND) {
        add_section(p, "trend-overview", "Overview: change per case per night", "overview");
        add_section(p, "trend-alerts", "Alerts", "alerts");
        add_section(p, "trend-charts", "History per case", "history");
        add_section(p, "trend-table", "Every case", "cases");
    } else {
        if (r->kind == PPB_REPORT_PROPOSAL && has_cases(r))
            add_section(p, "comparison", "Candidate against baseline", "comparison");
        unsigned kernels = rp_kernels(r);
        if (kernels & (1u << PPB_PREFIX_PREFILL))
            add_section(p, "kernel-prefill", "prefix_prefill: charts and results", "prefill");
        if (kernels & (1u << PPB_PAGED_ATTENTION))
            add_section(p, "kernel-decode", "paged_attention: charts and results", "decode");
        if (r->n_items)
            add_section(p, "correctness", "Correctness", "correctness");
        if (has_cases(r))
            add_section(p, "feasibility", "Target feasibility", "feasibility");
    }
    add_section(p, "environment", "Environment", "environment");
    add_section(p, "reproduce", "Reproduce this report", "reproduce");
}

int rp_html_write(const rp_report *r, const char *path, ppb_err *err)
{
    FILE *f = NULL;
    int rc = ppb_file_create_fresh(path, 0, &f, err);
    if (rc)
        return rc;
    page *p = calloc(1, sizeof *p);
    if (!p) {
        fclose(f);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    p->r = r;
    ppb_html *h = &p->h;
    ppb_html_init(h, f);
    plan_sections(p);
    char subj[600];
    subject(r, subj, sizeof subj);

    ppb_html_markup(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                       /* Nothing may load or run: inline style only. */
                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                       "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action "
                       "'none'\">\n"
                       "<meta name=\"generator\" content=\"ppbench report\">\n<title>");
    ppb_html_textf(h, "%s: %s", r->verdict, subj);
    ppb_html_markup(h, "</title>\n");
    ppb_html_style_sheet(h, ppb_report_css);
    ppb_html_markup(h, "</head>\n<body>\n");

    /* The sticky banner: verdict, headline, subject, section links. */
    char cls[48];
    snprintf(cls, sizeof cls, "banner %s", r->verdict_class);
    ppb_html_markup(h, "<header");
    ppb_html_attr(h, "class", cls);
    ppb_html_markup(h, " id=\"top\"><span class=\"verdict\" id=\"verdict\">");
    ppb_html_text(h, r->verdict);
    char headline[600];
    snprintf(headline, sizeof headline, "%.*s", (int)strcspn(r->reasons, "\n"), r->reasons);
    ppb_html_markup(h, "</span><span class=\"headline\" id=\"headline\"");
    ppb_html_attr(h, "title", headline);   /* the banner may cut it; hovering shows it all */
    ppb_html_markup(h, ">");
    ppb_html_text(h, headline);
    ppb_html_markup(h, "</span><span class=\"subject\">");
    ppb_html_text(h, subj);
    ppb_html_markup(h, "</span><nav>");
    for (int i = 1; i < p->n_sections; i++) {
        ppb_html_markup(h, "<a");
        ppb_html_attrf(h, "href", "#%s", p->sections[i].id);
        ppb_html_markup(h, ">");
        ppb_html_text(h, p->sections[i].link);
        ppb_html_markup(h, "</a>");
    }
    ppb_html_markup(h, "</nav></header>\n<main>\n<h1>");
    ppb_html_textf(h, "ppbench report: %s", subj);
    ppb_html_markup(h, "</h1>\n");

    section_start(p, "summary", "Verdict and reasons");
    lines_as_list(h, r->reasons, 1);
    gnuplot_notice(p);
    section_end(p);

    ppb_html_markup(h, "<nav class=\"toc\" id=\"toc\"><h2>Contents</h2><ol>\n");
    for (int i = 0; i < p->n_sections; i++) {
        ppb_html_markup(h, "<li><a");
        ppb_html_attrf(h, "href", "#%s", p->sections[i].id);
        ppb_html_markup(h, ">");
        ppb_html_text(h, p->sections[i].title);
        ppb_html_markup(h, "</a></li>\n");
    }
    ppb_html_markup(h, "</ol></nav>\n");

    if (r->kind == PPB_REPORT_TREND) {
        overview_section(p);
        alerts_section(p);
        trend_sections(p);
    } else {
        if (r->kind == PPB_REPORT_PROPOSAL && has_cases(r))
            proposal_section(p);
        kernel_sections(p);
        if (r->n_items)
            correctness_section(p);
        if (has_cases(r))
            feasibility_section(p);
    }
    environment_section(p);
    command_section(p);
    ppb_html_markup(h, "<footer>");
    ppb_html_textf(h, "Written by ppbench at %s. Self-contained: no scripts, nothing loaded "
                      "from anywhere.",
                   r->generated_at);
    ppb_html_markup(h, "</footer>\n</main>\n</body>\n</html>\n");

    rc = ppb_html_finish(h, err);
    if (fclose(f) != 0 && !rc)
        rc = ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    if (rc)
        ppb_err_prefix(err, "%s: ", path);
    free(p);
    return rc;
}
