/* tests for demos/proxy: HTTP/1.1 framing at the proxy's two edges, where
 * a pool could hand a client someone else's bytes or a cut response that
 * looks whole. Requests whose framing a second parser could read another
 * way (a bare LF, obs-fold, a space before a field's colon) are refused
 * with 400 before anything goes upstream; a request line or a head past
 * the proxy's limits gets 414 or 431. Responses come from the scripted
 * origin (script.h: blocking sockets in threads, one reply per path), as
 * nginx cannot be told to reset mid-body or to answer 1xx; nothing outside
 * the process is needed. */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "script.h"

/* ---- the scripted origin's replies ---- */

static const struct script scripts[] = {
    /* a body framed by the close, cut by a reset before its end */
    {"/reset-until-close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart",
     RESET},
    /* the same with a length: the client must see it short */
    {"/reset-length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart",
     RESET},
    /* a body that stops coming, framed by its length or by the close */
    {"/stall-length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart",
     HOLD},
    {"/stall-close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart", HOLD},
    {"/interim",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s>\r\n"
     "\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
     KEEP},
    {"/early", "HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno", EARLY},
    /* no body whatever their Content-Length says (RFC 9112 6.3) */
    {"/204-length", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
     KEEP},
    {"/304-length",
     "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\nETag: \"e\"\r\n"
     "\r\n",
     KEEP},
    {"/head-length", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", KEEP},
    {"/103-length",
     "HTTP/1.1 103 Early Hints\r\nContent-Length: 5\r\nLink: </s>\r\n\r\n"
     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
     KEEP},
    /* a status of two digits, which libhttp-parser reads as 20 */
    {"/status-20", "HTTP/1.1 20 OK\r\nContent-Length: 1\r\n\r\nh", KEEP},
    /* a control character first in a value, which libhttp-parser does
     * not check (it checks the rest) */
    {"/value-control",
     "HTTP/1.1 200 OK\r\nX-A:\x1e"
     "a\r\nContent-Length: 2\r\n\r\nok",
     KEEP},
    /* a space before a field's colon (RFC 9112 5.1), which libhttp-parser
     * frames by all the same, and one inside a name */
    {"/204-length-space",
     "HTTP/1.1 204 No Content\r\nContent-Length : 3\r\n\r\n", KEEP},
    {"/length-space",
     "HTTP/1.1 200 OK\r\nContent-Length  : 2\r\nX-A : a\r\n\r\nok", KEEP},
    {"/chunked-space",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\n\r\n2\r\nok\r\n"
     "0\r\n\r\n",
     KEEP},
    {"/name-inner-space",
     "HTTP/1.1 200 OK\r\nX Y: z\r\nContent-Length: 2\r\n\r\nok", KEEP},
    {"/name-of-spaces",
     "HTTP/1.1 200 OK\r\n  : z\r\nContent-Length: 2\r\n\r\nok", KEEP},
    /* more than its length: the rest must never reach another client */
    {"/extra",
     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"
     "Content-Length: 4\r\n\r\nEVIL",
     KEEP},
};

/* The scripted origin, and a proxy of one upstream connection in front of
 * it with the command line's extra options `args` (NULL: none). */
static void proxy_on_script(const char *const *args)
{
    proxy_on_scripts(scripts, sizeof scripts / sizeof scripts[0], args);
}

/* ---- responses cut or framed oddly ---- */

/* Sends requests one after another on one connection, each once the
 * answer to the one before went quiet for 300 ms (or 2 s passed), and
 * keeps each answer apart. */
struct steps {
    int port;
    const char *reqs[8];
    char got[8][2048];
    bool closed;
};

static void steps_talk(void *arg)
{
    struct steps *w = arg;
    int fd = client_connect(w->port);
    if (fd < 0)
        return;
    for (int i = 0; w->reqs[i] && !w->closed; i++) {
        send(fd, w->reqs[i], strlen(w->reqs[i]), MSG_NOSIGNAL);
        size_t len = 0;
        for (int polls = 0; polls < 7; polls++) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 300) <= 0) {
                if (len > 0)
                    break;
                continue;
            }
            ssize_t n =
                recv(fd, w->got[i] + len, sizeof w->got[i] - 1 - len, 0);
            if (n <= 0) {
                w->closed = true;
                break;
            }
            len += (size_t)n;
        }
        w->got[i][len] = '\0';
    }
    close(fd);
}

static bool ends_with(const char *s, const char *end)
{
    size_t a = strlen(s), b = strlen(end);
    return a >= b && strcmp(s + a - b, end) == 0;
}

/* 1xx, 204 and 304, and any answer to HEAD, end at their head whatever
 * their Content-Length says (RFC 9112 6.3): each is relayed whole, the
 * next request on the same client connection is answered at once, and
 * the one upstream connection serves them all, released clean each time. */
