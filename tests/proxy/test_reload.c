/* demos/proxy's reload on SIGHUP (demos/proxy/reload.c), as users run it:
 * the program (built beside this test, its path argv[1]) started with
 * --config FILE in front of real nginx origins, its file rewritten and
 * the signal sent while clients hold keep-alive connections with requests
 * in flight. No connection is dropped and no request fails; requests sent
 * once the reload is done reach only the upstreams it left; the removed
 * upstream's connections close and the program's descriptors come back to
 * what its connections account for; a file that does not parse or check
 * changes nothing; settings that cannot change are said, with why. The
 * program exits 0 on SIGTERM, which under AddressSanitizer also means it
 * leaked nothing. */
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "connect.h"
#include "harness.h"
#include "loop.h"

static const char *program;
static struct tide_test_child proxy_child;
static struct nginx origin_a, origin_b;

/* ---- the origins ---- */

/* nginx with /who answering its name; responses at 4 MiB/s, so /f1m is
 * in flight for a quarter of a second (with a slow rate, at rate). */
static void origin_with(struct nginx *n, const char *name, const char *rate)
{
    char extra[64];
    snprintf(extra, sizeof extra, "limit_rate %s;", rate);
    nginx_start(n, 0, extra);
    char path[128];
    snprintf(path, sizeof path, "%s/who", n->child.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(name, f);
    fclose(f);
}

static void origin(struct nginx *n, const char *name)
{
    origin_with(n, name, "4m");
}

/* Its connections open now, the one asking included (stub_status). */
static long active(const struct nginx *n)
{
    int fd = client_connect(n->port);
    ck_assert_int_ge(fd, 0);
    struct response r;
    const char *req = "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close"
                      "\r\n\r\n";
    long count = -1;
    if (client_exchange(fd, req, strlen(req), false, &r) && r.body) {
        r.body[r.body_len] = '\0';
        const char *p = strstr((char *)r.body, "Active connections:");
        if (p)
            count = strtol(p + strlen("Active connections:"), NULL, 10);
    }
    response_dispose(&r);
    close(fd);
    return count;
}

/* ---- the program ---- */

static char conf_path[128];
static int proxy_at;

/* The configuration file, replaced whole (a rename), as an editor or a
 * package upgrade does: the proxy never reads half of it. */
static void conf_write(const char *fmt, ...)
{
    char text[2048], tmp[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(tmp, sizeof tmp, "%s.new", conf_path);
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(rename(tmp, conf_path), 0);
}

static bool listening(void *arg)
{
    int fd = client_connect(*(const int *)arg);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Makes the proxy's directory and its file path, and picks its port. */
static void proxy_prepare(void)
{
    ck_assert(tide_test_child_mkdir(&proxy_child, "proxy"));
    snprintf(conf_path, sizeof conf_path, "%s/proxy.conf", proxy_child.dir);
    proxy_at = tide_test_free_port();
}

/* Starts the program with --config and the words of extra (NULL-ended,
 * may be NULL), once the file is written. */
static void proxy_run(const char *const *extra)
{
    const char *argv[16] = {program, "--config", conf_path};
    int n = 3;
    for (; extra && *extra && n < 15; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    ck_assert(tide_test_child_spawn(&proxy_child, argv));
    ck_assert_msg(
        tide_test_child_wait(&proxy_child, listening, &proxy_at, 5000),
        "the proxy did not listen on %d (see %s/child.log)", proxy_at,
        proxy_child.dir);
}

/* The program's log (stdout and stderr) into buf. */
static void proxy_log(char *buf, size_t size)
{
    char path[160];
    snprintf(path, sizeof path, "%s/child.log", proxy_child.dir);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Its lines about reloads, counted. */
static int reload_lines(char *last, size_t size)
{
    static char log[1 << 16];
    proxy_log(log, sizeof log);
    int n = 0;
    for (char *p = log; (p = strstr(p, "proxy: reload")); p++) {
        const char *end = strchr(p, '\n');
        if (!end) /* not whole yet */
            break;
        n++;
        if (last)
            snprintf(last, size, "%.*s", (int)(end - p), p);
    }
    return n;
}

/* Sends SIGHUP and waits for the reload's line (the n-th), into line. */
static void reload(int n, char *line, size_t size)
{
    ck_assert_int_eq(kill(proxy_child.pid, SIGHUP), 0);
    for (int i = 0; i < 500; i++) {
        if (reload_lines(line, size) >= n)
            return;
        usleep(10000);
    }
    ck_abort_msg("no line for reload %d (see %s/child.log)", n,
                 proxy_child.dir);
}

static int proxy_fds(void);

/* Its descriptors once the connection that saw it listen is closed
 * (tide_test_child_wait's, which it may not have read the end of yet):
 * no client, no upstream connection. */
static int proxy_fds_at_start(void)
{
    usleep(200000);
    return proxy_fds();
}

/* The program's open descriptors. */
static int proxy_fds(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)proxy_child.pid);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* SIGTERM, and the exit code within 5 s (-1 when it did not end). */
static int proxy_end(void)
{
    tide_test_child_signal(&proxy_child, SIGTERM);
    for (int i = 0; i < 500; i++) {
        int status;
        pid_t pid = proxy_child.pid;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            proxy_child.pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
        }
        usleep(10000);
    }
    return -1;
}

/* ---- clients ---- */

/* A client on one keep-alive connection, asking for /f1m (a quarter of a
 * second in flight) and /who in turn until told to stop; every response
 * checked. */
struct client {
    int fd;
    pthread_t thread;
    atomic_bool stop;
    /* a /who sent after this (ms, 0: not yet) must not reach origin A */
    const _Atomic int64_t *switched;
    /* a /f1m sent before this (ms, 0: none) and answered whole after
     * switched was in flight across the reload */
    const _Atomic int64_t *signalled;
    int across;
    int requests;
    int from_a;
    int from_b;
    int late_a; /* answered by A though sent after the switch */
    char failed[256];
};

static bool fetch(struct client *c, const char *path, struct response *r)
{
    if (!client_request(c->fd, "GET", path, NULL, 0, false, r)) {
        snprintf(c->failed, sizeof c->failed,
                 "request %d (%s): no whole response", c->requests, path);
        return false;
    }
    if (r->status != 200 || !r->keep_alive) {
        snprintf(c->failed, sizeof c->failed, "request %d (%s): %d%s: %.*s",
                 c->requests, path, r->status,
                 r->keep_alive ? "" : ", not kept alive",
                 (int)(r->body_len < 200 ? r->body_len : 200),
                 r->body ? (const char *)r->body : "");
        return false;
    }
    c->requests++;
    return true;
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    while (!atomic_load(&c->stop)) {
        struct response r;
        int64_t sent = now_ms();
        bool ok = fetch(c, "/f1m", &r);
        if (ok && (r.body_len != 1 << 20 ||
                   memcmp(r.body, file_bytes(1 << 20), 1 << 20) != 0)) {
            snprintf(c->failed, sizeof c->failed, "/f1m: %zu bytes, not its",
                     r.body_len);
            ok = false;
        }
        response_dispose(&r);
        if (!ok)
            return NULL;
        int64_t signalled = c->signalled ? atomic_load(c->signalled) : 0;
        int64_t switched = c->switched ? atomic_load(c->switched) : 0;
        c->across +=
            signalled && sent < signalled && switched && now_ms() > switched;
        sent = now_ms();
        ok = fetch(c, "/who", &r);
        if (ok && r.body_len == 1 && (r.body[0] == 'A' || r.body[0] == 'B')) {
            bool a = r.body[0] == 'A';
            c->from_a += a;
            c->from_b += !a;
            switched = c->switched ? atomic_load(c->switched) : 0;
            c->late_a += a && switched && sent > switched;
        } else if (ok) {
            snprintf(c->failed, sizeof c->failed, "/who: %zu bytes",
                     r.body_len);
            ok = false;
        }
        response_dispose(&r);
        if (!ok)
            return NULL;
    }
    return NULL;
}

enum { CLIENTS = 4 };

static void clients_start(struct client *c, int n,
                          const _Atomic int64_t *signalled,
                          const _Atomic int64_t *switched)
{
    for (int i = 0; i < n; i++) {
        c[i] = (struct client){.signalled = signalled, .switched = switched};
        c[i].fd = client_connect(proxy_at);
        ck_assert_int_ge(c[i].fd, 0);
        /* a proxy that stops answering fails the test, not its timeout */
        struct timeval t = {.tv_sec = 10};
        setsockopt(c[i].fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
        ck_assert_int_eq(pthread_create(&c[i].thread, NULL, client_main, &c[i]),
                         0);
    }
}

/* Stops them, each after its exchange in progress; checks that none
 * failed, and that each asked for something. */
static void clients_stop(struct client *c, int n)
{
    for (int i = 0; i < n; i++)
        atomic_store(&c[i].stop, true);
    for (int i = 0; i < n; i++) {
        pthread_join(c[i].thread, NULL);
        close(c[i].fd);
        ck_assert_msg(!c[i].failed[0], "client %d: %s", i, c[i].failed);
        ck_assert_int_ge(c[i].requests, 2);
    }
}

/* Once nothing is in flight and the clients are gone: origin A has no
 * connection from the proxy (its stub_status counts only the one asking),
 * and the proxy's descriptors are those it started with plus its kept
 * connections to B, so nothing of the removed upstream is left open (its
 * connections, its factory). Within 3 s: the removed upstream's factory
 * is freed by a timer once nothing drains. */
static void only_b_is_left(int fds_at_start)
{
    long a = -1, b = -1;
    int fds = -1;
    for (int i = 0; i < 300; i++) {
        a = active(&origin_a);
        b = active(&origin_b);
        fds = proxy_fds();
        if (a == 1 && fds == fds_at_start + (int)(b - 1))
            return;
        usleep(10000);
    }
    ck_abort_msg("A has %ld connections, B %ld; the proxy %d descriptors, "
                 "%d at start",
                 a - 1, b - 1, fds, fds_at_start);
}

/* ---- the tests ---- */

START_TEST(a_reload_drains_the_removed_origin_and_drops_no_connection)
{
    origin(&origin_a, "A");
    origin(&origin_b, "B");
    proxy_prepare();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\npool-size 8\n",
               proxy_at, origin_a.port);
    proxy_run(NULL);
    int fds_at_start = proxy_fds_at_start();
    static _Atomic int64_t signalled, switched;
    atomic_store(&signalled, 0);
    atomic_store(&switched, 0);
    struct client c[CLIENTS];
    clients_start(c, CLIENTS, &signalled, &switched);
    /* each has a connection to A, and nearly always /f1m in flight on it
     * (a quarter second, against a millisecond for /who) */
    long at_a = 0;
    for (int i = 0; i < 200 && at_a != 1 + CLIENTS; i++) {
        usleep(10000);
        at_a = active(&origin_a);
    }
    ck_assert_int_eq(at_a, 1 + CLIENTS);

    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\npool-size 8\n",
               proxy_at, origin_b.port);
    char line[1024], want[64];
    atomic_store(&signalled, now_ms());
    reload(1, line, sizeof line);
    atomic_store(&switched, now_ms());
    snprintf(want, sizeof want, "added 127.0.0.1:%d; removed 127.0.0.1:%d",
             origin_b.port, origin_a.port);
    ck_assert_msg(strstr(line, want), "%s", line);
    usleep(1500000);
    clients_stop(c, CLIENTS);
    int across = 0;
    for (int i = 0; i < CLIENTS; i++) {
        /* the /f1m in flight at A finished whole there; its /who after
         * the reload went to B, as everything after it did */
        ck_assert_msg(c[i].late_a == 0 && c[i].from_b >= 1,
                      "client %d: %d from A after the reload, %d from B", i,
                      c[i].late_a, c[i].from_b);
        across += c[i].across;
    }
    ck_assert_msg(across >= 1, "no request was in flight across the reload");
    only_b_is_left(fds_at_start);
    ck_assert_int_eq(reload_lines(NULL, 0), 1);
    ck_assert_int_eq(proxy_end(), 0);
}
END_TEST

/* Asks /who on fd (kept alive); its first byte. */
static char who(int fd)
{
    struct response r;
    ck_assert(client_request(fd, "GET", "/who", NULL, 0, false, &r));
    ck_assert_int_eq(r.status, 200);
    ck_assert(r.keep_alive);
    ck_assert_uint_eq(r.body_len, 1);
    char c = (char)r.body[0];
    response_dispose(&r);
    return c;
}

START_TEST(a_bad_file_is_refused_by_its_line_and_the_old_one_serves)
{
    origin(&origin_a, "A");
    origin(&origin_b, "B");
    proxy_prepare();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_a.port);
    proxy_run(NULL);
    int fd = client_connect(proxy_at);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(who(fd), 'A');
    char line[1024], at[160];
    snprintf(at, sizeof at, "%s:3: ", conf_path);

    /* a value that is no number, on line 3 */
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\npool-size abc\n",
               proxy_at, origin_b.port);
    reload(1, line, sizeof line);
    ck_assert_msg(strstr(line, "refused") && strstr(line, at) &&
                      strstr(line, "--pool-size") && strstr(line, "'abc'"),
                  "%s", line);
    ck_assert_int_eq(who(fd), 'A');
    /* no upstream at all */
    conf_write("listen 127.0.0.1:%d\n# none\n", proxy_at);
    reload(2, line, sizeof line);
    ck_assert_msg(strstr(line, "refused") && strstr(line, "no --upstream"),
                  "%s", line);
    ck_assert_int_eq(who(fd), 'A');
    /* an upstream that cannot be made (its CA file is not there), after
     * one that can: that one is not added either */
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n"
               "upstream tls://127.0.0.1:9\nca /nonexistent/ca.pem\n",
               proxy_at, origin_b.port);
    reload(3, line, sizeof line);
    ck_assert_msg(strstr(line, "refused") &&
                      strstr(line, "tls://127.0.0.1:9") &&
                      strstr(line, "/nonexistent/ca.pem"),
                  "%s", line);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(who(fd), 'A');
    /* the file gone */
    unlink(conf_path);
    reload(4, line, sizeof line);
    ck_assert_msg(strstr(line, "refused") && strstr(line, "cannot read") &&
                      strstr(line, "No such file"),
                  "%s", line);
    ck_assert_int_eq(who(fd), 'A');
    ck_assert_int_eq(active(&origin_b), 1); /* never connected to */
    /* and a good one again, on the same connection */
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_b.port);
    reload(5, line, sizeof line);
    ck_assert_msg(!strstr(line, "refused"), "%s", line);
    ck_assert_int_eq(who(fd), 'B');
    close(fd);
    ck_assert_int_eq(proxy_end(), 0);
}
END_TEST

