/* tls/tls.c and tls/context.c: TLS connections. Verified by default (chain,
 * name or IP, validity), each failure with its own code and OpenSSL's
 * verify result; SNI, ALPN, a handshake timeout, client certificates, the
 * context built from files or given by the caller, close_notify on close,
 * and the idle watch over TLS. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "fixture.h"

struct tls {
    struct test_server s;
    struct tide_tls_factory *f;
    struct test_pool tp;
    struct got g;
};

/* A TLS server presenting cert (versions 0: any). */
static void serve(struct tls *t, X509 *cert, int max_version)
{
    SSL_CTX *ctx = server_ctx(cert, fx->pki.key, 0, max_version, NULL);
    ck_assert_ptr_nonnull(ctx);
    ck_assert(server_start(&t->s, fx->base, AF_INET, 0, ctx));
}

/* A factory from o, a pool, one acquire. */
static struct got *connect_with(struct tls *t, const struct tide_tls_options *o)
{
    ck_assert_int_eq(tide_tls_factory_new(fx->base, o, &t->f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(t->f, &table);
    pool_start(&t->tp, &table, 0);
    return acquire_wait(&t->tp, &t->g, 10000);
}

/* A server presenting cert (any version) and one acquire through a factory
 * with the preset options for host, the test CA trusted: how every test
 * that needs nothing else of the options begins. */
static struct got *dial(struct tls *t, X509 *cert, const char *host)
{
    serve(t, cert, 0);
    struct tide_tls_options o = tls_options(host, &t->s);
    return connect_with(t, &o);
}

static struct tide_net_stats stats(struct tls *t)
{
    struct tide_net_stats st;
    tide_tls_factory_stats(t->f, &st);
    return st;
}

static void finish(struct tls *t)
{
    if (t->g.calls && t->g.status == 0)
        ck_assert_int_eq(tide_evpool_release(t->tp.pool, t->g.bev), 0);
    pool_stop(&t->tp);
    ck_assert_int_eq(stats(t).live, 0);
    ck_assert_int_eq(stats(t).pending, 0);
    tide_tls_factory_free(t->f);
    server_stop(&t->s);
}

static long verify_result(struct tls *t)
{
    struct tide_net_detail d;
    tide_tls_factory_last_error(t->f, &d, NULL, 0);
    return d.verify_result;
}

START_TEST(verified_connection_carries_data)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(echo(t.g.bev, "secret", 2000), "secret");
    SSL *ssl = bufferevent_openssl_get_ssl(t.g.bev);
    ck_assert_ptr_nonnull(ssl);
    ck_assert_int_eq(SSL_get_verify_result(ssl), X509_V_OK);
    ck_assert_int_eq(SSL_version(ssl), TLS1_3_VERSION);
    ck_assert(!tide_tls_resumed(t.g.bev));
    finish(&t);
}
END_TEST

START_TEST(ip_literal_is_verified_against_the_ip)
{
    struct tls t;
    dial(&t, fx->pki.good, "127.0.0.1");
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(t.s.sni, ""); /* no SNI for an address (RFC 6066) */
    finish(&t);
}
END_TEST

START_TEST(self_signed_certificate_is_untrusted)
{
    struct tls t;
    dial(&t, fx->pki.self, "localhost");
    ck_assert_int_eq(t.g.status, TIDE_EUNTRUSTED);
    ck_assert_int_eq(verify_result(&t), X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT);
    char text[320];
    struct tide_net_detail d;
    ck_assert_int_eq(tide_tls_factory_last_error(&*t.f, &d, text, sizeof text),
                     TIDE_EUNTRUSTED);
    ck_assert_ptr_nonnull(strstr(text, "self-signed"));
    ck_assert_uint_ne(d.ssl_error, 0); /* "certificate verify failed" */
    finish(&t);
}
END_TEST

START_TEST(unknown_issuer_is_untrusted)
{
    struct tls t;
    dial(&t, fx->pki.stranger, "localhost");
    ck_assert_int_eq(t.g.status, TIDE_EUNTRUSTED);
    ck_assert_int_eq(verify_result(&t),
                     X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    finish(&t);
}
END_TEST

START_TEST(wrong_name_is_a_name_mismatch)
{
    struct tls t;
    dial(&t, fx->pki.other, "localhost");
    ck_assert_int_eq(t.g.status, TIDE_ENAME_MISMATCH);
    ck_assert_int_eq(verify_result(&t), X509_V_ERR_HOSTNAME_MISMATCH);
    ck_assert_ptr_nonnull(strstr(t.g.message, "hostname mismatch"));
    finish(&t);
}
END_TEST

START_TEST(wrong_ip_is_a_name_mismatch)
{
    struct tls t;
    dial(&t, fx->pki.other, "127.0.0.1");
    ck_assert_int_eq(t.g.status, TIDE_ENAME_MISMATCH);
    ck_assert_int_eq(verify_result(&t), X509_V_ERR_IP_ADDRESS_MISMATCH);
    finish(&t);
}
END_TEST

/* A certificate names its hosts in subjectAltName; the subject's CN is not
 * read (RFC 9525): a certificate without the SAN asked for is not for that
 * host, whatever its CN says. */
START_TEST(certificate_without_a_san_is_a_name_mismatch)
{
    struct tls t;
    dial(&t, fx->pki.no_san, "localhost");
    ck_assert_int_eq(t.g.status, TIDE_ENAME_MISMATCH);
    ck_assert_int_eq(verify_result(&t), X509_V_ERR_HOSTNAME_MISMATCH);
    finish(&t);
}
END_TEST

START_TEST(common_name_is_not_read_beside_an_ip_san)
{
    struct tls t;
    dial(&t, fx->pki.ip_san, "localhost");
    ck_assert_int_eq(t.g.status, TIDE_ENAME_MISMATCH);
    finish(&t);

    /* the SAN it has is honoured */
    dial(&t, fx->pki.ip_san, "127.0.0.1");
    ck_assert_int_eq(t.g.status, 0);
    finish(&t);
}
END_TEST

/* "" would have OpenSSL check no name at all (SSL_set1_host clears the
 * list): any certificate the CAs signed, for any host, would pass. */
START_TEST(empty_verify_name_is_refused)
{
    struct tide_tls_factory *f = (void *)1;
    struct tide_tls_options o = {
        .tcp = {.host = "127.0.0.1", .port = 443},
        .verify_name = "",
    };
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    o.verify_name = "[]"; /* empty once the brackets are off */
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
}
END_TEST

START_TEST(verify_name_overrides_the_host)
{
    struct tls t;
    serve(&t, fx->pki.other, 0);
    struct tide_tls_options o = tls_options("127.0.0.1", &t.s);
    o.verify_name = "other.example";
    o.sni = "other.example";
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(t.s.sni, "other.example");
    finish(&t);
}
END_TEST

/* "localhost." is the same name written absolute (RFC 1034 3.1): the
 * certificate names "localhost", and the check must not fail on the dot
 * (as SNI, the name already goes without it). */
START_TEST(trailing_dot_host_is_verified_without_the_dot)
{
    struct tls t;
    serve(&t, fx->pki.good, 0);
    struct tide_tls_options o = tls_options("localhost.", &t.s);
    connect_with(&t, &o);
    ck_assert_msg(t.g.status == 0, "%s", t.g.message);
    ck_assert_str_eq(t.s.sni, "localhost");
    finish(&t);

    /* the same through verify_name */
    serve(&t, fx->pki.other, 0);
    o = tls_options("127.0.0.1", &t.s);
    o.verify_name = "other.example.";
    connect_with(&t, &o);
    ck_assert_msg(t.g.status == 0, "%s", t.g.message);
    finish(&t);
}
END_TEST

START_TEST(expired_certificate_is_expired)
{
    struct tls t;
    dial(&t, fx->pki.expired, "localhost");
    ck_assert_int_eq(t.g.status, TIDE_EEXPIRED);
    ck_assert_int_eq(verify_result(&t), X509_V_ERR_CERT_HAS_EXPIRED);
    finish(&t);
}
END_TEST

START_TEST(insecure_option_accepts_anything)
{
    struct tls t;
    serve(&t, fx->pki.self, 0);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.ca_pem = NULL;
    o.insecure_skip_verify = true;
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(echo(t.g.bev, "unsafe", 2000), "unsafe");
    finish(&t);
}
END_TEST

START_TEST(sni_is_seen_by_the_server)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(t.s.sni, "localhost");
    finish(&t);
}
END_TEST

START_TEST(sni_can_be_left_out)
{
    struct tls t;
    serve(&t, fx->pki.good, 0);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.sni = "";
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(t.s.sni, "");
    finish(&t);
}
END_TEST

START_TEST(alpn_is_negotiated_and_readable)
{
    struct tls t;
    serve(&t, fx->pki.good, 0);
    t.s.alpn_offer = "\x08http/1.1\x02h2";
    t.s.alpn_offer_len = 12;
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.alpn = (const char *[]){"h2", "http/1.1", NULL};
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, 0);
    char proto[16];
    ck_assert_uint_eq(tide_tls_alpn(t.g.bev, proto, sizeof proto), 8);
    ck_assert_str_eq(proto, "http/1.1"); /* the server's preference */
    ck_assert_str_eq(t.s.alpn, "http/1.1");
    char small[4];
    ck_assert_uint_eq(tide_tls_alpn(t.g.bev, small, sizeof small), 8);
    ck_assert_str_eq(small, "htt"); /* cut, like snprintf */
    finish(&t);
}
END_TEST

