/* Dialing: from a host name to one connected socket, Happy Eyeballs style
 * (RFC 8305), within one deadline.
 *
 * - AAAA and A are asked at once. When A answers first, IPv4 waits up to
 *   RESOLUTION_DELAY for AAAA, so a host with working IPv6 is reached over it.
 * - Addresses are tried interleaved by family, IPv6 first, one at a time;
 *   when an attempt has not connected after attempt_delay the next one starts
 *   beside it (the earlier keeps running), and when one fails the next starts
 *   at once. Addresses arriving late join the queue.
 * - The first to connect wins; every other socket is closed, every query let
 *   go, every timer stopped, and the socket goes up with its ownership.
 * - When everything failed, the most telling failure is the answer: a refusal
 *   beats an unreachable IPv6 (a host without IPv6 says little), and a DNS
 *   failure is reported as such when no address came back at all.
 * - A Unix socket's one address (unix.c) runs the same way. Its listener's
 *   backlog being full is no failure but a wait, as a TCP connect would
 *   wait in SYN_SENT: a non-blocking Unix connect answers EAGAIN at once
 *   instead of completing later, so it is asked again every UNIX_RETRY
 *   until connect_timeout.
 * Every step runs from the loop: the start is an event made active. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/dns.h>

#include "net_internal.h"

#define RESOLUTION_DELAY TIDE_MS(50)
#define UNIX_RETRY       TIDE_MS(20)

static void to_timeval(int64_t ns, struct timeval *tv)
{
    tv->tv_sec = (time_t)(ns / TIDE_SEC(1));
    tv->tv_usec = (suseconds_t)((ns % TIDE_SEC(1)) / 1000);
}

static bool has_addr(const struct tide__net_family *fam)
{
    return fam->next < fam->n;
}

static void arm_next(struct tide__net_dial *d, int64_t span)
{
    if (span == TIDE_FOREVER)
        return;
    struct timeval tv;
    to_timeval(span, &tv);
    event_add(&d->next, &tv);
    d->next_armed = true;
}

static void stop_next(struct tide__net_dial *d)
{
    event_del(&d->next);
    d->next_armed = false;
    d->held = false;
}

static void close_attempt(struct tide__net_attempt *a)
{
    if (a->fd < 0)
        return;
    event_del(&a->ev);
    close(a->fd);
    a->fd = -1;
}

void tide__net_dial_abort(struct tide__net_dial *d)
{
    for (int i = 0; i < DIAL_ATTEMPTS; i++)
        close_attempt(&d->att[i]);
    d->running = 0;
    event_del(&d->kick);
    event_del(&d->deadline);
    stop_next(d);
    tide__net_resolve_abort(d);
}

void tide__net_dial_forget(struct tide__net_dial *d)
{
    for (int i = 0; i < DIAL_ATTEMPTS; i++)
        event_debug_unassign(&d->att[i].ev);
    event_debug_unassign(&d->kick);
    event_debug_unassign(&d->next);
    event_debug_unassign(&d->deadline);
}

/* The most telling failure so far is kept. */
static void note_failure(struct tide__net_dial *d,
                         const struct tide__net_addr *a, int err)
{
    int rank;
    int code = tide__net_errno_code(err, &rank);
    if (rank < d->rank)
        return;
    char where[64];
    tide__net_addr_text(a, where, sizeof where);
    d->rank = rank;
    memset(&d->fail.d, 0, sizeof d->fail.d);
    d->fail.d.sys_errno = err;
    if (d->f->unix_path)
        tide__net_fail_set(&d->fail, code,
                           "connect to Unix socket %s: %s (errno %d)",
                           d->f->host, strerror(err), err);
    else
        tide__net_fail_set(&d->fail, code, "connect to %s (%s): %s (errno %d)",
                           where, d->f->host, strerror(err), err);
}

static void fail(struct tide__net_dial *d)
{
    tide__net_dial_abort(d);
    d->cb(d, -1); /* may free d */
}

