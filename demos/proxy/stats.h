/* The proxy's stats page: every upstream's pool stats and how the group
 * routes to it (share of the last minute, latency, breaker, slow-start
 * weight, retries), and the group's retry budget, as JSON or as
 * Prometheus text. */
#ifndef TIDEPOOL_DEMO_PROXY_STATS_H
#define TIDEPOOL_DEMO_PROXY_STATS_H

#include <stdbool.h>
#include <tidepool/group.h>

#include "proxy.h"

struct evbuffer;

/* Appends a whole HTTP/1.1 200 response to out: the proxy's own counters
 * (ps), the group's stats and budget and each upstream's, JSON (or Prometheus
 * text when prometheus); the head alone when head (a HEAD request).
 * `connection` is its Connection header line ("Connection: close\r\n"),
 * or "" for none. */
void px__stats_page(struct tide_group *g, const struct px_stats *ps,
                    struct evbuffer *out, bool prometheus,
                    const char *connection, bool head);

#endif
