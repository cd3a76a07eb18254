#include "run_doc.h"

#include <stdlib.h>
#include <string.h>

#include "doc_text.h"
#include "measured.h"

/* An environment entry of the run as JSON: text, or its leading integer (0
 * without one) as SQLite's CAST(value AS INTEGER) reads it; null when the run
 * did not record it. */
static int env_json(ppb_store *s, int64_t run_id, const char *key, int as_integer, FILE *out, ppb_err *err)
{
    char value[1024];
    int has = ppb_store_get_env(s, run_id, key, value, sizeof value, err);
    if (has < 0)
        return has;
    if (!has)
        fputs("null", out);
    else if (as_integer)
        fprintf(out, "%lld", strtoll(value, NULL, 10));
    else
        ppb_json_string(out, value);
    return PPB_OK;
}

int ppb_run_device_json(ppb_store *s, const ppb_run_info *run, FILE *out, ppb_err *err)
{
    static const struct {
        const char *name, *env_key;
        int as_integer;
    } recorded[] = {
        {"compute_capability", "device.compute_capability", 0},
        {"sm_count", "device.sm_count", 1},
        {"mem_total_bytes", "device.mem_total", 1},
        {"driver", "device.driver", 0},
        {"runtime", "device.runtime", 0},
        {"sm_clock_mhz", "before.nvml.sm_clock_mhz", 1},
        {"sm_clock_max_mhz", "before.sm_clock_max_mhz", 1},
        {"mem_clock_mhz", "before.nvml.mem_clock_mhz", 1},
        {"mem_clock_max_mhz", "before.mem_clock_max_mhz", 1},
        {"cpu_mhz", "before.cpu_mhz", 1},
    };
    fputs("{\"name\":", out);
    ppb_json_string(out, run->device);
    fputs(",\"backend\":", out);
    ppb_json_string(out, run->backend);
    fprintf(out, ",\"cpu_timings\":%s", strcmp(run->backend, "cpu") == 0 ? "true" : "false");
    int rc = PPB_OK;
    for (size_t i = 0; i < sizeof recorded / sizeof *recorded && !rc; i++) {
        fprintf(out, ",\"%s\":", recorded[i].name);
        rc = env_json(s, run->id, recorded[i].env_key, recorded[i].as_integer, out, err);
    }
    fputc('}', out);
    return rc;
}

typedef struct json_list {
    FILE *out;
    int n;
} json_list;

static int impl_item(void *ctx, const char *impl)
{
    json_list *l = ctx;
    fputs(l->n++ ? "," : "", l->out);
    ppb_json_string(l->out, impl);
    return 0;
}

/* The fields that name a run, in every document that holds runs (ppbench-run/1's
 * "run", each of ppbench-runs/1's "runs"), without braces. `id` stays first:
 * ci/nightly.sh reads it from the run's document without a JSON parser. */
static int run_fields_json(ppb_store *s, const ppb_run_info *run, FILE *out, ppb_err *err)
{
    const struct {
        const char *name, *value;
    } text[] = {
        {"kind", run->kind},       {"label", run->label},   {"suite_name", run->suite_name},
        {"suite_path", run->suite_path}, {"suite_hash", run->suite_hash}, {"git_commit", run->git_commit},
        {"host", run->host},       {"backend", run->backend}, {"device", run->device},
        {"target", run->target},   {"started_at", run->started_at},
        {"finished_at", run->finished_at[0] ? run->finished_at : NULL},   /* null while running */
        {"status", run->status},
    };
    fprintf(out, "\"id\":%lld", (long long)run->id);
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        fprintf(out, ",\"%s\":", text[i].name);
        if (text[i].value)
            ppb_json_string(out, text[i].value);
        else
            fputs("null", out);
    }
    fprintf(out, ",\"n_cases\":%d,\"n_done\":%d,\"impls\":[", run->n_cases, run->n_done);
    json_list impls = {out, 0};
    int rc = ppb_store_each_run_impl(s, run->id, impl_item, &impls, err);
    fputc(']', out);
    return rc;
}

/* Results per status, every status named (0 when none): CI reads counts.wrong as is. */
static int counts_json(ppb_store *s, int64_t run_id, FILE *out, ppb_err *err)
{
    int counts[PPB_STATUS_COUNT];
    int rc = ppb_store_run_status_counts(s, run_id, counts, err);
    if (rc)
        return rc;
    for (int st = 0; st < PPB_STATUS_COUNT; st++)
        fprintf(out, "%s\"%s\":%d", st ? "," : "{", ppb_status_name(st), counts[st]);
    fputc('}', out);
    return PPB_OK;
}

static int env_item(void *ctx, const char *key, const char *value)
{
    json_list *l = ctx;
    fputs(l->n++ ? "," : "", l->out);
    ppb_json_string(l->out, key);
    fputc(':', l->out);
    ppb_json_string(l->out, value);
    return 0;
}

static void json_member_number(FILE *out, const char *name, double v)
{
    fprintf(out, ",\"%s\":", name);
    ppb_json_number(out, v);
}