START_TEST(alpn_nothing_chosen_reads_empty)
{
    struct tls t;
    serve(&t, fx->pki.good, 0); /* the server knows no ALPN */
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.alpn = (const char *[]){"h2", NULL};
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, 0);
    char proto[16] = "x";
    ck_assert_uint_eq(tide_tls_alpn(t.g.bev, proto, sizeof proto), 0);
    ck_assert_str_eq(proto, "");
    finish(&t);
}
END_TEST

START_TEST(alpn_required_fails_when_nothing_is_chosen)
{
    struct tls t;
    serve(&t, fx->pki.good, 0);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.alpn = (const char *[]){"h2", NULL};
    o.alpn_required = true;
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, TIDE_EALPN);
    finish(&t);
}
END_TEST

START_TEST(silent_server_is_a_handshake_timeout)
{
    struct tls t;
    ck_assert(server_start(&t.s, fx->base, AF_INET, 0, NULL));
    t.s.raw = true; /* accepts TCP, never speaks TLS */
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.handshake_timeout = TIDE_MS(200);
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, TIDE_EHANDSHAKE_TIMEOUT);
    ck_assert_int_eq(t.s.accepted, 1);
    struct tide_net_detail d;
    tide_tls_factory_last_error(t.f, &d, NULL, 0);
    ck_assert_int_eq(d.code, TIDE_EHANDSHAKE_TIMEOUT);
    finish(&t);
}
END_TEST

