/* The report's charts: for each, a .dat file (numbers only) and a .gp script
 * (ours; every label in it through ppb_gnuplot_string), rendered by one
 * gnuplot run to SVG (inlined into the page) and PNG. docs/REPORTS.md lists
 * the charts and what each one shows. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "report_assets.h"
#include "report_charts.h"
#include "verdict.h"

/* ---- chart files ------------------------------------------------------------ */

typedef struct chart_files {
    FILE *dat, *gp;
    char dat_path[4400], gp_path[4400];
} chart_files;

static rp_chart *add_chart(rp_report *r, const char *name, const char *title, ppb_err *err)
{
    if (r->n_charts == r->cap_charts) {
        int cap = r->cap_charts ? r->cap_charts * 2 : 16;
        rp_chart *p = realloc(r->charts, (size_t)cap * sizeof *p);
        if (!p) {
            ppb_fail(err, PPB_ENOMEM, "out of memory");
            return NULL;
        }
        r->charts = p;
        r->cap_charts = cap;
    }
    rp_chart *c = &r->charts[r->n_charts++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->title, sizeof c->title, "%s", title);
    return c;
}

static int open_chart(const rp_report *r, const rp_chart *c, chart_files *f, ppb_err *err)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dat_path, sizeof f->dat_path, "%s/%s.dat", r->charts_dir, c->name);
    snprintf(f->gp_path, sizeof f->gp_path, "%s/%s.gp", r->charts_dir, c->name);
    int rc = ppb_file_create(f->dat_path, 0, &f->dat, err);
    if (rc == PPB_OK && (rc = ppb_file_create(f->gp_path, 0, &f->gp, err)) != PPB_OK) {
        fclose(f->dat);
        f->dat = NULL;
    }
    if (rc)
        return rc;
    /* A title of several lines: each quoted, joined by style.gp's nl. */
    char title[1200] = "";
    for (const char *line = c->title; *line;) {
        size_t n = strcspn(line, "\n"), used = strlen(title);
        char part[400], q[420];
        snprintf(part, sizeof part, "%.*s", (int)n, line);
        ppb_gnuplot_string(part, q, sizeof q);
        snprintf(title + used, sizeof title - used, "%s%s", used ? ".nl." : "", q);
        line += n + (line[n] == '\n');
    }
    if (!title[0])
        ppb_gnuplot_string("", title, sizeof title);
    fprintf(f->dat, "# ppbench chart data: %s.gp plots it\n", c->name);
    fprintf(f->gp,
            "# ppbench chart %s\n"
            "# Data: %s.dat; shared style: style.gp. Re-render in this folder: gnuplot -d %s.gp\n"
            "reset\n"
            "load 'style.gp'\n"
            "# The page's caption names the SVG; the PNG, seen alone, carries the title.\n"
            "chart_title = %s\n",
            c->name, c->name, c->name, title);
    return PPB_OK;
}

/* A new chart with its two files open: every chart starts so. *c is NULL
 * when the chart could not be added (PPB_ENOMEM), else set even when a file
 * could not be opened (the error says which). */
static int start_chart(rp_report *r, const char *name, const char *title, rp_chart **c,
                       chart_files *f, ppb_err *err)
{
    *c = add_chart(r, name, title, err);
    return *c ? open_chart(r, *c, f, err) : PPB_ENOMEM;
}

/* The PNG title's font size (style.gp's 12 at most): small enough that its
 * longest line fits the chart, about 0.72 em a character at gnuplot's sans
 * with room for the margins, since a case key is read whole or not at all. */
static int title_font_size(const char *title, int w)
{
    size_t longest = 0;
    for (const char *line = title; *line;) {
        size_t n = strcspn(line, "\n");
        longest = n > longest ? n : longest;
        line += n + (line[n] == '\n');
    }
    int size = longest ? (int)((w - 100) / (0.72 * (double)longest)) : 12;
    return size > 12 ? 12 : size < 7 ? 7 : size;
}

/* The output lines every script ends with; `plot` is the plot command. */
static int close_chart(chart_files *f, const rp_chart *c, int w, int h, const char *plot,
                       ppb_err *err)
{
    fprintf(f->gp,
            "eval svg_term(%d, %d)\n"
            "set output '%s.svg'\n"
            "unset title\n"
            "%s\n"
            "eval png_term(%d, %d)\n"
            "set output '%s.png'\n"
            "set title chart_title font 'sans,%d'\n"
            "replot\n"
            "unset output\n",
            w, h, c->name, plot, w, h, c->name, title_font_size(c->title, w));
    int bad = ferror(f->dat) | ferror(f->gp);
    bad |= fclose(f->dat) != 0;
    bad |= fclose(f->gp) != 0;
    return bad ? ppb_fail(err, PPB_EIO, "writing %s failed", f->gp_path) : PPB_OK;
}

/* A gnuplot string for a label (kept to a safe alphabet). */
static const char *gq(const char *text, char *buf, size_t len)
{
    ppb_gnuplot_string(text, buf, len);
    return buf;
}

/* A tic label: gnuplot reads an explicit tic's label as a format, where a
 * '%' would be a conversion (and a bad one stops the chart), so each is
 * doubled to print as itself. */
