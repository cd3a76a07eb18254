/* HTTP requests for push and fetch (http.h). One curl easy handle per request,
 * reused across its tries so a retry can reuse the connection. */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

/* curl_url (the URL parser) is 7.62; CURLINFO_RETRY_AFTER 7.66. */
#if LIBCURL_VERSION_NUM < 0x074200
#error "ppbench needs libcurl 7.66 or newer"
#endif

#define BACKOFF_CAP_MS 30000L
#define RETRY_AFTER_CAP_S 60L
#define SNIPPET_MAX 200

void ppb_http_options_default(ppb_http_options *o)
{
    /* One initialiser: every field not named (cacert, token) starts NULL. */
    static const ppb_http_options defaults = {
        .timeout_s = 30, .connect_timeout_s = 10, .retries = 3, .retry_delay_ms = 1000,
        .auth_scheme = "Bearer",
    };
    *o = defaults;
}

/* ---- URLs ------------------------------------------------------------------ */

typedef struct url_parts {
    char scheme[16];
    char host[256];
    char port[8];
    int has_credentials;
} url_parts;

static int parse_url(const char *url, url_parts *p, ppb_err *err)
{
    memset(p, 0, sizeof *p);
    if (!url || !*url)
        return ppb_fail(err, PPB_EINPUT, "no URL given");
    CURLU *h = curl_url();
    if (!h)
        return ppb_fail(err, PPB_ENOMEM, "out of memory parsing a URL");
    int rc = PPB_OK;
    char *part = NULL;
    CURLUcode uc = curl_url_set(h, CURLUPART_URL, url, 0);
    if (uc != CURLUE_OK) {
        rc = ppb_fail(err, PPB_EINPUT, "'%s' is not a URL (scheme://host/...): %s", url,
                      curl_url_strerror(uc));
        goto end;
    }
    if (curl_url_get(h, CURLUPART_SCHEME, &part, 0) == CURLUE_OK) {
        snprintf(p->scheme, sizeof p->scheme, "%s", part);
        for (char *c = p->scheme; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
    curl_free(part);
    part = NULL;
    if (curl_url_get(h, CURLUPART_HOST, &part, 0) == CURLUE_OK)
        snprintf(p->host, sizeof p->host, "%s", part);
    curl_free(part);
    part = NULL;
    if (curl_url_get(h, CURLUPART_PORT, &part, CURLU_DEFAULT_PORT) == CURLUE_OK)
        snprintf(p->port, sizeof p->port, "%s", part);
    curl_free(part);
    part = NULL;
    if (curl_url_get(h, CURLUPART_USER, &part, 0) == CURLUE_OK)
        p->has_credentials = 1;
    curl_free(part);
    part = NULL;
    if (curl_url_get(h, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK)
        p->has_credentials = 1;
    curl_free(part);
end:
    curl_url_cleanup(h);
    return rc;
}

static int scheme_allowed(const char *scheme, const char *schemes)
{
    size_t n = strlen(scheme);
    for (const char *s = schemes; *s;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == n && strncmp(s, scheme, n) == 0)
            return 1;
        if (!comma)
            break;
        s = comma + 1;
    }
    return 0;
}

int ppb_http_check_url(const char *url, const char *schemes, ppb_err *err)
{
    url_parts p;
    int rc = parse_url(url, &p, err);
    if (rc)
        return rc;
    if (!scheme_allowed(p.scheme, schemes))
        return ppb_fail(err, PPB_EINPUT, "URL scheme '%s' is not supported here (use %s)",
                        p.scheme, schemes);
    /* The URL is not echoed: it holds the very credentials we refuse to print. */
    if (p.has_credentials)
        return ppb_fail(err, PPB_EINPUT,
                        "the URL holds a user name or password; ppbench stores URLs (push "
                        "queue) and prints them, so give the secret in PPBENCH_PUSH_TOKEN "
                        "instead");
    if (strcmp(p.scheme, "file") != 0 && !p.host[0])
        return ppb_fail(err, PPB_EINPUT, "'%s' names no host", url);
    return PPB_OK;
}

int ppb_http_origin(const char *url, char *out, size_t len, ppb_err *err)
{
    url_parts p;
    int rc = parse_url(url, &p, err);
    if (rc)
        return rc;
    for (char *c = p.host; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    snprintf(out, len, "%s://%s:%s", p.scheme, p.host, p.port);
    return PPB_OK;
}

static int host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0 ||
        strcmp(host, "::1") == 0)
        return 1;
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) == 1)
        return (ntohl(a.s_addr) >> 24) == 127;
    return 0;
}

