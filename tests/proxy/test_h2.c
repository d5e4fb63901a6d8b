/* tests for demos/proxy's HTTP/2 upstreams (h2.c): the proxy's clients
 * speak HTTP/1.1, each request a stream on a connection shared with the
 * others, against a real nginx (h2c and h2 over TLS) and nghttpd (where
 * nginx cannot be told: a low stream limit, echoed bodies, a kill). Each
 * test ends with the group closed, the loop run dry and no descriptor
 * left open. Without nginx or nghttpd the binary exits 77. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "loop.h"

#define FAIL(j, ...)                                                           \
    do {                                                                       \
        if (!(j)->failures++)                                                  \
            snprintf((j)->why, sizeof(j)->why, __VA_ARGS__);                   \
    } while (0)

#define FOUR_MIB (4 * 1024 * 1024)

static struct nginx ng;
static struct tide_test_child nghttpd;
static int nghttpd_port;
static unsigned char *big; /* FOUR_MIB of a pattern no shift repeats */

static void setup(void)
{
    memset(&ng, 0, sizeof ng);
    memset(&nghttpd, 0, sizeof nghttpd);
    if (!big) {
        big = malloc(FOUR_MIB);
        ck_assert_ptr_nonnull(big);
        uint32_t x = 2463534242u;
        for (size_t i = 0; i < FOUR_MIB; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            big[i] = (unsigned char)x;
        }
    }
    harness_setup();
}

static void teardown(void)
{
    harness_teardown();
    nginx_cleanup(&ng);
    tide_test_child_dispose(&nghttpd);
}

static struct px_stats pstats(void)
{
    struct px_stats s;
    px_stats(proxy, &s);
    return s;
}

static struct tide_evpool_stats upstream_stats(void)
{
    struct tide_group_upstream *u;
    ck_assert_int_eq(tide_group_upstreams(group, &u, 1), 1);
    struct tide_evpool_stats s;
    tide_group_upstream_stats(u, &s, NULL);
    return s;
}

static void write_file(const char *dir, const char *name, const void *p,
                       size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
    chmod(path, 0644);
}

/* nginx speaking HTTP/2 (h2c, or h2 over TLS), with /f4m beside its files
 * and `extra` in its http block. */
static void nginx_h2(bool tls, const char *extra)
{
    ng.h2 = true;
    if (tls)
        nginx_start_tls(&ng, 0, extra);
    else
        nginx_start(&ng, 0, extra);
    write_file(ng.child.dir, "f4m", big, FOUR_MIB);
}