START_TEST(answers_without_a_body_end_at_their_head_whatever_their_length)
{
    proxy_on_script(NULL);
    struct steps w = {.port = proxy_port(),
                      .reqs = {"GET /204-length HTTP/1.1\r\nHost: t\r\n\r\n",
                               "GET /304-length HTTP/1.1\r\nHost: t\r\n\r\n",
                               "HEAD /head-length HTTP/1.1\r\nHost: t\r\n\r\n",
                               "GET /103-length HTTP/1.1\r\nHost: t\r\n\r\n",
                               "GET /next HTTP/1.1\r\nHost: t\r\n\r\n"}};
    run_client(steps_talk, &w, 20000);
    ck_assert_msg(strncmp(w.got[0], "HTTP/1.1 204 ", 13) == 0 &&
                      ends_with(w.got[0], "\r\n\r\n"),
                  "%s", w.got[0]);
    /* a 204 says no length at all (RFC 9110 8.6) */
    ck_assert_msg(!strcasestr(w.got[0], "content-length"), "%s", w.got[0]);
    /* a 304 and a HEAD's answer keep the length of what they describe */
    ck_assert_msg(strncmp(w.got[1], "HTTP/1.1 304 ", 13) == 0 &&
                      strstr(w.got[1], "Content-Length: 100\r\n") &&
                      ends_with(w.got[1], "\r\n\r\n"),
                  "%s", w.got[1]);
    ck_assert_msg(strncmp(w.got[2], "HTTP/1.1 200 ", 13) == 0 &&
                      strstr(w.got[2], "Content-Length: 1000\r\n") &&
                      ends_with(w.got[2], "\r\n\r\n"),
                  "%s", w.got[2]);
    ck_assert_msg(strncmp(w.got[3], "HTTP/1.1 103 ", 13) == 0 &&
                      strstr(w.got[3], "\r\n\r\nHTTP/1.1 200 OK\r\n") &&
                      ends_with(w.got[3], "\r\n\r\nok"),
                  "%s", w.got[3]);
    ck_assert_msg(strncmp(w.got[4], "HTTP/1.1 200 ", 13) == 0 &&
                      ends_with(w.got[4], "\r\n\r\ndefault"),
                  "%s", w.got[4]);
    ck_assert(!w.closed);
    ck_assert_int_eq(atomic_load(&origin_accepts), 1);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.responses, 5);
    ck_assert_uint_eq(s.discarded, 0);
}
END_TEST

/* A request line whose version is not HTTP/1.x ("GET /a H", which
 * libhttp-parser reads as HTTP/0.9 and never ends) is refused with 400,
 * and nothing goes upstream: it went as a request made of nothing, a
 * DELETE with no length. */
START_TEST(a_request_line_without_a_version_is_refused)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /a H\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 400 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "HTTP/1.x"), "%s", r.got);
    ck_assert(r.closed);
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
}
END_TEST

/* A request line of another major version than 1 (RFC 9112 2.3), which
 * libhttp-parser reads all the same (HTTP/2.0 with Transfer-Encoding went
 * upstream as an HTTP/1.1 request, where an HTTP/1.0 one with it is
 * refused), gets 505 and the close, and nothing goes upstream. */
START_TEST(a_request_of_another_major_version_gets_505)
{
    proxy_on_script(NULL);
    static const char *const reqs[] = {
        "PUT /c HTTP/2.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "0\r\n\r\n",
        "GET /a HTTP/0.9\r\nHost: t\r\n\r\n",
        "GET /a HTTP/3.1\r\nHost: t\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        struct raw r;
        talk(&r, proxy_port(), reqs[i]);
        ck_assert_msg(strncmp(r.got, "HTTP/1.1 505 ", 13) == 0, "%zu: %s", i,
                      r.got);
        ck_assert_msg(strstr(r.got, "Connection: close\r\n") &&
                          strstr(r.got, "not 1.x"),
                      "%zu: %s", i, r.got);
        ck_assert_msg(r.closed, "%zu: left open", i);
    }
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
}
END_TEST

/* A head refused before it parses is answered as a GET would be, its
 * message as the body its Content-Length gives, even right after a HEAD:
 * the HEAD's method stayed, and the 400 went without its body. */
START_TEST(a_head_refused_after_a_head_request_gets_its_body)
{
    proxy_on_script(NULL);
    struct steps w = {.port = proxy_port(),
                      .reqs = {"HEAD /next HTTP/1.1\r\nHost: t\r\n\r\n",
                               "GET /a HTTP/1.1\nHost: t\r\n\r\n"}};
    run_client(steps_talk, &w, 20000);
    ck_assert_msg(strncmp(w.got[0], "HTTP/1.1 200 ", 13) == 0 &&
                      ends_with(w.got[0], "\r\n\r\n"),
                  "%s", w.got[0]);
    const char *body = strstr(w.got[1], "\r\n\r\n");
    const char *length = strstr(w.got[1], "\r\nContent-Length: ");
    ck_assert_msg(strncmp(w.got[1], "HTTP/1.1 400 ", 13) == 0 && body && length,
                  "%s", w.got[1]);
    ck_assert_msg(strlen(body + 4) == strtoul(length + 18, NULL, 10) &&
                      ends_with(w.got[1], "in the head\n"),
                  "%s", w.got[1]);
    ck_assert(w.closed);
}
END_TEST

/* A status line whose code is not three digits (RFC 9110 15) is a bad
 * response: 502 with the cause, never relayed, where a client would read
 * a "20" as an interim answer and lose count of the final ones. */
START_TEST(a_status_of_two_digits_is_a_bad_response)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /status-20 HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 502 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "three digits"), "%s", r.got);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.discarded, 1);
}
END_TEST

/* A response field's value with a control character (RFC 9110 5.5) is a
 * bad response, 502 with the cause: libhttp-parser lets one through as a
 * value's first byte, and the next parser may read it another way. */
START_TEST(a_control_character_in_a_response_value_is_a_bad_response)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /value-control HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 502 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "control character"), "%s", r.got);
}
END_TEST

/* How many times `what` is in s, regardless of case. */
static int occurrences(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strcasestr(p, what)); p++)
        n++;
    return n;
}

/* Space between a response field's name and its colon is removed before
 * the response goes on (RFC 9112 5.1), and the name is then the field it
 * names: libhttp-parser frames by "Content-Length " and
 * "Transfer-Encoding " as by the names without the space, and they went
 * to the client beside the proxy's own framing, so a 204 carried a length
 * (the client's parser read the next answer's first bytes as its body)
 * and an HTTP/1.0 client reading until the close was told chunked. */
