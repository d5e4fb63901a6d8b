#include "tap.h"

static void tap_make(struct tide_evpool *pool, struct tide_make *token,
                     void *arg)
{
    struct tap *t = arg;
    t->started(pool, t->arg);
    t->inner.make(pool, token, t->inner.arg);
}

static void tap_destroy(void *resource, void *arg)
{
    struct tap *t = arg;
    t->inner.destroy(resource, t->inner.arg);
}

static void tap_cancel(struct tide_make *token, void *arg)
{
    struct tap *t = arg;
    t->inner.cancel(token, t->inner.arg);
}

static bool tap_alive(void *resource, void *arg)
{
    struct tap *t = arg;
    return t->inner.alive(resource, t->inner.arg);
}

static bool tap_reusable(void *resource, void *arg)
{
    struct tap *t = arg;
    return t->inner.reusable(resource, t->inner.arg);
}

static void tap_check(struct tide_evpool *pool, struct tide_check *token,
                      void *resource, void *arg)
{
    struct tap *t = arg;
    t->inner.check(pool, token, resource, t->inner.arg);
}

static void tap_watch(struct tide_evpool *pool, void *resource, bool idle,
                      void *arg)
{
    struct tap *t = arg;
    t->inner.watch(pool, resource, idle, t->inner.arg);
}

static void tap_stale(void *resource, void *arg)
{
    struct tap *t = arg;
    t->inner.stale(resource, t->inner.arg);
}

void tap_bind(struct tap *t, struct tide_factory *out)
{
    const struct tide_factory *in = &t->inner;
    *out = (struct tide_factory){
        .make = tap_make,
        .destroy = tap_destroy,
        .cancel = in->cancel ? tap_cancel : NULL,
        .alive = in->alive ? tap_alive : NULL,
        .reusable = in->reusable ? tap_reusable : NULL,
        .check = in->check ? tap_check : NULL,
        .watch = in->watch ? tap_watch : NULL,
        .stale = in->stale ? tap_stale : NULL,
        .arg = t,
    };
}
