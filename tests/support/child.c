/* A test's server as a child process (see child.h). */
#include "child.h"
#include "loop.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

bool tide_test_child_mkdir(struct tide_test_child *c, const char *name)
{
    memset(c, 0, sizeof *c);
    /* the directory's paths must fit the servers' own buffers (a Unix
     * socket's path is short): a long TMPDIR is passed over */
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(c->dir, sizeof c->dir, "%s/tide-%s-XXXXXX",
                     tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp", name);
    if (n < 0 || (size_t)n >= sizeof c->dir || !mkdtemp(c->dir)) {
        c->dir[0] = '\0';
        return false;
    }
    return true;
}

static pid_t spawn_to(const char *const *argv, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (log)
        posix_spawn_file_actions_addopen(&fa, 1, log,
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    int rc =
        posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : 0;
}

bool tide_test_child_spawn(struct tide_test_child *c, const char *const *argv)
{
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/child.log", c->dir);
    c->pid = spawn_to(argv, c->dir[0] ? log : NULL);
    return c->pid > 0;
}

/* Reaps pid once it has ended, looking every 5 ms for at most ms; false
 * when it is still running. */
static bool reap(pid_t pid, int *status, int ms)
{
    for (int waited = 0; waited < ms; waited += 5) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return true;
        tide_test_sleep_ms(5);
    }
    return waitpid(pid, status, WNOHANG) == pid;
}

void tide_test_child_stop(struct tide_test_child *c, int sig, int ms)
{
    if (c->pid <= 0)
        return;
    kill(c->pid, sig);
    if (!reap(c->pid, NULL, ms)) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
    }
    c->pid = 0;
}

bool tide_test_child_wait(struct tide_test_child *c, bool (*ready)(void *),
                          void *arg, int ms)
{
    for (int waited = 0; waited < ms && c->pid > 0; waited += 10) {
        if (waitpid(c->pid, NULL, WNOHANG) == c->pid) {
            c->pid = 0;
            return false;
        }
        if (ready(arg))
            return true;
        tide_test_sleep_ms(10);
    }
    tide_test_child_stop(c, SIGTERM, 5000);
    return false;
}

void tide_test_child_signal(struct tide_test_child *c, int sig)
{
    if (c->pid > 0)
        kill(c->pid, sig);
}

bool tide_test_child_exited(struct tide_test_child *c)
{
    if (c->pid > 0 && waitpid(c->pid, NULL, WNOHANG) == c->pid)
        c->pid = 0;
    return c->pid == 0;
}

bool tide_test_child_restart(struct tide_test_child *c, bool (*spawn)(void *),
                             void *arg)
{
    tide_test_child_stop(c, SIGTERM, 5000);
    /* the listening port was just closed: a moment for it to come free */
    for (int attempt = 0; attempt < 20; attempt++) {
        if (spawn(arg))
            return true;
        tide_test_sleep_ms(50);
    }
    return false;
}

static int remove_one(const char *path, const struct stat *st, int type,
                      struct FTW *at)
{
    (void)st, (void)type, (void)at;
    remove(path);
    return 0; /* go on: whatever is left, the rest goes */
}

void tide_test_child_dispose(struct tide_test_child *c)
{
    tide_test_child_stop(c, SIGTERM, 5000);
    if (!c->dir[0])
        return;
    /* depth first, so a directory is empty when its turn comes; links are
     * removed, never followed */
    nftw(c->dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    c->dir[0] = '\0';
}

bool tide_test_child_run_self(char *const *argv, int ms, char *why, size_t len)
{
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "could not be started");
        return false;
    }
    if (pid == 0) {
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int status = 0;
    if (!reap(pid, &status, ms)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        snprintf(why, len, "did not end within %d ms", ms);
        return false;
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, len, "ended by signal %d", WTERMSIG(status));
        return false;
    }
    if (WEXITSTATUS(status) != 0) {
        snprintf(why, len, "exited %d", WEXITSTATUS(status));
        return false;
    }
    return true;
}

bool tide_test_child_succeeds(const char *const *argv, int ms)
{
    pid_t pid = spawn_to(argv, NULL);
    if (pid <= 0)
        return false;
    int status;
    if (!reap(pid, &status, ms)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
