/* tls/watch.c, the check before lending as the proxy's upstream connections
 * meet it: a connection given back clean is lent again without a look at
 * its socket, but never once a poll has reported something on it (a byte,
 * a FIN), even when the callback that asks for the connection runs ahead
 * of the watch's own, which would have read it: the watch's read event is
 * then active, and the check sees that.
 *
 * The base is a plain one (a coarse cached time, shared by polls a few ms
 * apart), with two priorities so the ask runs first. No server beyond a listener of the test's own on 127.0.0.1; each
 * test ends with the loop idle and no descriptor left open. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <tidepool/tls.h>
#include <unistd.h>

#include "loop.h"
#include "runner.h"

#define ROUNDS 20 /* one connection each */

enum arrival {
    BYTE, /* the upstream speaks unasked (an HTTP 408 before it closes) */
    FIN,  /* the upstream closes the kept connection */
};

struct world {
    struct event_base *base;
    evutil_socket_t listener;
    struct tide_tcp_factory *f;
    struct tide_factory table;
    struct tide_evpool *pool;
    evutil_socket_t bell[2]; /* a socketpair: bell[0] readable first */
    struct event *ring;      /* on bell[0]: asks for the connection */
    struct event *start;     /* a timer: the release, then the arrival */
    enum arrival arrival;
    struct bufferevent *lent; /* the connection of this round */
    evutil_socket_t server;   /* its far end */
    int asked;                /* try_acquire answers from `ring` */
    int got;                  /* ... that lent a connection */
    bool clean;               /* what a lent one held: nothing */
    bool acquired;
};

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)why;
    struct world *w = arg;
    ck_assert_int_eq(status, 0);
    w->lent = resource;
    w->acquired = true;
}

static bool acquired(void *arg)
{
    return ((struct world *)arg)->acquired;
}

/* Runs from the poll after the arrival, ahead of the watch's read callback
 * (a higher priority). */
static void on_ring(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct world *w = arg;
    char b;
    ck_assert_int_eq(recv(fd, &b, 1, 0), 1);
    void *r = NULL;
    int rc = tide_evpool_try_acquire(w->pool, &r);
    w->asked++;
    if (rc != 0)
        return;
    w->got++;
    /* what the borrower would read first */
    evutil_socket_t ufd = bufferevent_getfd(r);
    char peek;
    ssize_t n = recv(ufd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
    w->clean = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
               evbuffer_get_length(bufferevent_get_input(r)) == 0;
    ck_assert_int_eq(tide_evpool_discard(w->pool, r), 0);
}

/* In one callback, so the release check and the arrival share a round: the
 * connection goes back clean, then the bell rings and the upstream speaks
 * or closes. The poll that follows sees both. It runs at the lower
 * priority, so the loop polls again before it runs the higher queue where
 * the round's end waits: the case of a round that ends after a poll. */
static void on_start(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct world *w = arg;
    ck_assert_int_eq(tide_evpool_release(w->pool, w->lent), 0);
    w->lent = NULL;
    ck_assert_int_eq(send(w->bell[1], "!", 1, 0), 1);
    if (w->arrival == BYTE) {
        ck_assert_int_eq(send(w->server, "H", 1, 0), 1);
    } else {
        close(w->server);
        w->server = -1;
    }
}

static void world_start(struct world *w)
{
    memset(w, 0, sizeof *w);
    w->server = -1;
    struct event_config *cfg = event_config_new();
    /* no PRECISE_TIMER: the coarse cached time */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_IGNORE_ENV);
    w->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    ck_assert_ptr_nonnull(w->base);
    /* the bell's callback at priority 0, the watch's (the preset, the
     * middle one) after it: whatever order the poll reports them in, the
     * ask comes before the watch reads */
    ck_assert_int_eq(event_base_priority_init(w->base, 2), 0);

    w->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(w->listener, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(w->listener, (struct sockaddr *)&sin, sizeof sin), 0);
    ck_assert_int_eq(listen(w->listener, 16), 0);
    socklen_t sl = sizeof sin;
    ck_assert_int_eq(getsockname(w->listener, (struct sockaddr *)&sin, &sl), 0);

    struct tide_tcp_options o = {.host = "127.0.0.1",
                                 .port = ntohs(sin.sin_port)};
    ck_assert_int_eq(tide_tcp_factory_new(w->base, &o, &w->f), 0);
    tide_tcp_factory_bind(w->f, &w->table);
    struct tide_evpool_options po = {
        .limits = TIDE_LIMITS(.size = 1),
        .make_timeout = TIDE_SEC(10),
        .acquire_timeout = TIDE_SEC(10),
        .seed = 1,
    };
    ck_assert_int_eq(tide_evpool_new(w->base, &w->table, &po, &w->pool), 0);

    ck_assert_int_eq(socketpair(AF_UNIX,
                                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                                w->bell),
                     0);
    w->ring = event_new(w->base, w->bell[0], EV_READ | EV_PERSIST, on_ring, w);
    ck_assert_int_eq(event_priority_set(w->ring, 0), 0);
    w->start = evtimer_new(w->base, on_start, w);
    ck_assert_int_eq(event_add(w->ring, NULL), 0);
}

