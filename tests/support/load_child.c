/* An out-of-time load run in the child of a load test, and a load program
 * run as a user runs it (see load_child.h). */
#include "load_child.h"
#include "loop.h"
#include "runner.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int tide_test_load_out_of_time(const struct tide_demo_load_ops *ops, void *arg,
                               int conc,
                               bool (*open)(struct event_base *base, void *arg),
                               void (*close)(void *arg))
{
    signal(SIGPIPE, SIG_IGN);
    int fds = tide_test_open_fds();
    struct tide_demo_load l;
    /* more requests than a second allows: the run runs out of time */
    if (!tide_demo_load_init(&l, "test_load", 10, 100000000))
        return 2;
    if (!open(l.base, arg) || tide_demo_load_run(&l, ops, arg, conc, 1) != 0)
        return 2;
    bool ran_out = l.answered > l.warmup && l.answered < l.warmup + l.count;
    close(arg);
    tide_demo_load_dispose(&l);
    if (!ran_out)
        return 3;
    int left = tide_test_open_fds();
    if (left != fds) {
        fprintf(stderr, "%d descriptors open after the run, %d before\n", left,
                fds);
        return 4;
    }
    return 0;
}

/* What fd (a file at offset end) holds, into buf, cut at len - 1; the lines
 * of all of it. */
static int slurp(int fd, char *buf, size_t len)
{
    size_t n = 0;
    int lines = 0;
    char chunk[4096];
    ssize_t got;
    lseek(fd, 0, SEEK_SET);
    while ((got = read(fd, chunk, sizeof chunk)) > 0) {
        for (ssize_t i = 0; i < got; i++) {
            lines += chunk[i] == '\n';
            if (n + 1 < len)
                buf[n++] = chunk[i];
        }
    }
    buf[n] = '\0';
    return lines;
}

bool tide_test_prog_run(const char *const *argv, const char *const *env, int ms,
                        struct tide_test_prog_run *r)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    /* files rather than pipes: the program may write more than a pipe
     * holds while this waits for it, and nothing here reads meanwhile */
    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err) {
        if (out)
            fclose(out);
        if (err)
            fclose(err);
        return false;
    }
    fflush(NULL);
    int64_t t0 = tide_test_now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(fileno(out), 1) < 0 ||
            dup2(fileno(err), 2) < 0)
            _exit(126);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    bool ran = pid > 0;
    int status = 0;
    for (int waited = 0; ran; waited += 5) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            r->status = WIFEXITED(status)     ? WEXITSTATUS(status)
                        : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                              : -1;
            break;
        }
        if (w < 0 || waited >= ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(5000);
    }
    r->ms = tide_test_now_ms() - t0;
    if (ran) {
        slurp(fileno(out), r->out, sizeof r->out);
        r->err_lines = slurp(fileno(err), r->err, sizeof r->err);
    }
    fclose(out);
    fclose(err);
    return ran;
}

struct tide_test_prog_run tide_test_prog(const char *prog,
                                         const char *const *env, int ms,
                                         const char *const *words)
{
    const char *argv[32] = {prog};
    size_t n = 1;
    for (; words[n - 1]; n++) {
        ck_assert_uint_lt(n, sizeof argv / sizeof argv[0] - 1);
        argv[n] = words[n - 1];
    }
    argv[n] = NULL;
    struct tide_test_prog_run r;
    ck_assert_msg(tide_test_prog_run(argv, env, ms, &r), "cannot run %s", prog);
    return r;
}

/* stderr is cut in the messages: Check refuses long ones */
void tide_test_prog_expect(const struct tide_test_prog_run *r, int code,
                           const char *const *words)
{
    ck_assert_msg(r->status == code, "exit %d, not %d; stderr:\n%.1500s",
                  r->status, code, r->err);
    for (size_t i = 0; words[i]; i++)
        ck_assert_msg(strstr(r->err, words[i]), "no '%s' in stderr:\n%.1500s",
                      words[i], r->err);
}

void tide_test_prog_expect_soon(const struct tide_test_prog_run *r, int ms)
{
    ck_assert_msg(r->ms < ms, "ran %lld ms, not under %d; stderr:\n%.1500s",
                  (long long)r->ms, ms, r->err);
    ck_assert_msg(!strstr(r->err, "out of time"), "stderr:\n%.1500s", r->err);
}

int tide_test_count(const char *text, const char *word)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
        n++;
    return n;
}