START_TEST(space_before_a_response_fields_colon_is_removed)
{
    proxy_on_script(NULL);
    struct steps w = {
        .port = proxy_port(),
        .reqs = {"GET /204-length-space HTTP/1.1\r\nHost: t\r\n\r\n",
                 "GET /length-space HTTP/1.1\r\nHost: t\r\n\r\n",
                 "GET /chunked-space HTTP/1.1\r\nHost: t\r\n\r\n",
                 "GET /next HTTP/1.1\r\nHost: t\r\n\r\n",
                 "GET /chunked-space HTTP/1.0\r\nHost: t\r\n\r\n"}};
    run_client(steps_talk, &w, 20000);
    for (int i = 0; i < 5; i++)
        ck_assert_msg(!strstr(w.got[i], " :"), "%d: %s", i, w.got[i]);
    ck_assert_msg(strncmp(w.got[0], "HTTP/1.1 204 ", 13) == 0 &&
                      !strcasestr(w.got[0], "content-length") &&
                      ends_with(w.got[0], "\r\n\r\n"),
                  "%s", w.got[0]);
    ck_assert_msg(strncmp(w.got[1], "HTTP/1.1 200 ", 13) == 0 &&
                      occurrences(w.got[1], "content-length") == 1 &&
                      strstr(w.got[1], "\r\nContent-Length: 2\r\n") &&
                      strstr(w.got[1], "\r\nX-A: a\r\n") &&
                      ends_with(w.got[1], "\r\n\r\nok"),
                  "%s", w.got[1]);
    ck_assert_msg(strncmp(w.got[2], "HTTP/1.1 200 ", 13) == 0 &&
                      occurrences(w.got[2], "transfer-encoding") == 1 &&
                      ends_with(w.got[2], "\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
                  "%s", w.got[2]);
    ck_assert_msg(ends_with(w.got[3], "\r\n\r\ndefault"), "%s", w.got[3]);
    ck_assert_msg(strncmp(w.got[4], "HTTP/1.1 200 ", 13) == 0 &&
                      !strcasestr(w.got[4], "transfer-encoding") &&
                      ends_with(w.got[4], "\r\n\r\nok"),
                  "%s", w.got[4]);
    ck_assert(w.closed);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.responses, 5);
    ck_assert_uint_eq(s.discarded, 0);
}
END_TEST

/* A space inside a response field's name, or a name of spaces only
 * (libhttp-parser takes both), leaves no field name (a token, RFC 9110
 * 5.1): a bad response, 502 with the cause, never relayed. The second
 * went on as a field named by nothing (": z"). */
START_TEST(a_space_inside_a_response_fields_name_is_a_bad_response)
{
    proxy_on_script(NULL);
    static const char *const paths[] = {"/name-inner-space", "/name-of-spaces"};
    for (size_t i = 0; i < 2; i++) {
        char req[128];
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n",
                 paths[i]);
        struct raw r;
        talk(&r, proxy_port(), req);
        ck_assert_msg(strncmp(r.got, "HTTP/1.1 502 ", 13) == 0, "%s: %s",
                      paths[i], r.got);
        ck_assert_msg(
            strstr(r.got, "response header field's name with a space"),
            "%s: %s", paths[i], r.got);
    }
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.discarded, 2);
}
END_TEST

/* A body framed by the close, ended by a reset rather than a FIN, is cut:
 * the client must get no last chunk (which would make it look whole), and
 * the proxy counts it discarded, not retired. */
START_TEST(a_reset_cuts_a_body_framed_by_the_close)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "GET /reset-until-close HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "Transfer-Encoding: chunked"), "%s", r.got);
    ck_assert_msg(strstr(r.got, "4\r\npart\r\n"), "%s", r.got);
    ck_assert_msg(!strstr(r.got, "0\r\n\r\n"), "looks whole: %s", r.got);
    ck_assert(r.closed);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.discarded, 1);
    ck_assert_uint_eq(s.retired, 0);
}
END_TEST

/* A length-framed body cut by a reset: short, and closed. */
START_TEST(a_reset_cuts_a_body_by_length_and_closes_the_client)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /reset-length HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "Content-Length: 100\r\n"), "%s", r.got);
    const char *body = strstr(r.got, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    ck_assert_str_eq(body + 4, "part");
    ck_assert(r.closed);
}
END_TEST

/* A body that stops mid-way past the response timeout: the client gets
 * what came, cut (no last chunk, short of its length) and closed; the
 * connection is discarded, never lent again. */
START_TEST(a_body_that_stalls_is_cut_and_its_connection_discarded)
{
    proxy_response_timeout = TIDE_MS(300);
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /stall-length HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "Content-Length: 100\r\n\r\npart"), "%s",
                  r.got);
    ck_assert_msg(r.closed && !strstr(r.got, " 504 "), "%s", r.got);
    run_ms(1500); /* the origin, one connection at a time, holds it */
    talk(&r, proxy_port(), "GET /stall-close HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "4\r\npart\r\n"), "%s", r.got);
    ck_assert_msg(!strstr(r.got, "0\r\n\r\n"), "looks whole: %s", r.got);
    ck_assert(r.closed);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_eq(s.discarded, 2);
    ck_assert_uint_eq(s.responses, 0);
}
END_TEST

/* 1xx responses are relayed to an HTTP/1.1 client before the final one;
 * an HTTP/1.0 client, which cannot read them (RFC 9110 15.2), gets the
 * final response alone. */
START_TEST(interim_responses_go_to_http11_clients_only)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /interim HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(
        strncmp(r.got, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 ", 37) == 0,
        "%s", r.got);
    ck_assert_msg(strstr(r.got, "Link: </s>\r\n"), "%s", r.got);
    ck_assert_msg(strstr(r.got, "HTTP/1.1 200 OK\r\n"), "%s", r.got);
    talk(&r, proxy_port(), "GET /interim HTTP/1.0\r\nHost: t\r\n\r\n");
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", r.got);
    ck_assert_msg(!strstr(r.got, " 100 ") && !strstr(r.got, " 103 "), "%s",
                  r.got);
    ck_assert_msg(strstr(r.got, "\r\n\r\nok"), "%s", r.got);
}
END_TEST

