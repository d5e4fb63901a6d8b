/* A closed-loop HTTP/1.1 client for the group's tests against real origins
 * and for its bench: C clients each send GET /c<client>/<seq> one after the
 * other, for a number of seconds, and check every response is their own
 * (tests/group/origin.py answers "PORT PATH").
 *
 *   route_client [options] --upstream 127.0.0.1:PORT [--upstream ...]
 *     --clients C       clients at once (32)
 *     --seconds S       how long (5)
 *     --via             one upstream, a proxy (nginx, HAProxy) that picks
 *                       the origin itself: no retries here, and the origin
 *                       that answered is read from the body
 *     --slow-start MS   the group's slow start (preset)
 *     --decay MS        its latency average's decay (preset)
 *
 * Through a group (without --via), one pool per origin over tidepool's TCP
 * factory, each with an adaptive breaker over 10 s. An answer 5xx, or a
 * connection that fails mid-exchange, is the upstream's failure: the
 * connection is discarded (its breaker hears it) and the request goes
 * again with tide_group_retry_avoid (none of the upstreams it failed on),
 * at most twice, while the retry budget allows; past it the client counts
 * the error.
 *
 * Prints, as `key value` lines: requests (answered to clients), ok,
 * errors, wrong (a response that was not the client's own: must be 0),
 * attempts (requests sent to origins), p50_ms, p99_ms, max_ms, then per
 * origin `share PORT FRACTION` of the attempts, and each second
 * `tick SECOND PORT:N ...` (attempts that second), and the group's budget
 * (retries spent, refused), and the errors by cause (`errors_tries`,
 * `errors_budget`, `errors_acquire`, `errors_status`, `errors_broken`,
 * `errors_other`). */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <tidepool/group.h>
#include <tidepool/tls.h>
#include <time.h>

#define MAX_UPSTREAMS 8
#define MAX_CLIENTS   1024
#define MAX_SAMPLES   (4 * 1024 * 1024)
#define MAX_TICKS     600
#define RETRIES_MAX   2

struct origin {
    int port;
    struct tide_tcp_factory *factory;
    struct tide_group_upstream *u;
    uint64_t attempts;
    uint64_t ticks[MAX_TICKS];
};

struct client {
    int id;
    uint64_t seq;
    int64_t started;
    int tries;
    /* the upstreams this request failed on, which its retries avoid */
    struct tide_group_upstream *failed_on[RETRIES_MAX + 1];
    int n_failed;
    struct tide_group_upstream *u;
    struct bufferevent *bev;
    int origin; /* the one it was sent to, or -1 (via) */
    char path[64];
};

static struct event_base *base;
static struct tide_group *group;
static struct origin origins[MAX_UPSTREAMS];
static int n_origins;
static struct client clients[MAX_CLIENTS];
static int n_clients = 32;
static int seconds = 5;
static bool via;
static int64_t t0, t_end;
static bool stopping;
static uint64_t requests, ok, errors, wrong, attempts;
/* why the errors were errors, so one in thousands can be told apart */
enum cause {
    CAUSE_TRIES,   /* failed on every try (RETRIES_MAX + 1) */
    CAUSE_BUDGET,  /* a retry the budget had no room for */
    CAUSE_ACQUIRE, /* the group answered an acquire with an error */
    CAUSE_STATUS,  /* via: the proxy answered 5xx */
    CAUSE_BROKEN,  /* via: the connection to the proxy failed */
    CAUSE_OTHER,   /* an answer not 200 below 500, or not the client's */
    CAUSES
};
static const char *const cause_names[CAUSES] = {"tries",  "budget", "acquire",
                                                "status", "broken", "other"};
static uint64_t causes[CAUSES];
static char first_error[256];
static uint32_t *samples; /* latencies, us */
static size_t n_samples;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int origin_of(struct tide_group_upstream *u)
{
    for (int i = 0; i < n_origins; i++)
        if (origins[i].u == u)
            return i;
    return -1;
}

static void count_attempt(int i)
{
    attempts++;
    if (i < 0)
        return;
    origins[i].attempts++;
    int64_t s = (now_ns() - t0) / 1000000000;
    if (s >= 0 && s < MAX_TICKS)
        origins[i].ticks[s]++;
}

static void next_request(struct client *c);
static void send_request(struct client *c);

static void on_acquired(struct tide_group *g, int status,
                        struct tide_group_upstream *u, void *resource,
                        const struct tide_why *why, void *arg);

/* The request is over for its client: counted, and the next begins. */
static void finish(struct client *c, bool good)
{
    requests++;
    if (good) {
        ok++;
        if (n_samples < MAX_SAMPLES)
            samples[n_samples++] = (uint32_t)((now_ns() - c->started) / 1000);
    } else {
        errors++;
    }
    next_request(c);
}

