/* The client: a pool over tidepool's TCP or TLS factory, the factory's
 * table wrapped so that the client's own health check (a PING) runs in it,
 * the readers kept for reuse, and the teardown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "redis_internal.h"

/* ---- the factory, wrapped ------------------------------------------------
 * A tide_factory has one arg for all its callbacks, and the client's check
 * needs the client: every other callback is passed on to the factory's own
 * table with the factory's own arg. */

static void fwd_make(struct tide_evpool *pool, struct tide_make *token,
                     void *arg)
{
    struct tide_redis_client *c = arg;
    c->inner.make(pool, token, c->inner.arg);
}

static void fwd_destroy(void *resource, void *arg)
{
    struct tide_redis_client *c = arg;
    c->inner.destroy(resource, c->inner.arg);
}

static void fwd_cancel(struct tide_make *token, void *arg)
{
    struct tide_redis_client *c = arg;
    c->inner.cancel(token, c->inner.arg);
}

static bool fwd_alive(void *resource, void *arg)
{
    struct tide_redis_client *c = arg;
    return c->inner.alive(resource, c->inner.arg);
}

static bool fwd_reusable(void *resource, void *arg)
{
    struct tide_redis_client *c = arg;
    return c->inner.reusable(resource, c->inner.arg);
}

static void fwd_watch(struct tide_evpool *pool, void *resource, bool idle,
                      void *arg)
{
    struct tide_redis_client *c = arg;
    c->inner.watch(pool, resource, idle, c->inner.arg);
}

static void fwd_stale(void *resource, void *arg)
{
    struct tide_redis_client *c = arg;
    c->inner.stale(resource, c->inner.arg);
}

static void wrap(struct tide_redis_client *c)
{
    c->table = (struct tide_factory){
        .make = fwd_make,
        .destroy = fwd_destroy,
        .cancel = c->inner.cancel ? fwd_cancel : NULL,
        .alive = c->inner.alive ? fwd_alive : NULL,
        .reusable = c->inner.reusable ? fwd_reusable : NULL,
        .check = tide__redis_check,
        .watch = c->inner.watch ? fwd_watch : NULL,
        .stale = c->inner.stale ? fwd_stale : NULL,
        .arg = c,
    };
}

/* ---- readers --------------------------------------------------------------
 */

/* hiredis's createArray, unless the count is past the limit: then NULL,
 * which the reader reports as out of memory (the count is kept for
 * tide__redis_reader_error to say what happened). */
static void *create_array(const redisReadTask *task, int elements)
{
    struct tide_redis_client *c = task->privdata;
    if (elements > TIDE__REDIS_MAX_ELEMENTS) {
        c->refused_elements = elements;
        return NULL;
    }
    return c->create_array(task, elements);
}

/* hiredis's reply functions are reachable only through a reader of its
 * own: copied from one, arrays wrapped. false when out of memory. */
static bool reply_fns_init(struct tide_redis_client *c)
{
    redisReader *r = redisReaderCreate();
    if (!r)
        return false;
    c->reply_fns = *r->fn;
    redisReaderFree(r);
    c->create_array = c->reply_fns.createArray;
    c->reply_fns.createArray = create_array;
    return true;
}

redisReader *tide__redis_reader_take(struct tide_redis_client *c)
{
    if (c->spares > 0)
        return c->spare[--c->spares];
    redisReader *r = redisReaderCreateWithFunctions(&c->reply_fns);
    if (r)
        r->privdata = c;
    return r;
}

const char *tide__redis_reader_error(struct tide_redis_client *c,
                                     const redisReader *r, char *buf,
                                     size_t len)
{
    if (r->err != REDIS_ERR_OOM || c->refused_elements == 0)
        return r->errstr;
    snprintf(buf, len, "an array reply of %d elements, past the %d taken",
             c->refused_elements, TIDE__REDIS_MAX_ELEMENTS);
    c->refused_elements = 0;
    return buf;
}