/* Nothing connected and nothing is left to try. */
static void fail_final(struct tide__net_dial *d)
{
    if (d->tried > 0) {
        if (d->tried > 1 && !d->f->unix_path) { /* else: retries of one */
            size_t n = strlen(d->fail.text);
            snprintf(d->fail.text + n, sizeof d->fail.text - n,
                     "; %d addresses tried", d->tried);
        }
        fail(d);
        return;
    }
    /* no address at all: a DNS failure. "No such name" from either family
     * is the answer; a timeout only when no family said anything else. */
    int e6 = d->v6.dns_error, e4 = d->v4.dns_error;
    int e = e6 == DNS_ERR_NOTEXIST || e4 == DNS_ERR_NOTEXIST ? DNS_ERR_NOTEXIST
            : e6 && e6 != DNS_ERR_TIMEOUT                    ? e6
            : e4 && e4 != DNS_ERR_TIMEOUT                    ? e4
            : e6                                             ? e6
                                                             : e4;
    memset(&d->fail.d, 0, sizeof d->fail.d);
    d->fail.d.dns_error = e;
    tide__net_fail_set(&d->fail,
                       e == DNS_ERR_TIMEOUT ? TIDE_EDNS_TIMEOUT : TIDE_EDNS,
                       "resolving %s: %s (DNS error %d)", d->f->host,
                       e ? evdns_err_to_string(e) : "no address", e);
    fail(d);
}

static void on_attempt(evutil_socket_t fd, short what, void *arg);

/* Starts one attempt at a: 0, or the errno of a socket that failed at
 * once. */
static int launch(struct tide__net_dial *d, const struct tide__net_addr *a)
{
    struct tide__net_attempt *slot = NULL;
    for (int i = 0; i < DIAL_ATTEMPTS && !slot; i++)
        if (d->att[i].fd < 0)
            slot = &d->att[i];
    d->tried++;
    d->f->stats.attempts++;
    evutil_socket_t fd = tide__net_sock_connect(d->f, a);
    if (fd < 0) {
        int err = errno;
        note_failure(d, a, err);
        return err;
    }
    slot->fd = fd;
    slot->addr = *a;
    slot->dial = d;
    event_assign(&slot->ev, d->f->base, fd, EV_WRITE, on_attempt, slot);
    event_add(&slot->ev, NULL);
    d->running++;
    return 0;
}

enum step { STARTED, HELD, NONE };

/* IPv4 waits for AAAA while nothing was tried yet and the delay has not
 * passed (RFC 8305 3). */
static bool hold_for_v6(const struct tide__net_dial *d)
{
    return !has_addr(&d->v6) && d->tried == 0 && !d->v6.done && !d->waited;
}

/* Starts the next address, if one may start now. */
static enum step start_one(struct tide__net_dial *d)
{
    while (d->running < DIAL_ATTEMPTS) {
        bool six = has_addr(&d->v6), four = has_addr(&d->v4);
        if (!six && !four)
            return NONE;
        if (hold_for_v6(d)) {
            if (!d->held) {
                d->held = true;
                arm_next(d, RESOLUTION_DELAY);
            }
            return HELD;
        }
        struct tide__net_family *fam =
            six && four ? (d->last_family == AF_INET6 ? &d->v4 : &d->v6)
            : six       ? &d->v6
                        : &d->v4;
        const struct tide__net_addr *a = &fam->addrs[fam->next++];
        d->last_family = a->u.sa.sa_family;
        int err = launch(d, a);
        if (err == 0) {
            stop_next(d);
            arm_next(d, d->f->attempt_delay);
            return STARTED;
        }
        if (err == EAGAIN && a->u.sa.sa_family == AF_UNIX) {
            /* the backlog is full: the same address again shortly */
            fam->next--;
            d->full = true;
            stop_next(d);
            arm_next(d, UNIX_RETRY);
            return HELD;
        }
        /* failed at once: the next address now */
    }
    return NONE;
}

/* Decides what to do after anything happened. `now`: a new attempt may
 * start even though others run (one failed, or the attempt delay passed). */
