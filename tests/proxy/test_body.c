/* tests for demos/proxy: message bodies at the proxy's two edges. Chunked
 * framing is checked strictly both ways: a request whose chunks another
 * parser could cut elsewhere gets 400 and the close, a response so framed
 * is a 502 (or a cut, once the client has part of it) and its connection
 * discarded. Origins are the scripted one (script.h); nothing outside the
 * process is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness.h"
#include "script.h"

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
 * origin gets: a trailer named Host reached it as a second Host, and one
 * named Content-Length beside the proxy's own. */
START_TEST(trailers_never_join_the_head)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "POST /t HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
         "3\r\nabc\r\n0\r\nHost: evil\r\nContent-Length: 99\r\n"
         "X-Checksum: 42\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    char seen[sizeof origin_seen];
    pthread_mutex_lock(&seen_lock);
    memcpy(seen, origin_seen, sizeof seen);
    pthread_mutex_unlock(&seen_lock);
    char *end = strstr(seen, "\r\n\r\n");
    ck_assert_ptr_nonnull(end);
    end[2] = '\0'; /* the head alone */
    ck_assert_msg(strstr(seen, "\r\nHost: t\r\n"), "%s", seen);
    ck_assert_msg(!strcasestr(seen, "evil") && !strstr(seen, "99") &&
                      !strstr(seen, "X-Checksum"),
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

static Suite *body_suite(void)
{
    Suite *s = suite_create("proxy-body");
    TCase *tc = tcase_create("body");
    tcase_add_checked_fixture(tc, harness_setup, script_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, malformed_chunked_requests_get_400_and_go_nowhere);
    tcase_add_test(tc, malformed_chunked_responses_get_502_and_are_discarded);
    tcase_add_test(tc, a_chunked_response_gone_bad_midway_cuts_the_client);
    tcase_add_test(tc, trailers_never_join_the_head);
    tcase_add_test(tc, a_length_past_the_limit_gets_413_at_once_without_100);
    tcase_add_test(tc, a_chunked_body_past_the_limit_gets_413_as_it_passes_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tide_test_run(body_suite());
}
