/* Proposal files (parsing, errors with positions) and the KV-capacity
 * arithmetic against hand-computed figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kv_capacity.h"
#include "proposal.h"
#include "sequential.h"

static const char *source_dir(void)
{
    const char *s = getenv("PPB_SOURCE_DIR");
    return s ? s : ".";
}

static void test_seed_proposals_load(void **state)
{
    (void)state;
    static const char *const names[] = {
        "seed-prefill-block64-warps4", "seed-prefill-bi-v100", "seed-decode-partition-256",
        "seed-decode-partition-mismatch", "seed-max-batched-tokens", "seed-gpu-memory-utilization"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/suites/proposals/%s.yaml", source_dir(), names[i]);
        ppb_proposal p;
        ppb_err err = {{0}};
        if (ppb_proposal_load(path, &p, &err) != PPB_OK)
            fail_msg("%s: %s", names[i], err.msg);
        assert_string_equal(p.name, names[i]);
    }
}

/* Every proposal shipped in suites/proposals/ loads, named as its file (a
 * new one that does not parse fails here, not on the GPU machine). */
static void test_every_shipped_proposal_loads(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/suites/proposals", source_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        char path[8400], stem[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 5), e->d_name);
        ppb_proposal p;
        ppb_err err = {{0}};
        if (ppb_proposal_load(path, &p, &err) != PPB_OK)
            fail_msg("%s: %s", e->d_name, err.msg);
        assert_string_equal(p.name, stem);
        n++;
    }
    closedir(d);
    assert_true(n >= 18);
}

/* The CPU-sized versions (README "No GPU?") ask the seed's own question: the
 * same knobs on both sides as the real proposal, only the suite (and so the
 * shapes), the rules and the sampling differ. */
static void test_cpu_seed_proposals_keep_the_knobs(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {{"cpu-seed-prefix-prefill", "seed-prefill-block64-warps4"},
                                           {"cpu-seed-decode-partition-256", "seed-decode-partition-256"},
                                           {"cpu-seed-decode-partition-mismatch", "seed-decode-partition-mismatch"}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        ppb_proposal p[2];
        for (int k = 0; k < 2; k++) {
            char path[4096];
            ppb_err err = {{0}};
            snprintf(path, sizeof path, "%s/suites/proposals/%s.yaml", source_dir(), pairs[i][k]);
            if (ppb_proposal_load(path, &p[k], &err) != PPB_OK)
                fail_msg("%s: %s", pairs[i][k], err.msg);
        }
        assert_string_equal(p[0].name, pairs[i][0]);
        assert_int_equal(p[0].kind, p[1].kind);
        const ppb_side *cpu[2] = {&p[0].baseline, &p[0].candidate}, *seed[2] = {&p[1].baseline, &p[1].candidate};
        for (int side = 0; side < 2; side++) {
            assert_int_equal(cpu[side]->given, seed[side]->given);
            for (int f = 0; f < PPB_F_COUNT; f++)
                if (seed[side]->given & (1u << f))
                    assert_int_equal(cpu[side]->value[f], seed[side]->value[f]);
        }
        assert_non_null(strstr(p[0].suite_path, "/cpu-nightly"));
    }
}

static void test_kernel_config_sides(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/suites/proposals/seed-prefill-block64-warps4.yaml",
             source_dir());
    ppb_proposal p;
    ppb_err err = {{0}};
    assert_int_equal(ppb_proposal_load(path, &p, &err), PPB_OK);
    assert_int_equal(p.kind, PPB_PROPOSAL_KERNEL_CONFIG);
    assert_int_equal(p.chunk_case.kernel, PPB_PREFIX_PREFILL);
    ppb_case c;
    ppb_case_init(&c, PPB_PREFIX_PREFILL);
    ppb_side_apply(&p.candidate, &c);
    assert_int_equal(c.config.block_m, 64);
    assert_int_equal(c.config.block_n, 64);
    assert_int_equal(c.config.num_warps, 4);
    ppb_side_apply(&p.baseline, &c);
    assert_int_equal(c.config.block_m, 128);
    assert_int_equal(c.config.num_warps, 8);
    assert_non_null(strstr(c.key, "bm=128"));
    assert_true(fabs(p.rules.min_gain - 0.02) < 1e-12);
    assert_string_equal(p.filter, "head_dim=128");
}

/* Each bad file's first line: "# expect: LINE:COL word". */
/* Sessions: the default design may add a 4th session per side (sequential.h);
 * a proposal that names its sessions keeps them unless it names a maximum. */
