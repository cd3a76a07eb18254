/* How a run was measured, as every page and document qualifies its timings: on
 * the CPU backend they are CPU timings and say nothing about a GPU, and on a
 * machine whose load average exceeded its cores as the run ended they were
 * disturbed (a difference may be the machine, not the code). The one rule for
 * when each note is due and its one wording, for the report's pages (run,
 * proposal, trend) and the run, verdict and trend documents (JSON, Markdown). */
#ifndef PPB_MEASURED_H
#define PPB_MEASURED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ppb_error.h"
#include "store.h"

typedef struct ppb_measured {
    int64_t run_id;
    char backend[16];
    char device[128];
    double load_average;       /* 1-minute load average as the run ended (env after.loadavg); NAN: not recorded */
    int cpu_cores;             /* env after.cpu_cores; 0: not recorded */
    char kernel_threads[24];   /* env after.cpu_kernel_threads ("1", "all (2)"); "": not recorded */
} ppb_measured;

/* From a stored run and its environment's after.loadavg, after.cpu_cores and
 * after.cpu_kernel_threads values (NULL: not recorded). */
void ppb_measured_of(const ppb_run_info *run, const char *loadavg, const char *cpu_cores, const char *kernel_threads,
                     ppb_measured *m);
/* The same, the run and its environment read from the store. */
int ppb_measured_read(ppb_store *s, int64_t run_id, ppb_measured *m, ppb_err *err);

/* 1 when the CPU backend timed the run. */
int ppb_measured_cpu_timings(const ppb_measured *m);
/* The rule: 1 when the load average exceeded the cores, both recorded. */
int ppb_measured_load_warning(const ppb_measured *m);

/* Room for a note. */
#define PPB_MEASURED_NOTE_MAX 400
/* Each note, when due, as one line without a prefix (the page adds "note: ");
 * "" when not due. */
void ppb_measured_cpu_note(const ppb_measured *m, char *buf, size_t len);
void ppb_measured_load_note(const ppb_measured *m, char *buf, size_t len);

/* The members a document's "measured" object has about the load, written
 * inside it after others: "load_average" (null when not recorded), "cpu_cores"
 * (null when not recorded), "load_warning" (the rule) and "notes" (every note
 * due, in the pages' words). */
void ppb_measured_json_load(const ppb_measured *m, FILE *out);
/* A whole "measured" object: "run", "backend", "device", "cpu_timings" and the
 * load's members. */
void ppb_measured_json(const ppb_measured *m, FILE *out);
/* The notes due as Markdown paragraphs ("**Note:** ..."); the CPU note only
 * with_cpu_note (a document that says CPU timings its own way leaves it out). */
void ppb_measured_markdown(const ppb_measured *m, int with_cpu_note, FILE *out);

#endif
