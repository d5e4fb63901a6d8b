/* The reference model and the side-by-side driver; see pool_model.h. */
#include "pool_model.h"

#include <string.h>

static void *item_of(struct drive *d, int id)
{
    return &d->arena[id];
}

static int64_t later(int64_t t, int64_t span)
{
    if (span == TIDE_FOREVER || (t > 0 && span > INT64_MAX - t))
        return TIDE_FOREVER;
    return t + span;
}

static int64_t spread_life(const struct drive *d, double roll)
{
    int64_t life = d->limits.life;
    if (life == TIDE_FOREVER || d->limits.spread == 0.0)
        return life;
    return life - (int64_t)((double)life * d->limits.spread * roll);
}

static bool aged(const struct drive *d, int64_t dies)
{
    return dies != TIDE_FOREVER && d->now >= dies;
}

static bool expired(const struct drive *d, const struct model_idle *m)
{
    if (aged(d, m->dies))
        return true;
    return d->limits.keep != TIDE_FOREVER &&
           d->now - m->since >= d->limits.keep;
}

/* ---- shared loans: the rooms ---- */

/* After any change to id's loans, capacity or state: in a room when it
 * takes shared loans and has room for one more, and then the newest of
 * its room, as the pool pushes every resource it moves. */
static void room_set(struct drive *d, int id)
{
    bool open = d->place[id] == PLACE_LENT && d->lent_as[id] == LENT_SHARED;
    d->in_room[id] =
        open && d->loans[id] >= 1 && d->loans[id] < d->capacity[id];
    if (d->in_room[id])
        d->room_stamp[id] = ++d->stamps;
}

/* Whether a takes the next shared loan before b: pack the busier, spread
 * the less busy, the newest among equals. */
static bool picked_before(const struct drive *d, int a, int b)
{
    if (d->loans[a] != d->loans[b])
        return d->limits.sharing == TIDE_SHARING_SPREAD
                   ? d->loans[a] < d->loans[b]
                   : d->loans[a] > d->loans[b];
    return d->room_stamp[a] > d->room_stamp[b];
}

/* The pick, one past its life passed over and out of the rooms; -1 for
 * none. */
static int room_pick(struct drive *d)
{
    for (;;) {
        int best = -1;
        for (int id = 0; id < d->n_items; id++)
            if (d->in_room[id] && (best < 0 || picked_before(d, id, best)))
                best = id;
        if (best < 0 || !aged(d, d->lent_dies[best]))
            return best;
        d->in_room[best] = false;
    }
}

/* ---- moving resources between places, checked ---- */

/* id's first loan, as `as`. */
static void to_lent(struct drive *d, int id, int64_t dies, enum lent_as as)
{
    DRIVE_CHECK(d->place[id] != PLACE_LENT); /* nothing handed out twice */
    d->place[id] = PLACE_LENT;
    d->lent_dies[id] = dies;
    d->lent_as[id] = as;
    d->loans[id] = 1;
    d->n_lent++;
    room_set(d, id);
}

/* One more loan on a shared resource with room. */
static void lend_more(struct drive *d, int id)
{
    DRIVE_CHECK(d->place[id] == PLACE_LENT);
    DRIVE_CHECK(d->lent_as[id] == LENT_SHARED);
    DRIVE_CHECK(d->loans[id] < d->capacity[id]);
    DRIVE_CHECK(!aged(d, d->lent_dies[id]));
    d->loans[id]++;
    room_set(d, id);
}

/* One loan of id comes back: how many are still out. */
static int loan_back(struct drive *d, int id)
{
    DRIVE_CHECK(d->loans[id] > 0);
    d->loans[id]--;
    room_set(d, id);
    return d->loans[id];
}

static void leave(struct drive *d, int id)
{
    DRIVE_CHECK(d->place[id] == PLACE_IDLE || d->place[id] == PLACE_LENT ||
                d->place[id] == PLACE_HELD);
    if (d->place[id] == PLACE_LENT) /* never with a loan out */
        DRIVE_CHECK(d->loans[id] == 0);
    if (d->place[id] != PLACE_IDLE)
        d->n_lent--;
    d->place[id] = PLACE_GONE;
    d->in_room[id] = false;
    d->departures++;
}

static int idle_index(const struct drive *d, int id)
{
    for (int i = 0; i < d->n_idle; i++)
        if (d->idle[i].id == id)
            return i;
    return -1;
}

static void idle_remove_at(struct drive *d, int i)
{
    memmove(&d->idle[i], &d->idle[i + 1],
            (size_t)(d->n_idle - i - 1) * sizeof d->idle[0]);
    d->n_idle--;
}

/* The oldest reservation becomes a lent resource born now, carrying up to
 * limits.streams. */