START_TEST(make_cancelled_in_the_handshake_leaves_nothing)
{
    /* the pool's make timeout ends a make mid-handshake: the bufferevent
     * and its SSL go, and the teardown finds nothing left */
    struct tls t;
    ck_assert(server_start(&t.s, fx->base, AF_INET, 0, NULL));
    t.s.raw = true;
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.handshake_timeout = TIDE_SEC(10);
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &t.f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(t.f, &table);
    struct tide_evpool_options po = {.make_timeout = TIDE_MS(150)};
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &t.tp.pool), 0);
    acquire_wait(&t.tp, &t.g, 3000);
    ck_assert_int_eq(t.g.status, TIDE_EMAKETIMEDOUT);
    ck_assert_int_eq(t.s.accepted, 1);
    ck_assert_int_eq(stats(&t).cancelled, 1);
    /* and a pool freed mid-handshake (once makes are no longer held after
     * the failed one: 120 ms at most) */
    run_ms(150);
    struct got g = {0};
    ck_assert_int_eq(tide_evpool_acquire(t.tp.pool, 0, pool_record, &g, NULL),
                     0);
    run_ms(50);
    ck_assert_int_eq(t.s.accepted, 2);
    finish(&t);
    ck_assert_int_eq(g.calls, 0);
}
END_TEST

