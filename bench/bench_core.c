/* Core benchmark: what the pool's bookkeeping costs, each figure beside a
 * floor measured in the same run.
 *
 * The floor is the least a pool can do and still be one: an array used as a
 * stack of idle pointers (LIFO, as the pool), and an open-addressed hash from
 * pointer to index, looked up on every return because a pool must know a
 * pointer is its own. take pops, or says "make one" when the stack is empty;
 * give looks the pointer up and pushes it, or, past the idle limit, deletes it
 * from the hash. It keeps no time, no state per resource and no guard, and
 * checks nothing else; so pool/floor is the price of everything the pool does
 * beyond identity and LIFO reuse (birth and loan stamps, the lent/idle state
 * that catches a double give, counts, the ward).
 *
 * The two loops are the same code but for the calls: the same clock steps
 * and rolls are passed (the floor ignores them), the same answers checked,
 * and each side pays one out-of-line call per operation (the floor's are kept
 * opaque to the optimiser, as the library's are to its caller). So the ratio
 * compares the work done, not the harness or the call.
 *
 * Figures, at sizes 10, 1,000 and 100,000:
 *   ready       ns per take -> give cycle that answers READY
 *   make        ns per take -> made -> give cycle whose resource leaves
 *   ready+ward, make+ward: the same with all four guards in front
 * and the bytes the pool allocates per resource slot. Then the curve at
 * 10, 1,000, 10,000, 100,000 and 1,000,000 resources, each beside a naive
 * pool doing the same (see "the whole pool out and back" below):
 *   pingpong    ns per take -> give, one taken and given straight back
 *   shuffled    ns per take + give, the whole pool lent and given back in
 *               shuffled order (a burst)
 *
 * Then shared loans: the ready cycle with streams 16 beside streams 1, at
 * 10, 1,000 and 100,000 resources (see "shared loans" below):
 *   shared      ns per take -> give, streams 1, 16 packed, 16 spread, and
 *               a naive shared pool doing the same at streams 1 and 16
 *               (the fair form of the goal: see SHARED_FAIR_GOAL)
 * and the bytes a slot with streams 16.
 *
 * Each figure is the median of 5 repetitions; the pool's and the floor's
 * repetitions alternate, so a noisy neighbour hits both alike, and each
 * pair runs at its own stack offset (see loop_shifted).
 *
 * Usage: bench_core [--quick] [--curve] [--shared] [--cpu]
 *                   [--pattern pingpong|shuffled] [--size N]
 *   --quick: about 1/20 of the time, for CI; --curve: the curve (pingpong
 *   and shuffled) alone; --shared: the shared loans alone; --cpu: time
 *   with the thread's CPU clock rather than the monotonic one, for a
 *   machine shared with other work (see timer); --pattern and --size: the
 *   curve's rows of that pattern or that size alone (--curve implied), so
 *   one row can be run under a profiler or repeated
 * Goal: within 2x of the floor, flat across sizes, <= 48 bytes a slot;
 * pingpong and shuffled within 2x of the naive pool at every size; streams
 * 16 within 1.5x of streams 1, and fairly: within 1.5x of streams 1 times
 * what streams 16 costs the naive shared pool over its streams 1. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#include <tidepool/core.h>

#define REPS        5
#define STEP        TIDE_NS(100) /* the clock moves this much per take */
#define HOT_MAX     64           /* resources out at once in a round */
#define ITEM_STRIDE 64           /* bytes between two fake resources */
#define RATIO_GOAL  2.0
#define BYTES_GOAL  48.0

static const size_t sizes[] = {10, 1000, 100000};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ---- plumbing ---- */

/* What the repetitions are timed with: CLOCK_MONOTONIC, or with --cpu the
 * thread's CPU clock, which leaves out the time the thread was not running
 * (a machine shared with other work preempts a repetition half-way, and
 * the wall clock charges that to whichever side was running). Set once in
 * main, before anything is timed. */
static clockid_t timer = CLOCK_MONOTONIC;

static int64_t timer_ns(void)
{
    return bench_clock(timer);
}

static void die(const char *what, long long got)
{
    fprintf(stderr, "bench_core: %s (got %lld)\n", what, got);
    exit(1);
}

/* Resources are addresses in one block; only identity matters, nothing is
 * ever read through them. */
struct items {
    unsigned char *block;
    size_t n;
};

static struct items items_new(size_t n)
{
    struct items it = {.block = malloc(n * ITEM_STRIDE), .n = n};
    if (!it.block)
        die("out of memory for items", (long long)n);
    return it;
}

static void *item_at(const struct items *it, size_t i)
{
    return it->block + i * ITEM_STRIDE;
}

/* ---- the floor ---- */

struct floor_cell {
    const void *key; /* NULL: empty */
    uint32_t index;  /* where a real pool would keep the resource's record;
                        the floor keeps none, but the cell has its size */
};

struct floor {
    void **stack; /* idle pointers; the top is the last returned */
    size_t top;
    size_t idle_max;
    size_t live; /* idle, lent and being made */
    size_t size;
    struct floor_cell *cells;
    size_t mask;
    unsigned shift;
    uint32_t next_index;
};

/* noipa, not just noinline: GCC would otherwise still specialise the calls
 * and learn what memory they touch, which no caller of a library gets. */
#if defined(__GNUC__) && !defined(__clang__)
#define FLOOR_CALL __attribute__((noipa))
#else
#define FLOOR_CALL __attribute__((noinline))
#endif

/* Returned by floor_take when every slot is in use. */
static char floor_wait;

static struct floor *floor_new(size_t size, size_t idle_max)
{
    struct floor *f = calloc(1, sizeof *f);
    size_t n = 2;
    unsigned bits = 1;
    while (n < size * 2) { /* at most half full, as the pool's map */
        n <<= 1;
        bits++;
    }
    if (!f)
        die("out of memory for the floor", 0);
    f->stack = malloc(idle_max * sizeof *f->stack);
    f->cells = calloc(n, sizeof *f->cells);
    if (!f->stack || !f->cells)
        die("out of memory for the floor", (long long)size);
    f->idle_max = idle_max;
    f->size = size;
    f->mask = n - 1;
    f->shift = 64 - bits;
    return f;
}

static void floor_free(struct floor *f)
{
    free(f->stack);
    free(f->cells);
    free(f);
}

/* The same multiplicative hash as the pool's map. */
static size_t floor_home(const struct floor *f, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> f->shift);
}

static size_t floor_probe(const struct floor *f, const void *key)
{
    size_t at = floor_home(f, key);
    while (f->cells[at].key && f->cells[at].key != key)
        at = (at + 1) & f->mask;
    return at;
}

/* Linear-probing delete with backward shift, so no tombstones pile up. */
static void floor_unhash(struct floor *f, size_t hole)
{
    for (size_t next = (hole + 1) & f->mask; f->cells[next].key;
         next = (next + 1) & f->mask) {
        size_t h = floor_home(f, f->cells[next].key);
        if (((next - h) & f->mask) >= ((next - hole) & f->mask)) {
            f->cells[hole] = f->cells[next];
            hole = next;
        }
    }
    f->cells[hole].key = NULL;
}

/* The floor's calls take the pool's arguments (a clock, a roll) and ignore
 * them, so both sides' loops are the same code but for the calls. */

