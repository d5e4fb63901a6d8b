/* demos/smtp/send.c against a real aiosmtpd: one recipient refused with
 * 550 while the others get the message; lines starting with "." and bare
 * LF arrive intact; a message every recipient refuses leaves the session
 * clean for the next; one past the server's size limit gets its 552; the
 * server's idle timeout closing sessions between messages costs no sender
 * an error, nor does a session that dies at MAIL FROM (closed, or after a
 * 421); a restart mid-batch delivers every message at most once and
 * reports each success truthfully; the per-session message limit; many
 * messages at a concurrency of 8 on a handful of sessions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

START_TEST(one_recipient_refused_while_the_others_get_it)
{
    server_up(&(struct smtp_server_opts){.refuse = "nobody@test.example"});
    struct tide_smtp_options o = plain_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *to[] = {"a@test.example", "nobody@test.example",
                        "b@test.example"};
    struct sent a = send_wait(s, "r1", to, 3, "to some\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_uint_eq(a.accepted, 2);
    ck_assert_int_eq(a.rcpt_reply[0], 250);
    ck_assert_int_eq(a.rcpt_reply[1], 550);
    ck_assert_int_eq(a.rcpt_reply[2], 250);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 1);
    ck_assert_str_eq(r.msgs[0].rcpts, "a@test.example,b@test.example");
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(every_recipient_refused_leaves_the_session_clean)
{
    server_up(&(struct smtp_server_opts){.refuse = "nobody@test.example"});
    struct tide_smtp_options o = plain_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *nobody[] = {"nobody@test.example"};
    struct sent a = send_wait(s, "n1", nobody, 1, "x\r\n", 5000);
    ck_assert_int_eq(a.status, TIDE_SMTP_EPERMANENT);
    ck_assert_int_eq(a.reply, 550);
    ck_assert_msg(strstr(a.text, "no such user"), "%s", a.text);
    const char *one[] = {"a@test.example"};
    a = send_wait(s, "n2", one, 1, "y\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 1);
    ck_assert_str_eq(r.msgs[0].id, "n2");
    ck_assert_str_eq(r.msgs[0].rcpts, "a@test.example"); /* none left over */
    ck_assert_int_eq(r.conns, 1);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(dots_and_bare_line_ends_arrive_intact)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_smtp_options o = plain_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *one[] = {"a@test.example"};
    const char *body = ".starts with a dot\n..two dots\n.\nbare lf\nbare "
                       "cr\rcrlf\r\nlast line without an end";
    struct sent a = send_wait(s, "d1", one, 1, body, 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 1);
    const char *want = "X-Test-Id: d1\r\nSubject: test\r\n\r\n"
                       ".starts with a dot\r\n..two dots\r\n.\r\nbare lf\r\n"
                       "bare cr\r\ncrlf\r\nlast line without an end\r\n";
    ck_assert_uint_eq(r.msgs[0].len, strlen(want));
    ck_assert_str_eq(r.msgs[0].content, want);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

/* A message past aiosmtpd's size limit (32 MiB): the caller gets the 552
 * with its text, and the next message goes as usual. */
START_TEST(message_past_the_servers_limit_gets_its_552)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_smtp_options o = plain_options(1);
    o.reply_timeout = TIDE_SEC(30);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *one[] = {"a@test.example"};
    size_t big = (33u << 20) + 1000;
    char *body = malloc(big + 1);
    ck_assert_ptr_nonnull(body);
    for (size_t i = 0; i < big; i++)
        body[i] = i % 100 == 99 ? '\n' : 'z';
    body[big] = '\0';
    struct sent a = send_wait(s, "huge", one, 1, body, 40000);
    free(body);
    ck_assert_msg(a.status == TIDE_SMTP_EPERMANENT, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.reply, 552);
    ck_assert_msg(strstr(a.text, "Too much mail data"), "%s", a.text);
    a = send_wait(s, "small", one, 1, "after the huge one\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 1);
    ck_assert_str_eq(r.msgs[0].id, "small");
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(idle_timeout_between_messages_costs_no_error)
{
    server_up(&(struct smtp_server_opts){.timeout_ms = 300});
    struct tide_smtp_options o = plain_options(2);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *one[] = {"a@test.example"};
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "i%d", i);
        struct sent a = send_wait(s, id, one, 1, "after a pause\r\n", 5000);
        ck_assert_msg(a.status == 0, "message %d: %d %s", i, a.status, a.text);
        run_ms(700); /* the server closes the idle session meanwhile */
    }
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 3);
    ck_assert_int_eq(r.conns, 3); /* a fresh session each time */
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.delivered, 3);
    ck_assert_uint_ge(st.pool.lost, 2); /* dropped while idle */
}
END_TEST