int ppb_http_is_loopback(const char *url)
{
    url_parts p;
    ppb_err ignored;
    return parse_url(url, &p, &ignored) == PPB_OK && host_is_loopback(p.host);
}

int ppb_http_check_token_transport(const ppb_http_options *o, const char *url, ppb_err *err)
{
    url_parts p;
    int rc = parse_url(url, &p, err);
    if (rc)
        return rc;
    if (!o->token || !*o->token || strcmp(p.scheme, "https") == 0 ||
        strcmp(p.scheme, "file") == 0 || host_is_loopback(p.host))
        return PPB_OK;
    return ppb_fail(err, PPB_EINPUT,
                    "refusing to send the token in clear text to %s: use https (plain http "
                    "is allowed only to a loopback host)",
                    url);
}

/* ---- the request --------------------------------------------------------------- */

typedef struct sink_state {
    FILE *file;
    long long max_bytes, written;
    int too_large, write_failed;
    char snippet[SNIPPET_MAX + 1];
    size_t snippet_len;
} sink_state;

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    sink_state *s = userdata;
    size_t n = size * nmemb;
    if (s->max_bytes > 0 && s->written + (long long)n > s->max_bytes) {
        s->too_large = 1;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (s->snippet_len < SNIPPET_MAX) {
        size_t take = SNIPPET_MAX - s->snippet_len < n ? SNIPPET_MAX - s->snippet_len : n;
        memcpy(s->snippet + s->snippet_len, data, take);
        s->snippet_len += take;
        s->snippet[s->snippet_len] = '\0';
    }
    if (s->file && fwrite(data, 1, n, s->file) != n) {
        s->write_failed = 1;
        return 0;
    }
    s->written += (long long)n;
    return n;
}

/* libcurl calls this at least once a second, data or not. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const volatile sig_atomic_t *stop = userdata;
    return stop && *stop ? 1 : 0; /* nonzero: CURLE_ABORTED_BY_CALLBACK */
}

static int reset_sink(sink_state *s)
{
    s->written = 0;
    s->too_large = s->write_failed = 0;
    s->snippet_len = 0;
    s->snippet[0] = '\0';
    if (!s->file)
        return 0;
    if (fflush(s->file) != 0 || fseek(s->file, 0, SEEK_SET) != 0)
        return -1;
    return ftruncate(fileno(s->file), 0);
}

/* The server's answer as one printable line (it may be HTML or binary). */
static void printable_snippet(const char *in, char *out, size_t len)
{
    size_t j = 0;
    int space = 0;
    for (size_t i = 0; in[i] && j + 1 < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (isspace(c) || !isprint(c)) {
            space = j > 0;
            continue;
        }
        if (space && j + 2 < len)
            out[j++] = ' ';
        space = 0;
        out[j++] = (char)c;
    }
    out[j] = '\0';
}

/* Replace every occurrence of the token in the message: a server may echo the
 * request headers back, and the message is printed. */
static void scrub_token(ppb_err *err, const char *token)
{
    if (!token || !*token)
        return;
    static const char mask[] = "[token]";
    size_t tlen = strlen(token);
    char *hit;
    while ((hit = strstr(err->msg, token)) != NULL) {
        size_t tail = strlen(hit + tlen);
        if (tlen >= sizeof mask - 1) {
            memcpy(hit, mask, sizeof mask - 1);
            memmove(hit + sizeof mask - 1, hit + tlen, tail + 1);
        } else { /* a token shorter than the mask: blank it where it stands */
            memset(hit, '*', tlen);
        }
    }
}

