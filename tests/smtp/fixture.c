#include "fixture.h"
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct smtp_fixture the_fixture;
struct smtp_fixture *sx = &the_fixture;

static int open_fds(void)
{
    return tide_test_open_fds();
}

int64_t now_ms(void)
{
    return tide_test_now_ms();
}

bool run_until(bool (*pred)(void *), void *arg, int ms)
{
    return tide_test_run_until(sx->base, pred, arg, ms);
}

static bool never(void *arg)
{
    (void)arg;
    return false;
}

void run_ms(int ms)
{
    run_until(never, NULL, ms);
}

static void setup(void)
{
    static bool debugging;
    if (!debugging) { /* once, before any event exists */
        event_enable_debug_mode();
        debugging = true;
    }
    memset(sx, 0, sizeof *sx);
    ck_assert(pki_make(&sx->pki));
    sx->ca_pem = pki_pem(sx->pki.ca);
    ck_assert_ptr_nonnull(sx->ca_pem);
    sx->fds_at_start = open_fds();
    struct event_config *cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER |
                                   EVENT_BASE_FLAG_IGNORE_ENV);
    sx->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    ck_assert_ptr_nonnull(sx->base);
}

static void teardown(void)
{
    /* libevent closes the sockets of freed bufferevents from the loop */
    run_ms(20);
    int events = event_base_get_num_events(
        sx->base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE);
    event_base_free(sx->base);
    sx->base = NULL;
    smtp_server_dispose(&sx->server);
    int fds = open_fds();
    free(sx->ca_pem);
    pki_free(&sx->pki);
    ck_assert_msg(events == 0, "%d events left on the base", events);
    ck_assert_msg(fds == sx->fds_at_start, "%d descriptors open, %d at start",
                  fds, sx->fds_at_start);
}

void smtp_fixture_add(TCase *tc, int seconds)
{
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, seconds);
}

int smtp_test_main(Suite *(*make_suite)(void))
{
    if (!smtp_server_installed()) {
        printf("python3-aiosmtpd is not installed (for /usr/bin/python3): "
               "the smtp suite is skipped\n");
        return 77;
    }
    return tide_test_run(make_suite());
}

void server_up(const struct smtp_server_opts *o)
{
    ck_assert_msg(smtp_server_start(&sx->server, o), "aiosmtpd did not start");
}

struct smtp_record record_now(void)
{
    struct smtp_record r;
    ck_assert(smtp_record_read(&sx->server, &r));
    return r;
}

/* ---- senders ---- */

struct tide_smtp_options plain_options(int64_t size)
{
    return (struct tide_smtp_options){
        .tcp = {.host = "127.0.0.1", .port = sx->server.port},
        .pool = {.limits = TIDE_LIMITS(.size = size), .seed = 1},
    };
}

struct tide_tls_options tls_options(const char *name)
{
    return (struct tide_tls_options){.ca_pem = sx->ca_pem, .verify_name = name};
}

struct tide_smtp_sender *sender_new(const struct tide_smtp_options *o)
{
    struct tide_smtp_sender *s = NULL;
    int rc = tide_smtp_sender_new(sx->base, o, &s);
    ck_assert_msg(rc == 0, "tide_smtp_sender_new: %s", tide_smtp_strerror(rc));
    return s;
}

static void on_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    *(bool *)arg = true;
}

static bool flag(void *arg)
{
    return *(bool *)arg;
}

static bool all_gone(void *arg)
{
    (void)arg;
    struct smtp_record r = record_now();
    bool done = r.gone == r.conns;
    smtp_record_free(&r);
    return done;
}

struct tide_smtp_stats sender_end(struct tide_smtp_sender *s)
{
    struct tide_smtp_stats st;
    tide_smtp_sender_stats(s, &st);
    ck_assert_int_eq(st.pool.lent, 0);
    bool closed = false;
    ck_assert_int_eq(
        tide_evpool_close(tide_smtp_sender_pool(s), on_closed, &closed), 0);
    ck_assert_msg(run_until(flag, &closed, 5000), "the pool did not close");
    tide_smtp_sender_stats(s, &st);
    /* every session made was destroyed, once */
    ck_assert_int_eq(st.net.live, 0);
    ck_assert_int_eq(st.net.pending, 0);
    ck_assert_uint_eq(st.net.made, st.net.destroyed);
    ck_assert_uint_eq(st.pool.made, st.pool.destroyed);
    tide_smtp_sender_free(s);
    if (sx->server.child.pid > 0)
        ck_assert_msg(run_until(all_gone, NULL, 5000),
                      "the server still holds sessions");
    return st;
}

void on_sent(struct tide_smtp_sender *s, int status,
             const struct tide_smtp_result *r, void *arg)
{
    (void)s;
    struct sent *a = arg;
    a->calls++;
    a->status = status;
    a->reply = r->reply;
    snprintf(a->text, sizeof a->text, "%s", r->text ? r->text : "");
    a->accepted = r->accepted;
    a->attempts = r->attempts;
    for (size_t i = 0; i < r->n && i < 8; i++)
        a->rcpt_reply[i] = r->rcpts[i].reply;
}

bool sent_answered(void *sent)
{
    return ((struct sent *)sent)->calls > 0;
}

char *message_text(const char *id, const char *body)
{
    size_t n = strlen(id) + strlen(body) + 64;
    char *t = malloc(n);
    ck_assert_ptr_nonnull(t);
    snprintf(t, n, "X-Test-Id: %s\r\nSubject: test\r\n\r\n%s", id, body);
    return t;
}

struct sent send_wait(struct tide_smtp_sender *s, const char *id,
                      const char *const *rcpts, size_t n, const char *body,
                      int ms)
{
    struct sent a;
    memset(&a, 0, sizeof a);
    char *text = message_text(id, body);
    ck_assert_int_eq(tide_smtp_send(s, "sender@test.example", rcpts, n, text,
                                    strlen(text), on_sent, &a),
                     0);
    free(text);
    ck_assert_msg(run_until(sent_answered, &a, ms), "no answer within %d ms",
                  ms);
    ck_assert_int_eq(a.calls, 1);
    return a;
}
