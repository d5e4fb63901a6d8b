/* tests for demos/proxy: the reverse proxy on a group, against a real
 * nginx each test starts (and an in-process origin for echoing bodies,
 * odd statuses and Connection: close). Without nginx the binary exits 77.
 * Each test ends with the group closed, the loop run dry and no file
 * descriptor left open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tidepool/tls.h>

#include "harness.h"
#include "loop.h"

static struct nginx ng[2];

static void setup(void)
{
    memset(ng, 0, sizeof ng);
    harness_setup();
}

static void teardown(void)
{
    harness_teardown();
    for (int i = 0; i < 2; i++)
        nginx_cleanup(&ng[i]);
}

static struct px_stats pstats(void)
{
    struct px_stats s;
    px_stats(proxy, &s);
    return s;
}

/* ---- bodies both ways ---- */

struct static_job {
    int port;
    int failures;
    char why[256];
};

#define FAIL(j, ...)                                                           \
    do {                                                                       \
        if (!(j)->failures++)                                                  \
            snprintf((j)->why, sizeof(j)->why, __VA_ARGS__);                   \
    } while (0)

static void get_files(void *arg)
{
    struct static_job *j = arg;
    int fd = client_connect(j->port);
    const char *paths[3] = {"/f0", "/f1k", "/f1m"};
    const size_t sizes[3] = {0, 1024, 1024 * 1024};
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            struct response r;
            if (!client_request(fd, "GET", paths[i], NULL, 0, false, &r))
                FAIL(j, "GET %s: no response", paths[i]);
            else if (r.status != 200 || r.body_len != sizes[i] ||
                     (sizes[i] &&
                      memcmp(r.body, file_bytes(sizes[i]), sizes[i]) != 0))
                FAIL(j, "GET %s: status %d, %zu bytes", paths[i], r.status,
                     r.body_len);
            response_dispose(&r);
            if (!client_request(fd, "HEAD", paths[i], NULL, 0, false, &r))
                FAIL(j, "HEAD %s: no response", paths[i]);
            else if (r.status != 200 || r.body_len != 0 ||
                     r.content_length != (long)sizes[i])
                FAIL(j, "HEAD %s: status %d, length %ld", paths[i], r.status,
                     r.content_length);
            response_dispose(&r);
        }
    }
    close(fd);
}

START_TEST(get_and_head_from_nginx_are_byte_exact)
{
    nginx_start(&ng[0], 0, NULL);
    proxy_start(&ng[0].port, 1, 4);
    long before = nginx_accepts(&ng[0]);
    struct static_job j = {.port = proxy_port()};
    run_client(get_files, &j, 20000);
    ck_assert_msg(j.failures == 0, "%s", j.why);
    /* twelve exchanges in a row on one kept upstream connection (and the
     * status page's own) */
    ck_assert_int_eq(nginx_accepts(&ng[0]) - before, 2);
    ck_assert_uint_eq(pstats().responses, 12);
}
END_TEST

struct echo_job {
    int port;
    bool chunked_request;
    const char *query; /* "" or "?chunked" */
    int failures;
    char why[256];
};

static void echo_bodies(void *arg)
{
    struct echo_job *j = arg;
    int fd = client_connect(j->port);
    const char *methods[2] = {"POST", "PUT"};
    const size_t sizes[3] = {0, 1024, 1024 * 1024};
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < 3; i++) {
            char path[64];
            snprintf(path, sizeof path, "/echo%s", j->query);
            struct response r;
            const unsigned char *body = file_bytes(sizes[i]);
            if (!client_request(fd, methods[m], path, body, sizes[i],
                                j->chunked_request, &r))
                FAIL(j, "%s %zu: no response", methods[m], sizes[i]);
            else if (r.status != 200 || r.body_len != sizes[i] ||
                     (sizes[i] && memcmp(r.body, body, sizes[i]) != 0) ||
                     strcmp(r.x_method, methods[m]) != 0)
                FAIL(j, "%s %zu: status %d, %zu bytes back, method %s",
                     methods[m], sizes[i], r.status, r.body_len, r.x_method);
            else if (strcmp(j->query, "?chunked") == 0 &&
                     (!r.chunked && sizes[i] > 0))
                FAIL(j, "%s %zu: a chunked answer came unchunked", methods[m],
                     sizes[i]);
            else if (strcmp(r.x_xff, "127.0.0.1") != 0 ||
                     strcmp(r.x_hop, "0") != 0)
                FAIL(j, "%s: X-Forwarded-For '%s', hop-by-hop seen %s",
                     methods[m], r.x_xff, r.x_hop);
            response_dispose(&r);
        }
    }
    close(fd);
}

START_TEST(post_and_put_bodies_go_both_ways_byte_exact)
{
    int port = origin_start();
    proxy_start(&port, 1, 4);
    struct echo_job plain = {.port = proxy_port(), .query = ""};
    run_client(echo_bodies, &plain, 20000);
    ck_assert_msg(plain.failures == 0, "%s", plain.why);
    struct echo_job chunked_req = {
        .port = proxy_port(), .query = "", .chunked_request = true};
    run_client(echo_bodies, &chunked_req, 20000);
    ck_assert_msg(chunked_req.failures == 0, "%s", chunked_req.why);
    struct echo_job chunked_resp = {.port = proxy_port(), .query = "?chunked"};
    run_client(echo_bodies, &chunked_resp, 20000);
    ck_assert_msg(chunked_resp.failures == 0, "%s", chunked_resp.why);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_uint_eq(s.pools.made, 1); /* one connection did it all */
}
END_TEST

struct raw_job {
    int port;
    const char *req;
    bool head;
    struct response r;
    bool ok;
};

static void raw_exchange(void *arg)
{
    struct raw_job *j = arg;
    int fd = client_connect(j->port);
    j->ok = client_exchange(fd, j->req, strlen(j->req), j->head, &j->r);
    close(fd);
}

