/* Running another program (gnuplot, git apply, prepare.py, fetch-vllm.sh)
 * and waiting for it, without a shell: the arguments are passed as they are. */
#ifndef PPB_RUN_PROGRAM_H
#define PPB_RUN_PROGRAM_H

#include "ppb_error.h"

/* fork + exec of `path` (searched on PATH when it has no '/') with a fixed
 * argv, in `dir` (NULL: here), stdin from /dev/null. The child reports a
 * failed chdir/exec through a close-on-exec pipe, so "could not start" is told
 * apart from "the program failed". out_fd: where the child's stdout and stderr
 * go (-1: ours). timeout_s > 0: killed after that long (an error). Returns the
 * exit status (>= 0), or a negative PPB_E* code with `err` filled. */
int ppb_run_program(const char *path, char *const argv[], const char *dir, int out_fd, int timeout_s,
                   ppb_err *err);

#endif
