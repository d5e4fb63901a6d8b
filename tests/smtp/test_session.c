/* demos/smtp/session.c and probe.c against a real aiosmtpd: a plaintext
 * session carries message after message (RSET between them, QUIT at the
 * end); STARTTLS upgrades it on the same socket, verified, resumed on the
 * next session; a server that requires STARTTLS refuses a plaintext
 * sender in its own words; an idle session is NOOPed and kept; a certificate
 * with the wrong name, a server without STARTTLS, AUTH right and wrong;
 * credentials never sent in plaintext unless asked; a server greeting 421 is
 * not stormed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static const char *const one[] = {"rcpt@test.example"};

static struct tide_smtp_options
starttls_options(const struct tide_tls_options *tls, int64_t size)
{
    struct tide_smtp_options o = plain_options(size);
    o.tls = tls;
    o.starttls = true;
    return o;
}

START_TEST(plain_session_carries_message_after_message)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_smtp_options o = plain_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "p%d", i);
        struct sent a = send_wait(s, id, one, 1, "hello\r\n", 5000);
        ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
        ck_assert_int_eq(a.reply, 250);
        ck_assert_uint_eq(a.accepted, 1);
    }
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.conns, 1); /* one session for all five */
    ck_assert_int_eq(r.n, 5);
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "p%d", i);
        ck_assert_int_eq(smtp_record_count(&r, id), 1);
    }
    ck_assert_str_eq(r.msgs[0].rcpts, "rcpt@test.example");
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.net.made, 1);
    ck_assert_uint_eq(st.resets, 5); /* RSET after each */
    ck_assert_uint_eq(st.quits, 1);  /* QUIT when closed */
    ck_assert_uint_eq(st.pool.reset_failures, 0);
}
END_TEST

/* An idle session is NOOPed by the pool's health check, answered 250, and
 * stays: the next message goes on it. */
START_TEST(idle_session_is_nooped_and_kept)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_smtp_options o = plain_options(1);
    o.pool.health_interval = TIDE_MS(100);
    struct tide_smtp_sender *s = sender_new(&o);
    struct sent a = send_wait(s, "h1", one, 1, "before\r\n", 5000);
    ck_assert_int_eq(a.status, 0);
    run_ms(500);
    a = send_wait(s, "h2", one, 1, "after\r\n", 5000);
    ck_assert_int_eq(a.status, 0);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.conns, 1);
    ck_assert_int_eq(r.n, 2);
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_ge(st.checks, 2);
    ck_assert_uint_eq(st.pool.health_failures, 0);
}
END_TEST

START_TEST(starttls_upgrades_the_session_and_resumes_the_next)
{
    server_up(&(struct smtp_server_opts){
        .cert = sx->pki.good, .key = sx->pki.key, .require_starttls = true});
    struct tide_tls_options tls = tls_options(NULL);
    struct tide_smtp_options o = starttls_options(&tls, 1);
    o.max_messages = 2; /* a second session for the third message */
    struct tide_smtp_sender *s = sender_new(&o);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%d", i);
        struct sent a = send_wait(s, id, one, 1, "over tls\r\n", 5000);
        ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    }
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 3);
    ck_assert_int_eq(r.conns, 2);
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.net.made, 2);
    ck_assert_uint_eq(st.net.resumed, 1); /* as a direct TLS connection */
}
END_TEST

