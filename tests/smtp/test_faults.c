/* demos/smtp against the faults a real server shows now and then, played by
 * the scripted server in fake.h on the test's own loop. Before the final
 * ".": a session that stops reading in the middle of a message, a reset
 * after RCPT, stale sessions one after another, fresh ones that keep
 * breaking. After it: no verdict, a reset, a verdict with more behind it,
 * a refusal (554) and the session's reuse. While a session opens: a reply
 * out of turn, bytes behind STARTTLS's go-ahead, a server that knows no
 * EHLO. A RSET answered with an error; many messages at once, each
 * answered with its own verdict. And what a caller gets wrong: NULL
 * arguments, CR/LF in an address or the EHLO name, an empty recipient, an
 * EHLO name too long to send. No aiosmtpd is needed: these run
 * everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "fixture.h"

static const char *const one[] = {"rcpt@test.example"};

static struct fake_server fake;

static void fake_up(const struct fake_rule *rules, size_t n)
{
    ck_assert(fake_start(&fake, sx->base, rules, n));
}

static struct tide_smtp_options fake_options(int64_t size)
{
    return (struct tide_smtp_options){
        .tcp = {.host = "127.0.0.1", .port = fake.port},
        .pool = {.limits = TIDE_LIMITS(.size = size), .seed = 1},
        .reply_timeout = TIDE_MS(300),
        .timeout = TIDE_SEC(8),
    };
}

/* The scripted server up with these rules, and a sender with a pool of
 * `size` to it: how every scenario here begins. */
static struct tide_smtp_sender *fake_sender(const struct fake_rule *rules,
                                            size_t n, int64_t size)
{
    fake_up(rules, n);
    struct tide_smtp_options o = fake_options(size);
    return sender_new(&o);
}

/* As fake_sender with a pool of 1 whose sessions open in plaintext and go
 * over to TLS by STARTTLS, verifying "localhost". The TLS options may end
 * here: the sender borrows them for its creation only. */
static struct tide_smtp_sender *
fake_starttls_sender(const struct fake_rule *rules, size_t n)
{
    fake_up(rules, n);
    struct tide_tls_options tls = tls_options("localhost");
    struct tide_smtp_options o = fake_options(1);
    o.tls = &tls;
    o.starttls = true;
    return sender_new(&o);
}

/* A message size the kernel cannot take in whole from a sender whose peer
 * reads nothing: twice the largest send buffer TCP may grow to (the
 * buffer's accounting lets about half of it hold data; 2 MiB of a 4 MiB
 * message stayed with the sender here), and a MiB more. */
static size_t beyond_the_kernel(void)
{
    long long lo, def, max = 4 << 20;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    if (f) {
        if (fscanf(f, "%lld %lld %lld", &lo, &def, &max) != 3)
            max = 4 << 20;
        fclose(f);
    }
    if (max < (4 << 20))
        max = 4 << 20;
    return (size_t)max * 2 + (1u << 20);
}

static void end(struct tide_smtp_sender *s)
{
    sender_end(s);
    fake_stop(&fake);
}

/* A message larger than the socket buffers can hold, to a server that answers
 * DATA with 354 and then reads nothing: its "." never leaves the sender,
 * so nothing can have been delivered. The stall is the session's fault,
 * not the message's: it goes again on a new session and arrives there,
 * and it is never reported as "may have been delivered". */
START_TEST(stalled_upload_is_sent_again_not_maybe_delivered)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_DATA, .conn = 1, .act = FAKE_STALL, .reply = "354 go\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    size_t big = beyond_the_kernel();
    char *body = malloc(big + 1);
    ck_assert_ptr_nonnull(body);
    for (size_t i = 0; i < big; i++)
        body[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
    body[big] = '\0';
    struct sent a = send_wait(s, "big", one, 1, body, 8000);
    free(body);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.attempts, 2);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 1); /* on the second session */
    ck_assert_uint_ge(fake.last_body, big);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.retried, 1);
    fake_stop(&fake);
}
END_TEST

/* Both sessions stall: the message fails, as not delivered (a timeout),
 * never as TIDE_SMTP_EUNKNOWN. */
START_TEST(stalled_upload_everywhere_fails_as_not_delivered)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_DATA, .act = FAKE_STALL, .reply = "354 go\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    size_t big = beyond_the_kernel();
    char *body = calloc(1, big + 1);
    ck_assert_ptr_nonnull(body);
    memset(body, 'x', big);
    struct sent a = send_wait(s, "big", one, 1, body, 8000);
    free(body);
    ck_assert_msg(a.status != 0 && a.status != TIDE_SMTP_EUNKNOWN, "%d %s",
                  a.status, a.text);
    ck_assert_int_eq(a.attempts, 2);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 0);
    end(s);
}
END_TEST

