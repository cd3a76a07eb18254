#include "measured.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doc_text.h"

void ppb_measured_of(const ppb_run_info *run, const char *loadavg, const char *cpu_cores, const char *kernel_threads,
                     ppb_measured *m)
{
    memset(m, 0, sizeof *m);
    m->run_id = run->id;
    snprintf(m->backend, sizeof m->backend, "%s", run->backend);
    snprintf(m->device, sizeof m->device, "%s", run->device);
    /* "L1 L5 L15": the first, the load as the run ended */
    m->load_average = loadavg ? atof(loadavg) : NAN;
    m->cpu_cores = cpu_cores ? (int)strtol(cpu_cores, NULL, 10) : 0;
    snprintf(m->kernel_threads, sizeof m->kernel_threads, "%s", kernel_threads ? kernel_threads : "");
}

int ppb_measured_read(ppb_store *s, int64_t run_id, ppb_measured *m, ppb_err *err)
{
    ppb_run_info *run = malloc(sizeof *run);
    if (!run)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    char load[128], cores[32], threads[24];
    int rc = ppb_store_get_run(s, run_id, run, err), has_load = 0, has_cores = 0, has_threads = 0;
    if (!rc && (has_load = ppb_store_get_env(s, run_id, "after.loadavg", load, sizeof load, err)) < 0)
        rc = has_load;
    if (!rc && (has_cores = ppb_store_get_env(s, run_id, "after.cpu_cores", cores, sizeof cores, err)) < 0)
        rc = has_cores;
    if (!rc && (has_threads = ppb_store_get_env(s, run_id, "after.cpu_kernel_threads", threads, sizeof threads, err)) < 0)
        rc = has_threads;
    if (!rc)
        ppb_measured_of(run, has_load ? load : NULL, has_cores ? cores : NULL, has_threads ? threads : NULL, m);
    free(run);
    return rc;
}

int ppb_measured_cpu_timings(const ppb_measured *m)
{
    return strcmp(m->backend, "cpu") == 0;
}

int ppb_measured_load_warning(const ppb_measured *m)
{
    return m->cpu_cores > 0 && m->load_average > m->cpu_cores;
}

void ppb_measured_cpu_note(const ppb_measured *m, char *buf, size_t len)
{
    if (ppb_measured_cpu_timings(m) && m->kernel_threads[0])
        snprintf(buf, len, "CPU backend on %s, each launch on %s thread%s: these are CPU timings and say nothing about a GPU",
                 m->device, m->kernel_threads, strcmp(m->kernel_threads, "1") == 0 ? "" : "s");
    else if (ppb_measured_cpu_timings(m))
        snprintf(buf, len, "CPU backend on %s: these are CPU timings and say nothing about a GPU", m->device);
    else if (len)
        buf[0] = '\0';
}

void ppb_measured_load_note(const ppb_measured *m, char *buf, size_t len)
{
    if (ppb_measured_load_warning(m))
        snprintf(buf, len,
                 "the load average was %.2f on %d cores when run %lld ended: its timings were disturbed, so a "
                 "difference here may be the machine, not the code",
                 m->load_average, m->cpu_cores, (long long)m->run_id);
    else if (len)
        buf[0] = '\0';
}

/* A REAL as SQLite's JSON writes one (15 digits, always with a decimal point or
 * an exponent), as the verdict document always wrote the load: a reader's
 * float stays a float (2.0, not 2). */
static void json_real(FILE *out, double v)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    fprintf(out, "%s%s", buf, strpbrk(buf, ".en") ? "" : ".0");
}

void ppb_measured_json_load(const ppb_measured *m, FILE *out)
{
    fputs("\"load_average\":", out);
    if (isfinite(m->load_average))
        json_real(out, m->load_average);
    else
        fputs("null", out);
    if (m->cpu_cores > 0)
        fprintf(out, ",\"cpu_cores\":%d", m->cpu_cores);
    else
        fputs(",\"cpu_cores\":null", out);
    fprintf(out, ",\"load_warning\":%s,\"notes\":[", ppb_measured_load_warning(m) ? "true" : "false");
    char cpu[PPB_MEASURED_NOTE_MAX], load[PPB_MEASURED_NOTE_MAX];
    ppb_measured_cpu_note(m, cpu, sizeof cpu);
    ppb_measured_load_note(m, load, sizeof load);
    if (cpu[0])
        ppb_json_string(out, cpu);
    if (load[0]) {
        fputs(cpu[0] ? "," : "", out);
        ppb_json_string(out, load);
    }
    fputc(']', out);
}

void ppb_measured_json(const ppb_measured *m, FILE *out)
{
    fprintf(out, "{\"run\":%lld,\"backend\":", (long long)m->run_id);
    ppb_json_string(out, m->backend);
    fputs(",\"device\":", out);
    ppb_json_string(out, m->device);
    fprintf(out, ",\"cpu_timings\":%s,", ppb_measured_cpu_timings(m) ? "true" : "false");
    ppb_measured_json_load(m, out);
    fputc('}', out);
}

void ppb_measured_markdown(const ppb_measured *m, int with_cpu_note, FILE *out)
{
    char note[PPB_MEASURED_NOTE_MAX];
    for (int which = with_cpu_note ? 0 : 1; which < 2; which++) {
        if (which == 0)
            ppb_measured_cpu_note(m, note, sizeof note);
        else
            ppb_measured_load_note(m, note, sizeof note);
        if (!note[0])
            continue;
        fputs("\n**Note:** ", out);
        ppb_md_text(out, note);
        fputs(".\n", out);
    }
}
