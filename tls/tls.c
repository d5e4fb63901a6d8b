/* The TLS factory: the TCP factory's dial, then a handshake on an OpenSSL
 * bufferevent, verified, with a session offered from the cache; and the
 * close that keeps sessions resumable.
 *
 * With an upgrade (STARTTLS) the plaintext exchange comes first, on the
 * same socket (setup.c), and hands the socket on to the handshake.
 *
 * The handshake runs on a socket bufferevent made with fd -1 and given the
 * connected socket with bufferevent_setfd: then the socket is the
 * bufferevent's from that call on, whatever happens, so no error path closes
 * it twice. Its timeout is an event of our own: libevent's OpenSSL
 * bufferevent repeats a timeout every period and disables nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls_internal.h"

#define ALPN_MAX 1024 /* wire bytes; a ClientHello extension stays small */

static struct tide_tls_factory *tls_of(struct tide__net_make *m)
{
    return m->f->tls;
}

static void to_timeval(int64_t ns, struct timeval *tv)
{
    tv->tv_sec = (time_t)(ns / TIDE_SEC(1));
    tv->tv_usec = (suseconds_t)((ns % TIDE_SEC(1)) / 1000);
}

/* ---- close ---- */

void tide__tls_close(struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    if (!ssl)
        return;
    /* Only a finished, unfailed handshake is shut down: OpenSSL moves an SSL
     * with a fatal error back into init, and a session that met a fatal
     * error must not be resumed anyway. Freeing without SSL_shutdown would
     * mark the session not resumable. When the peer is gone (its
     * close_notify came, or the socket shows FIN or reset) the shutdown is
     * quiet: the session is kept, and nothing is written to a dead socket.
     * Otherwise close_notify goes out: one non-blocking write of an alert;
     * if the socket cannot take it now, it is not retried. */
    if (SSL_is_init_finished(ssl)) {
        int err;
        evutil_socket_t fd = bufferevent_getfd(bev);
        if ((SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN) || fd < 0 ||
            tide__net_sock_peek(fd, &err) < 0)
            SSL_set_quiet_shutdown(ssl, 1);
        (void)SSL_shutdown(ssl);
    }
    (void)tide__net_ssl_error(bev);
    ERR_clear_error();
}

/* ---- handshake ---- */

static void end_handshake(struct tide__net_make *m)
{
    struct bufferevent *bev = m->bev;
    event_del(&m->hs_timer);
    m->bev = NULL;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
}

void tide__tls_make_abort(struct tide__net_make *m)
{
    if (!m->bev)
        return;
    struct bufferevent *bev = m->bev;
    end_handshake(m);
    bufferevent_free(bev); /* in init: freed without a shutdown */
    ERR_clear_error();
}

static int verify_code(long result)
{
    switch (result) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
    case X509_V_ERR_EMAIL_MISMATCH:
        return TIDE_ENAME_MISMATCH;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return TIDE_EEXPIRED;
    default:
        return TIDE_EUNTRUSTED;
    }
}

/* Why a handshake failed, from the verify result, OpenSSL's errors and
 * errno, in that order of precedence. */
static void classify(struct tide__net_make *m, struct bufferevent *bev,
                     short what, struct tide__net_fail *fail)
{
    struct tide_tls_factory *tls = tls_of(m);
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    int err = EVUTIL_SOCKET_ERROR();
    unsigned long e = tide__net_ssl_error(bev);
    long vr = SSL_get_verify_result(ssl);
    char peer[64];
    tide__net_addr_text(&m->dial.winner, peer, sizeof peer);
    char ssl_text[160] = "";
    if (e)
        ERR_error_string_n(e, ssl_text, sizeof ssl_text);
    ERR_clear_error();

    memset(fail, 0, sizeof *fail);
    fail->d.ssl_error = e;
    if (tls->verify_name && vr != X509_V_OK) {
        fail->d.verify_result = vr;
        tide__net_fail_set(
            fail, verify_code(vr),
            "TLS handshake with %s (%s): certificate verify failed: "
            "%s (verify result %ld)",
            m->f->host, peer, X509_verify_cert_error_string(vr), vr);
    } else if (e && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        tide__net_fail_set(fail, TIDE_EHANDSHAKE,
                           "TLS handshake with %s (%s): the server closed the "
                           "connection (%s)",
                           m->f->host, peer, ssl_text);
    } else if (e) {
        tide__net_fail_set(fail, TIDE_EHANDSHAKE,
                           "TLS handshake with %s (%s): %s", m->f->host, peer,
                           ssl_text);
    } else if ((what & BEV_EVENT_ERROR) && err) {
        fail->d.sys_errno = err;
        tide__net_fail_set(fail, TIDE_EHANDSHAKE,
                           "TLS handshake with %s (%s): %s (errno %d)",
                           m->f->host, peer, strerror(err), err);
    } else {
        tide__net_fail_set(fail, TIDE_EHANDSHAKE,
                           "TLS handshake with %s (%s): the server closed the "
                           "connection",
                           m->f->host, peer);
    }
}

