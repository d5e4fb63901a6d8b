/* The servers the examples talk to, for CI and for trying them out: on
 * 127.0.0.1, a port of the kernel's choosing, printed on the first line of
 * stdout. Not an example itself: the tests' own servers and run-time
 * certificates (tests/tls/servers.c, certs.c) compiled in unchanged, as the
 * TLS benchmark does.
 *
 *   loopback_server echo SECONDS          echoes what it reads (plain TCP)
 *   loopback_server https SECONDS CA-OUT  HTTP/1.1 over TLS: each request
 *       answered with a short body and its Content-Length; the certificate
 *       is for localhost and 127.0.0.1, signed by a CA made at start and
 *       written to CA-OUT as PEM
 *
 * It serves until SECONDS have passed or it gets SIGTERM or SIGINT, so a
 * run that forgets it is still bounded. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "certs.h"
#include "servers.h"

static const char body[] = "hello from 127.0.0.1\n";

/* Each request, read up to its blank line, gets one whole response. */
static void answer_http(struct server_conn *c, struct evbuffer *in, void *arg)
{
    (void)arg;
    struct evbuffer_ptr end;
    while ((end = evbuffer_search(in, "\r\n\r\n", 4, NULL)).pos >= 0) {
        evbuffer_drain(in, (size_t)end.pos + 4);
        struct evbuffer *out = bufferevent_get_output(c->bev);
        evbuffer_add_printf(out,
                            "HTTP/1.1 200 OK\r\n"
                            "Content-Type: text/plain\r\n"
                            "Content-Length: %zu\r\n\r\n%s",
                            sizeof body - 1, body);
    }
}

static void on_stop(evutil_socket_t fd, short what, void *base)
{
    (void)fd, (void)what;
    event_base_loopbreak(base);
}

static bool write_ca(X509 *ca, const char *path)
{
    char *pem = pki_pem(ca);
    FILE *f = pem ? fopen(path, "w") : NULL;
    bool ok = f && fputs(pem, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    free(pem);
    return ok;
}

int main(int argc, char **argv)
{
    bool https = argc == 4 && strcmp(argv[1], "https") == 0;
    bool echo = argc == 3 && strcmp(argv[1], "echo") == 0;
    long seconds = argc >= 3 ? strtol(argv[2], NULL, 10) : 0;
    if ((!https && !echo) || seconds < 1 || seconds > 3600) {
        fprintf(stderr, "usage: %s echo SECONDS | https SECONDS CA-OUT-FILE\n",
                argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    struct pki pki = {0};
    SSL_CTX *ctx = NULL;
    if (https) {
        if (!pki_make(&pki) || !write_ca(pki.ca, argv[3]) ||
            !(ctx = server_ctx(pki.good, pki.key, 0, 0, NULL))) {
            fprintf(stderr, "cannot make the certificates\n");
            return 1;
        }
    }
    struct test_server s;
    if (!base || !server_start(&s, base, AF_INET, 0, ctx)) {
        fprintf(stderr, "cannot listen on 127.0.0.1\n");
        return 1;
    }
    if (https) {
        s.on_request = answer_http;
        s.alpn_offer = "\x08http/1.1";
        s.alpn_offer_len = 9;
    }
    printf("%u\n", (unsigned)s.port);
    fflush(stdout);

    struct timeval limit = {seconds, 0};
    struct event *timer = evtimer_new(base, on_stop, base);
    struct event *term = evsignal_new(base, SIGTERM, on_stop, base);
    struct event *intr = evsignal_new(base, SIGINT, on_stop, base);
    evtimer_add(timer, &limit);
    event_add(term, NULL);
    event_add(intr, NULL);
    event_base_dispatch(base);

    event_free(timer);
    event_free(term);
    event_free(intr);
    server_stop(&s); /* frees ctx */
    if (https)
        pki_free(&pki);
    event_base_free(base);
    return 0;
}
