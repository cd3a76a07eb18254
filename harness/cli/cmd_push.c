/* ppbench push RUN --to URL --format prometheus|influx|json, and the queue of
 * pushes that failed (--flush, --list, --drop). docs/CI.md "Push". */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli_util.h"
#include "commands.h"
#include "push.h"
#include "push_queue.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ppbench push RUN|latest --to URL --format prometheus|influx|json [options]\n"
            "       ppbench push --flush --to URL [options]   send the queued pushes for URL's server\n"
            "       ppbench push --list                       show the queue of failed pushes\n"
            "       ppbench push --drop ID                    remove one queued push\n\n"
            "  --db PATH            results database (default $PPBENCH_DB, else ./ppbench.db)\n"
            "  --cacert FILE        CA bundle for https (default $PPBENCH_CACERT); TLS is always\n"
            "                       verified\n"
            "  --timeout S          seconds per request (30)\n"
            "  --connect-timeout S  (10)\n"
            "  --retries N          retries of a transient failure: timeout, refused connection,\n"
            "                       HTTP 5xx, 408, 429 (3)\n"
            "  --retry-delay MS     first backoff, doubled per retry, at most 30 s (1000)\n"
            "  --token-env VAR      variable holding the token (PPBENCH_PUSH_TOKEN)\n"
            "  --auth-scheme S      Bearer (default), or Token for InfluxDB 2\n"
            "  --no-queue           do not queue this push if it fails\n\n"
            "prometheus: --to is the Pushgateway (http://host:9091); the run is PUT to\n"
            "  /metrics/job/ppbench/suite@base64/<suite>/host@base64/<host>[/shard@base64/<K/N>]\n"
            "  (each value base64url, so any text is a valid path) unless the URL names a job.\n"
            "influx: --to is the write endpoint (.../write?db=X or .../api/v2/write?org=O&bucket=B).\n"
            "json: --to gets the document of 'ppbench export --format json' by POST.\n"
            "The token is sent as 'Authorization: <scheme> <token>', only over https or to a\n"
            "loopback host, and is never printed or stored. A failed push is queued in the\n"
            "database and sent first by the next push to the same server.\n\n"
            "exit: 0 sent; 4 failed (queued); 2 usage; 3 bad input (run, URL, format)\n");
}

static int parse_long(const char *text, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || !*text || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static void print_note(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "ppbench push: %s\n", line);
}

static int print_pending(void *ctx, const ppb_push_pending *p)
{
    int *n = ctx;
    if ((*n)++ == 0)
        printf("%-5s %-5s %-10s %-8s %-20s %s\n", "id", "run", "format", "attempts", "queued at",
               "url / last error");
    printf("%-5lld %-5lld %-10s %-8d %-20s %s\n", (long long)p->id, (long long)p->run_id,
           p->format, p->attempts, p->created_at, p->url);
    if (p->last_error[0])
        printf("%53s%s\n", "", p->last_error);
    return 0;
}