static int case_item(void *ctx, const ppb_case *c, const ppb_result *r)
{
    json_list *l = ctx;
    FILE *out = l->out;
    fputs(l->n++ ? ",{\"key\":" : "{\"key\":", out);
    ppb_json_string(out, c->key);
    fputs(",\"kernel\":", out);
    ppb_json_string(out, ppb_kernel_name(c->kernel));
    fputs(",\"impl\":", out);
    ppb_json_string(out, ppb_impl_name(c->config.impl));
    fprintf(out, ",\"status\":\"%s\",\"reason\":", ppb_status_name(r->status));
    ppb_json_string(out, r->reason);
    fprintf(out, ",\"timing_is_cpu\":%d,\"n_samples\":%d", r->timing_is_cpu, r->n_samples);
    json_member_number(out, "median_ms", r->median_ms);
    json_member_number(out, "q1_ms", r->q1_ms);
    json_member_number(out, "q3_ms", r->q3_ms);
    json_member_number(out, "rel_noise", r->rel_noise);
    json_member_number(out, "tflops", r->tflops);
    json_member_number(out, "gbps", r->gbps);
    fprintf(out, ",\"check\":{\"checked\":%d,\"pass\":%d", r->check.checked, r->check.pass);
    json_member_number(out, "max_abs_err", r->check.max_abs_err);
    json_member_number(out, "rel_l2_err", r->check.rel_l2_err);
    fputs("}}", out);
    return 0;
}

static int run_json(ppb_store *s, int64_t run_id, const char *command, int exit_code, FILE *out, ppb_err *err)
{
    ppb_run_info *run = malloc(sizeof *run);
    if (!run)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    int rc = ppb_store_get_run(s, run_id, run, err);
    if (rc)
        goto end;
    fprintf(out, "{\"schema\":\"" PPB_RUN_SCHEMA "\",\"command\":");
    ppb_json_string(out, command);
    fprintf(out, ",\"exit_code\":%d,\"run\":{", exit_code);
    if ((rc = run_fields_json(s, run, out, err)))
        goto end;
    fputs("},\"device\":", out);
    if ((rc = ppb_run_device_json(s, run, out, err)))
        goto end;
    /* how to read its timings: CPU timings, a machine loaded past its cores */
    ppb_measured m;
    if ((rc = ppb_measured_read(s, run_id, &m, err)))
        goto end;
    fputs(",\"measured\":", out);
    ppb_measured_json(&m, out);
    fputs(",\"counts\":", out);
    if ((rc = counts_json(s, run_id, out, err)))
        goto end;
    fputs(",\"env\":{", out);
    json_list env = {out, 0};
    if ((rc = ppb_store_each_env(s, run_id, env_item, &env, err)))
        goto end;
    fputs("},\"cases\":[", out);
    json_list cases = {out, 0};
    if ((rc = ppb_store_each_result(s, run_id, case_item, &cases, err)))
        goto end;
    fputs("]}\n", out);
end:
    free(run);
    return rc;
}

int ppb_run_doc_json(ppb_store *s, int64_t run_id, const char *command, int exit_code, FILE *out, ppb_err *err)
{
    int rc = ppb_store_read_begin(s, err);
    if (rc)
        return rc;
    rc = run_json(s, run_id, command, exit_code, out, err);
    ppb_store_read_end(s);
    return rc;
}

typedef struct runs_list {
    ppb_store *s;
    json_list list;
    ppb_err *err;
} runs_list;

static int runs_item(void *ctx, const ppb_run_info *run)
{
    runs_list *r = ctx;
    FILE *out = r->list.out;
    fputs(r->list.n++ ? ",{" : "{", out);
    int rc = run_fields_json(r->s, run, out, r->err);
    if (!rc) {
        fputs(",\"counts\":", out);
        rc = counts_json(r->s, run->id, out, r->err);
    }
    fputc('}', out);
    return rc;
}

int ppb_runs_doc_json(ppb_store *s, FILE *out, ppb_err *err)
{
    int rc = ppb_store_read_begin(s, err);
    if (rc)
        return rc;
    /* Newest first, as `list` prints them. */
    fputs("{\"schema\":\"" PPB_RUNS_SCHEMA "\",\"command\":\"list\",\"exit_code\":0,\"runs\":[", out);
    runs_list r = {s, {out, 0}, err};
    rc = ppb_store_each_run(s, runs_item, &r, err);
    fputs("]}\n", out);
    ppb_store_read_end(s);
    return rc;
}

typedef struct run_md {
    FILE *out;
    int rows;
} run_md;

static int md_untimed_case(void *ctx, const ppb_case *c, const ppb_result *r)
{
    run_md *m = ctx;
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

int ppb_run_doc_markdown(ppb_store *s, int64_t run_id, int exit_code, FILE *out, ppb_err *err)
{
    ppb_run_info *run = malloc(sizeof *run);
    int counts[PPB_STATUS_COUNT];
    ppb_measured m;
    int rc = run ? ppb_store_get_run(s, run_id, run, err) : ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (!rc)
        rc = ppb_store_run_status_counts(s, run_id, counts, err);
    if (!rc)
        rc = ppb_measured_read(s, run_id, &m, err);
    if (!rc) {
        fprintf(out, "### ppbench run %lld: ", (long long)run_id);
        ppb_md_text(out, run->suite_name);
        fprintf(out, " (exit %d)\n\n", exit_code);
        fprintf(out, "%s backend on ", run->backend);
        ppb_md_text(out, run->device);
        fputs(": ", out);
        int first = 1;
        for (int st = 0; st < PPB_STATUS_COUNT; st++)
            if (counts[st]) {
                fprintf(out, "%s%d %s", first ? "" : ", ", counts[st], ppb_status_name(st));
                first = 0;
            }
        fputs(".\n", out);
        ppb_measured_markdown(&m, 1, out);
        run_md md = {out, 0};
        rc = ppb_store_each_result(s, run_id, md_untimed_case, &md, err);
    }
    free(run);
    return rc;
}
