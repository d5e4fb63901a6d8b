/* One message: a session from the pool, MAIL FROM, RCPT TO per recipient
 * (one command at a time, each answered on its own), DATA, the message,
 * the verdict, and the session back to the pool (whose reset hook RSETs
 * it).
 *
 * A session that breaks before the message's final "." went out (closed
 * under us, a 421, a reset) delivered nothing: the server drops a
 * transaction it did not see end. The message then goes again, on
 * another session, so a server's idle timeout or restart costs a sender
 * nothing: after a session that had carried messages before (a stale one:
 * it tells nothing about the server, and the next may be stale too, when
 * a firewall forgot them all; the pool's breaker hears nothing of it:
 * tide_evpool_stale) as often as it takes, up to TRIES sessions;
 * after a fresh one once, so a server that breaks every session is not
 * hammered by each message. After the final ".", only the server's
 * verdict tells: a session lost before it fails the message with
 * TIDE_SMTP_EUNKNOWN rather than risk sending it twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smtp_internal.h"

#define TRIES        16 /* sessions a message is tried on, at most */
#define FRESH_BREAKS 2  /* fresh sessions that may break under it */

enum mstep {
    ACQUIRING,
    MAIL,
    RCPT,
    DATA,
    SENDING, /* the message being written: its "." not yet out */
    BODY,    /* the message and its "." gone to the server: the verdict */
};

struct tide__smtp_msg {
    struct tide__smtp_msg *prev;
    struct tide__smtp_msg *next;
    struct tide_smtp_sender *s;
    char *from;
    char **rcpts;
    size_t n;
    struct tide_smtp_rcpt *results; /* texts malloc'd, addresses rcpts' */
    size_t accepted;
    size_t next_rcpt; /* the RCPT TO answered next */
    char *data;       /* as DATA sends it */
    size_t data_len;
    enum mstep step;
    struct tide_acquire *acq;
    struct bufferevent *bev;
    struct event deadline;
    bool deadline_armed;
    struct tide__smtp_reply r;
    int attempts;
    int fresh_breaks; /* fresh sessions that broke before the "." */
    bool reused;      /* the session in hand carried messages before */
    bool heard;       /* a byte of a reply came on the session in hand */
    tide_smtp_cb cb;
    void *arg;
};

static void msg_free(struct tide__smtp_msg *m)
{
    if (m->deadline_armed)
        event_del(&m->deadline);
    event_debug_unassign(&m->deadline);
    for (size_t i = 0; i < m->n; i++) {
        free(m->rcpts[i]);
        free((char *)m->results[i].text);
    }
    free(m->rcpts);
    free(m->results);
    free(m->from);
    free(m->data);
    free(m);
}

/* The session goes back: to the pool's reset (RSET), or destroyed. */
static void give_back(struct tide__smtp_msg *m, bool sound)
{
    struct bufferevent *bev = m->bev;
    if (!bev)
        return;
    m->bev = NULL;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(bev, NULL, NULL);
    if (sound) {
        tide__smtp_seasoned_add(m->s, bev);
        tide_evpool_release(m->s->pool, bev);
    } else {
        tide_evpool_discard(m->s->pool, bev);
    }
}

/* Answers the message (the session already given back) and frees it. */
static void answer(struct tide__smtp_msg *m, int status, int reply,
                   const char *text)
{
    struct tide_smtp_sender *s = m->s;
    if (status == 0)
        s->stats.delivered++;
    else if (status == TIDE_SMTP_ETEMPORARY || status == TIDE_SMTP_EPERMANENT)
        s->stats.refused++;
    else
        s->stats.failed++;
    TIDE_DEMO_UNLINK(&s->msgs, m);
    struct tide_smtp_result res = {
        .reply = reply,
        .text = text ? text : tide_smtp_strerror(status),
        .n = m->n,
        .rcpts = m->results,
        .accepted = m->accepted,
        .attempts = m->attempts,
    };
    tide__smtp_enter(s);
    m->cb(s, status, &res, m->arg);
    msg_free(m);
    tide__smtp_leave(s);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg);

/* The server answered other than asked: a refusal (the session goes back
 * for its RSET), or a reply of the wrong kind (out of step: dropped). */
static void refused(struct tide__smtp_msg *m, const struct tide__smtp_reply *r)
{
    int status = tide__smtp_refusal(r->code);
    give_back(m, status != TIDE_SMTP_EPROTOCOL);
    answer(m, status, r->code, r->text);
}

/* While the message goes out, the clock runs on the writing (no progress
 * within reply_timeout is a stall) and not on a reply no one expects yet:
 * a large message on a slow path takes as long as it takes. */
static void set_timeouts(struct tide__smtp_msg *m, bool sending)
{
    struct timeval tv = tide__smtp_tv(m->s->reply_timeout);
    bufferevent_set_timeouts(m->bev, sending ? NULL : &tv, &tv);
}

/* The output ran dry: with the message written, its "." has left, and
 * from here on only the verdict can tell whether it was delivered. */
