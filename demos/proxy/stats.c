/* The stats page, built from tide_group_stats, tide_group_budget and each
 * upstream's tide_evpool_stats and tide_group_route: what a person reads
 * at a glance is, per upstream, its share of the last minute's requests,
 * its latency average, its breaker, its slow-start weight and the
 * retries spent on its failures, beside the group's retry budget. */
#include "stats.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdlib.h>

/* The counters shown for each pool, by name, read from the stats. */
#define POOL_FIELDS(X)                                                         \
    X(live, PRId64, int64_t)                                                   \
    X(idle, PRId64, int64_t)                                                   \
    X(lent, PRId64, int64_t)                                                   \
    X(making, PRId64, int64_t)                                                 \
    X(waiting, PRId64, int64_t)                                                \
    X(made, PRIu64, uint64_t)                                                  \
    X(destroyed, PRIu64, uint64_t)                                             \
    X(make_failures, PRIu64, uint64_t)                                         \
    X(timeouts, PRIu64, uint64_t)                                              \
    X(shed, PRIu64, uint64_t)                                                  \
    X(lost, PRIu64, uint64_t)                                                  \
    X(acquires, PRIu64, uint64_t)                                              \
    X(dirty, PRIu64, uint64_t)                                                 \
    X(retired, PRIu64, uint64_t)                                               \
    X(abandoned, PRIu64, uint64_t)                                             \
    X(stale_loans, PRIu64, uint64_t)                                           \
    X(preconnects, PRIu64, uint64_t)                                           \
    X(demand_retired, PRIu64, uint64_t)                                        \
    X(connect_waits, PRIu64, uint64_t)                                         \
    X(recent_p50, PRId64, int64_t)                                             \
    X(recent_p99, PRId64, int64_t)

/* The proxy's own counters: what it answered itself and how its
 * exchanges ended. */
#define PROXY_FIELDS(X)                                                        \
    X(requests, PRIu64, uint64_t)                                              \
    X(responses, PRIu64, uint64_t)                                             \
    X(errors_502, PRIu64, uint64_t)                                            \
    X(errors_503, PRIu64, uint64_t)                                            \
    X(errors_504, PRIu64, uint64_t)                                            \
    X(retries, PRIu64, uint64_t)                                               \
    X(fail_overs, PRIu64, uint64_t)                                            \
    X(aborted, PRIu64, uint64_t)                                               \
    X(orphans, PRIu64, uint64_t)                                               \
    X(discarded, PRIu64, uint64_t)                                             \
    X(stale, PRIu64, uint64_t)                                                 \
    X(retired, PRIu64, uint64_t)                                               \
    X(abandoned, PRIu64, uint64_t)                                             \
    X(accept_pauses, PRIu64, uint64_t)                                         \
    X(clients, PRId64, int64_t)

static const char *state_name(enum tide_breaker_state s)
{
    return s == TIDE_BREAKER_INACTIVE     ? "open"
           : s == TIDE_BREAKER_RECOVERING ? "recovering"
                                          : "closed";
}