START_TEST(hop_by_hop_headers_are_removed_and_xff_appended)
{
    int port = origin_start();
    proxy_start(&port, 1, 2);
    struct raw_job j = {
        .port = proxy_port(),
        .req = "GET /echo HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, X-Hop"
               "\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\n"
               "X-Forwarded-For: 10.0.0.1\r\n\r\n"};
    run_client(raw_exchange, &j, 5000);
    ck_assert(j.ok);
    ck_assert_int_eq(j.r.status, 200);
    ck_assert_str_eq(j.r.x_hop, "0");
    ck_assert_str_eq(j.r.x_xff, "10.0.0.1, 127.0.0.1");
    /* and the origin's Keep-Alive header does not reach the client */
    response_dispose(&j.r);
}
END_TEST

/* ---- statuses without a body ---- */

struct status_job {
    int port;
    int failures;
    char why[256];
};

static void no_body_statuses(void *arg)
{
    struct status_job *j = arg;
    int fd = client_connect(j->port);
    const int statuses[3] = {204, 304, 200};
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++) {
            char path[64];
            snprintf(path, sizeof path, "/echo?status=%d", statuses[i]);
            struct response r;
            /* a body in the request: a 204 must not echo it */
            if (!client_request(fd, "POST", path, "abc", 3, false, &r))
                FAIL(j, "%d: no response", statuses[i]);
            else if (r.status != statuses[i] ||
                     r.body_len != (statuses[i] == 200 ? 3u : 0u))
                FAIL(j, "%d: got %d with %zu bytes", statuses[i], r.status,
                     r.body_len);
            response_dispose(&r);
        }
    }
    close(fd);
}

START_TEST(responses_204_and_304_have_no_body_and_keep_the_connection)
{
    int port = origin_start();
    proxy_start(&port, 1, 2);
    struct status_job j = {.port = proxy_port()};
    run_client(no_body_statuses, &j, 10000);
    ck_assert_msg(j.failures == 0, "%s", j.why);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_uint_eq(s.pools.made, 1);
}
END_TEST

/* ---- Connection: close from the origin ---- */

static void close_then_more(void *arg)
{
    struct status_job *j = arg;
    int fd = client_connect(j->port);
    for (int i = 0; i < 6; i++) {
        struct response r;
        const char *path = i % 2 ? "/echo" : "/echo?close";
        if (!client_request(fd, "GET", path, NULL, 0, false, &r) ||
            r.status != 200)
            FAIL(j, "request %d: status %d", i, r.status);
        else if (!r.keep_alive)
            FAIL(j, "request %d: the client connection was closed", i);
        response_dispose(&r);
    }
    close(fd);
}

START_TEST(origin_connection_close_retires_after_the_response)
{
    int port = origin_start();
    proxy_start(&port, 1, 2);
    struct status_job j = {.port = proxy_port()};
    run_client(close_then_more, &j, 10000);
    ck_assert_msg(j.failures == 0, "%s", j.why);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    /* each close answer ended its connection: 3 closes, so 3 or 4 made */
    ck_assert_uint_ge(s.pools.made, 3);
    ck_assert_uint_eq(pstats().retired, 3);
    ck_assert_uint_eq(pstats().discarded, 0);
    ck_assert_uint_eq(pstats().errors_502, 0);
}
END_TEST

struct closing_job {
    int port;
    int n;
    int ok;
    int status_503;
    int other;
};

static void close_answers_in_a_row(void *arg)
{
    struct closing_job *j = arg;
    int fd = client_connect(j->port);
    for (int i = 0; i < j->n; i++) {
        struct response r;
        if (fd < 0 ||
            !client_request(fd, "GET", "/echo?close", NULL, 0, false, &r)) {
            j->other++;
            if (fd >= 0)
                close(fd);
            fd = client_connect(j->port);
            continue;
        }
        if (r.status == 200)
            j->ok++;
        else if (r.status == 503)
            j->status_503++;
        else
            j->other++;
        response_dispose(&r);
    }
    if (fd >= 0)
        close(fd);
}

/* An upstream that closes after every response served every one of them:
 * with the default ward its breaker must not open, nor its makes count as
 * failed (a failed make within a second, if it were blamed). */
START_TEST(a_healthy_origin_answering_connection_close_is_never_blamed)
{
    int port = origin_start();
    proxy_start(&port, 1, 2);
    struct closing_job j = {.port = proxy_port(), .n = 50};
    run_client(close_answers_in_a_row, &j, 20000);
    ck_assert_int_eq(j.status_503, 0);
    ck_assert_int_eq(j.other, 0);
    ck_assert_int_eq(j.ok, 50);
    struct tide_group_upstream *u;
    ck_assert_uint_eq(tide_group_upstreams(group, &u, 1), 1);
    struct tide_evpool_stats st;
    tide_group_upstream_stats(u, &st, NULL);
    ck_assert_uint_eq(st.make_failures, 0);
    ck_assert_int_eq(st.breaker, TIDE_BREAKER_ACTIVE);
    ck_assert_uint_eq(st.retired, 50);
    ck_assert_uint_eq(pstats().retired, 50);
    ck_assert_uint_eq(pstats().discarded, 0);
}
END_TEST

/* ---- an origin closing idle connections ---- */

struct idle_job {
    int port;
    int n;
    int non_200;
};

static void requests_with_pauses(void *arg)
{
    struct idle_job *j = arg;
    int fd = client_connect(j->port);
    for (int i = 0; i < j->n; i++) {
        struct response r;
        if (!client_request(fd, "GET", "/f1k", NULL, 0, false, &r) ||
            r.status != 200)
            j->non_200++;
        response_dispose(&r);
        /* around nginx's 1 s keepalive_timeout, so some closes race the
         * next request */
        usleep(i % 2 ? 1000000 : 990000);
    }
    close(fd);
}