static void fill_reservation(struct drive *d, int id)
{
    int64_t life = d->reserved_life[d->res_head];
    d->res_head = (d->res_head + 1) % DRIVE_ITEMS;
    d->n_reserved--;
    if (d->place[id] == PLACE_NONE)
        d->n_items = id + 1 > d->n_items ? id + 1 : d->n_items;
    if (d->place[id] == PLACE_GONE)
        d->reentries++;
    d->place[id] = PLACE_NONE;
    d->made++;
    d->capacity[id] = (int)d->limits.streams;
    to_lent(d, id, later(d->now, life), d->shared ? LENT_SHARED : LENT_PLAIN);
}

/* ---- picking resources for an operation ---- */

static int pick_in_place(struct drive *d, enum place want, uint32_t arg)
{
    if (d->n_items == 0)
        return -1;
    int start = (int)(arg % (uint32_t)d->n_items);
    for (int k = 0; k < d->n_items; k++) {
        int id = (start + k) % d->n_items;
        if (d->place[id] == want)
            return id;
    }
    return -1;
}

static int fresh_id(struct drive *d)
{
    return d->n_items < DRIVE_ITEMS ? d->n_items : -1;
}

/* Any id at all, on the books or not. */
static int any_id(struct drive *d, uint32_t arg)
{
    int n = d->n_items < DRIVE_ITEMS ? d->n_items + 1 : DRIVE_ITEMS;
    return (int)(arg % (uint32_t)n);
}

/* ---- taking ---- */

static bool ward_refusal(struct drive *d, struct tide_taken t)
{
    if (!d->guarded)
        return false;
    if (t.answer == TIDE_LATER)
        return t.span > 0 &&
               (t.guard == TIDE_GUARD_BUCKET || t.guard == TIDE_GUARD_BACKOFF);
    if (t.answer == TIDE_WAIT && t.guard == TIDE_GUARD_BACKOFF) {
        /* makes fail and a probe is out: the pool says so, no hold runs
         * (that would be a LATER), and nothing was reserved */
        struct tide_pool_guards g;
        tide_pool_guards(d->pool, d->now, &g);
        DRIVE_CHECK(g.backoff_probing && g.backoff_failures > 0 &&
                    g.backoff_hold == 0);
        return true;
    }
    return t.answer == TIDE_SHED &&
           (t.guard == TIDE_GUARD_BREAKER || t.guard == TIDE_GUARD_SHEDDER);
}

static bool refused_by(const struct drive *d, struct tide_taken t,
                       enum tide_guard guard)
{
    return d->guarded && t.answer == TIDE_SHED && t.guard == guard;
}

/* The newest idle one taken: handed back STALE, or lent READY as `as`. */
static void expect_idle_taken(struct drive *d, struct tide_taken t,
                              enum lent_as as)
{
    struct model_idle top = d->idle[d->n_idle - 1];
    DRIVE_CHECK(t.item == item_of(d, top.id));
    d->n_idle--;
    if (expired(d, &top)) {
        DRIVE_CHECK(t.answer == TIDE_STALE);
        leave(d, top.id);
    } else {
        DRIVE_CHECK(t.answer == TIDE_READY);
        DRIVE_CHECK(d->place[top.id] == PLACE_IDLE);
        d->place[top.id] = PLACE_NONE;
        to_lent(d, top.id, top.dies, as);
    }
}

static void expect_room(struct drive *d, struct tide_taken t, double roll);

/* A take with streams 1, or an exclusive one: an idle one, else a make. */
static void expect_taken(struct drive *d, struct tide_taken t, double roll,
                         enum lent_as as)
{
    if (d->closed) {
        DRIVE_CHECK(t.answer == TIDE_SHED && t.guard == TIDE_GUARD_CLOSED);
        return;
    }
    if (ward_refusal(d, t))
        return;
    if (d->n_idle > 0) {
        expect_idle_taken(d, t, as);
        return;
    }
    expect_room(d, t, roll);
}

/* A shared take: in the sharing's order, a resource with room or an idle
 * one; else a make, or WAIT when only a live one will do. The breaker is
 * asked before anything else, the shedder just before a lend, once the
 * rooms have been cleared of what is past its life. */
static void expect_shared(struct drive *d, struct tide_taken t, double roll,
                          bool make)
{
    if (d->closed) {
        DRIVE_CHECK(t.answer == TIDE_SHED && t.guard == TIDE_GUARD_CLOSED);
        return;
    }
    if (refused_by(d, t, TIDE_GUARD_BREAKER))
        return;
    bool spread = d->limits.sharing == TIDE_SHARING_SPREAD;
    int id = spread && d->n_idle > 0 ? -1 : room_pick(d);
    if (refused_by(d, t, TIDE_GUARD_SHEDDER) && (id >= 0 || d->n_idle > 0))
        return;
    if (id >= 0) {
        DRIVE_CHECK(t.answer == TIDE_READY && t.item == item_of(d, id));
        lend_more(d, id);
        return;
    }
    if (d->n_idle > 0) {
        expect_idle_taken(d, t, LENT_SHARED);
        return;
    }
    if (!make) {
        DRIVE_CHECK(t.answer == TIDE_WAIT && t.item == NULL);
        return;
    }
    if (ward_refusal(d, t))
        return;
    expect_room(d, t, roll);
}

