/* gnuplot: find it, run it on our scripts, and check what it wrote (gnuplot.h). */
#include "gnuplot.h"

#include "run_program.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- finding it ------------------------------------------------------------ */

static int is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Look a program name up on PATH; 1 and the full path when found. */
static int find_on_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        char candidate[4096];
        if (n == 0)
            snprintf(candidate, sizeof candidate, "./%s", name);
        else
            snprintf(candidate, sizeof candidate, "%.*s/%s", (int)n, path, name);
        if (is_executable_file(candidate)) {
            snprintf(out, len, "%s", candidate);
            return 1;
        }
        if (!end)
            break;
        path = end + 1;
    }
    return 0;
}

/* ---- running it ---------------------------------------------------------- */

void ppb_gnuplot_detect(ppb_gnuplot *gp, const char *program)
{
    memset(gp, 0, sizeof *gp);
    const char *from = "";
    if (!program) {
        program = getenv("PPBENCH_GNUPLOT");
        from = program ? " (from PPBENCH_GNUPLOT)" : "";
        if (!program)
            program = "gnuplot";
    }
    if (!program[0]) {
        snprintf(gp->why, sizeof gp->why, "charts are turned off (PPBENCH_GNUPLOT is empty)");
        return;
    }
    if (strchr(program, '/')) {
        if (!is_executable_file(program)) {
            snprintf(gp->why, sizeof gp->why, "gnuplot not found: %s%s is not an executable file",
                     program, from);
            return;
        }
        snprintf(gp->path, sizeof gp->path, "%s", program);
    } else if (!find_on_path(program, gp->path, sizeof gp->path)) {
        snprintf(gp->why, sizeof gp->why, "gnuplot not found: no '%s'%s on PATH", program, from);
        return;
    }

    /* Ask its version: proves it runs, and the report records it. */
    char tmpl[] = "/tmp/ppb-gnuplot-version-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        snprintf(gp->why, sizeof gp->why, "could not ask %s its version: %s", gp->path,
                 strerror(errno));
        return;
    }
    unlink(tmpl);
    char *argv[] = {gp->path, "--version", NULL};
    ppb_err err = {{0}};
    int rc = ppb_run_program(gp->path, argv, NULL, fd, 20, &err);
    char line[128] = "";
    if (rc == 0 && lseek(fd, 0, SEEK_SET) == 0) {
        ssize_t n = read(fd, line, sizeof line - 1);
        line[n > 0 ? n : 0] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
    }
    close(fd);
    if (rc < 0) {
        snprintf(gp->why, sizeof gp->why, "%s", err.msg);
        return;
    }
    if (rc != 0 || strncmp(line, "gnuplot", 7) != 0) {
        snprintf(gp->why, sizeof gp->why, "%s does not answer --version like gnuplot (exit %d)",
                 gp->path, rc);
        return;
    }
    snprintf(gp->version, sizeof gp->version, "%s", line);
    gp->available = 1;
}

/* First line of the log that looks like an error, else its last line. */
static void log_excerpt(const char *log_path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(log_path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || strspn(line, " ^") == strlen(line))
            continue;
        snprintf(buf, len, "%s", line);
        if (strstr(line, "rror") || strstr(line, "line "))
            break;
    }
    fclose(f);
}

int ppb_gnuplot_run(const ppb_gnuplot *gp, const char *dir, const char *const *scripts,
                    int n_scripts, const char *log_name, int timeout_s, ppb_err *err)
{
    if (!gp->available)
        return ppb_fail(err, PPB_EFAIL, "%s", gp->why);
    if (n_scripts <= 0)
        return PPB_OK;
    char log_path[4096 + 256];
    snprintf(log_path, sizeof log_path, "%s/%s", dir, log_name);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ppb_fail(err, PPB_EIO, "%s: %s", log_path, strerror(errno));
    char **argv = calloc((size_t)n_scripts + 3, sizeof *argv);
    if (!argv) {
        close(fd);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    /* argv holds our own strings: the program, "-d", the script names. */
    argv[0] = (char *)gp->path;
    argv[1] = "-d";
    for (int i = 0; i < n_scripts; i++)
        argv[2 + i] = (char *)scripts[i];
    argv[2 + n_scripts] = NULL;
    int rc = ppb_run_program(gp->path, argv, dir, fd, timeout_s, err);
    free(argv);
    close(fd);
    if (rc < 0)
        return rc;
    if (rc != 0) {
        char excerpt[400];
        log_excerpt(log_path, excerpt, sizeof excerpt);
        return ppb_fail(err, PPB_EFAIL, "gnuplot exited with %d%s%s", rc, excerpt[0] ? ": " : "",
                        excerpt);
    }
    return PPB_OK;
}

void ppb_gnuplot_string(const char *text, char *buf, size_t len)
{
    static const char keep[] = " _=.,:/+-()%#[]*|";
    size_t o = 0;
    if (len < 3) {
        if (len)
            buf[0] = '\0';
        return;
    }
    buf[o++] = '\'';
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p && o + 2 < len;
         p++)
        buf[o++] = (char)(isalnum(*p) && *p < 0x80 ? *p : strchr(keep, *p) && *p ? *p : '?');
    buf[o++] = '\'';
    buf[o] = '\0';
}

