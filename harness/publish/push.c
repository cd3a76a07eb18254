/* Push a stored run to a metrics system (push.h). Bodies are written into a
 * memory stream from the store's public reads (run, results) or, for JSON, the
 * store's own JSON export; the HTTP side is http.c. */
#include "push.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "push_queue.h"
#include "result.h"

static const char *const format_names[] = {"prometheus", "influx", "json"};

int ppb_push_format_parse(const char *name, ppb_push_format *out, ppb_err *err)
{
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, format_names[i]) == 0) {
            *out = (ppb_push_format)i;
            return PPB_OK;
        }
    return ppb_fail(err, PPB_EINPUT, "unknown push format '%s' (prometheus, influx or json)",
                    name ? name : "(null)");
}

const char *ppb_push_format_name(ppb_push_format f)
{
    return (unsigned)f < 3 ? format_names[f] : "?";
}

/* ---- escaping ------------------------------------------------------------------ */

void ppb_push_prom_label_value(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\': fputs("\\\\", out); break;
        case '"': fputs("\\\"", out); break;
        case '\n': fputs("\\n", out); break;
        default: fputc(*s, out); break;
        }
    }
}

void ppb_push_influx_tag(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case ',':
        case '=':
        case ' ':
        case '\\':
            fputc('\\', out);
            fputc(*s, out);
            break;
        case '\n':
        case '\r':
            fputs("\\ ", out); /* an escaped space: line protocol has no line breaks in values */
            break;
        default: fputc(*s, out); break;
        }
    }
}

void ppb_push_influx_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        switch (*s) {
        case '\\': fputs("\\\\", out); break;
        case '"': fputs("\\\"", out); break;
        case '\n':
        case '\r': fputc(' ', out); break;
        default: fputc(*s, out); break;
        }
    }
    fputc('"', out);
}

void ppb_push_base64url(const char *s, char *out, size_t len)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(s), j = 0;
    if (len == 0)
        return;
    if (n == 0) { /* the Pushgateway's spelling of an empty value */
        snprintf(out, len, "=");
        return;
    }
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && j + 4 < len; i += 3) {
        unsigned v = (unsigned)u[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)u[i + 1] << 8;
        if (i + 2 < n)
            v |= u[i + 2];
        out[j++] = abc[(v >> 18) & 63];
        out[j++] = abc[(v >> 12) & 63];
        out[j++] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        out[j++] = i + 2 < n ? abc[v & 63] : '=';
    }
    out[j] = '\0';
}

