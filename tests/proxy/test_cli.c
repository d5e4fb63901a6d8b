/* demos/proxy as a user runs it: every bad option or value is refused by
 * name, with the value, exit 2 (numbers read whole and in range, so none
 * wraps a span in ns), an upstream that is no address and no name too;
 * --listen is required and an IPv4 literal; a port in use or an upstream
 * that cannot be set up says why, exit 1; an upstream down at startup is
 * no startup error, and gets a 502 with the cause. The program is built
 * from demos/proxy beside this test (its path is argv[1]), with the same
 * sanitizers: under AddressSanitizer a leak on an early exit makes its
 * exit nonzero, and so fails the test. No server is needed: the upstreams
 * are the test's own, in threads, or never connected to. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tidepool/core.h>

#include "connect.h"
#include "load_child.h"
#include "loop.h"
#include "runner.h"
#include "stranger.h"

static const char *prog; /* the proxy under test */

#define RUN(...) TIDE_TEST_PROG(prog, NULL, 10000, __VA_ARGS__)
#define EXPECT   TIDE_TEST_EXPECT

/* Every bad value of one option: exit 2, the option and the value said. */
static void refused(const char *option, const char *value)
{
    char quoted[128];
    snprintf(quoted, sizeof quoted, "'%s'", value);
    struct tide_test_prog_run r =
        strcmp(option, "--upstream") == 0
            ? RUN("--listen", "127.0.0.1:0", "--upstream", value)
        : strcmp(option, "--listen") == 0
            ? RUN("--listen", value, "--upstream", "127.0.0.1:9")
            : RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
                  option, value);
    EXPECT(r, 2, option, quoted);
    ck_assert_msg(!strstr(r.out, "listening"), "it ran: %s", r.out);
}