/* An idle pointer, NULL for "make one" (room reserved), or &floor_wait. */
FLOOR_CALL static void *floor_take(struct floor *f, int64_t now, double roll)
{
    (void)now;
    (void)roll;
    if (f->top > 0)
        return f->stack[--f->top];
    if (f->live >= f->size)
        return &floor_wait;
    f->live++;
    return NULL;
}

FLOOR_CALL static void floor_made(struct floor *f, void *item, int64_t now)
{
    (void)now;
    size_t at = floor_probe(f, item);
    f->cells[at].key = item;
    f->cells[at].index = f->next_index++;
}

/* 1 kept, 0 not kept (it leaves), -1 not ours. */
FLOOR_CALL static int floor_give(struct floor *f, void *item, int64_t now)
{
    (void)now;
    size_t at = floor_probe(f, item);
    if (!f->cells[at].key)
        return -1;
    if (f->top < f->idle_max) {
        f->stack[f->top++] = item;
        return 1;
    }
    floor_unhash(f, at);
    f->live--;
    return 0;
}

/* ---- the four loops ----
 *
 * READY: a pool of `size` made and given back (idle = size, nothing ages);
 * each round takes the k = min(size, 64) most recently returned and gives
 * them all back, so k cycles go through a map holding `size` resources.
 *
 * MAKE: a cycle whose take answers MAKE and whose give answers "not kept".
 * A pool lends an idle resource before it makes one, so the idle list must
 * be empty at the take and full at the give: that is a burst. The pool keeps
 * one idle (.idle = 1, the least the limits can say, zero being the preset)
 * and size - 1 - k lent for good, so the map holds `size` at the peak. Each
 * round takes the idle one (READY), takes k more (k MAKEs, made each), gives
 * the idle one back (kept, the idle list is full again) and then the k made
 * ones, which leave ("not kept", the caller would close them). The round
 * counts k cycles; the one READY cycle in it (1/64 of the work, 1/9 at size
 * 10) is in the floor's round too. The k made resources reuse the same k
 * addresses each round, as malloc hands back what was just freed. */

struct shfloor; /* the naive shared pool: see "shared loans" below */
static void shf_free(struct shfloor *f);

struct run {
    struct tide_pool *pool;  /* the pool's loop, or */
    struct floor *floor;     /* the floor's, or */
    struct shfloor *shfloor; /* the naive shared pool's (shared loans) */
    struct items items;
    size_t hot;   /* k */
    void **fresh; /* MAKE: the k addresses made each round */
    void *held[HOT_MAX];
    int64_t now;
    uint64_t rng;
};

/* The clock and the generator live in locals for a round: kept in *r they
 * would chain every cycle through a store and a load (the calls may touch
 * *r, for all the compiler knows), a latency of a dozen clock cycles that
 * would bound the floor's loop rather than its work. */

static uint64_t pool_ready_round(struct run *r)
{
    int64_t now = r->now;
    uint64_t rng = r->rng;
    for (size_t j = 0; j < r->hot; j++) {
        now += STEP;
        struct tide_taken t = tide_pool_take(r->pool, now, bench_roll(&rng));
        if (t.answer != TIDE_READY)
            die("ready: take did not answer READY", t.answer);
        r->held[j] = t.item;
    }
    for (size_t j = 0; j < r->hot; j++)
        if (tide_pool_give(r->pool, r->held[j], now) != 1)
            die("ready: give did not keep", 0);
    r->now = now;
    r->rng = rng;
    return r->hot;
}

static uint64_t floor_ready_round(struct run *r)
{
    int64_t now = r->now;
    uint64_t rng = r->rng;
    for (size_t j = 0; j < r->hot; j++) {
        now += STEP;
        void *item = floor_take(r->floor, now, bench_roll(&rng));
        if (!item || item == &floor_wait)
            die("floor ready: take had none idle", 0);
        r->held[j] = item;
    }
    for (size_t j = 0; j < r->hot; j++)
        if (floor_give(r->floor, r->held[j], now) != 1)
            die("floor ready: give did not keep", 0);
    r->now = now;
    r->rng = rng;
    return r->hot;
}

static uint64_t pool_make_round(struct run *r)
{
    int64_t now = r->now + STEP;
    uint64_t rng = r->rng;
    struct tide_taken t = tide_pool_take(r->pool, now, bench_roll(&rng));
    if (t.answer != TIDE_READY)
        die("make: the idle one was not READY", t.answer);
    void *kept = t.item;
    for (size_t j = 0; j < r->hot; j++) {
        now += STEP;
        t = tide_pool_take(r->pool, now, bench_roll(&rng));
        if (t.answer != TIDE_MAKE)
            die("make: take did not answer MAKE", t.answer);
        if (tide_pool_made(r->pool, r->fresh[j], now) != 0)
            die("make: made refused", 0);
    }
    if (tide_pool_give(r->pool, kept, now) != 1)
        die("make: the idle one was not kept", 0);
    for (size_t j = 0; j < r->hot; j++)
        if (tide_pool_give(r->pool, r->fresh[j], now) != 0)
            die("make: a made one was kept", 0);
    r->now = now;
    r->rng = rng;
    return r->hot;
}

static uint64_t floor_make_round(struct run *r)
{
    int64_t now = r->now + STEP;
    uint64_t rng = r->rng;
    void *kept = floor_take(r->floor, now, bench_roll(&rng));
    if (!kept || kept == &floor_wait)
        die("floor make: no idle one", 0);
    for (size_t j = 0; j < r->hot; j++) {
        now += STEP;
        if (floor_take(r->floor, now, bench_roll(&rng)) != NULL)
            die("floor make: take did not say make", 0);
        floor_made(r->floor, r->fresh[j], now);
    }
    if (floor_give(r->floor, kept, now) != 1)
        die("floor make: the idle one was not kept", 0);
    for (size_t j = 0; j < r->hot; j++)
        if (floor_give(r->floor, r->fresh[j], now) != 0)
            die("floor make: a made one was kept", 0);
    r->now = now;
    r->rng = rng;
    return r->hot;
}

/* ---- setting the loops up ---- */

static const struct tide_breaker_options ward_breaker = {0}; /* adaptive */
static const struct tide_bucket_options ward_bucket = {.rate = 1e12,
                                                       .burst = 1e12};
static const struct tide_backoff ward_backoff = {0};
static const struct tide_shedder_options ward_shedder = {0};
static const struct tide_ward full_ward = {
    .breaker = &ward_breaker,
    .bucket = &ward_bucket,
    .backoff = &ward_backoff,
    .shedder = &ward_shedder,
};

static struct tide_pool *pool_new(size_t size, size_t idle, bool ward)
{
    struct tide_limits l =
        TIDE_LIMITS(.size = (int64_t)size, .idle = (int64_t)idle,
                    .keep = TIDE_FOREVER, .life = TIDE_FOREVER);
    struct tide_pool *p = NULL;
    int rc = tide_pool_new(&l, ward ? &full_ward : NULL, 0, &p);
    if (rc)
        die(tide_strerror(rc), rc);
    return p;
}

