/* A session's opening and close. The opening runs in the factory's steps,
 * before the pool sees the connection: with STARTTLS, the upgrade step
 * reads the greeting, sends EHLO, checks that STARTTLS is offered and asks
 * for it; after the handshake the setup step sends EHLO again (RFC 3207
 * 4.2: what the server said before TLS is forgotten) and AUTH. Without
 * STARTTLS the setup step does it all: greeting, EHLO (HELO when the
 * server knows no EHLO and nothing of EHLO's is needed), AUTH. The close
 * writes QUIT straight to the socket, never waiting: destroy may not
 * block, and a server that misses it closes the session all the same. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "smtp_internal.h"

enum step {
    GREETING,
    EHLO,
    HELO, /* EHLO unknown to the server: the old greeting instead */
    STARTTLS,
    AUTH_PLAIN,
    AUTH_LOGIN,      /* AUTH LOGIN sent: 334 asks for the user */
    AUTH_LOGIN_USER, /* the user sent: 334 asks for the password */
    AUTH_LOGIN_PASS, /* the password sent: 235 */
};

struct tide__smtp_open {
    struct tide__smtp_open *prev;
    struct tide__smtp_open *next;
    struct tide_smtp_sender *s;
    struct tide_net_setup *token;
    struct bufferevent *bev;
    bool upgrade; /* the step before TLS, not the one after */
    enum step step;
    struct tide__smtp_reply r;
};

/* What a step waits for, for a person. */
static const char *step_name(enum step step)
{
    switch (step) {
    case GREETING:
        return "greeting";
    case EHLO:
        return "reply to EHLO";
    case HELO:
        return "reply to HELO";
    case STARTTLS:
        return "reply to STARTTLS";
    case AUTH_PLAIN:
    case AUTH_LOGIN:
    case AUTH_LOGIN_USER:
    case AUTH_LOGIN_PASS:
        break;
    }
    return "reply to AUTH";
}

/* The open's record goes before the answer: the factory may call nothing
 * of ours after it, and the token is dead. */
static void finish(struct tide__smtp_open *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void finish(struct tide__smtp_open *o, int code, const char *fmt, ...)
{
    struct tide_smtp_sender *s = o->s;
    struct tide_net_setup *token = o->token;
    char why[TIDE__SMTP_TEXT + 128] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
    }
    bufferevent_setcb(o->bev, NULL, NULL, NULL, NULL);
    TIDE_DEMO_UNLINK(&s->opens, o);
    free(o);
    if (code == 0)
        tide_net_setup_done(token);
    else
        tide_net_setup_failed(token, code, why);
}

static bool base64(const char *in, size_t n, char *out, size_t room)
{
    if (4 * ((n + 2) / 3) + 1 > room)
        return false;
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)n);
    return true;
}

static void send_auth(struct tide__smtp_open *o,
                      const struct tide__smtp_reply *ehlo)
{
    struct tide_smtp_sender *s = o->s;
    if (ehlo->auth_plain) {
        /* RFC 4616: authzid NUL authcid NUL password */
        char raw[512], enc[700];
        size_t u = strlen(s->user), p = strlen(s->password);
        if (u + p + 2 > sizeof raw) {
            finish(o, TIDE_SMTP_EAUTH, "AUTH: the credentials are too long");
            return;
        }
        raw[0] = '\0';
        memcpy(raw + 1, s->user, u);
        raw[u + 1] = '\0';
        memcpy(raw + u + 2, s->password, p);
        if (!base64(raw, u + p + 2, enc, sizeof enc)) {
            OPENSSL_cleanse(raw, sizeof raw);
            finish(o, TIDE_SMTP_EAUTH, "AUTH: the credentials are too long");
            return;
        }
        o->step = AUTH_PLAIN;
        tide__smtp_write(o->bev, "AUTH PLAIN %s", enc);
        OPENSSL_cleanse(raw, sizeof raw);
        OPENSSL_cleanse(enc, sizeof enc);
    } else if (ehlo->auth_login) {
        o->step = AUTH_LOGIN;
        tide__smtp_write(o->bev, "AUTH LOGIN");
    } else {
        finish(o, TIDE_SMTP_EAUTH,
               "AUTH: the server offers neither PLAIN nor LOGIN");
    }
}

