/* The pool with shared loans (limits.streams > 1): the states a resource
 * takes while several borrowers share it (SHARED, ALONE, BROKEN, DRAINED,
 * HELD_DRAINED: see pool_internal.h), the take that lends one with room
 * before it asks for a make, the give and drop of one loan among several,
 * breaks, drains and exclusive loans. The counting is shares.h's; the
 * books are pool.c's, and a pool with streams 1 never comes here but for
 * a break or a drain. */
#include "pool_internal.h"

/* ---- lending ---- */

/* lend_idle in a pool with shared loans: its first loan, SHARED (in the
 * room of one loan, with room for more) or ALONE. */
TIDE__NOINLINE struct tide_taken
tide__pool_lend_idle_shared(struct tide_pool *p, int64_t now, uint32_t state)
{
    if (expired(p, &p->slots[idle_newest(p)], now))
        return tide__pool_hand_stale(p);
    uint32_t i = idle_pop(p);
    struct slot *s = &p->slots[i];
    s->link = state;
    s->since = now;
    p->busy_count++;
    tide__shares_move(&p->shares, i, +1, state == SHARED);
    return answer(TIDE_READY, s->item, 0, TIDE_GUARD_NONE);
}

/* One loan more on a resource carrying `loans`: its `since` becomes the
 * mean start of its loans, which is what each of their tickets settles as
 * with the shedder, the loans of one resource not being told apart.
 * Taking a loan off at the mean leaves the mean where it is. */
static void loan_started(struct slot *s, uint32_t loans, int64_t now)
{
    int64_t n = (int64_t)loans + 1;
    if (now >= s->since)
        s->since += tide__elapsed(s->since, now) / n;
    else
        s->since -= tide__elapsed(now, s->since) / n;
}

/* A shared loan made to s, which carried `loans` before it, noted for the
 * shedder: READY with s. */
TIDE__NOINLINE static struct tide_taken lent_noted(struct slot *s,
                                                   uint32_t loans, int64_t now)
{
    loan_started(s, loans, now);
    return answer(TIDE_READY, s->item, 0, TIDE_GUARD_NONE);
}

/* One loan more on resource i, which has room. */
static struct tide_taken lend_more(struct tide_pool *p, uint32_t i, int64_t now)
{
    struct slot *s = &p->slots[i];
    if (p->has_shedder)
        loan_started(s, p->shares.of[i].loans, now);
    tide__shares_change(&p->shares, i, +1, true);
    p->extra_loans++;
    return answer(TIDE_READY, s->item, 0, TIDE_GUARD_NONE);
}

/* The resource with room the sharing picks; one found past its life on
 * the way leaves the rooms (it takes no new loan) and the next is asked.
 * TIDE__SHARE_NONE when none has room. */
static uint32_t room_pick(struct tide_pool *p, int64_t now)
{
    for (;;) {
        uint32_t i = tide__shares_pick(&p->shares, p->limits.sharing);
        if (i == TIDE__SHARE_NONE || !aged(&p->slots[i], now))
            return i;
        tide__shares_place(&p->shares, i, false);
    }
}

/* ---- taking ---- */

/* A shared take once the pool lends: in the order the sharing says, a
 * resource with loans and room for another, or an idle one (spread asks
 * the idle first, as they carry the fewest loans of all; pack asks them
 * last); else a make, or WAIT where only a live one will do. */
struct tide_taken tide__pool_take_shared(struct tide_pool *p, int64_t now,
                                         double roll, bool make)
{
    if (p->limits.sharing == TIDE_SHARING_SPREAD && p->idle_count > 0)
        return tide__pool_take_idle_as(p, now, SHARED);
    uint32_t i = room_pick(p, now);
    if (i != TIDE__SHARE_NONE) {
        if (!tide__shedder_admit(&p->shedder, in_flight(p)))
            return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_SHEDDER);
        return lend_more(p, i, now);
    }
    if (p->idle_count > 0)
        return tide__pool_take_idle_as(p, now, SHARED);
    if (!make)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    return tide__pool_take_new(p, now, roll);
}

/* The end of take_idle_flat when the pop left a hole on top, or none
 * idle: the ends are stepped out of line, as lent_trimming does in pool.c,
 * so the common take makes no call. */
TIDE__NOINLINE static struct tide_taken
lent_shared_trimming(struct tide_pool *p, void *item)
{
    tide__pool_idle_trim(p);
    return answer(TIDE_READY, item, 0, TIDE_GUARD_NONE);
}