/* The session dies at the second message's MAIL FROM: nothing was
 * delivered, so the message goes again on a new session and arrives once;
 * with a 421 first as without. Without one the pool takes the session
 * for stale (tide_evpool_stale). */
static void session_dying_at_mail(bool with_421)
{
    server_up(&(struct smtp_server_opts){.drop_mail = 2, .drop_421 = with_421});
    struct tide_smtp_options o = plain_options(1);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *one[] = {"a@test.example"};
    struct sent a = send_wait(s, "k1", one, 1, "first\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.attempts, 1);
    a = send_wait(s, "k2", one, 1, "second\r\n", 5000);
    ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    ck_assert_int_eq(a.attempts, 2);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.drops, 1);
    ck_assert_int_eq(r.n, 2);
    ck_assert_int_eq(smtp_record_count(&r, "k1"), 1);
    ck_assert_int_eq(smtp_record_count(&r, "k2"), 1);
    ck_assert_int_eq(r.conns, 2);
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.retried, 1);
    ck_assert_uint_eq(st.failed, 0);
    /* closed before a byte of MAIL's reply, on a session that had served:
     * stale, nothing the breaker hears; a 421 is the server's answer */
    ck_assert_uint_eq(st.pool.stale_loans, with_421 ? 0 : 1);
}

START_TEST(session_closed_at_mail_from_is_sent_again_once)
{
    session_dying_at_mail(false);
}
END_TEST

START_TEST(session_421_at_mail_from_is_sent_again_once)
{
    session_dying_at_mail(true);
}
END_TEST

#define BATCH 60

struct batch {
    struct sent a[BATCH];
    int answered;
};

static void on_batch(struct tide_smtp_sender *s, int status,
                     const struct tide_smtp_result *r, void *arg)
{
    struct sent *a = arg;
    on_sent(s, status, r, a);
}

static bool batch_done(void *arg)
{
    struct batch *b = arg;
    int n = 0;
    for (int i = 0; i < BATCH; i++)
        n += b->a[i].calls;
    b->answered = n;
    return n == BATCH;
}

static bool some_answered(void *arg)
{
    batch_done(arg);
    return ((struct batch *)arg)->answered >= BATCH / 4;
}

START_TEST(restart_mid_batch_delivers_at_most_once_and_tells_the_truth)
{
    server_up(&(struct smtp_server_opts){.delay_ms = 10});
    struct tide_smtp_options o = plain_options(4);
    o.timeout = TIDE_SEC(20);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *one[] = {"a@test.example"};
    static struct batch b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < BATCH; i++) {
        char id[16];
        snprintf(id, sizeof id, "b%d", i);
        char *text = message_text(id, "in a batch\r\n");
        ck_assert_int_eq(tide_smtp_send(s, "a@test.example", one, 1, text,
                                        strlen(text), on_batch, &b.a[i]),
                         0);
        free(text);
    }
    ck_assert(run_until(some_answered, &b, 10000));
    ck_assert_int_lt(b.answered, BATCH); /* mid-batch */
    ck_assert(smtp_server_restart(&sx->server));
    ck_assert_msg(run_until(batch_done, &b, 20000), "%d of %d answered",
                  b.answered, BATCH);
    struct smtp_record r = record_now();
    int ok = 0;
    for (int i = 0; i < BATCH; i++) {
        char id[16];
        snprintf(id, sizeof id, "b%d", i);
        int got = smtp_record_count(&r, id);
        ck_assert_msg(got <= 1, "%s delivered %d times", id, got);
        ck_assert_int_eq(b.a[i].calls, 1);
        if (b.a[i].status == 0) {
            ok++;
            ck_assert_msg(got == 1, "%s reported sent, not recorded", id);
        }
    }
    /* every success is on record and nothing else is */
    ck_assert_int_eq(ok, r.n);
    ck_assert_int_ge(ok, BATCH / 4);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

