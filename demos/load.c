/* The load programs' options and closed-loop run (see load.h). */
#include "load.h"
#include "number.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <event2/event.h>
#include <tidepool/core.h>
#include <tidepool/evloop.h>
#include <tidepool/tls.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- options ---- */

static const struct tide_demo_opt *find(const struct tide_demo_opt *t, size_t n,
                                        const char *word)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, word) == 0)
            return &t[i];
    return NULL;
}

bool tide_demo_parse_number(const char *prog, const char *option, const char *v,
                            long long min, long long max, long long *out)
{
    if (tide_demo_whole_number(v, min, max, out))
        return true;
    fprintf(stderr, "%s: %s: '%s' is not a whole number from %lld to %lld\n",
            prog, option, v, min, max);
    return false;
}

bool tide_demo_load_args_read(struct tide_demo_load_args *a, const char *prog,
                              const struct tide_demo_opt *own, size_t n,
                              int argc, char **argv)
{
    const struct tide_demo_opt common[] = {
        {.name = "--host", .s = &a->host},
        {.name = "--port", .i = &a->port, .min = 1, .max = 65535},
        {.name = "--cacert", .s = &a->cacert},
        {.name = "--name", .s = &a->name},
        {.name = "-c", .i = &a->conc, .min = 1, .max = TIDE_DEMO_MAX_CONC},
        {.name = "-n", .l = &a->count, .min = 1, .max = TIDE_DEMO_MAX_COUNT},
        {.name = "-d", .l = &a->size, .min = 0, .max = TIDE_DEMO_MAX_SIZE},
        {.name = "--warmup",
         .l = &a->warmup,
         .min = 0,
         .max = TIDE_DEMO_MAX_COUNT},
        {.name = "--seconds",
         .i = &a->seconds,
         .min = 1,
         .max = TIDE_DEMO_MAX_SECONDS},
        {.name = "--csv", .flag = &a->csv},
    };
    for (int i = 1; i < argc; i++) {
        const struct tide_demo_opt *o =
            find(common, sizeof common / sizeof common[0], argv[i]);
        if (!o)
            o = find(own, n, argv[i]);
        if (!o) {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[i]);
            return false;
        }
        if (o->flag) {
            *o->flag = true;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            fprintf(stderr, "%s: %s needs a value\n", prog, o->name);
            return false;
        }
        long long x;
        if (o->i || o->l) {
            if (!tide_demo_parse_number(prog, o->name, v, o->min, o->max, &x))
                return false;
            if (o->i)
                *o->i = (int)x; /* the table's bounds fit an int */
            else
                *o->l = (long)x;
        } else {
            *o->s = v;
        }
    }
    return true;
}

/* ---- the run ---- */

bool tide_demo_load_init(struct tide_demo_load *l, const char *prog,
                         long warmup, long count)
{
    memset(l, 0, sizeof *l);
    l->prog = prog;
    l->warmup = warmup;
    l->count = count;
    l->lat = malloc((size_t)count * sizeof *l->lat);
    l->base = event_base_new();
    if (!l->lat || !l->base) {
        fprintf(stderr, "%s: out of memory (for %ld latencies)\n", prog, count);
        return false;
    }
    return true;
}

static const char *err_name(const struct tide_demo_load *l, int code)
{
    return l->ops && l->ops->err_name ? l->ops->err_name(code)
                                      : tide_err_name(code);
}

/* now: the clock read just before (an answer's reading serves the next
 * send of its caller: one reading a request instead of two; the two were
 * a tenth of redis_load's user CPU at c50 on shared connections) */
static void send_one(struct tide_demo_load *l, struct tide_demo_req *r,
                     int64_t now)
{
    r->measured = l->sent >= l->warmup;
    r->sent_at = now;
    l->sent++;
    int rc = l->ops->send(r, l->arg);
    if (rc != 0) {
        /* once: a queue at its bound refuses every send after the first
         * alike, and the run is over anyway */
        l->sent--;
        if (l->refused++ == 0)
            fprintf(stderr, "%s: a request could not be sent: %s (%s)\n",
                    l->prog, l->ops->strerror(rc), err_name(l, rc));
        l->stopped = true;
        event_base_loopbreak(l->base);
    }
}

/* What a Unix socket's path is, when that alone says no connect can
 * succeed: into buf, NULL when it is a socket (someone may listen on it). */