static const char *gq_tic(const char *text, char *buf, size_t len)
{
    char q[400];
    ppb_gnuplot_string(text, q, sizeof q);
    size_t n = strlen(q), o = 0;
    if (len < 3 || n < 2) {
        ppb_gnuplot_string("", buf, len);
        return buf;
    }
    /* Between the quotes, keeping room for a doubled '%' and the closing quote. */
    buf[o++] = '\'';
    for (size_t i = 1; i + 1 < n && o + 3 < len; i++) {
        if (q[i] == '%')
            buf[o++] = '%';
        buf[o++] = q[i];
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

/* A growing plot command. */
typedef struct plot_cmd {
    char s[16384];
    int n;
} plot_cmd;

static void plot_add(plot_cmd *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void plot_add(plot_cmd *p, const char *fmt, ...)
{
    if (p->n >= (int)sizeof p->s - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(p->s + p->n, sizeof p->s - (size_t)p->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        p->n = p->n + k < (int)sizeof p->s ? p->n + k : (int)sizeof p->s - 1;
}

static const char *kernel_slug(int kernel)
{
    return kernel == PPB_PREFIX_PREFILL ? "prefill" : "decode";
}

/* Distinct strings, first-seen order (labels for series, shapes). */
typedef struct label_set {
    const char **v;
    int n, cap;
} label_set;

static int label_index(label_set *s, const char *label)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], label) == 0)
            return i;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        const char **p = realloc(s->v, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n] = label;
    return s->n++;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- time and rate against sequence length --------------------------------------- */

typedef struct family_info {
    const char *family;
    int points;        /* timed items */
    int lengths;       /* distinct lengths among them */
} family_info;

static int family_order(const void *a, const void *b)
{
    const family_info *x = a, *y = b;
    return y->lengths != x->lengths ? y->lengths - x->lengths : y->points - x->points;
}

/* Rate of a timed item in the chart's unit. */
static double item_rate(const rp_item *it, double scale)
{
    return it->c.kernel == PPB_PREFIX_PREFILL ? it->r.tflops * scale : it->r.gbps * scale;
}

static int length_chart(rp_report *r, int kernel, const char *family, int index, int rate,
                        double rate_scale, const char *rate_unit, ppb_err *err)
{
    char name[96], title[400], q[400], xl[128];
    snprintf(name, sizeof name, "%s-%s-%d", kernel_slug(kernel), rate ? "rate" : "time", index);
    snprintf(title, sizeof title, "%s %s against sequence length: %s", ppb_kernel_name(kernel),
             rate ? rate_unit : "time", family);
    rp_chart *c;
    chart_files f;
    int rc = start_chart(r, name, title, &c, &f, err);
    if (rc)
        return rc;

    label_set series = {0};
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel == kernel && rp_item_timed(it) && it->length > 0 &&
            strcmp(it->family, family) == 0)
            label_index(&series, it->series);
    }
    plot_cmd p = {{0}, 0};
    plot_add(&p, "plot ");
    for (int s = 0; s < series.n; s++) {
        /* One block per series, sorted by length; blocks apart by two blank lines. */
        fprintf(f.dat, "%s# series %d: %s\n", s ? "\n\n" : "", s,
                gq(series.v[s], q, sizeof q));
        fprintf(f.dat, rate ? "# length rate(%s)\n" : "# length median_ms q1_ms q3_ms\n",
                rate_unit);
        double rows[512][4];
        int n = 0;
        for (int i = 0; i < r->n_items && n < 512; i++) {
            const rp_item *it = &r->items[i];
            if ((int)it->c.kernel != kernel || !rp_item_timed(it) || !(it->length > 0) ||
                strcmp(it->family, family) != 0 || strcmp(it->series, series.v[s]) != 0)
                continue;
            rows[n][0] = it->length;
            rows[n][1] = rate ? item_rate(it, rate_scale) : it->r.median_ms;
            rows[n][2] = isfinite(it->r.q1_ms) && it->r.q1_ms > 0 ? it->r.q1_ms : it->r.median_ms;
            rows[n][3] = isfinite(it->r.q3_ms) && it->r.q3_ms > 0 ? it->r.q3_ms : it->r.median_ms;
            n++;
        }
        qsort(rows, (size_t)n, sizeof rows[0], compare_double);
        for (int i = 0; i < n; i++) {
            if (rate)
                fprintf(f.dat, "%.9g %.9g\n", rows[i][0], rows[i][1]);
            else
                fprintf(f.dat, "%.9g %.9g %.9g %.9g\n", rows[i][0], rows[i][1], rows[i][2],
                        rows[i][3]);
        }
        plot_add(&p, "%s'%s.dat' index %d using 1:2%s with %s title %s", s ? ", \\\n     " : "",
                 name, s, rate ? "" : ":3:4", rate ? "linespoints" : "yerrorlines",
                 gq(series.v[s], q, sizeof q));
    }
    free(series.v);
    fprintf(f.gp, "set logscale xy\n"
                  "set offsets graph 0.04, graph 0.04, graph 0.08, graph 0.08\n"
                  "set xlabel %s\n"
                  "set ylabel %s\n",
            gq(kernel == PPB_PREFIX_PREFILL ? "sequence length: context_len + query_len (tokens)"
                                            : "sequence length: seq_len (tokens)",
               xl, sizeof xl),
            gq(rate ? rate_unit : "median time (ms), bars: q1 to q3", q, sizeof q));
    snprintf(c->note, sizeof c->note, "%s",
             rate ? "achieved rate from the median time; log axes"
                  : "median of the samples, bars from the first to the third quartile; log axes");
    return close_chart(&f, c, 760, 360, p.s, err);
}

static int length_charts(rp_report *r, int kernel, ppb_err *err)
{
    family_info *fam = calloc((size_t)r->n_items + 1, sizeof *fam);
    double *lens = calloc((size_t)r->n_items + 1, sizeof *lens);
    int nf = 0, rc = PPB_OK;
    if (!fam || !lens) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    double max_tflops = 0;
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel || !rp_item_timed(it) || !(it->length > 0))
            continue;
        if (it->r.tflops > max_tflops)
            max_tflops = it->r.tflops;
        int j = 0;
        while (j < nf && strcmp(fam[j].family, it->family) != 0)
            j++;
        if (j == nf)
            fam[nf++].family = it->family;
        fam[j].points++;
    }
    for (int j = 0; j < nf; j++) {
        int n = 0;
        for (int i = 0; i < r->n_items; i++) {
            const rp_item *it = &r->items[i];
            if ((int)it->c.kernel == kernel && rp_item_timed(it) && it->length > 0 &&
                strcmp(it->family, fam[j].family) == 0)
                lens[n++] = it->length;
        }
        qsort(lens, (size_t)n, sizeof *lens, compare_double);
        int distinct = n ? 1 : 0;
        for (int i = 1; i < n; i++)
            distinct += lens[i] != lens[i - 1];
        fam[j].lengths = distinct;
    }
    /* Stable order: most lengths first, then most points. */
    for (int i = 1; i < nf; i++)
        for (int j = i; j > 0 && family_order(&fam[j - 1], &fam[j]) > 0; j--) {
            family_info t = fam[j];
            fam[j] = fam[j - 1];
            fam[j - 1] = t;
        }
    /* The CPU backend's tiny cases run at GFLOP/s: say so rather than print 0.00. */
    int giga = kernel == PPB_PREFIX_PREFILL && max_tflops < 0.1;
    const char *unit = kernel == PPB_PREFIX_PREFILL ? (giga ? "GFLOP/s" : "TFLOP/s") : "GB/s";
    double scale = giga ? 1e3 : 1;
    int made = 0;
    for (int j = 0; j < nf && made < RP_MAX_FAMILY_CHARTS && !rc; j++) {
        if (fam[j].lengths < 2)
            continue;
        made++;
        rc = length_chart(r, kernel, fam[j].family, made, 0, scale, unit, err);
        if (!rc)
            rc = length_chart(r, kernel, fam[j].family, made, 1, scale, unit, err);
    }
end:
    free(fam);
    free(lens);
    return rc;
}

/* ---- heatmap of configs relative to the best, per shape ----------------------------- */

#define RP_HEATMAP_MAX_ROWS 80

