/* proxy: an HTTP/1.1 reverse proxy on a tidepool group (see proxy.h).
 *
 *   proxy --listen 127.0.0.1:8080 --upstream 127.0.0.1:9001
 *         [--upstream tls://host:port ...] [--pool-size N] [--cap N]
 *         [--acquire-timeout MS] [--keep SECONDS] [--ca FILE] [--insecure]
 *
 * --keep is how long an idle upstream connection is kept (preset 60 s; keep
 * it below the upstream's own keep-alive timeout). Upstreams are IP literals or
 * names (resolved by the TCP factory). SIGINT or SIGTERM closes the group and
 * ends the program once it drained. */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tidepool/tls.h>

#include "proxy.h"

#define MAX_UPSTREAMS 32

struct upstream_arg {
    bool tls;
    char host[256];
    int port;
};

static int parse_hostport(const char *s, char *host, size_t hlen, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= hlen || colon == s)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 1 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: proxy --listen HOST:PORT --upstream [tls://]HOST:PORT "
            "[--upstream ...]\n"
            "             [--pool-size N] [--cap N] [--acquire-timeout MS]"
            " [--keep S]\n             [--ca FILE] [--insecure]\n");
    exit(2);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    char listen_host[64] = "127.0.0.1";
    int listen_port = 0;
    struct upstream_arg ups[MAX_UPSTREAMS];
    int n_ups = 0;
    long pool_size = 32, cap = 0, acquire_ms = 5000, keep_s = 60;
    const char *ca = NULL;
    bool insecure = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--listen") == 0 && v) {
            if (parse_hostport(v, listen_host, sizeof listen_host,
                               &listen_port))
                usage();
            i++;
        } else if (strcmp(a, "--upstream") == 0 && v) {
            if (n_ups == MAX_UPSTREAMS)
                usage();
            struct upstream_arg *u = &ups[n_ups++];
            u->tls = strncmp(v, "tls://", 6) == 0;
            if (parse_hostport(u->tls ? v + 6 : v, u->host, sizeof u->host,
                               &u->port))
                usage();
            i++;
        } else if (strcmp(a, "--pool-size") == 0 && v) {
            pool_size = strtol(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--cap") == 0 && v) {
            cap = strtol(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--acquire-timeout") == 0 && v) {
            acquire_ms = strtol(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--keep") == 0 && v) {
            keep_s = strtol(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--ca") == 0 && v) {
            ca = v;
            i++;
        } else if (strcmp(a, "--insecure") == 0) {
            insecure = true;
        } else {
            usage();
        }
    }
    if (n_ups == 0 || pool_size < 1 || cap < 0 || acquire_ms < 1 || keep_s < 1)
        usage();

    struct event_base *base = event_base_new();
    struct tide_group *group;
    if (tide_group_new(base, &(struct tide_group_options){.cap = cap},
                       &group)) {
        fprintf(stderr, "proxy: cannot make the group\n");
        return 1;
    }
    struct tide_tcp_factory *tcp[MAX_UPSTREAMS] = {0};
    struct tide_tls_factory *tls[MAX_UPSTREAMS] = {0};
    for (int i = 0; i < n_ups; i++) {
        struct tide_factory f;
        struct tide_tcp_options t = {.host = ups[i].host, .port = ups[i].port};
        int rc;
        if (ups[i].tls) {
            struct tide_tls_options o = {
                .tcp = t, .ca_file = ca, .insecure_skip_verify = insecure};
            rc = tide_tls_factory_new(base, &o, &tls[i]);
            tide_tls_factory_bind(tls[i], &f);
        } else {
            rc = tide_tcp_factory_new(base, &t, &tcp[i]);
            tide_tcp_factory_bind(tcp[i], &f);
        }
        if (rc) {
            fprintf(stderr, "proxy: upstream %s:%d: %s\n", ups[i].host,
                    ups[i].port, tide_strerror(rc));
            return 1;
        }
        /* every connection may stay idle: a pool that closes what it
         * cannot keep reconnects under load */
        struct tide_evpool_options po = {
            .limits = TIDE_LIMITS(.size = pool_size, .idle = pool_size,
                                  .keep = TIDE_SEC(keep_s)),
            .queue_max = 65536,
        };
        char name[300];
        snprintf(name, sizeof name, "%s%s:%d", ups[i].tls ? "tls://" : "",
                 ups[i].host, ups[i].port);
        struct tide_group_upstream *u;
        rc = tide_group_add(group, name, &f, &po, &u);
        if (rc) {
            fprintf(stderr, "proxy: upstream %s: %s\n", name,
                    tide_strerror(rc));
            return 1;
        }
    }
    struct px *px;
    struct px_options o = {.listen_host = listen_host,
                           .listen_port = listen_port,
                           .acquire_timeout = TIDE_MS(acquire_ms)};
    if (px_new(base, group, &o, &px)) {
        fprintf(stderr, "proxy: cannot listen on %s:%d\n", listen_host,
                listen_port);
        return 1;
    }
    printf("listening on %s:%d\n", listen_host, px_port(px));
    fflush(stdout);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    event_base_dispatch(base);
    px_free(px);
    tide_group_free(group);
    for (int i = 0; i < n_ups; i++) {
        tide_tcp_factory_free(tcp[i]);
        tide_tls_factory_free(tls[i]);
    }
    event_free(sigint);
    event_free(sigterm);
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
    return 0;
}