/* tide__pool_lend_idle_shared(SHARED) of the newest idle one on flat rooms
 * (see shares.h), when it is fresh: its first loan, in the room of one
 * loan, or counted when its capacity is one. The pop is idle_pop's, with
 * the trim left to the end. One that may be past keep or life goes to
 * take_slow, which decides from the start. Out of line, as take_pick_flat:
 * each on its own needs no register saved. */
TIDE__NOINLINE static struct tide_taken take_idle_flat(struct tide_pool *p,
                                                       int64_t now, double roll)
{
    if (may_be_expired(p, &p->slots[idle_newest(p)], now))
        return tide__pool_take_slow(p, now, roll);
    struct tide__shares *sh = &p->shares;
    uint32_t place = --p->idle_top;
    uint32_t i = *stack_at(p, place);
    struct slot *s = &p->slots[i];
    void *item = s->item;
    s->link = SHARED;
    s->since = now;
    p->busy_count++;
    if (sh->of[i].streams > 1) {
        uint64_t top = sh->rooms.top;
        tide__shares_flat_enter(sh, i, 1, &top);
        sh->rooms.top = top;
    } else {
        sh->of[i].loans = 1;
        tide__shares_count(sh, 1);
    }
    if (--p->idle_count == 0 || *stack_at(p, place - 1) == NIL)
        return lent_shared_trimming(p, item);
    return answer(TIDE_READY, item, 0, TIDE_GUARD_NONE);
}

/* The pick's loan on rooms in levels (over 63 streams), or noted for the
 * shedder: the general moves of shares.h. */
TIDE__NOINLINE static struct tide_taken take_pick_deep(struct tide_pool *p,
                                                       int64_t now, double roll)
{
    uint32_t n = tide__shares_room_to_pick(&p->shares, p->limits.sharing);
    uint32_t i = p->shares.room[n];
    struct slot *s = &p->slots[i];
    if (p->limits.life != TIDE_FOREVER && aged(s, now))
        return tide__pool_take_slow(p, now, roll);
    tide__shares_lend_picked(&p->shares, i, n);
    p->extra_loans++;
    if (p->has_shedder)
        return lent_noted(s, n, now);
    return answer(TIDE_READY, s->item, 0, TIDE_GUARD_NONE);
}

/* The end of take_pick_flat when its pick, out of its room, has no room
 * left: counted in the census with `loans`. Out of line: one take in
 * `streams` comes here when they pack. */
TIDE__NOINLINE static struct tide_taken lent_full(struct tide_pool *p,
                                                  uint32_t i, uint32_t loans)
{
    struct tide__share *r = &p->shares.of[i];
    r->loans = (uint16_t)loans;
    r->prev = TIDE__SHARE_OUT;
    tide__shares_count(&p->shares, loans);
    p->extra_loans++;
    return answer(TIDE_READY, p->slots[i].item, 0, TIDE_GUARD_NONE);
}

/* The pick's loan on flat rooms, with no shedder to note it: the resource
 * the sharing picks moves from its room n to room n + 1, as
 * tide__shares_lend_picked moves it, or to the census when that fills it.
 * One past its life goes to take_slow. Out of line, as take_idle_flat. */
TIDE__NOINLINE static struct tide_taken take_pick_flat(struct tide_pool *p,
                                                       int64_t now, double roll)
{
    struct tide__shares *sh = &p->shares;
    uint64_t top = sh->rooms.top;
    uint32_t n = tide__end_bit(top, p->limits.sharing == TIDE_SHARING_SPREAD);
    uint32_t i = sh->room[n];
    /* with no life to outlive, the pick needs no look at its slot: the
     * next take then does not wait on this one's load of it */
    if (p->limits.life != TIDE_FOREVER && aged(&p->slots[i], now))
        return tide__pool_take_slow(p, now, roll);
    tide__shares_flat_leave_head(sh, i, n, &top);
    if (n + 1 >= sh->of[i].streams) {
        sh->rooms.top = top;
        return lent_full(p, i, n + 1);
    }
    tide__shares_flat_enter(sh, i, n + 1, &top);
    sh->rooms.top = top;
    p->extra_loans++;
    return answer(TIDE_READY, p->slots[i].item, 0, TIDE_GUARD_NONE);
}

/* take_shared_fast's cases on rooms in levels (over 63 streams), or with
 * a shedder to note the loan: the general moves of shares.h. */
