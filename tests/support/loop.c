/* The loop helpers the suites on a real event loop share (see loop.h). */
#include "loop.h"

#include <dirent.h>
#include <time.h>

#include <event2/event.h>

int tide_test_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

int64_t tide_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
}

bool tide_test_run_until(struct event_base *base, bool (*pred)(void *),
                         void *arg, int ms)
{
    int64_t end = tide_test_now_ms() + ms;
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 2000};
    event_add(tick, &tv);
    bool ok;
    while (!(ok = pred && pred(arg)) && tide_test_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(tick);
    return ok;
}
