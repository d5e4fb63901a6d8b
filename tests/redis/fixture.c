#include "fixture.h"
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct redis_fixture the_fixture;
struct redis_fixture *rx = &the_fixture;

static int answers_given;

static int open_fds(void)
{
    return tide_test_open_fds();
}

int64_t now_ms(void)
{
    return tide_test_now_ms();
}

bool run_until(bool (*pred)(void *), void *arg, int ms)
{
    return tide_test_run_until(rx->base, pred, arg, ms);
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

void redis_fixture_setup(void)
{
    static bool debugging;
    if (!debugging) { /* once, before any event exists */
        event_enable_debug_mode();
        debugging = true;
    }
    memset(rx, 0, sizeof *rx);
    answers_given = 0;
    ck_assert(pki_make(&rx->pki));
    rx->ca_pem = pki_pem(rx->pki.ca);
    ck_assert_ptr_nonnull(rx->ca_pem);
    /* the server first: it must not inherit a descriptor of the test */
    ck_assert_msg(redis_server_start(&rx->server, rx->pki.good, rx->pki.key,
                                     rx->pki.ca, NULL),
                  "redis-server did not start");
    rx->fds_at_start = open_fds();
    struct event_config *cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER |
                                   EVENT_BASE_FLAG_IGNORE_ENV);
    rx->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    ck_assert_ptr_nonnull(rx->base);
}

void redis_fixture_teardown(void)
{
    /* libevent closes the sockets of freed bufferevents from the loop */
    run_ms(20);
    int events = event_base_get_num_events(
        rx->base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE);
    event_base_free(rx->base);
    rx->base = NULL;
    int fds = open_fds();
    redis_server_dispose(&rx->server);
    free(rx->ca_pem);
    pki_free(&rx->pki);
    ck_assert_msg(events == 0, "%d events left on the base", events);
    ck_assert_msg(fds == rx->fds_at_start, "%d descriptors open, %d at start",
                  fds, rx->fds_at_start);
}

void redis_fixture_add(TCase *tc, int seconds)
{
    tcase_add_checked_fixture(tc, redis_fixture_setup, redis_fixture_teardown);
    tcase_set_timeout(tc, seconds);
}

int redis_test_main(Suite *(*make_suite)(void))
{
    if (!redis_server_installed()) {
        printf("redis-server is not installed: the redis suite is "
               "skipped\n");
        return 77;
    }
    return tide_test_run(make_suite());
}

/* ---- clients ---- */

struct tide_redis_options tcp_options(int64_t size)
{
    return (struct tide_redis_options){
        .tcp = {.host = "127.0.0.1", .port = rx->server.port},
        .pool = {.limits = TIDE_LIMITS(.size = size), .seed = 1},
    };
}

struct tide_tls_options tls_options(const char *name)
{
    return (struct tide_tls_options){.ca_pem = rx->ca_pem, .verify_name = name};
}

struct tide_redis_client *client_new(const struct tide_redis_options *o)
{
    struct tide_redis_client *c = NULL;
    int rc = tide_redis_client_new(rx->base, o, &c);
    ck_assert_msg(rc == 0, "tide_redis_client_new: %s",
                  tide_redis_strerror(rc));
    return c;
}

static bool server_has(void *clients)
{
    return redis_clients(&rx->server) == *(long *)clients;
}

static bool no_make_running(void *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s.pool.making == 0;
}

void client_end(struct tide_redis_client *c)
{
    /* a make the pool let through as a probe while makes failed runs on
     * after the command that waited on it timed out: let it end */
    (void)run_until(no_make_running, c, 3000);
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    ck_assert_int_eq(s.pool.lent, 0);
    ck_assert_int_eq(s.pool.making, 0);
    /* every connection made is live or was destroyed, once */
    ck_assert_uint_eq(s.net.made, s.net.destroyed + (uint64_t)s.net.live);
    ck_assert_uint_eq(s.pool.made, s.pool.destroyed + (uint64_t)s.pool.live);
    ck_assert_int_eq(s.net.live, s.pool.live);
    /* the server's other clients (another client of the test) stay */
    long others = redis_clients(&rx->server) - s.net.live;
    tide_redis_client_free(c);
    run_ms(10);
    ck_assert_msg(run_until(server_has, &others, 2000),
                  "the server has %ld clients, %ld expected",
                  redis_clients(&rx->server), others);
}

void record(struct tide_redis_client *c, int status,
            const struct redisReply *reply, const char *message, void *arg)
{
    (void)c;
    struct answer *a = arg;
    a->calls++;
    a->status = status;
    a->order = ++answers_given;
    snprintf(a->message, sizeof a->message, "%s", message ? message : "");
    free(a->str);
    a->str = NULL;
    a->type = reply ? reply->type : 0;
    if (!reply)
        return;
    a->integer = reply->integer;
    a->elements = reply->elements;
    if (reply->str) {
        a->len = reply->len;
        a->str = malloc(reply->len + 1);
        ck_assert_ptr_nonnull(a->str);
        memcpy(a->str, reply->str, reply->len);
        a->str[reply->len] = '\0';
    }
}

void answer_clear(struct answer *a)
{
    free(a->str);
    memset(a, 0, sizeof *a);
}

bool answered(void *answer)
{
    return ((struct answer *)answer)->calls > 0;
}

struct answer cmd(struct tide_redis_client *c, int ms, int argc,
                  const char *const *argv)
{
    struct answer a = {0};
    int rc = tide_redis_command(c, argc, argv, NULL, record, &a);
    ck_assert_msg(rc == 0, "tide_redis_command(%s): %s", argv[0],
                  tide_redis_strerror(rc));
    ck_assert_msg(run_until(answered, &a, ms), "%s: no answer within %d ms",
                  argv[0], ms);
    ck_assert_int_eq(a.calls, 1);
    return a;
}

struct many {
    struct answer a[64];
    int n;
};

static bool all_answered(void *arg)
{
    struct many *m = arg;
    for (int i = 0; i < m->n; i++)
        if (!m->a[i].calls)
            return false;
    return true;
}

void fill(struct tide_redis_client *c, int n)
{
    static struct many m;
    ck_assert_int_le(n, 64);
    memset(&m, 0, sizeof m);
    m.n = n;
    const char *argv[] = {"DEBUG", "SLEEP", "0"};
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(tide_redis_command(c, 3, argv, NULL, record, &m.a[i]),
                         0);
    ck_assert(run_until(all_answered, &m, 5000));
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(m.a[i].status, 0);
        answer_clear(&m.a[i]);
    }
}