static int heatmap_chart(rp_report *r, int kernel, ppb_err *err)
{
    label_set rows = {0}, cols = {0};
    int rc = PPB_OK;
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel)
            continue;
        label_index(&cols, it->series);
        if (rp_item_timed(it))
            label_index(&rows, it->shape);
    }
    if (cols.n < 2 || rows.n == 0)
        goto end;   /* one config: nothing to rank */
    int nrows = rows.n < RP_HEATMAP_MAX_ROWS ? rows.n : RP_HEATMAP_MAX_ROWS;
    char name[64], title[256], q[400];
    snprintf(name, sizeof name, "%s-heatmap", kernel_slug(kernel));
    snprintf(title, sizeof title, "%s: each config's median time over the best of its shape",
             ppb_kernel_name(kernel));
    rp_chart *c;
    chart_files f;
    if ((rc = start_chart(r, name, title, &c, &f, err)) != PPB_OK)
        goto end;
    double *best = malloc((size_t)nrows * sizeof *best);
    if (!best) {
        fclose(f.dat);
        fclose(f.gp);
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    for (int y = 0; y < nrows; y++)
        best[y] = INFINITY;
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel || !rp_item_timed(it))
            continue;
        int y = label_index(&rows, it->shape);
        if (y >= 0 && y < nrows && it->r.median_ms < best[y])
            best[y] = it->r.median_ms;
    }
    fprintf(f.dat, "# timed cells: column row median/best median_ms\n");
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel || !rp_item_timed(it))
            continue;
        int y = label_index(&rows, it->shape), x = label_index(&cols, it->series);
        if (y >= 0 && y < nrows)
            fprintf(f.dat, "%d %d %.6g %.9g\n", x, y, it->r.median_ms / best[y], it->r.median_ms);
    }
    fprintf(f.dat, "\n\n# cells without a time: column row status\n");
    int untimed = 0;
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel || rp_item_timed(it))
            continue;
        int y = -1;
        for (int k = 0; k < nrows; k++)
            if (strcmp(rows.v[k], it->shape) == 0)
                y = k;
        if (y < 0)
            continue;
        fprintf(f.dat, "%d %d \"%s\"\n", label_index(&cols, it->series), y,
                ppb_status_name(it->r.status));
        untimed++;
    }
    if (!untimed)   /* an empty block would make gnuplot stop on "no data" */
        fprintf(f.dat, "NaN NaN \"\"\n");
    free(best);

    fprintf(f.gp, "set xtics (");
    for (int x = 0; x < cols.n; x++)
        fprintf(f.gp, "%s%s %d", x ? ", " : "", gq_tic(cols.v[x], q, sizeof q), x);
    fprintf(f.gp, ") rotate by 30 right noenhanced\nset ytics (");
    for (int y = 0; y < nrows; y++)
        fprintf(f.gp, "%s%s %d", y ? ", " : "", gq_tic(rows.v[y], q, sizeof q), y);
    fprintf(f.gp, ") noenhanced\n"
                  "set xrange [-0.5:%d.5]\n"
                  "set yrange [%d.5:-0.5]\n"
                  "unset grid\n"
                  "set cbrange [1:2]\n"
                  "set cblabel 'median / best of the shape'\n"
                  "set border 15\n"
                  "set tics scale 0\n"
                  "unset key\n",
            cols.n - 1, nrows - 1);
    char plot[1024];
    snprintf(plot, sizeof plot,
             "plot '%s.dat' index 0 using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 "
             "noborder lc palette, \\\n"
             "     '' index 0 using 1:2:(sprintf('%%.2f', $3)) with labels font 'sans,9'%s",
             name,
             untimed ? ", \\\n     '' index 1 using 1:2:3 with labels font 'sans,9' textcolor "
                       "rgb '#777777'"
                     : "");
    /* Room for the row labels (about 7 px a character at the chart font), the
     * columns and the colour box with its label. */
    size_t longest = 0;
    for (int y = 0; y < nrows; y++)
        longest = strlen(rows.v[y]) > longest ? strlen(rows.v[y]) : longest;
    int w = 7 * (int)longest + 120 * cols.n + 260, h = 170 + 26 * nrows;
    if (w > 2000)
        w = 2000;
    snprintf(c->note, sizeof c->note,
             "1.00 = the fastest config of that shape; a cell without a time shows its status%s",
             nrows < rows.n ? " (the first 80 shapes; the table has all)" : "");
    rc = close_chart(&f, c, w, h, plot, err);
end:
    free(rows.v);
    free(cols.v);
    return rc;
}

/* ---- roofline ------------------------------------------------------------------- */

static int roofline_chart(rp_report *r, int kernel, ppb_err *err)
{
    label_set series = {0};
    double max_perf = 0, min_ai = INFINITY, max_ai = 0;
    for (int i = 0; i < r->n_items; i++) {
        const rp_item *it = &r->items[i];
        if ((int)it->c.kernel != kernel || !rp_item_timed(it))
            continue;
        double flops = ppb_case_flops(&it->c), bytes = ppb_case_min_bytes(&it->c);
        if (!(flops > 0) || !(bytes > 0))
            continue;
        double perf = flops / (it->r.median_ms * 1e-3), ai = flops / bytes;
        max_perf = perf > max_perf ? perf : max_perf;
        min_ai = ai < min_ai ? ai : min_ai;
        max_ai = ai > max_ai ? ai : max_ai;
        label_index(&series, it->series);
    }
    if (series.n == 0) {
        free(series.v);
        return PPB_OK;
    }
    /* TFLOP/s for GPUs; GFLOP/s when nothing reaches a tenth of a TFLOP/s (CPU). */
    int tera = r->have_ceilings || max_perf >= 1e11;
    double unit = tera ? 1e12 : 1e9;
    char name[64], title[256], q[400];
    snprintf(name, sizeof name, "%s-roofline", kernel_slug(kernel));
    snprintf(title, sizeof title, "%s roofline: achieved %s against arithmetic intensity%s",
             ppb_kernel_name(kernel), tera ? "TFLOP/s" : "GFLOP/s",
             r->have_ceilings ? "" : " (no ceilings known)");
    rp_chart *c;
    chart_files f;
    int rc = start_chart(r, name, title, &c, &f, err);
    if (rc) {
        free(series.v);
        return rc;
    }
    plot_cmd p = {{0}, 0};
    plot_add(&p, "plot ");
    for (int s = 0; s < series.n; s++) {
        fprintf(f.dat, "%s# series %d: %s\n# flop_per_byte achieved case_number\n",
                s ? "\n\n" : "", s, gq(series.v[s], q, sizeof q));
        for (int i = 0; i < r->n_items; i++) {
            const rp_item *it = &r->items[i];
            if ((int)it->c.kernel != kernel || !rp_item_timed(it) ||
                strcmp(it->series, series.v[s]) != 0)
                continue;
            double flops = ppb_case_flops(&it->c), bytes = ppb_case_min_bytes(&it->c);
            if (!(flops > 0) || !(bytes > 0))
                continue;
            fprintf(f.dat, "%.9g %.9g %d\n", flops / bytes,
                    flops / (it->r.median_ms * 1e-3) / unit, it->number);
        }
        plot_add(&p, "%s'%s.dat' index %d using 1:2 with points title %s", s ? ", \\\n     " : "",
                 name, s, gq(series.v[s], q, sizeof q));
    }
    free(series.v);
    double lo = min_ai / 4, hi = max_ai * 4;
    if (r->have_ceilings) {
        double bw = r->ceilings.mem_bandwidth.value / unit;
        double peak = r->ceilings.fp16_flops.value / unit;
        double ridge = peak / bw;
        if (ridge * 2 > hi)
            hi = ridge * 2;
        if (ridge / 2 < lo)
            lo = ridge / 2;
        fprintf(f.gp,
                "# ceilings (%s): memory %.6g B/s, fp16/bf16 %.6g FLOP/s\n"
                "bandwidth = %.9g\npeak = %.9g\n"
                "roof(x) = (x * bandwidth < peak) ? x * bandwidth : peak\n"
                "set arrow from %.9g, graph 0 to %.9g, graph 1 nohead dt 3 lc rgb colour_limit\n",
                r->ceilings.name, r->ceilings.mem_bandwidth.value, r->ceilings.fp16_flops.value, bw,
                peak, ridge, ridge);
        char legend[160];
        snprintf(legend, sizeof legend, "%s ceiling: %.3g TB/s, %.4g TFLOP/s", r->ceilings.name,
                 r->ceilings.mem_bandwidth.value / 1e12, r->ceilings.fp16_flops.value / 1e12);
        plot_add(&p, ", \\\n     roof(x) with lines lw 2 lc rgb colour_limit title %s",
                 gq(legend, q, sizeof q));
    }
    fprintf(f.gp,
            "set logscale xy\n"
            "set xrange [%.9g:%.9g]\n"
            "set samples 400\n"
            "set xlabel 'arithmetic intensity (FLOP per byte of minimum traffic)'\n"
            "set ylabel %s\n",
            lo, hi, gq(tera ? "achieved TFLOP/s" : "achieved GFLOP/s", q, sizeof q));
    if (!r->have_ceilings)
        fprintf(f.gp, "set label 1 'no ceilings known for this device' at graph 0.02, graph 0.95 "
                      "textcolor rgb colour_limit\n");
    snprintf(c->note, sizeof c->note, "%s", r->ceilings_note);
    return close_chart(&f, c, 760, 380, p.s, err);
}

