/* A request sent to another upstream than the one that failed it, as a
 * retry of the group's (within its budget, <tidepool/group.h>, "Retry
 * budget"):
 * - answered 503 (--retry-503, off by default): nginx's
 *   `proxy_next_upstream http_503`, HAProxy's `retry-on 503`, but within
 *   the budget, so that in a brown-out the retries add at most a fifth to
 *   the load of a service already failing under it. Past the budget, or
 *   for a request that cannot go again, the upstream's 503 goes to the
 *   client as it came.
 * - its connection found stale on the retry after a stale one: the
 *   upstream closed every connection it kept at once (it restarted, or
 *   died), and a third kept one of it may be as dead. */
#include "proxy_internal.h"

#include <stdio.h>

bool px__fail_over_ok(const struct client *c)
{
    if (!c->px->retry_503 || c->h2_exchange || c->orphan ||
        c->fail_overs >= FAIL_OVERS_MAX)
        return false;
    /* sent again whole: an idempotent request whose body (kept while a
     * retry may come, request.c body_flush) all went before the answer */
    if (!px__idempotent(c->method) || !c->req_complete || c->retry_outgrown ||
        (px__request_has_body(c) && c->retried && c->stale_retried))
        return false;
    if (tide_group_upstreams(c->px->group, NULL, 0) < 2)
        return false;
    /* asked now rather than found out after the connection is gone, so
     * that a request the budget has no room for gets the 503 as it came */
    struct tide_group_budget b;
    tide_group_budget(c->px->group, &b);
    return b.retries < b.allowed;
}

/* The request goes to an upstream not among failed[0..n), as a retry of
 * the group's (its budget pays): 0, or the group's refusal, with nothing
 * sent and nothing answered. */
static int retry_avoiding(struct client *c,
                          struct tide_group_upstream *const *failed, size_t n)
{
    struct tide_group_acquire *h = NULL;
    int rc =
        tide_group_retry_avoid(c->px->group, failed, n, c->px->acquire_timeout,
                               px__on_acquired, c, &h);
    if (rc)
        return rc;
    c->acquiring = h;
    c->state = C_ACQUIRING;
    return 0;
}

void px__exchange_elsewhere(struct client *c, const char *why)
{
    c->failed_on[c->fail_overs++] = c->up;
    c->fail_over = false;
    /* the upstream failed this request: its breaker hears it; then none
     * of those that answered it 503 again, while another can serve */
    (void)px__give_back(c, GIVE_DISCARD);
    int rc = retry_avoiding(c, c->failed_on, c->fail_overs);
    if (rc) {
        char body[512];
        snprintf(body, sizeof body, "%s (not sent elsewhere: %s)", why,
                 rc == TIDE_EUNAVAILABLE ? "the group's retry budget is spent"
                                         : tide_strerror(rc));
        c->px->stats.errors_503++;
        px__client_write_error(c, 503, "Service Unavailable",
                               "Retry-After: 1\r\n", body);
        px__client_next(c);
        return;
    }
    c->px->stats.fail_overs++;
}

void px__exchange_stale_twice(struct client *c, struct tide_group_upstream *up,
                              const char *why)
{
    int rc = retry_avoiding(c, &up, 1);
    if (rc) {
        char body[512];
        snprintf(body, sizeof body, "%s (not sent elsewhere: %s)", why,
                 rc == TIDE_EUNAVAILABLE ? "the group's retry budget is spent"
                                         : tide_strerror(rc));
        px__exchange_refuse(c, body);
        return;
    }
    c->px->stats.retries++;
    px__client_pump(c); /* the rest of its body, as it comes */
}
