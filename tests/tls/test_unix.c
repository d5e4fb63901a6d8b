/* tls/unix.c, and Unix sockets through dial.c, sock.c and watch.c: a path
 * instead of host and port. An echo over one, the errors TCP has where they
 * apply (refused, no such file, a connect timeout on a full backlog), the
 * idle watch, options that cannot go with a path, and TLS over a Unix
 * socket, which needs a name to verify. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

/* A fresh directory per test, so paths never collide between runs. */
struct dir {
    char path[64];
    char sock[80]; /* path/s */
};

static void dir_make(struct dir *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/tide-unix-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d->path));
    snprintf(d->sock, sizeof d->sock, "%s/s", d->path);
}

static void dir_remove(struct dir *d)
{
    unlink(d->sock);
    ck_assert_int_eq(rmdir(d->path), 0);
}

struct ux {
    struct dir dir;
    struct test_server s;
    struct tide_tcp_factory *f;
    struct test_pool tp;
};

static void pool_over(struct ux *u, struct tide_tcp_options o)
{
    o.path = u->dir.sock;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &u->f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(u->f, &table);
    pool_start(&u->tp, &table, 0);
}

/* No server yet: stop's server_stop then has nothing to close. */
static void bare(struct ux *u)
{
    memset(u, 0, sizeof *u);
    u->s.backlog_fd = -1;
    dir_make(&u->dir);
}

static void start(struct ux *u)
{
    bare(u);
    ck_assert(server_start_unix(&u->s, fx->base, u->dir.sock, NULL));
    pool_over(u, (struct tide_tcp_options){0});
}

static struct tide_net_stats stats(struct ux *u)
{
    struct tide_net_stats st;
    tide_tcp_factory_stats(u->f, &st);
    return st;
}

static void stop(struct ux *u)
{
    pool_stop(&u->tp);
    struct tide_net_stats st = stats(u);
    ck_assert_int_eq(st.live, 0);
    ck_assert_int_eq(st.pending, 0);
    ck_assert_uint_eq(st.made, st.destroyed);
    tide_tcp_factory_free(u->f);
    server_stop(&u->s);
    dir_remove(&u->dir);
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool one_lost(void *arg)
{
    return stats(arg).lost >= 1;
}

START_TEST(echo_over_a_unix_socket)
{
    struct ux u;
    start(&u);
    struct got g;
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    struct sockaddr_un peer;
    socklen_t len = sizeof peer;
    ck_assert_int_eq(
        getpeername(bufferevent_getfd(g.bev), (struct sockaddr *)&peer, &len),
        0);
    ck_assert_int_eq(peer.sun_family, AF_UNIX);
    ck_assert_str_eq(echo(g.bev, "over a path", 2000), "over a path");
    ck_assert_int_eq(tide_evpool_release(u.tp.pool, g.bev), 0);
    /* kept and lent again, as over TCP */
    struct bufferevent *first = g.bev;
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_ptr_eq(g.bev, first);
    ck_assert_str_eq(echo(g.bev, "again", 2000), "again");
    ck_assert_int_eq(tide_evpool_release(u.tp.pool, g.bev), 0);
    ck_assert_int_eq(u.s.accepted, 1);
    stop(&u);
}
END_TEST

START_TEST(no_listener_is_refused)
{
    struct ux u;
    bare(&u);
    /* the socket file exists, nothing listens on it */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", u.dir.sock);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd);
    pool_over(&u, (struct tide_tcp_options){0});
    struct got g;
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EREFUSED);
    struct tide_net_detail d;
    char text[320];
    ck_assert_int_eq(tide_tcp_factory_last_error(u.f, &d, text, sizeof text),
                     TIDE_EREFUSED);
    ck_assert_int_eq(d.sys_errno, ECONNREFUSED);
    ck_assert_ptr_nonnull(strstr(text, u.dir.sock));
    ck_assert_str_eq(g.message, text);
    stop(&u);
}
END_TEST

