/* What the suites on a real event loop share: counting the process's open
 * descriptors (a test ends with as many as it began with), the monotonic
 * clock in ms, and running a loop until a condition holds or time is up. */
#ifndef TIDEPOOL_TEST_LOOP_H
#define TIDEPOOL_TEST_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;

/* The descriptors open in this process now; -1 when /proc cannot say. */
int tide_test_open_fds(void);
int64_t tide_test_now_ms(void);
void tide_test_sleep_ms(int ms);
/* A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0,
 * closed again), for a server that cannot pick one itself; 0 on failure.
 * One taken in between makes that server's start fail: retry it. */
int tide_test_free_port(void);
/* Runs base until pred(arg) holds (checked between passes; NULL: never)
 * or ms have passed; returns pred's last answer. A 2 ms tick keeps one
 * pass from blocking past the deadline. */
bool tide_test_run_until(struct event_base *base, bool (*pred)(void *),
                         void *arg, int ms);

#endif
