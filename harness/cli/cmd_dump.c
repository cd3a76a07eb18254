/* ppbench dump RUN CASE: one case's inputs, output and reference rows as .npy
 * files plus case.json, to cross-check a result in NumPy or PyTorch. The inputs
 * are regenerated from the run's seed (the same bits the run used); the output
 * comes from running the case again on the run's backend when available. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "commands.h"
#include "files.h"
#include "npy.h"
#include "reference.h"
#include "session.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench dump RUN|latest 'CASE KEY' [--db PATH] [-o DIR]\n"
                 "  writes DIR/{q,k,v,k_cache,v_cache,block_table,query_lens,context_lens,\n"
                 "  start_loc,out,ref,ref_rows}.npy and DIR/case.json (default DIR: dump-RUN)\n");
}

typedef struct env_lookup {
    const char *key;
    char value[256];
} env_lookup;

static int find_env(void *ctx, const char *key, const char *value)
{
    env_lookup *l = ctx;
    if (strcmp(key, l->key) != 0)
        return 0;
    snprintf(l->value, sizeof l->value, "%s", value);
    return 1;
}

typedef struct dump_file {
    const char *name, *descr;
    size_t elem_size;
    int ndim;
    size_t shape[5];
    const void *data;
} dump_file;

/* Rows whose reference is written: all of them for small cases, else the first
 * and last new token of every sequence, for every head. */
static int pick_rows(const ppb_workload *w, int heads, int32_t **rows_out, int *n_out)
{
    long total = (long)w->total_tokens * heads;
    int small = total <= 4096;
    int n = small ? (int)total : w->batch * 2 * heads;
    int32_t *rows = malloc(sizeof *rows * 2 * (size_t)(n ? n : 1));
    if (!rows)
        return PPB_ENOMEM;
    int k = 0;
    for (int t = 0; small && t < w->total_tokens; t++)
        for (int h = 0; h < heads; h++, k++)
            rows[2 * k] = t, rows[2 * k + 1] = h;
    for (int b = 0; !small && b < w->batch; b++) {
        int first = w->start_loc[b], last = w->start_loc[b] + w->query_lens[b] - 1;
        for (int h = 0; h < heads; h++) {
            rows[2 * k] = first, rows[2 * k + 1] = h, k++;
            rows[2 * k] = last, rows[2 * k + 1] = h, k++;
        }
    }
    *rows_out = rows;
    *n_out = k;
    return PPB_OK;
}

static int write_json(const char *dir, const ppb_case *c, uint64_t seed, const char *backend,
                      const dump_file *files, int n_files, ppb_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/case.json", dir);
    FILE *f = NULL;
    int rc = ppb_file_create(path, 0, &f, err);
    if (rc)
        return rc;
    /* Every string here is ppbench's own (field names, enum names, digits). */
    fprintf(f, "{\n  \"case\": \"%s\",\n  \"kernel\": \"%s\",\n  \"seed\": %llu,\n", c->key,
            ppb_kernel_name(c->kernel), (unsigned long long)seed);
    fprintf(f, "  \"output_from\": \"%s backend\",\n  \"fields\": {", backend);
    int first = 1;
    for (int fi = 0; fi < PPB_F_COUNT; fi++) {
        if (!((ppb_field_get(fi)->kernels >> c->kernel) & 1u))
            continue;
        char v[PPB_FIELD_TEXT_MAX];
        ppb_field_format_value(fi, ppb_case_get(c, fi), v, sizeof v);
        int numeric = ppb_field_get(fi)->names == NULL;
        fprintf(f, "%s\n    \"%s\": %s%s%s", first ? "" : ",", ppb_field_get(fi)->name,
                numeric ? "" : "\"", v, numeric ? "" : "\"");
        first = 0;
    }
    fprintf(f, "\n  },\n  \"layouts\": {\n"
               "    \"k_cache\": \"[num_blocks, num_kv_heads, head_dim/8, page_size, 8]\",\n"
               "    \"v_cache\": \"[num_blocks, num_kv_heads, head_dim, page_size]\",\n"
               "    \"bf16\": \"stored as uint16 bit patterns: torch.from_numpy(a).view(torch.bfloat16)\",\n"
               "    \"ref_rows\": \"(token, head) of each row of ref.npy (float64 reference)\"\n  },\n"
               "  \"files\": [");
    for (int i = 0; i < n_files; i++) {
        fprintf(f, "%s\n    {\"name\": \"%s.npy\", \"dtype\": \"%s\", \"shape\": [", i ? "," : "",
                files[i].name, files[i].descr);
        for (int d = 0; d < files[i].ndim; d++)
            fprintf(f, "%s%zu", d ? ", " : "", files[i].shape[d]);
        fprintf(f, "]}");
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) == 0 ? PPB_OK : ppb_fail(err, PPB_EIO, "%s: write failed", path);
}

