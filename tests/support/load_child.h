/* The child side of the Redis and SMTP suites' out-of-time load tests: one
 * run of demos/load.c in this process that runs out of time with requests
 * in flight, then the client (or sender) freed and the run disposed of,
 * as the load programs do. Run in a fresh process (tide_test_child_run_self)
 * so that anything left behind shows: an open descriptor here, a leak
 * report under AddressSanitizer at exit. And the run of a load program
 * itself, as a user runs it: its exit and its words. */
#ifndef TIDEPOOL_TEST_LOAD_CHILD_H
#define TIDEPOOL_TEST_LOAD_CHILD_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "load.h"

/* open(base, arg) makes the client or sender on base (false: it could
 * not); close(arg) frees it, its last requests still in flight. ops and
 * arg go to the run, with conc requests at once. Returns the exit code for
 * the child: 0 when the run ran out of time and no descriptor is left; 2
 * when it could not start or run, 3 when it did not run out of time, 4
 * when descriptors are left (said on stderr). */
int tide_test_load_out_of_time(const struct tide_demo_load_ops *ops, void *arg,
                               int conc,
                               bool (*open)(struct event_base *base, void *arg),
                               void (*close)(void *arg));

/* How a load program run as a user runs it ended, and what it said. */
struct tide_test_prog_run {
    int status;     /* its exit code; 128 + n for signal n; -1 not ended */
    char out[4096]; /* its stdout, NUL-terminated (cut beyond) */
    char err[8192]; /* its stderr, NUL-terminated (cut beyond) */
    int err_lines;  /* lines on stderr, all of them (not only those kept) */
    int64_t ms;     /* how long it ran */
};

/* Runs argv (argv[0] a path) to its end, at most ms (then SIGKILL and
 * status -1), stdin from /dev/null, with env (NAME=value words,
 * NULL-terminated; NULL for none) added to this process's environment, so
 * that under AddressSanitizer the program's own leak check at exit runs
 * too (a leak is a nonzero exit). False when it cannot be run at all. */
bool tide_test_prog_run(const char *const *argv, const char *const *env, int ms,
                        struct tide_test_prog_run *r);

/* Runs prog with words (NULL-terminated, at most 30) and env (as above),
 * at most ms; that it ran is asserted (Check). */
struct tide_test_prog_run tide_test_prog(const char *prog,
                                         const char *const *env, int ms,
                                         const char *const *words);
/* Asserts that r exited with code and that its stderr holds each of
 * words (NULL-terminated). */
void tide_test_prog_expect(const struct tide_test_prog_run *r, int code,
                           const char *const *words);
/* Asserts that r ended by itself within ms: a load program that gave up
 * on a run that cannot succeed, not one that waited out its --seconds
 * (no "out of time" on its stderr). */
void tide_test_prog_expect_soon(const struct tide_test_prog_run *r, int ms);
/* How often word is in text. */
int tide_test_count(const char *text, const char *word);

#define TIDE_TEST_PROG(prog, env, ms, ...)                                     \
    tide_test_prog(prog, env, ms, (const char *const[]){__VA_ARGS__, NULL})
#define TIDE_TEST_EXPECT(r, code, ...)                                         \
    tide_test_prog_expect(&(r), code, (const char *const[]){__VA_ARGS__, NULL})

#endif
