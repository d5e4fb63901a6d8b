/* An out-of-time load run in the child of a load test (see load_child.h). */
#include "load_child.h"
#include "loop.h"

#include <signal.h>
#include <stdio.h>

int tide_test_load_out_of_time(const struct tide_demo_load_ops *ops, void *arg,
                               int conc,
                               bool (*open)(struct event_base *base, void *arg),
                               void (*close)(void *arg))
{
    signal(SIGPIPE, SIG_IGN);
    int fds = tide_test_open_fds();
    struct tide_demo_load l;
    /* more requests than a second allows: the run runs out of time */
    if (!tide_demo_load_init(&l, "test_load", 10, 100000000))
        return 2;
    if (!open(l.base, arg) || tide_demo_load_run(&l, ops, arg, conc, 1) != 0)
        return 2;
    bool ran_out = l.answered > l.warmup && l.answered < l.warmup + l.count;
    close(arg);
    tide_demo_load_dispose(&l);
    if (!ran_out)
        return 3;
    int left = tide_test_open_fds();
    if (left != fds) {
        fprintf(stderr, "%d descriptors open after the run, %d before\n", left,
                fds);
        return 4;
    }
    return 0;
}
