/* The core's pool as it was before shared loans, frozen: the oracle a
 * differential test holds the live pool to with streams = 1 (see README).
 * Its own names and plain types, so a test includes it beside the live
 * <tidepool/core.h>; each call is the frozen tide_pool_* of the same name,
 * answers as they were. */
#ifndef TIDEPOOL_ORACLE_H
#define TIDEPOOL_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct oracle_pool;

/* The limits the frozen pool knew. */
struct oracle_limits {
    int64_t size;
    int64_t idle;
    int64_t keep;
    int64_t life;
    double spread;
};

/* struct tide_taken, field for field (answer and guard as their numbers). */
struct oracle_taken {
    int answer;
    int guard;
    void *item;   /* READY, STALE */
    int64_t span; /* LATER */
};

/* struct tide_pool_guards, field for field. */
struct oracle_guards {
    double bucket_tokens;
    int64_t backoff_hold;
    int backoff_failures;
    bool backoff_probing;
    double shedder_ceiling;
};

/* guards: a set of enum oracle_guard (wards.h). */
int oracle_pool_new(const struct oracle_limits *limits, unsigned guards,
                    int64_t now, struct oracle_pool **out);
void oracle_pool_free(struct oracle_pool *p);
struct oracle_taken oracle_pool_take(struct oracle_pool *p, int64_t now,
                                     double roll);
struct oracle_taken oracle_pool_take_idle(struct oracle_pool *p, int64_t now);
struct oracle_taken oracle_pool_grow(struct oracle_pool *p, int64_t now,
                                     double roll);
int oracle_pool_made(struct oracle_pool *p, void *item, int64_t now);
int oracle_pool_made_untried(struct oracle_pool *p, void *item, int64_t now);
void oracle_pool_tried(struct oracle_pool *p, int64_t now, double roll,
                       bool ok);
void oracle_pool_report(struct oracle_pool *p, int64_t now, bool ok);
int oracle_pool_unmade(struct oracle_pool *p, int64_t now, double roll);
int oracle_pool_give(struct oracle_pool *p, void *item, int64_t now);
uint32_t oracle_pool_slot(const struct oracle_pool *p, const void *item);
int oracle_pool_give_at(struct oracle_pool *p, uint32_t slot, void *item,
                        int64_t now);
int oracle_pool_drop(struct oracle_pool *p, void *item, int64_t now);
int oracle_pool_hold(struct oracle_pool *p, void *item);
size_t oracle_pool_evict(struct oracle_pool *p, int64_t now, void **out,
                         size_t n);
size_t oracle_pool_close(struct oracle_pool *p, void **out, size_t n);
void oracle_pool_overload(struct oracle_pool *p, int64_t now, int64_t lag);
int64_t oracle_pool_live(const struct oracle_pool *p);
int64_t oracle_pool_idle(const struct oracle_pool *p);
int64_t oracle_pool_busy(const struct oracle_pool *p);
bool oracle_pool_must_wait(const struct oracle_pool *p);
double oracle_pool_refusal(struct oracle_pool *p, int64_t now);
void oracle_pool_guards(struct oracle_pool *p, int64_t now,
                        struct oracle_guards *out);
/* The breaker's state as its number; -1 without a breaker. */
int oracle_pool_breaker_state(struct oracle_pool *p);

#endif