static void on_write(struct bufferevent *bev, void *arg)
{
    struct tide__smtp_msg *m = arg;
    if (m->step != SENDING ||
        evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return;
    m->step = BODY;
    set_timeouts(m, false);
}

/* Asks the pool for a session (again). 0, or the pool's refusal. */
static int attempt(struct tide__smtp_msg *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->results[i].text);
        m->results[i].text = NULL;
        m->results[i].reply = 0;
    }
    m->accepted = 0;
    m->next_rcpt = 0;
    m->step = ACQUIRING;
    m->attempts++;
    return tide_evpool_acquire(m->s->pool, 0, on_acquired, m, &m->acq);
}

/* The session closed (or was reset) before a byte of MAIL's reply: when
 * it had served, the server's close of an idle session was on its way as
 * it was lent (an idle timeout, a restart), no failure of the server's
 * (tide_evpool_stale: the breaker and the backoff hear nothing). True when
 * the pool took it so; either way the session is gone. */
static bool give_back_stale(struct tide__smtp_msg *m, int code)
{
    if (m->step != MAIL || m->heard ||
        (code != TIDE_EPEER_CLOSED && code != TIDE_ECONN_BROKEN))
        return false;
    struct bufferevent *bev = m->bev;
    m->bev = NULL;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(bev, NULL, NULL);
    return tide_evpool_stale(m->s->pool, bev) == TIDE_STALE;
}

/* The session broke (closed, reset, TLS error, 421): code and a sentence.
 * Before the final "." the message is tried again on another session. */
static void broken(struct tide__smtp_msg *m, int code, int reply,
                   const char *why)
{
    struct tide_smtp_sender *s = m->s;
    enum mstep step = m->step;
    bool stale = m->bev && give_back_stale(m, code);
    if (!m->reused && !stale)
        m->fresh_breaks++;
    give_back(m, false);
    if (step != BODY && m->attempts < TRIES && m->fresh_breaks < FRESH_BREAKS) {
        s->stats.retried++;
        int rc = attempt(m);
        if (rc == 0)
            return;
        answer(m, rc, 0, NULL);
        return;
    }
    if (step == BODY && reply == 0) {
        char text[TIDE__SMTP_TEXT + 96];
        snprintf(text, sizeof text,
                 "the session broke after the message was sent, before the "
                 "verdict (%s): it may have been delivered",
                 why);
        answer(m, TIDE_SMTP_EUNKNOWN, 0, text);
        return;
    }
    answer(m, code, reply, why);
}

static void send_rcpt(struct tide__smtp_msg *m)
{
    m->step = RCPT;
    tide__smtp_write(m->bev, "RCPT TO:<%s>", m->rcpts[m->next_rcpt]);
}

/* Every RCPT TO answered: DATA, or no one to send it to. */
static void after_rcpts(struct tide__smtp_msg *m)
{
    if (m->accepted > 0) {
        m->step = DATA;
        tide__smtp_write(m->bev, "DATA");
        return;
    }
    /* refused for all: temporary if any refusal was, as a later try may
     * reach that one */
    int status = TIDE_SMTP_EPERMANENT;
    const struct tide_smtp_rcpt *last = &m->results[m->n - 1];
    for (size_t i = 0; i < m->n; i++)
        if (m->results[i].reply < 500)
            status = TIDE_SMTP_ETEMPORARY;
    char text[TIDE__SMTP_TEXT + 64];
    snprintf(text, sizeof text, "every recipient was refused; the last: %d %s",
             last->reply, last->text ? last->text : "");
    give_back(m, true);
    answer(m, status, last->reply, text);
}

