/* The TCP factory: options, the pool's make/cancel/destroy hooks, and the
 * make record both factories run on (the TLS factory is this one with a
 * handshake after the dial). */
#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>

#include "net_internal.h"

#define KEEPALIVE_MAX                                                          \
    TIDE_SEC(32767) /* Linux's bound on TCP_KEEPIDLE/INTVL                     \
                     */
#define HOST_MAX   253
#define HOSTS_FILE "/etc/hosts"

/* ---- options ---- */

static bool span_ok(int64_t span)
{
    return span >= 0;
}

/* A port the options may name: 0 is "none", the rest of an int outside a
 * port's range is refused rather than wrapped into someone else's port. */
static bool port_ok(int port)
{
    return port >= 0 && port <= 65535;
}

/* "443" or a service name; 0 when neither. Digits only for a number: strtol
 * alone would take " 443", "+443" and "-0". */
static uint16_t service_port(const char *service)
{
    if (*service >= '0' && *service <= '9') {
        char *end;
        errno = 0;
        long n = strtol(service, &end, 10);
        if (*end != '\0')
            return 0;
        return errno == 0 && n > 0 && n <= 65535 ? (uint16_t)n : 0;
    }
    struct servent se, *res = NULL;
    char buf[1024];
    if (getservbyname_r(service, "tcp", &se, buf, sizeof buf, &res) != 0 ||
        !res)
        return 0;
    return ntohs((uint16_t)res->s_port);
}

/* An IP literal (brackets allowed for IPv6) into f->fixed. */
static bool parse_literal(struct tide_tcp_factory *f, const char *host)
{
    char buf[HOST_MAX + 1];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        memcpy(buf, host + 1, n - 2);
        buf[n - 2] = '\0';
        host = buf;
    }
    struct tide__net_addr *a = &f->fixed[0];
    memset(a, 0, sizeof *a);
    f->n_fixed = 1;
    if (inet_pton(AF_INET6, host, &a->u.in6.sin6_addr) == 1) {
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_port = htons(f->port);
        a->len = sizeof a->u.in6;
        return true;
    }
    if (inet_pton(AF_INET, host, &a->u.in.sin_addr) == 1) {
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_port = htons(f->port);
        a->len = sizeof a->u.in;
        return true;
    }
    f->n_fixed = 0;
    return false;
}

/* RFC 6761: localhost is the loopback, never a DNS question. */
static void add_loopback(struct tide_tcp_factory *f)
{
    if (f->family != AF_INET) {
        struct tide__net_addr *a = &f->fixed[f->n_fixed++];
        memset(a, 0, sizeof *a);
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_addr = in6addr_loopback;
        a->u.in6.sin6_port = htons(f->port);
        a->len = sizeof a->u.in6;
    }
    if (f->family != AF_INET6) {
        struct tide__net_addr *a = &f->fixed[f->n_fixed++];
        memset(a, 0, sizeof *a);
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->u.in.sin_port = htons(f->port);
        a->len = sizeof a->u.in;
    }
}

static bool is_localhost(const char *host)
{
    size_t n = strlen(host);
    if (n > 0 && host[n - 1] == '.')
        n--; /* "localhost." */
    return n == 9 && strncasecmp(host, "localhost", 9) == 0;
}

/* What both kinds of upstream share: spans, the idle data hook, the
 * setup. */
static int init_common(struct tide_tcp_factory *f, struct event_base *base,
                       const struct tide_tcp_options *o)
{
    if (!span_ok(o->connect_timeout) || !span_ok(o->attempt_delay) ||
        !span_ok(o->setup_timeout))
        return TIDE_EINVAL;
    f->base = base;
    f->connect_timeout = o->connect_timeout ? o->connect_timeout : TIDE_SEC(5);
    f->attempt_delay = o->attempt_delay ? o->attempt_delay : TIDE_MS(250);
    f->on_idle_data = o->on_idle_data;
    f->idle_data_arg = o->idle_data_arg;
    f->setup = o->setup;
    f->setup_arg = o->setup_arg;
    f->setup_abort = o->setup_abort;
    f->setup_timeout = o->setup_timeout ? o->setup_timeout : TIDE_SEC(5);
    return 0;
}