/* An origin that sends more than its Content-Length: the client gets the
 * length's bytes, and the next client on the pool of one gets its own
 * response from a new connection, never the extra bytes. */
START_TEST(bytes_past_the_length_never_reach_the_next_client)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(), "GET /extra HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "Content-Length: 2\r\n\r\nok"), "%s", r.got);
    ck_assert_msg(!strstr(r.got, "EVIL"), "%s", r.got);
    for (int i = 0; i < 3; i++) {
        talk(&r, proxy_port(), "GET /next HTTP/1.1\r\nHost: t\r\n\r\n");
        ck_assert_msg(!strstr(r.got, "EVIL"), "%s", r.got);
        ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    }
    ck_assert_int_eq(atomic_load(&origin_accepts), 2);
}
END_TEST

/* An origin may answer before it read the whole request (a 403 to an
 * upload, say). While the rest of the body is still queued the connection
 * cannot carry another request, so it is retired, a success (or released
 * when the rest went out before the answer was read): five such answers
 * in a row leave the breaker (five strikes) closed, nothing is counted
 * dirty, and the next request is served. */
struct upload {
    int port;
    int status[6];
    char why[128];
};

static void uploads(void *arg)
{
    struct upload *u = arg;
    size_t len = 8u << 20;
    char *body = malloc(len);
    memset(body, 'u', len);
    for (int i = 0; i < 6; i++) {
        int fd = client_connect(u->port);
        struct response r;
        if (client_request(fd, "POST", "/early", body, len, false, &r))
            u->status[i] = r.status;
        else if (!u->why[0])
            snprintf(u->why, sizeof u->why,
                     "%d: no whole response (status %d, %s)", i, r.status,
                     strerror(errno));
        response_dispose(&r);
        close(fd);
    }
    free(body);
}

START_TEST(an_answer_before_the_whole_request_retires_the_connection)
{
    proxy_on_script(NULL);
    struct upload u = {.port = proxy_port()};
    run_client(uploads, &u, 30000);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(u.status[i] == 403, "%d: %d %s", i, u.status[i], u.why);
    struct raw r;
    talk(&r, proxy_port(), "GET /next HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_uint_ge(s.retired, 1);
    struct tide_group_stats g;
    tide_group_stats(group, &g);
    ck_assert_uint_eq(g.pools.dirty, 0);
}
END_TEST

/* Each of n requests, sent on a connection of its own, is answered 400
 * (saying `why`, unless NULL) with Connection: close, and the connection
 * closed; none has reached the origin. */
static void each_refused_with_400(const char *const *reqs, size_t n,
                                  const char *why)
{
    for (size_t i = 0; i < n; i++) {
        struct raw r;
        talk(&r, proxy_port(), reqs[i]);
        ck_assert_msg(strncmp(r.got, "HTTP/1.1 400 ", 13) == 0, "%zu: %s", i,
                      r.got);
        ck_assert_msg(strstr(r.got, "Connection: close\r\n"), "%zu: %s", i,
                      r.got);
        ck_assert_msg(!why || strstr(r.got, why), "%zu: %s", i, r.got);
        ck_assert_msg(r.closed, "%zu: left open", i);
    }
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
}

/* ---- HTTP/1.0 clients ---- */

/* An HTTP/1.0 connection persists only when each answer says so (RFC 9112
 * 9.3): a client that asked to keep it is answered `Connection:
 * keep-alive`, by the origin's answer and the proxy's own alike, and its
 * next request is served on it; one that did not ask is told close. */
START_TEST(a_kept_http10_client_is_answered_keep_alive)
{
    proxy_on_script(NULL);
    struct steps w = {
        .port = proxy_port(),
        .reqs = {"GET /next HTTP/1.0\r\nHost: t\r\nConnection: keep-alive"
                 "\r\n\r\n",
                 "GET /_tidepool/stats HTTP/1.0\r\nConnection: Keep-Alive"
                 "\r\n\r\n",
                 "GET /next HTTP/1.0\r\nHost: t\r\n\r\n"}};
    run_client(steps_talk, &w, 20000);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(strncmp(w.got[i], "HTTP/1.1 200 ", 13) == 0, "%d: %s", i,
                      w.got[i]);
        ck_assert_msg(strstr(w.got[i], "\r\nConnection: keep-alive\r\n"),
                      "%d: %s", i, w.got[i]);
    }
    ck_assert_msg(strncmp(w.got[2], "HTTP/1.1 200 ", 13) == 0 &&
                      strstr(w.got[2], "\r\nConnection: close\r\n") &&
                      ends_with(w.got[2], "\r\n\r\ndefault"),
                  "%s", w.got[2]);
    ck_assert(w.closed);
    ck_assert_int_eq(atomic_load(&origin_accepts), 1);
}
END_TEST

/* Transfer-Encoding in an HTTP/1.0 request is faulty framing (RFC 9112
 * 6.1), whatever it names and with a Content-Length or without: 400, the
 * client closed, nothing upstream. */
START_TEST(an_http10_request_with_transfer_encoding_is_refused)
{
    static const char *const reqs[] = {
        "POST / HTTP/1.0\r\nHost: t\r\nConnection: keep-alive\r\n"
        "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
        "Content-Length: 3\r\n\r\nabc",
        "GET / HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n",
    };
    proxy_on_script(NULL);
    each_refused_with_400(reqs, 1, "Transfer-Encoding in an HTTP/1.0");
    /* with a Content-Length too the parser refuses it first */
    each_refused_with_400(reqs + 1, 1, NULL);
    each_refused_with_400(reqs + 2, 1, "Transfer-Encoding in an HTTP/1.0");
}
END_TEST