static bool nghttpd_listening(void *arg)
{
    (void)arg;
    int fd = client_connect(nghttpd_port);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* nghttpd on 127.0.0.1 (h2c by prior knowledge), echoing what is uploaded
 * to it, with at most `streams` streams at once (SETTINGS). port 0: a free
 * one; else that one again (a restart). */
static void nghttpd_start(int port, int streams)
{
    if (!nghttpd.dir[0])
        ck_assert(tide_test_child_mkdir(&nghttpd, "nghttpd"));
    nghttpd_port = port ? port : tide_test_free_port();
    char p[16], m[16];
    snprintf(p, sizeof p, "%d", nghttpd_port);
    snprintf(m, sizeof m, "%d", streams);
    const char *argv[] = {
        "/usr/sbin/nghttpd", "--no-tls",      "-a", "127.0.0.1", "-m", m, "-d",
        nghttpd.dir,         "--echo-upload", p,    NULL};
    ck_assert(tide_test_child_spawn(&nghttpd, argv));
    ck_assert_msg(tide_test_child_wait(&nghttpd, nghttpd_listening, NULL, 3000),
                  "nghttpd did not start on %d", nghttpd_port);
}

/* ---- bodies both ways ---- */

struct get_job {
    int port;
    int failures;
    char why[256];
};

/* GET 0 B, 1 KiB and 4 MiB, twice each on one client connection. */
static void get_files(void *arg)
{
    struct get_job *j = arg;
    int fd = client_connect(j->port);
    const char *paths[3] = {"/f0", "/f1k", "/f4m"};
    const size_t sizes[3] = {0, 1024, FOUR_MIB};
    for (int k = 0; k < 6; k++) {
        int i = k % 3;
        const unsigned char *want = i == 2 ? big : file_bytes(sizes[i]);
        struct response r;
        if (!client_request(fd, "GET", paths[i], NULL, 0, false, &r))
            FAIL(j, "GET %s: no response", paths[i]);
        else if (r.status != 200 || r.body_len != sizes[i] ||
                 (sizes[i] && memcmp(r.body, want, sizes[i]) != 0))
            FAIL(j, "GET %s: status %d, %zu bytes", paths[i], r.status,
                 r.body_len);
        response_dispose(&r);
    }
    close(fd);
}

static void gets_are_byte_exact(bool tls)
{
    nginx_h2(tls, NULL);
    proxy_start_scheme(tls ? "h2" : "h2c", ng.port, 4, NULL);
    long before = nginx_accepts(&ng);
    struct get_job j = {.port = proxy_port()};
    run_client(get_files, &j, 30000);
    ck_assert_msg(j.failures == 0, "%s", j.why);
    /* six streams on one connection (and the status request's own) */
    ck_assert_int_eq(nginx_accepts(&ng) - before, 2);
    ck_assert_uint_eq(pstats().responses, 6);
    ck_assert_uint_eq(upstream_stats().made, 1);
}

START_TEST(gets_from_nginx_over_h2c_are_byte_exact_on_one_connection)
{
    gets_are_byte_exact(false);
}
END_TEST

START_TEST(gets_from_nginx_over_h2_tls_are_byte_exact_on_one_connection)
{
    gets_are_byte_exact(true);
}
END_TEST

struct echo_job {
    int port;
    bool chunked;
    int failures;
    char why[256];
};

/* POST and PUT 0 B, 1 KiB and 4 MiB to the echo, by length or chunked. */
static void echo_bodies(void *arg)
{
    struct echo_job *j = arg;
    int fd = client_connect(j->port);
    const char *methods[2] = {"POST", "PUT"};
    const size_t sizes[3] = {0, 1024, FOUR_MIB};
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3; i++) {
            struct response r;
            if (!client_request(fd, methods[m], "/echo", big, sizes[i],
                                j->chunked, &r))
                FAIL(j, "%s %zu: no response", methods[m], sizes[i]);
            else if (r.status != 200 || r.body_len != sizes[i] ||
                     (sizes[i] && memcmp(r.body, big, sizes[i]) != 0))
                FAIL(j, "%s %zu: status %d, %zu bytes back", methods[m],
                     sizes[i], r.status, r.body_len);
            response_dispose(&r);
        }
    close(fd);
}

START_TEST(bodies_go_both_ways_byte_exact_by_length_and_chunked)
{
    nghttpd_start(0, 100);
    proxy_start_scheme("h2c", nghttpd_port, 4, NULL);
    for (int chunked = 0; chunked < 2; chunked++) {
        struct echo_job j = {.port = proxy_port(), .chunked = chunked};
        run_client(echo_bodies, &j, 60000);
        ck_assert_msg(j.failures == 0, "%s", j.why);
    }
    ck_assert_uint_eq(pstats().responses, 12);
    ck_assert_uint_eq(upstream_stats().made, 1);
}
END_TEST

/* ---- streams shared ---- */

struct id_job {
    int port;
    int id;
    int n;
    int failures;
    char why[256];
};

/* POSTs its own id n times and checks each answer is its own: a response
 * routed to another stream's client would carry another id. POST is not
 * idempotent: a stream the server refused would be a 502, not a retry. */
static void post_ids(void *arg)
{
    struct id_job *j = arg;
    int fd = client_connect(j->port);
    for (int k = 0; k < j->n; k++) {
        char id[64];
        int len = snprintf(id, sizeof id, "client %d request %d", j->id, k);
        struct response r;
        if (!client_request(fd, "POST", "/echo", id, (size_t)len, false, &r))
            FAIL(j, "%s: no response", id);
        else if (r.status != 200 || r.body_len != (size_t)len ||
                 memcmp(r.body, id, (size_t)len) != 0)
            FAIL(j, "%s: status %d, %zu bytes: '%.*s'", id, r.status,
                 r.body_len, (int)(r.body_len < 64 ? r.body_len : 64),
                 r.body ? (const char *)r.body : "");
        response_dispose(&r);
    }
    close(fd);
}

