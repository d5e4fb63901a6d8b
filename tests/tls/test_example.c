/* The README's TLS example, examples/tls_client.c (the README prints it as
 * an excerpt, checked by examples/check-readme), driven here: connections
 * from a pool of a TLS factory, a request written on each, the response
 * read to its last byte, the connection released and reused. The tests give
 * it a server (an HTTP/1.1 responder over TLS in the test process) and a
 * CA; its main() is compiled as tls_client_main, and run by the examples
 * suite. */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "fixture.h"

/* the example, main renamed: the tests drive open_pool and fetch */
#define main tls_client_main
#include "tls_client.c"
#undef main
#undef main

/* ---- an HTTP/1.1 server over TLS ---- */

/* Each request (read up to its blank line) gets one response, written with
 * one call: a status line, Content-Length unless told not to, and body_len
 * bytes of 'a'..'z' over and over. */
struct http_conn {
    struct http_server *s;
    struct bufferevent *bev;
    struct http_conn *next;
};

struct http_server {
    struct event_base *base;
    SSL_CTX *ctx;
    struct evconnlistener *listener;
    uint16_t port;
    struct http_conn *conns;
    int accepted;
    int requests;
    size_t body_len;
    bool no_length; /* leave Content-Length out */
};

static char body_byte(size_t i)
{
    return (char)('a' + i % 26);
}

static void http_conn_free(struct http_conn *c)
{
    struct http_conn **at = &c->s->conns;
    while (*at != c)
        at = &(*at)->next;
    *at = c->next;
    bufferevent_free(c->bev); /* closes the socket, frees the SSL */
    free(c);
}

static void http_read(struct bufferevent *bev, void *arg)
{
    struct http_conn *c = arg;
    struct http_server *s = c->s;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_ptr end;
    while ((end = evbuffer_search(in, "\r\n\r\n", 4, NULL)).pos >= 0) {
        evbuffer_drain(in, (size_t)end.pos + 4);
        s->requests++;
        struct evbuffer *out = evbuffer_new();
        evbuffer_add_printf(out,
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
        if (!s->no_length)
            evbuffer_add_printf(out, "content-LENGTH: %zu\r\n", s->body_len);
        evbuffer_add(out, "\r\n", 2);
        for (size_t i = 0; i < s->body_len; i++) {
            char b = body_byte(i);
            evbuffer_add(out, &b, 1);
        }
        bufferevent_write_buffer(bev, out);
        evbuffer_free(out);
    }
}

static void http_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & BEV_EVENT_CONNECTED)
        return;
    while (bufferevent_get_openssl_error(bev))
        ;
    http_conn_free(arg);
}