START_TEST(an_origin_closing_idle_connections_causes_no_502)
{
    nginx_start(&ng[0], 0, "keepalive_timeout 1s;");
    proxy_start(&ng[0].port, 1, 2);
    struct idle_job j = {.port = proxy_port(), .n = 4};
    run_client(requests_with_pauses, &j, 20000);
    ck_assert_int_eq(j.non_200, 0);
    ck_assert_uint_eq(pstats().errors_502, 0);
}
END_TEST

/* ---- a kept connection closed just as a request is written ---- */

struct race_job {
    int port;
    int get_status;
    int post_status;
};

static void stale_then_retry(void *arg)
{
    struct race_job *j = arg;
    int fd = client_connect(j->port);
    struct response r;
    client_request(fd, "GET", "/echo?dropnext", NULL, 0, false, &r);
    response_dispose(&r);
    /* the kept connection will be closed by this request's arrival */
    client_request(fd, "GET", "/echo", NULL, 0, false, &r);
    j->get_status = r.status;
    response_dispose(&r);
    client_request(fd, "GET", "/echo?dropnext", NULL, 0, false, &r);
    response_dispose(&r);
    close(fd);
    fd = client_connect(j->port);
    client_request(fd, "POST", "/echo", "x", 1, false, &r);
    j->post_status = r.status;
    response_dispose(&r);
    close(fd);
}

START_TEST(a_stale_connection_is_retried_for_get_and_never_for_post)
{
    int port = origin_start();
    proxy_start(&port, 1, 1);
    struct race_job j = {.port = proxy_port()};
    run_client(stale_then_retry, &j, 10000);
    ck_assert_int_eq(j.get_status, 200);
    ck_assert_int_eq(j.post_status, 502);
    ck_assert_uint_eq(pstats().retries, 1);
    /* both connections had served: stale, not the upstream's failures */
    ck_assert_uint_eq(pstats().stale, 2);
    ck_assert_uint_eq(pstats().discarded, 0);
}
END_TEST

/* ---- down, open, back ---- */

struct seq_job {
    int port;
    int n;
    int statuses[64];
    char retry_after[64][32];
    char first_body[256];
};

static void sequential_gets(void *arg)
{
    struct seq_job *j = arg;
    for (int i = 0; i < j->n; i++) {
        int fd = client_connect(j->port);
        struct response r;
        client_request(fd, "GET", "/f0", NULL, 0, false, &r);
        j->statuses[i] = r.status;
        snprintf(j->retry_after[i], sizeof j->retry_after[i], "%s",
                 r.retry_after);
        if (i == 0 && r.body)
            snprintf(j->first_body, sizeof j->first_body, "%.*s",
                     (int)r.body_len, (char *)r.body);
        response_dispose(&r);
        close(fd);
    }
}

/* A port with nothing on it (connects are refused), kept for nginx later. */
static int dead_port(void)
{
    struct nginx probe = {0};
    nginx_start(&probe, 0, NULL);
    int port = probe.port;
    nginx_cleanup(&probe);
    return port;
}

static struct tide_evpool_stats upstream_stats(int i)
{
    struct tide_group_upstream *u[4];
    ck_assert_int_gt(tide_group_upstreams(group, u, 4), i);
    struct tide_evpool_stats st;
    tide_group_upstream_stats(u[i], &st, NULL);
    return st;
}

/* --preconnect and --demand reach the upstream's pool: one request at a
 * time with --preconnect 50 has the pool open connections ahead of the
 * next (one loan is half of two live: due until three are live), and with
 * --demand 400 the idle ones beyond a quiet window's peak are closed a
 * share at a time once the load stops, well before --keep (60 s). */
START_TEST(the_demand_and_preconnect_options_reach_the_pool)
{
    int port = origin_start();
    const char *extra[] = {"--preconnect", "50", "--demand", "400", NULL};
    proxy_start_with(&port, 1, 8, extra);
    struct seq_job j = {.port = proxy_port(), .n = 6};
    run_client(sequential_gets, &j, 20000);
    for (int i = 0; i < j.n; i++)
        ck_assert_int_eq(j.statuses[i], 200);
    struct tide_evpool_stats st = upstream_stats(0);
    ck_assert_uint_ge(st.preconnects, 1);
    ck_assert_int_eq(st.live, 3);
    ck_assert_uint_eq(st.demand_retired, 0);
    run_ms(1500);
    st = upstream_stats(0);
    ck_assert_uint_ge(st.demand_retired, 1);
    ck_assert_int_lt(st.live, 3);
}
END_TEST

/* Without them the pool opens one only for a caller and keeps it. */
START_TEST(without_the_demand_options_the_pool_opens_none_ahead)
{
    int port = origin_start();
    proxy_start(&port, 1, 8);
    struct seq_job j = {.port = proxy_port(), .n = 6};
    run_client(sequential_gets, &j, 20000);
    run_ms(1500);
    struct tide_evpool_stats st = upstream_stats(0);
    ck_assert_uint_eq(st.preconnects, 0);
    ck_assert_uint_eq(st.demand_retired, 0);
    ck_assert_int_eq(st.live, 1);
}
END_TEST

struct hammer_job {
    int port;
    int n;
    int status_503;
    int other;
    bool retry_after_ok;
    int64_t slowest_ms;
};

/* Fresh connections as fast as they are answered. */
static void hammer(void *arg)
{
    struct hammer_job *j = arg;
    j->retry_after_ok = true;
    for (int i = 0; i < j->n; i++) {
        int fd = client_connect(j->port);
        struct response r;
        int64_t t0 = now_ms();
        client_request(fd, "GET", "/f0", NULL, 0, false, &r);
        int64_t ms = now_ms() - t0;
        if (ms > j->slowest_ms)
            j->slowest_ms = ms;
        if (r.status == 503) {
            j->status_503++;
            long ra = atol(r.retry_after);
            if (ra < 1 || ra > 5)
                j->retry_after_ok = false;
        } else {
            j->other++;
        }
        response_dispose(&r);
        close(fd);
    }
}

