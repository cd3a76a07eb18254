/* Running another program and waiting for it (run_program.h). */
#include "run_program.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int ppb_run_program(const char *path, char *const argv[], const char *dir, int out_fd,
                          int timeout_s, ppb_err *err)
{
    int report[2];
    if (pipe(report) != 0)
        return ppb_fail(err, PPB_EFAIL, "pipe: %s", strerror(errno));
    if (fcntl(report[1], F_SETFD, FD_CLOEXEC) != 0 || fcntl(report[0], F_SETFD, FD_CLOEXEC) != 0) {
        close(report[0]);
        close(report[1]);
        return ppb_fail(err, PPB_EFAIL, "fcntl: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(report[0]);
        close(report[1]);
        return ppb_fail(err, PPB_EFAIL, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls from here on. */
        int e = 0, null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, STDIN_FILENO);
        if (out_fd >= 0) {
            dup2(out_fd, STDOUT_FILENO);
            dup2(out_fd, STDERR_FILENO);
        }
        if (dir && chdir(dir) != 0)
            e = errno;
        else {
            if (strchr(path, '/'))
                execv(path, argv);
            else
                execvp(path, argv);
            e = errno;
        }
        ssize_t ignored = write(report[1], &e, sizeof e);
        (void)ignored;
        _exit(127);
    }
    close(report[1]);
    int child_errno = 0;
    ssize_t got = read(report[0], &child_errno, sizeof child_errno);
    close(report[0]);

    int status = 0, rc;
    struct timespec tick = {0, 5 * 1000 * 1000};
    long waited_ms = 0;
    for (;;) {
        rc = (int)waitpid(pid, &status, WNOHANG);
        if (rc == pid)
            break;
        if (rc < 0 && errno != EINTR)
            return ppb_fail(err, PPB_EFAIL, "waitpid: %s", strerror(errno));
        if (timeout_s > 0 && waited_ms >= timeout_s * 1000L) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return ppb_fail(err, PPB_EFAIL, "%s ran for more than %d s and was stopped", path,
                            timeout_s);
        }
        nanosleep(&tick, NULL);
        waited_ms += 5;
    }
    if (got == (ssize_t)sizeof child_errno)
        return ppb_fail(err, PPB_EFAIL, "could not start %s%s%s: %s", path, dir ? " in " : "",
                        dir ? dir : "", strerror(child_errno));
    if (WIFSIGNALED(status))
        return ppb_fail(err, PPB_EFAIL, "%s was killed by signal %d", path, WTERMSIG(status));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