START_TEST(plain_server_is_a_handshake_failure)
{
    /* a server that speaks something else: it echoes the ClientHello, which
     * is no ServerHello */
    struct tls t;
    ck_assert(server_start(&t.s, fx->base, AF_INET, 0, NULL));
    struct tide_tls_options o = tls_options("localhost", &t.s);
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, TIDE_EHANDSHAKE);
    struct tide_net_detail d;
    tide_tls_factory_last_error(t.f, &d, NULL, 0);
    ck_assert_uint_ne(d.ssl_error, 0);
    ck_assert_int_eq(d.verify_result, X509_V_OK);
    finish(&t);
}
END_TEST

START_TEST(server_closing_in_the_handshake_is_a_handshake_failure)
{
    struct tls t;
    ck_assert(server_start(&t.s, fx->base, AF_INET, 0, NULL));
    t.s.raw = true;
    struct tide_tls_options o = tls_options("localhost", &t.s);
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &t.f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(t.f, &table);
    pool_start(&t.tp, &table, 0);
    memset(&t.g, 0, sizeof t.g);
    ck_assert_int_eq(tide_evpool_acquire(t.tp.pool, 0, pool_record, &t.g, NULL),
                     0);
    run_ms(50);
    ck_assert_int_eq(t.s.accepted, 1);
    server_close_all(&t.s);
    ck_assert(run_until(answered, &t.g, 3000));
    ck_assert_int_eq(t.g.status, TIDE_EHANDSHAKE);
    finish(&t);
}
END_TEST

START_TEST(tls12_server_is_reached)
{
    struct tls t;
    serve(&t, fx->pki.good, TLS1_2_VERSION);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_int_eq(SSL_version(bufferevent_openssl_get_ssl(t.g.bev)),
                     TLS1_2_VERSION);
    finish(&t);
}
END_TEST

START_TEST(tls13_minimum_refuses_a_tls12_server)
{
    struct tls t;
    serve(&t, fx->pki.good, TLS1_2_VERSION);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.min_version = TLS1_3_VERSION;
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, TIDE_EHANDSHAKE);
    finish(&t);
}
END_TEST

START_TEST(ca_file_is_loaded)
{
    char path[PATH_MAX];
    ck_assert(pki_write(fx->pki.ca, NULL, path));
    struct tls t;
    serve(&t, fx->pki.good, 0);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.ca_pem = NULL;
    o.ca_file = path;
    connect_with(&t, &o);
    unlink(path);
    ck_assert_int_eq(t.g.status, 0);
    finish(&t);
}
END_TEST

START_TEST(system_store_does_not_trust_the_test_ca)
{
    struct tls t;
    serve(&t, fx->pki.good, 0);
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.ca_pem = NULL; /* the system's CAs (or none at all) */
    connect_with(&t, &o);
    ck_assert_int_eq(t.g.status, TIDE_EUNTRUSTED);
    finish(&t);
}
END_TEST

START_TEST(unloadable_context_is_a_config_error)
{
    struct tide_tls_factory *f = (void *)1;
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = 443},
        .ca_file = "/nonexistent/tidepool/ca.pem",
    };
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    ck_assert_ptr_null(f);
    ck_assert_uint_ne(ERR_peek_last_error(), 0); /* OpenSSL says why */
    ERR_clear_error();
    o.ca_file = NULL;
    o.ca_pem = "not a certificate";
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    ERR_clear_error();
    o.ca_pem = NULL;
    o.cert_file = "/nonexistent/tidepool/cert.pem";
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    ERR_clear_error();
}
END_TEST

