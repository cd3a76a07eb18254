/* ppbench propose PROPOSAL.yaml: baseline against candidate, interleaved on
 * one device, and a verdict with its reasons. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abrun.h"
#include "cli_util.h"
#include "commands.h"
#include "kv_capacity.h"
#include "model.h"
#include "provenance.h"
#include "results_table.h"
#include "source_patch.h"
#include "store.h"
#include "verdict_doc.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench propose PROPOSAL.yaml [options]\n\n"
            "Runs the proposal's baseline and candidate interleaved on one device (kernel_config,\n"
            "chunked_prefill; source_patch: a vLLM tree and the tree with its change, each prepared\n"
            "first) or computes it (kv_capacity), and decides ACCEPT / REJECT /\n"
            "INCONCLUSIVE with its reasons (docs/PROPOSALS.md, docs/STATISTICS.md).\n\n"
            "  --db PATH            results database (default $PPBENCH_DB, else ./" PPB_DEFAULT_DB ")\n"
            "  --backend NAME       auto (default), cuda or cpu\n"
            "  --device N           GPU index\n"
            "  --target NAME        override the proposal's target ('none': no target)\n"
            "  --label TEXT         stored with both runs\n"
            "  --cpu-max-gflop X    CPU backend: skip cases above X GFLOP (default 2)\n"
            "  --scale-candidate F  multiply the candidate's measured times by F (a known effect, to\n"
            "                       validate the pipeline; both runs are stored as kind calibrate)\n"
            "  --json FILE|-        the verdict as JSON (schema " PPB_VERDICT_SCHEMA ", docs/CLI.md)\n"
            "  --markdown FILE|-    the verdict as Markdown (PR comments, CI job summaries)\n"
            "                       (with '-' the human-readable output goes to stderr)\n"
            "  -h, --help\n\n"
            "exit: 0 ACCEPT, 10 REJECT, 11 INCONCLUSIVE, 2 usage, 3 bad input, 4 runtime failure\n");
}

/* kv_capacity: arithmetic, no runs; decided, then stored through *s (opened
 * here, once the inputs are known to be good). */
static int propose_kv_capacity(const ppb_proposal *p, const char *db, const char *target_opt, ppb_store **s,
                               ppb_proposal_record *rec, ppb_err *err)
{
    char dir[4096];
    ppb_proposal_suites_dir(p, dir, sizeof dir);
    ppb_target t;
    ppb_model m;
    ppb_kv_side sides[2];
    const char *target = target_opt ? target_opt : p->target;
    int rc = target_opt ? ppb_target_load_arg(dir, target, &t, err) : ppb_target_load_named(dir, target, &t, err);
    if (!rc)
        rc = ppb_model_load_named(dir, p->model, &m, err);
    if (!rc)
        rc = ppb_kv_capacity_decide(p, &t, &m, sides, rec, err);
    if (!rc)
        rc = ppb_store_open(s, db, err);
    if (!rc)
        rc = ppb_store_put_proposal(*s, rec, NULL, 0, err);
    return rc;
}

static int propose_opt(void *ctx, int opt, char *arg)
{
    ppb_propose_options *o = ctx;
    switch (opt) {
    case 't': o->target = arg; return 0;
    case 'l': o->label = arg; return 0;
    case 'S': {
        double f;
        if (ppb_cli_positive("propose", "--scale-candidate", arg, &f))
            return -1;
        o->candidate_slowdown = f - 1;
        o->run_kind = "calibrate";   /* synthetic timings never enter a trend */
        return 0;
    }
    default: return 1;
    }
}

int cmd_propose(int argc, char **argv)
{
    static const struct option longopts[] = {
        PPB_CLI_OPT_DB,         PPB_CLI_OPT_BACKEND, PPB_CLI_OPT_DEVICE, {"target", required_argument, NULL, 't'},
        {"label", required_argument, NULL, 'l'}, {"scale-candidate", required_argument, NULL, 'S'},
        PPB_CLI_OPT_CPU_MAX_GFLOP, PPB_CLI_OPT_DOCS, PPB_CLI_OPT_HELP_END};
    ppb_cli_opts co;
    ppb_propose_options o;
    memset(&o, 0, sizeof o);
    o.started_ms = ppb_monotonic_ms();
    int xrc = ppb_cli_parse("propose", argc, argv, "h", longopts, usage, &co, propose_opt, &o, 1);
    if (xrc >= 0)
        return xrc;
    ppb_cli_session_opts(&co, &o.backend, &o.device_index, &o.cpu_max_gflop, &o.log, &o.db_path);
    ppb_err err = {{0}};
    ppb_proposal p;
    int rc = ppb_proposal_load(ppb_cli_suite_arg(argv[optind], "proposals"), &p, &err);
    if (rc)
        return ppb_cli_fail("propose", rc, &err);
    FILE *human = ppb_cli_human(&co);
    /* kv_capacity fills the record and the store here; the others get the
     * whole outcome from ppb_propose_run (cases and all: nothing read back) */
    ppb_propose_outcome *out = calloc(1, sizeof *out);
    if (!out)
        return ppb_cli_fail("propose", PPB_ENOMEM, &err);
    const ppb_proposal_record *rec = &out->rec;
    if (p.kind == PPB_PROPOSAL_KV_CAPACITY) {
        rc = propose_kv_capacity(&p, o.db_path, o.target, &out->store, &out->rec, &err);
        if (!rc)
            fprintf(human, "%sverdict: %s\nproposal %lld stored in %s\n", rec->reasons, rec->verdict,
                    (long long)rec->id, o.db_path);
    } else {
        if (p.kind == PPB_PROPOSAL_SOURCE_PATCH)
            rc = ppb_source_patch_sides(&p, stderr, &err);
        if (!rc)
            rc = ppb_propose_run(&p, &o, out, &err);
        /* The proposal is stored: what fails from here on is the output. */
        if (!rc && ppb_print_proposal(rec, out->cases, out->n_cases, human, &err))
            rc = PPB_EIO;
        if (!rc)
            fprintf(human, "proposal %lld stored in %s (baseline run %lld, candidate run %lld)\n",
                    (long long)rec->id, o.db_path, (long long)rec->baseline_run, (long long)rec->candidate_run);
        if (!rc)
            ppb_cli_load_note(out->store, rec->candidate_run, human);
    }
    if (rc) {
        ppb_propose_outcome_free(out);
        free(out);
        return ppb_cli_fail("propose", rc, &err);
    }
    int exit_code = ppb_cli_verdict_exit(rec->verdict);
    int drc = ppb_cli_verdict_docs("propose", out->store, rec, out->cases, out->n_cases, exit_code, co.json, co.md);
    ppb_propose_outcome_free(out);
    free(out);
    return drc ? drc : exit_code;
}