static void op_take(struct drive *d, double roll)
{
    struct tide_taken t = tide_pool_take(d->pool, d->now, roll);
    if (d->shared)
        expect_shared(d, t, roll, true);
    else
        expect_taken(d, t, roll, LENT_PLAIN);
}

/* take_idle: with none live to lend, WAIT and nothing else (the
 * invariants after the step see that nothing was reserved); with one,
 * what take answers. */
static void op_take_idle(struct drive *d)
{
    struct tide_taken t = tide_pool_take_idle(d->pool, d->now);
    if (d->n_idle == 0 && (!d->shared || room_pick(d) < 0)) {
        DRIVE_CHECK(t.answer == TIDE_WAIT && t.item == NULL);
        return;
    }
    if (d->shared)
        expect_shared(d, t, 0.0, false);
    else
        expect_taken(d, t, 0.0, LENT_PLAIN);
}

/* The exclusive takes: an idle one or a make, never room beside a loan;
 * with streams 1, the plain takes. */
static void op_take_alone(struct drive *d, double roll, bool idle_only)
{
    enum lent_as as = d->shared ? LENT_ALONE : LENT_PLAIN;
    if (idle_only) {
        struct tide_taken t = tide_pool_take_idle_alone(d->pool, d->now);
        if (d->n_idle == 0) {
            DRIVE_CHECK(t.answer == TIDE_WAIT && t.item == NULL);
            return;
        }
        expect_taken(d, t, 0.0, as);
        return;
    }
    expect_taken(d, tide_pool_take_alone(d->pool, d->now, roll), roll, as);
}

/* The answer when no live one is lent: WAIT when full, else MAKE. */
static void expect_room(struct drive *d, struct tide_taken t, double roll)
{
    if (d->n_idle + d->n_lent + d->n_reserved >= d->limits.size) {
        DRIVE_CHECK(t.answer == TIDE_WAIT);
        return;
    }
    DRIVE_CHECK(t.answer == TIDE_MAKE);
    d->reserved_life[(d->res_head + d->n_reserved) % DRIVE_ITEMS] =
        spread_life(d, roll);
    d->n_reserved++;
}

static void op_grow(struct drive *d, double roll)
{
    struct tide_taken t = tide_pool_grow(d->pool, d->now, roll);
    if (d->closed) {
        DRIVE_CHECK(t.answer == TIDE_SHED && t.guard == TIDE_GUARD_CLOSED);
        return;
    }
    if (ward_refusal(d, t))
        return;
    expect_room(d, t, roll);
}

static void op_hold(struct drive *d, int id)
{
    if (id < 0)
        return;
    int rc = tide_pool_hold(d->pool, item_of(d, id));
    if (d->place[id] != PLACE_IDLE) {
        DRIVE_CHECK(rc ==
                    (d->place[id] == PLACE_LENT || d->place[id] == PLACE_HELD
                         ? TIDE_ENOTIDLE
                         : TIDE_EUNKNOWN));
        return;
    }
    DRIVE_CHECK(rc == 0);
    int k = idle_index(d, id);
    d->lent_dies[id] = d->idle[k].dies;
    d->held_since[id] = d->idle[k].since;
    d->held_drained[id] = false;
    idle_remove_at(d, k);
    d->place[id] = PLACE_HELD;
    d->n_lent++;
}

static void op_made(struct drive *d, uint32_t arg)
{
    int id = -1;
    if (arg % 8 == 0)
        id = pick_in_place(d, (arg / 8) % 2 ? PLACE_IDLE : PLACE_LENT, arg);
    bool held = id >= 0;
    if (!held)
        id = fresh_id(d);
    if (id < 0)
        return;
    /* an untried make is the same bookkeeping; its outcome comes later */
    int rc = (arg / 16) % 2
                 ? tide_pool_made_untried(d->pool, item_of(d, id), d->now)
                 : tide_pool_made(d->pool, item_of(d, id), d->now);
    if (d->n_reserved == 0) {
        DRIVE_CHECK(rc == TIDE_ENORESERVE);
    } else if (held) {
        DRIVE_CHECK(rc == TIDE_EDUPLICATE);
    } else {
        DRIVE_CHECK(rc == 0);
        fill_reservation(d, id);
        /* made for an exclusive borrower now and then */
        if (d->shared && (arg / 32) % 4 == 0) {
            DRIVE_CHECK(tide_pool_alone(d->pool, item_of(d, id)) == 0);
            d->lent_as[id] = LENT_ALONE;
            room_set(d, id);
        }
    }
}

static void op_unmade(struct drive *d, double roll)
{
    int rc = tide_pool_unmade(d->pool, d->now, roll);
    if (d->n_reserved == 0) {
        DRIVE_CHECK(rc == TIDE_ENORESERVE);
        return;
    }
    DRIVE_CHECK(rc == 0);
    d->res_head = (d->res_head + 1) % DRIVE_ITEMS;
    d->n_reserved--;
}