/* The proxy's own answer to a HEAD (here a 502) ends at its head, as any
 * answer to HEAD does (RFC 9110 9.3.2): its body went out after the head,
 * and a client on a kept connection took it for the start of the next
 * response. */
START_TEST(the_proxys_own_answer_to_head_has_no_body)
{
    int port = dead_port();
    proxy_start(&port, 1, 2);
    struct raw r;
    talk(&r, proxy_port(),
         "HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n"
         "GET /g HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 502 ", 13) == 0, "%s", r.got);
    /* the HEAD's answer, then at once the GET's, whose body is the only */
    const char *second = strstr(r.got, "\r\n\r\nHTTP/1.1 502 ");
    ck_assert_msg(second != NULL, "%s", r.got);
    ck_assert_msg(strstr(r.got, "cannot connect") > second, "%s", r.got);
    ck_assert(r.closed);
}
END_TEST

/* The proxy as it ships (the default ward): a dead origin answers 502
 * until five strikes open its breaker, then 503 at once with Retry-After
 * (the cooldown's rest, 5 s at most), with a handful of connects however
 * hard it is asked, and is served again once it is back. */
START_TEST(an_origin_down_answers_502_then_503_then_serves_when_back)
{
    int port = dead_port();
    proxy_start(&port, 1, 2);
    struct seq_job j = {.port = proxy_port(), .n = 8};
    int64_t t0 = now_ms();
    run_client(sequential_gets, &j, 20000);
    int64_t strikes_ms = now_ms() - t0;
    ck_assert_int_eq(j.statuses[0], 502);
    ck_assert_msg(strstr(j.first_body, "refused") != NULL, "body: %s",
                  j.first_body);
    /* five strikes open the breaker: refused at once after that */
    int first_503 = -1;
    for (int i = 0; i < j.n; i++)
        if (j.statuses[i] == 503 && first_503 < 0)
            first_503 = i;
    ck_assert_int_eq(first_503, 5);
    /* the backoff spaced the failed connects out: 100, 200, 400 and 800 ms
     * before the second to the fifth, each less a fifth at the least */
    ck_assert_msg(strikes_ms >= 1200, "five strikes in %lld ms",
                  (long long)strikes_ms);
    for (int i = 5; i < j.n; i++) {
        ck_assert_int_eq(j.statuses[i], 503);
        long ra = atol(j.retry_after[i]);
        ck_assert_msg(ra >= 1 && ra <= 5, "Retry-After: %s", j.retry_after[i]);
    }
    /* asked hard while it is down: answered at once, hardly any connect */
    struct hammer_job h[4];
    void *args[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (struct hammer_job){.port = proxy_port(), .n = 200};
        args[i] = &h[i];
    }
    run_clients(hammer, args, 4, 20000);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(h[i].status_503, 200);
        ck_assert(h[i].retry_after_ok);
        ck_assert_int_lt(h[i].slowest_ms, 500);
    }
    /* 808 requests: the five strikes, and a probe at most */
    struct tide_evpool_stats st = upstream_stats(0);
    ck_assert_msg(st.make_failures <= 6, "%llu connects failed",
                  (unsigned long long)st.make_failures);
    nginx_start(&ng[0], port, NULL);
    /* served again once the cooldown lets a probe through */
    int64_t back = -1;
    t0 = now_ms();
    while (back < 0 && now_ms() - t0 < 9000) {
        struct seq_job k = {.port = proxy_port(), .n = 1};
        run_client(sequential_gets, &k, 5000);
        if (k.statuses[0] == 200)
            back = now_ms() - t0;
        else
            run_ms(100);
    }
    ck_assert_msg(back >= 0, "not served within 9 s of the origin's return");
    struct seq_job k = {.port = proxy_port(), .n = 3};
    run_client(sequential_gets, &k, 10000);
    for (int i = 0; i < k.n; i++)
        ck_assert_int_eq(k.statuses[i], 200);
    ck_assert_int_eq(upstream_stats(0).breaker, TIDE_BREAKER_ACTIVE);
}
END_TEST

/* ---- two upstreams, one killed under load ---- */

struct load_job {
    int port;
    int n;
    const char *path;
    size_t size;
    int bad;
    int done;
    char why[128];
};

static void load(void *arg)
{
    struct load_job *j = arg;
    int fd = client_connect(j->port);
    for (int i = 0; i < j->n; i++) {
        struct response r;
        if (fd < 0 || !client_request(fd, "GET", j->path, NULL, 0, false, &r)) {
            j->bad++;
            if (fd >= 0)
                close(fd);
            fd = client_connect(j->port);
            continue;
        }
        if (r.status != 200 || r.body_len != j->size ||
            (j->size && memcmp(r.body, file_bytes(j->size), j->size) != 0)) {
            if (!j->bad)
                snprintf(j->why, sizeof j->why, "status %d, %zu bytes",
                         r.status, r.body_len);
            j->bad++;
        }
        j->done++;
        response_dispose(&r);
    }
    if (fd >= 0)
        close(fd);
}