static const char *path_hopeless(const char *path, char *buf, size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return "no such socket";
        snprintf(buf, len, "no socket there (%s)", strerror(errno));
    } else if (S_ISSOCK(st.st_mode))
        return NULL;
    else
        snprintf(buf, len, "%s is not a socket but %s", path,
                 S_ISREG(st.st_mode)   ? "a regular file"
                 : S_ISDIR(st.st_mode) ? "a directory"
                                       : "another kind of file");
    return buf;
}

/* Why no retry changes the failure soon, or NULL (see load.h). */
static const char *hopeless(struct tide_demo_load *l, const char *message,
                            int code, char *buf, size_t len)
{
    const char *why = l->path ? path_hopeless(l->path, buf, len) : NULL;
    if (!why && code == TIDE_EREFUSED)
        why =
            l->path ? "nothing listens on the socket" : "nothing listens there";
    if (!why && l->ops->hopeless)
        why = l->ops->hopeless(code, message, l->arg);
    if (!why && l->streak >= 2L * l->conc) {
        snprintf(buf, len,
                 "the failure repeats (%ld answers in a row, none good)",
                 l->streak);
        why = buf;
    }
    return why;
}

/* Ends the run at a failure it cannot get past: said once, with the
 * failure's own words and code. */
static void give_up_if_hopeless(struct tide_demo_load *l, const char *message,
                                int code)
{
    char buf[256]; /* a Unix socket's path is at most 107 bytes */
    const char *why = hopeless(l, message, code, buf, sizeof buf);
    if (!why)
        return;
    fprintf(stderr, "%s: stopped: %s: %s (%s)\n", l->prog, why,
            message && message[0] ? message : l->ops->strerror(code),
            err_name(l, code));
    l->stopped = true;
    event_base_loopbreak(l->base);
}