/* take -> MAKE -> made(item), as the caller of either side does it. */
static void run_make_one(struct run *r, void *item)
{
    if (r->pool) {
        struct tide_taken t =
            tide_pool_take(r->pool, r->now, bench_roll(&r->rng));
        if (t.answer != TIDE_MAKE)
            die("setup: take did not answer MAKE", t.answer);
        if (tide_pool_made(r->pool, item, r->now) != 0)
            die("setup: made refused", 0);
    } else {
        if (floor_take(r->floor, r->now, bench_roll(&r->rng)) != NULL)
            die("floor setup: take did not say make", 0);
        floor_made(r->floor, item, r->now);
    }
}

static void run_give(struct run *r, void *item, int want)
{
    int got = r->pool ? tide_pool_give(r->pool, item, r->now)
                      : floor_give(r->floor, item, r->now);
    if (got != want)
        die("setup: give answered otherwise", got);
}

enum cycle { CYCLE_READY, CYCLE_MAKE };

static void run_setup(struct run *r, enum cycle c, size_t size, bool pool,
                      bool ward)
{
    memset(r, 0, sizeof *r);
    r->rng = UINT64_C(0x9E3779B97F4A7C15);
    r->items = items_new(size);
    if (c == CYCLE_READY) {
        r->hot = size < HOT_MAX ? size : HOT_MAX;
        if (pool)
            r->pool = pool_new(size, size, ward);
        else
            r->floor = floor_new(size, size);
        for (size_t i = 0; i < size; i++)
            run_make_one(r, item_at(&r->items, i));
        for (size_t i = 0; i < size; i++)
            run_give(r, item_at(&r->items, i), 1);
        return;
    }
    r->hot = size - 1 < HOT_MAX ? size - 1 : HOT_MAX;
    if (pool)
        r->pool = pool_new(size, 1, ward);
    else
        r->floor = floor_new(size, 1);
    size_t lent = size - 1 - r->hot;
    for (size_t i = 0; i < lent; i++)
        run_make_one(r, item_at(&r->items, i)); /* lent for good */
    run_make_one(r, item_at(&r->items, lent));
    run_give(r, item_at(&r->items, lent), 1); /* the idle one */
    r->fresh = malloc(r->hot * sizeof *r->fresh);
    if (!r->fresh)
        die("out of memory", 0);
    for (size_t j = 0; j < r->hot; j++)
        r->fresh[j] = item_at(&r->items, lent + 1 + j);
}

static void run_dispose(struct run *r)
{
    tide_pool_free(r->pool);
    if (r->floor)
        floor_free(r->floor);
    if (r->shfloor)
        shf_free(r->shfloor);
    free(r->fresh);
    free(r->items.block);
}

/* ---- timing ---- */

struct loop {
    struct run run;
    uint64_t (*round)(struct run *r);
    uint64_t rounds; /* per repetition */
    double ns[REPS];
};

/* ns per cycle over `rounds` rounds. */
static double loop_once(struct loop *l, uint64_t rounds)
{
    uint64_t cycles = 0;
    int64_t t0 = timer_ns();
    for (uint64_t i = 0; i < rounds; i++)
        cycles += l->round(&l->run);
    int64_t t1 = timer_ns();
    return (double)(t1 - t0) / (double)cycles;
}

#if defined(__GNUC__)
#define BENCH_NOINLINE __attribute__((noinline))
#else
#define BENCH_NOINLINE
#endif

/* A repetition on a copy of the loop's state, in a frame of its own. */
BENCH_NOINLINE static double loop_moved(struct loop *l, uint64_t rounds)
{
    struct loop here = *l;
    double ns = loop_once(&here, rounds);
    l->run = here.run;
    return ns;
}

/* A repetition with the loop's state and every frame below it moved
 * `shift` bytes down the stack. Where the stack lies decides which of the
 * loop's stack slots share their address modulo 4 KiB with memory the
 * pool writes, and a load from such a slot can wait on a store it does not
 * depend on (4K aliasing): one binary measured 7.3 or 10.1 ns a make+ward
 * cycle as the size of its environment moved the stack. A caller's stack
 * could lie anywhere, so each repetition runs at an offset of its own (the
 * pool's and the floor's at the same ones) and the median is taken over
 * offsets as well as over time. */
BENCH_NOINLINE static double loop_shifted(struct loop *l, uint64_t rounds,
                                          size_t shift)
{
    volatile unsigned char pad[shift + 1];
    pad[0] = 0;
    double ns = loop_moved(l, rounds);
    return ns + (double)pad[0]; /* pad lives across the call */
}

/* The offset of repetition i: spread over a page, 16-byte aligned. */
static size_t rep_shift(int i)
{
    return ((size_t)i * 4096 / REPS) & ~(size_t)15;
}

/* Finds how many rounds fill `target` ns; warms caches and branch
 * predictors on the way. */
static void loop_calibrate(struct loop *l, double target)
{
    uint64_t rounds = 1;
    for (;;) {
        int64_t t0 = timer_ns();
        (void)loop_once(l, rounds);
        double took = (double)(timer_ns() - t0);
        if (took >= target / 8 || rounds >= (UINT64_C(1) << 40)) {
            double want = (double)rounds * target / (took > 1.0 ? took : 1.0);
            l->rounds = want >= 1.0 ? (uint64_t)want : 1;
            return;
        }
        rounds *= 2;
    }
}

static const char *cycle_name(enum cycle c, bool ward)
{
    if (c == CYCLE_READY)
        return ward ? "ready+ward" : "ready";
    return ward ? "make+ward" : "make";
}

/* Measures one row and prints it; returns the ratio. */
static double row(enum cycle c, bool ward, size_t size, double target)
{
    struct loop lp = {.round = c == CYCLE_READY ? pool_ready_round
                                                : pool_make_round};
    struct loop lf = {.round = c == CYCLE_READY ? floor_ready_round
                                                : floor_make_round};
    run_setup(&lp.run, c, size, true, ward);
    run_setup(&lf.run, c, size, false, false);
    loop_calibrate(&lp, target);
    loop_calibrate(&lf, target);
    for (int i = 0; i < REPS; i++) {
        lp.ns[i] = loop_shifted(&lp, lp.rounds, rep_shift(i));
        lf.ns[i] = loop_shifted(&lf, lf.rounds, rep_shift(i));
    }
    double pn = bench_median(lp.ns, REPS);
    double fn = bench_median(lf.ns, REPS);
    double ratio = pn / fn;
    printf("%-11s %7zu %9.2f %9.2f %7.2f%s\n", cycle_name(c, ward), size, pn,
           fn, ratio, ratio > RATIO_GOAL ? "  over 2x" : "");
    fflush(stdout);
    run_dispose(&lp.run);
    run_dispose(&lf.run);
    return ratio;
}

/* ---- shared loans ----
 *
 * The ready round above on a pool made with streams 16, beside the same
 * round on one made with streams 1: a pool of `size`, all made and idle,
 * each round taking k = min(size, 64) loans and giving them back in the
 * order taken. Packed, the loans land on the fewest resources, 16 each, so
 * most takes add a loan beside others and most gives leave others out;
 * spread, they land on the most (an idle one first), so at 1,000 and more
 * each take is a resource's first loan through the shared path. The three
 * loops' repetitions alternate, at the same stack offsets. */