static int transient_curl_error(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

static int transient_status(long status)
{
    return status >= 500 || status == 408 || status == 429;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static int set_protocol(CURL *h, const char *scheme)
{
#if LIBCURL_VERSION_NUM >= 0x075500
    return curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, scheme) == CURLE_OK ? 0 : -1;
#else
    long bit = strcmp(scheme, "https") == 0  ? CURLPROTO_HTTPS
               : strcmp(scheme, "http") == 0 ? CURLPROTO_HTTP
                                              : CURLPROTO_FILE;
    return curl_easy_setopt(h, CURLOPT_PROTOCOLS, bit) == CURLE_OK ? 0 : -1;
#endif
}

int ppb_http_request(const ppb_http_options *o, const char *method, const char *url,
                     const char *content_type, const char *body, size_t body_len, FILE *sink,
                     long long max_bytes, ppb_http_result *res, ppb_err *err)
{
    memset(res, 0, sizeof *res);
    url_parts p;
    int rc = parse_url(url, &p, err);
    if (rc)
        return rc;
    if ((rc = ppb_http_check_url(url, "http,https,file", err)) != PPB_OK)
        return rc;
    int is_file = strcmp(p.scheme, "file") == 0;
    const char *token = o->token && *o->token && !is_file ? o->token : NULL;
    if ((rc = ppb_http_check_token_transport(o, url, err)) != PPB_OK)
        return rc;
    if (o->retries < 0 || o->timeout_s <= 0 || o->connect_timeout_s <= 0 || o->retry_delay_ms < 0)
        return ppb_fail(err, PPB_EINPUT, "bad HTTP options (timeouts must be > 0, retries >= 0)");

    CURL *h = curl_easy_init();
    struct curl_slist *headers = NULL;
    char *auth = NULL;
    sink_state st = {.file = sink, .max_bytes = max_bytes};
    char curl_msg[CURL_ERROR_SIZE] = "";
    if (!h) {
        rc = ppb_fail(err, PPB_ENOMEM, "cannot start libcurl");
        goto end;
    }
    if (content_type) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        headers = curl_slist_append(headers, ct);
    }
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
    if (token) {
        const char *scheme = o->auth_scheme && *o->auth_scheme ? o->auth_scheme : "Bearer";
        size_t n = strlen(scheme) + strlen(token) + 32;
        auth = malloc(n);
        if (!auth) {
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
            goto end;
        }
        snprintf(auth, n, "Authorization: %s %s", scheme, token);
        struct curl_slist *more = curl_slist_append(headers, auth);
        if (!more) {
            rc = ppb_fail(err, PPB_ENOMEM, "out of memory");
            goto end;
        }
        headers = more;
    }
    CURLcode sc = CURLE_OK;
#define SET(opt, val)                                                                            \
    if (sc == CURLE_OK)                                                                          \
    sc = curl_easy_setopt(h, opt, val)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_ERRORBUFFER, curl_msg);
    SET(CURLOPT_USERAGENT, "ppbench/0.1.0");
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_TIMEOUT, o->timeout_s);
    SET(CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    /* A credential over plain http is allowed to loopback only; a proxy from
     * http_proxy would carry it in clear text to another host: none then ("" is
     * libcurl's "no proxy, whatever the environment says"). Over https the
     * proxy only tunnels the encrypted connection. */
    if (token && strcmp(p.scheme, "http") == 0)
        SET(CURLOPT_PROXY, "");
    /* On by default in libcurl; set anyway so no build or future option can
     * leave them off. There is deliberately no way to clear them. */
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    if (o->cacert && *o->cacert)
        SET(CURLOPT_CAINFO, o->cacert);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, &st);
    if (o->stop) {
        SET(CURLOPT_XFERINFOFUNCTION, on_progress);
        SET(CURLOPT_XFERINFODATA, (void *)o->stop);
        SET(CURLOPT_NOPROGRESS, 0L);
    }
    if (body) {
        SET(CURLOPT_POSTFIELDS, body);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        if (strcmp(method, "POST") != 0)
            SET(CURLOPT_CUSTOMREQUEST, method);
    } else {
        SET(CURLOPT_HTTPGET, 1L);
    }
