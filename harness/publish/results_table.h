/* Tables printed on the terminal: a run's results (after `run`, by `show`)
 * and a verdict's cases (after `propose`, `compare`). */
#ifndef PPB_RESULTS_TABLE_H
#define PPB_RESULTS_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "result.h"
#include "store.h"

typedef struct ppb_status_counts {
    int n[PPB_STATUS_COUNT]; /* by ppb_status */
    int total;
} ppb_status_counts;

int ppb_print_results(ppb_store *s, int64_t run_id, FILE *out, ppb_status_counts *counts,
                      ppb_err *err);

/* A verdict as decided and stored (propose, compare): one row per case, the
 * geometric mean, the reasons and the verdict line. */
int ppb_print_proposal(const ppb_proposal_record *rec, const ppb_proposal_case *cases, int n_cases, FILE *out,
                       ppb_err *err);

/* Where the run's wall time went and the harness's overhead, "wall W s =
 * device V + inputs A + check B + warm-up C + sampling D + store S + other E s;
 * kernels K s (overhead O%, P% without the device's start)", other being what the rest
 * leaves of the wall, P the overhead of the wall after the device opened
 * (show prints it after "time: ", the report as a fact). */
void ppb_format_run_time(const ppb_run_time *t, char *buf, size_t len);

/* The smallest true change of one case its interval resolves from none with
 * 80% power (verdict.h ppb_detectable_change at the level the case's interval
 * spent), as a fraction; 0 when the case has no bounded interval. The case
 * column `sees>=` of the terminal table, `detectable_effect` of the JSON's
 * cases, "could see" of the Markdown's. */
double ppb_proposal_case_detectable(const ppb_proposal_case *c);
/* The same as people read it: "2.1%", ">=100%" (it cannot judge any real
 * change), "-" (no interval); returns buf. */
const char *ppb_format_case_detectable(const ppb_proposal_case *c, char *buf, size_t len);

/* What a verdict cost (store.h's ppb_proposal_cost), one line: "wall W s =
 * setup A + inputs B + check C + warm-up D + sampling E + other F s; kernels K s
 * in the samples; a fixed-sample design at the same resolution: N samples a
 * side in every pair, kernels X s (R x)[; pair P settled the REJECT alone, so
 * the pairs not timed by then were checked only]". Returns 0 (buf "") when the cost was
 * not measured. The terminal prints it after "cost: ", the Markdown verdict
 * and the report as a fact. */
int ppb_format_proposal_cost(const ppb_proposal_cost *c, char *buf, size_t len);

#endif