START_TEST(starttls_required_refuses_a_plaintext_sender_in_its_words)
{
    server_up(&(struct smtp_server_opts){
        .cert = sx->pki.good, .key = sx->pki.key, .require_starttls = true});
    struct tide_smtp_options o = plain_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    struct sent a = send_wait(s, "x", one, 1, "plain\r\n", 5000);
    ck_assert_int_eq(a.status, TIDE_SMTP_EPERMANENT);
    ck_assert_int_eq(a.reply, 530);
    ck_assert_msg(strstr(a.text, "STARTTLS"), "%s", a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 0);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

/* A certificate the sender cannot trust (self-signed, from a CA no one
 * trusts, expired, for another name) ends the opening after STARTTLS with
 * the code (and the reason, `why`, when not NULL), and no byte of a
 * message is sent: in plaintext, the message would go to whoever
 * answered. */
static void bad_certificate_is_refused(X509 *cert, int code, const char *why)
{
    server_up(&(struct smtp_server_opts){
        .cert = cert, .key = sx->pki.key, .require_starttls = true});
    struct tide_tls_options tls = tls_options("localhost");
    struct tide_smtp_options o = starttls_options(&tls, 1);
    struct tide_smtp_sender *s = sender_new(&o);
    struct sent a = send_wait(s, "x", one, 1, "secret\r\n", 5000);
    ck_assert_msg(a.status == code, "%d %s", a.status, a.text);
    if (why)
        ck_assert_msg(strstr(a.text, why), "%s", a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 0);
    ck_assert_int_ge(r.conns, 1);
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.net.made, 0);
}

START_TEST(certificate_with_the_wrong_name_is_refused)
{
    bad_certificate_is_refused(sx->pki.other, TIDE_ENAME_MISMATCH, NULL);
}
END_TEST

START_TEST(self_signed_certificate_is_refused)
{
    bad_certificate_is_refused(sx->pki.self, TIDE_EUNTRUSTED, "self-signed");
}
END_TEST

START_TEST(certificate_from_an_unknown_ca_is_refused)
{
    bad_certificate_is_refused(sx->pki.stranger, TIDE_EUNTRUSTED, "issuer");
}
END_TEST

START_TEST(expired_certificate_is_refused)
{
    bad_certificate_is_refused(sx->pki.expired, TIDE_EEXPIRED, "expired");
}
END_TEST

START_TEST(server_without_starttls_fails_the_upgrade)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_tls_options tls = tls_options(NULL);
    struct tide_smtp_options o = starttls_options(&tls, 1);
    struct tide_smtp_sender *s = sender_new(&o);
    struct sent a = send_wait(s, "x", one, 1, "secret\r\n", 5000);
    ck_assert_int_eq(a.status, TIDE_EUPGRADE_UNOFFERED);
    ck_assert_msg(strstr(a.text, "STARTTLS"), "%s", a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 0);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(auth_right_once_per_session)
{
    server_up(&(struct smtp_server_opts){.cert = sx->pki.good,
                                         .key = sx->pki.key,
                                         .require_starttls = true,
                                         .auth = "mailer:s3cret"});
    struct tide_tls_options tls = tls_options(NULL);
    struct tide_smtp_options o = starttls_options(&tls, 1);
    o.user = "mailer";
    o.password = "s3cret";
    struct tide_smtp_sender *s = sender_new(&o);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "a%d", i);
        struct sent a = send_wait(s, id, one, 1, "authed\r\n", 5000);
        ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    }
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 3);
    ck_assert_int_eq(r.auth_ok, 1);
    ck_assert_int_eq(r.auth_bad, 0);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(auth_wrong_fails_in_the_servers_words)
{
    server_up(&(struct smtp_server_opts){.cert = sx->pki.good,
                                         .key = sx->pki.key,
                                         .require_starttls = true,
                                         .auth = "mailer:s3cret"});
    struct tide_tls_options tls = tls_options(NULL);
    struct tide_smtp_options o = starttls_options(&tls, 1);
    o.user = "mailer";
    o.password = "wrong";
    struct tide_smtp_sender *s = sender_new(&o);
    struct sent a = send_wait(s, "x", one, 1, "never\r\n", 5000);
    ck_assert_int_eq(a.status, TIDE_SMTP_EAUTH);
    ck_assert_msg(strstr(a.text, "535"), "%s", a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 0);
    ck_assert_int_ge(r.auth_bad, 1);
    ck_assert_int_eq(r.auth_ok, 0);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(credentials_in_plaintext_only_when_asked_loudly)
{
    struct tide_smtp_sender *s = NULL;
    struct tide_smtp_options o = {
        .tcp = {.host = "127.0.0.1", .port = 2525},
        .user = "u",
        .password = "p",
    };
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &o, &s), TIDE_EINVAL);
    ck_assert_ptr_null(s);
    o.insecure_auth_over_plaintext = true;
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &o, &s), 0);
    tide_smtp_sender_free(s);
    /* and the other refusals */
    struct tide_smtp_options bad = {.tcp = {.host = "127.0.0.1", .port = 1},
                                    .starttls = true}; /* without tls */
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &bad, &s), TIDE_EINVAL);
    bad.starttls = false;
    bad.user = "u"; /* without a password */
    bad.insecure_auth_over_plaintext = true;
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &bad, &s), TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, NULL, &s), TIDE_EINVAL);
    const char *to[] = {"a@b"};
    ck_assert_int_eq(tide_smtp_send(NULL, "a@b", to, 1, "x", 1, on_sent, NULL),
                     TIDE_EINVAL);
}
END_TEST