/* ---- correctness ------------------------------------------------------------------ */

static int correctness_chart(rp_report *r, ppb_err *err)
{
    double floor_ratio = INFINITY;
    int n = 0;
    for (int i = 0; i < r->n_items; i++) {
        const ppb_check_result *k = &r->items[i].r.check;
        if (!k->checked || !(k->atol > 0) || !isfinite(k->max_abs_err))
            continue;
        n++;
        double ratio = k->max_abs_err / k->atol;
        if (ratio > 0 && ratio < floor_ratio)
            floor_ratio = ratio;
    }
    if (n == 0)
        return PPB_OK;
    floor_ratio = isfinite(floor_ratio) ? floor_ratio / 4 : 1e-6;
    if (floor_ratio > 0.1)
        floor_ratio = 0.1;
    rp_chart *c;
    chart_files f;
    int rc = start_chart(r, "correctness", "max abs error / atol per case (1 = atol)", &c, &f, err);
    if (rc)
        return rc;
    int zeros = 0, in_block[2] = {0, 0};
    double top = 1;
    for (int pass = 1; pass >= 0; pass--) {
        fprintf(f.dat, "%s# %s: case_number max_abs_err/atol\n", pass ? "" : "\n\n",
                pass ? "pass" : "fail");
        int any = 0;
        for (int i = 0; i < r->n_items; i++) {
            const rp_item *it = &r->items[i];
            const ppb_check_result *k = &it->r.check;
            if (!k->checked || !(k->atol > 0) || !isfinite(k->max_abs_err) ||
                (k->pass != 0) != pass)
                continue;
            double ratio = k->max_abs_err / k->atol;
            if (!(ratio > 0)) {
                ratio = floor_ratio;
                zeros++;
            }
            fprintf(f.dat, "%d %.9g\n", it->number, ratio);
            top = ratio > top ? ratio : top;
            any = 1;
        }
        if (!any)
            fprintf(f.dat, "NaN NaN\n");
        in_block[pass] = any;
    }
    /* The atol line stays in view however far below it the errors are. */
    fprintf(f.gp,
            "set logscale y\n"
            "set xlabel 'case number (the tables use the same numbers)'\n"
            "set ylabel 'max abs error / atol'\n"
            "set xrange [0:%d]\n"
            "set yrange [%.6g:%.6g]\n"
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb colour_fail\n"
            "set label 1 'atol' at graph 1, first 1 offset 0.5, 0 textcolor rgb colour_fail\n",
            r->n_items + 1, floor_ratio / 2, top * 3);
    plot_cmd p = {{0}, 0};
    plot_add(&p, "plot ");
    if (in_block[1])
        plot_add(&p, "'%s.dat' index 0 using 1:2 with points pt 7 lc rgb colour_pass title 'pass'",
                 c->name);
    if (in_block[0])
        plot_add(&p, "%s'%s.dat' index 1 using 1:2 with points pt 5 ps 1.0 lc rgb colour_fail "
                     "title 'fail'",
                 in_block[1] ? ", \\\n     " : "", c->name);
    snprintf(c->note, sizeof c->note,
             "each element must be within atol + rtol x |reference|, so a case can pass above "
             "the atol line; its pass/fail is the check's own%s",
             zeros ? "; an error of exactly 0 is drawn at the bottom of the axis" : "");
    return close_chart(&f, c, 760, 320, p.s, err);
}

/* ---- proposal: the forest plot that decides ------------------------------------------- */

/* About this many ratio tics at most: each keeps 1/RP_RATIO_TICS of the axis to itself. */
#define RP_RATIO_TICS 7
/* Row labels longer than this are cut (the table has every key whole). */
#define RP_ROW_LABEL_MAX 60

static int tic_far_enough(const double *tics, int n, double t, double gap)
{
    for (int i = 0; i < n; i++)
        if (fabs(log(t / tics[i])) < gap * 0.999)
            return 0;
    return 1;
}

/* Tics for the log axis of time ratios: round numbers a reader can place a
 * point against, 1 first, then the roundest (1-2-5 per decade, then even
 * steps of 50%, 25%, 10%, 5%, 2%, 1% around 1, none finer than a twentieth of
 * the range), each taken only while it is a
 * fair share of the axis away from those already taken: even steps bunch up
 * at the top of a log axis, and their labels would run into each other. Any
 * range holding [0.98, 1.02] gets at least three. Sorted; returns how many. */
static int ratio_tics(double lo, double hi, double *tics, int cap)
{
    static const double decade[] = {1, 5, 2}, steps[] = {0.5, 0.25, 0.1, 0.05, 0.02, 0.01};
    double gap = log(hi / lo) / RP_RATIO_TICS;
    int n = 0;
    for (int j = 0; j < 3; j++)
        for (int e = (int)floor(log10(lo)); e <= (int)ceil(log10(hi)); e++) {
            double t = decade[j] * pow(10, e);
            if (t >= lo && t <= hi && n < cap && tic_far_enough(tics, n, t, gap))
                tics[n++] = t;
        }
    /* A step much finer than the range would only fill gaps with odd values (1.38). */
    for (size_t s = 0; s < sizeof steps / sizeof *steps && steps[s] >= (hi - lo) / 20; s++)
        for (double k = ceil((lo - 1) / steps[s] - 1e-9); 1 + k * steps[s] <= hi * (1 + 1e-12); k++) {
            double t = 1 + k * steps[s];   /* (0.9 - 1) / 0.1 is -0.99..98: the slack keeps 0.9 */
            if (t >= lo * (1 - 1e-12) && n < cap && tic_far_enough(tics, n, t, gap))
                tics[n++] = t;
        }
    qsort(tics, (size_t)n, sizeof *tics, compare_double);
    return n;
}

/* Each case's row label: "#N" (its number in the table) and the fields of its
 * candidate key that vary among the proposal's cases; the whole key would
 * squeeze the plot. labels[i] holds RP_ROW_LABEL_MAX + 1 bytes. */
