/* demos/smtp/sender.c: freeing a sender with messages in flight. Whatever
 * state each message's session is in (lent with the message sent and the
 * verdict not yet come, being connected, greeted, upgraded by STARTTLS or
 * handshaken, not asked for yet), the free closes every session exactly
 * once: once the loop has run dry no descriptor of the sender is left, no
 * event is left on the base and the server sees every session close. The
 * messages are dropped unanswered, as smtp.h promises: no callback runs
 * after the free. Under AddressSanitizer the process's exit proves that
 * nothing the sessions held was left behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "loop.h"

#define IN_FLIGHT 10

static const char *const one[] = {"rcpt@test.example"};

static struct tide_smtp_stats stats(struct tide_smtp_sender *s)
{
    struct tide_smtp_stats st;
    tide_smtp_sender_stats(s, &st);
    return st;
}

static void start_server(bool tls, int delay_ms)
{
    struct smtp_server_opts so = {.delay_ms = delay_ms};
    if (tls) {
        so.cert = sx->pki.good;
        so.key = sx->pki.key;
        so.require_starttls = true;
    }
    server_up(&so);
}

static struct tide_smtp_options options(struct tide_tls_options *t,
                                        int64_t size)
{
    struct tide_smtp_options o = plain_options(size);
    if (t) {
        o.tls = t;
        o.starttls = true;
    }
    return o;
}

static void send_one(struct tide_smtp_sender *s, struct sent *a)
{
    char *text = message_text("free", "in flight\r\n");
    ck_assert_int_eq(tide_smtp_send(s, "sender@test.example", one, 1, text,
                                    strlen(text), on_sent, a),
                     0);
    free(text);
}

/* Only the run's own tick is left on the base: every event of the sender
 * and every finalizer of its bufferevents has run. */
static bool dry(void *arg)
{
    (void)arg;
    return event_base_get_num_events(
               sx->base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE) <= 1;
}

static bool sessions_gone(void *arg)
{
    (void)arg;
    struct smtp_record r = record_now();
    bool gone = r.gone == r.conns;
    smtp_record_free(&r);
    return gone;
}

/* After a free: the loop runs dry, and with it every descriptor of the
 * sender is closed (fds: those open before it was made); the server sees
 * each session go. */
static void run_dry(int fds)
{
    ck_assert_msg(
        run_until(dry, NULL, 2000),
        "%d events still on the base 2 s after the free",
        event_base_get_num_events(sx->base, EVENT_BASE_COUNT_ADDED |
                                                EVENT_BASE_COUNT_ACTIVE));
    ck_assert_msg(tide_test_open_fds() == fds,
                  "%d descriptors open after the free, %d before the sender",
                  tide_test_open_fds(), fds);
    ck_assert_msg(run_until(sessions_gone, NULL, 5000),
                  "the server still holds sessions");
}

static bool idle_two(void *sender)
{
    return stats(sender).pool.idle == 2;
}

/* Every state at once: the server holds each verdict for a second, so two
 * messages are lent with their text sent; four makes have only just begun
 * (one pass of the loop started them), and two messages wait for a
 * session given back, the pool being full. */
static void free_every_state(bool tls)
{
    start_server(tls, 1000);
    struct tide_tls_options t = tls_options(NULL);
    struct tide_smtp_options o = options(tls ? &t : NULL, 6);
    o.pool.min = 2;
    int fds = tide_test_open_fds();
    struct tide_smtp_sender *s = sender_new(&o);
    ck_assert_msg(run_until(idle_two, s, 5000), "the minimum was not made");
    struct sent a[IN_FLIGHT];
    memset(a, 0, sizeof a);
    send_one(s, &a[0]);
    send_one(s, &a[1]);
    run_ms(50); /* sent; the verdicts are held */
    struct tide_smtp_stats st = stats(s);
    ck_assert_int_eq(st.pool.lent, 2);
    for (int i = 2; i < 6; i++)
        send_one(s, &a[i]);
    event_base_loop(sx->base, EVLOOP_NONBLOCK);
    st = stats(s);
    ck_assert_int_eq(st.pool.making, 4);
    ck_assert_int_eq(st.net.pending, 4);
    for (int i = 6; i < IN_FLIGHT; i++)
        send_one(s, &a[i]);
    st = stats(s);
    ck_assert_int_eq(st.pool.waiting, 8); /* four on a make each */
    for (int i = 0; i < IN_FLIGHT; i++)
        ck_assert_int_eq(a[i].calls, 0);

    tide_smtp_sender_free(s);
    run_dry(fds);
    for (int i = 0; i < IN_FLIGHT; i++)
        ck_assert_msg(a[i].calls == 0, "message %d answered after the free", i);
}

START_TEST(free_every_state_plain)
{
    free_every_state(false);
}
END_TEST

START_TEST(free_every_state_starttls)
{
    free_every_state(true);
}
END_TEST

/* Freed after 0 to 34 ms of a burst from an empty pool: each round catches
 * the sessions somewhere else (the connect, the greeting, EHLO, STARTTLS,
 * the handshake, the second EHLO, a message on its way) and the first
 * messages lent or answered. A message answered before the free was
 * answered once; none is answered after. */
static void free_during_burst(bool tls)
{
    start_server(tls, 0);
    static const int after_ms[] = {0, 1, 2, 3, 5, 8, 13, 21, 34};
    for (size_t r = 0; r < sizeof after_ms / sizeof after_ms[0]; r++) {
        struct tide_tls_options t = tls_options(NULL);
        struct tide_smtp_options o = options(tls ? &t : NULL, 4);
        int fds = tide_test_open_fds();
        struct tide_smtp_sender *s = sender_new(&o);
        struct sent a[IN_FLIGHT];
        memset(a, 0, sizeof a);
        for (int i = 0; i < IN_FLIGHT; i++)
            send_one(s, &a[i]);
        if (after_ms[r] > 0)
            run_ms(after_ms[r]);
        int before[IN_FLIGHT];
        for (int i = 0; i < IN_FLIGHT; i++) {
            before[i] = a[i].calls;
            ck_assert_int_le(a[i].calls, 1);
            if (a[i].calls)
                ck_assert_msg(a[i].status == 0, "round %zu: %d %s", r,
                              a[i].status, a[i].text);
        }
        tide_smtp_sender_free(s);
        run_dry(fds);
        for (int i = 0; i < IN_FLIGHT; i++)
            ck_assert_msg(a[i].calls == before[i],
                          "round %zu: message %d answered after the free", r,
                          i);
    }
}

START_TEST(free_during_burst_plain)
{
    free_during_burst(false);
}
END_TEST

START_TEST(free_during_burst_starttls)
{
    free_during_burst(true);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("smtp_free");
    TCase *tc = tcase_create("in_flight");
    smtp_fixture_add(tc, 60);
    tcase_add_test(tc, free_every_state_plain);
    tcase_add_test(tc, free_every_state_starttls);
    tcase_add_test(tc, free_during_burst_plain);
    tcase_add_test(tc, free_during_burst_starttls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return smtp_test_main(make_suite);
}