/* ---- Host and the request's target ---- */

/* RFC 9112 3.2: 400 for an HTTP/1.1 request without Host, any request
 * with two, and a Host that is not uri-host [":" port] (RFC 9110 7.2); an
 * absolute-form target whose authority the proxy would have to send as
 * Host is held to the same, and to a scheme of http or https without
 * userinfo. None reaches the origin; each client is closed. */
START_TEST(a_missing_doubled_or_invalid_host_is_refused_with_400)
{
    static const char *const reqs[] = {
        "GET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nX-A: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\r\nhost: b\r\n\r\n",
        "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a:80:80\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: :80\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: [::g]\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: ::1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a%2\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\\b\r\n\r\n",
        /* absolute-form: Host is still required in HTTP/1.1 */
        "GET http://a/ HTTP/1.1\r\n\r\n",
        "GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET http://user@a/ HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET http://a:8x/ HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET http:///p HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET http://:80/p HTTP/1.0\r\n\r\n",
    };
    proxy_on_script(NULL);
    each_refused_with_400(reqs, sizeof reqs / sizeof reqs[0], NULL);
}
END_TEST

/* The Host the origin got, or "" (none); from origin_seen. */
static void seen_host(char *host, size_t size)
{
    pthread_mutex_lock(&seen_lock);
    const char *h = strcasestr(origin_seen, "\r\nHost:");
    const char *e = h ? strstr(h + 2, "\r\n") : NULL;
    size_t n = e ? (size_t)(e - h - 2) : 0;
    snprintf(host, size, "%.*s", (int)n, h ? h + 2 : "");
    pthread_mutex_unlock(&seen_lock);
}

/* Valid Hosts go upstream as they came: an IPv6 literal with a port, a
 * name with %-escapes and sub-delims, and an empty one (RFC 9112 3.2: the
 * Host of a target without an authority). */
START_TEST(valid_hosts_go_upstream_as_they_came)
{
    static const struct {
        const char *req;
        const char *host;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", "Host: [::1]:8080"},
        {"GET / HTTP/1.1\r\nHost: [v1.x:y]\r\n\r\n", "Host: [v1.x:y]"},
        {"GET / HTTP/1.1\r\nHost: a-b.example_%41~!$&'()*+,;=:80\r\n\r\n",
         "Host: a-b.example_%41~!$&'()*+,;=:80"},
        {"GET / HTTP/1.1\r\nHost: 10.0.0.1:\r\n\r\n", "Host: 10.0.0.1:"},
        {"GET / HTTP/1.1\r\nHost:\r\n\r\n", "Host: "},
    };
    proxy_on_script(NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct raw r;
        talk(&r, proxy_port(), cases[i].req);
        ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%zu: %s", i, r.got);
        char host[128];
        seen_host(host, sizeof host);
        ck_assert_str_eq(host, cases[i].host);
    }
}
END_TEST

/* An absolute-form target's authority wins over the Host that came with
 * it (RFC 9112 3.2.2: a proxy ignores that Host and replaces it with the
 * target's authority); the origin gets the target in origin-form, "/"
 * for an empty path. The stats page is found by its path in either form. */
START_TEST(an_absolute_form_target_replaces_host)
{
    static const struct {
        const char *req;
        const char *line;
        const char *host;
    } cases[] = {
        {"GET http://real.example:8080/p?q=1 HTTP/1.1\r\nHost: other\r\n"
         "X-A: a\r\n\r\n",
         "GET /p?q=1 HTTP/1.1\r\nHost: real.example:8080\r\nX-A: a\r\n",
         "Host: real.example:8080"},
        {"GET HTTPS://[::1]?x HTTP/1.1\r\nHost: other\r\n\r\n",
         "GET /?x HTTP/1.1\r\n", "Host: [::1]"},
        /* HTTP/1.0 needs no Host: the target's, not the upstream's */
        {"GET http://ten.example/ten HTTP/1.0\r\n\r\n", "GET /ten HTTP/1.1\r\n",
         "Host: ten.example"},
    };
    proxy_on_script(NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct raw r;
        talk(&r, proxy_port(), cases[i].req);
        ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%zu: %s", i, r.got);
        pthread_mutex_lock(&seen_lock);
        ck_assert_msg(
            strncmp(origin_seen, cases[i].line, strlen(cases[i].line)) == 0,
            "%zu: %s", i, origin_seen);
        ck_assert_msg(!strstr(origin_seen, "other"), "%zu: %s", i, origin_seen);
        pthread_mutex_unlock(&seen_lock);
        char host[128];
        seen_host(host, sizeof host);
        ck_assert_str_eq(host, cases[i].host);
    }
    struct raw r;
    talk(&r, proxy_port(),
         "GET http://p/_tidepool/stats HTTP/1.1\r\nHost: p\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\n{\"proxy\":"), "%s", r.got);
    ck_assert_int_eq(atomic_load(&origin_accepts), 1);
}
END_TEST

/* ---- requests a second parser could read another way ---- */

/* Each is refused with 400 and the client closed; none reaches the
 * origin. */
