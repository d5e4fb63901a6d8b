/* proxy: an HTTP/1.1 reverse proxy on a tidepool group (see proxy.h).
 *
 *   tidepool-proxy --listen 127.0.0.1:8080 --upstream 127.0.0.1:9001
 *         [--upstream tls://host:port ...] [--pool-size N] ...
 *
 * The options and their defaults are config.c's (proxy --help), the same
 * the tests build the proxy with, ward included: every upstream has a
 * breaker and a backoff on connects unless told otherwise. A bad option
 * or value is named on stderr and exits 2; a listener or an upstream that
 * cannot be set up exits 1, everything freed.
 *
 * SIGINT or SIGTERM drains: the listener closes, clients between
 * requests are closed, exchanges in flight finish (within
 * --drain-timeout, 10 s preset), then the group closes and the program
 * exits 0. A second signal ends it at once.
 *
 * SIGHUP reads the configuration again (reload.c: upstreams added drain
 * in, removed ones drain out, no client connection is closed; a bad file
 * changes nothing). */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proxy.h"
#include "reload.h"

struct run {
    struct event_base *base;
    struct px *px;
    struct px_upstreams ups;
    const struct px_config *cfg; /* in use: a reload may change it */
    struct px_reload *reload;
    int signals;
    struct event *deadline; /* the drain's bound */
};

static void on_group_closed(struct tide_group *g, void *arg)
{
    (void)g;
    struct run *r = arg;
    event_base_loopexit(r->base, NULL);
}

/* No client is left: nothing is lent, and the group closes at once. */
static void on_drained(struct px *px, void *arg)
{
    (void)px;
    struct run *r = arg;
    if (tide_group_close(r->ups.group, on_group_closed, r))
        event_base_loopexit(r->base, NULL);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct run *r = arg;
    struct px_stats st;
    px_stats(r->px, &st);
    fprintf(stderr, "proxy: drain timed out, %lld clients cut off\n",
            (long long)st.clients);
    event_base_loopexit(r->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    struct run *r = arg;
    if (r->signals++ > 0) {
        event_base_loopexit(r->base, NULL); /* a second one: at once */
        return;
    }
    /* read now: a reload may have changed it */
    int64_t ns = r->cfg->drain_timeout;
    struct timeval drain = {.tv_sec = (time_t)(ns / TIDE_SEC(1)),
                            .tv_usec = (suseconds_t)(ns % TIDE_SEC(1) / 1000)};
    evtimer_add(r->deadline, &drain);
    px_drain(r->px, on_drained, r);
}

static void on_hangup(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    struct run *r = arg;
    if (r->signals > 0) { /* the group is closing: nothing to add to */
        fprintf(stderr, "proxy: SIGHUP while draining: not reloaded\n");
        return;
    }
    px_reload_run(r->reload);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    /* one that comes while the configuration is read is lost, not fatal
     * (its event is added below) */
    signal(SIGHUP, SIG_IGN);
    struct px_config cfg;
    px_config_init(&cfg);
    char err[512];
    int rc = px_config_parse(&cfg, argc, argv, err, sizeof err);
    if (rc == 1) {
        px_config_usage(stdout);
        return 0;
    }
    if (rc == 2) {
        printf("tidepool-proxy %s\n", TIDE_VERSION_STRING);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "proxy: %s\n(proxy --help lists the options)\n", err);
        return 2;
    }

    struct run r = {.base = event_base_new(), .cfg = &cfg};
    if (!r.base) {
        fprintf(stderr, "proxy: cannot make an event base\n");
        return 1;
    }
    int status = 1;
    struct event *sigint = NULL, *sigterm = NULL, *sighup = NULL;
    if (px_upstreams_open(&r.ups, r.base, &cfg, err, sizeof err)) {
        fprintf(stderr, "proxy: %s\n", err);
        goto out;
    }
    /* the signals are caught before the port is open: whoever sees it
     * take connections may send them (the test, systemd's reload), and a
     * SIGHUP not caught would end the program */
    r.deadline = evtimer_new(r.base, on_deadline, &r);
    sigint = evsignal_new(r.base, SIGINT, on_signal, &r);
    sigterm = evsignal_new(r.base, SIGTERM, on_signal, &r);
    sighup = evsignal_new(r.base, SIGHUP, on_hangup, &r);
    if (!r.deadline || !sigint || !sigterm || !sighup ||
        px_reload_new(&cfg, &r.ups, argc, argv, stderr, &r.reload)) {
        fprintf(stderr, "proxy: cannot make events\n");
        goto out;
    }
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    evsignal_add(sighup, NULL);
    struct px_options o;
    px_config_proxy_options(&cfg, &o);
    if (px_new(r.base, r.ups.group, &o, &r.px)) {
        fprintf(stderr, "proxy: cannot listen on %s:%d: %s\n", cfg.listen_host,
                cfg.listen_port, strerror(errno));
        goto out;
    }
    printf("listening on %s:%d\n", cfg.listen_host, px_port(r.px));
    fflush(stdout);
    event_base_dispatch(r.base);
    status = 0;
out:
    px_free(r.px);
    px_reload_free(r.reload);
    px_upstreams_dispose(&r.ups);
    if (r.deadline)
        event_free(r.deadline);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    if (sighup)
        event_free(sighup);
    /* what the frees left queued (bufferevents closed by finalizers) */
    event_base_loop(r.base, EVLOOP_NONBLOCK);
    event_base_free(r.base);
    return status;
}
