#include "load.h"
#include "loop.h"

#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <tidepool/tls.h>

#include "certs.h"
#include "echo.h"
#include "mux.h"

#define CALLERS      50
#define POOL_SIZE    16
#define MAX_ACQUIRES 30000 /* per phase, whatever the clock says */

/* The phase's clock, ms from its start. */
#define WARM_MS        200
#define FAULT_MS       1200
#define HEAL_MS        500
#define CLOSE_GRACE_MS 5000 /* tide_evpool_close must be done by then */

#define ACQUIRE_TIMEOUT_MS 1000
#define IO_TIMEOUT_MS      1000
/* How late an answer may come past the acquire timeout: timer slack and
 * loop lag, generous enough for a sanitizer build on a busy machine. */
#define ANSWER_SLACK_MS 400

/* A request and its echo: '#', the id in 16 hex digits, ':', the caller in
 * 4, ':', dots up to FRAME - 1, '\n'. */
#define FRAME 32

enum stage { WARM, FAULT, HEAL, STOPPING };
enum caller_state { C_IDLE, C_ACQUIRING, C_EXCHANGE };

struct load;

struct caller {
    struct load *ld;
    int index;
    enum caller_state state;
    int64_t deadline; /* ms: the acquire's answer is due by then */
    bool late;        /* this acquire was counted as hung */
    bool up;          /* this acquire was issued while the backend was up */
    bool alone;       /* this acquire asked for an exclusive loan */
    struct bufferevent *bev; /* lent to this caller */
    uint64_t id;             /* of the request in flight */
    struct event *timer;     /* think time, or the pause after an error */
    uint32_t rng;
};

/* Everything one phase owns; torn down from the loop. */
/* The factory's table behind one that checks each destroy: a connection
 * the protocol layer still has borrowers on must never be destroyed. */
struct guarded {
    struct tide_factory inner;
    struct load *ld;
};

struct load {
    const struct chaos_phase *ph;
    struct chaos_figures *fig;
    struct event_base *base;
    struct evdns_base *dns; /* no nameservers: nothing here asks DNS */
    struct pki pki;
    bool pki_made;
    char *ca_pem;
    struct chaos_echo *echo;
    struct chaos_proxy *proxy;
    struct tide_tcp_factory *tcp;
    struct tide_tls_factory *tls;
    struct tide_factory table;
    struct guarded guard;
    struct mux_server *mux_server; /* shared loans: the backend */
    struct mux_client *mux;        /* ... and the protocol layer */
    int ticks;
    struct tide_evpool *pool;
    struct event *ticker;
    int64_t t0;
    int64_t stop_at;
    enum stage stage;
    uint64_t next_id;
    bool torn_down;
    struct caller callers[CALLERS];
};

static struct timeval ms_tv(int64_t ms)
{
    return (struct timeval){(time_t)(ms / 1000),
                            (suseconds_t)((ms % 1000) * 1000)};
}

static uint32_t next_rand(struct caller *c)
{
    /* xorshift32: each caller its own reproducible sequence */
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 17;
    c->rng ^= c->rng << 5;
    return c->rng;
}

static bool backend_up(const struct load *ld)
{
    return !ld->ph->backend_down || ld->stage == WARM;
}

/* ---- one caller ---- */

static void caller_acquire(struct caller *c);

static void caller_later(struct caller *c, int64_t ms)
{
    if (c->ld->stage >= STOPPING)
        return;
    struct timeval tv = ms_tv(ms);
    evtimer_add(c->timer, &tv);
}

/* Think a little (callers differ, so the pool sees bursts and quiet), or
 * after an error wait a little longer: a caller that retries at once
 * against a refusal only spins. */
static int64_t think_ms(struct caller *c)
{
    int most = c->ld->ph->think_ms;
    if (most <= 0)
        most = 2 + 4 * (c->index % 5);
    return 1 + next_rand(c) % (uint32_t)most;
}

static int64_t pause_ms(struct caller *c)
{
    return 10 + next_rand(c) % 20;
}

/* How an exchange ended. */
enum end {
    END_GOOD,  /* its own reply: released */
    END_STALE, /* a close before any byte of the reply: stale */
    END_BAD,   /* anything else: discarded */
};

/* The exchange is over (its loan ended): think, or pause after an error
 * (a stale connection is no reason to wait: the next one serves). */