#define SHARED_STREAMS 16
#define SHARED_GOAL    1.5

/* The naive shared pool: the least a pool with shared loans can do and
 * still answer as the pool does in this round, the floor of the work
 * sharing adds. As the naive pool of the curve below: an array stack of
 * idle pointers (each with its record's index) and an open-addressed
 * identity hash, pointer -> record index; and what shared loans cannot do
 * without: a loan count a record, and the rooms, one list a loan count of
 * the resources with room for more, newest first, doubly linked through
 * the records, with a word of the rooms not empty, so a take finds the
 * fullest (pack) or the emptiest (spread) at once and a give moves its
 * resource down a room from wherever it is in its list. take lends the
 * newest of that room, or pops an idle one (spread first, pack when no
 * room has room), and moves it up a room; give finds the record, refuses
 * it with no loan out (a double give), moves it down a room or, with its
 * last loan back, pushes it idle. Nothing else: no time, no limits, no
 * capacity per resource, no states, no guards, no counts. */
#define SHF_NONE UINT32_MAX

struct shf_rec {
    uint32_t loans;
    uint32_t prev; /* in its room: the newer one, or SHF_NONE */
    uint32_t next; /* the older one, or SHF_NONE */
};

struct shf_cell {
    const void *key; /* NULL: empty */
    uint32_t index;
};

struct shf_idle {
    void *item;
    uint32_t index;
};

struct shfloor {
    struct shf_idle *stack; /* the top is the last returned */
    size_t top;
    void **items; /* record index -> resource */
    struct shf_rec *recs;
    uint32_t count;
    uint32_t streams;
    bool spread;
    uint64_t rooms;                /* bit n: room n not empty */
    uint32_t room[SHARED_STREAMS]; /* room n's newest */
    struct shf_cell *cells;
    size_t mask;
    unsigned shift;
};

static struct shfloor *shf_new(size_t size, uint32_t streams, bool spread)
{
    struct shfloor *f = calloc(1, sizeof *f);
    size_t n = 2;
    unsigned bits = 1;
    while (n < size * 2) {
        n <<= 1;
        bits++;
    }
    if (!f)
        die("out of memory for the naive shared pool", 0);
    f->stack = malloc(size * sizeof *f->stack);
    f->items = malloc(size * sizeof *f->items);
    f->recs = malloc(size * sizeof *f->recs);
    f->cells = calloc(n, sizeof *f->cells);
    if (!f->stack || !f->items || !f->recs || !f->cells)
        die("out of memory for the naive shared pool", (long long)size);
    f->mask = n - 1;
    f->shift = 64 - bits;
    f->streams = streams;
    f->spread = spread;
    for (uint32_t k = 0; k < SHARED_STREAMS; k++)
        f->room[k] = SHF_NONE;
    return f;
}

static void shf_free(struct shfloor *f)
{
    free(f->stack);
    free(f->items);
    free(f->recs);
    free(f->cells);
    free(f);
}

/* The same multiplicative hash as the pool's map. */
static size_t shf_probe(const struct shfloor *f, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    size_t at = (size_t)(h >> f->shift);
    while (f->cells[at].key && f->cells[at].key != key)
        at = (at + 1) & f->mask;
    return at;
}

/* Setup only: a new resource, idle. */
static void shf_add(struct shfloor *f, void *item)
{
    size_t at = shf_probe(f, item);
    f->cells[at].key = item;
    f->cells[at].index = f->count;
    f->items[f->count] = item;
    f->recs[f->count] = (struct shf_rec){0, SHF_NONE, SHF_NONE};
    f->stack[f->top++] = (struct shf_idle){item, f->count};
    f->count++;
}

/* Puts record i at the head of room n. */
static void shf_link(struct shfloor *f, uint32_t i, uint32_t n)
{
    uint32_t first = f->room[n];
    f->recs[i].prev = SHF_NONE;
    f->recs[i].next = first;
    if (first == SHF_NONE)
        f->rooms |= UINT64_C(1) << n;
    else
        f->recs[first].prev = i;
    f->room[n] = i;
}

/* Takes record i out of room n. */
static void shf_unlink(struct shfloor *f, uint32_t i, uint32_t n)
{
    struct shf_rec *r = &f->recs[i];
    if (r->next != SHF_NONE)
        f->recs[r->next].prev = r->prev;
    if (r->prev != SHF_NONE) {
        f->recs[r->prev].next = r->next;
    } else {
        f->room[n] = r->next;
        if (r->next == SHF_NONE)
            f->rooms &= ~(UINT64_C(1) << n);
    }
}

/* One loan more on record i, in room n (0: idle, in no room). */
static void shf_up(struct shfloor *f, uint32_t i, uint32_t n)
{
    if (n > 0)
        shf_unlink(f, i, n);
    f->recs[i].loans = n + 1;
    if (n + 1 < f->streams)
        shf_link(f, i, n + 1);
}

/* A loan of the resource the sharing picks; NULL when none is idle and
 * none has room. */
FLOOR_CALL static void *shf_take(struct shfloor *f, int64_t now, double roll)
{
    (void)now;
    (void)roll;
    if (f->rooms && !(f->spread && f->top > 0)) {
        uint32_t n = f->spread ? (uint32_t)__builtin_ctzll(f->rooms)
                               : 63u - (uint32_t)__builtin_clzll(f->rooms);
        uint32_t i = f->room[n];
        shf_up(f, i, n);
        return f->items[i];
    }
    if (f->top == 0)
        return NULL;
    struct shf_idle e = f->stack[--f->top];
    shf_up(f, e.index, 0);
    return e.item;
}

/* 1 kept, -1 not ours, -2 no loan of it out. */
FLOOR_CALL static int shf_give(struct shfloor *f, void *item, int64_t now)
{
    (void)now;
    size_t at = shf_probe(f, item);
    if (!f->cells[at].key)
        return -1;
    uint32_t i = f->cells[at].index;
    uint32_t n = f->recs[i].loans;
    if (n == 0)
        return -2;
    if (n < f->streams)
        shf_unlink(f, i, n);
    f->recs[i].loans = n - 1;
    if (n > 1)
        shf_link(f, i, n - 1);
    else
        f->stack[f->top++] = (struct shf_idle){item, i};
    return 1;
}

static uint64_t shfloor_ready_round(struct run *r)
{
    int64_t now = r->now;
    uint64_t rng = r->rng;
    for (size_t j = 0; j < r->hot; j++) {
        now += STEP;
        void *item = shf_take(r->shfloor, now, bench_roll(&rng));
        if (!item)
            die("naive shared: take had none to lend", 0);
        r->held[j] = item;
    }
    for (size_t j = 0; j < r->hot; j++)
        if (shf_give(r->shfloor, r->held[j], now) != 1)
            die("naive shared: give did not keep", 0);
    r->now = now;
    r->rng = rng;
    return r->hot;
}

/* The naive shared pool of `size`, all idle, in the order the pool's are
 * given back (the last made on top). */
static void shfloor_setup(struct run *r, size_t size, uint32_t streams,
                          bool spread)
{
    memset(r, 0, sizeof *r);
    r->rng = UINT64_C(0x9E3779B97F4A7C15);
    r->items = items_new(size);
    r->hot = size < HOT_MAX ? size : HOT_MAX;
    r->shfloor = shf_new(size, streams, spread);
    for (size_t i = 0; i < size; i++)
        shf_add(r->shfloor, item_at(&r->items, i));
}