START_TEST(two_hundred_clients_share_ten_streams_of_one_connection)
{
    /* nghttpd refuses a stream above its limit: with POSTs that would be
     * a 502, so none means the limit was never exceeded */
    nghttpd_start(0, 10);
    proxy_start_scheme("h2c", nghttpd_port, 1, NULL); /* one connection */
    enum { CLIENTS = 200 };
    static struct id_job jobs[CLIENTS];
    void *args[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        jobs[i] = (struct id_job){.port = proxy_port(), .id = i, .n = 5};
        args[i] = &jobs[i];
    }
    run_clients(post_ids, args, CLIENTS, 120000);
    for (int i = 0; i < CLIENTS; i++)
        ck_assert_msg(jobs[i].failures == 0, "%s", jobs[i].why);
    ck_assert_uint_eq(pstats().responses, CLIENTS * 5);
    ck_assert_uint_eq(pstats().errors_502, 0);
    /* one connection carried them all: 10 streams, the rest waited */
    ck_assert_uint_eq(upstream_stats().made, 1);
}
END_TEST

/* ---- a slow client beside fast ones ---- */

struct stall_job {
    int port;
    bool stalls; /* the slow one; else one of the fast */
    int done;
    int64_t ms; /* how long the fast one's requests took */
    int failures;
    char why[256];
};

/* The slow one asks for 4 MiB and reads nothing for 1.5 s (its stream's
 * window shuts), then reads it all; the fast one, once that window is
 * shut, makes 50 requests of 1 KiB on the same upstream connection. */
static void stall_or_fast(void *arg)
{
    struct stall_job *j = arg;
    int fd = client_connect(j->port);
    if (j->stalls) {
        const char *req = "GET /f4m HTTP/1.1\r\nHost: x\r\n\r\n";
        send_all(fd, req, strlen(req));
        usleep(1500 * 1000);
        struct response r;
        if (!client_exchange(fd, "", 0, false, &r))
            FAIL(j, "no response after the stall");
        else if (r.status != 200 || r.body_len != FOUR_MIB ||
                 memcmp(r.body, big, FOUR_MIB) != 0)
            FAIL(j, "after the stall: status %d, %zu bytes", r.status,
                 r.body_len);
        response_dispose(&r);
        close(fd);
        return;
    }
    usleep(300 * 1000);
    int64_t t0 = now_ms();
    for (int k = 0; k < 50; k++) {
        struct response r;
        if (!client_request(fd, "GET", "/f1k", NULL, 0, false, &r) ||
            r.status != 200 || r.body_len != 1024)
            FAIL(j, "GET /f1k %d: status %d", k, r.status);
        else
            j->done++;
        response_dispose(&r);
    }
    j->ms = now_ms() - t0;
    close(fd);
}

START_TEST(a_stalled_stream_does_not_stall_the_others_on_its_connection)
{
    nginx_h2(false, NULL);
    proxy_start_scheme("h2c", ng.port, 1, NULL); /* one connection */
    struct stall_job s = {.port = proxy_port(), .stalls = true};
    struct stall_job f = {.port = proxy_port()};
    void *args[2] = {&s, &f};
    run_clients(stall_or_fast, args, 2, 30000);
    ck_assert_msg(s.failures == 0, "%s", s.why);
    ck_assert_msg(f.failures == 0, "%s", f.why);
    ck_assert_int_eq(f.done, 50);
    /* the fifty went while the stalled one's window was shut */
    ck_assert_msg(f.ms < 1000, "the fast requests took %lld ms",
                  (long long)f.ms);
    ck_assert_uint_eq(upstream_stats().made, 1);
}
END_TEST

/* ---- GOAWAY, RST_STREAM, a dead origin ---- */

struct load_job {
    int port;
    int n;
    int done;
    int bad;
    char why[128];
};

/* GETs /f1k n times on one client connection. */
static void load(void *arg)
{
    struct load_job *j = arg;
    int fd = client_connect(j->port);
    for (int i = 0; i < j->n; i++) {
        struct response r;
        if (!client_request(fd, "GET", "/f1k", NULL, 0, false, &r) ||
            r.status != 200 || r.body_len != 1024 ||
            memcmp(r.body, file_bytes(1024), 1024) != 0) {
            if (!j->bad++)
                snprintf(j->why, sizeof j->why, "status %d, %zu bytes",
                         r.status, r.body_len);
        }
        j->done++;
        response_dispose(&r);
    }
    close(fd);
}

/* Reloads nginx (SIGHUP) three times 150 ms apart (each old worker sends
 * its connections a GOAWAY), then, 300 ms after, tells the load to stop. */
static void reloads(struct nginx *n, volatile int *stop)
{
    for (int i = 0; i < 3; i++) {
        usleep(150 * 1000);
        tide_test_child_signal(&n->child, SIGHUP);
    }
    usleep(300 * 1000);
    *stop = 1;
}

struct goaway_job {
    struct load_job load; /* unused by the reloader */
    bool reloader;
    struct nginx *n;
    volatile int *stop;
};

