/* ppbench impls: the kernel implementations this machine has. The built-in
 * kernels first, then every plugin library on the search path (harness/run/impl.h),
 * with what it provides and where it came from; a library that cannot be used
 * is listed with the reason. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "impl.h"
#include "provenance.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench impls [--plugin PATH]...\n"
                 "  Lists builtin and every plugin on the search path: --plugin PATH, $PPBENCH_PLUGIN_PATH,\n"
                 "  <ppbench's folder>/plugins, ~/.cache/ppbench/plugins (libppbk_*.so).\n"
                 "  Exit 0; 1 when some library on the path cannot be used (listed with the reason).\n");
}

static void print_row(const char *name, const char *kernels, const char *backends, const char *abi,
                      const char *version)
{
    printf("%-22s %-55s %-9s %-4s %s\n", name, kernels, backends, abi, version);
}

int cmd_impls(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return PPB_EXIT_OK;
        }
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "ppbench impls: unexpected argument '%s'\n", argv[optind]);
        return PPB_EXIT_USAGE;
    }
    ppb_impl_info *infos = NULL;
    int n = 0;
    ppb_err err = {{0}};
    if (ppb_impl_scan(&infos, &n, &err) != PPB_OK) {
        fprintf(stderr, "ppbench impls: %s\n", err.msg);
        return PPB_EXIT_RUNTIME;
    }
    char commit[64];
    ppb_git_commit(commit, sizeof commit);
    char kernels[128], backends[32], abi[16], version[192];
    print_row("IMPL", "KERNELS", "BACKENDS", "ABI", "VERSION / SOURCE / PATH / CHECKSUM");
    ppb_impl_kernels_text(1, 1, 1, kernels, sizeof kernels);
    /* On the GPU the built-in kernels are a table of the kernel ABI like any
     * plugin (kernels/runtime/ppb_builtin.h); the CPU backend computes them itself. */
#ifdef PPB_HAVE_CUDA
    ppb_impl_backends_text(PPBK_BACKEND_CPU | PPBK_BACKEND_CUDA, backends, sizeof backends);
    snprintf(abi, sizeof abi, "%d", PPBK_ABI_VERSION);
#else
    ppb_impl_backends_text(PPBK_BACKEND_CPU, backends, sizeof backends);
    snprintf(abi, sizeof abi, "-");
#endif
    snprintf(version, sizeof version, "ppbench's own kernels, compiled in (commit %s)", commit);
    print_row("builtin", kernels, backends, abi, version);
    int broken = 0;
    for (int i = 0; i < n; i++) {
        const ppb_impl_info *f = &infos[i];
        if (!f->usable) {
            broken = 1;
            printf("%-22s unusable: %s\n%22s   path %s  checksum fnv1a64:%s\n", "-", f->error, "", f->path,
                   f->checksum);
            continue;
        }
        char name[80];
        snprintf(name, sizeof name, "%s%s",
                 strcmp(f->name, "vllm-triton") == 0 || strcmp(f->name, "vllm-cuda") == 0 ? "" : "plugin:",
                 f->name);
        ppb_impl_kernels_text(f->has_prefill, f->has_decode_v1, f->has_decode_v2, kernels, sizeof kernels);
        ppb_impl_backends_text(f->backends, backends, sizeof backends);
        snprintf(abi, sizeof abi, "%u", f->abi_version);
        print_row(name, kernels, backends, abi, f->version);
        printf("%22s   source %s\n%22s   path %s  checksum fnv1a64:%s%s%s\n", "", f->source[0] ? f->source : "-",
               "", f->path, f->checksum, f->shadowed ? "  (shadowed: an earlier library has this name)" : "",
               f->adapted ? "  (kernel ABI 2: loaded through the version-2 adapter)" : "");
        if (f->flash_layout) {
            ppb_impl_kernels_text(f->flash_layout & 1u, f->flash_layout & 2u, f->flash_layout & 4u, kernels,
                                  sizeof kernels);
            printf("%22s   %s: the paged KV cache in the FLASH layout [blocks, page, kv_heads, head_dim]\n", "",
                   kernels);
        }
        if (f->prefill_stages)
            printf("%22s   prefix_prefill: reads the new tokens' K/V from a cache it stages from the inputs, untimed "
                   "(as vLLM's cache write before attention)\n", "");
    }
    free(infos);
    return broken ? PPB_EXIT_FAILURES : PPB_EXIT_OK;
}
