/* The core alone, driven by hand: a pool of pretend connections (plain
 * structs), a clock that is a variable the program moves, and rolls from a
 * seeded generator, so every run is the same run. The core never blocks and
 * never opens anything: it answers what to do, and this program does it.
 *
 * It walks through what a pool does and checks each step: a connection made
 * on first use and reused after, a caller told to wait when every slot is
 * lent, an idle connection retired once it rested past `keep`, and a failed
 * make holding the next one back until the backoff has passed. It exits 0
 * when every step went as written, 1 otherwise.
 *
 * Build: cc core_clock.c $(pkg-config --cflags --libs tidepool-core) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tidepool/core.h>

/* A pretend connection, and a backend that can be told to refuse. */
struct conn {
    int id;
};

static int opened;
static int closed;
static bool backend_down;

static struct conn *open_conn(void)
{
    if (backend_down)
        return NULL;
    struct conn *c = malloc(sizeof *c);
    if (c)
        c->id = ++opened;
    return c;
}

static void close_conn(struct conn *c)
{
    closed++;
    free(c);
}

/* Rolls in [0, 1) from xorshift64*: the caller draws randomness, so a seed
 * replays a run exactly. */
static uint64_t seed = 0x9e3779b97f4a7c15u;

static double roll(void)
{
    seed ^= seed >> 12;
    seed ^= seed << 25;
    seed ^= seed >> 27;
    return (double)((seed * 0x2545f4914f6cdd1du) >> 11) / 9007199254740992.0;
}

/* README excerpt "core" begins */
/* One caller's turn: a connection to use, or NULL with *answer saying why
 * not (WAIT: queue the caller; LATER: try again after *span ns; SHED:
 * refuse it now). */
static struct conn *get(struct tide_pool *pool, int64_t now,
                        enum tide_answer *answer, int64_t *span)
{
    for (;;) {
        struct tide_taken t = tide_pool_take(pool, now, roll());
        *answer = t.answer;
        switch (t.answer) {
        case TIDE_READY: /* an idle one, the most recently given back */
            return t.item;
        case TIDE_STALE: /* rested too long: already off the books */
            close_conn(t.item);
            continue;     /* ask again */
        case TIDE_MAKE: { /* room reserved: open one, then say how it went */
            struct conn *c = open_conn();
            if (c && tide_pool_made(pool, c, now) == 0)
                return c;
            if (c)
                close_conn(c);
            else
                tide_pool_unmade(pool, now, roll()); /* backoff starts */
            return NULL;
        }
        case TIDE_WAIT: /* every slot in use: the core has no queue */
            return NULL;
        case TIDE_LATER: /* making is held back (t.guard: backoff, bucket) */
            *span = t.span;
            return NULL;
        case TIDE_SHED: /* t.guard says who: breaker, shedder, closed */
            return NULL;
        }
    }
}

/* The caller is done with c: kept idle for the next one (1), or not kept
 * (0: enough idle already) and closed. */
static void put(struct tide_pool *pool, struct conn *c, int64_t now)
{
    if (tide_pool_give(pool, c, now) != 1)
        close_conn(c);
}
/* README excerpt "core" ends */

/* Limits in static storage: TIDE_LIMITS calls a function, so it cannot
 * initialise them; TIDE_LIMITS_INIT is a constant initialiser, and the pool
 * applies the presets to its zero fields. */
/* README excerpt "core-static" begins */
static const struct tide_limits limits_20 = TIDE_LIMITS_INIT(.size = 20);
/* README excerpt "core-static" ends */

/* A pool behind all four guards, each optional; an empty ward behaves
 * exactly as none. */