static void caller_done(struct caller *c, enum end how)
{
    c->bev = NULL;
    c->state = C_IDLE;
    caller_later(c, how == END_BAD ? pause_ms(c) : think_ms(c));
}

static void end_exchange(struct caller *c, enum end how)
{
    struct load *ld = c->ld;
    struct bufferevent *bev = c->bev;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(bev, NULL, NULL);
    int rc = how == END_GOOD    ? tide_evpool_release(ld->pool, bev)
             : how == END_STALE ? tide_evpool_stale(ld->pool, bev)
                                : tide_evpool_discard(ld->pool, bev);
    if (rc < 0)
        ld->fig->misuse++;
    caller_done(c, how);
}

/* Whether got (FRAME bytes, then `extra` more or not) is exactly this
 * caller's reply; what it was else is counted. */
static bool judge(struct caller *c, const char *got, bool extra)
{
    struct chaos_figures *fig = c->ld->fig;
    char *end = NULL;
    uint64_t id = 0;
    bool framed = got[0] == '#' && got[FRAME - 1] == '\n';
    if (framed) {
        id = strtoull(got + 1, &end, 16);
        framed = end == got + 17 && *end == ':';
    }
    /* another request's reply is the wrong caller's, whatever follows it
     * (its own often does, when both came late together) */
    if (framed && id != c->id) {
        fig->wrong_caller++;
        return false;
    }
    if (!framed || extra) {
        fig->malformed++;
        return false;
    }
    fig->ok++;
    if (c->ld->stage == HEAL)
        fig->ok_healed++;
    return true;
}

/* The reply: exactly one frame, and it must be this caller's. */
static void on_reply(struct bufferevent *bev, void *arg)
{
    struct caller *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (evbuffer_get_length(in) < FRAME)
        return;
    char got[FRAME + 1];
    bool extra = evbuffer_get_length(in) > FRAME;
    evbuffer_remove(in, got, FRAME);
    got[FRAME] = '\0';
    end_exchange(c, judge(c, got, extra) ? END_GOOD : END_BAD);
}

/* A reply routed by the protocol layer (shared loans), which ends the
 * loan as this says. */
static bool on_mux_reply(int status, const char *frame, void *arg)
{
    struct caller *c = arg;
    bool good = false;
    if (status != 0) {
        c->ld->fig->io_errors++;
    } else {
        char got[FRAME + 1];
        memcpy(got, frame, FRAME);
        got[FRAME] = '\0';
        good = judge(c, got, false);
    }
    caller_done(c, good ? END_GOOD : END_BAD);
    return good;
}

/* A close (EOF, a reset, an error) before any byte of the reply came is
 * a stale loan; a timeout, or a close after part of it, is a failure. */
static void on_trouble(struct bufferevent *bev, short what, void *arg)
{
    struct caller *c = arg;
    c->ld->fig->io_errors++;
    ERR_clear_error(); /* a TLS failure's queue is this connection's */
    bool unanswered = !(what & BEV_EVENT_TIMEOUT) &&
                      evbuffer_get_length(bufferevent_get_input(bev)) == 0;
    end_exchange(c, unanswered ? END_STALE : END_BAD);
}

static void exchange(struct caller *c, struct bufferevent *bev)
{
    struct load *ld = c->ld;
    ld->fig->exchanges++;
    c->bev = bev;
    c->state = C_EXCHANGE;
    c->id = ++ld->next_id;
    char frame[FRAME + 1];
    int n = snprintf(frame, sizeof frame, "#%016" PRIx64 ":%04x:", c->id,
                     (unsigned)c->index);
    memset(frame + n, '.', (size_t)(FRAME - 1 - n));
    frame[FRAME - 1] = '\n';
    if (ld->mux && !c->alone) {
        mux_send(ld->mux, bev, c->id, frame, on_mux_reply, c);
        return;
    }
    if (ld->mux && mux_holds(ld->mux, bev))
        ld->fig->alone_shared++; /* an exclusive loan, shared */
    struct timeval tv = ms_tv(IO_TIMEOUT_MS);
    bufferevent_setcb(bev, on_reply, NULL, on_trouble, c);
    bufferevent_set_timeouts(bev, &tv, &tv);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    /* one write: one TLS record, one segment */
    bufferevent_write(bev, frame, FRAME);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    struct caller *c = arg;
    struct load *ld = c->ld;
    struct chaos_figures *fig = ld->fig;
    if (c->state != C_ACQUIRING) {
        fig->doubled++;
        if (resource)
            (void)tide_evpool_discard(ld->pool, resource);
        return;
    }
    fig->answers++;
    c->state = C_IDLE;
    if (tide_test_now_ms() > c->deadline && !c->late)
        fig->hung++;
    if (status == 0) {
        exchange(c, resource);
        return;
    }
    if (status == TIDE_EUNAVAILABLE && why->guard == TIDE_GUARD_BREAKER) {
        fig->refused++;
        /* issued and answered while up: one issued just before the
         * backend went down may fairly be refused once it is */
        if (c->up && backend_up(ld))
            fig->refused_up++;
    } else if (status == TIDE_ETIMEDOUT)
        fig->timeouts++;
    else if (!(status == TIDE_ECLOSED && ld->stage >= STOPPING))
        fig->other_errors++;
    caller_later(c, pause_ms(c));
}