static void on_reply(struct tide__smtp_msg *m, const struct tide__smtp_reply *r)
{
    if (r->code == 421) { /* the server is closing this session */
        broken(m, TIDE_SMTP_ETEMPORARY, m->step == BODY ? r->code : 0, r->text);
        return;
    }
    switch (m->step) {
    case ACQUIRING:
        break;
    case MAIL:
        if (r->code / 100 != 2) {
            refused(m, r);
            return;
        }
        send_rcpt(m);
        return;
    case RCPT: {
        struct tide_smtp_rcpt *res = &m->results[m->next_rcpt++];
        res->reply = r->code;
        res->text = strdup(r->text);
        if (r->code / 100 == 2)
            m->accepted++;
        if (m->next_rcpt < m->n)
            send_rcpt(m);
        else
            after_rcpts(m);
        return;
    }
    case DATA:
        if (r->code != 354) {
            refused(m, r);
            return;
        }
        m->step = SENDING;
        set_timeouts(m, true);
        if (bufferevent_write(m->bev, m->data, m->data_len) != 0)
            broken(m, TIDE_ENOMEM, 0, "could not write the message");
        return;
    case SENDING:
        /* an answer before the "." left (a size limit, say): nothing was
         * delivered, and the session is out of step with the server */
        give_back(m, false);
        answer(m, tide__smtp_refusal(r->code), r->code, r->text);
        return;
    case BODY:
        if (r->code / 100 == 2) {
            give_back(m, true);
            answer(m, 0, r->code, r->text);
        } else {
            refused(m, r);
        }
        return;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tide__smtp_msg *m = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    m->heard = true;
    int rc = tide__smtp_reply_read(in, &m->r);
    if (rc < 0) {
        give_back(m, false);
        answer(m, TIDE_SMTP_EPROTOCOL, 0, NULL);
        return;
    }
    if (rc == 0)
        return;
    struct tide__smtp_reply r = m->r;
    tide__smtp_reply_clear(&m->r);
    if (evbuffer_get_length(in) > 0) {
        /* more than the one reply asked for: out of step with the server,
         * and the session goes. The verdict is still the verdict, though:
         * the first reply after the "." says whether the message was taken,
         * and a caller told otherwise would send it twice. */
        if (m->step == BODY && r.code != 421) {
            give_back(m, false);
            answer(m, r.code / 100 == 2 ? 0 : tide__smtp_refusal(r.code),
                   r.code, r.text);
            return;
        }
        give_back(m, false);
        answer(m, TIDE_SMTP_EPROTOCOL, 0, "more than one reply came");
        return;
    }
    on_reply(m, &r);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    char why[256];
    int code = tide_net_event_error(bev, what, NULL, why, sizeof why);
    if (code != 0)
        broken(arg, code, 0, why);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    struct tide__smtp_msg *m = arg;
    m->acq = NULL;
    if (status != 0) {
        answer(m, status, 0, why->message);
        return;
    }
    m->bev = resource;
    m->reused = tide__smtp_seasoned_has(m->s, resource);
    m->heard = false;
    tide__smtp_reply_clear(&m->r);
    bufferevent_setcb(m->bev, on_read, on_write, on_event, m);
    set_timeouts(m, false);
    m->step = MAIL;
    if (tide__smtp_write(m->bev, "MAIL FROM:<%s>", m->from) != 0)
        broken(m, TIDE_ENOMEM, 0, "could not write MAIL FROM");
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__smtp_msg *m = arg;
    m->deadline_armed = false;
    if (m->acq) {
        tide_evpool_cancel(m->acq, false);
        m->acq = NULL;
    }
    bool sent = m->step == BODY;
    give_back(m, false);
    answer(m, sent ? TIDE_SMTP_EUNKNOWN : TIDE_SMTP_ETIMEDOUT, 0,
           sent ? "no verdict within the message's timeout: it may have been "
                  "delivered"
                : NULL);
}

/* An address as it goes between < and >: no line end (a command of the
 * caller's making would follow it) and no bracket (nor parameters after
 * one). A recipient must name someone: RCPT TO:<> is no address, yet some
 * servers take it, and the message would go to no one. The sender may be
 * empty: MAIL FROM:<> is the null reverse-path of bounces. */
static bool address_ok(const char *a, bool recipient)
{
    return a && (!recipient || *a) && strlen(a) < 512 && !strpbrk(a, "\r\n<>");
}

int tide_smtp_send(struct tide_smtp_sender *s, const char *from,
                   const char *const *recipients, size_t n, const char *message,
                   size_t len, tide_smtp_cb cb, void *arg)
{
    if (!s || !address_ok(from, false) || !recipients || n == 0 || !message ||
        !cb)
        return TIDE_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!address_ok(recipients[i], true))
            return TIDE_EINVAL;
    struct tide__smtp_msg *m = calloc(1, sizeof *m);
    if (!m)
        return TIDE_ENOMEM;
    m->s = s;
    m->cb = cb;
    m->arg = arg;
    event_assign(&m->deadline, s->base, -1, 0, on_deadline, m);
    m->from = strdup(from);
    m->rcpts = calloc(n, sizeof *m->rcpts);
    m->results = calloc(n, sizeof *m->results);
    bool ok = m->from && m->rcpts && m->results &&
              tide__smtp_data(message, len, &m->data, &m->data_len);
    if (ok) {
        m->n = n;
        for (size_t i = 0; i < n && ok; i++) {
            m->rcpts[i] = strdup(recipients[i]);
            m->results[i].address = m->rcpts[i];
            ok = m->rcpts[i] != NULL;
        }
    }
    if (!ok) {
        msg_free(m);
        return TIDE_ENOMEM;
    }
    int rc = attempt(m);
    if (rc != 0) {
        msg_free(m);
        return rc;
    }
    TIDE_DEMO_LINK(&s->msgs, m);
    s->stats.messages++;
    if (s->timeout != TIDE_FOREVER) {
        struct timeval tv = tide__smtp_tv(s->timeout);
        event_add(&m->deadline, &tv);
        m->deadline_armed = true;
    }
    return 0;
}

void tide__smtp_msgs_end(struct tide_smtp_sender *s)
{
    while (s->msgs) {
        struct tide__smtp_msg *m = s->msgs;
        TIDE_DEMO_UNLINK(&s->msgs, m);
        if (m->acq)
            tide_evpool_cancel(m->acq, false);
        give_back(m, false);
        msg_free(m);
    }
}