/* GETs /f1k until told to stop (the reloader's job: the reloads). */
static void load_or_reload(void *arg)
{
    struct goaway_job *j = arg;
    if (j->reloader) {
        reloads(j->n, j->stop);
        return;
    }
    while (!*j->stop) {
        j->load.n = 10;
        load(&j->load);
    }
}

START_TEST(goaway_mid_load_fails_no_idempotent_request)
{
    nginx_h2(false, NULL);
    proxy_start_scheme("h2c", ng.port, 4, NULL);
    enum { CLIENTS = 20 };
    static struct goaway_job jobs[CLIENTS + 1];
    static volatile int stop;
    stop = 0;
    void *args[CLIENTS + 1];
    for (int i = 0; i <= CLIENTS; i++) {
        jobs[i] = (struct goaway_job){.load = {.port = proxy_port()},
                                      .reloader = i == CLIENTS,
                                      .n = &ng,
                                      .stop = &stop};
        args[i] = &jobs[i];
    }
    run_clients(load_or_reload, args, CLIENTS + 1, 60000);
    int done = 0;
    for (int i = 0; i < CLIENTS; i++) {
        ck_assert_msg(jobs[i].load.bad == 0, "%s", jobs[i].load.why);
        done += jobs[i].load.done;
    }
    ck_assert_int_gt(done, 0);
    ck_assert_uint_eq(pstats().errors_502, 0);
    ck_assert_uint_eq(pstats().responses, (uint64_t)done);
    /* a new connection after a GOAWAY drained the old */
    ck_assert_uint_ge(upstream_stats().made, 2);
}
END_TEST

struct reset_job {
    int port;
    int failures;
    char why[256];
};

/* Alternates a request nginx resets (RST_STREAM) with ones it answers. */
static void resets(void *arg)
{
    struct reset_job *j = arg;
    int fd = client_connect(j->port);
    for (int k = 0; k < 10; k++) {
        struct response r;
        if (!client_request(fd, "GET", "/reset", NULL, 0, false, &r) ||
            r.status != 502 || !r.body ||
            !strstr((const char *)r.body, "reset the HTTP/2 stream"))
            FAIL(j, "GET /reset: status %d", r.status);
        response_dispose(&r);
        if (!client_request(fd, "GET", "/f1k", NULL, 0, false, &r) ||
            r.status != 200 || r.body_len != 1024)
            FAIL(j, "GET /f1k after a reset: status %d", r.status);
        response_dispose(&r);
    }
    close(fd);
}

START_TEST(a_rst_stream_fails_that_request_alone)
{
    /* a second HTTP/2 server whose /reset nginx answers with RST_STREAM
     * (return 444 on HTTP/2) */
    int port = tide_test_free_port();
    char extra[512];
    nginx_h2(false, NULL);
    snprintf(extra, sizeof extra,
             "server {\n  listen 127.0.0.1:%d http2;\n  root %s;\n"
             "  location = /reset { return 444; }\n }\n",
             port, ng.child.dir);
    nginx_stop(&ng);
    nginx_start(&ng, ng.port, extra);
    proxy_start_scheme("h2c", port, 4, NULL);
    struct reset_job j = {.port = proxy_port()};
    run_client(resets, &j, 20000);
    ck_assert_msg(j.failures == 0, "%s", j.why);
    ck_assert_uint_eq(pstats().errors_502, 10);
    /* the connection outlived every reset */
    ck_assert_uint_eq(upstream_stats().made, 1);
}
END_TEST

/* ---- the proxy's own timeout on a stream ---- */

/* A listener on 127.0.0.1 that never accepts: the kernel completes the
 * connects (its backlog), nothing ever answers. Its port in *port. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    socklen_t len = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

struct hold_job {
    int port;
    bool holds; /* the one whose response never comes; else a fast one */
    volatile int *held_done;
    int status;
    int64_t ms;
    int done; /* fast: 200s while the held one waited */
    int failures;
    char why[256];
};

/* The held one GETs /hold (its origin never answers) and takes what
 * comes; the fast one GETs /f1k on its own client connection until the
 * held one has its answer. */
