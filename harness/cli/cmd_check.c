/* ppbench check SUITE: judge every config of a suite against a target device
 * profile, before any timing (docs/TARGETS.md). One row per config and the
 * shapes that change what it needs; the arithmetic and the disputed figures
 * that would flip the answer are printed with each verdict. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "doc_text.h"
#include "grow.h"
#include "hash.h"
#include "matrix.h"
#include "suite.h"
#include "target.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench check SUITE.yaml [--target NAME | --target-file PATH] [--filter EXPR]\n"
            "                     [--format table|csv] [--json FILE|-]\n"
            "\n"
            "Judge each config of the suite against a target device profile: shared memory,\n"
            "threads and registers needed, against what the target offers; occupancy\n"
            "(blocks per SM and what limits it); and which disputed profile figures would\n"
            "flip a verdict. Nothing is run.\n"
            "\n"
            "  --target NAME       profile SUITE_DIR/targets/NAME.yaml\n"
            "                      (default: the suite's target:)\n"
            "  --target-file PATH  profile file at PATH\n"
            "  --filter EXPR       only cases matching EXPR, e.g. 'head_dim=128,block_n>=64'\n"
            "  --format FMT        table (default) or csv\n"
            "  --json FILE|-       the verdict as JSON (schema ppbench-check/1, docs/CLI.md); with '-' the\n"
            "                      table is left out and the summary goes to stderr\n"
            "\n"
            "exit: 0 every config feasible, 1 some infeasible, 2 usage, 3 bad suite or profile\n");
}

/* The shape fields a config's needs depend on (docs/TARGETS.md): the rest
 * (batch, query and context lengths, heads) change the grid, not a block. */
static const ppb_field prefill_shape_fields[] = {PPB_F_HEAD_DIM, PPB_F_DTYPE};
static const ppb_field decode_shape_fields[] = {PPB_F_HEAD_DIM, PPB_F_DTYPE, PPB_F_PAGE_SIZE,
                                                PPB_F_SEQ_LEN};
#define MAX_SHAPE_FIELDS 4
#define MAX_SHOWN_VALUES 8

typedef struct check_row {
    char config[192];
    int config_order;             /* first appearance of this config */
    int first_seen;               /* creation order, for a stable sort */
    int n_cases;
    int n_values[MAX_SHAPE_FIELDS];
    int values[MAX_SHAPE_FIELDS][MAX_SHOWN_VALUES];
    int more_values[MAX_SHAPE_FIELDS];
    ppb_needs needs;
    ppb_feasibility verdict;
    int merged;                   /* folded into an earlier row with the same needs */
    char group_key[320];
} check_row;

typedef struct row_table {
    check_row *rows;
    int n, cap;
    int *slots;                   /* open addressing on group_key */
    size_t mask;
} row_table;

static void relevant_fields(ppb_kernel_kind k, const ppb_field **fields, int *n)
{
    if (k == PPB_PREFIX_PREFILL) {
        *fields = prefill_shape_fields;
        *n = (int)(sizeof prefill_shape_fields / sizeof prefill_shape_fields[0]);
    } else {
        *fields = decode_shape_fields;
        *n = (int)(sizeof decode_shape_fields / sizeof decode_shape_fields[0]);
    }
}

