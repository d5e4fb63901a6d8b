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
#include <strings.h>

#include <hiredis/hiredis.h>

#include "load.h"
#include "redis.h"

/* What a request is: the command and its value. */
struct load {
    struct tide_redis_client *client;
    const char *op;
    char *value;
    size_t value_len;
};

static void on_reply(struct tide_redis_client *c, int status,
                     const struct redisReply *reply, const char *message,
                     void *arg)
{
    (void)c;
    tide_demo_load_answered(arg, status == 0 && reply, message, status);
}

static int send_one(struct tide_demo_req *r, void *arg)
{
    struct load *l = arg;
    const char *argv[3] = {l->op, "tidepool:load", l->value};
    size_t argvlen[3] = {strlen(l->op), strlen(argv[1]), l->value_len};
    int argc = strcmp(l->op, "SET") == 0   ? 3
               : strcmp(l->op, "GET") == 0 ? 2
                                           : 1;
    return tide_redis_command(l->client, argc, argv, argvlen, on_reply, r);
}

static uint64_t made(void *arg)
{
    struct load *l = arg;
    struct tide_redis_stats s;
    tide_redis_client_stats(l->client, &s);
    return s.net.made;
}

static const struct tide_demo_load_ops load_ops = {
    .send = send_one,
    .strerror = tide_redis_strerror,
    .made = made,
};

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
    struct tide_demo_load_args a = {.host = "127.0.0.1",
                                    .port = 6379,
                                    .conc = 10,
                                    .count = 20000,
                                    .size = 3,
                                    .warmup = -1,
                                    .seconds = 60};
    const char *path = NULL, *op = "get";
    bool tls = false, reconnect = false;
    const struct tide_demo_opt own[] = {
        {.name = "--unix", .s = &path},
        {.name = "--tls", .flag = &tls},
        {.name = "-t", .s = &op},
        {.name = "--reconnect", .flag = &reconnect},
    };
    if (!tide_demo_load_args_read(&a, own, sizeof own / sizeof own[0], argc,
                                  argv) ||
        (tls && !a.cacert))
        return usage();
    if (a.warmup < 0)
        a.warmup = reconnect ? 0 : 10L * a.conc;
    const char *ops[] = {"GET", "SET", "PING"};
    const char *upper = NULL;
    for (size_t i = 0; i < 3; i++)
        if (strcasecmp(op, ops[i]) == 0)
            upper = ops[i];
    if (!upper)
        return usage();
    signal(SIGPIPE, SIG_IGN);

    struct tide_demo_load run;
    struct load l = {.op = upper, .value_len = (size_t)a.size};
    l.value = malloc(l.value_len + 1);
    if (!tide_demo_load_init(&run, "redis_load", a.warmup, a.count) || !l.value)
        return 1;
    memset(l.value, 'x', l.value_len);

    /* over a Unix socket the certificate is checked against the server's
     * name on the loopback address, as there is no host */
    struct tide_tls_options to = {.ca_file = a.cacert,
                                  .verify_name = a.name ? a.name
                                                 : path ? "127.0.0.1"
                                                        : NULL};
    struct tide_redis_options o = {
        .tcp = {.host = path ? NULL : a.host, .port = path ? 0 : a.port},
        .tls = tls ? &to : NULL,
        .pool = {.limits = TIDE_LIMITS(.size = a.conc),
                 .retire_after = reconnect ? 1 : 0},
        .timeout = TIDE_SEC(10),
    };
    o.tcp.path = path;
    int rc = tide_redis_client_new(run.base, &o, &l.client);
    if (rc != 0) {
        fprintf(stderr, "redis_load: %s\n", tide_redis_strerror(rc));
        return 1;
    }
    if (tide_demo_load_run(&run, &load_ops, &l, a.conc, a.seconds) != 0)
        return 1;

    struct tide_redis_stats s;
    tide_redis_client_stats(l.client, &s);
    struct tide_demo_load_figures f = tide_demo_load_figures(&run, s.net.made);
    const char *over = path ? "unix" : tls ? "tls" : "tcp";
    if (a.csv)
        printf("%s,%s,%d,%ld,%.0f,%.1f,%.1f,%llu,%.3f,%llu,%ld\n", over, upper,
               a.conc, f.n, f.rate, f.p50 / 1e3, f.p99 / 1e3,
               (unsigned long long)f.opened, f.per_k,
               (unsigned long long)s.net.resumed, run.errors);
    else
        printf("%s %s c%d: %ld requests, %.0f requests/s, p50 %.1f us, p99 "
               "%.1f us, %llu connections opened (%.3f per 1,000 requests), "
               "%llu TLS resumed, %ld errors\n",
               over, upper, a.conc, f.n, f.rate, f.p50 / 1e3, f.p99 / 1e3,
               (unsigned long long)f.opened, f.per_k,
               (unsigned long long)s.net.resumed, run.errors);
    bool ok = tide_demo_load_ok(&run);
    tide_redis_client_free(l.client);
    tide_demo_load_dispose(&run);
    free(l.value);
    return ok ? 0 : 1;
}
