#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fixture *fx;

struct fake *new_fake(void)
{
    ck_assert_int_lt(fx->n_fakes, FAKE_MAX);
    struct fake *f = &fx->fakes[fx->n_fakes];
    f->id = fx->n_fakes++;
    return f;
}

int fakes_alive(void)
{
    int n = 0;
    for (int i = 0; i < fx->n_fakes; i++)
        n += fx->fakes[i].destroyed == 0;
    return n;
}

bool answered_all(void)
{
    for (int i = 0; i < fx->n_answers; i++)
        if (fx->answers[i].calls == 0)
            return false;
    return true;
}

struct tide_evpool_stats stats(void)
{
    struct tide_evpool_stats s;
    tide_evpool_stats(fx->pool, &s);
    return s;
}

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void probe(const char *hook, struct fake *f)
{
    if (fx->probe)
        fx->probe(hook, f);
}

/* ---- the scripted factory ---- */

struct later {
    struct event *ev;
    struct tide_make *token;
    bool ok;
};

static void on_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct later *l = arg;
    fx->laters--;
    if (l->ok)
        tide_evpool_made(l->token, new_fake());
    else
        tide_evpool_unmade(l->token, fx->fail_code, "scripted failure");
    event_free(l->ev);
    free(l);
}

static void answer_later(struct tide_make *token, bool ok)
{
    struct later *l = calloc(1, sizeof *l);
    l->token = token;
    l->ok = ok;
    l->ev = evtimer_new(fx->base, on_later, l);
    fx->laters++;
    struct timeval tv = {.tv_sec = (time_t)(fx->delay / 1000000000),
                         .tv_usec =
                             (suseconds_t)(fx->delay % 1000000000 / 1000)};
    evtimer_add(l->ev, &tv);
}

static void script_make(struct tide_evpool *pool, struct tide_make *token,
                        void *arg)
{
    (void)pool;
    (void)arg;
    probe("make", NULL);
    enum script_mode mode =
        fx->makes < fx->n_plan ? fx->plan[fx->makes] : fx->mode;
    fx->makes++;
    switch (mode) {
    case MAKE_NOW:
        tide_evpool_made(token, new_fake());
        break;
    case MAKE_LATER:
        answer_later(token, true);
        break;
    case MAKE_FAIL:
        tide_evpool_unmade(token, fx->fail_code, "scripted failure");
        break;
    case MAKE_FAIL_LATER:
        answer_later(token, false);
        break;
    case MAKE_NEVER:
        fx->held[fx->n_held++] = token;
        break;
    }
}

static void script_destroy(void *resource, void *arg)
{
    (void)arg;
    struct fake *f = resource;
    probe("destroy", f);
    ck_assert_msg(!f->watched, "fake %d destroyed while watched", f->id);
    f->destroyed++;
}

static void script_cancel(struct tide_make *token, void *arg)
{
    (void)token;
    (void)arg;
    probe("cancel", NULL);
    fx->cancels++;
}

static bool script_alive(void *resource, void *arg)
{
    (void)arg;
    probe("alive", resource);
    return !((struct fake *)resource)->dead;
}

static bool script_reusable(void *resource, void *arg)
{
    (void)arg;
    probe("reusable", resource);
    return !((struct fake *)resource)->broken;
}

static void script_check(struct tide_evpool *pool, struct tide_check *token,
                         void *resource, void *arg)
{
    (void)pool;
    (void)arg;
    probe("check", resource);
    fx->checks++;
    if (fx->hold_checks) {
        fx->held_checks[fx->n_held_checks] = token;
        fx->checked[fx->n_held_checks++] = resource;
        return;
    }
    tide_evpool_checked(token, !((struct fake *)resource)->dead);
}

static void script_reset(struct tide_evpool *pool, struct tide_reset *token,
                         void *resource, void *arg)
{
    (void)pool;
    (void)arg;
    probe("reset", resource);
    fx->resets_run++;
    tide_evpool_reset_done(token, !((struct fake *)resource)->dead);
}

static void script_stale(void *resource, void *arg)
{
    (void)arg;
    struct fake *f = resource;
    ck_assert_int_eq(f->destroyed, 0); /* told before it is destroyed */
    fx->stales++;
    probe("stale", f);
}