TIDE__NOINLINE static struct tide_taken take_general(struct tide_pool *p,
                                                     int64_t now, double roll)
{
    if (!tide__shares_any_room(&p->shares) ||
        (p->limits.sharing == TIDE_SHARING_SPREAD && p->idle_count > 0)) {
        if (p->idle_count == 0 || expired(p, &p->slots[idle_newest(p)], now))
            return tide__pool_take_slow(p, now, roll);
        return tide__pool_lend_idle_shared(p, now, SHARED);
    }
    return take_pick_deep(p, now, roll);
}

/* The common shared takes, as tide_pool_take's for one loan a resource:
 * the pool open and the shedder letting it lend, and then the resource the
 * sharing picks: one with room within its life, or an idle one still fresh
 * (spread's first choice, pack's when none has room). The checks have no
 * side effects, so whatever they leave to take_slow is decided there from
 * the start. The first sends on a pool with streams 1 too: tide_pool_take
 * comes here for one only when it is closed or its breaker is down. */
TIDE__NOINLINE struct tide_taken
tide__pool_take_shared_fast(struct tide_pool *p, int64_t now, double roll)
{
    if (p->closed || p->breaker.state == TIDE_BREAKER_INACTIVE ||
        (p->has_shedder && !tide__shedder_admit(&p->shedder, in_flight(p))))
        return tide__pool_take_slow(p, now, roll);
    if (!tide__shares_flat(&p->shares) || p->has_shedder)
        return take_general(p, now, roll);
    bool room = tide__shares_any_room(&p->shares);
    if (p->limits.sharing == TIDE_SHARING_SPREAD) {
        if (p->idle_count > 0)
            return take_idle_flat(p, now, roll);
        if (room)
            return take_pick_flat(p, now, roll);
    } else {
        if (room)
            return take_pick_flat(p, now, roll);
        if (p->idle_count > 0)
            return take_idle_flat(p, now, roll);
    }
    return tide__pool_take_slow(p, now, roll);
}

/* tide_pool_take_idle with shared loans: a live one will do, idle or with
 * room; with neither, WAIT and nothing else, as with streams 1. (Asking
 * the rooms clears them of what is past its life, which no answer shows.) */
struct tide_taken tide__pool_take_live_shared(struct tide_pool *p, int64_t now)
{
    if (p->idle_count == 0 && room_pick(p, now) == TIDE__SHARE_NONE)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    struct tide_taken no;
    if (tide__pool_refuses(p, now, &no))
        return no;
    return tide__pool_take_shared(p, now, 0.0, false);
}

/* With streams 1 every loan is alone: the plain take. */
struct tide_taken tide_pool_take_alone(struct tide_pool *p, int64_t now,
                                       double roll)
{
    if (!p || !p->shared)
        return tide_pool_take(p, now, roll);
    struct tide_taken no;
    if (tide__pool_refuses(p, now, &no))
        return no;
    if (p->idle_count > 0)
        return tide__pool_take_idle_as(p, now, ALONE);
    return tide__pool_take_new(p, now, roll);
}

struct tide_taken tide_pool_take_idle_alone(struct tide_pool *p, int64_t now)
{
    if (!p || !p->shared)
        return tide_pool_take_idle(p, now);
    if (p->idle_count == 0)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    struct tide_taken no;
    if (tide__pool_refuses(p, now, &no))
        return no;
    return tide__pool_take_idle_as(p, now, ALONE);
}

/* ---- giving back ---- */

/* A new resource's first loan with shared loans: it may carry up to
 * limits.streams until told otherwise, and takes more from now on. */
TIDE__NOINLINE void tide__pool_first_shared_loan(struct tide_pool *p,
                                                 uint32_t i)
{
    p->slots[i].link = SHARED;
    tide__shares_reset(&p->shares, i, (uint16_t)p->limits.streams);
    tide__shares_change(&p->shares, i, +1, true);
}

/* One loan of lent resource i ends, its ticket settled: how many are still
 * out of it. With streams 1 that was its only one. A resource left with
 * loans and room goes back to a room if it takes new ones (SHARED), even
 * past its life: the next pick that finds it so takes it out. */
static uint32_t loan_ends(struct tide_pool *p, uint32_t i, int64_t now)
{
    struct slot *s = &p->slots[i];
    if (p->has_shedder)
        tide__shedder_settle(&p->shedder, s->since, now);
    if (!p->shared) {
        p->busy_count--;
        return 0;
    }
    tide__shares_change(&p->shares, i, -1, s->link == SHARED);
    uint32_t left = p->shares.of[i].loans;
    if (left > 0)
        p->extra_loans--;
    else
        p->busy_count--;
    return left;
}