static void http_accept(struct evconnlistener *l, evutil_socket_t fd,
                        struct sockaddr *sa, int len, void *arg)
{
    (void)l, (void)sa, (void)len;
    struct http_server *s = arg;
    struct http_conn *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    c->s = s;
    c->bev = bufferevent_openssl_socket_new(
        s->base, fd, SSL_new(s->ctx), BUFFEREVENT_SSL_ACCEPTING,
        BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    ck_assert_ptr_nonnull(c->bev);
    c->next = s->conns;
    s->conns = c;
    s->accepted++;
    bufferevent_setcb(c->bev, http_read, NULL, http_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* On 127.0.0.1, a port of its own; takes ctx. */
static void http_start(struct http_server *s, SSL_CTX *ctx)
{
    memset(s, 0, sizeof *s);
    s->base = fx->base;
    s->ctx = ctx;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    s->listener = evconnlistener_new_bind(
        fx->base, http_accept, s,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 16,
        (struct sockaddr *)&a, sizeof a);
    ck_assert_ptr_nonnull(s->listener);
    socklen_t n = sizeof a;
    getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&a, &n);
    s->port = ntohs(a.sin_port);
}

static void http_stop(struct http_server *s)
{
    while (s->conns)
        http_conn_free(s->conns);
    evconnlistener_free(s->listener);
    SSL_CTX_free(s->ctx);
}

/* As the README's main, with the test's server, CA and resolver. */
static struct tide_tls_options local_options(const struct http_server *s)
{
    static const char *const alpn[] = {"http/1.1", NULL}; /* outlives us */
    return (struct tide_tls_options){
        .tcp = {.host = "localhost", .port = s->port, .dns = fx->dns},
        .ca_pem = fx->ca_pem,
        .alpn = alpn,
    };
}

static bool status_set(void *exchange)
{
    return ((struct exchange *)exchange)->status != 0;
}

static uint64_t made(const struct tide_tls_factory *f)
{
    struct tide_net_stats st;
    tide_tls_factory_stats(f, &st);
    return st.made;
}

/* ---- tests ---- */

START_TEST(readme_example_fetches_over_tls)
{
    struct http_server s;
    http_start(&s, server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL));
    s.body_len = 11;
    struct tide_tls_options o = local_options(&s);
    struct tide_tls_factory *factory;
    struct tide_evpool *pool;
    ck_assert_int_eq(open_pool(fx->base, &o, &factory, &pool), 0);
    struct exchange x;
    ck_assert_int_eq(fetch(fx->base, pool, &x), 1);
    ck_assert_str_eq(x.head, "HTTP/1.1 200 OK");
    ck_assert_int_eq(x.got, 11);
    ck_assert_str_eq(x.body, "abcdefghijk");
    ck_assert_int_eq(s.requests, 1);
    tide_evpool_free(pool);
    tide_tls_factory_free(factory);
    http_stop(&s);
}
END_TEST

/* What the example is for: requests one after another, each response read
 * to its end, share one connection (one connect, one handshake). The bodies
 * grow past one TLS record and past what the exchange keeps, so the reading
 * loop runs over several reads. */
START_TEST(readme_example_reuses_one_connection)
{
    struct http_server s;
    http_start(&s, server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL));
    struct tide_tls_options o = local_options(&s);
    struct tide_tls_factory *factory;
    struct tide_evpool *pool;
    ck_assert_int_eq(open_pool(fx->base, &o, &factory, &pool), 0);
    enum { N = 20 };
    for (int i = 0; i < N; i++) {
        s.body_len = (size_t)i * 3000; /* 0 to 57 000 bytes */
        struct exchange x;
        ck_assert_int_eq(fetch(fx->base, pool, &x), 1);
        ck_assert_int_eq(x.got, (long long)s.body_len);
        size_t kept = strlen(x.body);
        ck_assert_uint_eq(kept, s.body_len < sizeof x.body - 1
                                    ? s.body_len
                                    : sizeof x.body - 1);
        for (size_t j = 0; j < kept; j++)
            ck_assert_int_eq(x.body[j], body_byte(j));
    }
    ck_assert_int_eq(s.requests, N);
    ck_assert_uint_eq(made(factory), 1);
    ck_assert_int_eq(s.accepted, 1);
    struct tide_evpool_stats ps;
    tide_evpool_stats(pool, &ps);
    ck_assert_uint_eq(ps.made, 1);
    ck_assert_uint_eq(ps.destroyed, 0);
    tide_evpool_free(pool);
    tide_tls_factory_free(factory);
    http_stop(&s);
}
END_TEST

/* The reply callback of the example before it read bodies: it released at
 * the blank line, the body unread. */
static void on_head_only(struct bufferevent *bev, void *arg)
{
    struct exchange *x = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        return;
    evbuffer_drain(in, (size_t)end.pos + 4);
    tide_evpool_release(x->pool, bev);
    x->status = 1;
}

static void on_connection_head_only(struct tide_evpool *pool, int status,
                                    void *resource, const struct tide_why *why,
                                    void *arg)
{
    on_connection(pool, status, resource, why, arg);
    if (status == 0)
        bufferevent_setcb(resource, on_head_only, NULL, on_error, arg);
}

/* Released with the body unread, a connection is destroyed, not reused:
 * every request pays a connect and a handshake. */