static void send_login_part(struct tide__smtp_open *o, const char *part,
                            enum step next)
{
    char enc[700];
    if (!base64(part, strlen(part), enc, sizeof enc)) {
        finish(o, TIDE_SMTP_EAUTH, "AUTH: the credentials are too long");
        return;
    }
    o->step = next;
    tide__smtp_write(o->bev, "%s", enc);
    OPENSSL_cleanse(enc, sizeof enc);
}

static void after_ehlo(struct tide__smtp_open *o,
                       const struct tide__smtp_reply *ehlo)
{
    struct tide_smtp_sender *s = o->s;
    if (o->upgrade) {
        if (!ehlo->starttls) {
            finish(o, TIDE_EUPGRADE_UNOFFERED,
                   "EHLO: the server does not offer STARTTLS");
            return;
        }
        o->step = STARTTLS;
        tide__smtp_write(o->bev, "STARTTLS");
        return;
    }
    if (s->user)
        send_auth(o, ehlo);
    else
        finish(o, 0, NULL);
}

/* One whole reply. */
static void on_reply(struct tide__smtp_open *o,
                     const struct tide__smtp_reply *r)
{
    struct tide_smtp_sender *s = o->s;
    switch (o->step) {
    case GREETING:
        if (r->code != 220) {
            finish(o, tide__smtp_refusal(r->code), "greeting: %d %s", r->code,
                   r->text);
            return;
        }
        o->step = EHLO;
        tide__smtp_write(o->bev, "EHLO %s", s->helo_name);
        return;
    case EHLO:
        if ((r->code == 500 || r->code == 502) && !o->upgrade && !s->user) {
            /* a server that knows no EHLO (RFC 5321 3.2: fall back to
             * HELO); HELO offers no extensions, so only when neither
             * STARTTLS nor AUTH is needed */
            o->step = HELO;
            tide__smtp_write(o->bev, "HELO %s", s->helo_name);
            return;
        }
        if (r->code != 250) {
            finish(o, tide__smtp_refusal(r->code), "EHLO: %d %s", r->code,
                   r->text);
            return;
        }
        after_ehlo(o, r);
        return;
    case HELO:
        if (r->code != 250)
            finish(o, tide__smtp_refusal(r->code), "HELO: %d %s", r->code,
                   r->text);
        else
            finish(o, 0, NULL);
        return;
    case STARTTLS:
        if (r->code == 220)
            finish(o, 0, NULL); /* the handshake follows, on this socket */
        else
            finish(o, r->code == 454 ? TIDE_EUPGRADE_REFUSED : TIDE_EUPGRADE,
                   "STARTTLS: %d %s", r->code, r->text);
        return;
    case AUTH_LOGIN:
        if (r->code == 334)
            send_login_part(o, s->user, AUTH_LOGIN_USER);
        else
            finish(o, TIDE_SMTP_EAUTH, "AUTH: %d %s", r->code, r->text);
        return;
    case AUTH_LOGIN_USER:
        if (r->code == 334)
            send_login_part(o, s->password, AUTH_LOGIN_PASS);
        else
            finish(o, TIDE_SMTP_EAUTH, "AUTH: %d %s", r->code, r->text);
        return;
    case AUTH_PLAIN:
    case AUTH_LOGIN_PASS:
        if (r->code == 235)
            finish(o, 0, NULL);
        else
            finish(o, TIDE_SMTP_EAUTH, "AUTH: %d %s", r->code, r->text);
        return;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tide__smtp_open *o = arg;
    int rc = tide__smtp_reply_read(bufferevent_get_input(bev), &o->r);
    if (rc < 0) {
        finish(o, TIDE_SMTP_EPROTOCOL, "the server's answer is not SMTP");
        return;
    }
    if (rc == 0)
        return;
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
        /* the sender asks one thing at a time: bytes behind a reply came
         * out of turn, and the next step would take them for its answer
         * (and say, for one, that EHLO offered no STARTTLS) */
        finish(o, TIDE_SMTP_EPROTOCOL,
               "the server sent more than its %s, out of turn (%d %s)",
               step_name(o->step), o->r.code, o->r.text);
        return;
    }
    /* the next reply is read afresh; this one's extensions stay in hand */
    struct tide__smtp_reply r = o->r;
    tide__smtp_reply_clear(&o->r);
    on_reply(o, &r); /* o may be gone after */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct tide__smtp_open *o = arg;
    char why[256];
    int code = tide_net_event_error(bev, what, NULL, why, sizeof why);
    if (code != 0)
        finish(o, code, "%s", why);
}

