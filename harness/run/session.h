/* A measuring session: one backend on one device, optionally emulating a
 * target, plus the per-case steps every pipeline shares (inputs, refusal,
 * checked launch, reference check) and the creation of stored runs. `run`
 * uses one session; `propose` uses two on the same device, one per side. */
#ifndef PPB_SESSION_H
#define PPB_SESSION_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "reference.h"
#include "store.h"
#include "suite.h"
#include "target.h"
#include "workload.h"

typedef struct ppb_session {
    const ppb_backend_ops *ops;
    ppb_backend *backend;
    ppb_device_info device;
    const ppb_target *target;   /* borrowed; NULL = no target */
    const char *run_kind;       /* the kind of the runs it begins (ppb_store_run_kinds); NULL = "run" */
    char reference_cache[4096]; /* folder of cached reference rows (reference_cache.h); "" = off */
    /* Input sets whose rows were read from the cache / computed by the check /
     * computed ahead (ppb_session_inputs_ahead); atomic: two threads count. */
    int reference_hits, reference_misses, reference_ahead;
    /* The host copy of a checked launch's output, kept from case to case (grown, never
     * shrunk; freed by ppb_session_close): glibc maps a block over 32 MB afresh on every
     * malloc and unmaps it on free, so a new one per case paid its page faults each time. */
    uint16_t *check_out;
    size_t check_out_elems;
} ppb_session;

/* Open a backend by name: "cpu", "cuda", or "auto" (the GPU when one is usable,
 * else the CPU backend, saying so on `log` unless log is NULL: never silent). */
int ppb_session_open(ppb_session *s, const char *backend, int device_index,
                     const ppb_target *target, double cpu_max_gflop, FILE *log, ppb_err *err);
/* The same in two steps, so that inputs can be made ahead (ppb_session_inputs_ahead)
 * while a device starts: init (the reference cache, no backend), then the backend. */
void ppb_session_init(ppb_session *s, const ppb_target *target);
int ppb_session_open_backend(ppb_session *s, const char *backend, int device_index, double cpu_max_gflop,
                             FILE *log, ppb_err *err);
void ppb_session_close(ppb_session *s);

/* Seed of a case's inputs: the same key and suite seed give the same inputs in
 * every run, shard and commit. A/B pairs use their shared shape key. */
uint64_t ppb_case_input_seed(uint64_t suite_seed, const char *key);
/* The seed of a case's inputs: its shape key's, so every config and
 * implementation of a shape is checked and timed on the same bits (a run's
 * case on the bits of a proposal's side too), and a run builds them once per
 * shape. Runs whose environment lacks PPB_ENV_INPUTS_SEEDED_BY seeded by the
 * case key without impl: ppb_case_seed_per_config reproduces those. */
#define PPB_ENV_INPUTS_SEEDED_BY "inputs.seeded_by"
uint64_t ppb_case_seed(uint64_t suite_seed, const ppb_case *c);
uint64_t ppb_case_seed_per_config(uint64_t suite_seed, const ppb_case *c);

/* A shape's inputs made before its turn (ppb_session_inputs_ahead): the
 * lengths and block table, no host tensors, and the reference rows. */
typedef struct ppb_inputs_ahead {
    char shape_key[PPB_CASE_KEY_MAX];   /* "" while it holds nothing */
    uint64_t seed;
    ppb_workload w;
    ppb_reference_rows rows;            /* rows.w is set when they are taken over */
} ppb_inputs_ahead;

void ppb_inputs_ahead_free(ppb_inputs_ahead *a);

/* Build a case's inputs, unless the backend refuses the case from its shape
 * (res REFUSED) or they would not fit in host memory (res SKIPPED), so a
 * refused 100K case costs no input generation. With `ref` (and cs), for a
 * backend that makes its inputs on the device: the reference rows are taken
 * over from `ahead` (may be NULL) when it holds this shape's on these inputs,
 * which empties it (another shape's stay there: the caller frees them), else
 * read from the reference cache when there, and then the workload gets no
 * host tensors at all. Without `cs` (NULL; then `ahead` and `ref` are NULL
 * too) the caller reads the inputs itself (dump): every host tensor is filled,
 * whatever the backend. Returns PPB_OK in every case; check res->status. */
int ppb_session_workload(ppb_session *s, const ppb_case *c, uint64_t seed, const ppb_check_settings *cs,
                         ppb_inputs_ahead *ahead, ppb_reference_rows *ref, ppb_workload *w, ppb_result *res);

