#include "server.h"
#include "loop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>

extern char **environ;

bool redis_server_installed(void)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *copy = strdup(path);
    bool found = false;
    for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && !found;
         d = strtok_r(NULL, ":", &save)) {
        char full[PATH_MAX];
        snprintf(full, sizeof full, "%s/redis-server", d);
        found = access(full, X_OK) == 0;
    }
    free(copy);
    return found;
}

static bool write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok =
        PEM_write_X509(f, cert) == 1 &&
        (!key || PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1);
    return fclose(f) == 0 && ok;
}

static bool answers(const struct redis_server *s)
{
    redisReply *r = redis_admin_command(s, "PING");
    bool ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r)
        freeReplyObject(r);
    return ok;
}

static bool spawn(struct redis_server *s)
{
    char port[16], tls_port[16], log[128];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(tls_port, sizeof tls_port, "%d", s->tls_port);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    const char *argv[64] = {
        "redis-server", "--port",           port,  "--bind",
        "127.0.0.1",    "--save",           "",    "--appendonly",
        "no",           "--daemonize",      "no",  "--dir",
        s->dir,         "--logfile",        log,   "--unixsocket",
        s->unix_path,   "--unixsocketperm", "700", "--enable-debug-command",
        "yes"};
    int n = 21;
    if (s->tls) {
        const char *tls[] = {"--tls-port",         tls_port,
                             "--tls-cert-file",    s->cert_path,
                             "--tls-key-file",     s->cert_path,
                             "--tls-ca-cert-file", s->ca_path,
                             "--tls-auth-clients", "no"};
        for (size_t i = 0; i < sizeof tls / sizeof tls[0]; i++)
            argv[n++] = tls[i];
    }
    for (size_t i = 0; s->extra && s->extra[i] && n < 63; i++)
        argv[n++] = s->extra[i];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(&s->pid, "redis-server", &fa, NULL,
                          (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        s->pid = 0;
        return false;
    }
    for (int waited = 0; waited < 5000; waited += 10) {
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0; /* it ended: the port was taken, or a bad option */
            return false;
        }
        if (answers(s))
            return true;
        tide_test_sleep_ms(10);
    }
    redis_server_stop(s);
    return false;
}

bool redis_server_start(struct redis_server *s, X509 *cert, EVP_PKEY *key,
                        X509 *ca, char *const *extra)
{
    memset(s, 0, sizeof *s);
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/tide-redis-XXXXXX",
             tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(s->dir))
        return false;
    snprintf(s->unix_path, sizeof s->unix_path, "%s/redis.sock", s->dir);
    s->extra = extra;
    if (cert) {
        s->tls = true;
        snprintf(s->cert_path, sizeof s->cert_path, "%s/cert.pem", s->dir);
        snprintf(s->ca_path, sizeof s->ca_path, "%s/ca.pem", s->dir);
        if (!write_pem(s->cert_path, cert, key) ||
            !write_pem(s->ca_path, ca, NULL))
            return false;
    }
    /* Redis cannot pick a port itself (--port 0 turns TCP off): a free one, and
     * a retry when it was taken in between */
    for (int attempt = 0; attempt < 5; attempt++) {
        s->port = tide_test_free_port();
        s->tls_port = s->tls ? tide_test_free_port() : 0;
        if (s->port && (!s->tls || (s->tls_port && s->tls_port != s->port)) &&
            spawn(s))
            return true;
    }
    return false;
}

void redis_server_stop(struct redis_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    for (int waited = 0; waited < 5000; waited += 5) {
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            s->pid = 0;
            return;
        }
        tide_test_sleep_ms(5);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

void redis_server_signal(struct redis_server *s, int sig)
{
    if (s->pid > 0)
        kill(s->pid, sig);
}

bool redis_server_exited(struct redis_server *s)
{
    if (s->pid > 0 && waitpid(s->pid, NULL, WNOHANG) == s->pid)
        s->pid = 0;
    return s->pid == 0;
}

bool redis_server_restart(struct redis_server *s)
{
    redis_server_stop(s);
    /* the listening port was just closed: a moment for it to come free */
    for (int attempt = 0; attempt < 20; attempt++) {
        if (spawn(s))
            return true;
        tide_test_sleep_ms(50);
    }
    return false;
}

void redis_server_dispose(struct redis_server *s)
{
    redis_server_stop(s);
    if (!s->dir[0])
        return;
    char path[PATH_MAX];
    const char *files[] = {"redis.log", "redis.sock", "cert.pem", "ca.pem"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, files[i]);
        unlink(path);
    }
    rmdir(s->dir);
    s->dir[0] = '\0';
}

redisContext *redis_admin(const struct redis_server *s)
{
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (!c)
        return NULL;
    redisSetTimeout(c, (struct timeval){5, 0});
    if (s->password[0]) {
        redisReply *r = redisCommand(c, "AUTH %s", s->password);
        if (r)
            freeReplyObject(r);
    }
    return c;
}

redisReply *redis_admin_command(const struct redis_server *s, const char *fmt,
                                ...)
{
    redisContext *c = redis_admin(s);
    if (!c)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

long redis_clients(const struct redis_server *s)
{
    redisReply *r = redis_admin_command(s, "INFO clients");
    long n = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *at = strstr(r->str, "connected_clients:");
        if (at)
            n = strtol(at + strlen("connected_clients:"), NULL, 10) - 1;
    }
    if (r)
        freeReplyObject(r);
    return n;
}