static int proposal_row_labels(const rp_report *r, char (*labels)[RP_ROW_LABEL_MAX + 1])
{
    ppb_case *cases = calloc((size_t)r->n_pcases + 1, sizeof *cases);
    const ppb_case **parsed = calloc((size_t)r->n_pcases + 1, sizeof *parsed);
    int *ok = calloc((size_t)r->n_pcases + 1, sizeof *ok), n = 0;
    if (!cases || !parsed || !ok) {
        free(cases);
        free(parsed);
        free(ok);
        return PPB_ENOMEM;
    }
    for (int i = 0; i < r->n_pcases; i++) {
        ppb_err ignored;
        ok[i] = ppb_case_from_key(r->pcases[i].candidate_key, &cases[i], &ignored) == PPB_OK;
        if (ok[i])
            parsed[n++] = &cases[i];
    }
    int varies[PPB_F_COUNT];
    rp_fields_varying(parsed, n, varies);
    for (int i = 0; i < r->n_pcases; i++) {
        char fields[PPB_CASE_KEY_MAX] = "";
        if (ok[i])
            rp_case_label(&cases[i], varies, fields, sizeof fields);
        snprintf(labels[i], RP_ROW_LABEL_MAX + 1, "#%d%s%.*s", i + 1, fields[0] ? " " : "", RP_ROW_LABEL_MAX,
                 fields);
    }
    free(cases);
    free(parsed);
    free(ok);
    return PPB_OK;
}

/* A proposal case's ratio and interval (an unbounded side drawn at the ratio). */
static void case_interval(double ratio, double lo, double hi, double out[3])
{
    out[0] = ratio;
    out[1] = lo > 0 && isfinite(lo) ? lo : ratio;
    out[2] = hi > 0 && isfinite(hi) ? hi : ratio;
}

/* The rules' two limits as ratios (verdict.h), each a shaded region with its
 * line, named above the plot in the verdict's words: a case wholly in the red
 * REJECTs; the mean must lie wholly in the green to ACCEPT. The names grow
 * away from 1 (left of the green line, right of the red) so they never cross.
 * 0 when the rules were not stored (before schema 12): nothing drawn. */
static int draw_limits(const rp_report *r, FILE *gp, double *lo, double *hi)
{
    const ppb_proposal_record *pr = &r->proposal;
    if (!isfinite(pr->min_gain) || !isfinite(pr->max_regression) || !isfinite(pr->threshold))
        return 0;
    ppb_verdict_rules rules;
    ppb_verdict_rules_default(&rules);
    rules.min_gain = pr->min_gain;
    rules.max_regression = pr->max_regression;
    rules.threshold = pr->threshold;
    double tol = ppb_verdict_tolerance(&rules), need = ppb_verdict_gain_needed(&rules);
    double reject = 1 + tol, accept = 1 / (1 + need);
    fprintf(gp,
            "# The rules' limits: REJECT where a case's whole interval is above 1 + max(max_regression, "
            "threshold);\n# ACCEPT needs the weighted mean's whole interval below 1 / (1 + max(min_gain, "
            "threshold)).\n"
            "reject_at = %.9g\naccept_below = %.9g\n"
            "set object 2 rect from reject_at, graph 0 to graph 1, graph 1 fc rgb colour_slower "
            "fs transparent solid 0.10 noborder behind\n"
            "set object 3 rect from graph 0, graph 0 to accept_below, graph 1 fc rgb colour_faster "
            "fs transparent solid 0.10 noborder behind\n"
            "set arrow 3 from reject_at, graph 0 to reject_at, graph 1 nohead dt 2 lc rgb colour_slower\n"
            "set arrow 4 from accept_below, graph 0 to accept_below, graph 1 nohead dt 2 lc rgb colour_faster\n"
            "set label 3 'REJECT: a case %.3g%% slower' at reject_at, graph 1 left offset 0.3, 0.8 "
            "font 'sans,9' textcolor rgb colour_slower\n"
            "set label 4 'ACCEPT: the mean %.3g%% faster' at accept_below, graph 1 right offset -0.3, 0.8 "
            "font 'sans,9' textcolor rgb colour_faster\n"
            "set tmargin 3.5\n",   /* the names, and the PNG's title above them */
            reject, accept, 100 * tol, 100 * need);
    /* The limits stay in view: they are what the points are read against. */
    *lo = accept < *lo ? accept : *lo;
    *hi = reject > *hi ? reject : *hi;
    return 1;
}

static void widen(double *lo, double *hi, const double iv[3])
{
    *lo = iv[1] < *lo ? iv[1] : *lo;
    *hi = iv[2] > *hi ? iv[2] : *hi;
}

/* One data block per class (the colours; an empty one holds a NaN row, as
 * gnuplot stops on "no data"), each case at y = its number; the x range they
 * need goes into lo, hi. */
static void proposal_case_blocks(const rp_report *r, const char *name, FILE *dat, plot_cmd *p, double *lo,
                                 double *hi)
{
    static const char *const classes[] = {"faster", "slower", "same", "unresolved", NULL};
    static const char *const colours[] = {"colour_faster", "colour_slower", "colour_same",
                                          "colour_unresolved"};
    for (int k = 0; k <= 4; k++) {
        fprintf(dat, "%s# %s: ratio lo hi case_number\n", k ? "\n\n" : "", classes[k] ? classes[k] : "other");
        int any = 0;
        for (int i = 0; i < r->n_pcases; i++) {
            const ppb_proposal_case *pc = &r->pcases[i];
            int cls = 4;
            for (int j = 0; classes[j]; j++)
                if (strcmp(pc->cls, classes[j]) == 0)
                    cls = j;
            if (cls != k || !(pc->ratio > 0) || !isfinite(pc->ratio))
                continue;
            double iv[3];
            case_interval(pc->ratio, pc->ratio_lo, pc->ratio_hi, iv);
            widen(lo, hi, iv);
            fprintf(dat, "%.9g %.9g %.9g %d\n", iv[0], iv[1], iv[2], i + 1);
            any = 1;
        }
        if (!any)
            fprintf(dat, "NaN NaN NaN NaN\n");
        else
            plot_add(p, "%s'%s.dat' index %d using 1:4:2:3 with xerrorbars pt 7 lc rgb %s title '%s'",
                     p->n > 5 ? ", \\\n     " : "", name, k, k < 4 ? colours[k] : "colour_same",
                     classes[k] ? classes[k] : "other");
    }
}

/* The weighted geometric mean, block 5, at y = row; 1 if there is one. */
static int proposal_mean_row(const rp_report *r, const char *name, int row, FILE *dat, plot_cmd *p, double *lo,
                             double *hi)
{
    double g = r->proposal.geomean_ratio, iv[3];
    fprintf(dat, "\n\n# weighted geometric mean: ratio lo hi row\n");
    if (!(isfinite(g) && g > 0)) {
        fprintf(dat, "NaN NaN NaN NaN\n");
        return 0;
    }
    case_interval(g, r->proposal.geomean_lo, r->proposal.geomean_hi, iv);
    widen(lo, hi, iv);
    fprintf(dat, "%.9g %.9g %.9g %d\n", iv[0], iv[1], iv[2], row);
    plot_add(p, ", \\\n     '%s.dat' index 5 using 1:4:2:3 with xerrorbars pt 13 ps 1.6 lw 2 "
                "lc rgb '#0072B2' title 'weighted geometric mean'",
             name);
    return 1;
}