/* ---- giving back ---- */

/* Resolves an item coming back: true when the pool should treat it as
 * lent (filling a reservation if unknown); the expected misuse otherwise. */
static bool returning(struct drive *d, int id, int *expect)
{
    if (d->place[id] == PLACE_LENT || d->place[id] == PLACE_HELD)
        return true;
    if (d->place[id] == PLACE_IDLE) {
        *expect = TIDE_EDOUBLE;
        return false;
    }
    if (d->n_reserved == 0) {
        *expect = TIDE_EUNKNOWN;
        return false;
    }
    fill_reservation(d, id);
    return true;
}

/* How a give names its resource: every way answers alike. */
enum give_by {
    GIVE_BY_ITEM,       /* tide_pool_give */
    GIVE_BY_SLOT,       /* tide_pool_give_at with the item's own slot */
    GIVE_BY_WRONG_SLOT, /* tide_pool_give_at with a slot not its own */
};

/* The item's slot, checked against where the model has it: on the books
 * (idle, lent, held) it has one, else none. */
static uint32_t slot_checked(struct drive *d, int id)
{
    uint32_t slot = tide_pool_slot(d->pool, item_of(d, id));
    enum place at = d->place[id];
    DRIVE_CHECK((slot != TIDE_NO_SLOT) ==
                (at == PLACE_IDLE || at == PLACE_LENT || at == PLACE_HELD));
    return slot;
}

static int give_by(struct drive *d, int id, enum give_by by, uint32_t arg)
{
    void *item = item_of(d, id);
    if (by == GIVE_BY_ITEM)
        return tide_pool_give(d->pool, item, d->now);
    uint32_t slot = slot_checked(d, id);
    if (by == GIVE_BY_WRONG_SLOT)
        slot = arg % 2 ? TIDE_NO_SLOT : slot + 1 + arg % 4;
    return tide_pool_give_at(d->pool, slot, item, d->now);
}

/* The end of a give of a resource's last loan or check: it leaves (0)
 * when `leaving` or not kept, else it is idle again (1) and false. */
static bool leaves_at_give(struct drive *d, int id, int rc, bool leaving)
{
    if (leaving || d->closed || d->n_idle >= d->limits.idle) {
        DRIVE_CHECK(rc == 0);
        leave(d, id);
        return true;
    }
    DRIVE_CHECK(rc == 1);
    d->place[id] = PLACE_IDLE;
    d->n_lent--;
    return false;
}

/* A held one back from its check: at its place among the idle by rest
 * time, unless it leaves. */
static void expect_unheld(struct drive *d, int id, int rc)
{
    if (leaves_at_give(d, id, rc, d->held_drained[id]))
        return;
    /* above every idle one that rested at or before it, below the ones
     * returned since */
    int64_t since = d->held_since[id];
    int at = d->n_idle;
    while (at > 0 && d->idle[at - 1].since > since)
        at--;
    memmove(&d->idle[at + 1], &d->idle[at],
            (size_t)(d->n_idle - at) * sizeof d->idle[0]);
    d->idle[at] = (struct model_idle){id, d->lent_dies[id], since};
    d->n_idle++;
}

static void op_give(struct drive *d, int id, uint32_t arg)
{
    if (id < 0)
        return;
    int rc = give_by(d, id, (enum give_by)((arg >> 8) % 3), arg >> 10);
    int expect = 0;
    bool idle_before = d->place[id] == PLACE_IDLE;
    if (!returning(d, id, &expect)) {
        DRIVE_CHECK(rc == expect);
        if (idle_before) /* misuse leaves it idle, where it was */
            DRIVE_CHECK(d->place[id] == PLACE_IDLE);
        return;
    }
    if (d->place[id] == PLACE_HELD) {
        expect_unheld(d, id, rc);
        return;
    }
    if (loan_back(d, id) > 0) { /* others still out */
        DRIVE_CHECK(rc == 1);
        return;
    }
    /* broken, drained, or shared and past its life: it goes */
    enum lent_as as = d->lent_as[id];
    bool goes = as == LENT_BROKEN || as == LENT_DRAINED ||
                (as != LENT_PLAIN && aged(d, d->lent_dies[id]));
    if (leaves_at_give(d, id, rc, goes))
        return;
    d->idle[d->n_idle++] = (struct model_idle){id, d->lent_dies[id], d->now};
}

static void op_drop(struct drive *d, int id)
{
    if (id < 0)
        return;
    int rc = tide_pool_drop(d->pool, item_of(d, id), d->now);
    if (d->place[id] == PLACE_IDLE) {
        DRIVE_CHECK(rc == 0);
        idle_remove_at(d, idle_index(d, id));
        leave(d, id);
        return;
    }
    int expect = 0;
    if (!returning(d, id, &expect)) {
        DRIVE_CHECK(rc == expect);
        return;
    }
    if (d->place[id] == PLACE_LENT) {
        /* broken for every loan of it; the last one back hands it over */
        d->lent_as[id] = LENT_BROKEN;
        if (loan_back(d, id) > 0) {
            DRIVE_CHECK(rc == 1);
            return;
        }
    }
    DRIVE_CHECK(rc == 0);
    leave(d, id);
}