static void caller_acquire(struct caller *c)
{
    struct load *ld = c->ld;
    struct chaos_figures *fig = ld->fig;
    if (ld->stage >= STOPPING || fig->acquires >= MAX_ACQUIRES)
        return;
    fig->acquires++;
    c->up = backend_up(ld);
    if (c->up)
        fig->acquires_up++;
    c->deadline = tide_test_now_ms() + ACQUIRE_TIMEOUT_MS + ANSWER_SLACK_MS;
    c->late = false;
    c->state = C_ACQUIRING;
    c->alone = ld->ph->alone_every > 0 && c->index % ld->ph->alone_every == 0;
    int rc = c->alone ? tide_evpool_acquire_alone(
                            ld->pool, TIDE_MS(ACQUIRE_TIMEOUT_MS),
                            on_acquired, c, NULL)
                      : tide_evpool_acquire(ld->pool,
                                            TIDE_MS(ACQUIRE_TIMEOUT_MS),
                                            on_acquired, c, NULL);
    if (rc != 0) { /* refused at once, no callback: an answer too */
        c->state = C_IDLE;
        fig->answers++;
        fig->other_errors++;
        caller_later(c, pause_ms(c));
    }
}

static void on_caller_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    caller_acquire(arg);
}

/* ---- the phase ---- */

static void teardown(struct load *ld)
{
    struct chaos_figures *fig = ld->fig;
    if (ld->torn_down)
        return;
    ld->torn_down = true;
    for (int i = 0; i < CALLERS; i++) {
        struct caller *c = &ld->callers[i];
        if (c->state == C_ACQUIRING && !c->late)
            fig->hung++; /* never answered */
        if (c->timer)
            event_free(c->timer);
        c->timer = NULL;
    }
    if (ld->pool) {
        if (!fig->closed) {
            struct tide_evpool_stats st;
            tide_evpool_stats(ld->pool, &st);
            fig->pool_made = st.made;
            fig->pool_destroyed = st.destroyed;
        }
        tide_evpool_free(ld->pool);
        ld->pool = NULL;
    }
    struct tide_net_stats ns = {0};
    if (ld->tcp) {
        tide_tcp_factory_stats(ld->tcp, &ns);
        tide_tcp_factory_free(ld->tcp);
    }
    if (ld->tls) {
        tide_tls_factory_stats(ld->tls, &ns);
        tide_tls_factory_free(ld->tls);
    }
    ld->tcp = NULL;
    ld->tls = NULL;
    fig->made = ns.made;
    fig->destroyed = ns.destroyed;
    fig->live = ns.live;
    if (ld->dns)
        evdns_base_free(ld->dns, 0);
    ld->dns = NULL;
    if (ld->proxy) {
        struct chaos_proxy_stats ps;
        chaos_proxy_stats(ld->proxy, &ps);
        fig->faults = ps.faults;
        chaos_proxy_free(ld->proxy);
    }
    ld->proxy = NULL;
    if (ld->mux) {
        struct mux_stats ms;
        mux_client_stats(ld->mux, &ms);
        fig->breaks = ms.breaks;
        fig->stray = ms.stray;
        fig->drains = ms.drains;
        fig->misuse += ms.refused;
        fig->most_at_break = ms.most_at_break;
        fig->most_shared = ms.most_shared;
        fig->sessions_left = ms.sessions;
        if (ms.sessions == 0)
            mux_client_free(ld->mux); /* else leaked: the check says so */
        ld->mux = NULL;
    }
    if (ld->mux_server) {
        fig->faults += mux_server_closes(ld->mux_server) + fig->drains;
        mux_server_free(ld->mux_server);
    }
    ld->mux_server = NULL;
    chaos_echo_free(ld->echo);
    ld->echo = NULL;
    if (ld->ticker)
        event_free(ld->ticker);
    ld->ticker = NULL;
}