START_TEST(ambiguous_request_framing_is_refused_with_400)
{
    static const char *const reqs[] = {
        "GET / HTTP/1.1\nHost: t\n\n", /* bare LF ends */
        /* a bare LF inside a line: a header to one parser, part of a
         * value to another */
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\nTransfer-Encoding: chunked"
        "\r\n\r\n0\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n",    /* a bare CR */
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\n\r\n", /* obs-fold */
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\r\n chunked\r\n"
        "\r\n3\r\nabc\r\n0\r\n\r\n",
        /* a space before the colon: a name of its own to one parser */
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
        "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip"
        "\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
        "Content-Length: 4\r\n\r\nabcd",
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
        "Content-Length: 3\r\n\r\nabc",
        /* a control character in a field (RFC 9110 5.5): first in a
         * value, where libhttp-parser does not look, it stood inside the
         * X-Forwarded-For the proxy made of two lines */
        "GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 1.1.1.1\r\n"
        "X-Forwarded-For:\x1e"
        "2.2.2.2\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x7f"
        "b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: t\r\nX-\x01"
        "A: a\r\n\r\n",
    };
    proxy_on_script(NULL);
    each_refused_with_400(reqs, sizeof reqs / sizeof reqs[0], NULL);
}
END_TEST

/* What is unusual but has one reading goes through, framed by the proxy's
 * Content-Length: chunked in another case, with extensions and trailers,
 * an empty line before a request, two requests in one packet. */
START_TEST(unusual_but_unambiguous_requests_are_served_in_order)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ChUnKeD\r\n\r\n"
         "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"
         "\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n"
         "GET /c HTTP/1.1\r\nHost: t\r\n\r\n");
    const char *one = strstr(r.got, "\r\n\r\ndefault");
    ck_assert_msg(one, "%s", r.got);
    const char *two = strstr(one + 1, "\r\n\r\ndefault");
    ck_assert_msg(two && strstr(two + 1, "\r\n\r\ndefault"), "%s", r.got);
    ck_assert(!r.closed);
    pthread_mutex_lock(&seen_lock);
    ck_assert_msg(strncmp(origin_seen, "GET /c ", 7) == 0, "%s", origin_seen);
    pthread_mutex_unlock(&seen_lock);
    ck_assert_int_eq(atomic_load(&origin_accepts), 1);
}
END_TEST

static char *repeat(const char *pre, char ch, size_t n, const char *post)
{
    size_t a = strlen(pre), b = strlen(post);
    char *s = malloc(a + n + b + 1);
    memcpy(s, pre, a);
    memset(s + a, ch, n);
    memcpy(s + a + n, post, b + 1);
    return s;
}

/* A 64 KiB URI gets 414, a 64 KiB header 431, each answered at once and
 * the client closed, nothing sent upstream. */
START_TEST(a_huge_uri_gets_414_and_a_huge_head_431)
{
    proxy_on_script(NULL);
    char *uri = repeat("GET /", 'a', 64 * 1024, " HTTP/1.1\r\nHost: t\r\n\r\n");
    char *hdr = repeat("GET / HTTP/1.1\r\nHost: t\r\nX-Big: ", 'b', 64 * 1024,
                       "\r\n\r\n");
    struct raw r;
    talk(&r, proxy_port(), uri);
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 414 ", 13) == 0, "%s", r.got);
    ck_assert(r.closed);
    talk(&r, proxy_port(), hdr);
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 431 ", 13) == 0, "%s", r.got);
    ck_assert(r.closed);
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
    free(uri);
    free(hdr);
}
END_TEST

/* A head of n header fields (Host, a Connection header naming three of
 * them, those three, X-Kept, then X-Nnn fillers). */
static char *head_of_fields(int n)
{
    static const char start[] =
        "GET /fields HTTP/1.1\r\nHost: t\r\nConnection: x-a, X-BB ,x-ccc"
        "\r\nX-CCC: c\r\nx-a: a\r\nx-bb: b\r\nX-Kept: k\r\n";
    size_t cap = sizeof start + (size_t)n * 16 + 3;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap, "%s", start);
    for (int i = 6; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "X-%03d: v\r\n", i);
    snprintf(s + len, cap - len, "\r\n");
    return s;
}

/* A request of 100 header fields is served (and what its Connection
 * header names stays at the proxy); one of 101 gets 431 and the close,
 * however short they are, and never goes upstream. */