START_TEST(no_such_file_is_no_socket)
{
    struct ux u;
    bare(&u);
    pool_over(&u, (struct tide_tcp_options){0});
    struct got g;
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ENOSOCKET);
    struct tide_net_detail d;
    ck_assert_int_eq(tide_tcp_factory_last_error(u.f, &d, NULL, 0),
                     TIDE_ENOSOCKET);
    ck_assert_int_eq(d.sys_errno, ENOENT);
    ck_assert_str_eq(tide_err_name(TIDE_ENOSOCKET), "TIDE_ENOSOCKET");
    ck_assert_str_eq(tide_strerror(TIDE_ENOSOCKET), "no socket at that path");
    stop(&u);
}
END_TEST

START_TEST(full_backlog_is_a_connect_timeout)
{
    struct ux u;
    bare(&u);
    /* a listener that never accepts, its backlog (0: one connection)
     * taken by a connection of the test's own */
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", u.dir.sock);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(lfd, 0), 0);
    int held[4];
    int n = 0;
    for (; n < 4; n++) {
        held[n] =
            socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (connect(held[n], (struct sockaddr *)&a, sizeof a) != 0) {
            ck_assert_int_eq(errno, EAGAIN);
            close(held[n]);
            break;
        }
    }
    ck_assert_int_lt(n, 4); /* the backlog is full now */
    pool_over(&u, (struct tide_tcp_options){.connect_timeout = TIDE_MS(300)});
    struct got g;
    int64_t t0 = ms_now();
    acquire_wait(&u.tp, &g, 5000);
    int64_t took = ms_now() - t0;
    ck_assert_int_eq(g.status, TIDE_ECONNECT_TIMEOUT);
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 2000);
    ck_assert_msg(strstr(g.message, "backlog") != NULL, "\"%s\"", g.message);
    ck_assert_uint_ge(stats(&u).attempts, 2); /* it asked again */
    for (int i = 0; i < n; i++)
        close(held[i]);
    close(lfd);
    stop(&u);
}
END_TEST

START_TEST(idle_peer_close_is_detected)
{
    struct ux u;
    start(&u);
    struct got g;
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "warm", 2000), "warm");
    ck_assert_int_eq(tide_evpool_release(u.tp.pool, g.bev), 0);
    server_close_all(&u.s);
    ck_assert(run_until(one_lost, &u, 2000));
    struct tide_evpool_stats ps;
    tide_evpool_stats(u.tp.pool, &ps);
    ck_assert_int_eq(ps.idle, 0);
    ck_assert_uint_eq(ps.lost, 1);
    /* the next caller gets a fresh connection */
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "fresh", 2000), "fresh");
    ck_assert_int_eq(tide_evpool_release(u.tp.pool, g.bev), 0);
    ck_assert_uint_eq(stats(&u).made, 2);
    stop(&u);
}
END_TEST

START_TEST(idle_unexpected_bytes_are_detected)
{
    struct ux u;
    start(&u);
    struct got g;
    acquire_wait(&u.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_int_eq(tide_evpool_release(u.tp.pool, g.bev), 0);
    server_send_all(&u.s, "421 bye\r\n");
    ck_assert(run_until(one_lost, &u, 2000));
    ck_assert_uint_eq(stats(&u).lost_data, 1);
    stop(&u);
}
END_TEST

START_TEST(too_long_path_is_refused)
{
    struct sockaddr_un a;
    char path[sizeof a.sun_path + 1];
    memset(path, 'x', sizeof path);
    path[0] = '/';
    struct tide_tcp_factory *f = (struct tide_tcp_factory *)1;
    /* sun_path's size: no room for the NUL */
    path[sizeof a.sun_path] = '\0';
    struct tide_tcp_options o = {.path = path};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    /* one shorter fits (nothing connects at creation) */
    path[sizeof a.sun_path - 1] = '\0';
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    tide_tcp_factory_free(f);
    o.path = "";
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), TIDE_EINVAL);
}
END_TEST