/* The log ratio axis: 1 always in view, a margin each side, round tics. */
static void ratio_axis(FILE *gp, double lo, double hi)
{
    lo = (lo > 0.99 ? 0.99 : lo) / 1.02;
    hi = (hi < 1.01 ? 1.01 : hi) * 1.02;
    double tics[4 * RP_RATIO_TICS];
    int n = ratio_tics(lo, hi, tics, 4 * RP_RATIO_TICS);
    fprintf(gp, "set logscale x\nset xrange [%.9g:%.9g]\nset xtics (", lo, hi);
    for (int i = 0; i < n; i++)
        fprintf(gp, "%s%.6g", i ? ", " : "", tics[i]);
    fprintf(gp, ")\nunset mxtics\n"
                "set xlabel 'candidate / baseline time (below 1: the candidate is faster)'\n"
                "set arrow 1 from 1, graph 0 to 1, graph 1 nohead lw 1.5 lc rgb colour_limit\n");
}

/* A named row per case, top down, and the mean's below a rule; returns the
 * longest label's length. */
static size_t proposal_rows(FILE *gp, char (*labels)[RP_ROW_LABEL_MAX + 1], int ncases, int mean_y, int have_mean)
{
    char q[RP_ROW_LABEL_MAX * 2 + 8];
    size_t longest = 0;
    fprintf(gp, "set yrange [%d.5:0.5]\nset ytics (", mean_y);
    for (int i = 0; i < ncases; i++) {
        fprintf(gp, "%s%s %d", i ? ", " : "", gq_tic(labels[i], q, sizeof q), i + 1);
        longest = strlen(labels[i]) > longest ? strlen(labels[i]) : longest;
    }
    if (have_mean)
        fprintf(gp, ", 'geometric mean' %d", mean_y);
    fprintf(gp, ") noenhanced font 'sans,9'\nunset mytics\nunset ylabel\n"
                "set arrow 2 from graph 0, first %d.5 to graph 1, first %d.5 nohead lc rgb colour_limit\n",
            ncases, ncases);
    return longest;
}

/* The forest plot: case i at y = i (top down); the weighted geometric mean on
 * its own row at y = n + 2, below a rule, labelled there (not on case 1's
 * row); the rules' limits shaded behind. */
static int proposal_chart(rp_report *r, ppb_err *err)
{
    int ncases = r->n_pcases, any = 0;
    for (int i = 0; i < ncases; i++)
        any |= r->pcases[i].ratio > 0 && isfinite(r->pcases[i].ratio);
    if (!any)
        return PPB_OK;
    char(*labels)[RP_ROW_LABEL_MAX + 1] = calloc((size_t)ncases + 1, sizeof *labels);
    if (!labels || proposal_row_labels(r, labels)) {
        free(labels);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    rp_chart *c;
    chart_files f;
    int rc = start_chart(r, "proposal-ratios", "candidate / baseline time per case, with its interval",
                         &c, &f, err);
    if (rc) {
        free(labels);
        return rc;
    }
    plot_cmd p = {{0}, 0};
    plot_add(&p, "plot ");
    double lo = INFINITY, hi = 0;
    int mean_y = ncases + 2;
    proposal_case_blocks(r, c->name, f.dat, &p, &lo, &hi);
    int have_mean = proposal_mean_row(r, c->name, mean_y, f.dat, &p, &lo, &hi);
    int limits = draw_limits(r, f.gp, &lo, &hi);
    ratio_axis(f.gp, lo, hi);
    size_t longest = proposal_rows(f.gp, labels, ncases, mean_y, have_mean);
    free(labels);
    snprintf(c->note, sizeof c->note, "%s",
             limits ? "each case's interval is at the verdict's family level; red: a case whose whole interval "
                      "lies there is REJECTed (max_regression, at least the threshold); green: ACCEPT needs the "
                      "weighted geometric mean's whole interval there (min_gain, at least the threshold)"
                    : "each case's interval is at the verdict's family level; the rules this proposal was decided "
                      "under were not stored (a database from before schema 12): no limits drawn");
    /* Room for the row labels (about 6 px a character at their font) beside a
     * plot of about 480 px and the legend. */
    int h = 170 + 16 * mean_y, w = 820 + 6 * (int)longest;
    return close_chart(&f, c, w > 1400 ? 1400 : w, h > 2400 ? 2400 : h, p.s, err);
}

/* ---- trend: the overview, change per case per night ----------------------------------- */

/* A night's tic label: 'run ID'.nl.'commit' (nl is a line break, style.gp),
 * the commit through ppb_gnuplot_string: a stored commit may be anything. The
 * run id, not the date: a day's several runs (CI, a re-run) read alike by date
 * and commit, never by id (the page's tables give the date). */
static void night_tic(const rp_night *n, char *buf, size_t len)
{
    char day[16], commit[16], qc[40];
    rp_night_labels(n, day, sizeof day, commit, sizeof commit);
    snprintf(buf, len, "'run %lld'.nl.%s", (long long)n->run_id, gq_tic(commit, qc, sizeof qc));
}

/* A run's x on the trend charts: its night's position among all the suite's
 * nights (one position per night, as asv draws commits), -1 if not one of them. */
static int night_x(const rp_report *r, int64_t run_id)
{
    const rp_night *n = rp_night_of(r, run_id);
    return n ? (int)(n - r->nights) : -1;
}

/* The cells of the overview's first `rows` cases: one block of every timed
 * cell with its class (the colour) and label, one of the alert runs (outlined).
 * A block gnuplot finds empty stops it with "no data": a NaN row stands in. */
static void overview_data(const rp_report *r, FILE *dat, int rows)
{
    fprintf(dat, "# cells with a time: column row class change_percent \"label\" run_id\n");
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            fprintf(dat, "\n\n# alert runs: column row\n");
        int any = 0;
        for (int y = 0; y < rows; y++)
            for (int n = r->overview_from; n < r->n_nights; n++) {
                rp_cell cell;
                if (!rp_overview_cell(r, y, n, &cell) || (pass && !cell.alert))
                    continue;
                any = 1;
                if (pass)
                    fprintf(dat, "%d %d\n", n - r->overview_from, y);
                else
                    fprintf(dat, "%d %d %d %.4g \"%s\" %lld\n", n - r->overview_from, y,
                            cell.bucket, cell.change * 100, cell.text,
                            (long long)r->nights[n].run_id);
            }
        if (!any)
            fprintf(dat, pass ? "NaN NaN\n" : "NaN NaN NaN NaN \"\" 0\n");
    }
}