/* After the "." the server may have taken the message: a session lost
 * before its verdict (no answer within reply_timeout, or a reset) fails
 * the message as "may have been delivered", and it is not sent again,
 * which could deliver it twice. */
static void lost_after_the_dot(enum fake_act act)
{
    const struct fake_rule rules[] = {
        {.cmd = FAKE_DOT, .act = act},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 2);
    struct sent a = send_wait(s, "d", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == TIDE_SMTP_EUNKNOWN, "%d %s", a.status, a.text);
    ck_assert_msg(strstr(a.text, "may have been delivered"), "%s", a.text);
    ck_assert_int_eq(a.attempts, 1);
    ck_assert_int_eq(a.reply, 0);
    ck_assert_int_eq(fake.accepted, 1);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 1);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.retried, 0);
    fake_stop(&fake);
}

START_TEST(no_verdict_after_the_dot_is_maybe_delivered_once)
{
    lost_after_the_dot(FAKE_HANG);
}
END_TEST

START_TEST(reset_after_the_dot_is_maybe_delivered_once)
{
    lost_after_the_dot(FAKE_RESET);
}
END_TEST

/* The server answers the "." and then says more: the first reply is the
 * verdict (the message was taken, and the caller must hear so, or it
 * would send it twice); the session is out of step and not reused. */
START_TEST(verdict_followed_by_more_is_still_the_verdict)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_DOT,
         .reply = "250 2.0.0 queued as 1\r\n250 2.0.0 and again\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "v1", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.reply, 250);
    ck_assert_msg(strstr(a.text, "queued as 1"), "%s", a.text);
    a = send_wait(s, "v2", one, 1, "again\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(fake.accepted, 2); /* the first session was dropped */
    ck_assert_int_eq(fake.seen[FAKE_RSET], 0);
    end(s);
}
END_TEST

/* A greeting with a second reply behind it, before EHLO was even sent:
 * the server is out of step, and the failed make says so, rather than
 * taking that reply for EHLO's answer (and then claiming the server does
 * not offer STARTTLS, which it does). */
START_TEST(reply_out_of_turn_in_the_opening_is_named)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_GREETING, .reply = "220 fake.test\r\n250 surprise\r\n"},
        {.cmd = FAKE_EHLO, .reply = "250-fake.test\r\n250 STARTTLS\r\n"},
    };
    struct tide_smtp_sender *s = fake_starttls_sender(rules, 2);
    struct sent a = send_wait(s, "x", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == TIDE_SMTP_EPROTOCOL, "%d %s", a.status, a.text);
    ck_assert_msg(strstr(a.text, "greeting"), "%s", a.text);
    ck_assert_int_eq(fake.seen[FAKE_MAIL], 0);
    end(s);
}
END_TEST

/* STARTTLS answered "go ahead" with a reply behind it, in plaintext: read
 * after the handshake, it would pass for the server's words over TLS (the
 * STARTTLS injection of RFC 7457 2.2). The opening fails, and no message
 * goes. */
START_TEST(bytes_after_the_starttls_go_ahead_fail_the_opening)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_EHLO, .reply = "250-fake.test\r\n250 STARTTLS\r\n"},
        {.cmd = FAKE_STARTTLS,
         .reply = "220 2.0.0 go ahead\r\n250-injected\r\n250 AUTH PLAIN\r\n"},
    };
    struct tide_smtp_sender *s = fake_starttls_sender(rules, 2);
    struct sent a = send_wait(s, "x", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == TIDE_SMTP_EPROTOCOL, "%d %s", a.status, a.text);
    ck_assert_msg(strstr(a.text, "STARTTLS"), "%s", a.text);
    ck_assert_int_ge(fake.seen[FAKE_STARTTLS], 1);
    ck_assert_int_eq(fake.seen[FAKE_MAIL], 0);
    end(s);
}
END_TEST

/* A server of the old kind, that knows no EHLO (502): the sender falls
 * back to HELO (RFC 5321 3.2) and the message goes, when nothing of EHLO's
 * was needed. With STARTTLS asked for, HELO cannot offer it: the opening
 * fails and says so. */
