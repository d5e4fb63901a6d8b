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
 * so the figure shows the reuse rather than a server's limit). A run that
 * cannot succeed stops at once with the cause rather than waiting out S
 * (demos/load.h): nothing listens at the port, or the server does not
 * speak SMTP; any other failure once it repeats (a server that never
 * greets: two greeting timeouts of 5 s at -c 1). Exit 0 when every
 * measured message was delivered to every recipient, 1 otherwise, 2 for
 * bad usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "smtp.h"

/* What a message is: its recipients and its text. */
struct load {
    struct tide_smtp_sender *sender;
    const char **rcpts;
    size_t nrcpts;
    char *text;
    size_t text_len;
};

static void on_sent(struct tide_smtp_sender *s, int status,
                    const struct tide_smtp_result *r, void *arg)
{
    (void)s;
    struct tide_demo_req *m = arg;
    const struct load *l = m->l->arg;
    tide_demo_load_answered(m, status == 0 && r->accepted == l->nrcpts, r->text,
                            status);
}

static int send_one(struct tide_demo_req *m, void *arg)
{
    struct load *l = arg;
    return tide_smtp_send(l->sender, "load@tidepool.test", l->rcpts, l->nrcpts,
                          l->text, l->text_len, on_sent, m);
}

static uint64_t made(void *arg)
{
    struct load *l = arg;
    struct tide_smtp_stats st;
    tide_smtp_sender_stats(l->sender, &st);
    return st.net.made;
}

static struct tide_evpool *pool(void *arg)
{
    struct load *l = arg;
    return tide_smtp_sender_pool(l->sender);
}

/* The sender's codes by name, tidepool's through tide_err_name. */
static const char *err_name(int code)
{
    switch (code) {
    case TIDE_SMTP_ETEMPORARY:
        return "TIDE_SMTP_ETEMPORARY";
    case TIDE_SMTP_EPERMANENT:
        return "TIDE_SMTP_EPERMANENT";
    case TIDE_SMTP_EPROTOCOL:
        return "TIDE_SMTP_EPROTOCOL";
    case TIDE_SMTP_ETIMEDOUT:
        return "TIDE_SMTP_ETIMEDOUT";
    case TIDE_SMTP_EUNKNOWN:
        return "TIDE_SMTP_EUNKNOWN";
    case TIDE_SMTP_EAUTH:
        return "TIDE_SMTP_EAUTH";
    }
    return tide_err_name(code);
}

/* What no retry changes, in SMTP's terms (see load.h). */
static const char *hopeless(int status, const char *message, void *arg)
{
    (void)message;
    (void)arg;
    return status == TIDE_SMTP_EPROTOCOL ? "the server does not speak SMTP"
                                         : NULL;
}

static const struct tide_demo_load_ops load_ops = {
    .send = send_one,
    .strerror = tide_smtp_strerror,
    .err_name = err_name,
    .made = made,
    .pool = pool,
    .hopeless = hopeless,
};

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

/* Runs the load once the options are read; the exit code. Everything it
 * makes it frees on every path, so that a run that stops early (a
 * certificate file that is not there) leaves nothing behind either. */