/* The last loan of a resource lent SHARED or ALONE is back: it goes idle,
 * or leaves when not kept, as any does; but one past its life leaves (0:
 * the caller closes it), as a connection draining for its age closes with
 * its last stream: it took no new loan meanwhile, and idle it would only
 * wait to be handed back STALE. (With streams 1 a give keeps it and take
 * hands it back, as the exclusive pool always answered.) */
static int last_loan_back(struct tide_pool *p, uint32_t i, uint32_t at,
                          int64_t now)
{
    if (aged(&p->slots[i], now))
        return tide__pool_leave_books(p, i, at);
    return tide__pool_idle_or_leave(p, i, at, now);
}

/* A give in one of the states shared loans, a break or a drain bring:
 * one loan ends. 1 while others are still out; then the resource goes idle
 * or leaves (last_loan_back), but a broken or drained one always leaves
 * (0: the caller closes it). */
int tide__pool_give_loan(struct tide_pool *p, uint32_t i, uint32_t at,
                         int64_t now)
{
    struct slot *s = &p->slots[i];
    uint32_t state = s->link;
    if (state == HELD_DRAINED) {
        tide__pool_end_loan(p, s, now);
        return tide__pool_leave_books(p, i, at);
    }
    if (loan_ends(p, i, now) > 0)
        return 1;
    if (state == BROKEN || state == DRAINED)
        return tide__pool_leave_books(p, i, at);
    return last_loan_back(p, i, at, now);
}

/* tide__pool_give_shared's every case. */
TIDE__NOINLINE static int give_shared_slow(struct tide_pool *p, uint32_t i,
                                           uint32_t at, int64_t now)
{
    if (loan_ends(p, i, now) > 0)
        return 1;
    return last_loan_back(p, i, at, now);
}

/* One loan of several back, on flat rooms, from a resource in room n
 * (2 or more): it steps to room n - 1, as tide__shares_move(-1, open)
 * steps it. 1: others are still out. Out of line, as give_unfilled. */
TIDE__NOINLINE static int give_step_flat(struct tide_pool *p, uint32_t i,
                                         uint32_t n)
{
    struct tide__shares *sh = &p->shares;
    uint64_t top = sh->rooms.top;
    tide__shares_flat_leave(sh, i, n, &top);
    tide__shares_flat_enter(sh, i, n - 1, &top);
    sh->rooms.top = top;
    p->extra_loans--;
    return 1;
}

/* A loan back, on flat rooms, from a resource counted in the census with
 * `loans` (2 or more): it was full, or past its life and taken out of the
 * rooms by a pick, or its capacity was lowered below its loans. Open again,
 * it enters the room of loans - 1 if it has room there, or stays counted,
 * as tide__shares_move(-1, open) moves it. 1: others are still out. Out of
 * line: one give in `streams` comes here when they pack. */
TIDE__NOINLINE static int give_unfilled(struct tide_pool *p, uint32_t i,
                                        uint32_t loans)
{
    struct tide__shares *sh = &p->shares;
    tide__shares_uncount(sh, loans);
    p->extra_loans--;
    if (loans - 1 >= sh->of[i].streams) {
        sh->of[i].loans = (uint16_t)(loans - 1);
        tide__shares_count(sh, loans - 1);
        return 1;
    }
    uint64_t top = sh->rooms.top;
    tide__shares_flat_enter(sh, i, loans - 1, &top);
    sh->rooms.top = top;
    return 1;
}

/* A give of a shared loan, straight from tide_pool_give, with no ticket
 * to settle, on flat rooms. The last loan of a resource back, as every give
 * is when loans spread over more resources than are lent, is settled here:
 * it leaves the room of one loan as tide__shares_move(-1, open) takes it
 * out, and goes on as last_loan_back, inline (the way to the idle stack
 * would cost every give the registers it takes). One of several steps
 * down a room in give_step_flat, one counted in the census (full, or past
 * its life) in give_unfilled, by tail calls: each on its own needs no
 * register saved. The rest go to give_shared_slow. */
