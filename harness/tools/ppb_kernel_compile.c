/* ppb-kernel-compile: compile every kernel instantiation the suites use, with
 * NVRTC, for the given architectures, on all cores, without a GPU. Fails (exit
 * 1) on any compile error. This is the CTest `kernel_compile_check`.
 *
 * Instantiations come from the suites themselves (ppb_kernel_list_suites: the
 * same matrix expansion `ppbench run` uses) or from a list file of spec lines.
 * Architectures below PPB_MMA_MIN_CC get the portable path only (mma=0).
 *
 * Time: it compiles a representative subset first (every value of every
 * template parameter at least once, per architecture and kernel) and, from
 * how long that took, estimates the rest; past --budget it stops there and
 * says so, unless --all. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel_case.h"
#include "ppb_kernels.h"
#include "threads.h"

#define MAX_ARCHS 8
#define MAX_SUITES 256

typedef struct item {
    int arch_index;
    ppb_kernel_spec spec;
    int in_subset;
    int done, failed;
    double seconds;
    int from_cache;
    ppb_ptxas_report resources; /* compiled here: registers and spills (ptxas -v) */
    char message[1024];
} item;

typedef struct job {
    ppb_kernels *rt[MAX_ARCHS];
    item *items;
    int *order;        /* indices into items for this pass */
    double deadline;   /* monotonic seconds; items not started by then are left out (0 = none) */
} job;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A wgmma kernel (the Hopper prefill path `auto` picks) must not spill: one
 * that spilled 24 bytes ran the suite's shapes without a context 9-11% slower
 * (docs/results/h200-2026-12-02-copies-after-gemms.txt), and the kernel bench,
 * built by nvcc, did not show it: NVRTC allocates registers differently. */
static void refuse_spills(item *it)
{
    const ppb_ptxas_report *r = &it->resources;
    if (it->spec.use_mma != PPB_KSPEC_MMA_WGMMA || !r->known || r->spill_store_bytes == 0)
        return;
    it->failed = 1;
    snprintf(it->message, sizeof it->message,
             "spills %ld bytes (%ld bytes stack, %d registers): a wgmma kernel must not spill", r->spill_store_bytes,
             r->stack_bytes, r->registers);
}

static void compile_one(void *ctx, long index, int worker)
{
    (void)worker;
    job *j = ctx;
    item *it = &j->items[j->order[index]];
    if (j->deadline > 0 && now_seconds() > j->deadline)
        return; /* out of time: stays !done, reported as not compiled */
    ppb_kernel_compile_info info;
    ppb_err err;
    double t0 = now_seconds();
    int rc = ppb_kernels_compile(j->rt[it->arch_index], &it->spec, &info, &err);
    it->seconds = now_seconds() - t0;
    it->done = 1;
    it->failed = rc != PPB_OK;
    it->from_cache = rc == PPB_OK && info.from_cache;
    it->resources = info.resources;
    if (rc)
        snprintf(it->message, sizeof it->message, "%s", err.msg);
    else
        refuse_spills(it);
}

/* Greedy cover: an item joins the subset when it brings a (field, value) not
 * yet seen for its architecture and kernel kind. */
static void mark_subset(item *items, int n)
{
    typedef struct seen { int arch, kind, field, value; } seen;
    seen *s = calloc((size_t)n * PPB_KERNEL_SPEC_FIELDS_MAX + 1, sizeof *s);
    int ns = 0;
    if (!s) { /* no memory for the bookkeeping: everything is the subset */
        for (int i = 0; i < n; i++)
            items[i].in_subset = 1;
        return;
    }
    for (int i = 0; i < n; i++) {
        /* Every template argument of the kind, from kernel_spec's own table: no list here to
         * keep in step with it. */
        const ppb_kernel_spec *k = &items[i].spec;
        int nf = ppb_kernel_spec_field_count(k->kind);
        for (int f = 0; f < nf; f++) {
            int value = ppb_kernel_spec_field_value(k, f);
            int found = 0;
            for (int t = 0; t < ns && !found; t++)
                found = s[t].arch == items[i].arch_index && s[t].kind == k->kind && s[t].field == f &&
                        s[t].value == value;
            if (!found) {
                s[ns++] = (seen){.arch = items[i].arch_index, .kind = k->kind, .field = f, .value = value};
                items[i].in_subset = 1;
            }
        }
    }
    free(s);
}