#undef SET
    if (sc != CURLE_OK || set_protocol(h, p.scheme) != 0) {
        rc = ppb_fail(err, PPB_EFAIL, "libcurl refused an option: %s", curl_easy_strerror(sc));
        goto end;
    }

    long delay = o->retry_delay_ms;
    for (int attempt = 0;; attempt++) {
        if (reset_sink(&st) != 0) {
            rc = ppb_fail(err, PPB_EIO, "cannot truncate the download file: %s", strerror(errno));
            goto end;
        }
        curl_msg[0] = '\0';
        CURLcode cc = curl_easy_perform(h);
        res->tries++;
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        res->status = status;
        if (cc == CURLE_OK && (is_file || (status >= 200 && status < 300))) {
            res->transient = 0;
            rc = PPB_OK;
            goto end;
        }
        char answer[SNIPPET_MAX + 1];
        printable_snippet(st.snippet, answer, sizeof answer);
        if (o->stop && *o->stop) {
            rc = ppb_fail(err, PPB_EINTR, "%s: interrupted by a signal", url);
            goto end;
        } else if (st.too_large) {
            res->transient = 0;
            rc = ppb_fail(err, PPB_EIO, "%s: the answer is larger than %lld bytes", url,
                          max_bytes);
        } else if (st.write_failed) {
            res->transient = 0;
            rc = ppb_fail(err, PPB_EIO, "%s: cannot write the download: %s", url,
                          strerror(errno));
        } else if (cc != CURLE_OK) {
            res->transient = transient_curl_error(cc);
            rc = ppb_fail(err, PPB_EIO, "%s: %s%s%s", url, curl_easy_strerror(cc),
                          curl_msg[0] ? ": " : "", curl_msg);
        } else {
            res->transient = transient_status(status);
            /* A server may echo the request back in any encoding (escaped, upper-case,
             * cut): with a token sent, the answer is described, never shown or stored. */
            char described[96] = "";
            if (token && st.written > 0)
                snprintf(described, sizeof described, "%lld bytes of answer, not shown: the request carried a token",
                         st.written);
            const char *shown = token ? described : answer;
            rc = ppb_fail(err, PPB_EIO, "%s: HTTP %ld%s%s%s", url, status,
                          status >= 300 && status < 400 ? " (redirects are not followed: give "
                                                          "the final URL)"
                                                        : "",
                          shown[0] ? ": " : "", shown);
        }
        if (!res->transient || attempt >= o->retries)
            break;
        long wait = delay;
        curl_off_t retry_after = 0;
        if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
            retry_after > 0) {
            long ra = retry_after > RETRY_AFTER_CAP_S ? RETRY_AFTER_CAP_S : (long)retry_after;
            if (ra * 1000L > wait)
                wait = ra * 1000L;
        }
        for (long slept = 0; slept < wait && !(o->stop && *o->stop); slept += 100)
            sleep_ms(wait - slept < 100 ? wait - slept : 100);
        if (o->stop && *o->stop) {
            rc = ppb_fail(err, PPB_EINTR, "%s: interrupted by a signal", url);
            goto end;
        }
        delay = delay * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : delay * 2;
    }
    if (res->tries > 1)
        ppb_err_prefix(err, "after %d tries: ", res->tries);
end:
    if (rc)
        scrub_token(err, o->token);
    /* Do not leave the secret in freed heap memory (ours and the list's copy). */
    if (auth) {
        memset(auth, 0, strlen(auth));
        free(auth);
    }
    for (struct curl_slist *l = headers; l; l = l->next)
        memset(l->data, 0, strlen(l->data));
    curl_slist_free_all(headers);
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
