/* tests for the group's routing around trouble (evloop/group_pick.c,
 * group_route.c, group_budget.c): the latency-aware pick, slow start,
 * the retry budget, the panic threshold and the routing stats. The group
 * runs on a clock the test moves (options.clock), so loans last exactly
 * what the test says and every figure is the same on every run; the
 * upstreams are scripted factories whose resources are counted, destroyed
 * once each. */
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <tidepool/group.h>
#include <time.h>

#include "runner.h"

#define UPSTREAMS 4
#define RES_MAX   512
#define LOANS_MAX 512

struct res {
    int upstream;
    int destroyed;
};

struct up {
    int index;
    bool fail; /* unmade at once, with FAKE_CODE */
    struct tide_group_upstream *u;
    int makes;
};

#define FAKE_CODE (-31)

/* A loan the test holds until the clock reaches `until`. */
struct loan {
    struct tide_group_upstream *u;
    void *r;
    int64_t until;
};

static struct event_base *base;
static struct tide_group *group;
static struct up ups[UPSTREAMS];
static struct res resources[RES_MAX];
static int n_res;
static struct loan loans[LOANS_MAX];
static int n_loans;
static int64_t now_ns;

static int64_t test_clock(void *arg)
{
    return *(int64_t *)arg;
}

/* The pools' breakers run on the real clock. */
static int64_t real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void make(struct tide_evpool *pool, struct tide_make *token, void *arg)
{
    (void)pool;
    struct up *up = arg;
    up->makes++;
    if (up->fail) {
        tide_evpool_unmade(token, FAKE_CODE, "the fake upstream refused");
        return;
    }
    ck_assert_int_lt(n_res, RES_MAX);
    resources[n_res].upstream = up->index;
    tide_evpool_made(token, &resources[n_res++]);
}

static void destroy(void *resource, void *arg)
{
    (void)arg;
    struct res *r = resource;
    r->destroyed++;
    ck_assert_int_eq(r->destroyed, 1);
}

static const struct tide_evpool_options *pool_options(void)
{
    static struct tide_evpool_options o;
    /* makes failing are not held: each acquire meets the failure itself */
    static const struct tide_backoff no_hold = {.base = 1, .cap = 1};
    o = (struct tide_evpool_options){.limits = TIDE_LIMITS(.size = 64),
                                     .ward.backoff = &no_hold};
    return &o;
}

static struct tide_group_upstream *add(int i, bool fail,
                                       const struct tide_evpool_options *o)
{
    ups[i].index = i;
    ups[i].fail = fail;
    struct tide_factory f = {.make = make, .destroy = destroy, .arg = &ups[i]};
    char name[32];
    snprintf(name, sizeof name, "127.0.0.1:%d", 8000 + i);
    ck_assert_int_eq(
        tide_group_add(group, name, &f, o ? o : pool_options(), &ups[i].u), 0);
    return ups[i].u;
}

static int index_of(const struct tide_group_upstream *u)
{
    for (int i = 0; i < UPSTREAMS; i++)
        if (ups[i].u && ups[i].u == u)
            return i;
    return -1;
}

static void new_group(struct tide_group_options o)
{
    tide_group_free(group);
    o.clock = test_clock;
    o.clock_arg = &now_ns;
    if (!o.seed)
        o.seed = 11;
    ck_assert_int_eq(tide_group_new(base, &o, &group), 0);
}

static void setup(void)
{
    base = event_base_new();
    memset(ups, 0, sizeof ups);
    memset(resources, 0, sizeof resources);
    n_res = n_loans = 0;
    now_ns = TIDE_SEC(1000);
    group = NULL;
    new_group((struct tide_group_options){0});
}

static void teardown(void)
{
    for (int i = 0; i < n_loans; i++)
        ck_assert_int_eq(tide_group_release(group, loans[i].u, loans[i].r), 0);
    tide_group_free(group);
    group = NULL;
    for (int i = 0; i < n_res; i++)
        ck_assert_int_eq(resources[i].destroyed, 1);
    ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 1);
    event_base_free(base);
}

/* ---- the answer of an acquire, awaited on the loop ---- */

struct ans {
    int calls;
    int status;
    struct tide_group_upstream *u;
    void *r;
    char message[256];
};