static void world_stop(struct world *w)
{
    tide_evpool_free(w->pool);
    tide_tcp_factory_free(w->f);
    event_free(w->ring);
    event_free(w->start);
    close(w->bell[0]);
    close(w->bell[1]);
    close(w->listener);
    /* the bufferevents' finalizers close their sockets */
    tide_test_run_until(w->base, NULL, NULL, 20);
    event_base_free(w->base);
}

/* One round: a new connection lent and given back once (the pool has a
 * record of it), lent again, then the release and the arrival in one
 * callback and the ask from the poll after. */
static void one_round(struct world *w, enum arrival arrival)
{
    w->arrival = arrival;
    w->acquired = false;
    struct tide_acquire *h;
    ck_assert_int_eq(tide_evpool_acquire(w->pool, 0, on_acquired, w, &h), 0);
    evutil_socket_t s = -1;
    int64_t end = tide_test_now_ms() + 5000;
    while ((s < 0 || !w->acquired) && tide_test_now_ms() < end) {
        tide_test_run_until(w->base, acquired, w, 2);
        if (s < 0)
            s = accept4(w->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    }
    ck_assert_int_ge(s, 0);
    ck_assert(w->acquired);
    w->server = s;
    int asked = w->asked;
    int got = w->got;
    struct timeval zero = {0, 0};
    ck_assert_int_eq(event_add(w->start, &zero), 0);
    end = tide_test_now_ms() + 5000;
    while (w->asked == asked && tide_test_now_ms() < end)
        tide_test_run_until(w->base, NULL, NULL, 2);
    ck_assert_int_eq(w->asked, asked + 1);
    /* lent with what came, it would be the borrower's first bytes */
    if (w->got > got)
        ck_assert_msg(w->clean, "lent with a byte or a FIN unread");
    if (w->server >= 0)
        close(w->server);
    w->server = -1;
    /* the watch's callbacks run now, for what was not lent */
    tide_test_run_until(w->base, NULL, NULL, 10);
}

static void run_case(enum arrival arrival)
{
    int fds = tide_test_open_fds();
    struct world w;
    world_start(&w);
    for (int i = 0; i < ROUNDS; i++)
        one_round(&w, arrival);
    /* each was asked for once, and none was lent with its arrival */
    ck_assert_int_eq(w.asked, ROUNDS);
    ck_assert_int_eq(w.got, 0);
    world_stop(&w);
    ck_assert_int_eq(tide_test_open_fds(), fds);
}

START_TEST(byte_after_release_seen_by_a_poll_is_never_lent)
{
    run_case(BYTE);
}
END_TEST

START_TEST(fin_after_release_seen_by_a_poll_is_never_lent)
{
    run_case(FIN);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("watch");
    TCase *tc = tcase_create("lend check");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, byte_after_release_seen_by_a_poll_is_never_lent);
    tcase_add_test(tc, fin_after_release_seen_by_a_poll_is_never_lent);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(make_suite)