static void shared_setup(struct run *r, size_t size, int64_t streams,
                         enum tide_sharing sharing)
{
    memset(r, 0, sizeof *r);
    r->rng = UINT64_C(0x9E3779B97F4A7C15);
    r->items = items_new(size);
    r->hot = size < HOT_MAX ? size : HOT_MAX;
    struct tide_limits l =
        TIDE_LIMITS(.size = (int64_t)size, .idle = (int64_t)size,
                    .keep = TIDE_FOREVER, .life = TIDE_FOREVER,
                    .streams = streams, .sharing = sharing);
    int rc = tide_pool_new(&l, NULL, 0, &r->pool);
    if (rc)
        die(tide_strerror(rc), rc);
    /* grow, not take: a take would lend the first one again */
    for (size_t i = 0; i < size; i++) {
        struct tide_taken t = tide_pool_grow(r->pool, 0, 0.5);
        if (t.answer != TIDE_MAKE ||
            tide_pool_made(r->pool, item_at(&r->items, i), 0) != 0)
            die("shared setup: no room to make", t.answer);
    }
    for (size_t i = 0; i < size; i++)
        run_give(r, item_at(&r->items, i), 1);
}

/* The fair form of the goal. Streams 1 lends from the idle stack alone,
 * where with shared loans every take and give also moves a resource
 * between rooms: work no pool that picks the fullest or the emptiest can
 * skip, and which streams 1 never does. So the pool's streams 16 over its
 * streams 1 is held to 1.5x what the same step costs the naive shared
 * pool (its streams 16 over its streams 1, where it is the naive pool of
 * the curve: loans 1, no room ever): (pool16 / pool1) / (naive16 /
 * naive1), or how much more sharing costs the pool than the least a pool
 * with shared loans can do. A ratio of ratios, so no difference of two
 * noisy figures can go negative. */
#define SHARED_FAIR_GOAL 1.5

struct shared_figures {
    double filed; /* the worse of pack and spread over streams 1 */
    double fair;  /* the worse of them over the fair baseline */
};

/* Measures one size and prints it. */
static struct shared_figures shared_row(size_t size, double target)
{
    enum { ONE, PACK, SPREAD, NAIVE_ONE, NAIVE_PACK, NAIVE_SPREAD, LOOPS };
    struct loop l[LOOPS];
    for (int k = 0; k < LOOPS; k++)
        l[k] = (struct loop){.round = k < NAIVE_ONE ? pool_ready_round
                                                    : shfloor_ready_round};
    shared_setup(&l[ONE].run, size, 1, TIDE_SHARING_PACK);
    shared_setup(&l[PACK].run, size, SHARED_STREAMS, TIDE_SHARING_PACK);
    shared_setup(&l[SPREAD].run, size, SHARED_STREAMS, TIDE_SHARING_SPREAD);
    shfloor_setup(&l[NAIVE_ONE].run, size, 1, false);
    shfloor_setup(&l[NAIVE_PACK].run, size, SHARED_STREAMS, false);
    shfloor_setup(&l[NAIVE_SPREAD].run, size, SHARED_STREAMS, true);
    for (int k = 0; k < LOOPS; k++)
        loop_calibrate(&l[k], target);
    for (int i = 0; i < REPS; i++)
        for (int k = 0; k < LOOPS; k++)
            l[k].ns[i] = loop_shifted(&l[k], l[k].rounds, rep_shift(i));
    double ns[LOOPS];
    for (int k = 0; k < LOOPS; k++)
        ns[k] = bench_median(l[k].ns, REPS);
    double pack = ns[PACK] / ns[ONE], spread = ns[SPREAD] / ns[ONE];
    double fair_pack = pack / (ns[NAIVE_PACK] / ns[NAIVE_ONE]);
    double fair_spread = spread / (ns[NAIVE_SPREAD] / ns[NAIVE_ONE]);
    struct shared_figures f = {
        .filed = pack > spread ? pack : spread,
        .fair = fair_pack > fair_spread ? fair_pack : fair_spread,
    };
    printf("%-7s %7zu %7.2f %7.2f %6.2f %7.2f %6.2f %7.2f %7.2f %7.2f %6.2f "
           "%6.2f%s\n",
           "shared", size, ns[ONE], ns[PACK], pack, ns[SPREAD], spread,
           ns[NAIVE_ONE], ns[NAIVE_PACK], ns[NAIVE_SPREAD], fair_pack,
           fair_spread, f.fair > SHARED_FAIR_GOAL ? "  over 1.5x" : "");
    fflush(stdout);
    for (int k = 0; k < LOOPS; k++)
        run_dispose(&l[k].run);
    return f;
}

static struct shared_figures shared_table(double target)
{
    printf(
        "shared loans: ns per take+give, median of %d, streams %d beside "
        "streams 1\n(the ready round), and the naive shared pool doing "
        "the same (see shfloor);\nas filed: pack and spread over streams "
        "1, goal <= %.1f; fair: that ratio over the naive pool's own\n(npack "
        "or nspread over naive1), goal <= %.1f\n\n",
        REPS, SHARED_STREAMS, SHARED_GOAL, SHARED_FAIR_GOAL);
    printf("%-7s %7s %7s %7s %6s %7s %6s %7s %7s %7s %6s %6s\n", "cycle",
           "size", "1 ns", "pack", "ratio", "spread", "ratio", "naive1",
           "npack", "nspread", "fair", "fair");
    struct shared_figures worst = {0.0, 0.0};
    for (size_t i = 0; i < NSIZES; i++) {
        struct shared_figures r = shared_row(sizes[i], target);
        if (r.filed > worst.filed)
            worst.filed = r.filed;
        if (r.fair > worst.fair)
            worst.fair = r.fair;
    }
    return worst;
}

/* ---- the whole pool out and back, shuffled ----
 *
 * The ready row above cycles at most 64 resources, in the order taken: its
 * cells and records stay in cache at any size. Here the whole pool is out at
 * once and comes back in an order unrelated to the one it left in, as when
 * many callers hold their resources for different times: at a size past the
 * cache, each cycle finds its map cell and its record in memory.
 *
 * A pool of n (idle n, keep and life forever), all n made once, then per
 * round: take all n (each READY), give all n back in a shuffled order (each
 * kept). The orders are seeded permutations of the resources made before
 * any timing, and rotated round after round: enough of them that no order
 * repeats while the caches could still remember it (at least 4; up to 64
 * where they fit in 32 MiB). The resources are distinct heap blocks,
 * allocated one by one and made in a shuffled order, so neither their
 * addresses nor their slots follow the order they come back in.
 *
 * Pingpong, the other end: the same pool of n, all idle, and one caller
 * taking a resource and giving it straight back, PINGPONG_CYCLES times a
 * round. LIFO lends the same one each time, so its cell and its record stay
 * in cache at any n: what is left is the work of a take and a give, with
 * the map holding n (the cell it probes is the one n keys hashed around).
 *
 * Beside each, the naive pool at the same n and the same pattern: an array
 * stack of idle pointers (each with the index of its record, so a take
 * needs no lookup) and an open-addressed identity hash, pointer -> record
 * index, linear probing, at most half full, the key stored in the cell. A
 * record holds a lent/idle state and a time stamp, as the core's slot does.
 * take pops the stack, marks the record lent and stamps it; give finds the
 * record through the hash, refuses it unless lent (a double give), marks it
 * idle, stamps it and pushes it. Nothing more: no limits, no guards, no
 * expiry, no counts. Same calls as the ready loop: one opaque call per
 * operation on both sides, the same clock steps and rolls passed. */