START_TEST(server_without_ehlo_gets_helo)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_EHLO,
         .reply = "502 5.5.2 Error: command not recognized\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "old", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(fake.seen[FAKE_HELO], 1);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 1);
    end(s);
}
END_TEST

START_TEST(server_without_ehlo_cannot_give_starttls)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_EHLO,
         .reply = "502 5.5.2 Error: command not recognized\r\n"},
    };
    struct tide_smtp_sender *s = fake_starttls_sender(rules, 1);
    struct sent a = send_wait(s, "x", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == TIDE_SMTP_EPERMANENT, "%d %s", a.status, a.text);
    ck_assert_msg(strstr(a.text, "502"), "%s", a.text);
    ck_assert_int_eq(fake.seen[FAKE_HELO], 0);
    ck_assert_int_eq(fake.seen[FAKE_MAIL], 0);
    end(s);
}
END_TEST

/* A reply of the wrong kind, neither the one asked for nor a refusal (250
 * to DATA instead of 354, 220 to EHLO): the server is out of step, which
 * is not "refused for now, try later" (TIDE_SMTP_ETEMPORARY) but a
 * protocol error, with the reply that came. */
START_TEST(wrong_kind_of_reply_to_data_is_a_protocol_error)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_DATA, .reply = "250 2.0.0 OK\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "w", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == TIDE_SMTP_EPROTOCOL, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.reply, 250);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 0);
    run_ms(50);
    ck_assert_int_eq(fake.seen[FAKE_RSET], 0); /* dropped, not reset */
    ck_assert_int_eq(fake.closed, 1);
    end(s);
}
END_TEST

START_TEST(wrong_kind_of_reply_to_ehlo_is_a_protocol_error)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_EHLO, .reply = "220 fake.test ESMTP\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "w", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == TIDE_SMTP_EPROTOCOL, "%d %s", a.status, a.text);
    ck_assert_msg(strstr(a.text, "EHLO: 220"), "%s", a.text);
    ck_assert_int_eq(fake.seen[FAKE_MAIL], 0);
    end(s);
}
END_TEST

/* The connection reset after RCPT: nothing was delivered, the message goes
 * again on a new session and arrives once. */
START_TEST(reset_after_rcpt_is_sent_again_once)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_RCPT, .conn = 1, .act = FAKE_RESET},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "r", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.attempts, 2);
    ck_assert_int_eq(a.rcpt_reply[0], 250);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 1);
    ck_assert_int_eq(fake.accepted, 2);
    end(s);
}
END_TEST

/* Every idle session died unseen (a firewall forgot them: the first write
 * on each meets a reset, and nothing arrived before to tell): a message
 * meets one stale session after another, which says nothing about the
 * server, and is sent again each time, until a fresh session carries it.
 * Nothing was delivered twice. */
static bool three_idle(void *arg)
{
    struct tide_smtp_stats st;
    tide_smtp_sender_stats(arg, &st);
    return st.pool.idle == 3;
}

START_TEST(stale_sessions_one_after_another_cost_no_message)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_MAIL, .after = 1, .act = FAKE_RESET},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 3);
    struct sent first[3];
    memset(first, 0, sizeof first);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tide_smtp_send(s, "f@test.example", one, 1, "a\r\n", 3,
                                        on_sent, &first[i]),
                         0);
    for (int i = 0; i < 3; i++) {
        ck_assert(run_until(sent_answered, &first[i], 5000));
        ck_assert_msg(first[i].status == 0, "%d %s", first[i].status,
                      first[i].text);
    }
    ck_assert(run_until(three_idle, s, 5000));
    ck_assert_int_eq(fake.accepted, 3);
    struct sent a = send_wait(s, "late", one, 1, "after a while\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.attempts, 4); /* three stale, then a fresh one */
    ck_assert_int_eq(fake.accepted, 4);
    ck_assert_int_eq(fake.seen[FAKE_DOT], 4);
    end(s);
}
END_TEST

/* A fresh session that breaks before the "." is tried again once only: a
 * server that resets every session is not hammered by each message. */
START_TEST(fresh_sessions_breaking_are_tried_twice_only)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_MAIL, .act = FAKE_RESET},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 3);
    struct sent a = send_wait(s, "x", one, 1, "hello\r\n", 5000);
    ck_assert_int_eq(a.status, TIDE_ECONN_BROKEN);
    ck_assert_int_eq(a.attempts, 2);
    ck_assert_int_eq(fake.accepted, 2);
    end(s);
}
END_TEST

/* Many messages at once on a few sessions, with sessions breaking under
 * some of them: every caller gets the verdict on its own message (the
 * server names each by its size), none another's. */