static int dump_case(ppb_store *s, int64_t run_id, const char *key, const char *dir, ppb_err *err)
{
    ppb_run_info run;
    ppb_case c;
    ppb_workload w;
    memset(&w, 0, sizeof w);
    ppb_session session;
    memset(&session, 0, sizeof session);
    ppb_result res;
    ppb_result_init(&res);
    uint16_t *out = NULL;
    int32_t *rows = NULL;
    double *ref = NULL;
    int prepared = 0, n_rows = 0;
    env_lookup seed_env = {"suite.seed", ""}, scheme_env = {PPB_ENV_INPUTS_SEEDED_BY, ""};

    int rc = ppb_store_get_run(s, run_id, &run, err);
    if (!rc)
        rc = ppb_case_from_key(key, &c, err);
    if (rc)
        goto end;
    if (!ppb_store_has_result(s, run_id, c.key)) {
        rc = ppb_fail(err, PPB_EINPUT, "run %lld has no case '%s' (ppbench show %lld lists them)",
                      (long long)run_id, key, (long long)run_id);
        goto end;
    }
    rc = ppb_store_each_env(s, run_id, find_env, &seed_env, err);
    if (!rc)
        rc = ppb_store_each_env(s, run_id, find_env, &scheme_env, err);
    if (rc)
        goto end;
    if (!seed_env.value[0]) {
        rc = ppb_fail(err, PPB_EINPUT, "run %lld did not store its input seed", (long long)run_id);
        goto end;
    }
    uint64_t suite_seed = strtoull(seed_env.value, NULL, 10);
    uint64_t seed = strcmp(scheme_env.value, "shape") == 0 ? ppb_case_seed(suite_seed, &c)
                                                             : ppb_case_seed_per_config(suite_seed, &c);
    /* Reproduce the output on the run's backend where this machine has it; a
     * case it refuses (the CPU's work limit, memory) is refused from the
     * arithmetic, before any input is allocated. */
    rc = ppb_session_open(&session, strcmp(run.backend, "cuda") == 0 ? "auto" : "cpu", 0, NULL, 0, stderr, err);
    if (rc)
        goto end;
    const ppb_backend_ops *ops = session.ops;
    ppb_backend *b = session.backend;
    ppb_session_workload(&session, &c, seed, NULL, NULL, NULL, &w, &res); /* host tensors: they are dumped */
    if (res.status != PPB_STATUS_OK) {
        rc = ppb_fail(err, PPB_EINPUT, "the %s backend cannot reproduce this case: %s", ops->name, res.reason);
        goto end;
    }
    rc = ops->prepare(b, &c, &w, &res, err);
    prepared = rc == PPB_OK;
    if (!rc && !(out = malloc(w.out_elems * sizeof *out)))
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (!rc)
        rc = ops->run_checked(b, out, &res, err);
    if (!rc)
        rc = pick_rows(&w, c.shape.num_heads, &rows, &n_rows);
    if (!rc && !(ref = malloc(sizeof *ref * (size_t)c.shape.head_dim * (size_t)(n_rows ? n_rows : 1))))
        rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
    if (rc)
        goto end;
    for (int i = 0; i < n_rows; i++)
        ppb_reference_row(&w, rows[2 * i], rows[2 * i + 1], ref + (size_t)i * c.shape.head_dim);

    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        rc = ppb_fail(err, PPB_EIO, "%s: %s", dir, strerror(errno));
        goto end;
    }
    const ppb_shape *sh = &c.shape;
    const char *half = sh->dtype == PPB_FP16 ? "<f2" : "<u2";
    size_t T = (size_t)w.total_tokens, H = (size_t)sh->num_heads, KVH = (size_t)sh->num_kv_heads,
           D = (size_t)sh->head_dim, P = (size_t)sh->page_size, NB = (size_t)w.num_blocks,
           B = (size_t)w.batch;
    dump_file files[] = {
        {"q", half, 2, 3, {T, H, D}, w.q},
        {"out", half, 2, 3, {T, H, D}, out},
        {"k_cache", half, 2, 5, {NB, KVH, D / 8, P, 8}, w.k_cache},
        {"v_cache", half, 2, 4, {NB, KVH, D, P}, w.v_cache},
        {"block_table", "<i4", 4, 2, {B, (size_t)w.max_blocks_per_seq}, w.block_table},
        {"query_lens", "<i4", 4, 1, {B}, w.query_lens},
        {"context_lens", "<i4", 4, 1, {B}, w.context_lens},
        {"start_loc", "<i4", 4, 1, {B + 1}, w.start_loc},
        {"ref", "<f8", 8, 2, {(size_t)n_rows, D}, ref},
        {"ref_rows", "<i4", 4, 2, {(size_t)n_rows, 2}, rows},
        {"k", half, 2, 3, {T, KVH, D}, w.k},
        {"v", half, 2, 3, {T, KVH, D}, w.v},
    };
    /* decode has no contiguous new-token k/v */
    int n_files = (int)(sizeof files / sizeof *files) - (w.k ? 0 : 2);
    for (int i = 0; !rc && i < n_files; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.npy", dir, files[i].name);
        rc = ppb_npy_write(path, files[i].descr, files[i].elem_size, files[i].shape, files[i].ndim,
                           files[i].data, err);
    }
    if (!rc)
        rc = write_json(dir, &c, seed, session.ops->name, files, n_files, err);
end:
    if (prepared)
        session.ops->release(session.backend);
    ppb_session_close(&session);
    ppb_result_free(&res);
    ppb_workload_free(&w);
    free(out);
    free(rows);
    free(ref);
    return rc;
}

int cmd_dump(int argc, char **argv)
{
    static const struct option longopts[] = {PPB_CLI_OPT_DB,
                                             {"output", required_argument, NULL, 'o'},
                                             PPB_CLI_OPT_HELP_END};
    const char *db = NULL, *dir = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'o': dir = optarg; break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind != argc - 2) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_store *s = ppb_cli_open_readonly_store("dump", db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    ppb_err err = {{0}};
    int64_t id = 0;
    char default_dir[64];
    int rc = ppb_cli_run_id(s, argv[optind], &id, &err);
    if (!rc) {
        snprintf(default_dir, sizeof default_dir, "dump-%lld", (long long)id);
        rc = dump_case(s, id, argv[optind + 1], dir ? dir : default_dir, &err);
    }
    if (rc)
        fprintf(stderr, "ppbench dump: %s\n", err.msg);
    else
        printf("wrote %s/case.json and its .npy files\n", dir ? dir : default_dir);
    ppb_store_close(s);
    return ppb_cli_exit(rc);
}