START_TEST(a_request_past_100_header_fields_gets_431)
{
    proxy_on_script(NULL);
    char *hundred = head_of_fields(100);
    char *more = head_of_fields(101);
    struct raw r;
    talk(&r, proxy_port(), hundred);
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    pthread_mutex_lock(&seen_lock);
    ck_assert_msg(strncmp(origin_seen, "GET /fields ", 12) == 0 &&
                      strstr(origin_seen, "\r\nX-Kept: k\r\n") &&
                      strstr(origin_seen, "\r\nX-099: v\r\n"),
                  "%s", origin_seen);
    static const char *const gone[] = {
        "\nConnection:", "\nx-a:", "\nx-bb:", "\nx-ccc:"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        ck_assert_msg(!strcasestr(origin_seen, gone[i]), "%s went: %s", gone[i],
                      origin_seen);
    origin_seen[0] = '\0';
    pthread_mutex_unlock(&seen_lock);
    talk(&r, proxy_port(), more);
    ck_assert_msg(strncmp(r.got, "HTTP/1.1 431 ", 13) == 0, "%s", r.got);
    ck_assert_msg(strstr(r.got, "more than 100 header fields"), "%s", r.got);
    ck_assert(r.closed);
    pthread_mutex_lock(&seen_lock);
    ck_assert_str_eq(origin_seen, "");
    pthread_mutex_unlock(&seen_lock);
    free(hundred);
    free(more);
}
END_TEST

/* Hop-by-hop headers stay at the proxy: those any of several Connection
 * headers names, Upgrade, Keep-Alive, TE, Proxy and Proxy-*. */
START_TEST(hop_by_hop_headers_of_every_kind_stay_at_the_proxy)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "GET /h HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n"
         "Connection: X-Secret\r\nX-Secret: s\r\nUpgrade: h2c\r\n"
         "Keep-Alive: 5\r\nTE: trailers\r\nProxy: http://10.9.9.9/\r\n"
         "Proxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive"
         "\r\nX-Kept: k\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    pthread_mutex_lock(&seen_lock);
    char seen[sizeof origin_seen];
    memcpy(seen, origin_seen, sizeof seen);
    pthread_mutex_unlock(&seen_lock);
    ck_assert_msg(strstr(seen, "\r\nX-Kept: k\r\n"), "%s", seen);
    static const char *const gone[] = {
        "\nConnection:", "\nX-Secret:", "\nUpgrade:",
        "\nKeep-Alive:", "\nTE:",       "\nProxy"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        ck_assert_msg(!strcasestr(seen, gone[i]), "%s went: %s", gone[i], seen);
}
END_TEST

/* Host and X-Forwarded-For go on whatever the client's Connection lists
 * (RFC 9110 7.6.1: no connection option names a field for every
 * recipient): "Connection: host" had the upstream's name sent as Host, a
 * target the client never named, and "Connection: x-forwarded-for"
 * dropped its chain. */
START_TEST(connection_cannot_name_away_host_or_x_forwarded_for)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "GET /h HTTP/1.1\r\nHost: t.example\r\nConnection: host, "
         "x-forwarded-for\r\nX-Forwarded-For: 10.1.1.1\r\nX-Kept: k\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    pthread_mutex_lock(&seen_lock);
    char seen[sizeof origin_seen];
    memcpy(seen, origin_seen, sizeof seen);
    pthread_mutex_unlock(&seen_lock);
    ck_assert_msg(strstr(seen, "\r\nHost: t.example\r\n") &&
                      occurrences(seen, "\nhost:") == 1,
                  "%s", seen);
    ck_assert_msg(strstr(seen, "\r\nX-Forwarded-For: 10.1.1.1, 127.0.0.1\r\n"),
                  "%s", seen);
    ck_assert_msg(strstr(seen, "\r\nX-Kept: k\r\n") &&
                      !strcasestr(seen, "\nConnection:"),
                  "%s", seen);
}
END_TEST

/* The client's X-Forwarded-For lines go on as one list, in order, its
 * address last (RFC 9110 5.3): only the last line went, the addresses in
 * the lines before it lost. */
START_TEST(x_forwarded_for_lines_go_on_as_one_list)
{
    proxy_on_script(NULL);
    struct raw r;
    talk(&r, proxy_port(),
         "GET /h HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 10.1.1.1\r\n"
         "X-Kept: k\r\nX-Forwarded-For: 10.2.2.2, 10.3.3.3\r\n\r\n");
    ck_assert_msg(strstr(r.got, "\r\n\r\ndefault"), "%s", r.got);
    pthread_mutex_lock(&seen_lock);
    char seen[sizeof origin_seen];
    memcpy(seen, origin_seen, sizeof seen);
    pthread_mutex_unlock(&seen_lock);
    ck_assert_msg(strstr(seen, "\r\nX-Forwarded-For: 10.1.1.1, 10.2.2.2, "
                               "10.3.3.3, 127.0.0.1\r\n") &&
                      occurrences(seen, "x-forwarded-for") == 1,
                  "%s", seen);
}
END_TEST

/* ---- clients that are slow, stop, or say nothing ---- */

static const char *const quick_clients[] = {"--client-timeout", "500", NULL};

/* A head sent a byte at a time, each byte well within the timeout, is
 * still bounded: 408 at the head's deadline, then the close. */
START_TEST(a_head_trickled_a_byte_at_a_time_gets_408_at_its_deadline)
{
    proxy_on_script(quick_clients);
    static const char head[] = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: 123456789"
                               "0123456789\r\n\r\n";
    static char bytes[sizeof head][2];
    struct slow w = {.port = proxy_port(), .gap_ms = 100};
    for (size_t i = 0; i < 47 && head[i]; i++) {
        bytes[i][0] = head[i];
        w.pieces[i] = bytes[i];
    }
    run_client(slow_talk, &w, 10000);
    ck_assert_msg(strncmp(w.got, "HTTP/1.1 408 ", 13) == 0, "%s", w.got);
    ck_assert(w.closed);
    ck_assert_msg(w.took_ms >= 450 && w.took_ms < 2000, "%lld ms",
                  (long long)w.took_ms);
    ck_assert_int_eq(atomic_load(&origin_accepts), 0);
}
END_TEST

/* A body that stops: 408 once it paused past the timeout; a body that
 * keeps coming, slower in total than the timeout but never pausing that
 * long, is served. */
START_TEST(a_body_that_stops_gets_408_and_a_slow_one_is_served)
{
    proxy_on_script(quick_clients);
    struct slow w = {
        .port = proxy_port(),
        .gap_ms = 50,
        .pieces = {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n",
                   "abc"}};
    run_client(slow_talk, &w, 10000);
    ck_assert_msg(strncmp(w.got, "HTTP/1.1 408 ", 13) == 0, "%s", w.got);
    ck_assert(w.closed);
    struct slow k = {
        .port = proxy_port(),
        .gap_ms = 250,
        .pieces = {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n",
                   "a", "b", "c", "d", "e"}};
    run_client(slow_talk, &k, 10000);
    ck_assert_msg(strncmp(k.got, "HTTP/1.1 200 ", 13) == 0, "%s", k.got);
    ck_assert_msg(k.took_ms >= 1000, "%lld ms", (long long)k.took_ms);
}
END_TEST

/* Clients that connect and say nothing, and one idle after a response,
 * are closed after the timeout (no 408: no request was begun), and every
 * descriptor they held is given back. */
struct idle {
    int port;
    int n;
    int closed;
};