/* The data OpenSSL's queue holds for a failed creation, all of it in one
 * string: what a program prints with ERR_print_errors. */
static void queued_text(char *buf, size_t len)
{
    buf[0] = '\0';
    const char *data;
    int flags;
    unsigned long e;
    size_t n = 0;
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof one);
        n += (size_t)snprintf(buf + n, len - n, "%s:%s\n", one,
                              (flags & ERR_TXT_STRING) ? data : "");
        if (n >= len)
            break;
    }
}

/* A file that will not load is named, with the option it was given as, so
 * a person can tell which of several files to fix. */
START_TEST(config_errors_name_the_option_and_the_file)
{
    char notpem[PATH_MAX];
    ck_assert(pki_write(fx->pki.ca, NULL, notpem));
    FILE *w = fopen(notpem, "w");
    ck_assert_ptr_nonnull(w);
    fputs("not a certificate\n", w);
    fclose(w);
    char text[2048];
    struct tide_tls_factory *f;
    struct tide_tls_options o = {.tcp = {.host = "localhost", .port = 443}};

    o.ca_file = notpem;
    ERR_clear_error();
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    queued_text(text, sizeof text);
    ck_assert_msg(strstr(text, "ca_file") && strstr(text, notpem), "%s", text);

    o.ca_file = NULL;
    o.cert_file = "/nonexistent/tidepool/cert.pem";
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    queued_text(text, sizeof text);
    ck_assert_msg(strstr(text, "cert_file") &&
                      strstr(text, "/nonexistent/tidepool/cert.pem"),
                  "%s", text);

    o.cert_file = notpem;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    queued_text(text, sizeof text);
    ck_assert_msg(strstr(text, "cert_file") && strstr(text, notpem), "%s",
                  text);
    unlink(notpem);
}
END_TEST

/* OpenSSL takes any string as a hashed directory and finds nothing in it at
 * handshake time; a directory that is not there is refused at creation,
 * named, instead of every handshake failing as untrusted. */
START_TEST(missing_ca_dir_is_a_config_error)
{
    char text[2048];
    struct tide_tls_factory *f = (void *)1;
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = 443},
        .ca_dir = "/nonexistent/tidepool/certs",
    };
    ERR_clear_error();
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    ck_assert_ptr_null(f);
    queued_text(text, sizeof text);
    ck_assert_msg(strstr(text, "ca_dir") &&
                      strstr(text, "/nonexistent/tidepool/certs"),
                  "%s", text);

    char file[PATH_MAX]; /* a file where a directory should be */
    ck_assert(pki_write(fx->pki.ca, NULL, file));
    o.ca_dir = file;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_ETLS_CONFIG);
    ERR_clear_error();
    unlink(file);

    o.ca_dir = "/tmp"; /* a directory, even one with no CA in it */
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), 0);
    tide_tls_factory_free(f);
}
END_TEST