/* The request failed for good, for this cause. */
static void fail(struct client *c, enum cause why)
{
    causes[why]++;
    finish(c, false);
}

/* The exchange failed on its upstream (a 5xx, a broken connection): the
 * request goes again elsewhere while tries and the budget allow. */
static void failed(struct client *c, struct tide_group_upstream *u, bool broken)
{
    if (via) {
        fail(c, broken ? CAUSE_BROKEN : CAUSE_STATUS);
        return;
    }
    if (c->tries > RETRIES_MAX) {
        fail(c, CAUSE_TRIES);
        return;
    }
    c->failed_on[c->n_failed++] = u;
    int rc = tide_group_retry_avoid(group, c->failed_on, (size_t)c->n_failed, 0,
                                    on_acquired, c, NULL);
    if (rc != 0)
        fail(c, rc == TIDE_EUNAVAILABLE ? CAUSE_BUDGET : CAUSE_ACQUIRE);
}

static void give_back(struct client *c, bool fine)
{
    bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_set_timeouts(c->bev, NULL, NULL);
    if (fine)
        (void)tide_group_release(group, c->u, c->bev);
    else
        (void)tide_group_discard(group, c->u, c->bev);
    c->bev = NULL;
}

/* The Content-Length of a head of n bytes (names are case-blind: HAProxy
 * sends them in lower case); 0 when it has none. */
static size_t content_length(const char *head, size_t n)
{
    static const char name[] = "\r\ncontent-length:";
    size_t k = sizeof name - 1;
    for (size_t i = 0; i + k <= n; i++)
        if (strncasecmp(head + i, name, k) == 0)
            return (size_t)atol(head + i + k);
    return 0;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct client *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    char *data = (char *)evbuffer_pullup(in, (ssize_t)len);
    char *end = data ? memmem(data, len, "\r\n\r\n", 4) : NULL;
    if (!end)
        return;
    size_t head = (size_t)(end + 4 - data);
    int status = atoi(data + 9);
    size_t body = content_length(data, head);
    if (len < head + body)
        return;
    /* "PORT PATH\n": for whom, and (through the group) from whom */
    char want[96];
    snprintf(want, sizeof want, " %s\n", c->path);
    size_t wl = strlen(want);
    bool mine = body > wl && memcmp(data + head + body - wl, want, wl) == 0;
    if (!via && mine && atoi(data + head) != origins[c->origin].port)
        mine = false;
    if (status >= 500 && via && !first_error[0]) /* the proxy says why */
        snprintf(first_error, sizeof first_error, "%d: %.*s", status,
                 (int)(body < 200 ? body : 200), data + head);
    evbuffer_drain(in, head + body);
    if (status >= 500) {
        struct tide_group_upstream *u = c->u;
        give_back(c, false);
        failed(c, u, false);
        return;
    }
    if (!mine)
        wrong++;
    give_back(c, true);
    if (status == 200 && mine)
        finish(c, true);
    else
        fail(c, CAUSE_OTHER);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    struct client *c = arg;
    struct tide_group_upstream *u = c->u;
    give_back(c, false);
    failed(c, u, true);
}

static void send_request(struct client *c)
{
    count_attempt(c->origin);
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    struct timeval tv = {5, 0};
    bufferevent_set_timeouts(c->bev, &tv, NULL);
    bufferevent_enable(c->bev, EV_READ);
    evbuffer_add_printf(bufferevent_get_output(c->bev),
                        "GET %s HTTP/1.1\r\nHost: origin\r\n\r\n", c->path);
    /* something may already be waiting (a late close): read it */
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        on_read(c->bev, c);
}

static void on_acquired(struct tide_group *g, int status,
                        struct tide_group_upstream *u, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)g;
    (void)why;
    struct client *c = arg;
    c->tries++;
    if (status != 0) {
        if (!first_error[0])
            snprintf(first_error, sizeof first_error, "%s: %s",
                     tide_err_name(status), why->message);
        fail(c, CAUSE_ACQUIRE);
        return;
    }
    c->u = u;
    c->bev = resource;
    c->origin = via ? -1 : origin_of(u);
    send_request(c);
}

static void next_request(struct client *c)
{
    if (stopping || now_ns() >= t_end) {
        return;
    }
    c->seq++;
    c->tries = 0;
    c->n_failed = 0;
    c->started = now_ns();
    snprintf(c->path, sizeof c->path, "/c%d/%" PRIu64, c->id, c->seq);
    if (tide_group_acquire(group, 0, on_acquired, c, NULL) != 0)
        fail(c, CAUSE_ACQUIRE);
}