static void on_teardown(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    teardown(arg);
}

static void on_closed(struct tide_evpool *pool, void *arg)
{
    struct load *ld = arg;
    struct chaos_figures *fig = ld->fig;
    struct tide_evpool_stats st;
    tide_evpool_stats(pool, &st);
    fig->closed = true;
    fig->pool_made = st.made;
    fig->pool_destroyed = st.destroyed;
    fig->make_failures = st.make_failures;
    fig->lost = st.lost;
    fig->stale_loans = st.stale_loans;
    /* the pool and its factory are freed from the loop, not inside the
     * pool's own callback */
    struct timeval zero = {0, 0};
    event_base_once(ld->base, -1, EV_TIMEOUT, on_teardown, ld, &zero);
}

static void begin_stop(struct load *ld)
{
    ld->stage = STOPPING;
    ld->stop_at = tide_test_now_ms();
    for (int i = 0; i < CALLERS; i++)
        evtimer_del(ld->callers[i].timer);
    /* callers still waiting get TIDE_ECLOSED; loans come back as their
     * exchanges end */
    if (tide_evpool_close(ld->pool, on_closed, ld) != 0)
        ld->fig->setup_ok = false;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct load *ld = arg;
    int64_t now = tide_test_now_ms();
    for (int i = 0; i < CALLERS; i++) {
        struct caller *c = &ld->callers[i];
        if (c->state == C_ACQUIRING && now > c->deadline && !c->late) {
            c->late = true;
            ld->fig->hung++;
        }
    }
    int64_t t = now - ld->t0;
    if (ld->stage == FAULT && ld->ph->drain && ++ld->ticks % 3 == 0)
        (void)mux_drain_busiest(ld->mux);
    if (ld->stage == WARM && t >= WARM_MS) {
        ld->stage = FAULT;
        if (!chaos_proxy_set(ld->proxy, ld->ph->fault, ld->ph->knobs))
            ld->fig->setup_ok = false;
        if (ld->mux_server)
            mux_server_close_every(ld->mux_server, ld->ph->close_every);
    } else if (ld->stage == FAULT && t >= WARM_MS + FAULT_MS) {
        if (ld->mux_server)
            mux_server_close_every(ld->mux_server, 0);
        ld->stage = HEAL;
        if (!chaos_proxy_set(ld->proxy, CHAOS_NONE, ld->ph->knobs))
            ld->fig->setup_ok = false;
    } else if (ld->stage == HEAL && t >= WARM_MS + FAULT_MS + HEAL_MS) {
        begin_stop(ld);
    } else if (ld->stage == STOPPING && now - ld->stop_at > CLOSE_GRACE_MS) {
        ld->fig->close_forced = true;
        teardown(ld); /* frees this timer too: safe from its callback */
    }
}

/* ---- the guarded factory: each hook passes through to the factory's ---- */

#define INNER(arg) (&((struct guarded *)(arg))->inner)

static void g_make(struct tide_evpool *p, struct tide_make *t, void *arg)
{
    INNER(arg)->make(p, t, INNER(arg)->arg);
}

static void g_destroy(void *r, void *arg)
{
    struct guarded *g = arg;
    if (g->ld->mux && mux_holds(g->ld->mux, r))
        g->ld->fig->destroyed_lent++;
    g->inner.destroy(r, g->inner.arg);
}

static void g_cancel(struct tide_make *t, void *arg)
{
    INNER(arg)->cancel(t, INNER(arg)->arg);
}

static bool g_alive(void *r, void *arg)
{
    return INNER(arg)->alive(r, INNER(arg)->arg);
}

static bool g_reusable(void *r, void *arg)
{
    return INNER(arg)->reusable(r, INNER(arg)->arg);
}

static void g_check(struct tide_evpool *p, struct tide_check *t, void *r,
                    void *arg)
{
    INNER(arg)->check(p, t, r, INNER(arg)->arg);
}

