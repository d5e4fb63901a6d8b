/* The sender: a pool over tidepool's TCP or TLS factory, whose table is
 * wrapped so that the sender's own hooks run in it (RSET as the reset,
 * NOOP as the check, QUIT before destroy), the options, stats and the
 * teardown. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smtp_internal.h"

/* ---- the factory, wrapped ------------------------------------------------
 * A tide_factory has one arg for all its callbacks, and the sender's hooks
 * need the sender: every other callback is passed on to the factory's own
 * table with the factory's own arg. */

static void fwd_make(struct tide_evpool *pool, struct tide_make *token,
                     void *arg)
{
    struct tide_smtp_sender *s = arg;
    s->inner.make(pool, token, s->inner.arg);
}

static void fwd_cancel(struct tide_make *token, void *arg)
{
    struct tide_smtp_sender *s = arg;
    s->inner.cancel(token, s->inner.arg);
}

static bool fwd_alive(void *resource, void *arg)
{
    struct tide_smtp_sender *s = arg;
    return s->inner.alive(resource, s->inner.arg);
}

static bool fwd_reusable(void *resource, void *arg)
{
    struct tide_smtp_sender *s = arg;
    return s->inner.reusable(resource, s->inner.arg);
}

static void fwd_watch(struct tide_evpool *pool, void *resource, bool idle,
                      void *arg)
{
    struct tide_smtp_sender *s = arg;
    s->inner.watch(pool, resource, idle, s->inner.arg);
}

static void fwd_stale(void *resource, void *arg)
{
    struct tide_smtp_sender *s = arg;
    s->inner.stale(resource, s->inner.arg);
}

static void wrap(struct tide_smtp_sender *s)
{
    s->table = (struct tide_factory){
        .make = fwd_make,
        .destroy = tide__smtp_destroy,
        .cancel = s->inner.cancel ? fwd_cancel : NULL,
        .alive = s->inner.alive ? fwd_alive : NULL,
        .reusable = s->inner.reusable ? fwd_reusable : NULL,
        .check = tide__smtp_check,
        .reset = tide__smtp_reset,
        .watch = s->inner.watch ? fwd_watch : NULL,
        .stale = s->inner.stale ? fwd_stale : NULL,
        .arg = s,
    };
}

/* ---- helpers ---- */

struct timeval tide__smtp_tv(int64_t ns)
{
    return (struct timeval){.tv_sec = (time_t)(ns / 1000000000),
                            .tv_usec = (suseconds_t)(ns % 1000000000 / 1000)};
}

int tide__smtp_refusal(int reply)
{
    if (reply >= 500)
        return TIDE_SMTP_EPERMANENT;
    /* a 2xx or 3xx where another was asked for is no refusal: the server
     * is out of step with the sender */
    return reply >= 400 ? TIDE_SMTP_ETEMPORARY : TIDE_SMTP_EPROTOCOL;
}

int tide__smtp_write(struct bufferevent *bev, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 2, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line - 2)
        return -1;
    line[n++] = '\r';
    line[n++] = '\n';
    return bufferevent_write(bev, line, (size_t)n);
}

const char *tide_smtp_strerror(int code)
{
    switch (code) {
    case TIDE_SMTP_ETEMPORARY:
        return "the server refused for now (4xx): try again later";
    case TIDE_SMTP_EPERMANENT:
        return "the server refused (5xx)";
    case TIDE_SMTP_EPROTOCOL:
        return "the server's answer is not the SMTP reply asked for";
    case TIDE_SMTP_ETIMEDOUT:
        return "no verdict within the message's timeout";
    case TIDE_SMTP_EUNKNOWN:
        return "the session broke after the message was sent: it may have "
               "been delivered";
    case TIDE_SMTP_EAUTH:
        return "the server refused the credentials";
    }
    return tide_strerror(code);
}

/* ---- the sessions that carried a message ----
 * A few pointers, as many as the pool has sessions: a scan is cheaper
 * than anything cleverer at that size. */

void tide__smtp_seasoned_add(struct tide_smtp_sender *s, void *session)
{
    if (tide__smtp_seasoned_has(s, session))
        return;
    if (s->nseasoned == s->seasoned_cap) {
        size_t cap = s->seasoned_cap ? 2 * s->seasoned_cap : 8;
        void **grown = realloc(s->seasoned, cap * sizeof *grown);
        if (!grown)
            return;
        s->seasoned = grown;
        s->seasoned_cap = cap;
    }
    s->seasoned[s->nseasoned++] = session;
}

bool tide__smtp_seasoned_has(const struct tide_smtp_sender *s, void *session)
{
    for (size_t i = 0; i < s->nseasoned; i++)
        if (s->seasoned[i] == session)
            return true;
    return false;
}

void tide__smtp_seasoned_drop(struct tide_smtp_sender *s, void *session)
{
    for (size_t i = 0; i < s->nseasoned; i++) {
        if (s->seasoned[i] == session) {
            s->seasoned[i] = s->seasoned[--s->nseasoned];
            return;
        }
    }
}

/* ---- lifecycle ---- */

static char *copy(const char *str)
{
    return str ? strdup(str) : NULL;
}