static int overview_chart(rp_report *r, ppb_err *err)
{
    int cols = r->n_nights - r->overview_from;
    int rows = r->n_trend < RP_OVERVIEW_MAX_CHART_ROWS ? r->n_trend : RP_OVERVIEW_MAX_CHART_ROWS;
    if (cols <= 0 || rows <= 0)
        return PPB_OK;
    rp_chart *c;
    chart_files f;
    int rc = start_chart(r, "trend-overview",
                         "change per case per night: the median against the case reference", &c, &f,
                         err);
    if (rc)
        return rc;
    overview_data(r, f.dat, rows);

    plot_cmd tics = {{0}, 0};
    char tic[96], q[160];
    for (int n = r->overview_from; n < r->n_nights; n++) {
        night_tic(&r->nights[n], tic, sizeof tic);
        plot_add(&tics, "%s%s %d", n > r->overview_from ? ", " : "", tic, n - r->overview_from);
    }
    /* A tall chart names its nights on top as well: the columns stay readable
     * wherever one scrolls to. */
    fprintf(f.gp, "set xtics (%s) noenhanced font 'sans,9'\n", tics.s);
    if (rows > 25)
        fprintf(f.gp, "set link x2\nset x2tics (%s) noenhanced font 'sans,9'\nset tmargin 6\n",
                tics.s);
    fprintf(f.gp, "set ytics (");
    for (int y = 0; y < rows; y++)
        fprintf(f.gp, "%s'#%d' %d", y ? ", " : "", y + 1, y);
    fprintf(f.gp, ") font 'sans,9'\nset cbtics (");
    for (int b = RP_CHANGE_FASTER2; b <= RP_CHANGE_SLOWER2; b++) {
        char label[64];
        rp_change_label(b, r->trend_opt.min_change, label, sizeof label);
        fprintf(f.gp, "%s%s %d", b > RP_CHANGE_FASTER2 ? ", " : "", gq_tic(label, q, sizeof q),
                b);
    }
    /* The classes are the colours, as in the page's table: the palette steps. */
    fprintf(f.gp, ")\n"
                  "set xrange [-0.5:%d.5]\n"
                  "set yrange [%d.5:-0.5]\n"
                  "set cbrange [-2.5:2.5]\n"
                  "eval palette_change\n"
                  "set rmargin 24\n"   /* the colour box's labels: gnuplot leaves too little */
                  "set bmargin 4\n"
                  "unset grid\n"
                  "set border 15\n"
                  "set tics scale 0\n"
                  "unset key\n",
            cols - 1, rows - 1);
    char plot[1024];
    snprintf(plot, sizeof plot,
             "plot '%s.dat' index 0 using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 "
             "noborder lc palette, \\\n"
             "     '' index 0 using 1:2:5 with labels font 'sans,8', \\\n"
             "     '' index 1 using 1:2:(0.47):(0.47) with boxxyerror fs empty border lw 2 "
             "lc rgb colour_alert",
             c->name);
    snprintf(c->note, sizeof c->note,
             "one row per case (#N as in the tables, alerts first), one column per night (run id, "
             "commit); the cell is the change in %%; outlined: the runs of an alert; blank: no "
             "time that night%s",
             rows < r->n_trend ? " (the first cases only; the table below has all)" : "");
    /* Columns wide enough for a commit at the tic font; room for the row tics
     * and the colour box's labels; rows of 15 px, two-line tics above and below. */
    int w = 100 + 66 * cols + 280, h = (rows > 25 ? 200 : 150) + 15 * rows;
    return close_chart(&f, c, w > 2000 ? 2000 : w, h < 240 ? 240 : h, plot, err);
}

/* ---- trend: one chart per case ----------------------------------------------------- */

/* Which of n runs get a labelled tic: at most RP_TREND_TICS, every k-th
 * counted back from the latest (the newest nights matter most), and the first
 * run of the step, with no other label closer to it than k (they would overlap);
 * the latest is named even next to the step. */
static int tic_wanted(int j, int n, int step)
{
    int every = (n + RP_TREND_TICS - 1) / RP_TREND_TICS;
    if (j == step || j == n - 1)
        return 1; /* the step's first run and the latest night are always named (noisy nights put a step anywhere) */
    if (step >= 0 && abs(j - step) < every)
        return 0;
    return (n - 1 - j) % every == 0;
}

/* A tic at every run of the case (one position per night), labelled for the
 * runs tic_wanted picks ('run ID' and its commit), the others minor and
 * unlabelled: every night is marked, no two labels overlap. */
static void history_tics(const rp_report *r, const rp_trend_case *t, int step, FILE *gp)
{
    char tic[96];
    fprintf(gp, "set xtics (");
    for (int j = 0; j < t->n_points; j++) {
        int x = night_x(r, t->points[j].run_id);   /* one of the nights: trend_chart checked */
        if (tic_wanted(j, t->n_points, step)) {
            night_tic(&r->nights[x], tic, sizeof tic);
            fprintf(gp, "%s%s %d", j ? ", " : "", tic, x);
        } else {
            fprintf(gp, "%s'' %d 1", j ? ", " : "", x);
        }
    }
    fprintf(gp, ") noenhanced font 'sans,9'\n");
}

/* A run's start as ppbench stores it, YYYY-MM-DDTHH:MM:SSZ, and nothing else:
 * the text goes into the chart's data (a database may be hostile). */