START_TEST(bad_tls_options_are_refused)
{
    struct tide_tls_factory *f;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    const struct tide_tls_options bad[] = {
        {.tcp = {.port = 443}},
        {.tcp = {.host = "h.test", .port = 443}, .min_version = TLS1_1_VERSION},
        {.tcp = {.host = "h.test", .port = 443}, .max_version = 0x0305},
        {.tcp = {.host = "h.test", .port = 443},
         .min_version = TLS1_3_VERSION,
         .max_version = TLS1_2_VERSION},
        {.tcp = {.host = "h.test", .port = 443}, .ctx = ctx, .ca_pem = "x"},
        {.tcp = {.host = "h.test", .port = 443}, .key_file = "k.pem"},
        {.tcp = {.host = "h.test", .port = 443},
         .insecure_skip_verify = true,
         .verify_name = "h.test"},
        {.tcp = {.host = "h.test", .port = 443}, .handshake_timeout = -1},
        {.tcp = {.host = "h.test", .port = 443},
         .alpn = (const char *[]){"", NULL}},
        {.tcp = {.host = "h.test", .port = 443},
         .alpn = (const char *[]){NULL}},
        {.tcp = {.host = "h.test", .port = 443}, .alpn_required = true},
        {.tcp = {.host = "h.test", .port = 443}, .sni = "10.0.0.1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = (void *)1;
        ck_assert_msg(tide_tls_factory_new(fx->base, &bad[i], &f) ==
                          TIDE_EINVAL,
                      "case %zu accepted", i);
        ck_assert_ptr_null(f);
    }
    SSL_CTX_free(ctx);
    ERR_clear_error();
}
END_TEST

/* A name SNI cannot carry (RFC 6066: at most 255 bytes) is refused when the
 * factory is made, not found out by every make as a failure to set up the
 * connection. */
START_TEST(sni_longer_than_255_bytes_is_refused)
{
    char name[300];
    memset(name, 'a', sizeof name);
    name[256] = '\0';
    struct tide_tls_factory *f = (void *)1;
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = 443},
        .sni = name,
    };
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);

    /* over a Unix socket the SNI is verify_name's, unless sni says "" */
    struct tide_tls_options u = {
        .tcp = {.path = "/nonexistent/tidepool.sock"},
        .verify_name = name,
    };
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &u, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    u.sni = "";
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &u, &f), 0);
    tide_tls_factory_free(f);

    name[255] = '\0'; /* the longest that fits */
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), 0);
    tide_tls_factory_free(f);
    ERR_clear_error();
}
END_TEST

START_TEST(callers_context_is_used)
{
    struct tls t;
    serve(&t, fx->pki.good, 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), fx->pki.ca);
    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = t.s.port},
        .ctx = ctx,
    };
    connect_with(&t, &o);
    SSL_CTX_free(ctx); /* the factory holds its own reference */
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_int_eq(SSL_version(bufferevent_openssl_get_ssl(t.g.bev)),
                     TLS1_2_VERSION);
    finish(&t);
}
END_TEST

START_TEST(callers_context_is_still_verified)
{
    /* a bare context verifies nothing by itself: the factory turns
     * verification on per connection */
    struct tls t;
    serve(&t, fx->pki.other, 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), fx->pki.ca);
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = t.s.port},
        .ctx = ctx,
    };
    connect_with(&t, &o);
    SSL_CTX_free(ctx);
    ck_assert_int_eq(t.g.status, TIDE_ENAME_MISMATCH);
    finish(&t);
}
END_TEST

START_TEST(client_certificate_is_presented)
{
    char cert[PATH_MAX];
    ck_assert(pki_write(fx->pki.client, fx->pki.key, cert));
    struct tls t;
    SSL_CTX *sctx =
        server_ctx(fx->pki.good, fx->pki.key, 0, 0, fx->pki.ca /* verify */);
    ck_assert(server_start(&t.s, fx->base, AF_INET, 0, sctx));
    struct tide_tls_options o = tls_options("localhost", &t.s);
    o.cert_file = cert; /* the key is in the same file */
    connect_with(&t, &o);
    unlink(cert);
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(echo(t.g.bev, "mutual", 2000), "mutual");
    finish(&t);
}
END_TEST

START_TEST(missing_client_certificate_fails)
{
    struct tls t;
    SSL_CTX *sctx = server_ctx(fx->pki.good, fx->pki.key, 0, 0, fx->pki.ca);
    ck_assert(server_start(&t.s, fx->base, AF_INET, 0, sctx));
    struct tide_tls_options o = tls_options("localhost", &t.s);
    connect_with(&t, &o);
    /* TLS 1.3: the client's handshake is done before the server refuses;
     * the refusal comes as an alert on the first read */
    if (t.g.status == 0) {
        struct got *g = &t.g;
        ck_assert_str_eq(echo(g->bev, "x", 1000), "");
        ck_assert_int_eq(tide_evpool_discard(t.tp.pool, g->bev), 0);
        g->calls = 0;
    } else {
        ck_assert_int_eq(t.g.status, TIDE_EHANDSHAKE);
    }
    finish(&t);
}
END_TEST