START_TEST(one_of_two_upstreams_killed_mid_load_moves_traffic_to_the_other)
{
    nginx_start(&ng[0], 0, NULL);
    nginx_start(&ng[1], 0, NULL);
    int ports[2] = {ng[0].port, ng[1].port};
    proxy_start(ports, 2, 4);
    long before1 = nginx_accepts(&ng[1]);
    struct load_job jobs[4];
    void *args[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (struct load_job){
            .port = proxy_port(), .n = 400, .path = "/f1k", .size = 1024};
        args[i] = &jobs[i];
    }
    struct load_job first[4];
    void *fargs[4];
    for (int i = 0; i < 4; i++) {
        first[i] = (struct load_job){
            .port = proxy_port(), .n = 100, .path = "/f1k", .size = 1024};
        fargs[i] = &first[i];
    }
    run_clients(load, fargs, 4, 20000);
    nginx_stop(&ng[0]);
    int gone = client_connect(ng[0].port); /* the fault is real: it is down */
    if (gone >= 0)
        close(gone);
    ck_assert_msg(gone < 0, "upstream 0 still takes connections");
    run_clients(load, args, 4, 30000);
    int bad = 0;
    for (int i = 0; i < 4; i++)
        bad += first[i].bad + jobs[i].bad;
    ck_assert_msg(bad == 0, "%d bad answers (%s)", bad, jobs[0].why);
    /* after the kill the other one carried everything */
    ck_assert_int_gt(nginx_accepts(&ng[1]) - before1, 0);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_uint_eq(s.served, 2000);
}
END_TEST

/* With the default ward, a dead upstream beside a live one: its breaker
 * opens after five strikes and it stops taking first tries, so requests
 * do not keep failing over through it. */
START_TEST(a_dead_one_of_two_upstreams_stops_taking_first_tries)
{
    nginx_start(&ng[0], 0, NULL);
    int ports[2] = {ng[0].port, dead_port()};
    proxy_start(ports, 2, 4);
    struct load_job jobs[4];
    void *args[4];
    int rounds = 0, bad = 0;
    int64_t t0 = now_ms();
    /* until its breaker opens: five failed connects, the backoff's 1.5 s */
    while (upstream_stats(1).breaker == TIDE_BREAKER_ACTIVE &&
           now_ms() - t0 < 10000) {
        for (int i = 0; i < 4; i++) {
            jobs[i] = (struct load_job){
                .port = proxy_port(), .n = 50, .path = "/f1k", .size = 1024};
            args[i] = &jobs[i];
        }
        run_clients(load, args, 4, 30000);
        for (int i = 0; i < 4; i++)
            bad += jobs[i].bad;
        rounds++;
    }
    ck_assert_msg(bad == 0, "%d bad answers (%s)", bad, jobs[0].why);
    struct tide_evpool_stats dead = upstream_stats(1);
    ck_assert_int_ne(dead.breaker, TIDE_BREAKER_ACTIVE);
    /* five strikes, but the first connects of the four clients at once
     * fail together, before any backoff: nine at the most */
    ck_assert_msg(dead.make_failures <= 9, "%llu connects failed",
                  (unsigned long long)dead.make_failures);
    struct tide_group_stats before;
    tide_group_stats(group, &before);
    ck_assert_uint_eq(before.served, (uint64_t)rounds * 200);
    /* open: no request tries it first (its probe is 5 s away) */
    for (int i = 0; i < 4; i++) {
        jobs[i] = (struct load_job){
            .port = proxy_port(), .n = 250, .path = "/f1k", .size = 1024};
        args[i] = &jobs[i];
    }
    run_clients(load, args, 4, 30000);
    for (int i = 0; i < 4; i++)
        bad += jobs[i].bad;
    ck_assert_msg(bad == 0, "%d bad answers (%s)", bad, jobs[0].why);
    struct tide_group_stats after;
    tide_group_stats(group, &after);
    ck_assert_uint_eq(after.served - before.served, 1000);
    ck_assert_msg(after.failovers == before.failovers,
                  "%llu failovers in 1000 requests with its breaker open",
                  (unsigned long long)(after.failovers - before.failovers));
    ck_assert_uint_eq(upstream_stats(1).make_failures, dead.make_failures);
}
END_TEST

/* ---- a client gone mid-response ---- */

struct abort_job {
    int port;
    bool after_ok;
};

static void read_a_little_then_go(void *arg)
{
    struct abort_job *j = arg;
    int fd = client_connect(j->port);
    const char *req = "GET /echo?stall HTTP/1.1\r\nHost: t\r\n\r\n";
    (void)!write(fd, req, strlen(req));
    char buf[512];
    (void)!read(fd, buf, sizeof buf); /* the head and a little body */
    close(fd);                        /* the rest never comes */
    usleep(100000);
    fd = client_connect(j->port);
    struct response r;
    j->after_ok =
        client_request(fd, "PUT", "/echo", file_bytes(1024), 1024, false, &r) &&
        r.status == 200 && r.body_len == 1024 &&
        memcmp(r.body, file_bytes(1024), 1024) == 0;
    response_dispose(&r);
    close(fd);
}

START_TEST(a_client_gone_mid_response_abandons_the_upstream_connection)
{
    int port = origin_start();
    proxy_start(&port, 1, 1);
    struct abort_job j = {.port = proxy_port()};
    run_client(read_a_little_then_go, &j, 10000);
    ck_assert(j.after_ok);
    ck_assert_uint_eq(pstats().aborted, 1);
    ck_assert_uint_eq(pstats().abandoned, 1);
    ck_assert_uint_eq(pstats().discarded, 0);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_uint_eq(s.pools.made, 2); /* never reused half-read */
    ck_assert_int_eq(s.lent, 0);
}
END_TEST

struct leaver_job {
    int port;
    int n;
    int short_reads;
};

/* Each asks for a 1 MiB body (the origin promises it and sends 1 KiB),
 * reads 1 KiB of it and hangs up. */
static void read_a_kilobyte_and_hang_up(void *arg)
{
    struct leaver_job *j = arg;
    const char *req = "GET /echo?stall HTTP/1.1\r\nHost: t\r\n\r\n";
    for (int i = 0; i < j->n; i++) {
        int fd = client_connect(j->port);
        if (fd < 0 || write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
            j->short_reads++;
            if (fd >= 0)
                close(fd);
            continue;
        }
        char buf[4096];
        size_t got = 0;
        while (got < 1024) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got < 1024)
            j->short_reads++;
        close(fd);
    }
}