struct storm {
    struct tide_smtp_sender *s;
    struct sent a;
    int answers;
    int bad; /* answers other than the 421 refusal */
};

static void on_storm(struct tide_smtp_sender *s, int status,
                     const struct tide_smtp_result *r, void *arg)
{
    struct storm *st = arg;
    st->answers++;
    if (status != TIDE_SMTP_ETEMPORARY || !strstr(r->text, "421"))
        st->bad++;
    (void)s;
}

START_TEST(greeting_421_is_not_stormed)
{
    server_up(&(struct smtp_server_opts){.greet421 = true});
    struct tide_smtp_options o = plain_options(2);
    struct tide_smtp_sender *s = sender_new(&o);
    struct storm st = {.s = s};
    char *text = message_text("g", "busy\r\n");
    /* callers that keep asking for 2 s, each answered at once */
    int64_t end = now_ms() + 2000;
    int sent = 0;
    while (now_ms() < end && sent < 400) {
        if (st.answers == sent) {
            ck_assert_int_eq(tide_smtp_send(s, "a@test.example", one, 1, text,
                                            strlen(text), on_storm, &st),
                             0);
            sent++;
        }
        run_ms(5);
    }
    run_ms(1500);
    free(text);
    ck_assert_int_eq(st.answers, sent);
    ck_assert_int_ge(sent, 2);
    ck_assert_int_eq(st.bad, 0);
    struct smtp_record r = record_now();
    /* the backoff (100 ms doubling to 1 s) spaces them: a handful, not
     * hundreds */
    ck_assert_msg(r.conns >= 2 && r.conns <= 12, "%d connects", r.conns);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("session");
    smtp_fixture_add(tc, 60);
    tcase_add_test(tc, plain_session_carries_message_after_message);
    tcase_add_test(tc, idle_session_is_nooped_and_kept);
    tcase_add_test(tc, starttls_upgrades_the_session_and_resumes_the_next);
    tcase_add_test(tc,
                   starttls_required_refuses_a_plaintext_sender_in_its_words);
    tcase_add_test(tc, certificate_with_the_wrong_name_is_refused);
    tcase_add_test(tc, self_signed_certificate_is_refused);
    tcase_add_test(tc, certificate_from_an_unknown_ca_is_refused);
    tcase_add_test(tc, expired_certificate_is_refused);
    tcase_add_test(tc, server_without_starttls_fails_the_upgrade);
    tcase_add_test(tc, auth_right_once_per_session);
    tcase_add_test(tc, auth_wrong_fails_in_the_servers_words);
    tcase_add_test(tc, credentials_in_plaintext_only_when_asked_loudly);
    tcase_add_test(tc, greeting_421_is_not_stormed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return smtp_test_main(suite);
}