static void on_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    stopping = true;
    struct timeval grace = {0, 300000};
    event_base_loopexit(base, &grace);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double quantile_ms(double q)
{
    if (n_samples == 0)
        return 0;
    size_t i = (size_t)(q * (double)(n_samples - 1));
    return samples[i] / 1000.0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    struct tide_group_options go = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--via")) {
            via = true;
        } else if (v && !strcmp(a, "--upstream")) {
            if (n_origins == MAX_UPSTREAMS)
                return 2;
            const char *colon = strrchr(v, ':');
            origins[n_origins++].port = colon ? atoi(colon + 1) : 0;
            i++;
        } else if (v && !strcmp(a, "--clients")) {
            n_clients = atoi(v);
            i++;
        } else if (v && !strcmp(a, "--seconds")) {
            seconds = atoi(v);
            i++;
        } else if (v && !strcmp(a, "--slow-start")) {
            go.slow_start = TIDE_MS(atol(v));
            i++;
        } else if (v && !strcmp(a, "--decay")) {
            go.decay = TIDE_MS(atol(v));
            i++;
        } else {
            fprintf(stderr, "route_client: what is %s?\n", a);
            return 2;
        }
    }
    if (n_origins == 0 || n_clients < 1 || n_clients > MAX_CLIENTS ||
        seconds < 1 || seconds >= MAX_TICKS || (via && n_origins != 1)) {
        fprintf(stderr, "route_client: bad arguments\n");
        return 2;
    }
    samples = malloc(MAX_SAMPLES * sizeof *samples);
    base = event_base_new();
    if (!samples || !base || tide_group_new(base, &go, &group) != 0)
        return 1;
    struct tide_breaker_options breaker = {.window = TIDE_SEC(10)};
    struct tide_evpool_options po = {.limits =
                                         TIDE_LIMITS(.size = 256, .idle = 256),
                                     .ward.breaker = &breaker};
    for (int i = 0; i < n_origins; i++) {
        struct tide_tcp_options to = {.host = "127.0.0.1",
                                      .port = origins[i].port,
                                      .connect_timeout = TIDE_SEC(1)};
        if (tide_tcp_factory_new(base, &to, &origins[i].factory) != 0)
            return 1;
        struct tide_factory f;
        tide_tcp_factory_bind(origins[i].factory, &f);
        char name[32];
        snprintf(name, sizeof name, "127.0.0.1:%d", origins[i].port);
        if (tide_group_add(group, name, &f, &po, &origins[i].u) != 0)
            return 1;
    }
    t0 = now_ns();
    t_end = t0 + TIDE_SEC(seconds);
    struct event *end = evtimer_new(base, on_end, NULL);
    struct timeval span = {seconds, 0};
    evtimer_add(end, &span);
    for (int i = 0; i < n_clients; i++) {
        clients[i].id = i;
        next_request(&clients[i]);
    }
    event_base_dispatch(base);
    qsort(samples, n_samples, sizeof *samples, cmp_u32);
    printf("requests %" PRIu64 "\nok %" PRIu64 "\nerrors %" PRIu64
           "\nwrong %" PRIu64 "\nattempts %" PRIu64 "\n",
           requests, ok, errors, wrong, attempts);
    printf("p50_ms %.3f\np99_ms %.3f\nmax_ms %.3f\n", quantile_ms(0.5),
           quantile_ms(0.99), n_samples ? samples[n_samples - 1] / 1000.0 : 0);
    struct tide_group_budget b;
    tide_group_budget(group, &b);
    if (first_error[0])
        printf("first_error %s\n", first_error);
    printf("retries_spent %" PRIu64 "\nretries_refused %" PRIu64 "\n", b.spent,
           b.refused);
    for (int i = 0; i < CAUSES; i++)
        printf("errors_%s %" PRIu64 "\n", cause_names[i], causes[i]);
    if (!via) {
        for (int i = 0; i < n_origins; i++)
            printf("share %d %.4f\n", origins[i].port,
                   attempts ? (double)origins[i].attempts / (double)attempts
                            : 0.0);
        for (int s = 0; s < seconds; s++) {
            printf("tick %d", s);
            for (int i = 0; i < n_origins; i++)
                printf(" %d:%" PRIu64, origins[i].port, origins[i].ticks[s]);
            printf("\n");
        }
    }
    event_free(end);
    tide_group_free(group);
    for (int i = 0; i < n_origins; i++)
        tide_tcp_factory_free(origins[i].factory);
    event_base_free(base);
    free(samples);
    return 0;
}