START_TEST(release_with_body_unread_is_not_reused)
{
    struct http_server s;
    http_start(&s, server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL));
    s.body_len = 100;
    struct tide_tls_options o = local_options(&s);
    struct tide_tls_factory *factory;
    struct tide_evpool *pool;
    ck_assert_int_eq(open_pool(fx->base, &o, &factory, &pool), 0);
    enum { N = 5 };
    for (int i = 0; i < N; i++) {
        /* each dirty first loan is its make's failure, and makes are held
         * after one: waited out (the preset's delay, doubling, and a
         * fifth of jitter at most) */
        if (i > 0)
            run_ms(150 << (i - 1));
        struct exchange x = {.pool = pool, .length = -1};
        ck_assert_int_eq(tide_evpool_acquire(pool, TIDE_SEC(5),
                                             on_connection_head_only, &x, NULL),
                         0);
        ck_assert_msg(run_until(status_set, &x, 10000), "request %d unanswered",
                      i);
        ck_assert_int_eq(x.status, 1);
        ck_assert_uint_eq(made(factory), (uint64_t)i + 1);
    }
    ck_assert_int_eq(s.accepted, N);
    struct tide_evpool_stats ps;
    tide_evpool_stats(pool, &ps);
    ck_assert_uint_eq(ps.made, N);
    ck_assert_int_eq(ps.idle, 0);
    ck_assert_uint_eq(ps.dirty, N); /* and each is counted */
    tide_evpool_free(pool);
    tide_tls_factory_free(factory);
    http_stop(&s);
}
END_TEST

/* fetch, with what the example prints to stderr caught into said: a test
 * that drives it into a failure checks the sentence instead of leaving an
 * error-looking line in a passing run's log. */
static int fetch_quietly(struct event_base *base, struct tide_evpool *pool,
                         struct exchange *x, char *said, size_t len)
{
    fflush(stderr);
    FILE *caught = tmpfile();
    ck_assert_ptr_nonnull(caught);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(caught), STDERR_FILENO), 0);
    int rc = fetch(base, pool, x);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(caught);
    said[fread(said, 1, len - 1, caught)] = '\0';
    fclose(caught);
    return rc;
}

/* Without Content-Length the example cannot know where the body ends: it
 * abandons the connection (-1), and the next request gets a new one at
 * once (an abandon is no failed make: nothing holds the next). */
START_TEST(readme_example_abandons_a_response_without_length)
{
    struct http_server s;
    http_start(&s, server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL));
    s.body_len = 10;
    s.no_length = true;
    struct tide_tls_options o = local_options(&s);
    struct tide_tls_factory *factory;
    struct tide_evpool *pool;
    ck_assert_int_eq(open_pool(fx->base, &o, &factory, &pool), 0);
    struct exchange x;
    char said[512];
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(fetch_quietly(fx->base, pool, &x, said, sizeof said),
                         -1);
        ck_assert_ptr_nonnull(strstr(said, "length unknown, abandoned"));
    }
    ck_assert_uint_eq(made(factory), 2);
    s.no_length = false;
    ck_assert_int_eq(fetch(fx->base, pool, &x), 1);
    ck_assert_int_eq(fetch(fx->base, pool, &x), 1);
    ck_assert_uint_eq(made(factory), 3);
    tide_evpool_free(pool);
    tide_tls_factory_free(factory);
    http_stop(&s);
}
END_TEST

START_TEST(readme_example_reports_a_failure)
{
    struct http_server s;
    http_start(&s, server_ctx(fx->pki.other, fx->pki.key, 0, 0, NULL));
    struct tide_tls_options o = local_options(&s);
    struct tide_tls_factory *factory;
    struct tide_evpool *pool;
    ck_assert_int_eq(open_pool(fx->base, &o, &factory, &pool), 0);
    struct exchange x;
    char said[512];
    ck_assert_int_eq(fetch_quietly(fx->base, pool, &x, said, sizeof said),
                     TIDE_ENAME_MISMATCH);
    ck_assert_ptr_nonnull(strstr(said, "no connection: "));
    ck_assert_ptr_nonnull(strstr(said, "hostname mismatch"));
    tide_evpool_free(pool);
    tide_tls_factory_free(factory);
    http_stop(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("example");
    TCase *tc = tcase_create("example");
    fixture_add(tc);
    tcase_add_test(tc, readme_example_fetches_over_tls);
    tcase_add_test(tc, readme_example_reuses_one_connection);
    tcase_add_test(tc, release_with_body_unread_is_not_reused);
    tcase_add_test(tc, readme_example_abandons_a_response_without_length);
    tcase_add_test(tc, readme_example_reports_a_failure);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