/* Clients that go away mid-body are nothing the upstream did: with the
 * default ward its breaker stays closed and no make counts as failed, and
 * the next requests are served. */
START_TEST(clients_gone_mid_body_leave_the_breaker_closed)
{
    int port = origin_start();
    proxy_start(&port, 1, 4);
    struct leaver_job j = {.port = proxy_port(), .n = 20};
    run_client(read_a_kilobyte_and_hang_up, &j, 20000);
    ck_assert_int_eq(j.short_reads, 0);
    run_ms(50); /* the last hang-up reaches the proxy */
    struct abort_job after = {.port = proxy_port()};
    run_client(read_a_little_then_go, &after, 10000);
    ck_assert(after.after_ok);
    struct tide_evpool_stats st = upstream_stats(0);
    ck_assert_int_eq(st.breaker, TIDE_BREAKER_ACTIVE);
    ck_assert_uint_eq(st.make_failures, 0);
    ck_assert_uint_eq(pstats().abandoned, 21);
    ck_assert_uint_eq(pstats().discarded, 0);
    ck_assert_uint_eq(pstats().errors_503, 0);
}
END_TEST

struct trickle_job {
    int port;
    bool after_ok;
};

static void leave_a_small_response(void *arg)
{
    struct trickle_job *j = arg;
    int fd = client_connect(j->port);
    const char *req = "GET /echo?trickle HTTP/1.1\r\nHost: t\r\n\r\n";
    (void)!write(fd, req, strlen(req));
    char buf[256];
    (void)!read(fd, buf, sizeof buf);
    close(fd); /* 1 KiB of the body is still to come */
    usleep(400000);
    fd = client_connect(j->port);
    struct response r;
    j->after_ok = client_request(fd, "GET", "/echo", NULL, 0, false, &r) &&
                  r.status == 200;
    response_dispose(&r);
    close(fd);
}

START_TEST(a_client_gone_before_a_small_rest_keeps_the_connection_whole)
{
    int port = origin_start();
    proxy_start(&port, 1, 1);
    struct trickle_job j = {.port = proxy_port()};
    run_client(leave_a_small_response, &j, 10000);
    ck_assert(j.after_ok);
    ck_assert_uint_eq(pstats().aborted, 1);
    ck_assert_uint_eq(pstats().orphans, 1);
    ck_assert_uint_eq(pstats().discarded, 0);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_uint_eq(s.pools.made, 1); /* read to its end, then reused */
}
END_TEST

/* ---- a slow client, a silent upstream ---- */

struct slow_job {
    int port;
    bool first_ok;
    bool second_ok;
};

static void read_late(void *arg)
{
    struct slow_job *j = arg;
    int fd = client_connect(j->port);
    /* nothing read for a while: 8 MiB is more than the sockets between
     * the proxy and the client hold (a receive buffer that is not read
     * does not grow), so the proxy holds the rest until it stops reading
     * from the upstream */
    const char *req = "GET /echo?big HTTP/1.1\r\nHost: t\r\n\r\n";
    (void)!write(fd, req, strlen(req));
    usleep(500000);
    struct response r;
    j->first_ok = client_exchange(fd, "", 0, false, &r) && r.status == 200 &&
                  r.body_len == 8 << 20;
    for (size_t off = 0; j->first_ok && off < r.body_len; off += 1 << 20)
        j->first_ok = memcmp(r.body + off, file_bytes(1 << 20), 1 << 20) == 0;
    response_dispose(&r);
    j->second_ok =
        client_request(fd, "PUT", "/echo", file_bytes(1024), 1024, false, &r) &&
        r.status == 200 && r.body_len == 1024 &&
        memcmp(r.body, file_bytes(1024), 1024) == 0;
    response_dispose(&r);
    close(fd);
}

START_TEST(a_slow_client_pauses_the_upstream_and_gets_every_byte)
{
    int port = origin_start();
    proxy_start(&port, 1, 1);
    struct slow_job j = {.port = proxy_port()};
    run_client(read_late, &j, 20000);
    ck_assert(j.first_ok);
    ck_assert(j.second_ok);
    ck_assert_uint_gt(pstats().paused, 0);
    ck_assert_uint_eq(pstats().discarded, 0);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_uint_eq(s.pools.made, 1); /* paused, resumed, reused */
}
END_TEST

struct silent_job {
    int port;
    int status;
    bool after_ok;
    int64_t ms;
};

static void ask_a_silent_origin(void *arg)
{
    struct silent_job *j = arg;
    int fd = client_connect(j->port);
    struct response r;
    int64_t t0 = tide_test_now_ms();
    if (client_request(fd, "GET", "/echo?silent", NULL, 0, false, &r))
        j->status = r.status;
    j->ms = tide_test_now_ms() - t0;
    response_dispose(&r);
    /* the client connection stays usable */
    j->after_ok = client_request(fd, "GET", "/echo", NULL, 0, false, &r) &&
                  r.status == 200;
    response_dispose(&r);
    close(fd);
}

START_TEST(an_upstream_silent_past_the_response_timeout_answers_504)
{
    int port = origin_start();
    proxy_response_timeout = TIDE_MS(300);
    proxy_start(&port, 1, 1);
    struct silent_job j = {.port = proxy_port()};
    run_client(ask_a_silent_origin, &j, 10000);
    ck_assert_int_eq(j.status, 504);
    ck_assert_int_ge(j.ms, 250);
    ck_assert_int_lt(j.ms, 3000);
    ck_assert(j.after_ok);
    ck_assert_uint_eq(pstats().errors_504, 1);
    ck_assert_uint_eq(pstats().discarded, 1); /* the answer may still come */
}
END_TEST

