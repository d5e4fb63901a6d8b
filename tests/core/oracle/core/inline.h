/* Inlining hints shared by the core and the adapter, whose fast paths
 * depend on them at the optimisation levels distributions build with. */
#ifndef TIDEPOOL_CORE_INLINE_H
#define TIDEPOOL_CORE_INLINE_H

/* Keeps a slow path out of line, so the fast path that falls back on it
 * needs no stack frame of its own. */
#if defined(__GNUC__)
#define TIDE__NOINLINE __attribute__((noinline))
#else
#define TIDE__NOINLINE
#endif

/* Inlines a step of a fast path at every optimisation level: -O2, what
 * distributions build with, leaves out of line a static function called
 * twice, and the call then costs the fast path its registers. */
#if defined(__GNUC__)
#define TIDE__INLINE __attribute__((always_inline)) inline
#else
#define TIDE__INLINE inline
#endif

#endif