static const size_t spread_sizes[] = {10, 1000, 10000, 100000, 1000000};
#define NSPREAD          (sizeof spread_sizes / sizeof spread_sizes[0])
#define SPREAD_ORDER_MIN 4
#define SPREAD_ORDER_MAX 64
#define SPREAD_ORDER_B   ((size_t)32 << 20) /* bytes for the orders */
#define SPREAD_ITEM_B    32                 /* bytes of a fake resource */
#define PINGPONG_CYCLES  64                 /* take -> give, a round */

enum pattern { PATTERN_PINGPONG, PATTERN_SHUFFLED };

enum naive_state { NAIVE_IDLE, NAIVE_LENT };

struct naive_record {
    int64_t since; /* when it was lent or came back */
    uint32_t state;
};

struct naive_cell {
    const void *key; /* NULL: empty */
    uint32_t index;  /* of the record */
};

struct naive_idle {
    void *item;
    uint32_t index;
};

struct naive {
    struct naive_idle *stack; /* the top is the last returned */
    size_t top;
    struct naive_record *records;
    uint32_t count; /* records in use */
    struct naive_cell *cells;
    size_t mask;
    unsigned shift;
};

static struct naive *naive_new(size_t size)
{
    struct naive *v = calloc(1, sizeof *v);
    size_t n = 2;
    unsigned bits = 1;
    while (n < size * 2) {
        n <<= 1;
        bits++;
    }
    if (!v)
        die("out of memory for the naive pool", 0);
    v->stack = malloc(size * sizeof *v->stack);
    v->records = malloc(size * sizeof *v->records);
    v->cells = calloc(n, sizeof *v->cells);
    if (!v->stack || !v->records || !v->cells)
        die("out of memory for the naive pool", (long long)size);
    v->mask = n - 1;
    v->shift = 64 - bits;
    return v;
}

static void naive_free(struct naive *v)
{
    free(v->stack);
    free(v->records);
    free(v->cells);
    free(v);
}

/* The same multiplicative hash as the pool's map and the floor. */
static size_t naive_probe(const struct naive *v, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    size_t at = (size_t)(h >> v->shift);
    while (v->cells[at].key && v->cells[at].key != key)
        at = (at + 1) & v->mask;
    return at;
}

/* Setup only: a new resource, lent. */
static void naive_made(struct naive *v, void *item, int64_t now)
{
    size_t at = naive_probe(v, item);
    v->cells[at].key = item;
    v->cells[at].index = v->count;
    v->records[v->count] = (struct naive_record){now, NAIVE_LENT};
    v->count++;
}

/* The last returned, lent now; NULL when none is idle. */
FLOOR_CALL static void *naive_take(struct naive *v, int64_t now, double roll)
{
    (void)roll;
    if (v->top == 0)
        return NULL;
    struct naive_idle e = v->stack[--v->top];
    struct naive_record *r = &v->records[e.index];
    r->state = NAIVE_LENT;
    r->since = now;
    return e.item;
}

/* 1 kept, -1 not ours, -2 not lent. */
FLOOR_CALL static int naive_give(struct naive *v, void *item, int64_t now)
{
    size_t at = naive_probe(v, item);
    if (!v->cells[at].key)
        return -1;
    uint32_t index = v->cells[at].index;
    struct naive_record *r = &v->records[index];
    if (r->state != NAIVE_LENT)
        return -2;
    r->state = NAIVE_IDLE;
    r->since = now;
    v->stack[v->top++] = (struct naive_idle){item, index};
    return 1;
}

/* The resources of a row and the orders they come back in, made once and
 * lent to both sides: the pool and the naive pool hash the very same
 * addresses. Made apart, each side's would be blocks of its own from a heap
 * the rows before had churned, and two sets of addresses can sit in their
 * tables very differently: measured in the curve's own allocation
 * sequence, 1.34 extra probes a lookup for the pool's 10,000 and 3.21 for
 * the naive pool's, 0.09 and 0.00 at 100,000, 0.105 and 0.067 at 1,000
 * shuffled; a row's ratio then told which side drew the better addresses
 * as much as what either does. */
struct spread_keys {
    size_t n;
    void **items;  /* the n resources, in the order made */
    void **orders; /* norders permutations of items, n each */
    size_t norders;
};

struct spread {
    struct tide_pool *pool; /* the pool's loop, or */
    struct naive *naive;    /* the naive one's */
    size_t n;
    void **items;  /* borrowed from the row's spread_keys */
    void **orders; /* borrowed, likewise */
    size_t norders;
    size_t round;
    int64_t now;
    uint64_t rng;
};

static uint64_t spread_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* Fisher-Yates over n pointers; the modulo's bias is nothing at these n. */
static void spread_shuffle(void **v, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(spread_next(rng) % i);
        void *t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static void spread_keys_new(struct spread_keys *k, size_t n,
                            enum pattern pattern)
{
    uint64_t shuffle = UINT64_C(0x2545F4914F6CDD1D);
    k->n = n;
    k->items = malloc(n * sizeof *k->items);
    /* pingpong gives back what it took: one order, never read */
    size_t orders =
        pattern == PATTERN_PINGPONG ? 1 : SPREAD_ORDER_B / (n * sizeof(void *));
    k->norders = pattern == PATTERN_PINGPONG ? 1
                 : orders < SPREAD_ORDER_MIN ? SPREAD_ORDER_MIN
                 : orders > SPREAD_ORDER_MAX ? SPREAD_ORDER_MAX
                                             : orders;
    k->orders = malloc(k->norders * n * sizeof *k->orders);
    if (!k->items || !k->orders)
        die("out of memory for the orders", (long long)n);
    for (size_t i = 0; i < n; i++)
        if (!(k->items[i] = malloc(SPREAD_ITEM_B)))
            die("out of memory for items", (long long)n);
    spread_shuffle(k->items, n, &shuffle);
    for (size_t j = 0; j < k->norders; j++) {
        memcpy(k->orders + j * n, k->items, n * sizeof *k->items);
        spread_shuffle(k->orders + j * n, n, &shuffle);
    }
}

static void spread_keys_free(struct spread_keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->items[i]);
    free(k->items);
    free(k->orders);
}

/* One side of a row, on the row's resources (borrowed: they must outlive
 * it), all made and given back, so all idle. */