static int run_load(const struct tide_demo_load_args *a, long rcpts, long max,
                    bool starttls, bool per_message)
{
    int exit_code = 1;
    struct tide_demo_load run = {0};
    struct load l = {.nrcpts = (size_t)rcpts};
    l.rcpts = calloc((size_t)rcpts, sizeof *l.rcpts);
    char(*addr)[40] = calloc((size_t)rcpts, sizeof *addr); /* any long fits */
    l.text = make_text(a->size, &l.text_len);
    if (!l.rcpts || !addr || !l.text) {
        fprintf(stderr, "smtp_load: out of memory\n");
        goto out;
    }
    if (!tide_demo_load_init(&run, "smtp_load", a->warmup, a->count))
        goto out;
    for (long i = 0; i < rcpts; i++) {
        snprintf(addr[i], sizeof addr[i], "rcpt%ld@tidepool.test", i);
        l.rcpts[i] = addr[i];
    }

    struct tide_tls_options to = {.ca_file = a->cacert, .verify_name = a->name};
    struct tide_smtp_options o = {
        .tcp = {.host = a->host, .port = a->port},
        .tls = starttls ? &to : NULL,
        .starttls = starttls,
        .pool = {.limits = TIDE_LIMITS(.size = a->conc)},
        .max_messages = per_message ? 1 : max,
        .timeout = TIDE_SEC(20),
    };
    int rc = tide_smtp_sender_new(run.base, &o, &l.sender);
    if (rc != 0) {
        fprintf(stderr, "smtp_load: %s (%s)\n", tide_smtp_strerror(rc),
                err_name(rc));
        goto out;
    }
    if (tide_demo_load_run(&run, &load_ops, &l, a->conc, a->seconds) != 0) {
        fprintf(stderr, "smtp_load: out of memory\n");
        goto out;
    }

    struct tide_smtp_stats st;
    tide_smtp_sender_stats(l.sender, &st);
    struct tide_demo_load_figures f = tide_demo_load_figures(&run, st.net.made);
    const char *how = starttls ? "starttls" : "plain";
    const char *reuse = per_message ? "per-message" : "reuse";
    if (a->csv)
        printf("%s,%s,%d,%ld,%.1f,%.2f,%.2f,%llu,%.3f,%llu,%ld\n", how, reuse,
               a->conc, f.n, f.rate, f.p50 / 1e6, f.p99 / 1e6,
               (unsigned long long)f.opened, f.per_k,
               (unsigned long long)st.net.resumed, run.errors);
    else
        printf("%s %s c%d: %ld messages, %.1f messages/s, p50 %.2f ms, p99 "
               "%.2f ms, %llu sessions opened (%.3f per 1,000 messages), "
               "%llu TLS resumed, %ld errors\n",
               how, reuse, a->conc, f.n, f.rate, f.p50 / 1e6, f.p99 / 1e6,
               (unsigned long long)f.opened, f.per_k,
               (unsigned long long)st.net.resumed, run.errors);
    exit_code = tide_demo_load_ok(&run) ? 0 : 1;
out:
    /* the sender before the base it runs on */
    tide_smtp_sender_free(l.sender);
    tide_demo_load_dispose(&run);
    free(l.text);
    free(l.rcpts);
    free(addr);
    return exit_code;
}

int main(int argc, char **argv)
{
    struct tide_demo_load_args a = {.host = "127.0.0.1",
                                    .port = 25,
                                    .conc = 1,
                                    .count = 2000,
                                    .size = 1000,
                                    .warmup = -1,
                                    .seconds = 60};
    long rcpts = 1, max = 1000;
    bool starttls = false, per_message = false;
    const struct tide_demo_opt own[] = {
        {.name = "--starttls", .flag = &starttls},
        {.name = "-m", .l = &rcpts, .min = 1, .max = 100},
        {.name = "--per-message", .flag = &per_message},
        {.name = "--max-messages", .l = &max, .min = 1, .max = INT32_MAX},
    };
    if (!tide_demo_load_args_read(&a, "smtp_load", own,
                                  sizeof own / sizeof own[0], argc, argv))
        return usage();
    if (starttls && !a.cacert) {
        fprintf(stderr, "smtp_load: --starttls needs --cacert FILE\n");
        return usage();
    }
    if (!starttls && (a.cacert || a.name)) {
        /* a TLS run was meant: a plaintext one would be measured instead */
        fprintf(stderr, "smtp_load: %s is for --starttls, which is not given\n",
                a.cacert ? "--cacert" : "--name");
        return usage();
    }
    if (a.warmup < 0)
        a.warmup = per_message ? 0 : 2L * a.conc;
    signal(SIGPIPE, SIG_IGN);
    return run_load(&a, rcpts, max, starttls, per_message);
}