static void hold_or_fast(void *arg)
{
    struct hold_job *j = arg;
    int fd = client_connect(j->port);
    if (j->holds) {
        int64_t t0 = now_ms();
        struct response r;
        j->status = -1;
        if (client_request(fd, "GET", "/hold", NULL, 0, false, &r))
            j->status = r.status;
        j->ms = now_ms() - t0;
        response_dispose(&r);
        *j->held_done = 1;
        close(fd);
        return;
    }
    while (!*j->held_done) {
        struct response r;
        if (!client_request(fd, "GET", "/f1k", NULL, 0, false, &r) ||
            r.status != 200 || r.body_len != 1024 ||
            memcmp(r.body, file_bytes(1024), 1024) != 0)
            FAIL(j, "GET /f1k beside the held one: status %d", r.status);
        else if (!*j->held_done)
            j->done++;
        response_dispose(&r);
        usleep(10 * 1000);
    }
    close(fd);
}

/* Whether nginx's access log at path has a line with both words. */
static bool log_has(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, a) && strstr(line, b);
    fclose(f);
    return found;
}

START_TEST(the_proxys_timeout_resets_that_stream_alone_and_answers_504)
{
    /* a second HTTP/2 server whose /hold waits on a listener that never
     * answers (nginx's own proxy_read_timeout, 60 s, far beyond ours); its
     * access log tells how each stream ended (499: the client reset it) */
    int silent_port;
    int silent = silent_listener(&silent_port);
    int port = tide_test_free_port();
    char extra[1024], alog[200];
    nginx_h2(false, NULL);
    snprintf(alog, sizeof alog, "%s/h2.log", ng.child.dir);
    snprintf(extra, sizeof extra,
             "server {\n  listen 127.0.0.1:%d http2;\n  root %s;\n"
             "  access_log %s;\n"
             "  location = /hold { proxy_pass http://127.0.0.1:%d; }\n }\n",
             port, ng.child.dir, alog, silent_port);
    nginx_stop(&ng);
    nginx_start(&ng, ng.port, extra);
    const char *words[] = {"--response-timeout", "500", NULL};
    proxy_start_scheme("h2c", port, 1, words); /* one connection */
    static volatile int held_done;
    held_done = 0;
    struct hold_job h = {
        .port = proxy_port(), .holds = true, .held_done = &held_done};
    struct hold_job f = {.port = proxy_port(), .held_done = &held_done};
    void *args[2] = {&h, &f};
    run_clients(hold_or_fast, args, 2, 20000);
    ck_assert_msg(f.failures == 0, "%s", f.why);
    ck_assert_int_eq(h.status, 504);
    ck_assert_msg(h.ms >= 450 && h.ms < 3000, "the 504 came after %lld ms",
                  (long long)h.ms);
    /* the other stream carried on while this one waited */
    ck_assert_int_gt(f.done, 5);
    ck_assert_uint_eq(pstats().errors_504, 1);
    /* the proxy reset the stream (RST_STREAM): nginx ended it as the
     * client's doing, while the connection stayed up */
    run_ms(200);
    ck_assert_msg(log_has(alog, "/hold", "\" 499 "),
                  "nginx did not see /hold reset by the proxy");
    /* the connection stays in use */
    struct get_job g = {.port = proxy_port()};
    run_client(get_files, &g, 30000);
    ck_assert_msg(g.failures == 0, "%s", g.why);
    ck_assert_uint_eq(upstream_stats().made, 1);
    ck_assert_uint_eq(upstream_stats().destroyed, 0);
    close(silent);
}
END_TEST

struct one_job {
    int port;
    const char *method;
    int status;
    char body[512];
};

static void one_request(void *arg)
{
    struct one_job *j = arg;
    int fd = client_connect(j->port);
    struct response r;
    j->status = -1;
    if (client_request(fd, j->method, "/echo", "x", 1, false, &r)) {
        j->status = r.status;
        snprintf(j->body, sizeof j->body, "%.*s", (int)r.body_len,
                 r.body ? (const char *)r.body : "");
    }
    response_dispose(&r);
    close(fd);
}

START_TEST(an_origin_killed_and_restarted_serves_again)
{
    nghttpd_start(0, 100);
    int port = nghttpd_port;
    proxy_start_scheme("h2c", port, 4, NULL);
    struct one_job j = {.port = proxy_port(), .method = "POST"};
    run_client(one_request, &j, 10000);
    ck_assert_int_eq(j.status, 200);
    /* killed: the idle connection's EOF loses it; a request gets 502 */
    tide_test_child_stop(&nghttpd, SIGKILL, 3000);
    run_ms(100);
    run_client(one_request, &j, 10000);
    ck_assert_int_eq(j.status, 502);
    nghttpd_start(port, 100);
    run_client(one_request, &j, 10000);
    ck_assert_msg(j.status == 200, "status %d: %s", j.status, j.body);
    ck_assert_uint_eq(upstream_stats().made, 2);
}
END_TEST