static int guarded_pool_new(int64_t now, struct tide_pool **pool)
{
    /* README excerpt "core-ward" begins */
    struct tide_breaker_options breaker = {0};        /* adaptive throttling */
    struct tide_backoff backoff = {0};                /* 100 ms x2 to 1 s */
    struct tide_bucket_options bucket = {.rate = 50}; /* 50 makes a second */
    struct tide_shedder_options shedder = {0};        /* loop lag > 50 ms */
    struct tide_ward ward = {.breaker = &breaker,
                             .backoff = &backoff,
                             .bucket = &bucket,
                             .shedder = &shedder};
    return tide_pool_new(&limits_20, &ward, now, pool);
    /* README excerpt "core-ward" ends */
}

static int failures;

static void expect(bool ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok)
        failures++;
}

int main(void)
{
    /* README excerpt "core-setup" begins */
    int64_t now = TIDE_SEC(1000);      /* your monotonic clock, in ns */
    struct tide_backoff backoff = {0}; /* 100 ms doubling to 1 s, jittered */
    struct tide_ward ward = {.backoff = &backoff};
    struct tide_limits limits = TIDE_LIMITS(.size = 2, .keep = TIDE_SEC(5));
    struct tide_pool *pool;
    if (tide_pool_new(&limits, &ward, now, &pool) != 0)
        return 1;
    /* README excerpt "core-setup" ends */
    enum tide_answer answer;
    int64_t span = 0;
    size_t n;

    struct conn *a = get(pool, now, &answer, &span);
    expect(a && answer == TIDE_MAKE && opened == 1, "first use makes one");
    put(pool, a, now += TIDE_MS(20));
    struct conn *b = get(pool, now += TIDE_SEC(1), &answer, &span);
    expect(b == a && answer == TIDE_READY, "the next caller reuses it");

    struct conn *c = get(pool, now, &answer, &span);
    expect(c && c != b && opened == 2, "a second caller at once gets another");
    struct conn *d = get(pool, now, &answer, &span);
    expect(!d && answer == TIDE_WAIT, "a third waits: both slots are lent");
    put(pool, c, now += TIDE_MS(5));
    put(pool, b, now += TIDE_MS(5));
    expect(tide_pool_idle(pool) == 2, "both given back, both kept idle");

    now += TIDE_SEC(6); /* past keep: both rested too long */
    struct conn *e = get(pool, now, &answer, &span);
    expect(e && closed == 2 && opened == 3,
           "after 6 s idle both are retired and a new one is made");
    put(pool, e, now);

    now += TIDE_SEC(6);
    backend_down = true;
    struct conn *f = get(pool, now, &answer, &span);
    expect(!f && answer == TIDE_MAKE && closed == 3,
           "the backend is down: the make is reported unmade");
    struct conn *g = get(pool, now += TIDE_MS(1), &answer, &span);
    expect(!g && answer == TIDE_LATER && span > 0,
           "the next make is held back by the backoff");
    backend_down = false;
    struct conn *h = get(pool, now += span, &answer, &span);
    expect(h && answer == TIDE_MAKE && opened == 4,
           "once the backoff has passed, making resumes");
    put(pool, h, now);

    struct tide_pool *guarded;
    expect(guarded_pool_new(now, &guarded) == 0, "a pool behind four guards");
    struct conn *i = get(guarded, now, &answer, &span);
    expect(i && answer == TIDE_MAKE, "a healthy backend passes the guards");
    expect(tide_pool_limits(guarded).idle == 20,
           "static limits: the pool applied the presets (idle follows size)");
    put(guarded, i, now);
    void *left_guarded[1];
    n = tide_pool_close(guarded, left_guarded, 1);
    for (size_t k = 0; k < n; k++)
        close_conn(left_guarded[k]);
    tide_pool_free(guarded);

    void *left[2];
    n = tide_pool_close(pool, left, 2);
    for (size_t i = 0; i < n; i++)
        close_conn(left[i]);
    tide_pool_free(pool);
    expect(opened == closed, "every connection opened was closed");
    printf("%s: %d opened, %d closed\n", failures ? "FAILED" : "passed", opened,
           closed);
    return failures ? 1 : 0;
}