static void test_sampling_sessions(void **state)
{
    (void)state;
    ppb_sampling d;
    ppb_sampling_default(&d);
    assert_int_equal(d.sessions, 3);
    assert_int_equal(d.max_sessions, PPB_SEQ_MAX_SESSIONS);
    const char *const yaml[] = {"sampling: {sessions: 1}\n", "sampling: {sessions: 2, max_sessions: 4}\n",
                                "sampling: {budget_ms: 100}\n"};
    const int want[][2] = {{1, 1}, {2, 4}, {3, PPB_SEQ_MAX_SESSIONS}};
    for (int i = 0; i < 3; i++) {
        char path[] = "/tmp/ppb-proposal-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fprintf(f, "name: s\nkind: kernel_config\nsuite: %s/suites/smoke.yaml\nbaseline: {block_m: 16}\n"
                   "candidate: {block_m: 32}\n%s", source_dir(), yaml[i]);
        fclose(f);
        ppb_proposal p;
        ppb_err err = {{0}};
        if (ppb_proposal_load(path, &p, &err))
            fail_msg("%s: %s", yaml[i], err.msg);
        unlink(path);
        assert_int_equal(p.sampling.sessions, want[i][0]);
        assert_int_equal(p.sampling.max_sessions, want[i][1]);
    }
}

static void test_bad_proposals(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/data/proposals/bad", source_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".yaml"))
            continue;
        char path[4400], first[256], word[128];
        int line, col;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(first, sizeof first, f));
        fclose(f);
        assert_int_equal(sscanf(first, "# expect: %d:%d %127s", &line, &col, word), 3);
        ppb_proposal p;
        ppb_err err = {{0}};
        assert_int_equal(ppb_proposal_load(path, &p, &err), PPB_EINPUT);
        char want[4500];
        snprintf(want, sizeof want, "%s:%d:%d: ", path, line, col);
        if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, word))
            fail_msg("%s: got '%s', want prefix '%s' and '%s'", e->d_name, err.msg, want, word);
        assert_null(strchr(err.msg, '\n'));
        n++;
    }
    closedir(d);
    assert_true(n >= 10);
}

/* Qwen3.5-35B-A3B on the BI-V100 at TP 4: 10 full-attention layers x 1 kv head
 * per rank (2 heads over 4 ranks: replicated) x 256 x 2 (K, V) x 2 B = 10240 B
 * per token; budget 0.9 x 34057748480 = 30651973632; minus 17.5e9 weights and
 * 2e9 reserve = 11151973632 B -> 1089059 tokens -> 10 sequences of 100K. */
static void test_kv_capacity_arithmetic(void **state)
{
    (void)state;
    char path[4096], dir[4096];
    snprintf(path, sizeof path, "%s/suites/proposals/seed-gpu-memory-utilization.yaml",
             source_dir());
    ppb_proposal p;
    ppb_err err = {{0}};
    assert_int_equal(ppb_proposal_load(path, &p, &err), PPB_OK);
    snprintf(dir, sizeof dir, "%s/suites", source_dir());
    ppb_target t;
    ppb_model m;
    assert_int_equal(ppb_target_load_named(dir, "bi-v100", &t, &err), PPB_OK);
    assert_int_equal(ppb_model_load_named(dir, "qwen3.5-35b-a3b", &m, &err), PPB_OK);
    ppb_kv_side sides[2];
    ppb_proposal_record rec;
    assert_int_equal(ppb_kv_capacity_decide(&p, &t, &m, sides, &rec, &err), PPB_OK);
    assert_int_equal(sides[0].bytes_per_token, 10240);
    assert_int_equal(sides[0].tokens, 1089059);
    assert_int_equal(sides[0].sequences, 10);
    assert_int_equal(sides[1].tokens, (long long)((0.95 * 34057748480.0 - 17.5e9 - 2e9) / 10240));
    /* max-num-seqs 1 and 10 sequences already fit: more capacity buys nothing */
    assert_string_equal(rec.verdict, "REJECT");
    assert_non_null(strstr(rec.reasons, "max-num-seqs is 1"));
    /* the verdict's own reason leads; the arithmetic is stored with it */
    assert_int_equal(strncmp(rec.reasons, "REJECT: ", 8), 0);
    assert_non_null(strstr(rec.reasons, "\narithmetic: KV per token per rank: 2 x 10 full-attention layers"));
    assert_non_null(strstr(rec.reasons, "\narithmetic: the seed's arithmetic: 50 GB per GPU"));

    p.max_num_seqs = 0; /* unknown scheduler limit, unknown outside memory */
    assert_int_equal(ppb_kv_capacity_decide(&p, &t, &m, sides, &rec, &err), PPB_OK);
    assert_string_equal(rec.verdict, "INCONCLUSIVE");
    p.outside_bytes = 1.0e9; /* 1.70 GB left outside at 0.95 >= 1 GB measured */
    assert_int_equal(ppb_kv_capacity_decide(&p, &t, &m, sides, &rec, &err), PPB_OK);
    assert_string_equal(rec.verdict, "ACCEPT");
    p.outside_bytes = 2.0e9;
    assert_int_equal(ppb_kv_capacity_decide(&p, &t, &m, sides, &rec, &err), PPB_OK);
    assert_string_equal(rec.verdict, "REJECT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_proposals_load),
        cmocka_unit_test(test_every_shipped_proposal_loads),
        cmocka_unit_test(test_kernel_config_sides),
        cmocka_unit_test(test_cpu_seed_proposals_keep_the_knobs),
        cmocka_unit_test(test_sampling_sessions),
        cmocka_unit_test(test_bad_proposals),
        cmocka_unit_test(test_kv_capacity_arithmetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