static void destroy(struct tide_smtp_sender *s)
{
    /* messages first (they hold loans), then the pool, which leaves the
     * sessions in a RSET or NOOP to their answer: given here, before the
     * factory they came from goes */
    tide__smtp_msgs_end(s);
    tide_evpool_free(s->pool);
    tide__smtp_probes_end(s);
    tide_tcp_factory_free(s->tcp);
    tide_tls_factory_free(s->tls);
    free(s->seasoned);
    free(s->helo_name);
    free(s->user);
    free(s->password);
    free(s);
}

void tide__smtp_enter(struct tide_smtp_sender *s)
{
    s->depth++;
}

void tide__smtp_leave(struct tide_smtp_sender *s)
{
    if (--s->depth == 0 && s->dying)
        destroy(s);
}

/* A name EHLO can carry: one word (a line end would start a command of
 * its own), not empty, and no longer than a domain may be (RFC 1035:
 * 255), so the line is always written. */
static bool helo_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 255 && !strpbrk(name, "\r\n ");
}

static bool valid(const struct tide_smtp_options *o)
{
    const struct tide_tls_options *t = o->tls;
    return o->timeout >= 0 && o->reply_timeout >= 0 &&
           (o->max_messages >= 0 || o->max_messages == TIDE_UNLIMITED) &&
           !o->user == !o->password && (!o->starttls || t) &&
           (!o->user || t || o->insecure_auth_over_plaintext) &&
           !o->tcp.on_idle_data && !o->tcp.setup && !o->tcp.setup_arg &&
           !o->tcp.setup_abort &&
           (!t || (!t->upgrade && !t->upgrade_arg && !t->upgrade_abort)) &&
           (!o->helo_name || helo_ok(o->helo_name));
}

static int open_factory(struct tide_smtp_sender *s,
                        const struct tide_smtp_options *o)
{
    struct tide_tcp_options tcp = o->tcp;
    if (tcp.port == 0 && !tcp.service && !tcp.path)
        tcp.port = 25;
    tcp.setup = tide__smtp_setup;
    tcp.setup_arg = s;
    tcp.setup_abort = tide__smtp_open_abort;
    int rc;
    if (o->tls) {
        struct tide_tls_options tls = *o->tls;
        tls.tcp = tcp;
        if (o->starttls) {
            tls.upgrade = tide__smtp_upgrade;
            tls.upgrade_arg = s;
            tls.upgrade_abort = tide__smtp_open_abort;
        }
        rc = tide_tls_factory_new(s->base, &tls, &s->tls);
        tide_tls_factory_bind(s->tls, &s->inner);
    } else {
        rc = tide_tcp_factory_new(s->base, &tcp, &s->tcp);
        tide_tcp_factory_bind(s->tcp, &s->inner);
    }
    return rc;
}

int tide_smtp_sender_new(struct event_base *base,
                         const struct tide_smtp_options *o,
                         struct tide_smtp_sender **out)
{
    if (out)
        *out = NULL;
    if (!base || !o || !out || !valid(o))
        return TIDE_EINVAL;
    struct tide_smtp_sender *s = calloc(1, sizeof *s);
    if (!s)
        return TIDE_ENOMEM;
    int rc = TIDE_ENOMEM;
    s->base = base;
    s->starttls = o->starttls;
    s->timeout = o->timeout ? o->timeout : TIDE_SEC(60);
    s->reply_timeout = o->reply_timeout ? o->reply_timeout : TIDE_SEC(10);
    s->helo_name = copy(o->helo_name ? o->helo_name : "localhost");
    s->user = copy(o->user);
    s->password = copy(o->password);
    if (!s->helo_name || (o->user && (!s->user || !s->password)))
        goto fail;
    if ((rc = open_factory(s, o)) != 0)
        goto fail;
    wrap(s);
    struct tide_evpool_options po = o->pool;
    if (po.limits.size == 0)
        po.limits.size = 4;
    if (po.make_timeout == 0)
        po.make_timeout = TIDE_SEC(20);
    po.retire_after = o->max_messages ? o->max_messages : 100;
    /* failed makes wait out a growing delay, so callers that keep asking
     * cannot turn a refusing server into a connect storm */
    struct tide_backoff backoff = {0};
    if (!po.ward.backoff)
        po.ward.backoff = &backoff;
    if ((rc = tide_evpool_new(base, &s->table, &po, &s->pool)) != 0)
        goto fail;
    *out = s;
    return 0;
fail:
    destroy(s);
    return rc;
}

void tide_smtp_sender_free(struct tide_smtp_sender *s)
{
    if (!s)
        return;
    if (s->depth > 0) {
        s->dying = true;
        return;
    }
    destroy(s);
}

void tide_smtp_sender_stats(struct tide_smtp_sender *s,
                            struct tide_smtp_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    *out = s->stats;
    tide_evpool_stats(s->pool, &out->pool);
    if (s->tls)
        tide_tls_factory_stats(s->tls, &out->net);
    else
        tide_tcp_factory_stats(s->tcp, &out->net);
}

struct tide_evpool *tide_smtp_sender_pool(struct tide_smtp_sender *s)
{
    return s ? s->pool : NULL;
}