static void progress(struct tide__net_dial *d, bool now)
{
    if (d->running > 0 && !now) {
        /* new addresses while an attempt runs: they wait their turn */
        if (!d->next_armed && (has_addr(&d->v6) || has_addr(&d->v4)))
            arm_next(d, d->f->attempt_delay);
        return;
    }
    if (start_one(d) != NONE || d->running > 0)
        return;
    if (tide__net_resolve_done(d))
        fail_final(d);
    /* else: the other family may still bring addresses */
}

void tide__net_dial_resolved(struct tide__net_dial *d,
                             struct tide__net_family *fam)
{
    (void)fam;
    progress(d, false);
}

static void on_attempt(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct tide__net_attempt *a = arg;
    struct tide__net_dial *d = a->dial;
    int err = tide__net_sock_error(fd);
    if (err == 0) {
        d->winner = a->addr;
        event_del(&a->ev);
        a->fd = -1; /* kept: the rest is closed */
        tide__net_dial_abort(d);
        d->cb(d, fd); /* may free d */
        return;
    }
    close_attempt(a);
    d->running--;
    note_failure(d, &a->addr, err);
    progress(d, true); /* a failure starts the next address at once */
}

static void on_next(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__net_dial *d = arg;
    d->next_armed = false;
    if (d->held) {
        d->held = false;
        d->waited = true; /* IPv4 goes now; AAAA still joins if it comes */
    }
    progress(d, true);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__net_dial *d = arg;
    long long ms = (long long)(d->f->connect_timeout / TIDE_MS(1));
    bool any = d->v6.n > 0 || d->v4.n > 0;
    if (!any && !tide__net_resolve_done(d)) {
        memset(&d->fail.d, 0, sizeof d->fail.d);
        d->fail.d.dns_error = DNS_ERR_TIMEOUT;
        tide__net_fail_set(&d->fail, TIDE_EDNS_TIMEOUT,
                           "resolving %s: no DNS answer within the connect "
                           "timeout (%lld ms)",
                           d->f->host, ms);
    } else if (d->f->unix_path) {
        memset(&d->fail.d, 0, sizeof d->fail.d);
        d->fail.d.sys_errno = ETIMEDOUT;
        tide__net_fail_set(&d->fail, TIDE_ECONNECT_TIMEOUT,
                           "connect to Unix socket %s: not connected within "
                           "%lld ms%s",
                           d->f->host, ms,
                           d->full ? " (its listener's backlog stayed full)"
                                   : "");
    } else if (d->running > 0 || d->tried == 0) {
        memset(&d->fail.d, 0, sizeof d->fail.d);
        d->fail.d.sys_errno = ETIMEDOUT;
        tide__net_fail_set(
            &d->fail, TIDE_ECONNECT_TIMEOUT,
            "connect to %s:%u: no address connected within %lld ms "
            "(%d tried)",
            d->f->host, (unsigned)d->f->port, ms, d->tried);
    }
    /* else every attempt failed and only DNS was pending: that failure */
    fail(d);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__net_dial *d = arg;
    tide__net_resolve_start(d);
    progress(d, false);
}

void tide__net_dial_start(struct tide__net_dial *d, struct tide_tcp_factory *f,
                          tide__net_dial_cb cb)
{
    memset(d, 0, sizeof *d);
    d->f = f;
    d->cb = cb;
    for (int i = 0; i < DIAL_ATTEMPTS; i++)
        d->att[i].fd = -1;
    tide__net_fail_set(&d->fail, TIDE_ECONNECT,
                       "connect to %s: no address tried", f->host);
    event_assign(&d->kick, f->base, -1, 0, on_kick, d);
    event_assign(&d->next, f->base, -1, 0, on_next, d);
    event_assign(&d->deadline, f->base, -1, 0, on_deadline, d);
    if (f->connect_timeout != TIDE_FOREVER) {
        struct timeval tv;
        to_timeval(f->connect_timeout, &tv);
        event_add(&d->deadline, &tv);
    }
    event_active(&d->kick, EV_TIMEOUT, 0);
}