/* The listen address, the cap and the proxy's own timeouts keep their
 * values, and the line says so and why; settings of the pools make their
 * upstreams again; drain-timeout applies to the next SIGTERM; and what the
 * command line gives (an upstream, a pool size) still overrides the
 * file. */
START_TEST(what_cannot_change_is_said_and_the_command_line_still_wins)
{
    origin_with(&origin_a, "A", "100k"); /* /f1m: ten seconds */
    origin(&origin_b, "B");
    proxy_prepare();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_b.port);
    char up_a[32];
    snprintf(up_a, sizeof up_a, "127.0.0.1:%d", origin_a.port);
    const char *extra[] = {"--upstream", up_a, "--pool-size", "2", NULL};
    proxy_run(extra);
    int fd = client_connect(proxy_at);
    ck_assert_int_eq(who(fd), 'A');

    int elsewhere = tide_test_free_port();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\npool-size 4\n"
               "keep 30\ncap 5\nresponse-timeout 1000\n"
               "drain-timeout 300\ndemand 5000\npreconnect 90\n",
               elsewhere, origin_b.port);
    char line[1024], want[256];
    reload(1, line, sizeof line);
    snprintf(want, sizeof want,
             "added %s; removed %s; changed keep, demand, preconnect, "
             "drain-timeout; ignored "
             "listen 127.0.0.1:%d (the listening socket stays on "
             "127.0.0.1:%d), cap (",
             up_a, up_a, elsewhere, proxy_at);
    ck_assert_msg(strstr(line, want), "%s\nnot:\n%s", line, want);
    ck_assert_msg(strstr(line, "response-timeout (the proxy reads it when "
                               "it starts)"),
                  "%s", line);
    ck_assert_msg(!strstr(line, "pool-size"), "%s", line);
    ck_assert_int_eq(who(fd), 'A');
    ck_assert_int_eq(tide_test_connect(elsewhere), -1);

    /* the next SIGTERM waits 300 ms for /f1m (ten seconds at A's rate),
     * not the 10 s preset */
    const char req[] = "GET /f1m HTTP/1.1\r\nHost: t\r\n\r\n";
    ck_assert(send_all(fd, req, sizeof req - 1));
    usleep(50000);
    int64_t t0 = now_ms();
    tide_test_child_signal(&proxy_child, SIGTERM);
    int status = -1;
    for (int i = 0; i < 500 && status < 0; i++) {
        int st;
        if (waitpid(proxy_child.pid, &st, WNOHANG) == proxy_child.pid) {
            proxy_child.pid = 0;
            status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        } else {
            usleep(10000);
        }
    }
    ck_assert_int_eq(status, 0);
    ck_assert_int_lt(now_ms() - t0, 2000);
    close(fd);
}
END_TEST

