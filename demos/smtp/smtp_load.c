/* smtp_load: N messages to M recipients each through the pooled sender at
 * a given concurrency, in plaintext or with STARTTLS, then one line of
 * figures: messages per second, p50 and p99 latency, sessions opened.
 *
 *   smtp_load [--host H] [--port P] [--starttls --cacert FILE [--name N]]
 *             [-c CONC] [-n COUNT] [-m RCPTS] [-d BYTES] [--warmup N]
 *             [--seconds S] [--per-message] [--max-messages K] [--csv]
 *
 * Bounded: COUNT messages after a warm-up of N (not measured: the pool
 * fills during it), and never longer than S seconds (preset 60) in all.
 * --per-message closes each session after one message (a new session per
 * message, for comparison); --max-messages K after K (preset 1000 here,
 * so the figure shows the reuse rather than a server's limit). Exit 0
 * when every measured message was delivered to every recipient, 1
 * otherwise, 2 for bad usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "smtp.h"

struct load {
    struct event_base *base;
    struct tide_smtp_sender *sender;
    const char **rcpts;
    size_t nrcpts;
    char *text;
    size_t text_len;
    long warmup;   /* messages before measuring */
    long count;    /* measured messages */
    long sent;     /* all messages sent */
    long answered; /* all messages answered */
    long errors;   /* measured messages not delivered to all */
    int64_t *lat;  /* measured latencies, ns */
    long nlat;
    int64_t start; /* when measuring began */
    int64_t end;
    uint64_t made_at_start;
    char first_error[256];
};