static void g_reset(struct tide_evpool *p, struct tide_reset *t, void *r,
                    void *arg)
{
    INNER(arg)->reset(p, t, r, INNER(arg)->arg);
}

static void g_watch(struct tide_evpool *p, void *r, bool idle, void *arg)
{
    INNER(arg)->watch(p, r, idle, INNER(arg)->arg);
}

static void g_stale(void *r, void *arg)
{
    INNER(arg)->stale(r, INNER(arg)->arg);
}

/* ld->table becomes the guard over the factory's own table. */
static void guard(struct load *ld)
{
    struct tide_factory *in = &ld->guard.inner;
    *in = ld->table;
    ld->guard.ld = ld;
    ld->table = (struct tide_factory){
        .make = g_make,
        .destroy = g_destroy,
        .cancel = in->cancel ? g_cancel : NULL,
        .alive = in->alive ? g_alive : NULL,
        .reusable = in->reusable ? g_reusable : NULL,
        .check = in->check ? g_check : NULL,
        .reset = in->reset ? g_reset : NULL,
        .watch = in->watch ? g_watch : NULL,
        .stale = in->stale ? g_stale : NULL,
        .arg = &ld->guard,
    };
}

static bool start(struct load *ld)
{
    const struct chaos_phase *ph = ld->ph;
    SSL_CTX *server_ctx = NULL;
    if (ph->tls) {
        ld->pki_made = pki_make(&ld->pki);
        if (!ld->pki_made)
            return false;
        ld->ca_pem = pki_pem(ld->pki.ca);
        server_ctx = chaos_echo_tls_ctx(ld->pki.good, ld->pki.key);
        if (!ld->ca_pem || !server_ctx)
            return false;
    }
    uint16_t backend;
    if (ph->streams > 1) {
        ld->mux_server = mux_server_new(ld->base, server_ctx, ph->reorder, 0);
        if (!ld->mux_server)
            return false;
        backend = mux_server_port(ld->mux_server);
    } else {
        ld->echo = chaos_echo_new(ld->base, server_ctx);
        if (!ld->echo)
            return false;
        backend = chaos_echo_port(ld->echo);
    }
    ld->proxy = chaos_proxy_new(ld->base, backend);
    ld->dns = evdns_base_new(ld->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (!ld->proxy || !ld->dns)
        return false;

    struct tide_tcp_options tcp = {
        .host = "127.0.0.1",
        .port = chaos_proxy_port(ld->proxy),
        .dns = ld->dns,
        .connect_timeout = TIDE_MS(500),
    };
    if (ph->tls) {
        struct tide_tls_options o = {
            .tcp = tcp,
            .ca_pem = ld->ca_pem,
            .handshake_timeout = TIDE_MS(800),
        };
        if (tide_tls_factory_new(ld->base, &o, &ld->tls) != 0)
            return false;
        tide_tls_factory_bind(ld->tls, &ld->table);
    } else {
        if (tide_tcp_factory_new(ld->base, &tcp, &ld->tcp) != 0)
            return false;
        tide_tcp_factory_bind(ld->tcp, &ld->table);
    }

    struct tide_breaker_options adaptive = {.policy = TIDE_BREAKER_ADAPTIVE};
    struct tide_breaker_options strikes = {.policy = TIDE_BREAKER_STRIKES,
                                           .cooldown = TIDE_MS(300)};
    struct tide_backoff backoff = TIDE_BACKOFF(0);
    struct tide_ward ward = {.breaker = &adaptive};
    if (ph->ward == CHAOS_WARD_STRIKES)
        ward = (struct tide_ward){.breaker = &strikes, .backoff = &backoff};
    if (ph->streams > 1)
        guard(ld);
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = POOL_SIZE,
                              .streams = ph->streams > 1 ? ph->streams : 1),
        .ward = ward,
        .min = 4,
        /* above connect + handshake, so the factory's own error answers */
        .make_timeout = TIDE_MS(1500),
        .acquire_timeout = TIDE_MS(ACQUIRE_TIMEOUT_MS),
        /* connections are replaced steadily (as keepalive_requests does),
         * so faults of connecting keep biting under a warm pool */
        .retire_after = 25,
        .seed = 7,
    };
    if (ph->streams > 1)
        o.retire_after = 400; /* loans, 16 at once: drains now and then */
    if (tide_evpool_new(ld->base, &ld->table, &o, &ld->pool) != 0)
        return false;
    if (ph->streams > 1) {
        ld->mux = mux_client_new(ld->pool, !ph->reorder);
        if (!ld->mux)
            return false;
    }

    ld->ticker = event_new(ld->base, -1, EV_PERSIST, on_tick, ld);
    struct timeval tick = ms_tv(20);
    event_add(ld->ticker, &tick);
    for (int i = 0; i < CALLERS; i++) {
        struct caller *c = &ld->callers[i];
        c->ld = ld;
        c->index = i;
        c->rng = 2654435761u * (uint32_t)(i + 1);
        c->timer = evtimer_new(ld->base, on_caller_timer, c);
        caller_later(c, i % 10);
    }
    return true;
}

