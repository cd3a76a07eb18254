/* Subcommands: one handler per file (harness/cli/cmd_*.c), one row each in
 * main.c's table. Each returns a process exit code (docs/CLI.md). */
#ifndef PPB_COMMANDS_H
#define PPB_COMMANDS_H

enum {
    PPB_EXIT_OK = 0,          /* did what was asked; every case correct (run) */
    PPB_EXIT_FAILURES = 1,    /* ran, but some case was wrong, errored or crashed (run); infeasible configs (check) */
    PPB_EXIT_USAGE = 2,       /* bad command line */
    PPB_EXIT_INPUT = 3,       /* bad input file (suite, profile, key): nothing was written */
    PPB_EXIT_RUNTIME = 4,     /* database, backend or I/O failure */
    PPB_EXIT_INTERRUPTED = 130,
    /* verdicts (propose, compare) and alerts (trend): ACCEPT / no alert is 0 */
    PPB_EXIT_REJECT = 10,
    PPB_EXIT_INCONCLUSIVE = 11,
    PPB_EXIT_REGRESSION = 12,  /* trend: some case regressed */
    PPB_EXIT_MISMATCH = 13,    /* verdict --recompute: the verdict decided again differs from the stored one */
};

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_propose(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_trend(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_impls(int argc, char **argv);
int cmd_list_kernels(int argc, char **argv);
int cmd_verdict(int argc, char **argv);

#endif
