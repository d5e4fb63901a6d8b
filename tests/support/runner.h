/* The one main() every Check binary shares: ignores SIGPIPE (a write to a
 * closed socket must be an error, not the end of the test), runs the suite
 * with the CK_* environment honoured and prints Check's summary. */
#ifndef TIDEPOOL_TEST_RUNNER_H
#define TIDEPOOL_TEST_RUNNER_H

#include <check.h>

/* Runs s (taking ownership) and returns the process exit code. */
int tide_test_run(Suite *s);

/* A test binary's main for a suite built by `make_suite`. */
#define TIDE_TEST_MAIN(make_suite)                                             \
    int main(void)                                                             \
    {                                                                          \
        return tide_test_run(make_suite());                                    \
    }

#endif