void chaos_run(const struct chaos_phase *ph, struct chaos_figures *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s %s", ph->tls ? "tls" : "tcp",
             ph->name);
    out->tls = ph->tls;
    out->backend_down = ph->backend_down;
    out->ward = ph->ward;
    out->fds_before = tide_test_open_fds();

    struct load *ld = calloc(1, sizeof *ld);
    ck_assert_ptr_nonnull(ld);
    ld->ph = ph;
    ld->fig = out;
    struct event_config *cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER |
                                   EVENT_BASE_FLAG_IGNORE_ENV);
    ld->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    ck_assert_ptr_nonnull(ld->base);
    ld->t0 = tide_test_now_ms();
    out->setup_ok = start(ld);
    if (!out->setup_ok) {
        teardown(ld);
    }
    /* the whole phase, close and teardown included, is this one call: it
     * returns only when nothing is left on the base */
    event_base_dispatch(ld->base);
    out->loop_exited = true;

    event_base_free(ld->base);
    free(ld->ca_pem);
    if (ld->pki_made)
        pki_free(&ld->pki);
    free(ld);
    out->fds_after = tide_test_open_fds();
}

/* ---- figures ---- */

static char totals_path[64];

static const char *ward_name(enum chaos_ward w)
{
    return w == CHAOS_WARD_STRIKES ? "strikes" : "adaptive";
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_line(const char *label, const struct chaos_figures *f)
{
    printf("chaos %-26s %-8s acquires %6" PRIu64 " ok %6" PRIu64
           " faults %5" PRIu64 " wrong-caller %" PRIu64 " hung %" PRIu64
           " breaker-refused-up %" PRIu64 "/%" PRIu64 " (%.2f%%) made %" PRIu64
           " destroyed %" PRIu64 " | timeouts %" PRIu64 " breaker %" PRIu64
           " errors %" PRIu64 " io %" PRIu64 " malformed %" PRIu64
           " lost %" PRIu64 " make-failures %" PRIu64 " stale %" PRIu64
           " ok-healed %" PRIu64 "\n",
           label, f->name[0] ? ward_name(f->ward) : "", f->acquires, f->ok,
           f->faults, f->wrong_caller, f->hung, f->refused_up, f->acquires_up,
           share(f->refused_up, f->acquires_up), f->made, f->destroyed,
           f->timeouts, f->refused, f->other_errors, f->io_errors, f->malformed,
           f->lost, f->make_failures, f->stale_loans, f->ok_healed);
    if (f->most_shared > 0)
        printf("      %-26s shared: most on one %" PRId64 " breaks %" PRIu64
               " (most loans at a break %" PRId64 ") drains %" PRIu64
               " stray %" PRIu64 "\n",
               label, f->most_shared, f->breaks, f->most_at_break, f->drains,
               f->stray);
    fflush(stdout);
}

static void totals_add(const struct chaos_figures *f)
{
    if (!totals_path[0])
        return;
    int fd = open(totals_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = write(fd, f, sizeof *f);
    (void)n;
    close(fd);
}

void chaos_totals_open(void)
{
    snprintf(totals_path, sizeof totals_path, "/tmp/tide-chaos-XXXXXX");
    int fd = mkstemp(totals_path);
    if (fd < 0)
        totals_path[0] = '\0';
    else
        close(fd);
}

void chaos_totals_close(void)
{
    if (!totals_path[0])
        return;
    int fd = open(totals_path, O_RDONLY | O_CLOEXEC);
    struct chaos_figures f, sum;
    memset(&sum, 0, sizeof sum);
    int phases = 0;
    while (fd >= 0 && read(fd, &f, sizeof f) == (ssize_t)sizeof f) {
        phases++;
        sum.acquires += f.acquires;
        sum.ok += f.ok;
        sum.ok_healed += f.ok_healed;
        sum.faults += f.faults;
        sum.wrong_caller += f.wrong_caller;
        sum.malformed += f.malformed;
        sum.io_errors += f.io_errors;
        sum.hung += f.hung;
        sum.timeouts += f.timeouts;
        sum.refused += f.refused;
        sum.acquires_up += f.acquires_up;
        sum.refused_up += f.refused_up;
        sum.other_errors += f.other_errors;
        sum.made += f.made;
        sum.destroyed += f.destroyed;
        sum.make_failures += f.make_failures;
        sum.lost += f.lost;
        sum.stale_loans += f.stale_loans;
    }
    if (fd >= 0)
        close(fd);
    unlink(totals_path);
    totals_path[0] = '\0';
    char label[32];
    snprintf(label, sizeof label, "total (%d phases)", phases);
    print_line(label, &sum);
}

void chaos_check(const struct chaos_figures *f)
{
    print_line(f->name, f);
    totals_add(f);
    ck_assert_msg(f->setup_ok, "%s: the servers, factory or pool failed",
                  f->name);
    ck_assert_msg(f->loop_exited, "%s: the loop did not end", f->name);
    ck_assert_msg(f->acquires > 0 && f->ok > 0,
                  "%s: the load never ran (%" PRIu64 " acquires, %" PRIu64
                  " ok)",
                  f->name, f->acquires, f->ok);
    ck_assert_msg(f->faults > 0, "%s: the proxy injected no fault", f->name);
    ck_assert_msg(f->wrong_caller == 0,
                  "%s: %" PRIu64 " replies went to the wrong caller", f->name,
                  f->wrong_caller);
    ck_assert_msg(f->hung == 0,
                  "%s: %" PRIu64 " acquires unanswered past their deadline",
                  f->name, f->hung);
    ck_assert_msg(f->doubled == 0, "%s: %" PRIu64 " acquires answered twice",
                  f->name, f->doubled);
    ck_assert_msg(f->answers == f->acquires,
                  "%s: %" PRIu64 " acquires, %" PRIu64 " answers", f->name,
                  f->acquires, f->answers);
    ck_assert_msg(f->misuse == 0,
                  "%s: %" PRIu64 " releases or discards refused", f->name,
                  f->misuse);
    ck_assert_msg(f->closed && !f->close_forced,
                  "%s: tide_evpool_close never finished", f->name);
    ck_assert_msg(f->pool_made == f->pool_destroyed,
                  "%s: the pool made %" PRIu64 ", destroyed %" PRIu64, f->name,
                  f->pool_made, f->pool_destroyed);
    ck_assert_msg(f->made == f->destroyed && f->live == 0,
                  "%s: the factory made %" PRIu64 ", destroyed %" PRIu64
                  ", %" PRId64 " live",
                  f->name, f->made, f->destroyed, f->live);
    ck_assert_msg(f->fds_after == f->fds_before,
                  "%s: %d descriptors open, %d at start", f->name, f->fds_after,
                  f->fds_before);
    ck_assert_msg(f->stray == 0,
                  "%s: %" PRIu64 " replies for no borrower in flight", f->name,
                  f->stray);
    ck_assert_msg(f->destroyed_lent == 0,
                  "%s: %" PRIu64 " connections destroyed with borrowers on "
                  "them",
                  f->name, f->destroyed_lent);
    ck_assert_msg(f->alone_shared == 0,
                  "%s: %" PRIu64 " exclusive loans shared", f->name,
                  f->alone_shared);
    ck_assert_msg(f->sessions_left == 0,
                  "%s: %" PRId64 " protocol sessions left open", f->name,
                  f->sessions_left);
    if (!f->backend_down)
        ck_assert_msg(f->refused_up * 100 <= f->acquires_up * 5,
                      "%s: the breaker refused %" PRIu64 " of %" PRIu64
                      " acquires (%.2f%%) while the backend was up",
                      f->name, f->refused_up, f->acquires_up,
                      share(f->refused_up, f->acquires_up));
}

void chaos_phase(const struct chaos_phase *ph)
{
    struct chaos_figures f;
    chaos_run(ph, &f);
    chaos_check(&f);
}