static int collect_suites(const char *dir, char **paths, int *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL && *n < MAX_SUITES) {
        size_t len = strlen(ent->d_name);
        if (len < 6 || strcmp(ent->d_name + len - 5, ".yaml") != 0)
            continue;
        size_t need = strlen(dir) + len + 2;
        paths[*n] = malloc(need);
        if (!paths[*n])
            break;
        snprintf(paths[*n], need, "%s/%s", dir, ent->d_name);
        (*n)++;
    }
    closedir(d);
    /* Sorted, so the output (and the subset) does not depend on the file system. */
    for (int i = 1; i < *n; i++)
        for (int k = i; k > 0 && strcmp(paths[k - 1], paths[k]) > 0; k--) {
            char *t = paths[k];
            paths[k] = paths[k - 1];
            paths[k - 1] = t;
        }
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppb-kernel-compile [--suites-dir DIR] [--suite FILE]... [--list FILE]\n"
            "                          [--arch CC]... [--jobs N] [--budget SECONDS] [--all]\n"
            "                          [--cache DIR] [--source-dir DIR] [--print]\n"
            "Compile (NVRTC, no GPU needed) every kernel instantiation the suites use.\n"
            "  --arch CC      compute capability, e.g. 90 or 70 (default: 90 and 70); below %d.%d\n"
            "                 only the portable path (mma=0) is compiled\n"
            "  --budget S     past S seconds (estimated) compile only a representative subset\n"
            "  --all          compile everything whatever the time\n"
            "  --cache DIR    use (and fill) this kernel cache; default: none, always compile\n"
            "  --print        print the instantiations and stop (with one --arch: plain spec\n"
            "                 lines, e.g. for -DPPB_AOT_CONFIGS=FILE with --aot)\n"
            "  --aot          list the suites' cases as an ahead-of-time build runs them (no wgmma path)\n",
            PPB_MMA_MIN_CC / 10, PPB_MMA_MIN_CC % 10);
}

