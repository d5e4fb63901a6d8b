/* tests for demos/proxy: message bodies at the proxy's two edges. Chunked
 * framing is checked strictly both ways: a request whose chunks another
 * parser could cut elsewhere gets 400 and the close, a response so framed
 * is a 502 (or a cut, once the client has part of it) and its connection
 * discarded. Trailers never join the head. A body past --max-body is
 * refused as soon as that shows. Request bodies stream to the upstream
 * in bounded buffers: ten uploads of 60 MiB at once through the proxy
 * program (demos/proxy built beside this test, its path argv[1]) leave
 * it under 32 MiB of memory, and a slow origin slows the client down
 * instead of filling the proxy. Origins are the scripted one (script.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "loop.h"
#include "script.h"

static const char *program; /* the proxy as users run it */

/* ---- the scripted origin's replies ---- */

#define CHUNKED_HEAD "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

static const struct script scripts[] = {
    /* chunk data followed by two bytes that are not CRLF */
    {"/bad-data-end", CHUNKED_HEAD "3\r\nabcXY0\r\n\r\n", KEEP},
    /* a size line ended by a bare CR */
    {"/bad-size-cr", CHUNKED_HEAD "3\rabc\r\n0\r\n\r\n", KEEP},
    /* a trailer line ended by a bare LF */
    {"/bad-trailer-lf", CHUNKED_HEAD "3\r\nabc\r\n0\r\nX: a\nY: b\r\n\r\n",
     KEEP},
    /* good at first, bad once the client has had part of it */
    {"/bad-later", CHUNKED_HEAD "3\r\nabc\r\n\f2\r\ndeXY0\r\n\r\n", SPLIT},
    /* the rest answer with the body's length and sum */
    {"/count", NULL, KEEP},
    {"/stall", NULL, STALL_BODY},
    {"/flaky", NULL, DROP_FIRST},
    {"/flaky-big", NULL, DROP_FIRST},
};

/* The scripted origin, and a proxy of one upstream connection in front of
 * it with the command line's extra options `args` (NULL: none). */
static void proxy_on_script(const char *const *args)
{
    proxy_on_scripts(scripts, sizeof scripts / sizeof scripts[0], args);
}

/* ---- chunked framing, strictly ---- */

/* Each gets 400 with the reason and the close, and nothing goes upstream:
 * libhttp-parser alone took the first, fifth and sixth as well formed
 * and sent them on. */
START_TEST(malformed_chunked_requests_get_400_and_go_nowhere)
{
    static const struct {
        const char *body;
        const char *why;
    } bad[] = {
        {"3\r\nabcXY0\r\n\r\n", "chunk data not followed by CRLF"},
        {"3\r\nabc\n0\r\n\r\n", "chunk data not followed by CRLF"},
        {"3\rabc\r\n0\r\n\r\n", "a bare CR in a chunk's line"},
        {"3;x\nfoo\r\nabc\r\n0\r\n\r\n", "a bare LF"},
        {"3\r\nabc\r\n0\r\nX: a\nY: b\r\n\r\n", "in the trailer section"},
        {"3\r\nabc\r\n0\r\n\r\r", "in the trailer section"},
        {"3\r\nabc\r\n0\r\nX: a\rb\r\n\r\n", "in the trailer section"},
        {"x\r\nabc\r\n0\r\n\r\n", "not hex"},
    };
    proxy_on_script(NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char req[256];
        snprintf(req, sizeof req,
                 "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked"
                 "\r\n\r\n%s",
                 bad[i].body);
        struct raw r;
        talk(&r, proxy_port(), req);
        ck_assert_msg(strncmp(r.got, "HTTP/1.1 400 ", 13) == 0, "%zu: %s", i,
                      r.got);
        ck_assert_msg(strstr(r.got, bad[i].why), "%zu: %s", i, r.got);
        ck_assert_msg(r.closed, "%zu: left open", i);
    }
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
}
END_TEST

/* A response whose chunks are malformed gets the client a 502 saying so
 * (none of it had gone out), the connection is discarded and the client's
 * is kept for its next request. */
