/* ppbench list-kernels SUITE... --target NAME | --arch CC [--aot]: every
 * built-in kernel instantiation the suites launch on that device, one spec
 * line each (harness/run/kernel_case.h), in the format the ahead-of-time build
 * reads (CMake PPB_AOT_CONFIGS; ci/build-bi-v100.sh). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kernel_case.h"
#include "suite.h"
#include "target.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ppbench list-kernels SUITE.yaml... (--target NAME | --arch CC) [--aot]\n"
                 "  Prints every built-in kernel instantiation the suites' cases launch on that device, one\n"
                 "  line each, for the ahead-of-time build (-DPPB_AOT_CONFIGS=FILE; ci/build-bi-v100.sh).\n"
                 "  --target NAME   the device of suites/targets/NAME.yaml (beside the first suite): its\n"
                 "                  compute_capability, warp_size and smem_per_block\n"
                 "  --arch CC       compute capability, e.g. 90 or 70 (overrides the target's)\n"
                 "  --aot           as an ahead-of-time build launches them: no wgmma path (path auto\n"
                 "                  takes mma.sync where an NVRTC build would take wgmma)\n");
}

int cmd_list_kernels(int argc, char **argv)
{
    static const struct option longopts[] = {{"target", required_argument, NULL, 't'},
                                             {"arch", required_argument, NULL, 'a'},
                                             {"aot", no_argument, NULL, 'o'},
                                             PPB_CLI_OPT_HELP_END};
    const char *target_name = NULL;
    int cc = 0, aot = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': target_name = optarg; break;
        case 'a':
            if (ppb_cli_index("list-kernels", "--arch", optarg, &cc) || cc < 10 || cc > 200) {
                fprintf(stderr, "ppbench list-kernels: --arch %s: expected a compute capability like 70 or 90\n", optarg);
                return PPB_EXIT_USAGE;
            }
            break;
        case 'o': aot = 1; break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
    }
    if (optind >= argc || (!target_name && !cc)) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    ppb_err err = {{0}};
    for (int i = optind; i < argc; i++)   /* shipped suites by name, as run takes them */
        argv[i] = (char *)ppb_cli_suite_arg(argv[i], "");
    int warp = 0;
    unsigned smem = 0;
    if (target_name) {
        ppb_suite first;
        memset(&first, 0, sizeof first);
        ppb_target t;
        char dir[4096];
        int rc = ppb_suite_load(argv[optind], &first, &err);
        if (!rc) {
            ppb_suite_dir(&first, dir, sizeof dir);
            rc = ppb_target_load_arg(dir, target_name, &t, &err);
        }
        ppb_suite_free(&first);
        if (rc) {
            fprintf(stderr, "ppbench list-kernels: %s\n", err.msg);
            return PPB_EXIT_INPUT;
        }
        if (!cc && !t.compute_capability.present) {
            fprintf(stderr, "ppbench list-kernels: target %s gives no compute_capability: pass --arch CC\n", t.name);
            return PPB_EXIT_INPUT;
        }
        if (!cc)
            cc = (int)lround(t.compute_capability.value * 10);
        warp = t.warp_size.present ? (int)t.warp_size.value : 0;
        smem = t.smem_per_block.present ? (unsigned)t.smem_per_block.value : 0;
    }
    ppb_kernel_spec_list list = {0};
    long skipped = 0;
    int rc = ppb_kernel_list_suites((const char *const *)(argv + optind), argc - optind, cc, warp, smem, aot, &list,
                                    &skipped, &err);
    if (rc) {
        fprintf(stderr, "ppbench list-kernels: %s\n", err.msg);
        ppb_kernel_spec_list_free(&list);
        return ppb_cli_exit(rc);
    }
    for (int i = 0; i < list.n; i++) {
        char line[PPB_KERNEL_SPEC_TEXT_MAX];
        ppb_kernel_spec_format(&list.items[i], line, sizeof line);
        printf("%s\n", line);
    }
    fprintf(stderr, "ppbench list-kernels: %d instantiations for compute capability %d.%d, warp %d; %ld case(s) "
                    "instantiate none (refused by the kernel plans, or not run by the built-in kernels)\n",
            list.n, cc / 10, cc % 10, warp ? warp : 32, skipped);
    int n = list.n;
    ppb_kernel_spec_list_free(&list);
    return n ? PPB_EXIT_OK : PPB_EXIT_FAILURES; /* an empty list would build nothing */
}