/* The same refusals ppb_session_workload makes before any input (host memory,
 * the backend's refusal from the shape), asked ahead: 1 with res REFUSED,
 * SKIPPED or ERROR and the reason when the case would stop there, 0 when it
 * would go on to prepare. Builds and frees the lengths and block table only.
 * A run asks it before its first case, so that a suite this backend cannot run
 * at all is said once, up front (ppb_refusals). */
int ppb_session_refuses(ppb_session *s, const ppb_case *c, uint64_t seed, ppb_result *res);

/* Refusal reasons summed up by kind (a reason's text before its first ':'),
 * for one line: "all 17 cases are refused on the cpu backend: 17 too large for
 * the CPU backend (e.g. 137 GFLOP > 2 GFLOP limit (--cpu-max-gflop)); ...". */
#define PPB_REFUSAL_KINDS 4
typedef struct ppb_refusals {
    int n;                       /* reasons added */
    struct ppb_refusal_kind {
        char head[160];          /* the text before ':' */
        char example[256];       /* the rest of the first such reason */
        int count;
    } kinds[PPB_REFUSAL_KINDS];
    int n_kinds, other;          /* kinds beyond PPB_REFUSAL_KINDS are only counted */
} ppb_refusals;

void ppb_refusals_add(ppb_refusals *t, const char *reason);
/* The line ("all N <what> are refused on the <backend> backend: ..."); on the
 * CPU backend it names the suites sized for it. */
void ppb_refusals_text(const ppb_refusals *t, const char *what, const ppb_session *s, char *buf, size_t len);

/* Prepare the case (the backend may refuse), judge it on the target (from the
 * compiled kernel's resources when known), launch it once and check it
 * against the float64 reference. `ref` (may be NULL) keeps the reference rows
 * for the next case on the same inputs: read from the reference cache or
 * computed here unless they already belong to `w`; the caller frees them (ppb_reference_rows_free) with the
 * inputs. On return res->status is OK when the case can be timed; *prepared
 * says whether the caller must call ops->release. Only an interrupt is
 * returned as an error (PPB_EINTR); every other outcome is a status with a
 * reason in res. */
int ppb_session_check(ppb_session *s, const ppb_case *c, const ppb_workload *w,
                      const ppb_check_settings *cs, uint64_t seed, ppb_reference_rows *ref,
                      ppb_result *res, int *prepared);

/* The case's judgement on the session's target, kept in res->feasibility and
 * stored with it: once per case, when it ends (ppb_session_check judges a case
 * it prepares; this judges the rest, from res->resources). Nothing without a
 * target. */
void ppb_session_judge(const ppb_session *s, const ppb_case *c, ppb_result *res);

/* Make a case's inputs ahead of its turn into `out`: for a shape the run
 * reaches later, on a thread of the runner while the GPU times the shape
 * before, so that shape starts with its lengths, block table and reference
 * rows in hand. The rows are read from the reference cache, or computed (on
 * host tensors freed again) and written there when it is on. For a backend
 * that makes its own inputs (the caller's judgement: the CPU backend's timings
 * would suffer; the backend may still be opening) and a shape whose host
 * tensors take at most a quarter of the memory. Thread-safe against the
 * session's own use from ppb_session_init on. Returns 1 when out holds them. */
int ppb_session_inputs_ahead(ppb_session *s, const ppb_case *c, uint64_t seed, const ppb_check_settings *cs,
                             ppb_inputs_ahead *out);

/* Before the first case: let the backend start loading the kernels of the
 * cases to run (those with todo[i] set), in their order (ops->prefetch). */
void ppb_session_prefetch(ppb_session *s, const ppb_case *cases, const char *todo, int n);

/* Free what a prepare allocated for its case (`prepared`: as ppb_session_check
 * said) and, unless keep_inputs, the inputs the backend keeps for the next
 * case on the same inputs (ppb_backend_ops.release_inputs). */
void ppb_session_release(ppb_session *s, int prepared, int keep_inputs);

/* The shard a run measures (--shard K/N) and the group its shards share. */
typedef struct ppb_run_shard {
    int index, count;          /* 0/0: the whole suite */
    const char *group;         /* NULL or "": the default, "<commit>@<UTC date>" */
} ppb_run_shard;

/* A new run in the store with provenance, device and the seed, of the
 * session's run_kind; `args` are the options resume needs; `shard` NULL for an
 * unsharded run. */
int ppb_session_begin_run(ppb_session *s, ppb_store *store, const ppb_suite *suite, const ppb_run_shard *shard,
                          const char *label, const char *args, int n_cases, ppb_run_info *run,
                          ppb_err *err);
/* Store the backend's environment facts now, keys prefixed (e.g. "before."). */
void ppb_session_store_environment(ppb_session *s, ppb_store *store, int64_t run_id,
                                   const char *prefix);

#endif
