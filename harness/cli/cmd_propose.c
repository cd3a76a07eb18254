/* ppbench propose PROPOSAL.yaml: baseline against candidate, interleaved on
 * one device, and a verdict with its reasons. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abrun.h"
#include "cli_util.h"
#include "commands.h"
#include "kv_capacity.h"
#include "model.h"
#include "results_table.h"
#include "store.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench propose PROPOSAL.yaml [options]\n\n"
            "Runs the proposal's baseline and candidate interleaved on one device (kernel_config,\n"
            "chunked_prefill) or computes it (kv_capacity), and decides ACCEPT / REJECT /\n"
            "INCONCLUSIVE with its reasons (docs/PROPOSALS.md, docs/STATISTICS.md).\n\n"
            "  --db PATH            results database (default $PPBENCH_DB, else ./" PPB_DEFAULT_DB ")\n"
            "  --backend NAME       auto (default), cuda or cpu\n"
            "  --device N           GPU index\n"
            "  --target NAME        override the proposal's target ('none': no target)\n"
            "  --label TEXT         stored with both runs\n"
            "  --cpu-max-gflop X    CPU backend: skip cases above X GFLOP (default 2)\n"
            "  --json FILE|-        the verdict as JSON (schema " PPB_VERDICT_SCHEMA ", docs/CLI.md)\n"
            "  --markdown FILE|-    the verdict as Markdown (PR comments, CI job summaries)\n"
            "                       (with '-' the human-readable output goes to stderr)\n"
            "  -h, --help\n\n"
            "exit: 0 ACCEPT, 10 REJECT, 11 INCONCLUSIVE, 2 usage, 3 bad input, 4 runtime failure\n");
}

/* Where the human-readable output goes: stderr when a document takes stdout. */
static FILE *human_stream(const char *json, const char *md)
{
    return (json && strcmp(json, "-") == 0) || (md && strcmp(md, "-") == 0) ? stderr : stdout;
}

static int propose_kv_capacity(const ppb_proposal *p, const char *db, const char *target_opt, FILE *human,
                               int64_t *id, ppb_err *err)
{
    char dir[4096];
    ppb_proposal_suites_dir(p, dir, sizeof dir);
    ppb_target t;
    ppb_model m;
    ppb_kv_side sides[2];
    ppb_proposal_record rec;
    const char *target = target_opt ? target_opt : p->target;
    int rc = target_opt ? ppb_target_load_arg(dir, target, &t, err) : ppb_target_load_named(dir, target, &t, err);
    if (!rc)
        rc = ppb_model_load_named(dir, p->model, &m, err);
    if (!rc)
        rc = ppb_kv_capacity_decide(p, &t, &m, sides, &rec, err);
    ppb_store *s = NULL;
    if (!rc)
        rc = ppb_store_open(&s, db, err);
    if (!rc)
        rc = ppb_store_put_proposal(s, &rec, NULL, 0, err);
    if (s)
        ppb_store_close(s);
    if (rc)
        return rc;
    fprintf(human, "%sverdict: %s\nproposal %lld stored in %s\n", rec.reasons, rec.verdict, (long long)rec.id, db);
    *id = rec.id;
    return ppb_cli_verdict_exit(rec.verdict);
}

int cmd_propose(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},     {"backend", required_argument, NULL, 'b'},
        {"device", required_argument, NULL, 'D'}, {"target", required_argument, NULL, 't'},
        {"label", required_argument, NULL, 'l'},  {"cpu-max-gflop", required_argument, NULL, 'g'},
        {"json", required_argument, NULL, 'j'},   {"markdown", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *json = NULL, *md = NULL;
    ppb_propose_options o;
    memset(&o, 0, sizeof o);
    o.backend = "auto";
    o.log = stderr;
    const char *db = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'b':
            if (ppb_cli_backend("propose", optarg))
                return PPB_EXIT_USAGE;
            o.backend = optarg;
            break;
        case 'D':
            if (ppb_cli_index("propose", "--device", optarg, &o.device_index))
                return PPB_EXIT_USAGE;
            break;
        case 't': o.target = optarg; break;
        case 'l': o.label = optarg; break;
        case 'j': json = optarg; break;
        case 'm': md = optarg; break;
        case 'g':
            if (ppb_cli_positive("propose", "--cpu-max-gflop", optarg, &o.cpu_max_gflop))
                return PPB_EXIT_USAGE;
            break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    o.db_path = ppb_store_default_path(db);
    ppb_err err = {{0}};
    ppb_proposal p;
    int rc = ppb_proposal_load(argv[optind], &p, &err);
    if (rc) {
        fprintf(stderr, "ppbench propose: %s\n", err.msg);
        return rc == PPB_EINPUT ? PPB_EXIT_INPUT : PPB_EXIT_RUNTIME;
    }
    FILE *human = human_stream(json, md);
    if (p.kind == PPB_PROPOSAL_KV_CAPACITY) {
        int64_t id = 0;
        rc = propose_kv_capacity(&p, o.db_path, o.target, human, &id, &err);
        if (rc < 0) {
            fprintf(stderr, "ppbench propose: %s\n", err.msg);
            return rc == PPB_EINPUT ? PPB_EXIT_INPUT : PPB_EXIT_RUNTIME;
        }
        ppb_store *s = (json || md) ? ppb_cli_open_existing_store("propose", o.db_path) : NULL;
        int drc = (json || md) ? (s ? ppb_cli_stored_docs("propose", s, 0, id, rc, json, md) : PPB_EXIT_RUNTIME) : 0;
        ppb_store_close(s);
        return drc ? drc : rc;
    }
    ppb_proposal_record rec;
    ppb_verdict_report rep;
    rc = ppb_propose_run(&p, &o, &rec, &rep, &err);
    if (rc) {
        fprintf(stderr, "ppbench propose: %s\n", err.msg);
        ppb_verdict_report_free(&rep);
        return rc == PPB_EINPUT ? PPB_EXIT_INPUT : PPB_EXIT_RUNTIME;
    }
    ppb_verdict_report_free(&rep);
    ppb_store *s = ppb_cli_open_store("propose", o.db_path);
    if (!s || ppb_print_proposal(s, rec.id, human, &err)) {
        if (s)
            fprintf(stderr, "ppbench propose: %s\n", err.msg);
        ppb_store_close(s);
        return PPB_EXIT_RUNTIME;
    }
    fprintf(human, "proposal %lld stored in %s (baseline run %lld, candidate run %lld)\n", (long long)rec.id,
            o.db_path, (long long)rec.baseline_run, (long long)rec.candidate_run);
    int exit_code = ppb_cli_verdict_exit(rec.verdict);
    int drc = ppb_cli_stored_docs("propose", s, 0, rec.id, exit_code, json, md);
    ppb_store_close(s);
    return drc ? drc : exit_code;
}