int cmd_push(int argc, char **argv)
{
    /* Same order as longopts: the error message below indexes it with c - O_DB. */
    enum { O_DB = 1000, O_TO, O_FORMAT, O_CACERT, O_TIMEOUT, O_CONNECT, O_RETRIES, O_DELAY,
           O_TOKEN_ENV, O_SCHEME, O_NO_QUEUE, O_FLUSH, O_LIST, O_DROP };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, O_DB},
        {"to", required_argument, NULL, O_TO},
        {"format", required_argument, NULL, O_FORMAT},
        {"cacert", required_argument, NULL, O_CACERT},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"connect-timeout", required_argument, NULL, O_CONNECT},
        {"retries", required_argument, NULL, O_RETRIES},
        {"retry-delay", required_argument, NULL, O_DELAY},
        {"token-env", required_argument, NULL, O_TOKEN_ENV},
        {"auth-scheme", required_argument, NULL, O_SCHEME},
        {"no-queue", no_argument, NULL, O_NO_QUEUE},
        {"flush", no_argument, NULL, O_FLUSH},
        {"list", no_argument, NULL, O_LIST},
        {"drop", required_argument, NULL, O_DROP},
        PPB_CLI_OPT_HELP_END};
    const char *db = NULL, *to = NULL, *format = NULL, *token_env = "PPBENCH_PUSH_TOKEN";
    int queue = 1, flush = 0, list = 0;
    long drop = 0, v = 0;
    ppb_http_options http;
    ppb_http_options_default(&http);
    http.cacert = getenv("PPBENCH_CACERT");
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case O_DB: db = optarg; break;
        case O_TO: to = optarg; break;
        case O_FORMAT: format = optarg; break;
        case O_CACERT: http.cacert = optarg; break;
        case O_TIMEOUT: bad = parse_long(optarg, 1, 3600, &http.timeout_s); break;
        case O_CONNECT: bad = parse_long(optarg, 1, 3600, &http.connect_timeout_s); break;
        case O_RETRIES:
            bad = parse_long(optarg, 0, 20, &v);
            http.retries = (int)v;
            break;
        case O_DELAY: bad = parse_long(optarg, 0, 600000, &http.retry_delay_ms); break;
        case O_TOKEN_ENV: token_env = optarg; break;
        case O_SCHEME:
            http.auth_scheme = optarg;
            bad = strcmp(optarg, "Bearer") != 0 && strcmp(optarg, "Token") != 0;
            break;
        case O_NO_QUEUE: queue = 0; break;
        case O_FLUSH: flush = 1; break;
        case O_LIST: list = 1; break;
        case O_DROP: bad = parse_long(optarg, 1, 0x7fffffffL, &drop); break;
        case 'h': usage(stdout); return PPB_EXIT_OK;
        default: usage(stderr); return PPB_EXIT_USAGE;
        }
        if (bad) {
            fprintf(stderr, "ppbench push: bad value '%s' for --%s\n", optarg,
                    longopts[c - O_DB].name);
            return PPB_EXIT_USAGE;
        }
    }
    int n_pos = argc - optind;
    int modes = flush + list + (drop > 0);
    ppb_push_format f = PPB_PUSH_PROMETHEUS;
    ppb_err err = {{0}};
    if (modes > 1 || (modes == 1 && n_pos != 0) || (modes == 0 && n_pos != 1) ||
        (modes == 0 && (!to || !format)) || (flush && !to)) {
        usage(stderr);
        return PPB_EXIT_USAGE;
    }
    if (modes == 0 && ppb_push_format_parse(format, &f, &err) != PPB_OK) {
        fprintf(stderr, "ppbench push: %s\n", err.msg);
        return PPB_EXIT_USAGE;
    }
    http.token = getenv(token_env);

    ppb_store *s = ppb_cli_open_existing_store("push", db);
    if (!s)
        return PPB_EXIT_RUNTIME;
    int rc = PPB_OK;
    if (list) {
        int n = 0;
        rc = ppb_push_queue_each(s, print_pending, &n, &err);
        if (rc == PPB_OK && n == 0)
            printf("no queued pushes\n");
        goto end;
    }
    if (drop > 0) {
        rc = ppb_push_queue_drop(s, drop, &err);
        if (rc == PPB_OK)
            printf("dropped queued push %ld\n", drop);
        goto end;
    }
    int64_t run_id = 0;
    if (!flush && (rc = ppb_cli_run_id(s, argv[optind], &run_id, &err)) != PPB_OK)
        goto end;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        rc = ppb_fail(&err, PPB_EFAIL, "cannot initialise libcurl");
        goto end;
    }
    ppb_push_outcome out;
    rc = ppb_push_run(s, run_id, f, to, &http, queue, print_note, NULL, &out, &err);
    curl_global_cleanup();
    if (out.sent)
        printf("pushed run %lld as %s to %s\n", (long long)run_id, ppb_push_format_name(f), to);
    if (flush && rc == PPB_OK)
        printf("sent %d queued push%s\n", out.backlog_sent, out.backlog_sent == 1 ? "" : "es");
    if (out.backlog_failed > 0 && rc == PPB_OK)
        fprintf(stderr, "ppbench push: warning: %d queued push%s for this server still failing "
                        "(ppbench push --list)\n",
                out.backlog_failed, out.backlog_failed == 1 ? "" : "es");
    if (out.backlog_later > 0)
        fprintf(stderr, "ppbench push: %d more queued push%s for this server left for the next push (or "
                        "ppbench push --flush --to URL)\n",
                out.backlog_later, out.backlog_later == 1 ? "" : "es");
    if (out.backlog_elsewhere > 0)
        fprintf(stderr, "ppbench push: %d queued push%s for other servers left alone (send "
                        "them with ppbench push --flush --to URL)\n",
                out.backlog_elsewhere, out.backlog_elsewhere == 1 ? "" : "es");
end:
    if (rc)
        fprintf(stderr, "ppbench push: %s\n", err.msg);
    ppb_store_close(s);
    return ppb_cli_exit(rc);
}
