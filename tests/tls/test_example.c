/* The README's TLS example, compiled and run: acquire a TLS connection,
 * write a request, read the reply, release it. The code between the
 * markers is the example as printed in README.md ("TLS connections"); the test
 * around it gives it a server (the in-process TLS echo server, so the
 * "reply" is the request echoed) and a CA. Its main() is compiled here as
 * readme_main and never run: it would go to example.com. */
#include <string.h>

#include "fixture.h"

/* ---- README example begins ---- */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <tidepool/tls.h>

struct exchange {
    struct tide_evpool *pool;
    int status; /* 0 while running, 1 when done, else a TIDE_E code */
    char reply[512];
};

/* The reply ends at its blank line; until then, wait for more. */
static void on_reply(struct bufferevent *bev, void *arg)
{
    struct exchange *x = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        return;
    size_t n = (size_t)end.pos + 4;
    if (n >= sizeof x->reply)
        n = sizeof x->reply - 1;
    x->reply[evbuffer_remove(in, x->reply, n)] = '\0';
    /* the exchange is complete, nothing is left unread: back to the pool,
     * where it is watched until the next caller wants it */
    tide_evpool_release(x->pool, bev);
    x->status = 1;
}

/* A broken connection (reset, closed, timed out) is discarded, never
 * given back: the pool closes it and makes a new one when needed. */
static void on_error(struct bufferevent *bev, short what, void *arg)
{
    struct exchange *x = arg;
    char why[256];
    x->status = tide_net_event_error(bev, what, NULL, why, sizeof why);
    fprintf(stderr, "exchange failed: %s\n", why);
    tide_evpool_discard(x->pool, bev);
}

static void on_connection(struct tide_evpool *pool, int status, void *resource,
                          const struct tide_why *why, void *arg)
{
    (void)pool;
    struct exchange *x = arg;
    if (status != 0) { /* DNS, refused, untrusted, timed out...: why */
        fprintf(stderr, "no connection: %s\n", why->message);
        x->status = status;
        return;
    }
    /* connected, handshaken and verified; no callbacks of anyone else's */
    struct bufferevent *bev = resource;
    static const char request[] = "GET / HTTP/1.1\r\n"
                                  "Host: localhost\r\n\r\n";
    struct timeval limit = {5, 0};
    bufferevent_setcb(bev, on_reply, NULL, on_error, x);
    bufferevent_set_timeouts(bev, &limit, &limit);
    /* one write: one TLS record */
    bufferevent_write(bev, request, sizeof request - 1);
}

/* One request over a pooled TLS connection; returns 1 on success. */
static int fetch_once(struct event_base *base, struct tide_tls_options *o,
                      char *reply, size_t len)
{
    struct tide_tls_factory *factory;
    if (tide_tls_factory_new(base, o, &factory) != 0)
        return -1;
    struct tide_factory table;
    tide_tls_factory_bind(factory, &table);
    struct tide_evpool_options po = {.limits = TIDE_LIMITS(.size = 8)};
    struct tide_evpool *pool;
    if (tide_evpool_new(base, &table, &po, &pool) != 0) {
        tide_tls_factory_free(factory);
        return -1;
    }
    struct exchange x = {.pool = pool};
    if (tide_evpool_acquire(pool, TIDE_SEC(5), on_connection, &x, NULL) == 0)
        while (x.status == 0) /* bounded: 5 s to connect, 5 s to answer */
            event_base_loop(base, EVLOOP_ONCE);
    snprintf(reply, len, "%s", x.reply);
    tide_evpool_free(pool);         /* the pool first: it closes its */
    tide_tls_factory_free(factory); /* connections, then the factory */
    return x.status;
}

int readme_main(void); /* main() in the README: compiled here, not run */
int readme_main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a write to a closed peer is an error */
    struct event_base *base = event_base_new();
    struct tide_tls_options o = {
        .tcp = {.host = "example.com", .port = 443}, /* DNS: resolv.conf */
        .alpn = (const char *[]){"http/1.1", NULL},  /* CAs: the system's */
    };
    char reply[512];
    int status = fetch_once(base, &o, reply, sizeof reply);
    if (status == 1)
        printf("%s", reply);
    event_base_loop(base, EVLOOP_NONBLOCK); /* sockets finish closing */
    event_base_free(base);
    return status == 1 ? 0 : 1;
}
/* ---- README example ends ---- */

START_TEST(readme_example_fetches_over_tls)
{
    struct test_server s;
    SSL_CTX *ctx = server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL);
    ck_assert(server_start(&s, fx->base, AF_INET, 0, ctx));
    /* as in the README, with the test's CA and resolver */
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = s.port, .dns = fx->dns},
        .ca_pem = fx->ca_pem,
        .alpn = (const char *[]){"http/1.1", NULL},
    };
    char reply[512];
    ck_assert_int_eq(fetch_once(fx->base, &o, reply, sizeof reply), 1);
    ck_assert_str_eq(reply, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    server_stop(&s);
}
END_TEST

START_TEST(readme_example_reports_a_failure)
{
    struct test_server s;
    SSL_CTX *ctx = server_ctx(fx->pki.other, fx->pki.key, 0, 0, NULL);
    ck_assert(server_start(&s, fx->base, AF_INET, 0, ctx));
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = s.port, .dns = fx->dns},
        .ca_pem = fx->ca_pem,
    };
    char reply[512];
    ck_assert_int_eq(fetch_once(fx->base, &o, reply, sizeof reply),
                     TIDE_ENAME_MISMATCH);
    server_stop(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("example");
    TCase *tc = tcase_create("example");
    fixture_add(tc);
    tcase_add_test(tc, readme_example_fetches_over_tls);
    tcase_add_test(tc, readme_example_reports_a_failure);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