int main(int argc, char **argv)
{
    char *suites[MAX_SUITES];
    int n_suites = 0, owned_from = -1;
    const char *list_file = NULL, *cache_dir = NULL, *source_dir = NULL, *suites_dir = NULL;
    int archs[MAX_ARCHS], n_archs = 0, print_only = 0, all = 0, jobs = 0, aot = 0;
    double budget = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--print") == 0) {
            print_only = 1;
        } else if (strcmp(a, "--all") == 0) {
            all = 1;
        } else if (strcmp(a, "--aot") == 0) {
            aot = 1;
        } else if (!v) {
            usage(stderr);
            return 2;
        } else if (strcmp(a, "--suites-dir") == 0) {
            suites_dir = v, i++;
        } else if (strcmp(a, "--suite") == 0 && n_suites < MAX_SUITES) {
            suites[n_suites++] = (char *)v, i++;
        } else if (strcmp(a, "--list") == 0) {
            list_file = v, i++;
        } else if (strcmp(a, "--arch") == 0 && n_archs < MAX_ARCHS) {
            archs[n_archs++] = atoi(v), i++;
        } else if (strcmp(a, "--jobs") == 0) {
            jobs = atoi(v), i++;
        } else if (strcmp(a, "--budget") == 0) {
            budget = atof(v), i++;
        } else if (strcmp(a, "--cache") == 0) {
            cache_dir = v, i++;
        } else if (strcmp(a, "--source-dir") == 0) {
            source_dir = v, i++;
        } else {
            fprintf(stderr, "ppb-kernel-compile: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (suites_dir) {
        owned_from = n_suites;
        if (collect_suites(suites_dir, suites, &n_suites) != 0) {
            fprintf(stderr, "ppb-kernel-compile: %s: %s\n", suites_dir, strerror(errno));
            return 3;
        }
    }
    if (n_suites == 0 && !list_file) {
        fprintf(stderr, "ppb-kernel-compile: no suites and no --list: nothing to compile\n");
        return 2;
    }
    if (n_archs == 0) {
        archs[n_archs++] = 90;
        archs[n_archs++] = 70;
    }
    if (jobs > 0) {
        char text[16];
        snprintf(text, sizeof text, "%d", jobs);
        setenv("PPBENCH_THREADS", text, 1);
    }

    int status = 0;
    item *items = NULL;
    int n_items = 0;
    job j;
    memset(&j, 0, sizeof j);
    ppb_err err;
    double t_start = now_seconds();

    /* The instantiations, per architecture. */
    for (int a = 0; a < n_archs; a++) {
        ppb_kernel_spec_list list = {0};
        long skipped = 0;
        int rc = PPB_OK;
        if (n_suites > 0)
            rc = ppb_kernel_list_suites((const char *const *)suites, n_suites, archs[a], 0, 0, aot, &list, &skipped,
                                            &err);
        if (rc == PPB_OK && list_file) {
            ppb_kernel_spec_list from_file = {0};
            rc = ppb_kernel_list_read(list_file, &from_file, &err);
            for (int i = 0; rc == PPB_OK && i < from_file.n; i++) {
                const int mma = from_file.items[i].use_mma;
                if ((mma && archs[a] < PPB_MMA_MIN_CC) || (mma == PPB_KSPEC_MMA_WGMMA && archs[a] != PPB_WGMMA_CC)) {
                    skipped++;
                    continue;
                }
                if (ppb_kernel_spec_list_add(&list, &from_file.items[i]) != PPB_OK)
                    rc = ppb_fail(&err, PPB_ENOMEM, "out of memory");
            }
            ppb_kernel_spec_list_free(&from_file);
        }
        if (rc) {
            fprintf(stderr, "ppb-kernel-compile: %s\n", err.msg);
            ppb_kernel_spec_list_free(&list);
            status = 3;
            goto end;
        }
        if (skipped)
            fprintf(print_only ? stderr : stdout, "sm_%d: %ld case(s) or line(s) instantiate nothing: refused by the kernel plans, or a "
                   "tensor-core path the architecture lacks (mma below sm_%d, wgmma off sm_%d)\n",
                   archs[a], skipped, PPB_MMA_MIN_CC, PPB_WGMMA_CC);
        item *grown = realloc(items, (size_t)(n_items + list.n) * sizeof *items);
        if (!grown && list.n > 0) {
            ppb_kernel_spec_list_free(&list);
            fprintf(stderr, "ppb-kernel-compile: out of memory\n");
            status = 4;
            goto end;
        }
        if (grown)
            items = grown;
        for (int i = 0; i < list.n; i++) {
            memset(&items[n_items], 0, sizeof *items);
            items[n_items].arch_index = a;
            items[n_items].spec = list.items[i];
            n_items++;
        }
        ppb_kernel_spec_list_free(&list);
    }

    if (print_only) {
        /* One architecture: plain spec lines, ready for PPB_AOT_CONFIGS. */
        for (int i = 0; i < n_items; i++) {
            char text[PPB_KERNEL_SPEC_TEXT_MAX];
            ppb_kernel_spec_format(&items[i].spec, text, sizeof text);
            if (n_archs == 1)
                printf("%s\n", text);
            else
                printf("sm_%d %s\n", archs[items[i].arch_index], text);
        }
        goto end;
    }

    for (int a = 0; a < n_archs; a++) {
        ppb_kernels_options opt = {0};
        opt.compile_only = 1;
        opt.arch = archs[a];
        opt.mechanism = PPB_KMECH_NVRTC;
        opt.source_dir = source_dir;
        /* No cache unless asked: the check must compile, not remember. */
        opt.cache_dir = cache_dir;
        opt.no_cache = cache_dir == NULL;
        if (ppb_kernels_open(&j.rt[a], &opt, &err) != PPB_OK) {
            fprintf(stderr, "ppb-kernel-compile: sm_%d: %s\n", archs[a], err.msg);
            status = 4;
            goto end;
        }
        ppb_kernels_info info;
        ppb_kernels_get_info(j.rt[a], &info);
        if (info.arch_note_lowered)
            printf("sm_%d: %s has no sm_%d target; compiling the portable kernels for sm_%d, the oldest it "
                   "has, instead (an older toolkit, or the BI-V100's own, is needed for sm_%d itself)\n",
                   archs[a], info.compiler, archs[a], info.arch, archs[a]);
    }

    mark_subset(items, n_items);
    j.items = items;
    j.order = malloc((size_t)(n_items + 1) * sizeof *j.order);
    if (!j.order) {
        status = 4;
        goto end;
    }
    /* Decode kernels take the longest to compile: start them first so the
     * threads finish together (and a deadline cuts the cheap ones). */
    static const int kind_rank[] = {[PPB_KSPEC_DECODE] = 0, [PPB_KSPEC_PREFILL] = 1, [PPB_KSPEC_DECODE_REDUCE] = 2,
                                    [PPB_KSPEC_INPUT_FILL] = 2};
    int n_subset = 0;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < n_items; i++)
            if (items[i].in_subset && kind_rank[items[i].spec.kind] == r)
                j.order[n_subset++] = i;
    printf("%d instantiation(s) over %d architecture(s); compiling a representative %d first on %d thread(s)\n",
           n_items, n_archs, n_subset, ppb_thread_count());
    fflush(stdout);
    double t0 = now_seconds();
    /* Even the subset stops at the budget (when --all is not given): the check
     * must end in CI's time, and says what it left out. */
    j.deadline = (!all && budget > 0) ? t_start + budget : 0;
    ppb_parallel_for(n_subset, compile_one, &j);
    double subset_s = now_seconds() - t0;

    int n_rest = 0;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < n_items; i++)
            if (!items[i].in_subset && kind_rank[items[i].spec.kind] == r)
                j.order[n_rest++] = i;
    double estimate = n_subset > 0 ? subset_s / n_subset * n_rest : 0;
    int truncated = 0;
    if (n_rest > 0 && !all && budget > 0 && subset_s + estimate > budget) {
        truncated = 1;
    } else if (n_rest > 0) {
        ppb_parallel_for(n_rest, compile_one, &j);
    }

    int n_done = 0, n_failed = 0, n_cached = 0, n_subset_left = 0;
    for (int i = 0; i < n_items; i++) {
        item *it = &items[i];
        if (!it->done) {
            n_subset_left += it->in_subset;
            continue;
        }
        char text[PPB_KERNEL_SPEC_TEXT_MAX];
        ppb_kernel_spec_format(&it->spec, text, sizeof text);
        n_done++;
        n_failed += it->failed;
        n_cached += it->from_cache;
        char res[96] = "";
        if (it->resources.known)
            snprintf(res, sizeof res, "  %d registers, %ld B stack", it->resources.registers,
                     it->resources.stack_bytes);
        printf("%-4s sm_%d %s  %.1f s%s%s\n", it->failed ? "FAIL" : "ok", archs[it->arch_index], text,
               it->seconds, res, it->from_cache ? " (cached)" : "");
        if (it->failed)
            printf("     %s\n", it->message);
    }
    double wall = now_seconds() - t_start;
    printf("kernel compile check: %d of %d instantiations compiled, %d failed, %d from cache; %.1f s wall\n",
           n_done, n_items, n_failed, n_cached, wall);
    if (n_subset_left)
        printf("NOTE: the budget of %.0f s ran out inside the representative subset: %d of its %d were not "
               "compiled. Run with --all (or a larger --budget) to compile them.\n",
               budget, n_subset_left, n_subset);
    else if (truncated)
        printf("NOTE: only the representative subset (%d: every value of every template parameter at least "
               "once per architecture and kernel) was compiled: the other %d would take about %.0f s more "
               "(budget %.0f s). Run with --all for every one.\n",
               n_subset, n_rest, estimate, budget);
    status = n_failed ? 1 : 0;
end:
    for (int a = 0; a < n_archs; a++)
        ppb_kernels_close(j.rt[a]);
    free(j.order);
    free(items);
    if (owned_from >= 0)
        for (int i = owned_from; i < n_suites; i++)
            free(suites[i]);
    return status;
}
