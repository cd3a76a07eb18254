/* Lookups on the report's model (report_model.h) that both the charts and the
 * page need: which items are timed, the nights of a trend and their labels,
 * the overview's change classes and cells, a chart by name. Kept apart from
 * report.c, which gathers the model, so the charts and the page depend on the
 * model alone and report.c on them, never back. */
#include "report_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void rp_fields_varying(const ppb_case *const *cases, int n, int varies[PPB_F_COUNT])
{
    memset(varies, 0, PPB_F_COUNT * sizeof *varies);
    for (int i = 1; i < n; i++)
        for (int f = 0; f < PPB_F_COUNT; f++)
            if (ppb_case_get(cases[i], (ppb_field)f) != ppb_case_get(cases[0], (ppb_field)f))
                varies[f] = 1;
}

void rp_append_field(char *buf, size_t len, int f, int value)
{
    char v[PPB_FIELD_TEXT_MAX];
    ppb_field_format_value((ppb_field)f, value, v, sizeof v);
    size_t used = strlen(buf);
    if (used < len)
        snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", ppb_field_get((ppb_field)f)->key_name, v);
}

void rp_case_label(const ppb_case *c, const int varies[PPB_F_COUNT], char *buf, size_t len)
{
    buf[0] = '\0';
    for (int f = 0; f < PPB_F_COUNT; f++)
        if (varies[f] && (ppb_field_get((ppb_field)f)->kernels & (1u << c->kernel)))
            rp_append_field(buf, len, f, ppb_case_get(c, (ppb_field)f));
}

int rp_item_timed(const rp_item *it)
{
    return (it->r.status == PPB_STATUS_OK || it->r.status == PPB_STATUS_NOISY) &&
           it->r.n_samples > 0 && isfinite(it->r.median_ms) && it->r.median_ms > 0;
}

unsigned rp_kernels(const rp_report *r)
{
    unsigned k = 0;
    for (int i = 0; i < r->n_items; i++)
        k |= 1u << r->items[i].c.kernel;
    return k;
}

const rp_item *rp_find_item(const rp_report *r, int side, const char *key)
{
    for (int i = 0; i < r->n_items; i++)
        if (r->items[i].side == side && strcmp(r->items[i].c.key, key) == 0)
            return &r->items[i];
    return NULL;
}

const rp_night *rp_night_of(const rp_report *r, int64_t run_id)
{
    for (int i = 0; i < r->n_nights; i++)
        if (r->nights[i].run_id == run_id)
            return &r->nights[i];
    return NULL;
}

void rp_night_labels(const rp_night *n, char *day, size_t day_len, char *commit, size_t commit_len)
{
    /* started_at is YYYY-MM-DDTHH:MM:SSZ; the year is in the table's title. */
    snprintf(day, day_len, "%.5s", strlen(n->started_at) >= 10 ? n->started_at + 5 : "?");
    snprintf(commit, commit_len, "%.7s", n->commit[0] ? n->commit : "-");
}

int rp_trend_alert_from(const rp_trend_case *t)
{
    if (!t->analysed)
        return -1;
    if ((t->trend.status == PPB_TREND_REGRESSION || t->trend.status == PPB_TREND_IMPROVEMENT) &&
        t->trend.step_index >= 0)
        return t->trend.step_index;
    if (t->trend.status == PPB_TREND_OUTLIER)
        return t->n_points - 1;
    return -1;
}

/* The overview's class width: the trend's min_change (a zero threshold would
 * make every night "beyond"; the default stands in). */
static double class_width(double min_change)
{
    return min_change > 0 ? min_change : 0.05;
}

static int change_bucket(double change, double min_change)
{
    double m = class_width(min_change);
    if (change <= -2 * m)
        return RP_CHANGE_FASTER2;
    if (change <= -m)
        return RP_CHANGE_FASTER;
    if (change >= 2 * m)
        return RP_CHANGE_SLOWER2;
    if (change >= m)
        return RP_CHANGE_SLOWER;
    return RP_CHANGE_FLAT;
}

void rp_change_label(int bucket, double min_change, char *buf, size_t len)
{
    double m = class_width(min_change) * 100;
    switch (bucket) {
    case RP_CHANGE_FASTER2: snprintf(buf, len, "-%.0f%% or less (faster)", 2 * m); break;
    case RP_CHANGE_FASTER: snprintf(buf, len, "-%.0f%% to -%.0f%%", m, 2 * m); break;
    case RP_CHANGE_SLOWER: snprintf(buf, len, "+%.0f%% to +%.0f%%", m, 2 * m); break;
    case RP_CHANGE_SLOWER2: snprintf(buf, len, "+%.0f%% or more (slower)", 2 * m); break;
    default: snprintf(buf, len, "within +-%.0f%%", m); break;
    }
}

int rp_overview_cell(const rp_report *r, int row, int night, rp_cell *cell)
{
    const rp_trend_case *t = &r->trend[row];
    if (!(t->baseline > 0) || night < 0 || night >= r->n_nights)
        return 0;
    int64_t id = r->nights[night].run_id;
    for (int j = 0; j < t->n_points; j++) {
        if (t->points[j].run_id != id)
            continue;
        int from = rp_trend_alert_from(t);
        memset(cell, 0, sizeof *cell);
        cell->median_ms = t->points[j].median_ms;
        cell->change = cell->median_ms / t->baseline - 1;
        cell->bucket = change_bucket(cell->change, r->trend_opt.min_change);
        cell->alert = from >= 0 && j >= from;
        double pct = cell->change * 100;
        /* Whole percent fit a cell; no "-0" for a change that rounds to nothing. */
        if (fabs(pct) < 0.5)
            snprintf(cell->text, sizeof cell->text, "0");
        else
            snprintf(cell->text, sizeof cell->text, "%+.0f", pct);
        return 1;
    }
    return 0;
}

const rp_chart *rp_chart_named(const rp_report *r, const char *name)
{
    for (int i = 0; i < r->n_charts; i++)
        if (strcmp(r->charts[i].name, name) == 0)
            return &r->charts[i];
    return NULL;
}
