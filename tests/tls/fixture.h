/* The tls tests' fixture: per test a fresh event_base, certificates, a DNS
 * server on 127.0.0.1 and a resolver that asks only it, and the teardown's
 * proof that nothing leaked: no descriptor left open, no event left on the
 * base (a bufferevent not freed keeps its events), no SSL object alive
 * (counted through an ex_data index on every SSL). Tests free their pools,
 * factories and servers; the teardown checks the rest. */
#ifndef TIDEPOOL_TEST_TLS_FIXTURE_H
#define TIDEPOOL_TEST_TLS_FIXTURE_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdbool.h>
#include <tidepool/tls.h>

#include "certs.h"
#include "dns_server.h"
#include "runner.h"
#include "servers.h"

struct fixture {
    struct event_base *base;
    struct dns_server dns_server;
    struct evdns_base *dns; /* asks dns_server only */
    struct pki pki;
    char *ca_pem; /* pki.ca as PEM */
    int fds_at_start;
};

extern struct fixture *fx;

void fixture_setup(void);
void fixture_teardown(void);
/* Adds the fixture (checked: one per test) and a timeout. */
void fixture_add(TCase *tc);

/* Live SSL objects in the process (client and server). */
long ssl_live(void);
int open_fds(void);

/* Runs the loop for ms (it never blocks longer). */
void run_ms(int ms);
/* Runs the loop until pred(arg) or ms passed; returns pred(arg). */
bool run_until(bool (*pred)(void *), void *arg, int ms);

/* ---- a pool over a factory ---- */

struct got {
    int calls;
    int status;
    struct bufferevent *bev;
    char message[256];
};

struct test_pool {
    struct tide_evpool *pool;
    struct tide_factory table;
};

/* A pool over table with size `size` (0: preset) and a make timeout long
 * enough for the factory's own timeouts to answer first. */
void pool_start(struct test_pool *tp, const struct tide_factory *table,
                int64_t size);
void pool_stop(struct test_pool *tp);
/* An acquire callback recording into a struct got (arg). */
void pool_record(struct tide_evpool *pool, int status, void *resource,
                 const struct tide_why *why, void *arg);
/* Acquires and runs the loop until answered (at most ms). */
struct got *acquire_wait(struct test_pool *tp, struct got *g, int ms);
bool answered(void *got);

/* ---- echo over a connection ---- */

/* Writes text and waits (at most ms) until as many bytes came back; returns
 * what came back (static storage). Sets the connection's callbacks. */
const char *echo(struct bufferevent *bev, const char *text, int ms);

/* A TLS options struct for `host` and the port of s, trusting the test CA. */
struct tide_tls_options tls_options(const char *host,
                                    const struct test_server *s);

#endif