/* ---- breaking, draining, exclusive ---- */

static void op_break(struct drive *d, int id)
{
    if (id < 0)
        return;
    int rc = tide_pool_break(d->pool, item_of(d, id));
    switch (d->place[id]) {
    case PLACE_IDLE:
    case PLACE_HELD:
        DRIVE_CHECK(rc == TIDE_ENOTLENT);
        return;
    case PLACE_LENT:
        if (d->lent_as[id] == LENT_BROKEN) {
            DRIVE_CHECK(rc == 0);
            return;
        }
        DRIVE_CHECK(rc == 1);
        d->lent_as[id] = LENT_BROKEN;
        room_set(d, id);
        return;
    default:
        DRIVE_CHECK(rc == TIDE_EUNKNOWN);
    }
}

/* A capacity: mostly within the streams, sometimes past them, 0 (a
 * drain) or negative (refused). */
static int64_t capacity_from(const struct drive *d, uint32_t arg)
{
    switch (arg % 8) {
    case 0:
        return 0;
    case 1:
        return arg % 64 == 1 ? -1 : d->limits.streams + 1 + arg % 3;
    default:
        return 1 + (int64_t)(arg / 8 % (uint32_t)d->limits.streams);
    }
}

static void op_set_streams(struct drive *d, int id, uint32_t arg)
{
    if (id < 0)
        return;
    int64_t n = capacity_from(d, arg);
    int rc = tide_pool_set_streams(d->pool, item_of(d, id), n);
    enum place at = d->place[id];
    if (n < 0) {
        DRIVE_CHECK(rc == TIDE_EINVAL);
        return;
    }
    if (at != PLACE_IDLE && at != PLACE_LENT && at != PLACE_HELD) {
        DRIVE_CHECK(rc == TIDE_EUNKNOWN);
        return;
    }
    if (n == 0 && at == PLACE_IDLE) { /* drained with no loan: it goes */
        DRIVE_CHECK(rc == 0);
        idle_remove_at(d, idle_index(d, id));
        leave(d, id);
        return;
    }
    DRIVE_CHECK(rc == 1);
    if (n == 0 && at == PLACE_HELD) {
        d->held_drained[id] = true;
    } else if (n == 0) {
        enum lent_as as = d->lent_as[id];
        if (as == LENT_PLAIN || as == LENT_SHARED || as == LENT_ALONE)
            d->lent_as[id] = LENT_DRAINED;
        room_set(d, id);
    } else if (d->shared) {
        d->capacity[id] = (int)(n < d->limits.streams ? n : d->limits.streams);
        if (at == PLACE_LENT && d->lent_as[id] == LENT_SHARED)
            room_set(d, id);
    }
}

static void op_alone(struct drive *d, int id)
{
    if (id < 0)
        return;
    int rc = tide_pool_alone(d->pool, item_of(d, id));
    enum place at = d->place[id];
    if (at == PLACE_IDLE || at == PLACE_HELD) {
        DRIVE_CHECK(rc == TIDE_ENOTLENT);
        return;
    }
    if (at != PLACE_LENT) {
        DRIVE_CHECK(rc == TIDE_EUNKNOWN);
        return;
    }
    if (d->shared && d->loans[id] > 1) {
        DRIVE_CHECK(rc == TIDE_ESHARED);
        return;
    }
    DRIVE_CHECK(rc == 0);
    if (d->lent_as[id] == LENT_SHARED) {
        d->lent_as[id] = LENT_ALONE;
        room_set(d, id);
    }
}

static void op_evict(struct drive *d, uint32_t arg)
{
    void *out[8];
    size_t n = 1 + arg % 8;
    size_t got = tide_pool_evict(d->pool, d->now, out, n);
    DRIVE_CHECK(got <= n);
    /* the model's answer: expired ones, oldest (bottom of the stack) first */
    size_t k = 0;
    for (int i = 0; i < d->n_idle && k < n;) {
        if (expired(d, &d->idle[i])) {
            DRIVE_CHECK(k < got && out[k] == item_of(d, d->idle[i].id));
            k++;
            int id = d->idle[i].id;
            idle_remove_at(d, i);
            leave(d, id);
        } else {
            i++;
        }
    }
    DRIVE_CHECK(k == got);
}

static void op_close(struct drive *d, uint32_t arg)
{
    void *out[8];
    size_t n = 1 + arg % 8;
    size_t got;
    do {
        got = tide_pool_close(d->pool, out, n);
        DRIVE_CHECK(got <= n);
        for (size_t k = 0; k < got; k++) {
            DRIVE_CHECK(d->n_idle > 0);
            int top = d->idle[d->n_idle - 1].id;
            DRIVE_CHECK(out[k] == item_of(d, top));
            d->n_idle--;
            leave(d, top);
        }
    } while (got == n);
    d->closed = true;
    DRIVE_CHECK(d->n_idle == 0);
}

