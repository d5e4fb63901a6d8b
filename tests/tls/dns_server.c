#include "dns_server.h"

#include <event2/dns_struct.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static void answer(struct dns_server *s, struct evdns_server_request *req)
{
    if (s->mode == DNS_REFUSE) {
        evdns_server_request_respond(req, DNS_ERR_REFUSED);
        return;
    }
    bool known = false;
    for (int q = 0; q < req->nquestions; q++) {
        const struct evdns_server_question *qu = req->questions[q];
        for (int i = 0; i < s->n_records; i++) {
            const struct dns_record *r = &s->records[i];
            /* evdns randomises the case of the names it asks (0x20) */
            if (strcasecmp(r->name, qu->name) != 0)
                continue;
            known = true;
            if (qu->type == EVDNS_TYPE_A && r->family == AF_INET)
                evdns_server_request_add_a_reply(req, qu->name, 1, &r->addr.v4,
                                                 60);
            if (qu->type == EVDNS_TYPE_AAAA && r->family == AF_INET6)
                evdns_server_request_add_aaaa_reply(req, qu->name, 1,
                                                    &r->addr.v6, 60);
        }
    }
    evdns_server_request_respond(req, known ? DNS_ERR_NONE : DNS_ERR_NOTEXIST);
}

struct hold {
    struct dns_server *s;
    int i;
};

static void release_held(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hold *h = arg;
    struct dns_server *s = h->s;
    int i = h->i;
    event_free(s->held_timer[i]);
    s->held_timer[i] = NULL;
    struct evdns_server_request *req = s->held[i];
    s->held[i] = NULL;
    free(h);
    answer(s, req);
}

static void on_request(struct evdns_server_request *req, void *arg)
{
    struct dns_server *s = arg;
    s->queries++;
    bool aaaa = false;
    for (int q = 0; q < req->nquestions; q++) {
        if (req->questions[q]->type == EVDNS_TYPE_A)
            s->queries_a++;
        if (req->questions[q]->type == EVDNS_TYPE_AAAA) {
            s->queries_aaaa++;
            aaaa = true;
        }
    }
    if (s->mode == DNS_SILENT) {
        evdns_server_request_drop(req);
        return;
    }
    if (aaaa && s->aaaa_delay_ms > 0) {
        for (int i = 0; i < DNS_HELD; i++) {
            if (s->held[i])
                continue;
            struct hold *h = malloc(sizeof *h);
            h->s = s;
            h->i = i;
            s->held[i] = req;
            s->held_timer[i] = evtimer_new(s->base, release_held, h);
            struct timeval tv = {0, s->aaaa_delay_ms * 1000};
            evtimer_add(s->held_timer[i], &tv);
            return;
        }
    }
    answer(s, req);
}

bool dns_server_start(struct dns_server *s, struct event_base *base)
{
    memset(s, 0, sizeof *s);
    s->base = base;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return false;
    }
    s->portnum = ntohs(a.sin_port);
    s->port = evdns_add_server_port_with_base(base, fd, 0, on_request, s);
    if (!s->port) {
        close(fd);
        return false;
    }
    return true;
}

void dns_server_add(struct dns_server *s, const char *name, const char *ip)
{
    struct dns_record *r = &s->records[s->n_records++];
    snprintf(r->name, sizeof r->name, "%s", name);
    if (inet_pton(AF_INET6, ip, &r->addr.v6) == 1)
        r->family = AF_INET6;
    else if (inet_pton(AF_INET, ip, &r->addr.v4) == 1)
        r->family = AF_INET;
}

void dns_server_stop(struct dns_server *s)
{
    for (int i = 0; i < DNS_HELD; i++) {
        if (!s->held[i])
            continue;
        struct hold *h = event_get_callback_arg(s->held_timer[i]);
        event_free(s->held_timer[i]);
        free(h);
        evdns_server_request_drop(s->held[i]);
        s->held[i] = NULL;
    }
    if (s->port)
        evdns_close_server_port(s->port); /* closes the socket */
    s->port = NULL;
}

struct evdns_base *dns_resolver(struct event_base *base,
                                const struct dns_server *s, const char *timeout)
{
    /* no resolv.conf, no hosts file: only the test's server */
    struct evdns_base *dns =
        evdns_base_new(base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (!dns)
        return NULL;
    char where[32];
    snprintf(where, sizeof where, "127.0.0.1:%u", (unsigned)s->portnum);
    if (evdns_base_nameserver_ip_add(dns, where) != 0 ||
        evdns_base_set_option(dns, "timeout:", timeout) != 0 ||
        evdns_base_set_option(dns, "attempts:", "1") != 0 ||
        evdns_base_set_option(dns, "max-timeouts:", "100") != 0) {
        evdns_base_free(dns, 0);
        return NULL;
    }
    return dns;
}