static void script_watch(struct tide_evpool *pool, void *resource, bool idle,
                         void *arg)
{
    (void)arg;
    struct fake *f = resource;
    ck_assert_msg(f->watched != idle, "fake %d watch %d twice", f->id, idle);
    f->watched = idle;
    if (idle)
        fx->watch_on++;
    else
        fx->watch_off++;
    fx->watch_idle = idle;
    probe("watch", f);
    /* the watcher's side: the peer had closed by the time it went idle */
    if (idle && fx->lose_when_idle)
        ck_assert_int_eq(tide_evpool_lost(pool, f), 0);
    if (!idle && fx->lose_when_unwatched) {
        ck_assert_int_eq(tide_evpool_lost(pool, f), TIDE_ENOTIDLE);
        fx->lost_refused++;
    }
}

struct fake *answer_held(bool ok)
{
    ck_assert_int_gt(fx->n_held, 0);
    struct tide_make *token = fx->held[0];
    memmove(&fx->held[0], &fx->held[1],
            (size_t)(--fx->n_held) * sizeof fx->held[0]);
    if (!ok) {
        tide_evpool_unmade(token, fx->fail_code, "scripted failure");
        return NULL;
    }
    struct fake *f = new_fake();
    tide_evpool_made(token, f);
    return f;
}

struct fake *answer_check(bool ok)
{
    ck_assert_int_gt(fx->n_held_checks, 0);
    struct tide_check *token = fx->held_checks[0];
    struct fake *f = fx->checked[0];
    fx->n_held_checks--;
    memmove(&fx->held_checks[0], &fx->held_checks[1],
            (size_t)fx->n_held_checks * sizeof fx->held_checks[0]);
    memmove(&fx->checked[0], &fx->checked[1],
            (size_t)fx->n_held_checks * sizeof fx->checked[0]);
    tide_evpool_checked(token, ok);
    return f;
}

/* ---- the fixture ---- */

void fixture_setup(void)
{
    fx = calloc(1, sizeof *fx);
    struct event_config *cfg = event_config_new();
    /* precise timers: libevent's coarse clock fires timers early */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER |
                                   EVENT_BASE_FLAG_IGNORE_ENV);
    fx->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    ck_assert_ptr_nonnull(fx->base);
    fx->fail_code = -1000;
    fx->delay = 20 * 1000000;
    fx->factory = (struct tide_factory){
        .make = script_make,
        .destroy = script_destroy,
        .cancel = script_cancel,
        .alive = script_alive,
        .reusable = script_reusable,
        .check = script_check,
        .watch = script_watch,
        .stale = script_stale,
    };
}

const struct tide_backoff fixture_no_hold = {
    .base = 1, .cap = 1, .jitter = TIDE_JITTER_RIGID};

void fixture_pool(const struct tide_evpool_options *o)
{
    struct tide_evpool_options opts = o ? *o : (struct tide_evpool_options){0};
    if (opts.seed == 0)
        opts.seed = 42;
    if (fx->resets)
        fx->factory.reset = script_reset;
    ck_assert_int_eq(tide_evpool_new(fx->base, &fx->factory, &opts, &fx->pool),
                     0);
}

void fixture_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    (void)arg;
    fx->closed = true;
}

static bool is_closed(void)
{
    return fx->closed;
}

static bool no_laters(void)
{
    return fx->laters == 0;
}

/* Answers every token the test left open: makes fail, checks pass. After a
 * free these reach an orphaned token, which must still be safe. */
static void answer_everything_held(void)
{
    while (fx->n_held > 0)
        answer_held(false);
    while (fx->n_held_checks > 0)
        answer_check(true);
}