static void config_text(const ppb_case *c, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int f = 0; f < PPB_F_COUNT; f++) {
        const ppb_field_info *fi = ppb_field_get(f);
        if (!fi->is_config || !((fi->kernels >> c->kernel) & 1u))
            continue;
        int v = ppb_case_get(c, f);
        /* host_partition_size 0 means "same as the kernel's": not a knob then. */
        if (f == PPB_F_HOST_PARTITION_SIZE && v == 0)
            continue;
        if (f == PPB_F_PARTITION_SIZE && c->config.version == 1)
            continue;
        char val[PPB_FIELD_TEXT_MAX];
        ppb_field_format_value(f, v, val, sizeof val);
        int w = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", fi->name, val);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

static int find_or_add_row(row_table *t, const ppb_case *c, const char *config, int config_order,
                           const ppb_target *target, int *row_index)
{
    const ppb_field *fields;
    int nf;
    relevant_fields(c->kernel, &fields, &nf);
    char key[320];
    int used = snprintf(key, sizeof key, "%s", config);
    for (int i = 0; i < nf && used < (int)sizeof key; i++)
        used += snprintf(key + used, sizeof key - (size_t)used, "|%d", ppb_case_get(c, fields[i]));

    size_t slot = (size_t)ppb_fnv1a64_str(key) & t->mask;
    while (t->slots[slot] >= 0) {
        if (strcmp(t->rows[t->slots[slot]].group_key, key) == 0) {
            *row_index = t->slots[slot];
            return PPB_OK;
        }
        slot = (slot + 1) & t->mask;
    }
    if (ppb_grow((void **)&t->rows, &t->cap, t->n, sizeof *t->rows, 32) != PPB_OK)
        return PPB_ENOMEM;
    check_row *r = &t->rows[t->n];
    memset(r, 0, sizeof *r);
    snprintf(r->config, sizeof r->config, "%s", config);
    snprintf(r->group_key, sizeof r->group_key, "%s", key);
    r->config_order = config_order;
    r->first_seen = t->n;
    for (int i = 0; i < nf; i++) {
        r->n_values[i] = 1;
        r->values[i][0] = ppb_case_get(c, fields[i]);
    }
    ppb_target_needs(c, target, NULL, &r->needs);
    ppb_target_judge(c, target, NULL, &r->verdict);
    t->slots[slot] = t->n;
    *row_index = t->n++;
    return PPB_OK;
}

static int same_needs(const check_row *a, const check_row *b)
{
    return strcmp(a->config, b->config) == 0 && a->needs.smem_bytes == b->needs.smem_bytes &&
           a->needs.threads == b->needs.threads &&
           a->needs.registers_per_thread == b->needs.registers_per_thread &&
           a->verdict.feasible == b->verdict.feasible &&
           a->verdict.blocks_per_sm == b->verdict.blocks_per_sm &&
           strcmp(a->verdict.limiter, b->verdict.limiter) == 0 &&
           strcmp(a->verdict.flips, b->verdict.flips) == 0;
}

/* Fold rows of one config whose needs and verdict are identical (decode v2 at
 * every sequence length, say) into the first, listing the shape values. */
static void merge_rows(row_table *t, int nf)
{
    for (int i = 0; i < t->n; i++) {
        check_row *keep = &t->rows[i];
        if (keep->merged)
            continue;
        for (int j = i + 1; j < t->n; j++) {
            check_row *r = &t->rows[j];
            if (r->merged || !same_needs(keep, r))
                continue;
            r->merged = 1;
            keep->n_cases += r->n_cases;
            for (int f = 0; f < nf; f++) {
                int v = r->values[f][0], seen = 0;
                for (int k = 0; k < keep->n_values[f] && !seen; k++)
                    seen = keep->values[f][k] == v;
                if (seen)
                    continue;
                if (keep->n_values[f] < MAX_SHOWN_VALUES)
                    keep->values[f][keep->n_values[f]++] = v;
                else
                    keep->more_values[f] = 1;
            }
        }
    }
}

static void shape_text(const check_row *r, ppb_kernel_kind k, char *buf, size_t len)
{
    const ppb_field *fields;
    int nf;
    relevant_fields(k, &fields, &nf);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < nf && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%s=", i ? " " : "",
                                 ppb_field_get(fields[i])->name);
        for (int v = 0; v < r->n_values[i] && used < len; v++) {
            char val[PPB_FIELD_TEXT_MAX];
            ppb_field_format_value(fields[i], r->values[i][v], val, sizeof val);
            used += (size_t)snprintf(buf + used, len - used, "%s%s", v ? "|" : "", val);
        }
        if (r->more_values[i] && used < len)
            used += (size_t)snprintf(buf + used, len - used, "|...");
    }
}

