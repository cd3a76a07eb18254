#include "workers.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64

typedef struct worker {
    pid_t pid;
    int to_child, from_child;
    int device;
    int busy_case;          /* index of the case it holds, -1 when idle */
    double deadline;        /* monotonic seconds */
} worker;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* All of len bytes through read or write, resumed after EINTR and short
 * transfers: the pipe protocol sends whole structs. -1 on an error or EOF. */
static int transfer_all(int fd, char *p, size_t len, int writing)
{
    while (len > 0) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* write() never writes through its buffer: dropping const here is safe. */
static int write_all(int fd, const void *buf, size_t len) { return transfer_all(fd, (char *)buf, len, 1); }

static int read_all(int fd, void *buf, size_t len) { return transfer_all(fd, buf, len, 0); }

int ppb_pool_parse_devices(const char *text, int n_available, int *devices, int max, int *n,
                           ppb_err *err)
{
    *n = 0;
    if (strcmp(text, "all") == 0) {
        if (n_available <= 0)
            return ppb_fail(err, PPB_EINPUT, "--devices all: no device found");
        for (int i = 0; i < n_available && i < max; i++)
            devices[(*n)++] = i;
        return PPB_OK;
    }
    const char *p = text;
    while (*p) {
        char *end = NULL;
        long d = strtol(p, &end, 10);
        if (end == p || d < 0 || d > 1023 || (*end && *end != ','))
            return ppb_fail(err, PPB_EINPUT, "--devices %s: expected 'all' or indices like 0,1",
                            text);
        if (*n == max)
            return ppb_fail(err, PPB_EINPUT, "--devices %s: at most %d workers", text, max);
        devices[(*n)++] = (int)d;
        p = *end ? end + 1 : end;
    }
    return *n ? PPB_OK : ppb_fail(err, PPB_EINPUT, "--devices: empty list");
}

/* ---- the child ---------------------------------------------------------- */

/* Test hook (docs/CLI.md): PPBENCH_FAULT_INJECT=crash:TEXT or hang:TEXT makes a
 * worker die or hang on cases whose key contains TEXT, so the recovery path
 * can be tested without a broken kernel. */
static void maybe_inject_fault(const ppb_case *c)
{
    const char *spec = getenv("PPBENCH_FAULT_INJECT");
    if (!spec)
        return;
    if (strncmp(spec, "crash:", 6) == 0 && strstr(c->key, spec + 6))
        abort();
    if (strncmp(spec, "hang:", 5) == 0 && strstr(c->key, spec + 5))
        for (;;)
            pause();
}

static void child_main(int in, int out, int device, const ppb_case *cases,
                       const ppb_pool_callbacks *cb)
{
    ppb_device_info info;
    memset(&info, 0, sizeof info);
    ppb_err err = {{0}};
    int32_t status = cb->worker_open(cb->ctx, device, &info, &err);
    if (write_all(out, &status, sizeof status) || write_all(out, &info, sizeof info) ||
        write_all(out, err.msg, sizeof err.msg) || status != PPB_OK)
        _exit(status ? 3 : 1);
    int32_t index;
    while (read_all(in, &index, sizeof index) == 0 && index >= 0) {
        ppb_result res;
        maybe_inject_fault(&cases[index]);
        cb->worker_case(cb->ctx, &cases[index], &res);
        int32_t n = res.n_samples;
        if (write_all(out, &index, sizeof index) || write_all(out, &res, sizeof res) ||
            (n > 0 && write_all(out, res.samples_ms, sizeof(double) * (size_t)n)))
            _exit(1);
        ppb_result_free(&res);
    }
    cb->worker_close(cb->ctx);
    _exit(0);
}

/* ---- the parent --------------------------------------------------------- */

static int spawn(worker *w, int device, const ppb_case *cases, const ppb_pool_callbacks *cb,
                 ppb_device_info *info, ppb_err *err)
{
    int down[2], up[2];
    if (pipe(down) != 0)
        return ppb_fail(err, PPB_EFAIL, "pipe: %s", strerror(errno));
    if (pipe(up) != 0) {
        close(down[0]), close(down[1]);
        return ppb_fail(err, PPB_EFAIL, "pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return ppb_fail(err, PPB_EFAIL, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        signal(SIGINT, SIG_IGN); /* the parent decides when to stop */
        child_main(down[0], up[1], device, cases, cb);
    }
    close(down[0]);
    close(up[1]);
    w->pid = pid;
    w->to_child = down[1];
    w->from_child = up[0];
    w->device = device;
    w->busy_case = -1;
    int32_t status;
    ppb_err child_err;
    if (read_all(w->from_child, &status, sizeof status) ||
        read_all(w->from_child, info, sizeof *info) ||
        read_all(w->from_child, child_err.msg, sizeof child_err.msg))
        return ppb_fail(err, PPB_EFAIL, "worker for device %d died while starting", device);
    if (status != PPB_OK)
        return ppb_fail(err, status, "worker for device %d: %s", device, child_err.msg);
    return PPB_OK;
}

static void reap(worker *w, char *why, size_t len)
{
    int st = 0;
    close(w->to_child);
    close(w->from_child);
    if (waitpid(w->pid, &st, WNOHANG) == 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, &st, 0);
    }
    if (why && WIFSIGNALED(st))
        snprintf(why, len, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (why)
        snprintf(why, len, "exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    w->pid = 0;
}

static int assign(worker *w, int index, double timeout)
{
    int32_t i = index;
    w->busy_case = index;
    w->deadline = timeout > 0 ? now_s() + timeout : 0;
    return write_all(w->to_child, &i, sizeof i);
}

/* Record the case a dead or hung worker held, then replace the worker. */
static int recover(worker *w, int status, const char *what, const ppb_case *cases,
                   const ppb_pool_callbacks *cb, ppb_err *err)
{
    char why[128] = "";
    int index = w->busy_case, device = w->device;
    reap(w, why, sizeof why);
    ppb_result res;
    ppb_result_init(&res);
    res.status = status;
    snprintf(res.reason, sizeof res.reason, "worker on device %d %s%s%s", device, what,
             why[0] ? ": " : "", why);
    int rc = index >= 0 ? cb->on_result(cb->ctx, index, &cases[index], &res, err) : PPB_OK;
    if (rc)
        return rc;
    ppb_device_info info;
    return spawn(w, device, cases, cb, &info, err);
}

int ppb_pool_run(const ppb_pool_options *opt, const ppb_case *cases, const char *todo, int n,
                 const ppb_pool_callbacks *cb, volatile sig_atomic_t *stop, ppb_err *err)
{
    worker workers[MAX_WORKERS];
    int nw = opt->n_devices < MAX_WORKERS ? opt->n_devices : MAX_WORKERS, rc = PPB_OK;
    memset(workers, 0, sizeof workers);
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN); /* a dead worker is handled, not fatal */
    for (int k = 0; k < nw && !rc; k++) {
        ppb_device_info info;
        rc = spawn(&workers[k], opt->devices[k], cases, cb, &info, err);
        if (!rc && k == 0)
            rc = cb->on_device(cb->ctx, &info, err);
    }
    int next = 0, outstanding = 0;
    while (!rc) {
        /* hand out work */
        for (int k = 0; k < nw && !(stop && *stop); k++) {
            if (workers[k].busy_case >= 0)
                continue;
            while (next < n && !todo[next])
                next++;
            if (next >= n)
                break;
            if (assign(&workers[k], next, opt->case_timeout_s) != 0)
                rc = recover(&workers[k], PPB_STATUS_CRASHED, "died before taking a case", cases, cb, err);
            else
                outstanding++;
            next++;
        }
        if (rc || outstanding == 0)
            break;
        struct pollfd fds[MAX_WORKERS];
        for (int k = 0; k < nw; k++)
            fds[k] = (struct pollfd){workers[k].from_child, POLLIN, 0};
        int ready = poll(fds, (nfds_t)nw, 200);
        if (ready < 0 && errno != EINTR) {
            rc = ppb_fail(err, PPB_EFAIL, "poll: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < nw && !rc; k++) {
            worker *w = &workers[k];
            if (w->busy_case < 0)
                continue;
            if (ready > 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
                int32_t index;
                ppb_result res;
                if (read_all(w->from_child, &index, sizeof index) ||
                    read_all(w->from_child, &res, sizeof res)) {
                    outstanding--;
                    rc = recover(w, PPB_STATUS_CRASHED, "died", cases, cb, err);
                    continue;
                }
                res.samples_ms = NULL;
                if (res.n_samples > 0 &&
                    (!(res.samples_ms = malloc(sizeof(double) * (size_t)res.n_samples)) ||
                     read_all(w->from_child, res.samples_ms,
                              sizeof(double) * (size_t)res.n_samples))) {
                    ppb_result_free(&res);
                    outstanding--;
                    rc = recover(w, PPB_STATUS_CRASHED, "died while reporting", cases, cb, err);
                    continue;
                }
                w->busy_case = -1;
                outstanding--;
                rc = cb->on_result(cb->ctx, index, &cases[index], &res, err);
                ppb_result_free(&res);
            } else if (w->deadline > 0 && now_s() > w->deadline) {
                char what[96];
                snprintf(what, sizeof what, "hung past the %.0f s watchdog and was killed",
                         opt->case_timeout_s);
                outstanding--;
                rc = recover(w, PPB_STATUS_HUNG, what, cases, cb, err);
            }
        }
        if (stop && *stop && outstanding == 0)
            break;
    }
    for (int k = 0; k < nw; k++)
        if (workers[k].pid) {
            int32_t quit = -1;
            write_all(workers[k].to_child, &quit, sizeof quit);
            reap(&workers[k], NULL, 0);
        }
    signal(SIGPIPE, old_pipe);
    return rc;
}
