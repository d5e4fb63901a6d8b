/* The redis tests' fixture: per test a fresh event_base, certificates made
 * at run time, and a redis-server of its own (TCP, a Unix socket and TLS),
 * and the teardown's proof that nothing leaked: no descriptor left open, no
 * event left on the base, no connection left at the server. Tests free
 * their clients with client_end, which also checks the client's books:
 * every connection made was destroyed once. */
#ifndef TIDEPOOL_TEST_REDIS_FIXTURE_H
#define TIDEPOOL_TEST_REDIS_FIXTURE_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "certs.h"
#include "redis.h"
#include "runner.h"
#include "server.h"

struct redis_fixture {
    struct event_base *base;
    struct pki pki;
    char *ca_pem; /* pki.ca as PEM */
    struct redis_server server;
    int fds_at_start;
};

extern struct redis_fixture *rx;

void redis_fixture_setup(void);
void redis_fixture_teardown(void);
/* Adds the fixture (checked: one per test) and a timeout in seconds. */
void redis_fixture_add(TCase *tc, int seconds);
/* The suite's main: exit 77 (meson's SKIP) when redis-server is missing. */
int redis_test_main(Suite *(*make_suite)(void));

int64_t now_ms(void);
/* Runs the loop for ms (it never blocks longer). */
void run_ms(int ms);
/* Runs the loop until pred(arg) or ms passed; returns pred(arg). */
bool run_until(bool (*pred)(void *), void *arg, int ms);

/* ---- clients ---- */

/* Options for the fixture's server over TCP, with a pool of `size`. */
struct tide_redis_options tcp_options(int64_t size);
/* TLS options trusting the test CA (name: the name to verify; NULL: the
 * host). */
struct tide_tls_options tls_options(const char *name);
struct tide_redis_client *client_new(const struct tide_redis_options *o);
/* Checks the books (nothing lent, every connection made destroyed or
 * live, once), frees the client and waits until the server has seen each
 * of its connections close. */
void client_end(struct tide_redis_client *c);

/* One answer, recorded. */
struct answer {
    int calls;
    int status;
    int type; /* REDIS_REPLY_*, 0 without a reply */
    long long integer;
    char *str; /* the reply's bytes (malloc), NUL-terminated */
    size_t len;
    size_t elements;
    char message[256];
    int order; /* among all answers of the test */
};

/* A tide_redis_cb recording into a struct answer (arg). */
void record(struct tide_redis_client *c, int status,
            const struct redisReply *reply, const char *message, void *arg);
void answer_clear(struct answer *a);
/* n commands (at most 64) at once, so the pool opens n connections; each
 * answered ok, then forgotten. */
void fill(struct tide_redis_client *c, int n);
bool answered(void *answer);
/* Sends one command of NUL-terminated words, waits at most ms for its
 * answer (asserted), and returns it (the caller clears it). */
struct answer cmd(struct tide_redis_client *c, int ms, int argc,
                  const char *const *argv);
#define CMD(c, ...)                                                            \
    cmd((c), 5000,                                                             \
        (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),   \
        (const char *[]){__VA_ARGS__})

#endif