START_TEST(malformed_chunked_responses_get_502_and_are_discarded)
{
    static const char *const paths[] = {"/bad-data-end", "/bad-size-cr",
                                        "/bad-trailer-lf"};
    proxy_on_script(NULL);
    for (size_t i = 0; i < 3; i++) {
        char req[128];
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n",
                 paths[i]);
        struct raw r;
        talk(&r, proxy_port(), req);
        ck_assert_msg(strncmp(r.got, "HTTP/1.1 502 ", 13) == 0, "%zu: %s", i,
                      r.got);
        ck_assert_msg(strstr(r.got, "a malformed chunked response"), "%zu: %s",
                      i, r.got);
        ck_assert_msg(!strstr(r.got, "abc"), "%zu: %s", i, r.got);
        ck_assert_msg(!r.closed, "%zu: closed", i);
    }
    struct raw r;
    talk(&r, proxy_port(), "GET /next HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.discarded, 3);
    ck_assert_uint_eq(s.errors_502, 3);
    ck_assert_int_eq(atomic_load(&origin_accepts), 4);
}
END_TEST

/* Once the client has the head and a chunk, a malformed one after them
 * cuts it: no last chunk (which would make what it got look whole), and
 * not a byte of the bad chunk. */
START_TEST(a_chunked_response_gone_bad_midway_cuts_the_client)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /bad-later HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 200 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "\r\n\r\n3\r\nabc\r\n"), "%s", r.got);
    ck_assert_msg(!strstr(r.got, "0\r\n\r\n") && !strstr(r.got, "de"), "%s",
                  r.got);
    ck_assert(r.closed);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.discarded, 1);
    ck_assert_uint_eq(s.aborted, 1);
}
END_TEST

/* ---- trailers ---- */

/* A chunked request's trailer fields never become fields of the head the
 * origin gets (a trailer named Host reached it as a second Host, one named
 * Content-Length beside the proxy's own); they go on as trailers, but for
 * those the proxy controls (Host, framing, hop-by-hop ones, those the
 * head's Connection names, X-Forwarded-For). */
START_TEST(trailers_go_on_as_trailers_never_into_the_head)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "POST /t HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
         "Connection: X-Secret\r\n\r\n"
         "3\r\nabc\r\n0\r\nHost: evil\r\nContent-Length: 99\r\n"
         "X-Checksum: 42\r\nTransfer-Encoding: gzip\r\nX-Secret: s\r\n"
         "Keep-Alive: 1\r\nX-Forwarded-For: 10.6.6.6\r\nX-Last: 1\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    char seen[sizeof origin_seen];
    pthread_mutex_lock(&seen_lock);
    memcpy(seen, origin_seen, sizeof seen);
    pthread_mutex_unlock(&seen_lock);
    char *end = strstr(seen, "\r\n\r\n");
    ck_assert_ptr_nonnull(end);
    ck_assert_str_eq(end + 4,
                     "3\r\nabc\r\n0\r\nX-Checksum: 42\r\nX-Last: 1\r\n\r\n");
    end[2] = '\0'; /* the head alone */
    ck_assert_msg(strstr(seen, "\r\nHost: t\r\n"), "%s", seen);
    ck_assert_msg(!strcasestr(seen, "evil") && !strstr(seen, "99") &&
                      !strstr(seen, "X-Checksum") && !strstr(seen, "6.6.6"),
                  "%s", seen);
    const char *host = strcasestr(seen, "\nHost:");
    ck_assert_msg(!strcasestr(host + 1, "\nHost:"), "two: %s", seen);
}
END_TEST

/* ---- the body's limit ---- */

static const char *const limit_1k[] = {"--max-body", "1k", NULL};

/* A length past --max-body is refused with 413 as soon as the head is in,
 * and a client that waits for 100 Continue is not told to go ahead: it got
 * 100 Continue and then waited, its body read whole before the refusal. A
 * length within the limit gets the go-ahead and is served. */
