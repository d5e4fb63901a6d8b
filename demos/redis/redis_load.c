/* redis_load: GET, SET or PING through the pooled client at a given
 * concurrency and count, over TCP, a Unix socket or TLS, then one line of
 * figures: requests per second, p50 and p99 latency, connections opened.
 *
 *   redis_load [--host H] [--port P] [--unix PATH] [--tls --cacert FILE
 *              [--name NAME]] [-c CONC] [-n COUNT] [-t get|set|ping]
 *              [-d BYTES] [--warmup N] [--seconds S] [--reconnect] [--csv]
 *
 * Bounded: COUNT requests after a warm-up of N (not measured: the pool
 * fills during it), and never longer than S seconds (preset 60) in all.
 * --reconnect retires each connection after one request: the cost of a
 * new connection per request, for comparison. Exit 0 when every measured
 * request got a reply that was not an error, 1 otherwise, 2 for bad usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "redis.h"

struct load {
    struct event_base *base;
    struct tide_redis_client *client;
    const char *op;
    char *value;
    size_t value_len;
    long warmup;   /* requests before measuring */
    long count;    /* measured requests */
    long sent;     /* all requests sent */
    long answered; /* all requests answered */
    long errors;   /* measured requests without a good reply */
    int64_t *lat;  /* measured latencies, ns */
    long nlat;
    int64_t start; /* when measuring began */
    int64_t end;
    uint64_t made_at_start;
    char first_error[256];
};

