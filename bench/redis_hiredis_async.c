/* The baseline bench/redis_shared_bench.sh sets beside the pooled client:
 * hiredis's own asynchronous client, one redisAsyncContext on libevent,
 * driven by CONC callers the way demos/redis/redis_load drives the pooled
 * client (each sends its next command when its reply came), every command
 * on the one connection. hiredis writes what the callers queued in one
 * pass when the loop next finds the socket writable, and reads the
 * replies in order: the auto-pipelining the pooled client's shared
 * connections are measured against.
 *
 *   redis_hiredis_async [--port P] [-t get|set] [-c CONC] [-n COUNT]
 *                       [--warmup N]
 *
 * Prints one CSV line in redis_load's columns: tcp,OP,CONC,COUNT,
 * requests/s,p50 us,p99 us,connections opened after the warm-up (0),
 * per 1,000 (0),TLS resumed (0),errors,connections in all (1). Exit 0
 * when every measured command got a reply that was not an error. */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

struct run {
    struct event_base *base;
    redisAsyncContext *ac;
    const char *op;
    long warmup, count, sent, answered, errors;
    int64_t start, end;
    int64_t *lat;
    long nlat;
    bool failed;
};

struct caller {
    struct run *r;
    int64_t sent_at;
    bool measured;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void send_next(struct caller *k);

static void on_reply(redisAsyncContext *ac, void *reply, void *arg)
{
    (void)ac;
    struct caller *k = arg;
    struct run *r = k->r;
    redisReply *rep = reply;
    r->answered++;
    if (!rep) { /* the context is going: nothing more to send */
        r->failed = true;
        return;
    }
    if (k->measured) {
        if (rep->type == REDIS_REPLY_ERROR)
            r->errors++;
        r->lat[r->nlat++] = now_ns() - k->sent_at;
    }
    if (r->answered == r->warmup)
        r->start = now_ns();
    if (r->answered == r->warmup + r->count) {
        r->end = now_ns();
        redisAsyncDisconnect(r->ac);
        return;
    }
    send_next(k);
}

static void send_next(struct caller *k)
{
    struct run *r = k->r;
    if (r->sent >= r->warmup + r->count)
        return;
    k->measured = r->sent >= r->warmup;
    k->sent_at = now_ns();
    r->sent++;
    int rc =
        strcmp(r->op, "SET") == 0
            ? redisAsyncCommand(r->ac, on_reply, k, "SET tidepool:load xxx")
            : redisAsyncCommand(r->ac, on_reply, k, "GET tidepool:load");
    if (rc != REDIS_OK)
        r->failed = true;
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)ac, (void)status;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int port = 6379, conc = 50;
    long count = 20000, warmup = -1;
    const char *op = "GET";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-c") == 0)
            conc = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-n") == 0)
            count = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--warmup") == 0)
            warmup = atol(argv[i + 1]);
        else if (strcmp(argv[i], "-t") == 0)
            op = strcasecmp(argv[i + 1], "set") == 0 ? "SET" : "GET";
        else {
            fprintf(stderr, "redis_hiredis_async: unknown option %s\n",
                    argv[i]);
            return 2;
        }
    }
    if (port <= 0 || conc <= 0 || count <= 0) {
        fprintf(stderr, "redis_hiredis_async: bad arguments\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct run r = {
        .op = op, .count = count, .warmup = warmup < 0 ? 10L * conc : warmup};
    r.lat = malloc((size_t)count * sizeof *r.lat);
    struct caller *callers = calloc((size_t)conc, sizeof *callers);
    r.base = event_base_new();
    if (!r.lat || !callers || !r.base)
        return 1;
    r.ac = redisAsyncConnect("127.0.0.1", port);
    if (!r.ac || r.ac->err) {
        fprintf(stderr, "redis_hiredis_async: %s\n",
                r.ac ? r.ac->errstr : "out of memory");
        return 1;
    }
    redisLibeventAttach(r.ac, r.base);
    redisAsyncSetDisconnectCallback(r.ac, on_disconnect);
    for (int i = 0; i < conc; i++) {
        callers[i].r = &r;
        send_next(&callers[i]);
    }
    if (r.warmup == 0)
        r.start = now_ns();
    event_base_dispatch(r.base);
    bool ok = !r.failed && r.nlat == count && r.end > r.start;
    if (r.nlat > 0)
        qsort(r.lat, (size_t)r.nlat, sizeof *r.lat, cmp);
    double secs = (double)(r.end - r.start) / 1e9;
    printf("tcp,%s,%d,%ld,%.0f,%.1f,%.1f,0,0.000,0,%ld,1\n", op, conc, r.nlat,
           secs > 0 ? (double)r.nlat / secs : 0.0,
           r.nlat ? (double)r.lat[r.nlat / 2] / 1e3 : 0.0,
           r.nlat ? (double)r.lat[r.nlat * 99 / 100] / 1e3 : 0.0, r.errors);
    event_base_free(r.base);
    free(callers);
    free(r.lat);
    return ok && r.errors == 0 ? 0 : 1;
}
