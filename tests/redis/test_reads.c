/* demos/redis/command.c, how a command's replies are read over plain TCP:
 * from the socket by the client itself, one recv a read, with no
 * ioctl(FIONREAD) before it (libevent 2.1's bufferevent asks one before
 * each of its reads); and what a connection the server closed under a
 * command is: stale when no byte of a reply came and it had served, no
 * failure of the server's. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "fixture.h"

#define COMMANDS 200

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

/* ---- ioctl(FIONREAD), trapped and counted ---- */

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static volatile sig_atomic_t fionreads;

/* The trapped call is not made: it fails (ENOSYS), and libevent then
 * reads a preset size. So the program goes on, and the count tells. */
static void on_sigsys(int sig, siginfo_t *info, void *ctx)
{
    (void)sig, (void)info, (void)ctx;
    fionreads++;
}

/* From now on, in this process (Check runs each test in a child of its
 * own), every ioctl(_, FIONREAD) raises SIGSYS instead of running. false
 * where the filter cannot be installed. */
static bool trap_fionread(void)
{
#ifdef ARCH
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSYS, &sa, NULL) != 0)
        return false;
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* the request's low 32 bits: all of FIONREAD */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FIONREAD, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0],
                              .filter = code};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
    return false;
#endif
}

START_TEST(replies_are_read_without_fionread)
{
    struct tide_redis_options o = tcp_options(1);
    struct tide_redis_client *c = client_new(&o);
    /* the connection made and set up first: its setup reads through the
     * bufferevent, which is the make's, not a command's */
    struct answer a = CMD(c, "SET", "k", "v");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    if (!trap_fionread()) {
        client_end(c);
        return; /* no seccomp here: nothing to prove it with */
    }
    for (int i = 0; i < COMMANDS; i++) {
        a = i % 2 ? CMD(c, "GET", "k") : CMD(c, "SET", "k", "v");
        ck_assert_int_eq(a.status, 0);
        answer_clear(&a);
    }
    ck_assert_int_eq(fionreads, 0);
    ck_assert_uint_eq(stats(c).pool.made, 1);
    client_end(c);
}
END_TEST

/* The server kills the client's idle connection and the loop does not
 * poll before the next command: it is lent, and the command meets the
 * close before any byte of its reply. The command fails (the server closed
 * it), but the connection had served: stale, not a failure of the
 * server's, and the next command gets a new one. */
START_TEST(a_connection_killed_before_the_command_goes_back_stale)
{
    struct tide_redis_options o = tcp_options(1);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    redisContext *killer = redisConnect("127.0.0.1", rx->server.port);
    ck_assert_ptr_nonnull(killer);
    ck_assert_int_eq(killer->err, 0);
    redisReply *r =
        redisCommand(killer, "CLIENT KILL TYPE normal SKIPME yes");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(r->integer, 1);
    freeReplyObject(r);
    redisFree(killer);
    usleep(20000); /* the close reaches the client's socket, unpolled */
    a = CMD(c, "PING");
    ck_assert_int_eq(a.status, TIDE_EPEER_CLOSED);
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.stale, 1);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.pool.stale_loans, 1);
    ck_assert_uint_eq(s.pool.make_failures, 0);
    a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    ck_assert_uint_eq(stats(c).pool.made, 2);
    client_end(c);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("reads");
    TCase *tc = tcase_create("reads");
    redis_fixture_add(tc, 60);
    tcase_add_test(tc, replies_are_read_without_fionread);
    tcase_add_test(tc, a_connection_killed_before_the_command_goes_back_stale);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
