/* The simulator's connection factory: plain TCP to the echo server on
 * 127.0.0.1, resources are connected bufferevents, watched while idle. */
#ifndef TIDEPOOL_SIM_ECHO_CLIENT_H
#define TIDEPOOL_SIM_ECHO_CLIENT_H

#include <event2/event.h>
#include <stdint.h>
#include <tidepool/evloop.h>

struct echo_client;

struct echo_client *echo_client_new(struct event_base *base, uint16_t port);
/* Fills a factory table whose arg is the client (borrowed: it must outlive
 * the pool). */
void echo_client_factory(struct echo_client *c, struct tide_factory *out);
void echo_client_free(struct echo_client *c);

#endif
