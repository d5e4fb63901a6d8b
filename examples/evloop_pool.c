/* A pool on a libevent loop with a factory of its own: plain TCP
 * connections to a line-echo server on 127.0.0.1, made with
 * bufferevent_socket_connect. The factory is the part a program writes for
 * any resource (a hiredis context, a database handle, a child process); the
 * pool does the queueing, timeouts, reuse and guards.
 *
 * It sends 20 lines one after another, each read back whole before its
 * connection is released, and checks that one connection carried them all;
 * then 8 callers at once on a pool of 4, and checks that every caller was
 * served by at most 4 connections. It exits 0 when both held, 1 otherwise.
 *
 * Usage: evloop_pool PORT   (an echo server on 127.0.0.1:PORT)
 * Build: cc evloop_pool.c $(pkg-config --cflags --libs tidepool libevent_core)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <tidepool/evloop.h>

/* README excerpt "evloop-factory" begins */
/* The factory's state: where to connect, and what it has done. */
struct line_factory {
    struct event_base *base;
    struct sockaddr_in to;
    int made;
};

/* One make in progress: the bufferevent connecting, and the token the pool
 * is waiting on. */
struct making {
    struct line_factory *f;
    struct tide_make *token;
    struct bufferevent *bev;
};

static void on_connect(struct bufferevent *bev, short what, void *arg)
{
    struct making *m = arg;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    if (what & BEV_EVENT_CONNECTED) {
        /* a new bufferevent writes only: reading also serves the idle watch */
        bufferevent_enable(bev, EV_READ | EV_WRITE);
        m->f->made++;
        tide_evpool_made(m->token, bev); /* the pool owns bev now */
    } else {
        bufferevent_free(bev);
        tide_evpool_unmade(m->token, TIDE_EMAKE, "connect failed");
    }
    free(m);
}

/* Begins a connect; answers the token from the loop when it is done. */
static void line_make(struct tide_evpool *pool, struct tide_make *token,
                      void *arg)
{
    (void)pool;
    struct line_factory *f = arg;
    struct making *m = malloc(sizeof *m);
    struct bufferevent *bev = bufferevent_socket_new(
        f->base, -1, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!m || !bev) {
        free(m);
        if (bev)
            bufferevent_free(bev);
        tide_evpool_unmade(token, TIDE_ENOMEM, "out of memory");
        return;
    }
    *m = (struct making){.f = f, .token = token, .bev = bev};
    bufferevent_setcb(bev, NULL, NULL, on_connect, m);
    if (bufferevent_socket_connect(bev, (struct sockaddr *)&f->to,
                                   sizeof f->to) != 0) {
        bufferevent_free(bev);
        free(m);
        tide_evpool_unmade(token, TIDE_EMAKE, "connect failed at once");
    }
}

/* Called exactly once for every connection made. */
static void line_destroy(void *resource, void *arg)
{
    (void)arg;
    bufferevent_free(resource);
}

/* On release: a connection with bytes left unread is not reused, as the
 * next caller would read someone else's answer. */
static bool line_reusable(void *resource, void *arg)
{
    (void)arg;
    return evbuffer_get_length(bufferevent_get_input(resource)) == 0;
}

/* While idle, anything the server does (a close, a reset, bytes nobody
 * asked for) means the connection is gone. */
static void on_idle_read(struct bufferevent *bev, void *pool)
{
    tide_evpool_lost(pool, bev);
}

static void on_idle_close(struct bufferevent *bev, short what, void *pool)
{
    (void)what;
    tide_evpool_lost(pool, bev);
}

static void line_watch(struct tide_evpool *pool, void *resource, bool idle,
                       void *arg)
{
    (void)arg;
    if (idle)
        bufferevent_setcb(resource, on_idle_read, NULL, on_idle_close, pool);
    else
        bufferevent_setcb(resource, NULL, NULL, NULL, NULL);
}
/* README excerpt "evloop-factory" ends */

/* One caller: a line out, the same line back, then the connection goes
 * back to the pool. */
struct caller {
    struct tide_evpool *pool;
    char line[32];
    int done; /* 0 while running, 1 answered in full, -1 failed */
};

static void on_echo(struct bufferevent *bev, void *arg)
{
    struct caller *c = arg;
    char *got =
        evbuffer_readln(bufferevent_get_input(bev), NULL, EVBUFFER_EOL_LF);
    if (!got)
        return; /* the line goes on */
    bool same = strcmp(got, c->line) == 0;
    free(got);
    if (same) {
        tide_evpool_release(c->pool, bev); /* read whole: reusable */
        c->done = 1;
    } else {
        tide_evpool_discard(c->pool, bev);
        c->done = -1;
    }
}

