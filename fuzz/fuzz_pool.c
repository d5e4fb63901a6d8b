/* libFuzzer target: the bytes choose the limits (shared loans among them:
 * streams from 1 to 9, pack or spread), the ward and a sequence of pool
 * operations; the same driver as the model-based test checks every answer
 * against the reference model and the invariants after each step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_model.h"

void drive_failed(const char *what, const char *file, int line)
{
    fprintf(stderr, "%s:%d: model check failed: %s\n", file, line, what);
    abort();
}

struct bytes {
    const uint8_t *at;
    size_t left;
};

static uint32_t next_u32(struct bytes *b)
{
    uint32_t v = 0;
    size_t n = b->left < sizeof v ? b->left : sizeof v;
    memcpy(&v, b->at, n);
    b->at += n;
    b->left -= n;
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct drive d;
    struct bytes b = {data, size};
    uint32_t shape = next_u32(&b);
    struct tide_limits l = {
        .size = 1 + shape % 16,
        .idle = 1 + (shape >> 4) % 16,
        .keep = (shape >> 8) % 8 == 0 ? TIDE_FOREVER
                                      : TIDE_MS(1 + (shape >> 11) % 100),
        .life = (shape >> 18) % 4 == 0 ? TIDE_FOREVER
                                       : TIDE_MS(1 + (shape >> 20) % 500),
    };
    struct tide_breaker_options breaker = {
        .policy =
            (shape >> 29) % 2 ? TIDE_BREAKER_STRIKES : TIDE_BREAKER_ADAPTIVE,
        .window = TIDE_SEC(1),
        .strikes = 2,
        .cooldown = TIDE_MS(20)};
    struct tide_bucket_options bucket = {.rate = 1000, .burst = 3};
    struct tide_backoff backoff = {.base = TIDE_MS(1), .cap = TIDE_MS(10)};
    struct tide_shedder_options shedder = {.loan_target = TIDE_MS(30)};
    uint32_t guards = next_u32(&b);
    struct tide_ward w = {
        .breaker = guards & 1 ? &breaker : NULL,
        .bucket = guards & 2 ? &bucket : NULL,
        .backoff = guards & 4 ? &backoff : NULL,
        .shedder = guards & 8 ? &shedder : NULL,
    };
    if (!(guards & 15))
        l.spread = (double)(guards >> 4 & 0xff) / 256.0;
    /* half the inputs one loan a resource, half shared */
    uint32_t streams = guards >> 12 & 15;
    l.streams = streams < 8 ? 1 : (int64_t)streams - 6;
    l.sharing = guards >> 16 & 1 ? TIDE_SHARING_SPREAD : TIDE_SHARING_PACK;
    if (drive_init(&d, &l, &w) != 0)
        abort();
    while (b.left > 0) {
        uint32_t op = next_u32(&b);
        uint32_t arg = next_u32(&b);
        double roll = (double)(op >> 8 & 0xffff) / 65536.0;
        int64_t dt = (int64_t)(arg >> 16) * TIDE_US(10);
        drive_step(&d, op, arg, roll, dt);
    }
    drive_finish(&d);
    return 0;
}