START_TEST(host_or_tcp_options_with_a_path_are_refused)
{
    const char *p = "/tmp/tide-unix-none";
    struct tide_tcp_options bad[] = {
        {.path = p, .host = "127.0.0.1"},
        {.path = p, .host = "127.0.0.1", .port = 80},
        {.path = p, .port = 80},
        {.path = p, .service = "http"},
        {.path = p, .dns = fx->dns},
        {.path = p, .family = AF_INET},
        {.path = p, .keepalive_idle = TIDE_SEC(10)},
        {.path = p, .connect_timeout = -1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_tcp_factory *f = NULL;
        ck_assert_msg(tide_tcp_factory_new(fx->base, &bad[i], &f) ==
                          TIDE_EINVAL,
                      "options %zu accepted", i);
        ck_assert_ptr_null(f);
    }
    struct tide_tls_factory *tf = NULL;
    struct tide_tls_options to = {
        .tcp = bad[0], .ca_pem = fx->ca_pem, .verify_name = "localhost"};
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &to, &tf), TIDE_EINVAL);
    ck_assert_ptr_null(tf);
}
END_TEST

/* ---- TLS over a Unix socket ---- */

START_TEST(tls_over_a_unix_socket_needs_a_name)
{
    struct tide_tls_factory *f = NULL;
    struct tide_tls_options o = {.tcp = {.path = "/tmp/tide-unix-none"},
                                 .ca_pem = fx->ca_pem};
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    o.insecure_skip_verify = true;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), 0);
    tide_tls_factory_free(f);
    o.insecure_skip_verify = false;
    o.verify_name = "localhost";
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), 0);
    tide_tls_factory_free(f);
}
END_TEST

/* A TLS server on a Unix socket; verify_name picks the certificate name
 * to check, and is sent as SNI. */
static void tls_unix(const char *verify_name, int want_status,
                     const char *want_sni)
{
    struct dir dir;
    dir_make(&dir);
    struct test_server s;
    ck_assert(
        server_start_unix(&s, fx->base, dir.sock,
                          server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL)));
    struct tide_tls_options o = {.tcp = {.path = dir.sock},
                                 .ca_pem = fx->ca_pem,
                                 .verify_name = verify_name};
    struct tide_tls_factory *f;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(f, &table);
    struct test_pool tp;
    pool_start(&tp, &table, 0);
    struct got g;
    acquire_wait(&tp, &g, 5000);
    ck_assert_int_eq(g.status, want_status);
    if (g.status == 0) {
        ck_assert_str_eq(s.sni, want_sni);
        ck_assert_str_eq(echo(g.bev, "sealed", 2000), "sealed");
        ck_assert_int_eq(tide_evpool_release(tp.pool, g.bev), 0);
    }
    pool_stop(&tp);
    struct tide_net_stats st;
    tide_tls_factory_stats(f, &st);
    ck_assert_int_eq(st.live, 0);
    ck_assert_uint_eq(st.made, st.destroyed);
    tide_tls_factory_free(f);
    server_stop(&s);
    dir_remove(&dir);
}

START_TEST(tls_over_a_unix_socket_verifies_the_name)
{
    tls_unix("localhost", 0, "localhost");
}
END_TEST

START_TEST(tls_over_a_unix_socket_with_an_ip_name_sends_no_sni)
{
    tls_unix("127.0.0.1", 0, "");
}
END_TEST

START_TEST(tls_over_a_unix_socket_refuses_the_wrong_name)
{
    tls_unix("other.example", TIDE_ENAME_MISMATCH, "");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("unix");
    TCase *tc = tcase_create("unix");
    fixture_add(tc);
    tcase_add_test(tc, echo_over_a_unix_socket);
    tcase_add_test(tc, no_listener_is_refused);
    tcase_add_test(tc, no_such_file_is_no_socket);
    tcase_add_test(tc, full_backlog_is_a_connect_timeout);
    tcase_add_test(tc, idle_peer_close_is_detected);
    tcase_add_test(tc, idle_unexpected_bytes_are_detected);
    tcase_add_test(tc, too_long_path_is_refused);
    tcase_add_test(tc, host_or_tcp_options_with_a_path_are_refused);
    tcase_add_test(tc, tls_over_a_unix_socket_needs_a_name);
    tcase_add_test(tc, tls_over_a_unix_socket_verifies_the_name);
    tcase_add_test(tc, tls_over_a_unix_socket_with_an_ip_name_sends_no_sni);
    tcase_add_test(tc, tls_over_a_unix_socket_refuses_the_wrong_name);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