void tide__redis_reader_give(struct tide_redis_client *c, redisReader *r,
                             bool clean)
{
    if (!r)
        return;
    if (r->err)
        c->refused_elements = 0; /* said, or not to be said (a check) */
    /* a reader that failed or stopped inside a reply keeps that state:
     * never lent to another exchange */
    if (clean && r->err == 0 && !tide__redis_reader_holds(r) &&
        c->spares < TIDE__REDIS_SPARE_READERS) {
        c->spare[c->spares++] = r;
        return;
    }
    redisReaderFree(r);
}

bool tide__redis_reader_holds(const redisReader *r)
{
    /* ridx is -1 between replies; above it, a reply is half built */
    return r->pos < r->len || r->ridx >= 0;
}

int tide__redis_feed(redisReader *r, struct evbuffer *in)
{
    struct evbuffer_iovec v[8];
    while (evbuffer_get_length(in) > 0) {
        int n = evbuffer_peek(in, -1, NULL, v, 8);
        if (n > 8)
            n = 8;
        size_t taken = 0;
        for (int i = 0; i < n; i++) {
            if (redisReaderFeed(r, v[i].iov_base, v[i].iov_len) != REDIS_OK)
                return -1;
            taken += v[i].iov_len;
        }
        evbuffer_drain(in, taken);
    }
    return 0;
}

struct timeval tide__redis_tv(int64_t ns)
{
    return (struct timeval){.tv_sec = (time_t)(ns / 1000000000),
                            .tv_usec = (suseconds_t)(ns % 1000000000 / 1000)};
}

/* ---- errors ---------------------------------------------------------------
 */

const char *tide_redis_strerror(int code)
{
    switch (code) {
    case TIDE_REDIS_EREPLY:
        return "the server answered with an error";
    case TIDE_REDIS_EPROTOCOL:
        return "the server's bytes are not the reply asked for";
    case TIDE_REDIS_ETIMEDOUT:
        return "no reply within the command's timeout";
    case TIDE_REDIS_ECLOSED:
        return "the client is closed";
    }
    return tide_strerror(code);
}

const char *tide_redis_err_name(int code)
{
    switch (code) {
    case TIDE_REDIS_EREPLY:
        return "TIDE_REDIS_EREPLY";
    case TIDE_REDIS_EPROTOCOL:
        return "TIDE_REDIS_EPROTOCOL";
    case TIDE_REDIS_ETIMEDOUT:
        return "TIDE_REDIS_ETIMEDOUT";
    case TIDE_REDIS_ECLOSED:
        return "TIDE_REDIS_ECLOSED";
    }
    return tide_err_name(code);
}

/* ---- lifecycle ------------------------------------------------------------
 */

