/* A benchmark suite, parsed from YAML (schema: docs/SUITES.md).
 *
 * The shape and config parts are lists of "axis sets": each set maps fields to
 * lists of values and stands for their Cartesian product; the suite is the
 * union of its sets. An explicit case list is a set with one value per field. */
#ifndef PPB_SUITE_H
#define PPB_SUITE_H

#include <stdint.h>

#include "case.h"
#include "ppb_error.h"

#define PPB_MAX_AXIS_VALUES 64
/* Sets per section (after heads pairs expand); guards against a file that
 * would expand into an absurd amount of memory. */
#define PPB_MAX_AXIS_SETS 1024

typedef struct ppb_axis {
    int n;                           /* 0: field not given in this set */
    int v[PPB_MAX_AXIS_VALUES];
} ppb_axis;

typedef struct ppb_axis_set {
    ppb_axis axis[PPB_F_COUNT];
    double weight;                   /* weights: only; 1.0 elsewhere */
    int line;                        /* where it was defined, for messages */
} ppb_axis_set;

typedef struct ppb_measure_settings {
    int cold_l2;            /* 1 (default): overwrite > 2x L2 before each sample */
    double warmup_ms;       /* warm-up by time */
    int min_samples, max_samples;
    double min_time_ms;     /* minimum total measured time per case */
    double budget_ms;       /* per-case time budget; past it the case is marked noisy */
    double target_noise;    /* stop when (q3-q1)/median falls under this */
    int windows;            /* sampling windows a case may take while it misses target_noise (<= 1: one) */
    uint64_t seed;          /* input generation and row sampling */
} ppb_measure_settings;

typedef struct ppb_check_settings {
    double atol[2], rtol[2];   /* indexed by ppb_dtype */
    long full_check_max_rows;  /* cases with at most this many output rows are checked whole */
    int sample_rows;           /* otherwise: this many seeded random (seq, head, row) + first/last */
} ppb_check_settings;

/* trend: the relative threshold of `ppbench trend` for a case is
 * max(min_change_floor, noise_multiplier x its night-to-night noise)
 * (docs/SUITES.md "trend", docs/STATISTICS.md "Trend"). */
#define PPB_TREND_DEFAULT_FLOOR 0.02     /* the practical floor of a case's threshold */
#define PPB_TREND_DEFAULT_NOISE_K 5.0    /* k: threshold = max(floor, k x night-to-night noise) */
typedef struct ppb_trend_settings {
    double min_change_floor;   /* the practical floor (0.02) */
    double noise_multiplier;   /* k (5) */
} ppb_trend_settings;

typedef struct ppb_suite {
    char path[4096];
    char name[128];
    char description[512];
    char hash[17];                    /* FNV-1a 64 of the file bytes, hex */
    ppb_kernel_kind kernel;
    ppb_axis_set *shapes;  int n_shapes;
    ppb_axis_set *configs; int n_configs;     /* 0: no configs: in the file, every config
                                                 field takes its default */
    ppb_axis_set *excludes; int n_excludes;   /* a case matching every given field is dropped */
    ppb_axis_set *expect_wrong; int n_expect_wrong;   /* expect_wrong: a case matching a rule is a
                                                         deliberate fault, meant to come out wrong */
    ppb_axis_set *weights; int n_weights;     /* first match sets the case weight */
    ppb_trend_settings trend;                 /* trend: the suite's thresholds */
    ppb_axis_set *trend_groups; int n_trend_groups;   /* trend: groups: match:, first match wins */
    ppb_trend_settings *trend_group_settings;         /* one per trend_groups entry */
    ppb_measure_settings measure;
    ppb_check_settings check;
    char target[64];                  /* profile name under suites/targets/, "" = none */
    char model[64];                   /* profile name under suites/models/, "" = none */
} ppb_suite;

/* Parse and validate a suite file. On error: PPB_EINPUT and a one-line message
 * "FILE:LINE:COLUMN: field: what is wrong". Unknown keys are errors. */
int ppb_suite_load(const char *path, ppb_suite *suite, ppb_err *err);
void ppb_suite_free(ppb_suite *suite);
/* Defaults for measure/check settings (also used by tests and inline cases). */
void ppb_suite_defaults(ppb_suite *suite);
/* The trend thresholds of a case: the first trend: groups: rule matching it,
 * else the suite's. Returns the group's index, or -1 for the suite's. */
int ppb_suite_case_trend(const ppb_suite *suite, const ppb_case *c, ppb_trend_settings *out);
/* Directory of suite->path, for resolving targets/ and models/ ("suites/"). */
void ppb_suite_dir(const ppb_suite *suite, char *buf, size_t len);

/* A case matches a set when, for every field the set gives, the case's value is
 * one of the listed values (fields the set leaves out match anything). This is
 * the meaning of exclude: and weights: match: (docs/SUITES.md). */
int ppb_axis_set_matches(const ppb_axis_set *set, const ppb_case *c);
/* 1 if any exclude: rule matches the case. */
int ppb_suite_case_excluded(const ppb_suite *suite, const ppb_case *c);
/* 1 if an expect_wrong: rule matches the case: a deliberate fault (smoke-decode's
 * PARTITION_SIZE mismatch) that the checks must catch. `ppbench run` passes when
 * exactly these cases are wrong (docs/SUITES.md). */
int ppb_suite_case_expects_wrong(const ppb_suite *suite, const ppb_case *c);
/* Weight of the first weights: rule matching the case; 1.0 when none does. */
double ppb_suite_case_weight(const ppb_suite *suite, const ppb_case *c);

#endif