static int compare_rows(const void *pa, const void *pb)
{
    const check_row *a = pa, *b = pb;
    if (a->config_order != b->config_order)
        return a->config_order < b->config_order ? -1 : 1;
    return (a->first_seen > b->first_seen) - (a->first_seen < b->first_seen);
}

static void csv_field(FILE *out, const char *text, int last)
{
    if (strpbrk(text, ",\"\n")) {
        fputc('"', out);
        for (const char *p = text; *p; p++) {
            if (*p == '"')
                fputc('"', out);
            fputc(*p, out);
        }
        fputc('"', out);
    } else {
        fputs(text, out);
    }
    fputc(last ? '\n' : ',', out);
}

static void print_value(FILE *out, const char *name, const ppb_target_value *v, int bytes)
{
    if (!v->present) {
        fprintf(out, "  %-24s unknown\n", name);
        return;
    }
    fprintf(out, "  %-24s %.0f%s (%s", name, v->value, bytes ? " B" : "", v->confidence);
    for (int i = 0; i < v->n_alt; i++)
        fprintf(out, "%s%.0f", i ? ", " : "; other figures: ", v->alternatives[i]);
    fprintf(out, ")\n");
}

static void print_assumptions(FILE *out, const ppb_target *t)
{
    fprintf(out, "target %s: %s [%s]\n", t->name, t->description, t->path);
    print_value(out, "warp_size", &t->warp_size, 0);
    print_value(out, "smem_per_block", &t->smem_per_block, 1);
    if (t->smem_per_block_default.present)
        print_value(out, "smem_per_block_default", &t->smem_per_block_default, 1);
    print_value(out, "smem_per_sm", &t->smem_per_sm, 1);
    if (t->smem_reserved_per_block.present)
        print_value(out, "smem_reserved_per_block", &t->smem_reserved_per_block, 1);
    print_value(out, "max_threads_per_block", &t->max_threads_per_block, 0);
    print_value(out, "max_threads_per_sm", &t->max_threads_per_sm, 0);
    print_value(out, "max_blocks_per_sm", &t->max_blocks_per_sm, 0);
    print_value(out, "regs_per_sm", &t->regs_per_sm, 0);
    print_value(out, "max_regs_per_thread", &t->max_regs_per_thread, 0);
    fprintf(out, "needs: formula model (docs/TARGETS.md); registers are unknown until a compiled "
                 "kernel's resources are measured\n\n");
}

/* The why of a row: indented under it, lines of at most this many columns. */
#define WHY_INDENT 4
#define WHY_WIDTH 100

static void print_table(const row_table *t, ppb_kernel_kind kernel)
{
    int wc = (int)strlen("config"), ws = (int)strlen("shape");
    char shape[256];
    for (int i = 0; i < t->n; i++) {
        if (t->rows[i].merged)
            continue;
        shape_text(&t->rows[i], kernel, shape, sizeof shape);
        int lc = (int)strlen(t->rows[i].config), ls = (int)strlen(shape);
        wc = lc > wc ? lc : wc;
        ws = ls > ws ? ls : ws;
    }
    printf("%-*s  %-*s  %5s  %8s  %7s  %4s  %-10s  %s\n", wc, "config", ws, "shape", "cases", "smem B", "threads",
           "regs", "verdict", "blocks/SM");
    for (int i = 0; i < t->n; i++) {
        const check_row *r = &t->rows[i];
        if (r->merged)
            continue;
        shape_text(r, kernel, shape, sizeof shape);
        char regs[16], occ[48];
        if (r->needs.registers_per_thread > 0)
            snprintf(regs, sizeof regs, "%d", r->needs.registers_per_thread);
        else
            snprintf(regs, sizeof regs, "-");
        if (r->verdict.feasible && r->verdict.blocks_per_sm > 0)
            snprintf(occ, sizeof occ, "%d (%s)", r->verdict.blocks_per_sm, r->verdict.limiter);
        else
            snprintf(occ, sizeof occ, r->verdict.feasible ? "unknown" : "-");
        printf("%-*s  %-*s  %5d  %8ld  %7d  %4s  %-10s  %s\n", wc, r->config, ws, shape, r->n_cases,
               r->needs.smem_bytes, r->needs.threads, regs, r->verdict.feasible ? "feasible" : "INFEASIBLE", occ);
        /* The arithmetic runs to ~700 characters: on lines of its own under the row, wrapped. */
        ppb_term_wrap(stdout, NULL, WHY_INDENT, WHY_WIDTH, r->verdict.reason);
        if (r->verdict.flips[0])
            ppb_term_wrap(stdout, "    flips: ", WHY_INDENT + 7, WHY_WIDTH, r->verdict.flips);
    }
}