START_TEST(bad_upstreams_are_refused_by_name)
{
    const char *bad[] = {
        "garbage", "127.0.0.1:99999", "127.0.0.1:", ":80", "tls://",
        "tls://:443", "::1:80", "127.0.0.1:0", "127.0.0.1:-1", "127.0.0.1:8x",
        /* no address and no name: they went to the resolver at the first
         * request, and were a 502 long after the proxy said it listened */
        "bad name!:80", "[zz]:80", "[]:80", "999.1.1.1:80", "10.0.1:80",
        "a..b:80", ".:80", "tls://host/x:443",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test:"
        "80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused("--upstream", bad[i]);
}
END_TEST

START_TEST(bad_numbers_are_refused_by_name)
{
    const char *sizes[] = {"0",           "-3", "abc", "10abc",
                           "99999999999", " 3", "+3",  ""};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        refused("--pool-size", sizes[i]);
    /* in ns these were a signed overflow, then a 503 on every request */
    refused("--acquire-timeout", "9300000000000");
    refused("--acquire-timeout", "0");
    refused("--keep", "99999999999999");
    refused("--keep", "0");
    refused("--cap", "-1");
    refused("--breaker-strikes", "0");
    refused("--breaker-cooldown", "1.5");
    refused("--backoff-base", "99999999999999999999");
    refused("--connect-timeout", "x");
    refused("--response-timeout", "-100");
    refused("--health-interval", "0");
    refused("--demand", "-1");
    refused("--retire", "0");
    refused("--retire", "101");
    refused("--preconnect", "101");
    refused("--preconnect", "0.9");
    const char *bodies[] = {"0",     "-1",  "1.5m",
                            "k",     "12x", "2t",
                            "1025g", "4kk", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        refused("--max-body", bodies[i]);
}
END_TEST

START_TEST(a_missing_value_or_unknown_option_is_said)
{
    struct tide_test_prog_run r = RUN("--listen", "127.0.0.1:0", "--upstream",
                                      "127.0.0.1:9", "--pool-size");
    EXPECT(r, 2, "--pool-size needs a value");
    r = RUN("--listen", "127.0.0.1:0", "--upstream");
    EXPECT(r, 2, "--upstream needs a value");
    r = RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--pool-sise", "4");
    EXPECT(r, 2, "unknown option '--pool-sise'");
    r = RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--backoff-base", "3000", "--backoff-cap", "1000");
    EXPECT(r, 2, "--backoff-base", "--backoff-cap");
}
END_TEST

START_TEST(listen_is_required_and_an_ipv4_literal)
{
    /* it used to listen on a random port */
    struct tide_test_prog_run r = RUN("--upstream", "127.0.0.1:9");
    EXPECT(r, 2, "no --listen");
    r = RUN("--listen", "127.0.0.1:0");
    EXPECT(r, 2, "no --upstream");
    refused("--listen", "999.1.1.1:1");
    refused("--listen", "localhost:8080");
    refused("--listen", "127.0.0.1:65536");
    refused("--listen", "127.0.0.1");
    r = RUN("--listen", "localhost:8080", "--upstream", "127.0.0.1:9");
    EXPECT(r, 2, "IPv4 literal");
}
END_TEST

/* A port on 127.0.0.1 another program listens on; its descriptor. */
static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

START_TEST(a_port_in_use_says_why_and_frees_everything)
{
    int port, fd = listen_any(&port);
    char listen_at[32];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%d", port);
    /* two upstreams made before the listener fails: all freed (ASan) */
    struct tide_test_prog_run r =
        RUN("--listen", listen_at, "--upstream", "127.0.0.1:9", "--upstream",
            "127.0.0.1:10");
    close(fd);
    EXPECT(r, 1, "cannot listen on", listen_at, "Address already in use");
}
END_TEST

/* What an upstream may be: an IPv4 literal, an IPv6 one in brackets, a
 * name (with '_', as container names have, and a final dot). The port in
 * use stops the proxy after the upstreams were taken (exit 1, not 2). */
START_TEST(addresses_and_names_are_taken)
{
    int port, fd = listen_any(&port);
    char listen_at[32];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%d", port);
    struct tide_test_prog_run r =
        RUN("--listen", listen_at, "--upstream", "127.0.0.1:9", "--upstream",
            "[::1]:9", "--upstream", "localhost:9", "--upstream",
            "my_app-1.internal.:80", "--upstream", "tls://example.test:443");
    close(fd);
    EXPECT(r, 1, "cannot listen on", listen_at);
}
END_TEST

START_TEST(a_missing_ca_file_says_why_and_frees_everything)
{
    struct tide_test_prog_run r =
        RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--upstream", "tls://127.0.0.1:10", "--ca", "/nonexistent/ca.pem");
    EXPECT(r, 1, "tls://127.0.0.1:10", "/nonexistent/ca.pem");
}
END_TEST

START_TEST(help_lists_the_ward_options)
{
    struct tide_test_prog_run r = RUN("--help");
    EXPECT(r, 0, "");
    const char *words[] = {
        "--breaker-strikes", "--breaker-cooldown", "--no-breaker",
        "--backoff-base",    "--backoff-cap",      "--no-backoff",
        "--max-body",        "--slow-start",       "--retry-503",
        "--demand",          "--retire",           "--preconnect"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        ck_assert_msg(strstr(r.out, words[i]), "no %s in:\n%s", words[i],
                      r.out);
    ck_assert_msg(strstr(r.out, "(64m)"), "no preset of --max-body:\n%s",
                  r.out);
}
END_TEST

/* ---- --config FILE ---- */

/* A configuration file with text in /tmp; its path into path (unlink it). */
static void conf_file(char *path, size_t n, const char *text)
{
    snprintf(path, n, "/tmp/tide-proxy-conf-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t len = strlen(text);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* Each setting of the file is used (the listen address, the upstream,
 * the CA file: the errors past parsing name them), comments, blank lines,
 * indents and CRLF are skipped, and the command line overrides the file:
 * a value, and upstreams as a whole. */
START_TEST(config_file_sets_the_options_and_the_command_line_overrides_them)
{
    int port, fd = listen_any(&port);
    int port2, fd2 = listen_any(&port2);
    char text[512], path[64], at[32], at2[32];
    snprintf(at, sizeof at, "127.0.0.1:%d", port);
    snprintf(at2, sizeof at2, "127.0.0.1:%d", port2);
    snprintf(text, sizeof text,
             "# the proxy in front of one TLS upstream\r\n"
             "\n"
             "   listen %s\r\n"
             "  # trusted for it:\n"
             "ca /nonexistent/file.pem\n"
             "upstream tls://127.0.0.1:10\n"
             "no-breaker\n"
             "pool-size 4",
             at);
    conf_file(path, sizeof path, text);
    struct tide_test_prog_run r = RUN("--config", path);
    EXPECT(r, 1, "tls://127.0.0.1:10", "/nonexistent/file.pem");
    r = RUN("--config", path, "--ca", "/nonexistent/line.pem");
    EXPECT(r, 1, "tls://127.0.0.1:10", "/nonexistent/line.pem");
    /* the file's TLS upstream is gone: the listener is what fails */
    r = RUN("--config", path, "--upstream", "127.0.0.1:9");
    EXPECT(r, 1, "cannot listen on", at, "Address already in use");
    r = RUN("--upstream", "127.0.0.1:9", "--listen", at2, "--config", path);
    EXPECT(r, 1, "cannot listen on", at2);
    unlink(path);
    close(fd);
    close(fd2);
}
END_TEST

/* Each error in the file: its path and line, the option and the value. */
START_TEST(config_file_errors_name_the_file_and_line)
{
    struct {
        const char *text;
        const char *said[3];
    } bad[] = {
        {"listen 127.0.0.1:0\n# pools\npool-size abc\n",
         {":3: ", "--pool-size", "'abc'"}},
        {"\npool-sise 4\n", {":2: ", "unknown option '--pool-sise'", ""}},
        {"no-breaker yes\n", {":1: ", "no-breaker takes no value", "'yes'"}},
        {"upstream\n", {":1: ", "--upstream needs a value", ""}},
        {"--listen 127.0.0.1:0\n", {":1: ", "'--listen'", "without the"}},
        {"config /etc/other\n", {":1: ", "'config'", "command line only"}},
        {"version\n", {":1: ", "'version'", "command line only"}},
        {"listen localhost:80\n", {":1: ", "--listen", "IPv4 literal"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[64];
        conf_file(path, sizeof path, bad[i].text);
        struct tide_test_prog_run r =
            RUN("--config", path, "--upstream", "127.0.0.1:9");
        EXPECT(r, 2, path, bad[i].said[0], bad[i].said[1], bad[i].said[2]);
        unlink(path);
    }
    struct tide_test_prog_run r = RUN("--config", "/nonexistent/proxy.conf");
    EXPECT(r, 2, "cannot read '/nonexistent/proxy.conf'", "No such file");
    r = RUN("--config", "a", "--config", "b");
    EXPECT(r, 2, "--config given twice");
    r = RUN("--listen", "127.0.0.1:0", "--config");
    EXPECT(r, 2, "--config needs a value");
}
END_TEST

/* The version is meson's project version, through <tidepool/version.h>,
 * alone on its line (what CI's package check compares with meson's), and
 * nothing is started. */
START_TEST(version_says_the_project_version)
{
    char line[64];
    snprintf(line, sizeof line, "tidepool-proxy %s\n", TIDE_VERSION_STRING);
    struct tide_test_prog_run r = RUN("--version");
    EXPECT(r, 0, "");
    ck_assert_str_eq(r.out, line);
}
END_TEST

/* ---- SIGTERM drains ---- */

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

#define SLOW_BODY (256 * 1024)

static unsigned char slow_byte(size_t i)
{
    return (unsigned char)(i * 131 + i / 251);
}

/* An origin that answers its one connection's request after delay_ms:
 * 256 KiB by length, then closes. */
struct slow_origin {
    int fd;
    int port;
    int delay_ms;
    pthread_t thread;
};

/* Accepts one connection on fd and reads what comes up to the end of a
 * request head (or 4 KiB, or the close); the connection, or -1. */
static int accept_head(int fd)
{
    int c = accept(fd, NULL, NULL);
    if (c < 0)
        return -1;
    char req[4096];
    size_t got = 0;
    while (got < sizeof req - 1) {
        ssize_t n = read(c, req + got, sizeof req - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    return c;
}

static void *slow_origin_main(void *arg)
{
    struct slow_origin *o = arg;
    int c = accept_head(o->fd);
    if (c < 0)
        return NULL;
    usleep((useconds_t)o->delay_ms * 1000);
    char head[128];
    int h =
        snprintf(head, sizeof head,
                 "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", SLOW_BODY);
    unsigned char *body = malloc(SLOW_BODY);
    for (size_t i = 0; i < SLOW_BODY; i++)
        body[i] = slow_byte(i);
    (void)!send(c, head, (size_t)h, MSG_NOSIGNAL);
    for (size_t off = 0; off < SLOW_BODY;) {
        ssize_t n = send(c, body + off, SLOW_BODY - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    free(body);
    close(c);
    return NULL;
}

static void slow_origin_start(struct slow_origin *o, int delay_ms)
{
    o->delay_ms = delay_ms;
    o->fd = listen_any(&o->port);
    ck_assert_int_eq(pthread_create(&o->thread, NULL, slow_origin_main, o), 0);
}

static void slow_origin_stop(struct slow_origin *o)
{
    shutdown(o->fd, SHUT_RDWR); /* an accept still waiting returns */
    pthread_join(o->thread, NULL);
    close(o->fd);
}

/* The proxy running in the background, its output to /dev/null; with
 * `nofile` > 0, that as its RLIMIT_NOFILE, and none of this process's
 * descriptors but 0, 1 and 2, so what it can open is known. */
/* The proxy on port to upstream, with one more flag when `flag` is not
 * NULL. */
static pid_t proxy_spawn_with(int port, int upstream, const char *drain_ms,
                              rlim_t nofile, const char *flag)
{
    char listen_at[32], up[32];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%d", port);
    snprintf(up, sizeof up, "127.0.0.1:%d", upstream);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        struct rlimit lim = {.rlim_cur = nofile, .rlim_max = nofile};
        if (nofile > 0 &&
            (close_range(3, ~0u, 0) != 0 || setrlimit(RLIMIT_NOFILE, &lim)))
            _exit(126);
        execl(prog, prog, "--listen", listen_at, "--upstream", up,
              "--drain-timeout", drain_ms, flag, (char *)NULL);
        _exit(127);
    }
    /* ready once it takes a connection */
    for (int i = 0; i < 500; i++) {
        int fd = tide_test_connect(port);
        if (fd >= 0) {
            close(fd);
            return pid;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ck_abort_msg("the proxy did not listen on %d", port);
    return -1;
}

static pid_t proxy_spawn_limited(int port, int upstream, const char *drain_ms,
                                 rlim_t nofile)
{
    return proxy_spawn_with(port, upstream, drain_ms, nofile, NULL);
}

static pid_t proxy_spawn(int port, int upstream, const char *drain_ms)
{
    return proxy_spawn_limited(port, upstream, drain_ms, 0);
}

/* Its exit code (128 + n for signal n), within ms; -1 and killed after. */
static int proxy_wait(pid_t pid, int ms)
{
    int status;
    for (int64_t t0 = now_ms(); now_ms() - t0 < ms; usleep(10000))
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* Reads one response by length (its head, then the body); the body's
 * bytes checked against the slow origin's. */
struct read_result {
    bool whole;
    bool close_said;
    bool eof_after;
    size_t body;
};

static struct read_result read_slow_response(int fd)
{
    struct read_result r = {0};
    char head[4096];
    size_t got = 0;
    char *end = NULL;
    while (!end && got < sizeof head - 1) {
        ssize_t n = read(fd, head + got, sizeof head - 1 - got);
        if (n <= 0)
            return r;
        got += (size_t)n;
        head[got] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if (!end || !strstr(head, " 200 "))
        return r;
    r.close_said = strcasestr(head, "\r\nconnection: close\r\n") != NULL;
    const char *cl = strcasestr(head, "\r\ncontent-length: ");
    if (!cl || atol(cl + 18) != SLOW_BODY)
        return r;
    size_t in_head = got - (size_t)(end + 4 - head);
    bool same = true;
    for (size_t i = 0; i < in_head; i++)
        same = same && (unsigned char)end[4 + i] == slow_byte(i);
    r.body = in_head;
    unsigned char buf[65536];
    while (r.body < SLOW_BODY) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            same = same && buf[i] == slow_byte(r.body + (size_t)i);
        r.body += (size_t)n;
    }
    r.whole = same && r.body == SLOW_BODY;
    r.eof_after = read(fd, buf, sizeof buf) == 0;
    return r;
}

static const char slow_request[] = "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n";

/* ---- an upstream that is down at startup ---- */

/* One request on a connection of its own; the response's status and its
 * body (up to len - 1 bytes, NUL-terminated), read by Content-Length. */
static int get(int port, char *body, size_t len)
{
    int fd = tide_test_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, slow_request, strlen(slow_request)),
                     (ssize_t)strlen(slow_request));
    char buf[4096];
    size_t got = 0;
    char *end = NULL;
    const char *cl = NULL;
    while (got < sizeof buf - 1) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        cl = end ? strcasestr(buf, "\r\ncontent-length: ") : NULL;
        if (cl && got >= (size_t)(end + 4 - buf) + (size_t)atol(cl + 18))
            break;
    }
    close(fd);
    ck_assert_msg(end && strncmp(buf, "HTTP/1.1 ", 9) == 0, "got: %s", buf);
    snprintf(body, len, "%s", end + 4);
    return atoi(buf + 9);
}

/* The upstream comes up: answers one request 200 "up" on fd (bound,
 * listening), then closes. */
static void *serve_up(void *arg)
{
    int fd = *(int *)arg;
    int c = accept_head(fd);
    if (c < 0)
        return NULL;
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nup";
    (void)!send(c, ok, sizeof ok - 1, MSG_NOSIGNAL);
    close(c);
    return NULL;
}

/* Upstreams are connected when requests need them, so one that refuses
 * at startup is no startup error (it may come up later): the proxy runs,
 * says why with a 502 naming the upstream and the cause, and serves once
 * the upstream listens. */
START_TEST(an_upstream_down_at_startup_gets_502_until_it_is_up)
{
    int upstream, fd = tide_test_refusing_port(&upstream);
    ck_assert_int_ge(fd, 0);
    int port = tide_test_free_port();
    pid_t pid = proxy_spawn(port, upstream, "1000");
    char body[512], want[64];
    ck_assert_int_eq(get(port, body, sizeof body), 502);
    snprintf(want, sizeof want, "127.0.0.1:%d", upstream);
    ck_assert_msg(strstr(body, want) && strstr(body, "Connection refused"),
                  "body: %s", body);
    ck_assert_int_eq(listen(fd, 8), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, serve_up, &fd), 0);
    /* past the backoff after the failed connect (100 ms, jittered) */
    usleep(300000);
    ck_assert_int_eq(get(port, body, sizeof body), 200);
    ck_assert_str_eq(body, "up");
    pthread_join(t, NULL);
    close(fd);
    kill(pid, SIGTERM);
    ck_assert_int_eq(proxy_wait(pid, 5000), 0);
}
END_TEST

/* --no-backoff says no wait between failed connects: the pool, which
 * holds makes after a failed one with its preset backoff when the ward
 * has none, holds them 1 ns, so the request right after a 502 connects
 * again, and is served by an upstream that came up meanwhile. */
START_TEST(no_backoff_connects_again_at_once)
{
    int upstream, fd = tide_test_refusing_port(&upstream);
    ck_assert_int_ge(fd, 0);
    int port = tide_test_free_port();
    pid_t pid = proxy_spawn_with(port, upstream, "1000", 0, "--no-backoff");
    char body[512];
    ck_assert_int_eq(get(port, body, sizeof body), 502);
    ck_assert_int_eq(listen(fd, 8), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, serve_up, &fd), 0);
    int64_t t0 = now_ms();
    ck_assert_int_eq(get(port, body, sizeof body), 200);
    ck_assert_str_eq(body, "up");
    ck_assert_int_lt(now_ms() - t0, 80); /* a preset hold is 80 ms or more */
    pthread_join(t, NULL);
    close(fd);
    kill(pid, SIGTERM);
    ck_assert_int_eq(proxy_wait(pid, 5000), 0);
}
END_TEST

START_TEST(sigterm_lets_an_exchange_in_flight_finish)
{
    struct slow_origin o;
    slow_origin_start(&o, 1000);
    int port = tide_test_free_port();
    pid_t pid = proxy_spawn(port, o.port, "10000");
    int idle = tide_test_connect(port); /* a client between requests */
    int fd = tide_test_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, slow_request, strlen(slow_request)),
                     (ssize_t)strlen(slow_request));
    usleep(300000); /* the request is at the origin, its answer 1 s away */
    int64_t t0 = now_ms();
    kill(pid, SIGTERM);
    usleep(100000);
    int late = tide_test_connect(port);
    if (late >= 0)
        close(late);
    ck_assert_msg(late < 0, "it still takes connections while draining");
    char c;
    ck_assert_int_eq(read(idle, &c, 1), 0); /* closed at once */
    close(idle);
    struct read_result r = read_slow_response(fd);
    close(fd);
    ck_assert_msg(r.whole, "%zu bytes of the body", r.body);
    ck_assert(r.close_said);
    ck_assert(r.eof_after);
    int status = proxy_wait(pid, 5000);
    ck_assert_int_eq(status, 0);
    /* it waited for the answer, and no longer */
    ck_assert_int_ge(now_ms() - t0, 500);
    ck_assert_int_lt(now_ms() - t0, 5000);
    slow_origin_stop(&o);
}
END_TEST

START_TEST(a_second_sigterm_or_the_drain_timeout_ends_it_at_once)
{
    for (int round = 0; round < 2; round++) {
        struct slow_origin o;
        slow_origin_start(&o, 2500);
        int port = tide_test_free_port();
        /* round 0: a second signal; round 1: a 300 ms drain timeout */
        pid_t pid = proxy_spawn(port, o.port, round ? "300" : "10000");
        int fd = tide_test_connect(port);
        ck_assert_int_eq(write(fd, slow_request, strlen(slow_request)),
                         (ssize_t)strlen(slow_request));
        usleep(200000);
        int64_t t0 = now_ms();
        kill(pid, SIGTERM);
        if (round == 0) {
            usleep(100000);
            kill(pid, SIGTERM);
        }
        int status = proxy_wait(pid, 3000);
        ck_assert_int_eq(status, 0);
        ck_assert_int_lt(now_ms() - t0, 1500);
        char buf[64];
        ck_assert_int_le(read(fd, buf, sizeof buf), 0); /* cut off */
        close(fd);
        slow_origin_stop(&o);
    }
}
END_TEST

/* ---- at the descriptor limit ---- */

static const char stats_request[] =
    "GET /_tidepool/stats HTTP/1.1\r\nHost: t\r\n\r\n";

/* Reads one response by its Content-Length within ms into buf; its status,
 * or 0 when none came whole in time. */
static int read_response(int fd, int ms, char *buf, size_t size)
{
    size_t got = 0;
    for (int64_t t0 = now_ms(); now_ms() - t0 < ms;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(fd, buf + got, size - 1 - got, 0);
        if (n <= 0)
            return 0;
        got += (size_t)n;
        buf[got] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        const char *cl = strcasestr(buf, "\r\ncontent-length: ");
        if (end && cl && got - (size_t)(end + 4 - buf) >= (size_t)atol(cl + 18))
            return atoi(buf + 9);
    }
    return 0;
}

/* The stats page asked for on fd, and whether it came within ms. */
static bool stats_served(int fd, int ms, char *buf, size_t size)
{
    if (send(fd, stats_request, strlen(stats_request), MSG_NOSIGNAL) < 0)
        return false;
    return read_response(fd, ms, buf, size) == 200;
}

/* CPU time the process has used, in clock ticks (/proc/PID/stat's utime
 * and stime). */
static long cpu_ticks(pid_t pid)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    /* after the name in parentheses: state, then fields 4 to 13 */
    const char *p = strrchr(stat, ')');
    ck_assert_ptr_nonnull(p);
    unsigned long utime = 0, stime = 0;
    ck_assert_int_eq(sscanf(p + 2,
                            "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                            "%lu %lu",
                            &utime, &stime),
                     2);
    return (long)(utime + stime);
}

/* More clients than its descriptors allow: a connection it cannot accept
 * waits in the listen backlog, and accept() fails with EMFILE for as long
 * as it does. The proxy stops accepting for a moment instead of trying
 * again at once (it spun at 100% CPU), goes on serving the clients it
 * has, and takes the waiting one once another client closed. */
START_TEST(at_the_descriptor_limit_it_pauses_accepting_and_serves_its_clients)
{
    int port = tide_test_free_port();
    /* 0-2, the loop's epoll and signal pipe and the listener: 7 or so,
     * the rest for clients; the upstream is never needed */
    pid_t pid = proxy_spawn_limited(port, 9, "10000", 14);
    char buf[8192];
    int held[16];
    int n_held = 0;
    int waiting = -1;
    while (n_held < 16) {
        int fd = tide_test_connect(port); /* the kernel takes it */
        ck_assert_int_ge(fd, 0);
        if (!stats_served(fd, 500, buf, sizeof buf)) {
            waiting = fd; /* its request waits with it */
            break;
        }
        held[n_held++] = fd;
    }
    ck_assert_msg(waiting >= 0, "%d clients and no limit", n_held);
    ck_assert_int_ge(n_held, 3);
    /* a second at the limit, with a client waiting to be accepted */
    long t0 = cpu_ticks(pid);
    usleep(1000000);
    long used = cpu_ticks(pid) - t0;
    ck_assert_msg(used * 20 <= sysconf(_SC_CLK_TCK),
                  "%ld ticks of CPU in a second at the limit (of %ld)", used,
                  sysconf(_SC_CLK_TCK));
    /* the clients it has are served, and it says it paused */
    ck_assert(stats_served(held[0], 2000, buf, sizeof buf));
    const char *pauses = strstr(buf, "\"accept_pauses\":");
    ck_assert_msg(pauses && atol(pauses + 16) >= 1, "%s", buf);
    ck_assert(stats_served(held[n_held - 1], 2000, buf, sizeof buf));
    /* descriptors free: the waiting client is taken and answered, and a
     * new one after it */
    close(held[--n_held]);
    close(held[--n_held]);
    ck_assert_int_eq(read_response(waiting, 2000, buf, sizeof buf), 200);
    int late = tide_test_connect(port);
    ck_assert(stats_served(late, 2000, buf, sizeof buf));
    close(late);
    close(waiting);
    while (n_held > 0)
        close(held[--n_held]);
    kill(pid, SIGTERM);
    ck_assert_int_eq(proxy_wait(pid, 5000), 0);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("proxy_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_upstreams_are_refused_by_name);
    tcase_add_test(tc, bad_numbers_are_refused_by_name);
    tcase_add_test(tc, a_missing_value_or_unknown_option_is_said);
    tcase_add_test(tc, listen_is_required_and_an_ipv4_literal);
    tcase_add_test(tc, a_port_in_use_says_why_and_frees_everything);
    tcase_add_test(tc, addresses_and_names_are_taken);
    tcase_add_test(tc, a_missing_ca_file_says_why_and_frees_everything);
    tcase_add_test(tc, an_upstream_down_at_startup_gets_502_until_it_is_up);
    tcase_add_test(tc, no_backoff_connects_again_at_once);
    tcase_add_test(tc, help_lists_the_ward_options);
    tcase_add_test(tc, version_says_the_project_version);
    tcase_add_test(
        tc, config_file_sets_the_options_and_the_command_line_overrides_them);
    tcase_add_test(tc, config_file_errors_name_the_file_and_line);
    tcase_add_test(tc, sigterm_lets_an_exchange_in_flight_finish);
    tcase_add_test(tc, a_second_sigterm_or_the_drain_timeout_ends_it_at_once);
    tcase_add_test(
        tc, at_the_descriptor_limit_it_pauses_accepting_and_serves_its_clients);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli PROXY\n");
        return 2;
    }
    prog = argv[1];
    return tide_test_run(cli_suite());
}