static char *copy(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void destroy(struct tide_redis_client *c)
{
    /* commands first (they hold loans), then the pool, which destroys
     * every connection it made except those in a check: those it leaves
     * to the check's answer, given before the factory goes */
    tide__redis_links_end(c);
    tide__redis_batches_end(c);
    tide_evpool_free(c->pool);
    tide__redis_checks_end(c);
    tide_tcp_factory_free(c->tcp);
    tide_tls_factory_free(c->tls);
    while (c->spares > 0)
        redisReaderFree(c->spare[--c->spares]);
    free(c->user);
    free(c->password);
    free(c);
}

void tide__redis_enter(struct tide_redis_client *c)
{
    c->depth++;
}

void tide__redis_leave(struct tide_redis_client *c)
{
    if (--c->depth == 0 && c->dying)
        destroy(c);
}

static bool valid(const struct tide_redis_options *o)
{
    return o->db >= 0 && o->timeout >= 0 && o->check_timeout >= 0 &&
           o->late_max >= 0 && (!o->user || o->password) &&
           !o->tcp.on_idle_data && !o->tcp.setup && !o->tcp.setup_arg &&
           !o->tcp.setup_abort;
}

static int open_factory(struct tide_redis_client *c,
                        const struct tide_redis_options *o)
{
    struct tide_tcp_options tcp = o->tcp;
    if (tcp.port == 0 && !tcp.service && !tcp.path)
        tcp.port = 6379;
    tcp.setup = tide__redis_setup;
    tcp.setup_arg = c;
    tcp.setup_abort = tide__redis_setup_abort;
    int rc;
    if (o->tls) {
        struct tide_tls_options tls = *o->tls;
        tls.tcp = tcp;
        rc = tide_tls_factory_new(c->base, &tls, &c->tls);
        tide_tls_factory_bind(c->tls, &c->inner);
    } else {
        rc = tide_tcp_factory_new(c->base, &tcp, &c->tcp);
        tide_tcp_factory_bind(c->tcp, &c->inner);
    }
    return rc;
}

/* A client over inner when given, else over the TCP or TLS factory o
 * asks for. */
static int client_new(struct event_base *base,
                      const struct tide_redis_options *o,
                      const struct tide_factory *inner,
                      struct tide_redis_client **out)
{
    if (out)
        *out = NULL;
    if (!base || !o || !out || !valid(o))
        return TIDE_EINVAL;
    struct tide_redis_client *c = calloc(1, sizeof *c);
    if (!c)
        return TIDE_ENOMEM;
    int rc = TIDE_ENOMEM;
    c->base = base;
    c->timeout = o->timeout ? o->timeout : TIDE_SEC(5);
    if (c->timeout != TIDE_FOREVER) {
        struct timeval tv = tide__redis_tv(c->timeout);
        if (!(c->timeout_tv = event_base_init_common_timeout(base, &tv)))
            goto fail;
    }
    c->check_timeout = o->check_timeout ? o->check_timeout : TIDE_SEC(1);
    c->db = o->db;
    c->no_ping = o->no_ping;
    c->user = copy(o->user);
    c->password = copy(o->password);
    if ((o->user && !c->user) || (o->password && !c->password))
        goto fail;
    if (!reply_fns_init(c))
        goto fail;
    if (inner)
        c->inner = *inner;
    else if ((rc = open_factory(c, o)) != 0)
        goto fail;
    wrap(c);
    struct tide_evpool_options po = o->pool;
    c->shared = po.limits.streams > 1;
    c->late_max = o->late_max ? (size_t)o->late_max : 16;
    if (po.make_timeout == 0)
        po.make_timeout = TIDE_SEC(15);
    /* failed makes wait out a growing delay, so callers that keep asking
     * cannot turn a refusing server into a connect storm */
    struct tide_backoff backoff = {0};
    if (!po.ward.backoff)
        po.ward.backoff = &backoff;
    if ((rc = tide_evpool_new(base, &c->table, &po, &c->pool)) != 0)
        goto fail;
    *out = c;
    return 0;
fail:
    destroy(c);
    return rc;
}

int tide_redis_client_new(struct event_base *base,
                          const struct tide_redis_options *o,
                          struct tide_redis_client **out)
{
    return client_new(base, o, NULL, out);
}

int tide__redis_client_new_over(struct event_base *base,
                                const struct tide_redis_options *o,
                                const struct tide_factory *inner,
                                struct tide_redis_client **out)
{
    if (!inner) {
        if (out)
            *out = NULL;
        return TIDE_EINVAL;
    }
    return client_new(base, o, inner, out);
}

void tide_redis_client_free(struct tide_redis_client *c)
{
    if (!c)
        return;
    if (c->depth > 0) {
        c->dying = true;
        return;
    }
    destroy(c);
}

void tide_redis_client_stats(struct tide_redis_client *c,
                             struct tide_redis_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    *out = c->stats;
    tide_evpool_stats(c->pool, &out->pool);
    if (c->tls)
        tide_tls_factory_stats(c->tls, &out->net);
    else
        tide_tcp_factory_stats(c->tcp, &out->net);
}

struct tide_evpool *tide_redis_client_pool(struct tide_redis_client *c)
{
    return c ? c->pool : NULL;
}
