#include "server.h"
#include "loop.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

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

/* Ready: it answers PING with PONG (a server still loading its data
 * accepts, and answers -LOADING). */
static bool answers(void *arg)
{
    const struct redis_server *s = arg;
    redisReply *r = redis_admin_command(s, "PING");
    bool ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r)
        freeReplyObject(r);
    return ok;
}

static bool spawn(void *arg)
{
    struct redis_server *s = arg;
    char port[16], tls_port[16], log[128];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(tls_port, sizeof tls_port, "%d", s->tls_port);
    snprintf(log, sizeof log, "%s/redis.log", s->child.dir);
    const char *argv[64] = {
        "redis-server", "--port",           port,  "--bind",
        "127.0.0.1",    "--save",           "",    "--appendonly",
        "no",           "--daemonize",      "no",  "--dir",
        s->child.dir,   "--logfile",        log,   "--unixsocket",
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
    return tide_test_child_spawn(&s->child, argv) &&
           tide_test_child_wait(&s->child, answers, s, 5000);
}

bool redis_server_start(struct redis_server *s, X509 *cert, EVP_PKEY *key,
                        X509 *ca, char *const *extra)
{
    memset(s, 0, sizeof *s);
    if (!tide_test_child_mkdir(&s->child, "redis"))
        return false;
    snprintf(s->unix_path, sizeof s->unix_path, "%s/redis.sock", s->child.dir);
    s->extra = extra;
    if (cert) {
        s->tls = true;
        snprintf(s->cert_path, sizeof s->cert_path, "%s/cert.pem",
                 s->child.dir);
        snprintf(s->ca_path, sizeof s->ca_path, "%s/ca.pem", s->child.dir);
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
    tide_test_child_stop(&s->child, SIGTERM, 5000);
}

void redis_server_signal(struct redis_server *s, int sig)
{
    tide_test_child_signal(&s->child, sig);
}

bool redis_server_exited(struct redis_server *s)
{
    return tide_test_child_exited(&s->child);
}

bool redis_server_restart(struct redis_server *s)
{
    return tide_test_child_restart(&s->child, spawn, s);
}

void redis_server_dispose(struct redis_server *s)
{
    tide_test_child_dispose(&s->child);
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