/* ---- 10,000 requests ---- */

START_TEST(ten_thousand_requests_through_two_pools_of_four)
{
    nginx_start(&ng[0], 0, NULL);
    nginx_start(&ng[1], 0, NULL);
    int ports[2] = {ng[0].port, ng[1].port};
    proxy_start(ports, 2, 4);
    long before = nginx_accepts(&ng[0]) + nginx_accepts(&ng[1]);
    enum { CLIENTS = 10 };
    struct load_job jobs[CLIENTS];
    void *args[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        jobs[i] = (struct load_job){.port = proxy_port(),
                                    .n = 1000,
                                    .path = i % 2 ? "/f1k" : "/f0",
                                    .size = i % 2 ? 1024 : 0};
        args[i] = &jobs[i];
    }
    run_clients(load, args, CLIENTS, 120000);
    int done = 0, bad = 0;
    for (int i = 0; i < CLIENTS; i++) {
        done += jobs[i].done;
        bad += jobs[i].bad;
    }
    ck_assert_int_eq(done, 10000);
    ck_assert_int_eq(bad, 0);
    /* the two status requests after are connections of their own */
    long opened = nginx_accepts(&ng[0]) + nginx_accepts(&ng[1]) - before - 2;
    ck_assert_msg(opened <= 8, "%ld upstream connections opened", opened);
    struct tide_group_stats s;
    tide_group_stats(group, &s);
    ck_assert_int_le((long)s.pools.made, 8);
}
END_TEST

/* ---- the stats page ---- */

START_TEST(the_stats_page_lists_every_upstream)
{
    nginx_start(&ng[0], 0, NULL);
    int port = origin_start();
    int ports[2] = {ng[0].port, port};
    proxy_start(ports, 2, 2);
    struct raw_job j = {.port = proxy_port(),
                        .req = "GET /_tidepool/stats HTTP/1.1\r\nHost: t\r\n"
                               "\r\n"};
    run_client(raw_exchange, &j, 5000);
    ck_assert(j.ok);
    ck_assert_int_eq(j.r.status, 200);
    j.r.body[j.r.body_len] = '\0';
    char name[64];
    snprintf(name, sizeof name, "\"name\":\"127.0.0.1:%d\"", ng[0].port);
    ck_assert_msg(strstr((char *)j.r.body, name), "%s", j.r.body);
    snprintf(name, sizeof name, "\"name\":\"127.0.0.1:%d\"", port);
    ck_assert_msg(strstr((char *)j.r.body, name), "%s", j.r.body);
    response_dispose(&j.r);
    struct raw_job p = {.port = proxy_port(),
                        .req = "GET /_tidepool/stats?format=prometheus "
                               "HTTP/1.1\r\nHost: t\r\n\r\n"};
    run_client(raw_exchange, &p, 5000);
    ck_assert(p.ok);
    p.r.body[p.r.body_len] = '\0';
    snprintf(name, sizeof name, "tidepool_made{upstream=\"127.0.0.1:%d\"}",
             port);
    ck_assert_msg(strstr((char *)p.r.body, name), "%s", p.r.body);
    response_dispose(&p.r);
}
END_TEST

/* One raw request through the proxy; its response in j->r (the caller
 * disposes of it). */
static void ask(struct raw_job *j, const char *req, bool head)
{
    response_dispose(&j->r);
    j->req = req;
    j->head = head;
    j->ok = false;
    run_client(raw_exchange, j, 5000);
    ck_assert_msg(j->ok, "no whole response to: %s", req);
    if (j->r.body)
        j->r.body[j->r.body_len] = '\0';
}

static const char *body_of(const struct raw_job *j)
{
    return j->r.body ? (const char *)j->r.body : "";
}

/* Only /_tidepool/stats (a query allowed) is the page, for GET and HEAD;
 * a path that only starts the same goes upstream, another method is 405;
 * the proxy's own counters are on it in both formats. */
START_TEST(the_stats_page_is_its_exact_path_for_get_and_head)
{
    int port = origin_start();
    proxy_start(&port, 1, 2);
    struct raw_job j = {.port = proxy_port()};
    ask(&j, "GET /_tidepool/statsx HTTP/1.1\r\nHost: t\r\n\r\n", false);
    ck_assert_int_eq(j.r.status, 200);
    ck_assert_str_eq(j.r.x_method, "GET"); /* the origin answered */
    ask(&j, "GET /_tidepool/stats/x HTTP/1.1\r\nHost: t\r\n\r\n", false);
    ck_assert_str_eq(j.r.x_method, "GET");
    ask(&j,
        "POST /_tidepool/stats HTTP/1.1\r\nHost: t\r\n"
        "Content-Length: 0\r\n\r\n",
        false);
    ck_assert_int_eq(j.r.status, 405);
    ck_assert_str_eq(j.r.x_method, "");
    ask(&j, "HEAD /_tidepool/stats HTTP/1.1\r\nHost: t\r\n\r\n", true);
    ck_assert_int_eq(j.r.status, 200);
    ck_assert_int_gt(j.r.content_length, 0);
    ck_assert_uint_eq(j.r.body_len, 0);
    ask(&j, "GET /_tidepool/stats HTTP/1.1\r\nHost: t\r\n\r\n", false);
    ck_assert_int_eq(j.r.status, 200);
    ck_assert_str_eq(j.r.x_method, "");
    /* the two forwarded, the 405, the HEAD and this one */
    ck_assert_msg(strstr(body_of(&j), "\"proxy\":{\"requests\":5,"), "%s",
                  body_of(&j));
    ck_assert_msg(strstr(body_of(&j), "\"errors_503\":0"), "%s", body_of(&j));
    ck_assert_msg(strstr(body_of(&j), "\"aborted\":0"), "%s", body_of(&j));
    ask(&j,
        "GET /_tidepool/stats?x=1&format=prometheus HTTP/1.1\r\nHost: t\r\n"
        "\r\n",
        false);
    ck_assert_msg(strstr(body_of(&j), "tidepool_proxy_requests 6\n"), "%s",
                  body_of(&j));
    ck_assert_msg(strstr(body_of(&j), "tidepool_proxy_errors_502 0\n"), "%s",
                  body_of(&j));
    ck_assert_msg(strstr(body_of(&j), "tidepool_proxy_retries 0\n"), "%s",
                  body_of(&j));
    ask(&j,
        "GET /_tidepool/stats?format=prometheusx HTTP/1.1\r\nHost: t\r\n"
        "\r\n",
        false);
    ck_assert_msg(body_of(&j)[0] == '{', "%s", body_of(&j));
    response_dispose(&j.r);
}
END_TEST