static void spread_setup(struct spread *s, const struct spread_keys *k,
                         bool pool)
{
    memset(s, 0, sizeof *s);
    size_t n = k->n;
    s->n = n;
    s->items = k->items;
    s->orders = k->orders;
    s->norders = k->norders;
    s->rng = UINT64_C(0x9E3779B97F4A7C15);
    if (pool) {
        s->pool = pool_new(n, n, false);
        for (size_t i = 0; i < n; i++) {
            struct tide_taken t = tide_pool_take(s->pool, s->now, 0.5);
            if (t.answer != TIDE_MAKE)
                die("spread setup: take did not answer MAKE", t.answer);
            if (tide_pool_made(s->pool, s->items[i], s->now) != 0)
                die("spread setup: made refused", 0);
        }
        for (size_t i = 0; i < n; i++)
            if (tide_pool_give(s->pool, s->items[i], s->now) != 1)
                die("spread setup: give did not keep", 0);
    } else {
        s->naive = naive_new(n);
        for (size_t i = 0; i < n; i++)
            naive_made(s->naive, s->items[i], s->now);
        for (size_t i = 0; i < n; i++)
            if (naive_give(s->naive, s->items[i], s->now) != 1)
                die("spread setup: naive give did not keep", 0);
    }
}

static void spread_dispose(struct spread *s)
{
    tide_pool_free(s->pool);
    if (s->naive)
        naive_free(s->naive);
}

/* The next order of the rotation. */
static void **spread_order(struct spread *s)
{
    void **order = s->orders + (s->round % s->norders) * s->n;
    s->round++;
    return order;
}

static uint64_t pool_spread_round(struct spread *s)
{
    int64_t now = s->now;
    uint64_t rng = s->rng;
    void **order = spread_order(s);
    for (size_t j = 0; j < s->n; j++) {
        now += STEP;
        struct tide_taken t = tide_pool_take(s->pool, now, bench_roll(&rng));
        if (t.answer != TIDE_READY)
            die("spread: take did not answer READY", t.answer);
    }
    for (size_t j = 0; j < s->n; j++)
        if (tide_pool_give(s->pool, order[j], now) != 1)
            die("spread: give did not keep", 0);
    s->now = now;
    s->rng = rng;
    return s->n;
}

static uint64_t naive_spread_round(struct spread *s)
{
    int64_t now = s->now;
    uint64_t rng = s->rng;
    void **order = spread_order(s);
    for (size_t j = 0; j < s->n; j++) {
        now += STEP;
        if (!naive_take(s->naive, now, bench_roll(&rng)))
            die("naive spread: take had none idle", 0);
    }
    for (size_t j = 0; j < s->n; j++)
        if (naive_give(s->naive, order[j], now) != 1)
            die("naive spread: give did not keep", 0);
    s->now = now;
    s->rng = rng;
    return s->n;
}

static uint64_t pool_pingpong_round(struct spread *s)
{
    int64_t now = s->now;
    uint64_t rng = s->rng;
    for (size_t j = 0; j < PINGPONG_CYCLES; j++) {
        now += STEP;
        struct tide_taken t = tide_pool_take(s->pool, now, bench_roll(&rng));
        if (t.answer != TIDE_READY)
            die("pingpong: take did not answer READY", t.answer);
        if (tide_pool_give(s->pool, t.item, now) != 1)
            die("pingpong: give did not keep", 0);
    }
    s->now = now;
    s->rng = rng;
    return PINGPONG_CYCLES;
}

static uint64_t naive_pingpong_round(struct spread *s)
{
    int64_t now = s->now;
    uint64_t rng = s->rng;
    for (size_t j = 0; j < PINGPONG_CYCLES; j++) {
        now += STEP;
        void *item = naive_take(s->naive, now, bench_roll(&rng));
        if (!item)
            die("naive pingpong: take had none idle", 0);
        if (naive_give(s->naive, item, now) != 1)
            die("naive pingpong: give did not keep", 0);
    }
    s->now = now;
    s->rng = rng;
    return PINGPONG_CYCLES;
}

struct spread_loop {
    struct spread s;
    uint64_t (*round)(struct spread *s);
    uint64_t rounds;
    double ns[REPS];
};

static double spread_once(struct spread_loop *l, uint64_t rounds)
{
    uint64_t cycles = 0;
    int64_t t0 = timer_ns();
    for (uint64_t i = 0; i < rounds; i++)
        cycles += l->round(&l->s);
    int64_t t1 = timer_ns();
    return (double)(t1 - t0) / (double)cycles;
}

/* As loop_calibrate: rounds to fill `target` ns, warming up on the way. */
static void spread_calibrate(struct spread_loop *l, double target)
{
    uint64_t rounds = 1;
    for (;;) {
        int64_t t0 = timer_ns();
        (void)spread_once(l, rounds);
        double took = (double)(timer_ns() - t0);
        if (took >= target / 8 || rounds >= (UINT64_C(1) << 40)) {
            double want = (double)rounds * target / (took > 1.0 ? took : 1.0);
            l->rounds = want >= 1.0 ? (uint64_t)want : 1;
            return;
        }
        rounds *= 2;
    }
}

/* Measures one size of the curve and prints it; returns the ratio. The
 * pool's and the naive pool's repetitions alternate, as in row(). */
static double spread_row(enum pattern pattern, size_t n, double target)
{
    bool ping = pattern == PATTERN_PINGPONG;
    struct spread_loop lp = {.round = ping ? pool_pingpong_round
                                           : pool_spread_round};
    struct spread_loop ln = {.round = ping ? naive_pingpong_round
                                           : naive_spread_round};
    struct spread_keys keys;
    spread_keys_new(&keys, n, pattern);
    spread_setup(&lp.s, &keys, true);
    spread_setup(&ln.s, &keys, false);
    spread_calibrate(&lp, target);
    spread_calibrate(&ln, target);
    for (int i = 0; i < REPS; i++) {
        lp.ns[i] = spread_once(&lp, lp.rounds);
        ln.ns[i] = spread_once(&ln, ln.rounds);
    }
    double pn = bench_median(lp.ns, REPS);
    double nn = bench_median(ln.ns, REPS);
    double ratio = pn / nn;
    printf("%-11s %7zu %9.2f %9.2f %7.2f%s\n", ping ? "pingpong" : "shuffled",
           n, pn, nn, ratio, ratio > RATIO_GOAL ? "  over 2x" : "");
    fflush(stdout);
    spread_dispose(&lp.s);
    spread_dispose(&ln.s);
    spread_keys_free(&keys);
    return ratio;
}

/* ---- bytes ----
 *
 * mallinfo2 counts a chunk parked in the thread cache (tcache) as in use, so
 * an allocation served from there would not show. The bytes are therefore
 * measured first, before the bench has freed anything, and every pool and
 * floor is held until all are measured: each chunk then comes fresh from the
 * heap top or from mmap, and the delta is the real allocation. One small
 * allocation comes first, so the thread cache's own first-use allocation is
 * not charged to a pool. */

struct bytes {
    size_t fixed; /* an unbounded pool: the struct, ward embedded */
    size_t pool[NSIZES];
    size_t floor[NSIZES];
    size_t fixed_shared; /* the same with streams 16 */
    size_t shared[NSIZES];
};

static struct tide_pool *pool_measured(int64_t size, int64_t streams,
                                       size_t *bytes)
{
    struct tide_limits l =
        TIDE_LIMITS(.size = size, .idle = size, .streams = streams);
    struct tide_pool *p = NULL;
    size_t before = bench_heap_in_use();
    int rc = tide_pool_new(&l, &full_ward, 0, &p);
    *bytes = bench_heap_in_use() - before;
    if (rc)
        die(tide_strerror(rc), rc);
    return p;
}

