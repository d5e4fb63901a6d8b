/* A fault-injecting TCP proxy for the chaos tests, on libevent, between the
 * pool's connections and an in-process server, all on 127.0.0.1.
 *
 * It forwards bytes both ways, one upstream connection per accepted one, and
 * breaks things on command, on real sockets: a reset is a close with
 * SO_LINGER 0 (the peer sees RST), a refusal is a closed listener (the
 * kernel answers RST to the SYN), a full backlog is a listener that never
 * accepts with its queue filled (the SYN is dropped). It knows nothing of
 * the protocol it carries, so a fault lands wherever the bytes are: in a
 * TLS handshake as well as in a request. */
#ifndef TIDEPOOL_TEST_CHAOS_PROXY_H
#define TIDEPOOL_TEST_CHAOS_PROXY_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;

enum chaos_fault {
    CHAOS_NONE = 0,
    CHAOS_RESET_ON_CONNECT,  /* every `every`-th accepted connection: RST */
    CHAOS_RESET_MID_REQUEST, /* every `every`-th client chunk: not forwarded,
                                the client is reset while it waits */
    CHAOS_RESET_IDLE,        /* connections quiet for idle_ms: RST */
    CHAOS_BLACKHOLE,      /* accepts, never answers; existing links go silent */
    CHAOS_REFUSE,         /* listener closed, every link closed */
    CHAOS_FULL_BACKLOG,   /* every link closed; the port's listener never
                             accepts and its queue is full */
    CHAOS_SLOW_ACCEPT,    /* one accept per delay_ms */
    CHAOS_SLOW_HANDSHAKE, /* a link's first server bytes held delay_ms */
    CHAOS_IDLE_CLOSE,     /* connections quiet for idle_ms: FIN */
    CHAOS_IDLE_JUNK,      /* connections quiet for idle_ms: junk bytes sent
                             to the client, once per link */
    CHAOS_TRUNCATE,       /* every `every`-th server chunk: half of it goes
                             out, then the link is closed */
    CHAOS_LATENCY,        /* every server chunk held delay_ms */
    CHAOS_STALL,          /* every `every`-th server chunk held delay_ms,
                             what follows on its link queued behind it: a
                             reply that outlives its caller's timeout */
    CHAOS_CLOSE_AFTER_REPLY, /* the first server chunk after the link's
                                `spared`-th client chunk goes out, then
                                the link reads no more and closes
                                delay_ms later (FIN): a server that closes
                                after a reply, its FIN late (the chunks
                                spared: a TLS handshake's, and what may
                                race them) */
};

/* How a fault bites; zero fields take the presets (every 10, 100 ms;
 * spared 0). */
struct chaos_knobs {
    int every;
    int delay_ms;
    int idle_ms;
    int spared;
};

struct chaos_proxy;

/* Listens on 127.0.0.1 (a fresh port) and forwards to 127.0.0.1:upstream.
 * base is borrowed and must outlive the proxy. NULL when a socket call
 * failed. */
struct chaos_proxy *chaos_proxy_new(struct event_base *base, uint16_t upstream);
/* Frees the proxy: its listener and every link (their sockets are closed
 * by libevent from the loop). NULL is ignored. */
void chaos_proxy_free(struct chaos_proxy *p);
uint16_t chaos_proxy_port(const struct chaos_proxy *p);

/* Switches to fault f (CHAOS_NONE heals), on the same port. false when a
 * socket call failed (the listener could not be reopened). */
bool chaos_proxy_set(struct chaos_proxy *p, enum chaos_fault f,
                     struct chaos_knobs knobs);

/* What the proxy has done. */
struct chaos_proxy_stats {
    uint64_t accepted; /* connections accepted */
    uint64_t faults;   /* fault actions taken: resets, closes, junk sent,
                          chunks held or cut, links closed by a fault */
    int64_t links;     /* links open now */
};

void chaos_proxy_stats(const struct chaos_proxy *p,
                       struct chaos_proxy_stats *out);

#endif