#define MANY 24

struct many {
    struct sent a[MANY];
    size_t size[MANY];
};

static bool many_done(void *arg)
{
    struct many *m = arg;
    for (int i = 0; i < MANY; i++)
        if (m->a[i].calls == 0)
            return false;
    return true;
}

START_TEST(no_caller_gets_another_callers_verdict)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_RCPT, .conn = 2, .act = FAKE_RESET},
        {.cmd = FAKE_MAIL, .conn = 3, .after = 2, .act = FAKE_RESET},
        {.cmd = FAKE_DATA,
         .conn = 4,
         .after = 1,
         .times = 1,
         .reply = "451 4.3.0 try later\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 3, 3);
    static struct many m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < MANY; i++) {
        char id[16], *body = malloc((size_t)i * 37 + 8);
        ck_assert_ptr_nonnull(body);
        snprintf(id, sizeof id, "m%d", i);
        memset(body, 'a', (size_t)i * 37 + 1);
        memcpy(body + i * 37 + 1, "\r\n", 3);
        char *text = message_text(id, body);
        free(body);
        m.size[i] = strlen(text);
        ck_assert_int_eq(tide_smtp_send(s, "f@test.example", one, 1, text,
                                        strlen(text), on_sent, &m.a[i]),
                         0);
        free(text);
    }
    ck_assert(run_until(many_done, &m, 10000));
    int delivered = 0, later = 0;
    for (int i = 0; i < MANY; i++) {
        ck_assert_int_eq(m.a[i].calls, 1);
        if (m.a[i].status != 0) {
            ck_assert_msg(m.a[i].status == TIDE_SMTP_ETEMPORARY, "%d: %d %s", i,
                          m.a[i].status, m.a[i].text);
            ck_assert_int_eq(m.a[i].reply, 451);
            later++;
            continue;
        }
        char want[64];
        snprintf(want, sizeof want, "accepted %zu bytes", m.size[i]);
        ck_assert_msg(strstr(m.a[i].text, want),
                      "message %d of %zu bytes got [%s]", i, m.size[i],
                      m.a[i].text);
        delivered++;
    }
    ck_assert_int_le(later, 1); /* the one 451, when it came */
    ck_assert_int_eq(delivered + later, MANY);
    ck_assert_int_eq(fake.seen[FAKE_DOT], delivered);
    ck_assert_int_ge(fake.accepted, 5); /* the broken ones were replaced */
    end(s);
}
END_TEST

/* RSET answered with an error: the session is not trusted again; the next
 * message goes on a new one, and the first was answered truthfully. */
START_TEST(rset_refused_closes_the_session)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_RSET, .reply = "500 5.5.1 RSET? never heard of it\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "a", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    a = send_wait(s, "b", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(fake.accepted, 2);
    ck_assert_int_eq(fake.seen[FAKE_MAIL], 2);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_ge(st.pool.reset_failures, 1);
    fake_stop(&fake);
}
END_TEST

/* 554 at the end of DATA: the caller gets that reply with its code and
 * text; the transaction is over, so after RSET the session carries the
 * next message. */