/* ---- connections by demand ---- */

/* Loans out, as the model has them. */
static int64_t model_loans(const struct drive *d)
{
    int64_t loans = 0;
    for (int id = 0; id < d->n_items; id++)
        if (d->place[id] == PLACE_LENT)
            loans += d->loans[id];
    return loans;
}

static int64_t model_live(const struct drive *d)
{
    return d->n_idle + d->n_lent + d->n_reserved;
}

/* The period of t, rounded toward minus infinity. */
static int64_t model_period(const struct drive *d, int64_t t)
{
    int64_t q = t / d->dm_width;
    return q * d->dm_width > t ? q - 1 : q;
}

/* The window moved to now (periods passed over get the loans out now),
 * and the loans noted in the newest. */
static void model_note(struct drive *d, int64_t loans)
{
    enum { LAST = TIDE_DEMAND_TICKS - 1 };
    int64_t t = model_period(d, d->now);
    if (!d->dm_started || t - d->dm_period > LAST) {
        for (int k = 0; k <= LAST; k++)
            d->dm_peaks[k] = loans;
        d->dm_period = t;
        d->dm_started = true;
    }
    for (; d->dm_period < t; d->dm_period++) {
        memmove(d->dm_peaks, d->dm_peaks + 1, LAST * sizeof d->dm_peaks[0]);
        d->dm_peaks[LAST] = loans;
    }
    if (loans > d->dm_peaks[LAST])
        d->dm_peaks[LAST] = loans;
}

static bool model_at_share(const struct drive *d, int64_t loans, int64_t live)
{
    return (double)loans >=
           d->limits.preconnect * ((double)live * (double)d->limits.streams);
}

static bool model_due(const struct drive *d, int64_t loans)
{
    return d->limits.preconnect > 0 && !d->closed && loans >= 1 &&
           model_live(d) < d->limits.size &&
           model_at_share(d, loans, model_live(d));
}

/* The fewest resources the peak needs: counted up one by one. */
static int64_t model_needed(const struct drive *d, int64_t peak)
{
    int64_t n = 0;
    if (peak <= 0)
        return 0;
    if (d->limits.preconnect > 0) {
        while (n < d->limits.size && model_at_share(d, peak, n))
            n++;
    } else {
        while (n < d->limits.size && n * d->limits.streams < peak)
            n++;
    }
    return n;
}

static void op_note(struct drive *d)
{
    int64_t loans = model_loans(d);
    if (d->dm_width)
        model_note(d, loans);
    DRIVE_CHECK(tide_pool_note(d->pool, d->now) == model_due(d, loans));
}

static void op_preconnect(struct drive *d, double roll)
{
    bool due = model_due(d, model_loans(d));
    struct tide_taken t = tide_pool_preconnect(d->pool, d->now, roll);
    if (d->closed) {
        DRIVE_CHECK(t.answer == TIDE_SHED && t.guard == TIDE_GUARD_CLOSED);
        return;
    }
    if (!due) {
        DRIVE_CHECK(t.answer == TIDE_WAIT && t.guard == TIDE_GUARD_NONE);
        return;
    }
    if (ward_refusal(d, t))
        return;
    expect_room(d, t, roll); /* grow's answer: MAKE, room being there */
    d->dm_preconnects += t.answer == TIDE_MAKE;
}

static void op_shrink(struct drive *d, uint32_t arg)
{
    void *out[8];
    size_t n = 1 + arg % 8;
    int64_t least = (int64_t)(arg >> 3) % 3;
    size_t got = tide_pool_shrink(d->pool, d->now, least, out, n);
    DRIVE_CHECK(got <= n);
    if (!d->dm_width || d->closed) {
        DRIVE_CHECK(got == 0);
        return;
    }
    model_note(d, model_loans(d));
    int64_t peak = 0;
    for (int k = 0; k < TIDE_DEMAND_TICKS; k++)
        peak = d->dm_peaks[k] > peak ? d->dm_peaks[k] : peak;
    int64_t need = model_needed(d, peak);
    int64_t keep = need > least ? need : least;
    int64_t excess = model_live(d) - keep;
    if (excess > d->n_idle)
        excess = d->n_idle;
    if (excess < 0)
        excess = 0;
    if (!d->dm_quota_set || d->dm_quota_period != d->dm_period) {
        double want = d->limits.retire * (double)excess;
        d->dm_quota = (int64_t)want + ((double)(int64_t)want < want);
        d->dm_quota_period = d->dm_period;
        d->dm_quota_set = true;
    }
    int64_t most = excess < d->dm_quota ? excess : d->dm_quota;
    if (most > (int64_t)n)
        most = (int64_t)n;
    DRIVE_CHECK((int64_t)got == most);
    /* the oldest idle ones (the bottom of the stack), in order */
    for (size_t k = 0; k < got; k++) {
        DRIVE_CHECK(d->n_idle > 0 && out[k] == item_of(d, d->idle[0].id));
        int id = d->idle[0].id;
        idle_remove_at(d, 0);
        leave(d, id);
    }
    d->dm_quota -= (int64_t)got;
    d->dm_shrunk += (long)got;
    DRIVE_CHECK(got == 0 || model_live(d) >= keep); /* never below */
}