START_TEST(repeated_reloads_under_load_drop_nothing)
{
    origin(&origin_a, "A");
    origin(&origin_b, "B");
    proxy_prepare();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_a.port);
    proxy_run(NULL);
    int fds_at_start = proxy_fds_at_start();
    static _Atomic int64_t only_b;
    atomic_store(&only_b, 0);
    struct client c[CLIENTS];
    clients_start(c, CLIENTS, NULL, &only_b);
    char line[1024];
    int lines = 0;
    for (int round = 0; round < 24; round++) {
        switch (round % 4) {
        case 0:
            conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
                       origin_b.port);
            break;
        case 1:
            conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n"
                       "upstream 127.0.0.1:%d\n",
                       proxy_at, origin_a.port, origin_b.port);
            break;
        case 2:
            conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n"
                       "pool-size %d\n",
                       proxy_at, origin_a.port, 2 + round % 3);
            break;
        default:
            conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n"
                       "pool-size x\n",
                       proxy_at, origin_b.port);
        }
        reload(++lines, line, sizeof line);
        ck_assert_msg(round % 4 == 3 ? strstr(line, "refused") != NULL
                                     : strstr(line, "refused") == NULL,
                      "round %d: %s", round, line);
        usleep(60000 + 40000 * (round % 3));
    }
    /* and several at once: each read whole, whatever comes between */
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_b.port);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(kill(proxy_child.pid, SIGHUP), 0);
    reload(++lines, line, sizeof line);
    atomic_store(&only_b, now_ms()); /* from now on /who goes to B */
    usleep(800000);
    clients_stop(c, CLIENTS);
    for (int i = 0; i < CLIENTS; i++)
        ck_assert_msg(c[i].late_a == 0 && c[i].from_b > 0,
                      "client %d: %d from A after the last reload, %d from B",
                      i, c[i].late_a, c[i].from_b);
    only_b_is_left(fds_at_start);
    ck_assert_int_eq(proxy_end(), 0);
}
END_TEST