START_TEST(a_length_past_the_limit_gets_413_at_once_without_100)
{
    proxy_on_script(limit_1k);
    struct raw r;
    talk(&r, proxy_port(),
         "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n"
         "Expect: 100-continue\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 413 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "1024 bytes"), "%s", r.got);
    ck_assert(r.closed);
    char req[1200];
    int h = snprintf(req, sizeof req,
                     "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n"
                     "Expect: 100-continue\r\n\r\n");
    memset(req + h, 'b', 1024);
    req[h + 1024] = '\0';
    talk(&r, proxy_port(), req);
    ck_assert_msg(
        strncmp(r.got, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 ", 38) == 0,
        "%s", r.got);
    ck_assert_int_eq(atomic_load(&origin_accepts), 1);
}
END_TEST

/* A chunked body is refused with 413 as soon as its chunks announce more
 * than the limit, before their data: the client here stops sending there,
 * and got no answer until its body would have been read whole. */
START_TEST(a_chunked_body_past_the_limit_gets_413_as_it_passes_it)
{
    proxy_on_script(limit_1k);
    char req[1200];
    int h = snprintf(req, sizeof req,
                     "POST / HTTP/1.1\r\nHost: t\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n300\r\n");
    memset(req + h, 'c', 0x300);
    snprintf(req + h + 0x300, sizeof req - (size_t)h - 0x300, "\r\n101\r\n");
    struct raw r;
    talk(&r, proxy_port(), req);
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 413 ", 13) == 0, "%s", r.got);
    ck_assert(r.closed);
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
}
END_TEST

/* A client that waits for 100 Continue gets it only once its request has
 * a connection upstream: when none can be had, the 502 comes alone, with
 * the close, as the body will never come (it got 100 Continue at once and
 * then waited for a body to be read). */
START_TEST(no_go_ahead_before_a_connection_and_the_close_after_an_answer)
{
    int dead = tide_test_free_port(); /* nothing listens there */
    proxy_start(&dead, 1, 1);
    struct raw r;
    talk(&r, proxy_port(),
         "PUT / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
         "Expect: 100-continue\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 502 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "\r\nConnection: close\r\n"), "%s", r.got);
    ck_assert(r.closed);
}
END_TEST

/* ---- bodies that stream ---- */

/* A body made as it is sent: xorshift bytes from a seed, 64 KiB a piece
 * (each a chunk of its own when chunked, then the last chunk), and the
 * sum of its bytes as script_sum makes it. */
struct stream {
    uint32_t x;
    size_t size;
    bool chunked;
    size_t made;
    bool last; /* the piece in `wire` is the last */
    uint32_t sum;
    char wire[65536 + 32];
    size_t len; /* of the piece in `wire` */
    size_t off; /* of it sent */
};

static struct stream *stream_new(uint32_t seed, size_t size, bool chunked)
{
    struct stream *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    *s = (struct stream){
        .x = seed | 1, .size = size, .chunked = chunked, .sum = 2166136261u};
    return s;
}

/* The next piece into `wire`; false once the body was all made. */
static bool stream_next(struct stream *s)
{
    if (s->last)
        return false;
    size_t n = s->size - s->made < 65536 ? s->size - s->made : 65536;
    s->len = s->off = 0;
    if (s->chunked && n)
        s->len = (size_t)sprintf(s->wire, "%zx\r\n", n);
    unsigned char *data = (unsigned char *)s->wire + s->len;
    for (size_t i = 0; i < n; i++) {
        s->x ^= s->x << 13;
        s->x ^= s->x >> 17;
        s->x ^= s->x << 5;
        data[i] = (unsigned char)s->x;
    }
    s->sum = script_sum(s->sum, data, n);
    s->made += n;
    s->len += n;
    s->last = s->made == s->size;
    if (s->chunked && n)
        s->len += (size_t)sprintf(s->wire + s->len, "\r\n");
    if (s->chunked && s->last)
        s->len += (size_t)sprintf(s->wire + s->len, "0\r\n\r\n");
    return true;
}

/* One upload, PUT by length or chunked, and its answer. */
struct upload {
    int port;
    const char *path;
    size_t size;
    bool chunked;
    uint32_t seed;
    /* in the first second, for upload_behind_a_stall */
    size_t taken;
    bool blocked;
    /* the answer, and what it should say */
    int status;
    char got[256];
    char want[64];
    char why[128];
};

static int upload_begin(struct upload *u)
{
    int fd = client_connect(u->port);
    if (fd < 0) {
        snprintf(u->why, sizeof u->why, "connect: %s", strerror(errno));
        return -1;
    }
    struct timeval tv = {.tv_sec = 30}; /* a proxy that never reads fails */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char head[256];
    int h =
        snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: t\r\n", u->path);
    if (u->chunked)
        h += snprintf(head + h, sizeof head - (size_t)h,
                      "Transfer-Encoding: chunked\r\n\r\n");
    else
        h += snprintf(head + h, sizeof head - (size_t)h,
                      "Content-Length: %zu\r\n\r\n", u->size);
    if (!send_all(fd, head, (size_t)h)) {
        snprintf(u->why, sizeof u->why, "send: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends what is left of the body, blocking, then reads the answer. */
static void upload_end(struct upload *u, int fd, struct stream *s)
{
    do {
        if (!send_all(fd, s->wire + s->off, s->len - s->off)) {
            snprintf(u->why, sizeof u->why, "send at %zu: %s", s->made,
                     strerror(errno));
            break;
        }
    } while (stream_next(s));
    snprintf(u->want, sizeof u->want, "bytes=%zu sum=%08x", u->size, s->sum);
    struct response r;
    client_exchange(fd, "", 0, false, &r);
    u->status = r.status;
    snprintf(u->got, sizeof u->got, "%.*s", (int)r.body_len,
             r.body ? (char *)r.body : "");
    response_dispose(&r);
    close(fd);
}

static void upload(void *arg)
{
    struct upload *u = arg;
    int fd = upload_begin(u);
    if (fd < 0)
        return;
    struct stream *s = stream_new(u->seed, u->size, u->chunked);
    stream_next(s);
    upload_end(u, fd, s);
    free(s);
}

/* As upload, but for its first second sends only what the proxy takes at
 * once (its own send buffer held to 64 KiB), counting it. */
static void upload_behind_a_stall(void *arg)
{
    struct upload *u = arg;
    int fd = upload_begin(u);
    if (fd < 0)
        return;
    int small = 64 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    struct stream *s = stream_new(u->seed, u->size, u->chunked);
    stream_next(s);
    int64_t t0 = now_ms();
    while (now_ms() - t0 < 1000) {
        if (s->off == s->len && !stream_next(s))
            break;
        ssize_t n = send(fd, s->wire + s->off, s->len - s->off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            s->off += (size_t)n;
            u->taken += (size_t)n;
            u->blocked = false;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            break;
        u->blocked = true;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, 20);
    }
    upload_end(u, fd, s);
    free(s);
}

static void assert_counted(const struct upload *u)
{
    ck_assert_msg(u->status == 200 && strcmp(u->got, u->want) == 0,
                  "%s: %d '%s', not '%s' %s", u->path, u->status, u->got,
                  u->want, u->why);
}

/* The proxy's peak resident memory, from the kernel, in KiB. */
static long peak_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = atol(line + 6);
    fclose(f);
    return kib;
}

static struct tide_test_child proxy_program;

/* Ten uploads of 60 MiB at once, five by length and five chunked, through
 * the proxy as users run it, reach the origin byte for byte, and the
 * proxy's peak memory stays under 32 MiB: it held each body whole, 572
 * MiB for these ten. */
START_TEST(ten_uploads_of_60_mib_stream_in_bounded_memory)
{
    int origin =
        script_origin_start(scripts, sizeof scripts / sizeof scripts[0]);
    int port = proxy_program_start(&proxy_program, program, origin, 10, NULL);
    enum { N = 10 };
    struct upload u[N];
    void *args[N];
    for (int i = 0; i < N; i++) {
        u[i] = (struct upload){.port = port,
                               .path = "/count",
                               .size = (size_t)60 << 20,
                               .chunked = i % 2,
                               .seed = 1000u + (uint32_t)i};
        args[i] = &u[i];
    }
    run_clients(upload, args, N, 240000);
    long peak = peak_rss_kib(proxy_program.pid);
    fprintf(stderr, "proxy peak RSS over ten 60 MiB uploads: %ld KiB\n", peak);
    ck_assert_msg(peak > 0 && peak < 32 * 1024, "peak RSS %ld KiB", peak);
    for (int i = 0; i < N; i++)
        assert_counted(&u[i]);
}
END_TEST

/* An origin that leaves a body unread for a second and a half: the proxy
 * stops reading its client rather than hold the body, so the client's
 * sends block after a few MiB (the sockets' buffers); then all of it goes
 * through. It took the 60 MiB in that second. */
START_TEST(a_slow_origin_slows_the_client_down)
{
    proxy_on_script(NULL);
    struct upload u = {.port = proxy_port(),
                       .path = "/stall",
                       .size = (size_t)60 << 20,
                       .seed = 7};
    run_client(upload_behind_a_stall, &u, 60000);
    fprintf(stderr, "taken in the origin's first second: %zu KiB\n",
            u.taken / 1024);
    ck_assert_msg(u.blocked && u.taken < (size_t)16 << 20,
                  "%zu bytes taken in a second", u.taken);
    assert_counted(&u);
}
END_TEST

/* A connection that fails before any answer byte (an origin closing it
 * unanswered) has an idempotent request sent again on another when all
 * of its body was kept (64 KiB at most): a small PUT arrives whole. A
 * large one is not kept whole, so it is not sent again: 502, saying so. */
START_TEST(a_small_body_is_sent_again_and_a_large_one_is_not)
{
    proxy_on_script(NULL);
    struct upload small = {
        .port = proxy_port(), .path = "/flaky", .size = 10000, .seed = 3};
    run_client(upload, &small, 10000);
    assert_counted(&small);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.retries, 1);
    struct upload large = {.port = proxy_port(),
                           .path = "/flaky-big",
                           .size = 1 << 20,
                           .chunked = true,
                           .seed = 4};
    run_client(upload, &large, 10000);
    ck_assert_msg(large.status == 502 && strstr(large.got, "kept for a retry"),
                  "%d %s %s", large.status, large.got, large.why);
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.retries, 1);
}
END_TEST

/* A chunked body that turns malformed after its head went upstream: 400
 * and the close, the exchange abandoned, and the bad chunk never reaches
 * the origin. */
START_TEST(a_chunked_body_gone_bad_upstream_gets_400)
{
    proxy_on_script(NULL);
    struct slow w = {.port = proxy_port(),
                     .gap_ms = 300,
                     .pieces = {"PUT /count HTTP/1.1\r\nHost: t\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n"
                                "3\r\nabc\r\n",
                                "2\r\nZZXY0\r\n\r\n"}};
    run_client(slow_talk, &w, 10000);
    ck_assert_msg(strncmp(w.got, "HTTP/1.1 400 ", 13) == 0, "%s", w.got);
    ck_assert(w.closed);
    run_ms(100);
    char seen[sizeof origin_seen];
    pthread_mutex_lock(&seen_lock);
    memcpy(seen, origin_seen, sizeof seen);
    pthread_mutex_unlock(&seen_lock);
    ck_assert_msg(strstr(seen, "PUT /count ") && strstr(seen, "abc") &&
                      !strstr(seen, "ZZ"),
                  "%s", seen);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.abandoned, 1);
}
END_TEST

static void teardown(void)
{
    tide_test_child_dispose(&proxy_program);
    script_teardown();
}

static Suite *body_suite(void)
{
    Suite *s = suite_create("proxy-body");
    TCase *tc = tcase_create("body");
    tcase_add_checked_fixture(tc, harness_setup, teardown);
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, malformed_chunked_requests_get_400_and_go_nowhere);
    tcase_add_test(tc, malformed_chunked_responses_get_502_and_are_discarded);
    tcase_add_test(tc, a_chunked_response_gone_bad_midway_cuts_the_client);
    tcase_add_test(tc, trailers_go_on_as_trailers_never_into_the_head);
    tcase_add_test(tc, a_length_past_the_limit_gets_413_at_once_without_100);
    tcase_add_test(tc, a_chunked_body_past_the_limit_gets_413_as_it_passes_it);
    tcase_add_test(
        tc, no_go_ahead_before_a_connection_and_the_close_after_an_answer);
    tcase_add_test(tc, ten_uploads_of_60_mib_stream_in_bounded_memory);
    tcase_add_test(tc, a_slow_origin_slows_the_client_down);
    tcase_add_test(tc, a_small_body_is_sent_again_and_a_large_one_is_not);
    tcase_add_test(tc, a_chunked_body_gone_bad_upstream_gets_400);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_body PROXY\n");
        return 2;
    }
    program = argv[1];
    return tide_test_run(body_suite());
}