static void start(struct tide_smtp_sender *s, struct tide_net_setup *token,
                  struct bufferevent *bev, bool upgrade)
{
    struct tide__smtp_open *o = calloc(1, sizeof *o);
    if (!o) {
        tide_net_setup_failed(token, TIDE_ENOMEM, NULL);
        return;
    }
    o->s = s;
    o->token = token;
    o->bev = bev;
    o->upgrade = upgrade;
    TIDE_DEMO_LINK(&s->opens, o);
    bufferevent_setcb(bev, on_read, NULL, on_event, o);
    if (!upgrade && s->starttls) {
        /* after STARTTLS: no greeting again, EHLO at once */
        o->step = EHLO;
        tide__smtp_write(bev, "EHLO %s", s->helo_name);
    } else {
        o->step = GREETING;
    }
}

void tide__smtp_upgrade(struct tide_net_setup *setup, struct bufferevent *bev,
                        void *arg)
{
    start(arg, setup, bev, true);
}

void tide__smtp_setup(struct tide_net_setup *setup, struct bufferevent *bev,
                      void *arg)
{
    start(arg, setup, bev, false);
}

void tide__smtp_open_abort(struct tide_net_setup *setup, void *arg)
{
    struct tide_smtp_sender *s = arg;
    for (struct tide__smtp_open *o = s->opens; o; o = o->next) {
        if (o->token == setup) {
            bufferevent_setcb(o->bev, NULL, NULL, NULL, NULL);
            TIDE_DEMO_UNLINK(&s->opens, o);
            free(o);
            return;
        }
    }
}

/* ---- close ---- */

/* QUIT, when the session is sound: nothing pending either way, and the
 * socket neither closed nor holding the server's last words. One
 * non-blocking write; whatever cannot go now is not retried. */
static bool quit(struct bufferevent *bev)
{
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0 ||
        evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return false;
    evutil_socket_t fd = bufferevent_getfd(bev);
    char c;
    if (fd < 0 || recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0 ||
        (errno != EAGAIN && errno != EWOULDBLOCK))
        return false;
    static const char line[] = "QUIT\r\n";
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    if (!ssl)
        return send(fd, line, sizeof line - 1, MSG_DONTWAIT | MSG_NOSIGNAL) ==
               (ssize_t)(sizeof line - 1);
    if (!SSL_is_init_finished(ssl))
        return false;
    bool ok = SSL_write(ssl, line, sizeof line - 1) == (int)(sizeof line - 1);
    ERR_clear_error();
    return ok;
}

void tide__smtp_destroy(void *resource, void *arg)
{
    struct tide_smtp_sender *s = arg;
    tide__smtp_seasoned_drop(s, resource);
    if (quit(resource))
        s->stats.quits++;
    s->inner.destroy(resource, s->inner.arg);
}