static void fail_handshake(struct tide__net_make *m,
                           const struct tide__net_fail *fail)
{
    tide__tls_make_abort(m);
    tide__net_make_failed(m, fail);
}

static void on_handshake_event(struct bufferevent *bev, short what, void *arg)
{
    struct tide__net_make *m = arg;
    struct tide_tls_factory *tls = tls_of(m);
    struct tide__net_fail fail;
    if (!(what & BEV_EVENT_CONNECTED)) {
        classify(m, bev, what, &fail);
        fail_handshake(m, &fail);
        return;
    }
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    if (tls->alpn_required) {
        const unsigned char *p;
        unsigned int n;
        SSL_get0_alpn_selected(ssl, &p, &n);
        if (n == 0) {
            memset(&fail, 0, sizeof fail);
            tide__net_fail_set(
                &fail, TIDE_EALPN,
                "TLS handshake with %s: the server chose none of "
                "the offered ALPN protocols",
                m->f->host);
            /* a sound connection: shut down, so the session survives */
            end_handshake(m);
            tide__tls_close(bev);
            bufferevent_free(bev);
            tide__net_make_failed(m, &fail);
            return;
        }
    }
    if (SSL_session_reused(ssl))
        m->f->stats.resumed++;
    end_handshake(m);
    tide__net_hand_over(bev);
    tide__net_setup_start(m, bev);
}

static void on_handshake_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__net_make *m = arg;
    struct tide__net_fail fail;
    char peer[64];
    tide__net_addr_text(&m->dial.winner, peer, sizeof peer);
    memset(&fail, 0, sizeof fail);
    fail.d.sys_errno = ETIMEDOUT;
    tide__net_fail_set(&fail, TIDE_EHANDSHAKE_TIMEOUT,
                       "TLS handshake with %s (%s): no answer within %lld ms",
                       m->f->host, peer,
                       (long long)(tls_of(m)->handshake_timeout / TIDE_MS(1)));
    fail_handshake(m, &fail);
}

