/* A loopback echo server for the simulator: it answers each line after a
 * fixed service time, and can go down (connections refused, open ones
 * closed) and come back on the same port, so the pool meets a real outage. */
#ifndef TIDEPOOL_SIM_ECHO_SERVER_H
#define TIDEPOOL_SIM_ECHO_SERVER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

struct echo_server;

/* Listens on 127.0.0.1 at an ephemeral port. NULL on failure (errno set). */
struct echo_server *echo_server_new(struct event_base *base, int service_ms);
uint16_t echo_server_port(const struct echo_server *s);
/* Stops listening and closes every open connection. */
void echo_server_down(struct echo_server *s);
/* Listens again on the same port; false on failure. */
bool echo_server_up(struct echo_server *s);
void echo_server_free(struct echo_server *s);

#endif
