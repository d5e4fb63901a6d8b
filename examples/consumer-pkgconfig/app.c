/* A program built on tidepool as its build found it (a subproject, or the
 * installed library through pkg-config): every layer through
 * dependency('tidepool'). It checks that the header it compiled against and
 * the library it runs with are one version, and that a pool of a TCP
 * factory can be made on a loop and freed. */
#include <stdio.h>
#include <string.h>

#include <event2/event.h>
#include <tidepool/tls.h>

int main(void)
{
    if (strcmp(tide_version(), TIDE_VERSION_STRING) != 0) {
        fprintf(stderr, "compiled against %s, running %s\n",
                TIDE_VERSION_STRING, tide_version());
        return 1;
    }
    struct event_base *base = event_base_new();
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = 9};
    struct tide_tcp_factory *f;
    if (!base || tide_tcp_factory_new(base, &o, &f) != 0)
        return 1;
    struct tide_factory table;
    tide_tcp_factory_bind(f, &table);
    struct tide_evpool *pool;
    if (tide_evpool_new(base, &table, NULL, &pool) != 0)
        return 1;
    tide_evpool_free(pool);
    tide_tcp_factory_free(f);
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
    printf("tidepool %s: a pool made on a loop and freed\n", tide_version());
    return 0;
}