static void print_csv(const row_table *t, ppb_kernel_kind kernel)
{
    printf("config,shape,cases,smem_bytes,seed_smem_bytes,threads,seed_threads,registers,"
           "from_compiled,verdict,blocks_per_sm,limiter,reason,flips\n");
    for (int i = 0; i < t->n; i++) {
        const check_row *r = &t->rows[i];
        if (r->merged)
            continue;
        char shape[256], num[64];
        shape_text(r, kernel, shape, sizeof shape);
        csv_field(stdout, r->config, 0);
        csv_field(stdout, shape, 0);
        snprintf(num, sizeof num, "%d", r->n_cases);
        csv_field(stdout, num, 0);
        snprintf(num, sizeof num, "%ld", r->needs.smem_bytes);
        csv_field(stdout, num, 0);
        snprintf(num, sizeof num, "%ld", r->needs.seed_smem_bytes);
        csv_field(stdout, num, 0);
        snprintf(num, sizeof num, "%d", r->needs.threads);
        csv_field(stdout, num, 0);
        snprintf(num, sizeof num, "%d", r->needs.seed_threads);
        csv_field(stdout, num, 0);
        snprintf(num, sizeof num, "%d", r->needs.registers_per_thread);
        csv_field(stdout, num, 0);
        csv_field(stdout, r->needs.from_compiled ? "1" : "0", 0);
        csv_field(stdout, r->verdict.feasible ? "feasible" : "infeasible", 0);
        snprintf(num, sizeof num, "%d", r->verdict.blocks_per_sm);
        csv_field(stdout, num, 0);
        csv_field(stdout, r->verdict.limiter, 0);
        csv_field(stdout, r->verdict.reason, 0);
        csv_field(stdout, r->verdict.flips, 1);
    }
}

typedef struct check_options {
    const char *suite_path, *target_name, *target_file, *filter;
    int csv;
    const char *json;             /* --json FILE|- */
} check_options;

/* The verdict for CI, schema "ppbench-check/1" (docs/CLI.md): one object per
 * config x shape row, as the table and the CSV show them. */
typedef struct check_doc {
    const row_table *t;
    ppb_kernel_kind kernel;
    const ppb_suite *suite;
    const ppb_target *target;
    int exit_code, bad_configs, n_configs, bad_rows, rows, bad_cases, cases;
} check_doc;

static int write_check_json(void *ctx, FILE *out, ppb_err *err)
{
    (void)err;
    const check_doc *d = ctx;
    fprintf(out, "{\"schema\":\"ppbench-check/1\",\"command\":\"check\",\"exit_code\":%d,\"suite\":", d->exit_code);
    ppb_json_string(out, d->suite->name);
    fputs(",\"target\":", out);
    ppb_json_string(out, d->target->name);
    fprintf(out, ",\"counts\":{\"configs\":%d,\"infeasible_configs\":%d,\"rows\":%d,\"infeasible_rows\":%d,"
                 "\"cases\":%d,\"infeasible_cases\":%d},\"rows\":[",
            d->n_configs, d->bad_configs, d->rows, d->bad_rows, d->cases, d->bad_cases);
    int first = 1;
    for (int i = 0; i < d->t->n; i++) {
        const check_row *r = &d->t->rows[i];
        if (r->merged)
            continue;
        char shape[256];
        shape_text(r, d->kernel, shape, sizeof shape);
        fputs(first ? "{\"config\":" : ",{\"config\":", out);
        first = 0;
        ppb_json_string(out, r->config);
        fputs(",\"shape\":", out);
        ppb_json_string(out, shape);
        fprintf(out, ",\"cases\":%d,\"smem_bytes\":%ld,\"seed_smem_bytes\":%ld,\"threads\":%d,\"seed_threads\":%d,"
                     "\"registers\":%d,\"from_compiled\":%s,\"feasible\":%s,\"blocks_per_sm\":%d,\"limiter\":",
                r->n_cases, r->needs.smem_bytes, r->needs.seed_smem_bytes, r->needs.threads, r->needs.seed_threads,
                r->needs.registers_per_thread, r->needs.from_compiled ? "true" : "false",
                r->verdict.feasible ? "true" : "false", r->verdict.blocks_per_sm);
        ppb_json_string(out, r->verdict.limiter);
        fputs(",\"reason\":", out);
        ppb_json_string(out, r->verdict.reason);
        fputs(",\"flips\":", out);
        ppb_json_string(out, r->verdict.flips);
        fputc('}', out);
    }
    fputs("]}\n", out);
    return PPB_OK;
}

