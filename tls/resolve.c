/* Resolution: the host's AAAA and A records, asked at once through evdns.
 *
 * The raw queries (evdns_base_resolve_ipv6/ipv4) are used rather than
 * evdns_getaddrinfo because only they say why a lookup failed: getaddrinfo
 * folds a timeout, a refusal and a server failure into one EAI_FAIL, and a
 * caller needs to tell "no such name" from "the DNS server is down".
 *
 * A query can be let go (a make cancelled) but not taken back: libevent
 * delivers the cancellation (or the answer that was already on its way)
 * later, from the loop, to the argument it was given. So each query is its
 * own small allocation that outlives the dial it served and frees itself
 * when that last callback arrives. */
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>

#include "net_internal.h"

struct tide__net_query {
    struct tide__net_dial *dial; /* NULL once let go */
    struct tide__net_family *fam;
    struct evdns_request *req;
};

static void add_addr(struct tide__net_family *fam, int family, const void *raw,
                     uint16_t port)
{
    if (fam->n >= DIAL_ADDRS)
        return;
    struct tide__net_addr *a = &fam->addrs[fam->n++];
    memset(a, 0, sizeof *a);
    if (family == AF_INET6) {
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_port = htons(port);
        memcpy(&a->u.in6.sin6_addr, raw, 16);
        a->len = sizeof a->u.in6;
    } else {
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_port = htons(port);
        memcpy(&a->u.in.sin_addr, raw, 4);
        a->len = sizeof a->u.in;
    }
}

static void on_answer(int result, char type, int count, int ttl,
                      void *addresses, void *arg)
{
    (void)ttl;
    struct tide__net_query *q = arg;
    struct tide__net_dial *d = q->dial;
    struct tide__net_family *fam = q->fam;
    free(q);
    if (!d)
        return; /* let go: the dial is gone */
    fam->query = NULL;
    fam->done = true;
    if (result == DNS_ERR_NONE && count > 0 &&
        (type == DNS_IPv6_AAAA || type == DNS_IPv4_A)) {
        int family = type == DNS_IPv6_AAAA ? AF_INET6 : AF_INET;
        size_t size = type == DNS_IPv6_AAAA ? 16 : 4;
        for (int i = 0; i < count; i++)
            add_addr(fam, family, (const char *)addresses + (size_t)i * size,
                     d->f->port);
    } else {
        fam->dns_error = result == DNS_ERR_NONE ? DNS_ERR_NODATA : result;
    }
    tide__net_dial_resolved(d, fam);
}

static void ask(struct tide__net_dial *d, struct tide__net_family *fam, bool v6)
{
    struct tide_tcp_factory *f = d->f;
    fam->asked = true;
    struct tide__net_query *q = calloc(1, sizeof *q);
    if (q) {
        q->dial = d;
        q->fam = fam;
        q->req = v6 ? evdns_base_resolve_ipv6(f->dns, f->host, 0, on_answer, q)
                    : evdns_base_resolve_ipv4(f->dns, f->host, 0, on_answer, q);
    }
    if (!q || !q->req) {
        /* refused locally (out of memory, a name evdns will not send) */
        free(q);
        fam->done = true;
        fam->dns_error = DNS_ERR_UNKNOWN;
        return;
    }
    fam->query = q;
}

void tide__net_resolve_start(struct tide__net_dial *d)
{
    struct tide_tcp_factory *f = d->f;
    if (f->n_fixed > 0) {
        /* a literal, localhost or a hosts file entry: no DNS question */
        for (int i = 0; i < f->n_fixed; i++) {
            struct tide__net_family *fam =
                f->fixed[i].u.sa.sa_family == AF_INET6 ? &d->v6 : &d->v4;
            if (fam->n < DIAL_ADDRS)
                fam->addrs[fam->n++] = f->fixed[i];
        }
        d->v6.done = d->v4.done = true;
        return;
    }
    bool want6 = f->family != AF_INET;
    bool want4 = f->family != AF_INET6;
    d->v6.done = !want6;
    d->v4.done = !want4;
    if (want6)
        ask(d, &d->v6, true);
    if (want4)
        ask(d, &d->v4, false);
}

static void let_go(struct tide__net_dial *d, struct tide__net_family *fam)
{
    struct tide__net_query *q = fam->query;
    if (!q)
        return;
    fam->query = NULL;
    q->dial = NULL; /* freed by its callback, which libevent still owes */
    evdns_cancel_request(d->f->dns, q->req);
}

void tide__net_resolve_abort(struct tide__net_dial *d)
{
    let_go(d, &d->v6);
    let_go(d, &d->v4);
}

bool tide__net_resolve_done(const struct tide__net_dial *d)
{
    return d->v6.done && d->v4.done;
}