/* A removed upstream's factory is freed once nothing drains: one for a
 * name the hosts file does not list holds a resolver, whose sockets come
 * and go with it. */
START_TEST(a_removed_upstreams_factory_is_freed)
{
    origin(&origin_a, "A");
    proxy_prepare();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_a.port);
    proxy_run(NULL);
    int fds_at_start = proxy_fds_at_start();
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n"
               "upstream reload-test.invalid:80\n",
               proxy_at, origin_a.port);
    char line[1024];
    reload(1, line, sizeof line);
    ck_assert_msg(strstr(line, "added reload-test.invalid:80"), "%s", line);
    int with_name = proxy_fds();
    ck_assert_int_gt(with_name, fds_at_start);
    conf_write("listen 127.0.0.1:%d\nupstream 127.0.0.1:%d\n", proxy_at,
               origin_a.port);
    reload(2, line, sizeof line);
    ck_assert_msg(strstr(line, "removed reload-test.invalid:80"), "%s", line);
    int fds = proxy_fds();
    for (int i = 0; i < 300 && fds != fds_at_start; i++) {
        usleep(10000);
        fds = proxy_fds();
    }
    ck_assert_msg(fds == fds_at_start,
                  "%d descriptors, %d at start, %d with "
                  "the name's factory",
                  fds, fds_at_start, with_name);
    int fd = client_connect(proxy_at);
    ck_assert_int_eq(who(fd), 'A');
    close(fd);
    ck_assert_int_eq(proxy_end(), 0);
}
END_TEST

