/* The square wave of bench_demand as HTTP requests, for a proxy in front of
 * an nginx origin: bench/demand_replay.sh runs it once through each of
 * nginx, HAProxy and demos/proxy, all in front of one origin, and prints
 * the rows side by side. This is the client and the counting; the script
 * starts the servers.
 *
 *   demand_replay --target PORT --origin PORT --tag NAME [--waves N]
 *                 [--after S] [--idle S] [--spell MS] [--log FILE] [--stats]
 *                 [--dump FILE] [--tls-port PORT]
 *
 * The trace, as bench_demand's: callers in a closed loop (a request on the
 * caller's own kept connection to the proxy, its whole response, again),
 * 100 of them for --spell ms (2000) and 10 for as long by turns, --waves
 * times (10), then 10 for --after seconds (30), then none for --idle
 * seconds (30: the load has stopped, the client connections stay open and
 * unused). The 100 client connections
 * are opened and used once before the trace, so the proxy's accepts are
 * not in it. Each request is GET /index.html?v=TAG&w=PHASE (PHASE 2k is
 * wave k's burst, 2k+1 its quiet spell, 2 x waves the spell after), so
 * the origin's access log (format "$arg_v $arg_w $connection_requests",
 * --log) tells which requests came on a connection it had just accepted.
 *
 * It prints one line of figures, "key=value" separated by blanks:
 *   requests, new, per1k: requests over the square wave, the origin's
 *     accepts over it (its stub_status at /status, read after every spell,
 *     the status requests' own connections taken out) and per 1,000
 *     requests;
 *   new_b1, new_q1: the accepts in the first burst and the first quiet
 *     spell: the cold start, when any pool opens about 90 (the 100
 *     callers less the 10 the warm-up left), the same for every proxy;
 *   new2, per1k2: the accepts from the second burst on, and per 1,000 of
 *     those spells' requests: the square wave after the cold start;
 *   new_phases: the accepts of each spell in order (burst, quiet, ...);
 *   new_warm: the accepts of the warm-up (ten requests at a time), what
 *     the proxy held when the trace began;
 *   new_tail, new_idle: the accepts in the quiet spell after the wave and
 *     while the load has stopped;
 *   firstreq2: from the second burst on, the share of requests that were
 *     the first on their upstream connection (--log): a proxy that
 *     connects for a request (nginx, HAProxy) made that request wait for
 *     the connect;
 *   queued2: with --stats (demos/proxy), from the second burst on, the
 *     share of requests that found no idle connection at once (the
 *     proxy's try_acquire missed and it queued an acquire: the pool counts
 *     both, so its acquires less the proxy's requests);
 *   waits2: with --stats (demos/proxy), the pool's own count from the
 *     second burst on: acquires that waited for a connect, over acquires
 *     (a preconnected connection's first request did not wait);
 *   live_after: established connections to the origin --after seconds
 *     into the quiet load (from /proc/net/tcp and tcp6), against the 10
 *     the quiet load has in flight (quiet_need); with --tls-port, those
 *     to the origin's TLS port as well (the proxies' upstream
 *     connections are there; the status requests stay on --origin, and
 *     stub_status counts both ports' accepts);
 *   idle_after: the same --idle seconds after all load stopped (the goal's
 *     "idle connections 30 s after the load stops"); idle_s the span;
 *   p99_2: the p99 from the second burst on (the cold start's connects
 *     out); p99b, p99q the bursts' and the quiet spells' apart;
 *   slow, slow_cold, slow_onset, slow_burst, slow_quiet: where the p99
 *     comes from: the requests at or above the p99, and how many of them
 *     were in the first wave (cold start), started in the first ONSET_MS
 *     of a later burst (its onset: 90 callers arrive at once), later in a
 *     burst, or in a quiet spell;
 *   mean_b, queue_b (us): the bursts' mean latency, and what Little's law
 *     gives for 100 callers at the bursts' rate (100 / requests a second):
 *     when the two agree the bursts' latency is the callers queueing for
 *     the one CPU, not any one request's own work;
 *   connect_us: the median time of a TCP connect to the origin from here
 *     (20 tries before the trace): what a connect adds to a request (over
 *     TLS a handshake as well, which bench/demand_replay.sh times apart);
 *   waits_all (--stats): acquires that waited for a connect over the whole
 *     trace, cold start included; first_all (--log): requests that were
 *     the first on their upstream connection, the same for any proxy: at
 *     most that many of the slow ones can owe anything to a connect;
 *   preconnects, demand_retired (--stats): the pool's counts, the first
 *     at the end of the wave, the second after the idle spell (the quiet
 *     tail's and the stopped load's retirements in it);
 *   wait_p99 (--stats, us): the pool's acquire wait, p99 over its last
 *     minute, read at the end of the wave;
 *   p50, p99 (us): request latency over the square wave, and p50 of the
 *     bursts' and the quiet spells' requests apart (p50b, p50q), with the
 *     bursts' share of the requests (burst_share): the two modes are far
 *     apart and a p50 over both falls on whichever holds more requests;
 *   after_requests: those of the quiet spell after the wave;
 *   errors: responses other than 200 and broken connections;
 *   client_cpu_us: this program's own CPU, for the script's share of the
 *     CPU that others took.
 * --dump FILE writes each request of the square wave as a line "phase
 * us-into-its-spell latency-us", for a closer look at where the slow ones
 * are.
 * Figures, not assertions. */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define CALLERS 100
