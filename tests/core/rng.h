/* A small, seedable PRNG for the randomised core tests (splitmix64), so a
 * failing run is reproduced from its seed. */
#ifndef TIDEPOOL_TEST_RNG_H
#define TIDEPOOL_TEST_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static inline double rng_roll(uint64_t *state)
{
    return (double)(rng_next(state) >> 11) * 0x1.0p-53;
}

static inline uint32_t rng_below(uint64_t *state, uint32_t n)
{
    return (uint32_t)(rng_next(state) % n);
}

#endif