static int judge_suite(const check_options *o)
{
    ppb_suite suite;
    ppb_target *target = calloc(1, sizeof *target);
    ppb_case_list cases = {0};
    row_table t = {0};
    char (*configs)[192] = NULL;  /* distinct config texts, in order of first appearance */
    int n_configs = 0;
    int *config_bad = NULL;
    ppb_err err = {{0}};
    int exit_code = PPB_EXIT_INPUT, rc;
    memset(&suite, 0, sizeof suite);
    if (!target) {
        fprintf(stderr, "ppbench check: out of memory\n");
        return PPB_EXIT_RUNTIME;
    }

    if ((rc = ppb_suite_load(o->suite_path, &suite, &err)) != PPB_OK) {
        fprintf(stderr, "ppbench check: %s\n", err.msg);
        goto end;
    }
    if (o->target_file) {
        rc = ppb_target_load(o->target_file, target, &err);
    } else {
        const char *name = o->target_name ? o->target_name : suite.target;
        if (!name[0]) {
            fprintf(stderr, "ppbench check: %s names no target: give --target NAME or "
                            "--target-file PATH\n",
                    o->suite_path);
            exit_code = PPB_EXIT_USAGE;
            goto end;
        }
        char dir[4096];
        ppb_suite_dir(&suite, dir, sizeof dir);
        rc = o->target_name ? ppb_target_load_arg(dir, name, target, &err)
                            : ppb_target_load_named(dir, name, target, &err);
    }
    if (rc) {
        fprintf(stderr, "ppbench check: %s\n", err.msg);
        goto end;
    }
    if ((rc = ppb_matrix_expand(&suite, &cases, &err)) != PPB_OK) {
        fprintf(stderr, "ppbench check: %s\n", err.msg);
        exit_code = rc == PPB_ENOMEM ? PPB_EXIT_RUNTIME : PPB_EXIT_INPUT;
        goto end;
    }
    int total_cases = cases.n;
    if (o->filter && (rc = ppb_matrix_filter(&cases, o->filter, &err)) != PPB_OK) {
        fprintf(stderr, "ppbench check: --filter: %s\n", err.msg);
        exit_code = PPB_EXIT_USAGE;
        goto end;
    }

    size_t slots = 64;
    while (slots < (size_t)cases.n * 2)
        slots *= 2;
    t.slots = malloc(slots * sizeof *t.slots);
    configs = malloc((size_t)(cases.n > 0 ? cases.n : 1) * sizeof *configs);
    config_bad = calloc((size_t)(cases.n > 0 ? cases.n : 1), sizeof *config_bad);
    if (!t.slots || !configs || !config_bad)
        goto out_of_memory;
    for (size_t i = 0; i < slots; i++)
        t.slots[i] = -1;
    t.mask = slots - 1;

    for (int i = 0; i < cases.n; i++) {
        char config[192];
        config_text(&cases.items[i], config, sizeof config);
        int order = -1;
        for (int j = n_configs - 1; j >= 0 && order < 0; j--)
            if (strcmp(configs[j], config) == 0)
                order = j;
        if (order < 0) {
            order = n_configs;
            memcpy(configs[n_configs++], config, sizeof config);
        }
        int row;
        if (find_or_add_row(&t, &cases.items[i], config, order, target, &row) != PPB_OK)
            goto out_of_memory;
        t.rows[row].n_cases++;
    }
    const ppb_field *fields;
    int nf;
    relevant_fields(suite.kernel, &fields, &nf);
    merge_rows(&t, nf);
    qsort(t.rows, (size_t)t.n, sizeof *t.rows, compare_rows); /* group rows by config */

    int bad_configs = 0, bad_rows = 0, rows = 0, bad_cases = 0;
    for (int i = 0; i < t.n; i++) {
        const check_row *r = &t.rows[i];
        if (r->merged)
            continue;
        rows++;
        if (!r->verdict.feasible) {
            bad_rows++;
            bad_cases += r->n_cases;
            if (!config_bad[r->config_order]++)
                bad_configs++;
        }
    }

    int json_on_stdout = o->json && strcmp(o->json, "-") == 0;
    if (o->csv) {
        print_csv(&t, suite.kernel);
    } else if (!json_on_stdout) {
        print_assumptions(stdout, target);
        printf("suite %s [%s]: %d cases%s", suite.name, suite.path, total_cases,
               o->filter ? "" : "\n");
        if (o->filter)
            printf(", %d after --filter '%s'\n", cases.n, o->filter);
        print_table(&t, suite.kernel);
        printf("\n");
    }
    FILE *summary = o->csv || json_on_stdout ? stderr : stdout;
    if (cases.n == 0)
        fprintf(stderr, "ppbench check: no case to judge%s\n",
                o->filter ? " (the filter matches none)" : "");
    /* A config counts as infeasible when some shape of the suite makes it so. */
    fprintf(summary,
            "%d of %d configs infeasible on %s (at one shape or more; %d of %d config x shape "
            "rows, %d of %d cases)\n",
            bad_configs, n_configs, target->name, bad_rows, rows, bad_cases, cases.n);
    exit_code = bad_configs ? PPB_EXIT_FAILURES : PPB_EXIT_OK;
    check_doc doc = {&t, suite.kernel, &suite, target, exit_code, bad_configs, n_configs, bad_rows, rows, bad_cases,
                     cases.n};
    if (ppb_cli_write_doc("check", o->json, write_check_json, &doc))
        exit_code = PPB_EXIT_RUNTIME;
    goto end;
out_of_memory:
    fprintf(stderr, "ppbench check: out of memory\n");
    exit_code = PPB_EXIT_RUNTIME;
end:
    free(configs);
    free(config_bad);
    free(t.rows);
    free(t.slots);
    ppb_case_list_free(&cases);
    ppb_suite_free(&suite);
    free(target);
    return exit_code;
}

int cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {{"target", required_argument, NULL, 't'},
                                             {"target-file", required_argument, NULL, 'T'},
                                             {"filter", required_argument, NULL, 'f'},
                                             {"format", required_argument, NULL, 'F'},
                                             {"json", required_argument, NULL, 'j'},
                                             PPB_CLI_OPT_HELP_END};
    check_options o = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': o.target_name = optarg; break;
        case 'T': o.target_file = optarg; break;
        case 'f': o.filter = optarg; break;
        case 'j': o.json = optarg; break;
        case 'F':
            if (strcmp(optarg, "table") == 0)
                o.csv = 0;
            else if (strcmp(optarg, "csv") == 0)
                o.csv = 1;
            else {
                fprintf(stderr, "ppbench check: --format '%s': expected table or csv\n", optarg);
                return PPB_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ppbench check: expected one suite file\n");
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if (o.target_name && o.target_file) {
        fprintf(stderr, "ppbench check: give --target or --target-file, not both\n");
        return PPB_EXIT_USAGE;
    }
    o.suite_path = ppb_cli_suite_arg(argv[optind], "");
    return judge_suite(&o);
}