void tide_demo_load_answered(struct tide_demo_req *r, bool good,
                             const char *message, int code)
{
    struct tide_demo_load *l = r->l;
    int64_t t = now_ns();
    l->answered++;
    l->streak = good ? 0 : l->streak + 1;
    if (!good && !l->stopped)
        give_up_if_hopeless(l, message, code);
    if (!good && l->failed++ == 0) {
        snprintf(l->first_error, sizeof l->first_error, "%s",
                 message && message[0] ? message : l->ops->strerror(code));
        l->first_code = code;
        l->first_measured = r->measured;
    }
    if (r->measured) {
        l->lat[l->nlat++] = t - r->sent_at;
        if (!good)
            l->errors++;
    }
    if (l->answered == l->warmup) {
        l->made_at_start = l->ops->made(l->arg);
        l->start = t;
    }
    if (l->stopped)
        return;
    if (l->sent < l->warmup + l->count) {
        send_one(l, r, t);
    } else if (l->answered == l->warmup + l->count) {
        l->end = t;
        event_base_loopbreak(l->base);
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_demo_load *l = arg;
    fprintf(stderr, "%s: out of time\n", l->prog);
    event_base_loopbreak(l->base);
}

/* Puts in v[k] what a sort of v[lo, hi) would, with every element before
 * it no greater and every one after no smaller (quickselect, the middle of
 * three as pivot): the quantiles need two places, not the whole order, and
 * sorting every latency cost the load tool more CPU than a tenth of its
 * run at c50 (outside the timed span, but inside the CPU it is charged). */
static void select_nth(int64_t *v, long lo, long hi, long k)
{
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        int64_t a = v[lo], b = v[mid], c = v[hi - 1];
        int64_t pivot = a < b ? (b < c   ? b
                                 : a < c ? c
                                         : a)
                              : (a < c   ? a
                                 : b < c ? c
                                         : b);
        long i = lo, j = hi - 1;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                int64_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        /* [lo, j] <= pivot <= [i, hi); between them equal to it */
        if (k <= j)
            hi = j + 1;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* The place of the p-th quantile among n latencies. */
static long pct_at(long n, double p)
{
    return (long)(p * (double)(n - 1));
}

int tide_demo_load_run(struct tide_demo_load *l,
                       const struct tide_demo_load_ops *ops, void *arg,
                       int conc, int seconds)
{
    l->ops = ops;
    l->arg = arg;
    l->conc = conc < l->warmup + l->count ? conc : (int)(l->warmup + l->count);
    struct event *deadline = evtimer_new(l->base, on_deadline, l);
    if (!deadline)
        return -1;
    struct timeval tv = {.tv_sec = seconds};
    evtimer_add(deadline, &tv);
    /* the records stay l's: those still in flight when time runs out are
     * never answered (a client freed drops its commands unanswered) */
    l->reqs = calloc((size_t)conc, sizeof *l->reqs);
    if (!l->reqs) {
        event_free(deadline);
        return -1;
    }
    if (l->warmup == 0)
        l->start = now_ns();
    for (int i = 0; i < conc && !l->stopped && l->sent < l->warmup + l->count;
         i++) {
        l->reqs[i].l = l;
        send_one(l, &l->reqs[i], now_ns());
    }
    /* a break asked for before the loop runs is forgotten when it starts
     * (event_base_loop clears it), so a run stopped already is not run */
    if (!l->stopped)
        event_base_dispatch(l->base);
    event_free(deadline);
    if (!l->end)
        l->end = now_ns();
    if (l->nlat > 0) {
        /* p99 first: p50's place then lies below it */
        long at99 = pct_at(l->nlat, 0.99);
        select_nth(l->lat, 0, l->nlat, at99);
        select_nth(l->lat, 0, at99 + 1, pct_at(l->nlat, 0.5));
    }
    return 0;
}

/* The p-th quantile of the latencies, ns: p 0.5 or 0.99, the places
 * tide_demo_load_run put in order. */
static double pct(const int64_t *v, long n, double p)
{
    if (n == 0)
        return 0;
    return (double)v[pct_at(n, p)];
}

struct tide_demo_load_figures
tide_demo_load_figures(const struct tide_demo_load *l, uint64_t made_now)
{
    double secs = (double)(l->end - l->start) / 1e9;
    uint64_t opened = made_now - l->made_at_start;
    return (struct tide_demo_load_figures){
        .n = l->nlat,
        .rate = secs > 0 ? (double)l->nlat / secs : 0,
        .p50 = pct(l->lat, l->nlat, 0.5),
        .p99 = pct(l->lat, l->nlat, 0.99),
        .opened = opened,
        .per_k = l->nlat ? 1000.0 * (double)opened / (double)l->nlat : 0,
    };
}

bool tide_demo_load_ok(const struct tide_demo_load *l)
{
    bool ok = l->errors == 0 && l->nlat == l->count;
    if (ok)
        return true;
    if (l->failed) {
        fprintf(stderr, "%s: first error%s: %s (%s); %ld failed in all\n",
                l->prog, l->first_measured ? "" : " (in the warm-up)",
                l->first_error, err_name(l, l->first_code), l->failed);
    } else if (l->ops && l->ops->pool) {
        /* nothing answered why: the requests waited for connections that
         * never came, and the pool kept why the last attempt failed, or
         * is still trying (a TLS handshake with a server that never
         * answers one ends at its timeout only) */
        struct tide_evpool *p = l->ops->pool(l->arg);
        char why[256];
        int code = tide_evpool_last_error(p, why, sizeof why);
        struct tide_evpool_stats st;
        tide_evpool_stats(p, &st);
        if (code != 0)
            fprintf(stderr, "%s: the last connection attempt failed: %s (%s)\n",
                    l->prog, why[0] ? why : l->ops->strerror(code),
                    err_name(l, code));
        else
            fprintf(stderr,
                    "%s: %ld of %ld requests answered, none failed; no "
                    "connection attempt failed, %lld still running, %lld "
                    "requests waiting for a connection\n",
                    l->prog, l->answered, l->warmup + l->count,
                    (long long)st.making, (long long)st.waiting);
    }
    if (l->refused > 1)
        fprintf(stderr, "%s: %ld sends more were refused\n", l->prog,
                l->refused - 1);
    return false;
}

/* Runs what the teardown left queued on the base: a freed bufferevent is
 * closed by a finalizer from the loop, and one whose deferred callback was
 * still queued (a reply read, a write done, when time ran out) holds a
 * reference until that callback has run. event_base_free runs finalizers
 * but drops deferred callbacks without running them, so without these
 * passes such a bufferevent would never reach its finalizer: it, its
 * buffers and its socket would never be freed. Bounded: each pass runs
 * what is queued, and what it queues (the finalizers) ends there. */
static void run_queued(struct event_base *base)
{
    for (int pass = 0; pass < 16; pass++) {
        if (event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) == 0)
            return;
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
}

void tide_demo_load_dispose(struct tide_demo_load *l)
{
    if (l->base) {
        run_queued(l->base);
        event_base_free(l->base);
    }
    free(l->lat);
    free(l->reqs);
    memset(l, 0, sizeof *l);
}