/* ---- SVG for inlining ------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t n, cap;
    int oom;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return p;
    return NULL;
}

/* An attribute whose name begins with "on" (onload=, onclick= ...). */
static const char *find_event_handler(const char *svg)
{
    for (const char *p = svg; *p; p++) {
        if (!isspace((unsigned char)p[0]) || tolower((unsigned char)p[1]) != 'o' ||
            tolower((unsigned char)p[2]) != 'n')
            continue;
        const char *q = p + 3;
        while (isalpha((unsigned char)*q))
            q++;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == '=' && q > p + 3)
            return p + 1;
    }
    return NULL;
}

/* Every href must point at a fragment in the same document, every url() too. */
static const char *find_outside_reference(const char *svg)
{
    for (const char *p = svg; (p = find_ci(p, "href")) != NULL; p += 4) {
        const char *q = p + 4;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != '=')
            continue;
        q++;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == '"' || *q == '\'')
            q++;
        if (*q != '#')
            return p;
    }
    for (const char *p = svg; (p = find_ci(p, "url(")) != NULL; p += 4) {
        const char *q = p + 4;
        while (isspace((unsigned char)*q) || *q == '"' || *q == '\'')
            q++;
        if (*q != '#')
            return p;
    }
    return NULL;
}

static int check_svg(const char *svg, ppb_err *err)
{
    static const char *const refused[] = {"<script",  "<foreignobject", "<iframe", "<object",
                                          "<embed",   "<style",         "<a ",     "<a>",
                                          "<!entity", "<!doctype",      "<?",      "javascript:",
                                          "@import",  "<html",          "<link",   "<meta",
                                          NULL};
    for (int i = 0; refused[i]; i++)
        if (find_ci(svg, refused[i]))
            return ppb_fail(err, PPB_EINPUT, "the SVG holds '%s': not inlined", refused[i]);
    const char *at = find_event_handler(svg);
    if (at)
        return ppb_fail(err, PPB_EINPUT, "the SVG holds an event handler (%.20s): not inlined", at);
    at = find_outside_reference(svg);
    if (at)
        return ppb_fail(err, PPB_EINPUT,
                        "the SVG refers outside itself (%.40s): not inlined", at);
    return PPB_OK;
}

/* Copy `svg`, prefixing id values and #references with the prefix. */
static void rewrite_ids(const char *svg, const char *prefix, strbuf *b)
{
    size_t plen = strlen(prefix);
    const char *p = svg;
    while (*p) {
        const char *hit = NULL;
        size_t skip = 0;
        /* id='x' / id="x" (preceded by whitespace), '#x' after href=, url(#x) */
        for (const char *q = p; *q; q++) {
            if (isspace((unsigned char)q[0]) && strncmp(q + 1, "id=", 3) == 0 &&
                (q[4] == '\'' || q[4] == '"')) {
                hit = q;
                skip = 5;
                break;
            }
            if (strncmp(q, "href=", 5) == 0 && (q[5] == '\'' || q[5] == '"') && q[6] == '#') {
                hit = q;
                skip = 7;
                break;
            }
            if (strncmp(q, "url(#", 5) == 0) {
                hit = q;
                skip = 5;
                break;
            }
        }
        if (!hit) {
            sb_add(b, p, strlen(p));
            return;
        }
        sb_add(b, p, (size_t)(hit - p) + skip);
        sb_add(b, prefix, plen);
        sb_add(b, "-", 1);
        p = hit + skip;
    }
}

int ppb_svg_inline(const char *svg, const char *id_prefix, char **out, ppb_err *err)
{
    *out = NULL;
    const char *start = strstr(svg, "<svg");
    const char *end = NULL;
    for (const char *p = svg; (p = strstr(p, "</svg>")) != NULL; p++)
        end = p;
    if (!start || !end || end < start)
        return ppb_fail(err, PPB_EINPUT, "not an SVG document (no <svg> ... </svg>)");
    size_t n = (size_t)(end - start) + 6;
    char *body = malloc(n + 1);
    if (!body)
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    memcpy(body, start, n);
    body[n] = '\0';
    int rc = check_svg(body, err);
    if (rc) {
        free(body);
        return rc;
    }
    /* gnuplot's document title ("Gnuplot") would show as a tooltip on the whole chart. */
    char *title = strstr(body, "<title>Gnuplot</title>");
    if (title)
        memmove(title, title + 22, strlen(title + 22) + 1);

    strbuf b = {0};
    static const char open_tag[] = "<svg class=\"chart-svg\" role=\"img\"";
    sb_add(&b, open_tag, sizeof open_tag - 1);
    rewrite_ids(body + 4, id_prefix, &b);
    free(body);
    if (b.oom) {
        free(b.s);
        return ppb_fail(err, PPB_ENOMEM, "out of memory");
    }
    *out = b.s;
    return PPB_OK;
}

int ppb_svg_inline_file(const char *path, const char *id_prefix, char **out, ppb_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ppb_fail(err, PPB_EIO, "%s: %s", path, strerror(errno));
    strbuf b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_add(&b, chunk, got);
    int bad = ferror(f);
    fclose(f);
    if (bad || b.oom || !b.s) {
        free(b.s);
        return ppb_fail(err, bad ? PPB_EIO : b.oom ? PPB_ENOMEM : PPB_EINPUT, "%s: %s", path,
                        bad ? "read failed" : b.oom ? "out of memory" : "empty file");
    }
    if (strlen(b.s) != b.n) {
        free(b.s);
        return ppb_fail(err, PPB_EINPUT, "%s: holds a NUL byte: not an SVG", path);
    }
    int rc = ppb_svg_inline(b.s, id_prefix, out, err);
    free(b.s);
    if (rc)
        ppb_err_prefix(err, "%s: ", path);
    return rc;
}
