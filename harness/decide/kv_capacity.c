#include "kv_capacity.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#define GB 1e9

static void compute(const ppb_proposal *p, double mem, double params, long long per_token,
                    double util, ppb_kv_side *s)
{
    memset(s, 0, sizeof *s);
    s->utilization = util;
    s->budget = mem * util;
    s->weights = params / p->tensor_parallel;
    s->kv_bytes = s->budget - s->weights - p->reserve_bytes;
    s->headroom = mem - s->budget;
    s->bytes_per_token = per_token;
    s->tokens = s->kv_bytes > 0 && per_token > 0 ? (long long)(s->kv_bytes / (double)per_token) : 0;
    s->sequences = s->tokens / p->max_model_len;
}

static void add_reason(ppb_proposal_record *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_reason(ppb_proposal_record *rec, const char *fmt, ...)
{
    size_t n = strlen(rec->reasons);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rec->reasons + n, sizeof rec->reasons - n, fmt, ap);
    va_end(ap);
}

int ppb_kv_capacity_decide(const ppb_proposal *p, const ppb_target *t, const ppb_model *m,
                           ppb_kv_side sides[2], ppb_proposal_record *rec, ppb_err *err)
{
    if (!t->mem_bytes.present)
        return ppb_fail(err, PPB_EINPUT, "target %s has no mem_bytes", t->name);
    long long per_token = ppb_model_kv_bytes_per_token(m, p->tensor_parallel, 2);
    if (per_token <= 0)
        return ppb_fail(err, PPB_EINPUT, "%s: model %s cannot be split at tensor parallel %d",
                        p->path, m->name, p->tensor_parallel);
    double mem = t->mem_bytes.value, params = (double)m->params_bytes.value;
    compute(p, mem, params, per_token, p->baseline.gpu_memory_utilization, &sides[0]);
    compute(p, mem, params, per_token, p->candidate.gpu_memory_utilization, &sides[1]);

    memset(rec, 0, sizeof *rec);
    snprintf(rec->name, sizeof rec->name, "%s", p->name);
    snprintf(rec->path, sizeof rec->path, "%s", p->path);
    snprintf(rec->kind, sizeof rec->kind, "kv_capacity");
    snprintf(rec->target, sizeof rec->target, "%s", t->name);
    rec->geomean_ratio = rec->geomean_lo = rec->geomean_hi = NAN;
    rec->min_gain = rec->max_regression = rec->threshold = NAN;   /* no A/B rules: arithmetic */
    rec->baseline_shift = rec->candidate_shift = NAN;

    const ppb_kv_side *b = &sides[0], *c = &sides[1];
    if (c->kv_bytes <= 0) {
        snprintf(rec->verdict, sizeof rec->verdict, "REJECT");
        add_reason(rec, "REJECT: at %.2f utilization the weights and reserve leave no KV cache "
                        "(%.2f GB)\n", c->utilization, c->kv_bytes / GB);
    } else if (p->max_num_seqs > 0 && b->sequences >= p->max_num_seqs) {
        /* More capacity than the scheduler can ever use buys nothing and only
         * shrinks what is left for memory vLLM does not account for. */
        snprintf(rec->verdict, sizeof rec->verdict, "REJECT");
        add_reason(rec, "REJECT: the baseline already holds %.0f sequences of max_model_len, and "
                        "max-num-seqs is %.0f: the extra capacity cannot be used, while the "
                        "headroom outside vLLM's budget shrinks to %.2f GB\n",
                   (double)b->sequences, (double)p->max_num_seqs, c->headroom / GB);
    } else if (p->outside_bytes < 0) {
        snprintf(rec->verdict, sizeof rec->verdict, "INCONCLUSIVE");
        add_reason(rec, "INCONCLUSIVE: the candidate leaves %.2f GB per GPU outside vLLM's budget "
                        "(baseline %.2f GB); whether the CUDA context, NCCL buffers and other "
                        "processes fit is unknown: measure them (outside_bytes)\n",
                   c->headroom / GB, b->headroom / GB);
    } else if (c->headroom < p->outside_bytes) {
        snprintf(rec->verdict, sizeof rec->verdict, "REJECT");
        add_reason(rec, "REJECT: the candidate leaves %.2f GB outside vLLM's budget, less than the "
                        "%.2f GB measured outside it\n", c->headroom / GB, p->outside_bytes / GB);
    } else {
        snprintf(rec->verdict, sizeof rec->verdict, "ACCEPT");
        add_reason(rec, "ACCEPT: +%.0f tokens per GPU and %.2f GB still left outside the budget "
                        "(%.2f GB needed)\n", (double)(c->tokens - b->tokens), c->headroom / GB,
                   p->outside_bytes / GB);
    }
    add_reason(rec, "note: capacity %.0f -> %.0f tokens per GPU (%+.0f)\n", (double)b->tokens, (double)c->tokens,
               (double)(c->tokens - b->tokens));
    /* The arithmetic, stored with the verdict (terminal, JSON, Markdown and the
     * report all show it), after the verdict's own reason and the note. */
    add_reason(rec, "arithmetic: KV capacity per GPU: %s on %s at tensor parallel %d, max_model_len %d\n", m->name,
               t->name, p->tensor_parallel, p->max_model_len);
    add_reason(rec, "arithmetic: device memory %.2f GB (%s; %s)\n", mem / GB, t->mem_bytes.confidence,
               t->mem_bytes.source);
    add_reason(rec, "arithmetic: weights %.2f GB / %d ranks = %.2f GB per GPU (%s)\n", params / GB,
               p->tensor_parallel, params / p->tensor_parallel / GB, m->params_bytes.source);
    add_reason(rec, "arithmetic: KV per token per rank: 2 x %lld full-attention layers x kv heads per rank x %lld x 2 B = "
                    "%lld B\n",
               m->full_attention_layers.value, m->head_dim.value, per_token);
    add_reason(rec, "arithmetic: reserve inside the budget (activations, graphs): %.2f GB (assumption)\n",
               p->reserve_bytes / GB);
    for (int s = 0; s < 2; s++)
        add_reason(rec, "arithmetic: %s util %.2f: budget %.2f GB - weights %.2f - reserve %.2f = KV %.2f GB -> %lld "
                        "tokens = %lld sequences of %d; %.2f GB left outside\n",
                   s ? "candidate" : "baseline", sides[s].utilization, sides[s].budget / GB, sides[s].weights / GB,
                   p->reserve_bytes / GB, sides[s].kv_bytes / GB, sides[s].tokens, sides[s].sequences,
                   p->max_model_len, sides[s].headroom / GB);
    if (p->seed.present) {
        const ppb_seed_claims *sc = &p->seed;
        double seed_kv = sc->kv_bytes_per_token_per_layer * sc->layers * p->max_model_len;
        add_reason(rec, "arithmetic: the seed's arithmetic: %.0f GB per GPU (the profile says %.2f GB), %d layers x %.0f B "
                        "per token per layer -> %.2f GB for %d tokens; checked: %lld B per token per rank -> %.2f GB\n",
                   sc->mem_bytes / GB, mem / GB, sc->layers, sc->kv_bytes_per_token_per_layer, seed_kv / GB,
                   p->max_model_len, per_token, (double)per_token * p->max_model_len / GB);
    }
    return PPB_OK;
}
