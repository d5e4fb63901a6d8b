/* demos/load.c with the SMTP sender, as smtp_load runs it: a closed-loop
 * run that runs out of time with messages in flight, then the sender freed
 * and the run disposed of. Run in a child process (this binary again) that
 * exits 0 when it has nothing left open: under AddressSanitizer a
 * bufferevent, buffer or SSL object left behind makes that exit a leak
 * report (and an abort), and in any build a connection left behind keeps
 * its socket open. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "fixture.h"
#include "load.h"
#include "load_child.h"
#include "loop.h"

static const char *const one[] = {"rcpt@test.example"};
static const char text[] = "Subject: load\r\n\r\nin flight\r\n";

struct run {
    struct tide_smtp_options options;
    struct tide_smtp_sender *sender;
};

static void on_load_sent(struct tide_smtp_sender *s, int status,
                         const struct tide_smtp_result *r, void *arg)
{
    (void)s;
    tide_demo_load_answered(arg, status == 0 && r->accepted == 1, r->text,
                            status);
}

static int send_one(struct tide_demo_req *r, void *arg)
{
    struct run *run = arg;
    return tide_smtp_send(run->sender, "load@test.example", one, 1, text,
                          sizeof text - 1, on_load_sent, r);
}

static uint64_t made(void *arg)
{
    struct run *run = arg;
    struct tide_smtp_stats s;
    tide_smtp_sender_stats(run->sender, &s);
    return s.net.made;
}

static const struct tide_demo_load_ops ops = {
    .send = send_one,
    .strerror = tide_smtp_strerror,
    .made = made,
};

static bool open_sender(struct event_base *base, void *arg)
{
    struct run *run = arg;
    return tide_smtp_sender_new(base, &run->options, &run->sender) == 0;
}

static void close_sender(void *arg)
{
    struct run *run = arg;
    tide_smtp_sender_free(run->sender);
}

/* The child, a fresh process of this binary (no libevent debug mode,
 * whose table of events would keep whatever is left reachable and so
 * hidden from the leak check): the sender freed with its last messages in
 * flight. ca_file: "-" for plain TCP. */
static int out_of_time(int port, const char *ca_file, int conc)
{
    struct tide_tls_options t = {.ca_file = ca_file};
    bool tls = strcmp(ca_file, "-") != 0;
    struct run run = {
        .options = {
            .tcp = {.host = "127.0.0.1", .port = port},
            .tls = tls ? &t : NULL,
            .starttls = tls,
            .pool = {.limits = TIDE_LIMITS(.size = conc), .seed = 1},
        }};
    return tide_test_load_out_of_time(&ops, &run, conc, open_sender,
                                      close_sender);
}

#define CHILD_MODE "--out-of-time"

/* Runs this binary as the child (at most 30 s) and asserts it exited 0. */
static void run_child(bool tls, int conc)
{
    struct smtp_server_opts so = {0};
    if (tls) {
        so.cert = sx->pki.good;
        so.key = sx->pki.key;
        so.require_starttls = true;
    }
    server_up(&so);
    /* the child trusts the test CA from a file in the server's directory */
    char port[16], n[16], ca[PATH_MAX];
    snprintf(port, sizeof port, "%d", sx->server.port);
    snprintf(n, sizeof n, "%d", conc);
    snprintf(ca, sizeof ca, "%s/ca.pem", sx->server.child.dir);
    FILE *f = fopen(ca, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(sx->ca_pem, f), 0);
    ck_assert_int_eq(fclose(f), 0);
    char *const argv[] = {"test_load",    CHILD_MODE, port,
                          tls ? ca : "-", n,          NULL};
    char why[64];
    ck_assert_msg(tide_test_child_run_self(argv, 30000, why, sizeof why),
                  "the run %s", why);
}

START_TEST(out_of_time_leaves_nothing_plain)
{
    run_child(false, 4);
}
END_TEST

START_TEST(out_of_time_leaves_nothing_plain_one)
{
    run_child(false, 1);
}
END_TEST

START_TEST(out_of_time_leaves_nothing_starttls)
{
    run_child(true, 4);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("smtp_load");
    TCase *tc = tcase_create("out_of_time");
    smtp_fixture_add(tc, 60);
    tcase_add_test(tc, out_of_time_leaves_nothing_plain);
    tcase_add_test(tc, out_of_time_leaves_nothing_plain_one);
    tcase_add_test(tc, out_of_time_leaves_nothing_starttls);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], CHILD_MODE) == 0)
        return out_of_time(atoi(argv[2]), argv[3], atoi(argv[4]));
    return smtp_test_main(make_suite);
}
