/* The evloop tests' fixture: a fresh event_base per test, a scripted factory
 * (answers at once, after a delay, fails, or never answers) whose resources
 * are recorded so the teardown can assert that every resource made was
 * destroyed exactly once, every acquire got at most one answer, and the
 * loop runs dry once the pool is closed (or freed). */
#ifndef TIDEPOOL_TEST_EVLOOP_FIXTURE_H
#define TIDEPOOL_TEST_EVLOOP_FIXTURE_H

#include <event2/event.h>
#include <stdbool.h>
#include <tidepool/evloop.h>

#include "runner.h"

enum script_mode {
    MAKE_NOW = 0,    /* answer inside make() */
    MAKE_LATER,      /* answer after `delay` from a timer */
    MAKE_FAIL,       /* fail inside make() */
    MAKE_FAIL_LATER, /* fail after `delay` */
    MAKE_NEVER,      /* hold the token until the test answers it */
};

#define FAKE_MAX    256
#define ANSWERS_MAX 256

struct fake {
    int id;
    int destroyed; /* times destroy ran: must end at exactly 1 */
    bool dead;     /* alive() and check() answer false */
    bool broken;   /* reusable() answers false */
    bool watched;  /* the pool said it is idle */
};

struct answer {
    int calls;
    int status;
    struct fake *resource;
    int order; /* when it was answered, among all answers */
    int make_error;
    enum tide_guard guard;
    int64_t retry_after;
    char message[128];
};

struct fixture {
    struct event_base *base;
    struct tide_evpool *pool;
    struct tide_factory factory;
    /* the script */
    enum script_mode mode;
    int64_t delay;
    int fail_code;
    /* make k (counting from 0) follows plan[k] when k < n_plan, else mode */
    enum script_mode plan[FAKE_MAX];
    int n_plan;
    bool hold_checks;         /* keep check tokens for answer_check */
    bool resets;              /* the factory resets each release, at once:
                                 ok unless the fake is dead */
    bool lose_when_idle;      /* the watch hook reports a fake lost as soon as
                                 it goes idle (a peer that closed at once) */
    bool lose_when_unwatched; /* ... and as the pool stops watching it: the
                                 pool must refuse (TIDE_ENOTIDLE), since
                                 it is already on its way out */
    int lost_refused;         /* such reports refused so far */
    /* called first thing from every factory hook ("make", "destroy",
     * "cancel", "alive", "reusable", "check", "watch", "stale"); from watch only
     * after the fake's `watched` is updated, so a probe whose call ends
     * the watch (a close) finds the fake's record consistent */
    void (*probe)(const char *hook, struct fake *f);
    bool watch_idle; /* during a "watch" probe: its idle argument */
    /* called last from every recorded acquire's callback */
    void (*answer_probe)(struct answer *a);
    /* the teardown also asserts that every acquire was answered exactly
     * once (for tests that cancel only with notify, and do not free) */
    bool answer_once;
    /* what happened */
    struct fake fakes[FAKE_MAX];
    int n_fakes;
    int makes;      /* make() calls */
    int cancels;    /* cancel() calls */
    int checks;     /* check() calls */
    int resets_run; /* reset() calls */
    int stales; /* stale() calls */
    int watch_on;
    int watch_off;
    struct tide_make *held[FAKE_MAX]; /* MAKE_NEVER tokens, in order */
    int n_held;
    struct tide_check *held_checks[FAKE_MAX]; /* with hold_checks, in order */
    struct fake *checked[FAKE_MAX];
    int n_held_checks;
    int laters; /* MAKE_LATER / MAKE_FAIL_LATER answers still to come */
    struct answer answers[ANSWERS_MAX];
    int n_answers;
    int answered; /* answers delivered so far (for order) */
    bool closed;
    int leaks;
    /* an acquire callback may ask for the pool to be released or freed */
    bool release_in_callback;
    bool free_in_callback;
};

extern struct fixture *fx;

/* A ward backoff that holds makes 1 ns after a failure: for a test about
 * something else, where a failed make is followed at once by one that
 * must start (the pool holds makes for its preset backoff otherwise). */
extern const struct tide_backoff fixture_no_hold;
#define NO_HOLD (&fixture_no_hold)

/* Creates fx with a fresh base and a pool built from o (NULL: presets). */
void fixture_pool(const struct tide_evpool_options *o);
/* Checked fixture: setup makes the base; teardown closes the pool, runs the
 * loop until closed, and asserts the exactly-once rules. */
void fixture_setup(void);
void fixture_teardown(void);

/* Starts an acquire whose answer is recorded; returns its answer slot. */
struct answer *acquire(int64_t timeout, struct tide_acquire **handle);
/* The same where the acquire may be refused: returns its code, and on 0
 * sets *slot (may be NULL) to the answer slot. */
int acquire_rc(int64_t timeout, struct tide_acquire **handle,
               struct answer **slot);
/* acquire for an exclusive loan (tide_evpool_acquire_alone). */
struct answer *acquire_alone(int64_t timeout);
/* Runs the loop for ms milliseconds (fewer if it runs out of events). */
void run_ms(int ms);
/* Runs the loop until pred() or ms milliseconds passed; returns pred(). */
bool run_until(bool (*pred)(void), int ms);
/* Runs the loop until a is answered or ms milliseconds passed. */
bool run_until_answered(const struct answer *a, int ms);
/* Acquires one and runs the loop until it is answered with a resource. */
struct answer *acquired(void);
/* Releases a's resource (asserting 0) and forgets it, so the teardown does
 * not release it again; returns the fake. */
struct fake *release(struct answer *a);
/* Answers the oldest held MAKE_NEVER token: made (true) or failed. */
struct fake *answer_held(bool ok);
/* Answers the oldest held check (hold_checks); returns its fake. */
struct fake *answer_check(bool ok);
struct fake *new_fake(void);
/* How many fakes are not yet destroyed. */
int fakes_alive(void);
/* Whether every acquire started so far has been answered. */
bool answered_all(void);
/* The pool's stats now. */
struct tide_evpool_stats stats(void);
/* The monotonic clock the pool reads, for calls that take `now`. */
int64_t now_ns(void);

/* The close callback the teardown waits for: pass it to tide_evpool_close
 * when a test closes the pool itself. */
void fixture_closed(struct tide_evpool *pool, void *arg);

void fixture_add(TCase *tc);

#endif