static void op_demand(struct drive *d)
{
    struct tide_demand m;
    tide_pool_demand(d->pool, d->now, &m);
    if (!d->dm_width) {
        DRIVE_CHECK(m.period == 0 && m.peak == model_loans(d));
        return;
    }
    model_note(d, model_loans(d));
    int64_t peak = 0;
    for (int k = 0; k < TIDE_DEMAND_TICKS; k++)
        peak = d->dm_peaks[k] > peak ? d->dm_peaks[k] : peak;
    DRIVE_CHECK(m.period == d->dm_width);
    DRIVE_CHECK(m.peak == peak);
    DRIVE_CHECK(m.needed == model_needed(d, peak));
    DRIVE_CHECK(m.needed <= d->limits.size);
}

/* The operations of demand, in a demand episode only: a note after a take
 * as a runtime makes one, a preconnect, a shrink, a read. */
static void step_demand(struct drive *d, uint32_t op, uint32_t arg, double roll)
{
    switch (op % 6) {
    case 0:
    case 1:
        op_take(d, roll);
        op_note(d);
        break;
    case 2:
        op_preconnect(d, roll);
        break;
    case 3:
    case 4:
        op_shrink(d, arg);
        break;
    default:
        op_demand(d);
        break;
    }
}

/* ---- invariants ---- */

/* What tide_pool_share must read for id, as the model has it. */
static void check_share(struct drive *d, int id)
{
    struct tide_share s;
    int rc = tide_pool_share(d->pool, item_of(d, id), &s);
    enum place at = d->place[id];
    if (at != PLACE_IDLE && at != PLACE_LENT && at != PLACE_HELD) {
        DRIVE_CHECK(rc == TIDE_EUNKNOWN);
        return;
    }
    DRIVE_CHECK(rc == 0);
    bool lent = at == PLACE_LENT;
    enum lent_as as = d->lent_as[id];
    bool drained = (lent && as == LENT_DRAINED) ||
                   (at == PLACE_HELD && d->held_drained[id]);
    DRIVE_CHECK(s.loans == (lent ? d->loans[id] : 0));
    DRIVE_CHECK(s.streams == (drained ? 0 : d->shared ? d->capacity[id] : 1));
    DRIVE_CHECK(s.broken == (lent && as == LENT_BROKEN));
    DRIVE_CHECK(s.draining == drained);
    DRIVE_CHECK(s.alone == (lent && (!d->shared || as == LENT_ALONE)));
}

static void check_invariants(struct drive *d, bool full)
{
    struct tide_pool *p = d->pool;
    DRIVE_CHECK(tide_pool_live(p) <= d->limits.size);
    DRIVE_CHECK(tide_pool_idle(p) <= d->limits.idle);
    DRIVE_CHECK(tide_pool_idle(p) == d->n_idle);
    DRIVE_CHECK(tide_pool_busy(p) == d->n_lent + d->n_reserved);
    DRIVE_CHECK(tide_pool_live(p) == tide_pool_idle(p) + tide_pool_busy(p));
    if (!full)
        return;
    int idle = 0, lent = 0, gone = 0, busiest = 0;
    long loans = 0;
    for (int id = 0; id < d->n_items; id++) {
        idle += d->place[id] == PLACE_IDLE;
        lent += d->place[id] == PLACE_LENT || d->place[id] == PLACE_HELD;
        gone += d->place[id] == PLACE_GONE;
        if (d->place[id] == PLACE_LENT) {
            loans += d->loans[id];
            busiest = d->loans[id] > busiest ? d->loans[id] : busiest;
            DRIVE_CHECK(d->loans[id] >= 1);
            DRIVE_CHECK(d->loans[id] <= d->limits.streams);
            DRIVE_CHECK(d->lent_as[id] != LENT_ALONE || d->loans[id] == 1);
        }
        check_share(d, id);
    }
    DRIVE_CHECK(idle == d->n_idle && lent == d->n_lent);
    DRIVE_CHECK(gone == d->departures - d->reentries);
    DRIVE_CHECK(tide_pool_loans(p) == loans);
    DRIVE_CHECK(tide_pool_busiest(p) == busiest);
    for (int i = 0; i < d->n_idle; i++)
        DRIVE_CHECK(d->place[d->idle[i].id] == PLACE_IDLE);
}

/* ---- the driver ---- */

