#include "fixture.h"
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/ssl.h>

static struct fixture the_fixture;
struct fixture *fx = &the_fixture;

/* ---- counting SSL objects ---- */

static long ssl_count;
static bool ssl_counting;

static void ssl_new_cb(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
                       long argl, void *argp)
{
    (void)parent, (void)ptr, (void)ad, (void)idx, (void)argl, (void)argp;
    ssl_count++;
}

static void ssl_free_cb(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
                        long argl, void *argp)
{
    (void)parent, (void)ptr, (void)ad, (void)idx, (void)argl, (void)argp;
    ssl_count--;
}

long ssl_live(void)
{
    return ssl_count;
}

int open_fds(void)
{
    return tide_test_open_fds();
}

/* ---- the loop ---- */

bool run_until(bool (*pred)(void *), void *arg, int ms)
{
    return tide_test_run_until(fx->base, pred, arg, ms);
}

static bool never(void *arg)
{
    (void)arg;
    return false;
}

void run_ms(int ms)
{
    run_until(never, NULL, ms);
}

/* ---- setup ---- */

/* libevent's messages (a nameserver "has failed" when a test makes it
 * fail) are expected here; warnings and errors still show */
static void on_log(int severity, const char *msg)
{
    if (severity >= EVENT_LOG_WARN)
        fprintf(stderr, "[libevent] %s\n", msg);
}

void fixture_setup(void)
{
    static bool debugging;
    if (!debugging) { /* once, before any event exists */
        event_enable_debug_mode();
        debugging = true;
    }
    if (!ssl_counting) {
        SSL_get_ex_new_index(0, NULL, ssl_new_cb, NULL, ssl_free_cb);
        ssl_counting = true;
    }
    event_set_log_callback(on_log);
    memset(fx, 0, sizeof *fx);
    fx->fds_at_start = open_fds();
    ssl_count = 0;
    struct event_config *cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER |
                                   EVENT_BASE_FLAG_IGNORE_ENV);
    fx->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    ck_assert_ptr_nonnull(fx->base);
    ck_assert(pki_make(&fx->pki));
    fx->ca_pem = pki_pem(fx->pki.ca);
    ck_assert_ptr_nonnull(fx->ca_pem);
    ck_assert(dns_server_start(&fx->dns_server, fx->base));
    fx->dns = dns_resolver(fx->base, &fx->dns_server, "5");
    ck_assert_ptr_nonnull(fx->dns);
}

void fixture_teardown(void)
{
    evdns_base_free(fx->dns, 1);
    dns_server_stop(&fx->dns_server);
    /* libevent closes sockets and frees SSLs of freed bufferevents, and
     * delivers cancelled DNS queries, from the loop */
    run_ms(20);
    int events = event_base_get_num_events(
        fx->base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE);
    event_base_free(fx->base);
    fx->base = NULL;
    free(fx->ca_pem);
    pki_free(&fx->pki);
    ck_assert_msg(events == 0, "%d events left on the base", events);
    ck_assert_msg(ssl_live() == 0, "%ld SSL objects alive", ssl_live());
    int fds = open_fds();
    ck_assert_msg(fds == fx->fds_at_start, "%d descriptors open, %d at start",
                  fds, fx->fds_at_start);
}

void fixture_add(TCase *tc)
{
    tcase_add_checked_fixture(tc, fixture_setup, fixture_teardown);
    tcase_set_timeout(tc, 20);
}

/* ---- pools ---- */

void pool_start(struct test_pool *tp, const struct tide_factory *table,
                int64_t size)
{
    tp->table = *table;
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = size),
        .make_timeout = TIDE_SEC(30),
        .acquire_timeout = TIDE_SEC(30),
        .seed = 1,
    };
    ck_assert_int_eq(tide_evpool_new(fx->base, &tp->table, &o, &tp->pool), 0);
}

void pool_stop(struct test_pool *tp)
{
    tide_evpool_free(tp->pool);
    tp->pool = NULL;
}

void pool_record(struct tide_evpool *pool, int status, void *resource,
                 const struct tide_why *why, void *arg)
{
    (void)pool;
    struct got *g = arg;
    g->calls++;
    g->status = status;
    g->bev = resource;
    snprintf(g->message, sizeof g->message, "%s", why ? why->message : "");
}

bool answered(void *got)
{
    return ((struct got *)got)->calls > 0;
}

struct got *acquire_wait(struct test_pool *tp, struct got *g, int ms)
{
    memset(g, 0, sizeof *g);
    ck_assert_int_eq(tide_evpool_acquire(tp->pool, 0, pool_record, g, NULL), 0);
    ck_assert_msg(run_until(answered, g, ms), "no answer within %d ms", ms);
    return g;
}

/* ---- echo ---- */

struct echo_state {
    size_t want;
    char got[512];
    size_t n;
    bool failed;
};

static void echo_read(struct bufferevent *bev, void *arg)
{
    struct echo_state *e = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t room = sizeof e->got - 1 - e->n;
    e->n += evbuffer_remove(in, e->got + e->n, room);
    e->got[e->n] = '\0';
}

static void echo_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev, (void)what;
    ((struct echo_state *)arg)->failed = true;
}

static bool echo_done(void *arg)
{
    struct echo_state *e = arg;
    return e->failed || e->n >= e->want;
}

const char *echo(struct bufferevent *bev, const char *text, int ms)
{
    static struct echo_state e;
    memset(&e, 0, sizeof e);
    e.want = strlen(text);
    bufferevent_setcb(bev, echo_read, NULL, echo_event, &e);
    bufferevent_write(bev, text, strlen(text));
    run_until(echo_done, &e, ms);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    return e.got;
}

struct tide_tls_options tls_options(const char *host,
                                    const struct test_server *s)
{
    return (struct tide_tls_options){
        .tcp = {.host = host, .port = s->port, .dns = fx->dns},
        .ca_pem = fx->ca_pem,
    };
}
