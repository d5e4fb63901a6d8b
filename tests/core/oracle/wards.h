/* The guards a differential run puts in front of both pools, written once
 * for both sides: included by oracle.c against the frozen core.h and by the
 * test against the live one, whose option structs have the same fields. */
#ifndef TIDEPOOL_ORACLE_WARDS_H
#define TIDEPOOL_ORACLE_WARDS_H

/* Which guards: any set of these. */
enum oracle_guard {
    ORACLE_BREAKER = 1, /* adaptive throttling over a short window */
    ORACLE_STRIKES = 2, /* a strikes breaker instead (with ORACLE_BREAKER) */
    ORACLE_BUCKET = 4,
    ORACLE_BACKOFF = 8,
    ORACLE_SHEDDER = 16,
};

#define ORACLE_GUARDS_ALL 31

/* Storage for the options a ward points to. */
struct oracle_ward_options {
    struct tide_breaker_options breaker;
    struct tide_bucket_options bucket;
    struct tide_backoff backoff;
    struct tide_shedder_options shedder;
};

/* Small numbers, so every guard answers often in a short run. */
static inline struct tide_ward oracle_ward(unsigned guards,
                                           struct oracle_ward_options *o)
{
    o->breaker = (struct tide_breaker_options){.window = TIDE_SEC(1)};
    if (guards & ORACLE_STRIKES)
        o->breaker = (struct tide_breaker_options){
            .policy = TIDE_BREAKER_STRIKES,
            .strikes = 2,
            .cooldown = TIDE_MS(20),
            .probes = 1,
        };
    o->bucket = (struct tide_bucket_options){.rate = 2000, .burst = 3};
    o->backoff = (struct tide_backoff){.base = TIDE_MS(1), .cap = TIDE_MS(10)};
    o->shedder = (struct tide_shedder_options){.loan_target = TIDE_MS(30)};
    return (struct tide_ward){
        .breaker = guards & ORACLE_BREAKER ? &o->breaker : NULL,
        .bucket = guards & ORACLE_BUCKET ? &o->bucket : NULL,
        .backoff = guards & ORACLE_BACKOFF ? &o->backoff : NULL,
        .shedder = guards & ORACLE_SHEDDER ? &o->shedder : NULL,
    };
}

#endif
