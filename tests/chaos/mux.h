/* A small multiplexed echo protocol, to prove shared loans on (limits.streams
 * > 1): several borrowers hold one connection of the pool at once, each
 * frame tagged with its borrower's request id.
 *
 * A frame is MUX_FRAME bytes: '#', the tag in 16 hex digits, ':', then
 * anything up to a final '\n'. The server answers each frame with itself,
 * in order, or (reorder) out of order: frames read within a millisecond
 * are answered last first.
 *
 * The client side is the protocol layer <tidepool/evloop.h> describes
 * under "Shared loans": one session per connection owns its read side
 * while any borrower holds it, routes each reply to its borrower (the
 * head of the queue in order, or by tag out of order), and ends each
 * borrower's loan exactly once: release after a good reply, discard
 * after a bad one or a failure. A read error, EOF, a stall or a reply
 * for no borrower in flight breaks the connection (tide_evpool_break)
 * and fails every borrower on it. */
#ifndef TIDEPOOL_TEST_CHAOS_MUX_H
#define TIDEPOOL_TEST_CHAOS_MUX_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#define MUX_FRAME 32

struct event_base;
struct bufferevent;
struct tide_evpool;

/* ---- the server ---- */

struct mux_server;

/* Listens on 127.0.0.1 (a fresh port); ctx NULL: plain TCP, else TLS
 * (taken: freed with the server). reorder: answers out of order.
 * close_every > 0: every close_every-th frame read, the server closes that
 * connection instead (with what it read unanswered): a peer that closes
 * with loans out. NULL when a socket call failed. */
struct mux_server *mux_server_new(struct event_base *base, SSL_CTX *ctx,
                                  bool reorder, int close_every);
void mux_server_free(struct mux_server *s);
uint16_t mux_server_port(const struct mux_server *s);
/* Changes close_every (0: never closes). */
void mux_server_close_every(struct mux_server *s, int close_every);
/* Connections it closed with frames unanswered (close_every). */
uint64_t mux_server_closes(const struct mux_server *s);

/* ---- the client: the protocol layer ---- */

struct mux_client;

/* A borrower's reply: status 0 with the frame (MUX_FRAME bytes, valid
 * during the call), or -1 when the connection failed first (frame NULL).
 * Return true when the reply was the borrower's and right: its loan is
 * released; false: discarded. */
typedef bool (*mux_reply_cb)(int status, const char *frame, void *arg);

struct mux_stats {
    uint64_t calls;     /* frames sent */
    uint64_t replies;   /* frames routed to a borrower */
    uint64_t failed;    /* borrowers failed by a broken connection */
    uint64_t breaks;    /* connections this layer broke (break answered 1) */
    uint64_t stray;     /* replies for no borrower in flight */
    uint64_t drains;    /* connections drained by mux_drain_busiest */
    uint64_t refused;   /* loans the pool refused to end (a bug) */
    int64_t most_at_break; /* the most borrowers on a connection it broke */
    int64_t most_shared;   /* the most borrowers seen on one connection */
    int64_t sessions;      /* sessions open now */
};

/* pool is borrowed. in_order: replies are routed to the oldest borrower
 * (the server answers in order); else by tag. */
struct mux_client *mux_client_new(struct tide_evpool *pool, bool in_order);
/* Frees the client; its sessions must all be over (sessions == 0). */
void mux_client_free(struct mux_client *m);
/* Sends frame (MUX_FRAME bytes, tagged with tag) on bev, a connection the
 * pool lent this borrower (shared or not). cb runs once, from the loop,
 * with the reply or the failure; the loan then ends as cb says. */
void mux_send(struct mux_client *m, struct bufferevent *bev, uint64_t tag,
              const char *frame, mux_reply_cb cb, void *arg);
/* Drains the connection with the most borrowers (capacity 0, as after a
 * GOAWAY): its borrowers finish, it takes no new one, and the pool closes
 * it after the last. Returns its borrowers then, 0 when none had any. */
int64_t mux_drain_busiest(struct mux_client *m);
/* Whether bev has a session: borrowers on it now. */
bool mux_holds(const struct mux_client *m, const void *bev);
void mux_client_stats(const struct mux_client *m, struct mux_stats *out);

#endif