static void on_broken(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct caller *c = arg;
    tide_evpool_discard(c->pool, bev); /* closed, reset, timed out */
    c->done = -1;
}

/* README excerpt "evloop-acquire" begins */
static void on_resource(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    struct caller *c = arg;
    if (status != 0) { /* timed out, shed, closed, the make failed: why */
        fprintf(stderr, "no connection: %s\n", why->message);
        c->done = -1;
        return;
    }
    struct bufferevent *bev = resource; /* lent until released */
    struct timeval limit = {2, 0};
    bufferevent_setcb(bev, on_echo, NULL, on_broken, c);
    bufferevent_set_timeouts(bev, &limit, &limit);
    bufferevent_write(bev, c->line, strlen(c->line));
    bufferevent_write(bev, "\n", 1);
}
/* README excerpt "evloop-acquire" ends */

static bool all_done(const struct caller *c, int n)
{
    for (int i = 0; i < n; i++)
        if (!c[i].done)
            return false;
    return true;
}

/* n callers at once; true when every one was answered in full. */
static bool run_callers(struct event_base *base, struct tide_evpool *pool,
                        int n)
{
    struct caller c[8];
    for (int i = 0; i < n; i++) {
        c[i] = (struct caller){.pool = pool};
        snprintf(c[i].line, sizeof c[i].line, "hello %d", i);
        if (tide_evpool_acquire(pool, 0, on_resource, &c[i], NULL) != 0)
            return false;
    }
    while (!all_done(c, n)) /* bounded: 2 s to acquire, 2 s to answer */
        event_base_loop(base, EVLOOP_ONCE);
    for (int i = 0; i < n; i++)
        if (c[i].done != 1)
            return false;
    return true;
}

static void on_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    *(bool *)arg = true;
}

/* PORT read whole, digits only; 0 when it is not a number (strtol alone
 * takes "5x" as 5 and "abc" as 0). */
static long read_port(const char *v)
{
    char *end;
    errno = 0;
    long port = strtol(v, &end, 10);
    bool whole = v[0] >= '0' && v[0] <= '9' && *end == '\0' && errno == 0;
    return whole ? port : 0;
}

int main(int argc, char **argv)
{
    long port = argc == 2 ? read_port(argv[1]) : 0;
    if (port < 1 || port > 65535) {
        fprintf(stderr, "usage: %s PORT (an echo server on 127.0.0.1)\n",
                argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a write to a closed peer is an error */
    struct event_base *base = event_base_new();
    if (!base)
        return 1;
    /* README excerpt "evloop-pool" begins */
    struct line_factory lines = {
        .base = base,
        .to = {.sin_family = AF_INET,
               .sin_port = htons((uint16_t)port),
               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
    };
    struct tide_factory factory = {
        .make = line_make,       /* answers with tide_evpool_made/unmade */
        .destroy = line_destroy, /* exactly once per connection made */
        .reusable = line_reusable,
        .watch = line_watch,
        .arg = &lines,
    };
    struct tide_backoff backoff = {0}; /* after a failed connect */
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 4, .keep = TIDE_MIN(5)),
        .acquire_timeout = TIDE_SEC(2),
        .ward = {.backoff = &backoff},
    };
    struct tide_evpool *pool;
    if (tide_evpool_new(base, &factory, &o, &pool) != 0) {
        event_base_free(base);
        return 1;
    }
    /* README excerpt "evloop-pool" ends */

    int failures = 0;
    bool served = true;
    for (int i = 0; i < 20 && served; i++)
        served = run_callers(base, pool, 1);
    printf("20 lines one after another: %s, %d connection(s)\n",
           served ? "all echoed" : "NOT all echoed", lines.made);
    failures += !served || lines.made != 1;

    served = run_callers(base, pool, 8);
    struct tide_evpool_stats st;
    tide_evpool_stats(pool, &st);
    printf("8 callers at once on a pool of 4: %s, %d connection(s), "
           "%lld live after\n",
           served ? "all echoed" : "NOT all echoed", lines.made,
           (long long)st.live);
    failures += !served || lines.made > 4 || st.dirty != 0;

    /* close: waiters failed, idle ones destroyed, then on_closed */
    bool closed = false;
    tide_evpool_close(pool, on_closed, &closed);
    while (!closed)
        event_base_loop(base, EVLOOP_ONCE);
    tide_evpool_free(pool);
    event_base_free(base);
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