static void json_pool(struct evbuffer *b, const struct tide_evpool_stats *s)
{
    evbuffer_add_printf(b, "{\"breaker\":\"%s\",\"refusal\":%.4f",
                        state_name(s->breaker), s->refusal);
#define X(name, fmt, type)                                                     \
    evbuffer_add_printf(b, ",\"" #name "\":%" fmt, (type)s->name);
    POOL_FIELDS(X)
#undef X
    evbuffer_add(b, "}", 1);
}

static void prom_pool(struct evbuffer *b, const char *upstream,
                      const struct tide_evpool_stats *s)
{
    evbuffer_add_printf(b, "tidepool_breaker_open{upstream=\"%s\"} %d\n",
                        upstream, s->breaker == TIDE_BREAKER_INACTIVE);
#define X(name, fmt, type)                                                     \
    evbuffer_add_printf(b, "tidepool_" #name "{upstream=\"%s\"} %" fmt "\n",   \
                        upstream, (type)s->name);
    POOL_FIELDS(X)
#undef X
}

/* How the group routes to the upstream: JSON. Latencies in ms, shares
 * and weights as fractions. */
static void json_route(struct evbuffer *b, const struct tide_group_route *r)
{
    evbuffer_add_printf(
        b,
        "{\"share\":%.4f,\"loans\":%" PRIu64 ",\"latency_ms\":%.3f"
        ",\"mean_ms\":%.3f,\"pending\":%" PRId64 ",\"breaker\":\"%s\""
        ",\"held\":%s,\"weight\":%.3f,\"failures\":%" PRIu64 "}",
        r->share, r->loans, (double)r->latency / 1e6, (double)r->mean / 1e6,
        r->pending, state_name(r->breaker), r->held ? "true" : "false",
        r->weight, r->failures);
}

/* ... and as Prometheus text (seconds, as Prometheus wants). */
static void prom_route(struct evbuffer *b, const char *upstream,
                       const struct tide_group_route *r)
{
    evbuffer_add_printf(
        b,
        "tidepool_upstream_share{upstream=\"%s\"} %.4f\n"
        "tidepool_upstream_loans_minute{upstream=\"%s\"} %" PRIu64 "\n"
        "tidepool_upstream_latency_seconds{upstream=\"%s\"} %.6f\n"
        "tidepool_upstream_mean_seconds{upstream=\"%s\"} %.6f\n"
        "tidepool_upstream_pending{upstream=\"%s\"} %" PRId64 "\n"
        "tidepool_upstream_held{upstream=\"%s\"} %d\n"
        "tidepool_upstream_weight{upstream=\"%s\"} %.3f\n"
        "tidepool_upstream_retried_failures{upstream=\"%s\"} %" PRIu64 "\n",
        upstream, r->share, upstream, r->loans, upstream,
        (double)r->latency / 1e9, upstream, (double)r->mean / 1e9, upstream,
        r->pending, upstream, r->held, upstream, r->weight, upstream,
        r->failures);
}

void px__stats_page(struct tide_group *g, const struct px_stats *ps,
                    struct evbuffer *out, bool prometheus,
                    const char *connection, bool head)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return;
    struct tide_group_stats gs;
    tide_group_stats(g, &gs);
    struct tide_group_budget bs;
    tide_group_budget(g, &bs);
    size_t n = tide_group_upstreams(g, NULL, 0);
    struct tide_group_upstream **ups = calloc(n ? n : 1, sizeof *ups);
    n = ups ? tide_group_upstreams(g, ups, n) : 0;
    if (prometheus) {
#define X(name, fmt, type)                                                     \
    evbuffer_add_printf(b, "tidepool_proxy_" #name " %" fmt "\n",              \
                        (type)ps->name);
        PROXY_FIELDS(X)
#undef X
        evbuffer_add_printf(b,
                            "tidepool_group_acquires %" PRIu64 "\n"
                            "tidepool_group_served %" PRIu64 "\n"
                            "tidepool_group_failed %" PRIu64 "\n"
                            "tidepool_group_failovers %" PRIu64 "\n"
                            "tidepool_group_lent %" PRId64 "\n",
                            gs.acquires, gs.served, gs.failed, gs.failovers,
                            gs.lent);
        evbuffer_add_printf(b,
                            "tidepool_retry_requests %" PRIu64 "\n"
                            "tidepool_retry_retries %" PRIu64 "\n"
                            "tidepool_retry_allowed %" PRIu64 "\n"
                            "tidepool_retry_spent %" PRIu64 "\n"
                            "tidepool_retry_refused %" PRIu64 "\n"
                            "tidepool_group_panic %d\n"
                            "tidepool_group_held %" PRId64 "\n",
                            bs.requests, bs.retries, bs.allowed, bs.spent,
                            bs.refused, bs.panic, bs.held);
        for (size_t i = 0; i < n; i++) {
            struct tide_evpool_stats s;
            tide_group_upstream_stats(ups[i], &s, NULL);
            prom_pool(b, tide_group_upstream_name(ups[i]), &s);
            struct tide_group_route r;
            tide_group_route(ups[i], &r);
            prom_route(b, tide_group_upstream_name(ups[i]), &r);
        }
    } else {
        evbuffer_add(b, "{\"proxy\":{", 10);
        const char *comma = "";
#define X(name, fmt, type)                                                     \
    evbuffer_add_printf(b, "%s\"" #name "\":%" fmt, comma, (type)ps->name);    \
    comma = ",";
        PROXY_FIELDS(X)
#undef X
        evbuffer_add_printf(
            b,
            "},\"group\":{\"upstreams\":%" PRId64 ",\"open\":%" PRId64
            ",\"lent\":%" PRId64 ",\"acquires\":%" PRIu64 ",\"served\":%" PRIu64
            ",\"failed\":%" PRIu64 ",\"failovers\":%" PRIu64
            "},\"budget\":{\"requests\":%" PRIu64 ",\"retries\":%" PRIu64
            ",\"allowed\":%" PRIu64 ",\"spent\":%" PRIu64
            ",\"refused\":%" PRIu64 ",\"panic\":%s,\"held\":%" PRId64
            "},\"upstreams\":[",
            gs.upstreams, gs.open, gs.lent, gs.acquires, gs.served, gs.failed,
            gs.failovers, bs.requests, bs.retries, bs.allowed, bs.spent,
            bs.refused, bs.panic ? "true" : "false", bs.held);
        for (size_t i = 0; i < n; i++) {
            struct tide_evpool_stats s;
            tide_group_upstream_stats(ups[i], &s, NULL);
            evbuffer_add_printf(b, "%s{\"name\":\"%s\",\"pool\":", i ? "," : "",
                                tide_group_upstream_name(ups[i]));
            json_pool(b, &s);
            struct tide_group_route r;
            tide_group_route(ups[i], &r);
            evbuffer_add(b, ",\"route\":", 9);
            json_route(b, &r);
            evbuffer_add(b, "}", 1);
        }
        evbuffer_add(b, "]}\n", 3);
    }
    free(ups);
    evbuffer_add_printf(out,
                        "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
                        "Content-Length: %zu\r\n%s\r\n",
                        prometheus ? "text/plain; version=0.0.4"
                                   : "application/json",
                        evbuffer_get_length(b), connection);
    if (!head)
        evbuffer_add_buffer(out, b);
    evbuffer_free(b);
}