int drive_init(struct drive *d, const struct tide_limits *limits,
               const struct tide_ward *ward)
{
    memset(d, 0, sizeof *d);
    int rc = tide_pool_new(limits, ward, 0, &d->pool);
    if (rc)
        return rc;
    d->limits = tide_pool_limits(d->pool);
    d->shared = d->limits.streams > 1;
    d->guarded = ward && (ward->breaker || ward->bucket || ward->backoff ||
                          ward->shedder);
    if (d->limits.demand > 0 && d->limits.demand != TIDE_FOREVER) {
        d->dm_width = d->limits.demand / TIDE_DEMAND_TICKS;
        d->dm_width = d->dm_width > 0 ? d->dm_width : 1;
    }
    d->dm_on = d->dm_width > 0 || d->limits.preconnect > 0;
    return 0;
}

/* A resource with a loan out (or held) three times in four, else one
 * idle, gone, never seen or at random: misuse among them. */
static int pick_returning(struct drive *d, uint32_t arg)
{
    if (arg % 4)
        return pick_in_place(d, arg % 16 == 1 ? PLACE_HELD : PLACE_LENT, arg);
    return any_id(d, arg >> 2);
}

/* The operations that shared loans brought. */
static void step_shared(struct drive *d, uint32_t op, uint32_t arg, double roll)
{
    switch (op % 8) {
    case 0:
    case 1:
        op_take_alone(d, roll, arg % 2);
        break;
    case 2:
        op_break(d, pick_returning(d, arg));
        break;
    case 3:
        op_set_streams(d, pick_returning(d, arg), arg >> 4);
        break;
    case 4:
        op_alone(d, pick_returning(d, arg));
        break;
    default: /* more loans out, so more come back */
        op_give(d, pick_in_place(d, PLACE_LENT, arg), arg);
        break;
    }
}

void drive_step(struct drive *d, uint32_t op, uint32_t arg, double roll,
                int64_t dt)
{
    d->now = later(d->now, dt < 0 ? 0 : dt);
    /* the high bits pick, so every case below still comes up */
    if (d->dm_on && (op >> 24) % 4 == 0) {
        step_demand(d, op >> 8, arg, roll);
        check_invariants(d, ++d->steps % 64 == 0);
        return;
    }
    switch (op % 20) {
    case 0:
    case 1:
    case 2:
    case 3:
        op_take(d, roll);
        break;
    case 4:
        if (arg % 2)
            op_take(d, roll);
        else
            op_take_idle(d);
        break;
    case 5:
    case 6:
        op_made(d, arg);
        break;
    case 7:
        op_unmade(d, roll);
        break;
    case 8:
    case 9:
    case 10:
        op_give(d, pick_in_place(d, arg % 4 ? PLACE_LENT : PLACE_HELD, arg),
                arg);
        break;
    case 11: /* misuse or a skipped made(): idle, gone or never seen */
        op_give(d,
                arg % 3 == 0   ? pick_in_place(d, PLACE_IDLE, arg)
                : arg % 3 == 1 ? pick_in_place(d, PLACE_GONE, arg)
                               : fresh_id(d),
                arg);
        break;
    case 12:
        op_drop(d, pick_in_place(d, arg % 4 ? PLACE_LENT : PLACE_HELD, arg));
        break;
    case 13:
        op_drop(d, arg % 2 ? pick_in_place(d, PLACE_IDLE, arg)
                           : pick_in_place(d, PLACE_GONE, arg));
        break;
    case 14:
        op_evict(d, arg);
        break;
    case 15:
        if (arg % 512 == 0)
            op_close(d, arg / 512);
        else if (arg % 4 == 1)
            op_hold(d, arg % 8 == 1 ? pick_in_place(d, PLACE_IDLE, arg)
                                    : pick_in_place(d, PLACE_LENT, arg));
        else if (arg % 4 == 2)
            op_grow(d, roll);
        else if (arg % 16 == 3) /* outcomes feed the ward, not the books */
            tide_pool_report(d->pool, d->now, roll < 0.7);
        else if (arg % 16 == 7)
            tide_pool_tried(d->pool, d->now, roll, roll < 0.7);
        else
            op_take(d, roll);
        break;
    default:
        step_shared(d, op / 20, arg, roll);
        break;
    }
    check_invariants(d, ++d->steps % 64 == 0);
}

void drive_finish(struct drive *d)
{
    if (!d->closed)
        op_close(d, 7);
    for (int id = 0; id < d->n_items; id++)
        while (d->place[id] == PLACE_LENT || d->place[id] == PLACE_HELD)
            op_give(d, id, (uint32_t)id << 8);
    while (d->n_reserved > 0)
        op_unmade(d, 0.5);
    check_invariants(d, true);
    /* nothing lost: every resource that entered left exactly once */
    DRIVE_CHECK(d->departures == d->made);
    DRIVE_CHECK(tide_pool_live(d->pool) == 0);
    DRIVE_CHECK(tide_pool_loans(d->pool) == 0);
    for (int id = 0; id < d->n_items; id++)
        DRIVE_CHECK(d->place[id] == PLACE_GONE || d->place[id] == PLACE_NONE);
    tide_pool_free(d->pool);
    d->pool = NULL;
}