/* HTTP/1.1 requires Host, which an HTTP/1.0 request may lack: the proxy
 * gives the upstream's own (nginx answers 400 without one). */
START_TEST(an_http10_request_without_host_gets_the_upstreams)
{
    nginx_start(&ng[0], 0, NULL);
    proxy_start(&ng[0].port, 1, 2);
    struct raw_job j = {.port = proxy_port()};
    ask(&j, "GET /f1k HTTP/1.0\r\n\r\n", false);
    ck_assert_int_eq(j.r.status, 200);
    ck_assert_uint_eq(j.r.body_len, 1024);
    ck_assert_int_eq(memcmp(j.r.body, file_bytes(1024), 1024), 0);
    /* one the client gave is kept, not doubled (nginx: 400 on two) */
    ask(&j, "GET /f1k HTTP/1.0\r\nHost: example\r\n\r\n", false);
    ck_assert_int_eq(j.r.status, 200);
    response_dispose(&j.r);
}
END_TEST

/* ---- a TLS upstream ---- */

START_TEST(a_tls_upstream_serves_byte_exact_bodies_on_kept_connections)
{
    nginx_start_tls(&ng[0], 0, NULL);
    proxy_start_tls(ng[0].port, 4);
    long before = nginx_accepts(&ng[0]);
    struct static_job one = {.port = proxy_port()};
    run_client(get_files, &one, 20000);
    ck_assert_msg(one.failures == 0, "%s", one.why);
    /* twelve exchanges in a row on one kept TLS connection (and the status
     * page's own, in plain text) */
    ck_assert_int_eq(nginx_accepts(&ng[0]) - before, 2);
    ck_assert_uint_eq(pstats().responses, 12);

    /* four clients at once on a pool of four: a handshake per connection,
     * each connection kept for the next exchange */
    struct static_job jobs[4];
    void *args[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (struct static_job){.port = proxy_port()};
        args[i] = &jobs[i];
    }
    run_clients(get_files, args, 4, 30000);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(jobs[i].failures == 0, "%s", jobs[i].why);
    ck_assert_uint_eq(pstats().responses, 60);
    ck_assert_uint_eq(pstats().discarded, 0);
    struct tide_net_stats st;
    tide_tls_factory_stats(tls_factory, &st);
    ck_assert_uint_le(st.made, 4);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert_uint_eq(st.lost, 0);
    ck_assert_int_le(nginx_accepts(&ng[0]) - before, 2 + 4);
}
END_TEST

static Suite *proxy_suite(void)
{
    Suite *s = suite_create("proxy");
    TCase *tc = tcase_create("proxy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, get_and_head_from_nginx_are_byte_exact);
    tcase_add_test(tc, post_and_put_bodies_go_both_ways_byte_exact);
    tcase_add_test(tc, hop_by_hop_headers_are_removed_and_xff_appended);
    tcase_add_test(tc,
                   responses_204_and_304_have_no_body_and_keep_the_connection);
    tcase_add_test(tc, origin_connection_close_retires_after_the_response);
    tcase_add_test(tc,
                   a_healthy_origin_answering_connection_close_is_never_blamed);
    tcase_add_test(tc, an_origin_closing_idle_connections_causes_no_502);
    tcase_add_test(tc,
                   a_stale_connection_is_retried_for_get_and_never_for_post);
    tcase_add_test(tc, the_proxys_own_answer_to_head_has_no_body);
    tcase_add_test(tc,
                   an_origin_down_answers_502_then_503_then_serves_when_back);
    tcase_add_test(
        tc, one_of_two_upstreams_killed_mid_load_moves_traffic_to_the_other);
    tcase_add_test(tc, a_dead_one_of_two_upstreams_stops_taking_first_tries);
    tcase_add_test(tc,
                   a_client_gone_mid_response_abandons_the_upstream_connection);
    tcase_add_test(tc, clients_gone_mid_body_leave_the_breaker_closed);
    tcase_add_test(
        tc, a_client_gone_before_a_small_rest_keeps_the_connection_whole);
    tcase_add_test(tc, a_slow_client_pauses_the_upstream_and_gets_every_byte);
    tcase_add_test(tc,
                   an_upstream_silent_past_the_response_timeout_answers_504);
    tcase_add_test(tc, ten_thousand_requests_through_two_pools_of_four);
    tcase_add_test(tc, the_demand_and_preconnect_options_reach_the_pool);
    tcase_add_test(tc, without_the_demand_options_the_pool_opens_none_ahead);
    tcase_add_test(tc, the_stats_page_lists_every_upstream);
    tcase_add_test(tc, the_stats_page_is_its_exact_path_for_get_and_head);
    tcase_add_test(tc, an_http10_request_without_host_gets_the_upstreams);
    tcase_add_test(tc,
                   a_tls_upstream_serves_byte_exact_bodies_on_kept_connections);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!nginx_found()) {
        printf("SKIP: no nginx (apt-get install nginx-light)\n");
        return 77;
    }
    return tide_test_run(proxy_suite());
}