static void on_answer(struct tide_group *g, int status,
                      struct tide_group_upstream *u, void *resource,
                      const struct tide_why *why, void *arg)
{
    (void)g;
    struct ans *a = arg;
    a->calls++;
    a->status = status;
    a->u = u;
    a->r = resource;
    snprintf(a->message, sizeof a->message, "%s", why->message);
}

static void await(struct ans *a)
{
    for (int i = 0; i < 100000 && a->calls == 0; i++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    ck_assert_int_eq(a->calls, 1);
}

/* One loan, held for `hold` ns of the test's clock: try_acquire, else an
 * acquire awaited. Returns the upstream's index. */
static int lend(int64_t hold)
{
    ck_assert_int_lt(n_loans, LOANS_MAX);
    struct loan *l = &loans[n_loans];
    if (tide_group_try_acquire(group, &l->u, &l->r) != 0) {
        struct ans a = {0};
        ck_assert_int_eq(tide_group_acquire(group, 0, on_answer, &a, NULL), 0);
        await(&a);
        ck_assert_int_eq(a.status, 0);
        l->u = a.u;
        l->r = a.r;
    }
    l->until = now_ns + hold;
    n_loans++;
    return index_of(l->u);
}

/* Releases the loans whose time has come. */
static void settle(void)
{
    for (int i = 0; i < n_loans;) {
        if (loans[i].until > now_ns) {
            i++;
            continue;
        }
        ck_assert_int_eq(tide_group_release(group, loans[i].u, loans[i].r), 0);
        loans[i] = loans[--n_loans];
    }
}

/* Ends every loan: a release is a success for its upstream's breaker, and
 * closes one the test has just opened. */
static void drain_loans(void)
{
    now_ns += TIDE_MS(100);
    settle();
    ck_assert_int_eq(n_loans, 0);
}

/* Runs `ms` steps of 1 ms: a loan starts each step, held for hold[i] on
 * the upstream it lands on; counts where they landed into picks. */
static void traffic(int ms, const int64_t hold[UPSTREAMS], int picks[UPSTREAMS])
{
    for (int t = 0; t < ms; t++) {
        now_ns += TIDE_MS(1);
        settle();
        /* where it lands decides how long it lasts: lend, then set */
        int i = lend(0);
        loans[n_loans - 1].until = now_ns + hold[i];
        if (picks)
            picks[i]++;
    }
}

static struct tide_group_route route(int i)
{
    struct tide_group_route r;
    tide_group_route(ups[i].u, &r);
    return r;
}

/* ---- latency-aware pick ---- */

START_TEST(a_slow_upstream_gets_few_loans_and_is_not_ejected)
{
    new_group((struct tide_group_options){.decay = TIDE_SEC(1)});
    for (int i = 0; i < 4; i++)
        add(i, false, NULL);
    const int64_t hold[4] = {TIDE_MS(4), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    traffic(2000, hold, NULL);
    /* upstream 0 turns ten times slower */
    const int64_t slow[4] = {TIDE_MS(40), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    traffic(2000, slow, NULL);
    int picks[4] = {0};
    traffic(10000, slow, picks);
    /* the slow one gets a trickle (its average decays while unused, so it
     * is tried again now and then, and found slow again) ... */
    ck_assert_int_le(picks[0], 10000 * 5 / 100);
    ck_assert_int_ge(picks[0], 5);
    for (int i = 1; i < 4; i++)
        ck_assert_int_ge(picks[i], 10000 * 28 / 100);
    /* ... and the stats say why */
    struct tide_group_route r0 = route(0), r1 = route(1);
    ck_assert_int_ge(r0.latency, 2 * r1.latency);
    ck_assert_int_le(r1.latency, TIDE_MS(4));
    ck_assert_int_ge(r1.latency, TIDE_MS(3));
    ck_assert(!r0.held);
    ck_assert(r0.share < 0.05);
    /* back to speed: its share comes back */
    int back[4] = {0};
    traffic(10000, hold, NULL);
    traffic(4000, hold, back);
    ck_assert_int_ge(back[0], 4000 * 20 / 100);
}
END_TEST

/* Upstreams that serve their callers at once (a loan each: connections,
 * streams) answer the seventh as fast as the first, so callers waiting at
 * a fast one must not make a ten times slower one look cheaper: loans last
 * 20 ms on three upstreams, about seven out on each at a time, and 200 ms
 * on the fourth. Weighed by latency x (pending + 1) the slow one would win
 * against a fast one with ten out, and against one with five once its
 * average had decayed by half; weighed by the square root of the load it
 * gets only the probes its decay allows. */
START_TEST(callers_at_fast_upstreams_do_not_send_more_to_a_slow_one)
{
    new_group((struct tide_group_options){.decay = TIDE_SEC(1)});
    for (int i = 0; i < 4; i++)
        add(i, false, NULL);
    const int64_t fast[4] = {TIDE_MS(20), TIDE_MS(20), TIDE_MS(20),
                             TIDE_MS(20)};
    traffic(2000, fast, NULL);
    const int64_t slow[4] = {TIDE_MS(200), TIDE_MS(20), TIDE_MS(20),
                             TIDE_MS(20)};
    traffic(2000, slow, NULL);
    int picks[4] = {0};
    traffic(10000, slow, picks);
    ck_assert_int_le(picks[0], 10000 * 15 / 10000); /* 36 by the old cost */
    ck_assert_int_ge(picks[0], 3);                  /* probed, not ejected */
    ck_assert(!route(0).held);
    ck_assert_int_ge(route(1).pending, 4);
}
END_TEST

START_TEST(a_loan_s_duration_is_timed_on_the_group_s_clock)
{
    new_group((struct tide_group_options){.decay = TIDE_SEC(10)});
    add(0, false, NULL);
    for (int k = 0; k < 10; k++) {
        lend(TIDE_MS(5));
        now_ns += TIDE_MS(5);
        settle();
    }
    struct tide_group_route r = route(0);
    ck_assert_int_eq(r.latency, TIDE_MS(5));
    ck_assert_int_eq(r.mean, TIDE_MS(5));
    ck_assert_uint_eq(r.loans, 10);
    ck_assert(r.share == 1.0);
    ck_assert(r.weight == 1.0);
    ck_assert_int_eq(r.breaker, TIDE_BREAKER_ACTIVE);
    ck_assert_int_eq(r.pending, 0);
    /* one slow loan raises the average at once (the peak) ... */
    lend(TIDE_MS(50));
    now_ns += TIDE_MS(50);
    settle();
    ck_assert_int_eq(route(0).latency, TIDE_MS(50));
    /* ... and unused it decays by exp(-t / decay): 10 s, e^-1 */
    now_ns += TIDE_SEC(10);
    int64_t l = route(0).latency;
    ck_assert_int_ge(l, TIDE_MS(18));
    ck_assert_int_le(l, TIDE_MS(19));
    /* the last minute forgets */
    now_ns += TIDE_SEC(61);
    r = route(0);
    ck_assert_uint_eq(r.loans, 0);
    ck_assert_int_eq(r.mean, 0);
    ck_assert(r.share == 0.0);
}
END_TEST

/* ---- slow start ---- */

START_TEST(slow_start_ramps_an_upstream_added_at_run_time)
{
    new_group((struct tide_group_options){.slow_start = TIDE_SEC(10)});
    for (int i = 0; i < 3; i++)
        add(i, false, NULL);
    const int64_t hold[4] = {TIDE_MS(4), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    traffic(1000, hold, NULL);
    add(3, false, NULL);
    ck_assert(route(3).weight < 0.11);
    int early[4] = {0}, late[4] = {0};
    traffic(1000, hold, early); /* weight 10% to 19% */
    traffic(7000, hold, NULL);
    traffic(1000, hold, late); /* weight 82% to 91% */
    /* a fair share is 25%: first about a tenth of it, then most of it */
    ck_assert_int_le(early[3], 1000 * 25 / 100 * 35 / 100);
    ck_assert_int_ge(early[3], 1000 * 25 / 100 * 5 / 100);
    ck_assert_int_ge(late[3], 1000 * 25 / 100 * 65 / 100);
    ck_assert_int_le(late[3], 1000 * 25 / 100 * 130 / 100);
    traffic(1500, hold, NULL);
    ck_assert(route(3).weight == 1.0);
}
END_TEST

START_TEST(slow_start_follows_an_outage)
{
    new_group((struct tide_group_options){.slow_start = TIDE_SEC(10)});
    struct tide_evpool_options o = *pool_options();
    o.ward.breaker = &(struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .cooldown = TIDE_SEC(60)};
    for (int i = 0; i < 4; i++)
        add(i, false, &o);
    const int64_t hold[4] = {TIDE_MS(4), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    traffic(1000, hold, NULL);
    /* (a loan coming back fit would close it again) */
    drain_loans();
    struct tide_breaker *b =
        tide_evpool_breaker(tide_group_upstream_pool(ups[0].u));
    tide_breaker_deactivate(b, real_now());
    /* out long enough that the drain's 100 ms loans, its last, have
     * faded from its average (which a pick weighs before the slow start
     * resets it, at its first loan back) */
    int out[4] = {0};
    traffic(3000, hold, out);
    ck_assert_int_eq(out[0], 0);
    ck_assert(route(0).held);
    ck_assert_int_eq(route(0).breaker, TIDE_BREAKER_INACTIVE);
    tide_breaker_activate(b, real_now());
    int early[4] = {0};
    traffic(1000, hold, early);
    ck_assert(route(0).weight < 0.25);
    ck_assert_int_le(early[0], 1000 * 25 / 100 * 35 / 100);
    ck_assert_int_ge(early[0], 1);
}
END_TEST

/* Steps of 1 ms with no new loan, until the loans out have ended, each
 * at its own time (drain_loans ends them all at once, late). */
static void quiet(int ms)
{
    for (int t = 0; t < ms; t++) {
        now_ns += TIDE_MS(1);
        settle();
    }
}

/* An upstream slow before an outage, back fast: a pick judges it cold
 * (the others' mean, the slow start's 10%) from the moment it is let
 * through again, not by its average from before (which at a 10 s decay
 * would keep it out for seconds), nor from its first loan. */
START_TEST(
    an_upstream_back_from_an_outage_is_judged_cold_not_by_its_old_average)
{
    new_group((struct tide_group_options){.slow_start = TIDE_SEC(10),
                                          .decay = TIDE_SEC(10)});
    struct tide_evpool_options o = *pool_options();
    o.ward.breaker = &(struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .cooldown = TIDE_SEC(60)};
    for (int i = 0; i < 4; i++)
        add(i, false, &o);
    const int64_t hold[4] = {TIDE_MS(4), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    const int64_t slow[4] = {TIDE_MS(40), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    traffic(1000, hold, NULL);
    traffic(1000, slow, NULL);
    quiet(50);
    ck_assert_int_eq(n_loans, 0);
    ck_assert_int_ge(route(0).latency, TIDE_MS(35));
    struct tide_breaker *b =
        tide_evpool_breaker(tide_group_upstream_pool(ups[0].u));
    tide_breaker_deactivate(b, real_now());
    int out[4] = {0};
    traffic(1500, hold, out);
    ck_assert_int_eq(out[0], 0);
    ck_assert(route(0).held);
    /* still well above the others' 4 ms, decayed by e^-0.15 */
    ck_assert_int_ge(route(0).latency, TIDE_MS(30));
    tide_breaker_activate(b, real_now());
    traffic(1, hold, NULL);
    struct tide_group_route r0 = route(0);
    ck_assert(!r0.held);
    ck_assert(r0.weight < 0.15);
    ck_assert_int_ge(r0.latency, TIDE_MS(3));
    ck_assert_int_le(r0.latency, TIDE_MS(5));
    /* the first 2 s: weight 10% to 28% of a fair 25% */
    int early[4] = {0};
    traffic(2000, hold, early);
    ck_assert_int_ge(early[0], 2000 * 25 / 100 * 4 / 100);
    ck_assert_int_le(early[0], 2000 * 25 / 100 * 35 / 100);
}
END_TEST

/* A caller that takes the fast path first (the proxy) still sends the
 * probe of an open breaker once it is due: try_acquire leaves it to the
 * acquire, which carries it, though idle resources wait elsewhere. */
START_TEST(a_due_probe_is_not_starved_by_try_acquire)
{
    struct tide_evpool_options o = *pool_options();
    o.ward.breaker = &(struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .cooldown = TIDE_MS(30)};
    for (int i = 0; i < 4; i++)
        add(i, false, &o);
    const int64_t hold[4] = {TIDE_MS(4), TIDE_MS(4), TIDE_MS(4), TIDE_MS(4)};
    traffic(200, hold, NULL);
    drain_loans();
    struct tide_breaker *b =
        tide_evpool_breaker(tide_group_upstream_pool(ups[0].u));
    tide_breaker_deactivate(b, real_now());
    struct tide_group_upstream *u;
    void *r;
    ck_assert_int_eq(tide_group_try_acquire(group, &u, &r), 0);
    ck_assert_ptr_ne(u, ups[0].u);
    ck_assert_int_eq(tide_group_release(group, u, r), 0);
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    ck_assert_int_eq(tide_group_try_acquire(group, &u, &r), TIDE_EWOULDBLOCK);
    struct ans a = {0};
    ck_assert_int_eq(tide_group_acquire(group, 0, on_answer, &a, NULL), 0);
    await(&a);
    ck_assert_int_eq(a.status, 0);
    ck_assert_ptr_eq(a.u, ups[0].u);
    ck_assert_int_eq(tide_group_release(group, a.u, a.r), 0);
    ck_assert_int_eq(route(0).breaker, TIDE_BREAKER_ACTIVE);
    ck_assert_int_eq(tide_group_try_acquire(group, &u, &r), 0);
    ck_assert_int_eq(tide_group_release(group, u, r), 0);
}
END_TEST

/* ---- the retry budget ---- */

START_TEST(retries_are_bounded_by_the_budget)
{
    /* a window of a second: the floor's reserve is 1 */
    new_group((struct tide_group_options){.retry_floor = 1,
                                          .retry_window = TIDE_SEC(1)});
    for (int i = 0; i < 2; i++)
        add(i, false, NULL);
    for (int k = 0; k < 10; k++) {
        lend(0);
        settle();
    }
    struct tide_group_budget b;
    tide_group_budget(group, &b);
    ck_assert_uint_eq(b.requests, 10);
    ck_assert_uint_eq(b.allowed, 2 + 1); /* 20% of 10, and the floor's 1 */
    /* three retries of requests that failed on upstream 0 go to 1 */
    struct ans a[4] = {{0}};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(
            tide_group_retry(group, ups[0].u, 0, on_answer, &a[k], NULL), 0);
        await(&a[k]);
        ck_assert_int_eq(a[k].status, 0);
        ck_assert_ptr_eq(a[k].u, ups[1].u);
        ck_assert_int_eq(tide_group_release(group, a[k].u, a[k].r), 0);
    }
    /* the fourth is past the budget: refused at once, no callback */
    ck_assert_int_eq(
        tide_group_retry(group, ups[0].u, 0, on_answer, &a[3], NULL),
        TIDE_EUNAVAILABLE);
    tide_group_budget(group, &b);
    ck_assert_uint_eq(b.retries, 3);
    ck_assert_uint_eq(b.spent, 3);
    ck_assert_uint_eq(b.refused, 1);
    ck_assert_uint_eq(route(0).failures, 3);
    /* the window passes: room again */
    now_ns += TIDE_SEC(2);
    tide_group_budget(group, &b);
    ck_assert_uint_eq(b.requests, 0);
    ck_assert_uint_eq(b.allowed, 1);
    ck_assert_int_eq(
        tide_group_retry(group, ups[0].u, 0, on_answer, &a[3], NULL), 0);
    await(&a[3]);
    ck_assert_int_eq(tide_group_release(group, a[3].u, a[3].r), 0);
}
END_TEST

/* A group just made has few requests in its window: the floor's reserve
 * (3 a second over the 10 s window) lets the burst of its first failures
 * retry at once, as a brown-out met by eight new callers gives, where a
 * quota of 3 in any second refused the fourth. */
START_TEST(a_group_just_made_can_retry_a_burst)
{
    for (int i = 0; i < 4; i++)
        add(i, false, NULL);
    for (int k = 0; k < 8; k++)
        lend(0);
    settle();
    struct tide_group_budget b;
    tide_group_budget(group, &b);
    ck_assert_uint_eq(b.requests, 8);
    ck_assert_uint_eq(b.allowed, 30 + 1); /* the reserve, and 20% of 8 */
    for (int k = 0; k < 31; k++) {
        struct ans a = {0};
        ck_assert_int_eq(
            tide_group_retry(group, ups[k % 4].u, 0, on_answer, &a, NULL), 0);
        await(&a);
        ck_assert_int_eq(a.status, 0);
        ck_assert_int_eq(tide_group_release(group, a.u, a.r), 0);
    }
    struct ans a = {0};
    ck_assert_int_eq(tide_group_retry(group, ups[0].u, 0, on_answer, &a, NULL),
                     TIDE_EUNAVAILABLE);
}
END_TEST

/* A request that met two failing upstreams goes to neither again: naming
 * the last alone, it would go back to the first one retry in three. */
START_TEST(a_retry_avoids_every_upstream_the_request_failed_on)
{
    new_group(
        (struct tide_group_options){.retry_ratio = 1, .retry_floor = 100});
    for (int i = 0; i < 4; i++)
        add(i, false, NULL);
    for (int k = 0; k < 100; k++) {
        lend(0);
        settle();
    }
    struct tide_group_upstream *failed[4] = {ups[0].u, ups[1].u, ups[2].u,
                                             ups[3].u};
    int got[4] = {0};
    for (int k = 0; k < 60; k++) {
        struct ans a = {0};
        ck_assert_int_eq(
            tide_group_retry_avoid(group, failed, 2, 0, on_answer, &a, NULL),
            0);
        await(&a);
        ck_assert_int_eq(a.status, 0);
        got[index_of(a.u)]++;
        ck_assert_int_eq(tide_group_release(group, a.u, a.r), 0);
    }
    ck_assert_int_eq(got[0] + got[1], 0);
    ck_assert_int_gt(got[2], 0);
    ck_assert_int_gt(got[3], 0);
    /* the last one met is the one the retry is for */
    ck_assert_uint_eq(route(1).failures, 60);
    ck_assert_uint_eq(route(0).failures, 0);
    /* all of them named: any may serve */
    struct ans a = {0};
    ck_assert_int_eq(
        tide_group_retry_avoid(group, failed, 4, 0, on_answer, &a, NULL), 0);
    await(&a);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(tide_group_release(group, a.u, a.r), 0);
    ck_assert_int_eq(
        tide_group_retry_avoid(group, NULL, 1, 0, on_answer, &a, NULL),
        TIDE_EINVAL);
}
END_TEST

START_TEST(a_failover_past_the_budget_gets_the_failure_and_its_cause)
{
    /* three failing, one serving: an acquire landing on a failing one
     * moves on (a retry) while the budget allows */
    new_group((struct tide_group_options){
        .retry_floor = 1, .retry_window = TIDE_SEC(1), .seed = 5});
    for (int i = 0; i < 3; i++)
        add(i, true, NULL);
    add(3, false, NULL);
    int served = 0, refused = 0;
    for (int k = 0; k < 200; k++) {
        struct ans a = {0};
        ck_assert_int_eq(tide_group_acquire(group, 0, on_answer, &a, NULL), 0);
        await(&a);
        if (a.status == 0) {
            served++;
            ck_assert_int_eq(tide_group_release(group, a.u, a.r), 0);
            continue;
        }
        refused++;
        ck_assert_int_eq(a.status, FAKE_CODE);
        ck_assert_msg(strstr(a.message, "the fake upstream refused") &&
                          strstr(a.message, "retry budget"),
                      "%s", a.message);
        ck_assert_int_lt(index_of(a.u), 3);
    }
    struct tide_group_budget b;
    tide_group_budget(group, &b);
    ck_assert_uint_eq(b.requests, 200);
    ck_assert_uint_le(b.spent, 200 / 5 + 1);
    ck_assert_uint_ge(b.spent, 200 / 5 - 1);
    ck_assert_uint_eq(b.refused, (uint64_t)refused);
    ck_assert_int_gt(refused, 0);
    ck_assert_int_gt(served, 0);
    /* attempts at upstreams: one per request, plus a retry for some */
    int makes = 0;
    for (int i = 0; i < 4; i++)
        makes += ups[i].makes;
    ck_assert_int_le(makes - ups[3].makes + served, 200 + (int)b.spent);
}
END_TEST

/* ---- panic ---- */

START_TEST(a_panic_spreads_over_all)
{
    struct tide_evpool_options o = *pool_options();
    o.ward.breaker = &(struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .cooldown = TIDE_SEC(60)};
    for (int i = 0; i < 4; i++)
        add(i, false, &o);
    /* two of four open: half, not more: those two are passed over */
    for (int i = 0; i < 2; i++)
        tide_breaker_deactivate(
            tide_evpool_breaker(tide_group_upstream_pool(ups[i].u)),
            real_now());
    const int64_t hold[4] = {0};
    traffic(100, hold, NULL);
    drain_loans();
    struct tide_group_budget b;
    tide_group_budget(group, &b);
    ck_assert(!b.panic);
    ck_assert_int_eq(b.held, 2);
    for (int i = 0; i < 2; i++) {
        struct tide_evpool_stats s;
        tide_group_upstream_stats(ups[i].u, &s, NULL);
        ck_assert_uint_eq(s.acquires, 0);
    }
    /* a third opens: past half, the group spreads over all four; the
     * open ones refuse at once (their breakers guard them), which costs
     * no retry, and every caller is served by the one left */
    tide_breaker_deactivate(
        tide_evpool_breaker(tide_group_upstream_pool(ups[2].u)), real_now());
    traffic(100, hold, NULL);
    tide_group_budget(group, &b);
    ck_assert(b.panic);
    ck_assert_int_eq(b.held, 3);
    ck_assert_uint_eq(b.spent, 0);
    for (int i = 0; i < 3; i++) {
        struct tide_evpool_stats s;
        tide_group_upstream_stats(ups[i].u, &s, NULL);
        ck_assert_uint_gt(s.acquires, 0);
    }
    /* and with panic 1 it never does */
    drain_loans();
    new_group((struct tide_group_options){.panic = 1});
    memset(ups, 0, sizeof ups);
    for (int i = 0; i < 4; i++)
        add(i, false, &o);
    for (int i = 0; i < 3; i++)
        tide_breaker_deactivate(
            tide_evpool_breaker(tide_group_upstream_pool(ups[i].u)),
            real_now());
    int picks[4] = {0};
    traffic(50, hold, picks);
    ck_assert_int_eq(picks[3], 50);
    tide_group_budget(group, &b);
    ck_assert(!b.panic);
}
END_TEST

START_TEST(routing_options_out_of_range_are_refused)
{
    struct tide_group *g = NULL;
    const struct tide_group_options bad[] = {
        {.decay = -1},        {.slow_start = TIDE_FOREVER},
        {.retry_ratio = 1.5}, {.retry_ratio = -0.1},
        {.retry_floor = -1},  {.retry_window = -1},
        {.panic = 2},         {.panic = -1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(tide_group_new(base, &bad[i], &g), TIDE_EINVAL);
        ck_assert_ptr_null(g);
    }
    ck_assert_int_eq(tide_group_retry(NULL, NULL, 0, on_answer, NULL, NULL),
                     TIDE_EINVAL);
    tide_group_route(NULL, NULL);
    tide_group_budget(NULL, NULL);
}
END_TEST

static Suite *route_suite(void)
{
    Suite *s = suite_create("group route");
    TCase *tc = tcase_create("route");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_slow_upstream_gets_few_loans_and_is_not_ejected);
    tcase_add_test(tc,
                   callers_at_fast_upstreams_do_not_send_more_to_a_slow_one);
    tcase_add_test(tc, a_loan_s_duration_is_timed_on_the_group_s_clock);
    tcase_add_test(tc, slow_start_ramps_an_upstream_added_at_run_time);
    tcase_add_test(tc, slow_start_follows_an_outage);
    tcase_add_test(
        tc,
        an_upstream_back_from_an_outage_is_judged_cold_not_by_its_old_average);
    tcase_add_test(tc, retries_are_bounded_by_the_budget);
    tcase_add_test(tc, a_group_just_made_can_retry_a_burst);
    tcase_add_test(tc, a_retry_avoids_every_upstream_the_request_failed_on);
    tcase_add_test(tc, a_due_probe_is_not_starved_by_try_acquire);
    tcase_add_test(tc,
                   a_failover_past_the_budget_gets_the_failure_and_its_cause);
    tcase_add_test(tc, a_panic_spreads_over_all);
    tcase_add_test(tc, routing_options_out_of_range_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(route_suite)