static struct bytes bytes_measure(void)
{
    struct bytes b;
    struct tide_pool *pools[NSIZES + 1];
    struct tide_pool *shared[NSIZES + 1];
    struct floor *floors[NSIZES];
    void *volatile warm = malloc(1); /* volatile: the pair must stay */
    free(warm); /* the thread cache is set up; 32 B, a class unused here */
    /* An unbounded pool allocates no slot at creation. */
    pools[NSIZES] = pool_measured(TIDE_UNLIMITED, 1, &b.fixed);
    shared[NSIZES] =
        pool_measured(TIDE_UNLIMITED, SHARED_STREAMS, &b.fixed_shared);
    for (size_t i = 0; i < NSIZES; i++) {
        pools[i] = pool_measured((int64_t)sizes[i], 1, &b.pool[i]);
        shared[i] =
            pool_measured((int64_t)sizes[i], SHARED_STREAMS, &b.shared[i]);
        size_t before = bench_heap_in_use();
        floors[i] = floor_new(sizes[i], sizes[i]);
        b.floor[i] = bench_heap_in_use() - before;
    }
    for (size_t i = 0; i <= NSIZES; i++) {
        tide_pool_free(pools[i]);
        tide_pool_free(shared[i]);
        if (i < NSIZES)
            floor_free(floors[i]);
    }
    return b;
}

/* Prints bytes per slot; returns the worst per-slot figure. */
static double bytes_table(const struct bytes *b)
{
    double worst = 0.0;
    if (!HAVE_MALLINFO2) {
        printf("\nbytes per slot: not measured (needs glibc's mallinfo2)\n");
        return 0.0;
    }
    printf("\nbytes of bookkeeping per resource slot (heap delta, mallinfo2; "
           "fixed part %zu B)\n",
           b->fixed);
    printf("%7s %11s %10s %10s %10s %12s\n", "size", "pool B", "per slot",
           "all/size", "floor", "streams 16");
    for (size_t i = 0; i < NSIZES; i++) {
        double n = (double)sizes[i];
        double per = (double)(b->pool[i] - b->fixed) / n;
        if (per > worst)
            worst = per;
        printf("%7zu %11zu %10.1f %10.1f %10.1f %12.1f%s\n", sizes[i],
               b->pool[i], per, (double)b->pool[i] / n, (double)b->floor[i] / n,
               (double)(b->shared[i] - b->fixed_shared) / n,
               per > BYTES_GOAL ? "  over 48" : "");
    }
    printf("(per slot: beyond the fixed part, malloc headers and mmap pages "
           "included;\n all/size: the fixed part shared out too; floor: its "
           "stack and hash, all/size;\n streams 16: per slot with shared "
           "loans, fixed part %zu B)\n",
           b->fixed_shared);
    return worst;
}

int main(int argc, char **argv)
{
    double target = 2e8; /* ns per repetition: about 1 s a figure */
    bool curve_only = false, shared_only = false, cpu = false;
    int only_pattern = -1; /* --pattern: that one alone */
    size_t only_size = 0;  /* --size: that one alone */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            target = 1e7;
        } else if (strcmp(argv[i], "--curve") == 0) {
            curve_only = true;
        } else if (strcmp(argv[i], "--shared") == 0) {
            shared_only = true;
        } else if (strcmp(argv[i], "--cpu") == 0) {
            cpu = true;
            timer = CLOCK_THREAD_CPUTIME_ID;
        } else if (strcmp(argv[i], "--pattern") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "pingpong") == 0 ||
                    strcmp(argv[i + 1], "shuffled") == 0)) {
            only_pattern = strcmp(argv[++i], "pingpong") == 0
                               ? PATTERN_PINGPONG
                               : PATTERN_SHUFFLED;
            curve_only = true;
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc &&
                   strtoull(argv[i + 1], NULL, 10) > 0) {
            only_size = (size_t)strtoull(argv[++i], NULL, 10);
            curve_only = true;
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--curve] [--shared] [--cpu] "
                    "[--pattern pingpong|shuffled] [--size N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (cpu)
        printf("timed with the thread's CPU clock (--cpu)\n\n");
    struct bytes b = bytes_measure(); /* first: see above */
    if (shared_only) {
        struct shared_figures r = shared_table(target);
        printf("\nworst ratio to streams 1: %.2f (goal <= %.1f); worst fair "
               "ratio %.2f (goal <= %.1f)\n",
               r.filed, SHARED_GOAL, r.fair, SHARED_FAIR_GOAL);
        return 0;
    }
    double worst = 0.0;
    if (!curve_only) {
        printf("tidepool core bench: ns per cycle, median of %d; floor = "
               "array stack + pointer hash,\nmeasured in the same run; goal "
               "ratio <= %.0f, flat across sizes\n\n",
               REPS, RATIO_GOAL);
        printf("%-11s %7s %9s %9s %7s\n", "cycle", "size", "pool ns",
               "floor ns", "ratio");
        for (int ward = 0; ward < 2; ward++)
            for (int c = CYCLE_READY; c <= CYCLE_MAKE; c++)
                for (size_t i = 0; i < NSIZES; i++) {
                    double r = row((enum cycle)c, ward != 0, sizes[i], target);
                    if (r > worst)
                        worst = r;
                }
        printf("\n");
    }
    printf("one taken and given straight back (pingpong), and the whole pool "
           "out, then back\nin shuffled order: ns per take+give, median of "
           "%d; naive = array stack +\nidentity hash + a state and stamp a "
           "record; goal ratio <= %.0f\n\n",
           REPS, RATIO_GOAL);
    printf("%-11s %7s %9s %9s %7s\n", "cycle", "size", "pool ns", "naive ns",
           "ratio");
    double worst_spread = 0.0;
    for (int pt = PATTERN_PINGPONG; pt <= PATTERN_SHUFFLED; pt++) {
        if (only_pattern >= 0 && pt != only_pattern)
            continue;
        for (size_t i = 0; i < NSPREAD; i++) {
            if (only_size && i > 0)
                break; /* the one size asked for, run once */
            size_t n = only_size ? only_size : spread_sizes[i];
            double r = spread_row((enum pattern)pt, n, target);
            if (r > worst_spread)
                worst_spread = r;
        }
    }
    if (curve_only) {
        printf("\nworst curve ratio %.2f (goal <= %.0f)\n", worst_spread,
               RATIO_GOAL);
        return 0;
    }
    printf("\n");
    struct shared_figures worst_shared = shared_table(target);
    double bytes = bytes_table(&b);
    printf("\nworst ratio %.2f (goal <= %.0f), worst curve ratio %.2f "
           "(goal <= %.0f),\nworst shared ratio %.2f (goal <= %.1f), fair "
           "%.2f (goal <= %.1f), worst bytes a\nslot %.1f (goal <= %.0f)\n",
           worst, RATIO_GOAL, worst_spread, RATIO_GOAL, worst_shared.filed,
           SHARED_GOAL, worst_shared.fair, SHARED_FAIR_GOAL, bytes, BYTES_GOAL);
    return 0;
}