START_TEST(refused_at_the_end_of_data_keeps_the_session)
{
    static const struct fake_rule rules[] = {
        {.cmd = FAKE_DOT,
         .times = 1,
         .reply = "554 5.7.1 rejected as spam\r\n"},
    };
    struct tide_smtp_sender *s = fake_sender(rules, 1, 1);
    struct sent a = send_wait(s, "s", one, 1, "buy now\r\n", 5000);
    ck_assert_int_eq(a.status, TIDE_SMTP_EPERMANENT);
    ck_assert_int_eq(a.reply, 554);
    ck_assert_msg(strstr(a.text, "rejected as spam"), "%s", a.text);
    ck_assert_int_eq(a.attempts, 1);
    a = send_wait(s, "t", one, 1, "hello\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(fake.accepted, 1);
    ck_assert_int_ge(fake.seen[FAKE_RSET], 1);
    end(s);
}
END_TEST

/* What a caller can get wrong is refused at once, with no callback. */
static int calls;

static void count(struct tide_smtp_sender *s, int status,
                  const struct tide_smtp_result *r, void *arg)
{
    (void)s;
    (void)status;
    (void)r;
    (void)arg;
    calls++;
}

START_TEST(bad_arguments_are_refused_at_once)
{
    fake_up(NULL, 0);
    struct tide_smtp_options o = fake_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *msg = "hello\r\n";
    size_t len = strlen(msg);
    const char *empty[] = {""};
    const char *crlf[] = {"a@test.example>\r\nRCPT TO:<b@test.example"};
    const char *lf[] = {"a@test.example\nDATA"};
    const char *null[] = {"a@test.example", NULL};
    calls = 0;
    ck_assert_int_eq(tide_smtp_send(NULL, "f@t.e", one, 1, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, NULL, one, 1, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", NULL, 1, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", one, 0, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", one, 1, NULL, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", one, 1, msg, len, NULL, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", null, 2, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", crlf, 1, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", lf, 1, msg, len, count, 0),
                     TIDE_EINVAL);
    ck_assert_int_eq(
        tide_smtp_send(s, "f@t.e\r\nRSET", one, 1, msg, len, count, 0),
        TIDE_EINVAL);
    /* an empty recipient is no recipient (RCPT TO:<> is no address; some
     * servers take it, and the message would go to no one) */
    ck_assert_int_eq(tide_smtp_send(s, "f@t.e", empty, 1, msg, len, count, 0),
                     TIDE_EINVAL);
    run_ms(50);
    ck_assert_int_eq(calls, 0);
    ck_assert_int_eq(fake.seen[FAKE_MAIL], 0);
    struct tide_smtp_sender *none = NULL;
    ck_assert_int_eq(tide_smtp_sender_new(NULL, &o, &none), TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, NULL, &none), TIDE_EINVAL);
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &o, NULL), TIDE_EINVAL);
    struct tide_smtp_options bad = o;
    bad.helo_name = "me\r\nMAIL FROM:<x@y>";
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &bad, &none), TIDE_EINVAL);
    /* a name no EHLO line can carry (a domain is 255 bytes at most), which
     * would leave every session waiting for the answer to an EHLO never
     * sent */
    char long_name[1200];
    memset(long_name, 'h', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    bad.helo_name = long_name;
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &bad, &none), TIDE_EINVAL);
    bad.helo_name = "";
    ck_assert_int_eq(tide_smtp_sender_new(sx->base, &bad, &none), TIDE_EINVAL);
    ck_assert_ptr_null(none);
    end(s);
}
END_TEST

/* The null reverse-path (MAIL FROM:<>, for bounces) is a sender a caller
 * may give: "" is sent as <> and the message goes. */
START_TEST(null_reverse_path_is_sent)
{
    struct tide_smtp_sender *s = fake_sender(NULL, 0, 1);
    struct sent a;
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(
        tide_smtp_send(s, "", one, 1, "bounce\r\n", 8, on_sent, &a), 0);
    ck_assert(run_until(sent_answered, &a, 5000));
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    end(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *su = suite_create("smtp_faults");
    TCase *tc = tcase_create("faults");
    smtp_fixture_add(tc, 30);
    tcase_add_test(tc, stalled_upload_is_sent_again_not_maybe_delivered);
    tcase_add_test(tc, stalled_upload_everywhere_fails_as_not_delivered);
    tcase_add_test(tc, no_verdict_after_the_dot_is_maybe_delivered_once);
    tcase_add_test(tc, reset_after_the_dot_is_maybe_delivered_once);
    tcase_add_test(tc, verdict_followed_by_more_is_still_the_verdict);
    tcase_add_test(tc, reply_out_of_turn_in_the_opening_is_named);
    tcase_add_test(tc, bytes_after_the_starttls_go_ahead_fail_the_opening);
    tcase_add_test(tc, server_without_ehlo_gets_helo);
    tcase_add_test(tc, server_without_ehlo_cannot_give_starttls);
    tcase_add_test(tc, wrong_kind_of_reply_to_data_is_a_protocol_error);
    tcase_add_test(tc, wrong_kind_of_reply_to_ehlo_is_a_protocol_error);
    tcase_add_test(tc, reset_after_rcpt_is_sent_again_once);
    tcase_add_test(tc, stale_sessions_one_after_another_cost_no_message);
    tcase_add_test(tc, fresh_sessions_breaking_are_tried_twice_only);
    tcase_add_test(tc, no_caller_gets_another_callers_verdict);
    tcase_add_test(tc, rset_refused_closes_the_session);
    tcase_add_test(tc, refused_at_the_end_of_data_keeps_the_session);
    tcase_add_test(tc, bad_arguments_are_refused_at_once);
    tcase_add_test(tc, null_reverse_path_is_sent);
    suite_add_tcase(su, tc);
    return su;
}

TIDE_TEST_MAIN(suite)