static bool server_saw_close(void *arg)
{
    return ((struct test_server *)arg)->closed_by_peer > 0;
}

START_TEST(close_sends_close_notify)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_int_eq(t.g.status, 0);
    ck_assert_str_eq(echo(t.g.bev, "bye", 2000), "bye");
    struct server_conn *c = t.s.conns;
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, t.g.bev), 0);
    t.g.calls = 0;
    pool_stop(&t.tp); /* destroys the idle connection */
    ck_assert(run_until(server_saw_close, &t.s, 2000));
    (void)c; /* freed by the server on the event */
    /* the server read a close_notify (EOF), not a bare FIN (an error) */
    ck_assert_int_eq(t.s.closed_by_peer, 1);
    ck_assert_int_eq(t.s.closed_cleanly, 1);
    ck_assert_int_eq(stats(&t).live, 0);
    tide_tls_factory_free(t.f);
    server_stop(&t.s);
}
END_TEST

static bool one_lost(void *arg)
{
    return stats(arg).lost >= 1;
}

START_TEST(idle_close_notify_is_dropped)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_str_eq(echo(t.g.bev, "warm", 2000), "warm");
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, t.g.bev), 0);
    t.g.calls = 0;
    server_close_all(&t.s); /* close_notify, then FIN */
    ck_assert(run_until(one_lost, &t, 2000));
    ck_assert_int_eq(stats(&t).lost_data, 0);
    finish(&t);
}
END_TEST

START_TEST(idle_reset_is_dropped)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_str_eq(echo(t.g.bev, "warm", 2000), "warm");
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, t.g.bev), 0);
    t.g.calls = 0;
    server_reset_all(&t.s);
    ck_assert(run_until(one_lost, &t, 2000));
    finish(&t);
}
END_TEST

START_TEST(idle_application_bytes_are_dropped)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_str_eq(echo(t.g.bev, "warm", 2000), "warm");
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, t.g.bev), 0);
    t.g.calls = 0;
    server_send_all(&t.s, "421 idle too long\r\n");
    ck_assert(run_until(one_lost, &t, 2000));
    ck_assert_int_eq(stats(&t).lost_data, 1);
    finish(&t);
}
END_TEST

struct classified {
    int code;
    struct tide_net_detail d;
};

static void classify_event(struct bufferevent *bev, short what, void *arg)
{
    struct classified *c = arg;
    c->code = tide_net_event_error(bev, what, &c->d, NULL, 0);
}

static bool server_handshaken(void *arg)
{
    return ((struct test_server *)arg)->handshakes > 0;
}

static bool classified(void *arg)
{
    return ((struct classified *)arg)->code != 0;
}

START_TEST(reset_mid_loan_goes_to_discard)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    ck_assert_int_eq(t.g.status, 0);
    struct classified c = {0};
    bufferevent_setcb(t.g.bev, NULL, NULL, classify_event, &c);
    server_reset_all(&t.s);
    ck_assert(run_until(classified, &c, 2000));
    ck_assert_int_eq(c.code, TIDE_ECONN_BROKEN);
    ck_assert_int_eq(c.d.sys_errno, ECONNRESET);
    ck_assert_int_eq(tide_evpool_discard(t.tp.pool, t.g.bev), 0);
    t.g.calls = 0;
    ck_assert_int_eq(stats(&t).live, 0);
    finish(&t);
}
END_TEST

