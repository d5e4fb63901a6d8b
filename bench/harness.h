/* What every tidepool benchmark measures with: the clocks, the median of a
 * few repetitions, the caller's rolls, and the heap's size. Header-only:
 * each benchmark is a program of its own. */
#ifndef TIDEPOOL_BENCH_HARNESS_H
#define TIDEPOOL_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* mallinfo2 is glibc's (2.33 on); elsewhere the bytes are not measured.
 * mallopt is glibc's too. */
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__GLIBC__) &&                                                      \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define HAVE_MALLINFO2 1
#else
#define HAVE_MALLINFO2 0
#endif

/* The most repetitions a figure is the median of. */
#define BENCH_REPS_MAX 16

static inline int64_t bench_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* The clock the adapter reads, and the benches time with. */
static inline int64_t bench_mono_ns(void)
{
    return bench_clock(CLOCK_MONOTONIC);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median of n <= BENCH_REPS_MAX repetitions (of an even count, the
 * mean of the middle two); v is left as it was. */
static inline double bench_median(const double *v, size_t n)
{
    double s[BENCH_REPS_MAX];
    memcpy(s, v, n * sizeof s[0]);
    qsort(s, n, sizeof s[0], bench_cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The p-th percentile (0-100) of the n latencies lat whose phase (phase[i],
 * a square wave's spell: even a burst, odd a quiet one) is `from` or later
 * and has the parity given (0 or 1; -1: any); 0 when none, or out of
 * memory. *count (when not NULL): how many there were. */
static inline int64_t bench_pct_phases(const int64_t *lat, const int *phase,
                                       size_t n, int from, int parity, int p,
                                       size_t *count)
{
    int64_t *v = malloc(sizeof *v * (n + 1));
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++)
        if (phase[i] >= from && (parity < 0 || phase[i] % 2 == parity))
            v[k++] = lat[i];
    int64_t out = 0;
    if (k) {
        qsort(v, k, sizeof *v, bench_cmp_i64);
        out = v[k * (size_t)p / 100];
    }
    free(v);
    if (count)
        *count = k;
    return out;
}

/* xorshift64: the rolls a caller of the core draws, cheap enough not to be
 * what is measured. */
static inline double bench_roll(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return (double)(x >> 11) * 0x1p-53;
}

/* Bytes the heap holds now, mmapped chunks included: what a structure
 * really costs, chunk headers and rounding counted. 0 without mallinfo2. */
static inline size_t bench_heap_in_use(void)
{
#if HAVE_MALLINFO2
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

#endif