static int stamp_ok(const char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    for (int i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
            return 0;
    return s[sizeof shape - 1] == '\0';
}

/* The points of a case's history: x its night, then the alert's runs. */
static void history_data(const rp_report *r, const rp_trend_case *t, int first_alert, FILE *dat)
{
    fprintf(dat, "# every run: night median_ms run_id started_at\n");
    for (int j = 0; j < t->n_points; j++)
        fprintf(dat, "%d %.9g %lld %s\n", night_x(r, t->points[j].run_id), t->points[j].median_ms,
                (long long)t->points[j].run_id, t->points[j].started_at);
    fprintf(dat, "\n\n# alert: night median_ms run_id started_at (the step from its first run, or the outlier)\n");
    if (first_alert < 0)
        fprintf(dat, "NaN NaN 0 -\n");
    for (int j = first_alert < 0 ? t->n_points : first_alert; j < t->n_points; j++)
        fprintf(dat, "%d %.9g %lld %s\n", night_x(r, t->points[j].run_id), t->points[j].median_ms,
                (long long)t->points[j].run_id, t->points[j].started_at);
}

static int trend_chart(rp_report *r, int index, ppb_err *err)
{
    rp_trend_case *t = &r->trend[index];
    char name[64], title[400];
    snprintf(name, sizeof name, "trend-%d", index + 1);
    /* The PNG travels alone (an issue, a slide): its title names the case in full. */
    snprintf(title, sizeof title, "#%d %s\n%s", index + 1,
             t->analysed ? ppb_trend_status_name(t->trend.status) : "not analysed", t->key);
    for (int j = 0; j < t->n_points; j++) {
        if (!stamp_ok(t->points[j].started_at))
            return ppb_fail(err, PPB_EINPUT, "run %lld: start time '%.40s' is not YYYY-MM-DDTHH:MM:SSZ",
                            (long long)t->points[j].run_id, t->points[j].started_at);
        if (night_x(r, t->points[j].run_id) < 0)   /* the history reads the nights' runs only */
            return ppb_fail(err, PPB_EINPUT, "run %lld of case '%s' is not one of the suite's runs",
                            (long long)t->points[j].run_id, t->key);
    }
    rp_chart *c;
    chart_files f;
    int rc = start_chart(r, name, title, &c, &f, err);
    if (c)
        t->chart = r->n_charts - 1;
    if (rc)
        return rc;
    int first_alert = rp_trend_alert_from(t);
    history_data(r, t, first_alert, f.dat);

    /* x: one position per night, in the order the trend reads them (start time,
     * then id), so runs of one second or one day never stack; a night without
     * a time for this case is a gap. A time never goes below zero. The legend
     * beside the plot, never on the points; the axis title below two-line tics. */
    int x0 = t->n_points ? night_x(r, t->points[0].run_id) : 0;
    int x1 = t->n_points ? night_x(r, t->points[t->n_points - 1].run_id) : 0;
    fprintf(f.gp, "set xrange [%g:%g]\n"
                  "set xlabel 'run (id and commit), one position per night' offset 0, -0.3\n"
                  "set bmargin 5\n"
                  "set ylabel 'median time (ms)'\nset yrange [0:*]\n"
                  "set offsets 0, 0, graph 0.1, 0\n"
                  "set key outside right top vertical\n",
            x0 - 0.5, x1 + 0.5);
    history_tics(r, t, first_alert >= 0 && t->trend.status != PPB_TREND_OUTLIER ? first_alert : -1, f.gp);
    /* the case's own threshold (the floor when it has none yet) */
    double thr = t->analysed && t->trend.threshold_from ? t->trend.threshold : r->trend_opt.min_change;
    if (t->analysed && isfinite(t->trend.reference) && t->trend.reference > 0 && t->n_points > 0) {
        double ref = t->trend.reference;
        fprintf(f.gp,
                "set arrow 1 from graph 0, first %.9g to graph 1, first %.9g nohead dt 2 lc rgb colour_limit\n"
                "set arrow 2 from graph 0, first %.9g to graph 1, first %.9g nohead dt 3 lc rgb colour_limit\n"
                "set arrow 3 from graph 0, first %.9g to graph 1, first %.9g nohead dt 3 lc rgb colour_limit\n",
                ref, ref, ref * (1 + thr), ref * (1 + thr), ref * (1 - thr), ref * (1 - thr));
    }
    if (first_alert >= 0 && t->trend.status != PPB_TREND_OUTLIER) {
        int xa = night_x(r, t->points[first_alert].run_id);
        fprintf(f.gp, "set arrow 4 from %d, graph 0 to %d, graph 1 nohead lc rgb colour_alert\n", xa, xa);
    }
    char plot[600];
    snprintf(plot, sizeof plot,
             "plot '%s.dat' index 0 using 1:2 with linespoints lt 1 title 'median', \\\n"
             "     '' index 1 using 1:2 with points pt 9 ps 1.6 lc rgb colour_alert title 'alert'",
             name);
    snprintf(c->note, sizeof c->note,
             "dashed: the reference median; dotted: +-%.1f%%, its threshold; red: %s",
             thr * 100,
             first_alert < 0 ? "no alert"
             : t->trend.status == PPB_TREND_OUTLIER
                 ? "the latest run, an outlier"
                 : "the step, from its first run");
    return close_chart(&f, c, 760, 280, plot, err);
}

/* ---- running gnuplot ------------------------------------------------------------- */

/* Old outputs in the chart folder would be shown as if they were this report's.
 * A link of one of these names goes too (the link, never its target), so
 * gnuplot's own output cannot be redirected through one. */
static void clear_chart_dir(const char *dir)
{
    static const char *const ours[] = {".svg", ".png", ".gp", ".dat", ".log", NULL};
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        for (int i = 0; ours[i]; i++) {
            size_t k = strlen(ours[i]);
            if (n > k && strcmp(e->d_name + n - k, ours[i]) == 0) {
                char p[4600];
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
                break;
            }
        }
    }
    closedir(d);
}

static int write_style(const rp_report *r, ppb_err *err)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/style.gp", r->charts_dir);
    FILE *f = NULL;
    int rc = ppb_file_create(path, 0, &f, err);
    if (rc)
        return rc;
    int bad = fputs(ppb_report_gnuplot_style, f) < 0;
    bad |= fclose(f) != 0;
    return bad ? ppb_fail(err, PPB_EIO, "writing %s failed", path) : PPB_OK;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

static void render(rp_report *r)
{
    if (r->n_charts == 0)
        return;
    if (!r->gp.available) {
        for (int i = 0; i < r->n_charts; i++)
            snprintf(r->charts[i].error, sizeof r->charts[i].error, "%s", r->gp.why);
        return;
    }
    char(*scripts)[112] = calloc((size_t)r->n_charts, sizeof *scripts);
    const char **argv = calloc((size_t)r->n_charts, sizeof *argv);
    if (!scripts || !argv) {
        for (int i = 0; i < r->n_charts; i++)
            snprintf(r->charts[i].error, sizeof r->charts[i].error, "out of memory");
        free(scripts);
        free(argv);
        return;
    }
    for (int i = 0; i < r->n_charts; i++) {
        snprintf(scripts[i], sizeof scripts[i], "%s.gp", r->charts[i].name);
        argv[i] = scripts[i];
    }
    /* One gnuplot for all charts (a start costs more than a chart); if it
     * stops on an error, each chart without output runs alone for its message. */
    ppb_err batch = {{0}};
    int timeout = 60 + 2 * r->n_charts;
    int rc = ppb_gnuplot_run(&r->gp, r->charts_dir, argv, r->n_charts, "gnuplot.log",
                             timeout > 600 ? 600 : timeout, &batch);
    for (int i = 0; i < r->n_charts; i++) {
        rp_chart *c = &r->charts[i];
        char svg[4400];
        snprintf(svg, sizeof svg, "%s/%s.svg", r->charts_dir, c->name);
        if (rc && !file_exists(svg)) {
            ppb_err one = {{0}};
            char log[128];
            snprintf(log, sizeof log, "%s.log", c->name);
            if (ppb_gnuplot_run(&r->gp, r->charts_dir, &argv[i], 1, log, 60, &one))
                snprintf(c->error, sizeof c->error, "%s", one.msg);
        }
        if (!file_exists(svg)) {
            if (!c->error[0])
                snprintf(c->error, sizeof c->error, "gnuplot wrote no %s.svg%s%s", c->name,
                         rc ? ": " : "", rc ? batch.msg : "");
            continue;
        }
        ppb_err e = {{0}};
        if (ppb_svg_inline_file(svg, c->name, &c->svg, &e))
            snprintf(c->error, sizeof c->error, "%s", e.msg);
    }
    free(scripts);
    free(argv);
}

int rp_charts_make(rp_report *r, ppb_err *err)
{
    clear_chart_dir(r->charts_dir);
    int rc = write_style(r, err);
    if (rc)
        return rc;
    if (r->kind == PPB_REPORT_TREND) {
        rc = overview_chart(r, err);
        int made = 0;
        for (int i = 0; i < r->n_trend && made < RP_MAX_TREND_CHARTS && !rc; i++) {
            if (r->trend[i].n_points == 0)
                continue;
            rc = trend_chart(r, i, err);
            made++;
        }
    } else {
        if (r->kind == PPB_REPORT_PROPOSAL)
            rc = proposal_chart(r, err);
        unsigned kernels = rp_kernels(r);
        for (int k = 0; k < 2 && !rc; k++) {
            if (!(kernels & (1u << k)))
                continue;
            rc = length_charts(r, k, err);
            if (!rc)
                rc = heatmap_chart(r, k, err);
            if (!rc)
                rc = roofline_chart(r, k, err);
        }
        if (!rc)
            rc = correctness_chart(r, err);
    }
    if (rc)
        return rc;
    render(r);
    return PPB_OK;
}
