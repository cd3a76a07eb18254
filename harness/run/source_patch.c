/* A source_patch proposal's two sides (source_patch.h). */
#include "source_patch.h"

#include <string.h>

#include "case.h"
#include "impl.h"
#include "source_tree.h"

static int make_side(const char *spec, const ppb_source_change *change, ppb_vllm_tree *t, ppb_err *err)
{
    char tree[4096];
    int rc = ppb_vllm_tree_locate(spec, tree, sizeof tree, err);
    return rc ? rc : ppb_vllm_tree_make(tree, change, t, err);
}

/* A side runs the suite's shapes on its tree's implementation; for decode, as
 * version-1 cases, the one form the tree's Triton unified attention takes (it
 * has no PARTITION_SIZE: kernels/vllm/triton/README.md "Decode"). */
static int set_impl(ppb_side *side, const char *impl_name, ppb_kernel_kind kernel, ppb_err *err)
{
    memset(side, 0, sizeof *side);
    side->given = 1u << PPB_F_IMPL;
    if (kernel == PPB_PAGED_ATTENTION) {
        side->given |= 1u << PPB_F_VERSION;
        side->value[PPB_F_VERSION] = 1;
    }
    return ppb_field_parse_value(PPB_F_IMPL, impl_name, &side->value[PPB_F_IMPL], err);
}

int ppb_source_patch_sides(ppb_proposal *p, FILE *log, ppb_err *err)
{
    const ppb_source_change *c = &p->change;
    int has_change = c->patch_path[0] || c->n_replace;
    ppb_vllm_tree base, cand;
    /* The change first: one that does not apply leaves nothing in the cache. */
    int rc = make_side(c->candidate_vllm[0] ? c->candidate_vllm : c->vllm, has_change ? c : NULL, &cand, err);
    if (!rc)
        rc = make_side(c->vllm, NULL, &base, err);
    if (rc)
        return rc;
    fprintf(log, "source_patch: baseline %s (%s)\n", base.label, base.path);
    fprintf(log, "source_patch: candidate %s (%s)%s%s\n", cand.label, cand.path, cand.changed[0] ? ", changed: " : "",
            cand.changed);
    if (cand.not_judged[0])
        fprintf(log, "source_patch: not judged here (no kernel ppbench knows): %s\n", cand.not_judged);
    if (c->baseline_prefill_kernel != c->candidate_prefill_kernel)
        fprintf(log, "source_patch: prefill through the baseline's %s, the candidate's %s\n",
                ppb_vllm_prefill_kernel_names[c->baseline_prefill_kernel],
                ppb_vllm_prefill_kernel_names[c->candidate_prefill_kernel]);
    else if (strcmp(base.label, cand.label) == 0)
        fprintf(log, "source_patch: the change leaves every kernel file as it was: both sides are one "
                     "implementation (an A/A comparison)\n");
    fflush(log);
    char dir[4096], base_impl[96], cand_impl[96];
    ppb_vllm_plugin_dir(dir, sizeof dir);
    ppb_impl_add_search_path(dir);
    int log_fd = fileno(log);
    rc = ppb_vllm_tree_prepare(&base, p->suite_path, c->baseline_prefill_kernel, dir, log_fd, base_impl,
                               sizeof base_impl, err);
    if (!rc)
        rc = ppb_vllm_tree_prepare(&cand, p->suite_path, c->candidate_prefill_kernel, dir, log_fd, cand_impl,
                                   sizeof cand_impl, err);
    if (!rc)
        rc = set_impl(&p->baseline, base_impl, p->suite_kernel, err);
    if (!rc)
        rc = set_impl(&p->candidate, cand_impl, p->suite_kernel, err);
    return rc;
}
