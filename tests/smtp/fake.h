/* A scripted SMTP server inside the test's own event loop, for the faults
 * aiosmtpd cannot be made to show: a reply sent out of turn, a session
 * that stops reading in the middle of DATA, a connection reset at a given
 * command, a RSET answered with an error. It speaks just enough SMTP for
 * the sender (greeting, EHLO, MAIL, RCPT, DATA and the message up to its
 * ".", RSET, NOOP, QUIT, HELO, and STARTTLS without any TLS), answers each
 * command with its preset reply unless a rule says otherwise, and counts what
 * it saw. Listens on 127.0.0.1 at a port the kernel picks, with a small receive
 * buffer, so a peer that stops reading holds back a large message for real. */
#ifndef TIDEPOOL_TEST_SMTP_FAKE_H
#define TIDEPOOL_TEST_SMTP_FAKE_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct evconnlistener;
struct fake_conn;

/* The commands a rule can name, and what the counts are kept by. */
enum fake_cmd {
    FAKE_GREETING, /* the connection accepted: the greeting is the answer */
    FAKE_EHLO,
    FAKE_MAIL,
    FAKE_RCPT,
    FAKE_DATA,
    FAKE_DOT, /* the message's "." */
    FAKE_RSET,
    FAKE_NOOP,
    FAKE_QUIT,
    FAKE_STARTTLS, /* answered, but no TLS follows: for the bytes after it */
    FAKE_HELO,
    FAKE_CMDS,
};

/* What the server does at a command. */
enum fake_act {
    FAKE_REPLY, /* writes reply (raw bytes, CRLFs included) */
    FAKE_HANG,  /* writes reply when not NULL, then stays silent, reading */
    FAKE_STALL, /* writes reply when not NULL, then stops reading at all */
    FAKE_RESET, /* closes with a reset (SO_LINGER 0), no reply */
};

struct fake_rule {
    enum fake_cmd cmd;
    int conn;  /* only on the conn-th connection accepted (from 1); 0: all */
    int after; /* only once the connection saw this many of cmd before */
    int times; /* ... and for this many of them; 0: every one after */
    enum fake_act act;
    const char *reply; /* NULL: the preset reply */
};

struct fake_server {
    struct evconnlistener *listener;
    int port;
    const struct fake_rule *rules; /* borrowed; must outlive the server */
    size_t nrules;
    struct fake_conn *conns; /* open ones */
    int accepted;            /* connections accepted */
    int closed;              /* ... and closed by the peer or by a rule */
    int seen[FAKE_CMDS];     /* commands received, by kind */
    size_t last_body;        /* bytes of the last message, before its "." */
};

/* Starts listening on base (borrowed); false when it cannot. */
bool fake_start(struct fake_server *f, struct event_base *base,
                const struct fake_rule *rules, size_t nrules);
/* Closes every connection and the listener. */
void fake_stop(struct fake_server *f);

#endif