/* ---- an origin that answers in bytes of the test's own ---- */

/* One connection of the proxy's, served in a thread: the server's
 * SETTINGS and the ACK of the proxy's at once, then `answer` once the
 * first HEADERS frame came, then whatever comes is read until the close. */
struct raw_h2 {
    int lfd;
    int port;
    const uint8_t *answer;
    size_t len;
    pthread_t thread;
};

static void *raw_h2_serve(void *arg)
{
    struct raw_h2 *o = arg;
    int fd = accept(o->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    static const uint8_t hello[] = {0, 0, 0, 4, 0, 0, 0, 0, 0,
                                    0, 0, 0, 4, 1, 0, 0, 0, 0};
    send_all(fd, hello, sizeof hello);
    uint8_t buf[16384];
    size_t have = 0, at = 24; /* the frames after the client preface */
    bool answered = false;
    ssize_t n;
    while ((n = read(fd, buf + have, sizeof buf - have)) > 0) {
        have += (size_t)n;
        while (!answered && have >= at + 9) {
            if (buf[at + 3] == 1) { /* HEADERS */
                send_all(fd, o->answer, o->len);
                answered = true;
            }
            at += 9 + ((size_t)buf[at] << 16 | (size_t)buf[at + 1] << 8 |
                       buf[at + 2]);
        }
        if (answered || have == sizeof buf)
            have = 0; /* from here on only read */
    }
    close(fd);
    return NULL;
}

static void raw_h2_start(struct raw_h2 *o)
{
    o->lfd = silent_listener(&o->port);
    ck_assert_int_eq(pthread_create(&o->thread, NULL, raw_h2_serve, o), 0);
}

/* After proxy_stop (which closes the proxy's end). */
static void raw_h2_stop(struct raw_h2 *o)
{
    pthread_join(o->thread, NULL);
    close(o->lfd);
}

START_TEST(an_origin_status_below_100_is_a_502)
{
    /* HEADERS of stream 1, END_STREAM and END_HEADERS: ":status: 099"
     * (HPACK, the name indexed), which nghttp2 lets through as three
     * digits; relayed it was "HTTP/1.1 99", no status at all. The block
     * begins with a dynamic table size update to 0 (0x20): the proxy's
     * SETTINGS_HEADER_TABLE_SIZE is 0, and once its SETTINGS are acked
     * the first block must say so (RFC 7541 4.2), or nghttp2 takes it for
     * a compression error */
    static const uint8_t answer[] = {0, 0,    6,    1, 5,   0,   0,  0,
                                     1, 0x20, 0x08, 3, '0', '9', '9'};
    struct raw_h2 o = {.answer = answer, .len = sizeof answer};
    raw_h2_start(&o);
    proxy_start_scheme("h2c", o.port, 4, NULL);
    struct one_job j = {.port = proxy_port(), .method = "GET"};
    run_client(one_request, &j, 10000);
    ck_assert_msg(j.status == 502, "status %d: %s", j.status, j.body);
    proxy_stop();
    raw_h2_stop(&o);
}
END_TEST

/* ---- an origin killed under load ---- */

#define OWN_BYTES 16384

/* Client i's own file, /c<i>: its number over and over, 16 KiB (several
 * DATA frames), so a body that went to another client is seen. */
static void own_body(int i, unsigned char *out)
{
    char word[16];
    int n = snprintf(word, sizeof word, "client %d ", i);
    for (size_t k = 0; k < OWN_BYTES; k++)
        out[k] = (unsigned char)word[k % (size_t)n];
}

struct own_job {
    int port;
    int id;
    volatile int *stop;
    bool timer; /* not a client: stops the others (and kills, when kill) */
    bool kill;
    int ok;  /* 200 with its own body */
    int bad; /* 502 */
    int cut; /* its own body's start, then the connection closed */
    int failures;
    char why[256];
};

/* GETs its own /c<id> until told to stop: each answer is its own body or
 * a 502, or its head and the start of its own body before a cut. */
static void get_own(struct own_job *j)
{
    unsigned char want[OWN_BYTES];
    own_body(j->id, want);
    char path[16];
    snprintf(path, sizeof path, "/c%d", j->id);
    int fd = client_connect(j->port);
    while (!*j->stop && !j->failures) {
        struct response r;
        bool whole = client_request(fd, "GET", path, NULL, 0, false, &r);
        if (!whole && r.status == 200 && r.body_len < OWN_BYTES &&
            (!r.body_len || memcmp(r.body, want, r.body_len) == 0)) {
            j->cut++; /* its head was out: cut, never a 502 after it */
            r.keep_alive = false;
        } else if (!whole)
            FAIL(j, "GET %s: no response (status %d, %zu bytes)", path,
                 r.status, r.body_len);
        else if (r.status == 200 && r.body_len == OWN_BYTES &&
                 memcmp(r.body, want, OWN_BYTES) == 0)
            j->ok++;
        else if (r.status == 502)
            j->bad++;
        else
            FAIL(j, "GET %s: status %d, %zu bytes: '%.*s'", path, r.status,
                 r.body_len, (int)(r.body_len < 32 ? r.body_len : 32),
                 r.body ? (const char *)r.body : "");
        bool again = r.keep_alive;
        response_dispose(&r);
        if (!again) {
            close(fd);
            fd = client_connect(j->port);
        }
    }
    close(fd);
}

/* The timer lets the load run 300 ms, SIGKILLs the origin when told to,
 * lets it run 300 ms more, then stops it. */
static void get_own_or_time(void *arg)
{
    struct own_job *j = arg;
    if (!j->timer) {
        get_own(j);
        return;
    }
    usleep(300 * 1000);
    if (j->kill)
        tide_test_child_signal(&nghttpd, SIGKILL);
    usleep(300 * 1000);
    *j->stop = 1;
}

enum { OWN_CLIENTS = 20 };

/* OWN_CLIENTS clients on their own files for 600 ms, the origin killed
 * after 300 when `kill`; the 200s, 502s and cuts they had. */
static void own_load(bool kill, int *ok, int *bad, int *cut)
{
    static struct own_job jobs[OWN_CLIENTS + 1];
    static volatile int stop;
    stop = 0;
    void *args[OWN_CLIENTS + 1];
    for (int i = 0; i <= OWN_CLIENTS; i++) {
        jobs[i] = (struct own_job){.port = proxy_port(),
                                   .id = i,
                                   .stop = &stop,
                                   .timer = i == OWN_CLIENTS,
                                   .kill = kill};
        args[i] = &jobs[i];
    }
    run_clients(get_own_or_time, args, OWN_CLIENTS + 1, 30000);
    *ok = *bad = *cut = 0;
    for (int i = 0; i < OWN_CLIENTS; i++) {
        ck_assert_msg(jobs[i].failures == 0, "%s", jobs[i].why);
        *ok += jobs[i].ok;
        *bad += jobs[i].bad;
        *cut += jobs[i].cut;
    }
}

START_TEST(an_origin_killed_under_load_answers_each_get_its_own_or_502)
{
    nghttpd_start(0, 100);
    int port = nghttpd_port;
    for (int i = 0; i < OWN_CLIENTS; i++) {
        unsigned char b[OWN_BYTES];
        char name[16];
        own_body(i, b);
        snprintf(name, sizeof name, "c%d", i);
        write_file(nghttpd.dir, name, b, OWN_BYTES);
    }
    /* no breaker and no backoff: a dead origin is a 502, never a 503 (the
     * breaker open, makes held after a failed one) */
    const char *words[] = {"--no-breaker", "--no-backoff", NULL};
    proxy_start_scheme("h2c", port, 2, words);
    int ok, bad, cut;
    own_load(true, &ok, &bad, &cut);
    printf("killed under load: %d own bodies, %d 502s, %d cut after "
           "their head\n",
           ok, bad, cut);
    ck_assert_int_gt(ok, 0);
    /* the streams in flight at the kill, and those after it */
    ck_assert_int_gt(bad, 0);
    ck_assert_uint_eq(pstats().errors_502, (uint64_t)bad);
    tide_test_child_stop(&nghttpd, SIGKILL, 3000);
    nghttpd_start(port, 100);
    uint64_t made = upstream_stats().made;
    own_load(false, &ok, &bad, &cut);
    ck_assert_int_gt(ok, 0);
    ck_assert_int_eq(bad + cut, 0);
    ck_assert_uint_gt(upstream_stats().made, made);
    /* nothing lent is left behind; the fds: teardown */
    ck_assert_int_eq(upstream_stats().lent, 0);
}
END_TEST

/* ---- PING, the health check of an idle connection ---- */

START_TEST(an_idle_connection_whose_origin_stops_answering_fails_its_ping)
{
    nghttpd_start(0, 100);
    const char *words[] = {"--health-interval", "200", "--response-timeout",
                           "1500", NULL};
    proxy_start_scheme("h2c", nghttpd_port, 4, words);
    struct one_job j = {.port = proxy_port(), .method = "POST"};
    run_client(one_request, &j, 10000);
    ck_assert_int_eq(j.status, 200);
    /* idle and checked: the origin answers the PINGs */
    run_ms(700);
    ck_assert_uint_eq(upstream_stats().health_failures, 0);
    ck_assert_int_eq(upstream_stats().idle, 1);
    /* stopped, the origin still holds the connection open (no EOF), but
     * answers no PING: the check finds it dead within its 5 s */
    tide_test_child_signal(&nghttpd, SIGSTOP);
    int64_t t0 = now_ms();
    while (upstream_stats().health_failures == 0 && now_ms() - t0 < 8000)
        run_ms(50);
    int64_t found = now_ms() - t0;
    struct tide_evpool_stats st = upstream_stats();
    /* a request while it is stopped: a fresh connection is tried (the
     * kernel still completes the connect), nothing answers, and a timeout
     * of the proxy's ends it: acquire's (3 s) or response's (1.5 s) */
    struct one_job k = {.port = proxy_port(), .method = "GET"};
    int64_t t1 = now_ms();
    run_client(one_request, &k, 10000);
    int64_t took = now_ms() - t1;
    tide_test_child_signal(&nghttpd, SIGCONT);
    ck_assert_msg(st.health_failures == 1, "no failed check after %lld ms",
                  (long long)found);
    ck_assert_msg(found >= 4500 && found < 7000,
                  "the check failed after %lld ms", (long long)found);
    /* closed, not lent */
    ck_assert_int_eq(st.live, 0);
    ck_assert_uint_eq(st.destroyed, 1);
    ck_assert_int_eq(k.status, 504);
    ck_assert_msg(took < 4500, "the 504 took %lld ms", (long long)took);
    /* continued, the origin serves again */
    run_client(one_request, &j, 10000);
    ck_assert_msg(j.status == 200, "status %d: %s", j.status, j.body);
    ck_assert_uint_eq(upstream_stats().made, 2);
}
END_TEST

START_TEST(an_upstream_that_does_not_choose_h2_is_named_in_the_502)
{
    nginx_start_tls(&ng, 0, NULL); /* TLS without http2: ALPN picks none */
    proxy_start_scheme("h2", ng.port, 4, NULL);
    struct one_job j = {.port = proxy_port(), .method = "GET"};
    run_client(one_request, &j, 10000);
    ck_assert_int_eq(j.status, 502);
    char name[64];
    snprintf(name, sizeof name, "h2://127.0.0.1:%d", ng.port);
    /* nginx refuses the handshake itself (no_application_protocol); a
     * server that completes it choosing none fails with TIDE_EALPN */
    ck_assert_msg(strstr(j.body, name) &&
                      (strstr(j.body, "ALPN") ||
                       strstr(j.body, "no application protocol")),
                  "%s", j.body);
}
END_TEST

static Suite *h2_suite(void)
{
    Suite *s = suite_create("proxy_h2");
    TCase *tc = tcase_create("h2");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc,
                   gets_from_nginx_over_h2c_are_byte_exact_on_one_connection);
    tcase_add_test(
        tc, gets_from_nginx_over_h2_tls_are_byte_exact_on_one_connection);
    tcase_add_test(tc, bodies_go_both_ways_byte_exact_by_length_and_chunked);
    tcase_add_test(tc, two_hundred_clients_share_ten_streams_of_one_connection);
    tcase_add_test(
        tc, a_stalled_stream_does_not_stall_the_others_on_its_connection);
    tcase_add_test(tc, goaway_mid_load_fails_no_idempotent_request);
    tcase_add_test(tc, a_rst_stream_fails_that_request_alone);
    tcase_add_test(tc, an_origin_killed_and_restarted_serves_again);
    tcase_add_test(tc, an_origin_status_below_100_is_a_502);
    tcase_add_test(tc,
                   the_proxys_timeout_resets_that_stream_alone_and_answers_504);
    tcase_add_test(tc, an_upstream_that_does_not_choose_h2_is_named_in_the_502);
    tcase_add_test(
        tc, an_idle_connection_whose_origin_stops_answering_fails_its_ping);
    tcase_add_test(tc,
                   an_origin_killed_under_load_answers_each_get_its_own_or_502);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!nginx_found() || access("/usr/sbin/nghttpd", X_OK) != 0) {
        printf("SKIP: no nginx or nghttpd (apt-get install nginx-light "
               "nghttp2-server)\n");
        return 77;
    }
    return tide_test_run(h2_suite());
}