#define QUIET   10
#define LAT_MAX (1 << 23)
/* a burst's onset, for where the slow requests come from */
#define ONSET_MS   100
#define PHASES_MAX (2 * 1000)

struct run;

struct caller {
    struct run *run;
    struct bufferevent *bev;
    int64_t started;
    int32_t at; /* us into its spell the request in flight started */
    int phase;  /* of the request in flight */
    bool active;
    bool busy;
    bool broken;
};

/* Owns the base, the callers' connections and the latencies. */
struct run {
    struct event_base *base;
    int target;
    const char *tag;
    int phase;
    struct caller callers[CALLERS];
    int64_t *lat; /* ns, one a request of the square wave */
    int *lat_phase;
    int32_t *lat_at;     /* us from its spell's start to the request's */
    int64_t spell_start; /* ns, the current spell's */
    size_t n_lat;
    long after_requests;
    long errors;
    int warm; /* connections that answered the warm-up request */
};

static void go(struct caller *c);

/* Whole responses at the head of in: each one's status, or 0 when none is
 * whole yet (Content-Length framing only: the origin serves a file). */
static int take_response(struct evbuffer *in)
{
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        return 0;
    size_t head = (size_t)end.pos + 4;
    char *h = (char *)evbuffer_pullup(in, (ev_ssize_t)head);
    int status = 0;
    if (head < 12 || sscanf(h, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    long length = -1;
    for (char *p = h; p < h + head; p++) {
        if (*p == '\n' && strncasecmp(p + 1, "content-length:", 15) == 0) {
            length = strtol(p + 16, NULL, 10);
            break;
        }
    }
    if (length < 0)
        return -1;
    if (evbuffer_get_length(in) < head + (size_t)length)
        return 0;
    evbuffer_drain(in, head + (size_t)length);
    return status;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct caller *c = arg;
    struct run *r = c->run;
    int status = take_response(bufferevent_get_input(bev));
    if (status == 0)
        return;
    if (status != 200)
        r->errors++;
    c->busy = false;
    if (c->phase < 0) {
        r->warm++;
    } else if (c->phase < PHASES_MAX) {
        if (r->n_lat < LAT_MAX) {
            r->lat[r->n_lat] = bench_mono_ns() - c->started;
            r->lat_at[r->n_lat] = c->at;
            r->lat_phase[r->n_lat++] = c->phase;
        }
    } else {
        r->after_requests++;
    }
    if (c->active)
        go(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct caller *c = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    (void)bev;
    c->run->errors++;
    c->broken = true;
    c->busy = false;
}

static void go(struct caller *c)
{
    struct run *r = c->run;
    if (c->broken)
        return;
    c->busy = true;
    c->phase = r->phase;
    c->started = bench_mono_ns();
    c->at = (int32_t)((c->started - r->spell_start) / 1000);
    evbuffer_add_printf(bufferevent_get_output(c->bev),
                        "GET /index.html?v=%s&w=%d HTTP/1.1\r\n"
                        "Host: 127.0.0.1\r\n\r\n",
                        r->tag, c->phase < 0 ? 9999 : c->phase);
}

static void set_active(struct run *r, int n)
{
    for (int i = 0; i < CALLERS; i++) {
        struct caller *c = &r->callers[i];
        c->active = i < n;
        if (c->active && !c->busy)
            go(c);
    }
}

static void run_ms(struct run *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(r->base, &tv);
    event_base_dispatch(r->base);
}

/* ---- the origin's and the proxy's counters, over a connection apart ---- */

/* GET path from 127.0.0.1:port with HTTP/1.0, the whole answer into buf
 * (NUL-ended); false when it could not be had. Blocking: it runs between
 * spells, a millisecond at most. */
static bool fetch(int port, const char *path, char *buf, size_t n)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    char req[256];
    int len = snprintf(req, sizeof req,
                       "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    bool ok = write(fd, req, (size_t)len) == len;
    size_t got = 0;
    ssize_t k;
    while (ok && got + 1 < n && (k = read(fd, buf + got, n - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = '\0';
    close(fd);
    return ok && got > 0;
}

/* The origin's accepts so far (stub_status: "Active connections: N \n
 * server accepts handled requests\n A H R"), this request's own included;
 * -1 when unread. */
static long origin_accepts(int origin)
{
    char buf[2048];
    if (!fetch(origin, "/status", buf, sizeof buf))
        return -1;
    char *p = strstr(buf, "requests\n");
    return p ? strtol(p + 9, NULL, 10) : -1;
}

/* The proxy's pool counter `name` (its Prometheus text), summed over its
 * upstreams; -1 when unread. */
static long proxy_counter(int target, const char *name)
{
    static char buf[65536];
    if (!fetch(target, "/_tidepool/stats?format=prometheus", buf, sizeof buf))
        return -1;
    char key[96];
    int n = snprintf(key, sizeof key, "\ntidepool_%s", name);
    long sum = -1;
    for (char *p = strstr(buf, key); p; p = strstr(p + 1, key)) {
        /* name{labels} value, or name value for the proxy's own */
        char *v = p[n] == '{' ? strchr(p, '}') : p[n] == ' ' ? p + n : NULL;
        if (v)
            sum = (sum < 0 ? 0 : sum) + strtol(v + 1, NULL, 10);
    }
    return sum;
}

struct pool_counts {
    long acquires, waits, preconnects, retired, wait_p99, live, requests;
};

static struct pool_counts pool_counts(int target, bool want)
{
    struct pool_counts c = {-1, -1, -1, -1, -1, -1, -1};
    if (want) {
        /* each read is a request of the proxy's own, with no acquire:
         * the few between two counts lower queued2 by as many (it is
         * held at 0) */
        c.requests = proxy_counter(target, "proxy_requests");
        c.acquires = proxy_counter(target, "acquires");
        c.waits = proxy_counter(target, "connect_waits");
        c.preconnects = proxy_counter(target, "preconnects");
        c.retired = proxy_counter(target, "demand_retired");
        c.wait_p99 = proxy_counter(target, "recent_p99");
        c.live = proxy_counter(target, "live");
    }
    return c;
}

/* The median time, in us, of a blocking TCP connect to 127.0.0.1:port
 * over `tries`: what a connect adds to the request that waits for it on
 * this machine (the origin's accept comes after, off the critical path). */
static double connect_median(int port, int tries)
{
    double t[64];
    int n = 0;
    for (int i = 0; i < tries && i < 64; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd < 0)
            continue;
        int64_t t0 = bench_mono_ns();
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            t[n++] = (double)(bench_mono_ns() - t0) / 1e3;
        close(fd);
    }
    qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
    return n ? t[n / 2] : -1;
}

/* Established connections whose local port is port or port2 (0: none):
 * the origin's side of each upstream connection, counted once. */
static long established_to(int port, int port2)
{
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    long n = 0;
    for (int f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        if (!fp)
            continue;
        char line[512];
        while (fgets(line, sizeof line, fp)) {
            char local[64];
            unsigned st;
            if (sscanf(line, " %*d: %63s %*s %x", local, &st) != 2)
                continue;
            char *colon = strrchr(local, ':');
            long lp = colon ? strtol(colon + 1, NULL, 16) : -1;
            if (st == 1 && (lp == port || (port2 > 0 && lp == port2)))
                n++;
        }
        fclose(fp);
    }
    return n;
}

/* From the origin's log, the tag's requests from phase `from` up to (not
 * with) `to`, and how many of them were the first on their connection. */
static void first_requests(const char *log, const char *tag, int from, int to,
                           long *total, long *first)
{
    *total = *first = 0;
    FILE *fp = log ? fopen(log, "r") : NULL;
    if (!fp)
        return;
    char line[256], t[64];
    int w;
    long k;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "%63s %d %ld", t, &w, &k) == 3 && !strcmp(t, tag) &&
            w >= from && w < to) {
            (*total)++;
            *first += k == 1;
        }
    fclose(fp);
}

/* The p-th percentile (0-100) of the latencies from phase `from` on whose
 * phase is odd (quiet), even (burst) or any (parity -1), in us; 0 when
 * none. */
static double percentile(const struct run *r, int from, int parity, int p,
                         size_t *count)
{
    return (double)bench_pct_phases(r->lat, r->lat_phase, r->n_lat, from,
                                    parity, p, count) /
           1e3;
}

/* Where the requests at or above `floor` (ns: the p99) were: in the first
 * wave (the cold start), in a later burst's first ONSET_MS, later in a
 * burst, or in a quiet spell. */
struct slow {
    long all, cold, onset, burst, quiet;
};

static struct slow slow_ones(const struct run *r, double floor_us)
{
    struct slow s = {0};
    int64_t floor = (int64_t)(floor_us * 1e3);
    for (size_t i = 0; i < r->n_lat; i++) {
        if (r->lat[i] < floor)
            continue;
        int ph = r->lat_phase[i];
        s.all++;
        if (ph < 2)
            s.cold++;
        else if (ph % 2)
            s.quiet++;
        else if (r->lat_at[i] < ONSET_MS * 1000)
            s.onset++;
        else
            s.burst++;
    }
    return s;
}

static int arg_int(int argc, char **argv, const char *name, int dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return atoi(argv[i + 1]);
    return dflt;
}

static const char *arg_str(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return NULL;
}

static bool has_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    int target = arg_int(argc, argv, "--target", 0);
    int origin = arg_int(argc, argv, "--origin", 0);
    int tls_port = arg_int(argc, argv, "--tls-port", 0);
    int waves = arg_int(argc, argv, "--waves", 10);
    int after = arg_int(argc, argv, "--after", 30);
    int idle = arg_int(argc, argv, "--idle", 30);
    int spell = arg_int(argc, argv, "--spell", 2000);
    const char *tag = arg_str(argc, argv, "--tag");
    const char *log = arg_str(argc, argv, "--log");
    bool stats = has_flag(argc, argv, "--stats");
    if (target <= 0 || origin <= 0 || !tag || waves < 2 || waves > 999 ||
        after < 0 || idle < 0 || spell < 1) {
        fprintf(stderr,
                "usage: %s --target PORT --origin PORT --tag NAME "
                "[--waves N>=2] [--after S] [--idle S] [--spell MS] "
                "[--log FILE] [--stats] [--dump FILE] [--tls-port PORT]\n",
                argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct run r = {.target = target, .tag = tag, .phase = -1};
    r.base = event_base_new();
    r.lat = malloc(sizeof *r.lat * LAT_MAX);
    r.lat_phase = malloc(sizeof *r.lat_phase * LAT_MAX);
    r.lat_at = malloc(sizeof *r.lat_at * LAT_MAX);
    if (!r.base || !r.lat || !r.lat_phase || !r.lat_at)
        return 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)target),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < CALLERS; i++) {
        struct caller *c = &r.callers[i];
        c->run = &r;
        c->bev = bufferevent_socket_new(r.base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
        if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&a,
                                       sizeof a) != 0) {
            fprintf(stderr, "demand_replay: cannot connect to %d\n", target);
            return 1;
        }
    }
    double connect_us = connect_median(origin, 20);
    long acc_pre = origin_accepts(origin);
    /* the warm-up: one request on each client connection, ten at a time
     * so the proxy opens no more than the quiet load's upstream
     * connections, which the cold start of the first burst then counts */
    for (int i = 0; i < CALLERS; i += QUIET) {
        for (int k = i; k < i + QUIET; k++)
            go(&r.callers[k]);
        for (int t = 0; t < 500 && r.warm < i + QUIET; t++)
            run_ms(&r, 10);
    }
    if (r.warm < CALLERS || r.errors) {
        fprintf(stderr, "demand_replay: %d of %d warm-up requests answered\n",
                r.warm, CALLERS);
        return 1;
    }
    /* the accepts before each spell and after the last; each read is an
     * accept of its own, taken out below */
    static long acc[PHASES_MAX + 3];
    int nph = 2 * waves;
    acc[0] = origin_accepts(origin);
    struct pool_counts pc0 = pool_counts(target, stats), pc2 = {0};
    for (int w = 0; w < waves; w++) {
        for (int b = 0; b < 2; b++) {
            r.phase = 2 * w + b;
            r.spell_start = bench_mono_ns();
            set_active(&r, b ? QUIET : CALLERS);
            run_ms(&r, spell);
            acc[r.phase + 1] = origin_accepts(origin);
        }
        if (w == 0)
            pc2 = pool_counts(target, stats);
    }
    struct pool_counts pc_end = pool_counts(target, stats);
    size_t wave_requests = r.n_lat;
    size_t first_wave = 0;
    for (size_t i = 0; i < r.n_lat; i++)
        first_wave += r.lat_phase[i] < 2;
    r.phase = PHASES_MAX;
    r.spell_start = bench_mono_ns();
    run_ms(&r, after * 1000);
    long live_after = established_to(origin, tls_port);
    long acc_tail = origin_accepts(origin);
    /* the load stops: every caller's last answer, then idle seconds */
    set_active(&r, 0);
    int64_t stopped = bench_mono_ns();
    for (int t = 0; t < 200; t++) {
        bool any = false;
        for (int i = 0; i < CALLERS; i++)
            any = any || r.callers[i].busy;
        if (!any)
            break;
        run_ms(&r, 10);
    }
    int left_ms = idle * 1000 - (int)((bench_mono_ns() - stopped) / 1000000);
    if (left_ms > 0)
        run_ms(&r, left_ms);
    long idle_after = established_to(origin, tls_port);
    long acc_idle = origin_accepts(origin);
    struct pool_counts pc_idle = pool_counts(target, stats);
    /* the log is buffered for a second at the origin */
    sleep(2);
    long total2, first2, total_all, first_all;
    first_requests(log, tag, 2, nph, &total2, &first2);
    first_requests(log, tag, 0, nph, &total_all, &first_all);

    /* each status request was one accept of its own */
    long news = acc[nph] - acc[0] - nph, news2 = acc[nph] - acc[2] - (nph - 2);
    size_t nb, nq;
    double p50b = percentile(&r, 0, 0, 50, &nb);
    double p50q = percentile(&r, 0, 1, 50, &nq);
    double p99 = percentile(&r, 0, -1, 99, NULL);
    printf("tag=%s requests=%zu new=%ld per1k=%.3f new_b1=%ld new_q1=%ld "
           "new2=%ld per1k2=%.3f firstreq2=%.4f",
           tag, wave_requests, news, 1000.0 * (double)news / wave_requests,
           acc[1] - acc[0] - 1, acc[2] - acc[1] - 1, news2,
           1000.0 * (double)news2 / (double)(wave_requests - first_wave),
           total2 ? (double)first2 / (double)total2 : -1.0);
    printf(" new_phases=");
    for (int ph = 0; ph < nph; ph++)
        printf("%s%ld", ph ? "," : "", acc[ph + 1] - acc[ph] - 1);
    printf(" new_warm=%ld new_tail=%ld new_idle=%ld", acc[0] - acc_pre - 1,
           acc_tail - acc[nph] - 1, acc_idle - acc_tail - 1);
    if (stats) {
        long queued =
            pc_end.acquires - pc2.acquires - (pc_end.requests - pc2.requests);
        printf(" queued2=%.4f", (double)(queued > 0 ? queued : 0) /
                                    (double)(pc_end.requests - pc2.requests));
    }
    if (stats)
        printf(" waits2=%.4f waits_all=%ld preconnects=%ld demand_retired=%ld "
               "wait_p99=%.1f idle_pool_live=%ld",
               (double)(pc_end.waits - pc2.waits) /
                   (double)(pc_end.acquires - pc2.acquires),
               pc_end.waits - pc0.waits, pc_end.preconnects, pc_idle.retired,
               (double)pc_end.wait_p99 / 1e3, pc_idle.live);
    else
        printf(" waits2=- waits_all=- preconnects=- demand_retired=- "
               "wait_p99=- idle_pool_live=-");
    printf(" live_after=%ld after_s=%d idle_after=%ld idle_s=%d "
           "quiet_need=%d p50=%.1f p99=%.1f p50b=%.1f p50q=%.1f "
           "burst_share=%.3f logged2=%ld first_all=%ld after_requests=%ld "
           "errors=%ld",
           live_after, after, idle_after, idle, QUIET,
           percentile(&r, 0, -1, 50, NULL), p99, p50b, p50q,
           (double)nb / (double)(nb + nq), total2, first_all, r.after_requests,
           r.errors);
    const char *dump = arg_str(argc, argv, "--dump");
    FILE *df = dump ? fopen(dump, "w") : NULL;
    for (size_t i = 0; df && i < r.n_lat; i++)
        fprintf(df, "%d %d %.1f\n", r.lat_phase[i], (int)r.lat_at[i],
                (double)r.lat[i] / 1e3);
    if (df)
        fclose(df);
    /* where the p99 comes from */
    struct slow sl = slow_ones(&r, p99);
    double sum_b = 0;
    for (size_t i = 0; i < r.n_lat; i++)
        if (r.lat_phase[i] % 2 == 0)
            sum_b += (double)r.lat[i] / 1e3;
    double rate_b = (double)nb / ((double)waves * spell / 1e3);
    printf(" p99_2=%.1f p99b=%.1f p99q=%.1f slow=%ld slow_cold=%ld "
           "slow_onset=%ld slow_burst=%ld slow_quiet=%ld mean_b=%.1f "
           "queue_b=%.1f connect_us=%.1f",
           percentile(&r, 2, -1, 99, NULL), percentile(&r, 0, 0, 99, NULL),
           percentile(&r, 0, 1, 99, NULL), sl.all, sl.cold, sl.onset, sl.burst,
           sl.quiet, nb ? sum_b / (double)nb : 0,
           rate_b > 0 ? CALLERS / rate_b * 1e6 : 0, connect_us);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf(" client_cpu_us=%.0f",
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
    for (int i = 0; i < CALLERS; i++)
        bufferevent_free(r.callers[i].bev);
    event_base_free(r.base);
    free(r.lat);
    free(r.lat_phase);
    free(r.lat_at);
    return 0;
}