/* A new SSL for one connection: verification, names, ALPN, a session. */
static SSL *new_ssl(struct tide_tls_factory *tls)
{
    SSL *ssl = SSL_new(tls->ctx);
    if (!ssl)
        return NULL;
    SSL_set_app_data(ssl, tls);
    bool ok = true;
    if (tls->verify_name) {
        SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
        if (tls->verify_ip) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
                                               tls->verify_name) == 1;
        } else {
            /* names come from subjectAltName only: OpenSSL would fall back
             * to the subject's CN when no DNS SAN is there, which RFC 9525
             * drops (CAs must put every name in the SAN), so a
             * certificate without the name asked for is not for it */
            SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
                                       X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
            ok = SSL_set1_host(ssl, tls->verify_name) == 1;
        }
    } else {
        SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
    }
    if (ok && tls->sni)
        ok = SSL_set_tlsext_host_name(ssl, tls->sni) == 1;
    if (ok && tls->alpn) /* 0 is success here, unlike the rest of SSL_ */
        ok = SSL_set_alpn_protos(ssl, tls->alpn, tls->alpn_len) == 0;
    if (ok && tls->resumption) {
        SSL_SESSION *sess = tide__tls_sessions_take(tls->sessions, tls->key);
        if (sess) {
            ok = SSL_set_session(ssl, sess) == 1;
            SSL_SESSION_free(sess); /* the SSL holds its own reference */
        }
    }
    if (!ok) {
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

void tide__tls_handshake(struct tide__net_make *m, evutil_socket_t fd)
{
    struct tide_tls_factory *tls = tls_of(m);
    struct tide_tcp_factory *f = m->f;
    struct tide__net_fail fail;
    memset(&fail, 0, sizeof fail);
    SSL *ssl = new_ssl(tls);
    struct bufferevent *bev = NULL;
    if (ssl) {
        /* libevent frees the SSL on some of its error paths and not on
         * others: with a reference of our own, ours is never the last */
        SSL_up_ref(ssl);
        bev = bufferevent_openssl_socket_new(
            f->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
            BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        SSL_free(ssl);
    }
    if (!bev) {
        close(fd);
        fail.d.ssl_error = ERR_peek_last_error();
        ERR_clear_error();
        tide__net_fail_set(&fail, TIDE_ENOMEM,
                           "TLS with %s: could not set up the connection",
                           f->host);
        tide__net_make_failed(m, &fail);
        return;
    }
    m->bev = bev;
    bufferevent_setcb(bev, NULL, NULL, on_handshake_event, m);
    event_assign(&m->hs_timer, f->base, -1, 0, on_handshake_timeout, m);
    if (tls->handshake_timeout != TIDE_FOREVER) {
        struct timeval tv;
        to_timeval(tls->handshake_timeout, &tv);
        event_add(&m->hs_timer, &tv);
    }
    /* from here the socket is the bufferevent's (its BIO closes it) */
    if (bufferevent_setfd(bev, fd) != 0) {
        BIO *bio = SSL_get_wbio(bufferevent_openssl_get_ssl(bev));
        if (!bio || BIO_get_fd(bio, NULL) != fd)
            close(fd); /* the BIO never got it */
        tide__net_fail_set(&fail, TIDE_ENOMEM,
                           "TLS with %s: could not start the handshake",
                           f->host);
        fail_handshake(m, &fail);
    }
}

void tide__tls_dialed(struct tide__net_make *m, evutil_socket_t fd)
{
    if (tls_of(m)->upgrade)
        tide__net_upgrade_start(m, fd); /* then the handshake, from there */
    else
        tide__tls_handshake(m, fd);
}

/* ---- sessions ---- */

static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct tide_tls_factory *tls = SSL_get_app_data(ssl);
    if (!tls || !tls->resumption || !SSL_SESSION_is_resumable(sess))
        return 0; /* not kept: OpenSSL drops its reference */
    tls->tcp.stats.sessions_received++;
    tide__tls_sessions_put(tls->sessions, tls->key, sess);
    return 1; /* the cache holds the reference */
}

/* ---- creation ---- */

static bool is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* "[::1]" → "::1" for the certificate check */
static char *strip_brackets(const char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
        return strndup(s + 1, n - 2);
    return strdup(s);
}

/* name without the final dot of a name written absolute ("example.com."
 * is example.com: certificates name it, and SNI carries it, without the
 * dot); returns its length. */
static size_t drop_final_dot(char *name)
{
    size_t n = strlen(name);
    if (n > 1 && name[n - 1] == '.')
        name[--n] = '\0';
    return n;
}

static int check_version(int v)
{
    return v == 0 || v == TLS1_2_VERSION || v == TLS1_3_VERSION;
}

static int build_alpn(struct tide_tls_factory *tls, const char *const *list)
{
    if (!list)
        return 0;
    size_t n = 0;
    for (const char *const *p = list; *p; p++) {
        size_t len = strlen(*p);
        if (len == 0 || len > 255)
            return TIDE_EINVAL;
        n += 1 + len;
        if (n > ALPN_MAX)
            return TIDE_EINVAL; /* before a long list could wrap n */
    }
    if (n == 0 || n > ALPN_MAX)
        return TIDE_EINVAL;
    tls->alpn = malloc(n);
    if (!tls->alpn)
        return TIDE_ENOMEM;
    unsigned char *w = tls->alpn;
    for (const char *const *p = list; *p; p++) {
        size_t len = strlen(*p);
        *w++ = (unsigned char)len;
        memcpy(w, *p, len);
        w += len;
    }
    tls->alpn_len = (unsigned int)n;
    return 0;
}

/* The cache key: everything that makes one upstream's sessions unfit for
 * another (a resumed handshake does not verify the certificate again).
 * Each string goes in with its length first, so no name, whatever it
 * holds, can make two settings read as one ("a|b" + "c" against "a" +
 * "b|c"). */
static int build_key(struct tide_tls_factory *tls)
{
    const char *sni = tls->sni ? tls->sni : "";
    const char *name = tls->verify_name ? tls->verify_name : "";
    size_t n = strlen(tls->tcp.host) + strlen(sni) + strlen(name) +
               tls->alpn_len * 2 + 128;
    tls->key = malloc(n);
    if (!tls->key)
        return TIDE_ENOMEM;
    int w = snprintf(
        tls->key, n, "%zu:%s|%u|%zu:%s|%c%zu:%s|%p|", strlen(tls->tcp.host),
        tls->tcp.host, (unsigned)tls->tcp.port, strlen(sni), sni,
        tls->verify_name ? 'v' : '-', strlen(name), name, (void *)tls->ctx);
    for (unsigned int i = 0; i < tls->alpn_len; i++)
        w += snprintf(tls->key + w, n - (size_t)w, "%02x", tls->alpn[i]);
    return 0;
}

static int check_options(const struct tide_tls_options *o)
{
    if (!check_version(o->min_version) || !check_version(o->max_version) ||
        (o->min_version && o->max_version && o->min_version > o->max_version))
        return TIDE_EINVAL;
    if (o->ctx && (o->ca_file || o->ca_dir || o->ca_pem || o->cert_file ||
                   o->key_file || o->min_version || o->max_version))
        return TIDE_EINVAL;
    if (o->key_file && !o->cert_file)
        return TIDE_EINVAL;
    if (o->insecure_skip_verify && o->verify_name)
        return TIDE_EINVAL;
    /* a path names no host the certificate could be checked against */
    if (o->tcp.path && !o->verify_name && !o->insecure_skip_verify)
        return TIDE_EINVAL;
    if (o->handshake_timeout < 0 || o->upgrade_timeout < 0)
        return TIDE_EINVAL;
    if (!o->upgrade &&
        (o->upgrade_arg || o->upgrade_abort || o->upgrade_timeout))
        return TIDE_EINVAL; /* an upgrade's details without an upgrade */
    return 0;
}

static void dispose(struct tide_tls_factory *tls)
{
    tide__tcp_dispose(&tls->tcp);
    if (tls->own_sessions)
        tide_tls_sessions_free(tls->sessions);
    SSL_CTX_free(tls->ctx);
    free(tls->sni);
    free(tls->verify_name);
    free(tls->alpn);
    free(tls->key);
}

static int setup(struct tide_tls_factory *tls, const struct tide_tls_options *o)
{
    int rc;
    const char *host = tls->tcp.host;
    if (o->ctx) {
        if (SSL_CTX_up_ref(o->ctx) != 1)
            return TIDE_ETLS_CONFIG;
        tls->ctx = o->ctx;
    } else if ((rc = tide__tls_context(o, &tls->ctx)) != 0) {
        return rc;
    }
    tls->handshake_timeout =
        o->handshake_timeout ? o->handshake_timeout : TIDE_SEC(4);
    tls->alpn_required = o->alpn_required;
    tls->upgrade = o->upgrade;
    tls->upgrade_arg = o->upgrade_arg;
    tls->upgrade_abort = o->upgrade_abort;
    tls->upgrade_timeout =
        o->upgrade_timeout ? o->upgrade_timeout : TIDE_SEC(5);
    if ((rc = build_alpn(tls, o->alpn)) != 0)
        return rc;
    if (tls->alpn_required && !tls->alpn)
        return TIDE_EINVAL;
    if (!o->insecure_skip_verify) {
        tls->verify_name =
            strip_brackets(o->verify_name ? o->verify_name : host);
        if (!tls->verify_name)
            return TIDE_ENOMEM;
        /* "" would check no name at all (SSL_set1_host clears the list):
         * any certificate from a trusted CA would do, for any host */
        if (!*tls->verify_name)
            return TIDE_EINVAL;
        tls->verify_ip = is_ip(tls->verify_name);
        if (!tls->verify_ip) /* OpenSSL would not match it with the dot */
            (void)drop_final_dot(tls->verify_name);
    }
    /* the preset: the name the certificate is checked against, unless it
     * is an address; over a Unix socket that is verify_name, not the path */
    bool unix_path = tls->tcp.unix_path;
    const char *name = !unix_path         ? host
                       : tls->verify_name ? tls->verify_name
                                          : "";
    bool address = unix_path ? tls->verify_ip : tls->tcp.literal;
    const char *sni = o->sni ? o->sni : address ? "" : name;
    if (*sni) {
        if (is_ip(sni))
            return TIDE_EINVAL; /* RFC 6066: SNI carries names only */
        tls->sni = strdup(sni);
        if (!tls->sni)
            return TIDE_ENOMEM;
        /* RFC 6066's bound: OpenSSL would refuse it on every make */
        if (drop_final_dot(tls->sni) > TLSEXT_MAXLEN_host_name)
            return TIDE_EINVAL;
    }
    tls->resumption = !o->no_resumption;
    if (tls->resumption) {
        if (o->sessions) {
            tls->sessions = o->sessions;
        } else {
            if ((rc = tide_tls_sessions_new(0, &tls->sessions)) != 0)
                return rc;
            tls->own_sessions = true;
        }
        SSL_CTX_set_session_cache_mode(
            tls->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(tls->ctx, on_new_session);
    }
    return build_key(tls);
}

int tide_tls_factory_new(struct event_base *base,
                         const struct tide_tls_options *o,
                         struct tide_tls_factory **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    if (!o)
        return TIDE_EINVAL;
    int rc = check_options(o);
    if (rc != 0)
        return rc;
    struct tide_tls_factory *tls = calloc(1, sizeof *tls);
    if (!tls)
        return TIDE_ENOMEM;
    rc = tide__tcp_init(&tls->tcp, base, &o->tcp);
    if (rc != 0) {
        free(tls);
        return rc;
    }
    tls->tcp.tls = tls;
    rc = setup(tls, o);
    if (rc != 0) {
        dispose(tls);
        free(tls);
        return rc;
    }
    *out = tls;
    return 0;
}

void tide_tls_factory_bind(struct tide_tls_factory *f, struct tide_factory *out)
{
    tide_tcp_factory_bind(f ? &f->tcp : NULL, out);
}

void tide_tls_factory_free(struct tide_tls_factory *f)
{
    if (!f)
        return;
    dispose(f);
    free(f);
}

int tide_tls_factory_last_error(const struct tide_tls_factory *f,
                                struct tide_net_detail *detail, char *buf,
                                size_t len)
{
    return tide_tcp_factory_last_error(f ? &f->tcp : NULL, detail, buf, len);
}

void tide_tls_factory_stats(const struct tide_tls_factory *f,
                            struct tide_net_stats *out)
{
    tide_tcp_factory_stats(f ? &f->tcp : NULL, out);
    if (!f || !out)
        return;
    out->sessions_cached =
        f->resumption
            ? (int64_t)tide__tls_sessions_count_key(f->sessions, f->key)
            : 0;
}

/* ---- connections ---- */

bool tide_tls_resumed(struct bufferevent *bev)
{
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    return ssl && SSL_session_reused(ssl);
}

size_t tide_tls_alpn(struct bufferevent *bev, char *buf, size_t len)
{
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    const unsigned char *p = NULL;
    unsigned int n = 0;
    if (ssl)
        SSL_get0_alpn_selected(ssl, &p, &n);
    if (buf && len > 0) {
        size_t c = n < len ? n : len - 1;
        if (c)
            memcpy(buf, p, c);
        buf[c] = '\0';
    }
    return n;
}