START_TEST(peer_close_mid_loan_reads_as_peer_closed)
{
    struct tls t;
    dial(&t, fx->pki.good, "localhost");
    /* the server must have read the client's Finished: a socket closed
     * with unread bytes sends a reset, not a FIN */
    ck_assert(run_until(server_handshaken, &t.s, 2000));
    struct classified c = {0};
    bufferevent_setcb(t.g.bev, NULL, NULL, classify_event, &c);
    server_close_all(&t.s);
    ck_assert(run_until(classified, &c, 2000));
    ck_assert_int_eq(c.code, TIDE_EPEER_CLOSED);
    ck_assert_int_eq(tide_evpool_discard(t.tp.pool, t.g.bev), 0);
    t.g.calls = 0;
    finish(&t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("verify");
    fixture_add(tc);
    tcase_add_test(tc, verified_connection_carries_data);
    tcase_add_test(tc, ip_literal_is_verified_against_the_ip);
    tcase_add_test(tc, self_signed_certificate_is_untrusted);
    tcase_add_test(tc, unknown_issuer_is_untrusted);
    tcase_add_test(tc, wrong_name_is_a_name_mismatch);
    tcase_add_test(tc, wrong_ip_is_a_name_mismatch);
    tcase_add_test(tc, certificate_without_a_san_is_a_name_mismatch);
    tcase_add_test(tc, common_name_is_not_read_beside_an_ip_san);
    tcase_add_test(tc, empty_verify_name_is_refused);
    tcase_add_test(tc, verify_name_overrides_the_host);
    tcase_add_test(tc, trailing_dot_host_is_verified_without_the_dot);
    tcase_add_test(tc, expired_certificate_is_expired);
    tcase_add_test(tc, insecure_option_accepts_anything);
    suite_add_tcase(s, tc);

    tc = tcase_create("handshake");
    fixture_add(tc);
    tcase_add_test(tc, sni_is_seen_by_the_server);
    tcase_add_test(tc, sni_can_be_left_out);
    tcase_add_test(tc, alpn_is_negotiated_and_readable);
    tcase_add_test(tc, alpn_nothing_chosen_reads_empty);
    tcase_add_test(tc, alpn_required_fails_when_nothing_is_chosen);
    tcase_add_test(tc, silent_server_is_a_handshake_timeout);
    tcase_add_test(tc, make_cancelled_in_the_handshake_leaves_nothing);
    tcase_add_test(tc, plain_server_is_a_handshake_failure);
    tcase_add_test(tc, server_closing_in_the_handshake_is_a_handshake_failure);
    tcase_add_test(tc, tls12_server_is_reached);
    tcase_add_test(tc, tls13_minimum_refuses_a_tls12_server);
    suite_add_tcase(s, tc);

    tc = tcase_create("context");
    fixture_add(tc);
    tcase_add_test(tc, ca_file_is_loaded);
    tcase_add_test(tc, system_store_does_not_trust_the_test_ca);
    tcase_add_test(tc, unloadable_context_is_a_config_error);
    tcase_add_test(tc, config_errors_name_the_option_and_the_file);
    tcase_add_test(tc, missing_ca_dir_is_a_config_error);
    tcase_add_test(tc, bad_tls_options_are_refused);
    tcase_add_test(tc, sni_longer_than_255_bytes_is_refused);
    tcase_add_test(tc, callers_context_is_used);
    tcase_add_test(tc, callers_context_is_still_verified);
    tcase_add_test(tc, client_certificate_is_presented);
    tcase_add_test(tc, missing_client_certificate_fails);
    suite_add_tcase(s, tc);

    tc = tcase_create("lifecycle");
    fixture_add(tc);
    tcase_add_test(tc, close_sends_close_notify);
    tcase_add_test(tc, idle_close_notify_is_dropped);
    tcase_add_test(tc, idle_reset_is_dropped);
    tcase_add_test(tc, idle_application_bytes_are_dropped);
    tcase_add_test(tc, reset_mid_loan_goes_to_discard);
    tcase_add_test(tc, peer_close_mid_loan_reads_as_peer_closed);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