struct msg {
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

static void send_one(struct load *l, struct msg *m);

static void on_sent(struct tide_smtp_sender *s, int status,
                    const struct tide_smtp_result *r, void *arg)
{
    struct msg *m = arg;
    struct load *l = m->l;
    int64_t t = now_ns();
    l->answered++;
    if (m->measured) {
        l->lat[l->nlat++] = t - m->sent_at;
        if (status != 0 || r->accepted != l->nrcpts) {
            if (l->errors++ == 0)
                snprintf(l->first_error, sizeof l->first_error, "%s (%s)",
                         r->text, tide_err_name(status));
        }
    }
    if (l->answered == l->warmup) {
        struct tide_smtp_stats st;
        tide_smtp_sender_stats(s, &st);
        l->made_at_start = st.net.made;
        l->start = t;
    }
    if (l->sent < l->warmup + l->count) {
        send_one(l, m);
    } else {
        free(m);
        if (l->answered == l->warmup + l->count) {
            l->end = t;
            event_base_loopbreak(l->base);
        }
    }
}

static void send_one(struct load *l, struct msg *m)
{
    m->measured = l->sent >= l->warmup;
    m->sent_at = now_ns();
    l->sent++;
    int rc = tide_smtp_send(l->sender, "load@tidepool.test", l->rcpts,
                            l->nrcpts, l->text, l->text_len, on_sent, m);
    if (rc != 0) {
        fprintf(stderr, "smtp_load: %s\n", tide_smtp_strerror(rc));
        free(m);
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
    return (double)v[i] / 1e6; /* ms */
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fprintf(stderr, "smtp_load: out of time\n");
    event_base_loopbreak(arg);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: smtp_load [--host H] [--port P] [--starttls --cacert FILE "
            "[--name N]]\n"
            "                 [-c CONC] [-n COUNT] [-m RCPTS] [-d BYTES] "
            "[--warmup N]\n"
            "                 [--seconds S] [--per-message] [--max-messages "
            "K] [--csv]\n");
    return 2;
}

/* A message of about `size` bytes of body, lines of 76. */
static char *make_text(long size, size_t *len)
{
    size_t n = (size_t)size + 128;
    char *t = malloc(n + 80);
    if (!t)
        return NULL;
    int w = snprintf(t, n, "From: load@tidepool.test\r\nSubject: load\r\n\r\n");
    size_t o = (size_t)w;
    for (long i = 0; i < size; i++) {
        t[o++] = (i % 78 == 76) ? '\r' : (i % 78 == 77) ? '\n' : 'x';
    }
    t[o] = '\0';
    *len = o;
    return t;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *cacert = NULL, *name = NULL;
    int port = 25, conc = 1, seconds = 60;
    long count = 2000, warmup = -1, size = 1000, rcpts = 1, max = 1000;
    bool starttls = false, per_message = false, csv = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--starttls") == 0)
            starttls = true;
        else if (strcmp(a, "--per-message") == 0)
            per_message = true;
        else if (strcmp(a, "--csv") == 0)
            csv = true;
        else if (!v)
            return usage();
        else if (strcmp(a, "--host") == 0)
            host = v, i++;
        else if (strcmp(a, "--port") == 0)
            port = atoi(v), i++;
        else if (strcmp(a, "--cacert") == 0)
            cacert = v, i++;
        else if (strcmp(a, "--name") == 0)
            name = v, i++;
        else if (strcmp(a, "-c") == 0)
            conc = atoi(v), i++;
        else if (strcmp(a, "-n") == 0)
            count = atol(v), i++;
        else if (strcmp(a, "-m") == 0)
            rcpts = atol(v), i++;
        else if (strcmp(a, "-d") == 0)
            size = atol(v), i++;
        else if (strcmp(a, "--warmup") == 0)
            warmup = atol(v), i++;
        else if (strcmp(a, "--seconds") == 0)
            seconds = atoi(v), i++;
        else if (strcmp(a, "--max-messages") == 0)
            max = atol(v), i++;
        else
            return usage();
    }
    if (conc < 1 || count < 1 || size < 0 || seconds < 1 || rcpts < 1 ||
        rcpts > 100 || max < 1 || (starttls && !cacert))
        return usage();
    if (warmup < 0)
        warmup = per_message ? 0 : 2L * conc;
    signal(SIGPIPE, SIG_IGN);

    struct load l = {.warmup = warmup, .count = count, .nrcpts = (size_t)rcpts};
    l.rcpts = calloc((size_t)rcpts, sizeof *l.rcpts);
    char(*addr)[32] = calloc((size_t)rcpts, sizeof *addr);
    l.text = make_text(size, &l.text_len);
    l.lat = malloc((size_t)count * sizeof *l.lat);
    l.base = event_base_new();
    if (!l.rcpts || !addr || !l.text || !l.lat || !l.base)
        return 1;
    for (long i = 0; i < rcpts; i++) {
        snprintf(addr[i], sizeof addr[i], "rcpt%ld@tidepool.test", i);
        l.rcpts[i] = addr[i];
    }

    struct tide_tls_options to = {.ca_file = cacert, .verify_name = name};
    struct tide_smtp_options o = {
        .tcp = {.host = host, .port = port},
        .tls = starttls ? &to : NULL,
        .starttls = starttls,
        .pool = {.limits = TIDE_LIMITS(.size = conc)},
        .max_messages = per_message ? 1 : max,
        .timeout = TIDE_SEC(20),
    };
    int rc = tide_smtp_sender_new(l.base, &o, &l.sender);
    if (rc != 0) {
        fprintf(stderr, "smtp_load: %s\n", tide_smtp_strerror(rc));
        return 1;
    }
    struct event *deadline = evtimer_new(l.base, on_deadline, l.base);
    struct timeval tv = {.tv_sec = seconds};
    evtimer_add(deadline, &tv);
    if (warmup == 0)
        l.start = now_ns();
    for (int i = 0; i < conc && l.sent < warmup + count; i++) {
        struct msg *m = calloc(1, sizeof *m);
        if (!m)
            return 1;
        m->l = &l;
        send_one(&l, m);
    }
    event_base_dispatch(l.base);
    if (!l.end)
        l.end = now_ns();

    struct tide_smtp_stats st;
    tide_smtp_sender_stats(l.sender, &st);
    qsort(l.lat, (size_t)l.nlat, sizeof *l.lat, cmp);
    double secs = (double)(l.end - l.start) / 1e9;
    double mps = secs > 0 ? (double)l.nlat / secs : 0;
    uint64_t opened = st.net.made - l.made_at_start;
    double per_k = l.nlat ? 1000.0 * (double)opened / (double)l.nlat : 0;
    const char *how = starttls ? "starttls" : "plain";
    const char *reuse = per_message ? "per-message" : "reuse";
    if (csv)
        printf("%s,%s,%d,%ld,%.1f,%.2f,%.2f,%llu,%.3f,%llu,%ld\n", how, reuse,
               conc, l.nlat, mps, pct(l.lat, l.nlat, 0.5),
               pct(l.lat, l.nlat, 0.99), (unsigned long long)opened, per_k,
               (unsigned long long)st.net.resumed, l.errors);
    else
        printf("%s %s c%d: %ld messages, %.1f messages/s, p50 %.2f ms, p99 "
               "%.2f ms, %llu sessions opened (%.3f per 1,000 messages), "
               "%llu TLS resumed, %ld errors\n",
               how, reuse, conc, l.nlat, mps, pct(l.lat, l.nlat, 0.5),
               pct(l.lat, l.nlat, 0.99), (unsigned long long)opened, per_k,
               (unsigned long long)st.net.resumed, l.errors);
    if (l.errors)
        fprintf(stderr, "smtp_load: first error: %s\n", l.first_error);
    bool ok = l.errors == 0 && l.nlat == count;
    tide_smtp_sender_free(l.sender);
    event_free(deadline);
    event_base_free(l.base);
    free(l.lat);
    free(l.text);
    free(l.rcpts);
    free(addr);
    return ok ? 0 : 1;
}