START_TEST(session_message_limit_opens_a_new_session)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_smtp_options o = plain_options(1);
    o.max_messages = 3;
    struct tide_smtp_sender *s = sender_new(&o);
    const char *one[] = {"a@test.example"};
    for (int i = 0; i < 7; i++) {
        char id[16];
        snprintf(id, sizeof id, "m%d", i);
        struct sent a = send_wait(s, id, one, 1, "limited\r\n", 5000);
        ck_assert_msg(a.status == 0, "%d %s", a.status, a.text);
    }
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 7);
    ck_assert_int_eq(r.conns, 3); /* 3 + 3 + 1 */
    smtp_record_free(&r);
    struct tide_smtp_stats st = sender_end(s);
    ck_assert_uint_eq(st.net.made, 3);
    ck_assert_uint_eq(st.quits, 3);
}
END_TEST

static bool all_answered(void *arg)
{
    struct sent *a = arg;
    for (int i = 0; i < 100; i++)
        if (a[i].calls == 0)
            return false;
    return true;
}

START_TEST(concurrent_messages_share_a_few_sessions)
{
    server_up(&(struct smtp_server_opts){0});
    struct tide_smtp_options o = plain_options(8);
    struct tide_smtp_sender *s = sender_new(&o);
    const char *to[] = {"a@test.example", "b@test.example"};
    static struct sent a[100];
    memset(a, 0, sizeof a);
    for (int i = 0; i < 100; i++) {
        char id[16];
        snprintf(id, sizeof id, "c%d", i);
        char *text = message_text(id, "concurrent\r\n");
        ck_assert_int_eq(tide_smtp_send(s, "x@test.example", to, 2, text,
                                        strlen(text), on_sent, &a[i]),
                         0);
        free(text);
    }
    ck_assert(run_until(all_answered, a, 20000));
    for (int i = 0; i < 100; i++)
        ck_assert_msg(a[i].status == 0, "%d: %d %s", i, a[i].status, a[i].text);
    struct smtp_record r = record_now();
    ck_assert_int_eq(r.n, 100);
    ck_assert_int_le(r.conns, 8);
    smtp_record_free(&r);
    sender_end(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("send");
    TCase *tc = tcase_create("send");
    smtp_fixture_add(tc, 60);
    tcase_add_test(tc, one_recipient_refused_while_the_others_get_it);
    tcase_add_test(tc, every_recipient_refused_leaves_the_session_clean);
    tcase_add_test(tc, dots_and_bare_line_ends_arrive_intact);
    tcase_add_test(tc, message_past_the_servers_limit_gets_its_552);
    tcase_add_test(tc, idle_timeout_between_messages_costs_no_error);
    tcase_add_test(tc, session_closed_at_mail_from_is_sent_again_once);
    tcase_add_test(tc, session_421_at_mail_from_is_sent_again_once);
    tcase_add_test(tc,
                   restart_mid_batch_delivers_at_most_once_and_tells_the_truth);
    tcase_add_test(tc, session_message_limit_opens_a_new_session);
    tcase_add_test(tc, concurrent_messages_share_a_few_sessions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return smtp_test_main(suite);
}
