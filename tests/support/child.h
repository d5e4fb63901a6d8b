/* A server a test runs as a child process: a fresh directory of its own
 * for its files, the process spawned with its output in a log there,
 * a wait until it says it is ready (or ends), a stop by its pid that never
 * leaves a zombie, a restart that waits for its port to come free, and the
 * directory removed at the end. The suites against real servers (redis,
 * smtp) share it, so each keeps only what its server needs said: its
 * arguments and what "ready" means for it. */
#ifndef TIDEPOOL_TEST_CHILD_H
#define TIDEPOOL_TEST_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tide_test_child {
    pid_t pid;    /* 0 when not running */
    char dir[64]; /* the fresh directory; "" before mkdir and after dispose */
};

/* Makes c's directory, $TMPDIR/tide-<name>-XXXXXX (/tmp when TMPDIR is
 * unset or too long for dir), after clearing c. False when it cannot. */
bool tide_test_child_mkdir(struct tide_test_child *c, const char *name);
/* Spawns argv (argv[0] looked up on PATH unless it holds a '/'): stdin
 * from /dev/null, stdout and stderr appended to child.log in c's
 * directory (to /dev/null when c has none), so a server that will not
 * start says why where the test left it. The log is opened in the child
 * only: the test's descriptor count does not move. False when it cannot
 * be spawned. */
bool tide_test_child_spawn(struct tide_test_child *c, const char *const *argv);
/* Waits for ready(arg) to hold, checked every 10 ms for at most ms. False
 * when the child ended first (reaped: its port was taken, or it refused an
 * option) or when time ran out (then it is stopped). */
bool tide_test_child_wait(struct tide_test_child *c, bool (*ready)(void *),
                          void *arg, int ms);
/* Sends sig and waits for the child to end; SIGKILL after ms. Reaped, so
 * no zombie is left; nothing when it is not running. */
void tide_test_child_stop(struct tide_test_child *c, int sig, int ms);
/* Sends sig without waiting; tide_test_child_exited then tells when it
 * has ended (and reaps it), so a test's loop can run meanwhile. */
void tide_test_child_signal(struct tide_test_child *c, int sig);
bool tide_test_child_exited(struct tide_test_child *c);
/* Stops the child (SIGTERM, SIGKILL after 5 s) and calls spawn(arg) until
 * it succeeds, at most 20 times 50 ms apart: a server restarted on the
 * port it listened on may find it not yet free. spawn spawns and waits. */
bool tide_test_child_restart(struct tide_test_child *c, bool (*spawn)(void *),
                             void *arg);
/* Stops the child when running (as restart does) and removes its
 * directory with everything in it. */
void tide_test_child_dispose(struct tide_test_child *c);
/* Runs this test program again (/proc/self/exe) as argv, in a process of
 * its own, for a check that needs a fresh one (a descriptor count from
 * nothing, libevent's debug mode off, ASan's leak check at exit). Waits at
 * most ms (then SIGKILL). True when it exited 0; else false, with what
 * happened ("did not end within 30000 ms", "ended by signal 6", "exited
 * 4") in why. */
bool tide_test_child_run_self(char *const *argv, int ms, char *why, size_t len);
/* Runs argv to its end (SIGKILL after ms), output to /dev/null: whether a
 * tool is there and works (exit status 0). */
bool tide_test_child_succeeds(const char *const *argv, int ms);

#endif