static void idle_clients(void *arg)
{
    struct idle *d = arg;
    int fds[40];
    for (int i = 0; i < d->n; i++)
        fds[i] = client_connect(d->port);
    static const char req[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    send(fds[0], req, sizeof req - 1, MSG_NOSIGNAL);
    char buf[512];
    struct pollfd p0 = {.fd = fds[0], .events = POLLIN};
    if (poll(&p0, 1, 2000) > 0)
        (void)recv(fds[0], buf, sizeof buf, 0); /* the response */
    for (int i = 0; i < d->n; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        if (poll(&p, 1, 3000) > 0 && recv(fds[i], buf, sizeof buf, 0) == 0)
            d->closed++;
        close(fds[i]);
    }
}

START_TEST(idle_clients_are_closed_after_the_timeout_and_leave_no_fd)
{
    proxy_on_script(quick_clients);
    int fds_before = fds_open();
    struct idle d = {.port = proxy_port(), .n = 40};
    run_client(idle_clients, &d, 15000);
    ck_assert_int_eq(d.closed, 40);
    run_ms(50);
    struct px_stats s;
    px_stats(proxy, &s);
    ck_assert_int_eq(s.clients, 0);
    /* the one upstream connection is kept idle in its pool: its two ends,
     * the proxy's and the origin's, are both in this process */
    ck_assert_int_le(fds_open(), fds_before + 2);
}
END_TEST

/* A client that sends and sends behind a request whose answer stalls: what
 * it pipelines meanwhile waits in TCP once the proxy holds a little of it,
 * not in the proxy's memory. */
struct flood {
    int port;
    size_t sent;
};

#define FLOOD_MAX (48u << 20)

static void flood_behind_a_stall(void *arg)
{
    struct flood *f = arg;
    int fd = client_connect(f->port);
    if (fd < 0)
        return;
    const char *req = "GET /stall-length HTTP/1.1\r\nHost: t\r\n\r\n";
    send(fd, req, strlen(req), MSG_NOSIGNAL);
    static char junk[65536];
    memset(junk, 'a', sizeof junk);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms =
            (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (f->sent >= FLOOD_MAX || ms >= 1000)
            break;
        ssize_t n = send(fd, junk, sizeof junk, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            f->sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            break;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, 20);
    }
    close(fd);
}

START_TEST(bytes_pipelined_behind_an_exchange_wait_in_tcp)
{
    proxy_on_script(NULL);
    struct flood f = {.port = proxy_port()};
    run_client(flood_behind_a_stall, &f, 5000);
    /* loopback's socket buffers hold about 4 MiB here, the proxy 64 KiB;
     * reading all it is sent, the proxy took the 48 MiB in a second */
    ck_assert_msg(f.sent < FLOOD_MAX / 2, "%zu bytes taken", f.sent);
    run_ms(1600); /* the origin lets go of its one connection */
}
END_TEST

static Suite *framing_suite(void)
{
    Suite *s = suite_create("proxy-framing");
    TCase *tc = tcase_create("framing");
    tcase_add_checked_fixture(tc, harness_setup, script_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_status_of_two_digits_is_a_bad_response);
    tcase_add_test(tc,
                   a_control_character_in_a_response_value_is_a_bad_response);
    tcase_add_test(tc, space_before_a_response_fields_colon_is_removed);
    tcase_add_test(tc, a_space_inside_a_response_fields_name_is_a_bad_response);
    tcase_add_test(tc, a_request_line_without_a_version_is_refused);
    tcase_add_test(tc, a_head_refused_after_a_head_request_gets_its_body);
    tcase_add_test(tc, a_request_of_another_major_version_gets_505);
    tcase_add_test(tc, a_reset_cuts_a_body_framed_by_the_close);
    tcase_add_test(tc, a_reset_cuts_a_body_by_length_and_closes_the_client);
    tcase_add_test(tc, a_body_that_stalls_is_cut_and_its_connection_discarded);
    tcase_add_test(tc, interim_responses_go_to_http11_clients_only);
    tcase_add_test(tc, bytes_past_the_length_never_reach_the_next_client);
    tcase_add_test(
        tc, answers_without_a_body_end_at_their_head_whatever_their_length);
    tcase_add_test(tc,
                   an_answer_before_the_whole_request_retires_the_connection);
    tcase_add_test(tc, a_kept_http10_client_is_answered_keep_alive);
    tcase_add_test(tc, an_http10_request_with_transfer_encoding_is_refused);
    tcase_add_test(tc, a_missing_doubled_or_invalid_host_is_refused_with_400);
    tcase_add_test(tc, valid_hosts_go_upstream_as_they_came);
    tcase_add_test(tc, an_absolute_form_target_replaces_host);
    tcase_add_test(tc, ambiguous_request_framing_is_refused_with_400);
    tcase_add_test(tc, unusual_but_unambiguous_requests_are_served_in_order);
    tcase_add_test(tc, a_huge_uri_gets_414_and_a_huge_head_431);
    tcase_add_test(tc, hop_by_hop_headers_of_every_kind_stay_at_the_proxy);
    tcase_add_test(tc, connection_cannot_name_away_host_or_x_forwarded_for);
    tcase_add_test(tc, x_forwarded_for_lines_go_on_as_one_list);
    tcase_add_test(tc, a_request_past_100_header_fields_gets_431);
    tcase_add_test(tc,
                   a_head_trickled_a_byte_at_a_time_gets_408_at_its_deadline);
    tcase_add_test(tc, a_body_that_stops_gets_408_and_a_slow_one_is_served);
    tcase_add_test(tc,
                   idle_clients_are_closed_after_the_timeout_and_leave_no_fd);
    tcase_add_test(tc, bytes_pipelined_behind_an_exchange_wait_in_tcp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tide_test_run(framing_suite());
}