int tide__tcp_init(struct tide_tcp_factory *f, struct event_base *base,
                   const struct tide_tcp_options *o)
{
    memset(f, 0, sizeof *f);
    if (!base || !o)
        return TIDE_EINVAL;
    int rc = init_common(f, base, o);
    if (rc != 0)
        return rc;
    if (o->path)
        return tide__net_unix_init(f, o);
    if (!o->host || !*o->host || strlen(o->host) > HOST_MAX + 2)
        return TIDE_EINVAL;
    if (!port_ok(o->port) || (o->port != 0) == (o->service != NULL))
        return TIDE_EINVAL; /* exactly one of the two */
    if (o->family != AF_UNSPEC && o->family != AF_INET && o->family != AF_INET6)
        return TIDE_EINVAL;
    if (!span_ok(o->keepalive_idle) || !span_ok(o->keepalive_interval) ||
        o->keepalive_idle > KEEPALIVE_MAX ||
        o->keepalive_interval > KEEPALIVE_MAX || o->keepalive_count < 0 ||
        o->keepalive_count > 127)
        return TIDE_EINVAL;
    if ((o->keepalive_interval || o->keepalive_count) && !o->keepalive_idle)
        return TIDE_EINVAL; /* keepalive details without keepalive */
    f->port = o->port ? (uint16_t)o->port : service_port(o->service);
    if (f->port == 0)
        return TIDE_EINVAL;

    f->family = o->family;
    f->keepalive_idle = o->keepalive_idle;
    f->keepalive_interval = o->keepalive_interval;
    f->keepalive_count = o->keepalive_count;

    f->literal = parse_literal(f, o->host);
    if (f->literal && f->family != AF_UNSPEC &&
        f->fixed[0].u.sa.sa_family != f->family)
        return TIDE_EINVAL;
    f->loopback = !f->literal && is_localhost(o->host);
    if (f->loopback)
        add_loopback(f);
    if (f->n_fixed == 0 && !o->dns)
        f->n_fixed = tide__net_hosts_lookup(HOSTS_FILE, o->host, f->port,
                                            f->family, f->fixed, DIAL_ADDRS);
    f->host = strdup(o->host);
    if (!f->host)
        return TIDE_ENOMEM;

    if (f->n_fixed == 0) {
        if (o->dns) {
            f->dns = o->dns;
        } else {
            /* the system's resolvers; it must not keep the loop running
             * while no query is in flight */
            f->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                              EVDNS_BASE_DISABLE_WHEN_INACTIVE);
            if (!f->dns) {
                free(f->host);
                f->host = NULL;
                return TIDE_EDNS;
            }
            f->own_dns = true;
        }
    }
    return 0;
}

/* ---- makes ---- */

static struct tide__net_make *make_of(struct tide__net_dial *d)
{
    char *at = (char *)d - offsetof(struct tide__net_make, dial);
    return (struct tide__net_make *)(void *)at;
}

/* Frees a make whose events are all stopped. They are embedded: libevent's
 * debug mode is told they are gone (a no-op outside it). */
static void free_make(struct tide__net_make *m)
{
    tide__net_dial_forget(&m->dial);
    event_debug_unassign(&m->hs_timer);
    event_debug_unassign(&m->setup_timer);
    free(m);
}

static void unlink_make(struct tide__net_make *m)
{
    struct tide_tcp_factory *f = m->f;
    if (m->prev)
        m->prev->next = m->next;
    else
        f->makes = m->next;
    if (m->next)
        m->next->prev = m->prev;
    f->stats.pending--;
}

/* Connected, but the connection's own records could not be allocated. */
static void fail_out_of_memory(struct tide__net_make *m)
{
    struct tide__net_fail fail;
    memset(&fail, 0, sizeof fail);
    tide__net_fail_set(&fail, TIDE_ENOMEM, "connected to %s, but out of memory",
                       m->f->host);
    tide__net_make_failed(m, &fail);
}

void tide__net_make_done(struct tide__net_make *m, struct bufferevent *bev)
{
    struct tide_tcp_factory *f = m->f;
    struct tide__net_conn *c = tide__net_conn_add(f, bev, f->tls != NULL);
    if (!c) {
        bufferevent_free(bev);
        fail_out_of_memory(m);
        return;
    }
    unlink_make(m);
    f->stats.made++;
    f->stats.live++;
    struct tide_make *token = m->token;
    free_make(m);
    tide_evpool_made(token, bev); /* the pool owns bev from here */
}

void tide__net_make_failed(struct tide__net_make *m,
                           const struct tide__net_fail *fail)
{
    struct tide_tcp_factory *f = m->f;
    f->last = *fail; /* fail may live in m: kept before m goes */
    unlink_make(m);
    f->stats.failed++;
    struct tide_make *token = m->token;
    free_make(m);
    tide_evpool_unmade(token, f->last.d.code, f->last.text);
}