void fixture_teardown(void)
{
    if (fx->pool) {
        /* release every resource still lent out to the test */
        for (int i = 0; i < fx->n_answers; i++) {
            struct answer *a = &fx->answers[i];
            if (a->calls == 1 && a->status == 0 && a->resource) {
                (void)tide_evpool_release(fx->pool, a->resource);
                a->resource = NULL;
            }
        }
        int rc = tide_evpool_close(fx->pool, fixture_closed, NULL);
        ck_assert(rc == 0 || rc == TIDE_ECLOSED);
        answer_everything_held();
        ck_assert_msg(run_until(is_closed, 5000), "close never finished");
        /* a finished close has failed every waiter: none is left unanswered */
        for (int i = 0; fx->answer_once && i < fx->n_answers; i++)
            ck_assert_msg(fx->answers[i].calls == 1,
                          "acquire %d answered %d times", i,
                          fx->answers[i].calls);
        tide_evpool_free(fx->pool);
        fx->pool = NULL;
    } else {
        /* freed by the test: late answers reach orphaned tokens */
        answer_everything_held();
    }
    /* the factory's own timers answer orphans or closed pools */
    ck_assert_msg(run_until(no_laters, 5000), "factory timers never fired");
    /* nothing may be left in the loop: the base must run dry */
    ck_assert_int_eq(event_base_loop(fx->base, EVLOOP_NONBLOCK | EVLOOP_ONCE),
                     1);
    for (int i = 0; i < fx->n_fakes; i++)
        ck_assert_msg(fx->fakes[i].destroyed == 1, "fake %d destroyed %d times",
                      i, fx->fakes[i].destroyed);
    for (int i = 0; i < fx->n_answers; i++)
        ck_assert_msg(fx->answers[i].calls <= 1, "acquire %d answered %d times",
                      i, fx->answers[i].calls);
    event_base_free(fx->base);
    free(fx);
    fx = NULL;
}

static void on_answer(struct tide_evpool *pool, int status, void *resource,
                      const struct tide_why *why, void *arg)
{
    struct answer *a = arg;
    a->calls++;
    a->status = status;
    a->resource = resource;
    a->order = fx->answered++;
    a->make_error = why->make_error;
    a->guard = why->guard;
    a->retry_after = why->retry_after;
    ck_assert_ptr_nonnull(why->message);
    snprintf(a->message, sizeof a->message, "%s", why->message);
    if (status == 0 && fx->release_in_callback) {
        ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
        a->resource = NULL;
    }
    if (fx->free_in_callback) {
        tide_evpool_free(pool);
        fx->pool = NULL;
    }
    if (fx->answer_probe)
        fx->answer_probe(a);
}

int acquire_rc(int64_t timeout, struct tide_acquire **handle,
               struct answer **slot)
{
    ck_assert_int_lt(fx->n_answers, ANSWERS_MAX);
    struct answer *a = &fx->answers[fx->n_answers];
    memset(a, 0, sizeof *a);
    a->status = 1; /* not answered */
    int rc = tide_evpool_acquire(fx->pool, timeout, on_answer, a, handle);
    if (rc == 0)
        fx->n_answers++; /* a refused acquire has no answer to record */
    if (slot)
        *slot = rc == 0 ? a : NULL;
    return rc;
}

struct answer *acquire_alone(int64_t timeout)
{
    ck_assert_int_lt(fx->n_answers, ANSWERS_MAX);
    struct answer *a = &fx->answers[fx->n_answers];
    memset(a, 0, sizeof *a);
    a->status = 1; /* not answered */
    ck_assert_int_eq(
        tide_evpool_acquire_alone(fx->pool, timeout, on_answer, a, NULL), 0);
    fx->n_answers++;
    return a;
}

struct answer *acquire(int64_t timeout, struct tide_acquire **handle)
{
    struct answer *a = NULL;
    ck_assert_int_eq(acquire_rc(timeout, handle, &a), 0);
    return a;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

void run_ms(int ms)
{
    struct event *stop = evtimer_new(fx->base, on_stop, fx->base);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(stop, &tv);
    event_base_dispatch(fx->base);
    event_free(stop);
}

bool run_until(bool (*pred)(void), int ms)
{
    for (int waited = 0; waited < ms && !pred(); waited++)
        run_ms(1);
    return pred();
}

static const struct answer *awaited;

static bool is_answered(void)
{
    return awaited->calls > 0;
}

bool run_until_answered(const struct answer *a, int ms)
{
    awaited = a;
    return run_until(is_answered, ms);
}

struct answer *acquired(void)
{
    struct answer *a = acquire(0, NULL);
    ck_assert_msg(run_until_answered(a, 2000), "acquire never answered");
    ck_assert_int_eq(a->status, 0);
    ck_assert_ptr_nonnull(a->resource);
    return a;
}

struct fake *release(struct answer *a)
{
    struct fake *f = a->resource;
    ck_assert_ptr_nonnull(f);
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_release(fx->pool, f), 0);
    return f;
}

void fixture_add(TCase *tc)
{
    static bool debug_mode;
    if (!debug_mode) {
        event_enable_debug_mode();
        debug_mode = true;
    }
    tcase_add_checked_fixture(tc, fixture_setup, fixture_teardown);
    tcase_set_timeout(tc, 30);
}