/* Shortest decimal text that reads back as exactly x. */
static void write_double(FILE *out, double x)
{
    char buf[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    fputs(buf, out);
}

/* ---- what a body is made of ------------------------------------------------------ */

typedef struct collected {
    ppb_case c;
    ppb_result r; /* samples_ms is NULL: bodies carry summaries only (json has its own) */
} collected;

typedef struct collection {
    collected *items;
    int n, cap;
} collection;

static int collect_result(void *ctx, const ppb_case *c, const ppb_result *r)
{
    collection *col = ctx;
    if (col->n == col->cap) {
        int cap = col->cap ? col->cap * 2 : 64;
        collected *grown = realloc(col->items, sizeof *grown * (size_t)cap);
        if (!grown)
            return PPB_ENOMEM;
        col->items = grown;
        col->cap = cap;
    }
    collected *it = &col->items[col->n++];
    it->c = *c;
    it->r = *r;
    it->r.samples_ms = NULL;
    it->r.n_samples = r->n_samples;
    return 0;
}

/* The shard a run measured (K/N); 0 when it is not one shard: an unsharded run,
 * or the shards of a night folded into one run by merge (the whole suite). */
static int run_shard(const ppb_run_info *run, int *k, int *n)
{
    *k = run->shard_index;
    *n = run->shard_count;
    if (*n > 0 && run->n_shards <= 1)
        return 1;
    *k = *n = 0;
    return 0;
}

/* "YYYY-MM-DDTHH:MM:SSZ" -> seconds since the epoch; 0 if it does not parse. */
static long long epoch_seconds(const char *iso)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (sscanf(iso, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? 0 : (long long)t;
}

/* ---- Prometheus text format (version 0.0.4) -------------------------------------- */

typedef struct gauge {
    const char *name;     /* in base units, as Prometheus asks: seconds, bytes and FLOPs per second */
    const char *help;
    size_t offset;        /* a double in ppb_result */
    double to_base;       /* the stored unit (ms, TFLOP/s, GB/s) times this */
} gauge;

#define TIMING_NOTE " (CPU timings when the run's backend is cpu)"
static const gauge case_gauges[] = {
    {"ppbench_case_median_seconds", "Median time of one kernel launch" TIMING_NOTE, offsetof(ppb_result, median_ms),
     1e-3},
    {"ppbench_case_mean_seconds", "Mean time of one kernel launch" TIMING_NOTE, offsetof(ppb_result, mean_ms), 1e-3},
    {"ppbench_case_stdev_seconds", "Standard deviation of the launch times", offsetof(ppb_result, stdev_ms), 1e-3},
    {"ppbench_case_min_seconds", "Fastest launch", offsetof(ppb_result, min_ms), 1e-3},
    {"ppbench_case_max_seconds", "Slowest launch", offsetof(ppb_result, max_ms), 1e-3},
    {"ppbench_case_q1_seconds", "First quartile of the launch times", offsetof(ppb_result, q1_ms), 1e-3},
    {"ppbench_case_q3_seconds", "Third quartile of the launch times", offsetof(ppb_result, q3_ms), 1e-3},
    {"ppbench_case_rel_noise_ratio", "Interquartile range over the median", offsetof(ppb_result, rel_noise), 1},
    {"ppbench_case_flops_per_second", "Useful FLOPs over the median time", offsetof(ppb_result, tflops), 1e12},
    {"ppbench_case_bytes_per_second", "Minimum bytes moved over the median time", offsetof(ppb_result, gbps), 1e9},
};

/* The value of gauge g for a result, in base units; NaN when it has none to
 * show: no timing samples (refused, skipped, error: the store keeps zeros
 * there) or not finite. */
static double gauge_value(const collected *it, size_t g)
{
    double v = *(const double *)((const char *)&it->r + case_gauges[g].offset);
    return it->r.n_samples > 0 && isfinite(v) ? v * case_gauges[g].to_base : NAN;
}

static void prom_family(FILE *out, const char *name, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* The labels of one case's series: where it ran (backend, device), the kernel,
 * and each case field that applies to it under its own name (impl among them),
 * so dashboards select and group by field instead of parsing a key. */
static void prom_label(FILE *out, const char *name, const char *value, int first)
{
    fprintf(out, "%s%s=\"", first ? "" : ",", name);
    ppb_push_prom_label_value(out, value);
    fputc('"', out);
}

/* Each case field that applies to the case's kernel, as (name, text value).
 * A field added after series existed (the key leaves it out at its default:
 * decode_seqs, num_stages) is left out at its default here too, so adding it
 * did not rename every stored series. impl is the exception: its label was
 * there from the start (impl="builtin"), though the key leaves builtin out. */
static void each_case_field(const ppb_case *c, void (*fn)(FILE *out, const char *name, const char *value), FILE *out)
{
    for (int f = 0; f < PPB_F_COUNT; f++) {
        const ppb_field_info *fi = ppb_field_get(f);
        if (!((fi->kernels >> c->kernel) & 1u))
            continue;
        if (f != PPB_F_IMPL && ppb_case_key_omits(c, f))
            continue;
        char value[PPB_FIELD_TEXT_MAX];
        ppb_field_format_value(f, ppb_case_get(c, f), value, sizeof value);
        fn(out, fi->name, value);
    }
}

static void prom_field_label(FILE *out, const char *name, const char *value) { prom_label(out, name, value, 0); }

static void prom_case_labels_open(FILE *out, const ppb_run_info *run, const collected *it)
{
    fputc('{', out);
    prom_label(out, "backend", run->backend, 1);
    prom_label(out, "device", run->device, 0);
    prom_label(out, "kernel", ppb_kernel_name(it->c.kernel), 0);
    each_case_field(&it->c, prom_field_label, out);
}

static void prom_case_labels(FILE *out, const ppb_run_info *run, const collected *it)
{
    prom_case_labels_open(out, run, it);
    fputc('}', out);
}

static void write_prometheus(FILE *out, const ppb_run_info *run, const collection *col)
{
    prom_family(out, "ppbench_run_info", "The pushed run; its provenance is in the labels");
    fprintf(out, "ppbench_run_info{run_id=\"%lld\"", (long long)run->id);
    const char *labels[][2] = {{"status", run->status},     {"git_commit", run->git_commit},
                               {"backend", run->backend},   {"device", run->device},
                               {"target", run->target},     {"label", run->label},
                               {"suite_hash", run->suite_hash}};
    for (size_t i = 0; i < sizeof labels / sizeof *labels; i++) {
        fprintf(out, ",%s=\"", labels[i][0]);
        ppb_push_prom_label_value(out, labels[i][1]);
        fputc('"', out);
    }
    fputs("} 1\n", out);
    prom_family(out, "ppbench_run_start_timestamp_seconds", "When the run started, Unix time");
    fprintf(out, "ppbench_run_start_timestamp_seconds %lld\n", epoch_seconds(run->started_at));
    prom_family(out, "ppbench_run_cases", "Cases the run planned");
    fprintf(out, "ppbench_run_cases %d\n", run->n_cases);
    prom_family(out, "ppbench_run_results", "Stored results of the run by status");
    for (int st = PPB_STATUS_OK; st < PPB_STATUS_COUNT; st++) {
        int n = 0;
        for (int i = 0; i < col->n; i++)
            n += col->items[i].r.status == st;
        fprintf(out, "ppbench_run_results{status=\"%s\"} %d\n", ppb_status_name(st), n);
    }

    prom_family(out, "ppbench_case_status",
                "1 for each stored case, with its status (ok, wrong, refused, ...) as a label");
    for (int i = 0; i < col->n; i++) {
        const collected *it = &col->items[i];
        fputs("ppbench_case_status", out);
        prom_case_labels_open(out, run, it);
        prom_label(out, "status", ppb_status_name(it->r.status), 0);
        fputs("} 1\n", out);
    }
    prom_family(out, "ppbench_case_check_pass",
                "1 when the output matched the float64 reference, 0 when not (checked cases only)");
    for (int i = 0; i < col->n; i++) {
        const collected *it = &col->items[i];
        if (!it->r.check.checked)
            continue;
        fputs("ppbench_case_check_pass", out);
        prom_case_labels(out, run, it);
        fprintf(out, " %d\n", it->r.check.pass ? 1 : 0);
    }
    prom_family(out, "ppbench_case_samples", "Timing samples behind the statistics");
    for (int i = 0; i < col->n; i++) {
        fputs("ppbench_case_samples", out);
        prom_case_labels(out, run, &col->items[i]);
        fprintf(out, " %d\n", col->items[i].r.n_samples);
    }
    /* Timings only where there are some (a refused or skipped case stores
     * zeros, not measurements), and only finite values. */
    for (size_t g = 0; g < sizeof case_gauges / sizeof *case_gauges; g++) {
        prom_family(out, case_gauges[g].name, case_gauges[g].help);
        for (int i = 0; i < col->n; i++) {
            const collected *it = &col->items[i];
            double v = gauge_value(it, g);
            if (isnan(v))
                continue;
            fputs(case_gauges[g].name, out);
            prom_case_labels(out, run, it);
            fputc(' ', out);
            write_double(out, v);
            fputc('\n', out);
        }
    }
}

/* ---- InfluxDB line protocol ------------------------------------------------------- */

/* A tag with an empty value is left out: line protocol has no empty tags. */
static void influx_tag(FILE *out, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    fputc(',', out);
    ppb_push_influx_tag(out, key);
    fputc('=', out);
    ppb_push_influx_tag(out, value);
}

static void influx_run_tags(FILE *out, const ppb_run_info *run)
{
    influx_tag(out, "suite", run->suite_name);
    influx_tag(out, "host", run->host);
    influx_tag(out, "backend", run->backend);
    influx_tag(out, "device", run->device);
    influx_tag(out, "target", run->target);
}

static void write_influx(FILE *out, const ppb_run_info *run, const collection *col)
{
    long long ts = epoch_seconds(run->started_at);
    fputs("ppbench_run", out);
    influx_run_tags(out, run);
    fprintf(out, " run_id=%lldi,status=", (long long)run->id);
    ppb_push_influx_string(out, run->status);
    fprintf(out, ",n_cases=%di,n_done=%di,git_commit=", run->n_cases, run->n_done);
    ppb_push_influx_string(out, run->git_commit);
    fputs(",label=", out);
    ppb_push_influx_string(out, run->label);
    fprintf(out, " %lld000000000\n", ts);
    for (int i = 0; i < col->n; i++) {
        const collected *it = &col->items[i];
        fputs("ppbench_case", out);
        influx_run_tags(out, run);
        influx_tag(out, "kernel", ppb_kernel_name(it->c.kernel));
        each_case_field(&it->c, influx_tag, out); /* a tag per case field (impl among them), as in Prometheus */
        fprintf(out, " run_id=%lldi,status=", (long long)run->id);
        ppb_push_influx_string(out, ppb_status_name(it->r.status));
        fprintf(out, ",n_samples=%di,timing_is_cpu=%s", it->r.n_samples,
                it->r.timing_is_cpu ? "true" : "false");
        if (it->r.check.checked)
            fprintf(out, ",check_pass=%s", it->r.check.pass ? "true" : "false");
        for (size_t g = 0; g < sizeof case_gauges / sizeof *case_gauges; g++) {
            double v = gauge_value(it, g);
            if (isnan(v))
                continue;
            fprintf(out, ",%s=", case_gauges[g].name + strlen("ppbench_case_"));
            write_double(out, v);
        }
        fprintf(out, " %lld000000000\n", ts);
    }
}

/* ---- the request ---------------------------------------------------------------------- */

/* Append the Pushgateway grouping path unless the URL already names a job. */
static int prometheus_url(const char *to, const ppb_run_info *run, char *out, size_t len,
                          ppb_err *err)
{
    CURLU *h = curl_url();
    char *path = NULL, *full = NULL;
    int rc = PPB_OK;
    if (!h)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (curl_url_set(h, CURLUPART_URL, to, 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        rc = ppb_fail(err, PPB_EINPUT, "'%s' is not a URL", to);
        goto end;
    }
    if (!strstr(path, "/metrics/job/")) {
        char suite[512], host[512], grouping[2048];
        ppb_push_base64url(run->suite_name, suite, sizeof suite);
        ppb_push_base64url(run->host, host, sizeof host);
        size_t plen = strlen(path);
        while (plen > 0 && path[plen - 1] == '/')
            plen--;
        int n = snprintf(grouping, sizeof grouping, "%.*s/metrics/job/ppbench/suite@base64/%s"
                         "/host@base64/%s", (int)plen, path, suite, host);
        int k, nsh;
        if (run_shard(run, &k, &nsh)) {
            char shard[32], enc[64];
            snprintf(shard, sizeof shard, "%d/%d", k, nsh);
            ppb_push_base64url(shard, enc, sizeof enc);
            n += snprintf(grouping + n, sizeof grouping - (size_t)n, "/shard@base64/%s", enc);
        }
        if (n >= (int)sizeof grouping ||
            curl_url_set(h, CURLUPART_PATH, grouping, 0) != CURLUE_OK) {
            rc = ppb_fail(err, PPB_EINPUT, "cannot build the Pushgateway URL from '%s'", to);
            goto end;
        }
    }
    if (curl_url_get(h, CURLUPART_URL, &full, 0) != CURLUE_OK || strlen(full) >= len) {
        rc = ppb_fail(err, PPB_EINPUT, "cannot build the Pushgateway URL from '%s'", to);
        goto end;
    }
    snprintf(out, len, "%s", full);
end:
    curl_free(path);
    curl_free(full);
    curl_url_cleanup(h);
    return rc;
}

/* Timestamps are written in ns: a URL asking for another precision would store
 * them wrongly, so it is refused. */
static int check_influx_url(const char *to, ppb_err *err)
{
    CURLU *h = curl_url();
    char *query = NULL;
    int rc = PPB_OK;
    if (!h)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (curl_url_set(h, CURLUPART_URL, to, 0) != CURLUE_OK) {
        rc = ppb_fail(err, PPB_EINPUT, "'%s' is not a URL", to);
        goto end;
    }
    if (curl_url_get(h, CURLUPART_QUERY, &query, 0) == CURLUE_OK) {
        for (const char *p = query; p && *p;) {
            const char *amp = strchr(p, '&');
            size_t n = amp ? (size_t)(amp - p) : strlen(p);
            if (n > 10 && strncmp(p, "precision=", 10) == 0 &&
                !((n == 12 && strncmp(p + 10, "ns", 2) == 0) ||
                  (n == 11 && p[10] == 'n'))) {
                rc = ppb_fail(err, PPB_EINPUT,
                              "%s: ppbench writes nanosecond timestamps; drop the precision "
                              "parameter or use precision=ns",
                              to);
                goto end;
            }
            p = amp ? amp + 1 : NULL;
        }
    }
end:
    curl_free(query);
    curl_url_cleanup(h);
    return rc;
}

void ppb_push_request_free(ppb_push_request *req)
{
    free(req->body);
    req->body = NULL;
    req->body_len = 0;
}

int ppb_push_build(ppb_store *s, int64_t run_id, ppb_push_format f, const char *to,
                   ppb_push_request *req, ppb_err *err)
{
    memset(req, 0, sizeof *req);
    collection col = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = NULL;
    ppb_run_info *run = malloc(sizeof *run);
    int rc = PPB_OK;
    if (!run) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }
    if ((rc = ppb_http_check_url(to, "http,https", err)) != PPB_OK ||
        (rc = ppb_store_get_run(s, run_id, run, err)) != PPB_OK)
        goto end;
    if (!(out = open_memstream(&buf, &len))) {
        rc = ppb_fail(err, PPB_ENOMEM, "cannot open a memory stream: %s", strerror(errno));
        goto end;
    }
    switch (f) {
    case PPB_PUSH_PROMETHEUS:
        req->method = "PUT";
        req->content_type = "text/plain; version=0.0.4; charset=utf-8";
        if ((rc = prometheus_url(to, run, req->url, sizeof req->url, err)) != PPB_OK)
            goto end;
        break;
    case PPB_PUSH_INFLUX:
        req->method = "POST";
        req->content_type = "text/plain; charset=utf-8";
        if ((rc = check_influx_url(to, err)) != PPB_OK)
            goto end;
        snprintf(req->url, sizeof req->url, "%s", to);
        break;
    case PPB_PUSH_JSON:
        req->method = "POST";
        req->content_type = "application/json";
        snprintf(req->url, sizeof req->url, "%s", to);
        break;
    default:
        rc = ppb_fail(err, PPB_EINPUT, "unknown push format %d", (int)f);
        goto end;
    }
    if (f == PPB_PUSH_JSON) {
        rc = ppb_store_export(s, run_id, "json", out, err);
    } else {
        rc = ppb_store_each_result(s, run_id, collect_result, &col, err);
        if (rc == PPB_ENOMEM)
            ppb_fail(err, PPB_ENOMEM, "out of memory collecting run %lld", (long long)run_id);
        if (rc == PPB_OK) {
            if (f == PPB_PUSH_PROMETHEUS)
                write_prometheus(out, run, &col);
            else
                write_influx(out, run, &col);
        }
    }
    if (rc)
        goto end;
    if (fflush(out) != 0 || ferror(out)) {
        rc = ppb_fail(err, PPB_ENOMEM, "cannot build the %s body", ppb_push_format_name(f));
        goto end;
    }
    fclose(out);
    out = NULL;
    req->body = buf;
    req->body_len = len;
    buf = NULL;
end:
    if (out)
        fclose(out);
    free(buf);
    free(col.items);
    free(run);
    return rc;
}

/* ---- sending, with the queue ---------------------------------------------------------- */

static void note(ppb_push_note fn, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(ppb_push_note fn, void *ctx, const char *fmt, ...)
{
    if (!fn)
        return;
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fn(ctx, line);
}

typedef struct pending_list {
    ppb_push_pending *items;
    int n, cap;
} pending_list;

static int collect_pending(void *ctx, const ppb_push_pending *p)
{
    pending_list *l = ctx;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        ppb_push_pending *grown = realloc(l->items, sizeof *grown * (size_t)cap);
        if (!grown)
            return PPB_ENOMEM;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = *p;
    return 0;
}

/* Build and send one push. `sent_url` gets the request URL (for supersession). */
static int send_one(ppb_store *s, int64_t run_id, ppb_push_format f, const char *to,
                    const ppb_http_options *http, char *sent_url, size_t url_len, int *tries,
                    ppb_err *err)
{
    ppb_push_request req;
    ppb_http_result res = {0};
    *tries = 0;
    int rc = ppb_push_build(s, run_id, f, to, &req, err);
    if (rc == PPB_OK) {
        if (sent_url)
            snprintf(sent_url, url_len, "%s", req.url);
        rc = ppb_http_request(http, req.method, req.url, req.content_type, req.body,
                              req.body_len, NULL, 0, &res, err);
        *tries = res.tries;
    }
    ppb_push_request_free(&req);
    return rc;
}

int ppb_push_run(ppb_store *s, int64_t run_id, ppb_push_format f, const char *to,
                 const ppb_http_options *http, int queue_failures, ppb_push_note note_fn,
                 void *ctx, ppb_push_outcome *out, ppb_err *err)
{
    memset(out, 0, sizeof *out);
    char origin[1024];
    pending_list backlog = {0};
    int *failed = NULL;
    char (*urls)[4096] = NULL;
    int rc = ppb_http_check_url(to, "http,https", err);
    if (rc || (rc = ppb_http_origin(to, origin, sizeof origin, err)) != PPB_OK ||
        (rc = ppb_http_check_token_transport(http, to, err)) != PPB_OK)
        return rc;
    /* Refuse a bad run or format before anything is sent or queued. */
    if (run_id > 0) {
        ppb_push_request probe;
        rc = ppb_push_build(s, run_id, f, to, &probe, err);
        ppb_push_request_free(&probe);
        if (rc)
            return rc;
    }
    if ((rc = ppb_push_queue_each(s, collect_pending, &backlog, err)) != PPB_OK) {
        if (rc == PPB_ENOMEM)
            ppb_fail(err, PPB_ENOMEM, "out of memory reading the push queue");
        goto end;
    }
    failed = calloc((size_t)backlog.n + 1, sizeof *failed);
    urls = calloc((size_t)backlog.n + 1, sizeof *urls);
    if (!failed || !urls) {
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
        goto end;
    }

    /* The backlog first, oldest first: a Pushgateway keeps the last push of a
     * group, so the newest data must go last. One short try each, and a
     * bounded number of them. */
    ppb_http_options once = *http;
    once.retries = 0;
    if (once.timeout_s > PPB_PUSH_BACKLOG_TIMEOUT_S)
        once.timeout_s = PPB_PUSH_BACKLOG_TIMEOUT_S;
    int tried = 0;
    for (int i = 0; i < backlog.n; i++) {
        const ppb_push_pending *p = &backlog.items[i];
        char p_origin[1024];
        ppb_err perr = {{0}};
        ppb_push_format pf;
        if (ppb_http_origin(p->url, p_origin, sizeof p_origin, &perr) != PPB_OK ||
            strcmp(p_origin, origin) != 0) {
            out->backlog_elsewhere++; /* another server: the token is not for it */
            continue;
        }
        if (p->run_id == run_id && strcmp(p->url, to) == 0 &&
            strcmp(p->format, ppb_push_format_name(f)) == 0)
            continue; /* it is this very push, sent below */
        if (p->attempts >= PPB_PUSH_QUEUE_MAX_ATTEMPTS) {
            ppb_err qerr = {{0}};
            if (ppb_push_queue_drop(s, p->id, &qerr) == PPB_OK) {
                out->backlog_expired++;
                note(note_fn, ctx, "dropped queued push %lld (run %lld to %s) after %d attempts: push it again by hand",
                     (long long)p->id, (long long)p->run_id, p->url, p->attempts);
            } else {
                note(note_fn, ctx, "warning: %s", qerr.msg);
            }
            continue;
        }
        if (tried == PPB_PUSH_BACKLOG_PER_PUSH) {
            out->backlog_later++;
            continue;
        }
        tried++;
        if (ppb_push_format_parse(p->format, &pf, &perr) != PPB_OK) {
            note(note_fn, ctx, "queued push %lld: %s (left queued)", (long long)p->id, perr.msg);
            failed[i] = 1;
            out->backlog_failed++;
            continue;
        }
        int tries = 0;
        int prc = send_one(s, p->run_id, pf, p->url, &once, urls[i], sizeof urls[i], &tries, &perr);
        ppb_err qerr = {{0}};
        if (prc == PPB_OK) {
            out->backlog_sent++;
            note(note_fn, ctx, "sent queued push %lld: run %lld as %s to %s", (long long)p->id,
                 (long long)p->run_id, p->format, p->url);
            if (ppb_push_queue_forget(s, p->run_id, p->url, p->format, &qerr) != PPB_OK)
                note(note_fn, ctx, "warning: %s", qerr.msg);
        } else {
            failed[i] = 1;
            out->backlog_failed++;
            note(note_fn, ctx, "queued push %lld (run %lld) failed again: %s", (long long)p->id,
                 (long long)p->run_id, perr.msg);
            if (ppb_push_queue_record_failure(s, p->run_id, p->url, p->format, tries, perr.msg,
                                              &qerr) != PPB_OK)
                note(note_fn, ctx, "warning: %s", qerr.msg);
        }
    }

    if (run_id <= 0) {
        if (out->backlog_failed > 0)
            rc = ppb_fail(err, PPB_EIO, "%d queued push%s for %s still failing (left queued)",
                          out->backlog_failed, out->backlog_failed == 1 ? "" : "es", origin);
        goto end;
    }

    int tries = 0;
    char sent_url[4096] = "";
    rc = send_one(s, run_id, f, to, http, sent_url, sizeof sent_url, &tries, err);
    ppb_err qerr = {{0}};
    if (rc == PPB_OK) {
        out->sent = 1;
        if (ppb_push_queue_forget(s, run_id, to, ppb_push_format_name(f), &qerr) != PPB_OK)
            note(note_fn, ctx, "warning: %s", qerr.msg);
        /* An older run's Prometheus push to the same group that failed just now
         * is superseded: the gateway keeps only the newest push of a group, and
         * sending the old one later would overwrite the new values. */
        for (int i = 0; i < backlog.n && f == PPB_PUSH_PROMETHEUS; i++) {
            const ppb_push_pending *p = &backlog.items[i];
            if (!failed[i] || !urls[i][0] || strcmp(urls[i], sent_url) != 0 ||
                strcmp(p->format, "prometheus") != 0 || p->run_id >= run_id)
                continue;
            if (ppb_push_queue_forget(s, p->run_id, p->url, p->format, &qerr) == PPB_OK) {
                out->backlog_failed--;
                note(note_fn, ctx,
                     "queued push %lld (run %lld) is superseded by run %lld in the same "
                     "Pushgateway group: dropped",
                     (long long)p->id, (long long)p->run_id, (long long)run_id);
            }
        }
        goto end;
    }
    if (rc == PPB_EINPUT || !queue_failures)
        goto end;
    if (ppb_push_queue_record_failure(s, run_id, to, ppb_push_format_name(f), tries, err->msg,
                                      &qerr) != PPB_OK) {
        ppb_err_prefix(err, "push failed and could not be queued (%s): ", qerr.msg);
        goto end;
    }
    out->queued_now = 1;
    ppb_err_prefix(err, "queued for the next push to %s: ", origin);
    rc = PPB_EIO;
end:
    free(failed);
    free(urls);
    free(backlog.items);
    return rc;
}