/* A proxy started without --config says there is nothing to read again,
 * and goes on (SIGHUP would have ended it). */
START_TEST(without_a_file_a_reload_says_so_and_goes_on)
{
    origin(&origin_a, "A");
    proxy_prepare();
    char at[32], up[32];
    snprintf(at, sizeof at, "127.0.0.1:%d", proxy_at);
    snprintf(up, sizeof up, "127.0.0.1:%d", origin_a.port);
    const char *argv[] = {program, "--listen", at, "--upstream", up, NULL};
    ck_assert(tide_test_child_spawn(&proxy_child, argv));
    ck_assert(tide_test_child_wait(&proxy_child, listening, &proxy_at, 5000));
    char line[512];
    reload(1, line, sizeof line);
    ck_assert_msg(strstr(line, "no --config"), "%s", line);
    int fd = client_connect(proxy_at);
    ck_assert_int_eq(who(fd), 'A');
    close(fd);
    ck_assert_int_eq(proxy_end(), 0);
}
END_TEST

static void setup(void)
{
    harness_setup();
}

static void teardown(void)
{
    tide_test_child_dispose(&proxy_child);
    nginx_cleanup(&origin_a);
    nginx_cleanup(&origin_b);
    memset(&origin_a, 0, sizeof origin_a);
    memset(&origin_b, 0, sizeof origin_b);
}

static Suite *reload_suite(void)
{
    Suite *s = suite_create("proxy-reload");
    TCase *tc = tcase_create("reload");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc,
                   a_reload_drains_the_removed_origin_and_drops_no_connection);
    tcase_add_test(tc,
                   a_bad_file_is_refused_by_its_line_and_the_old_one_serves);
    tcase_add_test(tc,
                   what_cannot_change_is_said_and_the_command_line_still_wins);
    tcase_add_test(tc, repeated_reloads_under_load_drop_nothing);
    tcase_add_test(tc, a_removed_upstreams_factory_is_freed);
    tcase_add_test(tc, without_a_file_a_reload_says_so_and_goes_on);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_reload PROXY\n");
        return 2;
    }
    if (!nginx_found()) {
        fprintf(stderr, "nginx is not installed: skipped\n");
        return 77;
    }
    program = argv[1];
    return tide_test_run(reload_suite());
}