static void on_dialed(struct tide__net_dial *d, evutil_socket_t fd)
{
    struct tide__net_make *m = make_of(d);
    struct tide_tcp_factory *f = m->f;
    if (fd < 0) {
        tide__net_make_failed(m, &d->fail);
        return;
    }
    if (f->tls) {
        tide__tls_dialed(m, fd);
        return;
    }
    struct bufferevent *bev = bufferevent_socket_new(
        f->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!bev) {
        close(fd);
        fail_out_of_memory(m);
        return;
    }
    tide__net_hand_over(bev);
    tide__net_setup_start(m, bev);
}

void tide__net_make_begin(struct tide_tcp_factory *f, struct tide_make *token)
{
    f->stats.makes++;
    struct tide__net_make *m = calloc(1, sizeof *m);
    if (!m) {
        f->stats.failed++;
        tide_evpool_unmade(token, TIDE_ENOMEM, NULL);
        return;
    }
    m->f = f;
    m->token = token;
    m->next = f->makes;
    if (f->makes)
        f->makes->prev = m;
    f->makes = m;
    f->stats.pending++;
    event_assign(&m->hs_timer, f->base, -1, 0, NULL, NULL);
    event_assign(&m->setup_timer, f->base, -1, 0, NULL, NULL);
    tide__net_dial_start(&m->dial, f, on_dialed);
}

static void cancel_make(struct tide__net_make *m, const char *why)
{
    struct tide_tcp_factory *f = m->f;
    tide__net_dial_abort(&m->dial);
    tide__tls_make_abort(m);
    tide__net_setup_abort(m);
    unlink_make(m);
    f->stats.cancelled++;
    struct tide_make *token = m->token;
    free_make(m);
    tide_evpool_unmade(token, TIDE_ECANCELLED, why);
}

void tide__net_make_cancel(struct tide_tcp_factory *f, struct tide_make *token)
{
    struct tide__net_make *m = f->makes;
    while (m && m->token != token)
        m = m->next;
    if (m) /* else already answered */
        cancel_make(m, "the connect was cancelled");
}

/* ---- the pool's hooks ---- */

static void hook_make(struct tide_evpool *pool, struct tide_make *token,
                      void *arg)
{
    (void)pool;
    tide__net_make_begin(arg, token);
}

static void hook_cancel(struct tide_make *token, void *arg)
{
    tide__net_make_cancel(arg, token);
}

static void hook_destroy(void *resource, void *arg)
{
    struct tide_tcp_factory *f = arg;
    struct bufferevent *bev = resource;
    struct tide__net_conn *c = tide__net_conn_find(f, bev);
    bool tls = c ? c->tls : f->tls != NULL;
    if (c)
        tide__net_conn_remove(f, c);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    if (tls)
        tide__tls_close(bev);
    /* the socket is closed (and the SSL freed) when libevent finalizes the
     * bufferevent, from the loop: nothing here blocks */
    bufferevent_free(bev);
    f->stats.destroyed++;
    f->stats.live--;
}

static void bind_hooks(struct tide_tcp_factory *f, struct tide_factory *out)
{
    *out = (struct tide_factory){
        .make = hook_make,
        .destroy = hook_destroy,
        .cancel = hook_cancel,
        .alive = tide__net_alive,
        .reusable = tide__net_reusable,
        .check = NULL,
        .watch = tide__net_watch,
        .stale = tide__net_stale,
        .arg = f,
    };
}

void tide__tcp_dispose(struct tide_tcp_factory *f)
{
    while (f->makes)
        cancel_make(f->makes, "the factory was freed");
    tide__net_conns_dispose(f);
    if (f->own_dns)
        evdns_base_free(f->dns, 1);
    f->dns = NULL;
    free(f->host);
    f->host = NULL;
}

/* ---- public ---- */

int tide_tcp_factory_new(struct event_base *base,
                         const struct tide_tcp_options *o,
                         struct tide_tcp_factory **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    struct tide_tcp_factory *f = malloc(sizeof *f);
    if (!f)
        return TIDE_ENOMEM;
    int rc = tide__tcp_init(f, base, o);
    if (rc != 0) {
        free(f);
        return rc;
    }
    *out = f;
    return 0;
}

void tide_tcp_factory_bind(struct tide_tcp_factory *f, struct tide_factory *out)
{
    if (!out)
        return;
    if (!f) {
        /* a table without make: tide_evpool_new refuses it, rather than a
         * pool calling hooks with a NULL factory later */
        memset(out, 0, sizeof *out);
        return;
    }
    bind_hooks(f, out);
}

void tide_tcp_factory_free(struct tide_tcp_factory *f)
{
    if (!f)
        return;
    tide__tcp_dispose(f);
    free(f);
}

void tide_tcp_factory_stats(const struct tide_tcp_factory *f,
                            struct tide_net_stats *out)
{
    if (!out)
        return;
    if (!f) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = f->stats;
}