struct req {
    struct load *l;
    int64_t sent_at;
    bool measured;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void send_one(struct load *l, struct req *r);

static void on_reply(struct tide_redis_client *c, int status,
                     const struct redisReply *reply, const char *message,
                     void *arg)
{
    struct req *r = arg;
    struct load *l = r->l;
    int64_t t = now_ns();
    l->answered++;
    if (r->measured) {
        l->lat[l->nlat++] = t - r->sent_at;
        if (status != 0 || !reply) {
            if (l->errors++ == 0)
                snprintf(l->first_error, sizeof l->first_error, "%s (%s)",
                         message, tide_err_name(status));
        }
    }
    if (l->answered == l->warmup) {
        struct tide_redis_stats s;
        tide_redis_client_stats(c, &s);
        l->made_at_start = s.net.made;
        l->start = t;
    }
    if (l->sent < l->warmup + l->count) {
        send_one(l, r);
    } else {
        free(r);
        if (l->answered == l->warmup + l->count) {
            l->end = t;
            event_base_loopbreak(l->base);
        }
    }
}

static void send_one(struct load *l, struct req *r)
{
    const char *argv[3] = {l->op, "tidepool:load", l->value};
    size_t argvlen[3] = {strlen(l->op), strlen(argv[1]), l->value_len};
    int argc = strcmp(l->op, "SET") == 0   ? 3
               : strcmp(l->op, "GET") == 0 ? 2
                                           : 1;
    r->measured = l->sent >= l->warmup;
    r->sent_at = now_ns();
    l->sent++;
    int rc = tide_redis_command(l->client, argc, argv, argvlen, on_reply, r);
    if (rc != 0) {
        fprintf(stderr, "redis_load: %s\n", tide_redis_strerror(rc));
        free(r);
        event_base_loopbreak(l->base);
    }
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct(const int64_t *v, long n, double p)
{
    if (n == 0)
        return 0;
    long i = (long)(p * (double)(n - 1));
    return (double)v[i] / 1e3; /* us */
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fprintf(stderr, "redis_load: out of time\n");
    event_base_loopbreak(arg);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: redis_load [--host H] [--port P] [--unix PATH] [--tls "
            "--cacert FILE [--name NAME]]\n"
            "                  [-c CONC] [-n COUNT] [-t get|set|ping] [-d "
            "BYTES] [--warmup N]\n"
            "                  [--seconds S] [--reconnect] [--csv]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *path = NULL, *cacert = NULL;
    const char *name = NULL, *op = "get";
    int port = 6379, conc = 10, seconds = 60;
    long count = 20000, warmup = -1, size = 3;
    bool tls = false, reconnect = false, csv = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--tls") == 0)
            tls = true;
        else if (strcmp(a, "--reconnect") == 0)
            reconnect = true;
        else if (strcmp(a, "--csv") == 0)
            csv = true;
        else if (!v)
            return usage();
        else if (strcmp(a, "--host") == 0)
            host = v, i++;
        else if (strcmp(a, "--port") == 0)
            port = atoi(v), i++;
        else if (strcmp(a, "--unix") == 0)
            path = v, i++;
        else if (strcmp(a, "--cacert") == 0)
            cacert = v, i++;
        else if (strcmp(a, "--name") == 0)
            name = v, i++;
        else if (strcmp(a, "-c") == 0)
            conc = atoi(v), i++;
        else if (strcmp(a, "-n") == 0)
            count = atol(v), i++;
        else if (strcmp(a, "-t") == 0)
            op = v, i++;
        else if (strcmp(a, "-d") == 0)
            size = atol(v), i++;
        else if (strcmp(a, "--warmup") == 0)
            warmup = atol(v), i++;
        else if (strcmp(a, "--seconds") == 0)
            seconds = atoi(v), i++;
        else
            return usage();
    }
    if (conc < 1 || count < 1 || size < 0 || seconds < 1 || (tls && !cacert))
        return usage();
    if (warmup < 0)
        warmup = reconnect ? 0 : 10L * conc;
    const char *ops[] = {"GET", "SET", "PING"};
    const char *upper = NULL;
    for (size_t i = 0; i < 3; i++)
        if (strcasecmp(op, ops[i]) == 0)
            upper = ops[i];
    if (!upper)
        return usage();
    signal(SIGPIPE, SIG_IGN);

    struct load l = {.op = upper, .warmup = warmup, .count = count};
    l.value_len = (size_t)size;
    l.value = malloc(l.value_len + 1);
    l.lat = malloc((size_t)count * sizeof *l.lat);
    l.base = event_base_new();
    if (!l.value || !l.lat || !l.base)
        return 1;
    memset(l.value, 'x', l.value_len);

    /* over a Unix socket the certificate is checked against the server's
     * name on the loopback address, as there is no host */
    struct tide_tls_options to = {.ca_file = cacert,
                                  .verify_name = name   ? name
                                                 : path ? "127.0.0.1"
                                                        : NULL};
    struct tide_redis_options o = {
        .tcp = {.host = path ? NULL : host, .port = path ? 0 : port},
        .tls = tls ? &to : NULL,
        .pool = {.limits = TIDE_LIMITS(.size = conc),
                 .retire_after = reconnect ? 1 : 0},
        .timeout = TIDE_SEC(10),
    };
    o.tcp.path = path;
    int rc = tide_redis_client_new(l.base, &o, &l.client);
    if (rc != 0) {
        fprintf(stderr, "redis_load: %s\n", tide_redis_strerror(rc));
        return 1;
    }
    struct event *deadline = evtimer_new(l.base, on_deadline, l.base);
    struct timeval tv = {.tv_sec = seconds};
    evtimer_add(deadline, &tv);
    if (warmup == 0)
        l.start = now_ns();
    for (int i = 0; i < conc && l.sent < warmup + count; i++) {
        struct req *r = calloc(1, sizeof *r);
        if (!r)
            return 1;
        r->l = &l;
        send_one(&l, r);
    }
    event_base_dispatch(l.base);
    if (!l.end)
        l.end = now_ns();

    struct tide_redis_stats s;
    tide_redis_client_stats(l.client, &s);
    qsort(l.lat, (size_t)l.nlat, sizeof *l.lat, cmp);
    double secs = (double)(l.end - l.start) / 1e9;
    double rps = secs > 0 ? (double)l.nlat / secs : 0;
    uint64_t opened = s.net.made - l.made_at_start;
    double per_k = l.nlat ? 1000.0 * (double)opened / (double)l.nlat : 0;
    const char *over = path ? "unix" : tls ? "tls" : "tcp";
    if (csv)
        printf("%s,%s,%d,%ld,%.0f,%.1f,%.1f,%llu,%.3f,%llu,%ld\n", over, upper,
               conc, l.nlat, rps, pct(l.lat, l.nlat, 0.5),
               pct(l.lat, l.nlat, 0.99), (unsigned long long)opened, per_k,
               (unsigned long long)s.net.resumed, l.errors);
    else
        printf("%s %s c%d: %ld requests, %.0f requests/s, p50 %.1f us, p99 "
               "%.1f us, %llu connections opened (%.3f per 1,000 requests), "
               "%llu TLS resumed, %ld errors\n",
               over, upper, conc, l.nlat, rps, pct(l.lat, l.nlat, 0.5),
               pct(l.lat, l.nlat, 0.99), (unsigned long long)opened, per_k,
               (unsigned long long)s.net.resumed, l.errors);
    if (l.errors)
        fprintf(stderr, "redis_load: first error: %s\n", l.first_error);
    bool ok = l.errors == 0 && l.nlat == count;
    tide_redis_client_free(l.client);
    event_free(deadline);
    event_base_free(l.base);
    free(l.lat);
    free(l.value);
    return ok ? 0 : 1;
}