TIDE__NOINLINE int tide__pool_give_shared(struct tide_pool *p, uint32_t i,
                                          uint32_t at, int64_t now)
{
    struct tide__shares *sh = &p->shares;
    if (now <= p->shedder.steady_after || !tide__shares_flat(sh))
        return give_shared_slow(p, i, at, now);
    uint32_t n = sh->of[i].loans;
    if (!tide__shares_in_room(sh, i))
        return n > 1 ? give_unfilled(p, i, n) : give_shared_slow(p, i, at, now);
    if (n > 1)
        return give_step_flat(p, i, n);
    uint64_t top = sh->rooms.top; /* SHARED: open, so in the room of one */
    tide__shares_flat_leave(sh, i, 1, &top);
    sh->of[i].loans = 0;
    sh->of[i].prev = TIDE__SHARE_OUT;
    sh->rooms.top = top;
    p->busy_count--;
    struct slot *s = &p->slots[i];
    if (aged(s, now))
        return tide__pool_leave_books(p, i, at);
    return idle_or_leave(p, i, s->item, at, now);
}

int tide__pool_give_at_shared(struct tide_pool *p, uint32_t slot, int64_t now)
{
    if (p->slots[slot].link != SHARED || p->shares.of[slot].loans < 2)
        return -1;
    (void)loan_ends(p, slot, now);
    return 1;
}

uint32_t tide__pool_drop_loan(struct tide_pool *p, uint32_t i, int64_t now)
{
    p->slots[i].link = BROKEN;
    return loan_ends(p, i, now);
}

/* ---- breaking, draining, exclusive ---- */

int tide_pool_break(struct tide_pool *p, void *item)
{
    uint32_t i;
    int rc = find_held(p, item, &i);
    if (rc)
        return rc;
    struct slot *s = &p->slots[i];
    if (s->link == BROKEN)
        return 0;
    if (!out(s) || held(s))
        return TIDE_ENOTLENT;
    s->link = BROKEN;
    if (p->shared)
        tide__shares_place(&p->shares, i, false);
    return 1;
}

/* A capacity of 0: no new loan, and the resource leaves once none is out:
 * an idle one now (0: the caller closes it), one lent or held when the last
 * loan or the check comes back. A broken one stays broken. */
static int drain(struct tide_pool *p, uint32_t i)
{
    struct slot *s = &p->slots[i];
    if (!out(s)) {
        tide__pool_idle_unlink(p, i);
        tide__pool_slot_release(p, i);
        return 0;
    }
    if (s->link == HELD) {
        s->link = HELD_DRAINED;
    } else if (s->link == LENT || s->link == SHARED || s->link == ALONE) {
        s->link = DRAINED;
        if (p->shared)
            tide__shares_place(&p->shares, i, false);
    }
    return 1;
}

int tide_pool_set_streams(struct tide_pool *p, void *item, int64_t streams)
{
    if (streams < 0)
        return TIDE_EINVAL;
    uint32_t i;
    int rc = find_held(p, item, &i);
    if (rc)
        return rc;
    if (streams == 0)
        return drain(p, i);
    if (p->shared) { /* with streams 1 every resource carries one */
        int64_t most = p->limits.streams;
        p->shares.of[i].streams = (uint16_t)(streams < most ? streams : most);
        if (p->slots[i].link == SHARED)
            tide__shares_place(&p->shares, i, true);
    }
    return 1;
}

int tide_pool_alone(struct tide_pool *p, void *item)
{
    uint32_t i;
    int rc = find_held(p, item, &i);
    if (rc)
        return rc;
    struct slot *s = &p->slots[i];
    if (!out(s) || held(s))
        return TIDE_ENOTLENT;
    if (!p->shared) /* streams 1: every loan is alone */
        return 0;
    if (p->shares.of[i].loans > 1)
        return TIDE_ESHARED;
    if (s->link == SHARED) {
        s->link = ALONE;
        tide__shares_place(&p->shares, i, false);
    }
    return 0;
}

/* ---- counts ---- */

int64_t tide_pool_busiest(const struct tide_pool *p)
{
    if (!p)
        return 0;
    if (p->shared)
        return tide__shares_busiest(&p->shares);
    return tide_pool_loans(p) > 0;
}

int tide_pool_share(const struct tide_pool *p, const void *item,
                    struct tide_share *share)
{
    if (!share)
        return TIDE_EINVAL;
    uint32_t i;
    int rc = find_held(p, item, &i);
    if (rc)
        return rc;
    uint32_t state = p->slots[i].link;
    bool lent = state == LENT || state == SHARED || state == ALONE ||
                state == BROKEN || state == DRAINED;
    bool drained = state == DRAINED || state == HELD_DRAINED;
    *share = (struct tide_share){
        .loans = p->shared ? p->shares.of[i].loans : lent,
        .streams = drained     ? 0
                   : p->shared ? p->shares.of[i].streams
                               : 1,
        .broken = state == BROKEN,
        .draining = drained,
        .alone = state == ALONE || (!p->shared && lent),
    };
    return 0;
}
